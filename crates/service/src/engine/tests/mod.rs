//! The engine under simulated time: a manual clock, the in-memory store and queues, and a scripted
//! HTTP target. Every scenario advances the clock second by second, ticking and draining the
//! queues as the local runner would, so schedules, retries and timeouts are checked to the second
//! without sleeping.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::JobId;

use super::*;
use crate::AppConfig;
use sundial_ports::clock::Clock;
use sundial_ports::http::{HttpError, HttpRequest, HttpResponse};
use sundial_ports::memory::{ManualClock, MemoryQueue, MemoryStore, RecordingPublisher};
use sundial_ports::store::{ExecutionStore, JobStore, PageRequest};

/// The signing secret of every test engine.
pub(super) const TEST_SECRET: &[u8] = b"engine-test-signing-secret-0123456789";

type Responder = Box<dyn Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync>;

/// A target that answers by a script and records every call with the clock's time.
struct ScriptedHttp {
    clock: Arc<ManualClock>,
    calls: Mutex<Vec<(DateTime<Utc>, HttpRequest)>>,
    respond: Responder,
}

impl HttpClient for ScriptedHttp {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            calls.push((self.clock.now(), request.clone()));
            calls.len()
        };
        (self.respond)(&request, n)
    }
}

fn ok(body: Value) -> Result<HttpResponse, HttpError> {
    Ok(HttpResponse {
        status: 200,
        body: body.to_string().into_bytes(),
    })
}

fn status(code: u16) -> Result<HttpResponse, HttpError> {
    Ok(HttpResponse {
        status: code,
        body: b"{}".to_vec(),
    })
}

type TestEngine = Engine<MemoryStore, MemoryQueue, Arc<ScriptedHttp>, RecordingPublisher>;

struct World {
    clock: Arc<ManualClock>,
    http: Arc<ScriptedHttp>,
    engine: Arc<TestEngine>,
    /// Deliver every dispatch message twice.
    duplicate: bool,
    /// Handle each batch of dispatch messages newest first, as concurrent workers may.
    reverse: bool,
    /// Read each batch of dispatch messages first, as the runners do ([`Engine::prefetch`]).
    prefetch: bool,
}

/// The document of job `id` a test holds as JSON.
fn doc(id: &JobId, body: &Value) -> sundial_core::job::JobDocument {
    sundial_core::job::JobDocument::read(id, body).unwrap()
}

/// An execution id a test holds as text.
fn eid(text: &str) -> sundial_core::execution::ExecutionId {
    sundial_core::execution::ExecutionId::parse(text).unwrap()
}

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// The engine's settings on AWS that matter under simulated time: a tick planning 80 s ahead,
/// SQS's whole-second delays, no admission ahead, other engines alive.
fn aws_like(config: &mut EngineConfig) {
    config.tick_horizon = StdDuration::from_secs(80);
    config.max_inline_wait = StdDuration::from_secs(1);
    config.admit_ahead = StdDuration::ZERO;
    config.sole_engine = false;
}

impl World {
    fn new(
        start: &str,
        respond: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync + 'static,
    ) -> World {
        World::with_config(start, AppConfig::new(TEST_SECRET.to_vec()), respond)
    }

    fn with_config(
        start: &str,
        app_config: AppConfig,
        respond: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync + 'static,
    ) -> World {
        World::with_configs(start, app_config, |_| {}, respond)
    }

    /// [`World::with_config`], with a change to the engine's settings.
    fn with_configs(
        start: &str,
        app_config: AppConfig,
        tweak: impl FnOnce(&mut EngineConfig),
        respond: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync + 'static,
    ) -> World {
        World::with_publisher(start, app_config, tweak, RecordingPublisher::new(), respond)
    }

    /// [`World::with_configs`], on `publisher`.
    fn with_publisher(
        start: &str,
        app_config: AppConfig,
        tweak: impl FnOnce(&mut EngineConfig),
        publisher: RecordingPublisher,
        respond: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync + 'static,
    ) -> World {
        let clock = Arc::new(ManualClock::new(t(start)));
        let app = Arc::new(App::new(MemoryStore::new(), clock.clone(), app_config));
        let http = Arc::new(ScriptedHttp {
            clock: clock.clone(),
            calls: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        });
        let mut config = EngineConfig {
            services: BTreeMap::from([("main".to_string(), "http://127.0.0.1:9".to_string())]),
            state_change_bus: Some("sundial".into()),
            ..EngineConfig::default()
        };
        tweak(&mut config);
        let engine = Engine::new(
            app.clone(),
            MemoryQueue::new(clock.clone()),
            MemoryQueue::new(clock.clone()),
            http.clone(),
            publisher,
            config,
        );
        World {
            clock,
            http,
            engine,
            duplicate: false,
            reverse: false,
            prefetch: false,
        }
    }

    fn app(&self) -> &App<MemoryStore> {
        self.engine.app()
    }

    async fn create(&self, id: &str, body: Value) {
        let mut full = json!({
            "jobName": id, "creator": "c", "creatorName": "C",
            "request": [{"method": "POST", "url": "service://main/run?n=${executeNumber}"}],
        });
        for (k, v) in body.as_object().unwrap() {
            full[k] = v.clone();
        }
        self.app()
            .create_job(&JobId::parse(id).unwrap(), &full)
            .await
            .unwrap();
    }

    /// Handles every visible message of both queues, as the runner would.
    async fn drain(&self) {
        for _ in 0..100 {
            let mut handled = 0;
            let dispatch = self.engine.dispatch_queue();
            let mut batch = dispatch
                .receive(100, StdDuration::from_secs(30))
                .await
                .unwrap();
            if self.reverse {
                batch.reverse();
            }
            let mut prefetched = if self.prefetch {
                let ids: Vec<String> = batch
                    .iter()
                    .map(|d| serde_json::from_str::<DispatchMessage>(&d.body).unwrap())
                    .map(|m| m.execution_id)
                    .collect();
                self.engine.prefetch(&ids).await
            } else {
                HashMap::new()
            };
            for delivery in batch {
                handled += 1;
                let message: DispatchMessage = serde_json::from_str(&delivery.body).unwrap();
                let times = if self.duplicate { 2 } else { 1 };
                let mut result = Ok(());
                for _ in 0..times {
                    let read = prefetched.remove(&message.execution_id);
                    result = self.engine.dispatch_from(&message.execution_id, read).await;
                }
                if result.is_ok() {
                    dispatch.ack(&delivery.receipt).await.unwrap();
                }
            }
            let notify = self.engine.notify_queue();
            for delivery in notify
                .receive(100, StdDuration::from_secs(30))
                .await
                .unwrap()
            {
                handled += 1;
                if self.engine.notify(&delivery.body).await.is_ok() {
                    notify.ack(&delivery.receipt).await.unwrap();
                }
            }
            if handled == 0 {
                return;
            }
        }
        panic!("the queues never drained");
    }

    /// Ticks and drains every simulated second up to `until`.
    /// A user cancels the first of the job's executions (as [`World::executions`] lists them);
    /// the queues drain.
    async fn cancel_first(&self, job: &str) {
        let first = &self.executions(job).await[0];
        self.app()
            .cancel_execution(&first.id(), "test")
            .await
            .unwrap();
        self.drain().await;
    }

    /// The end of an outage: the clock jumps to `at`, one tick runs and the queues drain.
    async fn resume_at(&self, at: &str) {
        self.clock.set(t(at));
        self.engine.tick().await.unwrap();
        self.drain().await;
    }

    async fn run_until(&self, until: &str) {
        let until = t(until);
        while self.clock.now() < until {
            self.clock.advance(Duration::seconds(1));
            // A tick that fails (an injected fault) is retried by the next, as in production.
            let _ = self.engine.tick().await;
            self.drain().await;
        }
    }

    async fn executions(&self, job: &str) -> Vec<Execution> {
        let mut list = self
            .app()
            .list_executions(&JobId::parse(job).unwrap(), &PageRequest::first(1000))
            .await
            .unwrap()
            .items;
        list.reverse();
        list
    }

    fn call_times(&self) -> Vec<String> {
        self.http
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(|(at, _)| at.format("%H:%M:%S").to_string())
            .collect()
    }

    /// The full UTC times of the calls whose URL contains `part`.
    fn call_instants(&self, part: &str) -> Vec<String> {
        self.http
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, r)| r.url.contains(part))
            .map(|(at, _)| at.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .collect()
    }

    fn calls(&self) -> Vec<HttpRequest> {
        self.http
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }

    async fn job_state(&self, job: &str) -> sundial_core::job::JobState {
        self.app()
            .get_job(&JobId::parse(job).unwrap())
            .await
            .unwrap()
            .state
    }
}

