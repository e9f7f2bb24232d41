//! Admission: a due run takes its job's slot under the overlap policy, or waits, is skipped,
//! buffered or stops another run; a run late past its catch-up window is skipped; an admitted run
//! enters Processing for its attempt.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::debug_mode::debug_mode_stops;
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::JobStatus;
use sundial_core::job::OverlapPolicy;
use sundial_core::outcome::Outcome;
use sundial_core::plan::{self, Admission, Missed, NotStarted};
use sundial_core::retry;
use sundial_core::source::RunSource;
use sundial_core::stats::NotRun;

use super::{transition_error, Step};
use crate::app::AppError;
use crate::engine::{Engine, EngineError, Loaded, Written};
use crate::records::StoredJob;
use sundial_core::settle::AttemptEnd;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::Queue;
use sundial_ports::store::Store;

/// What [`Engine::held_check`] found.
pub(super) enum Held {
    /// As admitted: make the call.
    Admitted,
    /// Written by someone else, or its job is gone: read it again.
    Moved,
    /// It may no longer start (its job was paused): why, with the pause's notes.
    Stopped(NotStarted, Option<String>),
}

/// How soon the run next in its job's line looks again, should nothing send it sooner (see
/// [`Engine::send_next_in_line`]); runs further back look again later ([`plan::line_recheck`]).
pub(super) const ORDER_RECHECK: chrono::Duration = chrono::Duration::seconds(1);

/// How soon a run that stopped another (`CancelOther`, `TerminateOther`) looks again when the
/// stopped run's call is still in flight in another process: its holder closes it within
/// [`EngineConfig::stop_check_every`](crate::engine::EngineConfig::stop_check_every).
pub(super) const STOPPED_CALL_RECHECK: chrono::Duration = chrono::Duration::seconds(1);

