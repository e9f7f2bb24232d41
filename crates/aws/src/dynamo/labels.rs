//! Job labels on DynamoDB: one index item per label in the job's item collection, so a label
//! filter reads a `gsi1` partition of the jobs it selects instead of scanning.
//!
//! | record | `pk`            | `sk`       | `gsi1pk` / `gsi1sk`                    |
//! |--------|-----------------|------------|----------------------------------------|
//! | label  | `{ns}J#{jobId}` | `L#{key}`  | `{ns}JL#{key}={value}` / jobId         |
//!
//! The job item carries its labels as canonical JSON (`labels`, absent for none), and every
//! conditional write of a job also requires the stored `labels` to be the ones written: an update
//! that keeps its labels (every engine write) is one `PutItem` or transaction item, as before. One
//! that changes them fails that condition, learns the stored labels from the failure, and is made
//! again as a transaction that also puts the new index items and deletes the old — the job and its
//! index never disagree. `delete_job` reads the job's item collection (one `Query`) and deletes the
//! job, its wake-up and its label items in one transaction. In `write_all`, `Write::CreateJob` puts
//! the label items beside the job, and `Write::DeleteJob` reads the collection first
//! (`DynamoStore::label_keys_of`) and deletes them with the job (its version condition holds only
//! if no write, so no relabel, came between).
//!
//! A listing by label queries the first label's partition (job ids in id order), reads those jobs
//! with `BatchGetItem` (strongly consistent, so the index being a moment behind never shows a job
//! whose labels no longer match) and keeps those that match the whole filter.

use futures_util::FutureExt;
use std::collections::BTreeMap;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};
use sundial_ports::store::{cursor, JobFilter, JobRecord, Page, StoreError};

use super::item::job_record;
use super::keys::{start_key, Item, Keys, GSI1, GSI2, JOB_SK, LABEL_SK_PREFIX};
use super::own_wakeup::OwnWakeup;
use super::{looked_ahead, unavailable, version_of, DynamoStore, BATCH_GET_KEYS};

/// `kind` of a label index item.
pub const KIND_LABEL: &str = "label";

/// The attribute of a job item holding its labels.
pub const LABELS: &str = "labels";

/// A job's labels as the canonical JSON the job item stores (`None` for none).
pub fn labels_text(job: &JobRecord) -> Result<Option<String>, StoreError> {
    let labels = job.labels();
    if labels.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(&labels)
        .map(Some)
        .map_err(|e| StoreError::unavailable_because("encoding labels", e))
}

/// The labels a stored job item holds.
pub fn stored_labels(item: &Item) -> BTreeMap<String, String> {
    item.get(LABELS)
        .and_then(|v| v.as_s().ok())
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// The condition on a job item's labels being `text`, and its value placeholder if any.
pub fn labels_condition(
    text: &Option<String>,
) -> (&'static str, Option<(&'static str, AttributeValue)>) {
    match text {
        None => ("attribute_not_exists(#labels)", None),
        Some(text) => (
            "#labels = :labels",
            Some((":labels", AttributeValue::S(text.clone()))),
        ),
    }
}

/// Whether a job item's stored labels are `text`.
pub fn labels_are(item: &Item, text: &Option<String>) -> bool {
    item.get(LABELS).and_then(|v| v.as_s().ok()) == text.as_ref()
}

/// The index item of label `key: value` of job `job_id`.
pub fn label_item(keys: &Keys, job_id: &str, key: &str, value: &str) -> Item {
    let mut item = keys.label(job_id, key);
    item.insert("kind".into(), AttributeValue::S(KIND_LABEL.into()));
    item.insert("jobId".into(), AttributeValue::S(job_id.into()));
    item.insert(
        "gsi1pk".into(),
        AttributeValue::S(keys.label_partition(key, value)),
    );
    item.insert("gsi1sk".into(), AttributeValue::S(job_id.into()));
    item
}

