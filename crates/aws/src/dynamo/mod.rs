//! The [`Store`] port on DynamoDB: one table, two overloaded keys-only indexes, a write-sharded
//! wake-up index and a write-sharded keys-only runs index (layout in [`keys`], its version in
//! [`layout`]).
//!
//! Every write that can race is conditional: creates on `attribute_not_exists(pk)`, updates on the
//! version read, a wake-up's removal on the due time read, a job's deletion (with its wake-up) in one
//! transaction. Reads of single items are strongly consistent; listings go through global secondary
//! indexes, which DynamoDB keeps eventually consistent (typically well under a second behind) — the
//! engine never relies on a listing for correctness, only on keyed reads and conditional writes.
//!
//! Executions that are over get a TTL attribute (`expiresAt`) when a retention is configured.
//! DynamoDB deletes expired items only eventually, so every read treats an expired item as gone.

pub mod audit;
mod calendars;
mod cancellation;
pub mod item;
pub mod keys;
pub mod labels;
pub mod layout;
mod next_fire;
mod own_wakeup;
mod retention;
pub mod rollups;
mod search;
mod sessions;
mod settings;

use futures_util::FutureExt;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, DeleteRequest, ReturnValue, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, WriteRequest,
};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use sundial_core::execution::ExecutionState;
use sundial_ports::clock::{Clock, SystemClock};
use sundial_ports::store::retention::past_retention;
use sundial_ports::store::{
    check_batch, cursor, CleanReport, ExecutionQuery, ExecutionRecord, ExecutionStore, JobFilter,
    JobOrder, JobRecord, JobStore, ManyRead, Page, PageRequest, Store, StoreError, WakeUp,
    WakeUpIndex, Write, WriteAllError, MAX_PAGE, MAX_WRITES,
};

use cancellation::Cancellation;
use item::{
    execution_item, execution_record, expired, job_item, job_record, number, string, wakeup_item,
};
use keys::{Item, Keys, GSI1, GSI2, WAKEUPS};
use labels::{labels_text, prefix_condition, JobPartition, LABELS};
use own_wakeup::{
    is_own_item, owner_of, ItemUpdate, OwnWakeup, Owner, EXECUTION_OPTIONAL, JOB_OPTIONAL,
};

/// What an owner's item must hold for [`DynamoStore::change_own_wakeup`] to change its wake-up.
#[derive(Clone, Copy, Debug)]
enum Holding {
    /// Any wake-up or none.
    Any,
    /// A wake-up due at this time.
    DueAt(DateTime<Utc>),
    /// No wake-up.
    None,
}

/// The condition of every update: the item exists at the version the writer read.
const VERSION_MATCHES: &str = "attribute_exists(pk) AND #version = :v";

/// How many times a transaction cancelled only for a conflict on a rollup item is sent again.
const ROLLUP_CONFLICT_RETRIES: u32 = 8;

/// How many wake-up index shards a store uses unless told otherwise. A scheduled run writes about
/// 4 WRU to the wake-up index (its job's entry moved, its fallback put and removed): at 100,000
/// runs a minute, 6,700 WCU/s, about 420 per shard over 16 (8 took 830), under the 500 WCU/s one
/// key of an index should take (a partition takes 1,000). A tick reads each shard once.
pub const DEFAULT_WAKEUP_SHARDS: u32 = 16;

