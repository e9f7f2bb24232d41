//! The execution engine: tick, dispatch and notify, written once over the ports.
//!
//! Three use cases move every run (BRIEF §3–§4):
//! - **tick** ([`Engine::tick`]) reads what the timer index says is due before the next tick —
//!   jobs' next fires and executions' wake-ups — plans fires with the pure planner
//!   ([`sundial_core::plan`]), creates their executions and sends each to the dispatch queue with
//!   the delay that makes it start on its second;
//! - **dispatch** ([`Engine::dispatch`]) takes one execution one step along its state machine:
//!   admit it against the overlap policy, run the request chain, poll an async job, retry, time out,
//!   and finish it, releasing its slot and sending its notifications;
//! - **notify** ([`Engine::notify`]) delivers one notification, retrying by seed 002's rule.
//!
//! Queues deliver at least once and any worker may die between two writes, so every step is
//! idempotent: execution ids are derived from the fire, every write is conditional on the version
//! read, and a message that finds its execution already past the step it was sent for only makes
//! sure the follow-up work (releasing a slot, the next wake-up) was done. Waits longer than the
//! queue's delay limit go through the timer index (`exec:{id}` entries), which the tick turns back
//! into messages.
//!
//! `sundial serve` runs these in-process ([`runner`]); the Lambda functions call the same methods.

mod dispatch;
mod notify;
pub mod runner;
mod tick;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sundial_core::execution::{Execution, ExecutionState};
use tokio::sync::Notify;

use crate::app::{decode_execution, encode_execution, App, AppError};
use crate::events::{BusEvent, EventPublisher};
use crate::http::HttpClient;
use crate::queue::{Queue, QueueError, MAX_DELAY};
use crate::store::{ExecutionRecord, Store, StoreError};

pub use notify::NotifyMessage;
pub use tick::TickReport;

/// How many times one step re-reads and retries after losing a conditional write.
const MAX_STEP_RETRIES: usize = 16;

/// Settings of the engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// How far past "now" a tick plans: the tick period plus a margin for a late tick. Locally the
    /// tick runs every second; on AWS once a minute.
    pub tick_horizon: StdDuration,
    /// The public base URL of the API, for `schedulingFeedbackUrl` (`http://127.0.0.1:8080`).
    pub public_base_url: String,
    /// `service://name/…` resolution: service name → base URL.
    pub services: BTreeMap<String, String>,
    /// `SUNDIAL_VAR_*` variables templates may read, by full name.
    pub template_env: BTreeMap<String, String>,
    /// The bus state-change events go to; `None` publishes none.
    pub state_change_bus: Option<String>,
    /// How long a notification with `qos: 1` keeps being retried.
    pub reliable_notify_for: StdDuration,
    /// A dispatch message that arrives at most this much before its execution is due waits in
    /// place instead of being sent again. Zero locally (the embedded queue keeps milliseconds);
    /// a second on AWS, where SQS delays are whole seconds.
    pub max_inline_wait: StdDuration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            tick_horizon: StdDuration::from_secs(2),
            public_base_url: "http://127.0.0.1:8080".into(),
            services: BTreeMap::new(),
            template_env: BTreeMap::new(),
            state_change_bus: None,
            reliable_notify_for: StdDuration::from_secs(24 * 3600),
            max_inline_wait: StdDuration::ZERO,
        }
    }
}

/// Why an engine step failed. Every variant means "try the message again later": nothing was
/// half-done that a retry would not finish.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store failed or the data is unreadable.
    #[error(transparent)]
    App(#[from] AppError),
    /// The queue failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// A step kept losing conditional writes to concurrent workers.
    #[error("{0} kept changing under concurrent writers; retry later")]
    Contended(String),
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        EngineError::App(e.into())
    }
}

/// A dispatch-queue message: take this execution one step further.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchMessage {
    /// The execution.
    pub execution_id: String,
}