/// The transaction items that take job `job_id`'s index from `old` labels to `new`.
pub fn index_changes(
    table: &str,
    keys: &Keys,
    job_id: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    let built = |e: aws_sdk_dynamodb::error::BuildError| {
        StoreError::unavailable_because("building a transaction", e)
    };
    let mut items = Vec::new();
    for (key, value) in new {
        if old.get(key) != Some(value) {
            let put = Put::builder()
                .table_name(table)
                .set_item(Some(label_item(keys, job_id, key, value)))
                .build()
                .map_err(built)?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
    }
    for key in old.keys().filter(|key| !new.contains_key(*key)) {
        let delete = Delete::builder()
            .table_name(table)
            .set_key(Some(keys.label(job_id, key)))
            .build()
            .map_err(built)?;
        items.push(TransactWriteItem::builder().delete(delete).build());
    }
    Ok(items)
}

/// The partition a listing reads for `filter`: a parent's children (`gsi2`), the first label's
/// jobs (`gsi1`, label items), or every job (`gsi1`, job items).
pub enum JobPartition {
    /// `gsi2`, job items.
    Children(String),
    /// `gsi1`, label items naming jobs.
    Label(String),
    /// `gsi1`, job items.
    All(String),
}

impl JobPartition {
    /// The partition to read for `filter`.
    pub fn of(keys: &Keys, filter: &JobFilter) -> JobPartition {
        match (&filter.parent_job, filter.labels.first()) {
            (Some(parent), _) => JobPartition::Children(keys.child_jobs(parent)),
            (None, Some(label)) => {
                JobPartition::Label(keys.label_partition(&label.key, &label.value))
            }
            (None, None) => JobPartition::All(keys.all_jobs()),
        }
    }
}

/// `begins_with` on the job id sort key of `index`, for an id prefix.
pub fn prefix_condition(
    index: &str,
    filter: &JobFilter,
) -> Option<(&'static str, &'static str, AttributeValue)> {
    let prefix = filter.id_prefix.as_ref()?;
    let condition = if index == GSI2 {
        "begins_with(gsi2sk, :prefix)"
    } else {
        "begins_with(gsi1sk, :prefix)"
    };
    Some((condition, ":prefix", AttributeValue::S(prefix.clone())))
}

fn built(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::unavailable_because("building a transaction", e)
}

/// The code of the first cancellation reason of a failed transaction, if it was cancelled.
fn cancelled_first<R>(error: &SdkError<TransactWriteItemsError, R>) -> Option<Option<String>> {
    match error.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(c)) => Some(
            c.cancellation_reasons()
                .iter()
                .find_map(|r| r.code().filter(|code| *code != "None").map(str::to_owned)),
        ),
        _ => None,
    }
}

/// What a `TransactWriteItems` call answers.
pub(super) type TransactResult = Result<(), SdkError<TransactWriteItemsError, HttpResponse>>;

impl DynamoStore {
    /// Sends one `TransactWriteItems`.
    pub(super) async fn transact(&self, items: Vec<TransactWriteItem>) -> TransactResult {
        self.client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .boxed()
            .await
            .map(drop)
    }

    /// The transaction items that write `job` over the stored item `old` (at the same version,
    /// with other labels), doing `own` to its wake-up: the job, conditional on the stored labels,
    /// and its index changes.
    pub(super) fn relabel_items(
        &self,
        job: &JobRecord,
        old: &Item,
        own: OwnWakeup,
    ) -> Result<(TransactWriteItem, Vec<TransactWriteItem>), StoreError> {
        let old_text = old.get(LABELS).and_then(|v| v.as_s().ok()).cloned();
        let put = self.transact_update(self.job_update(job, &old_text, own)?)?;
        let changes = index_changes(
            &self.table,
            &self.keys,
            &job.job_id,
            &stored_labels(old),
            &job.labels(),
        )?;
        Ok((put, changes))
    }

