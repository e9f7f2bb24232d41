//! Executions: one run of a job, its state machine, and its event log.
//!
//! An execution's id is derived from what caused it — the job and the nominal fire time, or the job
//! and a trigger id — so a fire delivered twice (queues deliver at least once) finds its execution
//! already there instead of creating a second one. Its state follows docs/api.md's diagram, extended
//! with the paths Sundial's policies need (a scheduled or enqueued run can be cancelled or skipped,
//! a failed one terminated); [`can_transition`] is the one place that graph is written down, and
//! [`Execution::transition`] the one way to move along it, logging every step.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::job::{FieldError, JobId};
use crate::time_serde::{option_rfc3339, rfc3339};

/// The most events an execution keeps; beyond it the oldest after the first are dropped and counted.
pub const MAX_EVENTS: usize = 200;

/// The longest trigger id.
const MAX_TRIGGER_ID_LEN: usize = 64;

/// Where an execution is in its life (docs/api.md's JobState).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ExecutionState {
    /// Delayed: waiting for its time.
    Scheduled,
    /// In the queue, waiting to be picked up.
    Enqueued,
    /// Running: the request chain, or waiting for an async job's feedback.
    Processing,
    /// Finished successfully.
    Succeeded,
    /// The last attempt failed; waiting for a retry.
    Failed,
    /// Ended for good: retries exhausted, timed out, or terminated.
    Terminated,
    /// Cancelled by a user, a policy such as `CancelOther`, or its parent.
    Cancelled,
    /// Not run because of the overlap or concurrency policy.
    Skipped,
}

impl ExecutionState {
    /// Every state.
    pub const ALL: [ExecutionState; 8] = [
        ExecutionState::Scheduled,
        ExecutionState::Enqueued,
        ExecutionState::Processing,
        ExecutionState::Succeeded,
        ExecutionState::Failed,
        ExecutionState::Terminated,
        ExecutionState::Cancelled,
        ExecutionState::Skipped,
    ];

    /// The state's name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            ExecutionState::Scheduled => "Scheduled",
            ExecutionState::Enqueued => "Enqueued",
            ExecutionState::Processing => "Processing",
            ExecutionState::Succeeded => "Succeeded",
            ExecutionState::Failed => "Failed",
            ExecutionState::Terminated => "Terminated",
            ExecutionState::Cancelled => "Cancelled",
            ExecutionState::Skipped => "Skipped",
        }
    }

    /// Reads a state name (exact spelling).
    pub fn parse(text: &str) -> Option<ExecutionState> {
        ExecutionState::ALL.into_iter().find(|s| s.name() == text)
    }

    /// True for states nothing leaves: Succeeded, Terminated, Cancelled, Skipped.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ExecutionState::Succeeded
                | ExecutionState::Terminated
                | ExecutionState::Cancelled
                | ExecutionState::Skipped
        )
    }

    /// True for the states an execution may be created in: Scheduled (delayed) or Enqueued.
    pub fn is_initial(self) -> bool {
        matches!(self, ExecutionState::Scheduled | ExecutionState::Enqueued)
    }
}

impl fmt::Display for ExecutionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ExecutionState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExecutionState::parse(s).ok_or_else(|| format!("unknown execution state {s:?}"))
    }
}

/// Whether an execution may move from `from` to `to`: the transition graph of docs/engine.md.
pub fn can_transition(from: ExecutionState, to: ExecutionState) -> bool {
    use ExecutionState::*;
    matches!(
        (from, to),
        (Scheduled, Enqueued | Cancelled | Skipped)
            | (Enqueued, Processing | Skipped | Cancelled)
            | (Processing, Succeeded | Failed | Cancelled | Terminated)
            | (Failed, Processing | Terminated | Cancelled)
    )
}

/// The start of every execution id of one incarnation of a job id: `{jobId}` for the first (so the
/// ids of jobs never re-created stay as they always were), `{jobId}~i{n}` for the n-th re-creation
/// after a delete. A job created again under a deleted id thus never meets the old job's executions
/// or trigger keys (docs/api.md, "Deleting and re-creating a job").
fn execution_prefix(job_id: &JobId, incarnation: u32) -> String {
    if incarnation == 0 {
        job_id.to_string()
    } else {
        format!("{job_id}~i{incarnation}")
    }
}

