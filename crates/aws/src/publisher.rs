//! The [`EventPublisher`] port on EventBridge and SQS: state-change events go to the configured bus,
//! and jobs with an `sqs` or `eventbridge` target send their one message per run here.
//!
//! State-change events are batched: the engine publishes one per transition, which one `PutEvents`
//! call each would make the dearest part of a run. With batching on, they wait in a buffer that is
//! sent ten entries per call when it fills and when the handler ends its invocation
//! ([`AwsPublisher::flush`]). They were always best effort (the execution's own log is the record),
//! so a function that dies before flushing loses at most one invocation's events. A job's own
//! `eventbridge` target is never buffered: that event *is* the run.

use futures_util::FutureExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use sundial_ports::cause::Cause;
use sundial_ports::events::{BusEvent, EventPublisher, PublishError, TargetSupport};

use crate::metrics::Metrics;

/// EventBridge and SQS clients, and the bus events without one go to.
#[derive(Clone, Debug)]
pub struct AwsPublisher {
    events: aws_sdk_eventbridge::Client,
    sqs: aws_sdk_sqs::Client,
    default_bus: String,
    metrics: Option<Arc<Metrics>>,
    batching: Arc<AtomicBool>,
    buffer: Arc<Mutex<Vec<PutEventsRequestEntry>>>,
}

/// `PutEvents` takes at most ten entries.
const PUT_EVENTS_MAX: usize = 10;

/// The detail-type of the engine's state-change events.
const STATE_CHANGE: &str = "Execution State Change";

impl AwsPublisher {
    /// A publisher whose events without a bus go to `default_bus`.
    pub fn new(
        events: aws_sdk_eventbridge::Client,
        sqs: aws_sdk_sqs::Client,
        default_bus: impl Into<String>,
    ) -> Self {
        AwsPublisher {
            events,
            sqs,
            default_bus: default_bus.into(),
            metrics: None,
            batching: Arc::new(AtomicBool::new(false)),
            buffer: Arc::default(),
        }
    }

    /// A publisher with clients of its own on `sdk` (what `sundial serve --aws-targets` uses),
    /// whose events without a bus go to `default_bus`.
    pub fn from_config(sdk: &aws_config::SdkConfig, default_bus: impl Into<String>) -> Self {
        AwsPublisher::new(
            aws_sdk_eventbridge::Client::new(sdk),
            aws_sdk_sqs::Client::new(sdk),
            default_bus,
        )
    }

    /// Buffers state-change events until [`AwsPublisher::flush`] (or ten are waiting) instead of
    /// sending each at once. Whoever turns it on must flush.
    pub fn set_batching(&self, on: bool) {
        self.batching.store(on, Ordering::Relaxed);
    }

    /// Sends every buffered state-change event, ten per call. Failures are logged: the events are
    /// best effort.
    pub async fn flush(&self) {
        loop {
            let chunk: Vec<PutEventsRequestEntry> = match self.buffer.lock() {
                Ok(mut buffer) => {
                    let n = buffer.len().min(PUT_EVENTS_MAX);
                    buffer.drain(..n).collect()
                }
                Err(_) => return,
            };
            if chunk.is_empty() {
                return;
            }
            let count = chunk.len();
            match self
                .events
                .put_events()
                .set_entries(Some(chunk))
                .send()
                .boxed()
                .await
            {
                Ok(output) if output.failed_entry_count() > 0 => tracing::warn!(
                    failed = output.failed_entry_count(),
                    count,
                    "some state change events were not published"
                ),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(count, error = %DisplayErrorContext(&e), "state change events not published")
                }
            }
        }
    }

    fn entry(&self, event: &BusEvent) -> PutEventsRequestEntry {
        PutEventsRequestEntry::builder()
            .event_bus_name(event.bus.as_deref().unwrap_or(&self.default_bus))
            .source(&event.source)
            .detail_type(&event.detail_type)
            .detail(event.detail.to_string())
            .build()
    }

    /// Counts the state changes it publishes into `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

/// Error codes that mean "this request will never succeed": a missing queue or bus, a body SQS
/// refuses, a denied permission. Everything else (throttling, 5xx, network) is worth a retry.
const PERMANENT: &[&str] = &[
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
    "InvalidMessageContents",
    "InvalidParameterValue",
    "ResourceNotFoundException",
    "ValidationException",
    "AccessDeniedException",
    "AccessDenied",
    "InvalidAddress",
];

fn classify<E, R>(operation: &str, error: SdkError<E, R>) -> PublishError
where
    E: std::error::Error + ProvideErrorMetadata + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let permanent = error
        .as_service_error()
        .and_then(|e| e.code())
        .is_some_and(|code| PERMANENT.contains(&code));
    let message = operation.to_owned();
    let source = Some(Cause::new(error));
    if permanent {
        PublishError::Rejected { message, source }
    } else {
        PublishError::Unavailable { message, source }
    }
}

impl EventPublisher for AwsPublisher {
    fn target_support(&self) -> TargetSupport {
        TargetSupport::Delivered
    }

    async fn publish(&self, event: &BusEvent) -> Result<(), PublishError> {
        let state_change = event.detail_type == STATE_CHANGE;
        let entry = self.entry(event);
        if state_change && self.batching.load(Ordering::Relaxed) {
            let full = match self.buffer.lock() {
                Ok(mut buffer) => {
                    buffer.push(entry);
                    buffer.len() >= PUT_EVENTS_MAX
                }
                Err(_) => false,
            };
            if full {
                self.flush().await;
            }
            return Ok(());
        }
        let output = self
            .events
            .put_events()
            .entries(entry)
            .send()
            .boxed()
            .await
            .map_err(|e| classify("PutEvents", e))?;
        if output.failed_entry_count() == 0 {
            return Ok(());
        }
        // PutEvents answers 200 with per-entry failures; ours is the only entry.
        let failed = output.entries().first();
        let code = failed.and_then(|e| e.error_code()).unwrap_or("unknown");
        let message = format!(
            "PutEvents: {code}: {}",
            failed.and_then(|e| e.error_message()).unwrap_or("")
        );
        let source = None;
        if matches!(code, "InternalFailure" | "ThrottlingException" | "unknown") {
            Err(PublishError::Unavailable { message, source })
        } else {
            Err(PublishError::Rejected { message, source })
        }
    }

    /// Counts every state change into the metrics (`Executions` by state, `FireLagMs`,
    /// `Retries`), whether or not the deployment publishes it (`StateChangeEvents`).
    fn observe_state_change(&self, detail: &serde_json::Value) {
        if let Some(metrics) = &self.metrics {
            metrics.state_change(detail, chrono::Utc::now());
        }
    }

    async fn send_to_queue(&self, queue_url: &str, body: &str) -> Result<(), PublishError> {
        self.sqs
            .send_message()
            .queue_url(queue_url)
            .message_body(body)
            .send()
            .boxed()
            .await
            .map_err(|e| classify("SendMessage", e))?;
        Ok(())
    }
}
