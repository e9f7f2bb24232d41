//! The tick planner and the concurrency gate: pure functions from a job's state and a time to the
//! fires to start and the slots they take.
//!
//! **Planning.** A tick looks at a job whose wake-up is due and asks [`plan_tick`] which
//! nominal fire times fall before the tick's horizon. Each becomes a [`PendingFire`] with its
//! execution id and execute number reserved *in the job's state*, so the write that advances the
//! schedule also records what must be created. The tick then creates the executions; if it dies in
//! between, the next tick finds the fires still pending and creates them (creation is idempotent by
//! execution id), so no fire is lost and none runs twice. Fires older than the catch-up window are
//! counted as missed instead (Temporal's catch-up window), and `remainingActions` stops scheduled
//! fires when it reaches zero. Backfills ([`plan_backfills`]) become pending fires the same way, run
//! now and exempt from the window.
//!
//! **Admission.** When an execution is about to start, [`admit`] decides against the job's running
//! set and the overlap policy (docs/engine.md): start, skip, wait in the buffer, or stop the others first.
//! [`release`] frees a slot when a run ends and hands it to the oldest buffered execution. Both
//! are idempotent per execution id, because a redelivered message asks again.

use chrono::{DateTime, Duration, Utc};

use crate::execution::{
    execution_id_for_fire, execution_id_for_rerun, nominal_of_fire_id, run_of_fire_id,
    ExecutionState,
};
use crate::job::{BackfillMode, CatchupPolicy, Job, JobId, OverlapPolicy, PendingFire, When};
use crate::ledger::{self, RangeReason};
use crate::source::RunSource;
use crate::spec::FireTime;

/// The most fires one tick plans for one job; the next tick continues where it stopped.
pub const MAX_FIRES_PER_TICK: usize = 1000;

/// The most missed fire times counted one by one; past it the schedule jumps to the catch-up
/// window and the count is a lower bound. A year-long outage of an every-second job would
/// otherwise cost 31 million evaluations in one tick.
pub const MAX_MISSED_COUNTED: u64 = 100_000;

/// The most executions a job keeps buffered (docs/engine.md's BufferAll limit); more are dropped and
/// counted in `bufferDropped`.
pub const MAX_BUFFERED: usize = 1000;

/// The most fires one backfill expands into (the API refuses larger ranges).
pub const MAX_BACKFILL_FIRES: usize = 10_000;

/// The most runs of one job that are planned and not yet created, wait for admission, wait in its
/// buffer or run, before a backfill plans more: backfills are planned window by window as their
/// runs finish, so a job holds a few hundred of them at a time (in its stored state and in
/// memory) however large the backfill, and other jobs keep their time while it drains. Each run
/// in dispatch holds a copy of its job, whose state lists the window's runs, so memory grows with
/// the square of the window: 64 kept a 100,000-run backfill under 70 MB (128 took 150 MB) and
/// still drained it at about 1,800 runs a second (docs/performance.md).
pub const BACKFILL_WINDOW: usize = 64;

/// What [`plan_tick`] decided, beyond the fires it appended to `pending_fires`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickPlan {
    /// Fires newly planned by this call (also appended to the job's `pending_fires`).
    pub planned: usize,
    /// Fire times counted as missed (older than the catch-up window).
    pub missed: u64,
}

/// How late a scheduled fire may be when the planner or the gate reaches it and still count as on
/// time. A fire reached later than this is being caught up (after an outage, or ticks that fell
/// behind), and the job's catch-up policy decides whether it runs. It is this, or the tick's
/// look-ahead when longer (on AWS the tick runs once a minute and plans 80 s ahead): a fire within
/// a tick's reach is never late.
pub const ON_TIME_GRACE: Duration = Duration::seconds(10);

/// [`ON_TIME_GRACE`], or the tick's `look_ahead` when that is longer.
pub fn on_time_grace(look_ahead: Duration) -> Duration {
    look_ahead.max(ON_TIME_GRACE)
}

/// Plans the scheduled fires of `job` whose nominal time is at or before `horizon`: every fire the
/// tick must enqueue now so that it starts on time before the next tick. `now` decides what is
/// missed. Paused jobs and debug mode plan nothing. Mutates the job's state: the last scheduled
/// time, remaining actions, the missed counter, execute numbers and `pending_fires`. In debug mode
/// the fires due by `now` are passed over and recorded as such ([`RangeReason::DebugMode`]).
///
/// **Catch-up.** Of the fires already due at `now`, those older than the catch-up window are
/// missed. The others run, except that when some are late (older than [`on_time_grace`] of the
/// look-ahead `horizon - now`) the job's catch-up policy caps how many run: the newest
/// [`Catchup::cap`](crate::job::Catchup::cap) of them (none for `skip`, one for `latest`,
/// `maxRuns` for `all`), fires that are on time always among them. The late fires it leaves out
/// are counted as missed too.
pub fn plan_tick(
    job: &mut Job,
    now: DateTime<Utc>,
    horizon: DateTime<Utc>,
    debug_mode: bool,
) -> TickPlan {
    let mut plan = TickPlan::default();
    if !job.definition.active() {
        return plan;
    }
    let When::Scheduled(schedule) = job.definition.when() else {
        return plan;
    };
    let job_id = job.definition.job_id().clone();
    if debug_mode {
        pass_in_debug_mode(job, now);
        return plan;
    }
    let oldest_runnable = oldest_runnable(job, now);
    let late_before = now - on_time_grace(horizon - now);
    let cap = job.definition.catchup().cap();
    let state = &mut job.state;
    let mut after = state
        .last_scheduled_time
        .unwrap_or(job.created_at - Duration::seconds(1));
    // The missed fires of a tick are the first of the times it walks (older than the window,
    // then the oldest late ones the policy leaves out): each follows the one before, starting
    // after the last time handled, so their ranges grow without evaluating the schedule again.
    let mut missed_previous = after;
    // What this tick may plan: its limit, and no more than the remaining actions.
    let limit = MAX_FIRES_PER_TICK.min(
        state
            .remaining_actions
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
    );
    if limit == 0 {
        state.last_scheduled_time = Some(after);
        return plan;
    }
    // The fires already due, oldest first: those that may run. Under a cap, the oldest late ones
    // leave as newer ones come (they are missed), so it holds at most the cap and the fires on
    // time; without one it stops at what one tick plans, as the loop below does.
    let mut due: std::collections::VecDeque<FireTime> = std::collections::VecDeque::new();
    let (mut window_missed, mut policy_missed) = (0u64, 0u64);
    let mut last_dropped = None;
    let mut outrun = false;
    loop {
        if cap.is_none() && due.len() >= limit {
            break;
        }
        let Some(fire) = schedule.fire_after(after, job_id.as_str()) else {
            break;
        };
        if fire.nominal > now {
            break;
        }
        after = fire.nominal;
        if fire.nominal < oldest_runnable {
            window_missed += 1;
            ledger::record_after(
                &mut state.fire_ranges,
                RangeReason::Missed,
                fire.nominal,
                missed_previous,
            );
            missed_previous = fire.nominal;
            if window_missed >= MAX_MISSED_COUNTED {
                after = after.max(oldest_runnable - Duration::seconds(1));
                // The times jumped over are missed too, uncounted: the range reaches the jump.
                if let Some(range) = state.fire_ranges.last_mut() {
                    range.last = range.last.max(after);
                    missed_previous = range.last;
                }
            }
            continue;
        }
        due.push_back(fire);
        let Some(cap) = cap else { continue };
        while due.len() > cap && due.front().is_some_and(|f| f.nominal < late_before) {
            last_dropped = due.pop_front().map(|f| f.nominal);
            if let Some(time) = last_dropped {
                ledger::record_after(
                    &mut state.fire_ranges,
                    RangeReason::Missed,
                    time,
                    missed_previous,
                );
                missed_previous = time;
            }
            policy_missed += 1;
        }
        if policy_missed >= MAX_MISSED_COUNTED {
            // A burst too long for one tick: what is left of it (and the fires kept so far,
            // which are found again) waits for the next tick.
            outrun = true;
            break;
        }
    }
    plan.missed = window_missed + policy_missed;
    state.missed_catchup_window += plan.missed;
    if outrun {
        state.last_scheduled_time = last_dropped.or(Some(after));
        return plan;
    }
    let mut full = false;
    for fire in due {
        if plan.planned >= limit {
            full = true;
            break;
        }
        after = fire.nominal;
        push_fire(state, &job_id, &fire);
        plan.planned += 1;
    }
    while !full && plan.planned < limit {
        let Some(fire) = schedule.fire_after(after, job_id.as_str()) else {
            break;
        };
        if fire.nominal > horizon {
            break;
        }
        after = fire.nominal;
        push_fire(state, &job_id, &fire);
        plan.planned += 1;
    }
    state.last_scheduled_time = Some(after);
    plan
}

/// Debug mode: the fires due by `now` do not run and are not run later (as a pause's are not);
/// they are recorded as [`RangeReason::DebugMode`] ranges for the ledger, and the job's last
/// scheduled time moves past them. Past [`MAX_MISSED_COUNTED`] at once the walk jumps to `now`,
/// the range reaching the jump, as a long outage's missed fires do.
fn pass_in_debug_mode(job: &mut Job, now: DateTime<Utc>) {
    let When::Scheduled(schedule) = job.definition.when() else {
        return;
    };
    let job_id = job.definition.job_id().as_str();
    let state = &mut job.state;
    let mut after = state
        .last_scheduled_time
        .unwrap_or(job.created_at - Duration::seconds(1));
    let mut counted = 0u64;
    let mut previous = after;
    while let Some(fire) = schedule.fire_after(after, job_id) {
        if fire.nominal > now {
            break;
        }
        ledger::record_after(
            &mut state.fire_ranges,
            RangeReason::DebugMode,
            fire.nominal,
            previous,
        );
        previous = fire.nominal;
        after = fire.nominal;
        counted += 1;
        if counted >= MAX_MISSED_COUNTED {
            after = after.max(now);
            if let Some(range) = state.fire_ranges.last_mut() {
                range.last = range.last.max(after);
            }
            break;
        }
    }
    if counted > 0 {
        state.last_scheduled_time = Some(after);
    }
}

