//! Calendars (`CalendarStore`): one item per name (`{ns}C#{name}` / `C`), its document JSON text
//! in `doc`, written only over the version read and listed through `gsi1` (`{ns}CALS` / name,
//! keys only, then read by key: no scan, no index of its own). The jobs using a calendar are
//! items in the calendar's own partition (`{ns}C#{name}` / `U#{jobId}`), read by one `Query`
//! (paged). The calendar item counts its listings in `listings` (absent: none), which a later
//! version's write keeps (an `Update`, not a `Put`) and a delete is conditioned on.

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use futures_util::FutureExt;
use sundial_ports::store::{
    AuditRecord, CalendarRecord, CalendarStore, StoreError, Write, MAX_CALENDARS,
};

use super::item::{millis, number, string};
use super::keys::{Item, CALENDAR_USER_SK_PREFIX, GSI1};
use super::{audit, unavailable, DynamoStore, IndexQuery, VERSION_MATCHES};

/// The `kind` of calendar items.
const KIND_CALENDAR: &str = "calendar";
/// The `kind` of calendar user items.
const KIND_CALENDAR_USER: &str = "calendarUser";
/// The attribute of a calendar item counting its listings (`CalendarRecord::listings`).
const LISTINGS: &str = "listings";

fn built(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::unavailable_because("building a transaction", e)
}

impl DynamoStore {
    /// Writes a calendar's `change` (its put or delete, conditioned on the calendar's version:
    /// `expected`, or none for a creation) and its `history` entry in one transaction, so that
    /// neither is stored without the other; a failed condition answers as the port says.
    async fn write_with_history(
        &self,
        name: &str,
        change: TransactWriteItem,
        expected: Option<u64>,
        history: &AuditRecord,
    ) -> Result<(), StoreError> {
        let key = format!("calendar {name}");
        let entry = Put::builder()
            .table_name(&self.table)
            .set_item(Some(audit::audit_item(
                &self.keys,
                history,
                self.audit_expires_at(),
            )?))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(built)?;
        let items = vec![change, TransactWriteItem::builder().put(entry).build()];
        let error = match self.transact(items).await {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let reasons = match error.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                c.cancellation_reasons().to_vec()
            }
            _ => return Err(unavailable("TransactWriteItems", error)),
        };
        let code = |i: usize| reasons.get(i).and_then(|r| r.code());
        let moved = |expected: Option<u64>| match expected {
            None => StoreError::AlreadyExists(key.clone()),
            Some(expected) => StoreError::VersionConflict {
                key: key.clone(),
                expected,
            },
        };
        Err(match (code(0), code(1)) {
            (Some("ConditionalCheckFailed"), _) => {
                let stored = reasons[0].item().is_some_and(|i| !i.is_empty());
                match expected {
                    Some(_) if !stored => StoreError::NotFound(key),
                    _ => moved(expected),
                }
            }
            // Another transaction held the calendar: as good as a lost race.
            (Some("TransactionConflict"), _) => moved(expected),
            (_, Some("ConditionalCheckFailed")) => {
                StoreError::AlreadyExists(Write::AppendAudit(history).key())
            }
            _ => unavailable("TransactWriteItems", error),
        })
    }
}

fn record(name: &str, item: &Item) -> Result<CalendarRecord, StoreError> {
    let text = string(item, "doc")?;
    let document = serde_json::from_str(&text).map_err(|e| {
        StoreError::corrupt(
            format!("calendar {name} has a bad `doc`: not JSON"),
            Some(sundial_ports::cause::Cause::new(e)),
        )
    })?;
    Ok(CalendarRecord {
        name: name.to_owned(),
        version: number(item, "version")?,
        updated_at: millis(item, "updatedAt")?,
        document,
        listings: match item.get(LISTINGS) {
            None => 0,
            Some(_) => number(item, LISTINGS)?,
        },
    })
}

impl CalendarStore for DynamoStore {
    async fn get_calendar(&self, name: &str) -> Result<Option<CalendarRecord>, StoreError> {
        match self.get_item(self.keys.calendar(name)).await? {
            None => Ok(None),
            Some(item) => record(name, &item).map(Some),
        }
    }

    async fn list_calendars(&self) -> Result<Vec<CalendarRecord>, StoreError> {
        let query = IndexQuery {
            index: GSI1,
            pk_name: "gsi1pk",
            pk_value: self.keys.all_calendars(),
            sort_condition: None,
            forward: true,
            start: None,
        };
        self.query_then_get(query, MAX_CALENDARS, false, |_| true)
            .await?
            .iter()
            .map(|item| record(&string(item, "name")?, item))
            .collect()
    }

