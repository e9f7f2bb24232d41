//! Executions from the control plane: manual triggers, update-and-run, reads, cancel and
//! terminate, and retention (backfill requests are in `backfill.rs`).
//!
//! Running an execution is the execution engine's job; here executions are created `Enqueued` and
//! their ids are derived from the job and the trigger id, so retrying a request (or sending the same
//! `Idempotency-Key`) never creates a second execution.

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::execution::{
    execution_id_for_trigger, validate_trigger_id, Execution, ExecutionId, ExecutionState,
};
use sundial_core::job::{Job, JobDocument, JobId};
use sundial_core::source::RunSource;
use sundial_core::stats::StatsWindow;
use sundial_core::trigger::{plan_manual_run, ManualRun, TriggerOptions};

use super::{audit_race, audit_record, field_error, App, AppError, ChangeBy, Entry};
use crate::records::{decode_execution, decode_job, encode_execution, encode_job, final_rollup};
use sundial_ports::store::{
    AuditCleanReport, CleanReport, ExecutionRecord, Page, PageRequest, Store, StoreError, Write,
};

impl<S: Store> App<S> {
    /// Starts one run of a job with `arguments` (`POST /jobs/{jobId}/trigger`): now, or
    /// `options.delay` later. `trigger_id` (from an `Idempotency-Key` header) makes retries of the
    /// same request return the same execution. `options` override, for this run only, the nominal
    /// time it reports and the job's overlap policy; the execution's log records them.
    ///
    /// As an anonymous caller; see [`App::trigger_by`].
    pub async fn trigger(
        &self,
        job_id: &JobId,
        arguments: Value,
        trigger_id: Option<&str>,
        options: TriggerOptions,
    ) -> Result<Execution, AppError> {
        self.trigger_by(
            &ChangeBy::anonymous(),
            job_id,
            arguments,
            trigger_id,
            options,
        )
        .await
    }

    /// [`App::trigger`] by `by`, recorded in the job's audit trail with the run's id (a retry
    /// that finds the run it made records nothing more).
    pub async fn trigger_by(
        &self,
        by: &ChangeBy,
        job_id: &JobId,
        arguments: Value,
        trigger_id: Option<&str>,
        options: TriggerOptions,
    ) -> Result<Execution, AppError> {
        self.trigger_from(
            RunSource::ProgramTrigger,
            by,
            job_id,
            arguments,
            trigger_id,
            options,
        )
        .await
    }

    /// [`App::trigger_by`] for a run started by `source`: [`RunSource::ConsoleTrigger`] from the
    /// console's trigger form, whose run's `scheduledById` is `console:…`, so that the debug
    /// mode's `triggers` setting (which stops programs' triggers) lets it run, as seed 004's
    /// debug mode does for a job tried by hand.
    pub async fn trigger_from(
        &self,
        source: RunSource,
        by: &ChangeBy,
        job_id: &JobId,
        arguments: Value,
        trigger_id: Option<&str>,
        options: TriggerOptions,
    ) -> Result<Execution, AppError> {
        if !arguments.is_object() {
            return Err(field_error("body", "expected a JSON object of arguments"));
        }
        self.enqueue(
            job_id,
            Some(arguments),
            trigger_id,
            source,
            Some(by),
            options,
        )
        .await
    }

    /// Updates a job and runs it at once (`POST /jobs/{jobId}/update`): the update by `by` with
    /// its audit entry, then a run of the new definition, which that entry stands for. Returns
    /// the job as updated and the run.
    pub async fn update_and_run_by(
        &self,
        by: &ChangeBy,
        document: &JobDocument,
    ) -> Result<(Job, Execution), AppError> {
        let job_id = document.job_id();
        let job = self.update_job_by(by, document).await?;
        let run = self
            .enqueue(
                job_id,
                None,
                None,
                RunSource::Update,
                None,
                TriggerOptions::default(),
            )
            .await?;
        Ok((job, run))
    }

