//! Issue 12 item 10: secret header values in job definitions are redacted on every read route
//! and kept when a read job is posted back.

use axum::http::StatusCode;
use serde_json::{json, Value};
use sundial_ports::store::JobStore;

use crate::support::*;

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
