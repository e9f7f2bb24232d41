//! The audit trail on DynamoDB: a job's entries in a partition of their own (`pk` =
//! `{ns}H#{jobId}`, `sk` = the entry id, which starts with the time), so a history page, in
//! either order and within a time range, is one `Query` of one partition, never a scan, and no
//! partition is shared by two jobs. Entries are written in `TransactWriteItems` beside the change
//! they record (see `write_all`). With a retention, an entry expires (TTL) that long after it is
//! written, as finished executions do.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;
use futures_util::FutureExt;
use sundial_ports::store::audit::entry_id_floor as time_bound;
use sundial_ports::store::retention::past_retention;
use sundial_ports::store::{
    cursor, AuditCleanReport, AuditQuery, AuditRecord, AuditStore, Page, PageRequest, StoreError,
    MAX_PAGE,
};

use super::item::{expired, millis, string};
use super::keys::{Item, Keys};
use super::{looked_ahead, unavailable, DynamoStore};

/// `kind` of an audit entry.
pub const KIND_AUDIT: &str = "audit";

/// The partition key of a job's entries.
pub(super) fn partition(keys: &Keys, job_id: &str) -> String {
    format!("{}H#{job_id}", keys.ns())
}

/// The primary key of an entry.
pub(super) fn audit_key(keys: &Keys, job_id: &str, entry_id: &str) -> Item {
    Item::from([
        ("pk".to_owned(), AttributeValue::S(partition(keys, job_id))),
        ("sk".to_owned(), AttributeValue::S(entry_id.to_owned())),
    ])
}

/// An entry's item; `expires_at` (epoch seconds) is its TTL.
pub(super) fn audit_item(
    keys: &Keys,
    entry: &AuditRecord,
    expires_at: Option<i64>,
) -> Result<Item, StoreError> {
    let mut item = audit_key(keys, &entry.job_id, &entry.entry_id);
    let text = serde_json::to_string(&entry.document)
        .map_err(|e| StoreError::unavailable_because("encoding a document", e))?;
    item.insert("kind".into(), AttributeValue::S(KIND_AUDIT.into()));
    item.insert("jobId".into(), AttributeValue::S(entry.job_id.clone()));
    item.insert("entryId".into(), AttributeValue::S(entry.entry_id.clone()));
    item.insert(
        "at".into(),
        AttributeValue::N(entry.at.timestamp_millis().to_string()),
    );
    item.insert("doc".into(), AttributeValue::S(text));
    if let Some(at) = expires_at {
        item.insert("expiresAt".into(), AttributeValue::N(at.to_string()));
    }
    Ok(item)
}

fn audit_record(item: &Item) -> Result<AuditRecord, StoreError> {
    let text = string(item, "doc")?;
    Ok(AuditRecord {
        job_id: string(item, "jobId")?,
        entry_id: string(item, "entryId")?,
        at: millis(item, "at")?,
        document: serde_json::from_str(&text).map_err(|e| {
            StoreError::corrupt(
                "stored audit entry has a bad `doc`: not JSON",
                Some(sundial_ports::cause::Cause::new(e)),
            )
        })?,
    })
}

impl DynamoStore {
    /// The TTL of an entry written now.
    pub(super) fn audit_expires_at(&self) -> Option<i64> {
        let retention = self.retention?;
        Some(Utc::now().timestamp() + i64::try_from(retention.as_secs()).unwrap_or(i64::MAX / 2))
    }
}

impl AuditStore for DynamoStore {
    async fn list_audit(
        &self,
        job_id: &str,
        query: &AuditQuery,
        request: &PageRequest,
    ) -> Result<Page<AuditRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_audit)
            .transpose()?;
        let limit = request.limit.clamp(1, MAX_PAGE);
        let mut condition = String::from("pk = :pk");
        let mut values = vec![(":pk", AttributeValue::S(partition(&self.keys, job_id)))];
        match (query.from, query.to) {
            (Some(from), Some(to)) => {
                condition.push_str(" AND sk BETWEEN :from AND :to");
                values.push((":from", AttributeValue::S(time_bound(from))));
                // Inclusive, but every id of `to`'s millisecond is longer than the bound, so
                // sorts after it: the range is [from, to) in milliseconds.
                values.push((":to", AttributeValue::S(time_bound(to))));
            }
            (Some(from), None) => {
                condition.push_str(" AND sk >= :from");
                values.push((":from", AttributeValue::S(time_bound(from))));
            }
            (None, Some(to)) => {
                condition.push_str(" AND sk < :to");
                values.push((":to", AttributeValue::S(time_bound(to))));
            }
            (None, None) => {}
        }
        let mut start = after.map(|id| audit_key(&self.keys, job_id, id));
        let mut kept = Vec::new();
        let now = Utc::now().timestamp();
        loop {
            let mut request = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression(&condition)
                .scan_index_forward(query.oldest_first)
                .limit(i32::try_from(limit + 1).unwrap_or(1000))
                .set_exclusive_start_key(start.take());
            for (name, value) in &values {
                request = request.expression_attribute_values(*name, value.clone());
            }
            let output = request
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in output.items.unwrap_or_default() {
                if !expired(&item, now) {
                    kept.push(audit_record(&item)?);
                }
            }
            if kept.len() > limit {
                break;
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        Ok(looked_ahead(kept, limit, |e: &AuditRecord| {
            cursor::audit(&e.entry_id)
        }))
    }

    async fn clean_audit(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> Result<AuditCleanReport, StoreError> {
        // Maintenance, as `clean_executions`: each known job's keys, never a scan
        // (`retention.rs`).
        let known = self.known_job_ids().await?;
        let trails = self.audit_by_job(known.all()).await?;
        let past = past_retention(
            trails,
            |id| known.live.contains(id),
            retain,
            purge_deleted_jobs,
        );
        let entries_deleted = past.removed.len() as u64;
        self.delete_all(
            past.removed
                .iter()
                .map(|(job_id, id)| audit_key(&self.keys, job_id, id))
                .collect(),
        )
        .await?;
        self.drop_spent_tombstones(&known, purge_deleted_jobs)
            .await?;
        Ok(AuditCleanReport { entries_deleted })
    }
}
