//! Rollups ([`RollupStore`]) on DynamoDB: one item per job and hour, its counters attributes of
//! their own that runs `ADD` to.
//!
//! | record | `pk`            | `sk`          | `gsi2pk` / `gsi2sk`                          |
//! |--------|-----------------|---------------|----------------------------------------------|
//! | rollup | `{ns}R#{jobId}` | `{hourMs:015}` | `{ns}RH{shard}` / `{hourMs:015}#{jobId}`     |
//! | fleet hour | `{ns}FH`    | `{hourMs:015}#{part:05}` | —                                 |
//!
//! A run's rollup is an `Update` with `ADD` on each counter (`c_{name}`) inside the transaction of
//! its final write, so it costs no request of its own and never reads the item: two runs of one job
//! ending together both count, and DynamoDB cancels one with `TransactionConflict` only when both
//! transactions touch the item at the same instant — `write_all` then sends the
//! transaction again (its conditions are checked afresh), so the count is neither lost nor the run
//! failed. No item counts every job's runs: `GET /stats` reads the window's buckets of all jobs
//! through `gsi2`, which the rollups share with the children index under `RH` partitions spread
//! over [`ROLLUP_SHARDS`] by a hash of the job id (one query per shard, by hour range, then a
//! `BatchGetItem` of the items, the index holding keys only; never a scan). Keys only, a run's
//! `ADD` changes no index key and writes nothing to `gsi2`: a shard takes a write only when a
//! job's first run of an hour creates its item. Items carry `expiresAt` an hour past the longest window, so DynamoDB's TTL ages them out
//! where `DELETE /main/schedule/clean` does not run.
//!
//! A sealed hour's summary across all jobs ([`sundial_core::fleet_hour`]) is an item per part in
//! one `FH` partition, written once by the first reader of the hour and read by hour range: a
//! week is 169 items per part, however many jobs ran.

use futures_util::FutureExt;
use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason, TransactWriteItem, Update};
use chrono::{DateTime, Duration, Utc};
use sundial_core::stats::StatsWindow;
use sundial_ports::store::{FleetHourRecord, RollupRecord, RollupStore, StoreError, Write};

use super::item::{millis, string};
use super::keys::{Item, GSI2};
use super::{table_key, unavailable, DynamoStore};

/// How many `gsi2` partitions the rollups of all jobs spread over.
pub const ROLLUP_SHARDS: u32 = 8;

/// The prefix of a counter's attribute name.
const COUNTER: &str = "c_";

fn sort_of(hour: DateTime<Utc>) -> String {
    format!("{:015}", hour.timestamp_millis().max(0))
}

impl DynamoStore {
    fn rollup_pk(&self, job_id: &str) -> String {
        format!("{}R#{job_id}", self.keys.ns())
    }

    /// The key, update expression, names and values that add `rollup` to its item.
    fn rollup_update(
        &self,
        rollup: &RollupRecord,
    ) -> (
        Item,
        String,
        HashMap<String, String>,
        HashMap<String, AttributeValue>,
    ) {
        let key = HashMap::from([
            (
                "pk".to_owned(),
                AttributeValue::S(self.rollup_pk(&rollup.job_id)),
            ),
            ("sk".to_owned(), AttributeValue::S(sort_of(rollup.hour))),
        ]);
        let expires = (rollup.hour + StatsWindow::LONGEST + Duration::hours(2)).timestamp();
        let mut names = HashMap::from([
            ("#g".to_owned(), "gsi2pk".to_owned()),
            ("#gs".to_owned(), "gsi2sk".to_owned()),
            ("#x".to_owned(), "expiresAt".to_owned()),
            ("#j".to_owned(), "jobId".to_owned()),
            ("#h".to_owned(), "hourMs".to_owned()),
        ]);
        let mut values = HashMap::from([
            (
                ":g".to_owned(),
                AttributeValue::S(self.keys.rollup_shard(&rollup.job_id)),
            ),
            (
                ":gs".to_owned(),
                AttributeValue::S(format!("{}#{}", sort_of(rollup.hour), rollup.job_id)),
            ),
            (":x".to_owned(), AttributeValue::N(expires.to_string())),
            (":j".to_owned(), AttributeValue::S(rollup.job_id.clone())),
            (
                ":h".to_owned(),
                AttributeValue::N(rollup.hour.timestamp_millis().to_string()),
            ),
        ]);
        let mut adds = Vec::new();
        for (i, (name, n)) in rollup.counters.iter().enumerate() {
            names.insert(format!("#c{i}"), format!("{COUNTER}{name}"));
            values.insert(format!(":c{i}"), AttributeValue::N(n.to_string()));
            adds.push(format!("#c{i} :c{i}"));
        }
        let mut expression = "SET #g = :g, #gs = :gs, #x = :x, #j = :j, #h = :h".to_owned();
        if !adds.is_empty() {
            expression.push_str(" ADD ");
            expression.push_str(&adds.join(", "));
        }
        (key, expression, names, values)
    }

