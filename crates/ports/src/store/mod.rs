//! The `Store` port: jobs, executions and the wake-up index.
//!
//! The store keeps documents, not domain types: a job is its definition as written plus its state, an
//! execution is its JSON form, and next to each sit the few fields the store must index (creator,
//! parent, state, execute number). That keeps adapters small and unaware of the domain: the
//! embedded SQLite adapter and the DynamoDB adapter implement the same dozen operations, and one
//! conformance suite (`conformance::store`, behind the `conformance` feature) checks both
//! and [`MemoryStore`](crate::memory::MemoryStore), the in-memory adapter for fast tests.
//!
//! Every write that can race is conditional: jobs and executions carry a version, and an update
//! succeeds only against the version it read. Creating an execution never overwrites one with the
//! same id, which is what makes a duplicate fire harmless.

pub mod audit;
pub mod calendars;
pub mod cursor;
pub mod labels;
pub mod retention;
pub mod rollups;
pub mod search;
pub mod sessions;
pub mod settings;

pub use audit::{AuditCleanReport, AuditQuery, AuditRecord, AuditStore};
pub use calendars::{CalendarRecord, CalendarStore, MAX_CALENDARS};

use std::future::Future;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::cause::Cause;
pub use labels::{id_prefix_end, LabelSelector};
pub use rollups::{FleetHourRecord, RollupRecord, RollupStore};
pub use search::{ExecutionQuery, SourceFilter, TimeRange};
pub use sessions::SessionStore;
pub use settings::{SettingRecord, SettingStore};

/// A job as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    /// The job's id (the path parameter of `/jobs/{jobId}`).
    pub job_id: String,
    /// Optimistic-concurrency version: 1 when created, +1 on every update.
    pub version: u64,
    /// docs/api.md `creator`, indexed for `GET /jobs?creator=`.
    pub creator: String,
    /// docs/api.md `parentJob`, indexed for child lookups and destroy-by-parent.
    pub parent_job: Option<String>,
    /// The service that declared the job through `PUT /services/{name}/timers`, if any.
    pub service: Option<String>,
    /// `active` or `paused`, indexed for `GET /jobs?state=`.
    pub state: String,
    /// When the job was created.
    pub created_at: DateTime<Utc>,
    /// When the job was last written.
    pub updated_at: DateTime<Utc>,
    /// The whole job: `{"definition": …as written…, "state": …}`.
    pub document: Value,
}

/// An execution as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutionRecord {
    /// Stable id derived from the job and the fire (nominal time or trigger id).
    pub execution_id: String,
    /// The job it belongs to.
    pub job_id: String,
    /// 1, 2, 3… per job; executions list newest (highest) first.
    pub execute_number: u64,
    /// The execution state name (`Scheduled`, `Enqueued`, …), indexed for stats.
    pub state: String,
    /// The parent job of the execution's job, for `getChildJobLogs`.
    pub parent_job: Option<String>,
    /// The parent job's execute number, for `getChildJobLogs`.
    pub parent_execution: Option<u64>,
    /// When the execution was created.
    pub created_at: DateTime<Utc>,
    /// Optimistic-concurrency version: 1 when created.
    pub version: u64,
    /// The whole execution as JSON.
    pub document: Value,
}

/// Filters of `GET /jobs`; all given filters must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// `active` or `paused`.
    pub state: Option<String>,
    /// Exact creator.
    pub creator: Option<String>,
    /// Exact parent job id.
    pub parent_job: Option<String>,
    /// Exact declaring service.
    pub service: Option<String>,
    /// Labels the job must have, every one (`label=team:payments`, repeatable). See
    /// [`JobRecord::labels`]; stores index them so a label filter reads only the jobs it selects.
    pub labels: Vec<LabelSelector>,
    /// Job ids starting with this text (`idPrefix`).
    pub id_prefix: Option<String>,
}

/// The order of a job listing ([`JobStore::list_jobs`]).
///
/// Each order is a keyset order: a cursor names the last job of its page by its sort key and
/// id, so the next page starts right after it whatever was written meanwhile, and no page needs
/// an offset. Ties (and jobs without a key) are broken by job id, byte-wise ascending.
///
/// The two time orders read what the store already holds, so no writer has to remember them:
/// the next fire is the due time of the job's wake-up (`job:{id}`), which the engine keeps at the
/// job's next fire, and the last run is the latest `created_at` among the job id's executions.
/// A store that can serve an order only by scanning every job (DynamoDB, whose job index is by
/// id) refuses it with [`StoreError::UnsupportedOrder`] instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JobOrder {
    /// By job id.
    #[default]
    Id,
    /// Soonest next fire first; jobs with no wake-up (paused, triggered only, finished) last.
    NextFire,
    /// Latest run first; jobs with no executions last. A `clean` that removes a job's newest
    /// executions may leave its last run where it was.
    LastRun,
}

