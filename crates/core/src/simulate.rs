//! A simulation of a job before it goes live (`POST /jobs/simulate`, `sundial job simulate`): the
//! job's definition run through the engine's own decisions under a virtual clock, against a
//! synthetic target, answering time by time what would happen.
//!
//! It is a discrete-event loop over core's pure functions, the ones the engine calls, and no other
//! implementation of any policy: [`plan::plan_tick`] plans the fires (catch-up window and policy,
//! `remainingActions`, the spec engine's calendars and DST rules), [`plan::take_planned`] lines
//! them up, [`plan::missed_at_admission`], [`plan::may_start`] and [`plan::gate`] decide each run at
//! its due time (overlap: start, skip, buffer, drop, cancel or terminate the other),
//! [`settle::settle_attempt`] (with [`crate::retry::decide`]) moves each run after its call, and
//! [`plan::finish_on_job`] frees its slot, starts the next buffered run and pauses a job with
//! `pauseOnFailure`. The engine's one tick is one event per fire time here (its look-ahead is
//! zero), and a dispatch step is an event at the time its message is due.
//!
//! The target is synthetic: each call lasts a time drawn from a log-normal distribution with the
//! given median (`p50`) and 99th percentile (`p99`), fails with HTTP 500 at `failureRate`, and
//! times out when it outlasts the job's `timeoutSeconds`; during an [`Outage`] every call that
//! starts fails at once (`error`, a connection error) or hangs until its timeout (`timeout`). The
//! draws come from a generator seeded with `seed`, so a scenario always answers the same. A
//! [`Scenario::downtime`] window is Sundial itself being down: nothing happens during it, and
//! what fell due happens when it is back (so late fires meet the catch-up rules).
//!
//! What it leaves out: notifications, async jobs' polls (an async job's call is taken as the
//! whole run, ended by its final report), workflows' children, and a call that is in flight when
//! an outage starts (the outage decides only the calls that start in it).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use serde_json::{json, Map, Value};

use crate::execution::{can_transition, Execution, ExecutionState};
use crate::job::{FieldError, Job, JobDefinition, PendingFire};
use crate::outcome::Outcome;
use crate::plan::{self, Admission};
use crate::retry;
use crate::settle::{self, AttemptEnd};
use crate::source::RunSource;

/// The longest range `POST /jobs/simulate` takes: a year and a day (a leap year's every day).
pub const MAX_RANGE_DAYS: i64 = 366;

/// The most fires one simulation plans; past it the simulation stops planning and says it was
/// cut short ([`Report::truncated`]). A year of an every-minute job is 525,600 fires and takes
/// well under a second on a laptop (docs/performance.md); a 128 MB Lambda is about ten times
/// slower, so the API's cap keeps an answer within a few seconds there.
pub const MAX_FIRES: usize = 600_000;

/// The most rows a report lists by default; the totals count everything.
pub const DEFAULT_ROWS: usize = 200;

/// The most rows a report may list (`rows`).
pub const MAX_ROWS: usize = 10_000;

/// The most outage or downtime windows a scenario holds.
pub const MAX_WINDOWS: usize = 100;

/// How long a call may last at most in the synthetic target, whatever its distribution says.
const MAX_CALL: Duration = Duration::days(1);

/// How a job's calls behave: how long they take and how often they fail.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// The median call duration.
    pub p50: Duration,
    /// The 99th percentile call duration (at least `p50`).
    pub p99: Duration,
    /// The share of calls (0 to 1) that answer HTTP 500.
    pub failure_rate: f64,
    /// The seed of the draws: one seed, one answer.
    pub seed: u64,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            p50: Duration::seconds(1),
            p99: Duration::seconds(1),
            failure_rate: 0.0,
            seed: 1,
        }
    }
}

/// A span of time: `[start, start + length)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Its first instant.
    pub start: DateTime<Utc>,
    /// How long it lasts.
    pub length: Duration,
}

impl Window {
    /// The first instant after it.
    pub fn end(&self) -> DateTime<Utc> {
        self.start + self.length
    }

    /// Whether `t` falls in it.
    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        t >= self.start && t < self.end()
    }
}

/// What the target's calls do during an [`Outage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutageMode {
    /// Fail at once with a connection error (`connection`).
    #[default]
    Error,
    /// Hang until the attempt's timeout (`timeout`).
    Timeout,
}

/// A window during which the target is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    /// When.
    pub window: Window,
    /// What its calls do.
    pub mode: OutageMode,
}

/// What to simulate beside the job: the range of fire times, the target, its outages and
/// Sundial's own downtime.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The first fire time considered (the job is created then).
    pub from: DateTime<Utc>,
    /// Fires at or after it are not planned; runs started before it are followed to their end.
    pub to: DateTime<Utc>,
    /// The synthetic target.
    pub target: Target,
    /// When the target is down.
    pub outages: Vec<Outage>,
    /// When Sundial itself is down.
    pub downtime: Vec<Window>,
    /// The most fires planned ([`MAX_FIRES`] at most).
    pub max_fires: usize,
    /// The most rows listed ([`MAX_ROWS`] at most).
    pub max_rows: usize,
}

