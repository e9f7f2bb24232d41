//! What changes over a job's life, and the job as stored and shown.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::fields::{err, ROOT};
use super::{FieldError, JobDefinition, JobId, OverlapPolicy, When};
use crate::spec::{BusinessCalendar, CalendarSet};
use crate::time_serde::{self, option_rfc3339, rfc3339};

/// A backfill waiting to be run: every fire time of the schedule in `[start_time, end_time]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backfill {
    /// First time of the range (inclusive).
    #[serde(with = "rfc3339")]
    pub start_time: DateTime<Utc>,
    /// Last time of the range (inclusive).
    #[serde(with = "rfc3339")]
    pub end_time: DateTime<Utc>,
    /// Overlap policy for the backfilled runs; `None` uses the job's.
    #[serde(default)]
    pub overlap: Option<OverlapPolicy>,
    /// When the backfill was requested.
    #[serde(with = "rfc3339")]
    pub requested_at: DateTime<Utc>,
    /// The last time already planned: a backfill is planned window by window
    /// ([`crate::plan::BACKFILL_WINDOW`]) and resumes after this time. `None` before its first
    /// window. A `reverse` backfill is planned from its end, and this is the earliest time
    /// planned: it resumes before it.
    #[serde(
        default,
        with = "option_rfc3339",
        skip_serializing_if = "Option::is_none"
    )]
    pub planned_through: Option<DateTime<Utc>>,
    /// Which times of the range run: all, those with no run, those whose latest run failed.
    #[serde(default, skip_serializing_if = "super::policy::is_all_mode")]
    pub mode: super::BackfillMode,
    /// Newest first: the windows are planned from the end of the range.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reverse: bool,
}

/// A job's mutable state: pause notes, limits, counters and the last outcome (docs/engine.md's schedule
/// state and info).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct JobState {
    /// Why the job is paused (or was last paused or unpaused).
    pub paused_notes: Option<String>,
    /// Scheduled runs left; `None` for no limit. Triggers and backfills don't count.
    pub remaining_actions: Option<u64>,
    /// Runs started.
    pub action_count: u64,
    /// Fires skipped by the overlap or concurrency policy.
    pub overlap_skipped: u64,
    /// Fires older than the catch-up window when they were found, so not run.
    pub missed_catchup_window: u64,
    /// Fires dropped because the buffer was full (`BufferOne`).
    pub buffer_dropped: u64,
    /// Fires waiting in the buffer.
    pub buffer_size: u64,
    /// The execute number the next execution gets (1, 2, 3…).
    pub next_execute_number: u64,
    /// The result of the last successful run.
    pub last_completion_result: Option<Value>,
    /// The error of the last failed run.
    pub last_failure: Option<Value>,
    /// The nominal time of the last scheduled fire handled: the tick resumes after it.
    #[serde(with = "option_rfc3339")]
    pub last_scheduled_time: Option<DateTime<Utc>>,
    /// Backfills waiting to be run, oldest first.
    pub pending_backfills: Vec<Backfill>,
    /// Fires the tick has planned (and counted) but not yet created executions for; the next tick
    /// creates them first, so a crash between planning and creating loses none.
    pub pending_fires: Vec<PendingFire>,
    /// Executions holding a concurrency slot (started and not yet finished), oldest first.
    pub running: Vec<String>,
    /// Executions waiting for a slot (BufferOne, BufferAll, maxConcurrency), oldest first.
    pub buffered: Vec<String>,
    /// Whether some job names this one as its `parentJob`: only then does a finished run look for
    /// children to apply their parent close policy to (a query saved on every other run). Set when
    /// such a child is created or updated, or when this job is created after its children; never
    /// cleared (a stale `true` costs one query).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub has_children: bool,
    /// How many times this job id was deleted and created again before this job: its executions'
    /// ids name it ([`crate::execution::execution_id_for_fire`]), so the new job never takes up
    /// an old one's executions or trigger keys. 0 (and not stored) for a job id's first life.
    #[serde(skip_serializing_if = "is_zero")]
    pub incarnation: u32,
    /// Executions created and not yet through the concurrency gate (neither running, buffered nor
    /// over), in the order they are admitted: by due time, then by creation. No run is admitted,
    /// ahead of its time or not, while one due before it still waits here
    /// ([`crate::plan::admit`]). Fires the tick has planned but not created wait in
    /// `pending_fires` and count as waiting too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<WaitingRun>,
    /// Scheduled fires that did not run because they missed the catch-up window (or the
    /// catch-up policy left them out) or were dropped from a full buffer, as ranges of
    /// consecutive nominal times (a day-long outage of an every-second job is one range),
    /// oldest first, the newest [`crate::ledger::MAX_FIRE_RANGES`] kept. Written with the write
    /// that counts them (`missedCatchupWindow`, `bufferDropped`); the non-run ledger reads them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fire_ranges: Vec<crate::ledger::FireRange>,
    /// The definition its service last declared (`PUT /services/{service}/timers`), as written:
    /// the next declaration applies only the fields that differ from it
    /// ([`crate::declaration::plan_reconcile`]). `None` for a job no service declared, or one
    /// declared before declarations were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declaration: Option<Value>,
    /// When a pause given an end (`POST /jobs/{jobId}/pause` with `until`) ends: the tick resumes
    /// the job then, as the system. `None` for a job that is not paused, or paused until resumed.
    #[serde(
        default,
        with = "option_rfc3339",
        skip_serializing_if = "Option::is_none"
    )]
    pub paused_until: Option<DateTime<Utc>>,
}

