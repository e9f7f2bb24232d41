//! Issue 26 item 6: a stop closes the run's call in flight (docs/engine.md, "Stopping a call").
//! A target whose `/slow` calls never answer records when each starts and when its future is
//! dropped (the connection closed) before answering; dispatch messages each run in their own task,
//! as the local runner runs them, so a call can be in flight while other steps go on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::JobId;
use sundial_core::trigger::TriggerOptions;
use tokio::task::JoinHandle;

use super::{eid, t, TEST_SECRET};
use crate::engine::{DispatchMessage, Engine, EngineConfig};
use crate::records::{decode_execution, encode_execution};
use crate::{App, AppConfig};
use sundial_ports::clock::Clock;
use sundial_ports::http::{HttpClient, HttpError, HttpRequest, HttpResponse};
use sundial_ports::memory::{ManualClock, MemoryQueue, MemoryStore, RecordingPublisher};
use sundial_ports::queue::Queue;
use sundial_ports::store::{ExecutionStore, PageRequest};

/// What the target saw, in order: `start /slow?n=1 at 00:00:00`, `closed /slow?n=1 at …` (the
/// request ended before an answer), `call /cancel?n=1 at …` (answered at once).
struct Target {
    clock: Arc<ManualClock>,
    log: Mutex<Vec<String>>,
    open: AtomicUsize,
    most_open: AtomicUsize,
}

/// Dropped with a `/slow` call's future.
struct Open<'a> {
    target: &'a Target,
    path: String,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.target.open.fetch_sub(1, Ordering::SeqCst);
        self.target.note(format!("closed {}", self.path));
    }
}

impl Target {
    fn note(&self, what: String) {
        let at = self.clock.now().format("%H:%M:%S");
        self.log.lock().unwrap().push(format!("{what} at {at}"));
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl HttpClient for Target {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let path = request
            .url
            .strip_prefix("http://127.0.0.1:9")
            .unwrap_or(&request.url)
            .to_string();
        if !path.starts_with("/slow") {
            self.note(format!("call {path}"));
            return Ok(HttpResponse {
                status: 200,
                body: b"{}".to_vec(),
            });
        }
        self.note(format!("start {path}"));
        let open = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_open.fetch_max(open, Ordering::SeqCst);
        let _open = Open { target: self, path };
        std::future::pending().await
    }
}

type StopEngine = Engine<MemoryStore, MemoryQueue, Arc<Target>, RecordingPublisher>;

struct World {
    clock: Arc<ManualClock>,
    target: Arc<Target>,
    engine: Arc<StopEngine>,
    tasks: Mutex<Vec<(String, JoinHandle<()>)>>,
}

impl World {
    fn new(start: &str, tweak: impl FnOnce(&mut EngineConfig)) -> World {
        let clock = Arc::new(ManualClock::new(t(start)));
        let app = Arc::new(App::new(
            MemoryStore::new(),
            clock.clone(),
            AppConfig::new(TEST_SECRET.to_vec()),
        ));
        let target = Arc::new(Target {
            clock: clock.clone(),
            log: Mutex::new(Vec::new()),
            open: AtomicUsize::new(0),
            most_open: AtomicUsize::new(0),
        });
        let mut config = EngineConfig {
            services: [("main".to_string(), "http://127.0.0.1:9".to_string())].into(),
            ..EngineConfig::default()
        };
        tweak(&mut config);
        let engine = Engine::new(
            app,
            MemoryQueue::new(clock.clone()),
            MemoryQueue::new(clock.clone()),
            target.clone(),
            RecordingPublisher::new(),
            config,
        );
        World {
            clock,
            target,
            engine,
            tasks: Mutex::new(Vec::new()),
        }
    }

    fn app(&self) -> &App<MemoryStore> {
        self.engine.app()
    }

    /// A job triggered only, whose request never answers.
    async fn create(&self, id: &str, body: Value) {
        let mut full = json!({
            "jobName": id, "creator": "c", "creatorName": "C",
            "timer": {"period": "external"},
            "request": [{"method": "POST", "url": "service://main/slow?n=${executeNumber}"}],
        });
        for (k, v) in body.as_object().unwrap() {
            full[k] = v.clone();
        }
        self.app()
            .create_job(&JobId::parse(id).unwrap(), &full)
            .await
            .unwrap();
    }

    async fn trigger(&self, job: &str) -> String {
        let execution = self
            .app()
            .trigger(
                &JobId::parse(job).unwrap(),
                json!({}),
                None,
                TriggerOptions::default(),
            )
            .await
            .unwrap();
        self.pump().await;
        execution.execution_id
    }