impl JobOrder {
    /// Every order, in the order the API documents them.
    pub const ALL: [JobOrder; 3] = [JobOrder::Id, JobOrder::NextFire, JobOrder::LastRun];

    /// The name the API and the console use (`sort=nextFire`).
    pub fn name(self) -> &'static str {
        match self {
            JobOrder::Id => "id",
            JobOrder::NextFire => "nextFire",
            JobOrder::LastRun => "lastRun",
        }
    }

    /// The order named `name`, if there is one.
    pub fn parse(name: &str) -> Option<JobOrder> {
        JobOrder::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// A page request: at most `limit` items after the opaque `cursor` of the previous page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// The most items to return (adapters cap it at [`MAX_PAGE`]).
    pub limit: usize,
    /// Where the previous page ended; `None` for the first page.
    pub cursor: Option<String>,
}

/// The largest page any adapter returns.
pub const MAX_PAGE: usize = 1000;

/// The most writes one [`Store::write_all`] takes (a DynamoDB transaction holds 100 items).
pub const MAX_WRITES: usize = 100;

/// One write of an atomic [`Store::write_all`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Write<'a> {
    /// Replaces a job at its version, as [`JobStore::update_job`] (the job is then at `version + 1`).
    UpdateJob(&'a JobRecord),
    /// Creates an execution; the id must be free.
    CreateExecution(&'a ExecutionRecord),
    /// Replaces an execution at its version, as [`ExecutionStore::update_execution`].
    UpdateExecution(&'a ExecutionRecord),
    /// Sets (or with `None` removes) a wake-up, as [`WakeUpIndex::set_wakeup`].
    SetWakeup(&'a str, Option<DateTime<Utc>>),
    /// Creates a job, as [`JobStore::create_job`]: `AlreadyExists` if the id is taken.
    CreateJob(&'a JobRecord),
    /// Deletes a job at `version` (`NotFound` if absent, `VersionConflict` if the version moved);
    /// its wake-up (`job:{id}`) goes with it, as [`JobStore::delete_job`].
    DeleteJob(&'a str, u64),
    /// Appends an entry to a job's audit trail ([`AuditStore`]); the entry id must be free
    /// (`AlreadyExists`). Written beside the change it records, so neither exists without the other.
    AppendAudit(&'a AuditRecord),
    /// Adds counters to a job's hourly rollup bucket, creating it if absent ([`rollups`]).
    AddRollup(&'a RollupRecord),
    /// Writes nothing: the batch fails (`NotFound`) unless the job (second) is listed under the
    /// calendar (first) ([`CalendarStore::calendar_users`]). Beside the job write that starts
    /// using a calendar, so that a delete of the calendar cannot slip between the listing and the
    /// write ([`calendars`]).
    RequireCalendarUser(&'a str, &'a str),
}

impl Write<'_> {
    /// The key the write is about, for error messages and duplicate checks.
    pub fn key(&self) -> String {
        match self {
            Write::UpdateJob(job) | Write::CreateJob(job) => format!("job {}", job.job_id),
            Write::DeleteJob(job_id, _) => format!("job {job_id}"),
            Write::AppendAudit(entry) => format!("audit {} {}", entry.job_id, entry.entry_id),
            Write::CreateExecution(e) | Write::UpdateExecution(e) => {
                format!("execution {}", e.execution_id)
            }
            Write::SetWakeup(key, _) => format!("wakeup {key}"),
            Write::AddRollup(rollup) => rollup.key(),
            Write::RequireCalendarUser(calendar, job_id) => {
                format!("calendar {calendar} user {job_id}")
            }
        }
    }
}

/// What [`Store::read_many`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManyRead {
    /// The executions asked for, in order.
    pub executions: Vec<Option<ExecutionRecord>>,
    /// The jobs asked for, in order.
    pub jobs: Vec<Option<JobRecord>>,
}

/// Why [`Store::write_all`] wrote nothing.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{error}")]
pub struct WriteAllError {
    /// The write whose condition failed; `None` when the batch failed as a whole.
    pub index: Option<usize>,
    /// What failed.
    pub error: StoreError,
}

impl WriteAllError {
    /// A failure of the batch as a whole (backend down, malformed batch).
    pub fn whole(error: StoreError) -> Self {
        WriteAllError { index: None, error }
    }

    /// The failure of write `index`.
    pub fn at(index: usize, error: StoreError) -> Self {
        WriteAllError {
            index: Some(index),
            error,
        }
    }
}

impl From<WriteAllError> for StoreError {
    fn from(e: WriteAllError) -> Self {
        e.error
    }
}

/// Checks the shape every adapter requires of a batch: at most [`MAX_WRITES`], no key twice.
pub fn check_batch(writes: &[Write<'_>]) -> Result<(), WriteAllError> {
    if writes.len() > MAX_WRITES {
        return Err(WriteAllError::whole(StoreError::unavailable(format!(
            "{} writes in one batch; at most {MAX_WRITES}",
            writes.len()
        ))));
    }
    let mut keys = std::collections::BTreeSet::new();
    for write in writes {
        let key = write.key();
        if !keys.insert(key.clone()) {
            return Err(WriteAllError::whole(StoreError::unavailable(format!(
                "{key} written twice in one batch"
            ))));
        }
    }
    Ok(())
}

impl PageRequest {
    /// The first page of `limit` items.
    pub fn first(limit: usize) -> Self {
        PageRequest {
            limit,
            cursor: None,
        }
    }
}

/// One page of results and the cursor of the next, if there is more.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Pass as [`PageRequest::cursor`] to get the next page; `None` on the last page, which is the
    /// page holding the last item (adapters look ahead, so no listing ends with an empty page).
    pub next_cursor: Option<String>,
}

/// An entry of the wake-up index: something due at a time (a job's next fire, an execution's retry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeUp {
    /// What is due, e.g. `job:{jobId}` or `exec:{executionId}`.
    pub key: String,
    /// When it is due.
    pub due: DateTime<Utc>,
}

/// What `clean` removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanReport {
    /// Executions deleted.
    pub executions_deleted: u64,
    /// Distinct deleted jobs whose executions were all removed.
    pub destroyed_jobs_cleaned: u64,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// A create found the key taken.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// The key does not exist.
    #[error("{0} was not found")]
    NotFound(String),
    /// A conditional write lost a race: someone else wrote since the version was read.
    #[error("{key} was changed concurrently (expected version {expected})")]
    VersionConflict {
        /// The key written.
        key: String,
        /// The version the caller read.
        expected: u64,
    },
    /// A page cursor that this store did not hand out (for this order).
    #[error("invalid page cursor")]
    InvalidCursor,
    /// The store cannot list jobs in this order without scanning every job, so it does not.
    #[error("this store cannot list jobs by {} without a scan", .0.name())]
    UnsupportedOrder(JobOrder),
    /// The backend failed; the operation may be retried. `message` says what was being done,
    /// `source` (when the adapter has a library error) why it failed.
    #[error("store unavailable: {message}")]
    Unavailable {
        /// What failed, e.g. `PutItem` or `sqlite`.
        message: String,
        /// The backend's own error.
        #[source]
        source: Option<Cause>,
    },
    /// A stored item does not decode (an attribute missing or malformed, a time out of range):
    /// the data itself is corrupt, so trying again cannot help.
    #[error("corrupt stored data: {message}")]
    Corrupt {
        /// Which item and what is wrong with it.
        message: String,
        /// The decoder's error, if there is one.
        #[source]
        source: Option<Cause>,
    },
}

impl StoreError {
    /// [`StoreError::Unavailable`] with no library error below it.
    pub fn unavailable(message: impl Into<String>) -> Self {
        StoreError::Unavailable {
            message: message.into(),
            source: None,
        }
    }

    /// [`StoreError::Unavailable`] because of `source`.
    pub fn unavailable_because(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StoreError::Unavailable {
            message: message.into(),
            source: Some(Cause::new(source)),
        }
    }

    /// [`StoreError::Corrupt`], with the decoder's error when there is one.
    pub fn corrupt(message: impl Into<String>, source: Option<Cause>) -> Self {
        StoreError::Corrupt {
            message: message.into(),
            source,
        }
    }
}

/// Jobs: their definitions as written and their state, each written against the version it was
/// read at. A use case that only reads and writes jobs needs only this.
///
/// Implementations must be safe to call concurrently and must make each method atomic.
pub trait JobStore: Send + Sync + 'static {
    /// Creates a job; `AlreadyExists` if the id is taken. The record's version is stored as given (1).
    fn create_job(&self, job: &JobRecord) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Reads a job.
    fn get_job(
        &self,
        job_id: &str,
    ) -> impl Future<Output = Result<Option<JobRecord>, StoreError>> + Send;

    /// Replaces a job if its stored version equals `job.version`, storing `job.version + 1`, which
    /// it returns. `NotFound` if absent, `VersionConflict` if the version moved.
    fn update_job(&self, job: &JobRecord) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes a job and its wake-up (`job:{id}`); its executions stay until `clean`.
    /// Returns whether it existed.
    fn delete_job(&self, job_id: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Jobs matching `filter`, in `order`; [`StoreError::UnsupportedOrder`] for an order this
    /// store can only serve with a scan.
    fn list_jobs(
        &self,
        filter: &JobFilter,
        order: JobOrder,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Page<JobRecord>, StoreError>> + Send;
}

/// Executions: one document per run, created once (a duplicate fire is a no-op) and written
/// against the version it was read at.
///
/// Implementations must be safe to call concurrently and must make each method atomic.
pub trait ExecutionStore: Send + Sync + 'static {
    /// Creates an execution unless one with the same id exists; returns whether it created it.
    /// Never overwrites: a duplicate fire is a no-op.
    fn create_execution(
        &self,
        execution: &ExecutionRecord,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Replaces an execution if its stored version equals `execution.version`; returns the new version.
    fn update_execution(
        &self,
        execution: &ExecutionRecord,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Reads an execution.
    fn get_execution(
        &self,
        execution_id: &str,
    ) -> impl Future<Output = Result<Option<ExecutionRecord>, StoreError>> + Send;

    /// A job's executions, newest (highest execute number) first.
    fn list_executions(
        &self,
        job_id: &str,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Page<ExecutionRecord>, StoreError>> + Send;

    /// The newest execution (highest execute number) of each job asked for, in the order asked
    /// (`None` for a job without one): what [`ExecutionStore::list_executions`]'s first item of a
    /// page of one would be, for a page of jobs at once (the console's jobs list). The default asks
    /// job by job; an adapter whose reads are remote batches them.
    fn newest_executions(
        &self,
        job_ids: &[String],
    ) -> impl Future<Output = Result<Vec<Option<ExecutionRecord>>, StoreError>> + Send {
        async move {
            let mut newest = Vec::with_capacity(job_ids.len());
            for job_id in job_ids {
                let page = self.list_executions(job_id, &PageRequest::first(1)).await?;
                newest.push(page.items.into_iter().next());
            }
            Ok(newest)
        }
    }

    /// Executions of the children of `parent_job`, optionally only those started by one of its
    /// executions, newest (latest `created_at`) first.
    fn list_child_executions(
        &self,
        parent_job: &str,
        parent_execution: Option<u64>,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Page<ExecutionRecord>, StoreError>> + Send;

    /// Executions of every job matching `query`, newest (latest scheduled time, then highest
    /// id) first, from an index on the scheduled time: never a scan of every execution when a
    /// scheduled-time range is given. A page may hold fewer than `limit` runs, even none, and
    /// still have a next cursor (see [`search`]); only a page without one ends the listing.
    fn search_executions(
        &self,
        query: &ExecutionQuery,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Page<ExecutionRecord>, StoreError>> + Send;

    /// Keeps the newest (highest execute number) `retain` executions of every job id that has or
    /// had a job (deleted by [`JobStore::delete_job`] or a [`Write::DeleteJob`]), whether or not the
    /// job still exists, and, when `purge_deleted_jobs`, removes all executions of jobs that no
    /// longer exist. Never a scan of every execution: an adapter may find the deleted jobs by
    /// what their deletion left (the DynamoDB store's tombstones), so runs of a job id that never
    /// had a job (which the engine does not write) may be left.
    fn clean_executions(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> impl Future<Output = Result<CleanReport, StoreError>> + Send;
}

/// The wake-up index: one due time per key (`job:{id}` for a job's next fire, `exec:{id}` for an
/// execution's next step), read by due time so that finding due work never scans jobs.
///
/// Implementations must be safe to call concurrently and must make each method atomic.
pub trait WakeUpIndex: Send + Sync + 'static {
    /// Sets (or with `None` removes) the wake-up `key`.
    fn set_wakeup(
        &self,
        key: &str,
        due: Option<DateTime<Utc>>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Removes the wake-up `key` only if it is still due at `due` (millisecond precision);
    /// returns whether it did. A consumer of a due entry uses it so that an entry set again
    /// meanwhile (a later retry of the same execution) is not lost.
    fn clear_wakeup_if(
        &self,
        key: &str,
        due: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Reads one wake-up.
    fn get_wakeup(
        &self,
        key: &str,
    ) -> impl Future<Output = Result<Option<DateTime<Utc>>, StoreError>> + Send;

    /// Entries due at or before `until`, earliest first, at most `limit`. Never a scan of all jobs.
    fn due_wakeups(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<WakeUp>, StoreError>> + Send;
}

/// The whole store: jobs, executions, the wake-up index and the audit trail, plus what spans them — atomic writes
/// across all three, reads of both kinds at once, and counts. The engine and the control plane
/// need all of it; adapters implement each part.
pub trait Store:
    JobStore
    + ExecutionStore
    + WakeUpIndex
    + RollupStore
    + AuditStore
    + SettingStore
    + CalendarStore
    + SessionStore
{
    /// Makes every write of `writes` or none: the tick's job, fires and timer entry; a dispatch
    /// step's execution and the job slot it takes or frees. Each key appears at most once, and at
    /// most [`MAX_WRITES`] writes. When a write's condition fails nothing is written and the error
    /// names that write (`index`) with what [`JobStore::update_job`], [`ExecutionStore::create_execution`]
    /// (`AlreadyExists`) or [`ExecutionStore::update_execution`] would have answered; for
    /// [`Write::CreateJob`] and [`Write::AppendAudit`] `AlreadyExists`, for [`Write::DeleteJob`]
    /// `NotFound` or `VersionConflict`, for [`Write::RequireCalendarUser`] `NotFound`. A [`Write::DeleteJob`] removes the job's wake-up itself:
    /// the batch must not also write `job:{id}`.
    fn write_all(
        &self,
        writes: &[Write<'_>],
    ) -> impl Future<Output = Result<(), WriteAllError>> + Send;

    /// Executions and jobs read at once (one round trip per hundred on DynamoDB), each list in
    /// the order asked, `None` for a missing one: what a tick reads for a batch of due entries and
    /// a dispatch for a batch of messages.
    fn read_many(
        &self,
        execution_ids: &[String],
        job_ids: &[String],
    ) -> impl Future<Output = Result<ManyRead, StoreError>> + Send {
        async move {
            let mut read = ManyRead::default();
            for id in execution_ids {
                read.executions.push(self.get_execution(id).await?);
            }
            for id in job_ids {
                read.jobs.push(self.get_job(id).await?);
            }
            Ok(read)
        }
    }

    /// [`Store::read_many`] from reads that may be a moment behind the latest writes: what
    /// DynamoDB's eventually consistent reads give, at half the price of strong ones. For a
    /// caller whose writes from what it read are conditional (a change it missed fails them, and
    /// it reads again) and which reads again, strongly, what it did not find. A store whose reads
    /// are always the latest answers as [`Store::read_many`] does (the default).
    fn read_many_maybe_stale(
        &self,
        execution_ids: &[String],
        job_ids: &[String],
    ) -> impl Future<Output = Result<ManyRead, StoreError>> + Send {
        self.read_many(execution_ids, job_ids)
    }

    /// The state of each execution asked for, in the order asked (`None` for a missing one),
    /// with its document only when it is `Skipped` (its events say why): what the non-run ledger
    /// reads of up to 10,000 runs. The default reads whole records through
    /// [`Store::read_many`]; an adapter that can leave the other documents unread (the embedded
    /// store) does, since decoding them is most of the cost.
    fn read_states(
        &self,
        execution_ids: &[String],
    ) -> impl Future<Output = Result<Vec<Option<StateRead>>, StoreError>> + Send {
        async move {
            Ok(self
                .read_many(execution_ids, &[])
                .await?
                .executions
                .into_iter()
                .map(|record| record.map(StateRead::of_record))
                .collect())
        }
    }
}

/// An execution's state as [`Store::read_states`] reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct StateRead {
    /// The execution.
    pub execution_id: String,
    /// Its state (`ExecutionRecord::state`).
    pub state: String,
    /// Its document when its state is `Skipped`; `None` otherwise.
    pub skipped_document: Option<Value>,
}

impl StateRead {
    /// What `read_states` answers for `record`.
    pub fn of_record(record: ExecutionRecord) -> StateRead {
        let skipped_document = (record.state == "Skipped").then_some(record.document);
        StateRead {
            execution_id: record.execution_id,
            state: record.state,
            skipped_document,
        }
    }
}
