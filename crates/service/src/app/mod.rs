//! The use cases of the control plane, written once over the ports.
//!
//! `App` is what the HTTP router, the API Lambda and `sundial serve` call. It owns the rules that
//! span several store writes (a job and its wake-up, an execution and its job's counters)
//! and retries the optimistic-concurrency conflicts that concurrent requests produce, so callers see
//! either a clean result or a typed [`AppError`].

mod audit;
pub mod auth;
mod backfill;
mod bulk;
mod calendars;
mod declared;
mod executions;
mod hooks;
mod ics;
mod jobs;
mod ledger;
mod liveness;
mod search;
mod sessions;
mod settings;
mod simulate;
mod stats;
mod upcoming;
mod views;

use std::future::Future;
use std::sync::{Arc, OnceLock, Weak};
use sundial_core::debug_mode::DebugMode;

use chrono::{DateTime, Utc};
use sundial_core::execution::ExecutionId;
use sundial_core::job::{FieldError, Job, JobDefinition, JobId, Target};

pub(crate) use crate::conflict::ConflictRetry;
use crate::records::{
    decode_job, encode_job, execution_wakeup_key, job_wakeup_key, RecordError, StoredJob,
};
use sundial_ports::cause::Cause;
use sundial_ports::clock::Clock;
use sundial_ports::events::TargetSupport;
use sundial_ports::store::{
    AuditRecord, ExecutionRecord, JobStore, StateRead, Store, StoreError, Write, WriteAllError,
};

pub(crate) use audit::{audit_record, Entry};
pub use audit::{Actor, ChangeBy};
pub use auth::{ApiAuth, ApiToken, Caller, Scope};
pub use backfill::BackfillReport;
pub use bulk::{
    BulkAction, BulkDone, BulkOutcome, BulkReport, BulkRequest, BulkSelection, MAX_BULK_JOBS,
};
pub use calendars::{read_calendar, CalendarPut, ReplanOrder, StoredCalendar, REPLAN_BATCH};
pub use declared::{timer_list, ApplyReport, ApplyRequest, MAX_APPLY_JOBS};
pub use hooks::EngineHooks;
pub use jobs::{job_filter, DeclarationReport, UpdatePreview};
pub use ledger::Occurrences;
pub use liveness::{EngineHealth, HealthReport, Liveness};
pub use search::SearchFilters;
pub use settings::{
    DebugModeChange, DebugModeSetting, DEBUG_MODE_CACHE, DEBUG_MODE_HISTORY, DEBUG_MODE_SETTING,
};
pub use simulate::MAX_API_FIRES;
pub use stats::{DaySuccess, FleetStats, JobStats, TOP_JOBS};
/// What started a run, as search filters name it (`source=backfill`).
pub use sundial_ports::store::SourceFilter;
pub use upcoming::{Upcoming, UpcomingCut, UPCOMING_FIRES, UPCOMING_JOBS};
pub use views::{upcoming_fires, Describe, Stats};

/// Settings of the control plane.
#[derive(Clone, Debug)]
pub struct AppConfig {
    /// The debug mode at start-up (`--debug-mode`: `schedules`), in force until a switch is
    /// stored (`PUT /settings/debugMode`, [`App::set_debug_mode_by`]).
    pub debug_mode: DebugMode,
    /// The secret that signs feedback tokens and webhook signatures.
    pub signing_secret: Vec<u8>,
    /// The longest attempt of a synchronous job this platform can hold in one worker, if it is
    /// bounded: on AWS one dispatch invocation ([`EngineConfig::max_hold`](crate::engine::EngineConfig::max_hold)).
    /// A job whose `timeoutSeconds` is longer is refused, naming the field; async jobs wait
    /// across invocations and are not limited.
    pub max_sync_attempt: Option<std::time::Duration>,
    /// Whether jobs' `sqs` and `eventbridge` targets are delivered here: the engine's publisher's
    /// [`EventPublisher::target_support`](sundial_ports::events::EventPublisher::target_support).
    /// Where they are not, a job with a target is refused, naming the field.
    pub targets: TargetSupport,
}

