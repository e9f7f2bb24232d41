//! What is stored and how: a job and an execution as store records, the wake-up index's keys,
//! and the JSON form of times. The use cases ([`crate::app`]) and the engine ([`crate::engine`])
//! both read and write records through this one module.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::{FieldError, Job, JobId};
use sundial_core::spec::BusinessCalendar;
use sundial_core::stats::{hour_of, NotRun, Rollup};

use sundial_ports::cause::Cause;
use sundial_ports::store::{ExecutionRecord, JobRecord, RollupRecord};

/// A record that cannot be read or written: the use cases answer it as
/// `AppError::Corrupt` (unreadable) or `AppError::Unavailable` (unencodable).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Stored data this build cannot decode; the message names the record.
    #[error("{message}")]
    Unreadable {
        /// Which record, and that it is unreadable.
        message: String,
        /// The decoder's error.
        #[source]
        source: Cause,
    },
    /// A value that could not be encoded for the store.
    #[error("{message}")]
    Unencodable {
        /// What was being encoded.
        message: String,
        /// The encoder's error.
        #[source]
        source: Cause,
    },
}

/// How long after a run is due its fallback wake-up (`exec:{id}`) brings it to dispatch
/// through the tick, should its message have been lost with the process that was to send it.
/// The write that admits the run removes the fallback.
pub(crate) const FALLBACK_WAKEUP_GRACE: chrono::Duration = chrono::Duration::seconds(10);

/// A job read from the store, with what is needed to write it back.
#[derive(Clone, Debug)]
pub(crate) struct StoredJob {
    pub job: Job,
    pub version: u64,
    pub service: Option<String>,
}

/// The wake-up index key of a job's next fire.
pub fn job_wakeup_key(job_id: &JobId) -> String {
    format!("job:{job_id}")
}

/// A job as its store record, at `version`: what every write of a job stores (and what a bench
/// seeding a store writes through the port directly).
pub fn encode_job(job: &Job, version: u64, service: Option<String>) -> JobRecord {
    let definition = &job.definition;
    JobRecord {
        job_id: definition.job_id().to_string(),
        version,
        creator: definition.creator().to_string(),
        parent_job: definition.parent_job().map(|p| p.to_string()),
        service,
        state: job.status().to_string(),
        created_at: job.created_at,
        updated_at: job.updated_at,
        document: job.to_document(),
    }
}

/// A job record read back; unreadable data is [`RecordError::Unreadable`], naming the job.
pub(crate) fn decode_job(record: &JobRecord) -> Result<StoredJob, RecordError> {
    let unreadable = |e: FieldError| RecordError::Unreadable {
        message: format!("stored job {} is unreadable", record.job_id),
        source: Cause::new(e),
    };
    let job_id = JobId::parse(&record.job_id).map_err(unreadable)?;
    let calendars =
        Job::document_calendars(&record.document, cached_calendar).map_err(unreadable)?;
    let job = Job::from_parts(
        &job_id,
        &record.document,
        &calendars,
        record.created_at,
        record.updated_at,
    )
    .map_err(unreadable)?;
    Ok(StoredJob {
        job,
        version: record.version,
        service: record.service.clone(),
    })
}

/// How many parsed calendars a process keeps ([`cached_calendar`]).
const CALENDAR_CACHE: usize = 256;

/// A calendar copy of a job document, parsed once per process: the cache holds each distinct
/// copy (its JSON text is the key, so a changed calendar is a new entry), up to
/// [`CALENDAR_CACHE`] of them, then starts again. Decoding a job that names a calendar therefore
/// neither reads the store nor resolves the calendar's days again (docs/engine.md, "Calendars").
pub(crate) fn cached_calendar(value: &Value) -> Result<Arc<BusinessCalendar>, FieldError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<BusinessCalendar>>>> = OnceLock::new();
    let key = value.to_string();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(found);
    }
    let parsed = Arc::new(BusinessCalendar::from_json(value).map_err(|e| e.under("calendars"))?);
    if let Ok(mut cache) = cache.lock() {
        if cache.len() >= CALENDAR_CACHE {
            cache.clear();
        }
        cache.insert(key, Arc::clone(&parsed));
    }
    Ok(parsed)
}

/// The wake-up index key of an execution's next step.
pub fn execution_wakeup_key(execution_id: &str) -> String {
    format!("exec:{execution_id}")
}

/// An execution as its store record, at `version` (also for seeding a store in a bench).
pub fn encode_execution(
    execution: &Execution,
    version: u64,
) -> Result<ExecutionRecord, RecordError> {
    let document = serde_json::to_value(execution).map_err(|e| RecordError::Unencodable {
        message: format!("encoding execution {}", execution.execution_id),
        source: Cause::new(e),
    })?;
    Ok(ExecutionRecord {
        execution_id: execution.execution_id.clone(),
        job_id: execution.job_id.to_string(),
        execute_number: execution.execute_number,
        state: execution.state().to_string(),
        parent_job: execution.parent_job.as_ref().map(|p| p.to_string()),
        parent_execution: execution.parent_job_execution,
        created_at: execution
            .events()
            .first()
            .map_or(execution.scheduled_time, |e| e.at),
        version,
        document,
    })
}

/// An execution record read back; unreadable data is [`RecordError::Unreadable`], naming the
/// execution.
pub(crate) fn decode_execution(record: &ExecutionRecord) -> Result<Execution, RecordError> {
    serde_json::from_value(record.document.clone()).map_err(|e| RecordError::Unreadable {
        message: format!("stored execution {} is unreadable", record.execution_id),
        source: Cause::new(e),
    })
}

/// A time as the API and events write it: RFC 3339 in UTC, with only the fraction it has.
pub(crate) fn json_time(t: DateTime<Utc>) -> Value {
    Value::String(time_text(t))
}

/// A time as the API and its messages write it: RFC 3339 in UTC, sub-seconds only when present.
pub(crate) fn time_text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// What a run's final write adds to its job's statistics ([`sundial_core::stats`]): `None` unless
/// this write is the one that ends it (`stored_state`, the state as last written, not final and
/// the run now final). `not_run` says why a fire ended `Skipped` without running.
pub(crate) fn final_rollup(
    execution: &Execution,
    stored_state: &str,
    not_run: Option<NotRun>,
) -> Option<RollupRecord> {
    let was_final = ExecutionState::parse(stored_state).is_some_and(ExecutionState::is_final);
    if was_final {
        return None;
    }
    let (hour, rollup) = Rollup::of_run(execution, not_run)?;
    Some(RollupRecord {
        job_id: execution.job_id.to_string(),
        hour,
        counters: rollup.to_counters(),
    })
}

/// What `count` fires of `job_id` that did not run for `why`, found at `at`, add to its statistics.
pub(crate) fn not_run_rollup(
    job_id: &JobId,
    at: DateTime<Utc>,
    why: NotRun,
    count: u64,
) -> RollupRecord {
    RollupRecord {
        job_id: job_id.to_string(),
        hour: hour_of(at),
        counters: Rollup::not_run(why, count).to_counters(),
    }
}