fn states(executions: &[Execution]) -> Vec<&'static str> {
    executions.iter().map(|e| e.state().name()).collect()
}

#[tokio::test]
async fn scheduled_fires_land_on_their_second_with_templates_expanded() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({"done": true})));
    w.create("every-minute", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:03:10Z").await;
    assert_eq!(w.call_times(), ["00:01:00", "00:02:00", "00:03:00"]);
    let calls = w.calls();
    assert_eq!(calls[0].url, "http://127.0.0.1:9/run?n=1");
    assert_eq!(calls[2].url, "http://127.0.0.1:9/run?n=3");
    let key = calls[0]
        .headers
        .iter()
        .find(|(n, _)| n == "Idempotency-Key")
        .unwrap();
    assert_eq!(key.1, "every-minute~20240101T000100Z:1:0");
    let executions = w.executions("every-minute").await;
    assert_eq!(states(&executions), ["Succeeded"; 3]);
    assert_eq!(executions[0].result, Some(json!({"done": true})));
    let state = w.job_state("every-minute").await;
    assert_eq!(state.action_count, 3);
    assert!(state.running.is_empty());
    // Its definition does not name `${lastCompletionResult}`: the job does not carry the result
    // into its later writes (issue 31). A job that names it keeps it
    // (`last_results_are_those_of_the_runs_start`).
    assert_eq!(state.last_completion_result, None);
    // Every state change was published.
    let events = w.engine.publisher().sent().len();
    assert_eq!(events, 12, "every state change of the test's runs, once");
}

#[tokio::test]
async fn duplicate_deliveries_and_concurrent_ticks_run_each_fire_once() {
    let mut w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.duplicate = true;
    w.create("dup", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    for _ in 0..160 {
        w.clock.advance(Duration::seconds(1));
        let (a, b) = tokio::join!(w.engine.tick(), w.engine.tick());
        a.unwrap();
        b.unwrap();
        w.drain().await;
    }
    assert_eq!(w.call_times(), ["00:01:00", "00:02:00", "00:03:00"]);
    assert_eq!(states(&w.executions("dup").await), ["Succeeded"; 3]);
    assert_eq!(w.job_state("dup").await.action_count, 3);
}

/// Issue 26 item 7: seed 002 has no `timeout` code; a sync job's timeout is its "500". Rules
/// and notifications written for seed 002 keep matching: the `"500"` rule retries a timed-out
/// sync call, and `stateEquals: "500"` and `"timeout"` notify it; the execution's `error` stays
/// `timeout`.
#[tokio::test]
async fn a_sync_timeout_matches_seed_002_rules_for_500() {
    let w = World::new("2024-01-01T00:00:00Z", |request, _| {
        if request.url.contains("/notify") {
            return ok(json!({}));
        }
        Err(HttpError::Timeout)
    });
    w.create(
        "slow",
        json!({
            "timer": {"dueTime": "10s", "period": "0s"},
            "retry": [{"errorEquals": "500", "intervalSeconds": 2, "maxAttempts": 2, "backoffRate": 1.0}],
            "notification": [
                {"stateEquals": "500", "method": "POST", "url": "service://main/notify/500"},
                {"stateEquals": "timeout", "method": "POST", "url": "service://main/notify/timeout"}
            ],
        }),
    )
    .await;
    w.run_until("2024-01-01T00:01:00Z").await;
    assert_eq!(
        w.call_instants("/run"),
        [
            "2024-01-01T00:00:10Z",
            "2024-01-01T00:00:12Z",
            "2024-01-01T00:00:14Z"
        ],
        "retried twice by the 500 rule"
    );
    let executions = w.executions("slow").await;
    assert_eq!(states(&executions), ["Terminated"]);
    assert_eq!(executions[0].error.as_deref(), Some("timeout"));
    assert_eq!(w.call_instants("/notify/500").len(), 3);
    assert_eq!(w.call_instants("/notify/timeout").len(), 3);
}

/// Issue 26 item 12: `${lastCompletionResult}` is captured when a run starts and kept across its
/// retries (as Temporal does): a run that failed its first attempt and retries after another run
/// succeeded meanwhile still sees the result it started with (none), not the newer one.
#[tokio::test]
async fn last_results_are_those_of_the_runs_start() {
    let w = World::new("2024-01-01T00:00:00Z", |request, _| {
        let body: Value =
            serde_json::from_slice(request.body.as_deref().unwrap_or(b"{}")).unwrap_or(Value::Null);
        if body["who"] == "A" && body["attempt"] == 1 {
            return status(500);
        }
        ok(json!({"from": body["who"]}))
    });
    w.create(
        "last",
        json!({
            "timer": {"period": "external"},
            "overlap": "AllowAll",
            "retry": [{"errorEquals": "500", "intervalSeconds": 2, "maxAttempts": 1}],
            "request": [{"method": "POST", "url": "service://main/run",
                         "body": {"who": "${who}", "attempt": "${schedulingRequestCounts}|json",
                                  "last": "${lastCompletionResult}|json"}}],
        }),
    )
    .await;
    let job = JobId::parse("last").unwrap();
    let trigger = |who: &str| {
        w.app()
            .trigger(&job, json!({"who": who}), None, Default::default())
    };
    trigger("A").await.unwrap();
    w.drain().await;
    // B starts after A and succeeds while A waits for its retry.
    trigger("B").await.unwrap();
    w.drain().await;
    assert_eq!(
        w.job_state("last").await.last_completion_result,
        Some(json!({"from": "B"}))
    );
    w.run_until("2024-01-01T00:00:05Z").await;
    let lasts: Vec<(Value, Value, Value)> = w
        .calls()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(r.body.as_deref().unwrap()).unwrap();
            (
                body["who"].clone(),
                body["attempt"].clone(),
                body["last"].clone(),
            )
        })
        .collect();
    assert_eq!(
        lasts,
        [
            (json!("A"), json!(1), Value::Null),
            (json!("B"), json!(1), Value::Null),
            (json!("A"), json!(2), Value::Null),
        ],
        "A's retry sees what A started with"
    );
    let executions = w.executions("last").await;
    assert_eq!(states(&executions), ["Succeeded", "Succeeded"]);
}

#[tokio::test]
async fn retries_follow_the_backoff_arithmetic_then_terminate() {
    let w = World::new("2024-01-01T00:00:00Z", |request, _| {
        if request.url.ends_with("/notify") {
            return ok(json!({}));
        }
        status(500)
    });
    w.create(
        "flaky",
        json!({
            "timer": {"dueTime": "10s", "period": "0s"},
            "retry": [{"errorEquals": "500", "intervalSeconds": 2, "maxAttempts": 3, "backoffRate": 2.0}],
            "notification": [{"stateEquals": "500", "method": "POST", "url": "service://main/notify", "body": "${schedulingNotifyBody}|json"}],
        }),
    )
    .await;
    w.run_until("2024-01-01T00:01:00Z").await;
    let targets: Vec<String> = w
        .http
        .calls
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, r)| r.url.contains("/run"))
        .map(|(at, _)| at.format("%H:%M:%S").to_string())
        .collect();
    // First attempt at 00:00:10, then retries 2 s, 4 s and 8 s after each failure.
    assert_eq!(targets, ["00:00:10", "00:00:12", "00:00:16", "00:00:24"]);
    let executions = w.executions("flaky").await;
    assert_eq!(states(&executions), ["Terminated"]);
    assert_eq!(executions[0].attempts(), 4);
    assert_eq!(executions[0].error.as_deref(), Some("500"));
    // Each failed attempt notified the rule matching 500, signed, with docs/api.md's body.
    let notes: Vec<HttpRequest> = w
        .calls()
        .into_iter()
        .filter(|r| r.url.ends_with("/notify"))
        .collect();
    assert_eq!(notes.len(), 4);
    let body: Value = serde_json::from_slice(notes[0].body.as_ref().unwrap()).unwrap();
    assert_eq!(body["httpStatus"], "500");
    assert!(notes[0]
        .headers
        .iter()
        .any(|(n, _)| n == sundial_core::signing::SIGNATURE_HEADER));
    let failure = w.job_state("flaky").await.last_failure.unwrap();
    assert_eq!(failure["error"], "500");
}