impl AppConfig {
    /// Settings with `signing_secret` and the defaults for the rest: debug mode off, attempts
    /// unbounded. There is no default secret: every deployment (and every test) names its own,
    /// so none can ship with a secret anyone can read here.
    pub fn new(signing_secret: Vec<u8>) -> Self {
        AppConfig {
            debug_mode: DebugMode::Off,
            signing_secret,
            max_sync_attempt: None,
            targets: TargetSupport::Delivered,
        }
    }
}

/// Why a use case failed, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The request is invalid; the error names the field.
    #[error("{0}")]
    Invalid(#[from] FieldError),
    /// The job or execution does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The request conflicts with the current state (duplicate id, wrong state for the action).
    #[error("{0}")]
    Conflict(String),
    /// The request's credentials (a feedback token) are missing or wrong.
    #[error("{0}")]
    Unauthorized(String),
    /// A backend failed (the store, the queue, an engine that is not running) or a value could
    /// not be encoded: nothing is wrong with the request or the stored data, and it may be
    /// retried. `source` keeps the backend's error.
    #[error("{message}")]
    Unavailable {
        /// What failed.
        message: String,
        /// Why, when a lower layer said.
        #[source]
        source: Option<Cause>,
    },
    /// Stored data does not decode: a job or execution record this build cannot read, or a store
    /// item with a malformed attribute. Trying again cannot help; the record must be repaired or
    /// removed. The message names the record.
    #[error("{message}")]
    Corrupt {
        /// Which record, and that it is unreadable.
        message: String,
        /// The decoder's error.
        #[source]
        source: Option<Cause>,
    },
}

impl AppError {
    /// [`AppError::Unavailable`](variant@AppError::Unavailable) with no error below it.
    pub fn unavailable(message: impl Into<String>) -> Self {
        AppError::Unavailable {
            message: message.into(),
            source: None,
        }
    }

    /// [`AppError::Unavailable`](variant@AppError::Unavailable) because of `source`.
    pub fn unavailable_because(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        AppError::Unavailable {
            message: message.into(),
            source: Some(Cause::new(source)),
        }
    }

    /// [`AppError::Corrupt`] because `source` could not decode the record `message` names.
    pub fn corrupt(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        AppError::Corrupt {
            message: message.into(),
            source: Some(Cause::new(source)),
        }
    }

    /// The constructor of the message-only `Unavailable(String)` this variant used to be, kept
    /// for the callers in `engine/{dispatch,tick,notify}.rs` until they move to
    /// [`AppError::unavailable`]; new code calls that.
    #[doc(hidden)]
    #[allow(non_snake_case)]
    pub fn Unavailable(message: String) -> Self {
        AppError::unavailable(message)
    }

    /// Whether the same request, made again later, can succeed: a backend that was down, a
    /// write that lost a race. An invalid request, a missing or forbidden resource, and corrupt
    /// stored data answer the same every time.
    pub fn is_retryable(&self) -> bool {
        match self {
            AppError::Conflict(_) | AppError::Unavailable { .. } => true,
            AppError::Invalid(_)
            | AppError::NotFound(_)
            | AppError::Unauthorized(_)
            | AppError::Corrupt { .. } => false,
        }
    }
}

