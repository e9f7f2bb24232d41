//! The local event publisher: logs what it is given and keeps the newest of it for tests.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::events::{BusEvent, EventPublisher, PublishError, TargetSupport};

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
/// `sundial serve` uses it, keeping nothing and delivering no targets
/// ([`RecordingPublisher::without_targets`]), when AWS is not configured.
#[derive(Debug)]
pub struct RecordingPublisher {
    // A ring: dropping the oldest of `keep` entries is O(1), not a 10,000-entry shift per event.
    sent: Mutex<VecDeque<Published>>,
    /// The states of the state changes observed ([`EventPublisher::observe_state_change`]).
    observed: Mutex<VecDeque<String>>,
    keep: usize,
    targets: TargetSupport,
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
            observed: Mutex::new(VecDeque::new()),
            keep: Self::KEEP,
            targets: TargetSupport::Delivered,
        }
    }

    /// A publisher that only logs. A long-running process keeps nothing: an event carries its
    /// whole execution, and 10,000 of them held about 150 MB.
    pub fn logging_only() -> Self {
        RecordingPublisher {
            sent: Mutex::new(VecDeque::new()),
            observed: Mutex::new(VecDeque::new()),
            keep: 0,
            targets: TargetSupport::Delivered,
        }
    }

    /// This publisher, answering that jobs' targets are not delivered (`how` says what would
    /// deliver them): a recorder is not a queue, and a run must not succeed by being recorded.
    pub fn without_targets(mut self, how: impl Into<String>) -> Self {
        self.targets = TargetSupport::Unavailable { how: how.into() };
        self
    }

    /// Everything sent so far, oldest first.
    pub fn sent(&self) -> Vec<Published> {
        self.sent
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The states of every state change observed so far, oldest first, whether or not it was
    /// published.
    pub fn observed(&self) -> Vec<String> {
        self.observed
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
    fn target_support(&self) -> TargetSupport {
        self.targets.clone()
    }

    async fn publish(&self, event: &BusEvent) -> Result<(), PublishError> {
        tracing::debug!(source = %event.source, detail_type = %event.detail_type, "event published");
        self.keep(Published::Event(event.clone()));
        Ok(())
    }

    fn observe_state_change(&self, detail: &serde_json::Value) {
        if self.keep == 0 {
            return;
        }
        let state = detail
            .get("state")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if let Ok(mut observed) = self.observed.lock() {
            if observed.len() >= self.keep {
                observed.pop_front();
            }
            observed.push_back(state.to_owned());
        }
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