/// The id of the execution for a scheduled (or backfilled) fire: `{prefix}~{yyyymmddThhmmssZ}` of
/// the nominal time, where the prefix names the job's incarnation ([`incarnation_of_execution`]).
/// Sub-seconds are ignored: specs have one-second resolution.
pub fn execution_id_for_fire(job_id: &JobId, incarnation: u32, nominal: DateTime<Utc>) -> String {
    use chrono::{Datelike, Timelike};
    // The digits written directly: `format("%Y%m%dT%H%M%SZ")` parses its pattern on every call,
    // and a simulation makes half a million of these. Years outside 0–9999 (a sign, more digits)
    // take the pattern's own path.
    let year = nominal.year();
    if !(0..=9999).contains(&year) {
        return format!(
            "{}~{}",
            execution_prefix(job_id, incarnation),
            nominal.format("%Y%m%dT%H%M%SZ")
        );
    }
    let mut id = String::with_capacity(job_id.as_str().len() + 32);
    id.push_str(job_id.as_str());
    if incarnation != 0 {
        id.push_str("~i");
        id.push_str(&incarnation.to_string());
    }
    id.push('~');
    let digits = |id: &mut String, value: u32, width: u32| {
        for place in (0..width).rev() {
            let digit = (value / 10u32.pow(place)) % 10;
            id.push(char::from(b'0' + digit as u8));
        }
    };
    digits(&mut id, year.unsigned_abs(), 4);
    digits(&mut id, nominal.month(), 2);
    digits(&mut id, nominal.day(), 2);
    id.push('T');
    digits(&mut id, nominal.hour(), 2);
    digits(&mut id, nominal.minute(), 2);
    digits(&mut id, nominal.second(), 2);
    id.push('Z');
    id
}

/// The id of the `k`-th run of a fire time after its scheduled one (`k` ≥ 1): a backfill's run
/// of that time, `{fire id}~r{k}`. The scheduled run of the time is `{fire id}` itself
/// ([`execution_id_for_fire`]), so every run of a time is found by id: its scheduled run and
/// `~r1`, `~r2`, … up to the first missing.
pub fn execution_id_for_rerun(
    job_id: &JobId,
    incarnation: u32,
    nominal: DateTime<Utc>,
    k: u32,
) -> String {
    format!(
        "{}~r{k}",
        execution_id_for_fire(job_id, incarnation, nominal)
    )
}

/// The fire time and run number of an execution id of this job and incarnation: `(t, 0)` for the
/// scheduled run of `t` ([`execution_id_for_fire`]), `(t, k)` for its `k`-th re-run
/// ([`execution_id_for_rerun`]); `None` for a trigger's or any other id.
pub fn run_of_fire_id(
    job_id: &JobId,
    incarnation: u32,
    execution_id: &str,
) -> Option<(DateTime<Utc>, u32)> {
    let rest = execution_id
        .strip_prefix(execution_prefix(job_id, incarnation).as_str())?
        .strip_prefix('~')?;
    let width = "yyyymmddThhmmssZ".len();
    let (time, k) = match rest.get(width..) {
        Some("") => (rest, 0),
        Some(suffix) => {
            let k = suffix.strip_prefix("~r")?;
            if k.starts_with('0') || !k.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (rest.get(..width)?, k.parse().ok()?)
        }
        None => return None,
    };
    let time = chrono::NaiveDateTime::parse_from_str(time, "%Y%m%dT%H%M%SZ").ok()?;
    Some((time.and_utc(), k))
}

/// The nominal time of a scheduled fire's execution, read back from its id
/// ([`execution_id_for_fire`] for this job and incarnation); `None` for any other id: a
/// trigger's, a backfill's, another incarnation's.
pub fn nominal_of_fire_id(
    job_id: &JobId,
    incarnation: u32,
    execution_id: &str,
) -> Option<DateTime<Utc>> {
    match run_of_fire_id(job_id, incarnation, execution_id)? {
        (nominal, 0) => Some(nominal),
        _ => None,
    }
}

/// The id of the execution for a manual trigger: `{prefix}~t~{triggerId}`, after checking the
/// trigger id with [`validate_trigger_id`] (errors have the path `triggerId`).
pub fn execution_id_for_trigger(
    job_id: &JobId,
    incarnation: u32,
    trigger_id: &str,
) -> Result<String, FieldError> {
    validate_trigger_id(trigger_id)?;
    Ok(format!(
        "{}~t~{trigger_id}",
        execution_prefix(job_id, incarnation)
    ))
}

/// The incarnation of its job an execution id belongs to: `n` for `{jobId}~i{n}~…`, else 0.
pub fn incarnation_of_execution(execution_id: &str) -> u32 {
    execution_id
        .split_once('~')
        .and_then(|(_, rest)| rest.strip_prefix('i'))
        .and_then(|rest| rest.split_once('~'))
        .and_then(|(number, _)| number.parse().ok())
        .unwrap_or(0)
}

/// Checks a trigger id: 1–64 characters of `A–Z a–z 0–9 _ . -`. Errors have the path `triggerId`.
pub fn validate_trigger_id(trigger_id: &str) -> Result<(), FieldError> {
    if crate::job::is_id_text(trigger_id, MAX_TRIGGER_ID_LEN) {
        Ok(())
    } else {
        Err(FieldError::new(
            "triggerId",
            format!(
                "expected 1-{MAX_TRIGGER_ID_LEN} characters of A-Z, a-z, 0-9, \"_\", \".\", \"-\", got {}",
                crate::job::quote(trigger_id)
            ),
        ))
    }
}