/// How long before its fire time a run admitted ahead checks that it was not stopped meanwhile:
/// long enough for a burst's checks to be read before the burst, short enough that a stop later
/// than this is no different from one that meets the call in flight.
pub(super) const HELD_RECHECK: chrono::Duration = chrono::Duration::milliseconds(100);

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// The concurrency gate for an enqueued run. The slot it takes is written with the run's
    /// next write (Processing, Skipped, or Enqueued in the buffer), which also removes the run's
    /// fallback wake-up.
    pub(super) async fn admit(
        &self,
        loaded: &mut Loaded,
        job: StoredJob,
    ) -> Result<Step, EngineError> {
        if let Err(why) = self.may_start(&loaded.execution, &job).await {
            return self.skip_unstarted(loaded, Some(job), why).await;
        }
        let id = loaded.execution.execution_id.clone();
        let policy = self.policy_of(&loaded.execution, &job);
        let (mut after, admission) = self.gate(loaded, &job, policy);
        match admission {
            Admission::Start => {
                let now = self.now();
                Box::pin(self.start_attempt(loaded, &mut after, "started", now)).await
            }
            Admission::StartAfterStopping { stop, terminate } => {
                let (to, verb) = if terminate {
                    (ExecutionState::Terminated, "terminated")
                } else {
                    (ExecutionState::Cancelled, "cancelled")
                };
                // The new run's call starts only once the old runs' calls are closed: at once
                // for calls this process makes; for a call in another process (on AWS) when its
                // holder read the stop and let its lease go, or the lease ran out.
                let mut elsewhere: Option<DateTime<Utc>> = None;
                for other in stop {
                    let reason = format!("{verb} by overlap policy {policy}: {id} started");
                    if let Some(until) = Box::pin(self.stop_execution(&other, to, &reason)).await? {
                        elsewhere = Some(elsewhere.map_or(until, |at| at.min(until)));
                    }
                }
                if let Some(until) = elsewhere {
                    tracing::info!(execution_id = %id, %until, "waits for the call of the run it stopped to close");
                    let at = until.min(self.now() + STOPPED_CALL_RECHECK);
                    self.wake_at(&id, at).await?;
                    return Ok(Step::Done);
                }
                let now = self.now();
                Box::pin(self.start_attempt(loaded, &mut after, "started", now)).await
            }
            Admission::Skip | Admission::Drop => {
                loaded.not_run = Some(if admission == Admission::Skip {
                    NotRun::Skipped
                } else {
                    NotRun::Dropped
                });
                let running = after.job.state.running.join(", ");
                let reason = if admission == Admission::Skip {
                    format!("skipped by overlap policy {policy}: {running} still running")
                } else {
                    format!(
                        "dropped: the buffer of overlap policy {policy} is full ({} waiting)",
                        after.job.state.buffered.len()
                    )
                };
                self.finish(loaded, Some(&mut after), ExecutionState::Skipped, &reason)
                    .await
            }
            // Waits in the job's buffer; the run that frees a slot sends it. Written when it came
            // straight from Scheduled (to store that it is enqueued) or joined the buffer now.
            Admission::Buffer
                if loaded.job_changed || loaded.record.state != ExecutionState::Enqueued.name() =>
            {
                match self.write_step(loaded, Some(&mut after), &[]).await? {
                    Written::Yes => Ok(Step::Done),
                    Written::ExecutionMoved | Written::JobMoved => Ok(Step::Again),
                }
            }
            Admission::Buffer => Ok(Step::Done),
            Admission::Wait { behind } => self.wait_behind(loaded, &job, &behind).await,
        }
    }

    /// A run that must let `behind`, due before it, through the gate first (runs are admitted in
    /// order per job). When `behind` no longer waits (admitted, over or gone: a line entry a
    /// crash left behind), it leaves the line and the step goes again. Otherwise the run looks
    /// again in [`ORDER_RECHECK`] times its place in line ([`plan::line_recheck`]); the decision
    /// on the run before it sends it sooner.
    pub(super) async fn wait_behind(
        &self,
        loaded: &Loaded,
        job: &StoredJob,
        behind: &str,
    ) -> Result<Step, EngineError> {
        let state = &job.job.state;
        let still_waiting = match self.store().get_execution(behind).await? {
            Some(record) => {
                matches!(
                    ExecutionState::parse(&record.state),
                    Some(ExecutionState::Scheduled | ExecutionState::Enqueued)
                ) && !state.buffered.iter().any(|id| id == behind)
            }
            None => state.pending_fires.iter().any(|f| f.execution_id == behind),
        };
        if !still_waiting {
            let mut fixed = job.clone();
            fixed.job.state.waiting.retain(|w| w.execution_id != behind);
            fixed.job.updated_at = self.now();
            return match self.app.save_job_only(&fixed).await {
                Ok(_) | Err(AppError::Conflict(_)) => Ok(Step::Again),
                Err(e) => Err(e.into()),
            };
        }
        let id = &loaded.execution.execution_id;
        let ahead = plan::runs_ahead_in_line(&job.job, id);
        tracing::debug!(execution_id = %id, behind, ahead, "waits in line");
        self.wake_at(id, self.now() + plan::line_recheck(ORDER_RECHECK, ahead))
            .await?;
        Ok(Step::Done)
    }

    /// After a run passed the gate: sends the next run in its job's line when that one is due
    /// already, so a line of due runs (a backfill, triggers) moves at the speed of its writes
    /// rather than of [`ORDER_RECHECK`]. A duplicate message is harmless.
    pub(in crate::engine) async fn send_next_in_line(
        &self,
        job: &StoredJob,
    ) -> Result<(), EngineError> {
        let Some(next) = job.job.state.waiting.first() else {
            return Ok(());
        };
        if next.due <= self.now() {
            self.send_dispatch(&next.execution_id, StdDuration::ZERO)
                .await?;
        }
        Ok(())
    }

    /// Whether a scheduled fire reached dispatch too late to run: older than its job's catch-up
    /// window, or late and left out by its catch-up policy ([`plan::missed_at_admission`]).
    /// Triggers and backfills are exempt, and so is a run that already holds a slot or waits in
    /// the buffer (it was admitted in time).
    pub(super) fn missed_catchup(&self, execution: &Execution, job: &StoredJob) -> Option<Missed> {
        let look_ahead = chrono::Duration::from_std(self.config.tick_horizon).unwrap_or_default();
        plan::missed_at_admission(&job.job, execution, self.now(), look_ahead)
    }

    /// Ends a fire that [missed its chance](Engine::missed_catchup) as `Skipped`, counted in the
    /// job's `missedCatchupWindow` in the same write.
    pub(super) async fn skip_missed(
        &self,
        loaded: &mut Loaded,
        job: StoredJob,
        missed: Missed,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        let mut after = job;
        plan::take_missed(&mut after.job, &loaded.execution);
        after.job.updated_at = now;
        loaded.job_changed = true;
        loaded.clear_fallback = true;
        loaded.not_run = Some(NotRun::Missed);
        let reason = missed.reason(loaded.execution.scheduled_time, now);
        self.finish(loaded, Some(&mut after), ExecutionState::Skipped, &reason)
            .await
    }

    /// Admits a scheduled run before its fire time `due` (within
    /// [`EngineConfig::admit_ahead`](super::EngineConfig::admit_ahead)): takes its slot and
    /// writes `Processing` now, then holds it and calls at `due`. Only when admission cannot
    /// depend on what happens until then: the run starts without skipping, buffering or stopping
    /// another, and no later run may stop it (not `CancelOther` or `TerminateOther`). Otherwise
    /// it waits for its time and is admitted then, as without this.
    pub(super) async fn admit_ahead(
        &self,
        loaded: &mut Loaded,
        job: StoredJob,
        due: DateTime<Utc>,
    ) -> Result<Step, EngineError> {
        if let Err(why) = self.may_start(&loaded.execution, &job).await {
            return self.skip_unstarted(loaded, Some(job), why).await;
        }
        let id = loaded.execution.execution_id.clone();
        let policy = self.policy_of(&loaded.execution, &job);
        let stoppable = matches!(
            policy,
            OverlapPolicy::CancelOther | OverlapPolicy::TerminateOther
        );
        // A run whose scheduleToStart ends before its fire time times out at that time, not
        // ahead of it.
        let start_by = retry::schedule_to_start_deadline(
            loaded.execution.due_at(),
            job.job.definition.timeouts(),
        );
        if stoppable || start_by.is_some_and(|by| due > by) {
            return self.wait_for(&id, due, None).await;
        }
        // When the gate does not simply start it, nothing is written: `loaded` is dropped.
        let (mut after, admission) = self.gate(loaded, &job, policy);
        if admission != Admission::Start {
            return self.wait_for(&id, due, None).await;
        }
        loaded
            .execution
            .transition(
                ExecutionState::Enqueued,
                self.now(),
                "admitted ahead of its fire time",
            )
            .map_err(transition_error)?;
        self.start_attempt(loaded, &mut after, "started", due).await
    }

    /// The concurrency gate, on a copy of `job`: its decision, and the job as it leaves it.
    /// Marks `loaded` so that its next write also writes that job (when the gate changed it) and
    /// removes the run's fallback wake-up.
    pub(super) fn gate(
        &self,
        loaded: &mut Loaded,
        job: &StoredJob,
        policy: OverlapPolicy,
    ) -> (StoredJob, Admission) {
        let mut after = job.clone();
        let admission = plan::gate(&mut after.job, &loaded.execution, policy);
        loaded.job_changed = after.job != job.job;
        if loaded.job_changed {
            after.job.updated_at = self.now();
        }
        loaded.clear_fallback = true;
        (after, admission)
    }

    /// [`plan::may_start`] for `execution`, a run of `job` not yet started: the one decision
    /// on a pause (and debug mode) the engine asks, at admission, at admission ahead, and
    /// before the call of a run admitted ahead ([`Engine::held_check`]).
    pub(super) async fn may_start(
        &self,
        execution: &Execution,
        job: &StoredJob,
    ) -> Result<(), NotStarted> {
        plan::may_start(
            !job.job.definition.active(),
            self.debug_stops(execution).await,
            RunSource::of(execution),
        )
    }

    /// Whether the debug mode in force (cached, read from the store at most every 5 s) stops
    /// `execution`: [`debug_mode_stops`] on what started it.
    async fn debug_stops(&self, execution: &Execution) -> bool {
        let mode = self.app.debug_mode_now().await;
        debug_mode_stops(mode, RunSource::of(execution))
    }

    /// Ends a run that may not start ([`Engine::may_start`]) as `Skipped`, with the reason the
    /// ledger reads back, taking it out of its job's line (`job`, when it has one) in the same
    /// write; its slot or buffer place, if it held one, is freed as any finished run's is.
    pub(super) async fn skip_unstarted(
        &self,
        loaded: &mut Loaded,
        mut job: Option<StoredJob>,
        why: NotStarted,
    ) -> Result<Step, EngineError> {
        let id = loaded.execution.execution_id.clone();
        let notes = job
            .as_ref()
            .and_then(|stored| stored.job.state.paused_notes.clone());
        if let Some(after) = job.as_mut() {
            let before = after.job.state.clone();
            plan::leave_line(&mut after.job, &id);
            loaded.job_changed = after.job.state != before;
            if loaded.job_changed {
                after.job.updated_at = self.now();
            }
        }
        loaded.clear_fallback = true;
        let reason = why.reason(notes.as_deref());
        loaded
            .execution
            .skip_unstarted(self.now(), &reason)
            .map_err(transition_error)?;
        loaded.execution.run.lease_until = None;
        match self.write_step(loaded, job.as_mut(), &[]).await? {
            Written::Yes => {}
            Written::ExecutionMoved | Written::JobMoved => return Ok(Step::Again),
        }
        tracing::info!(execution_id = %id, reason, "run not started");
        self.after_final(&loaded.execution, job.as_ref()).await?;
        Ok(Step::Done)
    }

    /// Whether a run admitted ahead of its fire time (or about to make its first call) is as its
    /// admission left it: no cancel, terminate, stopping overlap policy or parent close policy
    /// wrote it since, its job still exists, and [`plan::may_start`] still lets it start (its
    /// job not paused since). Reads the records without decoding them (only their presence,
    /// version and the job's status matter), except a job that stops the run, for its notes.
    pub(super) async fn held_check(&self, loaded: &Loaded) -> Result<Held, EngineError> {
        let read = self
            .store()
            .read_many(
                std::slice::from_ref(&loaded.record.execution_id),
                std::slice::from_ref(&loaded.record.job_id),
            )
            .await?;
        let unchanged = read
            .executions
            .first()
            .and_then(Option::as_ref)
            .is_some_and(|record| record.version == loaded.record.version);
        let Some(Some(job)) = read.jobs.first() else {
            return Ok(Held::Moved);
        };
        if !unchanged {
            return Ok(Held::Moved);
        }
        let paused = job.state == JobStatus::Paused.name();
        let source = RunSource::of(&loaded.execution);
        let debug_stops = self.debug_stops(&loaded.execution).await;
        match plan::may_start(paused, debug_stops, source) {
            Ok(()) => Ok(Held::Admitted),
            Err(why) => {
                let notes = crate::records::decode_job(job)?.job.state.paused_notes;
                Ok(Held::Stopped(why, notes))
            }
        }
    }

    /// Whether the lease on a running attempt belongs to a process known to be dead: this
    /// engine is the only one alive on its store (see
    /// [`EngineConfig::sole_engine`](super::EngineConfig::sole_engine)) and the lease is not its own.
    pub(super) fn holder_is_dead(&self, execution: &Execution) -> bool {
        self.config.sole_engine
            && execution.run.lease_holder.as_deref() != Some(self.config.incarnation.as_str())
    }

    pub(super) fn policy_of(&self, execution: &Execution, job: &StoredJob) -> OverlapPolicy {
        plan::policy_of(&job.job, execution)
    }

    /// Enters Processing for a new attempt (the first or a retry) starting at `now` (the present,
    /// or a fire time just ahead) and runs it.
    pub(super) async fn start_attempt(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<Step, EngineError> {
        let definition = &job.job.definition;
        let first = loaded.execution.attempts() == 0;
        loaded
            .execution
            .transition(ExecutionState::Processing, now, message)
            .map_err(transition_error)?;
        if first {
            // Its last results as the job holds them now, kept across its retries.
            loaded.execution.run.last_results =
                Some(sundial_core::execution::LastResults::capture(&job.job));
            let deadline =
                retry::schedule_to_start_deadline(loaded.execution.due_at(), definition.timeouts());
            if deadline.is_some_and(|d| now > d) {
                return self
                    .settle(
                        loaded,
                        job,
                        AttemptEnd::Failed {
                            outcome: Outcome::Timeout,
                            response: Value::Null,
                            detail: "scheduleToStart passed before the first attempt".into(),
                        },
                        true,
                    )
                    .await;
            }
        }
        Box::pin(self.run_attempt(loaded, job, now)).await
    }
}
