//! Dispatch: take one execution one step along its state machine.
//!
//! A dispatch message names an execution, nothing more: what to do is read from the execution
//! itself, so a message that arrives twice, late, or after a crash does the right thing. Scheduled
//! runs wait for their due time; enqueued runs pass the concurrency gate; running ones run the
//! request chain, then wait for an async job's status; failed ones wait for their retry. Each step
//! ends with a conditional write, and a write lost to another worker (a user's cancel, an async
//! job's feedback) makes the step read the execution again and decide afresh.

mod admit;
mod async_job;
mod call;
mod settle;

use chrono::{DateTime, Utc};
use sundial_core::execution::ExecutionState;

use std::collections::HashMap;

use super::{Engine, EngineError, Loaded, Run};
use crate::app::AppError;
use crate::records::StoredJob;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::Queue;
use sundial_ports::store::Store;

/// How long past its attempt deadline a worker's lease on a running chain lasts; after it another
/// worker presumes the first one dead and runs the attempt again.
pub(super) const LEASE_MARGIN: chrono::Duration = chrono::Duration::seconds(30);

/// Whether a step finished or must read the execution again.
pub(super) enum Step {
    /// The message's work is done.
    Done,
    /// A write lost a race (or the run was found moved): read again after a back-off.
    Again,
    /// The step waited in place for the run's time, changing nothing: go on at once, from the
    /// job it holds when it kept it (the run and its job as read before the wait: a write made
    /// from them is conditional, so a change meanwhile loses it and the next round reads again),
    /// else from a new read.
    Waited(Option<Box<StoredJob>>),
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Takes an execution one step further: what a dispatch message asks. Idempotent.
    pub async fn dispatch(&self, execution_id: &str) -> Result<(), EngineError> {
        self.dispatch_from(execution_id, None).await
    }

    /// What a batch of dispatch messages reads first, in one store read that may be a moment
    /// behind (`Engine::read_runs` says why that is safe): each execution with its job, for
    /// [`Engine::dispatch_from`]. A run it leaves out, and every run when the read fails, its step
    /// reads for itself.
    pub async fn prefetch(&self, execution_ids: &[String]) -> HashMap<String, Option<Run>> {
        match self.read_runs(execution_ids, false).await {
            Ok(runs) => runs,
            Err(e) => {
                tracing::debug!(error = %e, "batch read failed; reading one by one");
                HashMap::new()
            }
        }
    }

    /// [`Engine::dispatch`] starting from what [`Engine::prefetch`] read, when it read it
    /// (`Some(None)`: the execution does not exist).
    pub async fn dispatch_from(
        &self,
        execution_id: &str,
        mut read: Option<Option<Run>>,
    ) -> Result<(), EngineError> {
        // Counted from the first read that finds the run until the task is done with it, so a
        // backfill is planned further only when few of its job's tasks are still alive.
        let mut counted = None;
        let mut stepped = Err(EngineError::Contended(format!("execution {execution_id}")));
        let mut retry = self.step_retry();
        while retry.next_round().await {
            let run = match read.take() {
                Some(run) => run,
                None => match self.read_run(execution_id).await {
                    Ok(run) => run,
                    Err(e) => {
                        stepped = Err(e);
                        break;
                    }
                },
            };
            let Some(Run { mut loaded, job }) = run else {
                stepped = Ok(());
                break;
            };
            if counted.is_none() {
                let job_id = loaded.execution.job_id.clone();
                counted = Some((self.job_tasks.start(job_id.as_str()), job_id));
            }
            match self.step(&mut loaded, job).await {
                Ok(Step::Done) => {
                    stepped = Ok(());
                    break;
                }
                Ok(Step::Again) => {}
                Ok(Step::Waited(kept)) => {
                    // No read after the wait (issue 31): the step changed nothing before it.
                    if let Some(job) = kept {
                        read = Some(Some(Run {
                            loaded,
                            job: Some(*job),
                        }));
                    }
                    retry.went_on();
                }
                Err(e) => {
                    stepped = Err(e);
                    break;
                }
            }
        }
        if let Some((counted, job_id)) = counted {
            if counted.end() {
                self.plan_backfill_now(&job_id).await;
            }
        }
        stepped
    }