/// The DynamoDB store.
#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    keys: Keys,
    retention: Option<Duration>,
    /// What the store's own waits go through (a throttled batch, a transaction lost on a rollup
    /// another run was adding to): the engine's clock, so a simulation's races take turns.
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for DynamoStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamoStore")
            .field("table", &self.table)
            .field("keys", &self.keys)
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl DynamoStore {
    /// A store on `table` with the default shard count, no namespace and no retention.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
            keys: Keys::new("", DEFAULT_WAKEUP_SHARDS),
            retention: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// Makes the store's waits before trying a request again go through `clock`
    /// ([`Clock::back_off`]).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Waits `wait` before a request goes again, on the store's clock.
    async fn back_off(&self, wait: Duration) {
        self.clock.back_off(wait).await;
    }

    /// Spreads the wake-up index over `shards` partitions (at least 1). Changing it on a live table
    /// orphans the entries of shards no longer read, so it is fixed per deployment.
    pub fn with_wakeup_shards(mut self, shards: u32) -> Self {
        self.keys = Keys::new(self.keys.ns().to_owned(), shards);
        self
    }

    /// Prefixes every key with `ns`, so several independent stores share one table (tests).
    pub fn with_namespace(mut self, ns: impl Into<String>) -> Self {
        self.keys = Keys::new(ns, self.keys.shards());
        self
    }

    /// Lets finished executions expire `retention` after their last write.
    pub fn with_execution_retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The key layout.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    fn expires_at(&self, state: &str) -> Option<i64> {
        // Only final states: a Failed execution is waiting for its retry.
        let over = ExecutionState::parse(state).is_some_and(ExecutionState::is_final);
        let retention = self.retention.filter(|_| over)?;
        Some(Utc::now().timestamp() + i64::try_from(retention.as_secs()).unwrap_or(i64::MAX / 2))
    }

    async fn get_item(&self, key: Item) -> Result<Option<Item>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("GetItem", e))?;
        Ok(output
            .item
            .filter(|item| !expired(item, Utc::now().timestamp())))
    }

    /// Executions and jobs in one `BatchGetItem` per hundred ([`Store::read_many`]), strongly
    /// consistent or not.
    async fn read_many_as(
        &self,
        execution_ids: &[String],
        job_ids: &[String],
        consistent: bool,
    ) -> Result<ManyRead, StoreError> {
        let keys = execution_ids
            .iter()
            .map(|id| self.keys.execution(id))
            .chain(job_ids.iter().map(|id| self.keys.job(id)))
            .collect();
        let mut items = self
            .batch_get_as_stored(keys, false, consistent)
            .await?
            .into_iter();
        let executions = items
            .by_ref()
            .take(execution_ids.len())
            .map(|item| item.as_ref().map(execution_record).transpose())
            .collect::<Result<_, _>>()?;
        let jobs = items
            .map(|item| item.as_ref().map(job_record).transpose())
            .collect::<Result<_, _>>()?;
        Ok(ManyRead { executions, jobs })
    }

    /// Strongly consistent reads of many items (`BatchGetItem`, 100 keys per request), in the
    /// order of `keys`; `None` for a missing or expired item.
    async fn batch_get(&self, keys: Vec<Item>) -> Result<Vec<Option<Item>>, StoreError> {
        self.batch_get_as_stored(keys, false, true).await
    }

    /// [`DynamoStore::batch_get`], keeping expired items when `with_expired` (rollups: their
    /// readers judge their hours, and an expired one is still there to be cleaned), and
    /// eventually consistent (half the read units) unless `consistent`.
    async fn batch_get_as_stored(
        &self,
        keys: Vec<Item>,
        with_expired: bool,
        consistent: bool,
    ) -> Result<Vec<Option<Item>>, StoreError> {
        use aws_sdk_dynamodb::types::KeysAndAttributes;
        let identity = |item: &Item| {
            let text = |name: &str| {
                item.get(name)
                    .and_then(|v| v.as_s().ok())
                    .cloned()
                    .unwrap_or_default()
            };
            (text("pk"), text("sk"))
        };
        let mut found: HashMap<(String, String), Item> = HashMap::new();
        let now = Utc::now().timestamp();
        // DynamoDB refuses a request that names a key twice.
        let mut seen = std::collections::HashSet::new();
        let unique: Vec<Item> = keys
            .iter()
            .filter(|key| seen.insert(identity(key)))
            .cloned()
            .collect();
        for chunk in unique.chunks(100) {
            let mut pending = chunk.to_vec();
            for attempt in 0..10u32 {
                if pending.is_empty() {
                    break;
                }
                if attempt > 0 {
                    // Unprocessed keys mean throttling: back off before asking again.
                    self.back_off(Duration::from_millis(20 << attempt.min(5)))
                        .await;
                }
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .consistent_read(consistent)
                    .build()
                    .map_err(|e| StoreError::unavailable_because("building a batch read", e))?;
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .boxed()
                    .await
                    .map_err(|e| unavailable("BatchGetItem", e))?;
                for item in output
                    .responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default()
                {
                    if with_expired || !expired(&item, now) {
                        found.insert(identity(&item), item);
                    }
                }
                pending = output
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .map(|k| k.keys)
                    .unwrap_or_default();
            }
            if !pending.is_empty() {
                return Err(StoreError::unavailable(
                    "BatchGetItem: keys left unprocessed after retries",
                ));
            }
        }
        Ok(keys
            .iter()
            .map(|key| found.get(&identity(key)).cloned())
            .collect())
    }

    /// One write of a batch, without a transaction.
    /// One write alone, as its own call would make it; an execution's write also does `own` to
    /// the wake-up its item carries (the other kinds carry none here: `write_all` sends a job's
    /// write with its wake-up as a transaction).
    async fn write_one(&self, write: &Write<'_>, own: OwnWakeup) -> Result<(), StoreError> {
        match *write {
            Write::UpdateJob(job) => self.update_job(job).await.map(drop),
            Write::UpdateExecution(e) => self.update_execution_owning(e, own).await.map(drop),
            Write::CreateExecution(e) => match self.create_execution_owning(e, own).await? {
                true => Ok(()),
                false => Err(StoreError::AlreadyExists(e.execution_id.clone())),
            },
            Write::SetWakeup(key, due) => self.set_wakeup(key, due).await,
            Write::CreateJob(job) => self.create_job(job).await,
            Write::AppendAudit(entry) => {
                let item = audit::audit_item(&self.keys, entry, self.audit_expires_at())?;
                match self
                    .put_if(item, "attribute_not_exists(pk)", vec![])
                    .await?
                {
                    None => Ok(()),
                    Some(_) => Err(StoreError::AlreadyExists(write.key())),
                }
            }
            // A job and its wake-up: always a transaction (see `write_all`).
            Write::DeleteJob(..) => Err(StoreError::unavailable(
                "a deletion is written in a transaction",
            )),
            Write::AddRollup(rollup) => self.add_rollup(rollup).await,
            Write::RequireCalendarUser(calendar, job_id) => {
                match self
                    .get_item(self.keys.calendar_user(calendar, job_id))
                    .await?
                {
                    Some(_) => Ok(()),
                    None => Err(StoreError::NotFound(write.key())),
                }
            }
        }
    }

    /// A write as items of `TransactWriteItems`, with the condition its own call would have: one
    /// item, but a job's creation also puts its label items, and its deletion also deletes its
    /// wake-up and `labels` (the keys of its label items, read beforehand).
    fn transact_items(
        &self,
        write: &Write<'_>,
        labels: &[Item],
        own: OwnWakeup,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let built = |e: aws_sdk_dynamodb::error::BuildError| {
            StoreError::unavailable_because("building a transaction", e)
        };
        let put_new = |item: Item| {
            aws_sdk_dynamodb::types::Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .map(|put| TransactWriteItem::builder().put(put).build())
                .map_err(built)
        };
        match *write {
            Write::CreateJob(job) => {
                let mut item = job_item(&self.keys, job, job.version)?;
                if let OwnWakeup::Set(wakeup) = own {
                    item.extend(wakeup);
                }
                self.create_items(job, item)
            }
            Write::AppendAudit(entry) => Ok(vec![put_new(audit::audit_item(
                &self.keys,
                entry,
                self.audit_expires_at(),
            )?)?]),
            Write::DeleteJob(job_id, version) => {
                let job = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.keys.job(job_id)))
                    .condition_expression(VERSION_MATCHES)
                    .expression_attribute_names("#version", "version")
                    .expression_attribute_values(":v", AttributeValue::N(version.to_string()))
                    .return_values_on_condition_check_failure(
                        ReturnValuesOnConditionCheckFailure::AllOld,
                    )
                    .build()
                    .map_err(built)?;
                let delete = |key: Item| {
                    Delete::builder()
                        .table_name(&self.table)
                        .set_key(Some(key))
                        .build()
                        .map(|delete| TransactWriteItem::builder().delete(delete).build())
                        .map_err(built)
                };
                let tombstone = aws_sdk_dynamodb::types::Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(retention::tombstone_item(self, job_id)))
                    .build()
                    .map_err(built)?;
                let mut items = vec![
                    TransactWriteItem::builder().delete(job).build(),
                    delete(self.keys.wakeup(&format!("job:{job_id}")))?,
                    TransactWriteItem::builder().put(tombstone).build(),
                ];
                for key in labels {
                    items.push(delete(key.clone())?);
                }
                Ok(items)
            }
            _ => Ok(vec![self.transact_item(write, own)?]),
        }
    }

    /// A write of the original kinds as an item of `TransactWriteItems`; an execution's write
    /// also does `own` to the wake-up its item carries (see `own_wakeup`).
    fn transact_item(
        &self,
        write: &Write<'_>,
        own: OwnWakeup,
    ) -> Result<TransactWriteItem, StoreError> {
        use aws_sdk_dynamodb::types::Put;
        let built = |e: aws_sdk_dynamodb::error::BuildError| {
            StoreError::unavailable_because("building a transaction", e)
        };
        let put = match *write {
            Write::UpdateJob(job) => {
                // The stored labels must be the ones written; else see `labels`.
                let text = labels_text(job)?;
                return self.transact_update(self.job_update(job, &text, own)?);
            }
            Write::UpdateExecution(e) => {
                return self.transact_update(self.execution_update(e, own)?);
            }
            Write::CreateExecution(e) => {
                let expires = self.expires_at(&e.state);
                let mut item = execution_item(&self.keys, e, e.version, expires)?;
                if let OwnWakeup::Set(wakeup) = own {
                    item.extend(wakeup);
                }
                Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression("attribute_not_exists(pk)")
                    .build()
                    .map_err(built)?
            }
            Write::SetWakeup(key, Some(due)) => Put::builder()
                .table_name(&self.table)
                .set_item(Some(wakeup_item(&self.keys, key, due)))
                .build()
                .map_err(built)?,
            Write::AddRollup(rollup) => return self.rollup_transact_item(rollup),
            Write::RequireCalendarUser(calendar, job_id) => {
                let check = aws_sdk_dynamodb::types::ConditionCheck::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.keys.calendar_user(calendar, job_id)))
                    .condition_expression("attribute_exists(pk)")
                    .build()
                    .map_err(built)?;
                return Ok(TransactWriteItem::builder().condition_check(check).build());
            }
            Write::SetWakeup(key, None) => {
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(self.keys.wakeup(key)))
                    .build()
                    .map_err(built)?;
                return Ok(TransactWriteItem::builder().delete(delete).build());
            }
            Write::CreateJob(_) | Write::DeleteJob(..) | Write::AppendAudit(_) => {
                return Err(StoreError::unavailable(format!(
                    "{} is not a single put",
                    write.key()
                )))
            }
        };
        Ok(TransactWriteItem::builder().put(put).build())
    }

    /// An unconditional put of `item`.
    async fn put_item(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("PutItem", e))?;
        Ok(())
    }

    /// A conditional put. `Ok(None)` when it went through; `Ok(Some(old))` when the condition
    /// failed, with the item as it is (`None` inside if there is none).
    async fn put_if(
        &self,
        item: Item,
        condition: &str,
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<Option<Option<Item>>, StoreError> {
        let mut request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_names({
                let names: HashMap<String, String> = [("#version", "version"), ("#labels", LABELS)]
                    .into_iter()
                    .filter(|(placeholder, _)| condition.contains(placeholder))
                    .map(|(placeholder, name)| (placeholder.to_owned(), name.to_owned()))
                    .collect();
                (!names.is_empty()).then_some(names)
            })
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        for (name, value) in values {
            request = request.expression_attribute_values(name, value);
        }
        match request.send().boxed().await {
            Ok(_) => Ok(None),
            Err(e) => match e.as_service_error() {
                // A transaction held the item at that moment (dispatch writes jobs in
                // transactions): for an update, as good as a lost race, so the caller reads again
                // and retries. The item is there; what it holds is unknown.
                Some(aws_sdk_dynamodb::operation::put_item::PutItemError::TransactionConflictException(_))
                    if condition.starts_with(VERSION_MATCHES) =>
                {
                    Ok(Some(Some(Item::new())))
                }
                Some(service) if service.is_conditional_check_failed_exception() => {
                    let old = match service {
                        aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => {
                            c.item().cloned()
                        }
                        _ => None,
                    };
                    Ok(Some(old))
                }
                _ => Err(unavailable("PutItem", e)),
            },
        }
    }

    /// Execution `e`'s next version as an update of its stored item, doing `own` to its wake-up.
    fn execution_update(
        &self,
        e: &ExecutionRecord,
        own: OwnWakeup,
    ) -> Result<ItemUpdate, StoreError> {
        let expires = self.expires_at(&e.state);
        let item = execution_item(&self.keys, e, next_version(e.version)?, expires)?;
        let mut update = own_wakeup::item_update(item, own, &EXECUTION_OPTIONAL);
        update.condition = VERSION_MATCHES.to_owned();
        update.names.insert("#version".into(), "version".into());
        update
            .values
            .insert(":v".into(), AttributeValue::N(e.version.to_string()));
        Ok(update)
    }

    /// Job `job`'s next version as an update of its stored item, doing `own` to its wake-up, on
    /// the condition that the stored labels are `labels` (canonical JSON, `None` for none; else
    /// see `labels`).
    fn job_update(
        &self,
        job: &JobRecord,
        labels: &Option<String>,
        own: OwnWakeup,
    ) -> Result<ItemUpdate, StoreError> {
        let item = job_item(&self.keys, job, next_version(job.version)?)?;
        let mut update = own_wakeup::item_update(item, own, &JOB_OPTIONAL);
        let (labels_condition, labels_value) = labels::labels_condition(labels);
        update.condition = format!("{VERSION_MATCHES} AND {labels_condition}");
        update.names.insert("#version".into(), "version".into());
        update.names.insert("#labels".into(), labels::LABELS.into());
        update
            .values
            .insert(":v".into(), AttributeValue::N(job.version.to_string()));
        update
            .values
            .extend(labels_value.map(|(placeholder, value)| (placeholder.to_owned(), value)));
        Ok(update)
    }

    /// An update ([`DynamoStore::execution_update`], [`DynamoStore::job_update`]) as an item of
    /// `TransactWriteItems`.
    fn transact_update(&self, update: ItemUpdate) -> Result<TransactWriteItem, StoreError> {
        let update = aws_sdk_dynamodb::types::Update::builder()
            .table_name(&self.table)
            .set_key(Some(update.key))
            .update_expression(update.expression)
            .condition_expression(update.condition)
            .set_expression_attribute_names(Some(update.names))
            .set_expression_attribute_values(Some(update.values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| StoreError::unavailable_because("building a transaction", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// [`DynamoStore::put_if`] for an update made by [`DynamoStore::execution_update`] or
    /// [`DynamoStore::job_update`] (on its condition).
    async fn update_if(&self, update: ItemUpdate) -> Result<Option<Option<Item>>, StoreError> {
        use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(update.key))
            .update_expression(update.expression)
            .condition_expression(update.condition)
            .set_expression_attribute_names(Some(update.names))
            .set_expression_attribute_values(Some(update.values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .boxed()
            .await;
        match result {
            Ok(_) => Ok(None),
            Err(e) => match e.as_service_error() {
                // As `put_if`: a transaction held the item; as good as a lost race.
                Some(UpdateItemError::TransactionConflictException(_)) => {
                    Ok(Some(Some(Item::new())))
                }
                Some(UpdateItemError::ConditionalCheckFailedException(c)) => {
                    Ok(Some(c.item().cloned()))
                }
                _ => Err(unavailable("UpdateItem", e)),
            },
        }
    }

    /// Puts or removes the wake-up that `owner`'s item carries, when the item exists and holds
    /// what `holding` asks. Whether it was there to change.
    async fn change_own_wakeup(
        &self,
        owner: Owner<'_>,
        set: Option<Item>,
        holding: Holding,
    ) -> Result<bool, StoreError> {
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(owner.item_key(&self.keys)));
        let mut condition = "attribute_exists(pk)".to_owned();
        match set {
            Some(attributes) => {
                let mut sets = Vec::new();
                for (index, (name, value)) in attributes.into_iter().enumerate() {
                    request = request
                        .expression_attribute_names(format!("#w{index}"), name)
                        .expression_attribute_values(format!(":w{index}"), value);
                    sets.push(format!("#w{index} = :w{index}"));
                }
                request = request.update_expression(format!("SET {}", sets.join(", ")));
            }
            None => {
                let mut removes = Vec::new();
                for (index, name) in own_wakeup::WAKEUP_ATTRIBUTES.iter().enumerate() {
                    request = request.expression_attribute_names(format!("#w{index}"), *name);
                    removes.push(format!("#w{index}"));
                }
                request = request.update_expression(format!("REMOVE {}", removes.join(", ")));
            }
        }
        match holding {
            Holding::Any => {}
            Holding::DueAt(due) => {
                condition.push_str(" AND tdue = :due");
                request = request.expression_attribute_values(
                    ":due",
                    AttributeValue::N(due.timestamp_millis().to_string()),
                );
            }
            Holding::None => condition.push_str(" AND attribute_not_exists(tdue)"),
        }
        let result = request.condition_expression(condition).send().boxed().await;
        condition_held("UpdateItem", result, |e| {
            e.is_conditional_check_failed_exception()
        })
    }

    /// Moves a job's wake-up that an earlier layout kept as an item of its own (`W#job:{id}`) onto
    /// the job's item, where layout 5 keeps it, once, when the tick first reads it due: set on the
    /// job unless the job already carries one (written since, so newer), then the own item
    /// deleted. A job that no longer exists keeps the item: the tick finds it and removes it.
    async fn move_job_wakeup(&self, wakeup: &WakeUp) -> Result<(), StoreError> {
        let Some(owner @ Owner::Job(_)) = owner_of(&wakeup.key) else {
            return Ok(());
        };
        let set = own_wakeup::attributes(&self.keys, &wakeup.key, wakeup.due);
        let moved = self
            .change_own_wakeup(owner, Some(set), Holding::None)
            .await?;
        // Not moved: the job carries a newer wake-up, or is gone (which one, a read tells).
        let job_exists = moved || self.get_item(owner.item_key(&self.keys)).await?.is_some();
        if job_exists {
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(self.keys.wakeup(&wakeup.key)))
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("DeleteItem", e))?;
        }
        Ok(())
    }

    /// The `Query` of one page of `query`'s index partition, at most `limit` entries from `start`.
    fn index_page(
        &self,
        query: &IndexQuery,
        limit: i32,
        start: Option<Item>,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let request = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(query.index)
            .key_condition_expression(format!("{} = :pk", query.pk_name))
            .expression_attribute_values(":pk", AttributeValue::S(query.pk_value.clone()))
            .scan_index_forward(query.forward)
            .limit(limit)
            .set_exclusive_start_key(start);
        match &query.sort_condition {
            Some((condition, name, value)) => request
                .key_condition_expression(format!("{} = :pk AND {condition}", query.pk_name))
                .expression_attribute_values(*name, value.clone()),
            None => request,
        }
    }

    /// Queries one index partition in order, keeping the items `keep` accepts, until `want` are
    /// kept or the partition ends. Filters are applied here rather than as a DynamoDB filter
    /// expression so a page never comes back short just because the read limit was reached.
    async fn query_collect(
        &self,
        query: IndexQuery,
        want: usize,
        keep: impl Fn(&Item) -> bool,
    ) -> Result<Vec<Item>, StoreError> {
        let mut kept = Vec::new();
        let mut start = query.start.clone();
        let now = Utc::now().timestamp();
        loop {
            let limit = i32::try_from(want.clamp(1, MAX_PAGE) + 1).unwrap_or(1000);
            let output = self
                .index_page(&query, limit, start.take())
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in output.items.unwrap_or_default() {
                if !expired(&item, now) && keep(&item) {
                    kept.push(item);
                    if kept.len() >= want {
                        return Ok(kept);
                    }
                }
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(kept),
            }
        }
    }

    /// Queries one partition of a keys-only index in order and reads the items its entries name
    /// (`BatchGetItem`, strongly consistent, in index order), keeping those `keep` accepts, until
    /// `want` are kept or the partition ends. An entry whose item is gone (deleted or expired
    /// since the index saw it) is passed over. With `filtered`, the index is read 100 entries at
    /// a time (one batch read each); without, no more entries than are still wanted, so an
    /// unfiltered page reads no item it does not return (beyond the one that says there is more).
    async fn query_then_get(
        &self,
        query: IndexQuery,
        want: usize,
        filtered: bool,
        keep: impl Fn(&Item) -> bool,
    ) -> Result<Vec<Item>, StoreError> {
        let mut kept = Vec::new();
        let mut start = query.start.clone();
        loop {
            let read = if filtered {
                BATCH_GET_KEYS
            } else {
                (want - kept.len()).clamp(1, BATCH_GET_KEYS)
            };
            let limit = i32::try_from(read).unwrap_or(100);
            let output = self
                .index_page(&query, limit, start.take())
                .send()
                .boxed()
                .await
                .map_err(|e| unavailable("Query", e))?;
            let keys: Vec<Item> = output
                .items
                .unwrap_or_default()
                .iter()
                .map(table_key)
                .collect::<Result<_, _>>()?;
            for item in self.batch_get(keys).await?.into_iter().flatten() {
                if keep(&item) {
                    kept.push(item);
                    if kept.len() >= want {
                        return Ok(kept);
                    }
                }
            }
            match output.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(kept),
            }
        }
    }

    /// Deletes items by primary key, 25 per request, retrying what DynamoDB leaves unprocessed.
    async fn delete_all(&self, keys: Vec<Item>) -> Result<(), StoreError> {
        for chunk in keys.chunks(25) {
            let mut pending: Vec<WriteRequest> = chunk
                .iter()
                .map(|key| {
                    DeleteRequest::builder()
                        .set_key(Some(key.clone()))
                        .build()
                        .map(|delete| WriteRequest::builder().delete_request(delete).build())
                        .map_err(|e| StoreError::unavailable_because("building a delete", e))
                })
                .collect::<Result<_, _>>()?;
            for attempt in 0..8u32 {
                if pending.is_empty() {
                    break;
                }
                let output = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, std::mem::take(&mut pending))
                    .send()
                    .boxed()
                    .await
                    .map_err(|e| unavailable("BatchWriteItem", e))?;
                pending = output
                    .unprocessed_items
                    .and_then(|mut left| left.remove(&self.table))
                    .unwrap_or_default();
                if !pending.is_empty() {
                    self.back_off(Duration::from_millis(50 << attempt)).await;
                }
            }
            if !pending.is_empty() {
                return Err(StoreError::unavailable(
                    "BatchWriteItem kept leaving items unprocessed",
                ));
            }
        }
        Ok(())
    }
}

