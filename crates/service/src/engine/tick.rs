//! The tick: turn what the wake-up index says is due into executions and queue messages.
//!
//! A tick reads only the index entries due before its horizon (never a scan of jobs). For a job
//! entry it plans in one conditional write — the fires, their execute numbers and the advanced
//! schedule position all land in the job's `pendingFires` — and then creates the executions and
//! sends them. A crash between the two leaves the fires pending and the job's entry due, so the
//! next tick creates them; creating an execution that exists is a no-op. Two ticks at once race on
//! the job's version: one plans, the other re-reads and finds nothing new. A late tick plans the
//! same fires a punctual one would have, minus those past the catch-up window.

use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use sundial_core::debug_mode::debug_mode_stops;
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::{Job, JobId, PendingFire};
use sundial_core::plan;
use sundial_core::source::RunSource;

use std::collections::HashMap;

use super::{Engine, EngineError};
use crate::records::{
    decode_job, encode_execution, encode_job, execution_wakeup_key, job_wakeup_key, not_run_rollup,
    StoredJob, FALLBACK_WAKEUP_GRACE,
};
use sundial_core::stats::NotRun;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::Queue;
use sundial_ports::store::{
    JobRecord, RollupRecord, Store, StoreError, WakeUp, Write, WriteAllError, MAX_WRITES,
};

/// The most fires one atomic commit creates: each is an execution and its fallback wake-up,
/// next to the job, its timer entry and the statistics of fires it found missed.
const MAX_FIRES_PER_COMMIT: usize = (MAX_WRITES - 3) / 2;

/// The most backfill fires one planning of a job adds: half a window, and never more than fit one
/// [`MAX_FIRES_PER_COMMIT`] write together with the job's own fires of a tick. A backfill is
/// planned again as soon as its window has room for this many ([`plan::backfill_has_room`]), so it
/// drains at the speed of its runs rather than a window per tick.
pub(super) const BACKFILL_FIRES_PER_PLAN: usize = {
    let half_window = plan::BACKFILL_WINDOW / 2;
    let fits = MAX_FIRES_PER_COMMIT * 3 / 4;
    if half_window < fits {
        half_window
    } else {
        fits
    }
};

/// How many windows of backfill times one planning reads the runs of: a window whose times a
/// backfill's mode all leaves out plans nothing, and the planner goes on to the next.
const BACKFILL_READ_ROUNDS: usize = 8;

/// How many index entries one tick reads per batch; it reads batches until none are left due.
const BATCH: usize = 500;

/// The most batches one tick works through; the rest waits for the next tick.
const MAX_BATCHES: usize = 200;

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Jobs whose schedule was evaluated.
    pub jobs: usize,
    /// Executions created for scheduled fires and backfills.
    pub fires: usize,
    /// Fire times missed (older than the catch-up window).
    pub missed: u64,
    /// Execution wake-ups turned into dispatch messages.
    pub wakeups: usize,
}

/// The execution a planned fire becomes: `Scheduled` until its due time, `Enqueued` once due.
fn new_execution(
    job: &Job,
    fire: &PendingFire,
    now: DateTime<Utc>,
) -> Result<Execution, EngineError> {
    let definition = &job.definition;
    let initial = if fire.due > now {
        ExecutionState::Scheduled
    } else {
        ExecutionState::Enqueued
    };
    let mut execution = Execution::new(
        fire.execution_id.clone(),
        job.job_id().clone(),
        fire.execute_number,
        initial,
        fire.nominal,
        fire.scheduled_by_id.clone(),
        now,
    )
    .map_err(|e| crate::AppError::Unavailable(e.to_string()))?;
    execution.parent_job = definition.parent_job().cloned();
    execution.parent_job_execution = definition.parent_job_execution();
    execution.run.due = Some(fire.due);
    execution.run.overlap = fire.overlap;
    Ok(execution)
}

/// How [`Engine::commit_fires`] went.
enum Committed {
    /// Written: this many executions created.
    Done(usize),
    /// The job changed since it was read: read and plan again.
    Raced,
    /// The job is gone.
    Gone,
    /// Nothing written: take the one-by-one path.
    OneByOne,
}

