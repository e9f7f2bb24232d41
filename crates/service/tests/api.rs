//! The HTTP API through the router, route by route: an `App` over the in-memory store and a manual
//! clock, requests sent with `oneshot`, answers checked against seed 002's envelope and BRIEF §2.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use chrono::{DateTime, Utc};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use sundial_service::api::{router, MAX_BODY_BYTES};
use sundial_service::clock::{Clock, ManualClock};
use sundial_service::store::{MemoryStore, Store};
use sundial_service::{App, AppConfig};
use tower::ServiceExt;

/// The manual clock's time: 2024-03-10T12:34:56Z.
const NOW: &str = "2024-03-10T12:34:56Z";

struct Api {
    router: Router,
    app: Arc<App<MemoryStore>>,
}

impl Api {
    fn new() -> Api {
        Api::with_token(None)
    }

    fn with_token(token: Option<&str>) -> Api {
        let now: DateTime<Utc> = NOW.parse().unwrap();
        let clock = Arc::new(ManualClock::new(now));
        let app = Arc::new(App::new(MemoryStore::new(), clock, AppConfig::default()));
        Api {
            router: router(Arc::clone(&app), token.map(str::to_owned)),
            app,
        }
    }

    async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "{status}: body is not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        (status, body)
    }

    async fn call(&self, method: Method, uri: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        let body = match body {
            Some(value) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(serde_json::to_vec(value).unwrap())
            }
            None => Body::empty(),
        };
        self.send(request.body(body).unwrap()).await
    }

    async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::GET, uri, None).await
    }

    async fn post(&self, uri: &str, body: &Value) -> (StatusCode, Value) {
        self.call(Method::POST, uri, Some(body)).await
    }

    async fn put(&self, uri: &str, body: Option<&Value>) -> (StatusCode, Value) {
        self.call(Method::PUT, uri, body).await
    }

    async fn delete(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, uri, None).await
    }

    /// Creates a job, expecting the success envelope.
    async fn create(&self, job_id: &str, body: &Value) {
        let answer = self.post(&format!("/jobs/{job_id}"), body).await;
        assert_eq!(answer, (StatusCode::OK, ok()), "create {job_id}");
    }

    /// Triggers a job, returning the execution id.
    async fn trigger(&self, job_id: &str, arguments: &Value) -> String {
        let (status, body) = self
            .post(&format!("/jobs/{job_id}/trigger"), arguments)
            .await;
        assert_eq!(status, StatusCode::OK, "trigger {job_id}: {body}");
        body["executionId"].as_str().unwrap().to_owned()
    }

    async fn job(&self, job_id: &str) -> Value {
        let (status, body) = self.get(&format!("/jobs/{job_id}")).await;
        assert_eq!(status, StatusCode::OK, "GET /jobs/{job_id}: {body}");
        body
    }

    async fn status_of(&self, job_id: &str) -> StatusCode {
        self.get(&format!("/jobs/{job_id}")).await.0
    }
}

fn ok() -> Value {
    json!({"resp_code": 200, "resp_msg": null})
}

/// Asserts an error envelope: the status, a matching `resp_code`, and a message starting with `prefix`.
#[track_caller]
fn assert_error(answer: &(StatusCode, Value), status: u16, prefix: &str) {
    let (got, body) = answer;
    assert_eq!(got.as_u16(), status, "status of {body}");
    assert_eq!(body["resp_code"], json!(status), "resp_code of {body}");
    let message = body["resp_msg"]
        .as_str()
        .unwrap_or_else(|| panic!("resp_msg of {body}"));
    assert!(
        message.starts_with(prefix),
        "resp_msg {message:?} should start with {prefix:?}"
    );
}

/// Seed 002's example job (the "timer 列表" entry), URLs pointed at a closed local port.
fn seed_job() -> Value {
    serde_json::from_str(include_str!("fixtures/seed002-job.json")).unwrap()
}

/// The seed job under another id.
fn seed_job_as(job_id: &str) -> Value {
    let mut body = seed_job();
    body["jobId"] = json!(job_id);
    body
}

/// A job that only runs when triggered.
fn triggered_job(creator: &str) -> Value {
    json!({
        "jobName": "on demand",
        "creator": creator,
        "creatorName": "tests",
        "request": [{"url": "http://127.0.0.1:9/run/${jobId}", "method": "POST"}],
        "timer": {"period": "external"}
    })
}

fn child_job(parent: &str, parent_execution: Option<u64>) -> Value {
    let mut body = triggered_job("001");
    body["parentJob"] = json!(parent);
    if let Some(n) = parent_execution {
        body["parentJobExecution"] = json!(n);
    }
    body
}

// ---------------------------------------------------------------------------------------------
// Jobs: create, read, pause, update, delete

#[tokio::test(flavor = "multi_thread")]
async fn create_returns_the_envelope_and_get_returns_the_job_as_written() {
    let api = Api::new();
    let answer = api.post("/jobs/20220125", &seed_job()).await;
    assert_eq!(answer, (StatusCode::OK, ok()));

    let job = api.job("20220125").await;
    let written = seed_job();
    for (key, value) in written.as_object().unwrap() {
        assert_eq!(&job[key], value, "GET returns {key} as written");
    }
    assert_eq!(job["active"], json!(1));
    assert_eq!(job["state"], json!("active"));
    assert_eq!(job["createdAt"], json!(NOW));
    assert_eq!(job["updatedAt"], json!(NOW));

    let again = api.post("/jobs/20220125", &seed_job()).await;
    assert_error(&again, 409, "job 20220125 already exists");
    assert_error(&api.get("/jobs/unknown").await, 404, "job unknown");
    assert_error(&api.get("/jobs/bad~id").await, 400, "jobId:");
}

#[tokio::test(flavor = "multi_thread")]
async fn create_names_the_invalid_field() {
    let api = Api::new();
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "jobName:",
            Box::new(|b| drop(b.as_object_mut().unwrap().remove("jobName"))),
        ),
        ("jobName:", Box::new(|b| b["jobName"] = json!(7))),
        ("creator:", Box::new(|b| b["creator"] = json!(""))),
        (
            "request[0].url:",
            Box::new(|b| b["request"][0]["url"] = json!("ftp://x/y")),
        ),
        (
            "request[1].method:",
            Box::new(|b| b["request"][1]["method"] = json!("FETCH")),
        ),
        (
            "timer.period:",
            Box::new(|b| b["timer"]["period"] = json!("0 0/5 * * * * * *")),
        ),
        (
            "timer.ttl:",
            Box::new(|b| b["timer"]["ttl"] = json!("forever")),
        ),
        (
            "schedule.cron[0]:",
            Box::new(|b| {
                let obj = b.as_object_mut().unwrap();
                obj.remove("timer");
                obj.insert("schedule".into(), json!({"cron": ["61 * * * *"]}));
            }),
        ),
        (
            "schedule:",
            Box::new(|b| b["schedule"] = json!({"cron": ["* * * * *"]})),
        ),
        (
            "retry[2].backoffRate:",
            Box::new(|b| b["retry"][2]["backoffRate"] = json!(0.5)),
        ),
        (
            "timeoutSeconds:",
            Box::new(|b| b["timeoutSeconds"] = json!(0)),
        ),
        ("qos:", Box::new(|b| b["qos"] = json!(2))),
        ("active:", Box::new(|b| b["active"] = json!(3))),
        ("jobId:", Box::new(|b| b["jobId"] = json!("someone-else"))),
        (
            "parentJobExecution:",
            Box::new(|b| b["parentJobExecution"] = json!(1)),
        ),
        (
            "unknownField:",
            Box::new(|b| b["unknownField"] = json!(true)),
        ),
    ];
    for (prefix, mutate) in cases {
        let mut body = seed_job();
        mutate(&mut body);
        let answer = api.post("/jobs/20220125", &body).await;
        assert_error(&answer, 400, prefix);
    }
    assert_error(&api.post("/jobs/a~b", &seed_job()).await, 400, "jobId:");
    assert_error(&api.post("/jobs/x", &json!([1, 2])).await, 400, "");
    assert_eq!(
        api.status_of("20220125").await,
        StatusCode::NOT_FOUND,
        "no invalid create stored a job"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn put_active_pauses_and_resumes() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;

    assert_eq!(
        api.put("/jobs/20220125?active=0", None).await,
        (StatusCode::OK, ok())
    );
    let job = api.job("20220125").await;
    assert_eq!(
        (&job["active"], &job["state"]),
        (&json!(0), &json!("paused"))
    );
    let describe = api.get("/jobs/20220125/describe").await.1;
    assert_eq!(
        describe["info"]["futureActionTimes"],
        json!([]),
        "a paused job has no future fires"
    );

    assert_eq!(
        api.put("/jobs/20220125?active=1", None).await,
        (StatusCode::OK, ok())
    );
    let job = api.job("20220125").await;
    assert_eq!(
        (&job["active"], &job["state"]),
        (&json!(1), &json!("active"))
    );

    assert_error(
        &api.put("/jobs/20220125?active=2", None).await,
        400,
        "active:",
    );
    assert_error(
        &api.put("/jobs/20220125?active=yes", None).await,
        400,
        "active:",
    );
    assert_error(&api.put("/jobs/20220125", None).await, 400, "active:");
    assert_error(&api.put("/jobs/nope?active=0", None).await, 404, "job nope");
}