/// Records in the job's ranges ([`crate::job::JobState::fire_ranges`]) a fire that reached the
/// concurrency gate and did not run: dropped from a full buffer, or missed its chance
/// ([`missed_at_admission`]). Only scheduled fires: a trigger's or a backfill's time is not one
/// of the schedule's, and its skipped execution says what became of it.
pub fn record_not_run(
    job: &mut Job,
    scheduled_by_id: &str,
    nominal: DateTime<Utc>,
    reason: RangeReason,
) {
    if scheduled_by_id != job.definition.job_id().as_str() {
        return;
    }
    let When::Scheduled(schedule) = job.definition.when() else {
        return;
    };
    let job_id = job.definition.job_id().as_str();
    ledger::record(&mut job.state.fire_ranges, reason, &[nominal], |after| {
        schedule.fire_after(after, job_id).map(|f| f.nominal)
    });
}

/// Reserves an execute number (and a remaining action) for a scheduled fire and records it as
/// planned.
fn push_fire(state: &mut crate::job::JobState, job_id: &JobId, fire: &FireTime) {
    let execute_number = state.next_execute_number;
    state.next_execute_number += 1;
    if let Some(remaining) = state.remaining_actions.as_mut() {
        *remaining = remaining.saturating_sub(1);
    }
    state.pending_fires.push(PendingFire {
        execution_id: execution_id_for_fire(job_id, state.incarnation, fire.nominal),
        nominal: fire.nominal,
        due: fire.due,
        execute_number,
        scheduled_by_id: job_id.to_string(),
        overlap: None,
    });
}

/// The oldest nominal time a scheduled fire of `job` may have and still run at `now`: an older
/// one missed the catch-up window. The tick applies it when it plans fires, and dispatch again
/// when a fire reaches it (a fire planned just before an outage is as late as one planned after).
pub fn oldest_runnable(job: &Job, now: DateTime<Utc>) -> DateTime<Utc> {
    let window = Duration::milliseconds(
        i64::try_from(job.definition.catchup_window().as_millis()).unwrap_or(i64::MAX / 2),
    );
    now.checked_sub_signed(window)
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Why a scheduled fire that reached the concurrency gate does not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missed {
    /// Its nominal time is older than the catch-up window.
    Window {
        /// The window.
        window: crate::duration::Duration,
    },
    /// It is late, and the catch-up policy runs only newer fires that are due too.
    Policy {
        /// The policy.
        policy: CatchupPolicy,
        /// How many newer scheduled fires of the job are due and run.
        newer: usize,
    },
}

impl Missed {
    /// The reason, for the run's log.
    pub fn reason(&self, nominal: DateTime<Utc>, now: DateTime<Utc>) -> String {
        let late = (now - nominal).num_seconds();
        let due = nominal.to_rfc3339();
        match self {
            Missed::Window { window } => format!(
                "missed the catch-up window: due {due}, reached dispatch {late} s later (window {} s)",
                window.as_millis() / 1000
            ),
            Missed::Policy {
                policy: CatchupPolicy::Skip,
                ..
            } => format!(
                "missed: due {due}, reached dispatch {late} s later, and catch-up policy skip runs no late fire"
            ),
            Missed::Policy { policy, newer } => format!(
                "missed: due {due}, reached dispatch {late} s later, and catch-up policy {policy} runs the newest due fires ({newer} newer due)"
            ),
        }
    }
}

/// Whether a scheduled fire that reached the gate at `now` misses its chance to run: the
/// planner's catch-up rule ([`plan_tick`]) applied again at admission, since a fire planned just
/// before an outage reaches the gate as late as the fires planned after it. Older than the
/// window, it is missed; late (see [`on_time_grace`] of the tick's `look_ahead`), it is missed
/// when its job's catch-up policy runs fewer fires than the number of newer scheduled fires of
/// the job due by `now` (planned, in line, buffered or running: those that run). Triggers and backfills are exempt, and so is a run
/// that already holds a slot or waits in the buffer (it was admitted in time).
pub fn missed_at_admission(
    job: &Job,
    execution: &crate::execution::Execution,
    now: DateTime<Utc>,
    look_ahead: Duration,
) -> Option<Missed> {
    let state = &job.state;
    let id = execution.execution_id.as_str();
    let scheduled = execution.scheduled_by_id == job.job_id().as_str();
    if !scheduled || state.running.iter().any(|r| r == id) || state.buffered.iter().any(|b| b == id)
    {
        return None;
    }
    let nominal = execution.scheduled_time;
    if nominal < oldest_runnable(job, now) {
        return Some(Missed::Window {
            window: job.definition.catchup_window(),
        });
    }
    if nominal >= now - on_time_grace(look_ahead) {
        return None;
    }
    let catchup = job.definition.catchup();
    let cap = catchup.cap()?;
    // Newer scheduled fires due by now, wherever they are: planned, in line, admitted.
    let job_id = job.job_id();
    let newer_due = |other: &str| {
        other != id
            && nominal_of_fire_id(job_id, state.incarnation, other)
                .is_some_and(|n| n > nominal && n <= now)
    };
    let newer: std::collections::BTreeSet<&str> = state
        .pending_fires
        .iter()
        .map(|f| f.execution_id.as_str())
        .chain(state.waiting.iter().map(|w| w.execution_id.as_str()))
        .chain(state.running.iter().map(String::as_str))
        .chain(state.buffered.iter().map(String::as_str))
        .filter(|other| newer_due(other))
        .collect();
    (newer.len() >= cap).then_some(Missed::Policy {
        policy: catchup.policy,
        newer: newer.len(),
    })
}

/// What ran of one fire time, as the store holds it: what a backfill's mode decides on, and the
/// number its next run of the time takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunsOfTime {
    /// The highest `k` of the time's re-runs (`{fire id}~r{k}`,
    /// [`execution_id_for_rerun`]) that exist; 0 for none.
    pub reruns: u32,
    /// The state of its latest run: the highest re-run, else its scheduled run; `None` when the
    /// time never ran.
    pub latest: Option<ExecutionState>,
}

impl RunsOfTime {
    /// Whether a time whose runs are these is run again by a backfill in `mode`.
    pub fn selected_by(&self, mode: BackfillMode) -> bool {
        match mode {
            BackfillMode::All => true,
            BackfillMode::Missing => self.latest.is_none(),
            BackfillMode::Failed => self.latest == Some(ExecutionState::Terminated),
        }
    }
}

/// What [`plan_backfills`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackfillPlan {
    /// Fires planned (appended to the job's `pending_fires`).
    pub planned: usize,
    /// Times whose runs the planner must know before it goes on: it stopped at the window that
    /// holds them. The caller reads them and plans again.
    pub unknown: Vec<DateTime<Utc>>,
}

/// Turns waiting backfills into pending fires due `now` (exempt from the catch-up window and from
/// `remainingActions`), oldest backfill first and in the order of its times (newest first when
/// `reverse`): at most `most` of them, and only while the job has fewer than [`BACKFILL_WINDOW`]
/// runs planned, waiting, buffered or running. A backfill that is not done records how far it got
/// and goes on at a later tick (or when its runs finish: [`backfill_has_room`]).
///
/// Each time of a window runs as its time's next re-run, `{fire id}~r{k}`, and only when the
/// backfill's mode selects it ([`RunsOfTime::selected_by`]): `runs` says what ran of a time (runs
/// planned and not yet created count too). The planner stops at the first window with a time
/// `runs` does not know and returns those times; what it planned before stands.
pub fn plan_backfills(
    job: &mut Job,
    now: DateTime<Utc>,
    most: usize,
    runs: &dyn Fn(DateTime<Utc>) -> Option<RunsOfTime>,
) -> BackfillPlan {
    let mut plan = BackfillPlan::default();
    let When::Scheduled(schedule) = job.definition.when() else {
        job.state.pending_backfills.clear();
        return plan;
    };
    let job_id = job.definition.job_id().clone();
    let state = &mut job.state;
    let mut room = backfill_room(state).min(most);
    while room > 0 && !state.pending_backfills.is_empty() {
        let backfill = state.pending_backfills[0].clone();
        let (times, next) = backfill_window(schedule, &backfill, room);
        let unknown: Vec<DateTime<Utc>> = times
            .iter()
            .copied()
            .filter(|t| runs(*t).is_none())
            .collect();
        if !unknown.is_empty() {
            plan.unknown = unknown;
            break;
        }
        let tag = backfill
            .requested_at
            .format("%Y%m%dT%H%M%S%3fZ")
            .to_string();
        for nominal in times {
            let of_time = with_planned(state, &job_id, nominal, runs(nominal).unwrap_or_default());
            if !of_time.selected_by(backfill.mode) {
                continue;
            }
            let execute_number = state.next_execute_number;
            state.next_execute_number += 1;
            state.pending_fires.push(PendingFire {
                // The time's next run: every run of a time is found by id, so a later backfill
                // in mode missing or failed sees this one, while a redelivered request still
                // creates each run once (the id is recorded here, with the job).
                execution_id: execution_id_for_rerun(
                    &job_id,
                    state.incarnation,
                    nominal,
                    of_time.reruns.saturating_add(1),
                ),
                nominal,
                due: now,
                execute_number,
                scheduled_by_id: format!("backfill:{tag}"),
                // Backfills run every time in the range: in parallel unless told to go in order.
                overlap: Some(backfill.overlap.unwrap_or(OverlapPolicy::AllowAll)),
            });
            room -= 1;
            plan.planned += 1;
        }
        match next {
            Some(through) => state.pending_backfills[0].planned_through = Some(through),
            None => {
                state.pending_backfills.remove(0);
            }
        }
    }
    plan
}

/// What ran of the time `nominal` (`stored`, as the store holds it), with the runs of it the job
/// has planned and not yet created: such a run is its latest, and not over.
pub fn with_planned(
    state: &crate::job::JobState,
    job_id: &JobId,
    nominal: DateTime<Utc>,
    stored: RunsOfTime,
) -> RunsOfTime {
    let mut of_time = stored;
    for fire in &state.pending_fires {
        if let Some((t, k)) = run_of_fire_id(job_id, state.incarnation, &fire.execution_id) {
            if t == nominal {
                of_time.reruns = of_time.reruns.max(k);
                of_time.latest = Some(ExecutionState::Scheduled);
            }
        }
    }
    of_time
}