/// How many wake-ups one tick works on at once.
const TICK_CONCURRENCY: usize = 32;

/// What one wake-up contributed to a tick.
#[derive(Default)]
struct EntryOutcome {
    jobs: usize,
    fires: usize,
    missed: u64,
    wakeups: usize,
    progressed: bool,
    materialised: Option<(StoredJob, Vec<PendingFire>)>,
    wakes: Vec<(String, DateTime<Utc>)>,
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Runs one tick at the clock's current time: safe to run late, twice, or concurrently.
    pub async fn tick(&self) -> Result<TickReport, EngineError> {
        let now = self.now();
        let horizon = now
            + chrono::Duration::from_std(self.config.tick_horizon)
                .unwrap_or_else(|_| chrono::Duration::seconds(60));
        let mut report = TickReport::default();
        // The debug mode, read (at most every DEBUG_MODE_CACHE) once before the jobs, which are
        // planned concurrently: they all find it in the cache instead of each reading the store.
        // Boxed: inlined, it deepens the tick's future past what the tick function's binary
        // may nest.
        Box::pin(self.app.debug_mode_now()).await;
        for _ in 0..MAX_BATCHES {
            let due = self.store().due_wakeups(horizon, BATCH).await?;
            let count = due.len();
            let mut progressed = false;
            // Jobs whose fires were created in this batch; their messages go out together (SQS
            // takes ten per request), and only then are the fires cleared from the jobs, so a
            // crash in between leaves them pending and the next tick sends them again.
            // Entries are independent (one job or execution each): work on several at once, so
            // a store that commits in groups (the embedded one) shares commits between them.
            // The batch's jobs are read at once (one request for a hundred on DynamoDB).
            let job_ids: Vec<String> = due
                .iter()
                .filter_map(|entry| entry.key.strip_prefix("job:").map(str::to_owned))
                .collect();
            let mut jobs: HashMap<String, Option<JobRecord>> = if job_ids.is_empty() {
                HashMap::new()
            } else {
                let read = self.store().read_many(&[], &job_ids).await?;
                job_ids.iter().cloned().zip(read.jobs).collect()
            };
            let outcomes: Vec<Result<EntryOutcome, EngineError>> = stream::iter(due)
                .map(|entry| {
                    let known = entry
                        .key
                        .strip_prefix("job:")
                        .and_then(|id| jobs.remove(id));
                    self.tick_entry(entry, known, now, horizon)
                })
                .buffer_unordered(TICK_CONCURRENCY)
                .collect()
                .await;
            let mut materialised = Vec::new();
            let mut wakes = Vec::new();
            for outcome in outcomes {
                let outcome = outcome?;
                report.jobs += outcome.jobs;
                report.fires += outcome.fires;
                report.missed += outcome.missed;
                report.wakeups += outcome.wakeups;
                progressed |= outcome.progressed;
                materialised.extend(outcome.materialised);
                wakes.extend(outcome.wakes);
            }
            // Fire messages go out early enough for dispatch to admit each run ahead of its time.
            self.wake_all(&wakes, self.config.admit_ahead).await?;
            let cleared: Vec<Result<(), EngineError>> = stream::iter(materialised)
                .map(|(stored, pending)| async move { self.clear_pending(&stored, &pending).await })
                .buffer_unordered(TICK_CONCURRENCY)
                .collect()
                .await;
            cleared.into_iter().collect::<Result<(), _>>()?;
            if count < BATCH || !progressed {
                break;
            }
        }
        if report.fires > 0 || report.missed > 0 || report.wakeups > 0 {
            tracing::debug!(?report, "tick");
        }
        Ok(report)
    }