#[tokio::test(flavor = "multi_thread")]
async fn update_replaces_the_definition_and_runs_it() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;
    let mut changed = seed_job();
    changed["jobName"] = json!("renamed");
    let (status, body) = api.post("/jobs/20220125/update", &changed).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["resp_code"], &body["resp_msg"]),
        (&json!(200), &Value::Null)
    );
    let execution_id = body["executionId"].as_str().unwrap();
    assert!(execution_id.starts_with("20220125~"), "{execution_id}");

    assert_eq!(api.job("20220125").await["jobName"], json!("renamed"));
    let (status, execution) = api.get(&format!("/executions/{execution_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(execution["state"], json!("Enqueued"));
    assert_eq!(execution["executeNumber"], json!(1));

    assert_error(
        &api.post("/jobs/ghost/update", &seed_job_as("ghost")).await,
        404,
        "job ghost",
    );
    let mut invalid = seed_job();
    invalid["timer"]["period"] = json!("every now and then");
    assert_error(
        &api.post("/jobs/20220125/update", &invalid).await,
        400,
        "timer.period:",
    );
    assert_eq!(
        api.job("20220125").await["jobName"],
        json!("renamed"),
        "a refused update changes nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_by_both_paths() {
    let api = Api::new();
    api.create("one", &seed_job_as("one")).await;
    api.create("two", &seed_job_as("two")).await;

    assert_eq!(api.delete("/job/one").await, (StatusCode::OK, ok()));
    assert_eq!(api.status_of("one").await, StatusCode::NOT_FOUND);
    assert_eq!(api.delete("/jobs/two").await, (StatusCode::OK, ok()));
    assert_eq!(api.status_of("two").await, StatusCode::NOT_FOUND);

    assert_error(&api.delete("/job/one").await, 404, "job one");
    assert_error(&api.delete("/jobs/two").await, 404, "job two");
    // The id can be used again.
    api.create("one", &seed_job_as("one")).await;
}

// ---------------------------------------------------------------------------------------------
// Triggers, feedback, pause notes, backfill, describe

#[tokio::test(flavor = "multi_thread")]
async fn trigger_stores_arguments_and_honours_idempotency_keys() {
    let api = Api::new();
    api.create("ondemand", &triggered_job("001")).await;

    let (status, body) = api
        .post(
            "/jobs/ondemand/trigger",
            &json!({"date": "2024-03-10", "n": 3}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["resp_code"], &body["executeNumber"]),
        (&json!(200), &json!(1))
    );
    let id = body["executionId"].as_str().unwrap();
    let execution = api.get(&format!("/executions/{id}")).await.1;
    assert_eq!(
        execution["arguments"],
        json!({"date": "2024-03-10", "n": 3})
    );
    assert_eq!(execution["jobId"], json!("ondemand"));
    assert_eq!(execution["state"], json!("Enqueued"));
    assert_eq!(execution["scheduledTime"], json!(NOW));

    let keyed = || {
        Request::post("/jobs/ondemand/trigger")
            .header("Idempotency-Key", "order-42")
            .body(Body::from(r#"{"order": 42}"#))
            .unwrap()
    };
    let (first_status, first) = api.send(keyed()).await;
    let (second_status, second) = api.send(keyed()).await;
    assert_eq!(
        (first_status, second_status),
        (StatusCode::OK, StatusCode::OK)
    );
    assert_eq!(first["executionId"], json!("ondemand~t~order-42"));
    assert_eq!(
        first, second,
        "the same Idempotency-Key answers with the same execution"
    );
    assert_eq!(first["executeNumber"], json!(2));

    // An empty body is no arguments.
    let (status, body) = api.call(Method::POST, "/jobs/ondemand/trigger", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["executionId"].as_str().unwrap();
    assert_eq!(
        api.get(&format!("/executions/{id}")).await.1["arguments"],
        json!({})
    );

    let listed = api.get("/jobs/ondemand/executions").await.1;
    assert_eq!(
        listed["executions"].as_array().unwrap().len(),
        3,
        "three executions, not four"
    );

    for body in [json!([1, 2]), json!("text"), json!(7)] {
        assert_error(
            &api.post("/jobs/ondemand/trigger", &body).await,
            400,
            "body:",
        );
    }
    let bad_key = Request::post("/jobs/ondemand/trigger")
        .header("Idempotency-Key", "not a valid key!")
        .body(Body::from("{}"))
        .unwrap();
    assert_error(&api.send(bad_key).await, 400, "Idempotency-Key");
    assert_error(
        &api.post("/jobs/ghost/trigger", &json!({})).await,
        404,
        "job ghost",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_triggers_each_get_an_execution() {
    let api = Arc::new(Api::new());
    api.create("ondemand", &triggered_job("001")).await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let api = Arc::clone(&api);
            tokio::spawn(async move {
                let mut request = Request::post("/jobs/ondemand/trigger");
                if i % 2 == 0 {
                    request = request.header("Idempotency-Key", "same-request");
                }
                api.send(request.body(Body::from("{}")).unwrap()).await
            })
        })
        .collect();
    let mut keyed = std::collections::BTreeSet::new();
    let mut numbers = std::collections::BTreeSet::new();
    for (i, task) in tasks.into_iter().enumerate() {
        let (status, body) = task.await.unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        if i % 2 == 0 {
            keyed.insert(body["executionId"].as_str().unwrap().to_owned());
        }
        numbers.insert(body["executeNumber"].as_u64().unwrap());
    }
    assert_eq!(
        keyed.len(),
        1,
        "one execution for one Idempotency-Key: {keyed:?}"
    );
    assert_eq!(
        numbers.len(),
        11,
        "ten plain triggers and one keyed: {numbers:?}"
    );
    let listed = api.get("/jobs/ondemand/executions").await.1;
    assert_eq!(listed["executions"].as_array().unwrap().len(), 11);
}

/// Without a token that verifies, the feedback route answers the same 401 whatever the job, the
/// run or the execution id: it never says which jobs exist (404) or which runs wait (409).
#[tokio::test(flavor = "multi_thread")]
async fn feedback_without_a_verifying_token_is_always_the_same_401() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;
    let execution = api.trigger("20220125", &json!({})).await;
    let secret = AppConfig::default().signing_secret;
    let valid = sundial_core::signing::feedback_token(&secret, &execution);
    let other = sundial_core::signing::feedback_token(&secret, "20220125~t~other");
    let report = json!({"status": "succeed", "progress": "100%"});
    let unverified = [
        "/jobs/ghost/feedback/1".to_string(),
        "/jobs/20220125/feedback/1".to_string(),
        "/jobs/20220125/feedback/7".to_string(),
        format!("/jobs/20220125/feedback/1?token={valid}"),
        format!("/jobs/20220125/feedback/1?executionId={execution}"),
        format!("/jobs/20220125/feedback/1?executionId={execution}&token=00"),
        format!("/jobs/20220125/feedback/1?executionId={execution}&token={other}"),
        format!("/jobs/ghost/feedback/1?executionId={execution}&token={other}"),
        format!("/jobs/ghost/feedback/1?executionId=ghost~t~x&token={valid}"),
    ];
    let mut answers = Vec::new();
    for uri in &unverified {
        let answer = api.post(uri, &report).await;
        assert_error(&answer, 401, "token:");
        answers.push(answer);
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");

    // With a token that verifies, the caller learns the run's state.
    assert_error(
        &api.post(
            &format!("/jobs/20220125/feedback/1?executionId={execution}&token={valid}"),
            &report,
        )
        .await,
        409,
        "no execution of job 20220125 is waiting for feedback",
    );
    assert_error(
        &api.post(
            &format!("/jobs/20220125/feedback/2?executionId={execution}&token={valid}"),
            &report,
        )
        .await,
        404,
        "execution ",
    );
    assert_error(
        &api.post("/jobs/20220125/feedback/x", &json!({})).await,
        400,
        "requestCounts:",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn pause_and_unpause_keep_their_notes() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;

    let answer = api
        .post(
            "/jobs/20220125/pause",
            &json!({"notes": "database maintenance"}),
        )
        .await;
    assert_eq!(answer, (StatusCode::OK, ok()));
    let job = api.job("20220125").await;
    assert_eq!(job["active"], json!(0));
    assert_eq!(job["pausedNotes"], json!("database maintenance"));

    let answer = api
        .post(
            "/jobs/20220125/unpause",
            &json!({"notes": "maintenance done"}),
        )
        .await;
    assert_eq!(answer, (StatusCode::OK, ok()));
    let job = api.job("20220125").await;
    assert_eq!(job["active"], json!(1));
    assert_eq!(job["pausedNotes"], json!("maintenance done"));

    // Without a body: pause says "paused", unpause clears the note.
    assert_eq!(
        api.call(Method::POST, "/jobs/20220125/pause", None).await,
        (StatusCode::OK, ok())
    );
    assert_eq!(api.job("20220125").await["pausedNotes"], json!("paused"));
    assert_eq!(
        api.call(Method::POST, "/jobs/20220125/unpause", None).await,
        (StatusCode::OK, ok())
    );
    assert_eq!(api.job("20220125").await["pausedNotes"], Value::Null);

    assert_error(
        &api.post("/jobs/20220125/pause", &json!({"notes": 5})).await,
        400,
        "notes:",
    );
    assert_error(
        &api.post("/jobs/20220125/unpause", &json!([1])).await,
        400,
        "body:",
    );
    assert_error(
        &api.post("/jobs/ghost/pause", &json!({})).await,
        404,
        "job ghost",
    );
    assert_error(
        &api.post("/jobs/ghost/unpause", &json!({})).await,
        404,
        "job ghost",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn backfill_counts_the_fires_in_range() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;

    // Every five minutes: 13:00, 13:05, … 14:00 inclusive.
    let range =
        json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": "2024-03-10T14:00:00Z"});
    let (status, body) = api.post("/jobs/20220125/backfill", &range).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "count": 13})
    );

    let range = json!({"startTime": "2024-03-10T13:00:01Z", "endTime": "2024-03-10T13:04:59Z", "overlap": "AllowAll"});
    assert_eq!(
        api.post("/jobs/20220125/backfill", &range).await.1["count"],
        json!(0)
    );
    // Bounds are inclusive to the millisecond: 13:00:00 is before a start of 13:00:00.500.
    let range = json!({"startTime": "2024-03-10T13:00:00.500Z", "endTime": "2024-03-10T13:10:00Z"});
    assert_eq!(
        api.post("/jobs/20220125/backfill", &range).await.1["count"],
        json!(2)
    );
    let describe = api.get("/jobs/20220125/describe").await.1;
    assert_eq!(describe["info"]["pendingBackfills"], json!(3));

    let bad = [
        (
            json!({"startTime": "yesterday", "endTime": "2024-03-10T14:00:00Z"}),
            "startTime:",
        ),
        (json!({"endTime": "2024-03-10T14:00:00Z"}), "startTime:"),
        (
            json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": 5}),
            "endTime:",
        ),
        (
            json!({"startTime": "2024-03-10T14:00:00Z", "endTime": "2024-03-10T13:00:00+00:00"}),
            "endTime:",
        ),
        (
            json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": "2024-03-10T14:00:00Z", "overlap": "Sometimes"}),
            "overlap:",
        ),
        (
            json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": "2024-03-10T14:00:00Z", "extra": 1}),
            "extra:",
        ),
        (json!([1]), "body:"),
    ];
    for (body, prefix) in bad {
        assert_error(
            &api.post("/jobs/20220125/backfill", &body).await,
            400,
            prefix,
        );
    }

    api.create("ondemand", &triggered_job("001")).await;
    let range =
        json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": "2024-03-10T14:00:00Z"});
    assert_error(
        &api.post("/jobs/ondemand/backfill", &range).await,
        409,
        "job ondemand has no schedule",
    );
    assert_error(
        &api.post("/jobs/ghost/backfill", &range).await,
        404,
        "job ghost",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn describe_shows_the_next_ten_fires_and_the_counters() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;

    let (status, body) = api.get("/jobs/20220125/describe").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["job"],
        api.job("20220125").await,
        "describe's job is GET's job"
    );
    let info = &body["info"];
    // "0 0/5 * * * ?" from 12:34:56, in the schedule's zone (UTC, written +00:00).
    let expected: Vec<String> = (0..10)
        .map(|i| {
            let minutes = 35 + 5 * i;
            format!(
                "2024-03-10T{:02}:{:02}:00+00:00",
                12 + minutes / 60,
                minutes % 60
            )
        })
        .collect();
    assert_eq!(info["futureActionTimes"], json!(expected));
    assert_eq!(info["recentActions"], json!([]));
    assert_eq!(info["runningExecutions"], json!([]));
    for counter in [
        "actionCount",
        "overlapSkipped",
        "missedCatchupWindow",
        "bufferDropped",
        "bufferSize",
    ] {
        assert_eq!(info[counter], json!(0), "{counter}");
    }

    let id = api.trigger("20220125", &json!({})).await;
    let info = api.get("/jobs/20220125/describe").await.1["info"].clone();
    assert_eq!(
        info["recentActions"],
        json!([{"scheduledTime": NOW, "actualTime": null, "executionId": id, "state": "Enqueued"}])
    );
    assert_eq!(
        info["runningExecutions"],
        json!([{"executionId": id, "state": "Enqueued", "startedAt": null}])
    );

    // Seed 002's create table types `timer` as a string: JSON text of the object works the same.
    let mut texted = seed_job_as("texted");
    texted["timer"] = json!(seed_job()["timer"].to_string());
    api.create("texted", &texted).await;
    let info = api.get("/jobs/texted/describe").await.1["info"].clone();
    assert_eq!(info["futureActionTimes"], json!(expected));
    assert_eq!(
        api.job("texted").await["timer"],
        texted["timer"],
        "kept as written"
    );

    // A job that may run only twice more shows two fire times.
    let mut limited = seed_job_as("limited");
    limited["remainingActions"] = json!(2);
    api.create("limited", &limited).await;
    let info = api.get("/jobs/limited/describe").await.1["info"].clone();
    assert_eq!(info["futureActionTimes"], json!(expected[..2]));
    assert_eq!(info["remainingActions"], json!(2));

    api.create("ondemand", &triggered_job("001")).await;
    let info = api.get("/jobs/ondemand/describe").await.1["info"].clone();
    assert_eq!(
        info["futureActionTimes"],
        json!([]),
        "a triggered-only job never fires by itself"
    );

    assert_error(&api.get("/jobs/ghost/describe").await, 404, "job ghost");
}

// ---------------------------------------------------------------------------------------------
// Listings

#[tokio::test(flavor = "multi_thread")]
async fn job_executions_are_newest_first_and_paginated() {
    let api = Api::new();
    api.create("ondemand", &triggered_job("001")).await;
    for n in 1..=5 {
        api.trigger("ondemand", &json!({"n": n})).await;
    }
    let mut numbers = Vec::new();
    let mut uri = "/jobs/ondemand/executions?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let (status, body) = api.get(&uri).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        pages += 1;
        for execution in body["executions"].as_array().unwrap() {
            numbers.push(execution["executeNumber"].as_u64().unwrap());
            assert!(
                execution.get("events").is_none(),
                "lists leave the event log out"
            );
            assert_eq!(execution["arguments"]["n"], execution["executeNumber"]);
        }
        match body["nextCursor"].as_str() {
            Some(cursor) => uri = format!("/jobs/ondemand/executions?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(numbers, [5, 4, 3, 2, 1]);
    assert_eq!(pages, 3);

    let all = api.get("/jobs/ondemand/executions").await.1;
    assert_eq!(all["executions"].as_array().unwrap().len(), 5);
    assert_eq!(all["nextCursor"], Value::Null);
    assert_error(
        &api.get("/jobs/ondemand/executions?cursor=bogus").await,
        400,
        "cursor:",
    );
    assert_error(
        &api.get("/jobs/ondemand/executions?limit=0").await,
        400,
        "limit:",
    );
    assert_error(
        &api.get("/jobs/ondemand/executions?limit=1001").await,
        400,
        "limit:",
    );
    let none = api.get("/jobs/never-created/executions").await;
    assert_eq!(
        none,
        (
            StatusCode::OK,
            json!({"executions": [], "nextCursor": null})
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn list_jobs_filters_and_paginates() {
    let api = Api::new();
    api.create("p", &triggered_job("alice")).await;
    api.create("a1", &triggered_job("alice")).await;
    api.create("b1", &triggered_job("bob")).await;
    api.create("b2", &triggered_job("bob")).await;
    let mut child = child_job("p", None);
    child["creator"] = json!("bob");
    api.create("c1", &child).await;
    api.create("c2", &child_job("p", Some(1))).await;
    api.put("/jobs/b2?active=0", None).await;
    api.post("/jobs/c2/pause", &json!({"notes": "off"})).await;

    let ids = |body: &Value| -> Vec<String> {
        body["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["jobId"].as_str().unwrap().to_owned())
            .collect()
    };
    let cases = [
        ("/jobs", vec!["a1", "b1", "b2", "c1", "c2", "p"]),
        ("/jobs?state=paused", vec!["b2", "c2"]),
        ("/jobs?state=active", vec!["a1", "b1", "c1", "p"]),
        ("/jobs?creator=bob", vec!["b1", "b2", "c1"]),
        ("/jobs?parentJob=p", vec!["c1", "c2"]),
        ("/jobs?parentJob=p&creator=bob", vec!["c1"]),
        ("/jobs?parentJob=p&state=paused", vec!["c2"]),
        ("/jobs?creator=nobody", vec![]),
    ];
    for (uri, want) in cases {
        let (status, body) = api.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert_eq!(ids(&body), want, "{uri}");
        assert_eq!(body["nextCursor"], Value::Null, "{uri}");
    }
    let paused = api.get("/jobs?state=paused").await.1;
    assert_eq!(
        paused["jobs"][1]["pausedNotes"],
        json!("off"),
        "listed jobs are GET's jobs"
    );

    let mut seen = Vec::new();
    let mut uri = "/jobs?limit=2&state=active".to_owned();
    loop {
        let body = api.get(&uri).await.1;
        let page = ids(&body);
        assert!(page.len() <= 2);
        seen.extend(page);
        match body["nextCursor"].as_str() {
            Some(cursor) => uri = format!("/jobs?limit=2&state=active&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, ["a1", "b1", "c1", "p"]);

    assert_error(&api.get("/jobs?state=deleted").await, 400, "state:");
    assert_error(&api.get("/jobs?owner=alice").await, 400, "owner:");
    assert_error(&api.get("/jobs?cursor=nope").await, 400, "cursor:");
    assert_error(&api.get("/jobs?limit=many").await, 400, "limit:");
}

// ---------------------------------------------------------------------------------------------
// Executions

#[tokio::test(flavor = "multi_thread")]
async fn get_execution_has_its_event_log() {
    let api = Api::new();
    api.create("ondemand", &triggered_job("001")).await;
    let id = api.trigger("ondemand", &json!({"k": "v"})).await;
    let (status, execution) = api.get(&format!("/executions/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{execution}");
    for field in [
        "executionId",
        "jobId",
        "executeNumber",
        "state",
        "scheduledTime",
        "scheduledById",
        "startedAt",
        "finishedAt",
        "attempts",
        "progress",
        "error",
        "result",
    ] {
        assert!(
            execution.get(field).is_some(),
            "execution has {field}: {execution}"
        );
    }
    assert_eq!(execution["executionId"], json!(id));
    assert_eq!(execution["attempts"], json!(0));
    let events = execution["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["to"], json!("Enqueued"));
    assert_eq!(events[0]["from"], Value::Null);
    assert_eq!(events[0]["at"], json!(NOW));
    assert!(events[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("created by trigger:"));

    assert_error(
        &api.get("/executions/ondemand~t~nope").await,
        404,
        "execution ondemand~t~nope",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_and_terminate_follow_the_state_graph() {
    let api = Api::new();
    api.create("ondemand", &triggered_job("001")).await;
    let first = api.trigger("ondemand", &json!({})).await;
    let second = api.trigger("ondemand", &json!({})).await;

    let (status, body) = api
        .post(
            &format!("/executions/{first}/cancel"),
            &json!({"reason": "not needed"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "state": "Cancelled"})
    );
    let execution = api.get(&format!("/executions/{first}")).await.1;
    assert_eq!(execution["state"], json!("Cancelled"));
    assert_eq!(execution["finishedAt"], json!(NOW));
    let last = execution["events"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (&last["from"], &last["to"], &last["message"]),
        (
            &json!("Enqueued"),
            &json!("Cancelled"),
            &json!("not needed")
        )
    );

    let again = api
        .post(&format!("/executions/{first}/cancel"), &json!({}))
        .await;
    assert_error(
        &again,
        409,
        &format!("execution {first} is Cancelled and cannot become Cancelled"),
    );

    let terminate = api
        .call(
            Method::POST,
            &format!("/executions/{second}/terminate"),
            None,
        )
        .await;
    assert_error(
        &terminate,
        409,
        &format!("execution {second} is Enqueued and cannot become Terminated"),
    );
    assert_eq!(
        api.get(&format!("/executions/{second}")).await.1["state"],
        json!("Enqueued")
    );

    assert_error(
        &api.post(
            &format!("/executions/{second}/cancel"),
            &json!({"reason": 1}),
        )
        .await,
        400,
        "reason:",
    );
    assert_error(
        &api.post("/executions/nope~t~x/cancel", &json!({})).await,
        404,
        "execution nope~t~x",
    );
    assert_error(
        &api.post("/executions/nope~t~x/terminate", &json!({})).await,
        404,
        "execution nope~t~x",
    );

    // Once the execution engine has it Processing, terminate is allowed.
    let mut record = api
        .app
        .store()
        .get_execution(&second)
        .await
        .unwrap()
        .unwrap();
    record.state = "Processing".to_owned();
    record.document["state"] = json!("Processing");
    api.app.store().update_execution(&record).await.unwrap();
    let (status, body) = api
        .post(
            &format!("/executions/{second}/terminate"),
            &json!({"reason": "stuck"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["state"], json!("Terminated"));
    let execution = api.get(&format!("/executions/{second}")).await.1;
    assert_eq!(
        (&execution["state"], &execution["finishedAt"]),
        (&json!("Terminated"), &json!(NOW))
    );
    assert_error(
        &api.post(&format!("/executions/{second}/cancel"), &json!({}))
            .await,
        409,
        "",
    );

    let stats = api.get("/stats").await.1;
    assert_eq!(
        stats["executions"],
        json!({"Cancelled": 1, "Terminated": 1})
    );
}

// ---------------------------------------------------------------------------------------------
// Preview, stats, health

#[tokio::test(flavor = "multi_thread")]
async fn preview_schedules_and_timers() {
    let api = Api::new();
    let (status, body) = api
        .post(
            "/specs/preview",
            &json!({"schedule": {"cron": ["0 12 * * *"]}, "from": "2024-01-01T00:00:00Z", "count": 3}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["times"],
        json!([
            "2024-01-01T12:00:00+00:00",
            "2024-01-02T12:00:00+00:00",
            "2024-01-03T12:00:00+00:00"
        ])
    );
    assert!(
        body["schedule"].is_object(),
        "the canonical schedule: {body}"
    );
    assert!(body.get("triggeredOnly").is_none());

    // The canonical form previews the same times.
    let canonical = body["schedule"].clone();
    let again = api
        .post(
            "/specs/preview",
            &json!({"schedule": canonical, "from": "2024-01-01T00:00:00Z", "count": 3}),
        )
        .await;
    assert_eq!(again.1["times"], body["times"]);

    // Without `from`, the clock's now; 10 times by default.
    let body = api
        .post(
            "/specs/preview",
            &json!({"schedule": {"cron": ["0 * * * *"]}}),
        )
        .await
        .1;
    let times = body["times"].as_array().unwrap();
    assert_eq!(times.len(), 10);
    assert_eq!(times[0], json!("2024-03-10T13:00:00+00:00"));

    let timer = json!({"timer": {"dueTime": "10s", "period": "R3/PT5S"}, "from": "2024-01-01T00:00:00Z", "count": 5});
    let (status, body) = api.post("/specs/preview", &timer).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["times"],
        json!([
            "2024-01-01T00:00:10+00:00",
            "2024-01-01T00:00:15+00:00",
            "2024-01-01T00:00:20+00:00"
        ])
    );

    let seed_timer = json!({"timer": seed_job()["timer"].clone(), "from": NOW, "count": 2});
    assert_eq!(
        api.post("/specs/preview", &seed_timer).await.1["times"],
        json!(["2024-03-10T12:35:00+00:00", "2024-03-10T12:40:00+00:00"])
    );

    let external = api
        .post("/specs/preview", &json!({"timer": {"period": "external"}}))
        .await;
    assert_eq!(
        external,
        (
            StatusCode::OK,
            json!({"times": [], "schedule": null, "triggeredOnly": true})
        )
    );

    let bad = [
        (json!({"from": "2024-01-01T00:00:00Z"}), "schedule:"),
        (
            json!({"schedule": {"cron": ["0 25 * * *"]}}),
            "schedule.cron[0]:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "timer": {"period": "external"}}),
            "schedule:",
        ),
        (json!({"timer": {"period": "soon"}}), "timer.period:"),
        (
            json!({"timer": {"dueTime": "1s", "period": "5s", "every": "x"}}),
            "timer.every:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "count": 0}),
            "count:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "count": 1001}),
            "count:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "from": "noon"}),
            "from:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "jobId": 5}),
            "jobId:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "to": "x"}),
            "to:",
        ),
        (json!(["0 12 * * *"]), "body:"),
    ];
    for (body, prefix) in bad {
        assert_error(&api.post("/specs/preview", &body).await, 400, prefix);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_and_health() {
    let api = Api::new();
    assert_eq!(
        api.get("/stats").await,
        (
            StatusCode::OK,
            json!({"jobs": {}, "executions": {}, "debugMode": false})
        )
    );
    api.create("one", &seed_job_as("one")).await;
    api.create("two", &triggered_job("001")).await;
    api.put("/jobs/one?active=0", None).await;
    api.trigger("two", &json!({})).await;
    api.trigger("two", &json!({})).await;
    assert_eq!(
        api.get("/stats").await,
        (
            StatusCode::OK,
            json!({"jobs": {"active": 1, "paused": 1}, "executions": {"Enqueued": 2}, "debugMode": false})
        )
    );
    assert_eq!(
        api.get("/health").await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
}

// ---------------------------------------------------------------------------------------------
// Declarative timers

fn timer_entry(job_id: &str, name: &str) -> Value {
    let mut body = seed_job_as(job_id);
    body["jobName"] = json!(name);
    body
}

async fn service_jobs(api: &Api, service: &str) -> Vec<(String, String)> {
    let body = api.get(&format!("/jobs?service={service}")).await.1;
    body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobId"].as_str().unwrap().to_owned(),
                j["jobName"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn timers_are_reconciled_per_service() {
    let api = Api::new();
    let list = json!({"timer": [timer_entry("t-a", "A"), timer_entry("t-b", "B")]});
    let (status, body) = api.put("/services/jobswork/timers", Some(&list)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "created": ["t-a", "t-b"], "updated": [], "unchanged": [], "removed": []})
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-a", "A"), ("t-b", "B")])
    );

    let again = api.put("/services/jobswork/timers", Some(&list)).await.1;
    assert_eq!(
        again,
        json!({"resp_code": 200, "resp_msg": null, "created": [], "updated": [], "unchanged": ["t-a", "t-b"], "removed": []}),
        "a second identical call changes nothing"
    );

    // A bare array is accepted too: B changes, A goes, C comes.
    let list = json!([timer_entry("t-b", "B2"), timer_entry("t-c", "C")]);
    let body = api.put("/services/jobswork/timers", Some(&list)).await.1;
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "created": ["t-c"], "updated": ["t-b"], "unchanged": [], "removed": ["t-a"]})
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-b", "B2"), ("t-c", "C")])
    );
    assert_eq!(api.status_of("t-a").await, StatusCode::NOT_FOUND);
    let body = api.put("/services/jobswork/timers", Some(&list)).await.1;
    assert_eq!(body["unchanged"], json!(["t-b", "t-c"]));

    // One invalid entry: nothing changes.
    let mut broken = timer_entry("t-d", "D");
    broken["request"][0]["url"] = json!("gopher://x");
    let list = json!({"timer": [timer_entry("t-b", "B3"), broken]});
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        400,
        "timer[1].request[0].url:",
    );
    let list = json!({"timer": [timer_entry("t-b", "B3"), {"jobName": "no id"}]});
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        400,
        "timer[1].jobId:",
    );
    let list = json!([timer_entry("t-b", "B3"), timer_entry("t-b", "B4")]);
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        400,
        "timer[1].jobId:",
    );
    assert_error(
        &api.put("/services/jobswork/timers", Some(&json!({"timers": 5})))
            .await,
        400,
        "timer:",
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-b", "B2"), ("t-c", "C")])
    );

    // A job created by hand, or by another service, is not this service's to change.
    // (`z-manual` sorts last, so the entries before it would be applied first.)
    api.create("z-manual", &seed_job_as("z-manual")).await;
    let list = json!([
        timer_entry("t-b", "B5"),
        timer_entry("z-manual", "taken"),
        timer_entry("t-0", "new")
    ]);
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        409,
        "job z-manual",
    );
    let other = json!([timer_entry("t-c", "mine now")]);
    assert_error(
        &api.put("/services/other/timers", Some(&other)).await,
        409,
        "job t-c",
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-b", "B2"), ("t-c", "C")]),
        "a refused reconcile changes nothing"
    );
    assert_eq!(api.status_of("t-0").await, StatusCode::NOT_FOUND);
    assert_eq!(api.job("z-manual").await["jobName"], json!("job测试2"));
    assert!(service_jobs(&api, "other").await.is_empty());

    // An empty list removes every job of the service.
    let body = api
        .put("/services/jobswork/timers", Some(&json!([])))
        .await
        .1;
    assert_eq!(body["removed"], json!(["t-b", "t-c"]));
    assert_eq!(api.status_of("z-manual").await, StatusCode::OK);
}

// ---------------------------------------------------------------------------------------------
// Seed 002's /main routes

#[tokio::test(flavor = "multi_thread")]
async fn clean_keeps_the_newest_and_purges_deleted_jobs() {
    let api = Api::new();
    api.create("kept", &triggered_job("001")).await;
    api.create("gone", &triggered_job("001")).await;
    for _ in 0..5 {
        api.trigger("kept", &json!({})).await;
    }
    for _ in 0..3 {
        api.trigger("gone", &json!({})).await;
    }
    api.delete("/jobs/gone").await;

    let (status, body) = api
        .delete("/main/schedule/clean?cleanDestroyJob=false&retainExecutionCount=2")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "executionsDeleted": 4, "destroyedJobsCleaned": 0})
    );
    let kept = api.get("/main/execution?jobId=kept").await.1;
    let numbers: Vec<_> = kept["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["executeNumber"].clone())
        .collect();
    assert_eq!(numbers, [json!(5), json!(4)]);
    assert_eq!(
        api.get("/main/execution?jobId=gone").await.1["executions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Defaults: cleanDestroyJob=true, retainExecutionCount=10.
    let body = api.delete("/main/schedule/clean").await.1;
    assert_eq!(body["executionsDeleted"], json!(2));
    assert_eq!(body["destroyedJobsCleaned"], json!(1));
    assert_eq!(
        api.get("/main/execution?jobId=gone").await.1["executions"],
        json!([])
    );
    assert_eq!(
        api.get("/main/execution?jobId=kept").await.1["executions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    assert_error(
        &api.delete("/main/schedule/clean?retainExecutionCount=-1")
            .await,
        400,
        "retainExecutionCount:",
    );
    assert_error(
        &api.delete("/main/schedule/clean?cleanDestroyJob=maybe")
            .await,
        400,
        "cleanDestroyJob:",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn main_execution_lists_a_jobs_executions_newest_first() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;
    let first = api.trigger("20220125", &json!({})).await;
    let second = api.trigger("20220125", &json!({})).await;
    let (status, body) = api.get("/main/execution?jobId=20220125").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ids: Vec<_> = body["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["executionId"].clone())
        .collect();
    assert_eq!(ids, [json!(second), json!(first)]);
    assert_error(&api.get("/main/execution").await, 400, "jobId:");
    assert_error(&api.get("/main/execution?jobId=a~b").await, 400, "jobId:");
}

#[tokio::test(flavor = "multi_thread")]
async fn child_job_logs_by_parent_execution() {
    let api = Api::new();
    api.create("parent", &triggered_job("001")).await;
    let parent_run = api.trigger("parent", &json!({})).await;
    api.create("child", &child_job("parent", Some(1))).await;
    api.create("other-child", &child_job("parent", Some(2)))
        .await;
    let child_runs = [
        api.trigger("child", &json!({"n": 1})).await,
        api.trigger("child", &json!({"n": 2})).await,
    ];
    api.trigger("other-child", &json!({})).await;

    let (status, body) = api
        .get("/main/getChildJobLogs?parentJobId=parent&execution=1")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let executions = body["executions"].as_array().unwrap();
    let mut ids: Vec<_> = executions
        .iter()
        .map(|e| e["executionId"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let mut want = child_runs.to_vec();
    want.sort();
    assert_eq!(ids, want);
    for execution in executions {
        assert_eq!(execution["parentJob"], json!("parent"));
        assert_eq!(execution["parentJobExecution"], json!(1));
        assert_eq!(
            execution["events"].as_array().unwrap().len(),
            1,
            "logs include the events"
        );
    }

    let by_id = api
        .get(&format!(
            "/main/getChildJobLogsByExecutionId?executionId={parent_run}"
        ))
        .await;
    assert_eq!(by_id, (StatusCode::OK, body.clone()));

    let two = api
        .get("/main/getChildJobLogs?parentJobId=parent&execution=2")
        .await
        .1;
    assert_eq!(two["executions"].as_array().unwrap().len(), 1);
    let none = api
        .get("/main/getChildJobLogs?parentJobId=parent&execution=3")
        .await
        .1;
    assert_eq!(none["executions"], json!([]));

    assert_error(
        &api.get("/main/getChildJobLogs?parentJobId=parent").await,
        400,
        "execution:",
    );
    assert_error(
        &api.get("/main/getChildJobLogs?execution=1").await,
        400,
        "parentJobId:",
    );
    assert_error(
        &api.get("/main/getChildJobLogs?parentJobId=parent&execution=one")
            .await,
        400,
        "execution:",
    );
    assert_error(
        &api.get("/main/getChildJobLogsByExecutionId").await,
        400,
        "executionId:",
    );
    assert_error(
        &api.get("/main/getChildJobLogsByExecutionId?executionId=parent~t~x")
            .await,
        404,
        "execution parent~t~x",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn destroy_by_parent_removes_the_whole_family() {
    let api = Api::new();
    api.create("root", &triggered_job("001")).await;
    api.create("kid-1", &child_job("root", None)).await;
    api.create("kid-2", &child_job("root", Some(1))).await;
    api.create("grandkid", &child_job("kid-1", None)).await;
    api.create("stranger", &triggered_job("001")).await;

    let (status, body) = api
        .delete("/main/destroyByParentJob?parentJobId=root")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["resp_code"], &body["resp_msg"]),
        (&json!(200), &Value::Null)
    );
    let mut deleted: Vec<_> = body["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_owned())
        .collect();
    deleted.sort();
    assert_eq!(deleted, ["grandkid", "kid-1", "kid-2", "root"]);
    for id in ["root", "kid-1", "kid-2", "grandkid"] {
        assert_eq!(api.status_of(id).await, StatusCode::NOT_FOUND, "{id}");
    }
    assert_eq!(api.status_of("stranger").await, StatusCode::OK);

    assert_error(
        &api.delete("/main/destroyByParentJob?parentJobId=root")
            .await,
        404,
        "job root",
    );
    assert_error(
        &api.delete("/main/destroyByParentJob").await,
        400,
        "parentJobId:",
    );
}

// ---------------------------------------------------------------------------------------------
// Errors and authentication

#[tokio::test(flavor = "multi_thread")]
async fn transport_errors_are_envelopes() {
    let api = Api::new();
    let malformed = Request::post("/jobs/x")
        .body(Body::from("{\"jobName\": "))
        .unwrap();
    assert_error(&api.send(malformed).await, 400, "body: invalid JSON");

    let huge = vec![b' '; MAX_BODY_BYTES + 1];
    let declared = Request::post("/jobs/x")
        .header(header::CONTENT_LENGTH, huge.len())
        .body(Body::from(huge.clone()))
        .unwrap();
    assert_error(&api.send(declared).await, 413, "body:");
    let streamed = Request::post("/jobs/x/trigger")
        .body(Body::from(huge))
        .unwrap();
    assert_error(&api.send(streamed).await, 413, "body:");
    // Exactly the limit is fine (whitespace around an object).
    let mut at_limit = vec![b' '; MAX_BODY_BYTES - 2];
    at_limit.extend_from_slice(b"{}");
    let request = Request::post("/specs/preview")
        .body(Body::from(at_limit))
        .unwrap();
    assert_error(&api.send(request).await, 400, "schedule:");

    // A path segment that is not UTF-8 once percent-decoded.
    assert_error(&api.get("/jobs/%FF").await, 400, "path:");
    assert_error(
        &api.post("/jobs/x/feedback/%C3%28", &json!({})).await,
        400,
        "path:",
    );
    assert_error(&api.get("/executions/%FE%FF").await, 400, "path:");

    assert_error(&api.get("/no/such/route").await, 404, "");
    assert_error(&api.get("/jobs/x/nothing").await, 404, "");
    assert_error(&api.call(Method::PATCH, "/jobs/x", None).await, 405, "");
    assert_error(&api.get("/jobs/x/trigger").await, 405, "");
    assert_error(&api.call(Method::POST, "/health", None).await, 405, "");
    assert_error(&api.get("/job/x").await, 405, "");
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_token_guards_everything_but_health() {
    let api = Api::with_token(Some("s3cret-token-0123"));
    let with = |auth: Option<&str>, uri: &str| {
        let mut request = Request::get(uri);
        if let Some(auth) = auth {
            request = request.header(header::AUTHORIZATION, auth);
        }
        request.body(Body::empty()).unwrap()
    };
    assert_error(&api.send(with(None, "/stats")).await, 401, "");
    assert_error(
        &api.send(with(Some("Bearer wrong"), "/stats")).await,
        401,
        "",
    );
    assert_error(
        &api.send(with(Some("Bearer s3cret-token-012"), "/stats"))
            .await,
        401,
        "",
    );
    assert_error(
        &api.send(with(Some("s3cret-token-0123"), "/stats")).await,
        401,
        "",
    );
    assert_error(
        &api.send(with(Some("Basic s3cret-token-0123"), "/stats"))
            .await,
        401,
        "",
    );
    assert_error(&api.send(with(None, "/jobs/x")).await, 401, "");
    assert_error(
        &api.send(with(Some("Bearers3cret-token-0123"), "/stats"))
            .await,
        401,
        "",
    );
    // RFC 7235: the scheme is case-insensitive, and one or more spaces follow it.
    for auth in [
        "Bearer s3cret-token-0123",
        "bearer s3cret-token-0123",
        "BEARER s3cret-token-0123",
        "bEaReR   s3cret-token-0123",
    ] {
        assert_eq!(
            api.send(with(Some(auth), "/stats")).await.0,
            StatusCode::OK,
            "{auth}"
        );
    }
    assert_eq!(
        api.send(with(None, "/health")).await,
        (StatusCode::OK, json!({"status": "ok"}))
    );

    let create = Request::post("/jobs/20220125")
        .header(header::AUTHORIZATION, "Bearer s3cret-token-0123")
        .body(Body::from(seed_job().to_string()))
        .unwrap();
    assert_eq!(api.send(create).await, (StatusCode::OK, ok()));
    let unauthorised = Request::post("/jobs/other")
        .body(Body::from(seed_job_as("other").to_string()))
        .unwrap();
    assert_error(&api.send(unauthorised).await, 401, "");
    assert!(
        api.app.store().get_job("other").await.unwrap().is_none(),
        "a refused request changes nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// Property: no JSON body makes a mutation route answer 5xx

/// xorshift64*: deterministic, so a failure names a seed that reproduces it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const KEYS: &[&str] = &[
    "jobId",
    "jobName",
    "jobDescription",
    "creator",
    "creatorName",
    "notification",
    "active",
    "timer",
    "request",
    "async",
    "checkUrl",
    "checkRateSeconds",
    "timeoutSeconds",
    "retry",
    "maxRetries",
    "qos",
    "parentJob",
    "parentJobExecution",
    "schedule",
    "overlap",
    "maxConcurrency",
    "catchupWindow",
    "pauseOnFailure",
    "remainingActions",
    "retryPolicy",
    "timeouts",
    "parentClosePolicy",
    "target",
    "sqs",
    "queueUrl",
    "eventbridge",
    "url",
    "method",
    "headers",
    "body",
    "stateEquals",
    "dueTime",
    "period",
    "ttl",
    "cron",
    "calendars",
    "intervals",
    "every",
    "offset",
    "exclude",
    "startTime",
    "endTime",
    "jitter",
    "timeZone",
    "dialect",
    "dst",
    "gap",
    "second",
    "minute",
    "hour",
    "dayOfMonth",
    "month",
    "year",
    "dayOfWeek",
    "from",
    "count",
    "notes",
    "errorEquals",
    "backoffRate",
    "initialInterval",
    "",
];

const STRINGS: &[&str] = &[
    "",
    " ",
    "0 0/5 * * * ?",
    "*/5 * * * *",
    "0 12 * * MON-FRI",
    "@hourly",
    "@every 14h/3h",
    "CRON_TZ=Asia/Kolkata 0 2 * * *",
    "0 0 L * ?",
    "0 0 ? * 6#3",
    "59-0 * * * *",
    "*/0 * * * *",
    "R4/PT3S",
    "R0/PT1S",
    "R999999999/PT1S",
    "PT0S",
    "0s",
    "1s",
    "1d2h0m2s",
    "P1DT1H20M10S",
    "99999999999d",
    "-5s",
    "external",
    "2s",
    "5d3s",
    "2023-10-1 09:00:01",
    "2024-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2100-12-31T23:59:59+14:00",
    "0000-01-01T00:00:00Z",
    "America/New_York",
    "Europe/Nowhere",
    "standard",
    "temporal",
    "quartz",
    "eventbridge",
    "skip",
    "shift",
    "auto",
    "both",
    "Skip",
    "AllowAll",
    "BufferOne",
    "cancel",
    "http://127.0.0.1:9/x",
    "https://127.0.0.1:9/${jobId}?x=${$.a[0]}",
    "service://jobswork/main",
    "service:/x",
    "ftp://x",
    "${",
    "${}",
    "${$.}",
    "|json",
    "GET",
    "post",
    "FETCH",
    "500",
    "timeout",
    "é✓ 陈世超",
    "\u{0}",
    "1,15",
    "11-14",
    "*/5",
    "MON",
    "L",
    "6h/5h",
    "x~y",
    "../..",
];

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    let kinds = if depth >= 4 { 5 } else { 7 };
    match rng.below(kinds) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => match rng.below(8) {
            0 => json!(0),
            1 => json!(-1),
            2 => json!(u64::MAX),
            3 => json!(i64::MIN),
            4 => json!(1.5),
            5 => json!(1e308),
            6 => json!(rng.below(100)),
            _ => json!(rng.next() % 100_000),
        },
        3 | 4 => {
            let mut text = (*rng.pick(STRINGS)).to_owned();
            if rng.below(10) == 0 {
                text = text.repeat(1 + rng.below(300));
            }
            json!(text)
        }
        5 => (0..rng.below(4))
            .map(|_| random_value(rng, depth + 1))
            .collect(),
        _ => Value::Object(
            (0..rng.below(5))
                .map(|_| ((*rng.pick(KEYS)).to_owned(), random_value(rng, depth + 1)))
                .collect(),
        ),
    }
}

/// A random edit somewhere inside `value`: replace, remove or add a member.
fn mutate(rng: &mut Rng, value: &mut Value, depth: usize) {
    let descend = depth < 4 && rng.below(3) != 0;
    match value {
        Value::Object(obj) if !obj.is_empty() => {
            let keys: Vec<String> = obj.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            if descend {
                mutate(rng, obj.get_mut(&key).unwrap(), depth + 1);
            } else {
                match rng.below(3) {
                    0 => drop(obj.remove(&key)),
                    1 => drop(obj.insert(key, random_value(rng, depth))),
                    _ => drop(obj.insert((*rng.pick(KEYS)).to_owned(), random_value(rng, depth))),
                }
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let i = rng.below(items.len());
            if descend {
                mutate(rng, &mut items[i], depth + 1);
            } else if rng.below(2) == 0 {
                items.remove(i);
            } else {
                items[i] = random_value(rng, depth);
            }
        }
        other => *other = random_value(rng, depth),
    }
}

/// A valid body edited up to twice, or (one time in four) a random value.
fn body_from(rng: &mut Rng, bases: &[Value]) -> Value {
    if rng.below(4) == 0 {
        return random_value(rng, 0);
    }
    let mut body = rng.pick(bases).clone();
    for _ in 0..rng.below(3) {
        mutate(rng, &mut body, 0);
    }
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn arbitrary_json_never_yields_a_server_error() {
    let api = Api::new();
    api.create("cron-job", &seed_job_as("cron-job")).await;
    api.create("ondemand", &triggered_job("001")).await;

    let mut scheduled = triggered_job("001");
    scheduled.as_object_mut().unwrap().remove("timer");
    scheduled["schedule"] = json!({
        "cron": ["0 12 * * MON-FRI"], "intervals": ["6h/5h"], "jitter": "30s",
        "timeZone": "America/New_York", "startTime": "2024-01-01T00:00:00Z",
        "exclude": [{"month": "12", "dayOfMonth": "25"}]
    });
    let create_bases = [seed_job(), triggered_job("002"), scheduled.clone()];
    let trigger_bases = [
        json!({}),
        json!({"date": "2024-03-10", "list": [1, 2, {"x": null}]}),
    ];
    let backfill_bases = [
        json!({"startTime": "2024-03-10T13:00:00+00:00", "endTime": "2024-03-10T14:00:00Z"}),
        json!({"startTime": "2024-03-01T00:00:00Z", "endTime": "2024-03-31T00:00:00Z", "overlap": "BufferAll"}),
    ];
    let preview_bases = [
        json!({"schedule": scheduled["schedule"].clone(), "from": "2024-01-01T00:00:00Z", "count": 20}),
        json!({"timer": seed_job()["timer"].clone(), "count": 5, "jobId": "x"}),
        json!({"timer": {"dueTime": "10s", "period": "R3/PT5S"}, "from": NOW}),
    ];

    let mut rng = Rng(0x5EED_0002_D1A1_2024);
    let mut created = 0;
    for i in 0..300 {
        let seed = rng.0;
        let check = |route: &str, body: &Value, status: StatusCode| {
            assert!(
                !status.is_server_error(),
                "iteration {i} (rng state {seed:#x}): {route} answered {status} for {body}"
            );
        };

        let job_id = format!("fuzz-{i}");
        let mut body = body_from(&mut rng, &create_bases);
        if body.get("jobId").is_some() && rng.below(4) != 0 {
            body["jobId"] = json!(job_id);
        }
        let (status, answer) = api.post(&format!("/jobs/{job_id}"), &body).await;
        check("create", &body, status);
        assert!(
            answer["resp_code"].is_u64(),
            "create answered without an envelope: {answer}"
        );
        if status == StatusCode::OK {
            created += 1;
            // What was accepted must read back.
            for uri in [
                format!("/jobs/{job_id}"),
                format!("/jobs/{job_id}/describe"),
            ] {
                let (status, answer) = api.get(&uri).await;
                assert_eq!(
                    status,
                    StatusCode::OK,
                    "iteration {i}: GET {uri} after creating {body}: {answer}"
                );
            }
            let update = body_from(&mut rng, &create_bases);
            let (status, _) = api.post(&format!("/jobs/{job_id}/update"), &update).await;
            check("update", &update, status);
        }

        let target = *rng.pick(&["cron-job", "ondemand", "ghost"]);
        let body = body_from(&mut rng, &trigger_bases);
        let (status, _) = api.post(&format!("/jobs/{target}/trigger"), &body).await;
        check("trigger", &body, status);

        let body = body_from(&mut rng, &backfill_bases);
        let (status, _) = api.post(&format!("/jobs/{target}/backfill"), &body).await;
        check("backfill", &body, status);

        let body = body_from(&mut rng, &preview_bases);
        let (status, _) = api.post("/specs/preview", &body).await;
        check("preview", &body, status);
    }
    assert!(
        created > 10,
        "the generator should produce some valid jobs, made {created}"
    );
    for uri in [
        "/jobs?limit=1000",
        "/stats",
        "/jobs/cron-job/describe",
        "/jobs/ondemand/executions",
    ] {
        assert_eq!(
            api.get(uri).await.0,
            StatusCode::OK,
            "{uri} after the fuzzing"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 12, items 3 and 8: bad definitions are refused at the door.
// ---------------------------------------------------------------------------------------------

/// A request: method, URI and body.
type Call = (Method, String, Option<Value>);

/// Each case through the router: the request, and the start of the 400's message (the field).
/// Every one was answered 200 (or, for the last, "runs backwards") before this branch.
#[tokio::test(flavor = "multi_thread")]
async fn bad_definitions_are_refused_with_the_field() {
    let api = Api::new();
    api.create("existing", &triggered_job("001")).await;
    let job = |patch: Value| {
        let mut body = triggered_job("001");
        body.as_object_mut()
            .unwrap()
            .extend(patch.as_object().unwrap().clone());
        body
    };
    let header = |name: &str| {
        job(json!({"request": [{"url": "http://example.com/run", "headers": {name: "5"}}]}))
    };
    let timer = |timer: Value| job(json!({ "timer": timer }));
    let schedule = |schedule: Value| {
        let mut body = job(json!({ "schedule": schedule }));
        body.as_object_mut().unwrap().remove("timer");
        body
    };
    let create = |body: Value| (Method::POST, "/jobs/bad".to_string(), Some(body));
    let update = |body: Value| {
        (
            Method::POST,
            "/jobs/existing/update".to_string(),
            Some(body),
        )
    };
    let preview = |body: Value| (Method::POST, "/specs/preview".to_string(), Some(body));
    let cases: Vec<(Call, &str)> = vec![
        // Item 3.
        (
            create(header("Content-Length")),
            "request[0].headers.Content-Length: ",
        ),
        (
            create(header("transfer-encoding")),
            "request[0].headers.transfer-encoding: ",
        ),
        (create(header("Host")), "request[0].headers.Host: "),
        (
            create(header("Connection")),
            "request[0].headers.Connection: ",
        ),
        (create(header("Upgrade")), "request[0].headers.Upgrade: "),
        (
            create(header("Keep-Alive")),
            "request[0].headers.Keep-Alive: ",
        ),
        (
            create(header("Proxy-Authorization")),
            "request[0].headers.Proxy-Authorization: ",
        ),
        (create(header("TE")), "request[0].headers.TE: "),
        (create(header("Trailer")), "request[0].headers.Trailer: "),
        (
            create(header("IDEMPOTENCY-KEY")),
            "request[0].headers.IDEMPOTENCY-KEY: ",
        ),
        (
            create(header("Sundial-Signature")),
            "request[0].headers.Sundial-Signature: ",
        ),
        (
            update(header("Content-Length")),
            "request[0].headers.Content-Length: ",
        ),
        (
            create(job(
                json!({"notification": [{"url": "http://example.com/n", "headers": {"Transfer-Encoding": "chunked"}}]}),
            )),
            "notification[0].headers.Transfer-Encoding: ",
        ),
        // Item 8: URLs, JSONPath.
        (
            create(job(
                json!({"request": [{"url": "http://example.com:99999/run"}]}),
            )),
            "request[0].url: ",
        ),
        (
            create(job(
                json!({"request": [{"url": "http://[fe80::1%25eth0]/run"}]}),
            )),
            "request[0].url: ",
        ),
        (
            create(job(
                json!({"request": [{"url": "http://example.com/run", "body": {"s": "${$..s}"}}]}),
            )),
            "request[0].body.s: ",
        ),
        // Item 8: zero periods.
        (create(timer(json!({"period": "0s"}))), "timer.period: "),
        (create(timer(json!({"period": "PT0S"}))), "timer.period: "),
        (
            create(timer(json!({"dueTime": "10s", "period": ""}))),
            "timer.period: ",
        ),
        (
            create(timer(json!({"dueTime": "10s", "period": "R4/PT0S"}))),
            "timer.period: ",
        ),
        (
            preview(json!({"timer": {"dueTime": "1s", "period": "R/PT0S"}})),
            "timer.period: ",
        ),
        // Item 8: the 100-year maximum.
        (
            create(schedule(json!({"cron": ["* * * * *"], "jitter": "36501d"}))),
            "schedule.jitter: duration \"36501d\" exceeds the maximum of 36500d",
        ),
        (
            create(schedule(json!({"intervals": ["876001h"]}))),
            "schedule.intervals[0]: ",
        ),
        (
            create(timer(json!({"dueTime": "36501d", "period": "1h"}))),
            "timer.dueTime: ",
        ),
        (
            preview(json!({"schedule": {"intervals": ["876001h"]}})),
            "schedule.intervals[0]: ",
        ),
        // Item 8: step 0, years.
        (
            create(schedule(
                json!({"calendars": [{"hour": [{"start": 0, "end": 23, "step": 0}]}]}),
            )),
            "schedule.calendars[0].hour: ",
        ),
        (
            create(schedule(
                json!({"dialect": "temporal", "cron": ["0 12 * * * 2150"]}),
            )),
            "schedule.cron[0]: year: 2150 is out of range 2000-2100",
        ),
        (
            create(schedule(json!({"calendars": [{"year": "1999"}]}))),
            "schedule.calendars[0].year: 1999 is out of range 2000-2100",
        ),
        (
            create(schedule(json!({"cron": ["0 0 12 1 1 * 2101"]}))),
            "schedule.cron[0]: year: ",
        ),
        (
            preview(json!({"schedule": {"dialect": "quartz", "cron": ["0 0 12 ? * 2 1970"]}})),
            "schedule.cron[0]: year: ",
        ),
        // Item 8: stateEquals, names, ids.
        (
            create(job(
                json!({"notification": [{"url": "http://example.com/n", "stateEquals": 5}]}),
            )),
            "notification[0].stateEquals: ",
        ),
        (create(job(json!({"jobName": "bad\u{0}name"}))), "jobName: "),
        (
            create(job(json!({"creatorName": "x\u{7}"}))),
            "creatorName: ",
        ),
        (
            (Method::POST, "/jobs/..".into(), Some(triggered_job("001"))),
            "jobId: ",
        ),
        (
            (Method::POST, "/jobs/%2E".into(), Some(triggered_job("001"))),
            "jobId: ",
        ),
        (
            (
                Method::POST,
                "/jobs/%2E%2E".into(),
                Some(triggered_job("001")),
            ),
            "jobId: ",
        ),
        ((Method::GET, "/jobs/%2E%2E".into(), None), "jobId: "),
        (
            (
                Method::PUT,
                "/services/..%2F/timers".into(),
                Some(json!({"timer": []})),
            ),
            "serviceName: ",
        ),
        (
            (
                Method::PUT,
                "/services/%2E%2E/timers".into(),
                Some(json!({"timer": []})),
            ),
            "serviceName: ",
        ),
        // Item 8: query parameters repeated, or unknown on /trigger.
        (
            (Method::PUT, "/jobs/existing?active=1&active=0".into(), None),
            "active: ",
        ),
        (
            (
                Method::POST,
                "/jobs/existing/trigger?overlap=Skip&overlap=AllowAll".into(),
                Some(json!({})),
            ),
            "overlap: ",
        ),
        (
            (
                Method::POST,
                "/jobs/existing/trigger?overlp=AllowAll".into(),
                Some(json!({})),
            ),
            "overlp: unknown query parameter",
        ),
        (
            (Method::GET, "/jobs?state=active&state=paused".into(), None),
            "state: ",
        ),
    ];
    let mut misses = Vec::new();
    for ((method, uri, body), prefix) in &cases {
        let (status, answer) = api.call(method.clone(), uri, body.as_ref()).await;
        let message = answer["resp_msg"].as_str().unwrap_or_default();
        if status != StatusCode::BAD_REQUEST
            || answer["resp_code"] != json!(400)
            || !message.starts_with(prefix)
        {
            misses.push(format!(
                "{method} {uri} {}: {status} {answer}; expected 400 {prefix}…",
                body.as_ref().map(Value::to_string).unwrap_or_default()
            ));
        }
    }
    assert!(
        misses.is_empty(),
        "{} of {} cases missed:\n{}",
        misses.len(),
        cases.len(),
        misses.join("\n")
    );
    assert_eq!(
        api.status_of("bad").await,
        StatusCode::NOT_FOUND,
        "nothing was created"
    );
}

/// A schedule that can never fire is accepted, with a `warnings` array in the answer; other
/// answers keep seed 002's envelope exactly.
#[tokio::test(flavor = "multi_thread")]
async fn schedules_that_never_fire_come_back_with_warnings() {
    let api = Api::new();
    let mut never = triggered_job("001");
    never["timer"] = json!({"dueTime": "2150-01-01 00:00:00", "period": "1h", "ttl": "1d"});
    let (status, body) = api.post("/jobs/never", &never).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let warnings = body["warnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{body}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("timer: it never fires"),
        "{body}"
    );

    let (status, body) = api.post("/jobs/never/update", &never).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["warnings"].as_array().map(Vec::len), Some(1), "{body}");

    let (status, body) = api
        .post(
            "/specs/preview",
            &json!({"schedule": {"cron": ["* * * * *"], "startTime": "2150-01-01T00:00:00Z"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["times"], json!([]));
    assert!(
        body["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("schedule: it never fires: it starts at 2150"),
        "{body}"
    );

    // No warning, no field: the envelope stays seed 002's.
    api.create("fine", &triggered_job("001")).await;
    let (_, body) = api
        .post(
            "/specs/preview",
            &json!({"schedule": {"cron": ["0 12 * * *"]}, "count": 1}),
        )
        .await;
    assert!(body.get("warnings").is_none(), "{body}");
}

/// A body that trickles in (or never comes) does not hold its connection and task for ever: after
/// `BODY_READ_TIMEOUT` it is a 408 in the envelope. Time is simulated.
#[tokio::test(start_paused = true)]
async fn a_body_that_never_arrives_is_a_408() {
    let api = Api::new();
    let first = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
        axum::body::Bytes::from_static(b"{\"jobName\""),
    )]);
    let never = futures_util::StreamExt::chain(first, futures_util::stream::pending());
    let request = Request::post("/jobs/slow")
        .body(Body::from_stream(never))
        .unwrap();
    let started = tokio::time::Instant::now();
    assert_error(
        &api.send(request).await,
        408,
        "body: not received within 30 s",
    );
    assert_eq!(started.elapsed(), sundial_service::api::BODY_READ_TIMEOUT);
}

/// `GET /health` reports the engine's loops when the process runs them, and answers 503 once the
/// tick is late beyond ten periods (at least 10 s): a stalled engine is visible.
#[tokio::test(flavor = "multi_thread")]
async fn health_reports_a_stalled_tick_with_503() {
    let now: DateTime<Utc> = NOW.parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let app = Arc::new(App::new(
        MemoryStore::new(),
        clock.clone(),
        AppConfig::default(),
    ));
    let api = Api {
        router: router(Arc::clone(&app), None),
        app: Arc::clone(&app),
    };
    assert_eq!(
        api.get("/health").await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
    app.liveness()
        .engine_started(now, std::time::Duration::from_secs(1));
    clock.advance(chrono::Duration::seconds(10));
    app.liveness().dispatch_ran(clock.now());
    let (status, body) = api.get("/health").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"status": "ok", "engine": {"lastTick": "2024-03-10T12:34:56.000Z",
               "lastDispatch": "2024-03-10T12:35:06.000Z", "tickLateAfterSeconds": 10}})
    );
    clock.advance(chrono::Duration::seconds(1));
    let (status, body) = api.get("/health").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "stalled");
    app.liveness().tick_ran(clock.now());
    assert_eq!(api.get("/health").await.0, StatusCode::OK);
}

/// Where one worker can hold an attempt for a bounded time (one dispatch invocation on AWS), a
/// synchronous job whose `timeoutSeconds` is longer is refused, naming the field; an async job
/// (whose wait spans invocations) is not.
#[tokio::test(flavor = "multi_thread")]
async fn a_synchronous_attempt_longer_than_a_worker_can_hold_is_refused() {
    let now: DateTime<Utc> = NOW.parse().unwrap();
    let config = AppConfig {
        max_sync_attempt: Some(std::time::Duration::from_secs(100)),
        ..AppConfig::default()
    };
    let app = Arc::new(App::new(
        MemoryStore::new(),
        Arc::new(ManualClock::new(now)),
        config,
    ));
    let api = Api {
        router: router(Arc::clone(&app), None),
        app,
    };
    let mut long = triggered_job("001");
    long["timeoutSeconds"] = json!(120);
    assert_error(
        &api.post("/jobs/long", &long).await,
        400,
        "timeoutSeconds: 120 s is longer than one dispatch invocation",
    );
    long["timeoutSeconds"] = json!(100);
    assert_eq!(api.post("/jobs/long", &long).await.0, StatusCode::OK);
    long["timeoutSeconds"] = json!(600);
    long["async"] = json!(true);
    assert_eq!(api.post("/jobs/long-async", &long).await.0, StatusCode::OK);
    assert_error(
        &api.post("/jobs/long/update", &{
            let mut sync = long.clone();
            sync["async"] = json!(false);
            sync
        })
        .await,
        400,
        "timeoutSeconds:",
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 12 item 10: secrets in job definitions

/// The secrets of [`secret_job`]: none may appear in any answer.
const SECRETS: &[&str] = &[
    "Bearer s3cr3t-request",
    "sid=c00kie",
    "my-own-key-value",
    "n0tify-key",
    "check-t0ken",
];

/// A child job (so the child-log routes list its runs) whose calls carry `Authorization`, `Cookie`,
/// a header listed in `sensitiveHeaders` and a header that is not sensitive.
fn secret_job() -> Value {
    json!({
        "jobName": "with secrets",
        "creator": "001",
        "creatorName": "tests",
        "parentJob": "secret-parent",
        "parentJobExecution": 1,
        "sensitiveHeaders": ["X-My-Key-Id"],
        "request": [{
            "url": "http://127.0.0.1:9/run",
            "method": "POST",
            "headers": {
                "Authorization": "Bearer s3cr3t-request",
                "Cookie": "sid=c00kie",
                "X-My-Key-Id": "my-own-key-value",
                "X-Request-Source": "scheduler"
            }
        }],
        "notification": [{"url": "http://127.0.0.1:9/n", "headers": {"X-Api-Key": "n0tify-key"}}],
        "async": true,
        "checkUrl": {"url": "http://127.0.0.1:9/check", "headers": {"X-Auth-Token": "check-t0ken"}},
        "timer": {"period": "external"}
    })
}

#[track_caller]
fn assert_no_secret(route: &str, answer: &(StatusCode, Value)) {
    assert_eq!(answer.0, StatusCode::OK, "{route}: {}", answer.1);
    let text = answer.1.to_string();
    for secret in SECRETS {
        assert!(!text.contains(secret), "{route} shows {secret:?}: {text}");
    }
}

/// The job as a read shows it: sensitive values are the marker, the rest as written.
#[track_caller]
fn assert_redacted(route: &str, job: &Value) {
    assert_eq!(
        job["request"][0]["headers"],
        json!({
            "Authorization": "***",
            "Cookie": "***",
            "X-My-Key-Id": "***",
            "X-Request-Source": "scheduler"
        }),
        "{route}"
    );
    assert_eq!(
        job["notification"][0]["headers"],
        json!({"X-Api-Key": "***"}),
        "{route}"
    );
    assert_eq!(
        job["checkUrl"]["headers"],
        json!({"X-Auth-Token": "***"}),
        "{route}"
    );
    assert_eq!(job["sensitiveHeaders"], json!(["X-My-Key-Id"]), "{route}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sensitive_header_values_are_redacted_on_every_read_route() {
    let api = Api::new();
    api.create("secret-parent", &triggered_job("001")).await;
    let parent_run = api.trigger("secret-parent", &json!({})).await;
    api.create("secrets", &secret_job()).await;
    let run = api.trigger("secrets", &json!({"n": 1})).await;

    let answer = api.get("/jobs/secrets").await;
    assert_no_secret("GET /jobs/{id}", &answer);
    assert_redacted("GET /jobs/{id}", &answer.1);

    let answer = api.get("/jobs").await;
    assert_no_secret("GET /jobs", &answer);
    let listed = answer.1["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobId"] == "secrets")
        .cloned()
        .unwrap();
    assert_redacted("GET /jobs", &listed);

    let answer = api.get("/jobs?creator=001&parentJob=secret-parent").await;
    assert_no_secret("GET /jobs?parentJob", &answer);

    let answer = api.get("/jobs/secrets/describe").await;
    assert_no_secret("describe", &answer);
    assert_redacted("describe", &answer.1["job"]);

    for route in [
        format!("/executions/{run}"),
        "/jobs/secrets/executions".to_string(),
        "/main/execution?jobId=secrets".to_string(),
        "/main/getChildJobLogs?parentJobId=secret-parent&execution=1".to_string(),
        format!("/main/getChildJobLogsByExecutionId?executionId={parent_run}"),
        "/stats".to_string(),
    ] {
        let answer = api.get(&route).await;
        assert_no_secret(&route, &answer);
    }
    // The child-log routes do list the run: the check above is not vacuous.
    let logs = api
        .get("/main/getChildJobLogs?parentJobId=secret-parent&execution=1")
        .await;
    assert_eq!(logs.1["executions"][0]["executionId"], json!(run));

    // The store keeps the real values: that is what the engine sends.
    let stored = api.app.store().get_job("secrets").await.unwrap().unwrap();
    let stored = serde_json::to_string(&stored.document).unwrap();
    for secret in SECRETS {
        assert!(stored.contains(secret), "the store keeps {secret:?}");
    }
}

/// The job a read shows, without the fields that are not part of a definition.
fn as_definition(mut job: Value) -> Value {
    for key in ["state", "pausedNotes", "createdAt", "updatedAt"] {
        job.as_object_mut().unwrap().remove(key);
    }
    job
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_job_posted_back_to_update_keeps_its_secrets() {
    let api = Api::new();
    api.create("secrets", &secret_job()).await;
    let stored_before = api.app.get_job(&"secrets".parse().unwrap()).await.unwrap();

    // GET, change something harmless, POST back: the marker keeps every stored value.
    let mut read = as_definition(api.job("secrets").await);
    read["jobName"] = json!("renamed");
    read["request"][0]["headers"]["X-Request-Source"] = json!("cron");
    let (status, body) = api.post("/jobs/secrets/update", &read).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let job = api.app.get_job(&"secrets".parse().unwrap()).await.unwrap();
    let written = job.definition.as_written();
    assert_eq!(written["jobName"], json!("renamed"));
    assert_eq!(
        written["request"][0]["headers"],
        json!({
            "Authorization": "Bearer s3cr3t-request",
            "Cookie": "sid=c00kie",
            "X-My-Key-Id": "my-own-key-value",
            "X-Request-Source": "cron"
        })
    );
    assert_eq!(
        written["notification"][0]["headers"]["X-Api-Key"],
        json!("n0tify-key")
    );
    assert_eq!(
        written["checkUrl"]["headers"]["X-Auth-Token"],
        json!("check-t0ken")
    );
    assert_eq!(
        job.definition.requests(),
        stored_before
            .definition
            .requests()
            .iter()
            .map(|step| {
                let mut step = step.clone();
                step.http.headers.insert(
                    "X-Request-Source".into(),
                    sundial_core::template::Template::parse("cron").unwrap(),
                );
                step
            })
            .collect::<Vec<_>>()
            .as_slice(),
        "the parsed calls carry the stored values too"
    );
    assert_redacted_but_renamed(&api).await;

    // A new value replaces the stored one.
    let mut fresh = as_definition(api.job("secrets").await);
    fresh["request"][0]["headers"]["Cookie"] = json!("sid=new");
    let (status, body) = api.post("/jobs/secrets/update", &fresh).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let job = api.app.get_job(&"secrets".parse().unwrap()).await.unwrap();
    assert_eq!(
        job.definition.as_written()["request"][0]["headers"]["Cookie"],
        json!("sid=new")
    );

    // The marker only keeps a value at the same call with the same url.
    let mut moved = as_definition(api.job("secrets").await);
    moved["request"][0]["url"] = json!("http://127.0.0.1:9/elsewhere");
    assert_error(
        &api.post("/jobs/secrets/update", &moved).await,
        400,
        "request[0].headers.Authorization: \"***\" is the redaction marker: request[0].url changed",
    );
    let mut added = as_definition(api.job("secrets").await);
    added["notification"][0]["headers"]["Authorization"] = json!("***");
    assert_error(
        &api.post("/jobs/secrets/update", &added).await,
        400,
        "notification[0].headers.Authorization: \"***\" is the redaction marker",
    );
    // Taking a header off sensitiveHeaders while sending the marker would show the secret.
    let mut unlisted = as_definition(api.job("secrets").await);
    unlisted["sensitiveHeaders"] = json!([]);
    assert_error(
        &api.post("/jobs/secrets/update", &unlisted).await,
        400,
        "request[0].headers.X-My-Key-Id: \"***\" is the redaction marker: the header is no longer sensitive",
    );
    let job = api.app.get_job(&"secrets".parse().unwrap()).await.unwrap();
    assert_eq!(
        job.definition.as_written()["request"][0]["headers"]["Authorization"],
        json!("Bearer s3cr3t-request"),
        "a refused update changes nothing"
    );

    // A read job created under a new id has no stored value to keep.
    let copy = as_definition(api.job("secrets").await);
    let mut copy = copy;
    copy.as_object_mut().unwrap().remove("jobId");
    assert_error(
        &api.post("/jobs/copy", &copy).await,
        400,
        "request[0].headers.Authorization: \"***\" is the redaction marker: only an update can send it back",
    );
    assert_eq!(api.status_of("copy").await, StatusCode::NOT_FOUND);
}

async fn assert_redacted_but_renamed(api: &Api) {
    let answer = api.get("/jobs/secrets").await;
    assert_no_secret("GET /jobs/{id} after update", &answer);
    assert_eq!(answer.1["jobName"], json!("renamed"));
    assert_eq!(
        answer.1["request"][0]["headers"]["X-Request-Source"],
        json!("cron")
    );
    assert_eq!(
        answer.1["request"][0]["headers"]["Authorization"],
        json!("***")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sensitive_headers_must_be_a_list_of_header_names() {
    let api = Api::new();
    for (value, prefix) in [
        (
            json!("X-My-Key"),
            "sensitiveHeaders: expected a list of header names",
        ),
        (
            json!({"X-My-Key": true}),
            "sensitiveHeaders: expected a list of header names",
        ),
        (
            json!(["X-Ok", 7]),
            "sensitiveHeaders[1]: expected a header name",
        ),
        (
            json!(["with space"]),
            "sensitiveHeaders[0]: expected a header name",
        ),
        (json!([""]), "sensitiveHeaders[0]: expected a header name"),
    ] {
        let mut body = triggered_job("001");
        body["sensitiveHeaders"] = value;
        assert_error(&api.post("/jobs/bad-list", &body).await, 400, prefix);
    }
    let mut body = triggered_job("001");
    body["sensitiveHeaders"] = json!(["X-Ok", "x-ok"]);
    api.create("good-list", &body).await;
}
