//! Settling: how an attempt ended becomes the run's next state (a success, a retry, the end) in
//! one write with its job's slot; a finished run frees its slot, starts the next buffered run,
//! and closes its children; stopping other runs for overlap and close policies.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::{Job, JobId};
use sundial_core::plan;

use super::{transition_error, Step};
use crate::app::{audit_record, AppError, ChangeBy, Entry};
use crate::engine::{Engine, EngineError, Loaded, Released, Written};
use crate::records::{decode_job, encode_job, job_wakeup_key, StoredJob};
use sundial_core::settle::{self, AttemptEnd};
use sundial_ports::events::EventPublisher;
use sundial_ports::http::{HttpClient, DEFAULT_CALL_TIMEOUT};
use sundial_ports::queue::Queue;
use sundial_ports::store::{
    AuditRecord, JobFilter, JobOrder, PageRequest, Store, StoreError, Write, WriteAllError,
};

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Records how an attempt ended: success, waiting for an async job, a retry, or the end.
    /// `timed_out_before_start` ends the run without retries (scheduleToStart).
    pub(super) async fn settle(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
        end: AttemptEnd,
        timed_out_before_start: bool,
    ) -> Result<Step, EngineError> {
        // Runs of a job that overlap (an `AllowAll` job, a backfill) would race each other for
        // the job's write when they end together: each writes its end alone, and frees its slot
        // in a write shared with the others ([`Engine::after_final`]). A run alone on its job
        // ends and frees its slot in one write. (An admission not yet written rides on this
        // write, so it cannot go alone.)
        let mut separate = !loaded.job_changed && job.job.state.running.len() > 1;
        let mut job_races = 0;
        let mut retry = self.step_retry();
        while retry.next_round().await {
            // What this round changes is applied to the execution as it is now; a write lost to
            // a concurrent job writer applies it again from here.
            let unsettled = loaded.execution.clone();
            let definition = &job.job.definition;
            let now = self.now();
            let execution = &mut loaded.execution;
            if execution.is_finished() {
                // A user or a policy ended it while the attempt ran (its call ended before the
                // stop reached it): an async job that took the request is told to cancel.
                let took_request = matches!(end, AttemptEnd::AwaitAsync);
                return Box::pin(self.finish_stopped(loaded, Some(job), took_request)).await;
            }
            let settled =
                settle::settle_attempt(execution, definition, &end, now, timed_out_before_start)
                    .map_err(transition_error)?;
            let notify = end.outcome_and_response().filter(|_| settled.notify);
            // A run that ended frees its slot and leaves its result on the job in the same
            // write as its final state. A run its slot goes to (from the buffer) gets a fallback wake-up
            // in that write too, so a crash before its message is sent does not strand it. After
            // losing the job twice to other writers (or finding it gone) the execution is written
            // alone and the job's side is left to `after_final`, which retries on its own: the
            // attempt's outcome must not wait on a busy job, or its call would be made again.
            let ride = loaded.job_changed;
            let before = job.job.clone();
            let finished = loaded.execution.is_finished();
            let started = if finished && !separate {
                let started = self.apply_final(job, &loaded.execution);
                if job.job != before {
                    job.job.updated_at = now;
                    loaded.job_changed = true;
                }
                started
            } else {
                Vec::new()
            };
            let fallbacks = self.fallback_wakeups(&started);
            let paused = self.pause_entry(&before, job);
            let also: Vec<Write<'_>> = fallbacks
                .iter()
                .map(|(key, due)| Write::SetWakeup(key, Some(*due)))
                .chain(paused.as_ref().map(Write::AppendAudit))
                .collect();
            let target = if separate { None } else { Some(&mut *job) };
            match self.write_step(loaded, target, &also).await? {
                Written::Yes => {}
                // An admission not yet written starts over.
                Written::ExecutionMoved | Written::JobMoved if ride => return Ok(Step::Again),
                // Someone else wrote the execution meanwhile: apply the end to what they wrote.
                Written::ExecutionMoved => {
                    job.job = before;
                    let id = loaded.execution.execution_id.clone();
                    match self.read_execution(&id).await? {
                        Some(fresh) => *loaded = fresh,
                        None => return Ok(Step::Done),
                    }
                    continue;
                }
                // The job moved: apply the end to the job as it is now.
                Written::JobMoved => {
                    loaded.execution = unsettled;
                    loaded.job_changed = false;
                    job_races += 1;
                    match self.app.load(&loaded.execution.job_id).await {
                        Ok(fresh) => *job = fresh,
                        Err(AppError::NotFound(_)) => separate = true,
                        Err(e) => return Err(e.into()),
                    }
                    separate |= job_races >= 2;
                    continue;
                }
            }
            if finished {
                if separate {
                    self.after_final(&loaded.execution, None).await?;
                } else {
                    self.plan_backfill_if_room(job).await;
                    self.follow_up(&loaded.execution, started, job.job.state.has_children)
                        .await?;
                }
            }
            if let Some((outcome, response)) = notify {
                self.send_notifications(job, &loaded.execution, outcome, response)
                    .await?;
            }
            if let Some(at) = settled.wake {
                self.wake_at(&loaded.execution.execution_id, at).await?;
            }
            return Ok(Step::Done);
        }
        Err(EngineError::Contended(format!(
            "execution {}",
            loaded.execution.execution_id
        )))
    }

    /// Ends an execution that has not started (or whose job is gone) in `to`; `job` is the job
    /// when the step changed it (the write stores both).
    pub(super) async fn finish(
        &self,
        loaded: &mut Loaded,
        mut job: Option<&mut StoredJob>,
        to: ExecutionState,
        reason: &str,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        loaded
            .execution
            .transition(to, now, reason)
            .map_err(transition_error)?;
        loaded.execution.run.lease_until = None;
        match self.write_step(loaded, job.as_deref_mut(), &[]).await? {
            Written::Yes => {}
            Written::ExecutionMoved | Written::JobMoved => return Ok(Step::Again),
        }
        self.after_final(&loaded.execution, job.as_deref()).await?;
        Ok(Step::Done)
    }

    /// Cancels or terminates another execution (overlap policies, parent close policies).
    /// Already finished executions are left as they are. Its follow-up (freeing its slot, its own
    /// children) runs in a dispatch of its own, which also keeps this step from recursing.
    ///
    /// A call of the run that this process makes is closed, and this waits until it is. `Some`
    /// when its call may go on in another process until that time (its holder's lease): that
    /// process closes it when its next read finds the stop (docs/engine.md, "Stopping a call").
    pub(in crate::engine) async fn stop_execution(
        &self,
        execution_id: &str,
        to: ExecutionState,
        reason: &str,
    ) -> Result<Option<DateTime<Utc>>, EngineError> {
        let mut retry = self.step_retry();
        while retry.next_round().await {
            let Some(mut loaded) = self.read_execution(execution_id).await? else {
                return Ok(None);
            };
            if loaded.execution.is_finished() {
                return Ok(self.close_call(&loaded.execution).await);
            }
            // Only running or failed runs can be terminated; anything earlier is cancelled.
            let to = if sundial_core::execution::can_transition(loaded.execution.state(), to) {
                to
            } else {
                ExecutionState::Cancelled
            };
            // The lease stays: it says who may still be making the run's call, and until when.
            loaded
                .execution
                .transition(to, self.now(), reason)
                .map_err(transition_error)?;
            if self.write_execution(&mut loaded).await? {
                let elsewhere = self.close_call(&loaded.execution).await;
                self.send_dispatch(execution_id, StdDuration::ZERO).await?;
                return Ok(elsewhere);
            }
        }
        Err(EngineError::Contended(format!("execution {execution_id}")))
    }

    /// Closes the call of a stopped run that this process makes and waits until it is closed;
    /// else [`Engine::call_elsewhere`].
    async fn close_call(&self, execution: &Execution) -> Option<DateTime<Utc>> {
        if let Some(ended) = self.in_flight.stop(&execution.execution_id) {
            ended.wait().await;
            return None;
        }
        self.call_elsewhere(execution)
    }

    /// Until when a finished run's call may still be going on (its lease, kept by the stop), when
    /// it may: its holder is this process and still makes the call, or another process whose
    /// lease has not run out and which is not known to be dead. A run that ended by itself, or
    /// whose holder let its lease go, has none.
    pub(in crate::engine) fn call_elsewhere(&self, execution: &Execution) -> Option<DateTime<Utc>> {
        let until = execution.run.lease_until?;
        let holder = execution.run.lease_holder.as_deref()?;
        if holder == self.config.incarnation {
            return self
                .in_flight
                .contains(&execution.execution_id)
                .then_some(until);
        }
        (until > self.now() && !self.holder_is_dead(execution)).then_some(until)
    }

    /// The follow-up of a run found finished by a stop: an async job's `cancelUrl` called when
    /// the job may have taken the run's request (`took_request`: the stop met its request chain,
    /// or the run waited for the job's status), the run's own lease let go, both written, then
    /// [`Engine::after_final`].
    pub(in crate::engine) async fn finish_stopped(
        &self,
        loaded: &mut Loaded,
        job: Option<&StoredJob>,
        took_request: bool,
    ) -> Result<Step, EngineError> {
        let execution = &loaded.execution;
        let stopped = matches!(
            execution.state(),
            ExecutionState::Cancelled | ExecutionState::Terminated
        );
        let cancel = job
            .filter(|job| job.job.definition.is_async())
            .and_then(|job| job.job.definition.cancel_url().map(|url| (job, url)))
            .filter(|_| stopped && (took_request || execution.run.awaiting_async));
        let own_lease = execution.run.lease_until.is_some()
            && execution.run.lease_holder.as_deref() == Some(self.config.incarnation.as_str());
        let mut changed = false;
        if let Some((job, template)) = cancel {
            let said = Box::pin(self.call_cancel_url(&loaded.execution, job, template)).await;
            let run = &mut loaded.execution.run;
            run.awaiting_async = false;
            run.next_check = None;
            loaded.execution.record(self.now(), said);
            changed = true;
        }
        if own_lease {
            loaded.execution.run.lease_until = None;
            changed = true;
        }
        if changed && !self.write_execution(loaded).await? {
            return Ok(Step::Again);
        }
        Box::pin(self.after_final(&loaded.execution, job)).await?;
        Ok(Step::Done)
    }

    /// Calls an async job's `cancelUrl` for a stopped run (templated as `checkUrl` is, with the
    /// run's `Idempotency-Key` and `:cancel`); what came of it, for the run's log.
    async fn call_cancel_url(
        &self,
        execution: &Execution,
        job: &StoredJob,
        template: &sundial_core::job::HttpTemplate,
    ) -> String {
        let vars = self.variables(job, execution);
        let deadline =
            self.now() + chrono::Duration::from_std(DEFAULT_CALL_TIMEOUT).unwrap_or_default();
        let key = format!("{}:{}:cancel", execution.execution_id, execution.attempts());
        match self.call(template, &vars, job, deadline, &key).await {
            Ok(response) if response.is_success() => {
                format!("cancelUrl answered {}", response.status)
            }
            Ok(response) => format!("cancelUrl answered {} (not retried)", response.status),
            Err(AttemptEnd::Failed { detail, .. }) => {
                format!("cancelUrl failed (not retried): {detail}")
            }
            Err(_) => "cancelUrl failed (not retried)".to_string(),
        }
    }

    /// What a finished execution changes on its job: its slot freed (returning the buffered runs
    /// that start in it), the last result or failure, and a pause on failure. Idempotent.
    pub(super) fn apply_final(&self, stored: &mut StoredJob, execution: &Execution) -> Vec<String> {
        plan::finish_on_job(&mut stored.job, execution, self.now())
    }

    /// The audit entry of a pause on failure, when `apply_final` turned the job `before` into the
    /// paused `after`: the policy's change of the job, recorded as the system's with its note, in
    /// the write that makes it.
    fn pause_entry(&self, before: &Job, after: &StoredJob) -> Option<AuditRecord> {
        if !before.definition.active() || after.job.definition.active() {
            return None;
        }
        let mut entry = Entry::new("pause", Some(&after.job), after.version.saturating_add(1));
        entry.notes = after.job.state.paused_notes.as_deref();
        Some(audit_record(
            &ChangeBy::system(),
            after.job.job_id(),
            self.now(),
            entry,
        ))
    }

    /// The follow-up of a finished execution, done on every delivery until acknowledged: its
    /// job's side ([`Engine::apply_final`]) written unless already there, then [`Engine::follow_up`].
    ///
    /// `job` is a recent read of the execution's job, if the caller has one: it saves a read when
    /// nobody wrote the job since, and the write when the job already shows the run as over.
    ///
    /// Finished runs of one job are settled on it together ([`Engine::release_on_job`]): a
    /// window of backfill runs finishing at once costs a write or two of the job, not a race of
    /// hundreds. A run whose batch could not be written settles alone, below.
    pub(in crate::engine) async fn after_final(
        &self,
        execution: &Execution,
        job: Option<&StoredJob>,
    ) -> Result<(), EngineError> {
        let batched = self
            .finals
            .run(
                execution.job_id.as_str(),
                execution.clone(),
                |executions| async move {
                    // A batch that fails leaves each of its runs to settle alone and meet the error.
                    self.release_on_job(&executions, job).await.ok()
                },
            )
            .await;
        let released = match batched {
            Some(released) => Some(released),
            None => self
                .release_on_job(std::slice::from_ref(execution), job)
                .await?
                .pop(),
        };
        // One answer per run: `None` cannot happen; if it did, freeing nothing and looking for
        // children is the safe reading.
        let released = released.unwrap_or(Released {
            started: Vec::new(),
            has_children: true,
        });
        self.follow_up(execution, released.started, released.has_children)
            .await
    }

    /// [`Engine::apply_final`] for finished runs of one job, in order, with one read and one write
    /// of the job (`known` saves the read when nobody wrote the job since). Answers, per run, the
    /// buffered runs its slot went to (with their fallback wake-ups written) and whether the job has
    /// children; a deleted job frees nothing and may have children.
    pub(super) async fn release_on_job(
        &self,
        executions: &[Execution],
        known: Option<&StoredJob>,
    ) -> Result<Vec<Released>, EngineError> {
        let Some(job_id) = executions.first().map(|e| e.job_id.clone()) else {
            return Ok(Vec::new());
        };
        let mut known = known.cloned();
        let mut retry = self.step_retry();
        while retry.next_round().await {
            let mut stored = match known.take() {
                Some(stored) => stored,
                None => match self.app.load(&job_id).await {
                    Ok(stored) => stored,
                    // A deleted job's children may still be there.
                    Err(AppError::NotFound(_)) => {
                        let gone = Released {
                            started: Vec::new(),
                            has_children: true,
                        };
                        return Ok(vec![gone; executions.len()]);
                    }
                    Err(e) => return Err(e.into()),
                },
            };
            let before = stored.job.clone();
            let started: Vec<Vec<String>> = executions
                .iter()
                .map(|execution| self.apply_final(&mut stored, execution))
                .collect();
            let released = |stored: &StoredJob| {
                started
                    .iter()
                    .map(|started| Released {
                        started: started.clone(),
                        has_children: stored.job.state.has_children,
                    })
                    .collect()
            };
            if stored.job == before {
                return Ok(released(&stored));
            }
            stored.job.updated_at = self.now();
            let next = stored.job.wake_at();
            let moved = next != before.wake_at();
            if moved {
                self.app
                    .cover_waiting_runs(&mut stored.job, next, self.ride_slack())
                    .await?;
            }
            let record = encode_job(&stored.job, stored.version, stored.service.clone());
            let fallbacks = self.fallback_wakeups(&started.concat());
            let job_key = job_wakeup_key(stored.job.job_id());
            let paused = self.pause_entry(&before, &stored);
            let mut writes = vec![Write::UpdateJob(&record)];
            writes.extend(paused.as_ref().map(Write::AppendAudit));
            writes.extend(
                fallbacks
                    .iter()
                    .map(|(key, due)| Write::SetWakeup(key, Some(*due))),
            );
            if moved {
                writes.push(Write::SetWakeup(&job_key, next));
            }
            match self.store().write_all(&writes).await {
                Ok(()) => {
                    self.plan_backfill_if_room(&stored).await;
                    return Ok(released(&stored));
                }
                Err(WriteAllError {
                    index: Some(0),
                    error: StoreError::VersionConflict { .. } | StoreError::NotFound(_),
                }) => continue,
                Err(e) => return Err(StoreError::from(e).into()),
            }
        }
        Err(EngineError::Contended(format!("job {job_id}")))
    }

    /// Plans the job's waiting backfill at once when its window has room for a planning's worth
    /// of fires again, rather than at the next tick: a backfill then drains at the speed of its
    /// runs. A failure is only logged: the tick plans it anyway.
    pub(super) async fn plan_backfill_if_room(&self, stored: &StoredJob) {
        if !plan::backfill_has_room(&stored.job, crate::engine::tick::BACKFILL_FIRES_PER_PLAN) {
            return;
        }
        if !self.job_tasks.may_plan_now(stored.job.job_id().as_str()) {
            return;
        }
        if let Err(e) = self.plan_job_now(stored.job.job_id(), self.now()).await {
            tracing::warn!(job_id = %stored.job.job_id(), error = %e, "planning a backfill's next fires; the tick will");
        }
    }

    /// The planning [`Engine::plan_backfill_if_room`] left owed to the job's last busy task.
    pub(super) async fn plan_backfill_now(&self, job_id: &JobId) {
        if let Err(e) = self.plan_job_now(job_id, self.now()).await {
            tracing::warn!(%job_id, error = %e, "planning a backfill's next fires; the tick will");
        }
    }

    /// Fallback wake-ups for runs a freed slot starts: written with the release, removed by each run's
    /// admitting write.
    pub(super) fn fallback_wakeups(&self, started: &[String]) -> Vec<(String, DateTime<Utc>)> {
        let due = self.now() + crate::records::FALLBACK_WAKEUP_GRACE;
        started
            .iter()
            .map(|id| (crate::records::execution_wakeup_key(id), due))
            .collect()
    }

    /// What follows a finished execution once its job shows it as over: start the buffered runs
    /// its slot went to and apply its children's parent close policies.
    pub(super) async fn follow_up(
        &self,
        execution: &Execution,
        started: Vec<String>,
        has_children: bool,
    ) -> Result<(), EngineError> {
        for next in started {
            self.send_dispatch(&next, StdDuration::ZERO).await?;
        }
        if has_children {
            self.close_children(execution).await?;
        }
        Ok(())
    }

    /// Applies the parent close policy of every child job of this execution's job.
    pub(super) async fn close_children(&self, execution: &Execution) -> Result<(), EngineError> {
        let filter = JobFilter {
            parent_job: Some(execution.job_id.to_string()),
            ..JobFilter::default()
        };
        let mut page = PageRequest::first(100);
        loop {
            let children = self.store().list_jobs(&filter, JobOrder::Id, &page).await?;
            for record in &children.items {
                let child = decode_job(record)?;
                let definition = &child.job.definition;
                let to = match definition.parent_close_policy() {
                    sundial_core::job::ParentClosePolicy::Abandon => continue,
                    sundial_core::job::ParentClosePolicy::Cancel => ExecutionState::Cancelled,
                    sundial_core::job::ParentClosePolicy::Terminate => ExecutionState::Terminated,
                };
                if definition
                    .parent_job_execution()
                    .is_some_and(|n| n != execution.execute_number)
                {
                    continue;
                }
                let reason = format!(
                    "parent execution {} ended {}; parent close policy {}",
                    execution.execution_id,
                    execution.state(),
                    definition.parent_close_policy()
                );
                for running in child
                    .job
                    .state
                    .running
                    .iter()
                    .chain(&child.job.state.buffered)
                {
                    self.stop_execution(running, to, &reason).await?;
                }
            }
            match children.next_cursor {
                Some(cursor) => page.cursor = Some(cursor),
                None => return Ok(()),
            }
        }
    }
}
