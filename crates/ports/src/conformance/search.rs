//! [`ExecutionStore::search_executions`](crate::store::ExecutionStore::search_executions),
//! executable: every adapter runs [`run_all`] beside the store suite.
//!
//! What it pins: a search selects exactly what [`ExecutionQuery::matches`] selects (state, job,
//! the job's labels and creator, source, scheduled and ended ranges), newest scheduled time first
//! with ties by id descending, across every page for any limit; pages may be short but a cursor
//! always makes progress and the last page has none; the selection follows updates (by
//! `update_execution` and by `write_all`) and deleted jobs; bad cursors are refused.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::report;
use super::store::{create_executions, create_jobs, execution, job_with, t, Must};
use crate::store::{
    ExecutionQuery, ExecutionRecord, JobRecord, LabelSelector, Page, PageRequest, SourceFilter,
    Store, StoreError, TimeRange, Write,
};

/// Runs every search case against a fresh store from `make_store`; panics naming the failures.
pub async fn run_all<S: Store, F: Fn() -> S>(make_store: F) {
    let mut failures: Vec<String> = Vec::new();
    run_cases!(
        make_store,
        failures,
        search_selects_exactly,
        search_pages_at_every_limit,
        search_follows_updates,
        search_after_job_deleted,
        search_refuses_bad_cursors,
    );
    report("search", &failures);
}

fn labelled(mut record: JobRecord, labels: &[(&str, &str)]) -> JobRecord {
    let map: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    record.document["definition"]["labels"] = Value::Object(map);
    record
}

fn jobs() -> Vec<JobRecord> {
    vec![
        labelled(
            job_with("pay", "alice", None, None, "active"),
            &[("team", "payments")],
        ),
        labelled(
            job_with("rep", "bob", None, None, "active"),
            &[("team", "reports")],
        ),
        labelled(
            job_with("kid", "bob", Some("pay"), None, "active"),
            &[("team", "payments")],
        ),
    ]
}

/// A run of `job_id` scheduled `minutes` after the fixture base, fired by `by`, in `state`,
/// ended `ended` minutes after the base when given.
fn run(
    id: &str,
    job_id: &str,
    number: u64,
    minutes: i64,
    by: &str,
    state: &str,
    ended: Option<i64>,
) -> ExecutionRecord {
    let mut record = execution(id, job_id, number);
    let at = |m: i64| rfc(t(m * 60_000));
    record.state = state.to_owned();
    record.document["scheduledTime"] = json!(at(minutes));
    record.document["scheduledById"] = json!(by);
    if let Some(ended) = ended {
        record.document["finishedAt"] = json!(at(ended));
    }
    if job_id == "kid" {
        record.parent_job = Some("pay".to_owned());
        record.parent_execution = Some(1);
    }
    record
}

