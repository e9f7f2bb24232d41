//! The event sources that are not API Gateway: SQS event source mappings and schedules.
//!
//! **SQS.** A poller per mapping receives from the queue as Lambda's pollers do (never long
//! polling: moto serves one request at a time), gathers a batch of at most `BatchSize` messages
//! within `MaximumBatchingWindowInSeconds`, and runs at most `MaximumConcurrency` batches at once.
//! Messages are received with the queue's own visibility timeout. When the invocation succeeds,
//! the messages it did not name in `batchItemFailures` are deleted (with
//! `ReportBatchItemFailures`; without it, all of them); an answer that names a message not in
//! the batch, or an invocation that failed (error, timeout, crash), deletes nothing, so the whole
//! batch comes back when its visibility timeout ends. moto counts receives and moves a message to
//! the dead-letter queue after the redrive policy's `maxReceiveCount`, as SQS does.
//!
//! **Schedule.** A `rate(…)` event invokes the function asynchronously every period (from the
//! start, not aligned to the minute as EventBridge is), with a scheduled event; a failed
//! invoke is retried `EventInvokeConfig.MaximumRetryAttempts` times, a minute apart.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName};
use serde_json::{json, Map, Value};
use tokio::sync::Semaphore;

use crate::runtime::Function;
use crate::stack::SqsMapping;
use crate::Log;

/// How often an idle poller asks its queue again.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// One SQS event source mapping at work.
pub struct SqsPoller {
    /// The function it invokes.
    pub function: Arc<Function>,
    /// The mapping, from the template.
    pub mapping: SqsMapping,
    /// The queue's URL and ARN.
    pub queue_url: String,
    /// The queue's ARN (`eventSourceARN`).
    pub queue_arn: String,
    /// The region (`awsRegion`).
    pub region: String,
    /// The client.
    pub sqs: aws_sdk_sqs::Client,
    /// Where it says what it does.
    pub log: Log,
}

impl SqsPoller {
    /// Polls until the task is aborted.
    pub async fn run(self: Arc<Self>) {
        let limit = Arc::new(Semaphore::new(
            usize::try_from(self.mapping.maximum_concurrency)
                .unwrap_or(1000)
                .max(1),
        ));
        let label = format!("sqs:{}", self.mapping.queue);
        loop {
            let Ok(permit) = Arc::clone(&limit).acquire_owned().await else {
                return;
            };
            let batch = self.gather().await;
            if batch.is_empty() {
                drop(permit);
                tokio::time::sleep(POLL_INTERVAL).await;
                continue;
            }
            let poller = Arc::clone(&self);
            let label = label.clone();
            tokio::spawn(async move {
                poller.deliver(&label, batch).await;
                drop(permit);
            });
        }
    }

    /// Up to `BatchSize` messages, gathered within the batching window.
    async fn gather(&self) -> Vec<Message> {
        let mut batch: Vec<Message> = Vec::new();
        let want = usize::try_from(self.mapping.batch_size).unwrap_or(10);
        let window = Duration::from_secs(self.mapping.batching_window_seconds);
        let started = tokio::time::Instant::now();
        loop {
            let ask = i32::try_from((want - batch.len()).min(10)).unwrap_or(10);
            let received = self
                .sqs
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages(ask)
                .wait_time_seconds(0)
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .message_attribute_names("All")
                .send()
                .await;
            match received {
                Ok(out) => {
                    for message in out.messages.unwrap_or_default() {
                        // Received again within the window (a visibility timeout shorter than
                        // the window): one record, with the newest receipt handle.
                        match batch
                            .iter_mut()
                            .find(|m| m.message_id == message.message_id)
                        {
                            Some(earlier) => *earlier = message,
                            None => batch.push(message),
                        }
                    }
                }
                Err(e) => {
                    self.log.line(
                        &format!("sqs:{}", self.mapping.queue),
                        &format!(
                            "receive failed: {}",
                            aws_sdk_sqs::error::DisplayErrorContext(&e)
                        ),
                    );
                    return batch;
                }
            }
            if batch.len() >= want || started.elapsed() >= window {
                return batch;
            }
            tokio::time::sleep(POLL_INTERVAL.min(window)).await;
        }
    }