/// The longest execution id: a job id (128), an incarnation, and a fire time with a re-run
/// number or a trigger id (64), with room to spare.
pub const MAX_EXECUTION_ID_LEN: usize = 256;

/// An execution's id, read once where one comes in (a path, a form): a valid job id, a `~`, and
/// the rest of one of the forms [`execution_id_for_fire`], [`execution_id_for_rerun`] and
/// [`execution_id_for_trigger`] make, printable and at most [`MAX_EXECUTION_ID_LEN`] bytes. Whether
/// an execution has it is the store's to say.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExecutionId {
    text: String,
    job_id: JobId,
}

impl ExecutionId {
    /// Reads an execution id; errors have the path `executionId`.
    ///
    /// ```
    /// use sundial_core::execution::ExecutionId;
    /// let id = ExecutionId::parse("nightly~i2~20260101T020000Z").unwrap();
    /// assert_eq!((id.job_id().as_str(), id.incarnation()), ("nightly", 2));
    /// assert!(ExecutionId::parse("nightly").is_err());
    /// assert!(ExecutionId::parse("../x~1").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<ExecutionId, FieldError> {
        let bad = |why: &str| {
            FieldError::new("executionId", format!("{why}: {}", crate::job::quote(text)))
        };
        if text.len() > MAX_EXECUTION_ID_LEN {
            return Err(bad(&format!("longer than {MAX_EXECUTION_ID_LEN} bytes")));
        }
        if text.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad("has a control or space character"));
        }
        let job_id = job_id_of_execution(text)
            .ok_or_else(|| bad("expected {jobId}~… as the API gives execution ids"))?;
        Ok(ExecutionId {
            text: text.to_owned(),
            job_id,
        })
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The job the execution belongs to.
    pub fn job_id(&self) -> &JobId {
        &self.job_id
    }

    /// The incarnation of its job the execution belongs to ([`incarnation_of_execution`]).
    pub fn incarnation(&self) -> u32 {
        incarnation_of_execution(&self.text)
    }
}

impl fmt::Display for ExecutionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for ExecutionId {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// The job an execution id belongs to: the part before the first `~`.
pub fn job_id_of_execution(execution_id: &str) -> Option<JobId> {
    let (job, rest) = execution_id.split_once('~')?;
    if rest.is_empty() {
        return None;
    }
    JobId::parse(job).ok()
}

/// One entry of an execution's log: a transition, or a note while in a state (`from == Some(to)`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionEvent {
    /// When it happened.
    #[serde(with = "rfc3339")]
    pub at: DateTime<Utc>,
    /// The state before; `None` for the creation event.
    pub from: Option<ExecutionState>,
    /// The state after.
    pub to: ExecutionState,
    /// What happened, for people.
    pub message: String,
}

/// A move the transition graph does not allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("execution {execution_id} cannot go from {} to {to}", .from.map_or("nothing", ExecutionState::name))]
pub struct TransitionError {
    /// The execution.
    pub execution_id: String,
    /// Its state; `None` when creating it.
    pub from: Option<ExecutionState>,
    /// The state asked for.
    pub to: ExecutionState,
}

/// One run of a job (the API shape of docs/api.md plus its arguments, parent and event log).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    /// Stable id: see [`execution_id_for_fire`] and [`execution_id_for_trigger`].
    pub execution_id: String,
    /// The job.
    pub job_id: JobId,
    /// 1, 2, 3… per job.
    pub execute_number: u64,
    state: ExecutionState,
    /// The nominal fire time, before jitter (the trigger time for triggers).
    #[serde(with = "rfc3339")]
    pub scheduled_time: DateTime<Utc>,
    /// What started it: the job id for scheduled fires, otherwise the trigger or backfill.
    pub scheduled_by_id: String,
    #[serde(default, with = "option_rfc3339")]
    started_at: Option<DateTime<Utc>>,
    #[serde(default, with = "option_rfc3339")]
    finished_at: Option<DateTime<Utc>>,
    #[serde(default)]
    attempts: u32,
    /// The last progress an async job reported.
    #[serde(default)]
    pub progress: Option<Value>,
    /// The error code of the last failure: an HTTP status, an async `error`, or `timeout`.
    #[serde(default)]
    pub error: Option<String>,
    /// The result: the last response or async `data`.
    #[serde(default)]
    pub result: Option<Value>,
    /// Trigger arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// The job's parent job.
    #[serde(default)]
    pub parent_job: Option<JobId>,
    /// The parent job's execute number.
    #[serde(default)]
    pub parent_job_execution: Option<u64>,
    /// What the engine needs to resume the run after any crash: deadlines, retries, the lease.
    #[serde(default, skip_serializing_if = "RunState::is_empty")]
    pub run: RunState,
    #[serde(default)]
    events: Vec<ExecutionEvent>,
    #[serde(default)]
    dropped_events: u64,
}