/// An index partition of executions, newest first.
struct ExecutionIndex {
    index: &'static str,
    pk_name: &'static str,
    sk_name: &'static str,
    pk_value: String,
}

impl DynamoStore {
    /// One page of executions from an index partition, after `after` (its sort key and execution
    /// id), keeping those `keep` accepts.
    async fn list_execution_index(
        &self,
        partition: ExecutionIndex,
        after: Option<(String, String)>,
        limit: usize,
        filtered: bool,
        keep: impl Fn(&Item) -> bool,
        cursor_of: impl Fn(&ExecutionRecord) -> String,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let (pk_name, sk_name) = (partition.pk_name, partition.sk_name);
        let start = after.map(|(sort, id)| {
            keys::start_key(
                self.keys.execution(&id),
                (pk_name, partition.pk_value.clone()),
                (sk_name, sort),
            )
        });
        let query = IndexQuery {
            index: partition.index,
            pk_name,
            pk_value: partition.pk_value,
            sort_condition: None,
            forward: false,
            start,
        };
        let items = self
            .query_then_get(query, limit + 1, filtered, keep)
            .await?;
        let executions = items
            .iter()
            .map(execution_record)
            .collect::<Result<_, _>>()?;
        Ok(looked_ahead(executions, limit, cursor_of))
    }
}

