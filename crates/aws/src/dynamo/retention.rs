//! Retention on DynamoDB (`DELETE /main/schedule/clean`) without a scan (issue 31: no request is
//! a `Scan`): the job ids whose runs and history it considers are those listed under `JOBS` (the
//! jobs that exist) and under `GONE` (a **tombstone** per deleted job, written by the deletion's
//! transaction: layout 6). Per job it reads only keys: its executions from `gsi1` (`JE#{jobId}`,
//! whose sort key holds the execute number and the id) and its history from its own partition
//! (`H#{jobId}`), then applies the rule every store shares
//! ([`past_retention`](sundial_ports::store::retention::past_retention)).
//!
//! A tombstone goes once nothing of its job is left: by the second of the two cleans (runs, then
//! history) that purges it, or at once when the job id is in use again (the new job is listed
//! under `JOBS`). Runs of a job id that never had a job are not seen (the engine writes none).
//! The indexes hold keys only, so an entry whose TTL has passed but which DynamoDB has not yet
//! removed counts like any other: removed by the rule, or kept among the newest until it expires.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::FutureExt;
use sundial_ports::store::StoreError;

use super::item::string;
use super::keys::{Item, GSI1};
use super::{unavailable, DynamoStore, IndexQuery};

/// `kind` of a tombstone.
pub(super) const KIND_TOMBSTONE: &str = "tombstone";

/// A deleted job's tombstone item.
pub(super) fn tombstone_item(store: &DynamoStore, job_id: &str) -> Item {
    let keys = &store.keys;
    let mut item = keys.tombstone(job_id);
    item.insert("kind".into(), AttributeValue::S(KIND_TOMBSTONE.into()));
    item.insert("jobId".into(), AttributeValue::S(job_id.into()));
    item.insert("gsi1pk".into(), AttributeValue::S(keys.deleted_jobs()));
    item.insert("gsi1sk".into(), AttributeValue::S(job_id.into()));
    item
}

/// The job ids retention looks at: those with a job, and those whose job was deleted.
pub(super) struct Known {
    /// Jobs that exist.
    pub(super) live: BTreeSet<String>,
    /// Job ids with a tombstone (some may exist again).
    pub(super) gone: BTreeSet<String>,
}

impl Known {
    /// Every job id, live or gone.
    pub(super) fn all(&self) -> impl Iterator<Item = &String> {
        self.live.union(&self.gone)
    }
}

impl DynamoStore {
    /// The job ids under `JOBS` and under `GONE`: two index partitions, keys only.
    pub(super) async fn known_job_ids(&self) -> Result<Known, StoreError> {
        Ok(Known {
            live: self.listed(self.keys.all_jobs()).await?,
            gone: self.listed(self.keys.deleted_jobs()).await?,
        })
    }

    /// The `gsi1sk` of every entry of the `gsi1` partition `partition`.
    async fn listed(&self, partition: String) -> Result<BTreeSet<String>, StoreError> {
        let items = self
            .gsi1_keys(partition)
            .await?
            .iter()
            .map(|item| string(item, "gsi1sk"))
            .collect::<Result<_, _>>()?;
        Ok(items)
    }

    /// Every entry (keys only) of the `gsi1` partition `partition`.
    async fn gsi1_keys(&self, partition: String) -> Result<Vec<Item>, StoreError> {
        let query = IndexQuery {
            index: GSI1,
            pk_name: "gsi1pk",
            pk_value: partition,
            sort_condition: None,
            forward: true,
            start: None,
        };
        self.query_collect(query, usize::MAX, |_| true).await
    }

    /// Each job's executions as (execute number, execution id), from their `gsi1` sort keys
    /// (`{n:020}#{id}`).
    pub(super) async fn executions_by_job<'a>(
        &self,
        job_ids: impl Iterator<Item = &'a String>,
    ) -> Result<BTreeMap<String, Vec<(u64, String)>>, StoreError> {
        let mut by_job = BTreeMap::new();
        for job_id in job_ids {
            let runs: Vec<(u64, String)> = self
                .gsi1_keys(self.keys.job_executions(job_id))
                .await?
                .iter()
                .map(|item| {
                    let sort = string(item, "gsi1sk")?;
                    sort.split_once('#')
                        .and_then(|(n, id)| Some((n.parse().ok()?, id.to_owned())))
                        .ok_or_else(|| {
                            StoreError::corrupt(
                                format!("execution index key {sort:?} of job {job_id}"),
                                None,
                            )
                        })
                })
                .collect::<Result<_, _>>()?;
            if !runs.is_empty() {
                by_job.insert(job_id.clone(), runs);
            }
        }
        Ok(by_job)
    }

    /// Each job's history entry ids, from the keys of its partition.
    pub(super) async fn audit_by_job<'a>(
        &self,
        job_ids: impl Iterator<Item = &'a String>,
    ) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
        let mut by_job = BTreeMap::new();
        for job_id in job_ids {
            let entries = self.partition_sort_keys(job_id, usize::MAX).await?;
            if !entries.is_empty() {
                by_job.insert(job_id.clone(), entries);
            }
        }
        Ok(by_job)
    }

    /// Up to `most` sort keys of job `job_id`'s history partition.
    async fn partition_sort_keys(
        &self,
        job_id: &str,
        most: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(
                    ":pk",
                    AttributeValue::S(super::audit::partition(&self.keys, job_id)),
                )
                .projection_expression("pk, sk")
                .limit(i32::try_from(most.min(1000)).unwrap_or(1000))
                .set_exclusive_start_key(start.take())
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in output.items.unwrap_or_default() {
                keys.push(string(&item, "sk")?);
                if keys.len() >= most {
                    return Ok(keys);
                }
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(keys),
            }
        }
    }

    /// Removes the tombstones nothing needs any more: those of job ids in use again, and, after
    /// a purge, those of deleted jobs with neither runs nor history left (read again here, so
    /// whichever of the two cleans comes second removes it).
    pub(super) async fn drop_spent_tombstones(
        &self,
        known: &Known,
        purged: bool,
    ) -> Result<(), StoreError> {
        let mut spent = Vec::new();
        for job_id in &known.gone {
            let in_use = known.live.contains(job_id);
            if !in_use && !purged {
                continue;
            }
            if !in_use {
                let no_runs = self
                    .executions_by_job(std::iter::once(job_id))
                    .await?
                    .is_empty();
                if !no_runs || !self.partition_sort_keys(job_id, 1).await?.is_empty() {
                    continue;
                }
            }
            spent.push(self.keys.tombstone(job_id));
        }
        self.delete_all(spent).await
    }
}