/// The next times of `backfill`, at most `room` of them in its order, and where it goes on after
/// them (`None`: they are its last). Forward, it resumes after the last time planned; in reverse,
/// before the earliest, found by walking the range from its start (a range holds at most
/// [`MAX_BACKFILL_FIRES`] times when requested; should the schedule have changed to hold more, the
/// walk stops there).
fn backfill_window(
    schedule: &crate::spec::Schedule,
    backfill: &crate::job::Backfill,
    room: usize,
) -> (Vec<DateTime<Utc>>, Option<DateTime<Utc>>) {
    let (start, end) = (backfill.start_time, backfill.end_time);
    if !backfill.reverse {
        let from = backfill
            .planned_through
            .unwrap_or(start - Duration::seconds(1));
        let found = schedule.preview(from, room);
        // Fewer times than asked for: the schedule has no more. Else it resumes after the last.
        let resume_after = found.last().copied().filter(|_| found.len() == room);
        let times = found
            .into_iter()
            .skip_while(|t| *t < start)
            .take_while(|t| *t <= end)
            .collect();
        return (times, resume_after.filter(|last| *last < end));
    }
    let mut window = std::collections::VecDeque::with_capacity(room + 1);
    let mut count = 0;
    let mut after = start - Duration::seconds(1);
    while count < MAX_BACKFILL_FIRES {
        let Some(t) = schedule.next_after(after) else {
            break;
        };
        if t > end || backfill.planned_through.is_some_and(|bound| t >= bound) {
            break;
        }
        after = t;
        if t < start {
            continue;
        }
        count += 1;
        window.push_back(t);
        if window.len() > room {
            window.pop_front();
        }
    }
    let times: Vec<DateTime<Utc>> = window.into_iter().rev().collect();
    let next = (count > room).then(|| times.last().copied()).flatten();
    (times, next)
}

/// How many more backfill fires the job's window holds.
fn backfill_room(state: &crate::job::JobState) -> usize {
    let outstanding = state.pending_fires.len()
        + state.waiting.len()
        + state.buffered.len()
        + state.running.len();
    BACKFILL_WINDOW.saturating_sub(outstanding)
}

/// Whether a backfill waits to be planned and the job's window has room for at least `batch` of
/// its fires: the engine then plans it at once instead of at the next tick, so a backfill drains
/// at the speed of its runs rather than a window per tick.
pub fn backfill_has_room(job: &Job, batch: usize) -> bool {
    !job.state.pending_backfills.is_empty() && backfill_room(&job.state) >= batch
}

/// Takes the created fires `done` out of the job's planned fires and lines up those still
/// there ([`line_up`]): what a planner writes once it has sent their messages. A fire dispatch
/// already decided on meanwhile ([`admit`] or [`release`] took it out of the planned fires) is
/// not lined up again: its run may have ended already, and lined up and admitted now it would
/// hold the job's slot for good. Returns the ids admitted.
pub fn take_planned(job: &mut Job, done: &[PendingFire], now: DateTime<Utc>) -> Vec<String> {
    let state = &mut job.state;
    let still: Vec<PendingFire> = done
        .iter()
        .filter(|d| {
            state
                .pending_fires
                .iter()
                .any(|f| f.execution_id == d.execution_id)
        })
        .cloned()
        .collect();
    state
        .pending_fires
        .retain(|fire| !done.iter().any(|d| d.execution_id == fire.execution_id));
    line_up(job, &still, now)
}

/// Puts the runs of newly created `fires` in their job's line, and admits at once, in line order,
/// those already due at `now` that simply start ([`Admission::Start`]: no wait, skip, buffer or
/// stop). The write that creates them then takes their slots too, and their dispatch writes only
/// the execution: a backfill window's runs do not race each other for the job. The first that
/// would not simply start stays in line with those behind it, for dispatch to admit as before.
/// Fires already holding a slot or a buffer place (a dispatch got there first) are left as they
/// are. Returns the ids admitted.
pub fn line_up(job: &mut Job, fires: &[PendingFire], now: DateTime<Utc>) -> Vec<String> {
    let state = &mut job.state;
    let fresh = |id: &str, state: &crate::job::JobState| {
        !state.running.iter().any(|r| r == id) && !state.buffered.iter().any(|b| b == id)
    };
    for fire in fires {
        if fresh(&fire.execution_id, state) {
            state.wait_in_line(&fire.execution_id, fire.due);
        }
    }
    let due: Vec<(String, Option<OverlapPolicy>)> = state
        .waiting
        .iter()
        .filter(|w| w.due <= now)
        .filter_map(|w| {
            fires
                .iter()
                .find(|f| f.execution_id == w.execution_id)
                .map(|f| (f.execution_id.clone(), f.overlap))
        })
        .collect();
    let mut admitted = Vec::new();
    for (id, overlap) in due {
        let policy = overlap.unwrap_or_else(|| job.definition.overlap());
        let before = job.state.clone();
        if admit(job, &id, policy) != Admission::Start {
            job.state = before;
            break;
        }
        admitted.push(id);
    }
    admitted
}

/// The decision for an execution about to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Start it: it holds a slot now.
    Start,
    /// Start it after cancelling (`terminate: false`) or terminating these running executions,
    /// whose slots it has taken.
    StartAfterStopping {
        /// The executions to stop.
        stop: Vec<String>,
        /// Terminate rather than cancel.
        terminate: bool,
    },
    /// Don't run it (`Skip`): it becomes `Skipped` and is counted in `overlapSkipped`.
    Skip,
    /// Keep it waiting until a slot frees.
    Buffer,
    /// The buffer is full: it becomes `Skipped` and is counted in `bufferDropped`.
    Drop,
    /// Not yet: `behind`, due before it, still waits for admission. Nothing changed; ask again
    /// once `behind` is through the gate.
    Wait {
        /// The first execution in line.
        behind: String,
    },
}

/// Why a run not yet started does not start ([`may_start`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotStarted {
    /// Its job is paused.
    Paused,
    /// The server is in debug mode, which stops automatic runs.
    DebugMode,
}

impl NotStarted {
    /// The reason the run ends `Skipped` with (its `error`, which the ledger reads back): starts
    /// with `paused` or `debug mode`. `notes` are the pause's.
    pub fn reason(self, notes: Option<&str>) -> String {
        match (self, notes) {
            (NotStarted::Paused, Some(notes)) => {
                format!("paused: its job was paused before it started ({notes})")
            }
            (NotStarted::Paused, None) => "paused: its job was paused before it started".into(),
            (NotStarted::DebugMode, _) => "debug mode: the server runs no scheduled fire".into(),
        }
    }
}

/// Whether a run that has not started yet (not yet called) may start now: the one decision the
/// engine asks at admission, at admission ahead of the fire time, and once more before the call
/// of a run admitted ahead. A paused job's scheduled fires do not start, nor do the runs the debug
/// mode in force stops; manual triggers and backfills always may start on a paused job (Temporal's
/// rule: a paused schedule still takes the actions someone asks for). Runs already in their call
/// are not asked again: a pause lets them finish. `debug_stops` is what
/// [`debug_mode_stops`](crate::debug_mode::debug_mode_stops) answers for the run under the debug
/// mode in force: a mode that stops the run stops it whatever its source (scheduled fires under
/// `schedules`, programs' triggers under `triggers`).
pub fn may_start(paused: bool, debug_stops: bool, source: RunSource) -> Result<(), NotStarted> {
    if debug_stops {
        return Err(NotStarted::DebugMode);
    }
    if paused && !source.is_request() {
        return Err(NotStarted::Paused);
    }
    Ok(())
}

/// How many executions of `job` may run at once under `policy`: the job's `maxConcurrency`
/// (docs/api.md's default of 1, unbounded for a job whose own policy is AllowAll), except that an
/// AllowAll override on a job of another policy (a backfill's default) runs unbounded: the job's
/// limit of 1 is then only the default that came with its own policy.
pub fn concurrency_limit(job: &Job, policy: OverlapPolicy) -> usize {
    if policy == OverlapPolicy::AllowAll && job.definition.overlap() != OverlapPolicy::AllowAll {
        return usize::MAX;
    }
    match job.definition.max_concurrency() {
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX).max(1),
        None => usize::MAX,
    }
}

/// Decides whether `execution_id` may start now under `policy` (the job's, or the override of its
/// trigger or backfill), updating the job's running set, buffer and counters. Asking again for an
/// execution that already holds a slot or waits in the buffer answers the same without counting twice.
///
/// Runs are admitted in order per job: while a run due earlier (or due at the same time and
/// created earlier) waits in [`JobState::waiting`](crate::job::JobState::waiting) or in the
/// planned fires, the answer is [`Admission::Wait`] and nothing changes. Any other answer takes
/// the run out of the line.
pub fn admit(job: &mut Job, execution_id: &str, policy: OverlapPolicy) -> Admission {
    let limit = concurrency_limit(job, policy);
    let state = &mut job.state;
    if state.running.iter().any(|id| id == execution_id) {
        return Admission::Start;
    }
    if let Some(behind) = first_in_line_before(state, execution_id, limit) {
        return Admission::Wait { behind };
    }
    state.waiting.retain(|w| w.execution_id != execution_id);
    // Decided on: no longer a planned fire for a planner to line up (see `take_planned`).
    state
        .pending_fires
        .retain(|f| f.execution_id != execution_id);
    let buffered_at = state.buffered.iter().position(|id| id == execution_id);
    // Buffered runs start in order: a new run waits behind them even when a slot is free.
    let first_in_line = match buffered_at {
        Some(i) => i == 0,
        None => state.buffered.is_empty(),
    };
    if state.running.len() < limit && first_in_line {
        if let Some(i) = buffered_at {
            state.buffered.remove(i);
        }
        state.running.push(execution_id.to_string());
        state.action_count += 1;
        state.buffer_size = state.buffered.len() as u64;
        return Admission::Start;
    }
    if buffered_at.is_some() {
        return Admission::Buffer;
    }
    let admission = match policy {
        OverlapPolicy::Skip => {
            state.overlap_skipped += 1;
            Admission::Skip
        }
        OverlapPolicy::BufferOne if state.buffered.is_empty() => {
            state.buffered.push(execution_id.to_string());
            Admission::Buffer
        }
        OverlapPolicy::BufferOne => {
            state.buffer_dropped += 1;
            Admission::Drop
        }
        OverlapPolicy::BufferAll | OverlapPolicy::AllowAll => {
            if state.buffered.len() < MAX_BUFFERED {
                state.buffered.push(execution_id.to_string());
                Admission::Buffer
            } else {
                state.buffer_dropped += 1;
                Admission::Drop
            }
        }
        OverlapPolicy::CancelOther | OverlapPolicy::TerminateOther => {
            // Stop the oldest runs, enough to make room for this one.
            let excess = state.running.len() + 1 - limit.min(state.running.len() + 1);
            let stop: Vec<String> = state.running.drain(..excess).collect();
            state.running.push(execution_id.to_string());
            state.action_count += 1;
            Admission::StartAfterStopping {
                stop,
                terminate: policy == OverlapPolicy::TerminateOther,
            }
        }
    };
    state.buffer_size = state.buffered.len() as u64;
    admission
}