    /// Plans one job now, as a tick would, when its next fire `next` is due before the tick's
    /// horizon; else does nothing (the tick plans it in time). For a job just created, changed
    /// or resumed: see [`EngineHooks::plan`](crate::app::EngineHooks::plan).
    pub async fn plan_job_now(
        &self,
        job_id: &JobId,
        next: DateTime<Utc>,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let horizon = now
            + chrono::Duration::from_std(self.config.tick_horizon)
                .unwrap_or_else(|_| chrono::Duration::seconds(60));
        if next > horizon {
            return Ok(());
        }
        let mut wakes = Vec::new();
        let (_, _, materialised) = self
            .tick_job(job_id, None, now, horizon, &mut wakes)
            .await?;
        self.wake_all(&wakes, self.config.admit_ahead).await?;
        if let Some((stored, pending)) = materialised {
            self.clear_pending(&stored, &pending).await?;
        }
        Ok(())
    }

    /// One wake-up of a tick: a job's fires planned and created (their messages are
    /// left to the caller, in `wakes`), or an execution's wake-up sent.
    async fn tick_entry(
        &self,
        entry: WakeUp,
        known: Option<Option<JobRecord>>,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
    ) -> Result<EntryOutcome, EngineError> {
        let mut outcome = EntryOutcome::default();
        if let Some(job_id) = entry.key.strip_prefix("job:") {
            let Ok(job_id) = JobId::parse(job_id) else {
                self.store().clear_wakeup_if(&entry.key, entry.due).await?;
                return Ok(outcome);
            };
            let (fires, missed, done) = self
                .tick_job(&job_id, known, now, horizon, &mut outcome.wakes)
                .await?;
            outcome.jobs = 1;
            outcome.fires = fires;
            outcome.missed = missed;
            outcome.materialised = done;
            // The job's entry now points past the horizon (or is gone) unless it changed
            // meanwhile; either way this batch made progress.
            outcome.progressed = true;
        } else if let Some(execution_id) = entry.key.strip_prefix("exec:") {
            // A trigger's fallback wake-up usually finds its run long finished: then there is
            // nothing to send. (A finished run's follow-up rides on its own dispatch message,
            // which is acknowledged only once that follow-up is done.)
            if self.needs_wakeup(execution_id).await? {
                let delay = (entry.due - now).to_std().unwrap_or_default();
                self.send_dispatch(execution_id, delay).await?;
                outcome.wakeups = 1;
            }
            self.store().clear_wakeup_if(&entry.key, entry.due).await?;
            outcome.progressed = true;
        } else {
            tracing::warn!(key = %entry.key, "unknown wake-up removed");
            self.store().clear_wakeup_if(&entry.key, entry.due).await?;
        }
        Ok(outcome)
    }

    /// Whether an execution's `exec:` wake-up still has work to start: false when the execution
    /// is final, or was never created (its trigger request died before creating it).
    async fn needs_wakeup(&self, execution_id: &str) -> Result<bool, EngineError> {
        let Some(record) = self.store().get_execution(execution_id).await? else {
            return Ok(false);
        };
        Ok(!ExecutionState::parse(&record.state).is_some_and(ExecutionState::is_final))
    }