    /// Runs every visible dispatch message in a task of its own, until none is left.
    async fn pump(&self) {
        let mut idle = 0;
        for _ in 0..100 {
            let queue = self.engine.dispatch_queue();
            let batch = queue
                .receive(100, StdDuration::from_secs(30))
                .await
                .unwrap();
            if batch.is_empty() {
                idle += 1;
                if idle == 2 {
                    return;
                }
            }
            for delivery in batch {
                queue.ack(&delivery.receipt).await.unwrap();
                let message: DispatchMessage = serde_json::from_str(&delivery.body).unwrap();
                let engine = Arc::clone(&self.engine);
                let id = message.execution_id.clone();
                let task = tokio::spawn(async move {
                    let _ = engine.dispatch(&id).await;
                });
                self.tasks
                    .lock()
                    .unwrap()
                    .push((message.execution_id, task));
            }
            settle().await;
        }
    }

    /// Moves the clock a second at a time, ticking and running messages.
    async fn advance(&self, seconds: i64) {
        for _ in 0..seconds {
            self.clock.advance(Duration::seconds(1));
            settle().await;
            self.engine.tick().await.unwrap();
            self.pump().await;
        }
    }

    async fn execution(&self, id: &str) -> Execution {
        self.app().get_execution(&eid(id)).await.unwrap()
    }

    async fn executions(&self, job: &str) -> Vec<Execution> {
        let mut list = self
            .app()
            .list_executions(&JobId::parse(job).unwrap(), &PageRequest::first(100))
            .await
            .unwrap()
            .items;
        list.reverse();
        list
    }

    /// What another process (the API function on AWS) does to cancel: the write alone, with no
    /// engine of its own to tell.
    async fn cancel_elsewhere(&self, id: &str) {
        let store = self.app().store();
        let record = store.get_execution(id).await.unwrap().unwrap();
        let mut execution = decode_execution(&record).unwrap();
        execution
            .transition(
                ExecutionState::Cancelled,
                self.clock.now(),
                "cancelled elsewhere",
            )
            .unwrap();
        let mut updated = encode_execution(&execution, record.version).unwrap();
        updated.created_at = record.created_at;
        store.update_execution(&updated).await.unwrap();
    }