#[tokio::test]
async fn async_jobs_complete_by_check_url_polling() {
    let w = World::new("2024-01-01T00:00:00Z", |request, _| {
        if request.url.contains("/check") {
            static POLLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = POLLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if n < 2 {
                return ok(json!({"status": "", "progress": format!("{}0%", n + 1)}));
            }
            return ok(json!({"status": "succeed", "data": {"rows": 42}}));
        }
        ok(json!({"accepted": true}))
    });
    w.create(
        "async-poll",
        json!({
            "timer": {"dueTime": "5s", "period": "0s"},
            "async": true, "checkRateSeconds": 3,
            "checkUrl": {"method": "GET", "url": "service://main/check/${jobId}?executeNumber=${executeNumber}"},
        }),
    )
    .await;
    w.run_until("2024-01-01T00:00:30Z").await;
    assert_eq!(
        w.call_times(),
        ["00:00:05", "00:00:08", "00:00:11", "00:00:14"],
        "the chain, then a poll every checkRateSeconds"
    );
    assert_eq!(
        w.calls()[1].url,
        "http://127.0.0.1:9/check/async-poll?executeNumber=1"
    );
    let executions = w.executions("async-poll").await;
    assert_eq!(states(&executions), ["Succeeded"]);
    assert_eq!(executions[0].result, Some(json!({"rows": 42})));
    assert_eq!(executions[0].progress, Some(json!("20%")));
}

#[tokio::test]
async fn async_jobs_complete_by_signed_feedback() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create(
        "async-feedback",
        json!({
            "request": [{"method": "POST", "url": "service://main/start?cb=${schedulingFeedbackUrl}"}],
            "async": true, "timeoutSeconds": 120, "timer": {"period": "external"},
        }),
    )
    .await;
    let job = JobId::parse("async-feedback").unwrap();
    let exec = w
        .app()
        .trigger(&job, json!({"who": "test"}), Some("t1"), Default::default())
        .await
        .unwrap();
    w.drain().await;
    let url = w.calls()[0].url.clone();
    assert!(
        url.contains("/jobs/async-feedback/feedback/1?executionId=async-feedback~t~t1&token="),
        "{url}"
    );
    let token = url.split("token=").nth(1).unwrap().to_string();
    // A wrong token is refused; the right one completes the run.
    let report = json!({"status": "succeed", "data": {"ok": 1}});
    let id = Some(exec.execution_id.as_str());
    let wrong = w.app().feedback(&job, 1, id, Some("00"), &report).await;
    assert!(matches!(wrong, Err(AppError::Unauthorized(_))), "{wrong:?}");
    // The token alone is not enough: it is verified against the execution id the URL names.
    let unnamed = w.app().feedback(&job, 1, None, Some(&token), &report).await;
    assert!(
        matches!(unnamed, Err(AppError::Unauthorized(_))),
        "{unnamed:?}"
    );
    w.app()
        .feedback(&job, 1, id, Some(&token), &report)
        .await
        .unwrap();
    let done = w.app().get_execution(&exec.id()).await.unwrap();
    assert_eq!(done.state(), ExecutionState::Succeeded);
    assert_eq!(done.result, Some(json!({"ok": 1})));
}

#[tokio::test]
async fn async_runs_time_out_and_pause_on_failure() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "silent",
        json!({
            "schedule": {"cron": ["* * * * *"]},
            "async": true, "timeoutSeconds": 20, "pauseOnFailure": true,
        }),
    )
    .await;
    w.run_until("2024-01-01T00:03:00Z").await;
    let executions = w.executions("silent").await;
    assert_eq!(
        states(&executions),
        ["Terminated"],
        "paused after the first failure"
    );
    assert_eq!(executions[0].error.as_deref(), Some("timeout"));
    // Started on its second, 00:01:00; timeoutSeconds later it timed out.
    assert_eq!(executions[0].finished_at(), Some(t("2024-01-01T00:01:20Z")));
    let job = w
        .app()
        .get_job(&JobId::parse("silent").unwrap())
        .await
        .unwrap();
    assert_eq!(job.status().name(), "paused");
    assert!(job
        .state
        .paused_notes
        .unwrap()
        .contains("silent~20240101T000100Z"));
    // The policy's pause is in the job's history, as the system's, with its note.
    let history = w
        .app()
        .history(
            &JobId::parse("silent").unwrap(),
            &sundial_ports::store::PageRequest::first(10),
        )
        .await
        .unwrap()
        .items;
    let newest = &history[0];
    assert_eq!(
        (&newest["actor"], &newest["action"], &newest["state"]),
        (&json!("system"), &json!("pause"), &json!("paused")),
        "{history:?}"
    );
    assert!(newest["reason"]
        .as_str()
        .unwrap()
        .starts_with("paused on failure: execution silent~20240101T000100Z"));
    assert_eq!(history.len(), 2, "the creation and the pause: {history:?}");
}

/// An async job that never finishes by itself, so runs overlap.
fn long_job(policy: &str) -> Value {
    json!({"schedule": {"cron": ["* * * * *"]}, "async": true, "timeoutSeconds": 600, "overlap": policy})
}

#[tokio::test]
async fn overlap_skip_and_buffer_one() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("skip", long_job("Skip")).await;
    w.create("buffer-one", long_job("BufferOne")).await;
    w.run_until("2024-01-01T00:03:30Z").await;
    assert_eq!(
        states(&w.executions("skip").await),
        ["Processing", "Skipped", "Skipped"]
    );
    assert_eq!(w.job_state("skip").await.overlap_skipped, 2);
    assert_eq!(
        states(&w.executions("buffer-one").await),
        ["Processing", "Enqueued", "Skipped"]
    );
    let state = w.job_state("buffer-one").await;
    assert_eq!((state.buffer_size, state.buffer_dropped), (1, 1));
    // Ending the running one starts the buffered one.
    w.cancel_first("buffer-one").await;
    assert_eq!(
        states(&w.executions("buffer-one").await),
        ["Cancelled", "Processing", "Skipped"]
    );
}

#[tokio::test]
async fn overlap_cancel_terminate_and_allow_all() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("cancel", long_job("CancelOther")).await;
    w.create("terminate", long_job("TerminateOther")).await;
    w.create("allow", long_job("AllowAll")).await;
    w.create("buffer-all", long_job("BufferAll")).await;
    w.run_until("2024-01-01T00:03:30Z").await;
    assert_eq!(
        states(&w.executions("cancel").await),
        ["Cancelled", "Cancelled", "Processing"]
    );
    assert_eq!(
        states(&w.executions("terminate").await),
        ["Terminated", "Terminated", "Processing"]
    );
    assert_eq!(states(&w.executions("allow").await), ["Processing"; 3]);
    assert_eq!(
        states(&w.executions("buffer-all").await),
        ["Processing", "Enqueued", "Enqueued"]
    );
    assert_eq!(w.job_state("buffer-all").await.buffer_size, 2);
}

#[tokio::test]
async fn catch_up_after_an_outage_counts_missed_fires() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("caught", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    // The process was down for ten minutes: the clock jumps, then ticks resume.
    w.resume_at("2024-01-01T00:10:20Z").await;
    w.run_until("2024-01-01T00:11:05Z").await;
    let state = w.job_state("caught").await;
    assert_eq!(state.missed_catchup_window, 9, "00:01 … 00:09");
    assert_eq!(
        w.call_times(),
        ["00:10:20", "00:11:00"],
        "00:10 is within the window"
    );
}

#[tokio::test]
async fn backfill_runs_every_time_in_the_range_now() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("filled", json!({"schedule": {"cron": ["0 * * * *"]}}))
        .await;
    let body = json!({"startTime": "2023-12-31T20:00:00Z", "endTime": "2023-12-31T23:00:00Z"});
    let count = w
        .app()
        .backfill(&JobId::parse("filled").unwrap(), &body)
        .await
        .unwrap();
    assert_eq!(count.count, 4);
    w.run_until("2024-01-01T00:00:32Z").await;
    assert_eq!(
        w.calls().len(),
        4,
        "all four now, exempt from the catch-up window"
    );
    assert_eq!(states(&w.executions("filled").await), ["Succeeded"; 4]);
}

