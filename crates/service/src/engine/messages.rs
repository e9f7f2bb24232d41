//! One queue message, from its body to what becomes of it. Written once for the local runner
//! ([`super::runner`]) and the Lambda functions (`sundial-aws`'s handlers), so both treat a failed
//! message alike:
//!
//! - its step succeeded, or found nothing to do: the message is [`Handled::Done`], and its receiver
//!   deletes it;
//! - its step failed in a way that may pass — a backend down, a lost race, a panic: the message
//!   comes back after [`retry_backoff`] of its receive count ([`Handled::Retry`]; on Lambda it is
//!   also reported as a batch item failure);
//! - it is poison — its body does not decode, or the stored data its step reads is corrupt
//!   ([`EngineError::is_retryable`]): it goes to the dead letters at once
//!   ([`Handled::DeadLettered`]), with an error log line naming it and the reason, instead of
//!   failing ten times first and holding up its queue meanwhile.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;

use super::{retry_backoff, DispatchMessage, Engine, EngineError, NotifyMessage, Run};
use sundial_ports::cause::chain;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::{Delivery, Queue};
use sundial_ports::store::Store;

/// Which of the engine's two queues a message came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// Runs and resumes executions ([`DispatchMessage`]).
    Dispatch,
    /// Delivers notifications ([`NotifyMessage`]).
    Notify,
}

impl QueueKind {
    /// Both queues.
    pub const ALL: [QueueKind; 2] = [QueueKind::Dispatch, QueueKind::Notify];

    /// `dispatch` or `notify`: the queue's name in logs, metrics and the embedded store.
    pub fn name(self) -> &'static str {
        match self {
            QueueKind::Dispatch => "dispatch",
            QueueKind::Notify => "notify",
        }
    }
}

/// What became of a message [`Engine::handle_message`] took: what is left for its receiver to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// Its step is done: delete the message (the local poller acks it; on Lambda the event source
    /// deletes what the batch response does not name).
    Done,
    /// Its step failed and may succeed later: the message is set to come back after
    /// [`retry_backoff`]. On Lambda, report it as a batch item failure.
    Retry,
    /// Poison: the message was moved to the dead letters. Nothing is left to do; on Lambda it is
    /// not reported, so the event source deletes it.
    DeadLettered,
}

/// The executions and jobs of a batch of dispatch messages, read in one store read before the
/// messages run (see [`Engine::prefetch_messages`]).
#[derive(Default)]
pub struct Prefetched(HashMap<String, Option<Run>>);

impl Prefetched {
    /// What was read for the message with `body`, for [`Engine::handle_message`]; `None` when
    /// nothing was (the step then reads for itself).
    pub fn take(&mut self, body: &str) -> Option<Option<Run>> {
        let message = serde_json::from_str::<DispatchMessage>(body).ok()?;
        self.0.remove(&message.execution_id)
    }
}

/// Why a message did not get done.
enum Failure {
    /// It will fail the same way however often it comes back.
    Poison(String),
    /// It may succeed later.
    Transient(String),
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// The queue of `kind`.
    pub fn queue(&self, kind: QueueKind) -> &Q {
        match kind {
            QueueKind::Dispatch => &self.dispatch_queue,
            QueueKind::Notify => &self.notify_queue,
        }
    }