    async fn enqueue(
        &self,
        job_id: &JobId,
        arguments: Option<Value>,
        trigger_id: Option<&str>,
        source: RunSource,
        by: Option<&ChangeBy>,
        options: TriggerOptions,
    ) -> Result<Execution, AppError> {
        // A run of `update and run` belongs to the update, whose entry records it (`by` is
        // `None`); a trigger has its own.
        let now = self.now();
        // A delayed run waits `Scheduled` for its time, in line behind the runs due before it.
        let due = options.due(now);
        let trigger_id = match trigger_id {
            Some(id) => id.to_string(),
            None => fresh_trigger_id(now),
        };
        validate_trigger_id(&trigger_id)
            .map_err(|e| AppError::Invalid(e.under("Idempotency-Key")))?;
        // The execution id names the job's incarnation, which is read with the job: guess the
        // first (almost every job's) and read again in the rare case of a re-created job.
        let mut incarnation = 0;
        let mut execution_id = String::new();
        // The execute number, the execution and its fallback wake-up in one atomic write: a crash
        // leaves all of them or none, so numbers never skip.
        let mut retry = super::ConflictRetry::new(&*self.clock);
        let mut created = None;
        while retry.next_round().await {
            execution_id = execution_id_for_trigger(job_id, incarnation, &trigger_id)
                .map_err(|e| AppError::Invalid(e.under("Idempotency-Key")))?;
            let fallback_key = crate::records::execution_wakeup_key(&execution_id);
            let read = self
                .store
                .read_many(
                    std::slice::from_ref(&execution_id),
                    &[job_id.as_str().to_owned()],
                )
                .await?;
            let mut executions = read.executions.into_iter().flatten();
            let record = read.jobs.into_iter().flatten().next();
            let stored = record.as_ref().map(decode_job).transpose()?;
            if let Some(stored) = &stored {
                if stored.job.state.incarnation != incarnation {
                    incarnation = stored.job.state.incarnation;
                    continue;
                }
            }
            if let Some(existing) = executions.next() {
                return Ok(decode_execution(&existing)?);
            }
            let mut stored = stored.ok_or_else(|| AppError::NotFound(format!("job {job_id}")))?;
            let run = ManualRun {
                source,
                trigger_id: &trigger_id,
                arguments: arguments.clone(),
                options: &options,
            };
            let execution = plan_manual_run(&mut stored.job, execution_id.clone(), run, now)
                .map_err(|e| {
                    AppError::unavailable_because("creating the triggered execution", e)
                })?;
            let job = encode_job(&stored.job, stored.version, stored.service.clone());
            let run = encode_execution(&execution, 1)?;
            // The fallback wake-up: should this process die before the engine hears of the run, the
            // tick sends it once the grace has passed. A duplicate message is harmless.
            let entry = by.map(|by| {
                let mut entry = Entry::new(
                    "trigger",
                    Some(&stored.job),
                    stored.version.saturating_add(1),
                );
                entry
                    .details
                    .insert("executionId".into(), Value::String(execution_id.clone()));
                audit_record(by, job_id, now, entry)
            });
            let mut writes = vec![
                Write::UpdateJob(&job),
                Write::CreateExecution(&run),
                Write::SetWakeup(
                    &fallback_key,
                    Some(due + crate::records::FALLBACK_WAKEUP_GRACE),
                ),
            ];
            writes.extend(entry.as_ref().map(Write::AppendAudit));
            match self.store.write_all(&writes).await.map_err(audit_race) {
                Ok(()) => {
                    created = Some(execution);
                    break;
                }
                // A concurrent request won: the job's number moved, or (same trigger id) the
                // execution exists; the next round answers with it.
                Err(e @ (StoreError::VersionConflict { .. } | StoreError::AlreadyExists(_))) => {
                    retry.lost(e.to_string())
                }
                Err(StoreError::NotFound(_)) => {
                    return Err(AppError::NotFound(format!("job {job_id}")))
                }
                Err(e) => return Err(e.into()),
            }
        }
        let Some(execution) = created else {
            return Err(AppError::Conflict(
                retry.exhausted(|| format!("job {job_id} is busy; retry")),
            ));
        };
        tracing::info!(job_id = %job_id, execution_id, source = source.prefix(), "execution enqueued");
        if let Some(engine) = self.engine() {
            engine.kick(execution_id).await;
        }
        Ok(execution)
    }