    /// Invokes the function with `batch` and deletes what it handled.
    async fn deliver(&self, label: &str, batch: Vec<Message>) {
        let event = json!({ "Records": batch.iter().map(|m| self.record(m)).collect::<Vec<_>>() });
        let ids: Vec<String> = batch
            .iter()
            .map(|m| m.message_id.clone().unwrap_or_default())
            .collect();
        let answer = self.function.invoke(event.to_string().into_bytes()).await;
        let failed: HashSet<String> = match answer {
            Err(e) => {
                self.log.line(
                    label,
                    &format!(
                        "batch of {} failed, all come back after the visibility timeout: {e}",
                        ids.len()
                    ),
                );
                return;
            }
            Ok(_) if !self.mapping.report_batch_item_failures => HashSet::new(),
            Ok(body) => match failures(&body, &ids) {
                Some(failed) => failed,
                None => {
                    self.log.line(
                        label,
                        &format!(
                            "batch of {}: an invalid batchItemFailures answer fails the whole batch: {}",
                            ids.len(),
                            String::from_utf8_lossy(&body)
                        ),
                    );
                    return;
                }
            },
        };
        let entries: Vec<DeleteMessageBatchRequestEntry> = batch
            .iter()
            .enumerate()
            .filter(|(_, m)| !failed.contains(m.message_id.as_deref().unwrap_or_default()))
            .filter_map(|(i, m)| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(format!("m{i}"))
                    .set_receipt_handle(m.receipt_handle.clone())
                    .build()
                    .ok()
            })
            .collect();
        self.log.line(
            label,
            &format!(
                "batch of {}: {} done, {} reported failed",
                ids.len(),
                entries.len(),
                failed.len()
            ),
        );
        if entries.is_empty() {
            return;
        }
        if let Err(e) = self
            .sqs
            .delete_message_batch()
            .queue_url(&self.queue_url)
            .set_entries(Some(entries))
            .send()
            .await
        {
            self.log.line(
                label,
                &format!(
                    "delete failed: {}",
                    aws_sdk_sqs::error::DisplayErrorContext(&e)
                ),
            );
        }
    }

    /// A message as Lambda's SQS event record.
    fn record(&self, message: &Message) -> Value {
        let attributes: BTreeMap<String, String> = message
            .attributes
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
            .collect();
        let mut message_attributes = Map::new();
        for (name, value) in message.message_attributes.iter().flatten() {
            message_attributes.insert(
                name.clone(),
                json!({
                    "stringValue": value.string_value,
                    "binaryValue": value.binary_value.as_ref().map(|b| {
                        use base64::Engine as _;
                        base64::engine::general_purpose::STANDARD.encode(b.as_ref())
                    }),
                    "stringListValues": [],
                    "binaryListValues": [],
                    "dataType": value.data_type,
                }),
            );
        }
        json!({
            "messageId": message.message_id,
            "receiptHandle": message.receipt_handle,
            "body": message.body,
            "attributes": attributes,
            "messageAttributes": message_attributes,
            "md5OfBody": message.md5_of_body,
            "md5OfMessageAttributes": message.md5_of_message_attributes,
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue_arn,
            "awsRegion": self.region,
        })
    }
}

/// The message ids a `ReportBatchItemFailures` answer names; `None` when the answer is invalid
/// (not JSON of that shape, or an id that is not in the batch), which Lambda reads as the whole
/// batch failing. An empty or null answer is a success.
pub fn failures(answer: &[u8], batch: &[String]) -> Option<HashSet<String>> {
    let text = String::from_utf8_lossy(answer);
    if text.trim().is_empty() || text.trim() == "null" {
        return Some(HashSet::new());
    }
    let value: Value = serde_json::from_str(&text).ok()?;
    let Some(items) = value.get("batchItemFailures") else {
        return Some(HashSet::new());
    };
    let mut out = HashSet::new();
    for item in items.as_array()? {
        let id = item.get("itemIdentifier")?.as_str()?;
        if id.is_empty() || !batch.iter().any(|b| b == id) {
            return None;
        }
        out.insert(id.to_owned());
    }
    Some(out)
}

/// The scheduled event EventBridge sends for rule `rule` at `time`.
pub fn scheduled_event(rule_arn: &str, region: &str, number: u64) -> Value {
    let now = chrono::Utc::now();
    json!({
        "version": "0",
        "id": format!("00000000-0000-4000-8000-{number:012x}"),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    })
}

/// Invokes `function` asynchronously every `every` with a scheduled event, retrying a failed
/// invoke `retries` times a minute apart. Runs until the task is aborted.
pub async fn schedule(
    function: Arc<Function>,
    every: Duration,
    rule_arn: String,
    region: String,
    retries: u64,
    log: Log,
) {
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await;
    let mut number = 0u64;
    loop {
        interval.tick().await;
        number += 1;
        let event = scheduled_event(&rule_arn, &region, number).to_string();
        let function = Arc::clone(&function);
        let log = log.clone();
        let label = format!("schedule:{}", function.config.logical_id);
        tokio::spawn(async move {
            for attempt in 0..=retries {
                match function.invoke(event.clone().into_bytes()).await {
                    Ok(_) => return,
                    Err(e) => log.line(&label, &format!("asynchronous invoke failed: {e}")),
                }
                if attempt < retries {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_item_failures_are_read_as_lambda_reads_them() {
        let batch = vec!["a".to_owned(), "b".to_owned()];
        let ids = |s: &str| {
            failures(s.as_bytes(), &batch).map(|f| {
                let mut v: Vec<_> = f.into_iter().collect();
                v.sort();
                v
            })
        };
        assert_eq!(ids(r#"{"batchItemFailures":[]}"#), Some(vec![]));
        assert_eq!(
            ids(r#"{"batchItemFailures":[{"itemIdentifier":"b"}]}"#),
            Some(vec!["b".to_owned()])
        );
        assert_eq!(ids(""), Some(vec![]));
        assert_eq!(ids("null"), Some(vec![]));
        assert_eq!(
            ids(r#"{"batchItemFailures":[{"itemIdentifier":"c"}]}"#),
            None
        );
        assert_eq!(
            ids(r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#),
            None
        );
        assert_eq!(ids(r#"{"batchItemFailures":[{}]}"#), None);
    }
}
