//! `POST /apply`: job files merged into the stored jobs as declared timers are, with a dry run,
//! a prune by labels that removes only what an apply wrote, and the change id in the audit trail.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

fn file_job(job_id: &str, team: &str) -> Value {
    let mut body = seed_job_as(job_id);
    body["labels"] = json!({"team": team});
    body
}

/// A read job as a file keeps it: without its state (and, as `sundial export` writes it, without
/// `active`).
fn strip_state(job: &mut Value, active_too: bool) {
    let map = job.as_object_mut().unwrap();
    for key in [
        "state",
        "pausedNotes",
        "pausedUntil",
        "createdAt",
        "updatedAt",
    ] {
        map.remove(key);
    }
    if active_too {
        map.remove("active");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_apply_creates_merges_and_prunes_what_it_wrote() {
    let api = Api::new();
    // A job made by hand with the same label: never pruned, as no apply wrote it.
    api.create("by-hand", &file_job("by-hand", "payments"))
        .await;
    let files = json!({"jobs": [file_job("f-a", "payments"), file_job("f-b", "payments")], "changeId": "git:1"});

    // A dry run says what would happen and writes nothing.
    let mut dry = files.clone();
    dry["dryRun"] = json!(true);
    let (status, body) = api.post("/apply", &dry).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "changeId": "git:1", "dryRun": true, "created": ["f-a", "f-b"], "updated": {}, "unchanged": [], "deleted": []})
    );
    assert_eq!(api.status_of("f-a").await, StatusCode::NOT_FOUND);

    let body = api.post("/apply", &files).await.1;
    assert_eq!(body["created"], json!(["f-a", "f-b"]), "{body}");
    assert_eq!(api.status_of("f-a").await, StatusCode::OK);
    let body = api.post("/apply", &files).await.1;
    assert_eq!(
        body["unchanged"],
        json!(["f-a", "f-b"]),
        "idempotent: {body}"
    );

    // An operator pauses f-a and raises its timeout; the files change its name only.
    let (status, _) = api
        .post("/jobs/f-a/pause", &json!({"notes": "incident 7"}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let mut edited = api.job("f-a").await;
    strip_state(&mut edited, false);
    edited["timeoutSeconds"] = json!(300);
    let (status, answer) = api.post("/jobs/f-a/update", &edited).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let mut renamed = file_job("f-a", "payments");
    renamed["jobName"] = json!("renamed in git");
    let before_name = api.job("f-a").await["jobName"].clone();
    let changed = json!({"jobs": [renamed, file_job("f-b", "payments")], "changeId": "git:2", "dryRun": true});
    let body = api.post("/apply", &changed).await.1;
    assert_eq!(
        body["updated"],
        json!({"f-a": [{"path": "/jobName", "old": before_name, "new": "renamed in git"}]}),
        "the dry run's field diff: {body}"
    );
    let mut changed = changed;
    changed["dryRun"] = json!(false);
    let body = api.post("/apply", &changed).await.1;
    assert_eq!(
        body["updated"]["f-a"][0]["path"],
        json!("/jobName"),
        "{body}"
    );
    assert_eq!(body["unchanged"], json!(["f-b"]));
    let job = api.job("f-a").await;
    assert_eq!(job["jobName"], json!("renamed in git"));
    assert_eq!(
        job["timeoutSeconds"],
        json!(300),
        "the operator's edit stays"
    );
    assert_eq!(
        (&job["state"], &job["pausedNotes"]),
        (&json!("paused"), &json!("incident 7")),
        "the operator's pause stays"
    );

    // f-b leaves the files: without prune it stays; with prune it goes, by-hand stays.
    let only_a = json!({"jobs": [changed["jobs"][0].clone()], "changeId": "git:3"});
    let body = api.post("/apply", &only_a).await.1;
    assert_eq!(body["deleted"], json!([]), "{body}");
    let mut pruned = only_a.clone();
    pruned["prune"] = json!({"labels": {"team": "payments"}});
    let body = api.post("/apply", &pruned).await.1;
    assert_eq!(body["deleted"], json!(["f-b"]), "{body}");
    assert_eq!(api.status_of("f-b").await, StatusCode::NOT_FOUND);
    assert_eq!(api.status_of("by-hand").await, StatusCode::OK);

    // The audit trail names the apply and its change id.
    let history = api.get("/jobs/f-a/history").await.1;
    let entries = history["entries"].as_array().cloned().unwrap_or_default();
    let actions: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or(""),
                e["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("apply:update", "apply git:2"),
            ("update", ""),
            ("pause", "incident 7"),
            ("apply:create", "apply git:1"),
        ],
        "{history}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_apply_changes_nothing_and_names_the_field() {
    let api = Api::new();
    let mut bad = file_job("g-b", "x");
    bad["timeoutSeconds"] = json!("soon");
    let answer = api
        .post("/apply", &json!({"jobs": [file_job("g-a", "x"), bad]}))
        .await;
    assert_error(&answer, 400, "jobs[1].timeoutSeconds");
    assert_eq!(api.status_of("g-a").await, StatusCode::NOT_FOUND);

    let twice = json!({"jobs": [file_job("g-a", "x"), file_job("g-a", "x")]});
    assert_error(&api.post("/apply", &twice).await, 400, "jobs[1].jobId");
    let no_labels = json!({"jobs": [], "prune": {"labels": {}}});
    assert_error(&api.post("/apply", &no_labels).await, 400, "prune.labels");
    let bad_id = json!({"jobs": [], "changeId": "a b"});
    assert_error(&api.post("/apply", &bad_id).await, 400, "changeId");
    assert_error(&api.post("/apply", &json!({"job": []})).await, 400, "job");

    // A job a service declared belongs to its timer list.
    let list = json!({"timer": [file_job("svc-owned", "x")]});
    let (status, _) = api.put("/services/billing/timers", Some(&list)).await;
    assert_eq!(status, StatusCode::OK);
    let answer = api
        .post(
            "/apply",
            &json!({"jobs": [file_job("g-a", "x"), file_job("svc-owned", "x")]}),
        )
        .await;
    assert_error(&answer, 409, "job svc-owned is declared by service billing");
    assert_eq!(api.status_of("g-a").await, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exported_secret_header_keeps_its_stored_value() {
    let api = Api::new();
    let mut job = file_job("s-a", "x");
    job["request"][0]["headers"] = json!({"Authorization": "Bearer s3cret"});
    let body = api.post("/apply", &json!({"jobs": [job]})).await.1;
    assert_eq!(body["created"], json!(["s-a"]), "{body}");
    // What `sundial export` writes: the read job, its secret shown as the marker.
    let mut exported = api.job("s-a").await;
    assert_eq!(
        exported["request"][0]["headers"]["Authorization"],
        json!("***")
    );
    strip_state(&mut exported, true);
    exported["jobName"] = json!("renamed");
    let (status, body) = api.post("/apply", &json!({"jobs": [exported]})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["updated"]["s-a"],
        json!([{"path": "/jobName", "old": "job测试2", "new": "renamed"}]),
        "the marker keeps the secret: {body}"
    );
    // A changed secret is shown changed, never shown, in the dry run and in the apply.
    let mut rotated = api.job("s-a").await;
    strip_state(&mut rotated, true);
    rotated["request"][0]["headers"]["Authorization"] = json!("Bearer n3w");
    for dry in [true, false] {
        let (status, body) = api
            .post("/apply", &json!({"jobs": [rotated.clone()], "dryRun": dry}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(!body.to_string().contains("s3cret"), "{body}");
        assert!(!body.to_string().contains("n3w"), "{body}");
        assert_eq!(
            body["updated"]["s-a"],
            json!([{"path": "/request/0/headers/Authorization", "old": "***", "new": "***"}]),
            "dry run {dry}: {body}"
        );
    }
    // The marker on a new job has no stored value to keep.
    let mut fresh = api.job("s-a").await;
    fresh["jobId"] = json!("s-b");
    strip_state(&mut fresh, false);
    let answer = api.post("/apply", &json!({"jobs": [fresh]})).await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{}", answer.1);
}