    /// One execution (`GET /executions/{id}`), with its event log.
    pub async fn get_execution(&self, execution_id: &ExecutionId) -> Result<Execution, AppError> {
        let record = self
            .store
            .get_execution(execution_id.as_str())
            .await?
            .ok_or_else(|| AppError::NotFound(format!("execution {execution_id}")))?;
        Ok(decode_execution(&record)?)
    }

    /// A job's executions, newest first (`GET /jobs/{jobId}/executions`, `GET /main/execution`).
    pub async fn list_executions(
        &self,
        job_id: &JobId,
        page: &PageRequest,
    ) -> Result<Page<Execution>, AppError> {
        let records = self.store.list_executions(job_id.as_str(), page).await?;
        decode_page(records)
    }

    /// The newest execution of each job, in the order given (`None` for a job never run): the
    /// console's jobs list, one store read for the page.
    pub async fn newest_executions(
        &self,
        job_ids: &[&JobId],
    ) -> Result<Vec<Option<Execution>>, AppError> {
        let ids: Vec<String> = job_ids.iter().map(|id| id.as_str().to_owned()).collect();
        self.store
            .newest_executions(&ids)
            .await?
            .iter()
            .map(|record| record.as_ref().map(decode_execution).transpose())
            .collect::<Result<_, _>>()
            .map_err(AppError::from)
    }

    /// Executions of a parent's children, optionally of one parent execution (`getChildJobLogs`).
    pub async fn child_executions(
        &self,
        parent: &JobId,
        parent_execution: Option<u64>,
        page: &PageRequest,
    ) -> Result<Page<Execution>, AppError> {
        let records = self
            .store
            .list_child_executions(parent.as_str(), parent_execution, page)
            .await?;
        decode_page(records)
    }

    /// Cancels an execution that has not finished (`POST /executions/{id}/cancel`).
    pub async fn cancel_execution(
        &self,
        execution_id: &ExecutionId,
        reason: &str,
    ) -> Result<Execution, AppError> {
        self.finish_execution(execution_id, ExecutionState::Cancelled, reason)
            .await
    }

    /// Terminates a running or failed execution (`POST /executions/{id}/terminate`).
    pub async fn terminate_execution(
        &self,
        execution_id: &ExecutionId,
        reason: &str,
    ) -> Result<Execution, AppError> {
        self.finish_execution(execution_id, ExecutionState::Terminated, reason)
            .await
    }