#[tokio::test]
async fn debug_mode_stops_schedules_but_not_triggers() {
    let config = AppConfig {
        debug_mode: sundial_core::debug_mode::DebugMode::Schedules,
        ..AppConfig::new(TEST_SECRET.to_vec())
    };
    let w = World::with_config("2024-01-01T00:00:30Z", config, |_, _| ok(json!({})));
    w.create("quiet", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:02:30Z").await;
    assert!(w.calls().is_empty());
    let job = JobId::parse("quiet").unwrap();
    w.app()
        .trigger(&job, json!({}), None, Default::default())
        .await
        .unwrap();
    w.drain().await;
    assert_eq!(w.calls().len(), 1);
}

/// Issue 26 item 9: the `triggers` mode stops a program's trigger (it ends `Skipped`, never
/// called) and lets a person's trigger from the console run, as seed 004's debug mode does for a
/// job tried by hand; scheduled fires go on.
#[tokio::test]
async fn the_triggers_debug_mode_stops_programs_triggers_not_the_consoles() {
    let config = AppConfig {
        debug_mode: sundial_core::debug_mode::DebugMode::Triggers,
        ..AppConfig::new(TEST_SECRET.to_vec())
    };
    let w = World::with_config("2024-01-01T00:00:30Z", config, |_, _| ok(json!({})));
    w.create("tried", json!({"timer": {"period": "external"}}))
        .await;
    let job = JobId::parse("tried").unwrap();
    let by = crate::app::ChangeBy::new(crate::app::Actor::new("alice"));
    let program = w
        .app()
        .trigger_by(
            &by,
            &job,
            json!({}),
            Some("from-a-program"),
            Default::default(),
        )
        .await
        .unwrap();
    w.drain().await;
    let program = w.app().get_execution(&program.id()).await.unwrap();
    assert_eq!(program.state(), ExecutionState::Skipped);
    assert!(w.calls().is_empty());
    let console = w
        .app()
        .trigger_from(
            sundial_core::source::RunSource::ConsoleTrigger,
            &by,
            &job,
            json!({}),
            Some("by-hand"),
            Default::default(),
        )
        .await
        .unwrap();
    w.drain().await;
    let console = w.app().get_execution(&console.id()).await.unwrap();
    assert_eq!(console.scheduled_by_id, "console:by-hand");
    assert_eq!(console.state(), ExecutionState::Succeeded);
    assert_eq!(w.calls().len(), 1);
}

/// Issue 26 item 9: the debug mode switched at run time. Switched here, the next tick obeys it; a
/// switch written elsewhere (another instance: straight into the store) reaches this process
/// within the cache's 5 s, never read per fire; switched off, schedules fire again. The
/// switches are recorded with the setting: who, from, to.
#[tokio::test]
async fn debug_mode_switches_at_run_time() {
    use sundial_core::debug_mode::DebugMode;
    use sundial_ports::store::{SettingRecord, SettingStore};
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "every-10s",
        json!({"schedule": {"intervals": [{"every": "10s"}]}}),
    )
    .await;
    w.run_until("2024-01-01T00:00:45Z").await;
    let before = w.call_times();
    assert!(before.contains(&"00:00:40".to_string()), "{before:?}");
    let alice = crate::app::ChangeBy::new(crate::app::Actor::new("alice"));
    w.app()
        .set_debug_mode_by(&alice, DebugMode::Schedules)
        .await
        .unwrap();
    w.run_until("2024-01-01T00:01:05Z").await;
    assert_eq!(w.call_times(), before, "no fire while in debug mode");
    // Another instance switches it off: this one sees it within 5 s.
    let stored = w
        .app()
        .store()
        .get_setting("debugMode")
        .await
        .unwrap()
        .unwrap();
    w.app()
        .store()
        .put_setting(&SettingRecord {
            version: stored.version + 1,
            value: json!({"mode": "off", "history": []}),
            ..stored
        })
        .await
        .unwrap();
    w.run_until("2024-01-01T00:01:25Z").await;
    let calls = w.call_times();
    assert!(
        calls.ends_with(&["00:01:20".to_string()]) && !calls.contains(&"00:01:00".to_string()),
        "{calls:?}"
    );
    let setting = w.app().debug_mode_setting().await.unwrap();
    assert_eq!((setting.mode.as_str(), setting.source), ("off", "stored"));
    // Switched and recorded: who, from what to what.
    let switched = w
        .app()
        .set_debug_mode_by(&alice.clone().with_reason("load test"), DebugMode::Both)
        .await
        .unwrap();
    let last = &switched.history[0];
    assert_eq!(
        (
            last.by.as_str(),
            last.from.as_str(),
            last.to.as_str(),
            last.reason.as_deref()
        ),
        ("alice", "off", "both", Some("load test"))
    );
}

/// A store that fails its `n`th write, as a process killed at that step would leave things.
#[tokio::test]
async fn a_crash_at_any_step_loses_and_duplicates_nothing() {
    // A run of this job takes about ten writes (plan, create, clear, admit, start, finish,
    // release…); crashing at each of the first 24 covers every step of the first two fires.
    for crash_at in 0..24 {
        let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
        // AllowAll: a run whose worker died holds its slot until its lease ends, and under Skip
        // the next fire would (rightly) be skipped meanwhile.
        let job = json!({"schedule": {"cron": ["* * * * *"]}, "overlap": "AllowAll"});
        w.create("sturdy", job).await;
        w.app().store().fail_write(crash_at);
        // A failed step leaves its message to come back after the visibility timeout, and a
        // run whose worker died is run again when its lease ends.
        w.run_until("2024-01-01T00:04:30Z").await;
        // No more fires; a run whose worker died in the last minute gets its lease (timeout +
        // 30 s) to run out and is run again.
        let id = JobId::parse("sturdy").unwrap();
        // (The injected failure may not have happened yet: this write can be the one that fails.)
        if w.app().set_active(&id, false, None).await.is_err() {
            w.app().set_active(&id, false, None).await.unwrap();
        }
        w.run_until("2024-01-01T00:06:30Z").await;
        let executions = w.executions("sturdy").await;
        assert_eq!(
            states(&executions),
            ["Succeeded"; 4],
            "crash at write {crash_at}"
        );
        let keys: std::collections::BTreeSet<String> = w
            .calls()
            .iter()
            .map(|r| {
                r.headers
                    .iter()
                    .find(|(n, _)| n == "Idempotency-Key")
                    .unwrap()
                    .1
                    .clone()
            })
            .map(|k| k.split(':').next().unwrap().to_string())
            .collect();
        assert_eq!(
            keys.len(),
            4,
            "one fire per minute, crash at write {crash_at}"
        );
        assert_eq!(w.job_state("sturdy").await.action_count, 4);
    }
}

/// Another writer changes the job while a run's call is in flight (here: in the middle of the call,
/// as a concurrent run finishing would): the run's final write loses the race on the job and must
/// apply its end to the job as it now is, not give up on it.
#[tokio::test]
async fn a_run_whose_job_changed_during_its_call_still_finishes() {
    let app: Arc<std::sync::OnceLock<Arc<App<MemoryStore>>>> = Arc::default();
    let during_call = Arc::clone(&app);
    let w = World::new("2024-01-01T00:00:00Z", move |_, _| {
        use futures_util::FutureExt;
        let store = during_call.get().expect("app").store();
        let job = store
            .get_job("busy")
            .now_or_never()
            .unwrap()
            .unwrap()
            .unwrap();
        store.update_job(&job).now_or_never().unwrap().unwrap();
        ok(json!({"done": true}))
    });
    assert!(app.set(Arc::clone(w.engine.app())).is_ok());
    w.create(
        "busy",
        json!({"overlap": "AllowAll", "timer": {"period": "external"}}),
    )
    .await;
    let id = JobId::parse("busy").unwrap();
    for _ in 0..3 {
        w.app()
            .trigger(&id, json!({}), None, Default::default())
            .await
            .unwrap();
    }
    w.drain().await;
    let executions = w.executions("busy").await;
    assert_eq!(states(&executions), ["Succeeded"; 3], "{executions:#?}");
    let state = w.job_state("busy").await;
    assert!(state.running.is_empty(), "every slot freed: {state:?}");
}

/// The run a freed slot starts (here: the buffered one of a BufferAll job) has its message lost:
/// the fallback wake-up written with the release brings it to dispatch anyway.
#[tokio::test]
async fn a_run_a_freed_slot_starts_survives_a_lost_message() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create(
        "queued",
        json!({"overlap": "BufferAll", "async": true, "timeoutSeconds": 600,
               "timer": {"period": "external"}}),
    )
    .await;
    let job = JobId::parse("queued").unwrap();
    let first = w
        .app()
        .trigger(&job, json!({}), None, Default::default())
        .await
        .unwrap();
    let second = w
        .app()
        .trigger(&job, json!({}), None, Default::default())
        .await
        .unwrap();
    w.drain().await;
    assert_eq!(
        states(&w.executions("queued").await),
        ["Processing", "Enqueued"]
    );
    w.engine.dispatch_queue().fail_send(0);
    let done = json!({"status": "succeed"});
    // The run is written as over, then the send fails: what a process dying there leaves.
    let sent = w.engine.apply_feedback(&first.execution_id, &done).await;
    assert!(sent.is_err(), "the lost send is reported: {sent:?}");
    w.drain().await;
    assert_eq!(
        states(&w.executions("queued").await),
        ["Succeeded", "Enqueued"],
        "the message that starts the second run was lost"
    );
    w.run_until("2024-01-01T00:00:30Z").await;
    assert_eq!(
        states(&w.executions("queued").await),
        ["Succeeded", "Processing"]
    );
    w.engine
        .apply_feedback(&second.execution_id, &done)
        .await
        .unwrap();
    w.drain().await;
    assert_eq!(states(&w.executions("queued").await), ["Succeeded"; 2]);
    assert_eq!(w.calls().len(), 2, "each run called its target once");
}