    /// Plans a job's fires up to `horizon` and creates their executions, adding each to `wakes`
    /// (execution id, due time) for the caller to send. Returns (fires created, missed, and the job
    /// with the fires to clear from it once they are sent).
    /// `known` is the job as the tick's batch read it, if it did.
    async fn tick_job(
        &self,
        job_id: &JobId,
        mut known: Option<Option<JobRecord>>,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
        wakes: &mut Vec<(String, DateTime<Utc>)>,
    ) -> Result<(usize, u64, Option<(StoredJob, Vec<PendingFire>)>), EngineError> {
        let mut planned = None;
        let mut retry = self.step_retry();
        while retry.next_round().await {
            let record = match known.take() {
                Some(record) => record,
                None => self.store().get_job(job_id.as_str()).await?,
            };
            let Some(record) = record else {
                self.store()
                    .set_wakeup(&job_wakeup_key(job_id), None)
                    .await?;
                return Ok((0, 0, None));
            };
            let mut stored = decode_job(&record)?;
            if stored.job.pause_ended(now) {
                // A pause given an end ends by itself (its wake-up was at the end); the job is
                // then planned as any, from the end of the pause on.
                Box::pin(self.app.end_pause(stored, job_id, now)).await?;
                known = None;
                retry.went_on();
                continue;
            }
            let before = stored.job.state.clone();
            self.resend_overdue(&mut stored.job, now, horizon).await?;
            // Boxed: with the store's batch reads (DynamoDB's are deep futures) inlined, the
            // future of a dispatch step that plans a backfill's next window on settling would
            // overflow a worker's stack in a debug build.
            Box::pin(self.plan_backfills(&mut stored, now)).await?;
            // The debug mode as this process knows it (cached at most DEBUG_MODE_CACHE, never
            // read per fire): does it stop scheduled fires?
            let mode = Box::pin(self.app.debug_mode_now()).await;
            let stops = debug_mode_stops(mode, RunSource::Schedule);
            let plan = plan::plan_tick(&mut stored.job, now, horizon, stops);
            // Fires that missed the catch-up window count in the job's statistics with the
            // write that records them on the job.
            let missed =
                (plan.missed > 0).then(|| not_run_rollup(job_id, now, NotRun::Missed, plan.missed));
            if stored.job.state != before {
                stored.job.updated_at = now;
                match self
                    .commit_fires(&mut stored, now, missed.as_ref(), wakes)
                    .await?
                {
                    Committed::Done(created) => return Ok((created, plan.missed, None)),
                    Committed::Raced => continue,
                    Committed::Gone => return Ok((0, 0, None)),
                    Committed::OneByOne => {}
                }
                // The job's index entry stays as it is: it is due (that is why this tick is here),
                // so a crash before the fires are created brings the next tick back to them.
                // `clear_pending` points it at the next fire once they exist.
                match self.save_job_only(&stored, missed.as_ref()).await {
                    Ok(version) => stored.version = version,
                    Err(EngineError::App(crate::AppError::Conflict(_))) => continue,
                    Err(e) => return Err(e),
                }
            } else {
                self.app.refresh_wakeup(&stored.job).await?;
            }
            planned = Some((stored, plan.missed));
            break;
        }
        let Some((stored, missed)) = planned else {
            return Err(EngineError::Contended(format!("job {job_id}")));
        };
        let pending = stored.job.state.pending_fires.clone();
        if pending.is_empty() {
            self.app.refresh_wakeup(&stored.job).await?;
            return Ok((0, missed, None));
        }
        let mut created = 0;
        for fire in &pending {
            if self.materialise(&stored.job, fire, now).await? {
                created += 1;
            }
            // Sent even when it existed: the earlier tick may have died before sending. A
            // duplicate message finds the execution past Scheduled and does nothing twice.
            wakes.push((fire.execution_id.clone(), fire.due));
        }
        Ok((created, missed, Some((stored, pending))))
    }

    /// Sends again, at once, the runs of the job's line that ride on its wake-up and whose
    /// fallback wake-up the tick would now see (they were due at least the fallback's grace ago),
    /// and leaves them riding no more: the job's write that follows records that, and a crash
    /// before it has them sent again by the next tick (a duplicate message does nothing twice). A
    /// run still waiting then lost its message with a tick that died before sending it. (A
    /// fallback wake-up is sent with a delay to its own time; a riding run goes at once, so it
    /// is late by a tick at most.)
    async fn resend_overdue(
        &self,
        job: &mut Job,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
    ) -> Result<(), EngineError> {
        let overdue: Vec<(String, DateTime<Utc>)> = job
            .state
            .take_overdue(horizon)
            .into_iter()
            .map(|(execution_id, _)| (execution_id, now))
            .collect();
        if overdue.is_empty() {
            return Ok(());
        }
        tracing::info!(job_id = %job.job_id(), runs = overdue.len(), "runs still waiting past their fallback time sent again");
        self.wake_all(&overdue, std::time::Duration::ZERO).await
    }