    /// Writes `job`, whose labels differ from those of the stored item `old`, with its index
    /// changes in one transaction. A write since `old` was read is a `VersionConflict`.
    pub(super) async fn relabel_job(&self, job: &JobRecord, old: &Item) -> Result<(), StoreError> {
        let (put, changes) = self.relabel_items(job, old, OwnWakeup::Keep)?;
        let mut items = vec![put];
        items.extend(changes);
        let result = self.transact(items).await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match cancelled_first(&e) {
                Some(_) => Err(StoreError::VersionConflict {
                    key: job.job_id.clone(),
                    expected: job.version,
                }),
                None => Err(unavailable("TransactWriteItems", e)),
            },
        }
    }

    /// The transaction items that create `job` (its item is `item`, put only if the id is free)
    /// and its label items: `create_job` of a labelled job, and `Write::CreateJob` of `write_all`.
    pub(super) fn create_items(
        &self,
        job: &JobRecord,
        item: Item,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(built)?;
        let mut items = vec![TransactWriteItem::builder().put(put).build()];
        items.extend(index_changes(
            &self.table,
            &self.keys,
            &job.job_id,
            &BTreeMap::new(),
            &job.labels(),
        )?);
        Ok(items)
    }

    /// Creates `job` (its item is `item`) and its label items in one transaction.
    pub(super) async fn create_labelled_job(
        &self,
        job: &JobRecord,
        item: Item,
    ) -> Result<(), StoreError> {
        let items = self.create_items(job, item)?;
        match self.transact(items).await {
            Ok(_) => Ok(()),
            Err(e) => match cancelled_first(&e) {
                Some(Some(code)) if code == "ConditionalCheckFailed" => {
                    Err(StoreError::AlreadyExists(job.job_id.clone()))
                }
                Some(_) => Err(StoreError::VersionConflict {
                    key: job.job_id.clone(),
                    expected: 0,
                }),
                None => Err(unavailable("TransactWriteItems", e)),
            },
        }
    }

    /// Deletes a job, its wake-up and its label items: the job's item collection is read (one
    /// strongly consistent `Query`) and deleted in one transaction, conditional on the job's
    /// version, so labels written meanwhile cannot be left behind.
    pub(super) async fn delete_job_collection(&self, job_id: &str) -> Result<bool, StoreError> {
        let wakeup = self.keys.wakeup(&format!("job:{job_id}"));
        let delete = |key: Item| {
            Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key))
                .build()
                .map_err(built)
        };
        for round in 0..MAX_DELETE_ROUNDS {
            if round > 0 {
                self.back_off(std::time::Duration::from_millis(10 << round))
                    .await;
            }
            let collection = self.job_collection(job_id).await?;
            let (jobs, labels): (Vec<Item>, Vec<Item>) = collection.into_iter().partition(|item| {
                item.get("sk")
                    .and_then(|v| v.as_s().ok())
                    .map(String::as_str)
                    == Some(JOB_SK)
            });
            let label_keys = self.label_keys(job_id, &labels);
            let Some(job) = jobs.first() else {
                // No job; make sure nothing of it survives either.
                self.delete_all(label_keys).await?;
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(wakeup))
                    .send()
                    .boxed()
                    .await
                    .map_err(|e| unavailable("DeleteItem", e))?;
                return Ok(false);
            };
            let version = version_of(job)
                .ok_or_else(|| StoreError::corrupt(format!("job {job_id} has no version"), None))?;
            let job_delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(self.keys.job(job_id)))
                .condition_expression("#version = :v")
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":v", AttributeValue::N(version.to_string()))
                .build()
                .map_err(built)?;
            let tombstone = aws_sdk_dynamodb::types::Put::builder()
                .table_name(&self.table)
                .set_item(Some(super::retention::tombstone_item(self, job_id)))
                .build()
                .map_err(built)?;
            let mut items = vec![
                TransactWriteItem::builder().delete(job_delete).build(),
                TransactWriteItem::builder()
                    .delete(delete(wakeup.clone())?)
                    .build(),
                TransactWriteItem::builder().put(tombstone).build(),
            ];
            for key in label_keys {
                items.push(TransactWriteItem::builder().delete(delete(key)?).build());
            }
            match self.transact(items).await {
                Ok(_) => return Ok(true),
                // Written (or deleted) since read: read again.
                Err(e) if cancelled_first(&e).is_some() => continue,
                Err(e) => return Err(unavailable("TransactWriteItems", e)),
            }
        }
        Err(StoreError::VersionConflict {
            key: job_id.to_owned(),
            expected: 0,
        })
    }

    /// The keys of job `job_id`'s label items among `items` (of its collection).
    fn label_keys(&self, job_id: &str, items: &[Item]) -> Vec<Item> {
        items
            .iter()
            .filter_map(|item| {
                let sk = item.get("sk")?.as_s().ok()?;
                Some(self.keys.label(job_id, sk.strip_prefix(LABEL_SK_PREFIX)?))
            })
            .collect()
    }

    /// The keys of job `job_id`'s label items, as its collection holds them now (one strongly
    /// consistent `Query`): what a `Write::DeleteJob` of `write_all` deletes with the job, whose
    /// version condition makes sure they are still all of them (labels change only with it).
    pub(super) async fn label_keys_of(&self, job_id: &str) -> Result<Vec<Item>, StoreError> {
        let collection = self.job_collection(job_id).await?;
        Ok(self.label_keys(job_id, &collection))
    }

    /// The items of job `job_id`'s collection: the job and its label items.
    async fn job_collection(&self, job_id: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", AttributeValue::S(self.keys.job_pk(job_id)))
                .projection_expression("pk, sk, #version")
                .expression_attribute_names("#version", "version")
                .consistent_read(true)
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

    /// A page of the jobs `filter` selects, read through the partition of its first label
    /// (`pk`), after job `after`.
    pub(super) async fn list_labelled_jobs(
        &self,
        filter: &JobFilter,
        pk: String,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<JobRecord>, StoreError> {
        let Some(first) = filter.labels.first() else {
            return Err(StoreError::unavailable("a label listing without a label"));
        };
        let want = limit + 1;
        let mut start = after.map(|job_id| {
            start_key(
                self.keys.label(job_id, &first.key),
                ("gsi1pk", pk.clone()),
                ("gsi1sk", job_id.to_owned()),
            )
        });
        let mut kept: Vec<JobRecord> = Vec::new();
        loop {
            let mut request = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(GSI1)
                .key_condition_expression("gsi1pk = :pk")
                .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
                // One `BatchGetItem` (100 keys) per page of the index.
                .limit(i32::try_from((want - kept.len()).clamp(1, BATCH_GET_KEYS)).unwrap_or(100))
                .set_exclusive_start_key(start.take());
            if let Some((condition, name, value)) = prefix_condition(GSI1, filter) {
                request = request
                    .key_condition_expression(format!("gsi1pk = :pk AND {condition}"))
                    .expression_attribute_values(name, value);
            }
            let output = request
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("Query", e))?;
            let ids: Vec<String> = output
                .items
                .unwrap_or_default()
                .iter()
                // A label item's `gsi1sk` is its job's id (the index holds keys only).
                .filter_map(|item| item.get("gsi1sk")?.as_s().ok().cloned())
                .collect();
            let jobs = self
                .batch_get(ids.iter().map(|id| self.keys.job(id)).collect())
                .await?;
            for item in jobs.into_iter().flatten() {
                let job = job_record(&item)?;
                if filter.matches(&job) {
                    kept.push(job);
                    if kept.len() >= want {
                        return Ok(looked_ahead(kept, limit, |job: &JobRecord| {
                            cursor::job(&job.job_id)
                        }));
                    }
                }
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => {
                    return Ok(looked_ahead(kept, limit, |job: &JobRecord| {
                        cursor::job(&job.job_id)
                    }))
                }
            }
        }
    }
}

/// How many times a delete reads the job again after losing a race with a write of it.
const MAX_DELETE_ROUNDS: u32 = 8;