/// The engine's bookkeeping of one execution, stored with it so that any worker, after any crash,
/// can tell what the run is waiting for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RunState {
    /// When it should start: the nominal time plus jitter, or the trigger time.
    #[serde(with = "option_rfc3339", skip_serializing_if = "Option::is_none")]
    pub due: Option<DateTime<Utc>>,
    /// The overlap policy of its trigger or backfill, when it overrides the job's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlap: Option<crate::job::OverlapPolicy>,
    /// A worker runs the request chain until this time; after it the worker is presumed lost and
    /// the attempt is started again.
    #[serde(with = "option_rfc3339", skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<DateTime<Utc>>,
    /// The engine process (or Lambda invocation) that holds the lease: a `sundial serve` that
    /// restarts on the same data knows every lease of another holder is a dead process's, and
    /// reclaims it at once instead of waiting for `lease_until`. `None` in leases stored before
    /// holders were recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_holder: Option<String>,
    /// The end of the current attempt (`timeoutSeconds`, start-to-close, async checks included).
    #[serde(with = "option_rfc3339", skip_serializing_if = "Option::is_none")]
    pub attempt_deadline: Option<DateTime<Utc>>,
    /// The request chain is done and the run waits for an async status (checkUrl or feedback).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_async: bool,
    /// The next `checkUrl` poll.
    #[serde(with = "option_rfc3339", skip_serializing_if = "Option::is_none")]
    pub next_check: Option<DateTime<Utc>>,
    /// When the last progress report came (for the heartbeat timeout).
    #[serde(with = "option_rfc3339", skip_serializing_if = "Option::is_none")]
    pub last_report_at: Option<DateTime<Utc>>,
    /// When a `Failed` run starts its next attempt.
    #[serde(with = "option_rfc3339", skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<DateTime<Utc>>,
    /// When the first attempt's call was actually made: a run admitted ahead of its fire time
    /// enters `Processing` early and calls at the fire time, so its fire lag and duration count
    /// from here (docs/api.md "Statistics").
    #[serde(with = "option_rfc3339", skip_serializing_if = "Option::is_none")]
    pub first_call_at: Option<DateTime<Utc>>,
    /// `${lastCompletionResult}` and `${lastFailure}` as the job held them when the run
    /// started, kept across its retries (Temporal captures them at the run's start); only those
    /// the job's templates name ([`LastResults::capture`]). `None` in runs started before they
    /// were captured: those read the job's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_results: Option<LastResults>,
    /// Retries so far, in all and by error code.
    pub retries: crate::retry::RetryHistory,
    /// Response bodies of the request chain, for the templates of `checkUrl` and notifications.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub responses: Vec<Value>,
    /// Responses by `respEnvName`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub named: std::collections::BTreeMap<String, Value>,
}

/// A job's last results as one run saw them when it started ([`RunState::last_results`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LastResults {
    /// The job's `lastCompletionResult` then, when its templates name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_completion_result: Option<Value>,
    /// The job's `lastFailure` then, when its templates name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<Value>,
}

impl LastResults {
    /// What a run of `job` starting now keeps of its last results: only the values its written
    /// definition (requests, checks, notifications) names, so that an execution item stays small
    /// when they are not used (a result can be 64 KB).
    pub fn capture(job: &crate::job::Job) -> LastResults {
        let (named, state) = (job.definition.last_results_named(), &job.state);
        LastResults {
            last_completion_result: named
                .completion_result
                .then(|| state.last_completion_result.clone())
                .flatten(),
            last_failure: named.failure.then(|| state.last_failure.clone()).flatten(),
        }
    }
}

impl RunState {
    fn is_empty(&self) -> bool {
        self == &RunState::default()
    }
}

impl Execution {
    /// Its id as an [`ExecutionId`] (made by the `execution_id_for_*` functions for its job).
    pub fn id(&self) -> ExecutionId {
        ExecutionId {
            text: self.execution_id.clone(),
            job_id: self.job_id.clone(),
        }
    }

    /// A new execution in `initial` state, with its creation event. docs/api.md creates executions
    /// Scheduled (delayed) or Enqueued only; any other `initial` is a [`TransitionError`] with
    /// `from: None`.
    pub fn new(
        execution_id: String,
        job_id: JobId,
        execute_number: u64,
        initial: ExecutionState,
        scheduled_time: DateTime<Utc>,
        scheduled_by_id: String,
        at: DateTime<Utc>,
    ) -> Result<Execution, TransitionError> {
        if !initial.is_initial() {
            return Err(TransitionError {
                execution_id,
                from: None,
                to: initial,
            });
        }
        let message = format!("created by {scheduled_by_id}");
        Ok(Execution {
            events: vec![ExecutionEvent {
                at,
                from: None,
                to: initial,
                message,
            }],
            execution_id,
            job_id,
            execute_number,
            state: initial,
            scheduled_time,
            scheduled_by_id,
            started_at: None,
            finished_at: None,
            attempts: 0,
            progress: None,
            error: None,
            result: None,
            arguments: None,
            parent_job: None,
            parent_job_execution: None,
            run: RunState::default(),
            dropped_events: 0,
        })
    }

