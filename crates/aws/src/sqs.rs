//! The [`Queue`] port on SQS.
//!
//! SQS is the shape the port was cut to, so the mapping is direct: `send` is `SendMessage` with
//! `DelaySeconds`, `ack` is `DeleteMessage`, `postpone` is `ChangeMessageVisibility`, and dead
//! letters are SQS's own redrive to the queue's DLQ after `maxReceiveCount` receives. Two
//! differences from the embedded queue are SQS's, not ours: delays and visibility timeouts are whole
//! seconds (a delay is rounded down, and the engine waits out the sub-second rest, see
//! `EngineConfig::max_inline_wait`), and SQS cannot say when its next message becomes visible.
//!
//! On Lambda the event source mapping receives and deletes messages; the functions only use
//! `send`, `postpone` to set a failed message's backoff before reporting it as a batch failure,
//! and `dead_letter` for a poison message.

use futures_util::FutureExt;
use std::time::Duration;

use aws_sdk_sqs::error::SdkError;
use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeName, SendMessageBatchRequestEntry,
};
use aws_sdk_sqs::Client;
use sundial_ports::queue::{Delivery, Queue, QueueError, DEFAULT_MAX_RECEIVES, MAX_DELAY};

/// SQS caps one receive at ten messages.
const MAX_BATCH: usize = 10;

/// SQS caps a visibility timeout at twelve hours.
const MAX_VISIBILITY: Duration = Duration::from_secs(12 * 3600);

/// The message attribute that says why [`Queue::dead_letter`] moved a message to the DLQ (read it
/// with `aws sqs receive-message … --message-attribute-names All`).
pub const DEAD_LETTER_REASON: &str = "SundialDeadLetterReason";

/// How much of a reason is kept: enough for an error chain, small beside the 256 KiB message limit.
const MAX_REASON_BYTES: usize = 1024;

/// `text` cut to at most `max` bytes, on a character boundary.
fn truncated(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A queue URL and, for reading dead letters, its DLQ's URL.
#[derive(Clone, Debug)]
pub struct SqsQueue {
    client: Client,
    url: String,
    dead_letter_url: Option<String>,
    max_receives: u32,
}

impl SqsQueue {
    /// The queue at `url`, whose redrive policy moves a message to a DLQ after
    /// [`DEFAULT_MAX_RECEIVES`] receives (as template.yaml declares).
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        SqsQueue {
            client,
            url: url.into(),
            dead_letter_url: None,
            max_receives: DEFAULT_MAX_RECEIVES,
        }
    }

    /// Where [`Queue::dead_letters`] reads from.
    pub fn with_dead_letter_queue(mut self, url: impl Into<String>) -> Self {
        self.dead_letter_url = Some(url.into());
        self
    }

    /// The queue's URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

fn seconds(duration: Duration, cap: Duration) -> i32 {
    i32::try_from(duration.min(cap).as_secs()).unwrap_or(i32::MAX)
}

fn unavailable<E, R>(operation: &str, error: SdkError<E, R>) -> QueueError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    QueueError::unavailable_because(operation, error)
}

/// SQS answers a receipt it does not know (garbage, or deleted) with `ReceiptHandleIsInvalid`, and
/// one whose message is no longer in flight with `MessageNotInflight`; other SQS-compatible servers
/// say `InvalidParameterValue`. `known_stale` is the operation's typed check of the same.
fn stale_or_unavailable<E, R>(
    operation: &str,
    error: SdkError<E, R>,
    known_stale: bool,
) -> QueueError
where
    E: std::error::Error + aws_sdk_sqs::error::ProvideErrorMetadata + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let code = error
        .as_service_error()
        .and_then(|e| e.code().map(str::to_owned));
    let stale_code = matches!(
        code.as_deref(),
        Some(
            "ReceiptHandleIsInvalid"
                | "InvalidParameterValue"
                | "MessageNotInflight"
                | "AWS.SimpleQueueService.MessageNotInflight"
        )
    );
    if known_stale || stale_code {
        QueueError::StaleReceipt
    } else {
        unavailable(operation, error)
    }
}