impl From<RecordError> for AppError {
    fn from(e: RecordError) -> Self {
        match e {
            RecordError::Unreadable { message, source } => AppError::Corrupt {
                message,
                source: Some(source),
            },
            RecordError::Unencodable { message, source } => AppError::Unavailable {
                message,
                source: Some(source),
            },
        }
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        // The store's message is kept as it reads ("store unavailable: …"), its cause as ours.
        let message = e.to_string();
        match e {
            StoreError::AlreadyExists(key) => AppError::Conflict(format!("{key} already exists")),
            StoreError::NotFound(key) => AppError::NotFound(key),
            StoreError::VersionConflict { key, .. } => {
                AppError::Conflict(format!("{key} was changed concurrently; retry"))
            }
            StoreError::InvalidCursor => AppError::Invalid(FieldError {
                path: "cursor".into(),
                message: "invalid page cursor".into(),
            }),
            // Only a job listing asks for an order, and the API and console name it `sort`.
            StoreError::UnsupportedOrder(order) => AppError::Invalid(FieldError {
                path: "sort".into(),
                message: format!(
                    "{} is not available here: this deployment's store (DynamoDB) keeps no index of it; sort by id or nextFire",
                    order.name()
                ),
            }),
            StoreError::Unavailable { source, .. } => AppError::Unavailable { message, source },
            StoreError::Corrupt { source, .. } => AppError::Corrupt { message, source },
        }
    }
}

/// The control plane over a store and a clock.
pub struct App<S> {
    store: S,
    clock: Arc<dyn Clock>,
    config: AppConfig,
    /// The engine, once attached: runs what the control plane creates. Weak, because the engine
    /// holds the control plane.
    engine: OnceLock<Weak<dyn EngineHooks>>,
    /// When the engine's loops last ran in this process, for `GET /health`.
    liveness: Liveness,
    /// The debug mode this process read last, and when ([`App::debug_mode_now`]).
    debug_cache: settings::DebugModeCache,
}

/// What needs no store capability: settings, time, the engine's handle.
impl<S> App<S> {
    /// A control plane over `store`, reading time from `clock`.
    pub fn new(store: S, clock: Arc<dyn Clock>, config: AppConfig) -> Self {
        App {
            store,
            clock,
            config,
            engine: OnceLock::new(),
            liveness: Liveness::default(),
            debug_cache: settings::DebugModeCache::default(),
        }
    }

    /// The engine's heartbeats in this process (`GET /health`).
    pub fn liveness(&self) -> &Liveness {
        &self.liveness
    }

    /// What `GET /health` answers now.
    pub fn health(&self) -> HealthReport {
        self.liveness.report(self.now())
    }

    /// Connects the engine that runs what this control plane creates (triggers, cancels,
    /// feedback): [`crate::engine::Engine::new`] does. Without one, executions are only recorded.
    pub(crate) fn attach_engine(&self, engine: Weak<dyn EngineHooks>) {
        let _ = self.engine.set(engine);
    }

    pub(crate) fn engine(&self) -> Option<Arc<dyn EngineHooks>> {
        self.engine.get().and_then(Weak::upgrade)
    }

    /// The secret that signs feedback tokens and webhook signatures.
    pub fn signing_secret(&self) -> &[u8] {
        &self.config.signing_secret
    }

    /// The store, for adapters' own maintenance and for tests.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The current time of this control plane's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The clock this control plane and its engine read and wait on.
    pub(crate) fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// Waits until this control plane's clock shows `at`.
    pub(crate) async fn sleep_until(&self, at: DateTime<Utc>) {
        self.clock.sleep_until(at).await;
    }
}

/// How many ids one [`Store::read_many`] request asks for (a DynamoDB `BatchGetItem` takes 100
/// keys).
const READ_CHUNK: usize = 100;

/// How many of those requests are in flight at once when a use case reads executions by id.
const READS_IN_FLIGHT: usize = 4;

impl<S: Store> App<S> {
    /// The executions of `ids`, in the order asked (`None` for one that does not exist): a
    /// hundred ids per store request, [`READS_IN_FLIGHT`] requests at a time. What the ledger,
    /// a backfill's `missing` and `failed` modes and an update's preview read, never a listing.
    pub(crate) async fn executions_by_id(
        &self,
        ids: &[String],
    ) -> Result<Vec<Option<ExecutionRecord>>, AppError> {
        by_id_in_chunks(ids, |chunk| async move {
            Ok(self.store.read_many(chunk, &[]).await?.executions)
        })
        .await
    }