/// A dispatch queue that loses its `n`th message, as a process killed between its store write and
/// its send would: the tick's fires (and the runs a trigger or a freed slot starts) still run, once.
#[tokio::test]
async fn a_lost_message_at_any_step_loses_and_duplicates_nothing() {
    for lost in 0..8 {
        let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
        let job = json!({"schedule": {"cron": ["* * * * *"]}, "overlap": "BufferAll"});
        w.create("sturdy", job).await;
        w.engine.dispatch_queue().fail_send(lost);
        w.run_until("2024-01-01T00:02:30Z").await;
        let id = JobId::parse("sturdy").unwrap();
        w.app()
            .trigger(&id, json!({}), None, Default::default())
            .await
            .unwrap();
        w.run_until("2024-01-01T00:04:30Z").await;
        w.app().set_active(&id, false, None).await.unwrap();
        // Fallback wake-ups come due 10 s after their run was due; give them time.
        w.run_until("2024-01-01T00:05:30Z").await;
        let executions = w.executions("sturdy").await;
        assert_eq!(
            states(&executions),
            ["Succeeded"; 5],
            "message {lost} lost: {executions:#?}"
        );
        assert_eq!(w.calls().len(), 5, "message {lost} lost: one call per run");
        assert_eq!(w.job_state("sturdy").await.action_count, 5);
    }
}

#[tokio::test]
async fn parent_close_policies_apply_when_a_parent_run_ends() {
    // Parent runs answer at once; children are async and never finish by themselves.
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    let child = |policy: &str| {
        json!({"parentJob": "parent", "parentClosePolicy": policy,
               "async": true, "timeoutSeconds": 600, "timer": {"period": "external"}})
    };
    // Declared before their parent: the parent finds them when it is created.
    w.create("cancel-child", child("cancel")).await;
    w.create("terminate-child", child("terminate")).await;
    w.create("abandon-child", child("abandon")).await;
    w.create("parent", json!({"timer": {"period": "external"}}))
        .await;
    assert!(w.job_state("parent").await.has_children);
    for id in ["cancel-child", "terminate-child", "abandon-child"] {
        let job = JobId::parse(id).unwrap();
        w.app()
            .trigger(&job, json!({}), None, Default::default())
            .await
            .unwrap();
    }
    w.drain().await;
    for id in ["cancel-child", "terminate-child", "abandon-child"] {
        assert_eq!(states(&w.executions(id).await), ["Processing"], "{id}");
    }
    let parent = JobId::parse("parent").unwrap();
    w.app()
        .trigger(&parent, json!({}), None, Default::default())
        .await
        .unwrap();
    w.drain().await;
    assert_eq!(states(&w.executions("parent").await), ["Succeeded"]);
    assert_eq!(states(&w.executions("cancel-child").await), ["Cancelled"]);
    assert_eq!(
        states(&w.executions("terminate-child").await),
        ["Terminated"]
    );
    assert_eq!(states(&w.executions("abandon-child").await), ["Processing"]);
    let reason = &w.executions("cancel-child").await[0];
    assert!(
        reason
            .events()
            .iter()
            .any(|e| e.message.contains("parent close policy")),
        "{:?}",
        reason.events()
    );

    // A job without children never looks for them; one created later marks its parent.
    w.create("lonely", json!({})).await;
    assert!(!w.job_state("lonely").await.has_children);
    w.create("late-child", json!({"parentJob": "lonely"})).await;
    assert!(w.job_state("lonely").await.has_children);
}

/// The execution's log lines, for assertions on why it ended.
fn log_lines(execution: &Execution) -> Vec<String> {
    execution
        .events()
        .iter()
        .map(|e| e.message.clone())
        .collect()
}

#[tokio::test]
async fn heartbeat_times_out_an_async_run_when_feedback_stops() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create(
        "beating",
        json!({
            "request": [{"method": "POST", "url": "service://main/start?cb=${schedulingFeedbackUrl}"}],
            "timer": {"dueTime": "5s", "period": "0s"},
            "async": true, "timeoutSeconds": 120,
            "timeouts": {"heartbeat": "10s"},
        }),
    )
    .await;
    let job = JobId::parse("beating").unwrap();
    w.run_until("2024-01-01T00:00:05Z").await;
    assert_eq!(w.call_times(), ["00:00:05"]);
    let url = w.calls()[0].url.clone();
    let token = url.split("token=").nth(1).unwrap().to_string();
    let id = "beating~20240101T000005Z";
    // Progress reports 7 s and 8 s apart: each within the heartbeat, so the run stays alive for
    // 23 s, more than twice the heartbeat.
    for (at, progress) in [
        ("2024-01-01T00:00:12Z", "10%"),
        ("2024-01-01T00:00:20Z", "20%"),
        ("2024-01-01T00:00:28Z", "30%"),
    ] {
        w.run_until(at).await;
        let report = json!({"status": "", "progress": progress});
        w.app()
            .feedback(&job, 1, Some(id), Some(&token), &report)
            .await
            .unwrap();
        w.drain().await;
        assert_eq!(
            states(&w.executions("beating").await),
            ["Processing"],
            "{at}"
        );
    }
    // One second before last report + heartbeat: still running.
    w.run_until("2024-01-01T00:00:37Z").await;
    let executions = w.executions("beating").await;
    assert_eq!(states(&executions), ["Processing"]);
    assert_eq!(executions[0].progress, Some(json!("30%")));
    // Last report at 00:00:28 + heartbeat 10 s: timed out at 00:00:38, not at timeoutSeconds.
    w.run_until("2024-01-01T00:01:00Z").await;
    let executions = w.executions("beating").await;
    assert_eq!(
        states(&executions),
        ["Terminated"],
        "{:?}",
        log_lines(&executions[0])
    );
    assert_eq!(executions[0].error.as_deref(), Some("timeout"));
    assert_eq!(executions[0].attempts(), 1);
    assert_eq!(
        executions[0].finished_at(),
        Some(t("2024-01-01T00:00:38Z")),
        "{:?}",
        log_lines(&executions[0])
    );
    assert!(
        log_lines(&executions[0])
            .iter()
            .any(|l| l.contains("heartbeat")),
        "{:?}",
        log_lines(&executions[0])
    );
    // A late report finds it no longer waiting.
    let late = w
        .app()
        .feedback(
            &job,
            1,
            Some(id),
            Some(&token),
            &json!({"status": "succeed"}),
        )
        .await;
    assert!(matches!(late, Err(AppError::Conflict(_))), "{late:?}");
    assert_eq!(w.call_times(), ["00:00:05"], "no other call");
}

#[tokio::test]
async fn heartbeat_times_out_a_polled_run_when_polls_fail_and_the_timeout_is_retried() {
    // Call 1 is the chain; polls 2–4 report progress; every later poll answers 500.
    let w = World::new("2024-01-01T00:00:00Z", |request, n| {
        if request.url.contains("/check") {
            if n <= 4 {
                return ok(json!({"status": "", "progress": format!("{n}0%")}));
            }
            return status(500);
        }
        ok(json!({"accepted": true}))
    });
    w.create(
        "polled",
        json!({
            "timer": {"dueTime": "5s", "period": "0s"},
            "async": true, "checkRateSeconds": 3, "timeoutSeconds": 120,
            "checkUrl": {"method": "GET", "url": "service://main/check"},
            "timeouts": {"heartbeat": "10s"},
            "retry": [{"errorEquals": "timeout", "intervalSeconds": 5, "maxAttempts": 1}],
        }),
    )
    .await;
    w.run_until("2024-01-01T00:00:27Z").await;
    // Attempt 1: last report at 00:00:14, failed polls at 17, 20, 23, heartbeat timeout at 24,
    // then Failed until the retry 5 s later.
    let executions = w.executions("polled").await;
    assert_eq!(
        states(&executions),
        ["Failed"],
        "{:?}",
        log_lines(&executions[0])
    );
    assert_eq!(executions[0].error.as_deref(), Some("timeout"));
    w.run_until("2024-01-01T00:01:30Z").await;
    let times = |part: &str| -> Vec<String> {
        w.call_instants(part)
            .into_iter()
            .map(|s| s[11..19].to_string())
            .collect()
    };
    assert_eq!(
        times("/run"),
        ["00:00:05", "00:00:29"],
        "the first attempt, then the retry"
    );
    assert_eq!(
        times("/check"),
        [
            "00:00:08", "00:00:11", "00:00:14", "00:00:17", "00:00:20", "00:00:23", "00:00:32",
            "00:00:35", "00:00:38"
        ]
    );
    assert_eq!(w.calls().len(), 11, "two chains and nine polls");
    let executions = w.executions("polled").await;
    assert_eq!(states(&executions), ["Terminated"]);
    assert_eq!(executions[0].attempts(), 2);
    assert_eq!(executions[0].error.as_deref(), Some("timeout"));
    // Attempt 2 started at 00:00:29 and never had a successful poll: 29 + 10 s.
    assert_eq!(executions[0].finished_at(), Some(t("2024-01-01T00:00:39Z")));
    assert_eq!(executions[0].progress, Some(json!("40%")));
}

