//! Jobs: create, read, pause, update, delete.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

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