/// What happened at one time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// An attempt: its start, end, outcome and what followed (a retry, the run's end).
    Attempt,
    /// Skipped by overlap policy `Skip`: another run held the slot.
    Skipped,
    /// Waits in the overlap buffer for a slot.
    Buffered,
    /// Dropped: the overlap buffer was full.
    Dropped,
    /// Fire times missed by the catch-up window or policy.
    Missed,
    /// Cancelled by a newer run (`CancelOther`).
    Cancelled,
    /// Terminated by a newer run (`TerminateOther`).
    Terminated,
    /// Did not start: its job was paused.
    NotStarted,
    /// The job was paused (`pauseOnFailure`).
    Paused,
}

impl RowKind {
    /// The name the API and the CLI show.
    pub fn name(self) -> &'static str {
        match self {
            RowKind::Attempt => "attempt",
            RowKind::Skipped => "skipped",
            RowKind::Buffered => "buffered",
            RowKind::Dropped => "dropped",
            RowKind::Missed => "missed",
            RowKind::Cancelled => "cancelled",
            RowKind::Terminated => "terminated",
            RowKind::NotStarted => "notStarted",
            RowKind::Paused => "paused",
        }
    }
}

/// One line of a report, in time order of `at`.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// When it happened (an attempt's start).
    pub at: DateTime<Utc>,
    /// What happened.
    pub kind: RowKind,
    /// The fire time of the run it is about (for `missed`, the first time missed).
    pub nominal: Option<DateTime<Utc>>,
    /// An attempt's number (1 for the first).
    pub attempt: Option<u32>,
    /// An attempt's end; for `missed`, the last time missed.
    pub end: Option<DateTime<Utc>>,
    /// An attempt's outcome: `200`, `500`, `timeout`, `connection`.
    pub outcome: Option<String>,
    /// A retry's time, when the attempt is retried.
    pub retry_at: Option<DateTime<Utc>>,
    /// How many fire times (`missed`); 1 otherwise.
    pub count: u64,
    /// What followed or why, as the run's log says it.
    pub detail: String,
}

/// The totals of a simulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Fires planned (each becomes a run).
    pub fires: u64,
    /// Runs that made at least one attempt.
    pub runs: u64,
    /// Attempts made (first attempts and retries).
    pub attempts: u64,
    /// Runs that succeeded.
    pub succeeded: u64,
    /// Runs that failed for good (no retry left).
    pub failed: u64,
    /// Attempts that failed (and were retried or not).
    pub failed_attempts: u64,
    /// Attempts that timed out.
    pub timeouts: u64,
    /// Retries scheduled.
    pub retries: u64,
    /// Runs skipped by overlap policy `Skip`.
    pub skipped: u64,
    /// Runs that waited in the overlap buffer.
    pub buffered: u64,
    /// Runs dropped from a full buffer.
    pub dropped: u64,
    /// Fire times missed by catch-up (window or policy).
    pub missed: u64,
    /// Runs cancelled by a newer one.
    pub cancelled: u64,
    /// Runs terminated by a newer one.
    pub terminated: u64,
    /// Runs that did not start because the job was paused.
    pub not_started: u64,
}

/// What a simulation answers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The totals over the whole range.
    pub totals: Totals,
    /// The first rows, in time order.
    pub rows: Vec<Row>,
    /// Rows not listed (past the row limit).
    pub rows_left_off: u64,
    /// Planning stopped at the fire cap: the totals cover fires up to `planned_through`.
    pub truncated: bool,
    /// The last fire time planned.
    pub planned_through: Option<DateTime<Utc>>,
    /// When the job was paused by `pauseOnFailure`, if it was.
    pub paused_at: Option<DateTime<Utc>>,
    /// When the last run ended (runs started in the range are followed past its end).
    pub last_end: Option<DateTime<Utc>>,
}

/// A deterministic generator of draws (splitmix64): core has no randomness of its own, and a
/// scenario must answer the same every time.
struct Draws(u64);

impl Draws {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit();
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// The 99th percentile of the standard normal distribution.
const Z99: f64 = 2.326_347_874;

/// A call's duration: log-normal with median `p50` and 99th percentile `p99`.
fn call_duration(target: &Target, draws: &mut Draws) -> Duration {
    let z = draws.normal();
    let p50 = target.p50.num_milliseconds().max(0) as f64;
    if p50 <= 0.0 {
        return Duration::zero();
    }
    let p99 = (target.p99.num_milliseconds() as f64).max(p50);
    let sigma = (p99.ln() - p50.ln()) / Z99;
    let millis = (p50.ln() + sigma * z).exp();
    let cap = MAX_CALL.num_milliseconds() as f64;
    Duration::milliseconds(millis.round().clamp(0.0, cap) as i64)
}

/// A hasher for the loop's map of run ids (FxHash's multiply-rotate): the ids are the loop's
/// own, so SipHash's defence against chosen keys buys nothing and costs a few percent.
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Ids = HashMap<String, Slot, std::hash::BuildHasherDefault<IdHasher>>;

/// A step of the loop, at its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// Plan the job's fires (the engine's tick).
    Tick,
    /// A run's due time: admission.
    Due(Slot),
    /// A retry's time: the next attempt.
    Retry(Slot),
    /// An attempt's call ends.
    CallEnd { slot: Slot, attempt: u32 },
}

/// A run held by the loop: its place and a serial number (places are reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Slot {
    index: usize,
    serial: u64,
}