#[tokio::test]
async fn schedule_to_close_stops_retries_that_would_start_after_it() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| status(500));
    let job = |path: &str, extra: Value| {
        let mut body = json!({
            "request": [{"method": "POST", "url": format!("service://main/{path}")}],
            "timer": {"dueTime": "10s", "period": "0s"},
            // Without the limit: up to 100 retries, 10 s apart.
            "maxRetries": 100,
            "retryPolicy": {"initialInterval": "10s", "backoffCoefficient": 1.0},
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    // Deadline 00:01:10: the retry due exactly at the deadline still runs, the next does not.
    w.create(
        "close-1m",
        job("a", json!({"timeouts": {"scheduleToClose": "1m"}})),
    )
    .await;
    // Deadline 00:01:15: the retry after the 00:01:10 failure would start at 00:01:20, so the
    // run ends at 00:01:10, without waiting for the deadline.
    w.create(
        "close-65s",
        job("b", json!({"timeouts": {"scheduleToClose": "65s"}})),
    )
    .await;
    // A docs/api.md rule is bounded too: 10 s, 20 s, then 40 s would start at 00:01:20.
    w.create(
        "close-rule",
        job(
            "c",
            json!({
                "timeouts": {"scheduleToClose": "1m"},
                "retry": [{"errorEquals": "500", "intervalSeconds": 10, "backoffRate": 2.0, "maxAttempts": 10}],
            }),
        ),
    )
    .await;
    w.run_until("2024-01-01T00:03:00Z").await;
    let times = |part: &str| -> Vec<String> {
        w.call_instants(part)
            .into_iter()
            .map(|s| s[11..19].to_string())
            .collect()
    };
    let every_10s = [
        "00:00:10", "00:00:20", "00:00:30", "00:00:40", "00:00:50", "00:01:00", "00:01:10",
    ];
    assert_eq!(times("/a"), every_10s);
    assert_eq!(times("/b"), every_10s);
    assert_eq!(times("/c"), ["00:00:10", "00:00:20", "00:00:40"]);
    for (id, attempts, end) in [
        ("close-1m", 7, "2024-01-01T00:01:10Z"),
        ("close-65s", 7, "2024-01-01T00:01:10Z"),
        ("close-rule", 3, "2024-01-01T00:00:40Z"),
    ] {
        let executions = w.executions(id).await;
        assert_eq!(states(&executions), ["Terminated"], "{id}");
        let run = &executions[0];
        assert_eq!(run.error.as_deref(), Some("500"), "{id}");
        assert_eq!(run.attempts(), attempts, "{id}");
        assert_eq!(run.finished_at(), Some(t(end)), "{id}");
        let last = log_lines(run).last().cloned().unwrap();
        assert!(last.contains("scheduleToClose"), "{id}: {last}");
        let failure = w.job_state(id).await.last_failure.unwrap();
        assert_eq!(failure["error"], "500", "{id}");
    }
}

/// A sync job that succeeds at 00:00:10 and notifies `path` of its `200`.
fn notifying_job(path: &str, qos: u8) -> Value {
    json!({
        "timer": {"dueTime": "10s", "period": "0s"}, "qos": qos,
        "notification": [{"stateEquals": "200", "method": "POST", "url": format!("service://main/{path}"),
                          "body": "${schedulingNotifyBody}|json"}],
    })
}

#[tokio::test]
async fn qos_1_notifications_keep_retrying_after_the_seed_retries_until_delivered() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let delivering = Arc::new(AtomicBool::new(false));
    let up = delivering.clone();
    let w = World::new("2024-01-01T00:00:00Z", move |request, _| {
        if request.url.contains("/notify") && !up.load(Ordering::SeqCst) {
            return status(503);
        }
        ok(json!({}))
    });
    w.create("reliable", notifying_job("notify/reliable", 1))
        .await;
    w.create("plain", notifying_job("notify/plain", 0)).await;
    let times = |part: &str| -> Vec<String> {
        w.call_instants(part)
            .into_iter()
            .map(|s| s[11..19].to_string())
            .collect()
    };
    w.run_until("2024-01-01T00:06:00Z").await;
    // Tried once, then 3 retries 20 s apart.
    let seed = ["00:00:10", "00:00:30", "00:00:50", "00:01:10"];
    assert_eq!(times("/notify/plain"), seed, "qos 0 stops after 3 retries");
    // qos 1 goes on, the interval doubling: 40 s, 80 s, 160 s…
    assert_eq!(
        times("/notify/reliable"),
        ["00:00:10", "00:00:30", "00:00:50", "00:01:10", "00:01:50", "00:03:10", "00:05:50"]
    );
    let plain = &w.executions("plain").await[0];
    assert_eq!(plain.state(), ExecutionState::Succeeded);
    assert!(
        log_lines(plain)
            .iter()
            .any(|l| l.contains("notification[0] not delivered after 4 attempts")),
        "{:?}",
        log_lines(plain)
    );
    // …capped at 5 minutes: 00:10:50 is the next. The target recovers before it.
    delivering.store(true, Ordering::SeqCst);
    w.run_until("2024-01-01T00:20:00Z").await;
    assert_eq!(
        times("/notify/reliable"),
        [
            "00:00:10", "00:00:30", "00:00:50", "00:01:10", "00:01:50", "00:03:10", "00:05:50",
            "00:10:50"
        ],
        "delivered at 00:10:50, then never again"
    );
    assert_eq!(
        times("/notify/plain"),
        seed,
        "a recovered target gets no late retry"
    );
    let reliable = &w.executions("reliable").await[0];
    assert!(
        !log_lines(reliable)
            .iter()
            .any(|l| l.contains("not delivered")),
        "{:?}",
        log_lines(reliable)
    );
    assert_eq!(times("/run"), ["00:00:10", "00:00:10"], "each job ran once");
}

/// `qos: 1` retries stop once `reliable_notify_for` has passed since the outcome, and the failure
/// is noted on the execution.
#[tokio::test]
async fn qos_1_notifications_give_up_after_reliable_notify_for() {
    let w = World::with_configs(
        "2024-01-01T00:00:00Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        |config| config.reliable_notify_for = StdDuration::from_secs(600),
        |request, _| {
            if request.url.contains("/notify") {
                return status(503);
            }
            ok(json!({}))
        },
    );
    w.create("reliable", notifying_job("notify", 1)).await;
    w.run_until("2024-01-01T00:20:00Z").await;
    let notes: Vec<String> = w
        .call_instants("/notify")
        .into_iter()
        .map(|s| s[11..19].to_string())
        .collect();
    // The outcome was at 00:00:10: every attempt comes before 00:10:10.
    assert_eq!(
        notes,
        ["00:00:10", "00:00:30", "00:00:50", "00:01:10", "00:01:50", "00:03:10", "00:05:50"],
        "no retry more than reliable_notify_for after the outcome"
    );
    let run = &w.executions("reliable").await[0];
    assert!(
        log_lines(run)
            .iter()
            .any(|l| l.contains(&format!("not delivered after {} attempts", notes.len()))),
        "{:?}",
        log_lines(run)
    );
}

#[tokio::test]
async fn dst_spring_forward_follows_the_gap_policy() {
    let w = World::new("2024-03-10T06:50:00Z", |_, _| ok(json!({})));
    let job = |path: &str, dst: Value| {
        let mut schedule = json!({"cron": ["30 2 * * *"], "timeZone": "America/New_York"});
        if !dst.is_null() {
            schedule["dst"] = dst;
        }
        json!({"schedule": schedule,
               "request": [{"method": "POST", "url": format!("service://main/{path}")}]})
    };
    // 2024-03-10 02:00 EST (07:00Z) jumps to 03:00 EDT: 02:30 does not exist that day.
    w.create("spring-auto", job("auto", Value::Null)).await; // standard: gap auto
    w.create("spring-skip", job("skip", json!({"gap": "skip"})))
        .await;
    w.create("spring-shift", job("shift", json!({"gap": "shift"})))
        .await;
    w.create(
        "spring-transition",
        job("transition", json!({"gap": "transition"})),
    )
    .await;
    w.run_until("2024-03-10T07:40:00Z").await;
    // auto on a fixed-time spec = transition: 03:00 EDT. shift: 03:30 EDT. skip: nothing.
    assert_eq!(w.call_instants("/auto"), ["2024-03-10T07:00:00Z"]);
    assert_eq!(w.call_instants("/transition"), ["2024-03-10T07:00:00Z"]);
    assert_eq!(w.call_instants("/shift"), ["2024-03-10T07:30:00Z"]);
    assert_eq!(w.call_instants("/skip"), Vec::<String>::new());
    // The next day, 02:30 EDT is 06:30Z for all four.
    w.clock.set(t("2024-03-11T06:29:50Z"));
    w.run_until("2024-03-11T06:30:10Z").await;
    for path in ["/auto", "/transition", "/shift", "/skip"] {
        let calls = w.call_instants(path);
        assert_eq!(
            calls.last().map(String::as_str),
            Some("2024-03-11T06:30:00Z"),
            "{path}"
        );
    }
    assert_eq!(w.calls().len(), 7);
    for id in [
        "spring-auto",
        "spring-skip",
        "spring-shift",
        "spring-transition",
    ] {
        let state = w.job_state(id).await;
        assert_eq!(state.missed_catchup_window, 0, "{id}");
        assert!(states(&w.executions(id).await)
            .iter()
            .all(|s| *s == "Succeeded"));
    }
}

#[tokio::test]
async fn dst_fall_back_follows_the_overlap_policy() {
    let w = World::new("2024-11-03T05:20:00Z", |_, _| ok(json!({})));
    let job = |path: &str, dst: Value| {
        let mut schedule = json!({"cron": ["30 1 * * *"], "timeZone": "America/New_York"});
        if !dst.is_null() {
            schedule["dst"] = dst;
        }
        json!({"schedule": schedule,
               "request": [{"method": "POST", "url": format!("service://main/{path}")}]})
    };
    // 2024-11-03 02:00 EDT (06:00Z) falls back to 01:00 EST: 01:30 happens at 05:30Z and 06:30Z.
    w.create("fall-auto", job("auto", Value::Null)).await; // standard: overlap auto
    w.create("fall-both", job("both", json!({"overlap": "both"})))
        .await;
    w.create("fall-first", job("first", json!({"overlap": "first"})))
        .await;
    w.create("fall-second", job("second", json!({"overlap": "second"})))
        .await;
    w.run_until("2024-11-03T06:40:00Z").await;
    // auto on a fixed-time spec: once, at the first (daylight-time) instant.
    assert_eq!(w.call_instants("/auto"), ["2024-11-03T05:30:00Z"]);
    assert_eq!(w.call_instants("/first"), ["2024-11-03T05:30:00Z"]);
    assert_eq!(
        w.call_instants("/both"),
        ["2024-11-03T05:30:00Z", "2024-11-03T06:30:00Z"]
    );
    assert_eq!(w.call_instants("/second"), ["2024-11-03T06:30:00Z"]);
    // The next day, 01:30 EST is 06:30Z for all four.
    w.clock.set(t("2024-11-04T06:29:50Z"));
    w.run_until("2024-11-04T06:30:10Z").await;
    for path in ["/auto", "/both", "/first", "/second"] {
        let calls = w.call_instants(path);
        assert_eq!(
            calls.last().map(String::as_str),
            Some("2024-11-04T06:30:00Z"),
            "{path}"
        );
    }
    assert_eq!(w.calls().len(), 9);
    // The two fires of one wall-clock time are two executions, with distinct ids.
    let both = w.executions("fall-both").await;
    assert_eq!(states(&both), ["Succeeded"; 3]);
    let ids: std::collections::BTreeSet<&str> =
        both.iter().map(|e| e.execution_id.as_str()).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    for id in ["fall-auto", "fall-both", "fall-first", "fall-second"] {
        assert_eq!(w.job_state(id).await.missed_catchup_window, 0, "{id}");
    }
}

/// Receives every visible dispatch message and runs it, acknowledging those that finish: one
/// worker of the runner, on its own task, so that a run held for its fire time can wait while
/// the test moves the clock.
async fn dispatch_visible(engine: Arc<TestEngine>) {
    dispatch_visible_in(engine, false).await;
}

/// [`dispatch_visible`], newest message first when `reverse`.
async fn dispatch_visible_in(engine: Arc<TestEngine>, reverse: bool) {
    let queue = engine.dispatch_queue();
    let mut batch = queue
        .receive(100, StdDuration::from_secs(30))
        .await
        .unwrap();
    if reverse {
        batch.reverse();
    }
    for delivery in batch {
        let message: DispatchMessage = serde_json::from_str(&delivery.body).unwrap();
        if engine.dispatch(&message.execution_id).await.is_ok() {
            queue.ack(&delivery.receipt).await.unwrap();
        }
    }
}

/// Waits (in real time, briefly) until `job`'s newest execution is in `state`; returns its id.
async fn wait_for_newest(w: &World, job: &str, state: ExecutionState) -> String {
    for _ in 0..2_000 {
        if let Some(newest) = w.executions(job).await.pop() {
            if newest.state() == state {
                return newest.execution_id;
            }
        }
        tokio::time::sleep(StdDuration::from_millis(1)).await;
    }
    panic!("{job}'s newest execution never reached {state:?}");
}

/// A world at 00:00:58 whose engine admits runs up to a second ahead, with `job` created and a
/// target that answers `answer`.
async fn admitting_ahead(job: &str, body: Value, answer: Value) -> World {
    let w = World::with_configs(
        "2024-01-01T00:00:58Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        |config| config.admit_ahead = StdDuration::from_secs(1),
        move |_, _| ok(answer.clone()),
    );
    w.create(job, body).await;
    w
}

/// A fire within `admit_ahead` of its time is admitted early (its slot taken, Processing
/// written) and held: its call still goes out on its second, and its start is that second.
#[tokio::test]
async fn a_fire_admitted_ahead_calls_on_its_second() {
    let w = admitting_ahead(
        "ahead",
        json!({"schedule": {"cron": ["* * * * *"]}}),
        json!({"done": true}),
    )
    .await;
    w.clock.set(t("2024-01-01T00:00:59.500Z"));
    w.engine.tick().await.unwrap();
    let worker = tokio::spawn(dispatch_visible(Arc::clone(&w.engine)));
    let id = wait_for_newest(&w, "ahead", ExecutionState::Processing).await;
    assert!(w.calls().is_empty(), "nothing is called before its time");
    assert_eq!(w.job_state("ahead").await.running, [id]);
    w.clock.set(t("2024-01-01T00:01:00Z"));
    worker.await.unwrap();
    assert_eq!(w.call_instants("/run"), ["2024-01-01T00:01:00Z"]);
    let executions = w.executions("ahead").await;
    assert_eq!(states(&executions), ["Succeeded"]);
    assert_eq!(executions[0].started_at(), Some(t("2024-01-01T00:01:00Z")));
    assert!(w.job_state("ahead").await.running.is_empty());
}

/// Admission ahead never decides what only the fire time can: a `Skip` job still busy half a
/// second before its fire is not skipped then, and runs when the busy run ends in time.
#[tokio::test]
async fn a_fire_whose_slot_is_busy_is_admitted_at_its_time() {
    let w = admitting_ahead(
        "busy",
        json!({"schedule": {"cron": ["* * * * *"]}, "async": true, "timeoutSeconds": 600}),
        json!({}),
    )
    .await;
    let job = JobId::parse("busy").unwrap();
    let manual = w
        .app()
        .trigger(&job, json!({}), None, Default::default())
        .await
        .unwrap();
    w.drain().await;
    w.clock.set(t("2024-01-01T00:00:59.500Z"));
    w.engine.tick().await.unwrap();
    // The fire's message comes half a second early, finds the slot taken, and waits. (The fire
    // was planned when the job was created, so it is number 1 and the trigger number 2.)
    dispatch_visible(Arc::clone(&w.engine)).await;
    assert_eq!(
        states(&w.executions("busy").await),
        ["Scheduled", "Processing"]
    );
    w.clock.set(t("2024-01-01T00:00:59.800Z"));
    w.engine
        .apply_feedback(&manual.execution_id, &json!({"status": "succeed"}))
        .await
        .unwrap();
    w.drain().await;
    w.clock.set(t("2024-01-01T00:01:00Z"));
    w.drain().await;
    assert_eq!(
        states(&w.executions("busy").await),
        ["Processing", "Succeeded"],
        "the fire ran: its slot was free at its time"
    );
    assert_eq!(w.call_times(), ["00:00:58", "00:01:00"]);
}

/// A worker that dies while it holds a run admitted ahead leaves it Processing with a lease;
/// the redelivered message runs it once the lease is over, and it is called exactly once.
#[tokio::test]
async fn a_run_admitted_ahead_survives_its_worker() {
    let w = admitting_ahead(
        "held",
        json!({"schedule": {"cron": ["0 * * * *"]}, "timeoutSeconds": 20}),
        json!({}),
    )
    .await;
    w.clock.set(t("2024-01-01T00:59:59.500Z"));
    w.engine.tick().await.unwrap();
    let worker = tokio::spawn(dispatch_visible(Arc::clone(&w.engine)));
    wait_for_newest(&w, "held", ExecutionState::Processing).await;
    worker.abort();
    assert!(worker.await.unwrap_err().is_cancelled());
    w.clock.set(t("2024-01-01T01:00:00Z"));
    w.run_until("2024-01-01T01:03:00Z").await;
    // Deadline 01:00:20 (the attempt starts at 01:00:00), lease 30 s past it.
    assert_eq!(w.call_instants("/run"), ["2024-01-01T01:00:50Z"]);
    assert_eq!(states(&w.executions("held").await), ["Succeeded"]);
}

/// A held run checks, just before its fire time, that nothing stopped it while it waited: a
/// cancel, or its job's deletion, during the hold means no call.
#[tokio::test]
async fn a_run_stopped_while_held_is_never_called() {
    for stop in ["cancel", "delete the job"] {
        let w = admitting_ahead(
            "stopped",
            json!({"schedule": {"cron": ["* * * * *"]}}),
            json!({}),
        )
        .await;
        w.clock.set(t("2024-01-01T00:00:59.500Z"));
        w.engine.tick().await.unwrap();
        let worker = tokio::spawn(dispatch_visible(Arc::clone(&w.engine)));
        let id = wait_for_newest(&w, "stopped", ExecutionState::Processing).await;
        match stop {
            "cancel" => {
                w.app()
                    .cancel_execution(&eid(&id), "changed my mind")
                    .await
                    .unwrap();
            }
            _ => w
                .app()
                .delete_job(&JobId::parse("stopped").unwrap())
                .await
                .unwrap(),
        }
        w.clock.set(t("2024-01-01T00:01:00Z"));
        worker.await.unwrap();
        w.drain().await;
        assert!(w.calls().is_empty(), "{stop}: no call after the stop");
        let run = w.app().get_execution(&eid(&id)).await.unwrap();
        assert_eq!(run.state(), ExecutionState::Cancelled, "{stop}");
    }
}

/// A call the address policy refuses ends the run with its own code, `address-refused`, at once:
/// neither a `connection` rule nor a `retryPolicy` retries it, and a notification to a refused
/// address is not retried either (qos 1 included). A `connection` failure still is.
#[tokio::test]
async fn refused_addresses_fail_for_good_with_their_own_code() {
    let w = World::new("2024-01-01T00:00:00Z", |request, _| {
        if request.url.contains("/refused") {
            return Err(HttpError::Refused("169.254.169.254 is link-local".into()));
        }
        if request.url.contains("/down") {
            return Err(HttpError::Transport("connection refused".into()));
        }
        ok(json!({}))
    });
    let retried = |path: &str| {
        json!({
            "request": [{"method": "POST", "url": format!("service://main/{path}")}],
            "timer": {"dueTime": "10s", "period": "0s"},
            "maxRetries": 5,
            "retry": [{"errorEquals": "connection", "intervalSeconds": 10, "maxAttempts": 3}],
            "retryPolicy": {"initialInterval": "10s", "backoffCoefficient": 1.0},
            "notification": [{"stateEquals": "address-refused", "method": "POST",
                              "url": "service://main/notify/refused", "body": "${schedulingNotifyBody}|json"}],
            "qos": 1,
        })
    };
    w.create("refused", retried("refused")).await;
    w.create("down", retried("down")).await;
    w.run_until("2024-01-01T00:02:00Z").await;

    let refused = &w.executions("refused").await;
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].state(), ExecutionState::Terminated);
    assert_eq!(refused[0].error.as_deref(), Some("address-refused"));
    assert_eq!(
        w.call_instants("/refused").len(),
        2,
        "one call and one notification"
    );
    assert_eq!(
        w.call_instants("/notify/refused"),
        ["2024-01-01T00:00:10Z"],
        "the notification matched address-refused and was not retried"
    );
    assert!(
        log_lines(&refused[0])
            .iter()
            .any(|l| l.contains("notification[0] not delivered after 1 attempts")),
        "{:?}",
        log_lines(&refused[0])
    );
    // A transport failure is `connection`, and its rule retries it three times.
    assert_eq!(w.call_instants("/down").len(), 4);
    assert_eq!(
        w.executions("down").await[0].error.as_deref(),
        Some("connection")
    );
}