    /// [`Write::AddRollup`](sundial_ports::store::Write::AddRollup) as an item of
    /// `TransactWriteItems`.
    pub(super) fn rollup_transact_item(
        &self,
        rollup: &RollupRecord,
    ) -> Result<TransactWriteItem, StoreError> {
        let (key, expression, names, values) = self.rollup_update(rollup);
        let update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key))
            .update_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .build()
            .map_err(|e| StoreError::unavailable_because("building a transaction", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// [`Write::AddRollup`](sundial_ports::store::Write::AddRollup) alone: one `UpdateItem`.
    pub(super) async fn add_rollup(&self, rollup: &RollupRecord) -> Result<(), StoreError> {
        let (key, expression, names, values) = self.rollup_update(rollup);
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .update_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .send()
            .boxed()
            .await
            .map(drop)
            .map_err(|e| unavailable("UpdateItem", e))
    }

    /// Every item of one partition in the key range `low..=high`, of the table (`index` `None`)
    /// or of an index.
    async fn query_range(
        &self,
        index: Option<&str>,
        (pk_name, pk): (&str, String),
        (sk_name, low, high): (&str, String, String),
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .set_index_name(index.map(str::to_owned))
                .key_condition_expression("#p = :p AND #s BETWEEN :lo AND :hi")
                .expression_attribute_names("#p", pk_name)
                .expression_attribute_names("#s", sk_name)
                .expression_attribute_values(":p", AttributeValue::S(pk.clone()))
                .expression_attribute_values(":lo", AttributeValue::S(low.clone()))
                .expression_attribute_values(":hi", AttributeValue::S(high.clone()))
                .set_exclusive_start_key(start.take())
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("Query", e))?;
            items.extend(output.items.unwrap_or_default());
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    fn fleet_hour_pk(&self) -> String {
        format!("{}FH", self.keys.ns())
    }

    /// The fleet summary parts of the hours `from..=to`, as items.
    async fn fleet_hour_items(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Item>, StoreError> {
        // `#` sorts before `$`: every part of the last hour is below `{to}$`.
        let range = ("sk", sort_of(from), format!("{}$", sort_of(to)));
        self.query_range(None, ("pk", self.fleet_hour_pk()), range)
            .await
    }

    /// The table keys of the rollups of the hours `from..=to` of every shard (`gsi2` holds keys
    /// only).
    async fn shard_rollup_keys(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Item>, StoreError> {
        let mut keys = Vec::new();
        for shard in 0..ROLLUP_SHARDS {
            // `#` sorts before `$`: every job id of the last hour is below `{to}$`.
            let range = ("gsi2sk", sort_of(from), format!("{}$", sort_of(to)));
            let found = self
                .query_range(
                    Some(GSI2),
                    ("gsi2pk", self.keys.rollup_shard_name(shard)),
                    range,
                )
                .await?;
            for entry in &found {
                keys.push(table_key(entry)?);
            }
        }
        Ok(keys)
    }

    /// The rollups of the hours `from..=to` of every shard: their keys from `gsi2`, then the items
    /// (`BatchGetItem`).
    async fn shard_rollups(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Item>, StoreError> {
        let keys = self.shard_rollup_keys(from, to).await?;
        // As the index read them, expired or not (before layout 2 the index held the items).
        let items = self.batch_get_as_stored(keys, true, true).await?;
        Ok(items.into_iter().flatten().collect())
    }
}

/// Whether a cancelled transaction lost only on rollup items (`TransactionConflict`: another
/// transaction was adding to the same bucket at that instant) and on nothing else: then sending
/// it again is safe and is what keeps the count and the run.
pub(super) fn lost_only_on_rollups(reasons: &[CancellationReason], writes: &[Write<'_>]) -> bool {
    let mut lost = false;
    for (index, reason) in reasons.iter().enumerate() {
        match reason.code() {
            None | Some("None") => {}
            Some("TransactionConflict")
                if matches!(writes.get(index), Some(Write::AddRollup(_))) =>
            {
                lost = true;
            }
            Some(_) => return false,
        }
    }
    lost
}

fn rollup_record(item: &Item) -> Result<RollupRecord, StoreError> {
    let mut counters = BTreeMap::new();
    for (name, value) in item {
        if let Some(counter) = name.strip_prefix(COUNTER) {
            let n = value
                .as_n()
                .ok()
                .and_then(|n| n.parse::<u64>().ok())
                .ok_or_else(|| {
                    StoreError::corrupt(format!("rollup counter {name} is not a count"), None)
                })?;
            counters.insert(counter.to_owned(), n);
        }
    }
    Ok(RollupRecord {
        job_id: string(item, "jobId")?,
        hour: millis(item, "hourMs")?,
        counters,
    })
}

impl RollupStore for DynamoStore {
    async fn job_rollups(
        &self,
        job_id: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<RollupRecord>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        let items = self
            .query_range(
                None,
                ("pk", self.rollup_pk(job_id)),
                ("sk", sort_of(from), sort_of(to)),
            )
            .await?;
        items.iter().map(rollup_record).collect()
    }

    async fn all_rollups(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<RollupRecord>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        let items = self.shard_rollups(from, to).await?;
        items.iter().map(rollup_record).collect()
    }

    async fn fleet_hours(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<FleetHourRecord>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        let items = self.fleet_hour_items(from, to).await?;
        items
            .iter()
            .map(|item| {
                let part = item
                    .get("part")
                    .and_then(|v| v.as_n().ok())
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| StoreError::corrupt("fleet hour part has no number", None))?;
                Ok(FleetHourRecord {
                    hour: millis(item, "hourMs")?,
                    part,
                    body: string(item, "body")?,
                })
            })
            .collect()
    }

    async fn put_fleet_hours(&self, parts: &[FleetHourRecord]) -> Result<(), StoreError> {
        for part in parts {
            let expires = (part.hour + StatsWindow::LONGEST + Duration::hours(2)).timestamp();
            let item = HashMap::from([
                ("pk".to_owned(), AttributeValue::S(self.fleet_hour_pk())),
                (
                    "sk".to_owned(),
                    AttributeValue::S(format!("{}#{:05}", sort_of(part.hour), part.part)),
                ),
                (
                    "hourMs".to_owned(),
                    AttributeValue::N(part.hour.timestamp_millis().to_string()),
                ),
                ("part".to_owned(), AttributeValue::N(part.part.to_string())),
                ("body".to_owned(), AttributeValue::S(part.body.clone())),
                (
                    "expiresAt".to_owned(),
                    AttributeValue::N(expires.to_string()),
                ),
            ]);
            self.put_item(item).await?;
        }
        Ok(())
    }

    async fn clean_rollups(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let Some(last) = before.checked_sub_signed(Duration::milliseconds(1)) else {
            return Ok(0);
        };
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        if last < epoch {
            return Ok(0);
        }
        let key_of = |item: &Item| -> Option<Item> {
            Some(HashMap::from([
                ("pk".to_owned(), item.get("pk")?.clone()),
                ("sk".to_owned(), item.get("sk")?.clone()),
            ]))
        };
        let summaries: Vec<Item> = self
            .fleet_hour_items(epoch, last)
            .await?
            .iter()
            .filter_map(key_of)
            .collect();
        self.delete_all(summaries).await?;
        let keys = self.shard_rollup_keys(epoch, last).await?;
        let removed = keys.len() as u64;
        self.delete_all(keys).await?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(code: &str) -> CancellationReason {
        CancellationReason::builder().code(code).build()
    }

    #[test]
    fn only_a_conflict_on_a_rollup_sends_the_transaction_again() {
        let job = sundial_ports::store::JobRecord {
            job_id: "j".into(),
            version: 1,
            creator: "c".into(),
            parent_job: None,
            service: None,
            state: "active".into(),
            created_at: DateTime::<Utc>::UNIX_EPOCH,
            updated_at: DateTime::<Utc>::UNIX_EPOCH,
            document: serde_json::Value::Null,
        };
        let rollup = RollupRecord::default();
        let writes = [Write::UpdateJob(&job), Write::AddRollup(&rollup)];
        let none = reason("None");
        assert!(lost_only_on_rollups(
            &[none.clone(), reason("TransactionConflict")],
            &writes
        ));
        assert!(
            !lost_only_on_rollups(&[reason("TransactionConflict"), none.clone()], &writes),
            "the job's own conflict is a lost race"
        );
        assert!(!lost_only_on_rollups(
            &[
                reason("ConditionalCheckFailed"),
                reason("TransactionConflict")
            ],
            &writes
        ));
        assert!(
            !lost_only_on_rollups(&[none.clone(), none], &writes),
            "no conflict at all"
        );
    }
}
