//! The `Queue` port: delayed messages with visibility timeouts and dead letters.
//!
//! The engine moves work through two queues: *dispatch* (run or resume an execution) and *notify*
//! (deliver a notification). The port is the shape of SQS, the production queue, so that the
//! embedded adapter cannot promise more than SQS keeps: delivery is **at least once** (a message
//! can arrive twice, and a receiver that crashes before [`Queue::ack`] gets it again after the
//! visibility timeout), there is no ordering, and a delay is at most [`MAX_DELAY`]. Longer waits
//! go through the store's wake-up index instead. Every consumer must therefore be idempotent, which
//! the engine is by its stable execution ids and conditional state transitions.
//!
//! A message received more than [`Queue::max_receives`] times is moved to the dead-letter list
//! instead of being delivered again, so one poisonous message cannot spin forever; a consumer that
//! knows at once that a message is poison moves it there itself ([`Queue::dead_letter`]).

use std::future::Future;
use std::time::Duration;

use crate::cause::Cause;

/// The longest delay a message may be sent with: SQS's `DelaySeconds` limit of 900 s.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

/// How many times a message is delivered before it becomes a dead letter (SQS `maxReceiveCount`).
pub const DEFAULT_MAX_RECEIVES: u32 = 10;

/// A message received from a queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The message body as sent.
    pub body: String,
    /// The handle to acknowledge or postpone this delivery; valid until the message is next
    /// received.
    pub receipt: String,
    /// How many times the message has been received, this delivery included (1 the first time).
    pub receive_count: u32,
}

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum QueueError {
    /// A delay longer than [`MAX_DELAY`].
    #[error("delay of {0:?} is longer than the queue's limit of 900 s")]
    DelayTooLong(Duration),
    /// The receipt is unknown or stale (the message was received again since, or deleted).
    #[error("stale or unknown receipt")]
    StaleReceipt,
    /// The backend failed; the operation may be retried. `message` says what was being done,
    /// `source` (when the adapter has a library error) why it failed.
    #[error("queue unavailable: {message}")]
    Unavailable {
        /// What failed, e.g. `SendMessage` or `sqlite`.
        message: String,
        /// The backend's own error.
        #[source]
        source: Option<Cause>,
    },
}

impl QueueError {
    /// [`QueueError::Unavailable`] with no library error below it.
    pub fn unavailable(message: impl Into<String>) -> Self {
        QueueError::Unavailable {
            message: message.into(),
            source: None,
        }
    }

    /// [`QueueError::Unavailable`] because of `source`.
    pub fn unavailable_because(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        QueueError::Unavailable {
            message: message.into(),
            source: Some(Cause::new(source)),
        }
    }
}

/// A queue of text messages (JSON in practice).
///
/// Implementations must be safe to call concurrently; each method is atomic.
pub trait Queue: Send + Sync + 'static {
    /// Sends `body`, to become visible after `delay` (at most [`MAX_DELAY`]).
    fn send(
        &self,
        body: &str,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Sends several messages, each `(body, delay)`: one request per ten on SQS. The default sends
    /// them one by one. Not atomic: on an error some may have been sent, and the caller sends them
    /// all again (every consumer is idempotent).
    fn send_batch(
        &self,
        messages: &[(String, Duration)],
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        async move {
            for (body, delay) in messages {
                self.send(body, *delay).await?;
            }
            Ok(())
        }
    }

    /// Receives up to `max` visible messages, hiding each for `visibility`. Never blocks waiting for
    /// messages: an empty queue answers an empty list at once. Messages past their
    /// [`Queue::max_receives`] are moved to the dead letters instead of being returned.
    fn receive(
        &self,
        max: usize,
        visibility: Duration,
    ) -> impl Future<Output = Result<Vec<Delivery>, QueueError>> + Send;

    /// Deletes a received message: it is done. `StaleReceipt` if the receipt is not the latest.
    fn ack(&self, receipt: &str) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// Makes a received message visible again after `delay` (SQS `ChangeMessageVisibility`).
    fn postpone(
        &self,
        receipt: &str,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// When the earliest message becomes visible, if any is waiting (for a poller's sleep). `None`
    /// when the queue is empty or the backend cannot tell.
    ///
    /// Messages in flight count (they come back when their visibility timeout ends); zero when a
    /// message is visible now. Dead letters do not count.
    fn next_visible_in(&self) -> impl Future<Output = Result<Option<Duration>, QueueError>> + Send;

    /// Moves a received message to the dead letters now, before it has used up
    /// [`Queue::max_receives`]: for poison, a message that will fail the same way however often it
    /// is delivered (a body that does not decode, corrupt stored data). It is not delivered again.
    /// `reason` says why; an adapter that can keep it beside the message does (SQS: a message
    /// attribute), and the caller logs it. `StaleReceipt` if `delivery.receipt` is not the latest.
    fn dead_letter(
        &self,
        delivery: &Delivery,
        reason: &str,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;

    /// The dead letters: bodies of messages received too often or moved by
    /// [`Queue::dead_letter`], oldest first (in the order they became dead letters), at most `max`.
    fn dead_letters(
        &self,
        max: usize,
    ) -> impl Future<Output = Result<Vec<String>, QueueError>> + Send;

    /// Deliveries after which a message becomes a dead letter.
    fn max_receives(&self) -> u32 {
        DEFAULT_MAX_RECEIVES
    }
}