/// An execution waiting for admission: see [`JobState::waiting`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingRun {
    /// The execution.
    pub execution_id: String,
    /// When it is due (its fire time with jitter, or its trigger or backfill time).
    #[serde(with = "rfc3339")]
    pub due: DateTime<Utc>,
    /// When its fallback wake-up would bring it to dispatch, for a run that has none because
    /// the job's own wake-up brings the tick back to the job first: the tick then sends it
    /// again itself once that time is within its horizon, and a write that moves the job's
    /// wake-up past that time writes the fallback first ([`JobState::uncovered_fallbacks`]).
    /// `None` for a run that has its own fallback wake-up, or needs none. (docs/engine.md,
    /// "Fallback wake-ups".)
    #[serde(
        default,
        with = "option_rfc3339",
        skip_serializing_if = "Option::is_none"
    )]
    pub fallback_at: Option<DateTime<Utc>>,
}

impl JobState {
    /// Puts a new execution in line for admission: after every run due at or before it.
    pub fn wait_in_line(&mut self, execution_id: &str, due: DateTime<Utc>) {
        if self.waiting.iter().any(|w| w.execution_id == execution_id) {
            return;
        }
        let at = self.waiting.partition_point(|w| w.due <= due);
        self.waiting.insert(
            at,
            WaitingRun {
                execution_id: execution_id.to_string(),
                due,
                fallback_at: None,
            },
        );
    }

    /// Lets the waiting run `execution_id` do without a fallback wake-up of its own, due at
    /// `fallback_at`, when `wake` (the job's wake-up as it is about to be written) brings the
    /// tick back to the job no later than `slack` after that ([`covers`]); answers whether it
    /// does. A run not waiting (it took its slot at once) keeps its own.
    pub fn ride_on_wakeup(
        &mut self,
        execution_id: &str,
        fallback_at: DateTime<Utc>,
        wake: Option<DateTime<Utc>>,
        slack: chrono::Duration,
    ) -> bool {
        if !covers(wake, fallback_at, slack) {
            return false;
        }
        match self
            .waiting
            .iter_mut()
            .find(|w| w.execution_id == execution_id)
        {
            Some(run) => {
                run.fallback_at = Some(fallback_at);
                true
            }
            None => false,
        }
    }

    /// The waiting runs that ride on the job's wake-up ([`WaitingRun::fallback_at`]) and that
    /// `wake`, the job's wake-up about to be written, would no longer bring the tick back to in
    /// time ([`covers`]): each with the fallback wake-up it needs (execution id, due time), to be
    /// written no later than the job's wake-up moves.
    pub fn uncovered_fallbacks(
        &self,
        wake: Option<DateTime<Utc>>,
        slack: chrono::Duration,
    ) -> Vec<(String, DateTime<Utc>)> {
        self.waiting
            .iter()
            .filter_map(|run| {
                let at = run.fallback_at?;
                (!covers(wake, at, slack)).then(|| (run.execution_id.clone(), at))
            })
            .collect()
    }

    /// Marks the runs `ids` as having their own fallback wake-up now (written by the caller).
    pub fn fallbacks_written(&mut self, ids: &[String]) {
        for run in &mut self.waiting {
            if ids.contains(&run.execution_id) {
                run.fallback_at = None;
            }
        }
    }

