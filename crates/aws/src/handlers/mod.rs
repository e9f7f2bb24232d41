//! What each Lambda function does with its event, written over the engine's ports: the binaries
//! in `functions/` run these on the AWS adapters ([`Sundial::from_env`](crate::Sundial)), and the
//! unit tests (`tests.rs`) on the in-memory ones, with the `events/` fixtures and no AWS at all.
//!
//! - **tick** runs one engine tick. EventBridge may deliver the minute's event late or twice; a
//!   tick is idempotent (execution ids are derived from the fire), so both are harmless.
//! - **dispatch** and **notify** take an SQS batch and run its messages concurrently, each through
//!   [`Engine::handle_message`](sundial_service::engine::Engine::handle_message), as
//!   `sundial serve` does. A message whose step failed and may succeed later (a panic included) is
//!   reported in `batchItemFailures`, so only it comes back, after
//!   [`retry_backoff`](sundial_service::engine::retry_backoff) set with `ChangeMessageVisibility`
//!   (else it would wait out the queue's whole visibility timeout); after `maxReceiveCount`
//!   receives SQS moves it to the DLQ. A poison message (a body that does not decode, corrupt
//!   stored data) is sent to the DLQ at once and not reported, so the event source deletes it.
//! - **api** is the router `sundial serve` runs: the API and, when the stack turns it on, the
//!   operator console with its own login ([`api_router_with_console`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_ports::cause::chain;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::memory::RecordingPublisher;
use sundial_ports::queue::{Delivery, Queue};
use sundial_ports::store::Store;
use sundial_service::engine::{EngineError, Handled};

pub mod identity;

use crate::publisher::AwsPublisher;
use crate::runtime::Sundial;

/// The queue a batch came from: the engine's own [`QueueKind`], here for the binaries.
pub use sundial_service::engine::QueueKind;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod sign_in_tests;

/// What a handler does with its publisher at the end of an invocation: send what it buffered.
/// The AWS publisher batches state-change events ([`AwsPublisher::flush`]); a publisher that
/// buffers nothing does nothing.
pub trait Flush: EventPublisher {
    /// Sends whatever was buffered during the invocation. Best effort: failures are logged.
    fn flush(&self) -> impl Future<Output = ()> + Send;
}

impl Flush for AwsPublisher {
    async fn flush(&self) {
        AwsPublisher::flush(self).await;
    }
}

impl Flush for RecordingPublisher {
    async fn flush(&self) {}
}

