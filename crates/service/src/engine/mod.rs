//! The execution engine: tick, dispatch and notify, written once over the ports.
//!
//! Three use cases move every run (docs/engine.md):
//! - **tick** ([`Engine::tick`]) reads what the wake-up index says is due before the next tick —
//!   jobs' next fires and executions' wake-ups — plans fires with the pure planner
//!   ([`sundial_core::plan`]), creates their executions and sends each to the dispatch queue with
//!   the delay that makes it start on its second;
//! - **dispatch** ([`Engine::dispatch`]) takes one execution one step along its state machine:
//!   admit it against the overlap policy, run the request chain, poll an async job, retry, time out,
//!   and finish it, releasing its slot and sending its notifications;
//! - **notify** ([`Engine::notify`]) delivers one notification, retrying by docs/api.md's rule.
//!
//! Queues deliver at least once and any worker may die between two writes, so every step is
//! idempotent: execution ids are derived from the fire, every write is conditional on the version
//! read, and a message that finds its execution already past the step it was sent for only makes
//! sure the follow-up work (releasing a slot, the next wake-up) was done. Waits longer than the
//! queue's delay limit go through the wake-up index (`exec:{id}` entries), which the tick turns back
//! into messages.
//!
//! `sundial serve` runs these in-process ([`runner`]); the Lambda functions call the same methods.
//! Both hand each queue message to [`Engine::handle_message`], which decides what becomes of a
//! message whose step failed: back after [`retry_backoff`], or to the dead letters at once.

mod batch;
mod calls;
mod dispatch;
mod messages;
mod notify;
mod pace;
mod replan;
pub mod runner;
mod tick;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sundial_core::execution::{
    incarnation_of_execution, job_id_of_execution, Execution, ExecutionState,
};
use sundial_core::job::JobId;
use tokio::sync::Notify;

use crate::app::{App, AppError, EngineHooks};
use crate::conflict::ConflictRetry;
use crate::records::{
    decode_execution, decode_job, encode_execution, encode_job, execution_wakeup_key, final_rollup,
    RecordError, StoredJob,
};
use sundial_ports::cause::chain;
use sundial_ports::events::{BusEvent, EventPublisher};
use sundial_ports::http::HttpClient;
use sundial_ports::queue::{Queue, QueueError, MAX_DELAY};
use sundial_ports::store::{ExecutionRecord, Store, StoreError, Write, WriteAllError};

pub use messages::{Handled, Prefetched, QueueKind};
pub use notify::NotifyMessage;
pub use replan::ReplanMessage;
pub use tick::TickReport;

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
    /// Which state changes go to [`EngineConfig::state_change_bus`]: all of them (the default),
    /// only each run's final state, or none. Every change is counted either way
    /// ([`EventPublisher::observe_state_change`]).
    pub state_change_events: StateChangeEvents,
    /// How long a notification with `qos: 1` keeps being retried.
    pub reliable_notify_for: StdDuration,
    /// A dispatch message that arrives at most this much before its execution is due waits in
    /// place instead of being sent again. Zero locally (the embedded queue keeps milliseconds);
    /// a second on AWS, where SQS delays are whole seconds.
    pub max_inline_wait: StdDuration,
    /// How long before its fire time a scheduled run may be admitted: its slot taken and
    /// `Processing` written ahead, so that at the fire time only its call is left. A burst of
    /// fires due on the same second then makes its calls on that second rather than behind a
    /// queue of store writes. The tick sends fire messages this much early, and dispatch holds an
    /// admitted run until its time. Half a second locally ([`LOCAL_ADMIT_AHEAD`]); zero (off) on
    /// AWS, where holding a run would bill Lambda time.
    pub admit_ahead: StdDuration,
    /// Who this engine is (one per process or Lambda invocation), recorded with every lease it
    /// takes on a running attempt.
    pub incarnation: String,
    /// Whether this engine is the only one alive on its store: `sundial serve` holding its data
    /// directory's lock. Then a lease held by anyone else is a dead process's, and the run is
    /// reclaimed at once (the same attempt again, with the same `Idempotency-Key`) rather than
    /// when the lease runs out. False on AWS, where other invocations may be alive.
    pub sole_engine: bool,
    /// The longest one worker holds a running attempt, when the platform bounds it: on AWS one
    /// dispatch invocation (its function timeout less a margin for the final write). The lease
    /// then ends with the worker (plus 30 s), not with the attempt's `timeoutSeconds`, so a run
    /// whose invocation died is taken over within that bound; and every call of the chain ends
    /// by it, so none outlives its invocation. `None` locally: a worker holds an attempt to its end.
    pub max_hold: Option<StdDuration>,
    /// Whether a job just created, changed or resumed is planned in that request when its next
    /// fire is before the tick's horizon ([`EngineHooks::plan`]), so its first fire lands on its
    /// second. On by default, in `sundial serve` and on AWS, where the API function sends the
    /// fire's message with an SQS delay (at most the tick's 80 s horizon, as the tick would) instead
    /// of leaving it to the next minute's tick. Turning it off leaves every fire to the tick.
    pub plan_on_change: bool,
    /// How often a run's attempt reads its execution while its call is in flight, to learn of a
    /// stop made by another process (a cancel through the API function, another run's
    /// `CancelOther`): first this long after the call starts, then every this long. `None` in
    /// `sundial serve`, where every stop is made in the one process and reaches the call at once
    /// through the engine; [`AWS_STOP_CHECK_EVERY`] on AWS. A call shorter than this costs no
    /// read.
    pub stop_check_every: Option<StdDuration>,
    /// Whether a calendar's change re-plans its jobs through the notify queue, a message per 25
    /// jobs, rather than in the request ([`EngineHooks::replans_by_queue`]). Off in `sundial
    /// serve`; on on AWS, where a calendar thousands of jobs use would otherwise hold the API
    /// function for minutes.
    pub replan_by_queue: bool,
}