/// One index partition to read.
struct IndexQuery {
    index: &'static str,
    pk_name: &'static str,
    pk_value: String,
    /// An extra key condition on the sort key: (`expression`, placeholder, value).
    sort_condition: Option<(&'static str, &'static str, AttributeValue)>,
    forward: bool,
    start: Option<Item>,
}

fn unavailable<E, R>(operation: &str, error: SdkError<E, R>) -> StoreError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    StoreError::unavailable_because(operation, error)
}

/// Whether a conditional write went through (`false`: its condition did not hold, which
/// `failed_condition` tells from its error).
fn condition_held<T, E, R>(
    operation: &str,
    result: Result<T, SdkError<E, R>>,
    failed_condition: impl Fn(&E) -> bool,
) -> Result<bool, StoreError>
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(true),
        Err(e) if e.as_service_error().is_some_and(&failed_condition) => Ok(false),
        Err(e) => Err(unavailable(operation, e)),
    }
}

fn looked_ahead<T>(mut items: Vec<T>, limit: usize, cursor_of: impl Fn(&T) -> String) -> Page<T> {
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = more.then(|| items.last().map(&cursor_of)).flatten();
    Page { items, next_cursor }
}

fn conflict_or_missing(key: &str, expected: u64, old: Option<Item>) -> StoreError {
    match old {
        Some(_) => StoreError::VersionConflict {
            key: key.to_owned(),
            expected,
        },
        None => StoreError::NotFound(key.to_owned()),
    }
}