    /// A message that came before `at`: waits the rest out here when it is short (SQS delays are
    /// whole seconds, so a fire's message arrives up to a second early), else sends a new message
    /// for `at`. `unchanged` is the run's job when the step changed nothing before waiting, so
    /// that the next step starts from it instead of reading the run again.
    pub(super) async fn wait_for(
        &self,
        execution_id: &str,
        at: DateTime<Utc>,
        unchanged: Option<StoredJob>,
    ) -> Result<Step, EngineError> {
        let wait = (at - self.now()).to_std().unwrap_or_default();
        if !wait.is_zero() && wait <= self.config.max_inline_wait {
            self.app.sleep_until(at).await;
            return Ok(Step::Waited(unchanged.map(Box::new)));
        }
        self.wake_at(execution_id, at).await?;
        Ok(Step::Done)
    }

    /// One step of an execution in `state`. Each branch's use case is a boxed future: they are
    /// deep (a settle awaits the store's atomic write, the audit entry and the rollup with it), and
    /// inline they made this future's poll frame half a megabyte in a debug build, past a 2 MiB
    /// worker stack on the AWS dispatch path.
    pub(super) async fn step(
        &self,
        loaded: &mut Loaded,
        job: Option<StoredJob>,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        let state = loaded.execution.state();
        tracing::debug!(execution_id = %loaded.execution.execution_id, state = state.name(), "dispatch step");
        if state.is_final() {
            // A stop's message: the run's call may still be in flight, in this process or (on
            // AWS) another; its holder does the follow-up when the call is closed. Looked at again
            // when the lease runs out, in case the holder died.
            if let Some(until) = self.call_elsewhere(&loaded.execution) {
                let id = &loaded.execution.execution_id;
                tracing::debug!(execution_id = %id, "stopped in its call; its holder follows up");
                self.wake_at(id, until).await?;
                return Ok(Step::Done);
            }
            return Box::pin(self.finish_stopped(loaded, job.as_ref(), false)).await;
        }
        let Some(mut job) = job else {
            loaded.clear_fallback = !state.is_final();
            return Box::pin(self.finish(
                loaded,
                None,
                ExecutionState::Cancelled,
                "its job was deleted",
            ))
            .await;
        };
        let id = loaded.execution.execution_id.clone();
        if matches!(state, ExecutionState::Scheduled | ExecutionState::Enqueued) {
            if let Some(missed) = self.missed_catchup(&loaded.execution, &job) {
                return Box::pin(self.skip_missed(loaded, job, missed)).await;
            }
        }
        match state {
            ExecutionState::Scheduled => {
                let due = loaded
                    .execution
                    .run
                    .due
                    .unwrap_or(loaded.execution.scheduled_time);
                if due > now {
                    if (due - now).to_std().unwrap_or_default() <= self.config.admit_ahead {
                        return Box::pin(self.admit_ahead(loaded, job, due)).await;
                    }
                    return self.wait_for(&id, due, Some(job)).await;
                }
                // Enqueued only in memory: the write that follows admission (Processing, Skipped,
                // or Enqueued when it must wait in the buffer) records both transitions, saving a
                // write and a re-read per run. A worker lost before that write leaves it Scheduled,
                // and the redelivered message admits it again (admission is idempotent).
                loaded
                    .execution
                    .transition(ExecutionState::Enqueued, now, "due")
                    .map_err(transition_error)?;
                Box::pin(self.admit(loaded, job)).await
            }
            ExecutionState::Enqueued => Box::pin(self.admit(loaded, job)).await,
            ExecutionState::Failed => {
                let at = loaded.execution.run.retry_at.unwrap_or(now);
                if at > now {
                    return self.wait_for(&id, at, Some(job)).await;
                }
                let number = loaded.execution.attempts() + 1;
                let reason = format!("retry: attempt {number}");
                Box::pin(self.start_attempt(loaded, &mut job, &reason, now)).await
            }
            ExecutionState::Processing if loaded.execution.run.awaiting_async => {
                Box::pin(self.async_step(loaded, &mut job)).await
            }
            ExecutionState::Processing => match loaded.execution.run.lease_until {
                Some(lease) if lease > now && !self.holder_is_dead(&loaded.execution) => {
                    // Another worker runs the chain; look again when its lease ends.
                    self.wake_at(&id, lease).await?;
                    Ok(Step::Done)
                }
                _ => {
                    loaded.execution.record(
                        now,
                        "the worker running this attempt was lost; running the attempt again",
                    );
                    // A run admitted ahead of its fire time still calls at that time.
                    let at = loaded.execution.run.due.filter(|due| *due > now);
                    Box::pin(self.run_attempt(loaded, &mut job, at.unwrap_or(now))).await
                }
            },
            _ => Ok(Step::Done),
        }
    }
}

fn transition_error(e: sundial_core::execution::TransitionError) -> EngineError {
    EngineError::App(AppError::Unavailable(e.to_string()))
}
