//! What each Lambda function does with its event, written over [`Sundial`] so the tests call these
//! directly with the `events/` fixtures; the binaries in `functions/` only hand events in.
//!
//! - **tick** runs one engine tick. EventBridge may deliver the minute's event late or twice; a
//!   tick is idempotent (execution ids are derived from the fire), so both are harmless.
//! - **dispatch** and **notify** take an SQS batch and run its messages concurrently. A message
//!   that fails is reported in `batchItemFailures` so only it comes back, after a backoff set with
//!   `ChangeMessageVisibility` (else it would wait out the queue's whole visibility timeout).
//!   After `maxReceiveCount` receives SQS moves it to the DLQ.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_service::engine::{DispatchMessage, EngineError, Run};
use sundial_service::ports::queue::Queue;

use crate::runtime::{AwsEngine, Sundial};

/// Which queue a batch came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The dispatch queue.
    Dispatch,
    /// The notify queue.
    Notify,
}

impl Lane {
    fn name(self) -> &'static str {
        match self {
            Lane::Dispatch => "dispatch",
            Lane::Notify => "notify",
        }
    }
}

/// Runs one tick. `event` is the scheduled event (its `time` says how late EventBridge delivered
/// it, which is counted as `TickDelayMs`).
pub async fn tick(sundial: &Sundial, event: &Value) -> Result<Value, EngineError> {
    let started = Utc::now();
    let result = sundial.engine.tick().await;
    let metrics = &sundial.metrics;
    if let Some(scheduled) = event
        .get("time")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
    {
        let delay = (started - scheduled.with_timezone(&Utc)).num_milliseconds();
        metrics.add("TickDelayMs", delay.max(0) as f64);
    }
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            metrics.add("TickErrors", 1.0);
            flush(sundial, "tick").await;
            return Err(e);
        }
    };
    metrics.add("Fires", report.fires as f64);
    metrics.add("Missed", report.missed as f64);
    metrics.add("WakeUps", report.wakeups as f64);
    flush(sundial, "tick").await;
    tracing::info!(
        jobs = report.jobs,
        fires = report.fires,
        missed = report.missed,
        wakeups = report.wakeups,
        "tick"
    );
    Ok(serde_json::json!({
        "jobs": report.jobs,
        "fires": report.fires,
        "missed": report.missed,
        "wakeups": report.wakeups,
    }))
}

/// Runs a batch from the dispatch or notify queue; the response names the messages to redeliver.
pub async fn batch(sundial: &Sundial, lane: Lane, event: SqsEvent) -> SqsBatchResponse {
    // The batch's executions and jobs are read in one request (BatchGetItem), not two per message.
    let mut prefetched = match lane {
        Lane::Dispatch => {
            let ids: Vec<String> = event
                .records
                .iter()
                .filter_map(|r| dispatch_message(r).ok())
                .map(|m| m.execution_id)
                .collect();
            sundial.engine.prefetch(&ids).await
        }
        Lane::Notify => Default::default(),
    };
    let mut running = tokio::task::JoinSet::new();
    for record in event.records {
        let engine = Arc::clone(&sundial.engine);
        let read = dispatch_message(&record)
            .ok()
            .and_then(|m| prefetched.remove(&m.execution_id));
        running.spawn(async move {
            let outcome = run_message(&engine, lane, &record, read).await;
            (record, outcome)
        });
    }
    let mut response = SqsBatchResponse::default();
    let mut failed = 0u32;
    let mut succeeded = 0u32;
    while let Some(joined) = running.join_next().await {
        let (record, outcome) = match joined {
            Ok(done) => done,
            Err(e) => {
                // A panicking step cannot name its message; failing the whole batch would redo the
                // good ones, so it is logged and the message comes back after its visibility timeout.
                tracing::error!(error = %e, "a message task panicked");
                continue;
            }
        };
        let Err(e) = outcome else {
            succeeded += 1;
            continue;
        };
        failed += 1;
        let receive_count: u64 = record
            .attributes
            .get("ApproximateReceiveCount")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1);
        tracing::warn!(lane = lane.name(), message_id = ?record.message_id, receive_count, error = %e, "message failed; it comes back after a backoff");
        if let Some(receipt) = &record.receipt_handle {
            let backoff = Duration::from_secs(receive_count.clamp(1, 30) * 2);
            let queue = match lane {
                Lane::Dispatch => sundial.engine.dispatch_queue(),
                Lane::Notify => sundial.engine.notify_queue(),
            };
            if let Err(e) = queue.postpone(receipt, backoff).await {
                tracing::debug!(error = %e, "could not set the backoff; the queue's visibility timeout applies");
            }
        }
        response.add_failure(record.message_id.unwrap_or_default());
    }
    let (done, failures) = match lane {
        Lane::Dispatch => ("DispatchMessages", "DispatchFailures"),
        // A notify message is one delivery attempt: delivered, or rescheduled by the engine.
        Lane::Notify => ("Notifications", "NotifyFailures"),
    };
    sundial.metrics.add(done, f64::from(succeeded));
    sundial.metrics.add(failures, f64::from(failed));
    flush(sundial, lane.name()).await;
    response
}

fn dispatch_message(record: &SqsMessage) -> serde_json::Result<DispatchMessage> {
    serde_json::from_str(record.body.as_deref().unwrap_or_default())
}

async fn run_message(
    engine: &AwsEngine,
    lane: Lane,
    record: &SqsMessage,
    read: Option<Option<Run>>,
) -> Result<(), EngineError> {
    match lane {
        Lane::Dispatch => match dispatch_message(record) {
            Ok(message) => engine.dispatch_from(&message.execution_id, read).await,
            Err(e) => {
                // Redelivering it would fail the same way until it reached the DLQ; drop it now.
                let body = record.body.as_deref().unwrap_or_default();
                tracing::warn!(error = %e, body, "unreadable dispatch message dropped");
                Ok(())
            }
        },
        Lane::Notify => {
            engine
                .notify(record.body.as_deref().unwrap_or_default())
                .await
        }
    }
}

/// End of an invocation: buffered state-change events out, metrics printed.
async fn flush(sundial: &Sundial, function: &str) {
    sundial.engine.publisher().flush().await;
    for document in sundial.metrics.flush(function, Utc::now()) {
        // EMF is read from the function's log stream: stdout, one document per line.
        println!("{document}");
    }
}

/// The HTTP API, as `sundial serve` serves it: the same router, without the bearer token (API
/// Gateway authenticates with IAM or JWT). Build its [`Sundial`] with [`Sundial::unbatched`]: a
/// request's state changes are published before it answers.
pub fn api_router(sundial: &Sundial) -> axum::Router {
    sundial_service::api::router(Arc::clone(sundial.engine.app()), None)
}