    /// When the run was due: its scheduled time, or later when jitter, a trigger's delay or a
    /// backfill made it due later. Its `scheduleToStart` and `scheduleToClose` count from here,
    /// so a run that reports an earlier time (a backfilled time, a trigger's `scheduledTime`) is
    /// not timed out for waiting before it was due.
    pub fn due_at(&self) -> DateTime<Utc> {
        self.run
            .due
            .map_or(self.scheduled_time, |due| due.max(self.scheduled_time))
    }

    /// The current state.
    pub fn state(&self) -> ExecutionState {
        self.state
    }

    /// When it first started processing.
    pub fn started_at(&self) -> Option<DateTime<Utc>> {
        self.started_at
    }

    /// When it reached a final state.
    pub fn finished_at(&self) -> Option<DateTime<Utc>> {
        self.finished_at
    }

    /// How many times it entered Processing: the first attempt and every retry.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The log: the creation event, then the newest up to [`MAX_EVENTS`] in all.
    pub fn events(&self) -> &[ExecutionEvent] {
        &self.events
    }

    /// Events dropped from the middle of the log to keep it within [`MAX_EVENTS`].
    pub fn dropped_events(&self) -> u64 {
        self.dropped_events
    }

    /// How many events were ever logged (kept and dropped): grows by one per event, so the events
    /// added since an earlier count are the last `event_count() - earlier` of [`Execution::events`].
    pub fn event_count(&self) -> u64 {
        self.events.len() as u64 + self.dropped_events
    }

    /// The state changes logged after the first `since` events, oldest first (as many as are kept).
    pub fn transitions_since(&self, since: u64) -> impl Iterator<Item = &ExecutionEvent> {
        let new = usize::try_from(self.event_count().saturating_sub(since)).unwrap_or(usize::MAX);
        let skip = self.events.len().saturating_sub(new);
        self.events[skip..]
            .iter()
            .filter(|e| e.from.is_some_and(|from| from != e.to))
    }

    /// True when the execution is in a final state.
    pub fn is_finished(&self) -> bool {
        self.state.is_final()
    }

    /// Moves to `to` if the graph allows it, logging the move with `message`. Entering Processing
    /// counts an attempt (and sets `startedAt` the first time); entering a final state sets
    /// `finishedAt`.
    pub fn transition(
        &mut self,
        to: ExecutionState,
        at: DateTime<Utc>,
        message: impl Into<String>,
    ) -> Result<(), TransitionError> {
        if !can_transition(self.state, to) {
            return Err(TransitionError {
                execution_id: self.execution_id.clone(),
                from: Some(self.state),
                to,
            });
        }
        let from = self.state;
        self.state = to;
        if to == ExecutionState::Processing {
            self.attempts = self.attempts.saturating_add(1);
            self.started_at.get_or_insert(at);
        }
        if to.is_final() {
            self.finished_at = Some(at);
        }
        self.push_event(ExecutionEvent {
            at,
            from: Some(from),
            to,
            message: message.into(),
        });
        Ok(())
    }

    /// Ends a run that has not started as `Skipped` (its job paused, debug mode: see
    /// [`crate::plan::may_start`]). A run not yet admitted (`Scheduled`, `Enqueued`) moves as
    /// [`Execution::transition`] moves it; a run admitted ahead of its fire time (`Processing`
    /// on its first attempt, its call not made: no `first_call_at`) is taken back first: it
    /// never started, so it counts no attempt and has no `startedAt`. Anything else cannot be
    /// skipped.
    pub fn skip_unstarted(
        &mut self,
        at: DateTime<Utc>,
        message: impl Into<String>,
    ) -> Result<(), TransitionError> {
        let held = self.state == ExecutionState::Processing
            && self.attempts == 1
            && self.run.first_call_at.is_none();
        if !held {
            return self.transition(ExecutionState::Skipped, at, message);
        }
        self.state = ExecutionState::Skipped;
        self.attempts = 0;
        self.started_at = None;
        self.finished_at = Some(at);
        self.push_event(ExecutionEvent {
            at,
            from: Some(ExecutionState::Processing),
            to: ExecutionState::Skipped,
            message: message.into(),
        });
        Ok(())
    }

    /// Logs something that happened without a state change (a progress report, a notification).
    pub fn record(&mut self, at: DateTime<Utc>, message: impl Into<String>) {
        self.push_event(ExecutionEvent {
            at,
            from: Some(self.state),
            to: self.state,
            message: message.into(),
        });
    }