/// How a call ended, before it is settled.
#[derive(Clone, Debug)]
struct CallResult {
    outcome: Outcome,
    detail: &'static str,
}

/// A run the loop holds: its serial, the execution, its call in flight, and the row of its
/// current attempt (when listed).
struct Held {
    serial: u64,
    /// Boxed: an execution is large, and the loop moves its runs in and out of their places.
    execution: Box<Execution>,
    call: Option<CallResult>,
    row: Option<usize>,
}

struct Sim<'a> {
    job: Job,
    scenario: &'a Scenario,
    draws: Draws,
    queue: BinaryHeap<Reverse<(DateTime<Utc>, u64, Step)>>,
    sequence: u64,
    runs: Vec<Option<Held>>,
    free: Vec<usize>,
    by_id: Ids,
    serial: u64,
    report: Report,
    planning: bool,
}

/// Simulates `definition` over `scenario` (see the module's documentation). The definition's
/// creation time is taken as `scenario.from`.
pub fn simulate(definition: &JobDefinition, scenario: &Scenario) -> Report {
    let mut job = Job::new(definition.clone());
    job.created_at = scenario.from;
    job.updated_at = scenario.from;
    let mut sim = Sim {
        job,
        scenario,
        draws: Draws(scenario.target.seed),
        queue: BinaryHeap::new(),
        sequence: 0,
        runs: Vec::new(),
        free: Vec::new(),
        by_id: Ids::default(),
        serial: 0,
        report: Report::default(),
        planning: true,
    };
    sim.next_tick(scenario.from);
    while let Some(Reverse((at, _, step))) = sim.queue.pop() {
        // While Sundial is down nothing happens; what fell due happens when it is back.
        if let Some(down) = scenario.downtime.iter().find(|w| w.contains(at)) {
            sim.push(down.end(), step);
            continue;
        }
        match step {
            Step::Tick => sim.tick(at),
            Step::Due(slot) => sim.due(slot, at),
            Step::Retry(slot) => sim.retry(slot, at),
            Step::CallEnd { slot, attempt } => sim.call_end(slot, attempt, at),
        }
    }
    sim.report
}