mod backfills;
mod batches;
mod calendars;
mod catchup;
mod events;
mod fallbacks;
mod ledger;
mod messages;
mod order;
mod overrides;
mod pause;
mod preview;
mod stale;
mod stats;
mod stops;
mod targets;
mod timers;

/// Issue 12 item 10: the target gets the stored header values, while the state-change events,
/// the executions and the `Debug` form of the requests (what a log line would print; it shows no
/// header value at all) carry none of them; a read job posted back to update still sends them.
#[tokio::test]
async fn secret_headers_go_to_the_target_and_nowhere_else() {
    let w = World::new("2024-01-01T00:00:00Z", |request, _| {
        if request.url.contains("/check") {
            return ok(json!({"status": "succeed", "data": {"rows": 1}}));
        }
        ok(json!({"accepted": true}))
    });
    let secrets = [
        "Bearer eng-s3cret",
        "sid=eng",
        "eng-own",
        "eng-check",
        "eng-notify",
    ];
    w.create(
        "secrets",
        json!({
            "timer": {"period": "external"},
            "sensitiveHeaders": ["X-Own"],
            "request": [{"method": "POST", "url": "service://main/run",
                         "headers": {"Authorization": "Bearer eng-s3cret", "Cookie": "sid=eng",
                                     "X-Own": "eng-own", "X-Plain": "plain"}}],
            "async": true, "checkRateSeconds": 1,
            "checkUrl": {"url": "service://main/check", "headers": {"X-Auth-Token": "eng-check"}},
            "notification": [{"url": "service://main/notify", "headers": {"X-Api-Key": "eng-notify"}}],
        }),
    )
    .await;
    let job = JobId::parse("secrets").unwrap();
    w.app()
        .trigger(&job, json!({}), Some("one"), Default::default())
        .await
        .unwrap();
    w.run_until("2024-01-01T00:00:05Z").await;

    let header = |request: &HttpRequest, name: &str| {
        request
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let calls = w.calls();
    let paths: Vec<&str> = calls.iter().map(|c| &c.url[19..]).collect();
    assert_eq!(paths, ["run", "check", "notify"]);
    assert_eq!(
        header(&calls[0], "Authorization").as_deref(),
        Some("Bearer eng-s3cret")
    );
    assert_eq!(header(&calls[0], "Cookie").as_deref(), Some("sid=eng"));
    assert_eq!(header(&calls[0], "X-Own").as_deref(), Some("eng-own"));
    assert_eq!(header(&calls[0], "X-Plain").as_deref(), Some("plain"));
    assert_eq!(
        header(&calls[1], "X-Auth-Token").as_deref(),
        Some("eng-check")
    );
    assert_eq!(
        header(&calls[2], "X-Api-Key").as_deref(),
        Some("eng-notify")
    );

    let executions = w.executions("secrets").await;
    assert_eq!(states(&executions), ["Succeeded"]);
    let events = w.engine.publisher().sent();
    assert_eq!(events.len(), 2, "{events:?}");
    let shown = format!(
        "{events:?} {} {:?}",
        serde_json::to_string(&executions).unwrap(),
        calls
    );
    assert!(shown.contains("(\"X-Plain\", \"***\")"), "{shown}");
    for secret in secrets {
        assert!(!shown.contains(secret), "{secret:?} shown: {shown}");
    }

    // The job as read, posted back: the next run still sends the stored values.
    let mut read = w.app().get_job(&job).await.unwrap().to_api_json();
    for key in ["state", "pausedNotes", "createdAt", "updatedAt"] {
        read.as_object_mut().unwrap().remove(key);
    }
    assert_eq!(read["request"][0]["headers"]["Authorization"], "***");
    w.app().update_job(&job, &read).await.unwrap();
    w.app()
        .trigger(&job, json!({}), Some("two"), Default::default())
        .await
        .unwrap();
    w.run_until("2024-01-01T00:00:10Z").await;
    let calls = w.calls();
    assert_eq!(calls.len(), 6, "{calls:?}");
    assert_eq!(
        header(&calls[3], "Authorization").as_deref(),
        Some("Bearer eng-s3cret")
    );
    assert_eq!(header(&calls[3], "X-Own").as_deref(), Some("eng-own"));
    assert_eq!(
        header(&calls[4], "X-Auth-Token").as_deref(),
        Some("eng-check")
    );
    assert_eq!(
        header(&calls[5], "X-Api-Key").as_deref(),
        Some("eng-notify")
    );
}