    /// The dispatch task of `id` dies, as its process would: its call's future is dropped and
    /// nothing after it runs. Its lease is then made another holder's.
    async fn crash_holder_of(&self, id: &str) -> DateTime<Utc> {
        for (task_id, task) in self.tasks.lock().unwrap().iter() {
            if task_id == id {
                task.abort();
            }
        }
        settle().await;
        let store = self.app().store();
        let record = store.get_execution(id).await.unwrap().unwrap();
        let mut execution = decode_execution(&record).unwrap();
        execution.run.lease_holder = Some("a-crashed-process".into());
        let until = execution.run.lease_until.unwrap();
        let mut updated = encode_execution(&execution, record.version).unwrap();
        updated.created_at = record.created_at;
        store.update_execution(&updated).await.unwrap();
        until
    }
}

/// Lets every spawned task run as far as it can.
async fn settle() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_cancel_closes_the_call_in_flight_at_once() {
    let w = World::new("2024-01-01T00:00:00Z", |_| {});
    w.create("slow", json!({})).await;
    let id = w.trigger("slow").await;
    w.advance(2).await;
    assert_eq!(w.target.log(), ["start /slow?n=1 at 00:00:00"]);
    w.app().cancel_execution(&eid(&id), "enough").await.unwrap();
    settle().await;
    assert_eq!(
        w.target.log(),
        [
            "start /slow?n=1 at 00:00:00",
            "closed /slow?n=1 at 00:00:02"
        ],
        "the connection closes with the cancel's answer"
    );
    w.pump().await;
    let execution = w.execution(&id).await;
    assert_eq!(execution.state(), ExecutionState::Cancelled);
    assert_eq!(
        execution.run.lease_until, None,
        "its holder let the lease go"
    );
    let job = w
        .app()
        .get_job(&JobId::parse("slow").unwrap())
        .await
        .unwrap();
    assert!(job.state.running.is_empty(), "its slot is free");
}

#[tokio::test]
async fn cancel_other_closes_the_old_call_before_the_new_call_starts() {
    for policy in ["CancelOther", "TerminateOther"] {
        let w = World::new("2024-01-01T00:00:00Z", |_| {});
        w.create("one-at-a-time", json!({"overlap": policy})).await;
        let first = w.trigger("one-at-a-time").await;
        w.advance(3).await;
        let second = w.trigger("one-at-a-time").await;
        assert_eq!(
            w.target.log(),
            [
                "start /slow?n=1 at 00:00:00",
                "closed /slow?n=1 at 00:00:03",
                "start /slow?n=2 at 00:00:03"
            ],
            "{policy}"
        );
        assert_eq!(
            w.target.most_open.load(Ordering::SeqCst),
            1,
            "{policy}: never two calls at once"
        );
        let old = w.execution(&first).await.state();
        assert!(
            matches!(old, ExecutionState::Cancelled | ExecutionState::Terminated),
            "{policy}: {old}"
        );
        assert_eq!(
            w.execution(&second).await.state(),
            ExecutionState::Processing
        );
    }
}

#[tokio::test]
async fn a_timeout_closes_the_call_at_the_attempt_deadline() {
    let w = World::new("2024-01-01T00:00:00Z", |_| {});
    w.create("bounded", json!({"timeoutSeconds": 3})).await;
    let id = w.trigger("bounded").await;
    w.advance(2).await;
    assert_eq!(w.target.log(), ["start /slow?n=1 at 00:00:00"]);
    w.advance(1).await;
    assert_eq!(
        w.target.log()[..2],
        [
            "start /slow?n=1 at 00:00:00",
            "closed /slow?n=1 at 00:00:03"
        ]
    );
    let execution = w.execution(&id).await;
    assert_eq!(execution.error.as_deref(), Some("timeout"));
}

/// On AWS the cancel is written by another process: the call's own read finds it, at 5 s and
/// every 5 s after; a call shorter than that reads nothing.
#[tokio::test]
async fn a_stop_made_elsewhere_is_read_during_the_call_every_five_seconds() {
    let w = World::new("2024-01-01T00:00:00Z", |config| {
        config.stop_check_every = Some(crate::engine::AWS_STOP_CHECK_EVERY);
    });
    w.create("slow", json!({})).await;
    let id = w.trigger("slow").await;
    w.advance(6).await;
    w.cancel_elsewhere(&id).await;
    w.advance(3).await;
    assert_eq!(
        w.target.log(),
        ["start /slow?n=1 at 00:00:00"],
        "the read at 00:00:05 found nothing; the next is at 00:00:10"
    );
    w.advance(1).await;
    assert_eq!(
        w.target.log(),
        [
            "start /slow?n=1 at 00:00:00",
            "closed /slow?n=1 at 00:00:10"
        ]
    );
    let execution = w.execution(&id).await;
    assert_eq!(execution.state(), ExecutionState::Cancelled);
    assert_eq!(execution.run.lease_until, None);
    let job = w
        .app()
        .get_job(&JobId::parse("slow").unwrap())
        .await
        .unwrap();
    assert!(job.state.running.is_empty(), "its slot is free");
}

/// A `CancelOther` whose old run's holder died waits out the holder's lease before its own call:
/// nothing can say the old call is closed sooner.
#[tokio::test]
async fn cancel_other_behind_a_crashed_holder_waits_out_its_lease() {
    let w = World::new("2024-01-01T00:00:00Z", |config| {
        config.stop_check_every = Some(crate::engine::AWS_STOP_CHECK_EVERY);
    });
    w.create(
        "one-at-a-time",
        json!({"overlap": "CancelOther", "timeoutSeconds": 10}),
    )
    .await;
    let first = w.trigger("one-at-a-time").await;
    w.advance(2).await;
    let lease_until = w.crash_holder_of(&first).await;
    assert_eq!(lease_until, t("2024-01-01T00:00:40Z"), "deadline + 30 s");
    let second = w.trigger("one-at-a-time").await;
    w.advance(30).await;
    assert_eq!(
        w.target.log(),
        [
            "start /slow?n=1 at 00:00:00",
            "closed /slow?n=1 at 00:00:02"
        ],
        "no second call while the crashed holder's lease lasts"
    );
    assert_eq!(w.execution(&first).await.state(), ExecutionState::Cancelled);
    w.advance(10).await;
    let log = w.target.log();
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log[2].starts_with("start /slow?n=2 at 00:00:4"), "{log:?}");
    assert_eq!(
        states(&w.executions("one-at-a-time").await),
        ["Cancelled", "Processing"]
    );
    let _ = second;
}

#[tokio::test]
async fn a_stopped_async_run_calls_its_cancel_url() {
    let w = World::new("2024-01-01T00:00:00Z", |_| {});
    w.create(
        "async-job",
        json!({
            "request": [{"method": "POST", "url": "service://main/submit?n=${executeNumber}"}],
            "async": true,
            "timeoutSeconds": 600,
            "cancelUrl": {"method": "DELETE", "url": "service://main/cancel?n=${executeNumber}"},
        }),
    )
    .await;
    let id = w.trigger("async-job").await;
    w.advance(2).await;
    assert!(w.execution(&id).await.run.awaiting_async);
    w.app()
        .terminate_execution(&eid(&id), "enough")
        .await
        .unwrap();
    w.pump().await;
    assert_eq!(
        w.target.log(),
        [
            "call /submit?n=1 at 00:00:00",
            "call /cancel?n=1 at 00:00:02"
        ]
    );
    let execution = w.execution(&id).await;
    assert_eq!(execution.state(), ExecutionState::Terminated);
    assert!(!execution.run.awaiting_async);
    assert!(
        execution
            .events()
            .iter()
            .any(|e| e.message == "cancelUrl answered 200"),
        "{:?}",
        execution.events()
    );
    // Delivered again, the stop's message calls nothing more.
    w.engine.dispatch(&id).await.unwrap();
    assert_eq!(w.target.log().len(), 2);
}

fn states(executions: &[Execution]) -> Vec<&'static str> {
    executions.iter().map(|e| e.state().name()).collect()
}