impl Sim<'_> {
    fn push(&mut self, at: DateTime<Utc>, step: Step) {
        self.sequence += 1;
        self.queue.push(Reverse((at, self.sequence, step)));
    }

    fn row(&mut self, row: Row) {
        if self.report.rows.len() < self.scenario.max_rows {
            self.report.rows.push(row);
        } else {
            self.report.rows_left_off += 1;
        }
    }

    fn simple_row(
        &mut self,
        at: DateTime<Utc>,
        kind: RowKind,
        nominal: DateTime<Utc>,
        detail: String,
    ) {
        self.row(Row {
            at,
            kind,
            nominal: Some(nominal),
            attempt: None,
            end: None,
            outcome: None,
            retry_at: None,
            count: 1,
            detail,
        });
    }

    /// The next tick: at the job's next fire time, if it is in the range and the job still fires.
    fn next_tick(&mut self, not_before: DateTime<Utc>) {
        if !self.planning {
            return;
        }
        match self.job.next_fire() {
            Some(at) if at < self.scenario.to => self.push(at.max(not_before), Step::Tick),
            _ => self.planning = false,
        }
    }

    fn tick(&mut self, now: DateTime<Utc>) {
        if !self.planning {
            return;
        }
        let ranges_before = self.job.state.fire_ranges.clone();
        let planned = plan::plan_tick(&mut self.job, now, now, false);
        if planned.missed > 0 {
            self.missed_rows(now, &ranges_before, planned.missed);
        }
        // Fires past the range (a tick after a downtime that reaches past it) are not planned.
        let room = self
            .scenario
            .max_fires
            .saturating_sub(self.report.totals.fires as usize);
        let pending = &mut self.job.state.pending_fires;
        if pending.iter().any(|f| f.nominal >= self.scenario.to) || pending.len() > room {
            if pending.len() > room {
                self.report.truncated = true;
            }
            pending.retain(|f| f.nominal < self.scenario.to);
            pending.truncate(room);
            self.planning = false;
        }
        let fires: Vec<PendingFire> = pending.clone();
        for fire in &fires {
            self.create_run(fire, now);
        }
        self.report.totals.fires += fires.len() as u64;
        if let Some(last) = fires.last() {
            self.report.planned_through = Some(last.nominal);
        }
        let admitted = plan::take_planned(&mut self.job, &fires, now);
        for fire in &fires {
            let Some(slot) = self.by_id.get(&fire.execution_id).copied() else {
                continue;
            };
            if admitted.contains(&fire.execution_id) {
                self.transition(slot, ExecutionState::Enqueued, now, "due");
                self.start_attempt(slot, now, "started");
            } else {
                self.push(fire.due.max(now), Step::Due(slot));
            }
        }
        if self.report.totals.fires as usize >= self.scenario.max_fires {
            self.planning = false;
            self.report.truncated |= self.job.next_fire().is_some_and(|t| t < self.scenario.to);
        }
        self.next_tick(now);
    }

    /// Rows for the fire times a tick counted as missed: the ranges it added or extended.
    fn missed_rows(&mut self, now: DateTime<Utc>, before: &[crate::ledger::FireRange], count: u64) {
        let schedule = self.job.definition.schedule().cloned();
        let changed: Vec<(DateTime<Utc>, DateTime<Utc>)> = self
            .job
            .state
            .fire_ranges
            .iter()
            .filter(|r| r.reason == crate::ledger::RangeReason::Missed)
            .filter(|r| !before.contains(r))
            .map(|r| {
                // A range that grew: its new times start after its old end.
                let grew = before
                    .iter()
                    .find(|b| b.reason == r.reason && b.first == r.first && b.count < r.count);
                let first = grew
                    .and_then(|b| schedule.as_ref().and_then(|s| s.next_after(b.last)))
                    .unwrap_or(r.first);
                (first, r.last)
            })
            .collect();
        let (first, last) = match (changed.first(), changed.last()) {
            (Some(a), Some(b)) => (a.0, b.1),
            _ => (now, now),
        };
        self.report.totals.missed += count;
        let policy = self.job.definition.catchup().policy;
        self.row(Row {
            at: now,
            kind: RowKind::Missed,
            nominal: Some(first),
            attempt: None,
            end: Some(last),
            outcome: None,
            retry_at: None,
            count,
            detail: format!(
                "{count} fire time(s) missed: older than the catch-up window of {} s, or left out by catch-up policy {policy}",
                self.job.definition.catchup_window().as_secs()
            ),
        });
    }

    fn create_run(&mut self, fire: &PendingFire, now: DateTime<Utc>) {
        let initial = if fire.due > now {
            ExecutionState::Scheduled
        } else {
            ExecutionState::Enqueued
        };
        let Ok(mut execution) = Execution::new(
            fire.execution_id.clone(),
            self.job.job_id().clone(),
            fire.execute_number,
            initial,
            fire.nominal,
            fire.scheduled_by_id.clone(),
            now,
        ) else {
            return;
        };
        execution.run.due = Some(fire.due);
        execution.run.overlap = fire.overlap;
        self.serial += 1;
        let index = match self.free.pop() {
            Some(index) => {
                self.runs[index] = Some(Held {
                    serial: self.serial,
                    execution: Box::new(execution),
                    call: None,
                    row: None,
                });
                index
            }
            None => {
                self.runs.push(Some(Held {
                    serial: self.serial,
                    execution: Box::new(execution),
                    call: None,
                    row: None,
                }));
                self.runs.len() - 1
            }
        };
        self.by_id.insert(
            fire.execution_id.clone(),
            Slot {
                index,
                serial: self.serial,
            },
        );
    }

    fn execution(&mut self, slot: Slot) -> Option<&mut Execution> {
        match self.runs.get_mut(slot.index) {
            Some(Some(held)) if held.serial == slot.serial => Some(&mut held.execution),
            _ => None,
        }
    }

    fn transition(&mut self, slot: Slot, to: ExecutionState, now: DateTime<Utc>, message: &str) {
        if let Some(execution) = self.execution(slot) {
            if can_transition(execution.state(), to) {
                // Checked just above: the transition cannot fail.
                let _ = execution.transition(to, now, message);
            }
        }
    }

    /// Admission at a run's due time: as the engine's dispatch step for a Scheduled or Enqueued
    /// run.
    fn due(&mut self, slot: Slot, now: DateTime<Utc>) {
        // Borrowed beside the job, not cloned: half the runs of a busy job come through here.
        let execution = match self.runs.get(slot.index) {
            Some(Some(held)) if held.serial == slot.serial => &held.execution,
            _ => return,
        };
        if !matches!(
            execution.state(),
            ExecutionState::Scheduled | ExecutionState::Enqueued
        ) {
            return;
        }
        let nominal = execution.scheduled_time;
        let source = RunSource::of(execution);
        let execution_id = execution.execution_id.clone();
        if let Some(missed) = plan::missed_at_admission(&self.job, execution, now, Duration::zero())
        {
            plan::take_missed(&mut self.job, execution);
            let reason = missed.reason(nominal, now);
            self.transition(slot, ExecutionState::Skipped, now, &reason);
            self.report.totals.missed += 1;
            self.row(Row {
                at: now,
                kind: RowKind::Missed,
                nominal: Some(nominal),
                attempt: None,
                end: Some(nominal),
                outcome: None,
                retry_at: None,
                count: 1,
                detail: reason,
            });
            self.finish(slot, now);
            return;
        }
        if let Err(why) = plan::may_start(!self.job.definition.active(), false, source) {
            plan::leave_line(&mut self.job, &execution_id);
            let reason = why.reason(self.job.state.paused_notes.as_deref());
            if let Some(execution) = self.execution(slot) {
                let _ = execution.skip_unstarted(now, &reason);
            }
            self.report.totals.not_started += 1;
            self.simple_row(now, RowKind::NotStarted, nominal, reason);
            self.finish(slot, now);
            return;
        }
        self.transition(slot, ExecutionState::Enqueued, now, "due");
        let admission = match self.runs.get(slot.index) {
            Some(Some(held)) => {
                let policy = plan::policy_of(&self.job, &held.execution);
                (policy, plan::gate(&mut self.job, &held.execution, policy))
            }
            _ => return,
        };
        let (policy, admission) = admission;
        match admission {
            Admission::Start => self.start_attempt(slot, now, "started"),
            Admission::StartAfterStopping { stop, terminate } => {
                let (to, kind, verb) = if terminate {
                    (
                        ExecutionState::Terminated,
                        RowKind::Terminated,
                        "terminated",
                    )
                } else {
                    (ExecutionState::Cancelled, RowKind::Cancelled, "cancelled")
                };
                for other in stop {
                    let Some(other_slot) = self.by_id.get(&other).copied() else {
                        continue;
                    };
                    let Some(stopped) = self.execution(other_slot) else {
                        continue;
                    };
                    let to = if can_transition(stopped.state(), to) {
                        to
                    } else {
                        ExecutionState::Cancelled
                    };
                    let reason =
                        format!("{verb} by overlap policy {policy}: {execution_id} started");
                    let other_nominal = stopped.scheduled_time;
                    let _ = stopped.transition(to, now, reason.clone());
                    // Its call, if one was in flight, ends here: its row says so.
                    let row = match self.runs.get_mut(other_slot.index) {
                        Some(Some(held)) => held.row.take(),
                        _ => None,
                    };
                    if let Some(row) = row.and_then(|i| self.report.rows.get_mut(i)) {
                        row.end = Some(now);
                        row.outcome = Some(verb.to_string());
                        row.detail = reason.clone();
                    }
                    if terminate {
                        self.report.totals.terminated += 1;
                    } else {
                        self.report.totals.cancelled += 1;
                    }
                    self.simple_row(now, kind, other_nominal, reason);
                    self.finish(other_slot, now);
                }
                self.start_attempt(slot, now, "started");
            }
            admission @ (Admission::Skip | Admission::Drop) => {
                let running = self.job.state.running.join(", ");
                let (kind, reason) = if admission == Admission::Skip {
                    self.report.totals.skipped += 1;
                    (
                        RowKind::Skipped,
                        format!("skipped by overlap policy {policy}: {running} still running"),
                    )
                } else {
                    self.report.totals.dropped += 1;
                    (
                        RowKind::Dropped,
                        format!(
                            "dropped: the buffer of overlap policy {policy} is full ({} waiting)",
                            self.job.state.buffered.len()
                        ),
                    )
                };
                self.transition(slot, ExecutionState::Skipped, now, &reason);
                self.simple_row(now, kind, nominal, reason);
                self.finish(slot, now);
            }
            Admission::Buffer => {
                self.report.totals.buffered += 1;
                let running = self.job.state.running.join(", ");
                self.simple_row(
                    now,
                    RowKind::Buffered,
                    nominal,
                    format!("buffered by overlap policy {policy}: {running} still running"),
                );
            }
            // Behind a run due before it: asks again in a second, as the engine's line does.
            Admission::Wait { .. } => self.push(now + Duration::seconds(1), Step::Due(slot)),
        }
    }

    fn retry(&mut self, slot: Slot, now: DateTime<Utc>) {
        let Some(execution) = self.execution(slot) else {
            return;
        };
        if execution.state() != ExecutionState::Failed {
            return;
        }
        let message = format!("retry: attempt {}", execution.attempts() + 1);
        self.start_attempt(slot, now, &message);
    }

    /// Enters Processing for an attempt and makes its call against the synthetic target.
    fn start_attempt(&mut self, slot: Slot, now: DateTime<Utc>, message: &str) {
        let definition = &self.job.definition;
        let timeouts = *definition.timeouts();
        let timeout_seconds = definition.timeout_seconds();
        let Some(execution) = self.execution(slot) else {
            return;
        };
        let first = execution.attempts() == 0;
        if execution
            .transition(ExecutionState::Processing, now, message)
            .is_err()
        {
            return;
        }
        let attempt = execution.attempts();
        let due_at = execution.due_at();
        self.report.totals.attempts += 1;
        if first {
            self.report.totals.runs += 1;
            let deadline = retry::schedule_to_start_deadline(due_at, &timeouts);
            if deadline.is_some_and(|d| now > d) {
                self.store_call(
                    slot,
                    CallResult {
                        outcome: Outcome::Timeout,
                        detail: "scheduleToStart passed before the first attempt",
                    },
                    now,
                );
                self.settle(slot, now, true);
                return;
            }
        }
        let deadline =
            retry::attempt_deadline(now, timeout_seconds).unwrap_or(now + Duration::seconds(60));
        if let Some(execution) = self.execution(slot) {
            execution.run.attempt_deadline = Some(deadline);
            execution.run.retry_at = None;
        }
        // Both draws always, in this order: the answer depends only on the seed.
        let duration = call_duration(&self.scenario.target, &mut self.draws);
        let fails = self.draws.unit() < self.scenario.target.failure_rate;
        let outage = self
            .scenario
            .outages
            .iter()
            .find(|o| o.window.contains(now))
            .map(|o| o.mode);
        let (end, result) = match outage {
            Some(OutageMode::Error) => (
                now,
                CallResult {
                    outcome: Outcome::Transport("target down (simulated outage)".into()),
                    detail: "the target is down (outage)",
                },
            ),
            Some(OutageMode::Timeout) => (
                deadline,
                CallResult {
                    outcome: Outcome::Timeout,
                    detail: "timed out: the target hangs (outage)",
                },
            ),
            None if now + duration > deadline => (
                deadline,
                CallResult {
                    outcome: Outcome::Timeout,
                    detail: "timed out: the call outlasted timeoutSeconds",
                },
            ),
            None if fails => (
                now + duration,
                CallResult {
                    outcome: Outcome::Http { status: 500 },
                    detail: "HTTP 500",
                },
            ),
            None => (
                now + duration,
                CallResult {
                    outcome: Outcome::Http { status: 200 },
                    detail: "HTTP 200",
                },
            ),
        };
        self.store_call(slot, result, now);
        self.push(end, Step::CallEnd { slot, attempt });
    }

    /// Keeps the call's result for its end, and lists the attempt (its row is completed then).
    fn store_call(&mut self, slot: Slot, result: CallResult, started: DateTime<Utc>) {
        let listed = self.report.rows.len() < self.scenario.max_rows;
        let Some(Some(held)) = self.runs.get_mut(slot.index) else {
            return;
        };
        if held.serial != slot.serial {
            return;
        }
        held.call = Some(result);
        held.row = None;
        let (nominal, attempt) = (held.execution.scheduled_time, held.execution.attempts());
        if listed {
            held.row = Some(self.report.rows.len());
        }
        self.row(Row {
            at: started,
            kind: RowKind::Attempt,
            nominal: Some(nominal),
            attempt: Some(attempt),
            end: None,
            outcome: None,
            retry_at: None,
            count: 1,
            detail: String::new(),
        });
    }

    fn call_end(&mut self, slot: Slot, attempt: u32, now: DateTime<Utc>) {
        let Some(execution) = self.execution(slot) else {
            return;
        };
        // Stopped meanwhile (its slot was freed then), or a stale call.
        if execution.state() != ExecutionState::Processing || execution.attempts() != attempt {
            return;
        }
        self.settle(slot, now, false);
    }

    /// [`settle::settle_attempt`] of the attempt's call, then the run's end or its retry; the
    /// attempt's row (listed when it started) completed.
    fn settle(&mut self, slot: Slot, now: DateTime<Utc>, timed_out_before_start: bool) {
        let Some(Some(held)) = self.runs.get_mut(slot.index) else {
            return;
        };
        if held.serial != slot.serial {
            return;
        }
        let Some(CallResult { outcome, detail }) = held.call.take() else {
            return;
        };
        let end = if outcome.verdict() == crate::outcome::Verdict::Succeeded {
            AttemptEnd::Succeeded {
                outcome: outcome.clone(),
                result: None,
                response: Value::Null,
            }
        } else {
            AttemptEnd::Failed {
                outcome: outcome.clone(),
                response: Value::Null,
                detail: detail.to_string(),
            }
        };
        let Ok(settled) = settle::settle_attempt(
            &mut held.execution,
            &self.job.definition,
            &end,
            now,
            timed_out_before_start,
        ) else {
            return;
        };
        let state = held.execution.state();
        let totals = &mut self.report.totals;
        if matches!(outcome, Outcome::Timeout) {
            totals.timeouts += 1;
        }
        let retry_at = match state {
            ExecutionState::Succeeded => {
                totals.succeeded += 1;
                None
            }
            ExecutionState::Failed => {
                totals.failed_attempts += 1;
                totals.retries += 1;
                settled.wake
            }
            _ => {
                totals.failed_attempts += 1;
                totals.failed += 1;
                None
            }
        };
        if let Some(row) = held.row.take().and_then(|i| self.report.rows.get_mut(i)) {
            row.end = Some(now);
            row.retry_at = retry_at;
            row.outcome = Some(match outcome.verdict() {
                crate::outcome::Verdict::Failed { code, .. } => code,
                _ => match &outcome {
                    Outcome::Http { status } => status.to_string(),
                    _ => "succeeded".into(),
                },
            });
            row.detail = held
                .execution
                .events()
                .last()
                .map(|e| e.message.clone())
                .unwrap_or_default();
        }
        match retry_at {
            Some(at) => self.push(at, Step::Retry(slot)),
            None => self.finish(slot, now),
        }
    }

    /// A run that ended: its job's side ([`plan::finish_on_job`]), the buffered runs that take its
    /// slot started, and its place freed.
    fn finish(&mut self, slot: Slot, now: DateTime<Utc>) {
        let Some(Some(Held { execution, .. })) = self.runs.get_mut(slot.index).map(Option::take)
        else {
            return;
        };
        self.free.push(slot.index);
        self.by_id.remove(&execution.execution_id);
        self.report.last_end = Some(self.report.last_end.map_or(now, |t| t.max(now)));
        let was_active = self.job.definition.active();
        let started = plan::finish_on_job(&mut self.job, &execution, now);
        if was_active && !self.job.definition.active() {
            self.report.paused_at = Some(now);
            let notes = self.job.state.paused_notes.clone().unwrap_or_default();
            self.simple_row(now, RowKind::Paused, execution.scheduled_time, notes);
            self.planning = false;
        }
        for id in started {
            if let Some(next) = self.by_id.get(&id).copied() {
                self.start_attempt(next, now, "started");
            }
        }
    }
}

