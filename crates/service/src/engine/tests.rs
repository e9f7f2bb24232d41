//! The engine under simulated time: a manual clock, the in-memory store and queues, and a scripted
//! HTTP target. Every scenario advances the clock second by second, ticking and draining the
//! queues as the local runner would, so schedules, retries and timeouts are checked to the second
//! without sleeping.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::JobId;

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::events::RecordingPublisher;
use crate::http::{HttpError, HttpRequest, HttpResponse};
use crate::queue::MemoryQueue;
use crate::store::{MemoryStore, PageRequest};
use crate::AppConfig;

type Responder = Box<dyn Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync>;

/// A target that answers by a script and records every call with the clock's time.
struct ScriptedHttp {
    clock: Arc<ManualClock>,
    calls: Mutex<Vec<(DateTime<Utc>, HttpRequest)>>,
    respond: Responder,
}

impl HttpClient for Arc<ScriptedHttp> {
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
}

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

impl World {
    fn new(
        start: &str,
        respond: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync + 'static,
    ) -> World {
        World::with_config(start, AppConfig::default(), respond)
    }

    fn with_config(
        start: &str,
        app_config: AppConfig,
        respond: impl Fn(&HttpRequest, usize) -> Result<HttpResponse, HttpError> + Send + Sync + 'static,
    ) -> World {
        let clock = Arc::new(ManualClock::new(t(start)));
        let app = Arc::new(App::new(MemoryStore::new(), clock.clone(), app_config));
        let http = Arc::new(ScriptedHttp {
            clock: clock.clone(),
            calls: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        });
        let config = EngineConfig {
            services: BTreeMap::from([("main".to_string(), "http://127.0.0.1:9".to_string())]),
            state_change_bus: Some("sundial".into()),
            ..EngineConfig::default()
        };
        let engine = Arc::new(Engine::new(
            app.clone(),
            MemoryQueue::new(clock.clone()),
            MemoryQueue::new(clock.clone()),
            http.clone(),
            RecordingPublisher::new(),
            config,
        ));
        let hooks: Arc<dyn EngineHooks> = engine.clone();
        app.attach_engine(Arc::downgrade(&hooks));
        World {
            clock,
            http,
            engine,
            duplicate: false,
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
            for delivery in dispatch
                .receive(100, StdDuration::from_secs(30))
                .await
                .unwrap()
            {
                handled += 1;
                let message: DispatchMessage = serde_json::from_str(&delivery.body).unwrap();
                let times = if self.duplicate { 2 } else { 1 };
                let mut result = Ok(());
                for _ in 0..times {
                    result = self.engine.dispatch(&message.execution_id).await;
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
    assert_eq!(state.last_completion_result, Some(json!({"done": true})));
    // Every state change was published.
    let events = w.engine.publisher().sent().len();
    assert!(events >= 9, "{events} events");
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
    // Each failed attempt notified the rule matching 500, signed, with seed 002's body.
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
            "async": true, "timeoutSeconds": 120,
        }),
    )
    .await;
    let job = JobId::parse("async-feedback").unwrap();
    let exec = w
        .app()
        .trigger(&job, json!({"who": "test"}), Some("t1"), None)
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
    let wrong = w.app().feedback(&job, 1, None, Some("00"), &report).await;
    assert!(matches!(wrong, Err(AppError::Unauthorized(_))), "{wrong:?}");
    w.app()
        .feedback(&job, 1, None, Some(&token), &report)
        .await
        .unwrap();
    let done = w.app().get_execution(&exec.execution_id).await.unwrap();
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
    assert_eq!(job.status(), "paused");
    assert!(job
        .state
        .paused_notes
        .unwrap()
        .contains("silent~20240101T000100Z"));
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
    let first = &w.executions("buffer-one").await[0];
    w.app()
        .cancel_execution(&first.execution_id, "test")
        .await
        .unwrap();
    w.drain().await;
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
    w.clock.set(t("2024-01-01T00:10:20Z"));
    w.engine.tick().await.unwrap();
    w.drain().await;
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
    assert_eq!(count, 4);
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
        debug_mode: true,
        ..AppConfig::default()
    };
    let w = World::with_config("2024-01-01T00:00:30Z", config, |_, _| ok(json!({})));
    w.create("quiet", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:02:30Z").await;
    assert!(w.calls().is_empty());
    let job = JobId::parse("quiet").unwrap();
    w.app().trigger(&job, json!({}), None, None).await.unwrap();
    w.drain().await;
    assert_eq!(w.calls().len(), 1);
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

#[tokio::test]
async fn parent_close_policies_apply_when_a_parent_run_ends() {
    // Parent runs answer at once; children are async and never finish by themselves.
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    let child = |policy: &str| {
        json!({"parentJob": "parent", "parentClosePolicy": policy,
               "async": true, "timeoutSeconds": 600})
    };
    // Declared before their parent: the parent finds them when it is created.
    w.create("cancel-child", child("cancel")).await;
    w.create("terminate-child", child("terminate")).await;
    w.create("abandon-child", child("abandon")).await;
    w.create("parent", json!({})).await;
    assert!(w.job_state("parent").await.has_children);
    for id in ["cancel-child", "terminate-child", "abandon-child"] {
        let job = JobId::parse(id).unwrap();
        w.app().trigger(&job, json!({}), None, None).await.unwrap();
    }
    w.drain().await;
    for id in ["cancel-child", "terminate-child", "abandon-child"] {
        assert_eq!(states(&w.executions(id).await), ["Processing"], "{id}");
    }
    let parent = JobId::parse("parent").unwrap();
    w.app()
        .trigger(&parent, json!({}), None, None)
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