    /// Takes the waiting runs riding on the job's wake-up whose fallback time has come by
    /// `horizon` (the tick's): the tick sends each again, as its fallback wake-up would have.
    /// Answers (execution id, fallback time) and leaves them riding no more; the caller sends
    /// them before it writes the job, so a crash in between sends them again.
    pub fn take_overdue(&mut self, horizon: DateTime<Utc>) -> Vec<(String, DateTime<Utc>)> {
        let mut overdue = Vec::new();
        for run in &mut self.waiting {
            if let Some(at) = run.fallback_at.filter(|at| *at <= horizon) {
                overdue.push((run.execution_id.clone(), at));
                run.fallback_at = None;
            }
        }
        overdue
    }
}

/// Whether a job's wake-up at `wake` brings the tick back to the job in time for a run riding
/// on it whose fallback wake-up would be due at `fallback_at`: at most `slack` later than the
/// fallback would have. A tick reads wake-ups due within its horizon, so both are seen that long
/// before their times; the engine allows one tick's horizon of slack (a run whose message was
/// lost is sent again at most one tick later than its fallback would have), where the fires of
/// a minutely job are then all covered by the job's own wake-up.
pub fn covers(
    wake: Option<DateTime<Utc>>,
    fallback_at: DateTime<Utc>,
    slack: chrono::Duration,
) -> bool {
    wake.is_some_and(|wake| wake <= fallback_at + slack)
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A fire the tick planned: the execution it becomes, when it should start, and what started it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingFire {
    /// The stable id of the execution this fire becomes.
    pub execution_id: String,
    /// The nominal time, before jitter.
    #[serde(with = "rfc3339")]
    pub nominal: DateTime<Utc>,
    /// When it should start: the nominal time plus jitter, or now for backfills.
    #[serde(with = "rfc3339")]
    pub due: DateTime<Utc>,
    /// The execute number reserved for it.
    pub execute_number: u64,
    /// What started it: the job id for scheduled fires, `backfill:{requested}` for backfills.
    pub scheduled_by_id: String,
    /// The overlap policy that applies to it, when it overrides the job's (backfills).
    #[serde(default)]
    pub overlap: Option<OverlapPolicy>,
}

impl Default for JobState {
    fn default() -> Self {
        JobState {
            paused_notes: None,
            remaining_actions: None,
            action_count: 0,
            overlap_skipped: 0,
            missed_catchup_window: 0,
            buffer_dropped: 0,
            buffer_size: 0,
            next_execute_number: 1,
            last_completion_result: None,
            last_failure: None,
            last_scheduled_time: None,
            pending_backfills: Vec::new(),
            pending_fires: Vec::new(),
            running: Vec::new(),
            buffered: Vec::new(),
            has_children: false,
            incarnation: 0,
            waiting: Vec::new(),
            fire_ranges: Vec::new(),
            declaration: None,
            paused_until: None,
        }
    }
}

impl JobState {
    /// The state of a new job: `remainingActions` from the definition, everything else empty.
    pub fn for_definition(definition: &JobDefinition) -> JobState {
        JobState {
            remaining_actions: definition.remaining_actions(),
            ..JobState::default()
        }
    }
}

/// When a pause ends, as a pause's `until` gives it: an instant (RFC 3339, `2026-12-24T08:00:00Z`)
/// or a time from the pause (`2h`, `PT30M`: [`crate::duration::Duration`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseEnd {
    /// At this instant.
    At(DateTime<Utc>),
    /// This long after the pause.
    After(crate::duration::Duration),
}

impl PauseEnd {
    /// Parses `until`; the error says what is wrong with it (the caller names the field).
    pub fn parse(until: &str) -> Result<PauseEnd, String> {
        if let Ok(at) = DateTime::parse_from_rfc3339(until.trim()) {
            return Ok(PauseEnd::At(at.with_timezone(&Utc)));
        }
        crate::duration::Duration::parse(until)
            .map(PauseEnd::After)
            .map_err(|e| format!("expected an RFC 3339 instant or a duration such as \"2h\": {e}"))
    }

    /// The instant it names for a pause made at `now` (`None` past the range of times).
    pub fn at(self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            PauseEnd::At(at) => Some(at),
            PauseEnd::After(after) => {
                let millis = i64::try_from(after.as_millis()).ok()?;
                now.checked_add_signed(chrono::Duration::milliseconds(millis))
            }
        }
    }
}

/// A job: its definition as written and parsed, its state, and when it was created and last written.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// What the user wrote.
    pub definition: JobDefinition,
    /// What changed since.
    pub state: JobState,
    /// When the job was created.
    pub created_at: DateTime<Utc>,
    /// When the job was last written.
    pub updated_at: DateTime<Utc>,
}