impl Report {
    /// The report as the API answers it (docs/api.md, "Simulating a job").
    pub fn to_json(&self) -> Value {
        let time = |t: &DateTime<Utc>| Value::String(crate::time_serde::format(t));
        let totals = &self.totals;
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let mut map = Map::new();
                map.insert("at".into(), time(&row.at));
                map.insert("kind".into(), json!(row.kind.name()));
                if let Some(nominal) = &row.nominal {
                    map.insert("scheduledTime".into(), time(nominal));
                }
                if let Some(attempt) = row.attempt {
                    map.insert("attempt".into(), json!(attempt));
                }
                if let Some(end) = &row.end {
                    let key = if row.kind == RowKind::Missed {
                        "lastTime"
                    } else {
                        "end"
                    };
                    map.insert(key.into(), time(end));
                }
                if let Some(outcome) = &row.outcome {
                    map.insert("outcome".into(), json!(outcome));
                }
                if let Some(retry_at) = &row.retry_at {
                    map.insert("retryAt".into(), time(retry_at));
                }
                map.insert("count".into(), json!(row.count));
                map.insert("detail".into(), json!(row.detail));
                Value::Object(map)
            })
            .collect();
        json!({
            "totals": {
                "fires": totals.fires,
                "runs": totals.runs,
                "attempts": totals.attempts,
                "succeeded": totals.succeeded,
                "failed": totals.failed,
                "failedAttempts": totals.failed_attempts,
                "timeouts": totals.timeouts,
                "retries": totals.retries,
                "skipped": totals.skipped,
                "buffered": totals.buffered,
                "dropped": totals.dropped,
                "missed": totals.missed,
                "cancelled": totals.cancelled,
                "terminated": totals.terminated,
                "notStarted": totals.not_started,
            },
            "rows": rows,
            "rowsLeftOff": self.rows_left_off,
            "truncated": self.truncated,
            "plannedThrough": self.planned_through.as_ref().map(time),
            "pausedAt": self.paused_at.as_ref().map(time),
            "lastEnd": self.last_end.as_ref().map(time),
        })
    }
}