    async fn finish_execution(
        &self,
        execution_id: &ExecutionId,
        to: ExecutionState,
        reason: &str,
    ) -> Result<Execution, AppError> {
        let mut retry = super::ConflictRetry::new(&*self.clock);
        while retry.next_round().await {
            let record = self
                .store
                .get_execution(execution_id.as_str())
                .await?
                .ok_or_else(|| AppError::NotFound(format!("execution {execution_id}")))?;
            let mut execution = decode_execution(&record)?;
            let from = execution.state();
            execution.transition(to, self.now(), reason).map_err(|_| {
                AppError::Conflict(format!(
                    "execution {execution_id} is {from} and cannot become {to}"
                ))
            })?;
            let mut updated = encode_execution(&execution, record.version)?;
            updated.created_at = record.created_at;
            // The run's statistics ride on the write that ends it.
            let rollup = final_rollup(&execution, &record.state, None);
            let mut writes = vec![Write::UpdateExecution(&updated)];
            writes.extend(rollup.as_ref().map(Write::AddRollup));
            match self
                .store
                .write_all(&writes)
                .await
                .map_err(StoreError::from)
            {
                Ok(()) => {
                    // The engine closes the run's call in flight, frees its slot and starts what
                    // waited for it.
                    if let Some(engine) = self.engine() {
                        engine.stopped(execution_id.as_str());
                        engine.kick(execution_id.to_string()).await;
                    }
                    return Ok(execution);
                }
                // Another writer ended or changed it: read it again (the 409, if every round is
                // lost, says it is busy).
                Err(StoreError::VersionConflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(AppError::Conflict(retry.exhausted(|| {
            format!("execution {execution_id} is busy; retry")
        })))
    }

    /// Retention (`DELETE /main/schedule/clean`): executions, and the audit trail by the same
    /// rule (the newest `retain` entries of every job, none of a deleted job's when
    /// `purge_deleted_jobs`).
    pub async fn clean(
        &self,
        purge_deleted_jobs: bool,
        retain: usize,
    ) -> Result<(CleanReport, AuditCleanReport), AppError> {
        let executions = self
            .store
            .clean_executions(retain, purge_deleted_jobs)
            .await?;
        let audit = self.clean_audit(retain, purge_deleted_jobs).await?;
        // Statistics are kept for the longest window (and the hour it starts in), whatever
        // `retain`: a count of runs says nothing about how far back the hours reach.
        let cutoff = sundial_core::stats::hour_of(self.now() - StatsWindow::LONGEST);
        self.store.clean_rollups(cutoff).await?;
        Ok((executions, audit))
    }

    /// Asynchronous progress reported by a job service (`POST /jobs/{jobId}/feedback/{n}`):
    /// `{status, message, error, progress, data}` for the execution the feedback URL names
    /// (`executionId`, run `n` of the job). The URL's `token` must be that execution's HMAC token:
    /// the route needs no other authentication, so the token is what stops anyone else from
    /// finishing a run.
    ///
    /// The token is checked before anything is looked up, and every request whose token does not
    /// verify (no `executionId`, no token, a wrong one) gets the same [`AppError::Unauthorized`]:
    /// an unauthenticated caller learns nothing about which jobs and runs exist or wait.
    pub async fn feedback(
        &self,
        job_id: &JobId,
        request_counts: u64,
        execution_id: Option<&str>,
        token: Option<&str>,
        body: &Value,
    ) -> Result<(), AppError> {
        let id = self.verify_feedback_token(execution_id, token)?;
        self.load(job_id).await?;
        let execution = self
            .store
            .get_execution(id)
            .await?
            .filter(|r| r.job_id == job_id.as_str() && r.execute_number == request_counts)
            .ok_or_else(|| {
                AppError::NotFound(format!(
                    "execution {id} as run {request_counts} of job {job_id}"
                ))
            })?;
        if execution.state != ExecutionState::Processing.to_string() {
            return Err(AppError::Conflict(format!(
                "no execution of job {job_id} is waiting for feedback: {} is {}",
                execution.execution_id, execution.state
            )));
        }
        let engine = self
            .engine()
            .ok_or_else(|| AppError::unavailable("the execution engine is not running"))?;
        engine.feedback(execution.execution_id, body.clone()).await
    }

    /// The execution id of a feedback request whose token verifies; otherwise the one 401 every
    /// unverified request gets.
    fn verify_feedback_token<'a>(
        &self,
        execution_id: Option<&'a str>,
        token: Option<&str>,
    ) -> Result<&'a str, AppError> {
        match (execution_id, token) {
            (Some(id), Some(token))
                if sundial_core::signing::verify_feedback_token(self.signing_secret(), id, token) =>
            {
                Ok(id)
            }
            _ => Err(AppError::Unauthorized(
                "token: missing or not valid for this execution; use the schedulingFeedbackUrl Sundial passed, with its executionId and token".into(),
            )),
        }
    }
}

/// A trigger id unique within this process and, by its time prefix, across restarts.
fn fresh_trigger_id(now: DateTime<Utc>) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}", now.format("%Y%m%dT%H%M%S%6fZ"))
}

pub(super) fn decode_page(records: Page<ExecutionRecord>) -> Result<Page<Execution>, AppError> {
    let items = records
        .items
        .iter()
        .map(decode_execution)
        .collect::<Result<_, _>>()?;
    Ok(Page {
        items,
        next_cursor: records.next_cursor,
    })
}