fn rfc(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn runs() -> Vec<ExecutionRecord> {
    vec![
        run("pay~1", "pay", 1, 0, "pay", "Succeeded", Some(1)),
        run("pay~2", "pay", 2, 10, "pay", "Failed", Some(12)),
        run("pay~t~a", "pay", 3, 15, "trigger:a", "Failed", Some(30)),
        run(
            "pay~b~q",
            "pay",
            4,
            -600,
            "backfill:q",
            "Succeeded",
            Some(20),
        ),
        run("rep~1", "rep", 1, 10, "rep", "Processing", None),
        run("rep~u~x", "rep", 2, 20, "update:x", "Terminated", Some(21)),
        // The same scheduled time as `pay~2` and `rep~1`: ties go by id, descending.
        run("kid~1", "kid", 1, 10, "kid", "Failed", Some(11)),
        run("kid~t~b", "kid", 2, 25, "trigger:b", "Enqueued", None),
    ]
}

fn sel(key: &str, value: &str) -> LabelSelector {
    LabelSelector {
        key: key.to_owned(),
        value: value.to_owned(),
    }
}

fn queries() -> Vec<(&'static str, ExecutionQuery)> {
    let min = |m: i64| Some(t(m * 60_000));
    let q = ExecutionQuery::default;
    vec![
        ("everything", q()),
        (
            "one state",
            ExecutionQuery {
                states: vec!["Failed".into()],
                ..q()
            },
        ),
        (
            "two states",
            ExecutionQuery {
                states: vec!["Failed".into(), "Terminated".into()],
                ..q()
            },
        ),
        (
            "one job",
            ExecutionQuery {
                job_id: Some("pay".into()),
                ..q()
            },
        ),
        (
            "label",
            ExecutionQuery {
                labels: vec![sel("team", "payments")],
                ..q()
            },
        ),
        (
            "creator",
            ExecutionQuery {
                creator: Some("bob".into()),
                ..q()
            },
        ),
        (
            "label and creator",
            ExecutionQuery {
                labels: vec![sel("team", "payments")],
                creator: Some("bob".into()),
                ..q()
            },
        ),
        (
            "unknown label",
            ExecutionQuery {
                labels: vec![sel("team", "nobody")],
                ..q()
            },
        ),
        (
            "schedule",
            ExecutionQuery {
                source: Some(SourceFilter::Schedule),
                ..q()
            },
        ),
        (
            "trigger",
            ExecutionQuery {
                source: Some(SourceFilter::Trigger),
                ..q()
            },
        ),
        (
            "backfill",
            ExecutionQuery {
                source: Some(SourceFilter::Backfill),
                ..q()
            },
        ),
        (
            "parent",
            ExecutionQuery {
                source: Some(SourceFilter::Parent),
                ..q()
            },
        ),
        (
            "scheduled range",
            ExecutionQuery {
                scheduled: TimeRange {
                    since: min(10),
                    until: min(20),
                },
                ..q()
            },
        ),
        (
            "scheduled since",
            ExecutionQuery {
                scheduled: TimeRange {
                    since: min(15),
                    until: None,
                },
                ..q()
            },
        ),
        (
            "scheduled until",
            ExecutionQuery {
                scheduled: TimeRange {
                    since: None,
                    until: min(10),
                },
                ..q()
            },
        ),
        (
            "ended range",
            ExecutionQuery {
                ended: TimeRange {
                    since: min(11),
                    until: min(22),
                },
                ..q()
            },
        ),
        (
            "ended since, failed, in a scheduled range",
            ExecutionQuery {
                states: vec!["Failed".into()],
                ended: TimeRange {
                    since: min(12),
                    until: None,
                },
                scheduled: TimeRange {
                    since: min(0),
                    until: min(60),
                },
                ..q()
            },
        ),
        (
            "job, source and state",
            ExecutionQuery {
                job_id: Some("pay".into()),
                source: Some(SourceFilter::Trigger),
                states: vec!["Failed".into()],
                ..q()
            },
        ),
    ]
}

/// Follows cursors from the first page and returns every item in order. Unlike the store
/// suite's `walk`, a page may be short (even empty) and still have a cursor; every cursor must
/// lead somewhere new and the listing must end.
async fn walk<Fut>(
    what: &str,
    limit: usize,
    mut fetch: impl FnMut(PageRequest) -> Fut,
) -> Vec<ExecutionRecord>
where
    Fut: Future<Output = Result<Page<ExecutionRecord>, StoreError>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 0..=200 {
        let page = fetch(PageRequest {
            limit,
            cursor: cursor.clone(),
        })
        .await
        .must(&format!("{what} (limit {limit}, page {page_number})"));
        assert!(
            page.items.len() <= limit,
            "{what} (limit {limit}): page {page_number} has {} items",
            page.items.len()
        );
        items.extend(page.items);
        match page.next_cursor {
            None => return items,
            Some(next) => {
                assert_ne!(
                    Some(&next),
                    cursor.as_ref(),
                    "{what} (limit {limit}): a cursor led back to itself"
                );
                cursor = Some(next);
            }
        }
    }
    panic!("{what} (limit {limit}): cursors never end");
}

async fn search_ids<S: Store>(store: &S, query: &ExecutionQuery, limit: usize) -> Vec<String> {
    walk("search_executions", limit, |page| async move {
        store.search_executions(query, &page).await
    })
    .await
    .into_iter()
    .map(|e| e.execution_id)
    .collect()
}

/// What a query must select from `runs` (jobs as in `jobs`), in order.
fn expected(query: &ExecutionQuery, jobs: &[JobRecord], runs: &[ExecutionRecord]) -> Vec<String> {
    let mut selected: Vec<&ExecutionRecord> = runs
        .iter()
        .filter(|e| query.matches(e, jobs.iter().find(|j| j.job_id == e.job_id)))
        .collect();
    selected.sort_by(|a, b| b.search_key().cmp(&a.search_key()));
    selected.iter().map(|e| e.execution_id.clone()).collect()
}

async fn fixture<S: Store>(store: &S) {
    create_jobs(store, &jobs()).await;
    create_executions(store, &runs()).await;
}

/// Each query selects exactly what `matches` selects, in search order; the fixture checks itself.
async fn search_selects_exactly<S: Store>(store: S) {
    fixture(&store).await;
    let all = expected(&ExecutionQuery::default(), &jobs(), &runs());
    assert_eq!(
        all,
        ["kid~t~b", "rep~u~x", "pay~t~a", "rep~1", "pay~2", "kid~1", "pay~1", "pay~b~q"],
        "fixture order"
    );
    for (what, query) in queries() {
        let want = expected(&query, &jobs(), &runs());
        assert_eq!(search_ids(&store, &query, 100).await, want, "{what}");
    }
    // A few selections spelled out, so that `matches` itself is pinned too.
    let by = |what: &str| queries().into_iter().find(|(w, _)| *w == what).unwrap().1;
    assert_eq!(
        search_ids(&store, &by("two states"), 100).await,
        ["rep~u~x", "pay~t~a", "pay~2", "kid~1"]
    );
    assert_eq!(
        search_ids(&store, &by("label and creator"), 100).await,
        ["kid~t~b", "kid~1"]
    );
    assert_eq!(
        search_ids(&store, &by("trigger"), 100).await,
        ["kid~t~b", "rep~u~x", "pay~t~a"]
    );
    assert_eq!(
        search_ids(&store, &by("scheduled range"), 100).await,
        ["pay~t~a", "rep~1", "pay~2", "kid~1"]
    );
    assert_eq!(
        search_ids(&store, &by("ended range"), 100).await,
        ["rep~u~x", "pay~2", "kid~1", "pay~b~q"]
    );
}