/// The keys of a simulation request beside the job's definition.
pub const SCENARIO_KEYS: [&str; 6] = [
    "from",
    "to",
    "simulatedTarget",
    "outages",
    "downtime",
    "rows",
];

/// A request to simulate: the job's definition (parsed as for create, created at `from`) and the
/// scenario.
#[derive(Clone, Debug)]
pub struct Request {
    /// The job.
    pub definition: JobDefinition,
    /// What to simulate it against.
    pub scenario: Scenario,
}

/// `key` of `map`, a null read as absent (as every optional field of the API is).
fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

fn field(path: impl Into<String>, message: impl Into<String>) -> FieldError {
    FieldError::new(path, message)
}

/// A time as the API and the CLI take it: RFC 3339, or a UTC time without a zone
/// (`2026-12-24T10:00`, `2026-12-24T10:00:00`, `2026-12-24`).
pub fn parse_time(path: &str, text: &str) -> Result<DateTime<Utc>, FieldError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
            return Ok(t.and_utc());
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        if let Some(t) = d.and_hms_opt(0, 0, 0) {
            return Ok(t.and_utc());
        }
    }
    Err(field(
        path,
        format!("{text:?} is not a time: RFC 3339 (2026-12-24T10:00:00Z) or UTC without a zone (2026-12-24T10:00)"),
    ))
}