    /// The states of the executions of `ids` ([`Store::read_states`]), read as
    /// [`App::executions_by_id`] reads whole records: what the non-run ledger needs of each run.
    pub(crate) async fn states_by_id(
        &self,
        ids: &[String],
    ) -> Result<Vec<Option<StateRead>>, AppError> {
        by_id_in_chunks(ids, |chunk| self.store.read_states(chunk)).await
    }
}

/// `read` over `ids` a hundred at a time, [`READS_IN_FLIGHT`] reads at once, the answers in the
/// order of `ids`.
async fn by_id_in_chunks<'a, T, Read, Fut>(
    ids: &'a [String],
    read: Read,
) -> Result<Vec<T>, AppError>
where
    Read: Fn(&'a [String]) -> Fut,
    Fut: Future<Output = Result<Vec<T>, StoreError>> + 'a,
{
    let chunks: Vec<&'a [String]> = ids.chunks(READ_CHUNK).collect();
    let mut answers = Vec::with_capacity(ids.len());
    for group in chunks.chunks(READS_IN_FLIGHT) {
        // Boxed: a store's batch read is a deep future, and several are held at once.
        let reads: Vec<_> = group.iter().map(|chunk| Box::pin(read(chunk))).collect();
        for read in futures_util::future::try_join_all(reads).await? {
            answers.extend(read);
        }
    }
    Ok(answers)
}

/// Reading and writing one job: the job store alone.
impl<S: JobStore> App<S> {
    pub(crate) async fn load(&self, job_id: &JobId) -> Result<StoredJob, AppError> {
        let record = self
            .store
            .get_job(job_id.as_str())
            .await?
            .ok_or_else(|| AppError::NotFound(format!("job {job_id}")))?;
        Ok(decode_job(&record)?)
    }

    /// Writes a job back against the version it was read at and leaves its wake-up as
    /// it is: for a caller that knows the entry already brings the job back when it must.
    pub(crate) async fn save_job_only(&self, stored: &StoredJob) -> Result<u64, AppError> {
        let record = encode_job(&stored.job, stored.version, stored.service.clone());
        Ok(self.store.update_job(&record).await?)
    }
}

impl<S: Store> App<S> {
    /// Applies `change` to a job, re-reading and retrying when a concurrent write wins the race,
    /// starting from `known` (a recent read of the job) instead of reading it
    /// again: when nobody wrote the job since, that saves a read. Only changes that move the job's
    /// next fire rewrite its wake-up (an admission or a release does not).
    pub(crate) async fn modify_from<T>(
        &self,
        known: Option<StoredJob>,
        job_id: &JobId,
        change: impl FnMut(&mut StoredJob) -> Result<T, AppError>,
    ) -> Result<(StoredJob, T), AppError> {
        self.modify_recorded(known, job_id, change, |_, _, _| None)
            .await
    }

    /// As [`App::modify_from`], writing beside the job, in one atomic batch, the audit entry
    /// `record` makes of the change (from the job before and after it, the latter at the version
    /// the write leaves), if it makes one.
    pub(crate) async fn modify_recorded<T>(
        &self,
        known: Option<StoredJob>,
        job_id: &JobId,
        change: impl FnMut(&mut StoredJob) -> Result<T, AppError>,
        record: impl Fn(&Job, &Job, u64) -> Option<AuditRecord>,
    ) -> Result<(StoredJob, T), AppError> {
        self.modify_listed(known, job_id, &[], change, record).await
    }

    /// As [`App::modify_recorded`], the write also requiring the job's listing under each of
    /// `calendars` ([`calendars::calendar_checks`]): a `Conflict` if one was dropped meanwhile.
    pub(crate) async fn modify_listed<T>(
        &self,
        mut known: Option<StoredJob>,
        job_id: &JobId,
        calendars: &[String],
        mut change: impl FnMut(&mut StoredJob) -> Result<T, AppError>,
        record: impl Fn(&Job, &Job, u64) -> Option<AuditRecord>,
    ) -> Result<(StoredJob, T), AppError> {
        let mut retry = ConflictRetry::new(&*self.clock);
        while retry.next_round().await {
            let mut stored = match known.take() {
                Some(stored) => stored,
                None => self.load(job_id).await?,
            };
            let previous = stored.job.clone();
            let before = stored.job.wake_at();
            let out = change(&mut stored)?;
            stored.job.updated_at = self.now();
            let job = encode_job(&stored.job, stored.version, stored.service.clone());
            let entry = record(&previous, &stored.job, stored.version.saturating_add(1));
            let written = if entry.is_none() && calendars.is_empty() {
                self.store.update_job(&job).await
            } else {
                let mut writes = vec![Write::UpdateJob(&job)];
                writes.extend(entry.as_ref().map(Write::AppendAudit));
                let first_check = writes.len();
                writes.extend(calendars::calendar_checks(job_id.as_str(), calendars));
                match self.store.write_all(&writes).await {
                    Ok(()) => Ok(stored.version.saturating_add(1)),
                    Err(e) => match calendars::lost_listing(job_id, &e, first_check) {
                        Some(lost) => return Err(lost),
                        None => Err(audit_race(e)),
                    },
                }
            };
            match written {
                Ok(version) => {
                    stored.version = version;
                    if stored.job.wake_at() != before {
                        self.refresh_wakeup(&stored.job).await?;
                    }
                    return Ok((stored, out));
                }
                Err(StoreError::VersionConflict { key, .. }) => {
                    retry.lost(format!("job {key} was changed concurrently"));
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(AppError::Conflict(
            retry.exhausted(|| format!("job {job_id} is busy; retry")),
        ))
    }

    /// Refuses a definition this platform cannot run: a target it does not deliver
    /// ([`AppConfig::targets`]), a synchronous attempt longer than one worker can hold
    /// ([`AppConfig::max_sync_attempt`]).
    pub(crate) fn check_platform_limits(&self, definition: &JobDefinition) -> Result<(), AppError> {
        if let (Some(target), TargetSupport::Unavailable { how }) =
            (definition.target(), &self.config.targets)
        {
            let (field, kind) = match target {
                Target::Sqs { .. } => ("target.sqs", "SQS"),
                Target::EventBridge { .. } => ("target.eventbridge", "EventBridge"),
            };
            return Err(field_error(
                field,
                format!("this server does not send to {kind}, so the job's runs could not be delivered; {how}"),
            ));
        }
        let Some(limit) = self.config.max_sync_attempt else {
            return Ok(());
        };
        let timeout = u64::from(definition.timeout_seconds());
        if definition.is_async() || timeout <= limit.as_secs() {
            return Ok(());
        }
        Err(field_error(
            "timeoutSeconds",
            format!(
                "{timeout} s is longer than one dispatch invocation can hold an attempt here ({} s); make the job async (\"async\": true) for longer work",
                limit.as_secs()
            ),
        ))
    }

    /// Has the engine plan a job that was just created, changed or resumed when its next fire
    /// is close, in the request that made it: the fire is then sent on its second, not at the
    /// next tick (up to a second late). Best effort: should it fail, the tick plans the job.
    pub(crate) async fn plan_now(&self, job: &Job) {
        let (Some(engine), Some(next)) = (self.engine(), job.next_fire()) else {
            return;
        };
        engine.plan(job.job_id().clone(), next).await;
    }

    /// Writes the fallback wake-ups of the job's waiting runs that ride on its wake-up
    /// ([`WaitingRun::fallback_at`](sundial_core::job::WaitingRun)) and that `wake`, the job's
    /// wake-up about to be written, would not bring the tick back to in time (within `slack`:
    /// [`covers`](sundial_core::job::covers)), and marks them in
    /// `job` as having their own. Written before the job and its wake-up, so a crash in between
    /// leaves a run both (a duplicate message at most), never neither. Every write that moves a
    /// job's wake-up goes through here or [`App::refresh_wakeup`] (docs/engine.md, "Fallback
    /// wake-ups").
    pub(crate) async fn cover_waiting_runs(
        &self,
        job: &mut Job,
        wake: Option<DateTime<Utc>>,
        slack: chrono::Duration,
    ) -> Result<(), AppError> {
        let fallbacks = job.state.uncovered_fallbacks(wake, slack);
        self.write_fallbacks(&fallbacks).await?;
        let ids: Vec<String> = fallbacks.into_iter().map(|(id, _)| id).collect();
        job.state.fallbacks_written(&ids);
        Ok(())
    }

    /// Writes each run's fallback wake-up (execution id, due time): a rare path (a job whose
    /// wake-up moves past runs waiting in its line), one write each.
    async fn write_fallbacks(&self, fallbacks: &[(String, DateTime<Utc>)]) -> Result<(), AppError> {
        for (execution_id, due) in fallbacks {
            self.store
                .set_wakeup(&execution_wakeup_key(execution_id), Some(*due))
                .await?;
        }
        Ok(())
    }

    /// Keeps the wake-up index in step with a job: its next nominal fire, or no entry when it is
    /// paused, triggered-only or exhausted. Finding due work reads this index; it never scans jobs.
    /// Runs of the job's line that ride on its wake-up and that the new one comes too late for
    /// get fallback wake-ups of their own first ([`App::cover_waiting_runs`]; the job, not
    /// written here, still says they ride: a duplicate message at most).
    pub(crate) async fn refresh_wakeup(&self, job: &Job) -> Result<(), AppError> {
        let due = job.wake_at();
        // Strict (no slack): the tick's horizon is the engine's, and this is a rare path.
        let strict = chrono::Duration::zero();
        self.write_fallbacks(&job.state.uncovered_fallbacks(due, strict))
            .await?;
        self.store
            .set_wakeup(&job_wakeup_key(job.definition.job_id()), due)
            .await?;
        Ok(())
    }
}

/// The error of a batch that wrote a change with its audit entry. An entry id already taken
/// (two entries of one job in one millisecond drawing the same nonce) is a lost race like any
/// other: the change is made again with a fresh entry.
pub(crate) fn audit_race(e: WriteAllError) -> StoreError {
    match e.error {
        StoreError::AlreadyExists(key) if key.starts_with("audit ") => {
            StoreError::VersionConflict { key, expected: 0 }
        }
        other => other,
    }
}

/// Parses a pause's `until` (an RFC 3339 instant or a duration from now), as a 400 naming
/// `until` when it is neither.
pub fn pause_end(until: &str) -> Result<sundial_core::job::PauseEnd, AppError> {
    sundial_core::job::PauseEnd::parse(until).map_err(|why| field_error("until", why))
}

/// Parses a path's job id, as a 400 naming `jobId` when malformed.
pub fn parse_job_id(text: &str) -> Result<JobId, AppError> {
    Ok(JobId::parse(text)?)
}

/// Parses a path's execution id. A malformed one is no execution's: a 404, as for an id that is
/// well formed but unknown, so that the answer does not depend on how the id is wrong.
pub fn parse_execution_id(text: &str) -> Result<ExecutionId, AppError> {
    ExecutionId::parse(text).map_err(|_| AppError::NotFound(format!("execution {text}")))
}

pub(crate) fn field_error(path: &str, message: impl Into<String>) -> AppError {
    AppError::Invalid(FieldError {
        path: path.to_string(),
        message: message.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_ports::store::JobOrder;

    #[test]
    fn an_order_the_store_refuses_is_a_400_naming_sort() {
        let error = AppError::from(StoreError::UnsupportedOrder(JobOrder::LastRun));
        assert!(
            matches!(&error, AppError::Invalid(e) if e.path == "sort"),
            "{error:?}"
        );
        assert!(error
            .to_string()
            .starts_with("sort: lastRun is not available"));
    }
}