    fn push_event(&mut self, event: ExecutionEvent) {
        // Keep the creation event: it says who started the run, which the newest events don't.
        if self.events.len() >= MAX_EVENTS {
            self.events.remove(1);
            self.dropped_events = self.dropped_events.saturating_add(1);
        }
        self.events.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExecutionState::*;

    #[test]
    fn an_execution_id_is_read_once_with_its_job_and_incarnation() {
        let job = JobId::parse("nightly").unwrap();
        let nominal = at("2026-01-01T02:00:00Z");
        for made in [
            execution_id_for_fire(&job, 0, nominal),
            execution_id_for_rerun(&job, 3, nominal, 2),
            execution_id_for_trigger(&job, 1, "redo-1").unwrap(),
        ] {
            let id = ExecutionId::parse(&made).unwrap();
            assert_eq!(id.as_str(), made);
            assert_eq!(id.job_id(), &job);
            assert_eq!(id.incarnation(), incarnation_of_execution(&made));
            assert_eq!(id.to_string(), made);
        }
        for bad in [
            "",
            "nightly",
            "nightly~",
            "~x",
            "../x~1",
            "night ly~1",
            "nightly~a\nb",
            &format!("nightly~{}", "x".repeat(MAX_EXECUTION_ID_LEN)),
        ] {
            let error = ExecutionId::parse(bad).unwrap_err();
            assert_eq!(error.path, "executionId", "{bad:?}");
        }
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn job() -> JobId {
        JobId::parse("job-1").unwrap()
    }

    fn new(initial: ExecutionState) -> Execution {
        Execution::new(
            "job-1~20240101T000000Z".into(),
            job(),
            1,
            initial,
            at("2024-01-01T00:00:00Z"),
            "job-1".into(),
            at("2024-01-01T00:00:00Z"),
        )
        .unwrap()
    }

    #[test]
    fn transition_graph_is_exactly_the_brief() {
        // Rows: from; columns: to, in ExecutionState::ALL order
        // (Scheduled, Enqueued, Processing, Succeeded, Failed, Terminated, Cancelled, Skipped).
        let table: [[u8; 8]; 8] = [
            [0, 1, 0, 0, 0, 0, 1, 1], // Scheduled
            [0, 0, 1, 0, 0, 0, 1, 1], // Enqueued
            [0, 0, 0, 1, 1, 1, 1, 0], // Processing
            [0, 0, 0, 0, 0, 0, 0, 0], // Succeeded
            [0, 0, 1, 0, 0, 1, 1, 0], // Failed
            [0, 0, 0, 0, 0, 0, 0, 0], // Terminated
            [0, 0, 0, 0, 0, 0, 0, 0], // Cancelled
            [0, 0, 0, 0, 0, 0, 0, 0], // Skipped
        ];
        for (i, from) in ExecutionState::ALL.into_iter().enumerate() {
            for (j, to) in ExecutionState::ALL.into_iter().enumerate() {
                assert_eq!(can_transition(from, to), table[i][j] == 1, "{from} -> {to}");
            }
            let leaves = ExecutionState::ALL
                .into_iter()
                .any(|to| can_transition(from, to));
            assert_eq!(from.is_final(), !leaves, "{from}");
        }
    }

    /// A run admitted ahead whose call was not made is taken back when skipped; a run that
    /// called, or a retry, cannot be skipped.
    #[test]
    fn skip_unstarted_takes_back_only_runs_that_did_not_call() {
        let t0 = at("2024-01-01T00:00:00Z");
        let mut held = new(ExecutionState::Enqueued);
        held.transition(ExecutionState::Processing, t0, "admitted ahead")
            .unwrap();
        held.skip_unstarted(t0, "paused").unwrap();
        assert_eq!(held.state(), ExecutionState::Skipped);
        assert_eq!(held.attempts(), 0);
        assert_eq!(held.started_at(), None);
        let mut waiting = new(ExecutionState::Scheduled);
        waiting.skip_unstarted(t0, "paused").unwrap();
        assert_eq!(waiting.state(), ExecutionState::Skipped);
        let mut called = new(ExecutionState::Enqueued);
        called
            .transition(ExecutionState::Processing, t0, "started")
            .unwrap();
        called.run.first_call_at = Some(t0);
        assert!(called.skip_unstarted(t0, "paused").is_err());
        assert_eq!(called.state(), ExecutionState::Processing);
    }

    /// Only the last results a job's templates name are kept on its runs (an execution item
    /// stays small); a run that kept none stores no field.
    #[test]
    fn last_results_keep_only_what_the_templates_name() {
        let parse = |body: Value| {
            let mut job = crate::job::Job::new(
                crate::job::JobDefinition::parse(&job(), &body, at("2024-01-01T00:00:00Z"))
                    .unwrap(),
            );
            job.state.last_completion_result = Some(serde_json::json!({"rows": 7}));
            job.state.last_failure = Some(serde_json::json!({"error": "500"}));
            job
        };
        let base = serde_json::json!({"jobName": "j", "creator": "c", "creatorName": "C"});
        let mut named = base.clone();
        named["request"] = serde_json::json!([{"url": "http://h/x", "body": {"last": "${lastCompletionResult}|json"}}]);
        let kept = LastResults::capture(&parse(named));
        assert_eq!(
            kept.last_completion_result,
            Some(serde_json::json!({"rows": 7}))
        );
        assert_eq!(kept.last_failure, None);
        let mut plain = base;
        plain["request"] = serde_json::json!([{"url": "http://h/x"}]);
        let kept = LastResults::capture(&parse(plain));
        assert_eq!(kept, LastResults::default());
        assert_eq!(serde_json::to_value(&kept).unwrap(), serde_json::json!({}));
    }

    #[test]
    fn names_round_trip() {
        for state in ExecutionState::ALL {
            assert_eq!(state.to_string(), state.name());
            assert_eq!(state.name().parse::<ExecutionState>(), Ok(state));
            assert_eq!(
                serde_json::to_value(state).unwrap(),
                Value::String(state.name().into())
            );
        }
        assert!("processing".parse::<ExecutionState>().is_err());
    }

    #[test]
    fn execution_ids() {
        assert_eq!(
            execution_id_for_fire(&job(), 0, at("2024-03-10T07:05:09Z")),
            "job-1~20240310T070509Z"
        );
        assert_eq!(
            execution_id_for_fire(&job(), 0, at("2024-03-10T07:05:09.750Z")),
            "job-1~20240310T070509Z"
        );
        assert_eq!(
            execution_id_for_trigger(&job(), 0, "abc_1").unwrap(),
            "job-1~t~abc_1"
        );
        assert_eq!(
            execution_id_for_trigger(&job(), 0, "a~b").unwrap_err().path,
            "triggerId"
        );
        // A job re-created under a deleted id: its ids name the incarnation, the first keeps the
        // ids stored data already has.
        assert_eq!(
            execution_id_for_fire(&job(), 2, at("2024-03-10T07:05:09Z")),
            "job-1~i2~20240310T070509Z"
        );
        assert_eq!(
            execution_id_for_trigger(&job(), 2, "abc_1").unwrap(),
            "job-1~i2~t~abc_1"
        );
        for (id, incarnation) in [
            ("job-1~20240310T070509Z", 0),
            ("job-1~t~abc", 0),
            ("job-1~t~i2~x", 0),
            ("job-1~i2~20240310T070509Z", 2),
            ("job-1~i17~t~abc", 17),
            ("job-1~i2~20240310T070509Z~b20240101T000000000Z", 2),
            ("job-1~ix~t~abc", 0),
            ("job-1", 0),
        ] {
            assert_eq!(incarnation_of_execution(id), incarnation, "{id}");
        }
        // A fire's nominal time reads back from its id, and only from a fire's id of that
        // incarnation.
        let nominal = at("2024-03-10T07:05:09Z");
        for incarnation in [0, 2] {
            let id = execution_id_for_fire(&job(), incarnation, nominal);
            assert_eq!(nominal_of_fire_id(&job(), incarnation, &id), Some(nominal));
        }
        for other in [
            "job-1~i2~20240310T070509Z",
            "job-1~t~20240310T070509Z",
            "job-1~20240310T070509Z~r1",
            "job-1~20240310T070509Z~b20240101T000000000Z",
            "job-10~20240310T070509Z",
            "job-1~20241310T070509Z",
            "job-1",
        ] {
            assert_eq!(nominal_of_fire_id(&job(), 0, other), None, "{other}");
        }
        // A time's re-runs: `~r1`, `~r2`…, read back with their number.
        assert_eq!(
            execution_id_for_rerun(&job(), 0, nominal, 2),
            "job-1~20240310T070509Z~r2"
        );
        assert_eq!(
            run_of_fire_id(&job(), 1, "job-1~i1~20240310T070509Z~r12"),
            Some((nominal, 12))
        );
        assert_eq!(
            run_of_fire_id(&job(), 0, "job-1~20240310T070509Z"),
            Some((nominal, 0))
        );
        for other in [
            "job-1~20240310T070509Z~r",
            "job-1~20240310T070509Z~r0",
            "job-1~20240310T070509Z~r01",
            "job-1~20240310T070509Z~rx",
            "job-1~20240310T070509Z~b20240101T000000000Z",
            "job-1~t~abc",
        ] {
            assert_eq!(run_of_fire_id(&job(), 0, other), None, "{other}");
        }
        assert!(validate_trigger_id("abc-1.2_x").is_ok());
        for bad in ["", "a~b", "a/b", "a b", &"x".repeat(65)] {
            let e = validate_trigger_id(bad).unwrap_err();
            assert_eq!(e.path, "triggerId", "{bad:?}");
        }
        assert!(validate_trigger_id(&"x".repeat(64)).is_ok());
        assert_eq!(job_id_of_execution("job-1~20240310T070509Z"), Some(job()));
        assert_eq!(job_id_of_execution("job-1~t~abc"), Some(job()));
        assert_eq!(job_id_of_execution("job-1~i3~t~abc"), Some(job()));
        assert_eq!(job_id_of_execution("job-1"), None);
        assert_eq!(job_id_of_execution("job-1~"), None);
        assert_eq!(job_id_of_execution("a b~x"), None);
    }

    #[test]
    fn new_records_creation_and_checks_the_initial_state() {
        let e = new(Scheduled);
        assert_eq!(e.state(), Scheduled);
        assert_eq!(e.events().len(), 1);
        assert_eq!(e.events()[0].from, None);
        assert_eq!(e.events()[0].to, Scheduled);
        assert_eq!(new(Enqueued).state(), Enqueued);
        for state in [
            Processing, Succeeded, Failed, Terminated, Cancelled, Skipped,
        ] {
            let err = Execution::new(
                "x~t~1".into(),
                job(),
                1,
                state,
                at("2024-01-01T00:00:00Z"),
                "x".into(),
                at("2024-01-01T00:00:00Z"),
            )
            .unwrap_err();
            assert_eq!(err.from, None);
            assert_eq!(err.to, state);
            assert!(err.to_string().contains("from nothing to"), "{err}");
        }
    }

    #[test]
    fn a_run_with_a_retry() {
        let mut e = new(Scheduled);
        e.transition(Enqueued, at("2024-01-01T00:00:00Z"), "due")
            .unwrap();
        e.transition(Processing, at("2024-01-01T00:00:01Z"), "attempt 1")
            .unwrap();
        e.transition(Failed, at("2024-01-01T00:00:02Z"), "500")
            .unwrap();
        assert_eq!(e.finished_at(), None);
        e.transition(Processing, at("2024-01-01T00:00:04Z"), "attempt 2")
            .unwrap();
        e.transition(Succeeded, at("2024-01-01T00:00:05Z"), "200")
            .unwrap();
        assert_eq!(e.attempts(), 2);
        assert_eq!(e.started_at(), Some(at("2024-01-01T00:00:01Z")));
        assert_eq!(e.finished_at(), Some(at("2024-01-01T00:00:05Z")));
        assert!(e.is_finished());
        assert_eq!(e.events().len(), 6);
        let err = e
            .transition(Processing, at("2024-01-01T00:00:06Z"), "again")
            .unwrap_err();
        assert_eq!(err.from, Some(Succeeded));
        assert_eq!(
            err.to_string(),
            "execution job-1~20240101T000000Z cannot go from Succeeded to Processing"
        );
        assert_eq!(e.events().len(), 6, "a refused move is not logged");
    }

    #[test]
    fn event_log_keeps_the_first_and_the_newest() {
        let mut e = new(Enqueued);
        e.transition(Processing, at("2024-01-01T00:00:01Z"), "start")
            .unwrap();
        for i in 0..500 {
            e.record(at("2024-01-01T00:00:02Z"), format!("progress {i}"));
        }
        assert_eq!(e.events().len(), MAX_EVENTS);
        assert_eq!(e.dropped_events(), 502 - MAX_EVENTS as u64);
        assert_eq!(e.events()[0].from, None);
        assert_eq!(e.events()[1].message, "progress 301");
        assert_eq!(e.events()[MAX_EVENTS - 1].message, "progress 499");
        e.transition(Succeeded, at("2024-01-01T00:00:03Z"), "done")
            .unwrap();
        assert_eq!(e.events().len(), MAX_EVENTS);
        assert_eq!(e.events()[MAX_EVENTS - 1].to, Succeeded);
        assert_eq!(e.events()[0].message, "created by job-1");
    }

    #[test]
    fn json_shape_and_round_trip() {
        let mut e = new(Enqueued);
        e.arguments = Some(serde_json::json!({"a": 1}));
        e.transition(Processing, at("2024-01-01T00:00:01Z"), "start")
            .unwrap();
        let json = serde_json::to_value(&e).unwrap();
        for key in [
            "executionId",
            "jobId",
            "executeNumber",
            "state",
            "scheduledTime",
            "scheduledById",
            "startedAt",
            "finishedAt",
            "attempts",
            "progress",
            "error",
            "result",
            "arguments",
            "parentJob",
            "parentJobExecution",
            "events",
            "droppedEvents",
        ] {
            assert!(json.get(key).is_some(), "{key} missing from {json}");
        }
        assert_eq!(json["state"], "Processing");
        assert_eq!(json["scheduledTime"], "2024-01-01T00:00:00Z");
        assert_eq!(json["startedAt"], "2024-01-01T00:00:01Z");
        assert_eq!(json["finishedAt"], Value::Null);
        assert_eq!(json["events"][1]["from"], "Enqueued");
        let back: Execution = serde_json::from_value(json).unwrap();
        assert_eq!(back, e);
    }
}