    async fn put_calendar(
        &self,
        calendar: &CalendarRecord,
        history: &AuditRecord,
    ) -> Result<(), StoreError> {
        let mut item = self.keys.calendar(&calendar.name);
        let doc = serde_json::to_string(&calendar.document)
            .map_err(|e| StoreError::unavailable_because("encoding a calendar", e))?;
        item.insert("kind".into(), AttributeValue::S(KIND_CALENDAR.into()));
        item.insert("name".into(), AttributeValue::S(calendar.name.clone()));
        item.insert(
            "gsi1pk".into(),
            AttributeValue::S(self.keys.all_calendars()),
        );
        item.insert("gsi1sk".into(), AttributeValue::S(calendar.name.clone()));
        item.insert(
            "version".into(),
            AttributeValue::N(calendar.version.to_string()),
        );
        item.insert(
            "updatedAt".into(),
            AttributeValue::N(calendar.updated_at.timestamp_millis().to_string()),
        );
        item.insert("doc".into(), AttributeValue::S(doc));
        let change = if calendar.version <= 1 {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)")
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .build()
                .map_err(built)?;
            TransactWriteItem::builder().put(put).build()
        } else {
            // An update of every attribute but the key and `listings`, which it keeps.
            let mut update = Update::builder()
                .table_name(&self.table)
                .set_key(Some(self.keys.calendar(&calendar.name)))
                .condition_expression(VERSION_MATCHES)
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(
                    ":v",
                    AttributeValue::N((calendar.version - 1).to_string()),
                )
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            let mut sets = Vec::new();
            for (i, (name, value)) in item
                .into_iter()
                .filter(|(name, _)| name != "pk" && name != "sk")
                .enumerate()
            {
                let (placeholder, value_name) = (format!("#a{i}"), format!(":a{i}"));
                sets.push(format!("{placeholder} = {value_name}"));
                update = update
                    .expression_attribute_names(placeholder, name)
                    .expression_attribute_values(value_name, value);
            }
            let update = update
                .update_expression(format!("SET {}", sets.join(", ")))
                .build()
                .map_err(built)?;
            TransactWriteItem::builder().update(update).build()
        };
        let expected = (calendar.version > 1).then(|| calendar.version - 1);
        self.write_with_history(&calendar.name, change, expected, history)
            .await
    }

    async fn delete_calendar(
        &self,
        name: &str,
        version: u64,
        listings: u64,
        history: &AuditRecord,
    ) -> Result<(), StoreError> {
        // No job listed since the count was read (a calendar never listed has no count).
        let counted = if listings == 0 {
            "(attribute_not_exists(#listings) OR #listings = :n)"
        } else {
            "#listings = :n"
        };
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(self.keys.calendar(name)))
            .condition_expression(format!("{VERSION_MATCHES} AND {counted}"))
            .expression_attribute_names("#version", "version")
            .expression_attribute_names("#listings", LISTINGS)
            .expression_attribute_values(":v", AttributeValue::N(version.to_string()))
            .expression_attribute_values(":n", AttributeValue::N(listings.to_string()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(built)?;
        let change = TransactWriteItem::builder().delete(delete).build();
        self.write_with_history(name, change, Some(version), history)
            .await
    }

    async fn add_calendar_users(&self, job_id: &str, names: &[String]) -> Result<(), StoreError> {
        for name in names {
            // The entry first, then its count: a delete that read the count before this listing
            // fails on it, and one that read it after sees the entry.
            let mut item = self.keys.calendar_user(name, job_id);
            item.insert("kind".into(), AttributeValue::S(KIND_CALENDAR_USER.into()));
            item.insert("jobId".into(), AttributeValue::S(job_id.to_owned()));
            self.put_item(item).await?;
            let counted = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(self.keys.calendar(name)))
                .update_expression("ADD #listings :one")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_names("#listings", LISTINGS)
                .expression_attribute_values(":one", AttributeValue::N("1".into()))
                .send()
                .boxed()
                .await;
            match counted {
                Ok(_) => {}
                Err(e) => match e.as_service_error() {
                    Some(UpdateItemError::ConditionalCheckFailedException(_)) => {
                        self.remove_calendar_users(job_id, std::slice::from_ref(name))
                            .await?;
                        return Err(StoreError::NotFound(format!("calendar {name}")));
                    }
                    _ => return Err(unavailable("UpdateItem", e)),
                },
            }
        }
        Ok(())
    }

    async fn remove_calendar_users(
        &self,
        job_id: &str,
        names: &[String],
    ) -> Result<(), StoreError> {
        let keys = names
            .iter()
            .map(|name| self.keys.calendar_user(name, job_id))
            .collect();
        self.delete_all(keys).await
    }

    async fn calendar_users(&self, name: &str) -> Result<Vec<String>, StoreError> {
        let mut users = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .expression_attribute_values(":pk", AttributeValue::S(self.keys.calendar_pk(name)))
                .expression_attribute_values(
                    ":prefix",
                    AttributeValue::S(CALENDAR_USER_SK_PREFIX.into()),
                )
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in output.items.unwrap_or_default() {
                users.push(string(&item, "jobId")?);
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(users),
            }
        }
    }
}
