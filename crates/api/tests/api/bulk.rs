//! Labels on jobs and bulk actions by query (`POST /bulk/jobs/{pause,unpause,trigger,delete,backfill}`): selection by labels,
//! filters and id lists, partial failures, dry runs, and paging beyond the per-request bound.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

fn labelled(creator: &str, labels: Value) -> Value {
    let mut body = triggered_job(creator);
    body["labels"] = labels;
    body
}

/// A job with a schedule (hourly), labelled.
fn scheduled(labels: Value) -> Value {
    let mut body = labelled("001", labels);
    body.as_object_mut().unwrap().remove("timer");
    body["schedule"] = json!({"cron": ["0 * * * *"]});
    body
}

fn ids(body: &Value, list: &str) -> Vec<String> {
    body[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {body}"))
        .iter()
        .map(|j| j["jobId"].as_str().unwrap().to_owned())
        .collect()
}

async fn listed(api: &Api, query: &str) -> Vec<String> {
    let (status, body) = api.get(&format!("/jobs?{query}")).await;
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    ids(&body, "jobs")
}

#[tokio::test(flavor = "multi_thread")]
async fn labels_are_kept_shown_and_select_jobs() {
    let api = Api::new();
    api.create(
        "pay-1",
        &labelled("alice", json!({"team": "payments", "tier": "1"})),
    )
    .await;
    api.create(
        "pay-2",
        &labelled("bob", json!({"team": "payments", "tier": "2"})),
    )
    .await;
    api.create(
        "rep-1",
        &labelled("alice", json!({"team": "reports", "tier": "1"})),
    )
    .await;
    api.create("plain", &triggered_job("alice")).await;

    assert_eq!(
        api.job("pay-1").await["labels"],
        json!({"team": "payments", "tier": "1"})
    );
    assert_eq!(
        listed(&api, "label=team:payments").await,
        ["pay-1", "pay-2"]
    );
    assert_eq!(listed(&api, "label=tier:1").await, ["pay-1", "rep-1"]);
    assert_eq!(
        listed(&api, "label=team:payments&label=tier:1").await,
        ["pay-1"]
    );
    assert_eq!(
        listed(&api, "label=tier:1&creator=alice&idPrefix=rep").await,
        ["rep-1"]
    );
    assert_eq!(listed(&api, "idPrefix=pay-").await, ["pay-1", "pay-2"]);
    assert!(listed(&api, "label=team:nobody").await.is_empty());

    assert_error(&api.get("/jobs?label=team").await, 400, "label:");
    assert_error(&api.get("/jobs?label=a%20b:c").await, 400, "label:");
    assert_error(&api.get("/jobs?idPrefix=a~b").await, 400, "idPrefix:");
    assert_error(&api.get("/jobs?creator=a&creator=b").await, 400, "creator:");
    assert_error(
        &api.post("/jobs/bad", &labelled("alice", json!({"team": 7})))
            .await,
        400,
        "labels.team:",
    );
    assert_error(
        &api.post("/jobs/bad", &labelled("alice", json!({"team": ""})))
            .await,
        400,
        "labels.team:",
    );

    // An update moves the job between label selections.
    let (status, body) = api
        .post(
            "/jobs/pay-2/update",
            &labelled("bob", json!({"team": "reports"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(listed(&api, "label=team:payments").await, ["pay-1"]);
    assert_eq!(listed(&api, "label=team:reports").await, ["pay-2", "rep-1"]);

    // A service's declared timers keep their labels.
    let mut declared = labelled("svc", json!({"team": "ops"}));
    declared["jobId"] = json!("ops-1");
    let (status, body) = api
        .put("/services/ops/timers", Some(&json!({"timer": [declared]})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(listed(&api, "label=team:ops&service=ops").await, ["ops-1"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_pause_by_label_acts_on_exactly_the_selected_jobs() {
    let api = Api::new();
    for id in ["pay-1", "pay-2"] {
        api.create(id, &labelled("alice", json!({"team": "payments"})))
            .await;
    }
    api.create("rep-1", &labelled("alice", json!({"team": "reports"})))
        .await;

    let request = json!({"labels": {"team": "payments"}, "reason": "payments freeze"});
    let (status, body) = api.post("/bulk/jobs/pause", &request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["resp_code"], 200);
    assert_eq!(body["action"], "pause");
    assert_eq!(
        (body["matched"].as_u64(), body["succeeded"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(ids(&body, "results"), ["pay-1", "pay-2"]);
    assert!(body["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "ok"));
    assert_eq!(body["nextCursor"], Value::Null);
    for id in ["pay-1", "pay-2"] {
        let job = api.job(id).await;
        assert_eq!(job["active"], 0, "{id}");
        assert_eq!(
            job["pausedNotes"], "payments freeze",
            "the reason is the pause note"
        );
    }
    assert_eq!(
        api.job("rep-1").await["active"],
        1,
        "another label is left alone"
    );

    let (status, body) = api
        .post(
            "/bulk/jobs/unpause",
            &json!({"labels": {"team": "payments"}, "state": "paused", "reason": "thaw", "notes": "back"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["succeeded"], 2);
    assert_eq!(api.job("pay-1").await["active"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_reports_partial_failures_per_job() {
    let api = Api::new();
    api.create("a", &triggered_job("alice")).await;
    api.create("b", &triggered_job("alice")).await;
    // An explicit list with a job that does not exist: the others are still paused.
    let (status, body) = api
        .post(
            "/bulk/jobs/pause",
            &json!({"jobIds": ["a", "ghost", "b", "a"], "reason": "maintenance"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        ids(&body, "results"),
        ["a", "ghost", "b"],
        "in order, duplicates once"
    );
    assert_eq!(
        (body["succeeded"].as_u64(), body["failed"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(body["results"][1]["status"], "error");
    assert_eq!(body["results"][1]["error"]["code"], 404);
    assert_eq!(api.job("a").await["active"], 0);
    assert_eq!(api.job("b").await["active"], 0);

    // A job in a state the action refuses: backfill needs a schedule; the scheduled job runs.
    api.create("hourly", &scheduled(json!({"team": "data"})))
        .await;
    api.create("manual", &labelled("001", json!({"team": "data"})))
        .await;
    let (status, body) = api
        .post(
            "/bulk/jobs/backfill",
            &json!({
                "labels": {"team": "data"},
                "reason": "reprocess the outage",
                "backfill": {"startTime": "2024-03-10T09:00:00Z", "endTime": "2024-03-10T11:00:00Z"}
            }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body, "results"), ["hourly", "manual"]);
    assert_eq!(body["results"][0]["status"], "ok");
    assert_eq!(body["results"][0]["count"], 3);
    assert_eq!(body["results"][1]["status"], "error");
    assert_eq!(body["results"][1]["error"]["code"], 409);

    // Trigger answers each run; delete removes the jobs.
    let (status, body) = api
        .post(
            "/bulk/jobs/trigger",
            &json!({"jobIds": ["a", "b"], "reason": "rerun", "arguments": {"n": 1}, "idempotencyKey": "k1"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["results"][0]["executionId"], "a~t~k1");
    let (status, body) = api
        .post(
            "/bulk/jobs/delete",
            &json!({"idPrefix": "a", "reason": "retired"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body, "results"), ["a"]);
    assert_eq!(api.status_of("a").await, StatusCode::NOT_FOUND);
    assert_eq!(api.status_of("b").await, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_dry_run_acts_on_nothing() {
    let api = Api::new();
    api.create("x-1", &labelled("alice", json!({"env": "prod"})))
        .await;
    api.create("x-2", &labelled("alice", json!({"env": "prod"})))
        .await;
    for action in ["pause", "delete", "trigger"] {
        let (status, body) = api
            .post(
                &format!("/bulk/jobs/{action}"),
                &json!({"labels": {"env": "prod"}, "reason": "just looking", "dryRun": true}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["dryRun"], true);
        assert_eq!(ids(&body, "results"), ["x-1", "x-2"]);
        assert!(body["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "matched"));
        assert_eq!(body["succeeded"], 0);
    }
    let job = api.job("x-1").await;
    assert_eq!(job["active"], 1);
    let runs = api.get("/jobs/x-1/executions").await.1;
    assert_eq!(runs["executions"], json!([]), "a dry trigger runs nothing");
    // An explicit list's dry run shows which would fail.
    let (_, body) = api
        .post(
            "/bulk/jobs/pause",
            &json!({"jobIds": ["x-1", "ghost"], "reason": "look", "dryRun": true}),
        )
        .await;
    assert_eq!(body["results"][0]["status"], "matched");
    assert_eq!(body["results"][1]["error"]["code"], 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_refuses_malformed_requests_naming_the_field() {
    let api = Api::new();
    api.create("a", &triggered_job("alice")).await;
    for (uri, body, prefix) in [
        ("/bulk/jobs/pause", json!({"jobIds": ["a"]}), "reason:"),
        (
            "/bulk/jobs/pause",
            json!({"jobIds": ["a"], "reason": " "}),
            "reason:",
        ),
        ("/bulk/jobs/pause", json!({"reason": "r"}), "jobIds:"),
        (
            "/bulk/jobs/pause",
            json!({"jobIds": ["a"], "creator": "x", "reason": "r"}),
            "jobIds:",
        ),
        (
            "/bulk/jobs/pause",
            json!({"jobIds": [], "reason": "r"}),
            "jobIds:",
        ),
        (
            "/bulk/jobs/pause",
            json!({"jobIds": ["a~b"], "reason": "r"}),
            "jobIds[0]:",
        ),
        (
            "/bulk/jobs/pause",
            json!({"labels": {"a b": "c"}, "reason": "r"}),
            "labels.a b:",
        ),
        (
            "/bulk/jobs/pause",
            json!({"state": "gone", "reason": "r"}),
            "state:",
        ),
        (
            "/bulk/jobs/pause",
            json!({"creator": "x", "reason": "r", "arguments": {}}),
            "arguments:",
        ),
        (
            "/bulk/jobs/backfill",
            json!({"creator": "x", "reason": "r"}),
            "backfill:",
        ),
        (
            "/bulk/jobs/backfill",
            json!({"creator": "x", "reason": "r", "backfill": {"startTime": "x", "endTime": "y"}}),
            "backfill.startTime:",
        ),
        (
            "/bulk/jobs/pause",
            json!({"creator": "x", "reason": "r", "cursor": "bogus"}),
            "cursor:",
        ),
    ] {
        assert_error(&api.post(uri, &body).await, 400, prefix);
    }
    // Each action is a route of its own: an unknown one is not a route.
    let unknown = api
        .post("/bulk/jobs/launch", &json!({"creator": "x", "reason": "r"}))
        .await;
    assert_eq!(unknown.0.as_u16(), 404, "{unknown:?}");
    assert_eq!(api.job("a").await["active"], 1, "nothing was changed");
}

#[tokio::test(flavor = "multi_thread")]
async fn bulk_pages_beyond_the_per_request_bound() {
    let api = Api::new();
    let total = sundial_service::app::MAX_BULK_JOBS + 5;
    for i in 0..total {
        api.create(
            &format!("job-{i:04}"),
            &labelled("alice", json!({"fleet": "big"})),
        )
        .await;
    }
    let mut request = json!({"labels": {"fleet": "big"}, "reason": "drain"});
    let (status, first) = api.post("/bulk/jobs/pause", &request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first["matched"], 1000);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("a cursor beyond 1,000 jobs");
    request["cursor"] = json!(cursor);
    let (status, second) = api.post("/bulk/jobs/pause", &request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        ids(&second, "results"),
        ["job-1000", "job-1001", "job-1002", "job-1003", "job-1004"]
    );
    assert_eq!(second["nextCursor"], Value::Null);
    assert!(
        listed(&api, "state=active").await.is_empty(),
        "every job paused once"
    );
}