/// Runs one tick. `event` is the scheduled event (its `time` says how late EventBridge delivered
/// it, which is counted as `TickDelayMs`). A failed tick is logged and returned, so the function
/// reports an error (the `TickErrorsAlarm`); the next tick reads the same timers.
pub async fn tick<S, Q, H, P>(
    sundial: &Sundial<S, Q, H, P>,
    event: &Value,
) -> Result<Value, EngineError>
where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: Flush,
{
    let started = sundial.engine.app().now();
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
            tracing::error!(error = %chain(&e), "tick failed");
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
///
/// Needs `FunctionResponseTypes: [ReportBatchItemFailures]` on the event source mapping
/// (template.yaml), or SQS reads the response as success and deletes the failed messages with
/// the rest; and the DLQ's URL (`SUNDIAL_DISPATCH_DLQ_URL`, `SUNDIAL_NOTIFY_DLQ_URL`) with
/// `sqs:SendMessage` on it, or a poison message is retried until SQS's own redrive moves it.
pub async fn batch<S, Q, H, P>(
    sundial: &Sundial<S, Q, H, P>,
    kind: QueueKind,
    event: SqsEvent,
) -> SqsBatchResponse
where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: Flush,
{
    let received: Vec<(String, Delivery)> = event.records.into_iter().map(received).collect();
    // The batch's executions and jobs are read in one request (BatchGetItem), not two per message.
    let mut prefetched = sundial
        .engine
        .prefetch_messages(kind, received.iter().map(|(_, d)| d.body.as_str()))
        .await;
    let mut running = tokio::task::JoinSet::new();
    // Every task is mapped to its message, so that a task that dies is still reported by id: a
    // message left out of `batchItemFailures` would be deleted as done.
    let mut message_of_task = HashMap::new();
    for (message_id, delivery) in received {
        let engine = Arc::clone(&sundial.engine);
        let read = prefetched.take(&delivery.body);
        let id = message_id.clone();
        let task = running.spawn(async move {
            engine
                .handle_message(kind, &message_id, &delivery, read)
                .await
        });
        message_of_task.insert(task.id(), id);
    }
    let mut response = SqsBatchResponse::default();
    let (mut done, mut failed, mut dead) = (0u32, 0u32, 0u32);
    while let Some(joined) = running.join_next_with_id().await {
        let (task, handled) = match joined {
            Ok(finished) => finished,
            Err(e) => {
                // `handle_message` catches a panicking step; this is a task that died around it.
                // (Where panics abort, as in the release profile, the invocation ends instead and
                // SQS redelivers the whole batch: no message is lost either way.)
                tracing::error!(queue = kind.name(), error = %e, "a message task died");
                (e.id(), Handled::Retry)
            }
        };
        let message_id = message_of_task.remove(&task).unwrap_or_default();
        match handled {
            Handled::Done => done += 1,
            Handled::DeadLettered => dead += 1,
            Handled::Retry => {
                failed += 1;
                response.add_failure(message_id);
            }
        }
    }
    let (done_metric, failed_metric, dead_metric) = match kind {
        QueueKind::Dispatch => (
            "DispatchMessages",
            "DispatchFailures",
            "DispatchDeadLettered",
        ),
        // A notify message is one delivery attempt: delivered, or rescheduled by the engine.
        QueueKind::Notify => ("Notifications", "NotifyFailures", "NotifyDeadLettered"),
    };
    let metrics = &sundial.metrics;
    metrics.add(done_metric, f64::from(done));
    metrics.add(failed_metric, f64::from(failed));
    metrics.add(dead_metric, f64::from(dead));
    flush(sundial, kind.name()).await;
    response
}

/// An SQS record as the queue port's delivery, with its message id.
fn received(record: SqsMessage) -> (String, Delivery) {
    let receive_count = record
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let delivery = Delivery {
        body: record.body.unwrap_or_default(),
        receipt: record.receipt_handle.unwrap_or_default(),
        receive_count,
    };
    (record.message_id.unwrap_or_default(), delivery)
}

/// End of an invocation: buffered state-change events out, metrics printed.
async fn flush<S, Q, H, P>(sundial: &Sundial<S, Q, H, P>, function: &str)
where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: Flush,
{
    sundial.engine.publisher().flush().await;
    for document in sundial.metrics.flush(function, sundial.engine.app().now()) {
        // EMF is read from the function's log stream: stdout, one document per line.
        println!("{document}");
    }
}

/// The HTTP API, as `sundial serve` serves it: the same router, without the bearer token (API
/// Gateway authenticates with IAM or JWT), behind [`identity::caller_from_context`], which makes
/// the principal API Gateway authorized the actor of the request's changes, with scope write for
/// IAM and the scope of [`Sundial::jwt_scopes`] for a JWT. On AWS build its
/// [`Sundial`] with [`Sundial::unbatched`]: a request's state changes are published before it
/// answers.
pub fn api_router<S, Q, H, P>(sundial: &Sundial<S, Q, H, P>) -> axum::Router
where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    api_router_with_console(sundial, None)
}

/// [`api_router`] and, with `console`, the operator console beside it as `sundial serve` mounts
/// it (`/`, `/ui/…`): on routes API Gateway leaves to the function, so the console checks its
/// own sessions; the API routes keep API Gateway's authorizer. The console's pages call the use
/// cases in this process and never hold the API's credentials.
pub fn api_router_with_console<S, Q, H, P>(
    sundial: &Sundial<S, Q, H, P>,
    console: Option<sundial_console::ConsoleConfig>,
) -> axum::Router
where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    let app = Arc::clone(sundial.engine.app());
    let router = sundial_api::router(Arc::clone(&app), None);
    let router = match console {
        Some(config) => router.merge(sundial_console::router(app, config)),
        None => router,
    };
    router.layer(axum::middleware::from_fn_with_state(
        Arc::clone(&sundial.jwt_scopes),
        identity::caller_from_context,
    ))
}
