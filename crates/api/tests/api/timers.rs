//! Declarative timers, reconciled per service.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

fn timer_entry(job_id: &str, name: &str) -> Value {
    let mut body = seed_job_as(job_id);
    body["jobName"] = json!(name);
    body
}

async fn service_jobs(api: &Api, service: &str) -> Vec<(String, String)> {
    let body = api.get(&format!("/jobs?service={service}")).await.1;
    body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobId"].as_str().unwrap().to_owned(),
                j["jobName"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn timers_are_reconciled_per_service() {
    let api = Api::new();
    let list = json!({"timer": [timer_entry("t-a", "A"), timer_entry("t-b", "B")]});
    let (status, body) = api.put("/services/jobswork/timers", Some(&list)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "created": ["t-a", "t-b"], "updated": [], "changedFields": {}, "unchanged": [], "removed": []})
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-a", "A"), ("t-b", "B")])
    );

    let again = api.put("/services/jobswork/timers", Some(&list)).await.1;
    assert_eq!(
        again,
        json!({"resp_code": 200, "resp_msg": null, "created": [], "updated": [], "changedFields": {}, "unchanged": ["t-a", "t-b"], "removed": []}),
        "a second identical call changes nothing"
    );

    // A bare array is accepted too: B changes, A goes, C comes.
    let list = json!([timer_entry("t-b", "B2"), timer_entry("t-c", "C")]);
    let body = api.put("/services/jobswork/timers", Some(&list)).await.1;
    assert_eq!(
        body,
        json!({"resp_code": 200, "resp_msg": null, "created": ["t-c"], "updated": ["t-b"], "changedFields": {"t-b": ["jobName"]}, "unchanged": [], "removed": ["t-a"]})
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-b", "B2"), ("t-c", "C")])
    );
    assert_eq!(api.status_of("t-a").await, StatusCode::NOT_FOUND);
    let body = api.put("/services/jobswork/timers", Some(&list)).await.1;
    assert_eq!(body["unchanged"], json!(["t-b", "t-c"]));

    // One invalid entry: nothing changes.
    let mut broken = timer_entry("t-d", "D");
    broken["request"][0]["url"] = json!("gopher://x");
    let list = json!({"timer": [timer_entry("t-b", "B3"), broken]});
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        400,
        "timer[1].request[0].url:",
    );
    let list = json!({"timer": [timer_entry("t-b", "B3"), {"jobName": "no id"}]});
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        400,
        "timer[1].jobId:",
    );
    let list = json!([timer_entry("t-b", "B3"), timer_entry("t-b", "B4")]);
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        400,
        "timer[1].jobId:",
    );
    assert_error(
        &api.put("/services/jobswork/timers", Some(&json!({"timers": 5})))
            .await,
        400,
        "timer:",
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-b", "B2"), ("t-c", "C")])
    );

    // A job created by hand, or by another service, is not this service's to change.
    // (`z-manual` sorts last, so the entries before it would be applied first.)
    api.create("z-manual", &seed_job_as("z-manual")).await;
    let list = json!([
        timer_entry("t-b", "B5"),
        timer_entry("z-manual", "taken"),
        timer_entry("t-0", "new")
    ]);
    assert_error(
        &api.put("/services/jobswork/timers", Some(&list)).await,
        409,
        "job z-manual",
    );
    let other = json!([timer_entry("t-c", "mine now")]);
    assert_error(
        &api.put("/services/other/timers", Some(&other)).await,
        409,
        "job t-c",
    );
    assert_eq!(
        service_jobs(&api, "jobswork").await,
        pairs(&[("t-b", "B2"), ("t-c", "C")]),
        "a refused reconcile changes nothing"
    );
    assert_eq!(api.status_of("t-0").await, StatusCode::NOT_FOUND);
    assert_eq!(api.job("z-manual").await["jobName"], json!("job测试2"));
    assert!(service_jobs(&api, "other").await.is_empty());

    // An empty list removes every job of the service.
    let body = api
        .put("/services/jobswork/timers", Some(&json!([])))
        .await
        .1;
    assert_eq!(body["removed"], json!(["t-b", "t-c"]));
    assert_eq!(api.status_of("z-manual").await, StatusCode::OK);
}

