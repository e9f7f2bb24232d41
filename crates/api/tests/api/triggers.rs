//! Triggers, feedback, pause notes, backfill, describe.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};

use crate::support::*;

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
    let secret = TEST_SECRET.to_vec();
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

/// A pause with `until` (an instant or a duration from now) shows `pausedUntil` until the job is
/// resumed; a malformed or past `until` is a 400 naming it, for one job and in bulk.
#[tokio::test(flavor = "multi_thread")]
async fn a_pause_until_shows_its_end_and_refuses_a_bad_one() {
    let api = Api::new();
    api.create("20220125", &seed_job()).await;
    let answer = api
        .post(
            "/jobs/20220125/pause",
            &json!({"notes": "vendor window", "until": "2h"}),
        )
        .await;
    assert_eq!(answer, (StatusCode::OK, ok()));
    let job = api.job("20220125").await;
    assert_eq!(job["state"], json!("paused"));
    assert_eq!(job["pausedUntil"], json!("2024-03-10T14:34:56Z"));
    let answer = api
        .post(
            "/jobs/20220125/pause",
            &json!({"until": "2024-03-11T00:00:00+01:00"}),
        )
        .await;
    assert_eq!(answer, (StatusCode::OK, ok()));
    assert_eq!(
        api.job("20220125").await["pausedUntil"],
        json!("2024-03-10T23:00:00Z")
    );
    assert_eq!(
        api.call(Method::POST, "/jobs/20220125/unpause", None).await,
        (StatusCode::OK, ok())
    );
    assert!(api.job("20220125").await.get("pausedUntil").is_none());
    for (until, why) in [
        (
            json!("soon"),
            "until: expected an RFC 3339 instant or a duration",
        ),
        (
            json!(7200),
            "until: expected an RFC 3339 instant or a duration",
        ),
        (
            json!("2024-03-10T12:00:00Z"),
            "until: the pause would end at 2024-03-10T12:00:00Z, which is not later than now",
        ),
    ] {
        assert_error(
            &api.post("/jobs/20220125/pause", &json!({"until": until}))
                .await,
            400,
            why,
        );
        if !why.contains("not later") {
            assert_error(
                &api.post(
                    "/bulk/jobs/pause",
                    &json!({"jobIds": ["20220125"], "reason": "r", "until": until}),
                )
                .await,
                400,
                why,
            );
        }
    }
    assert_eq!(
        api.job("20220125").await["state"],
        json!("active"),
        "nothing paused"
    );
    // In bulk, a duration counts from the request.
    let answer = api
        .post(
            "/bulk/jobs/pause",
            &json!({"jobIds": ["20220125"], "reason": "window", "until": "30m"}),
        )
        .await;
    assert_eq!(answer.0, StatusCode::OK, "{answer:?}");
    assert_eq!(
        api.job("20220125").await["pausedUntil"],
        json!("2024-03-10T13:04:56Z")
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

    // docs/api.md's create table types `timer` as a string: JSON text of the object works the same.
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

/// Issue 26 items 11 and 4: describe answers the job's spec normalized (`schedule`, the canonical
/// form `POST /specs/preview` answers with) beside the job as written, as Temporal's describe does;
/// a timer's `timeZone` is that spec's zone and its times' offset; a triggered-only job has
/// `"schedule": null`.
#[tokio::test(flavor = "multi_thread")]
async fn describe_answers_the_normalized_spec_beside_the_written_one() {
    let api = Api::new();
    let timer = json!({"period": "0 0 9 * * ?", "timeZone": "Asia/Shanghai"});
    let mut zoned = seed_job_as("zoned");
    zoned["timer"] = timer.clone();
    api.create("zoned", &zoned).await;
    let (status, body) = api.get("/jobs/zoned/describe").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["job"]["timer"], timer, "the job as written");
    let preview = api
        .post("/specs/preview", &json!({"timer": timer, "from": NOW}))
        .await
        .1;
    assert_eq!(body["schedule"], preview["schedule"], "{body}");
    assert_eq!(body["schedule"]["timeZone"], "Asia/Shanghai");
    assert_eq!(
        body["schedule"]["calendars"][0]["hour"],
        json!([{"start": 9}])
    );
    assert_eq!(
        body["info"]["futureActionTimes"][0],
        "2024-03-11T09:00:00+08:00"
    );

    let spec = json!({"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/Paris"});
    let mut scheduled = seed_job_as("spec");
    scheduled.as_object_mut().unwrap().remove("timer");
    scheduled["schedule"] = spec.clone();
    api.create("spec", &scheduled).await;
    let body = api.get("/jobs/spec/describe").await.1;
    assert_eq!(body["job"]["schedule"], spec);
    let preview = api
        .post("/specs/preview", &json!({"schedule": spec, "from": NOW}))
        .await
        .1;
    assert_eq!(body["schedule"], preview["schedule"], "{body}");

    api.create("manual", &triggered_job("u")).await;
    let body = api.get("/jobs/manual/describe").await.1;
    assert_eq!(body["schedule"], Value::Null, "{body}");
}