fn dispatch_body(execution_id: &str) -> Result<String, EngineError> {
    serde_json::to_string(&DispatchMessage {
        execution_id: execution_id.to_string(),
    })
    .map_err(|e| AppError::Unavailable(format!("encoding a dispatch message: {e}")).into())
}

/// The timer-index key of an execution's next wake-up.
pub fn execution_wakeup_key(execution_id: &str) -> String {
    format!("exec:{execution_id}")
}

/// The engine over its ports.
pub struct Engine<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> {
    app: Arc<App<S>>,
    dispatch_queue: Q,
    notify_queue: Q,
    http: H,
    publisher: P,
    config: EngineConfig,
    /// Woken whenever this engine sends a message, so local pollers need not poll often.
    sent: Arc<Notify>,
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// An engine over `app`'s store and clock and the given ports.
    pub fn new(
        app: Arc<App<S>>,
        dispatch_queue: Q,
        notify_queue: Q,
        http: H,
        publisher: P,
        config: EngineConfig,
    ) -> Self {
        Engine {
            app,
            dispatch_queue,
            notify_queue,
            http,
            publisher,
            config,
            sent: Arc::new(Notify::new()),
        }
    }

    /// The control plane the engine shares its store and clock with.
    pub fn app(&self) -> &Arc<App<S>> {
        &self.app
    }

    /// The dispatch queue.
    pub fn dispatch_queue(&self) -> &Q {
        &self.dispatch_queue
    }

    /// The notify queue.
    pub fn notify_queue(&self) -> &Q {
        &self.notify_queue
    }

    /// The event publisher.
    pub fn publisher(&self) -> &P {
        &self.publisher
    }

    /// The engine's settings.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Notified whenever the engine sends a message.
    pub fn sent_signal(&self) -> Arc<Notify> {
        Arc::clone(&self.sent)
    }

    fn now(&self) -> DateTime<Utc> {
        self.app.now()
    }

    fn store(&self) -> &S {
        self.app.store()
    }

    /// Makes `execution_id` take its next step at `at`: a queue message with a delay when the wait
    /// fits the queue's limit, else an `exec:` timer-index entry the tick turns into a message
    /// when it comes due.
    pub(crate) async fn wake_at(
        &self,
        execution_id: &str,
        at: DateTime<Utc>,
    ) -> Result<(), EngineError> {
        let wait = (at - self.now()).to_std().unwrap_or_default();
        if wait > MAX_DELAY {
            self.store()
                .set_wakeup(&execution_wakeup_key(execution_id), Some(at))
                .await?;
            return Ok(());
        }
        self.send_dispatch(execution_id, wait).await
    }

    /// [`Engine::wake_at`] for many executions: the messages go out in batches.
    pub(crate) async fn wake_all(
        &self,
        wakes: &[(String, DateTime<Utc>)],
    ) -> Result<(), EngineError> {
        let now = self.now();
        let mut messages = Vec::with_capacity(wakes.len());
        for (execution_id, at) in wakes {
            let wait = (*at - now).to_std().unwrap_or_default();
            if wait > MAX_DELAY {
                self.store()
                    .set_wakeup(&execution_wakeup_key(execution_id), Some(*at))
                    .await?;
            } else {
                messages.push((dispatch_body(execution_id)?, wait));
            }
        }
        if !messages.is_empty() {
            self.dispatch_queue.send_batch(&messages).await?;
            self.sent.notify_waiters();
        }
        Ok(())
    }

    pub(crate) async fn send_dispatch(
        &self,
        execution_id: &str,
        delay: StdDuration,
    ) -> Result<(), EngineError> {
        let body = dispatch_body(execution_id)?;
        self.dispatch_queue
            .send(&body, delay.min(MAX_DELAY))
            .await?;
        self.sent.notify_waiters();
        Ok(())
    }

    async fn read_execution(&self, execution_id: &str) -> Result<Option<Loaded>, EngineError> {
        let Some(record) = self.store().get_execution(execution_id).await? else {
            return Ok(None);
        };
        let execution = decode_execution(&record)?;
        let seen_events = execution.event_count();
        Ok(Some(Loaded {
            execution,
            record,
            seen_events,
        }))
    }

