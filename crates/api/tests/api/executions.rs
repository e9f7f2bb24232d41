//! Executions: the event log, cancel and terminate along the state graph.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use sundial_ports::store::ExecutionStore;

use crate::support::*;

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