    /// How much later than its fallback wake-up would have a run riding on its job's wake-up
    /// may be sent again ([`sundial_core::job::covers`]): one tick's horizon, the longest a
    /// tick's view of the two can differ when ticks come once per period.
    pub(super) fn ride_slack(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.config.tick_horizon).unwrap_or_default()
    }

    /// Plans the job's waiting backfills ([`plan::plan_backfills`]), reading first what ran of
    /// the times a window holds (by id: [`App::runs_of_times`](crate::App)), at most
    /// [`BACKFILL_READ_ROUNDS`] windows' worth. Reads follow the read of the job, so a run
    /// another planner created of the job as read is seen, and one planned is in the job.
    async fn plan_backfills(
        &self,
        stored: &mut StoredJob,
        now: DateTime<Utc>,
    ) -> Result<(), EngineError> {
        if stored.job.state.pending_backfills.is_empty() {
            return Ok(());
        }
        let mut known: HashMap<DateTime<Utc>, plan::RunsOfTime> = HashMap::new();
        for round in 1..=BACKFILL_READ_ROUNDS {
            let mut planned = stored.job.clone();
            let plan = plan::plan_backfills(&mut planned, now, BACKFILL_FIRES_PER_PLAN, &|t| {
                known.get(&t).copied()
            });
            if plan.unknown.is_empty() || round == BACKFILL_READ_ROUNDS {
                stored.job = planned;
                break;
            }
            let incarnation = stored.job.state.incarnation;
            let found = Box::pin(self.app.runs_of_times(
                stored.job.job_id(),
                incarnation,
                &plan.unknown,
            ))
            .await?;
            known.extend(found);
        }
        Ok(())
    }

    /// Writes a planned job, its fires' executions, a fallback wake-up for each fire and
    /// the job's next timer entry in one atomic store write, and adds the fires to `wakes`: one
    /// write where the one-by-one path takes four. The fallback wake-ups cover a tick that dies after
    /// this write and before its messages go out: the admitting write of each run removes its fallback wake-up,
    /// and a fallback still there after the grace brings the run to dispatch through the tick.
    /// `OneByOne` (nothing written, `stored` as it was) when there are no fires, too many for one
    /// write, or one of their executions exists already (a job deleted and created again under
    /// the same id): then the pending-fires path creates what it can.
    async fn commit_fires(
        &self,
        stored: &mut StoredJob,
        now: DateTime<Utc>,
        missed: Option<&RollupRecord>,
        wakes: &mut Vec<(String, DateTime<Utc>)>,
    ) -> Result<Committed, EngineError> {
        let pending = &stored.job.state.pending_fires;
        if pending.is_empty() || pending.len() > MAX_FIRES_PER_COMMIT {
            return Ok(Committed::OneByOne);
        }
        let executions = pending
            .iter()
            .map(|fire| new_execution(&stored.job, fire, now))
            .collect::<Result<Vec<_>, _>>()?;
        let records = executions
            .iter()
            .map(|e| encode_execution(e, 1))
            .collect::<Result<Vec<_>, _>>()?;
        let fires = std::mem::take(&mut stored.job.state.pending_fires);
        // Those due now that simply start take their slots in this same write.
        plan::line_up(&mut stored.job, &fires, now);
        // Runs of the line that rode on the job's wake-up and that its new one comes too late
        // for get fallback wake-ups of their own first (a job whose next fire moved far out).
        let wake = stored.job.wake_at();
        let slack = self.ride_slack();
        self.app
            .cover_waiting_runs(&mut stored.job, wake, slack)
            .await?;
        // A tick looks `tick_horizon` ahead, so a fallback wake-up must lie that much further out for the
        // tick not to see it before the run's own message had its chance. A fire that waits in
        // line does without when the job's new wake-up brings the tick back to the job by then,
        // give or take a tick (any job firing more often than about every two horizons): the
        // tick sends it again itself if it is still waiting ([`Engine::resend_overdue`]).
        let horizon = chrono::Duration::from_std(self.config.tick_horizon).unwrap_or_default();
        let fallbacks: Vec<(String, DateTime<Utc>)> = fires
            .iter()
            .filter_map(|f| {
                let at = f.due + horizon + FALLBACK_WAKEUP_GRACE;
                let rides = stored
                    .job
                    .state
                    .ride_on_wakeup(&f.execution_id, at, wake, slack);
                (!rides).then(|| (execution_wakeup_key(&f.execution_id), at))
            })
            .collect();
        let job_key = job_wakeup_key(stored.job.job_id());
        let record = encode_job(&stored.job, stored.version, stored.service.clone());
        let mut writes = Vec::with_capacity(2 + 2 * records.len());
        writes.push(Write::UpdateJob(&record));
        writes.extend(records.iter().map(Write::CreateExecution));
        writes.extend(
            fallbacks
                .iter()
                .map(|(key, due)| Write::SetWakeup(key, Some(*due))),
        );
        writes.push(Write::SetWakeup(&job_key, wake));
        writes.extend(missed.map(Write::AddRollup));
        match self.store().write_all(&writes).await {
            Ok(()) => {
                for execution in &executions {
                    self.publish_state(execution).await;
                }
                wakes.extend(fires.into_iter().map(|f| (f.execution_id, f.due)));
                Ok(Committed::Done(executions.len()))
            }
            // Lost to another writer: of the job, or (a concurrent transaction on DynamoDB) of
            // one of its items. Read the job and plan again.
            Err(WriteAllError {
                error: StoreError::VersionConflict { .. },
                ..
            }) => Ok(Committed::Raced),
            Err(WriteAllError {
                index: Some(0),
                error: StoreError::NotFound(_),
            }) => Ok(Committed::Gone),
            Err(WriteAllError {
                error: StoreError::AlreadyExists(_),
                ..
            }) => {
                stored
                    .job
                    .state
                    .waiting
                    .retain(|w| !fires.iter().any(|f| f.execution_id == w.execution_id));
                stored.job.state.pending_fires = fires;
                Ok(Committed::OneByOne)
            }
            Err(e) => Err(StoreError::from(e).into()),
        }
    }

    /// Writes a planned job back against the version it was read at, leaving its wake-up as it
    /// is ([`App::save_job_only`](crate::App)), with the statistics of the fires it found missed
    /// in the same write. A lost race is [`AppError::Conflict`](crate::AppError::Conflict).
    async fn save_job_only(
        &self,
        stored: &StoredJob,
        missed: Option<&RollupRecord>,
    ) -> Result<u64, EngineError> {
        let Some(missed) = missed else {
            return Ok(self.app.save_job_only(stored).await?);
        };
        let record = encode_job(&stored.job, stored.version, stored.service.clone());
        match self
            .store()
            .write_all(&[Write::UpdateJob(&record), Write::AddRollup(missed)])
            .await
        {
            Ok(()) => Ok(stored.version + 1),
            Err(WriteAllError {
                index: Some(_),
                error: StoreError::VersionConflict { key, .. },
            }) => Err(crate::AppError::Conflict(format!("{key} was changed concurrently")).into()),
            Err(e) => Err(StoreError::from(e).into()),
        }
    }

    /// Creates the execution of a planned fire unless it exists; returns whether it created it.
    async fn materialise(
        &self,
        job: &Job,
        fire: &PendingFire,
        now: DateTime<Utc>,
    ) -> Result<bool, EngineError> {
        let execution = new_execution(job, fire, now)?;
        let created = self
            .store()
            .create_execution(&encode_execution(&execution, 1)?)
            .await?;
        if created {
            self.publish_state(&execution).await;
        }
        Ok(created)
    }

    /// Removes materialised fires from the job's `pendingFires` (and refreshes its index entry).
    async fn clear_pending(
        &self,
        known: &StoredJob,
        done: &[PendingFire],
    ) -> Result<(), EngineError> {
        let job_id = known.job.job_id();
        let now = self.now();
        let result = self
            .app
            .modify_from(Some(known.clone()), job_id, |stored| {
                // Created now: they wait in line for admission like any other run (those due
                // now that simply start are admitted in this write), except those dispatch
                // already took since their messages went out.
                plan::take_planned(&mut stored.job, done, now);
                Ok(())
            })
            .await;
        match result {
            Ok(_) | Err(crate::AppError::NotFound(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