/// The table key (`pk`, `sk`) of an item or of an index entry of it.
fn table_key(entry: &Item) -> Result<Item, StoreError> {
    let part = |name: &str| {
        entry
            .get(name)
            .cloned()
            .map(|value| (name.to_owned(), value))
            .ok_or_else(|| StoreError::corrupt(format!("an index entry has no `{name}`"), None))
    };
    Ok(Item::from([part("pk")?, part("sk")?]))
}

/// The most keys one `BatchGetItem` reads.
pub(crate) const BATCH_GET_KEYS: usize = 100;

/// The `version` of a stored item, if it has one.
fn version_of(item: &Item) -> Option<u64> {
    number(item, "version").ok()
}

fn next_version(version: u64) -> Result<u64, StoreError> {
    version
        .checked_add(1)
        .ok_or_else(|| StoreError::unavailable(format!("version {version} cannot be incremented")))
}

impl JobStore for DynamoStore {
    async fn create_job(&self, job: &JobRecord) -> Result<(), StoreError> {
        let item = job_item(&self.keys, job, job.version)?;
        if !job.labels().is_empty() {
            return self.create_labelled_job(job, item).await;
        }
        match self
            .put_if(item, "attribute_not_exists(pk)", vec![])
            .await?
        {
            None => Ok(()),
            Some(_) => Err(StoreError::AlreadyExists(job.job_id.clone())),
        }
    }

    async fn get_job(&self, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
        self.get_item(self.keys.job(job_id))
            .await?
            .as_ref()
            .map(job_record)
            .transpose()
    }

    async fn update_job(&self, job: &JobRecord) -> Result<u64, StoreError> {
        let version = next_version(job.version)?;
        let text = labels_text(job)?;
        let update = self.job_update(job, &text, OwnWakeup::Keep)?;
        match self.update_if(update).await? {
            None => Ok(version),
            // At the version read, with other labels: the labels change, index and all.
            Some(Some(old)) if version_of(&old) == Some(job.version) => {
                self.relabel_job(job, &old).await?;
                Ok(version)
            }
            Some(old) => Err(conflict_or_missing(&job.job_id, job.version, old)),
        }
    }