    /// Writes an execution back against the version it was read at. `Ok(false)` when another
    /// worker wrote first: the caller re-reads and decides again.
    async fn write_execution(&self, loaded: &mut Loaded) -> Result<bool, EngineError> {
        let mut record = encode_execution(&loaded.execution, loaded.record.version)?;
        record.created_at = loaded.record.created_at;
        match self.store().update_execution(&record).await {
            Ok(version) => {
                record.version = version;
                loaded.record = record;
                // One event per state entered since the last write: a step may pass through
                // several states (Scheduled → Enqueued → Processing) in one write.
                let entered: Vec<ExecutionState> = loaded
                    .execution
                    .transitions_since(loaded.seen_events)
                    .map(|event| event.to)
                    .collect();
                loaded.seen_events = loaded.execution.event_count();
                for state in entered {
                    self.publish_state_as(&loaded.execution, state).await;
                }
                Ok(true)
            }
            Err(StoreError::VersionConflict { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Publishes the execution's state when a bus is configured. Best effort: the execution's own
    /// log is the record; a lost event is logged, never a reason to redo the step.
    async fn publish_state(&self, execution: &Execution) {
        self.publish_state_as(execution, execution.state()).await;
    }

    /// Publishes `execution` as having entered `state` (which may be an earlier state than its
    /// current one, when one write covered several transitions).
    async fn publish_state_as(&self, execution: &Execution, state: ExecutionState) {
        let Some(bus) = &self.config.state_change_bus else {
            return;
        };
        let event = BusEvent {
            bus: Some(bus.clone()),
            source: "sundial".into(),
            detail_type: "Execution State Change".into(),
            detail: serde_json::json!({
                "executionId": execution.execution_id,
                "jobId": execution.job_id.as_str(),
                "executeNumber": execution.execute_number,
                "state": state.name(),
                "scheduledTime": crate::app::json_time(execution.scheduled_time),
                "attempts": execution.attempts(),
                "error": execution.error,
            }),
        };
        if let Err(e) = self.publisher.publish(&event).await {
            tracing::warn!(execution_id = %execution.execution_id, error = %e, "state change event not published");
        }
    }
}

/// An execution as read, with the record it came from (its version).
pub(crate) struct Loaded {
    pub execution: Execution,
    pub record: ExecutionRecord,
    /// [`Execution::event_count`] as last stored: the transitions after it are not yet published.
    pub seen_events: u64,
}

/// What the control plane asks of the engine: start a run it just created, and take an async
/// job's feedback. Object-safe so that [`App`] need not know the engine's port types.
pub trait EngineHooks: Send + Sync {
    /// Sends the execution to dispatch now.
    fn kick(&self, execution_id: String) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;

    /// Applies an async job's feedback report to its execution.
    fn feedback(
        &self,
        execution_id: String,
        report: serde_json::Value,
    ) -> Pin<Box<dyn Future<Output = Result<(), AppError>> + Send + '_>>;
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> EngineHooks for Engine<S, Q, H, P> {
    fn kick(&self, execution_id: String) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if let Err(e) = self.send_dispatch(&execution_id, StdDuration::ZERO).await {
                // The control plane also left an `exec:` wake-up: the tick sends it in a moment.
                tracing::warn!(execution_id, error = %e, "could not send to dispatch; the tick will");
            }
        })
    }

    fn feedback(
        &self,
        execution_id: String,
        report: serde_json::Value,
    ) -> Pin<Box<dyn Future<Output = Result<(), AppError>> + Send + '_>> {
        Box::pin(async move {
            self.apply_feedback(&execution_id, &report)
                .await
                .map_err(|e| match e {
                    EngineError::App(app) => app,
                    other => AppError::Unavailable(other.to_string()),
                })
        })
    }
}

#[cfg(test)]
mod tests;