    /// Reads the executions and jobs a batch of dispatch messages needs in one store read (one
    /// `BatchGetItem` on DynamoDB rather than two reads per message). Nothing for the notify
    /// queue, or for bodies that do not decode.
    pub async fn prefetch_messages<'a>(
        &self,
        kind: QueueKind,
        bodies: impl IntoIterator<Item = &'a str>,
    ) -> Prefetched {
        if kind != QueueKind::Dispatch {
            return Prefetched::default();
        }
        let ids: Vec<String> = bodies
            .into_iter()
            .filter_map(|body| serde_json::from_str::<DispatchMessage>(body).ok())
            .map(|message| message.execution_id)
            .collect();
        // Boxed: a store's batch read (DynamoDB's) is a deep future, and inlined into a Lambda
        // binary's `main` its layout would pass the compiler's recursion limit.
        Prefetched(Box::pin(self.prefetch(&ids)).await)
    }

    /// Takes one received message through its step and settles it on its queue: a failure that
    /// may pass sets the message to come back after [`retry_backoff`], poison goes to the dead
    /// letters. Only deleting a done message is left to the caller (see [`Handled`]). A panic in
    /// the step is caught and counts as a failure that may pass. `message_id` names the message
    /// in log lines (the SQS message id on Lambda); `read` is what [`Prefetched::take`] gave.
    pub async fn handle_message(
        &self,
        kind: QueueKind,
        message_id: &str,
        delivery: &Delivery,
        read: Option<Option<Run>>,
    ) -> Handled {
        let step = AssertUnwindSafe(self.run_message(kind, &delivery.body, read)).catch_unwind();
        let failure = match step.await {
            Ok(Ok(())) => return Handled::Done,
            Ok(Err(failure)) => failure,
            Err(panic) => {
                let what = panic_message(panic.as_ref());
                tracing::error!(queue = kind.name(), message_id, body = %delivery.body, panic = what, "the message's step panicked; it comes back after a backoff");
                Failure::Transient(format!("the step panicked: {what}"))
            }
        };
        let queue = self.queue(kind);
        match failure {
            Failure::Poison(reason) => {
                tracing::error!(queue = kind.name(), message_id, body = %delivery.body, receive_count = delivery.receive_count, reason, "poison message: to the dead letters at once");
                match queue.dead_letter(delivery, &reason).await {
                    Ok(()) => return Handled::DeadLettered,
                    Err(e) => {
                        tracing::warn!(queue = kind.name(), message_id, error = %chain(&e), "could not move the message to the dead letters; it is retried until the queue moves it");
                    }
                }
            }
            Failure::Transient(reason) => {
                tracing::warn!(
                    queue = kind.name(),
                    message_id,
                    receive_count = delivery.receive_count,
                    error = reason,
                    "message failed; it comes back after a backoff"
                );
            }
        }
        let backoff = retry_backoff(delivery.receive_count);
        if let Err(e) = queue.postpone(&delivery.receipt, backoff).await {
            tracing::debug!(queue = kind.name(), message_id, error = %chain(&e), "could not set the backoff; the queue's visibility timeout applies");
        }
        Handled::Retry
    }

    /// Decodes a message body and runs its step.
    async fn run_message(
        &self,
        kind: QueueKind,
        body: &str,
        read: Option<Option<Run>>,
    ) -> Result<(), Failure> {
        let result = match kind {
            QueueKind::Dispatch => match serde_json::from_str::<DispatchMessage>(body) {
                Ok(message) => self.dispatch_from(&message.execution_id, read).await,
                Err(e) => {
                    return Err(Failure::Poison(format!(
                        "the body is not a dispatch message: {e}"
                    )))
                }
            },
            // A calendar's re-plan shares the notify queue (see `replan`). Boxed: its job writes
            // are deep futures, and inline they would grow every message's future, which a
            // Lambda worker's 2 MiB stack holds (debug builds keep every frame large).
            QueueKind::Notify if super::ReplanMessage::from_body(body).is_some() => {
                Box::pin(self.replan(body)).await
            }
            // Decoded here as well as in `notify`, so that an undecodable body is poison here
            // rather than dropped there.
            QueueKind::Notify => match serde_json::from_str::<NotifyMessage>(body) {
                Ok(_) => self.notify(body).await,
                Err(e) => {
                    return Err(Failure::Poison(format!(
                        "the body is not a notify message: {e}"
                    )))
                }
            },
        };
        result.map_err(|e: EngineError| {
            let reason = chain(&e).to_string();
            if e.is_retryable() {
                Failure::Transient(reason)
            } else {
                Failure::Poison(reason)
            }
        })
    }
}

/// The text a panic was raised with, when it was a string.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
