//! Issue 15, "Operating many schedules", through the router: the catch-up policy of a job, backfill
//! modes, trigger overrides and the preview of a change.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

/// A job on an hourly schedule, with `extra` fields.
fn hourly(extra: Value) -> Value {
    let mut body = json!({
        "jobName": "hourly", "creator": "001", "creatorName": "tests",
        "request": [{"url": "http://127.0.0.1:9/run/${jobId}", "method": "POST"}],
        "schedule": {"cron": ["0 * * * *"]},
    });
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    body
}

#[tokio::test]
async fn a_job_takes_a_catch_up_policy_and_keeps_it_as_written() {
    let api = Api::new();
    let catchup = json!({"policy": "latest", "window": "1h"});
    api.create("latest", &hourly(json!({"catchup": catchup})))
        .await;
    assert_eq!(api.job("latest").await["catchup"], catchup);
    // The older field keeps working, alone or beside an agreeing window.
    api.create("legacy", &hourly(json!({"catchupWindow": "10m"})))
        .await;
    api.create(
        "both",
        &hourly(json!({"catchupWindow": "60m", "catchup": {"policy": "skip", "window": "1h"}})),
    )
    .await;
    api.create(
        "capped",
        &hourly(json!({"catchup": {"policy": "all", "maxRuns": 1000}})),
    )
    .await;

    for (body, prefix) in [
        (
            json!({"catchupWindow": "10m", "catchup": {"window": "1h"}}),
            "catchup.window: 1h disagrees with catchupWindow 10m",
        ),
        (
            json!({"catchup": {"policy": "latest", "maxRuns": 5}}),
            "catchup.maxRuns: only applies to policy \"all\"",
        ),
        (json!({"catchup": {"maxRuns": 1001}}), "catchup.maxRuns:"),
        (json!({"catchup": {"policy": "never"}}), "catchup.policy:"),
        (
            json!({"catchup": {"every": "1m"}}),
            "catchup.every: unknown field",
        ),
    ] {
        let answer = api.post("/jobs/refused", &hourly(body)).await;
        assert_error(&answer, 400, prefix);
    }
    assert_eq!(api.status_of("refused").await, StatusCode::NOT_FOUND);
    // An update is checked the same way.
    let answer = api
        .post(
            "/jobs/latest/update",
            &hourly(json!({"catchupWindow": "2m", "catchup": {"window": "3m"}})),
        )
        .await;
    assert_error(&answer, 400, "catchup.window:");
}

/// The overrides of one trigger are query parameters; the body stays the map of arguments, so a
/// caller whose arguments happen to be called `scheduledTime` or `delay` still sends arguments.
#[tokio::test(flavor = "multi_thread")]
async fn a_trigger_takes_its_overrides_as_query_parameters() {
    let api = Api::new();
    api.create("ondemand", &triggered_job("001")).await;
    let (status, body) = api
        .post(
            "/jobs/ondemand/trigger?scheduledTime=2024-03-01T00:00:00Z&overlap=bufferall&delay=5m",
            &json!({"region": "emea"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["executionId"].as_str().unwrap();
    let run = api.get(&format!("/executions/{id}")).await.1;
    assert_eq!(run["state"], "Scheduled", "delayed: {run}");
    assert_eq!(run["scheduledTime"], "2024-03-01T00:00:00Z");
    assert_eq!(run["arguments"], json!({"region": "emea"}));
    let events = run["events"].as_array().unwrap();
    assert_eq!(events[0]["to"], "Scheduled");
    assert_eq!(
        events[1]["message"],
        "trigger overrides: scheduledTime 2024-03-01T00:00:00+00:00, overlap BufferAll, delay 5m (due 2024-03-10T12:39:56+00:00)"
    );

    // Without overrides: the run of before, its body arguments whatever their names.
    let legacy = json!({"scheduledTime": "tomorrow", "delay": "never", "overlap": 3});
    let id = api.trigger("ondemand", &legacy).await;
    let run = api.get(&format!("/executions/{id}")).await.1;
    assert_eq!(run["state"], "Enqueued");
    assert_eq!(run["scheduledTime"], NOW);
    assert_eq!(run["arguments"], legacy);
    assert_eq!(
        run["events"].as_array().unwrap().len(),
        1,
        "no overrides to record"
    );

    for (query, prefix) in [
        (
            "scheduledTime=yesterday",
            "scheduledTime: expected an RFC 3339 time",
        ),
        ("delay=soon", "delay:"),
        ("delay=-1m", "delay:"),
        ("overlap=Never", "overlap: expected Skip"),
        (
            "delay=1m&delay=2m",
            "delay: query parameter given more than once",
        ),
        (
            "delayed=1m",
            "delayed: unknown query parameter; expected overlap, scheduledTime, delay",
        ),
    ] {
        let answer = api
            .post(&format!("/jobs/ondemand/trigger?{query}"), &json!({}))
            .await;
        assert_error(&answer, 400, prefix);
    }
}
