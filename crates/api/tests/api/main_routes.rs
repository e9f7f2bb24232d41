//! docs/api.md's `/main` routes: clean, executions, child job logs, destroy by parent.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

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
        json!({"resp_code": 200, "resp_msg": null, "executionsDeleted": 4, "destroyedJobsCleaned": 0, "auditEntriesDeleted": 7})
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
    // Found by schemathesis: a count beyond the document's int64 was accepted.
    assert_error(
        &api.delete("/main/schedule/clean?retainExecutionCount=9223372036854775808")
            .await,
        400,
        "retainExecutionCount: expected an integer from 0 to 9223372036854775807",
    );
    let largest = api
        .delete("/main/schedule/clean?retainExecutionCount=9223372036854775807")
        .await;
    assert_eq!(largest.0, StatusCode::OK, "{largest:?}");
}

/// Found by schemathesis (the same class as `retainExecutionCount`): every count in a query, a
/// path or a body stays within the document's int64.
#[tokio::test(flavor = "multi_thread")]
async fn counts_beyond_int64_are_refused_naming_the_field() {
    let api = Api::new();
    assert_error(
        &api.get("/main/getChildJobLogs?parentJobId=p&execution=9223372036854775808")
            .await,
        400,
        "execution: expected an integer from 0 to 9223372036854775807",
    );
    assert_error(
        &api.post("/jobs/p/feedback/9223372036854775808", &json!({}))
            .await,
        400,
        "requestCounts: expected an integer from 0 to 9223372036854775807",
    );
    let mut job = triggered_job("001");
    job["remainingActions"] = json!(9_223_372_036_854_775_808_u64);
    assert_error(
        &api.post("/jobs/counted", &job).await,
        400,
        "remainingActions: expected a whole number from 0 to 9223372036854775807",
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