impl Job {
    /// A new job with fresh state, created when its definition says.
    pub fn new(definition: JobDefinition) -> Job {
        let created_at = definition.created_at();
        Job {
            state: JobState::for_definition(&definition),
            definition,
            created_at,
            updated_at: created_at,
        }
    }

    /// The job's id.
    pub fn job_id(&self) -> &JobId {
        self.definition.job_id()
    }

    /// Whether its scheduled runs happen.
    pub fn status(&self) -> JobStatus {
        if self.definition.active() {
            JobStatus::Active
        } else {
            JobStatus::Paused
        }
    }

    /// The job's next nominal fire after the last one it ran (or its creation), if it is to fire
    /// again: what its wake-up index entry holds. Planned fires and backfills waiting to be
    /// created are due at once, paused or not.
    pub fn next_fire(&self) -> Option<DateTime<Utc>> {
        if !self.state.pending_fires.is_empty() || !self.state.pending_backfills.is_empty() {
            return Some(self.updated_at);
        }
        if !self.definition.active() || self.state.remaining_actions == Some(0) {
            return None;
        }
        let When::Scheduled(schedule) = self.definition.when() else {
            return None;
        };
        let created = self.created_at - chrono::Duration::seconds(1);
        let after = self
            .state
            .last_scheduled_time
            .map_or(created, |last| last.max(created));
        schedule.next_after(after)
    }

    /// Replaces the definition with `definition` (`POST /jobs/{jobId}/update`), keeping the
    /// state and history: a changed `remainingActions` restarts that count (otherwise the count so
    /// far stands), and a body that resumes the job (its `active`, default 1) keeps no pause note.
    pub fn apply_definition(&mut self, definition: JobDefinition) {
        if definition.remaining_actions() != self.definition.remaining_actions() {
            self.state.remaining_actions = definition.remaining_actions();
        }
        if definition.active() {
            self.state.paused_notes = None;
            self.state.paused_until = None;
        }
        self.definition = definition;
    }

    /// Pauses the job with a note saying why (docs/engine.md's pause with notes), until resumed.
    pub fn pause(&mut self, notes: Option<String>, at: DateTime<Utc>) {
        self.pause_until(notes, at, None);
    }

    /// Pauses the job with a note saying why; with `until`, the pause ends by itself then
    /// ([`Job::pause_ended`]). A pause of a paused job replaces its end (`None`: until resumed).
    pub fn pause_until(
        &mut self,
        notes: Option<String>,
        at: DateTime<Utc>,
        until: Option<DateTime<Utc>>,
    ) {
        self.definition.set_active(false);
        self.state.paused_notes = notes;
        self.state.paused_until = until;
        self.updated_at = at;
    }

    /// Whether the job is paused with an end that has come at `now`: the tick resumes it.
    pub fn pause_ended(&self, now: DateTime<Utc>) -> bool {
        !self.definition.active() && self.state.paused_until.is_some_and(|until| until <= now)
    }

    /// When the tick must look at the job next: its next fire ([`Job::next_fire`]), or the end
    /// of its pause when it is paused until a time. What its wake-up index entry holds.
    pub fn wake_at(&self) -> Option<DateTime<Utc>> {
        match self.next_fire() {
            Some(next) => Some(next),
            None if !self.definition.active() => self.state.paused_until,
            None => None,
        }
    }

    /// Resumes the job; the note, if given, replaces the pause note. Fires that fell in the pause
    /// are not run (Temporal's pause semantics): the schedule resumes after `at`.
    pub fn unpause(&mut self, notes: Option<String>, at: DateTime<Utc>) {
        if !self.definition.active() {
            let resume_after = at - chrono::Duration::seconds(1);
            self.state.last_scheduled_time = Some(
                self.state
                    .last_scheduled_time
                    .map_or(resume_after, |last| last.max(resume_after)),
            );
        }
        self.definition.set_active(true);
        self.state.paused_notes = notes;
        self.state.paused_until = None;
        self.updated_at = at;
    }

    /// The stored form: `{"definition": …as written…, "state": …}`, and `"calendars": [...]`, a
    /// copy of each named business calendar the schedule uses, when it uses some (so a job is
    /// read back, and fires, without reading a calendar: docs/engine.md, "Calendars").
    pub fn to_document(&self) -> Value {
        let mut doc = json!({
            "definition": self.definition.as_written(),
            "state": serde_json::to_value(&self.state).unwrap_or(Value::Null),
        });
        let calendars = self.definition.calendars();
        if !calendars.is_empty() {
            doc["calendars"] = Value::Array(calendars.iter().map(|c| c.to_json()).collect());
        }
        doc
    }

