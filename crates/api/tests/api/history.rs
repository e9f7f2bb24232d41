//! `GET /jobs/{jobId}/history` and who may change what: every change through the API leaves an
//! entry with its actor (the named token), its reason and, for an update, its diff; a token of
//! scope read reads everything and is refused every change.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};
use sundial_api::openapi::document;
use sundial_api::{auth::needs_write, is_public_path, ApiAuth, ApiToken, Scope};
use sundial_ports::store::PageRequest;
use sundial_service::{Actor, ChangeBy};

use crate::support::{assert_error, ok, triggered_job, Api};

const WRITER: &str = "alice-secret-0123456789";
const READER: &str = "reader-secret-012345678";

fn named_tokens() -> Api {
    Api::with_auth(ApiAuth::tokens(vec![
        ApiToken::new("alice", Scope::Write, WRITER),
        ApiToken::new("dashboard", Scope::Read, READER),
    ]))
}

impl Api {
    async fn as_token(
        &self,
        token: &str,
        method: Method,
        uri: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json");
        let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
        self.send(request.body(body).unwrap()).await
    }

    /// Every entry of a job's history, newest first, read by the read token a page of 2 at a time.
    async fn history(&self, token: &str, job_id: &str) -> Vec<Value> {
        let mut entries = Vec::new();
        let mut uri = format!("/jobs/{job_id}/history?limit=2");
        loop {
            let (status, page) = self.as_token(token, Method::GET, &uri, None).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            entries.extend(page["entries"].as_array().unwrap().iter().cloned());
            match page["nextCursor"].as_str() {
                Some(cursor) => {
                    uri = format!("/jobs/{job_id}/history?limit=2&cursor={cursor}");
                }
                None => return entries,
            }
        }
    }
}

fn scheduled_job(name: &str) -> Value {
    json!({
        "jobName": name, "creator": "001", "creatorName": "tests",
        "request": [{"url": "http://127.0.0.1:9/run", "method": "POST",
                     "headers": {"Authorization": "Bearer target-secret"}}],
        "schedule": {"cron": ["0 * * * *"]},
    })
}

fn field<'a>(entries: &'a [Value], name: &str) -> Vec<&'a Value> {
    entries.iter().map(|e| &e[name]).collect()
}