impl Queue for SqsQueue {
    async fn send(&self, body: &str, delay: Duration) -> Result<(), QueueError> {
        if delay > MAX_DELAY {
            return Err(QueueError::DelayTooLong(delay));
        }
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .delay_seconds(seconds(delay, MAX_DELAY))
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("SendMessage", e))?;
        Ok(())
    }

    /// `SendMessageBatch`, ten per request; entries SQS reports as failed are sent once more, and
    /// an error names how many still failed.
    async fn send_batch(&self, messages: &[(String, Duration)]) -> Result<(), QueueError> {
        if let Some((_, delay)) = messages.iter().find(|(_, delay)| *delay > MAX_DELAY) {
            return Err(QueueError::DelayTooLong(*delay));
        }
        for chunk in messages.chunks(MAX_BATCH) {
            let mut pending: Vec<usize> = (0..chunk.len()).collect();
            for _ in 0..2 {
                let entries = pending
                    .iter()
                    .map(|&i| {
                        SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(&chunk[i].0)
                            .delay_seconds(seconds(chunk[i].1, MAX_DELAY))
                            .build()
                            .map_err(|e| {
                                QueueError::unavailable_because("building a batch entry", e)
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let output = self
                    .client
                    .send_message_batch()
                    .queue_url(&self.url)
                    .set_entries(Some(entries))
                    .send()
                    .boxed()
                    .await
                    .map_err(|e| unavailable("SendMessageBatch", e))?;
                pending = output
                    .failed()
                    .iter()
                    .filter_map(|f| f.id().parse().ok())
                    .collect();
                if pending.is_empty() {
                    break;
                }
            }
            if !pending.is_empty() {
                return Err(QueueError::unavailable(format!(
                    "SendMessageBatch: {} of {} messages failed twice",
                    pending.len(),
                    chunk.len()
                )));
            }
        }
        Ok(())
    }

    async fn receive(&self, max: usize, visibility: Duration) -> Result<Vec<Delivery>, QueueError> {
        let output = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(i32::try_from(max.clamp(1, MAX_BATCH)).unwrap_or(10))
            .visibility_timeout(seconds(visibility, MAX_VISIBILITY))
            .wait_time_seconds(0)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("ReceiveMessage", e))?;
        Ok(output
            .messages
            .unwrap_or_default()
            .into_iter()
            .filter_map(|message| {
                let receive_count = message
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                Some(Delivery {
                    body: message.body?,
                    receipt: message.receipt_handle?,
                    receive_count,
                })
            })
            .collect())
    }

    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .send()
            .boxed()
            .await
            .map_err(|e| {
                let stale = e
                    .as_service_error()
                    .is_some_and(|s| s.is_receipt_handle_is_invalid() || s.is_invalid_id_format());
                stale_or_unavailable("DeleteMessage", e, stale)
            })?;
        Ok(())
    }

    async fn postpone(&self, receipt: &str, delay: Duration) -> Result<(), QueueError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .visibility_timeout(seconds(delay, MAX_VISIBILITY))
            .send()
            .boxed()
            .await
            .map_err(|e| {
                let stale = e.as_service_error().is_some_and(|s| {
                    s.is_receipt_handle_is_invalid() || s.is_message_not_inflight()
                });
                stale_or_unavailable("ChangeMessageVisibility", e, stale)
            })?;
        Ok(())
    }

    async fn next_visible_in(&self) -> Result<Option<Duration>, QueueError> {
        Ok(None)
    }

    /// `SendMessage` of the body to the DLQ, with the reason as the message attribute
    /// [`DEAD_LETTER_REASON`], then `DeleteMessage` from this queue. SQS cannot move a message
    /// itself before `maxReceiveCount`. Should the delete fail after the send, the message is
    /// delivered again and dead-lettered again: a duplicate in the DLQ, which a redrive tolerates
    /// (every consumer is idempotent). Without a DLQ URL ([`SqsQueue::with_dead_letter_queue`])
    /// it is `Unavailable`, and the message stays where it is.
    async fn dead_letter(&self, delivery: &Delivery, reason: &str) -> Result<(), QueueError> {
        let Some(url) = &self.dead_letter_url else {
            return Err(QueueError::unavailable(format!(
                "no dead-letter queue is configured for {}",
                self.url
            )));
        };
        let reason = MessageAttributeValue::builder()
            .data_type("String")
            .string_value(truncated(reason, MAX_REASON_BYTES))
            .build()
            .map_err(|e| QueueError::unavailable_because("building the reason attribute", e))?;
        self.client
            .send_message()
            .queue_url(url)
            .message_body(&delivery.body)
            .message_attributes(DEAD_LETTER_REASON, reason)
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("SendMessage to the dead-letter queue", e))?;
        self.ack(&delivery.receipt).await
    }

    /// Peeks at the DLQ: receives with a zero visibility timeout, so the messages stay there for
    /// an operator to inspect or redrive.
    async fn dead_letters(&self, max: usize) -> Result<Vec<String>, QueueError> {
        let Some(url) = &self.dead_letter_url else {
            return Ok(Vec::new());
        };
        let output = self
            .client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(i32::try_from(max.clamp(1, MAX_BATCH)).unwrap_or(10))
            .visibility_timeout(0)
            .wait_time_seconds(0)
            .send()
            .boxed()
            .await
            .map_err(|e| unavailable("ReceiveMessage", e))?;
        Ok(output
            .messages
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.body)
            .collect())
    }

    fn max_receives(&self) -> u32 {
        self.max_receives
    }
}