/// Which execution state changes are published as events (the `StateChangeEvents` deploy
/// parameter on AWS, where EventBridge bills $1 per million events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StateChangeEvents {
    /// None: a run costs no event.
    None,
    /// Each run's final state (`Succeeded`, `Terminated`, `Cancelled`, `Skipped`…): one event per
    /// run. A `Failed` attempt that will be retried is not final.
    Final,
    /// Every state entered (`Scheduled`, `Enqueued`, `Processing`, `Failed`, the final one): about
    /// three events per scheduled run.
    #[default]
    All,
}

impl StateChangeEvents {
    /// `none`, `final` or `all`; `true` and `false` (the older on/off setting) are `all` and
    /// `none`. `None` for anything else.
    pub fn parse(text: &str) -> Option<StateChangeEvents> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" | "false" => Some(StateChangeEvents::None),
            "final" => Some(StateChangeEvents::Final),
            "all" | "true" => Some(StateChangeEvents::All),
            _ => None,
        }
    }

    /// Whether a change into `state` is published at this level.
    pub fn publishes(self, state: ExecutionState) -> bool {
        match self {
            StateChangeEvents::None => false,
            StateChangeEvents::Final => state.is_final(),
            StateChangeEvents::All => true,
        }
    }
}

/// [`EngineConfig::stop_check_every`] on AWS: a stop made by another Lambda invocation closes the
/// call within 5 s, and a call shorter than that costs no extra store request.
pub const AWS_STOP_CHECK_EVERY: StdDuration = StdDuration::from_secs(5);

/// [`EngineConfig::admit_ahead`] for `sundial serve`. Fire times are whole seconds (jitter
/// aside), so admitting on the half second keeps a burst's admission writes half a second away
/// from its calls, and from the next burst's.
pub const LOCAL_ADMIT_AHEAD: StdDuration = StdDuration::from_millis(500);

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            tick_horizon: StdDuration::from_secs(2),
            public_base_url: "http://127.0.0.1:8080".into(),
            services: BTreeMap::new(),
            template_env: BTreeMap::new(),
            state_change_bus: None,
            state_change_events: StateChangeEvents::All,
            reliable_notify_for: StdDuration::from_secs(24 * 3600),
            max_inline_wait: StdDuration::ZERO,
            admit_ahead: StdDuration::ZERO,
            incarnation: "engine".into(),
            sole_engine: false,
            max_hold: None,
            plan_on_change: true,
            stop_check_every: None,
            replan_by_queue: false,
        }
    }
}