/// The run that must be admitted before `execution_id`, if any: the first in the job's line when
/// that is not `execution_id`, or a planned fire not yet created that is due before it. Order
/// matters only when the runs ahead could take the slots this one needs: with room for all of
/// them and no buffer (always, for an unbounded `AllowAll`), the runs start whatever their order,
/// and this one need not wait. A run not in the line (created before runs were lined up) waits
/// for nobody.
fn first_in_line_before(
    state: &crate::job::JobState,
    execution_id: &str,
    limit: usize,
) -> Option<String> {
    let position = state
        .waiting
        .iter()
        .position(|w| w.execution_id == execution_id)?;
    let due = state.waiting[position].due;
    let earlier_fires = || {
        state
            .pending_fires
            .iter()
            .filter(move |fire| fire.due < due && fire.execution_id != execution_id)
    };
    let earlier_fire = earlier_fires().min_by_key(|fire| fire.due);
    let ahead = position + earlier_fires().count();
    if ahead == 0 {
        return None;
    }
    let room_for_all = state.running.len().saturating_add(ahead) < limit;
    if state.buffered.is_empty() && room_for_all {
        return None;
    }
    if position > 0 {
        return Some(state.waiting[0].execution_id.clone());
    }
    earlier_fire.map(|fire| fire.execution_id.clone())
}

/// How many runs must be decided before `execution_id`: those ahead of it in its job's line and
/// the planned fires not yet created due before it. Zero for a run not in the line.
pub fn runs_ahead_in_line(job: &Job, execution_id: &str) -> usize {
    let state = &job.state;
    let Some(position) = state
        .waiting
        .iter()
        .position(|w| w.execution_id == execution_id)
    else {
        return 0;
    };
    let due = state.waiting[position].due;
    position
        + state
            .pending_fires
            .iter()
            .filter(|fire| fire.due < due && fire.execution_id != execution_id)
            .count()
}

/// When a run waiting in line with `ahead` runs before it looks again by itself: `first` (the
/// recheck of the run next in line) times its place in line, at most [`MAX_LINE_RECHECKS`]
/// times. The decision on each run sends the one next in line at once, so a run further back
/// gets its turn through that chain; its own recheck is only the fallback for a chain broken by
/// a crash. Rechecking the whole line every `first` instead made a line that fell behind (a cold
/// start, a slow store) load the store in proportion to its length and fall further behind.
pub fn line_recheck(first: chrono::Duration, ahead: usize) -> chrono::Duration {
    let places = i32::try_from(ahead.clamp(1, MAX_LINE_RECHECKS)).unwrap_or(1);
    first * places
}

/// The most recheck intervals a run waits in line before looking again by itself.
pub const MAX_LINE_RECHECKS: usize = 30;

/// Frees the slot (or buffer place) of a finished execution. Returns the buffered execution that
/// takes the slot, now counted as running, if one was waiting; the caller starts it. Releasing an
/// execution that holds nothing only hands out free slots.
pub fn release(job: &mut Job, execution_id: &str, policy: OverlapPolicy) -> Vec<String> {
    let limit = concurrency_limit(job, policy);
    let state = &mut job.state;
    state.running.retain(|id| id != execution_id);
    state.buffered.retain(|id| id != execution_id);
    state.waiting.retain(|w| w.execution_id != execution_id);
    state
        .pending_fires
        .retain(|f| f.execution_id != execution_id);
    let mut started = Vec::new();
    while state.running.len() < limit && !state.buffered.is_empty() {
        let next = state.buffered.remove(0);
        state.running.push(next.clone());
        state.action_count += 1;
        started.push(next);
    }
    state.buffer_size = state.buffered.len() as u64;
    started
}

/// The overlap policy a run is admitted under: its own (a trigger's or a backfill's override),
/// else its job's.
pub fn policy_of(job: &Job, execution: &crate::execution::Execution) -> OverlapPolicy {
    execution
        .run
        .overlap
        .unwrap_or_else(|| job.definition.overlap())
}

/// The concurrency gate for `execution`, a run of `job` about to start: [`admit`] under `policy`,
/// and a scheduled fire dropped from a full buffer recorded in the job's ranges
/// ([`RangeReason::Dropped`]). What the engine's dispatch and the simulation ask.
pub fn gate(
    job: &mut Job,
    execution: &crate::execution::Execution,
    policy: OverlapPolicy,
) -> Admission {
    let admission = admit(job, &execution.execution_id, policy);
    if admission == Admission::Drop {
        record_not_run(
            job,
            &execution.scheduled_by_id,
            execution.scheduled_time,
            RangeReason::Dropped,
        );
    }
    admission
}

/// Takes a run that will not start (its job paused, debug mode) out of its job's line and
/// planned fires.
pub fn leave_line(job: &mut Job, execution_id: &str) {
    let state = &mut job.state;
    state.waiting.retain(|w| w.execution_id != execution_id);
    state
        .pending_fires
        .retain(|f| f.execution_id != execution_id);
}

/// A scheduled fire that [missed its chance](missed_at_admission) at the gate: out of its job's
/// line, counted in `missedCatchupWindow` and recorded in the job's ranges
/// ([`RangeReason::Missed`]).
pub fn take_missed(job: &mut Job, execution: &crate::execution::Execution) {
    job.state.missed_catchup_window += 1;
    leave_line(job, &execution.execution_id);
    record_not_run(
        job,
        &execution.scheduled_by_id,
        execution.scheduled_time,
        RangeReason::Missed,
    );
}

