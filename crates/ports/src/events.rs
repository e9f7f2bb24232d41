//! The `EventPublisher` port: events on a bus (EventBridge in production), and the queue targets of
//! jobs.
//!
//! Two things go out through it: execution state changes, when a bus is configured (all, only
//! final states, or none: the engine's `StateChangeEvents` level), and the
//! runs of jobs whose action is an `sqs` or `eventbridge` target instead of HTTP requests. Locally
//! [`RecordingPublisher`](crate::memory::RecordingPublisher) stands in for both and keeps what was sent for tests and for the log.
//!
//! Not every publisher can deliver targets: `sundial serve` without AWS configured has nowhere to
//! send them. Such a publisher says so through [`EventPublisher::target_support`], and the control
//! plane refuses jobs with a target there (`AppConfig::targets` in `sundial-service`)
//! instead of reporting runs `Succeeded` that delivered nothing.

use std::future::Future;

use serde_json::Value;

use crate::cause::Cause;

/// One event for a bus.
#[derive(Clone, Debug, PartialEq)]
pub struct BusEvent {
    /// The bus name or ARN; `None` for the configured default bus.
    pub bus: Option<String>,
    /// The event's `source`.
    pub source: String,
    /// The event's `detail-type`.
    pub detail_type: String,
    /// The event's `detail`.
    pub detail: Value,
}

/// Why publishing failed. `message` says what was being done, `source` (when the adapter has a
/// library error) why it failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PublishError {
    /// The destination rejected the message (unknown queue or bus, too large); retrying will not help.
    #[error("rejected: {message}")]
    Rejected {
        /// What was refused.
        message: String,
        /// The backend's own error.
        #[source]
        source: Option<Cause>,
    },
    /// The backend failed; the publish may be retried.
    #[error("unavailable: {message}")]
    Unavailable {
        /// What failed.
        message: String,
        /// The backend's own error.
        #[source]
        source: Option<Cause>,
    },
}

impl PublishError {
    /// Whether publishing the same again later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, PublishError::Unavailable { .. })
    }
}

/// Whether a publisher delivers jobs' `sqs` and `eventbridge` targets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TargetSupport {
    /// Targets are sent (AWS, or a recorder in tests).
    #[default]
    Delivered,
    /// Nothing would receive them. `how` says how to make this deployment deliver them; it ends
    /// the 400 that refuses such a job.
    Unavailable {
        /// What to configure, e.g. "start `sundial serve` with --aws-targets …".
        how: String,
    },
}

/// Publishes events and sends queue-target messages.
pub trait EventPublisher: Send + Sync + 'static {
    /// Whether jobs' `sqs` and `eventbridge` targets reach anything here. Asked once, when the
    /// control plane is built; the engine also asks before each target run, so a job stored
    /// before the deployment lost its targets fails its runs instead of succeeding silently.
    fn target_support(&self) -> TargetSupport;

    /// Puts one event on a bus.
    fn publish(&self, event: &BusEvent) -> impl Future<Output = Result<(), PublishError>> + Send;

    /// Told of every execution state change the engine records (the `detail` its state-change
    /// event has), whether or not the deployment publishes it: where a platform counts its metrics
    /// (fire lag, executions by state), so they do not depend on the events being on. Nothing by
    /// default.
    fn observe_state_change(&self, detail: &Value) {
        let _ = detail;
    }

    /// Sends one message to the queue at `queue_url` (a job's `sqs` target).
    fn send_to_queue(
        &self,
        queue_url: &str,
        body: &str,
    ) -> impl Future<Output = Result<(), PublishError>> + Send;
}