    async fn delete_job(&self, job_id: &str) -> Result<bool, StoreError> {
        self.delete_job_collection(job_id).await
    }

    /// Jobs by id: `gsi1` keeps them in one partition sorted by id. By next fire: from the
    /// wake-up index (see `next_fire`). By last run: refused with
    /// [`StoreError::UnsupportedOrder`] rather than scanned, as an index of each job's last run
    /// would be written by every run (issue 31's budget).
    async fn list_jobs(
        &self,
        filter: &JobFilter,
        order: JobOrder,
        request: &PageRequest,
    ) -> Result<Page<JobRecord>, StoreError> {
        match order {
            JobOrder::Id => self.list_jobs_by_id(filter, request).await,
            JobOrder::NextFire => self.list_jobs_by_next_fire(filter, request).await,
            JobOrder::LastRun => Err(StoreError::UnsupportedOrder(order)),
        }
    }
}

impl DynamoStore {
    /// [`list_jobs`](sundial_ports::store::JobStore::list_jobs) by id.
    async fn list_jobs_by_id(
        &self,
        filter: &JobFilter,
        request: &PageRequest,
    ) -> Result<Page<JobRecord>, StoreError> {
        let limit = request.limit.clamp(1, MAX_PAGE);
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_job)
            .transpose()?;
        // A parent filter reads the parent's partition of gsi2 (small), a label filter its
        // label's partition of gsi1 (see `labels`); anything else walks gsi1's job partition.
        let (index, pk_name, sk_name, pk_value) = match JobPartition::of(&self.keys, filter) {
            JobPartition::Children(pk) => (GSI2, "gsi2pk", "gsi2sk", pk),
            JobPartition::Label(pk) => {
                return self.list_labelled_jobs(filter, pk, after, limit).await;
            }
            JobPartition::All(pk) => (GSI1, "gsi1pk", "gsi1sk", pk),
        };
        let start = after.map(|job_id| {
            keys::start_key(
                self.keys.job(job_id),
                (pk_name, pk_value.clone()),
                (sk_name, job_id.to_owned()),
            )
        });
        let query = IndexQuery {
            index,
            pk_name,
            pk_value,
            sort_condition: prefix_condition(index, filter),
            forward: true,
            start,
        };
        let same = |want: &Option<String>, item: &Item, name: &str| {
            want.as_ref()
                .is_none_or(|want| item.get(name).and_then(|v| v.as_s().ok()) == Some(want))
        };
        let filtered = filter.state.is_some()
            || filter.creator.is_some()
            || filter.service.is_some()
            || !filter.labels.is_empty();
        let items = self
            .query_then_get(query, limit + 1, filtered, |item| {
                same(&filter.state, item, "state")
                    && same(&filter.creator, item, "creator")
                    && same(&filter.parent_job, item, "parentJob")
                    && same(&filter.service, item, "service")
                    && (filter.labels.is_empty() || {
                        let labels = labels::stored_labels(item);
                        filter
                            .labels
                            .iter()
                            .all(|s| labels.get(&s.key) == Some(&s.value))
                    })
            })
            .await?;
        let jobs = items.iter().map(job_record).collect::<Result<_, _>>()?;
        Ok(looked_ahead(jobs, limit, |job: &JobRecord| {
            cursor::job(&job.job_id)
        }))
    }
}

impl DynamoStore {
    /// [`ExecutionStore::create_execution`], the item carrying its own wake-up when `own` sets one.
    async fn create_execution_owning(
        &self,
        execution: &ExecutionRecord,
        own: OwnWakeup,
    ) -> Result<bool, StoreError> {
        let expires = self.expires_at(&execution.state);
        let mut item = execution_item(&self.keys, execution, execution.version, expires)?;
        if let OwnWakeup::Set(wakeup) = own {
            item.extend(wakeup);
        }
        Ok(self
            .put_if(item, "attribute_not_exists(pk)", vec![])
            .await?
            .is_none())
    }

    /// [`ExecutionStore::update_execution`], doing `own` to the wake-up its item carries.
    async fn update_execution_owning(
        &self,
        execution: &ExecutionRecord,
        own: OwnWakeup,
    ) -> Result<u64, StoreError> {
        let version = next_version(execution.version)?;
        let update = self.execution_update(execution, own)?;
        match self.update_if(update).await? {
            None => Ok(version),
            Some(old) => Err(conflict_or_missing(
                &execution.execution_id,
                execution.version,
                old,
            )),
        }
    }
}

impl ExecutionStore for DynamoStore {
    async fn create_execution(&self, execution: &ExecutionRecord) -> Result<bool, StoreError> {
        self.create_execution_owning(execution, OwnWakeup::Keep)
            .await
    }

    async fn update_execution(&self, execution: &ExecutionRecord) -> Result<u64, StoreError> {
        self.update_execution_owning(execution, OwnWakeup::Keep)
            .await
    }

    async fn get_execution(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionRecord>, StoreError> {
        self.get_item(self.keys.execution(execution_id))
            .await?
            .as_ref()
            .map(execution_record)
            .transpose()
    }

    async fn list_executions(
        &self,
        job_id: &str,
        request: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_execution)
            .transpose()?
            .map(|(number, id)| (keys::execution_sort(number, &id), id));
        let partition = ExecutionIndex {
            index: GSI1,
            pk_name: "gsi1pk",
            sk_name: "gsi1sk",
            pk_value: self.keys.job_executions(job_id),
        };
        self.list_execution_index(
            partition,
            after,
            request.limit,
            false,
            |_| true,
            |e| cursor::execution(e.execute_number, &e.execution_id),
        )
        .await
    }

