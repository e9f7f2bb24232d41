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
        "trigger overrides: scheduledTime 2024-03-01T00:00:00Z, overlap BufferAll, delay 5m (due 2024-03-10T12:39:56.000Z)"
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

#[tokio::test(flavor = "multi_thread")]
async fn a_backfill_takes_a_mode_ranges_an_order_and_a_dry_run() {
    let api = Api::new();
    api.create("hourly", &hourly(json!({}))).await;
    let before = api.job("hourly").await;

    // A dry run answers the times, in the order they would run, and records nothing.
    let body = json!({"ranges": [
        {"startTime": "2024-03-10T08:00:00Z", "endTime": "2024-03-10T09:00:00Z"},
        {"startTime": "2024-03-09T23:30:00Z", "endTime": "2024-03-10T00:00:00Z"},
    ], "reverse": true, "dryRun": true, "mode": "missing"});
    let (status, answer) = api.post("/jobs/hourly/backfill", &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer,
        json!({"resp_code": 200, "resp_msg": null, "count": 3, "dryRun": true, "times": [
            "2024-03-10T09:00:00+00:00", "2024-03-10T08:00:00+00:00", "2024-03-10T00:00:00+00:00"
        ]})
    );
    assert_eq!(api.job("hourly").await, before, "nothing written");
    let describe = api.get("/jobs/hourly/describe").await.1;
    assert_eq!(describe["info"]["pendingBackfills"], 0);

    // The same without dryRun: recorded, one waiting backfill per range.
    let mut real = body.clone();
    real["dryRun"] = json!(false);
    let (status, answer) = api.post("/jobs/hourly/backfill", &real).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer,
        json!({"resp_code": 200, "resp_msg": null, "count": 3})
    );
    let describe = api.get("/jobs/hourly/describe").await.1;
    assert_eq!(describe["info"]["pendingBackfills"], 2);

    // The brief's single range keeps working, with the answer it had.
    let range = json!({"startTime": "2024-03-10T00:00:00Z", "endTime": "2024-03-10T02:00:00Z", "overlap": "BufferAll"});
    assert_eq!(
        api.post("/jobs/hourly/backfill", &range).await,
        (
            StatusCode::OK,
            json!({"resp_code": 200, "resp_msg": null, "count": 3})
        )
    );

    let day = |d: u32| json!({"startTime": format!("2024-03-{d:02}T00:00:00Z"), "endTime": format!("2024-03-{d:02}T23:59:59Z")});
    for (body, prefix) in [
        (
            json!({"startTime": "2024-03-10T00:00:00Z", "endTime": "2024-03-10T01:00:00Z", "mode": "some"}),
            "mode: expected all, missing or failed",
        ),
        (
            json!({"startTime": "2024-03-10T00:00:00Z", "endTime": "2024-03-10T01:00:00Z", "reverse": "yes"}),
            "reverse: expected true or false",
        ),
        (
            json!({"startTime": "2024-03-10T00:00:00Z", "endTime": "2024-03-10T01:00:00Z", "dryRun": 1}),
            "dryRun:",
        ),
        (
            json!({"ranges": [day(1), day(1)]}),
            "ranges[1]: overlaps ranges[0]",
        ),
        (
            json!({"ranges": [day(1), {"startTime": "2024-03-02T00:00:00Z"}]}),
            "ranges[1].endTime: required",
        ),
        (
            json!({"ranges": [day(1)], "endTime": "2024-03-02T00:00:00Z"}),
            "ranges: give either",
        ),
        (json!({"ranges": []}), "ranges: has 0 ranges"),
        (
            json!({"startTime": "2023-01-01T00:00:00Z", "endTime": "2024-03-01T00:00:00Z"}),
            "endTime: the range holds more than 10000 fire times",
        ),
        (
            json!({"ranges": [{"startTime": "2023-01-01T00:00:00Z", "endTime": "2023-12-31T00:00:00Z"}, {"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-03-01T00:00:00Z"}]}),
            "ranges: the ranges hold more than 10000 fire times",
        ),
        (
            json!({"startTime": "2024-03-10T00:00:00Z", "endTime": "2024-03-10T01:00:00Z", "dryrun": true}),
            "dryrun: unknown field",
        ),
    ] {
        assert_error(&api.post("/jobs/hourly/backfill", &body).await, 400, prefix);
    }
    // A job holds at most 100 waiting ranges: 3 wait; 98 more is two too many.
    let many: Vec<Value> = (0..98)
        .map(|i| json!({"startTime": format!("2020-01-01T{:02}:{:02}:00Z", i / 60, i % 60), "endTime": format!("2020-01-01T{:02}:{:02}:30Z", i / 60, i % 60)}))
        .collect();
    assert_error(
        &api.post("/jobs/hourly/backfill", &json!({"ranges": many}))
            .await,
        409,
        "job hourly already has 3 backfills waiting",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_update_with_dry_run_previews_the_change_and_writes_nothing() {
    let api = Api::new();
    api.create("hourly", &hourly(json!({"overlap": "BufferAll"})))
        .await;
    let first = api.trigger("hourly", &json!({})).await;
    let (status, second) = api
        .post("/jobs/hourly/trigger?overlap=BufferAll", &json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    let job = api.job("hourly").await;
    let runs = api.get("/jobs/hourly/executions").await.1;
    let writes = api.app.store().writes();

    let change = hourly(
        json!({"overlap": "Skip", "schedule": {"cron": ["30 9 * * *"], "timeZone": "Europe/Paris"}}),
    );
    let (status, answer) = api.post("/jobs/hourly/update?dryRun=true", &change).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(api.app.store().writes(), writes, "nothing written");
    assert_eq!(api.job("hourly").await, job);
    assert_eq!(api.get("/jobs/hourly/executions").await.1, runs);

    assert_eq!(answer["resp_code"], 200);
    assert_eq!(answer["dryRun"], true);
    assert_eq!(answer.get("executionId"), None, "nothing runs");
    assert_eq!(
        answer["nextFireTimes"]["before"][0],
        "2024-03-10T13:00:00+00:00"
    );
    assert_eq!(
        answer["nextFireTimes"]["after"][0],
        "2024-03-11T09:30:00+01:00"
    );
    // The first trigger follows the job's policy, which changes; the second has its own.
    assert_eq!(
        answer["affectedRuns"],
        json!([{
            "executionId": first, "place": "waiting", "state": "Enqueued",
            "scheduledTime": NOW, "changes": ["overlap: BufferAll → Skip"]
        }])
    );
    assert_eq!(answer.get("warnings"), None);

    // The body is checked as an update checks it.
    assert_error(
        &api.post(
            "/jobs/hourly/update?dryRun=1",
            &hourly(json!({"overlap": "Never"})),
        )
        .await,
        400,
        "overlap:",
    );
    // A misspelt flag must not update for real.
    assert_error(
        &api.post("/jobs/hourly/update?dryrun=true", &change).await,
        400,
        "dryrun: unknown query parameter; expected dryRun",
    );
    assert_error(
        &api.post("/jobs/hourly/update?dryRun=maybe", &change).await,
        400,
        "dryRun: expected true or false",
    );
    assert_eq!(api.app.store().writes(), writes);
    // Without it (or with `false`), the update is made and runs the job.
    let (status, answer) = api.post("/jobs/hourly/update?dryRun=false", &change).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer["executionId"].is_string());
    assert_eq!(api.job("hourly").await["overlap"], "Skip");
    assert_error(
        &api.post("/jobs/ghost/update?dryRun", &change).await,
        404,
        "job ghost",
    );
}