#[tokio::test]
async fn every_change_is_in_the_history_with_its_actor_reason_and_diff() {
    let api = named_tokens();
    let write = |method: Method, uri: &'static str, body: Option<Value>| {
        let api = &api;
        async move {
            let answer = api.as_token(WRITER, method, uri, body.as_ref()).await;
            assert_eq!(answer.0, StatusCode::OK, "{uri}: {}", answer.1);
            answer.1
        }
    };
    write(Method::POST, "/jobs/audited", Some(scheduled_job("first"))).await;
    let mut changed = scheduled_job("second");
    changed["schedule"] = json!({"cron": ["30 * * * *"]});
    changed["request"][0]["headers"]["Authorization"] = json!("Bearer rotated-secret");
    write(Method::POST, "/jobs/audited/update", Some(changed)).await;
    write(
        Method::POST,
        "/jobs/audited/pause",
        Some(json!({"notes": "maintenance window"})),
    )
    .await;
    write(Method::POST, "/jobs/audited/unpause", None).await;
    write(Method::PUT, "/jobs/audited?active=0", None).await;
    let triggered = write(Method::POST, "/jobs/audited/trigger", Some(json!({"n": 1}))).await;
    let backfill = json!({"startTime": "2024-03-10T09:00:00Z", "endTime": "2024-03-10T11:00:00Z"});
    write(
        Method::POST,
        "/jobs/audited/backfill",
        Some(backfill.clone()),
    )
    .await;
    write(Method::DELETE, "/jobs/audited", None).await;

    // The trail outlives the job, and the read token reads it.
    let entries = api.history(READER, "audited").await;
    let actions: Vec<&str> = entries
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["delete", "backfill", "trigger", "pause", "unpause", "pause", "update", "create"]
    );
    assert!(
        field(&entries, "actor")
            .iter()
            .all(|a| **a == json!("alice")),
        "{entries:?}"
    );
    assert!(field(&entries, "jobId")
        .iter()
        .all(|a| **a == json!("audited")));
    let versions: Vec<u64> = entries
        .iter()
        .map(|e| e["version"].as_u64().unwrap())
        .collect();
    assert!(
        versions.windows(2).all(|w| w[0] > w[1]),
        "newest first: {versions:?}"
    );
    let states: Vec<&str> = entries
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        ["deleted", "paused", "paused", "paused", "active", "paused", "active", "active"]
    );

    let [delete, backfilled, trigger, paused_again, unpause, pause, update, create] = &entries[..]
    else {
        panic!("{entries:?}")
    };
    assert_eq!(create["definition"]["jobName"], json!("first"));
    assert_eq!(
        create["definition"]["request"][0]["headers"]["Authorization"],
        json!("***"),
        "secrets never enter the trail"
    );
    assert!(create.get("changes").is_none());
    assert_eq!(update["definition"]["jobName"], json!("second"));
    assert_eq!(
        update["changes"],
        json!([
            {"path": "/jobName", "old": "first", "new": "second"},
            {"path": "/request/0/headers/Authorization", "old": "***", "new": "***"},
            {"path": "/schedule/cron/0", "old": "0 * * * *", "new": "30 * * * *"},
        ])
    );
    assert_eq!(pause["reason"], json!("maintenance window"));
    assert!(unpause.get("reason").is_none(), "{unpause}");
    assert!(paused_again.get("definition").is_none());
    assert_eq!(trigger["executionId"], triggered["executionId"]);
    assert_eq!(backfilled["request"], backfill);
    assert_eq!(backfilled["count"], json!(2));
    assert!(delete.get("definition").is_none());
    let json = serde_json::to_string(&entries).unwrap();
    assert!(!json.contains("target-secret") && !json.contains("rotated-secret"));

    // An unknown job has an empty history; a bad cursor or limit is a 400 naming it.
    assert_eq!(api.history(READER, "never").await, Vec::<Value>::new());
    let answer = api
        .as_token(READER, Method::GET, "/jobs/audited/history?cursor=zz", None)
        .await;
    assert_error(&answer, 400, "cursor:");
    let answer = api
        .as_token(READER, Method::GET, "/jobs/audited/history?limit=0", None)
        .await;
    assert_error(&answer, 400, "limit:");
}