    /// Each job's newest key (a `Query` of one key of its `gsi1` partition, all at once), then one
    /// read of the items: two round trips for a page of jobs, where one by one took two per job.
    async fn newest_executions(
        &self,
        job_ids: &[String],
    ) -> Result<Vec<Option<ExecutionRecord>>, StoreError> {
        let newest_keys = futures_util::future::try_join_all(job_ids.iter().map(|job_id| {
            let query = IndexQuery {
                index: GSI1,
                pk_name: "gsi1pk",
                pk_value: self.keys.job_executions(job_id),
                sort_condition: None,
                forward: false,
                start: None,
            };
            async move {
                let output = self
                    .index_page(&query, 1, None)
                    .send()
                    .boxed()
                    .await
                    .map_err(|e| unavailable("Query", e))?;
                output
                    .items
                    .unwrap_or_default()
                    .first()
                    .map(table_key)
                    .transpose()
            }
        }))
        .await?;
        let keys: Vec<Item> = newest_keys.iter().flatten().cloned().collect();
        let mut items = self.batch_get(keys).await?.into_iter();
        let mut newest = Vec::with_capacity(job_ids.len());
        for (job_id, key) in job_ids.iter().zip(&newest_keys) {
            let found = match key {
                Some(_) => items.next().flatten(),
                None => None,
            };
            newest.push(match found {
                Some(item) => Some(execution_record(&item)?),
                // Expired (TTL) since the index named it: the page of one passes over it.
                None if key.is_some() => self
                    .list_executions(job_id, &PageRequest::first(1))
                    .await?
                    .items
                    .into_iter()
                    .next(),
                None => None,
            });
        }
        Ok(newest)
    }

    async fn list_child_executions(
        &self,
        parent_job: &str,
        parent_execution: Option<u64>,
        request: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_child)
            .transpose()?
            .map(|(ms, id)| (keys::child_sort(ms, &id), id));
        let partition = ExecutionIndex {
            index: GSI2,
            pk_name: "gsi2pk",
            sk_name: "gsi2sk",
            pk_value: self.keys.child_executions(parent_job),
        };
        let wanted = parent_execution.map(|n| n.to_string());
        let keep = |item: &Item| match &wanted {
            None => true,
            Some(n) => item.get("parentExecution").and_then(|v| v.as_n().ok()) == Some(n),
        };
        let filtered = wanted.is_some();
        self.list_execution_index(partition, after, request.limit, filtered, keep, |e| {
            cursor::child(e.created_at.timestamp_millis(), &e.execution_id)
        })
        .await
    }

    async fn search_executions(
        &self,
        query: &ExecutionQuery,
        request: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        self.search(query, request).await
    }

    async fn clean_executions(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> Result<CleanReport, StoreError> {
        // Maintenance: each known job's keys, never a scan (`retention.rs`).
        let known = self.known_job_ids().await?;
        let runs = self.executions_by_job(known.all()).await?;
        let past = past_retention(
            runs,
            |id| known.live.contains(id),
            retain,
            purge_deleted_jobs,
        );
        let report = CleanReport {
            executions_deleted: past.removed.len() as u64,
            destroyed_jobs_cleaned: past.purged_jobs,
        };
        self.delete_all(
            past.removed
                .iter()
                .map(|(_, (_, id))| self.keys.execution(id))
                .collect(),
        )
        .await?;
        self.drop_spent_tombstones(&known, purge_deleted_jobs)
            .await?;
        Ok(report)
    }
}

impl WakeUpIndex for DynamoStore {
    async fn set_wakeup(&self, key: &str, due: Option<DateTime<Utc>>) -> Result<(), StoreError> {
        // A run's or a job's wake-up goes on its item when there is one (`own_wakeup`); removing
        // one takes it from both places, as an item of its own is how older layouts kept it.
        if let Some(owner) = owner_of(key) {
            let set = due.map(|due| own_wakeup::attributes(&self.keys, key, due));
            let carried = self.change_own_wakeup(owner, set, Holding::Any).await?;
            if carried && due.is_some() {
                return Ok(());
            }
        }
        match due {
            Some(due) => {
                self.put_item(wakeup_item(&self.keys, key, due)).await?;
            }
            None => {
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(self.keys.wakeup(key)))
                    .send()
                    .boxed()
                    .await
                    .map_err(|e| unavailable("DeleteItem", e))?;
            }
        }
        Ok(())
    }

    async fn clear_wakeup_if(&self, key: &str, due: DateTime<Utc>) -> Result<bool, StoreError> {
        if let Some(owner) = owner_of(key) {
            if self
                .change_own_wakeup(owner, None, Holding::DueAt(due))
                .await?
            {
                return Ok(true);
            }
        }
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(self.keys.wakeup(key)))
            .condition_expression("tdue = :due")
            .expression_attribute_values(
                ":due",
                AttributeValue::N(due.timestamp_millis().to_string()),
            )
            .return_values(ReturnValue::None)
            .send()
            .boxed()
            .await;
        condition_held("DeleteItem", result, |e| {
            e.is_conditional_check_failed_exception()
        })
    }

    async fn get_wakeup(&self, key: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        if let Some(owner) = owner_of(key) {
            if let Some(item) = self.get_item(owner.item_key(&self.keys)).await? {
                if item.contains_key("tdue") {
                    return item::millis(&item, "tdue").map(Some);
                }
            }
        }
        self.get_item(self.keys.wakeup(key))
            .await?
            .as_ref()
            .map(|item| item::millis(item, "tdue"))
            .transpose()
    }

    async fn due_wakeups(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<WakeUp>, StoreError> {
        // Each shard is read in due order up to `limit`; the earliest `limit` overall are among
        // the union. The shards are read concurrently so a tick costs one round trip, not eight.
        let until_ms = AttributeValue::N(until.timestamp_millis().to_string());
        let mut reads = tokio::task::JoinSet::new();
        for shard in 0..self.keys.shards() {
            let store = self.clone();
            let query = IndexQuery {
                index: WAKEUPS,
                pk_name: "tshard",
                pk_value: self.keys.shard_name(shard),
                sort_condition: Some(("tdue <= :until", ":until", until_ms.clone())),
                forward: true,
                start: None,
            };
            reads.spawn(async move { store.query_collect(query, limit, |_| true).await });
        }
        let mut due = Vec::new();
        while let Some(read) = reads.join_next().await {
            let items =
                read.map_err(|e| StoreError::unavailable_because("timer read task", e))??;
            for item in items {
                let wakeup = WakeUp {
                    key: string(&item, "key")?,
                    due: item::millis(&item, "tdue")?,
                };
                if is_own_item(&item) && wakeup.key.starts_with("job:") {
                    self.move_job_wakeup(&wakeup).await?;
                }
                due.push(wakeup);
            }
        }
        due.sort_by(|a, b| (a.due, &a.key).cmp(&(b.due, &b.key)));
        due.truncate(limit);
        Ok(due)
    }
}