/// Every limit walks to the same listing.
async fn search_pages_at_every_limit<S: Store>(store: S) {
    fixture(&store).await;
    for (what, query) in queries() {
        let want = expected(&query, &jobs(), &runs());
        for limit in [1, 2, 3, 7] {
            assert_eq!(
                search_ids(&store, &query, limit).await,
                want,
                "{what}, limit {limit}"
            );
        }
    }
}

/// A run's new state and end are searched by at once, whichever write made them.
async fn search_follows_updates<S: Store>(store: S) {
    fixture(&store).await;
    let failed = ExecutionQuery {
        states: vec!["Failed".into()],
        ..ExecutionQuery::default()
    };
    let ended_late = ExecutionQuery {
        ended: TimeRange {
            since: Some(t(100 * 60_000)),
            until: None,
        },
        ..ExecutionQuery::default()
    };
    let mut rep = runs()
        .into_iter()
        .find(|e| e.execution_id == "rep~1")
        .unwrap();
    rep.state = "Failed".into();
    rep.document["finishedAt"] = json!(rfc(t(120 * 60_000)));
    store.update_execution(&rep).await.must("update_execution");
    assert_eq!(
        search_ids(&store, &failed, 2).await,
        ["pay~t~a", "rep~1", "pay~2", "kid~1"]
    );
    assert_eq!(search_ids(&store, &ended_late, 10).await, ["rep~1"]);

    let mut kid = runs()
        .into_iter()
        .find(|e| e.execution_id == "kid~t~b")
        .unwrap();
    kid.state = "Failed".into();
    kid.document["finishedAt"] = json!(rfc(t(130 * 60_000)));
    store
        .write_all(&[Write::UpdateExecution(&kid)])
        .await
        .expect("write_all updating a run");
    assert_eq!(
        search_ids(&store, &ended_late, 10).await,
        ["kid~t~b", "rep~1"]
    );
    assert_eq!(
        search_ids(&store, &failed, 3).await,
        ["kid~t~b", "pay~t~a", "rep~1", "pay~2", "kid~1"]
    );
    // A run created in a batch is found too.
    let late = run("rep~3", "rep", 3, 90, "rep", "Failed", Some(91));
    store
        .write_all(&[Write::CreateExecution(&late)])
        .await
        .expect("write_all creating a run");
    let range = ExecutionQuery {
        scheduled: TimeRange {
            since: Some(t(60 * 60_000)),
            until: Some(t(60 * 60_000) + Duration::hours(1)),
        },
        ..failed
    };
    assert_eq!(search_ids(&store, &range, 1).await, ["rep~3"]);
}

/// A deleted job's runs are still found by job, state and time, but no longer by its labels or
/// creator, which went with it.
async fn search_after_job_deleted<S: Store>(store: S) {
    fixture(&store).await;
    assert!(store.delete_job("rep").await.must("delete_job"));
    let by_job = ExecutionQuery {
        job_id: Some("rep".into()),
        ..ExecutionQuery::default()
    };
    assert_eq!(search_ids(&store, &by_job, 1).await, ["rep~u~x", "rep~1"]);
    let by_label = ExecutionQuery {
        labels: vec![sel("team", "reports")],
        ..ExecutionQuery::default()
    };
    assert!(search_ids(&store, &by_label, 5).await.is_empty());
    let by_creator = ExecutionQuery {
        creator: Some("bob".into()),
        ..ExecutionQuery::default()
    };
    assert_eq!(
        search_ids(&store, &by_creator, 5).await,
        ["kid~t~b", "kid~1"]
    );
}

/// A cursor the search did not hand out is `InvalidCursor`, including another listing's.
async fn search_refuses_bad_cursors<S: Store>(store: S) {
    fixture(&store).await;
    for bad in [
        "",
        "%%not a cursor%%",
        "e1.3.pay~t~a",
        "j1.pay",
        "x1.07.a",
        "x1.5.",
    ] {
        let page = PageRequest {
            limit: 5,
            cursor: Some(bad.to_owned()),
        };
        assert_eq!(
            store
                .search_executions(&ExecutionQuery::default(), &page)
                .await,
            Err(StoreError::InvalidCursor),
            "cursor {bad:?}"
        );
    }
}