/// Why an engine step failed. Nothing was half-done that taking the step again would not finish;
/// whether that can succeed is [`EngineError::is_retryable`].
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store failed, or stored data is corrupt ([`AppError::Corrupt`]).
    #[error(transparent)]
    App(#[from] AppError),
    /// The queue failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// A step kept losing conditional writes to concurrent workers.
    #[error("{0} kept changing under concurrent writers; retry later")]
    Contended(String),
}

impl EngineError {
    /// Whether taking the step again later can succeed. A step reads everything it needs afresh,
    /// so any failure may go otherwise next time — a backend that was down, a write that lost a
    /// race, a job deleted meanwhile — except stored data that does not decode, which will not
    /// decode next time either: its message is poison and goes to the dead letters at once.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, EngineError::App(AppError::Corrupt { .. }))
    }
}

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        EngineError::App(e.into())
    }
}

impl From<RecordError> for EngineError {
    fn from(e: RecordError) -> Self {
        EngineError::App(e.into())
    }
}

/// How long a message whose step failed (and may succeed later) waits before it is delivered
/// again, by its receive count: 1 s after the first delivery, doubling each time, at most a
/// minute (1, 2, 4, 8, 16, 32, 60, 60 … s).
///
/// The first retries come quickly because most failures are brief (a write that lost races to a
/// busy job, a throttled request); the doubling spreads out messages that fail together, and the
/// cap means a run held back by an outage resumes within a minute of the backend's return. With
/// the queues' ten deliveries before a message becomes a dead letter
/// ([`DEFAULT_MAX_RECEIVES`](sundial_ports::queue::DEFAULT_MAX_RECEIVES), SQS `maxReceiveCount`),
/// a message rides out about four minutes of failures. The local runner and the Lambda handlers
/// both use this rule.
pub fn retry_backoff(receive_count: u32) -> StdDuration {
    const CAP: StdDuration = StdDuration::from_secs(60);
    let doublings = receive_count.saturating_sub(1).min(6);
    StdDuration::from_secs(1 << doublings).min(CAP)
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
    .map_err(|e| AppError::unavailable_because("encoding a dispatch message", e).into())
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
    /// Finished runs waiting to be settled on their job together.
    finals: batch::Batches<Execution, Released>,
    /// This process's dispatch tasks per job, which pace backfill planning.
    job_tasks: pace::JobTasks,
    /// How many pauses this process answered ([`EngineHooks::paused`]): a run about to call
    /// whose read is older than the last pause looks at its job once more (docs/engine.md,
    /// "Pause").
    pauses: std::sync::atomic::AtomicU64,
    /// The calls this process is making, by execution: how a stop made here reaches its call.
    in_flight: calls::InFlight,
}

/// What settling a finished run on its job freed: the buffered runs that start in its slot, and
/// whether the job has children (whose parent close policy then applies).
#[derive(Clone, Debug)]
struct Released {
    started: Vec<String>,
    has_children: bool,
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// An engine over `app`'s store and clock and the given ports, connected to `app` (which
    /// then sends it what it creates: triggers, cancels, feedback, plans of changed jobs). The one
    /// place an engine is wired to its control plane. `app` holds the engine weakly, since the
    /// engine holds `app`: keep the returned handle alive as long as the engine should run.
    pub fn new(
        app: Arc<App<S>>,
        dispatch_queue: Q,
        notify_queue: Q,
        http: H,
        publisher: P,
        config: EngineConfig,
    ) -> Arc<Self> {
        let engine = Arc::new(Engine {
            app,
            dispatch_queue,
            notify_queue,
            http,
            publisher,
            config,
            sent: Arc::new(Notify::new()),
            finals: batch::Batches::new(),
            job_tasks: pace::JobTasks::default(),
            pauses: std::sync::atomic::AtomicU64::new(0),
            in_flight: calls::InFlight::default(),
        });
        let hooks: Arc<dyn EngineHooks> = engine.clone();
        engine.app.attach_engine(Arc::downgrade(&hooks));
        engine
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

    /// The rounds of one step's read-modify-write, spaced through the engine's clock.
    fn step_retry(&self) -> ConflictRetry<'_> {
        ConflictRetry::for_step(self.app.clock())
    }