impl DynamoStore {
    /// The items of one transaction for `writes`, with the write each item comes from (a
    /// write's items are contiguous): the label items of jobs it deletes (`doomed`, by write)
    /// deleted with them, and the jobs whose stored labels differ (`relabelled`, by write, with
    /// the stored item) written with their label index changes.
    fn build_transaction(
        &self,
        writes: &[Write<'_>],
        doomed: &BTreeMap<usize, Vec<Item>>,
        relabelled: &BTreeMap<usize, Item>,
    ) -> Result<(Vec<usize>, Vec<TransactWriteItem>), WriteAllError> {
        let mut owners = Vec::with_capacity(writes.len());
        let mut items = Vec::with_capacity(writes.len());
        // A run's wake-up goes on the run's own item when the batch writes the run.
        let folded = own_wakeup::fold(&self.keys, writes);
        for (index, write) in writes.iter().enumerate() {
            if folded.carried.contains(&index) {
                continue;
            }
            let made = match (write, relabelled.get(&index)) {
                (Write::UpdateJob(job), Some(old)) => {
                    let (put, changes) = self
                        .relabel_items(job, old, folded.own(index))
                        .map_err(WriteAllError::whole)?;
                    std::iter::once(put).chain(changes).collect()
                }
                _ => self
                    .transact_items(
                        write,
                        doomed.get(&index).map_or(&[][..], Vec::as_slice),
                        folded.own(index),
                    )
                    .map_err(WriteAllError::whole)?,
            };
            owners.extend(std::iter::repeat_n(index, made.len()));
            items.extend(made);
        }
        if items.len() > MAX_WRITES {
            return Err(WriteAllError::whole(StoreError::unavailable(format!(
                "{} items with the label index changes; a transaction holds {MAX_WRITES}",
                items.len()
            ))));
        }
        Ok((owners, items))
    }
}

impl Store for DynamoStore {
    async fn write_all(&self, writes: &[Write<'_>]) -> Result<(), WriteAllError> {
        use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
        check_batch(writes)?;
        if writes.is_empty() {
            return Ok(());
        }
        // One item needs no transaction (which costs twice the capacity): one write, or one
        // execution's write with its own wake-up riding on it (see `own_wakeup`). A deletion is
        // a transaction anyway (the job, its wake-up and its label items).
        let folded = own_wakeup::fold(&self.keys, writes);
        let mut alone = (0..writes.len()).filter(|index| !folded.carried.contains(index));
        if let (Some(index), None) = (alone.next(), alone.next()) {
            let own = folded.own(index);
            let one_item = match writes[index] {
                Write::DeleteJob(..) => false,
                Write::UpdateExecution(_) | Write::CreateExecution(_) => true,
                _ => own == OwnWakeup::Keep,
            };
            if one_item {
                return Box::pin(self.write_one(&writes[index], own))
                    .await
                    .map_err(|e| WriteAllError::at(index, e));
            }
        }
        // The label items of the jobs the batch deletes, by write: read once (each job's item
        // collection, one `Query`) and deleted with their job (see `labels`).
        let mut doomed: BTreeMap<usize, Vec<Item>> = BTreeMap::new();
        for (index, write) in writes.iter().enumerate() {
            if let Write::DeleteJob(job_id, _) = write {
                let keys = Box::pin(self.label_keys_of(job_id))
                    .await
                    .map_err(|e| WriteAllError::at(index, e))?;
                doomed.insert(index, keys);
            }
        }
        // The stored items of jobs whose labels the batch changes, by write: learnt from a
        // failed condition, then written with their index changes (see `labels`).
        let mut relabelled: BTreeMap<usize, Item> = BTreeMap::new();
        'round: for _ in 0..=writes.len() {
            let (owners, items) = self.build_transaction(writes, &doomed, &relabelled)?;
            // The write of each item, for the reasons a cancelled transaction gives per item.
            let item_writes: Vec<Write<'_>> = owners.iter().map(|&index| writes[index]).collect();
            let mut rollup_rounds = 0u32;
            let (error, reasons) = loop {
                // Boxed, as the other SDK calls of this deep future: a settling dispatch step
                // awaits it on a 2 MiB worker stack (debug builds keep every frame large).
                let error = match Box::pin(self.transact(items.clone())).await {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                };
                // A cancelled transaction gives a reason per item, in order: the first failed
                // condition names the write that failed.
                let reasons = match error.as_service_error() {
                    Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                        c.cancellation_reasons().to_vec()
                    }
                    _ => {
                        return Err(WriteAllError::whole(unavailable(
                            "TransactWriteItems",
                            error,
                        )))
                    }
                };
                // Lost only on a rollup, which another run of the job was adding to at that
                // instant: the writer's own items are not in question, so the transaction goes
                // again (its conditions checked afresh) rather than failing the run or dropping
                // its count.
                if rollups::lost_only_on_rollups(&reasons, &item_writes)
                    && rollup_rounds < ROLLUP_CONFLICT_RETRIES
                {
                    rollup_rounds += 1;
                    let jitter = u64::from(self.clock.now().timestamp_subsec_micros() % 10);
                    let pause = (5 << rollup_rounds.min(5)) + jitter;
                    self.back_off(Duration::from_millis(pause)).await;
                    continue;
                }
                break (error, reasons);
            };
            for (item, reason) in reasons.iter().enumerate() {
                let Some(&index) = owners.get(item) else {
                    break;
                };
                let Some(write) = writes.get(index) else {
                    break;
                };
                let again = relabelled.contains_key(&index);
                match cancellation::classify(write, reason.code(), reason.item(), again) {
                    Cancellation::NotThis => continue,
                    Cancellation::Relabel(old) => {
                        relabelled.insert(index, old);
                        continue 'round;
                    }
                    Cancellation::Failed(error) => return Err(WriteAllError::at(index, error)),
                }
            }
            return Err(WriteAllError::whole(unavailable(
                "TransactWriteItems",
                error,
            )));
        }
        Err(WriteAllError::whole(StoreError::unavailable(
            "TransactWriteItems: labels kept changing",
        )))
    }

    async fn read_many(
        &self,
        execution_ids: &[String],
        job_ids: &[String],
    ) -> Result<ManyRead, StoreError> {
        self.read_many_as(execution_ids, job_ids, true).await
    }

    async fn read_many_maybe_stale(
        &self,
        execution_ids: &[String],
        job_ids: &[String],
    ) -> Result<ManyRead, StoreError> {
        self.read_many_as(execution_ids, job_ids, false).await
    }
}