/// Found by schemathesis: `{"timers": [], "x": 42}` reconciled (and so removed the service's jobs)
/// with the unknown field ignored; unknown fields are refused everywhere else.
#[tokio::test(flavor = "multi_thread")]
async fn a_timer_list_with_an_unknown_field_or_both_keys_changes_nothing() {
    let api = Api::new();
    let list = json!({"timer": [timer_entry("t-keep", "kept")]});
    let (status, _) = api.put("/services/strict/timers", Some(&list)).await;
    assert_eq!(status, StatusCode::OK);

    let typo = json!({"timers": [], "x-unknown": 42});
    assert_error(
        &api.put("/services/strict/timers", Some(&typo)).await,
        400,
        "x-unknown: unknown field",
    );
    let both = json!({"timer": [], "timers": []});
    assert_error(
        &api.put("/services/strict/timers", Some(&both)).await,
        400,
        "timers: give either timer or timers, not both",
    );
    assert_eq!(
        service_jobs(&api, "strict").await,
        pairs(&[("t-keep", "kept")])
    );
    // Either key alone still works.
    let (status, body) = api
        .put("/services/strict/timers", Some(&json!({"timers": []})))
        .await;
    assert_eq!(
        (status, &body["removed"]),
        (StatusCode::OK, &json!(["t-keep"]))
    );
}

/// Issue 26 item 2: re-declaring a service's timers (what every start of the service does) undid
/// an operator's pause: the job was listed `updated`, active again, its pause notes gone. A
/// declaration is now merged three ways with the one before it: re-declaring an unchanged list
/// changes nothing; pause state, pause notes and labels are never touched; an operator's edit of a
/// field the code did not change stays; what the code changed is applied and named, in the answer
/// and in the audit trail.
#[tokio::test(flavor = "multi_thread")]
async fn a_declaration_applies_only_what_the_code_changed() {
    let api = Api::new();
    let mut declared = timer_entry("svc-a", "A");
    declared["labels"] = json!({"team": "billing"});
    let list = json!({"timer": [declared.clone()]});
    let body = api.put("/services/billing/timers", Some(&list)).await.1;
    assert_eq!(body["created"], json!(["svc-a"]));
    let (status, _) = api
        .post(
            "/jobs/svc-a/pause",
            &json!({"notes": "incident 42: the ledger is down"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // The same list again: unchanged, still paused with its notes.
    let body = api.put("/services/billing/timers", Some(&list)).await.1;
    assert_eq!(
        (&body["updated"], &body["unchanged"]),
        (&json!([]), &json!(["svc-a"])),
        "{body}"
    );
    let job = api.job("svc-a").await;
    assert_eq!(
        (&job["active"], &job["state"], &job["pausedNotes"]),
        (
            &json!(0),
            &json!("paused"),
            &json!("incident 42: the ledger is down")
        )
    );

    // An operator edits a field the code does not change, and relabels the job: both stay.
    let mut edited = job.clone();
    for key in ["state", "pausedNotes", "createdAt", "updatedAt"] {
        edited.as_object_mut().unwrap().remove(key);
    }
    edited["timeoutSeconds"] = json!(300);
    edited["labels"] = json!({"team": "ops"});
    let (status, answer) = api.post("/jobs/svc-a/update", &edited).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let body = api.put("/services/billing/timers", Some(&list)).await.1;
    assert_eq!(body["unchanged"], json!(["svc-a"]), "{body}");
    let job = api.job("svc-a").await;
    assert_eq!(job["timeoutSeconds"], json!(300));
    assert_eq!(job["labels"], json!({"team": "ops"}));
    assert_eq!(job["active"], json!(0));

    // The code changes the timer and the name, and its labels: the timer and the name are
    // applied, the operator's timeout, labels, pause and notes stay.
    let mut changed = declared.clone();
    changed["timer"] = json!({"period": "0 0 3 * * ?"});
    changed["jobName"] = json!("A2");
    changed["labels"] = json!({"team": "billing-2"});
    let list = json!({"timer": [changed]});
    let body = api.put("/services/billing/timers", Some(&list)).await.1;
    assert_eq!(body["updated"], json!(["svc-a"]), "{body}");
    assert_eq!(
        body["changedFields"],
        json!({"svc-a": ["jobName", "timer"]})
    );
    let job = api.job("svc-a").await;
    assert_eq!(job["timer"], json!({"period": "0 0 3 * * ?"}));
    assert_eq!(job["jobName"], json!("A2"));
    assert_eq!(job["timeoutSeconds"], json!(300));
    assert_eq!(job["labels"], json!({"team": "ops"}));
    assert_eq!(
        (&job["active"], &job["pausedNotes"]),
        (&json!(0), &json!("incident 42: the ledger is down"))
    );
    let body = api.put("/services/billing/timers", Some(&list)).await.1;
    assert_eq!(body["unchanged"], json!(["svc-a"]), "idempotent: {body}");

    // The audit trail: the declaration's update names its fields; the removal is recorded.
    let body = api
        .put("/services/billing/timers", Some(&json!([])))
        .await
        .1;
    assert_eq!(body["removed"], json!(["svc-a"]));
    let history = api.get("/jobs/svc-a/history").await.1;
    let entries = history["entries"].as_array().cloned().unwrap_or_default();
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        actions,
        [
            "timers:delete",
            "timers:update",
            "update",
            "pause",
            "timers:create"
        ],
        "{history}"
    );
    assert_eq!(entries[1]["fields"], json!(["jobName", "timer"]));
}
