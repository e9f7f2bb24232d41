//! Calendars (`CalendarStore`): one item per name (`{ns}C#{name}` / `C`), its document JSON text
//! in `doc`, written only over the version read and listed through `gsi1` (`{ns}CALS` / name,
//! keys only, then read by key: no scan, no index of its own). The jobs using a calendar are
//! items in the calendar's own partition (`{ns}C#{name}` / `U#{jobId}`), read by one `Query`.

use aws_sdk_dynamodb::types::AttributeValue;
use sundial_ports::store::{CalendarRecord, CalendarStore, StoreError, MAX_CALENDARS};

use super::item::{millis, number, string};
use super::keys::{Item, CALENDAR_USER_SK_PREFIX, GSI1};
use super::{unavailable, DynamoStore, IndexQuery, VERSION_MATCHES};

/// The `kind` of calendar items.
const KIND_CALENDAR: &str = "calendar";
/// The `kind` of calendar user items.
const KIND_CALENDAR_USER: &str = "calendarUser";

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

    async fn put_calendar(&self, calendar: &CalendarRecord) -> Result<(), StoreError> {
        let key = format!("calendar {}", calendar.name);
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
        if calendar.version <= 1 {
            return match self
                .put_if(item, "attribute_not_exists(pk)", vec![])
                .await?
            {
                None => Ok(()),
                Some(_) => Err(StoreError::AlreadyExists(key)),
            };
        }
        let expected = calendar.version - 1;
        let values = vec![(":v", AttributeValue::N(expected.to_string()))];
        match self.put_if(item, VERSION_MATCHES, values).await? {
            None => Ok(()),
            Some(Some(_)) => Err(StoreError::VersionConflict { key, expected }),
            Some(None) => Err(StoreError::NotFound(key)),
        }
    }

    async fn delete_calendar(&self, name: &str, version: u64) -> Result<(), StoreError> {
        let key = format!("calendar {name}");
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(self.keys.calendar(name)))
            .condition_expression(VERSION_MATCHES)
            .expression_attribute_names("#version", "version")
            .expression_attribute_values(":v", AttributeValue::N(version.to_string()))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(
                    aws_sdk_dynamodb::operation::delete_item::DeleteItemError::ConditionalCheckFailedException(c),
                ) => Err(if c.item().is_some_and(|i| !i.is_empty()) {
                    StoreError::VersionConflict {
                        key,
                        expected: version,
                    }
                } else {
                    StoreError::NotFound(key)
                }),
                _ => Err(unavailable("DeleteItem", e)),
            },
        }
    }

    async fn add_calendar_users(&self, job_id: &str, names: &[String]) -> Result<(), StoreError> {
        for name in names {
            let mut item = self.keys.calendar_user(name, job_id);
            item.insert("kind".into(), AttributeValue::S(KIND_CALENDAR_USER.into()));
            item.insert("jobId".into(), AttributeValue::S(job_id.to_owned()));
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .send()
                .await
                .map_err(|e| unavailable("PutItem", e))?;
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
