//! Issue 12, items 3 and 8: bad definitions are refused at the door with the field; specs that
//! never fire come back with warnings; a body that never arrives is a 408; a stalled tick shows in
//! `/health`; a synchronous attempt longer than a worker can hold is refused. Issue 15, item 10: a
//! target the deployment does not deliver is refused.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sundial_api::router;
use sundial_ports::clock::Clock;
use sundial_ports::events::TargetSupport;
use sundial_ports::memory::{ManualClock, MemoryStore};
use sundial_service::{App, AppConfig};

use crate::support::*;

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
/// answers keep docs/api.md's envelope exactly.
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

    // No warning, no field: the envelope stays docs/api.md's.
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
    assert_eq!(started.elapsed(), sundial_api::BODY_READ_TIMEOUT);
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
        AppConfig::new(TEST_SECRET.to_vec()),
    ));
    let api = Api {
        router: router(Arc::clone(&app), None),
        app: Arc::clone(&app),
    };
    assert_eq!(
        api.get("/health").await,
        (StatusCode::OK, json!({"status": "ok", "debugMode": "off"}))
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
               "lastDispatch": "2024-03-10T12:35:06.000Z", "tickLateAfterSeconds": 10},
               "debugMode": "off"})
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
    let api = Api::with_config(AppConfig {
        max_sync_attempt: Some(std::time::Duration::from_secs(100)),
        ..AppConfig::new(TEST_SECRET.to_vec())
    });
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

/// Found by schemathesis: a cron (or external) `period` ignores `dueTime`, and a `dueTime` of the
/// wrong type was accepted with it and then shown back, breaking the job's documented shape.
#[tokio::test(flavor = "multi_thread")]
async fn a_due_time_of_the_wrong_type_is_refused_beside_a_cron_period() {
    let api = Api::new();
    let mut job = seed_job_as("due-object");
    job["timer"] = json!({"dueTime": {}, "period": "0 0 6 * * ?"});
    assert_error(
        &api.post("/jobs/due-object", &job).await,
        400,
        "timer.dueTime: expected a string, got {}",
    );
    api.create("due-object", &seed_job_as("due-object")).await;
    assert_error(
        &api.post("/jobs/due-object/update", &job).await,
        400,
        "timer.dueTime: expected a string",
    );
}

/// Issue 15, item 10: where the engine's publisher delivers no targets (`sundial serve` without
/// `--aws-targets`), a job with an `sqs` or `eventbridge` target is refused with a 400 naming the
/// field and saying how to configure it — on create, update, its dry run and a timers sync, which
/// then changes nothing. A request job is not affected.
#[tokio::test(flavor = "multi_thread")]
async fn a_target_is_refused_where_targets_are_not_delivered() {
    let api = Api::with_config(AppConfig {
        targets: TargetSupport::Unavailable {
            how: "start with --aws-targets".into(),
        },
        ..AppConfig::new(TEST_SECRET.to_vec())
    });
    let with_target = |target: Value| {
        let mut body = triggered_job("001");
        body.as_object_mut().unwrap().remove("request");
        body["target"] = target;
        body
    };
    let sqs = with_target(json!({"sqs": {"queueUrl": "https://sqs.us-east-1.amazonaws.com/1/q"}}));
    let bus = with_target(
        json!({"eventbridge": {"busName": "jobs", "source": "my.app", "detailType": "Tick"}}),
    );
    let refusal = "target.sqs: this server does not send to SQS, so the job's runs could not be delivered; start with --aws-targets";
    assert_error(&api.post("/jobs/to-queue", &sqs).await, 400, refusal);
    assert_error(
        &api.post("/jobs/to-bus", &bus).await,
        400,
        "target.eventbridge: this server does not send to EventBridge",
    );
    api.create("plain", &triggered_job("001")).await;
    assert_error(&api.post("/jobs/plain/update", &sqs).await, 400, refusal);
    assert_error(
        &api.post("/jobs/plain/update?dryRun=true", &sqs).await,
        400,
        refusal,
    );
    let mut entry = sqs.clone();
    entry["jobId"] = json!("t-queue");
    let mut first = triggered_job("001");
    first["jobId"] = json!("t-plain");
    let list = json!({"timer": [first, entry]});
    assert_error(
        &api.put("/services/svc/timers", Some(&list)).await,
        400,
        "timer[1].target.sqs: this server does not send to SQS",
    );
    assert_eq!(
        api.get("/jobs/t-plain").await.0,
        StatusCode::NOT_FOUND,
        "a refused list changes nothing"
    );
    assert_eq!(api.get("/jobs/to-queue").await.0, StatusCode::NOT_FOUND);
}
