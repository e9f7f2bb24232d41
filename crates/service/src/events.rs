//! The `EventPublisher` port: events on a bus (EventBridge in production), and the queue targets of
//! jobs.
//!
//! Two things go out through it: every execution state change, when a bus is configured, and the
//! runs of jobs whose action is an `sqs` or `eventbridge` target instead of HTTP requests. Locally
//! [`RecordingPublisher`] stands in for both and keeps what was sent for tests and for the log.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Mutex;

use serde_json::Value;

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

/// Why publishing failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PublishError {
    /// The destination rejected the message (unknown queue or bus, too large); retrying will not help.
    #[error("rejected: {0}")]
    Rejected(String),
    /// The backend failed; the publish may be retried.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

/// Publishes events and sends queue-target messages.
pub trait EventPublisher: Send + Sync + 'static {
    /// Puts one event on a bus.
    fn publish(&self, event: &BusEvent) -> impl Future<Output = Result<(), PublishError>> + Send;

    /// Sends one message to the queue at `queue_url` (a job's `sqs` target).
    fn send_to_queue(
        &self,
        queue_url: &str,
        body: &str,
    ) -> impl Future<Output = Result<(), PublishError>> + Send;
}

/// What a [`RecordingPublisher`] was given.
#[derive(Clone, Debug, PartialEq)]
pub enum Published {
    /// An event.
    Event(BusEvent),
    /// A queue-target message.
    QueueMessage {
        /// The queue's URL.
        queue_url: String,
        /// The body.
        body: String,
    },
}

/// The local stand-in: logs what it is given and keeps the newest of it in memory (tests read it).
/// `sundial serve` uses it, keeping nothing, when no AWS bus or queue is configured.
#[derive(Debug)]
pub struct RecordingPublisher {
    // A ring: dropping the oldest of `keep` entries is O(1), not a 10,000-entry shift per event.
    sent: Mutex<VecDeque<Published>>,
    keep: usize,
}

impl Default for RecordingPublisher {
    fn default() -> Self {
        RecordingPublisher::new()
    }
}

impl RecordingPublisher {
    /// How many sends [`RecordingPublisher::new`] keeps.
    pub const KEEP: usize = 10_000;

    /// An empty recorder keeping the newest [`RecordingPublisher::KEEP`] sends.
    pub fn new() -> Self {
        RecordingPublisher {
            sent: Mutex::new(VecDeque::new()),
            keep: Self::KEEP,
        }
    }

    /// A publisher that only logs. A long-running process keeps nothing: an event carries its
    /// whole execution, and 10,000 of them held about 150 MB.
    pub fn logging_only() -> Self {
        RecordingPublisher {
            sent: Mutex::new(VecDeque::new()),
            keep: 0,
        }
    }

    /// Everything sent so far, oldest first.
    pub fn sent(&self) -> Vec<Published> {
        self.sent
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn keep(&self, item: Published) {
        if self.keep == 0 {
            return;
        }
        if let Ok(mut sent) = self.sent.lock() {
            if sent.len() >= self.keep {
                sent.pop_front();
            }
            sent.push_back(item);
        }
    }
}

impl EventPublisher for RecordingPublisher {
    async fn publish(&self, event: &BusEvent) -> Result<(), PublishError> {
        tracing::debug!(source = %event.source, detail_type = %event.detail_type, "event published");
        self.keep(Published::Event(event.clone()));
        Ok(())
    }

    async fn send_to_queue(&self, queue_url: &str, body: &str) -> Result<(), PublishError> {
        tracing::info!(queue_url, bytes = body.len(), "queue target message sent");
        self.keep(Published::QueueMessage {
            queue_url: queue_url.to_string(),
            body: body.to_string(),
        });
        Ok(())
    }
}