fn parse_duration(path: &str, value: &Value) -> Result<Duration, FieldError> {
    let millis = match value {
        Value::String(text) => crate::duration::Duration::parse(text)
            .map_err(|e| field(path, e.to_string()))?
            .as_millis(),
        Value::Number(n) => {
            let secs = n
                .as_f64()
                .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0 * 36_500.0)
                .ok_or_else(|| field(path, "a duration in seconds is 0 or more"))?;
            (secs * 1000.0) as u64
        }
        _ => {
            return Err(field(
                path,
                "a duration: \"2s\", \"1h30m\", \"PT2H\" or seconds",
            ))
        }
    };
    Ok(Duration::milliseconds(
        i64::try_from(millis).unwrap_or(i64::MAX / 2),
    ))
}

fn object<'a>(
    path: &str,
    value: &'a Value,
    known: &[&str],
) -> Result<&'a Map<String, Value>, FieldError> {
    let map = value.as_object().ok_or_else(|| field(path, "an object"))?;
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(field(
            format!("{path}.{key}"),
            format!("unknown field; known: {}", known.join(", ")),
        ));
    }
    Ok(map)
}

/// A window written as `{"start", "length"}` (`path` names it in errors).
fn parse_window(path: &str, map: &Map<String, Value>) -> Result<Window, FieldError> {
    let start = match get(map, "start") {
        Some(Value::String(text)) => parse_time(&format!("{path}.start"), text)?,
        _ => return Err(field(format!("{path}.start"), "required: a time")),
    };
    let length = match get(map, "length") {
        Some(value) => parse_duration(&format!("{path}.length"), value)?,
        None => return Err(field(format!("{path}.length"), "required: a duration")),
    };
    Ok(Window { start, length })
}