    /// The calendars a stored job document keeps (see [`Job::to_document`]), each read by
    /// `read` (which may answer from a cache); an unreadable one is an error naming it.
    pub fn document_calendars(
        doc: &Value,
        mut read: impl FnMut(&Value) -> Result<std::sync::Arc<BusinessCalendar>, FieldError>,
    ) -> Result<CalendarSet, FieldError> {
        let mut set = CalendarSet::new();
        if let Some(items) = doc.get("calendars").and_then(Value::as_array) {
            for item in items {
                set.insert_shared(read(item)?);
            }
        }
        Ok(set)
    }

    /// Reads the stored form back, re-parsing the definition with the original creation time.
    /// A missing `state` is a fresh one.
    pub fn from_document(
        job_id: &JobId,
        doc: &Value,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    ) -> Result<Job, FieldError> {
        // Stored documents are ours, not user input: other keys are left for newer versions.
        let calendars = Job::document_calendars(doc, |c| {
            BusinessCalendar::from_json(c)
                .map(std::sync::Arc::new)
                .map_err(|e| e.under("calendars"))
        })?;
        Job::from_parts(job_id, doc, &calendars, created_at, updated_at)
    }

    /// [`Job::from_document`] with the calendars of the document already read
    /// ([`Job::document_calendars`]).
    pub fn from_parts(
        job_id: &JobId,
        doc: &Value,
        calendars: &CalendarSet,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    ) -> Result<Job, FieldError> {
        let Value::Object(obj) = doc else {
            return Err(err(ROOT, "expected a job document object"));
        };
        let written = obj
            .get("definition")
            .filter(|v| !v.is_null())
            .ok_or_else(|| err("definition", "is required"))?;
        let definition = JobDefinition::parse_with(job_id, written, created_at, calendars)?;
        let state = match obj.get("state").filter(|v| !v.is_null()) {
            None => JobState::for_definition(&definition),
            Some(state) => JobState::deserialize(state)
                .map_err(|e| err("state", format!("invalid job state: {e}")))?,
        };
        Ok(Job {
            definition,
            state,
            created_at,
            updated_at,
        })
    }

    /// The API form (`GET /jobs/{jobId}`, list, describe): the definition as written at the top
    /// level, sensitive header values replaced by [`super::REDACTED`], with `jobId`
    /// and `active` (1 or 0) always present, plus `state` (`active`/`paused`), `pausedNotes`,
    /// `pausedUntil` (only when the pause has an end), `createdAt` and `updatedAt`.
    pub fn to_api_json(&self) -> Value {
        let mut shown = self.to_editable_json();
        if let Value::Object(map) = &mut shown {
            map.insert("state".into(), json!(self.status().name()));
            map.insert("pausedNotes".into(), json!(self.state.paused_notes));
            if let (JobStatus::Paused, Some(until)) = (self.status(), self.state.paused_until) {
                map.insert("pausedUntil".into(), json!(time_serde::format(&until)));
            }
            map.insert(
                "createdAt".into(),
                json!(time_serde::format(&self.created_at)),
            );
            map.insert(
                "updatedAt".into(),
                json!(time_serde::format(&self.updated_at)),
            );
        }
        shown
    }

    /// The job as a person edits it: the definition as shown (secret header values `"***"`),
    /// with its `jobId` and its current `active`. It is [`Job::to_api_json`] without the state
    /// fields, and what posting back to update takes.
    pub fn to_editable_json(&self) -> Value {
        let mut map = match self.definition.as_shown() {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        map.insert("jobId".into(), json!(self.job_id().as_str()));
        map.insert("active".into(), json!(u8::from(self.definition.active())));
        Value::Object(map)
    }
}

/// Whether a job's scheduled runs happen: the `state` of a read job and of the list filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobStatus {
    /// Scheduled runs happen.
    Active,
    /// Paused: only manual triggers and backfills run.
    Paused,
}

impl JobStatus {
    /// Both, in the documentation's order.
    pub const ALL: [JobStatus; 2] = [JobStatus::Active, JobStatus::Paused];

    /// The name in JSON, in the store and in filters: `active` or `paused`.
    pub fn name(self) -> &'static str {
        match self {
            JobStatus::Active => "active",
            JobStatus::Paused => "paused",
        }
    }

    /// The status named `name` (exactly).
    pub fn parse(name: &str) -> Option<JobStatus> {
        JobStatus::ALL
            .into_iter()
            .find(|status| status.name() == name)
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
