//! Listings: a job's executions and the job list, filtered and paginated.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn job_executions_are_newest_first_and_paginated() {
    let api = Api::new();
    api.create("ondemand", &triggered_job("001")).await;
    for n in 1..=5 {
        api.trigger("ondemand", &json!({"n": n})).await;
    }
    let mut numbers = Vec::new();
    let mut uri = "/jobs/ondemand/executions?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let (status, body) = api.get(&uri).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        pages += 1;
        for execution in body["executions"].as_array().unwrap() {
            numbers.push(execution["executeNumber"].as_u64().unwrap());
            assert!(
                execution.get("events").is_none(),
                "lists leave the event log out"
            );
            assert_eq!(execution["arguments"]["n"], execution["executeNumber"]);
        }
        match body["nextCursor"].as_str() {
            Some(cursor) => uri = format!("/jobs/ondemand/executions?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(numbers, [5, 4, 3, 2, 1]);
    assert_eq!(pages, 3);

    let all = api.get("/jobs/ondemand/executions").await.1;
    assert_eq!(all["executions"].as_array().unwrap().len(), 5);
    assert_eq!(all["nextCursor"], Value::Null);
    assert_error(
        &api.get("/jobs/ondemand/executions?cursor=bogus").await,
        400,
        "cursor:",
    );
    assert_error(
        &api.get("/jobs/ondemand/executions?limit=0").await,
        400,
        "limit:",
    );
    assert_error(
        &api.get("/jobs/ondemand/executions?limit=1001").await,
        400,
        "limit:",
    );
    let none = api.get("/jobs/never-created/executions").await;
    assert_eq!(
        none,
        (
            StatusCode::OK,
            json!({"executions": [], "nextCursor": null})
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn list_jobs_filters_and_paginates() {
    let api = Api::new();
    api.create("p", &triggered_job("alice")).await;
    api.create("a1", &triggered_job("alice")).await;
    api.create("b1", &triggered_job("bob")).await;
    api.create("b2", &triggered_job("bob")).await;
    let mut child = child_job("p", None);
    child["creator"] = json!("bob");
    api.create("c1", &child).await;
    api.create("c2", &child_job("p", Some(1))).await;
    api.put("/jobs/b2?active=0", None).await;
    api.post("/jobs/c2/pause", &json!({"notes": "off"})).await;

    let cases = [
        ("/jobs", vec!["a1", "b1", "b2", "c1", "c2", "p"]),
        ("/jobs?state=paused", vec!["b2", "c2"]),
        ("/jobs?state=active", vec!["a1", "b1", "c1", "p"]),
        ("/jobs?creator=bob", vec!["b1", "b2", "c1"]),
        ("/jobs?parentJob=p", vec!["c1", "c2"]),
        ("/jobs?parentJob=p&creator=bob", vec!["c1"]),
        ("/jobs?parentJob=p&state=paused", vec!["c2"]),
        ("/jobs?creator=nobody", vec![]),
    ];
    for (uri, want) in cases {
        let (status, body) = api.get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert_eq!(ids(&body), want, "{uri}");
        assert_eq!(body["nextCursor"], Value::Null, "{uri}");
    }
    let paused = api.get("/jobs?state=paused").await.1;
    assert_eq!(
        paused["jobs"][1]["pausedNotes"],
        json!("off"),
        "listed jobs are GET's jobs"
    );

    let mut pages = Vec::new();
    let mut uri = "/jobs?limit=2&state=active".to_owned();
    loop {
        let body = api.get(&uri).await.1;
        pages.push(ids(&body));
        match body["nextCursor"].as_str() {
            Some(cursor) => uri = format!("/jobs?limit=2&state=active&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(
        pages,
        [["a1", "b1"], ["c1", "p"]],
        "full pages, no empty last one"
    );

    assert_error(&api.get("/jobs?state=deleted").await, 400, "state:");
    assert_error(&api.get("/jobs?owner=alice").await, 400, "owner:");
    assert_error(&api.get("/jobs?cursor=nope").await, 400, "cursor:");
    assert_error(&api.get("/jobs?limit=many").await, 400, "limit:");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_jobs_sorts_by_next_fire_and_last_run_with_pages() {
    use std::sync::Arc;
    use sundial_ports::memory::{ManualClock, MemoryStore};
    use sundial_service::{App, AppConfig};

    let clock = Arc::new(ManualClock::new(NOW.parse().unwrap()));
    let app = Arc::new(App::new(
        MemoryStore::new(),
        clock.clone(),
        AppConfig::new(TEST_SECRET.to_vec()),
    ));
    let api = Api {
        router: sundial_api::router(Arc::clone(&app), None),
        app,
    };
    let daily = |cron: &str| {
        let mut job = triggered_job("001");
        job.as_object_mut().unwrap().remove("timer");
        job["schedule"] = json!({"cron": [cron]});
        job
    };
    // The clock reads 12:34:56 UTC.
    api.create("noon", &daily("0 13 * * *")).await;
    api.create("soon", &daily("40 12 * * *")).await;
    api.create("night", &daily("0 2 * * *")).await;
    api.create("hook", &triggered_job("001")).await;
    api.create("paused", &daily("45 12 * * *")).await;
    api.post("/jobs/paused/pause", &json!({})).await;
    for job in ["night", "hook", "noon"] {
        api.trigger(job, &json!({})).await;
        clock.advance(chrono::Duration::seconds(1));
    }

    for (sort, want) in [
        ("id", ["hook", "night", "noon", "paused", "soon"]),
        ("nextFire", ["soon", "noon", "night", "hook", "paused"]),
        ("lastRun", ["noon", "hook", "night", "paused", "soon"]),
    ] {
        let (status, body) = api.get(&format!("/jobs?sort={sort}")).await;
        assert_eq!(status, StatusCode::OK, "{sort}: {body}");
        assert_eq!(ids(&body), want, "sort={sort}");
        let mut paged = Vec::new();
        let mut uri = format!("/jobs?sort={sort}&limit=2");
        loop {
            let body = api.get(&uri).await.1;
            paged.extend(ids(&body));
            match body["nextCursor"].as_str() {
                Some(cursor) => uri = format!("/jobs?sort={sort}&limit=2&cursor={cursor}"),
                None => break,
            }
        }
        assert_eq!(paged, want, "sort={sort} in pages of 2");
    }

    assert_error(&api.get("/jobs?sort=name").await, 400, "sort:");
    let by_id = api.get("/jobs?limit=1").await.1;
    let cursor = by_id["nextCursor"].as_str().unwrap();
    assert_error(
        &api.get(&format!("/jobs?sort=nextFire&cursor={cursor}"))
            .await,
        400,
        "cursor:",
    );
}

/// The `jobId`s of a `GET /jobs` answer, in order.
fn ids(body: &Value) -> Vec<String> {
    body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobId"].as_str().unwrap().to_owned())
        .collect()
}