/// A finished run's side of its job, at `now`: its slot (or buffer place) freed ([`release`]),
/// a success's result kept as the job's last completion result (clearing the last failure), a
/// failure that ended the run for good kept as the last failure, and a job with
/// `pauseOnFailure` paused with a note. Returns the buffered runs that took the freed slots; the
/// caller starts them.
pub fn finish_on_job(
    job: &mut Job,
    execution: &crate::execution::Execution,
    now: DateTime<Utc>,
) -> Vec<String> {
    let id = &execution.execution_id;
    let policy = policy_of(job, execution);
    let started = release(job, id, policy);
    let job_state = &mut job.state;
    match execution.state() {
        ExecutionState::Succeeded => {
            // Kept only while the definition names it: the job item is written by every run,
            // and a result it carries would be paid for in each of those writes (issue 31).
            job_state.last_completion_result = job
                .definition
                .last_results_named()
                .completion_result
                .then(|| execution.result.clone().unwrap_or(serde_json::Value::Null));
            // docs/engine.md: a success clears the last failure.
            job_state.last_failure = None;
        }
        // A run ended for good by its own failure; not one a user or a policy stopped.
        state @ ExecutionState::Terminated if execution.error.is_some() => {
            job_state.last_failure = Some(serde_json::json!({
                "executionId": id,
                "error": execution.error,
                "finishedAt": execution.finished_at().map(|t| crate::time_serde::format(&t)),
            }));
            if job.definition.pause_on_failure() && job.definition.active() {
                let note = format!(
                    "paused on failure: execution {id} ended {} ({})",
                    state,
                    execution.error.as_deref().unwrap_or("no error code")
                );
                job.pause(Some(note), now);
            }
        }
        _ => {}
    }
    started
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobDefinition, JobId};
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn job_with(extra: serde_json::Value, created: &str) -> Job {
        let mut body = json!({
            "jobName": "j", "creator": "c", "creatorName": "C",
            "request": [{"method": "GET", "url": "http://127.0.0.1:1/x"}],
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let def =
            JobDefinition::parse(&JobId::parse("job-1").unwrap(), &body, at(created)).unwrap();
        Job::new(def)
    }

    fn every_minute() -> Job {
        job_with(
            json!({"schedule": {"cron": ["* * * * *"]}}),
            "2024-01-01T00:00:30Z",
        )
    }

    /// A success leaves its result on the job only when the job's templates name
    /// `${lastCompletionResult}` (issue 31: the job item is written by every run).
    #[test]
    fn a_success_keeps_its_result_on_the_job_only_when_named() {
        let succeeded = |job: &Job| {
            let mut run = crate::execution::Execution::new(
                "job-1~t~a".into(),
                JobId::parse("job-1").unwrap(),
                1,
                ExecutionState::Enqueued,
                at("2024-01-01T00:01:00Z"),
                "trigger".into(),
                at("2024-01-01T00:01:00Z"),
            )
            .unwrap();
            let now = at("2024-01-01T00:01:01Z");
            run.transition(ExecutionState::Processing, now, "started")
                .unwrap();
            run.result = Some(json!({"rows": 3}));
            run.transition(ExecutionState::Succeeded, now, "done")
                .unwrap();
            let mut job = job.clone();
            finish_on_job(&mut job, &run, now);
            job.state.last_completion_result
        };
        assert_eq!(succeeded(&every_minute()), None);
        let naming = job_with(
            json!({"schedule": {"cron": ["* * * * *"]},
                   "request": [{"method": "POST", "url": "http://127.0.0.1:1/x",
                                "body": {"last": "${lastCompletionResult}|json"}}]}),
            "2024-01-01T00:00:30Z",
        );
        assert_eq!(succeeded(&naming), Some(json!({"rows": 3})));
    }

    /// Plans backfills of a job none of whose times ran before.
    fn fill(job: &mut Job, now: DateTime<Utc>, most: usize) -> usize {
        let plan = plan_backfills(job, now, most, &|_| Some(RunsOfTime::default()));
        assert!(plan.unknown.is_empty());
        plan.planned
    }

    fn nominals(job: &Job) -> Vec<String> {
        job.state
            .pending_fires
            .iter()
            .map(|f| f.nominal.to_rfc3339())
            .collect()
    }

    #[test]
    fn plans_fires_up_to_the_horizon_with_numbers_and_ids() {
        let mut job = every_minute();
        let plan = plan_tick(
            &mut job,
            at("2024-01-01T00:00:59Z"),
            at("2024-01-01T00:02:00Z"),
            false,
        );
        assert_eq!(
            plan,
            TickPlan {
                planned: 2,
                missed: 0
            }
        );
        assert_eq!(
            nominals(&job),
            ["2024-01-01T00:01:00+00:00", "2024-01-01T00:02:00+00:00"]
        );
        let fires = &job.state.pending_fires;
        assert_eq!(fires[0].execution_id, "job-1~20240101T000100Z");
        assert_eq!((fires[0].execute_number, fires[1].execute_number), (1, 2));
        assert_eq!(job.state.next_execute_number, 3);
        assert_eq!(
            job.state.last_scheduled_time,
            Some(at("2024-01-01T00:02:00Z"))
        );
        // The next tick starts after the last planned fire: nothing is planned twice.
        job.state.pending_fires.clear();
        let plan = plan_tick(
            &mut job,
            at("2024-01-01T00:01:59Z"),
            at("2024-01-01T00:02:30Z"),
            false,
        );
        assert_eq!(plan.planned, 0);
    }

    #[test]
    fn fires_older_than_the_catchup_window_are_missed() {
        let mut job = every_minute();
        // Down for ten minutes; the default window is one minute.
        let plan = plan_tick(
            &mut job,
            at("2024-01-01T00:10:30Z"),
            at("2024-01-01T00:11:00Z"),
            false,
        );
        assert_eq!(plan.missed, 9, "00:01 … 00:09 are older than 00:09:30");
        assert_eq!(
            nominals(&job),
            ["2024-01-01T00:10:00+00:00", "2024-01-01T00:11:00+00:00"]
        );
        assert_eq!(job.state.missed_catchup_window, 9);
    }

    /// An every-minute job whose engine was down from 00:00:30 to 00:10:30, planned with the
    /// local look-ahead (2 s): 00:01 … 00:10 are late, within a one-hour window.
    fn after_outage(catchup: serde_json::Value) -> (Job, TickPlan) {
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "catchup": catchup}),
            "2024-01-01T00:00:30Z",
        );
        let now = at("2024-01-01T00:10:30Z");
        let plan = plan_tick(&mut job, now, now + Duration::seconds(2), false);
        (job, plan)
    }

    #[test]
    fn catch_up_policy_all_runs_every_late_fire_in_the_window() {
        let (job, plan) = after_outage(json!({"window": "1h"}));
        assert_eq!((plan.planned, plan.missed), (10, 0));
        assert_eq!(nominals(&job)[0], "2024-01-01T00:01:00+00:00");
    }

    #[test]
    fn catch_up_policy_latest_runs_only_the_newest_late_fire() {
        let (job, plan) = after_outage(json!({"policy": "latest", "window": "1h"}));
        assert_eq!((plan.planned, plan.missed), (1, 9));
        assert_eq!(nominals(&job), ["2024-01-01T00:10:00+00:00"]);
        assert_eq!(job.state.missed_catchup_window, 9);
        assert_eq!(
            job.state.next_execute_number, 2,
            "missed fires take no number"
        );
        assert_eq!(
            job.state.last_scheduled_time,
            Some(at("2024-01-01T00:10:00Z"))
        );
    }

    #[test]
    fn catch_up_policy_skip_runs_no_late_fire() {
        let (job, plan) = after_outage(json!({"policy": "skip", "window": "1h"}));
        assert_eq!((plan.planned, plan.missed), (0, 10));
        // The schedule resumes with the next fire, on time.
        let mut job = job;
        let now = at("2024-01-01T00:10:59Z");
        plan_tick(&mut job, now, now + Duration::seconds(2), false);
        assert_eq!(nominals(&job), ["2024-01-01T00:11:00+00:00"]);
    }

    #[test]
    fn catch_up_max_runs_keeps_the_newest_of_the_burst() {
        let (job, plan) = after_outage(json!({"window": "1h", "maxRuns": 3}));
        assert_eq!((plan.planned, plan.missed), (3, 7));
        assert_eq!(
            nominals(&job),
            [
                "2024-01-01T00:08:00+00:00",
                "2024-01-01T00:09:00+00:00",
                "2024-01-01T00:10:00+00:00"
            ]
        );
    }

    /// The window still bounds every policy, and what it misses is counted beside what the
    /// policy leaves out.
    #[test]
    fn the_window_bounds_every_catch_up_policy() {
        let (job, plan) = after_outage(json!({"policy": "latest", "window": "3m"}));
        assert_eq!((plan.planned, plan.missed), (1, 9));
        assert_eq!(nominals(&job), ["2024-01-01T00:10:00+00:00"]);
    }

    /// Fires within the grace are on time: no policy leaves them out, and they count toward a
    /// cap as the newest fires due. An every-second job back after a minute: `latest` runs the
    /// fires of the last ten seconds, which are on time, and none of the late ones.
    #[test]
    fn fires_within_the_grace_are_on_time_under_every_policy() {
        let mut job = job_with(
            json!({"schedule": {"intervals": ["1s"]}, "catchup": {"policy": "latest", "window": "1h"}}),
            "2024-01-01T00:00:00Z",
        );
        let now = at("2024-01-01T00:01:00Z");
        let plan = plan_tick(&mut job, now, now + Duration::seconds(2), false);
        // 00:00:00 … 00:00:49 late (50), 00:00:50 … 00:01:00 on time (11), then the horizon's 2.
        assert_eq!((plan.missed, plan.planned), (50, 13));
        assert_eq!(nominals(&job)[0], "2024-01-01T00:00:50+00:00");
        // The tick's look-ahead widens the grace: on AWS (80 s) none of them is late.
        let mut job = job_with(
            json!({"schedule": {"intervals": ["1s"]}, "catchup": {"policy": "skip", "window": "1h"}}),
            "2024-01-01T00:00:00Z",
        );
        let plan = plan_tick(&mut job, now, now + Duration::seconds(80), false);
        assert_eq!(plan.missed, 0);
    }

    /// A job whose remaining actions are fewer than the burst runs what `latest` keeps.
    #[test]
    fn remaining_actions_count_only_the_fires_the_policy_keeps() {
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "remainingActions": 1,
                   "catchup": {"policy": "latest", "window": "1h"}}),
            "2024-01-01T00:00:30Z",
        );
        let now = at("2024-01-01T00:10:30Z");
        plan_tick(&mut job, now, now + Duration::seconds(2), false);
        assert_eq!(nominals(&job), ["2024-01-01T00:10:00+00:00"]);
        assert_eq!(job.state.remaining_actions, Some(0));
    }

    /// A burst longer than a tick counts is taken over several ticks, each bounded, and what it
    /// plans is the same: the newest fire.
    #[test]
    fn a_long_catch_up_burst_is_bounded_work_per_tick() {
        let mut job = job_with(
            json!({"schedule": {"intervals": ["1s"]}, "catchup": {"policy": "latest", "window": "3d"}}),
            "2024-01-01T00:00:00Z",
        );
        let now = at("2024-01-03T00:00:00Z");
        let mut missed = 0;
        let mut ticks = 0;
        while job.state.pending_fires.is_empty() {
            let started = std::time::Instant::now();
            missed += plan_tick(&mut job, now, now + Duration::seconds(2), false).missed;
            assert!(started.elapsed() < std::time::Duration::from_secs(5));
            ticks += 1;
        }
        assert_eq!(ticks, 2, "172,800 fires: 100,000 in the first tick");
        // Everything before the grace is missed; the ten seconds of grace and the horizon run.
        assert_eq!(missed, 172_790);
        assert_eq!(job.state.pending_fires.len(), 13);
    }

    fn fire_execution(job: &Job, nominal: &str) -> crate::execution::Execution {
        let nominal = at(nominal);
        crate::execution::Execution::new(
            execution_id_for_fire(job.job_id(), 0, nominal),
            job.job_id().clone(),
            1,
            crate::execution::ExecutionState::Enqueued,
            nominal,
            job.job_id().to_string(),
            nominal,
        )
        .unwrap()
    }

    /// At the gate: a fire planned before an outage reaches it after the outage, behind the
    /// fires planned since. The policy decides against the newer scheduled fires due, waiting or
    /// already admitted.
    #[test]
    fn admission_applies_the_catch_up_policy_to_late_fires() {
        let look_ahead = Duration::seconds(2);
        let now = at("2024-01-01T00:10:30Z");
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "catchup": {"policy": "latest", "window": "1h"}}),
            "2024-01-01T00:00:30Z",
        );
        let old = fire_execution(&job, "2024-01-01T00:01:00Z");
        job.state
            .wait_in_line(&old.execution_id, old.scheduled_time);
        // Alone in line, the late fire is the latest: it runs.
        assert_eq!(missed_at_admission(&job, &old, now, look_ahead), None);
        let newer = fire_execution(&job, "2024-01-01T00:10:00Z");
        job.state
            .wait_in_line(&newer.execution_id, newer.scheduled_time);
        assert_eq!(
            missed_at_admission(&job, &old, now, look_ahead),
            Some(Missed::Policy {
                policy: CatchupPolicy::Latest,
                newer: 1
            })
        );
        assert_eq!(missed_at_admission(&job, &newer, now, look_ahead), None);
        // A trigger in line is no newer fire; a fire not yet due is none either.
        job.state.wait_in_line("job-1~t~x", now);
        job.state
            .wait_in_line("job-1~20240101T001100Z", at("2024-01-01T00:11:00Z"));
        // Admitted at once (it simply started), the newer fire still counts.
        let mut admitted = job.clone();
        admitted
            .state
            .waiting
            .retain(|w| w.execution_id != newer.execution_id);
        admitted.state.running.push(newer.execution_id.clone());
        assert!(missed_at_admission(&admitted, &old, now, look_ahead).is_some());
        let mut skip = job.clone();
        skip.definition = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "catchup": {"policy": "skip", "window": "1h"}}),
            "2024-01-01T00:00:30Z",
        )
        .definition;
        assert!(missed_at_admission(&skip, &newer, now, look_ahead).is_some());
        let on_time = fire_execution(&job, "2024-01-01T00:10:25Z");
        assert_eq!(missed_at_admission(&skip, &on_time, now, look_ahead), None);
        // `all` with no cap: the window alone decides, as before.
        let mut all = job.clone();
        all.definition = every_minute().definition;
        assert_eq!(
            missed_at_admission(&all, &old, now, look_ahead),
            Some(Missed::Window {
                window: crate::duration::Duration::from_secs(60)
            })
        );
        assert_eq!(missed_at_admission(&all, &newer, now, look_ahead), None);
        // A run holding a slot was admitted in time.
        job.state.running.push(old.execution_id.clone());
        assert_eq!(missed_at_admission(&job, &old, now, look_ahead), None);
    }

    #[test]
    fn a_long_outage_is_bounded_work() {
        let mut job = job_with(
            json!({"schedule": {"intervals": ["1s"]}}),
            "2024-01-01T00:00:00Z",
        );
        let started = std::time::Instant::now();
        let plan = plan_tick(
            &mut job,
            at("2025-01-01T00:00:00Z"),
            at("2025-01-01T00:00:01Z"),
            false,
        );
        // Counted one by one up to the cap, then the jump to the window counts nothing more.
        assert_eq!(plan.missed, MAX_MISSED_COUNTED);
        // The window (1 minute) is still run: 60 fires plus the horizon's second.
        assert_eq!(plan.planned, 62);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // One range, reaching the jump: it covers every missed time, counting the first ones.
        let ranges = &job.state.fire_ranges;
        assert_eq!(ranges.len(), 1);
        assert_eq!(ranges[0].first, at("2024-01-01T00:00:00Z"));
        assert_eq!(ranges[0].last, at("2024-12-31T23:58:59Z"));
        assert_eq!(ranges[0].count, MAX_MISSED_COUNTED);
    }

    #[test]
    fn missed_fires_leave_one_range_across_ticks() {
        use crate::ledger::{FireRange, RangeReason};
        let mut job = job_with(
            json!({"schedule": {"intervals": ["1s"]}}),
            "2024-01-01T00:00:00Z",
        );
        // A day-long outage found by ticks that plan at most a thousand fires each: the window
        // (one minute) still runs, what came before is one range.
        let now = at("2024-01-02T00:00:00Z");
        plan_tick(&mut job, now, now + Duration::seconds(1), false);
        let range = |first: &str, last: &str, count: u64| FireRange {
            reason: RangeReason::Missed,
            first: at(first),
            last: at(last),
            count,
        };
        assert_eq!(
            job.state.fire_ranges,
            [range(
                "2024-01-01T00:00:00Z",
                "2024-01-01T23:58:59Z",
                86_340
            )]
        );
        // The policy's leftovers follow on in the same range; a later outage starts another.
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "catchup": {"policy": "latest", "window": "5m"}}),
            "2024-01-01T00:00:30Z",
        );
        let now = at("2024-01-01T00:10:30Z");
        plan_tick(&mut job, now, now + Duration::seconds(2), false);
        assert_eq!(
            job.state.fire_ranges,
            [range("2024-01-01T00:01:00Z", "2024-01-01T00:09:00Z", 9)]
        );
        job.state.pending_fires.clear();
        let now = at("2024-01-01T00:20:30Z");
        plan_tick(&mut job, now, now + Duration::seconds(2), false);
        assert_eq!(
            job.state.fire_ranges,
            [
                range("2024-01-01T00:01:00Z", "2024-01-01T00:09:00Z", 9),
                range("2024-01-01T00:11:00Z", "2024-01-01T00:19:00Z", 9)
            ]
        );
    }

    #[test]
    fn dropped_and_missed_at_the_gate_extend_their_ranges() {
        use crate::ledger::RangeReason;
        let mut job = every_minute();
        let id = job.definition.job_id().to_string();
        for minute in ["00:01", "00:02", "00:04"] {
            let time = at(&format!("2024-01-01T{minute}:00Z"));
            record_not_run(&mut job, &id, time, RangeReason::Dropped);
        }
        // A trigger's time is not the schedule's.
        record_not_run(
            &mut job,
            "trigger:x",
            at("2024-01-01T00:05:00Z"),
            RangeReason::Dropped,
        );
        let counts: Vec<_> = job.state.fire_ranges.iter().map(|r| r.count).collect();
        assert_eq!(counts, [2, 1]);
    }

    #[test]
    fn remaining_actions_stop_scheduled_fires() {
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "remainingActions": 2}),
            "2024-01-01T00:00:30Z",
        );
        plan_tick(
            &mut job,
            at("2024-01-01T00:00:31Z"),
            at("2024-01-01T00:05:00Z"),
            false,
        );
        assert_eq!(job.state.pending_fires.len(), 2);
        assert_eq!(job.state.remaining_actions, Some(0));
    }

    #[test]
    fn paused_jobs_and_debug_mode_plan_nothing() {
        let mut job = every_minute();
        let now = at("2024-01-01T00:00:31Z");
        let horizon = at("2024-01-01T00:05:00Z");
        assert_eq!(plan_tick(&mut job, now, horizon, true).planned, 0);
        // Created at 00:00:30, the job had no fire due by 00:00:31; by 00:03:31 three fell due in
        // debug mode: one range of three, and none is planned later.
        let debug_ranges = job.state.fire_ranges.clone();
        let later = at("2024-01-01T00:03:31Z");
        assert_eq!(
            plan_tick(&mut job, later, later + Duration::minutes(4), true).planned,
            0
        );
        assert!(debug_ranges.is_empty(), "{debug_ranges:?}");
        assert_eq!(
            job.state.fire_ranges,
            [ledger::FireRange {
                reason: RangeReason::DebugMode,
                first: at("2024-01-01T00:01:00Z"),
                last: at("2024-01-01T00:03:00Z"),
                count: 3,
            }]
        );
        assert_eq!(
            job.state.last_scheduled_time,
            Some(at("2024-01-01T00:03:00Z"))
        );
        job.pause(None, now);
        assert_eq!(plan_tick(&mut job, now, horizon, false).planned, 0);
        // Unpausing resumes after the unpause time: the pause's fires are not replayed.
        job.unpause(None, at("2024-01-01T00:03:30Z"));
        plan_tick(&mut job, at("2024-01-01T00:03:30Z"), horizon, false);
        assert_eq!(
            nominals(&job),
            ["2024-01-01T00:04:00+00:00", "2024-01-01T00:05:00+00:00"]
        );
    }

    #[test]
    fn jitter_delays_the_start_but_not_the_id() {
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"], "jitter": "30s"}}),
            "2024-01-01T00:00:30Z",
        );
        plan_tick(
            &mut job,
            at("2024-01-01T00:00:31Z"),
            at("2024-01-01T00:03:00Z"),
            false,
        );
        for fire in &job.state.pending_fires {
            assert!(fire.due >= fire.nominal);
            assert!(fire.due < fire.nominal + Duration::seconds(30));
            assert_eq!(
                fire.execution_id,
                execution_id_for_fire(job.job_id(), 0, fire.nominal)
            );
        }
    }

    #[test]
    fn backfills_run_now_with_their_own_ids() {
        let mut job = every_minute();
        job.state.pending_backfills.push(crate::job::Backfill {
            start_time: at("2023-12-31T23:57:00Z"),
            end_time: at("2023-12-31T23:59:00Z"),
            overlap: None,
            requested_at: at("2024-01-01T00:00:40Z"),
            planned_through: None,
            mode: crate::job::BackfillMode::All,
            reverse: false,
        });
        let now = at("2024-01-01T00:00:41Z");
        assert_eq!(fill(&mut job, now, usize::MAX), 3);
        assert!(job.state.pending_backfills.is_empty());
        let fire = &job.state.pending_fires[0];
        assert_eq!(fire.due, now);
        assert_eq!(fire.overlap, Some(OverlapPolicy::AllowAll));
        assert_eq!(fire.execution_id, "job-1~20231231T235700Z~r1");
    }

    /// A backfill larger than the window is planned a window at a time, each once the runs
    /// before it have left the line, in nominal order, every time exactly once.
    #[test]
    fn a_large_backfill_is_planned_window_by_window() {
        let mut job = every_minute();
        job.state.pending_backfills.push(crate::job::Backfill {
            start_time: at("2023-12-30T00:00:00Z"),
            // 1,000 minutes: fifteen windows of 64 and one of 40.
            end_time: at("2023-12-30T16:39:00Z"),
            overlap: Some(OverlapPolicy::BufferAll),
            requested_at: at("2024-01-01T00:00:40Z"),
            planned_through: None,
            mode: crate::job::BackfillMode::All,
            reverse: false,
        });
        let now = at("2024-01-01T00:00:41Z");
        let mut nominals = Vec::new();
        let mut windows = Vec::new();
        loop {
            let planned = fill(&mut job, now, usize::MAX);
            // Nothing more while the window's runs wait.
            assert_eq!(fill(&mut job, now, usize::MAX), 0);
            assert!(!backfill_has_room(&job, 1));
            if planned == 0 {
                break;
            }
            windows.push(planned);
            for fire in std::mem::take(&mut job.state.pending_fires) {
                nominals.push(fire.nominal);
            }
        }
        let mut expected_windows = vec![BACKFILL_WINDOW; 15];
        expected_windows.push(40);
        assert_eq!(windows, expected_windows);
        assert!(job.state.pending_backfills.is_empty());
        let expected: Vec<DateTime<Utc>> = (0..1000)
            .map(|m| at("2023-12-30T00:00:00Z") + Duration::minutes(m))
            .collect();
        assert_eq!(nominals, expected);
        assert_eq!(job.state.next_execute_number, 1001);
    }

    fn hourly_backfill(job: &mut Job, mode: crate::job::BackfillMode, reverse: bool) {
        job.state.pending_backfills.push(crate::job::Backfill {
            start_time: at("2023-12-31T20:00:00Z"),
            end_time: at("2023-12-31T23:00:00Z"),
            overlap: None,
            requested_at: at("2024-01-01T00:00:40Z"),
            planned_through: None,
            mode,
            reverse,
        });
    }

    /// What ran of the hours 20:00 … 23:00: 20:00 succeeded on schedule, 21:00 never ran, 22:00
    /// failed and its re-run failed too, 23:00 failed on schedule and was re-run successfully.
    fn history(t: DateTime<Utc>) -> Option<RunsOfTime> {
        use crate::execution::ExecutionState::*;
        let (reruns, latest) = match t.format("%H").to_string().as_str() {
            "20" => (0, Some(Succeeded)),
            "21" => (0, None),
            "22" => (1, Some(Terminated)),
            _ => (1, Some(Succeeded)),
        };
        Some(RunsOfTime { reruns, latest })
    }

    fn planned_ids(job: &Job) -> Vec<&str> {
        job.state
            .pending_fires
            .iter()
            .map(|f| f.execution_id.as_str())
            .collect()
    }

    /// `missing` runs the times with no run, `failed` those whose latest run is `Terminated`,
    /// `all` every one; each run takes its time's next number.
    #[test]
    fn a_backfill_mode_selects_times_by_what_ran() {
        use crate::job::BackfillMode;
        let now = at("2024-01-01T00:00:41Z");
        let every_hour = || {
            job_with(
                json!({"schedule": {"cron": ["0 * * * *"]}}),
                "2024-01-01T00:00:30Z",
            )
        };
        for (mode, expected) in [
            (
                BackfillMode::All,
                vec![
                    "job-1~20231231T200000Z~r1",
                    "job-1~20231231T210000Z~r1",
                    "job-1~20231231T220000Z~r2",
                    "job-1~20231231T230000Z~r2",
                ],
            ),
            (BackfillMode::Missing, vec!["job-1~20231231T210000Z~r1"]),
            (BackfillMode::Failed, vec!["job-1~20231231T220000Z~r2"]),
        ] {
            let mut job = every_hour();
            hourly_backfill(&mut job, mode, false);
            let plan = plan_backfills(&mut job, now, usize::MAX, &history);
            assert_eq!(planned_ids(&job), expected, "{mode}");
            assert_eq!(plan.planned, expected.len());
            assert!(job.state.pending_backfills.is_empty());
            let numbers: Vec<u64> = job
                .state
                .pending_fires
                .iter()
                .map(|f| f.execute_number)
                .collect();
            assert_eq!(
                numbers,
                (1..=expected.len() as u64).collect::<Vec<_>>(),
                "{mode}"
            );
        }
        // A second request for the same times, planned before the first's runs exist, takes
        // the next numbers; in mode missing it finds the first's runs and adds none.
        let mut job = every_hour();
        hourly_backfill(&mut job, BackfillMode::All, false);
        hourly_backfill(&mut job, BackfillMode::All, true);
        hourly_backfill(&mut job, BackfillMode::Missing, false);
        plan_backfills(&mut job, now, usize::MAX, &|_| Some(RunsOfTime::default()));
        assert_eq!(
            planned_ids(&job),
            [
                "job-1~20231231T200000Z~r1",
                "job-1~20231231T210000Z~r1",
                "job-1~20231231T220000Z~r1",
                "job-1~20231231T230000Z~r1",
                "job-1~20231231T230000Z~r2",
                "job-1~20231231T220000Z~r2",
                "job-1~20231231T210000Z~r2",
                "job-1~20231231T200000Z~r2",
            ]
        );
    }

    /// The planner asks for what it does not know, a window at a time, and changes nothing for
    /// that window; once told, it plans it.
    #[test]
    fn a_backfill_asks_for_the_runs_of_the_times_it_does_not_know() {
        let mut job = every_minute();
        backfill_of_minutes(&mut job, 100, None);
        let now = at("2024-01-01T00:00:41Z");
        let known = |t: DateTime<Utc>| (t < at("2023-12-30T00:10:00Z")).then(RunsOfTime::default);
        let before = job.clone();
        let plan = plan_backfills(&mut job, now, 20, &known);
        assert_eq!(plan.planned, 0);
        assert_eq!(
            plan.unknown.len(),
            10,
            "00:10 … 00:19 of the window 00:00 … 00:19"
        );
        assert_eq!(plan.unknown[0], at("2023-12-30T00:10:00Z"));
        assert_eq!(job, before);
        assert_eq!(fill(&mut job, now, 20), 20);
        assert_eq!(
            job.state.pending_backfills[0].planned_through,
            Some(at("2023-12-30T00:19:00Z"))
        );
    }

    /// In reverse, windows are planned from the end of the range, newest first, every time once.
    #[test]
    fn a_reverse_backfill_is_planned_newest_first() {
        let mut job = every_minute();
        backfill_of_minutes(&mut job, 100, Some(OverlapPolicy::BufferAll));
        job.state.pending_backfills[0].reverse = true;
        let now = at("2024-01-01T00:00:41Z");
        let mut nominals = Vec::new();
        let mut windows = Vec::new();
        loop {
            let planned = fill(&mut job, now, 30);
            if planned == 0 {
                break;
            }
            windows.push(planned);
            nominals.extend(
                std::mem::take(&mut job.state.pending_fires)
                    .into_iter()
                    .map(|f| f.nominal),
            );
        }
        assert_eq!(windows, [30, 30, 30, 10]);
        let expected: Vec<DateTime<Utc>> = (0..100)
            .rev()
            .map(|m| at("2023-12-30T00:00:00Z") + Duration::minutes(m))
            .collect();
        assert_eq!(nominals, expected);
        assert!(job.state.pending_backfills.is_empty());
    }

    fn backfill_of_minutes(job: &mut Job, minutes: i64, overlap: Option<OverlapPolicy>) {
        let start = at("2023-12-30T00:00:00Z");
        job.state.pending_backfills.push(crate::job::Backfill {
            start_time: start,
            end_time: start + Duration::minutes(minutes - 1),
            overlap,
            requested_at: at("2024-01-01T00:00:40Z"),
            planned_through: None,
            mode: crate::job::BackfillMode::All,
            reverse: false,
        });
    }

    /// `most` caps one call (one atomic write of the engine); running runs count against the
    /// window like waiting ones, so a slow target cannot make a backfill pile up runs; the window
    /// has room again as they finish.
    #[test]
    fn a_backfill_window_counts_running_runs_and_plans_at_most_what_it_is_asked() {
        let mut job = every_minute();
        backfill_of_minutes(&mut job, 1000, None);
        let now = at("2024-01-01T00:00:41Z");
        assert_eq!(fill(&mut job, now, 20), 20);
        assert!(backfill_has_room(&job, 20));
        let fires = std::mem::take(&mut job.state.pending_fires);
        let admitted = line_up(&mut job, &fires, now);
        assert_eq!(admitted.len(), 20, "AllowAll runs due now all start");
        assert_eq!(job.state.running.len(), 20);
        assert!(job.state.waiting.is_empty());
        while fill(&mut job, now, 20) > 0 {
            let fires = std::mem::take(&mut job.state.pending_fires);
            line_up(&mut job, &fires, now);
        }
        assert_eq!(job.state.running.len(), BACKFILL_WINDOW);
        assert!(!backfill_has_room(&job, 1));
        for id in job.state.running.clone().iter().take(40) {
            release(&mut job, id, OverlapPolicy::AllowAll);
        }
        assert!(backfill_has_room(&job, 40));
        assert!(!backfill_has_room(&job, 41));
        assert_eq!(fill(&mut job, now, usize::MAX), 40);
    }

    /// Runs due now are admitted in line order while they simply start; the first that would
    /// not (here the second of a `Skip` job's limit of one) stays in line with every run behind
    /// it, and nothing is counted for it.
    #[test]
    fn line_up_admits_due_runs_in_order_until_one_would_not_simply_start() {
        let mut job = every_minute();
        backfill_of_minutes(&mut job, 3, Some(OverlapPolicy::Skip));
        let now = at("2024-01-01T00:00:41Z");
        fill(&mut job, now, usize::MAX);
        let fires = std::mem::take(&mut job.state.pending_fires);
        let admitted = line_up(&mut job, &fires, now);
        assert_eq!(admitted, [fires[0].execution_id.clone()]);
        assert_eq!(job.state.running, [fires[0].execution_id.clone()]);
        let waiting: Vec<&str> = job
            .state
            .waiting
            .iter()
            .map(|w| w.execution_id.as_str())
            .collect();
        assert_eq!(waiting, [&fires[1].execution_id, &fires[2].execution_id]);
        assert_eq!(job.state.overlap_skipped, 0);
        assert_eq!(job.state.action_count, 1);
        // Asked again (a retried write): nothing changes.
        let again = job.clone();
        assert!(line_up(&mut job, &fires, now).is_empty());
        assert_eq!(job, again);
    }

    /// A fire due later than `now` is only put in line: it is admitted by dispatch (ahead of its
    /// time or at it), and so is every run behind it.
    #[test]
    fn line_up_leaves_runs_due_later_to_dispatch() {
        let mut job = every_minute();
        let now = at("2024-01-01T00:00:41Z");
        plan_tick(&mut job, now, now + Duration::seconds(80), false);
        let fires = std::mem::take(&mut job.state.pending_fires);
        assert!(!fires.is_empty() && fires.iter().all(|f| f.due > now));
        assert!(line_up(&mut job, &fires, now).is_empty());
        assert_eq!(job.state.waiting.len(), fires.len());
        assert!(job.state.running.is_empty());
    }

    /// Issue 25: a planner sends its fires' messages, then takes them out of the planned fires.
    /// A fire dispatch admitted and finished in between is not lined up (nor admitted) again; a
    /// fire dispatch has not seen yet is.
    #[test]
    fn take_planned_leaves_out_fires_dispatch_already_took() {
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * * *"]}, "overlap": "Skip"}),
            "2024-01-01T00:00:00Z",
        );
        let planned_at = at("2024-01-01T00:00:00Z");
        plan_tick(
            &mut job,
            planned_at,
            planned_at + Duration::seconds(80),
            false,
        );
        let done = job.state.pending_fires.clone();
        let first = done[0].execution_id.clone();
        // Dispatch runs the first fire to its end before the planner's write.
        assert_eq!(
            admit(&mut job, &first, OverlapPolicy::Skip),
            Admission::Start
        );
        assert!(release(&mut job, &first, OverlapPolicy::Skip).is_empty());
        let now = done[1].due;
        let admitted = take_planned(&mut job, &done, now);
        assert!(job.state.pending_fires.is_empty());
        assert_eq!(admitted, [done[1].execution_id.clone()]);
        assert_eq!(job.state.running, [done[1].execution_id.clone()]);
        assert!(job.state.waiting.iter().all(|w| w.execution_id != first));
        assert_eq!(job.state.waiting.len(), done.len() - 2);
    }

    /// A run's place in line counts the runs lined up before it and the planned fires due before
    /// it; its recheck grows with that place, up to a bound.
    #[test]
    fn a_run_further_back_in_line_rechecks_later() {
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * * *"]}, "overlap": "Skip"}),
            "2024-01-01T00:00:00Z",
        );
        let now = at("2024-01-01T00:00:00Z");
        plan_tick(&mut job, now, now + Duration::seconds(80), false);
        let fires = job.state.pending_fires.clone();
        // The first three are lined up; the rest are still planned.
        let lined = take_planned(&mut job, &fires[..3], now);
        assert_eq!(lined, [fires[0].execution_id.clone()], "the first is due");
        assert_eq!(runs_ahead_in_line(&job, &fires[1].execution_id), 0);
        assert_eq!(runs_ahead_in_line(&job, &fires[2].execution_id), 1);
        assert_eq!(runs_ahead_in_line(&job, "not-in-line"), 0);
        job.state
            .pending_fires
            .retain(|f| f.execution_id != fires[10].execution_id);
        job.state
            .wait_in_line(&fires[10].execution_id, fires[10].due);
        assert_eq!(runs_ahead_in_line(&job, &fires[10].execution_id), 2 + 7);
        let second = Duration::seconds(1);
        assert_eq!(line_recheck(second, 0), second);
        assert_eq!(line_recheck(second, 1), second);
        assert_eq!(line_recheck(second, 9), Duration::seconds(9));
        assert_eq!(
            line_recheck(second, usize::MAX),
            Duration::seconds(MAX_LINE_RECHECKS as i64)
        );
    }

    /// Issue 26 items 1 and 9: a pause stops the job's scheduled fires not yet started; the
    /// debug mode stops the runs `debug_mode_stops` names (scheduled fires or programs'
    /// triggers); triggers and backfills start on a paused job.
    #[test]
    fn may_start_stops_scheduled_fires_of_a_paused_job_or_in_debug_mode() {
        use RunSource::Schedule;
        assert_eq!(may_start(false, false, Schedule), Ok(()));
        assert_eq!(may_start(true, false, Schedule), Err(NotStarted::Paused));
        assert_eq!(may_start(false, true, Schedule), Err(NotStarted::DebugMode));
        assert_eq!(may_start(true, true, Schedule), Err(NotStarted::DebugMode));
        for request in [
            RunSource::ProgramTrigger,
            RunSource::ConsoleTrigger,
            RunSource::Update,
            RunSource::Backfill,
        ] {
            for paused in [false, true] {
                assert_eq!(may_start(paused, false, request), Ok(()));
                assert_eq!(may_start(paused, true, request), Err(NotStarted::DebugMode));
            }
        }
        assert_eq!(
            NotStarted::Paused.reason(Some("freeze")),
            "paused: its job was paused before it started (freeze)"
        );
    }

    fn admit_all(job: &mut Job, ids: &[&str], policy: OverlapPolicy) -> Vec<Admission> {
        ids.iter().map(|id| admit(job, id, policy)).collect()
    }

    #[test]
    fn skip_allows_one_run_and_counts_the_rest() {
        let mut job = every_minute();
        let got = admit_all(&mut job, &["a", "b", "a"], OverlapPolicy::Skip);
        assert_eq!(got, [Admission::Start, Admission::Skip, Admission::Start]);
        assert_eq!(job.state.overlap_skipped, 1);
        assert_eq!(
            job.state.action_count, 1,
            "asking again does not count twice"
        );
    }

    #[test]
    fn buffer_one_keeps_one_and_drops_more() {
        let mut job = every_minute();
        let got = admit_all(&mut job, &["a", "b", "c"], OverlapPolicy::BufferOne);
        assert_eq!(got, [Admission::Start, Admission::Buffer, Admission::Drop]);
        assert_eq!((job.state.buffer_size, job.state.buffer_dropped), (1, 1));
        assert_eq!(release(&mut job, "a", OverlapPolicy::BufferOne), ["b"]);
        assert_eq!(job.state.running, ["b"]);
        assert_eq!(job.state.buffer_size, 0);
    }

    #[test]
    fn buffer_all_starts_in_order() {
        let mut job = every_minute();
        let got = admit_all(&mut job, &["a", "b", "c"], OverlapPolicy::BufferAll);
        assert_eq!(
            got,
            [Admission::Start, Admission::Buffer, Admission::Buffer]
        );
        // "c" asks again while "b" is first in line: it keeps waiting.
        assert_eq!(
            admit(&mut job, "c", OverlapPolicy::BufferAll),
            Admission::Buffer
        );
        assert_eq!(release(&mut job, "a", OverlapPolicy::BufferAll), ["b"]);
        assert_eq!(release(&mut job, "b", OverlapPolicy::BufferAll), ["c"]);
        assert_eq!(job.state.action_count, 3);
    }

    #[test]
    fn buffer_all_is_capped() {
        let mut job = every_minute();
        admit(&mut job, "run", OverlapPolicy::BufferAll);
        for i in 0..MAX_BUFFERED {
            assert_eq!(
                admit(&mut job, &format!("b{i}"), OverlapPolicy::BufferAll),
                Admission::Buffer
            );
        }
        assert_eq!(
            admit(&mut job, "over", OverlapPolicy::BufferAll),
            Admission::Drop
        );
        assert_eq!(job.state.buffer_dropped, 1);
    }

    #[test]
    fn cancel_and_terminate_other_stop_the_running_run() {
        for (policy, terminate) in [
            (OverlapPolicy::CancelOther, false),
            (OverlapPolicy::TerminateOther, true),
        ] {
            let mut job = every_minute();
            assert_eq!(admit(&mut job, "a", policy), Admission::Start);
            assert_eq!(
                admit(&mut job, "b", policy),
                Admission::StartAfterStopping {
                    stop: vec!["a".into()],
                    terminate
                }
            );
            assert_eq!(job.state.running, ["b"]);
        }
    }

    #[test]
    fn allow_all_is_unbounded_unless_max_concurrency() {
        let mut job = every_minute();
        let got = admit_all(&mut job, &["a", "b", "c"], OverlapPolicy::AllowAll);
        assert!(got.iter().all(|a| *a == Admission::Start));
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "overlap": "AllowAll", "maxConcurrency": 2}),
            "2024-01-01T00:00:30Z",
        );
        let got = admit_all(&mut job, &["a", "b", "c"], OverlapPolicy::AllowAll);
        assert_eq!(got, [Admission::Start, Admission::Start, Admission::Buffer]);
        assert_eq!(release(&mut job, "b", OverlapPolicy::AllowAll), ["c"]);
    }

    #[test]
    fn max_concurrency_with_skip_skips_beyond_n() {
        let mut job = job_with(
            json!({"schedule": {"cron": ["* * * * *"]}, "maxConcurrency": 2}),
            "2024-01-01T00:00:30Z",
        );
        let got = admit_all(&mut job, &["a", "b", "c"], OverlapPolicy::Skip);
        assert_eq!(got, [Admission::Start, Admission::Start, Admission::Skip]);
    }

    #[test]
    fn runs_pass_the_gate_in_line_by_due_time_then_creation() {
        let mut job = job_with(
            json!({"timer": {"period": "external"}}),
            "2024-01-01T00:00:00Z",
        );
        job.state.wait_in_line("a", at("2024-01-01T00:01:00Z"));
        job.state.wait_in_line("b", at("2024-01-01T00:01:00Z"));
        job.state.wait_in_line("c", at("2024-01-01T00:00:59Z"));
        job.state.wait_in_line("a", at("2024-01-01T00:00:00Z"));
        let line: Vec<&str> = job
            .state
            .waiting
            .iter()
            .map(|w| w.execution_id.as_str())
            .collect();
        assert_eq!(
            line,
            ["c", "a", "b"],
            "by due time, then creation; no duplicates"
        );
        let wait = |behind: &str| Admission::Wait {
            behind: behind.to_string(),
        };
        let before = job.clone();
        assert_eq!(admit(&mut job, "a", OverlapPolicy::Skip), wait("c"));
        assert_eq!(job, before, "waiting changes nothing");
        assert_eq!(admit(&mut job, "c", OverlapPolicy::Skip), Admission::Start);
        assert_eq!(admit(&mut job, "b", OverlapPolicy::Skip), wait("a"));
        assert_eq!(admit(&mut job, "a", OverlapPolicy::Skip), Admission::Skip);
        assert_eq!(admit(&mut job, "b", OverlapPolicy::Skip), Admission::Skip);
        assert!(job.state.waiting.is_empty());
        assert_eq!(job.state.running, ["c"]);
    }

    #[test]
    fn runs_that_all_fit_need_not_wait_for_each_other() {
        let mut job = job_with(
            json!({"timer": {"period": "external"}, "overlap": "AllowAll"}),
            "2024-01-01T00:00:00Z",
        );
        for id in ["a", "b", "c"] {
            job.state.wait_in_line(id, at("2024-01-01T00:01:00Z"));
        }
        assert_eq!(
            admit(&mut job, "c", OverlapPolicy::AllowAll),
            Admission::Start
        );
        // A limit of 2 fits "a" and "b" whatever their order, not "c" as well: "c" waits.
        let mut limited = job_with(
            json!({"timer": {"period": "external"}, "overlap": "BufferAll", "maxConcurrency": 2}),
            "2024-01-01T00:00:00Z",
        );
        for id in ["a", "b", "c"] {
            limited.state.wait_in_line(id, at("2024-01-01T00:01:00Z"));
        }
        let policy = OverlapPolicy::BufferAll;
        assert_eq!(admit(&mut limited, "b", policy), Admission::Start);
        let wait_a = Admission::Wait {
            behind: "a".to_string(),
        };
        assert_eq!(admit(&mut limited, "c", policy), wait_a);
        assert_eq!(admit(&mut limited, "a", policy), Admission::Start);
        assert_eq!(admit(&mut limited, "c", policy), Admission::Buffer);
    }

    #[test]
    fn a_run_released_before_its_admission_leaves_the_line() {
        let mut job = job_with(
            json!({"timer": {"period": "external"}}),
            "2024-01-01T00:00:00Z",
        );
        job.state.wait_in_line("a", at("2024-01-01T00:01:00Z"));
        job.state.wait_in_line("b", at("2024-01-01T00:01:00Z"));
        release(&mut job, "a", OverlapPolicy::Skip);
        assert_eq!(admit(&mut job, "b", OverlapPolicy::Skip), Admission::Start);
    }
}