    /// How many pauses this process answered so far.
    fn pauses(&self) -> u64 {
        self.pauses.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn store(&self) -> &S {
        self.app.store()
    }

    /// Makes `execution_id` take its next step at `at`: a queue message with a delay when the wait
    /// fits the queue's limit, else an `exec:` wake-up the tick turns into a message
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

    /// [`Engine::wake_at`] for many executions, each `lead` before its time: the messages go out
    /// in batches.
    pub(crate) async fn wake_all(
        &self,
        wakes: &[(String, DateTime<Utc>)],
        lead: StdDuration,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let mut messages = Vec::with_capacity(wakes.len());
        for (execution_id, at) in wakes {
            let wait = (*at - now).to_std().unwrap_or_default();
            let wait = wait.saturating_sub(lead);
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
        let pauses = self.pauses();
        let Some(record) = self.store().get_execution(execution_id).await? else {
            return Ok(None);
        };
        let mut loaded = Loaded::from_record(record)?;
        loaded.pauses_seen = pauses;
        Ok(Some(loaded))
    }

    /// An execution and its job (`None` once the job is deleted), read together: what every
    /// dispatch step starts from.
    async fn read_run(&self, execution_id: &str) -> Result<Option<Run>, EngineError> {
        let mut runs = self.read_runs(&[execution_id.to_owned()], true).await?;
        Ok(runs.remove(execution_id).flatten())
    }

    /// [`Engine::read_run`] for many executions in one store read: `None` for those that do not
    /// exist. Unless `latest`, the read may be a moment behind the latest writes
    /// ([`Store::read_many_maybe_stale`], half the price on DynamoDB): every write a step makes
    /// from a run is conditional on what it read, so a change it missed fails the write and the
    /// step reads again. What such a read cannot tell apart from a change it missed (a run not
    /// found, its job not found or of another incarnation, which would end the run) is left out
    /// of the answer, for the step to read again, strongly.
    pub(crate) async fn read_runs(
        &self,
        execution_ids: &[String],
        latest: bool,
    ) -> Result<HashMap<String, Option<Run>>, EngineError> {
        // Execution ids start with their job's id; one that does not (none that Sundial makes)
        // is read with no job, and its own job id read after.
        let job_ids: Vec<String> = execution_ids
            .iter()
            .map(|id| job_id_of_execution(id).map_or_else(String::new, |j| j.to_string()))
            .collect();
        let pauses = self.pauses();
        let read = if latest {
            self.store().read_many(execution_ids, &job_ids).await?
        } else {
            self.store()
                .read_many_maybe_stale(execution_ids, &job_ids)
                .await?
        };
        let mut runs = HashMap::with_capacity(execution_ids.len());
        for ((id, execution), (job_id, job)) in execution_ids
            .iter()
            .zip(read.executions)
            .zip(job_ids.iter().zip(read.jobs))
        {
            let run = match execution {
                None => None,
                Some(record) => {
                    let mut loaded = Loaded::from_record(record)?;
                    loaded.pauses_seen = pauses;
                    let job = if job_id.as_str() == loaded.execution.job_id.as_str() {
                        job
                    } else {
                        self.store()
                            .get_job(loaded.execution.job_id.as_str())
                            .await?
                    };
                    // A job created again under the id of a deleted one is not this run's job:
                    // for the run, its job is gone.
                    let incarnation = incarnation_of_execution(&loaded.execution.execution_id);
                    let job = job
                        .as_ref()
                        .map(decode_job)
                        .transpose()?
                        .filter(|stored| stored.job.state.incarnation == incarnation);
                    Some(Run { loaded, job })
                }
            };
            if latest || matches!(&run, Some(Run { job: Some(_), .. })) {
                runs.insert(id.clone(), run);
            }
        }
        Ok(runs)
    }

    /// Writes an execution back against the version it was read at. `Ok(false)` when another
    /// worker wrote first: the caller re-reads and decides again.
    async fn write_execution(&self, loaded: &mut Loaded) -> Result<bool, EngineError> {
        Ok(matches!(
            self.write_step(loaded, None, &[]).await?,
            Written::Yes
        ))
    }

    /// Writes an execution back against the version it was read at, in the same atomic write as
    /// the change to its job the step made (`loaded.job_changed`: a slot taken or freed, a last
    /// result; `job` is then that changed job, whose version moves on) and, once the run is
    /// admitted (`loaded.clear_fallback`), the removal of its fallback wake-up. One store request
    /// where there were three.
    /// `also` are more writes for the same atomic write (fallback wake-ups of runs a freed slot starts).
    async fn write_step(
        &self,
        loaded: &mut Loaded,
        mut job: Option<&mut StoredJob>,
        also: &[Write<'_>],
    ) -> Result<Written, EngineError> {
        let mut record = encode_execution(&loaded.execution, loaded.record.version)?;
        record.created_at = loaded.record.created_at;
        let job_record = match &job {
            Some(job) if loaded.job_changed => {
                Some(encode_job(&job.job, job.version, job.service.clone()))
            }
            _ => None,
        };
        debug_assert!(
            !loaded.job_changed || job_record.is_some(),
            "a changed job must be written with its execution"
        );
        let fallback = execution_wakeup_key(&record.execution_id);
        let admitted = loaded.clear_fallback;
        // The run's statistics ride on the write that ends it, last so the indexes of the writes
        // before it (which the errors below name) stay as they are.
        let rollup = final_rollup(&loaded.execution, &loaded.record.state, loaded.not_run);
        // An attempt's start with the slot it takes: the job first, then the run, each a write
        // of its own (on DynamoDB one conditional write each, where a transaction of the two
        // billed both twice). A crash between them leaves the slot taken by a run that has not
        // started; its next delivery is admitted again (a run holding a slot is started, not
        // counted twice: `plan::admit`), and a run someone else ended meanwhile frees the slot
        // in its follow-up.
        let ordered = job_record.is_some()
            && also.is_empty()
            && rollup.is_none()
            && loaded.execution.state() == ExecutionState::Processing
            && loaded.record.state != ExecutionState::Processing.name();
        if let (true, Some(job_record)) = (ordered, &job_record) {
            match self
                .store()
                .write_all(&[Write::UpdateJob(job_record)])
                .await
            {
                Ok(()) => {}
                Err(WriteAllError {
                    index: Some(0),
                    error: StoreError::VersionConflict { .. } | StoreError::NotFound(_),
                }) => return Ok(Written::JobMoved),
                Err(e) => return Err(StoreError::from(e).into()),
            }
            if let Some(job) = job.as_deref_mut() {
                job.version += 1;
            }
            loaded.job_changed = false;
        }
        let mut writes = vec![Write::UpdateExecution(&record)];
        if !ordered {
            writes.extend(job_record.as_ref().map(Write::UpdateJob));
        }
        if loaded.clear_fallback {
            writes.push(Write::SetWakeup(&fallback, None));
        }
        writes.extend_from_slice(also);
        writes.extend(rollup.as_ref().map(Write::AddRollup));
        match self.store().write_all(&writes).await {
            Ok(()) => {}
            Err(WriteAllError {
                index: Some(0),
                error: StoreError::VersionConflict { .. },
            }) => return Ok(Written::ExecutionMoved),
            Err(WriteAllError {
                index: Some(1),
                error: StoreError::VersionConflict { .. } | StoreError::NotFound(_),
            }) if job_record.is_some() && !ordered => return Ok(Written::JobMoved),
            Err(e) => return Err(StoreError::from(e).into()),
        }
        record.version += 1;
        loaded.record = record;
        if let (Some(job), Some(_), false) = (job.as_deref_mut(), &job_record, ordered) {
            job.version += 1;
        }
        loaded.job_changed = false;
        loaded.clear_fallback = false;
        // One event per state entered since the last write: a step may pass through several
        // states (Scheduled → Enqueued → Processing) in one write.
        let entered: Vec<ExecutionState> = loaded
            .execution
            .transitions_since(loaded.seen_events)
            .map(|event| event.to)
            .collect();
        loaded.seen_events = loaded.execution.event_count();
        for state in entered {
            self.publish_state_as(&loaded.execution, state).await;
        }
        if let (true, Some(job)) = (admitted, job.as_deref()) {
            if let Err(e) = self.send_next_in_line(job).await {
                // The next run looks again on its own shortly.
                tracing::debug!(error = %chain(&e), "could not send the next run in line");
            }
        }
        Ok(Written::Yes)
    }

    /// Publishes the execution's state when a bus is configured and the level
    /// ([`EngineConfig::state_change_events`]) takes it. Best effort: the execution's own log is
    /// the record; a lost event is logged, never a reason to redo the step.
    async fn publish_state(&self, execution: &Execution) {
        self.publish_state_as(execution, execution.state()).await;
    }

    /// Publishes `execution` as having entered `state` (which may be an earlier state than its
    /// current one, when one write covered several transitions), after telling the publisher of
    /// it whatever the level, so that the metrics counted from state changes are always counted.
    async fn publish_state_as(&self, execution: &Execution, state: ExecutionState) {
        let detail = serde_json::json!({
            "executionId": execution.execution_id,
            "jobId": execution.job_id.as_str(),
            "executeNumber": execution.execute_number,
            "state": state.name(),
            "scheduledTime": crate::records::json_time(execution.scheduled_time),
            "attempts": execution.attempts(),
            "error": execution.error,
        });
        self.publisher.observe_state_change(&detail);
        let Some(bus) = &self.config.state_change_bus else {
            return;
        };
        if !self.config.state_change_events.publishes(state) {
            return;
        }
        let event = BusEvent {
            bus: Some(bus.clone()),
            source: "sundial".into(),
            detail_type: "Execution State Change".into(),
            detail,
        };
        if let Err(e) = self.publisher.publish(&event).await {
            tracing::warn!(execution_id = %execution.execution_id, error = %chain(&e), "state change event not published");
        }
    }
}

/// An execution as read, with the record it came from (its version).
pub(crate) struct Loaded {
    pub execution: Execution,
    pub record: ExecutionRecord,
    /// [`Execution::event_count`] as last stored: the transitions after it are not yet published.
    pub seen_events: u64,
    /// The step changed the job (took a slot at admission) and the execution's next write
    /// stores that change with it.
    pub job_changed: bool,
    /// The execution's next write removes its fallback wake-up (the run is being admitted).
    pub clear_fallback: bool,
    /// Why the run ends `Skipped` without running, when it does: what its statistics count.
    pub not_run: Option<sundial_core::stats::NotRun>,
    /// [`Engine::pauses`] just before the read: a pause answered since is not in it.
    pub pauses_seen: u64,
}

impl Loaded {
    fn from_record(record: ExecutionRecord) -> Result<Loaded, EngineError> {
        let execution = decode_execution(&record)?;
        let seen_events = execution.event_count();
        Ok(Loaded {
            execution,
            record,
            seen_events,
            job_changed: false,
            clear_fallback: false,
            not_run: None,
            pauses_seen: 0,
        })
    }
}

/// An execution and its job as read for a dispatch step (the job `None` once deleted).
pub struct Run {
    loaded: Loaded,
    job: Option<StoredJob>,
}

/// How [`Engine::write_step`] went.
pub(crate) enum Written {
    /// Written.
    Yes,
    /// Another worker wrote the execution first: nothing was written.
    ExecutionMoved,
    /// Another worker wrote the job first: nothing was written.
    JobMoved,
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> EngineHooks for Engine<S, Q, H, P> {
    fn kick(&self, execution_id: String) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if let Err(e) = self.send_dispatch(&execution_id, StdDuration::ZERO).await {
                // The control plane also left an `exec:` wake-up: the tick sends it in a moment.
                tracing::warn!(execution_id, error = %chain(&e), "could not send to dispatch; the tick will");
            }
        })
    }

    fn plan(
        &self,
        job_id: JobId,
        next: DateTime<Utc>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if !self.config.plan_on_change {
                return;
            }
            if let Err(e) = self.plan_job_now(&job_id, next).await {
                tracing::warn!(%job_id, error = %chain(&e), "could not plan the job at once; the tick will");
            }
        })
    }

    fn stopped(&self, execution_id: &str) {
        if self.in_flight.stop(execution_id).is_some() {
            tracing::debug!(execution_id, "stopped: its call in flight is closed");
        }
    }

    fn paused(&self, job_id: &JobId) {
        self.pauses
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tracing::debug!(%job_id, "paused: runs about to call look at their job once more");
    }

    fn replans_by_queue(&self) -> bool {
        self.config.replan_by_queue
    }

    fn queue_replans(
        &self,
        order: crate::app::ReplanOrder,
    ) -> Pin<Box<dyn Future<Output = Result<(), AppError>> + Send + '_>> {
        Box::pin(async move { self.send_replans(&order).await })
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
                    other => AppError::unavailable_because("applying the feedback", other),
                })
        })
    }
}

#[cfg(test)]
mod tests;
