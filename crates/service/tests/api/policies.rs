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
