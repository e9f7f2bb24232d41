//! `GET /executions`: runs of every job, filtered and paged, newest scheduled first.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

/// Every page of `uri` (which has a query string), following `nextCursor`: the execution ids.
async fn search(api: &Api, uri: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut next = uri.to_owned();
    for _ in 0..50 {
        let (status, body) = api.get(&next).await;
        assert_eq!(status, StatusCode::OK, "{next}: {body}");
        for run in body["executions"].as_array().unwrap() {
            assert!(run.get("events").is_none(), "lists leave the event log out");
            ids.push(run["executionId"].as_str().unwrap().to_owned());
        }
        match body["nextCursor"].as_str() {
            Some(cursor) => next = format!("{uri}&cursor={cursor}"),
            None => return ids,
        }
    }
    panic!("{uri}: cursors never end");
}

async fn trigger_at(api: &Api, job_id: &str, at: &str) -> String {
    let (status, body) = api
        .call(
            axum::http::Method::POST,
            &format!("/jobs/{job_id}/trigger?scheduledTime={at}"),
            Some(&json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["executionId"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn executions_are_searched_across_jobs() {
    let api = Api::new();
    let mut pay = triggered_job("alice");
    pay["labels"] = json!({"team": "payments"});
    api.create("pay", &pay).await;
    api.create("rep", &triggered_job("bob")).await;
    api.create("kid", &child_job("pay", Some(1))).await;
    let p1 = trigger_at(&api, "pay", "2024-06-01T10:00:00Z").await;
    let r1 = trigger_at(&api, "rep", "2024-06-01T11:00:00Z").await;
    let p2 = trigger_at(&api, "pay", "2024-06-01T12:00:00Z").await;
    let k1 = trigger_at(&api, "kid", "2024-06-02T09:00:00Z").await;

    assert_eq!(
        search(&api, "/executions?limit=1").await,
        [k1.clone(), p2.clone(), r1.clone(), p1.clone()],
        "newest scheduled first, one per page"
    );
    assert_eq!(
        search(&api, "/executions?jobId=pay").await,
        [p2.clone(), p1.clone()]
    );
    assert_eq!(
        search(&api, "/executions?label=team:payments&limit=1").await,
        [p2.clone(), p1.clone()]
    );
    assert_eq!(search(&api, "/executions?creator=bob").await, [r1.as_str()]);
    assert_eq!(
        search(&api, "/executions?source=parent").await,
        [k1.as_str()]
    );
    assert_eq!(
        search(&api, "/executions?source=trigger&limit=2")
            .await
            .len(),
        4
    );
    assert!(search(&api, "/executions?source=schedule").await.is_empty());
    assert_eq!(
        search(
            &api,
            "/executions?since=2024-06-01T10:30:00Z&until=2024-06-01T12:00:00Z"
        )
        .await,
        [r1.as_str()]
    );
    // Triggered runs wait to be run (no engine here): Enqueued, not ended.
    assert_eq!(
        search(&api, "/executions?state=Enqueued,Failed")
            .await
            .len(),
        4
    );
    assert!(search(&api, "/executions?state=Failed").await.is_empty());
    assert!(search(&api, "/executions?endedSince=2000-01-01T00:00:00Z")
        .await
        .is_empty());
    // A time back from now.
    assert_eq!(search(&api, "/executions?since=P3650D").await.len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_search_filter_is_a_400_naming_it() {
    let api = Api::new();
    for (query, field) in [
        ("state=Broken", "state:"),
        ("jobId=a%20b", "jobId:"),
        ("label=nocolon", "label:"),
        ("source=cron", "source:"),
        ("since=yesterday", "since:"),
        ("until=soon", "until:"),
        ("endedSince=x", "endedSince:"),
        ("endedUntil=x", "endedUntil:"),
        ("since=1h&until=2h", "until:"),
        ("cursor=bogus", "cursor:"),
        ("cursor=e1.1.x", "cursor:"),
        ("limit=0", "limit:"),
        ("stat=Failed", "stat:"),
        ("state=Failed&state=Skipped", "state:"),
        // A filter given empty is refused as its schema says (schemathesis found `?state=`
        // answered 200).
        ("state=", "state:"),
        ("jobId=", "jobId:"),
        ("since=", "since:"),
    ] {
        assert_error(&api.get(&format!("/executions?{query}")).await, 400, field);
    }
    let empty: Value = api.get("/executions").await.1;
    assert_eq!(empty, json!({"executions": [], "nextCursor": null}));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_label_filter_is_refused_as_the_document_says() {
    let api = Api::new();
    assert_error(&api.get("/executions?label=").await, 400, "label: is empty");
}