/// A bulk action records each job's change as `bulk:{action}`, by the token that asked, for the
/// request's reason (the pause notes are the job's own), and only on the jobs it selected.
#[tokio::test]
async fn a_bulk_pause_by_label_is_in_each_jobs_history_with_actor_and_reason() {
    let api = named_tokens();
    for (id, team) in [
        ("pay-1", "payments"),
        ("pay-2", "payments"),
        ("rep-1", "reports"),
    ] {
        let mut job = triggered_job("001");
        job["labels"] = json!({"team": team});
        let (status, body) = api
            .as_token(WRITER, Method::POST, &format!("/jobs/{id}"), Some(&job))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let request = json!({"labels": {"team": "payments"}, "reason": "ledger migration",
                         "notes": "back after 18:00"});
    let refused = api
        .as_token(READER, Method::POST, "/bulk/jobs/pause", Some(&request))
        .await;
    assert_error(
        &refused,
        403,
        "scope: this route needs scope write; token dashboard has scope read",
    );
    let (status, body) = api
        .as_token(WRITER, Method::POST, "/bulk/jobs/pause", Some(&request))
        .await;
    assert_eq!(
        (status, &body["succeeded"]),
        (StatusCode::OK, &json!(2)),
        "{body}"
    );
    let (status, body) = api
        .as_token(
            WRITER,
            Method::POST,
            "/bulk/jobs/delete",
            Some(&json!({"jobIds": ["pay-2"], "reason": "retired"})),
        )
        .await;
    assert_eq!(
        (status, &body["succeeded"]),
        (StatusCode::OK, &json!(1)),
        "{body}"
    );

    let pay_1 = api.history(READER, "pay-1").await;
    let paused = &pay_1[0];
    assert_eq!(
        (
            &paused["action"],
            &paused["actor"],
            &paused["reason"],
            &paused["state"]
        ),
        (
            &json!("bulk:pause"),
            &json!("alice"),
            &json!("ledger migration"),
            &json!("paused")
        ),
        "{pay_1:?}"
    );
    let (_, job) = api.as_token(READER, Method::GET, "/jobs/pay-1", None).await;
    assert_eq!(job["pausedNotes"], "back after 18:00", "{job}");
    let pay_2 = api.history(READER, "pay-2").await;
    let actions: Vec<&Value> = field(&pay_2, "action");
    assert_eq!(
        actions,
        [
            &json!("bulk:delete"),
            &json!("bulk:pause"),
            &json!("create")
        ]
    );
    assert_eq!(
        (&pay_2[0]["actor"], &pay_2[0]["reason"], &pay_2[0]["state"]),
        (&json!("alice"), &json!("retired"), &json!("deleted"))
    );
    let rep_1 = api.history(READER, "rep-1").await;
    assert_eq!(field(&rep_1, "action"), [&json!("create")], "not selected");
}

#[tokio::test]
async fn a_read_token_is_refused_every_change_and_reads_everything() {
    let api = named_tokens();
    api.as_token(
        WRITER,
        Method::POST,
        "/jobs/kept",
        Some(&triggered_job("001")),
    )
    .await;
    let writes_before = api.app.store().writes();
    let mut checked = 0;
    // Every operation of the route table, with its path parameters filled in.
    for (path, item) in &document().paths.paths {
        let uri = path
            .replace("{jobId}", "kept")
            .replace("{id}", "kept~t~x")
            .replace("{serviceName}", "billing")
            .replace("{requestCounts}", "1")
            .replace("{file}", "index.css")
            .replace("{action}", "pause");
        for (method, operation) in [
            (Method::GET, &item.get),
            (Method::PUT, &item.put),
            (Method::POST, &item.post),
            (Method::DELETE, &item.delete),
        ] {
            if operation.is_none() {
                continue;
            }
            let (status, body) = api
                .as_token(READER, method.clone(), &uri, Some(&json!({})))
                .await;
            // Public routes (the feedback route checks its own HMAC token) take no bearer token.
            let public = is_public_path(&uri);
            if needs_write(&method, path) && !public {
                assert_error(
                    &(status, body.clone()),
                    403,
                    "scope: this route needs scope write; token dashboard has scope read",
                );
                let documented = operation.as_ref().unwrap().responses.responses.get("403");
                assert!(documented.is_some(), "{method} {path} documents its 403");
                checked += 1;
            } else {
                assert!(
                    status != StatusCode::FORBIDDEN
                        && (public || status != StatusCode::UNAUTHORIZED),
                    "{method} {path}: {status} {body}"
                );
            }
        }
    }
    assert!(checked >= 14, "only {checked} changing routes");
    assert_eq!(
        api.app.store().writes(),
        writes_before,
        "a refused change writes nothing"
    );
    assert_eq!(api.history(READER, "kept").await.len(), 1);
    // The writer's changes go through.
    let answer = api
        .as_token(WRITER, Method::POST, "/jobs/kept/pause", None)
        .await;
    assert_eq!(answer, (StatusCode::OK, ok()));
}

#[tokio::test]
async fn the_single_token_is_default_and_an_open_api_is_anonymous() {
    let single = Api::with_token(Some(WRITER));
    single
        .as_token(
            WRITER,
            Method::POST,
            "/jobs/one",
            Some(&triggered_job("001")),
        )
        .await;
    assert_eq!(
        single.history(WRITER, "one").await[0]["actor"],
        json!("default")
    );

    let open = Api::new();
    open.create("two", &triggered_job("001")).await;
    let (_, page) = open.get("/jobs/two/history").await;
    assert_eq!(page["entries"][0]["actor"], json!("anonymous"));
    assert_eq!(page["nextCursor"], Value::Null);
}

#[tokio::test]
async fn timers_sync_destroy_by_parent_and_bulk_are_recorded_as_theirs() {
    let api = named_tokens();
    let declared = |ids: &[&str], name: &str| {
        let list: Vec<Value> = ids
            .iter()
            .map(|id| {
                let mut job = triggered_job("001");
                job["jobId"] = json!(id);
                job["jobName"] = json!(name);
                job
            })
            .collect();
        json!({"timer": list})
    };
    for body in [declared(&["t-a", "t-b"], "v1"), declared(&["t-a"], "v2")] {
        let (status, answer) = api
            .as_token(WRITER, Method::PUT, "/services/billing/timers", Some(&body))
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
    }
    let a = api.history(READER, "t-a").await;
    assert_eq!(
        field(&a, "action"),
        [&json!("timers:update"), &json!("timers:create")]
    );
    assert_eq!(
        a[0]["changes"],
        json!([{"path": "/jobName", "old": "v1", "new": "v2"}])
    );
    assert!(field(&a, "reason")
        .iter()
        .all(|r| **r == json!("timers of service billing")));
    let b = api.history(READER, "t-b").await;
    assert_eq!(
        field(&b, "action"),
        [&json!("timers:delete"), &json!("timers:create")]
    );
    assert_eq!(b[0]["state"], json!("deleted"));

    let mut child = triggered_job("001");
    child["parentJob"] = json!("t-a");
    api.as_token(WRITER, Method::POST, "/jobs/t-child", Some(&child))
        .await;
    let (status, answer) = api
        .as_token(
            WRITER,
            Method::DELETE,
            "/main/destroyByParentJob?parentJobId=t-a",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    for id in ["t-a", "t-child"] {
        let newest = &api.history(READER, id).await[0];
        assert_eq!(
            (&newest["action"], &newest["actor"], &newest["reason"]),
            (
                &json!("delete"),
                &json!("alice"),
                &json!("destroyByParentJob t-a")
            ),
        );
    }

    // A bulk action records each job's part as `bulk:<action>` with its reason.
    api.as_token(
        WRITER,
        Method::POST,
        "/jobs/bulk-1",
        Some(&triggered_job("001")),
    )
    .await;
    let by = ChangeBy::bulk(Actor::new("alice"), "pause", "quarter close");
    let id = sundial_service::app::parse_job_id("bulk-1").unwrap();
    api.app
        .set_active_by(&by, &id, false, Some("paused".into()))
        .await
        .unwrap();
    let newest = &api.history(READER, "bulk-1").await[0];
    assert_eq!(
        (&newest["action"], &newest["reason"], &newest["state"]),
        (
            &json!("bulk:pause"),
            &json!("quarter close"),
            &json!("paused")
        )
    );
}

#[tokio::test]
async fn clean_trims_histories_by_the_retention_of_executions() {
    let api = named_tokens();
    for id in ["kept", "gone"] {
        api.as_token(
            WRITER,
            Method::POST,
            &format!("/jobs/{id}"),
            Some(&triggered_job("001")),
        )
        .await;
        api.as_token(WRITER, Method::POST, &format!("/jobs/{id}/pause"), None)
            .await;
    }
    api.as_token(WRITER, Method::DELETE, "/jobs/gone", None)
        .await;
    let (status, report) = api
        .as_token(
            WRITER,
            Method::DELETE,
            "/main/schedule/clean?cleanDestroyJob=false&retainExecutionCount=1",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["auditEntriesDeleted"], json!(3), "{report}");
    assert_eq!(
        field(&api.history(READER, "kept").await, "action"),
        [&json!("pause")]
    );
    assert_eq!(
        field(&api.history(READER, "gone").await, "action"),
        [&json!("delete")]
    );
    let (_, report) = api
        .as_token(
            WRITER,
            Method::DELETE,
            "/main/schedule/clean?retainExecutionCount=1",
            None,
        )
        .await;
    assert_eq!(report["auditEntriesDeleted"], json!(1), "{report}");
    assert!(api.history(READER, "gone").await.is_empty());
    let entries = api
        .app
        .history(
            &sundial_service::app::parse_job_id("kept").unwrap(),
            &PageRequest::first(10),
        )
        .await
        .unwrap();
    assert_eq!(entries.items.len(), 1);
}

#[tokio::test]
async fn large_changes_keep_their_paths_only() {
    let api = named_tokens();
    let mut job = triggered_job("001");
    job["request"][0]["body"] = json!({"blob": "a".repeat(20_000)});
    api.as_token(WRITER, Method::POST, "/jobs/big", Some(&job))
        .await;
    job["request"][0]["body"] = json!({"blob": "b".repeat(20_000)});
    let (status, answer) = api
        .as_token(WRITER, Method::POST, "/jobs/big/update", Some(&job))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let update = &api.history(READER, "big").await[0];
    assert_eq!(update["action"], json!("update"));
    assert_eq!(update["changesTruncated"], json!(true));
    assert_eq!(update["changes"], json!([{"path": "/request/0/body/blob"}]));
    assert_eq!(
        update["definition"]["request"][0]["body"],
        job["request"][0]["body"]
    );

    job["jobName"] = json!("small change");
    api.as_token(WRITER, Method::POST, "/jobs/big/update", Some(&job))
        .await;
    let update = &api.history(READER, "big").await[0];
    assert!(
        update.get("changesTruncated").is_none(),
        "{}",
        update["changes"]
    );
    assert_eq!(update["changes"][0]["new"], json!("small change"));
}

#[tokio::test]
async fn a_read_token_may_ask_dry_runs_and_nothing_else_of_those_routes() {
    let api = named_tokens();
    let (status, body) = api
        .as_token(
            WRITER,
            Method::POST,
            "/jobs/hourly",
            Some(&scheduled_job("h")),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let writes_before = api.app.store().writes();
    let range = json!({"startTime": "2024-03-10T09:00:00Z", "endTime": "2024-03-10T11:00:00Z"});
    let mut dry_backfill = range.clone();
    dry_backfill["dryRun"] = json!(true);
    let changed = json!({
        "jobName": "h", "creator": "001", "creatorName": "tests",
        "request": [{"url": "http://127.0.0.1:9/run", "method": "POST"}],
        "schedule": {"cron": ["30 * * * *"]},
    });
    let bulk = json!({"jobIds": ["hourly"], "reason": "look", "dryRun": true});
    for (uri, body) in [
        ("/jobs/hourly/backfill", &dry_backfill),
        ("/jobs/hourly/update?dryRun=true", &changed),
        ("/jobs/hourly/update?dryRun", &changed),
        ("/bulk/jobs/pause", &bulk),
        ("/bulk/jobs/delete", &bulk),
    ] {
        let (status, answer) = api.as_token(READER, Method::POST, uri, Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {answer}");
    }
    let (_, preview) = api
        .as_token(
            READER,
            Method::POST,
            "/jobs/hourly/backfill",
            Some(&dry_backfill),
        )
        .await;
    assert_eq!(
        preview["times"].as_array().map(Vec::len),
        Some(3),
        "{preview}"
    );
    // The same routes for real, or with a dry run the handler would not read as one: refused.
    let mut real_bulk = bulk.clone();
    real_bulk["dryRun"] = json!(false);
    let mut as_text = bulk.clone();
    as_text["dryRun"] = json!("true");
    for (uri, body) in [
        ("/jobs/hourly/backfill", &range),
        ("/jobs/hourly/update", &changed),
        ("/jobs/hourly/update?dryRun=false", &changed),
        ("/jobs/hourly/update?dryRun=yes", &changed),
        ("/bulk/jobs/pause", &real_bulk),
        ("/bulk/jobs/pause", &as_text),
    ] {
        let answer = api.as_token(READER, Method::POST, uri, Some(body)).await;
        assert_error(
            &answer,
            403,
            "scope: this route needs scope write; token dashboard has scope read",
        );
    }
    assert_eq!(
        api.app.store().writes(),
        writes_before,
        "nothing was written"
    );
    let (_, job) = api
        .as_token(READER, Method::GET, "/jobs/hourly", None)
        .await;
    assert_eq!(job["schedule"]["cron"], json!(["0 * * * *"]), "{job}");
}
