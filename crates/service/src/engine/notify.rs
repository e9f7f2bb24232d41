//! Notify: deliver a job's notifications, signed, with their retry rule (docs/api.md).
//!
//! Each notification rule an outcome matches becomes one message on the notify queue, carrying
//! the `schedulingNotifyBody` of that outcome, so delivery does not depend on the execution's
//! later state. Delivery is tried, then retried 3 times 20 s apart (docs/api.md); with `qos: 1` it
//! then keeps being retried, less often, until it is delivered or too old. Every request carries
//! an HMAC signature header over its timestamp and body so receivers can check it came from us.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sundial_core::execution::Execution;
use sundial_core::job::Qos;
use sundial_core::outcome::Outcome;
use sundial_core::signing;

use super::{Engine, EngineError};
use crate::app::AppError;
use crate::records::StoredJob;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::Queue;
use sundial_ports::store::Store;

/// docs/api.md: a notification is retried 3 times…
const NOTIFY_RETRIES: u32 = 3;
/// …20 s apart.
const NOTIFY_RETRY_DELAY: StdDuration = StdDuration::from_secs(20);
/// How often a `qos: 1` notification is retried after docs/api.md's retries, at most.
const RELIABLE_RETRY_DELAY: StdDuration = StdDuration::from_secs(300);
/// Time limit of one notification call.
const NOTIFY_CALL_TIMEOUT: StdDuration = StdDuration::from_secs(30);

/// A notify-queue message: deliver rule `rule` of a job for one outcome of one execution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotifyMessage {
    /// The execution the outcome belongs to.
    pub execution_id: String,
    /// The index of the rule in the job's `notification` list.
    pub rule: usize,
    /// `schedulingNotifyBody`: `{"httpStatus", "response"}`.
    pub notify_body: Value,
    /// Which delivery attempt this is, from 1.
    pub attempt: u32,
    /// When the outcome happened, in milliseconds since the epoch (retries of `qos: 1` stop after
    /// the configured time).
    pub first_at_ms: i64,
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Queues one notification per matching rule of the job for `outcome`.
    pub(super) async fn send_notifications(
        &self,
        job: &StoredJob,
        execution: &Execution,
        outcome: &Outcome,
        response: &Value,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let is_async = job.job.definition.is_async();
        for (rule, definition) in job.job.definition.notifications().iter().enumerate() {
            if !outcome.matches_job(definition.state_equals.as_deref(), is_async) {
                continue;
            }
            let message = NotifyMessage {
                execution_id: execution.execution_id.clone(),
                rule,
                notify_body: outcome.notify_body(response),
                attempt: 1,
                first_at_ms: now.timestamp_millis(),
            };
            self.send_notify(&message, StdDuration::ZERO).await?;
        }
        Ok(())
    }

    async fn send_notify(
        &self,
        message: &NotifyMessage,
        delay: StdDuration,
    ) -> Result<(), EngineError> {
        let body = serde_json::to_string(message)
            .map_err(|e| AppError::Unavailable(format!("encoding a notification: {e}")))?;
        self.notify_queue.send(&body, delay).await?;
        self.sent.notify_waiters();
        Ok(())
    }

    /// Delivers one notification (a notify-queue message body). A failed delivery is queued
    /// again by the retry rule; only store or queue failures are errors.
    pub async fn notify(&self, body: &str) -> Result<(), EngineError> {
        let message: NotifyMessage = match serde_json::from_str(body) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!(error = %e, "unreadable notify message dropped");
                return Ok(());
            }
        };
        let Some(loaded) = self.read_execution(&message.execution_id).await? else {
            return Ok(());
        };
        let job = match self.app.load(&loaded.execution.job_id).await {
            Ok(job) => job,
            Err(AppError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let Some(rule) = job.job.definition.notifications().get(message.rule) else {
            return Ok(());
        };
        let mut vars = self.variables(&job, &loaded.execution);
        vars.system
            .insert("schedulingNotifyBody".into(), message.notify_body.clone());
        let deadline = self.now()
            + chrono::Duration::from_std(NOTIFY_CALL_TIMEOUT).unwrap_or(chrono::Duration::zero());
        // What went wrong, and whether trying again could help.
        let failure = match self.build_request(&rule.http, &vars, &job, deadline) {
            Err(problem) => Some((problem, true)),
            Ok(mut request) => {
                let payload = request.body.clone().unwrap_or_default();
                let signature = signing::webhook_signature_header(
                    self.app.signing_secret(),
                    self.now().timestamp(),
                    &payload,
                );
                request
                    .headers
                    .push((signing::SIGNATURE_HEADER.into(), signature));
                let url = request.url.clone();
                match self.http.send(request).await {
                    Ok(response) if response.is_success() => None,
                    Ok(response) => Some((format!("{url} answered {}", response.status), true)),
                    Err(e) => Some((format!("{url}: {e}"), e.is_retryable())),
                }
            }
        };
        let Some((problem, retryable)) = failure else {
            tracing::debug!(execution_id = %message.execution_id, rule = message.rule, "notification delivered");
            return Ok(());
        };
        let now = self.now();
        let reliable = job.job.definition.qos() == Qos::Reliable;
        let first_at = DateTime::<Utc>::from_timestamp_millis(message.first_at_ms).unwrap_or(now);
        let expires = first_at
            + chrono::Duration::from_std(self.config.reliable_notify_for)
                .unwrap_or(chrono::Duration::days(1));
        let delay = if !retryable {
            // The address policy refuses the URL: every retry would be refused the same way.
            None
        } else if message.attempt <= NOTIFY_RETRIES {
            Some(NOTIFY_RETRY_DELAY)
        } else if reliable {
            let doubling = 1u32 << (message.attempt - NOTIFY_RETRIES).min(8);
            let delay = (NOTIFY_RETRY_DELAY * doubling).min(RELIABLE_RETRY_DELAY);
            // No retry that would run after the limit.
            let at = now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX);
            (at <= expires).then_some(delay)
        } else {
            None
        };
        match delay {
            Some(delay) => {
                tracing::info!(execution_id = %message.execution_id, rule = message.rule, attempt = message.attempt, %problem, "notification failed; retrying");
                let next = NotifyMessage {
                    attempt: message.attempt + 1,
                    ..message
                };
                self.send_notify(&next, delay).await
            }
            None => {
                let note = format!(
                    "notification[{}] not delivered after {} attempts: {problem}",
                    message.rule, message.attempt
                );
                tracing::warn!(execution_id = %message.execution_id, %note);
                self.note_execution(&message.execution_id, &note).await
            }
        }
    }

    /// Adds a line to an execution's log without changing its state.
    async fn note_execution(&self, execution_id: &str, note: &str) -> Result<(), EngineError> {
        let mut retry = self.step_retry();
        while retry.next_round().await {
            let Some(mut loaded) = self.read_execution(execution_id).await? else {
                return Ok(());
            };
            loaded.execution.record(self.now(), note);
            if self.write_execution(&mut loaded).await? {
                return Ok(());
            }
        }
        Err(EngineError::Contended(format!("execution {execution_id}")))
    }
}