/// A window written as the CLI takes it, `START/LENGTH` (`2026-12-24T10:00/2h`).
pub fn parse_window_text(path: &str, text: &str) -> Result<Window, FieldError> {
    let (start, length) = text.rsplit_once('/').ok_or_else(|| {
        field(
            path,
            format!("{text:?} is not START/LENGTH (2026-12-24T10:00/2h)"),
        )
    })?;
    Ok(Window {
        start: parse_time(path, start)?,
        length: parse_duration(path, &Value::String(length.into()))?,
    })
}

fn parse_windows(
    value: Option<&Value>,
    key: &str,
    with_mode: bool,
) -> Result<Vec<Outage>, FieldError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let list = value
        .as_array()
        .ok_or_else(|| field(key, "a list of {start, length} windows"))?;
    if list.len() > MAX_WINDOWS {
        return Err(field(key, format!("at most {MAX_WINDOWS} windows")));
    }
    let known: &[&str] = if with_mode {
        &["start", "length", "mode"]
    } else {
        &["start", "length"]
    };
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let path = format!("{key}[{i}]");
            let map = object(&path, item, known)?;
            let window = parse_window(&path, map)?;
            let mode = match get(map, "mode") {
                None => OutageMode::Error,
                Some(Value::String(m)) if m == "error" => OutageMode::Error,
                Some(Value::String(m)) if m == "timeout" => OutageMode::Timeout,
                Some(_) => return Err(field(format!("{path}.mode"), "\"error\" or \"timeout\"")),
            };
            Ok(Outage { window, mode })
        })
        .collect()
}

fn parse_target(value: Option<&Value>) -> Result<Target, FieldError> {
    let mut target = Target::default();
    let Some(value) = value else {
        return Ok(target);
    };
    let map = object(
        "simulatedTarget",
        value,
        &["p50", "p99", "failureRate", "seed"],
    )?;
    if let Some(p50) = get(map, "p50") {
        target.p50 = parse_duration("simulatedTarget.p50", p50)?;
        target.p99 = target.p50;
    }
    if let Some(p99) = get(map, "p99") {
        target.p99 = parse_duration("simulatedTarget.p99", p99)?;
    }
    if target.p99 < target.p50 {
        return Err(field("simulatedTarget.p99", "at least simulatedTarget.p50"));
    }
    if target.p50 > MAX_CALL || target.p99 > MAX_CALL {
        return Err(field("simulatedTarget.p99", "at most 1d"));
    }
    if let Some(rate) = get(map, "failureRate") {
        target.failure_rate = rate
            .as_f64()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| field("simulatedTarget.failureRate", "a number from 0 to 1"))?;
    }
    if let Some(seed) = get(map, "seed") {
        target.seed = seed
            .as_u64()
            .ok_or_else(|| field("simulatedTarget.seed", "a whole number of 0 or more"))?;
    }
    Ok(target)
}

impl Request {
    /// Parses a simulation request: the job's definition as for create (its `jobId` optional),
    /// plus `from`, `to` (at most [`MAX_RANGE_DAYS`] apart), `simulatedTarget` (named so beside the
    /// job's own `target`), `outages`, `downtime` and `rows`. Errors name the field. `max_fires` is the caller's cap on fires planned.
    pub fn parse(body: &Value, max_fires: usize) -> Result<Request, FieldError> {
        let map = body.as_object().ok_or_else(|| field("", "a JSON object"))?;
        let time = |key: &str| match get(map, key) {
            Some(Value::String(text)) => parse_time(key, text),
            Some(_) => Err(field(key, "a time (RFC 3339)")),
            None => Err(field(key, "required: a time (RFC 3339)")),
        };
        let from = time("from")?;
        let to = time("to")?;
        if to <= from {
            return Err(field("to", "after from"));
        }
        if to - from > Duration::days(MAX_RANGE_DAYS) {
            return Err(field(
                "to",
                format!("at most {MAX_RANGE_DAYS} days after from"),
            ));
        }
        let target = parse_target(get(map, "simulatedTarget"))?;
        let outages = parse_windows(get(map, "outages"), "outages", true)?;
        let downtime = parse_windows(get(map, "downtime"), "downtime", false)?
            .into_iter()
            .map(|o| o.window)
            .collect();
        let max_rows = match get(map, "rows") {
            None => DEFAULT_ROWS,
            Some(value) => value
                .as_u64()
                .filter(|n| *n <= MAX_ROWS as u64)
                .map(|n| n as usize)
                .ok_or_else(|| field("rows", format!("a whole number from 0 to {MAX_ROWS}")))?,
        };
        let mut job = map.clone();
        for key in SCENARIO_KEYS {
            job.remove(key);
        }
        let job_id = match get(&job, "jobId") {
            Some(Value::String(id)) => {
                crate::job::JobId::parse(id).map_err(|e| e.under("jobId"))?
            }
            Some(_) => return Err(field("jobId", "a job id")),
            None => crate::job::JobId::parse("simulated").map_err(|e| e.under("jobId"))?,
        };
        let definition = JobDefinition::parse(&job_id, &Value::Object(job), from)?;
        Ok(Request {
            definition,
            scenario: Scenario {
                from,
                to,
                target,
                outages,
                downtime,
                max_fires: max_fires.min(MAX_FIRES),
                max_rows,
            },
        })
    }

    /// Runs the simulation.
    pub fn run(&self) -> Report {
        simulate(&self.definition, &self.scenario)
    }
}

#[cfg(test)]
mod tests;
