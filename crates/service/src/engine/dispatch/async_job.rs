//! Async jobs: after the chain, the run waits for its job's reports, by polling `checkUrl` or by
//! feedback, until one says how it ended or a timeout does.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::execution::ExecutionState;
use sundial_core::outcome::{AsyncReport, Outcome, Verdict};
use sundial_core::retry;

use super::call::response_value;
use super::Step;
use crate::app::AppError;
use crate::engine::{Engine, EngineError, Loaded};
use crate::records::StoredJob;
use sundial_core::settle::{self, AttemptEnd};
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::Queue;
use sundial_ports::store::Store;

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// One step of a run waiting for an async job: time out, poll `checkUrl`, or wait.
    pub(super) async fn async_step(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        let definition = &job.job.definition;
        let run = &loaded.execution.run;
        let deadline = run.attempt_deadline.unwrap_or(now);
        let heartbeat =
            retry::heartbeat_deadline(run.last_report_at.unwrap_or(now), definition.timeouts());
        if deadline <= now || heartbeat.is_some_and(|h| h <= now) {
            let detail = if deadline <= now {
                format!(
                    "no final status within timeoutSeconds ({} s)",
                    definition.timeout_seconds()
                )
            } else {
                "no progress report within the heartbeat timeout".to_string()
            };
            let end = AttemptEnd::Failed {
                outcome: Outcome::Timeout,
                response: Value::Null,
                detail,
            };
            return self.settle(loaded, job, end, false).await;
        }
        let next_wake = |next_check: Option<DateTime<Utc>>| {
            [Some(deadline), heartbeat, next_check]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(deadline)
        };
        let Some(check) = definition.check_url() else {
            // Feedback only: wake at the deadline to time out if no feedback came.
            self.wake_at(&loaded.execution.execution_id, next_wake(None))
                .await?;
            return Ok(Step::Done);
        };
        let next_check = run.next_check.unwrap_or(now);
        if next_check > now {
            self.wake_at(&loaded.execution.execution_id, next_wake(Some(next_check)))
                .await?;
            return Ok(Step::Done);
        }
        let vars = self.variables(job, &loaded.execution);
        let key = format!(
            "{}:{}:check",
            loaded.execution.execution_id,
            loaded.execution.attempts()
        );
        let polled = self.call(check, &vars, job, deadline, &key).await;
        let report = match polled {
            Ok(response) if response.is_success() => {
                let body = response_value(&response.body);
                match AsyncReport::parse(&body) {
                    Ok(report) => Ok((report, body)),
                    Err(e) => Err(format!("checkUrl answered an unreadable status: {e}")),
                }
            }
            Ok(response) => Err(format!("checkUrl answered {}", response.status)),
            Err(AttemptEnd::Failed { detail, .. }) => Err(format!("checkUrl: {detail}")),
            Err(_) => Err("checkUrl failed".to_string()),
        };
        match report {
            Ok((report, body)) => {
                self.apply_report(loaded, job, report, body, "checkUrl")
                    .await
            }
            Err(problem) => {
                // A failed poll is not a failed job: poll again until the attempt times out.
                let next = self.now() + settle::check_interval(&job.job.definition);
                loaded.execution.record(now, problem);
                loaded.execution.run.next_check = Some(next);
                if !self.write_execution(loaded).await? {
                    return Ok(Step::Again);
                }
                self.wake_at(&loaded.execution.execution_id, next_wake(Some(next)))
                    .await?;
                Ok(Step::Done)
            }
        }
    }

    /// Applies an async status report (from a poll or the feedback route) to a running execution.
    pub(super) async fn apply_report(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
        report: AsyncReport,
        body: Value,
        from: &str,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        let outcome = Outcome::from_report(&report);
        let mut line = format!("{from}: status {}", report.status);
        if let Some(progress) = &report.progress {
            line.push_str(&format!(", progress {progress}"));
        }
        if let Some(message) = &report.message {
            line.push_str(&format!(": {message}"));
        }
        let progressed = loaded.execution.progress != report.progress;
        let execution = &mut loaded.execution;
        execution.record(now, line);
        if report.progress.is_some() {
            execution.progress = report.progress.clone();
        }
        execution.run.last_report_at = Some(now);
        match outcome.verdict() {
            Verdict::Running => {
                if job.job.definition.check_url().is_some() && execution.run.awaiting_async {
                    execution.run.next_check =
                        Some(now + settle::check_interval(&job.job.definition));
                }
                if !self.write_execution(loaded).await? {
                    return Ok(Step::Again);
                }
                if progressed {
                    self.send_notifications(job, &loaded.execution, &outcome, &body)
                        .await?;
                }
                if loaded.execution.run.awaiting_async {
                    // A feedback-only job is looked at again when its heartbeat would run out:
                    // nothing else wakes it before the attempt deadline.
                    let heartbeat = retry::heartbeat_deadline(now, job.job.definition.timeouts());
                    let next = loaded
                        .execution
                        .run
                        .next_check
                        .into_iter()
                        .chain(loaded.execution.run.attempt_deadline)
                        .chain(heartbeat)
                        .min()
                        .unwrap_or(now);
                    self.wake_at(&loaded.execution.execution_id, next).await?;
                }
                Ok(Step::Done)
            }
            Verdict::Succeeded => {
                let end = AttemptEnd::Succeeded {
                    outcome,
                    result: report.data.clone(),
                    response: body,
                };
                self.settle(loaded, job, end, false).await
            }
            Verdict::Failed { code, .. } => {
                let detail = format!("{from} reported {} with error {code}", report.status);
                let end = AttemptEnd::Failed {
                    outcome,
                    response: body,
                    detail,
                };
                self.settle(loaded, job, end, false).await
            }
        }
    }

    /// Applies an async job's report from the feedback route.
    pub(in crate::engine) async fn apply_feedback(
        &self,
        execution_id: &str,
        body: &Value,
    ) -> Result<(), EngineError> {
        let report = AsyncReport::parse(body).map_err(|e| AppError::Invalid(e.under("body")))?;
        let mut retry = self.step_retry();
        while retry.next_round().await {
            let Some(mut loaded) = self.read_execution(execution_id).await? else {
                return Err(AppError::NotFound(format!("execution {execution_id}")).into());
            };
            if loaded.execution.state() != ExecutionState::Processing {
                return Err(AppError::Conflict(format!(
                    "execution {execution_id} is {} and not waiting for feedback",
                    loaded.execution.state()
                ))
                .into());
            }
            let mut job = self.app.load(&loaded.execution.job_id).await?;
            if job.job.state.incarnation
                != sundial_core::execution::incarnation_of_execution(execution_id)
            {
                return Err(
                    AppError::NotFound(format!("the job of execution {execution_id}")).into(),
                );
            }
            if let Step::Done = self
                .apply_report(
                    &mut loaded,
                    &mut job,
                    report.clone(),
                    body.clone(),
                    "feedback",
                )
                .await?
            {
                return Ok(());
            }
        }
        Err(EngineError::Contended(format!("execution {execution_id}")))
    }
}
