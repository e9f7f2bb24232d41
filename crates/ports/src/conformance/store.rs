//! The `Store` contract, executable: every adapter's tests call [`run_all`] with a factory of fresh,
//! empty stores, so the embedded SQLite store and the DynamoDB store are held to the same behaviour.
//!
//! Each case runs in its own tokio task against its own store; a failing case does not stop the
//! others, and the final panic lists every failed case by name with its message.
//!
//! What the suite pins where the trait's doc comments leave room:
//! - **Times** keep millisecond precision: stores may drop anything finer (the SQLite store keeps
//!   integer milliseconds), so the suite uses millisecond instants and expects them back exactly.
//! - **Documents** round-trip exactly as JSON values (nested objects, arrays, unicode, integers,
//!   binary-exact floats, `null`).
//! - **Job order** is byte-wise by job id (`"A" < "a" < "a-1" < "a10" < "a9"`), as SQLite's `BINARY`
//!   collation and DynamoDB sort keys both order strings. The time orders
//!   ([`JobOrder::NextFire`], [`JobOrder::LastRun`]) follow the wake-ups and executions written
//!   in any way (one by one or in `write_all`, before or after the job), ties by id; a store
//!   may refuse them with `UnsupportedOrder`, and then refuses them on every call.
//! - **Pages** hold exactly `limit` items unless they are the last, and the page that holds the last
//!   item has no next cursor: adapters look one item ahead, so a client never fetches an empty page.
//!   A cursor not handed out by the store (`""`, garbage) is `InvalidCursor`.
//! - **Child executions** are newest first by `created_at`.
//! - **Clean** retention applies to every job id that has executions, deleted or not; with
//!   `purge_deleted_jobs`, `destroyed_jobs_cleaned` counts the distinct deleted jobs whose executions
//!   were removed.
//! - **Error keys** (`AlreadyExists`, `NotFound`, `VersionConflict::key`) mention the id written.
//! - **Stats** may omit states with no items; a zero count and an absent state are the same.
//!
//! The limit cap ([`MAX_PAGE`](crate::store::MAX_PAGE)) is not exercised: it would take a thousand writes per store,
//! too slow against a DynamoDB stand-in.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::store::{
    AuditQuery, AuditRecord, CalendarRecord, ExecutionRecord, JobFilter, JobOrder, JobRecord, Page,
    PageRequest, SettingRecord, StateRead, Store, StoreError, WakeUp, Write, WriteAllError,
};

/// Runs every case of the suite, each against a fresh store from `make_store`, and panics naming
/// every case that failed.
///
/// Call it from a multi-threaded tokio test so the concurrency cases race for real:
///
/// ```ignore
/// #[tokio::test(flavor = "multi_thread")]
/// async fn conforms() {
///     sundial_ports::conformance::store::run_all(|| MyStore::new()).await;
/// }
/// ```
pub async fn run_all<S: Store, F: Fn() -> S>(make_store: F) {
    let mut failures: Vec<String> = Vec::new();
    run_cases!(
        make_store,
        failures,
        job_create_and_get,
        job_create_duplicate,
        job_update_conditional,
        job_update_missing,
        job_delete,
        job_delete_clears_wakeup_keeps_executions,
        jobs_list_ordered_by_id,
        jobs_list_filters,
        jobs_list_pagination,
        jobs_list_filtered_pagination,
        jobs_list_invalid_cursor,
        jobs_list_by_next_fire,
        jobs_list_by_last_run,
        execution_create_and_get,
        newest_executions_of_several_jobs,
        execution_create_is_idempotent,
        execution_update_conditional,
        executions_list_newest_first,
        executions_list_pagination,
        executions_list_invalid_cursor,
        child_executions_by_parent,
        child_executions_by_parent_execution,
        child_executions_pagination,
        clean_retains_newest,
        clean_purges_deleted_jobs,
        wakeup_set_get_overwrite_remove,
        wakeups_due,
        wakeup_cleared_only_if_unchanged,
        write_all_is_all_or_nothing,
        write_all_execution_and_job,
        write_all_a_run_with_its_own_wakeup,
        ledger_facts_round_trip,
        concurrent_job_updates,
        concurrent_execution_creates,
        settings_are_versioned_documents,
        calendars_are_versioned_documents,
        calendar_change_and_history_are_one_write,
        calendar_users_index,
        calendar_listings_guard_deletes,
        revoked_sessions_are_remembered_until_they_expire,
    );
    super::audit::run_cases(&make_store, &mut failures).await;
    super::report("store", &failures);
}

/// Runs one case on its own task, collecting its panic message as a failure (shared with the
/// queue suite).
pub(crate) async fn run_case<Fut>(name: &'static str, case: Fut, failures: &mut Vec<String>)
where
    Fut: Future<Output = ()> + Send + 'static,
{
    match tokio::spawn(case).await {
        Ok(()) => {}
        Err(err) if err.is_panic() => {
            let payload = err.into_panic();
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "(panic without a message)".to_owned());
            failures.push(format!("- case `{name}`: {message}"));
        }
        Err(err) => failures.push(format!("- case `{name}`: task did not finish: {err}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures

/// 2024-03-10T12:34:56.789Z: a fixed instant with a non-zero millisecond part.
const BASE_MS: i64 = 1_710_074_096_789;

/// The fixed instant `offset_ms` milliseconds after [`BASE_MS`].
pub(super) fn t(offset_ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(BASE_MS + offset_ms).expect("fixture time in range")
}

pub(super) fn job_document(job_id: &str, revision: u64) -> Value {
    json!({
        "definition": {
            "jobName": format!("job {job_id}"),
            "jobDescription": "Rémi's nightly report ✓ — \"quoted\", with\nnewline",
            "timer": {"dueTime": "PT1M", "period": "R4/PT3S"},
            "request": [{
                "url": format!("https://example.com/run/${{jobId}}?n={revision}"),
                "method": "POST",
                "headers": {"X-Team": "data"},
                "body": {"deep": {"deeper": [1, 2, {"deepest": null}]}}
            }],
            "maxRetries": 5,
            "ratio": 2.5,
            "offset": -42,
            "big": 9_007_199_254_740_993_u64,
            "flags": [true, false, null],
            "empty": {}
        },
        "state": {"active": true, "revision": revision, "notes": null, "actionCount": 0}
    })
}

pub(super) fn job(job_id: &str) -> JobRecord {
    JobRecord {
        job_id: job_id.to_owned(),
        version: 1,
        creator: "alice".to_owned(),
        parent_job: None,
        service: None,
        state: "active".to_owned(),
        created_at: t(0),
        updated_at: t(0),
        document: job_document(job_id, 0),
    }
}

pub(super) fn job_with(
    job_id: &str,
    creator: &str,
    parent: Option<&str>,
    service: Option<&str>,
    state: &str,
) -> JobRecord {
    JobRecord {
        creator: creator.to_owned(),
        parent_job: parent.map(str::to_owned),
        service: service.map(str::to_owned),
        state: state.to_owned(),
        ..job(job_id)
    }
}

pub(super) fn execution(execution_id: &str, job_id: &str, execute_number: u64) -> ExecutionRecord {
    let offset = i64::try_from(execute_number).expect("small execute number") * 60_000;
    ExecutionRecord {
        execution_id: execution_id.to_owned(),
        job_id: job_id.to_owned(),
        execute_number,
        state: "Enqueued".to_owned(),
        parent_job: None,
        parent_execution: None,
        created_at: t(offset + 7),
        version: 1,
        document: json!({
            "executionId": execution_id,
            "jobId": job_id,
            "executeNumber": execute_number,
            "scheduledTime": "2024-03-10T12:35:00Z",
            "attempts": [{"attempt": 1, "error": null, "progress": 0.25}],
            "result": {"status": "ü", "values": [1, -1, 2.5]},
        }),
    }
}

pub(super) trait Must<T> {
    fn must(self, what: &str) -> T;
}

impl<T> Must<T> for Result<T, StoreError> {
    fn must(self, what: &str) -> T {
        self.unwrap_or_else(|err| panic!("{what} failed: {err:?}"))
    }
}

pub(super) fn expect_err<T: Debug, E>(result: Result<T, E>, what: &str) -> E {
    match result {
        Ok(value) => panic!("{what}: expected an error, got Ok({value:?})"),
        Err(err) => err,
    }
}

fn assert_mentions(err: &StoreError, key: &str, id: &str, what: &str) {
    assert!(
        key.contains(id),
        "{what}: error key {key:?} should mention {id:?} (error: {err:?})"
    );
}

fn bogus_cursors() -> [&'static str; 3] {
    ["", "%%not a cursor%%", "\u{0}\u{1}~"]
}

pub(super) async fn create_jobs<S: Store>(store: &S, jobs: &[JobRecord]) {
    for job in jobs {
        store
            .create_job(job)
            .await
            .must(&format!("create_job({})", job.job_id));
    }
}

pub(super) async fn create_executions<S: Store>(store: &S, executions: &[ExecutionRecord]) {
    for execution in executions {
        let created = store
            .create_execution(execution)
            .await
            .must(&format!("create_execution({})", execution.execution_id));
        assert!(
            created,
            "create_execution({}) of a new id returned false",
            execution.execution_id
        );
    }
}

/// Follows cursors from the first page, checking the page-shape rules, and returns every item in order.
pub(super) async fn walk<T, Fut>(
    what: &str,
    limit: usize,
    mut fetch: impl FnMut(PageRequest) -> Fut,
) -> Vec<T>
where
    T: Debug,
    Fut: Future<Output = Result<Page<T>, StoreError>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 0.. {
        assert!(
            page_number <= 1000,
            "{what} (limit {limit}): cursors never end"
        );
        let request = PageRequest {
            limit,
            cursor: cursor.clone(),
        };
        let page = fetch(request)
            .await
            .must(&format!("{what} (limit {limit}, page {page_number})"));
        assert!(
            page.items.len() <= limit,
            "{what} (limit {limit}): page {page_number} has {} items",
            page.items.len()
        );
        let count = page.items.len();
        assert!(
            count > 0 || page_number == 0,
            "{what} (limit {limit}): a cursor led to an empty page; the page before it held the last item \
             and should have had no next cursor"
        );
        items.extend(page.items);
        match page.next_cursor {
            None => break,
            Some(next) => {
                assert_eq!(
                    count, limit,
                    "{what} (limit {limit}): page {page_number} has a next cursor but is not full"
                );
                cursor = Some(next);
            }
        }
    }
    items
}

// ---------------------------------------------------------------------------------------------
// Jobs

async fn job_create_and_get<S: Store>(store: S) {
    let mut full = job_with("full", "bob", Some("parent-1"), Some("billing"), "paused");
    full.created_at = t(1);
    full.updated_at = t(86_400_123);
    let bare = job("bare");
    create_jobs(&store, &[full.clone(), bare.clone()]).await;

    assert_eq!(
        store.get_job("full").await.must("get_job(full)"),
        Some(full),
        "job with every field set"
    );
    assert_eq!(
        store.get_job("bare").await.must("get_job(bare)"),
        Some(bare),
        "job with optional fields unset"
    );
    assert_eq!(
        store.get_job("missing").await.must("get_job(missing)"),
        None,
        "get_job of an unknown id"
    );
}

async fn job_create_duplicate<S: Store>(store: S) {
    let original = job("dup");
    create_jobs(&store, std::slice::from_ref(&original)).await;

    let mut again = job_with("dup", "mallory", None, None, "paused");
    again.document = json!({"overwritten": true});
    let err = expect_err(store.create_job(&again).await, "second create_job(dup)");
    match &err {
        StoreError::AlreadyExists(key) => assert_mentions(&err, key, "dup", "create_job(dup)"),
        other => panic!("second create_job(dup): expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(
        store.get_job("dup").await.must("get_job(dup)"),
        Some(original),
        "a refused create must leave the stored job unchanged"
    );
}

async fn job_update_conditional<S: Store>(store: S) {
    let created = job_with("upd", "alice", None, None, "active");
    create_jobs(&store, &[created.clone(), job("other")]).await;

    let mut next = created.clone();
    next.creator = "bob".to_owned();
    next.parent_job = Some("p".to_owned());
    next.service = Some("billing".to_owned());
    next.state = "paused".to_owned();
    next.updated_at = t(5_001);
    next.document = job_document("upd", 1);
    assert_eq!(
        store.update_job(&next).await.must("update_job(upd, v1)"),
        2,
        "update of v1 returns 2"
    );
    let stored = store.get_job("upd").await.must("get_job(upd)");
    assert_eq!(
        stored,
        Some(JobRecord {
            version: 2,
            ..next.clone()
        }),
        "update stores the record at version+1"
    );

    // The indexed fields follow the update.
    let paused = JobFilter {
        state: Some("paused".to_owned()),
        ..JobFilter::default()
    };
    let page = store
        .list_jobs(&paused, JobOrder::Id, &PageRequest::first(10))
        .await
        .must("list_jobs(state=paused)");
    let ids: Vec<_> = page.items.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids, ["upd"], "list_jobs(state=paused) after the update");
    let bob = JobFilter {
        creator: Some("bob".to_owned()),
        service: Some("billing".to_owned()),
        ..JobFilter::default()
    };
    let page = store
        .list_jobs(&bob, JobOrder::Id, &PageRequest::first(10))
        .await
        .must("list_jobs(creator=bob,service)");
    assert_eq!(
        page.items.len(),
        1,
        "list_jobs(creator=bob, service=billing) after the update"
    );

    let mut third = JobRecord {
        version: 2,
        ..next.clone()
    };
    third.document = job_document("upd", 2);
    third.updated_at = t(9_999);
    assert_eq!(
        store.update_job(&third).await.must("update_job(upd, v2)"),
        3,
        "update of v2 returns 3"
    );

    let mut stale = next.clone();
    stale.document = json!({"stale": true});
    let err = expect_err(
        store.update_job(&stale).await,
        "update_job(upd) with stale version 1",
    );
    match &err {
        StoreError::VersionConflict { key, expected } => {
            assert_eq!(
                *expected, 1,
                "VersionConflict.expected is the version the caller read"
            );
            assert_mentions(&err, key, "upd", "stale update_job");
        }
        other => panic!("update_job with a stale version: expected VersionConflict, got {other:?}"),
    }
    let mut ahead = third.clone();
    ahead.version = 7;
    let err = expect_err(
        store.update_job(&ahead).await,
        "update_job(upd) with a future version",
    );
    assert!(
        matches!(err, StoreError::VersionConflict { expected: 7, .. }),
        "update_job with a version ahead of the store: expected VersionConflict, got {err:?}"
    );
    assert_eq!(
        store.get_job("upd").await.must("get_job(upd)"),
        Some(JobRecord {
            version: 3,
            ..third
        }),
        "refused updates leave the stored job unchanged"
    );
    assert_eq!(
        store.get_job("other").await.must("get_job(other)"),
        Some(job("other")),
        "an update touches only its own job"
    );
}

async fn job_update_missing<S: Store>(store: S) {
    let err = expect_err(store.update_job(&job("ghost")).await, "update_job(ghost)");
    match &err {
        StoreError::NotFound(key) => assert_mentions(&err, key, "ghost", "update_job(ghost)"),
        other => panic!("update_job of an unknown id: expected NotFound, got {other:?}"),
    }
    assert_eq!(
        store.get_job("ghost").await.must("get_job(ghost)"),
        None,
        "a failed update must not create the job"
    );
}

async fn job_delete<S: Store>(store: S) {
    create_jobs(&store, &[job("a"), job("b")]).await;
    assert!(
        store.delete_job("a").await.must("delete_job(a)"),
        "delete_job of an existing job returns true"
    );
    assert!(
        !store.delete_job("a").await.must("second delete_job(a)"),
        "delete_job of a deleted job returns false"
    );
    assert!(
        !store.delete_job("never").await.must("delete_job(never)"),
        "delete_job of an unknown id returns false"
    );
    assert_eq!(
        store.get_job("a").await.must("get_job(a)"),
        None,
        "a deleted job is gone"
    );
    let page = store
        .list_jobs(&JobFilter::default(), JobOrder::Id, &PageRequest::first(10))
        .await
        .must("list_jobs");
    let ids: Vec<_> = page.items.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids, ["b"], "list_jobs after deleting a");
    // The id can be reused.
    create_jobs(&store, &[job("a")]).await;
    assert_eq!(
        store.get_job("a").await.must("get_job(a)"),
        Some(job("a")),
        "re-created job"
    );
}

async fn job_delete_clears_wakeup_keeps_executions<S: Store>(store: S) {
    create_jobs(&store, &[job("gone"), job("kept")]).await;
    let runs = [
        execution("gone-1", "gone", 1),
        execution("gone-2", "gone", 2),
    ];
    create_executions(&store, &runs).await;
    store
        .set_wakeup("job:gone", Some(t(1_000)))
        .await
        .must("set_wakeup(job:gone)");
    store
        .set_wakeup("job:kept", Some(t(2_000)))
        .await
        .must("set_wakeup(job:kept)");
    store
        .set_wakeup("exec:gone-2", Some(t(3_000)))
        .await
        .must("set_wakeup(exec:gone-2)");

    assert!(
        store.delete_job("gone").await.must("delete_job(gone)"),
        "delete_job(gone) of an existing job"
    );
    assert_eq!(
        store
            .get_wakeup("job:gone")
            .await
            .must("get_wakeup(job:gone)"),
        None,
        "delete_job removes job:{{id}}"
    );
    assert_eq!(
        store
            .get_wakeup("job:kept")
            .await
            .must("get_wakeup(job:kept)"),
        Some(t(2_000)),
        "delete_job leaves other jobs' wake-ups"
    );
    assert_eq!(
        store
            .get_wakeup("exec:gone-2")
            .await
            .must("get_wakeup(exec:gone-2)"),
        Some(t(3_000)),
        "delete_job leaves execution wake-ups"
    );
    let due = store.due_wakeups(t(10_000), 10).await.must("due_wakeups");
    let keys: Vec<_> = due.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        keys,
        ["job:kept", "exec:gone-2"],
        "due_wakeups after delete_job"
    );

    assert_eq!(
        store
            .get_execution("gone-1")
            .await
            .must("get_execution(gone-1)"),
        Some(runs[0].clone()),
        "delete_job keeps the job's executions"
    );
    let page = store
        .list_executions("gone", &PageRequest::first(10))
        .await
        .must("list_executions(gone)");
    assert_eq!(
        page.items,
        [runs[1].clone(), runs[0].clone()],
        "executions of a deleted job are still listed"
    );
}

/// Six jobs whose ids sort differently byte-wise, numerically and case-insensitively.
fn ordering_jobs() -> Vec<JobRecord> {
    ["b", "a10", "a9", "A", "a", "a-1"]
        .iter()
        .map(|id| job(id))
        .collect()
}

async fn jobs_list_ordered_by_id<S: Store>(store: S) {
    let jobs = ordering_jobs();
    create_jobs(&store, &jobs).await;
    let page = store
        .list_jobs(
            &JobFilter::default(),
            JobOrder::Id,
            &PageRequest::first(100),
        )
        .await
        .must("list_jobs");
    let ids: Vec<_> = page.items.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(
        ids,
        ["A", "a", "a-1", "a10", "a9", "b"],
        "list_jobs orders by job id, byte-wise"
    );
    assert_eq!(
        page.next_cursor, None,
        "a page holding every job has no next cursor"
    );
    let mut expected = jobs;
    expected.sort_by(|x, y| x.job_id.cmp(&y.job_id));
    assert_eq!(
        page.items, expected,
        "list_jobs returns the records as stored"
    );

    let empty = store
        .list_jobs(
            &JobFilter {
                creator: Some("nobody".to_owned()),
                ..JobFilter::default()
            },
            JobOrder::Id,
            &PageRequest::first(10),
        )
        .await
        .must("list_jobs(creator=nobody)");
    assert_eq!(
        empty,
        Page {
            items: vec![],
            next_cursor: None
        },
        "a filter matching nothing"
    );
}

fn filter_jobs() -> Vec<JobRecord> {
    vec![
        job_with("a1", "alice", None, None, "active"),
        job_with("a2", "alice", Some("p1"), Some("billing"), "paused"),
        job_with("b1", "bob", Some("p1"), None, "active"),
        job_with("b2", "bob", None, Some("billing"), "active"),
        job_with("c1", "carol", Some("p2"), Some("billing"), "paused"),
        job_with("c2", "carol", Some("p1"), Some("reports"), "active"),
        job_with("p1", "ops", None, Some("reports"), "active"),
        job_with("p2", "ops", None, None, "paused"),
    ]
}

fn matches(filter: &JobFilter, job: &JobRecord) -> bool {
    filter.state.as_ref().is_none_or(|s| *s == job.state)
        && filter.creator.as_ref().is_none_or(|c| *c == job.creator)
        && filter
            .parent_job
            .as_ref()
            .is_none_or(|p| job.parent_job.as_ref() == Some(p))
        && filter
            .service
            .as_ref()
            .is_none_or(|s| job.service.as_ref() == Some(s))
}

/// Every combination of filters taken from the jobs' own values, plus values no job has.
fn all_filters(jobs: &[JobRecord]) -> Vec<JobFilter> {
    let mut filters = vec![JobFilter::default()];
    for job in jobs {
        for mask in 1..16u8 {
            let filter = JobFilter {
                state: (mask & 1 != 0).then(|| job.state.clone()),
                creator: (mask & 2 != 0).then(|| job.creator.clone()),
                parent_job: if mask & 4 != 0 {
                    job.parent_job.clone()
                } else {
                    None
                },
                service: if mask & 8 != 0 {
                    job.service.clone()
                } else {
                    None
                },
                ..JobFilter::default()
            };
            if !filters.contains(&filter) {
                filters.push(filter);
            }
        }
    }
    filters.push(JobFilter {
        state: Some("deleted".to_owned()),
        ..JobFilter::default()
    });
    filters.push(JobFilter {
        parent_job: Some("a1".to_owned()),
        ..JobFilter::default()
    });
    filters.push(JobFilter {
        service: Some("nobody".to_owned()),
        ..JobFilter::default()
    });
    // Each value exists, but no job has them together.
    filters.push(JobFilter {
        creator: Some("alice".to_owned()),
        parent_job: Some("p2".to_owned()),
        ..JobFilter::default()
    });
    filters
}

async fn jobs_list_filters<S: Store>(store: S) {
    let jobs = filter_jobs();
    create_jobs(&store, &jobs).await;
    for filter in all_filters(&jobs) {
        let expected: Vec<_> = jobs
            .iter()
            .filter(|j| matches(&filter, j))
            .cloned()
            .collect();
        let page = store
            .list_jobs(&filter, JobOrder::Id, &PageRequest::first(100))
            .await
            .must(&format!("list_jobs({filter:?})"));
        let got: Vec<_> = page.items.iter().map(|j| j.job_id.as_str()).collect();
        let want: Vec<_> = expected.iter().map(|j| j.job_id.as_str()).collect();
        assert_eq!(got, want, "list_jobs({filter:?})");
        assert_eq!(page.items, expected, "list_jobs({filter:?}) records");
        assert_eq!(
            page.next_cursor, None,
            "list_jobs({filter:?}) fits one page"
        );
    }
}

async fn jobs_list_pagination<S: Store>(store: S) {
    let mut jobs = ordering_jobs();
    jobs.extend(filter_jobs());
    create_jobs(&store, &jobs).await;
    jobs.sort_by(|x, y| x.job_id.cmp(&y.job_id));
    let filter = JobFilter::default();
    for limit in 1..=jobs.len() + 1 {
        let (store, filter) = (&store, &filter);
        let got = walk("list_jobs", limit, |page| async move {
            store.list_jobs(filter, JobOrder::Id, &page).await
        })
        .await;
        assert_eq!(
            got, jobs,
            "list_jobs pages with limit {limit} return every job exactly once, in order"
        );
    }
}

async fn jobs_list_filtered_pagination<S: Store>(store: S) {
    let jobs = filter_jobs();
    create_jobs(&store, &jobs).await;
    let filters = [
        JobFilter {
            service: Some("billing".to_owned()),
            ..JobFilter::default()
        },
        JobFilter {
            state: Some("active".to_owned()),
            ..JobFilter::default()
        },
        JobFilter {
            parent_job: Some("p1".to_owned()),
            state: Some("active".to_owned()),
            ..JobFilter::default()
        },
    ];
    for filter in &filters {
        let expected: Vec<_> = jobs
            .iter()
            .filter(|j| matches(filter, j))
            .cloned()
            .collect();
        for limit in 1..=expected.len() + 1 {
            let store = &store;
            let got = walk("filtered list_jobs", limit, |page| async move {
                store.list_jobs(filter, JobOrder::Id, &page).await
            })
            .await;
            assert_eq!(
                got, expected,
                "list_jobs({filter:?}) pages with limit {limit}"
            );
        }
    }
}

async fn jobs_list_invalid_cursor<S: Store>(store: S) {
    create_jobs(&store, &ordering_jobs()).await;
    for cursor in bogus_cursors() {
        let request = PageRequest {
            limit: 2,
            cursor: Some(cursor.to_owned()),
        };
        let err = expect_err(
            store
                .list_jobs(&JobFilter::default(), JobOrder::Id, &request)
                .await,
            "list_jobs with a bogus cursor",
        );
        assert_eq!(
            err,
            StoreError::InvalidCursor,
            "list_jobs with cursor {cursor:?}"
        );
    }
}

/// Lists every job in `order` with each page size, checking that all pages agree; `None` when
/// the store refuses the order (it then must refuse it for any page and filter).
pub(super) async fn walk_order<S: Store>(
    store: &S,
    filter: &JobFilter,
    order: JobOrder,
    sizes: std::ops::RangeInclusive<usize>,
) -> Option<Vec<String>> {
    let first = store
        .list_jobs(filter, order, &PageRequest::first(100))
        .await;
    if let Err(StoreError::UnsupportedOrder(refused)) = first {
        assert_eq!(refused, order, "UnsupportedOrder names the order asked for");
        return None;
    }
    let all: Vec<String> = first
        .must(&format!("list_jobs({filter:?}, {order:?})"))
        .items
        .into_iter()
        .map(|j| j.job_id)
        .collect();
    for limit in sizes {
        let got = walk("ordered list_jobs", limit, |page| async move {
            store.list_jobs(filter, order, &page).await
        })
        .await;
        let ids: Vec<String> = got.into_iter().map(|j| j.job_id).collect();
        assert_eq!(
            ids, all,
            "list_jobs({filter:?}, {order:?}) pages of {limit}"
        );
    }
    Some(all)
}

async fn jobs_list_by_next_fire<S: Store>(store: S) {
    // A wake-up written before its job exists counts once the job does.
    store
        .set_wakeup("job:late", Some(t(500)))
        .await
        .must("set_wakeup(job:late)");
    create_jobs(&store, &filter_jobs()).await;
    create_jobs(&store, &[job_with("late", "ops", None, None, "active")]).await;
    let c2 = ("job:c2".to_owned(), t(1_000));
    let moved = ("job:a1".to_owned(), t(2_000));
    store
        .write_all(&[Write::SetWakeup(&c2.0, Some(c2.1))])
        .await
        .map_err(StoreError::from)
        .must("write_all(SetWakeup job:c2)");
    for (key, due) in [
        ("job:a1", Some(t(1_000))),
        ("job:b2", Some(t(3_000))),
        ("job:p1", Some(t(5_000))),
        ("job:p2", Some(t(0))),
        ("job:p2", None),
        ("job:nobody", Some(t(0))),
        ("exec:b1", Some(t(0))),
        (moved.0.as_str(), Some(moved.1)),
    ] {
        store.set_wakeup(key, due).await.must("set_wakeup");
    }
    let everyone = JobFilter::default();
    let Some(ids) = walk_order(&store, &everyone, JobOrder::NextFire, 1..=10).await else {
        let err = expect_err(
            store
                .list_jobs(
                    &JobFilter {
                        state: Some("active".to_owned()),
                        ..JobFilter::default()
                    },
                    JobOrder::NextFire,
                    &PageRequest::first(1),
                )
                .await,
            "a refused order, filtered",
        );
        assert_eq!(err, StoreError::UnsupportedOrder(JobOrder::NextFire));
        return;
    };
    assert_eq!(
        ids,
        ["late", "c2", "a1", "b2", "p1", "a2", "b1", "c1", "p2"],
        "soonest wake-up first, ties and jobs without one by id"
    );
    let active = JobFilter {
        state: Some("active".to_owned()),
        ..JobFilter::default()
    };
    let ids = walk_order(&store, &active, JobOrder::NextFire, 1..=3)
        .await
        .expect("the order is served");
    assert_eq!(ids, ["late", "c2", "a1", "b2", "p1", "b1"], "filtered");

    // A deleted job's wake-up goes with it; its id created again has no next fire.
    store.delete_job("b2").await.must("delete_job(b2)");
    create_jobs(&store, &[job("b2")]).await;
    let ids = walk_order(&store, &everyone, JobOrder::NextFire, 4..=4)
        .await
        .expect("the order is served");
    assert_eq!(
        ids,
        ["late", "c2", "a1", "p1", "a2", "b1", "b2", "c1", "p2"]
    );

    // A cursor of another order is not one of this order's.
    let by_id = store
        .list_jobs(&everyone, JobOrder::Id, &PageRequest::first(2))
        .await
        .must("list_jobs by id");
    let err = expect_err(
        store
            .list_jobs(
                &everyone,
                JobOrder::NextFire,
                &PageRequest {
                    limit: 2,
                    cursor: by_id.next_cursor,
                },
            )
            .await,
        "an id cursor in a next-fire listing",
    );
    assert_eq!(err, StoreError::InvalidCursor);
}

async fn jobs_list_by_last_run<S: Store>(store: S) {
    // Executions of a job id created before the job count once it exists.
    store
        .create_execution(&ExecutionRecord {
            created_at: t(50),
            ..execution("early-1", "early", 1)
        })
        .await
        .must("create_execution(early-1)");
    create_jobs(&store, &filter_jobs()).await;
    create_jobs(&store, &[job("early")]).await;
    for (id, job_id, number, at) in [
        ("b1-1", "b1", 1, 100),
        ("a1-1", "a1", 1, 300),
        ("a1-2", "a1", 2, 200),
        ("c2-1", "c2", 1, 300),
    ] {
        let run = ExecutionRecord {
            created_at: t(at),
            ..execution(id, job_id, number)
        };
        store
            .create_execution(&run)
            .await
            .must(&format!("create_execution({id})"));
    }
    let p1 = ExecutionRecord {
        created_at: t(400),
        ..execution("p1-1", "p1", 1)
    };
    store
        .write_all(&[Write::CreateExecution(&p1)])
        .await
        .map_err(StoreError::from)
        .must("write_all(CreateExecution p1-1)");
    let everyone = JobFilter::default();
    let Some(ids) = walk_order(&store, &everyone, JobOrder::LastRun, 1..=10).await else {
        return;
    };
    assert_eq!(
        ids,
        ["p1", "a1", "c2", "b1", "early", "a2", "b2", "c1", "p2"],
        "latest execution first, ties and jobs never run by id"
    );
    let alice = JobFilter {
        creator: Some("alice".to_owned()),
        ..JobFilter::default()
    };
    let ids = walk_order(&store, &alice, JobOrder::LastRun, 1..=2)
        .await
        .expect("the order is served");
    assert_eq!(ids, ["a1", "early", "a2"], "filtered");

    // A newer run moves its job to the front.
    let b2 = ExecutionRecord {
        created_at: t(1_000),
        ..execution("b2-1", "b2", 1)
    };
    store
        .create_execution(&b2)
        .await
        .must("create_execution(b2-1)");
    let ids = walk_order(&store, &everyone, JobOrder::LastRun, 3..=3)
        .await
        .expect("the order is served");
    assert_eq!(
        ids,
        ["b2", "p1", "a1", "c2", "b1", "early", "a2", "c1", "p2"]
    );
}

// ---------------------------------------------------------------------------------------------
// Executions

async fn newest_executions_of_several_jobs<S: Store>(store: S) {
    let runs = [
        execution("a-1", "a", 1),
        execution("a-3", "a", 3),
        execution("a-2", "a", 2),
        execution("b-1", "b", 1),
    ];
    create_executions(&store, &runs).await;
    let asked: Vec<String> = ["a", "nobody", "b", "a"].map(str::to_owned).to_vec();
    let newest = store
        .newest_executions(&asked)
        .await
        .must("newest_executions");
    let ids: Vec<Option<&str>> = newest
        .iter()
        .map(|e| e.as_ref().map(|e| e.execution_id.as_str()))
        .collect();
    assert_eq!(
        ids,
        [Some("a-3"), None, Some("b-1"), Some("a-3")],
        "each job's highest execute number, in the order asked"
    );
    assert_eq!(newest[0], Some(runs[1].clone()), "the whole record");
    assert!(store
        .newest_executions(&[])
        .await
        .must("newest_executions of none")
        .is_empty());
}

async fn execution_create_and_get<S: Store>(store: S) {
    let plain = execution("run-1", "job", 1);
    let mut child = execution("run-2", "child", 12);
    child.state = "Processing".to_owned();
    child.parent_job = Some("parent".to_owned());
    child.parent_execution = Some(3);
    child.created_at = t(-1);
    create_executions(&store, &[plain.clone(), child.clone()]).await;
    assert_eq!(
        store
            .get_execution("run-1")
            .await
            .must("get_execution(run-1)"),
        Some(plain),
        "plain execution"
    );
    assert_eq!(
        store
            .get_execution("run-2")
            .await
            .must("get_execution(run-2)"),
        Some(child),
        "child execution"
    );
    assert_eq!(
        store
            .get_execution("nope")
            .await
            .must("get_execution(nope)"),
        None,
        "unknown execution id"
    );
}

async fn execution_create_is_idempotent<S: Store>(store: S) {
    let first = execution("fire", "job", 1);
    assert!(
        store
            .create_execution(&first)
            .await
            .must("create_execution(fire)"),
        "first create returns true"
    );
    let mut duplicate = execution("fire", "job", 2);
    duplicate.state = "Succeeded".to_owned();
    duplicate.document = json!({"overwritten": true});
    assert!(
        !store
            .create_execution(&duplicate)
            .await
            .must("second create_execution(fire)"),
        "a second create with the same id returns false"
    );
    assert_eq!(
        store
            .get_execution("fire")
            .await
            .must("get_execution(fire)"),
        Some(first.clone()),
        "a duplicate create never overwrites"
    );
    let page = store
        .list_executions("job", &PageRequest::first(10))
        .await
        .must("list_executions(job)");
    assert_eq!(page.items, [first], "a duplicate create adds nothing");
}

async fn execution_update_conditional<S: Store>(store: S) {
    let created = execution("run", "job", 4);
    create_executions(&store, &[created.clone(), execution("bystander", "job", 5)]).await;

    let mut next = created.clone();
    next.state = "Processing".to_owned();
    next.document = json!({"executionId": "run", "attempts": [{"attempt": 1}], "progress": 0.5});
    assert_eq!(
        store
            .update_execution(&next)
            .await
            .must("update_execution(run, v1)"),
        2,
        "update of v1 returns 2"
    );
    assert_eq!(
        store.get_execution("run").await.must("get_execution(run)"),
        Some(ExecutionRecord {
            version: 2,
            ..next.clone()
        }),
        "update stores the record at version+1"
    );

    let mut stale = next.clone();
    stale.state = "Cancelled".to_owned();
    let err = expect_err(
        store.update_execution(&stale).await,
        "update_execution(run) with stale version 1",
    );
    match &err {
        StoreError::VersionConflict { key, expected } => {
            assert_eq!(
                *expected, 1,
                "VersionConflict.expected is the version the caller read"
            );
            assert_mentions(&err, key, "run", "stale update_execution");
        }
        other => {
            panic!("update_execution with a stale version: expected VersionConflict, got {other:?}")
        }
    }

    let third = ExecutionRecord {
        version: 2,
        state: "Succeeded".to_owned(),
        ..next.clone()
    };
    assert_eq!(
        store
            .update_execution(&third)
            .await
            .must("update_execution(run, v2)"),
        3,
        "update of v2 returns 3"
    );
    assert_eq!(
        store.get_execution("run").await.must("get_execution(run)"),
        Some(ExecutionRecord {
            version: 3,
            ..third
        }),
        "refused updates leave the stored execution unchanged"
    );

    let err = expect_err(
        store.update_execution(&execution("ghost", "job", 9)).await,
        "update_execution(ghost)",
    );
    match &err {
        StoreError::NotFound(key) => assert_mentions(&err, key, "ghost", "update_execution(ghost)"),
        other => panic!("update_execution of an unknown id: expected NotFound, got {other:?}"),
    }
    assert_eq!(
        store
            .get_execution("ghost")
            .await
            .must("get_execution(ghost)"),
        None,
        "a failed update creates nothing"
    );
    assert_eq!(
        store
            .get_execution("bystander")
            .await
            .must("get_execution(bystander)"),
        Some(execution("bystander", "job", 5)),
        "an update touches only its own execution"
    );
}

/// Five executions of `job` created out of order, and two of `other`.
fn listing_executions() -> (Vec<ExecutionRecord>, Vec<ExecutionRecord>) {
    let of_job: Vec<_> = [3, 1, 5, 2, 4]
        .iter()
        .map(|n| execution(&format!("job-run-{n}"), "job", *n))
        .collect();
    let of_other: Vec<_> = [1, 2]
        .iter()
        .map(|n| execution(&format!("other-run-{n}"), "other", *n))
        .collect();
    (of_job, of_other)
}

async fn executions_list_newest_first<S: Store>(store: S) {
    let (of_job, of_other) = listing_executions();
    create_executions(&store, &of_job).await;
    create_executions(&store, &of_other).await;
    let page = store
        .list_executions("job", &PageRequest::first(100))
        .await
        .must("list_executions(job)");
    let numbers: Vec<_> = page.items.iter().map(|e| e.execute_number).collect();
    assert_eq!(
        numbers,
        [5, 4, 3, 2, 1],
        "list_executions is newest (highest execute number) first"
    );
    assert!(
        page.items.iter().all(|e| e.job_id == "job"),
        "list_executions returns only the job's executions"
    );
    assert_eq!(page.next_cursor, None, "one page holds all five");
    let mut expected = of_job;
    expected.sort_by_key(|e| std::cmp::Reverse(e.execute_number));
    assert_eq!(
        page.items, expected,
        "list_executions returns the records as stored"
    );

    let empty = store
        .list_executions("unknown", &PageRequest::first(10))
        .await
        .must("list_executions(unknown)");
    assert_eq!(
        empty,
        Page {
            items: vec![],
            next_cursor: None
        },
        "list_executions of a job without executions"
    );
}

async fn executions_list_pagination<S: Store>(store: S) {
    let (of_job, of_other) = listing_executions();
    create_executions(&store, &of_job).await;
    create_executions(&store, &of_other).await;
    let mut expected = of_job;
    expected.sort_by_key(|e| std::cmp::Reverse(e.execute_number));
    for limit in 1..=expected.len() + 1 {
        let store = &store;
        let got = walk("list_executions", limit, |page| async move {
            store.list_executions("job", &page).await
        })
        .await;
        assert_eq!(got, expected, "list_executions pages with limit {limit}");
    }
}

async fn executions_list_invalid_cursor<S: Store>(store: S) {
    let (of_job, _) = listing_executions();
    create_executions(&store, &of_job).await;
    for cursor in bogus_cursors() {
        let request = PageRequest {
            limit: 2,
            cursor: Some(cursor.to_owned()),
        };
        let err = expect_err(
            store.list_executions("job", &request).await,
            "list_executions with a bogus cursor",
        );
        assert_eq!(
            err,
            StoreError::InvalidCursor,
            "list_executions with cursor {cursor:?}"
        );
        let err = expect_err(
            store.list_child_executions("job", None, &request).await,
            "list_child_executions with a bogus cursor",
        );
        assert_eq!(
            err,
            StoreError::InvalidCursor,
            "list_child_executions with cursor {cursor:?}"
        );
    }
}

/// Executions of `parent`'s children `c1` and `c2` for parent executions 1..=3 (c2 a second after c1),
/// one child run not started by a parent execution, the parent's own runs, and another parent's child.
/// Returns (everything, the children of `parent` newest first).
fn family() -> (Vec<ExecutionRecord>, Vec<ExecutionRecord>) {
    let mut all = Vec::new();
    let mut children = Vec::new();
    for parent_execution in 1..=3u64 {
        let base = i64::try_from(parent_execution).expect("small") * 600_000;
        all.push(ExecutionRecord {
            created_at: t(base - 10_000),
            ..execution(
                &format!("parent-{parent_execution}"),
                "parent",
                parent_execution,
            )
        });
        for (offset, child) in [(0, "c1"), (1_000, "c2")] {
            let record = ExecutionRecord {
                parent_job: Some("parent".to_owned()),
                parent_execution: Some(parent_execution),
                created_at: t(base + offset),
                ..execution(
                    &format!("{child}-{parent_execution}"),
                    child,
                    parent_execution,
                )
            };
            all.push(record.clone());
            children.push(record);
        }
    }
    let manual = ExecutionRecord {
        parent_job: Some("parent".to_owned()),
        parent_execution: None,
        created_at: t(10_000_000),
        ..execution("c1-manual", "c1", 4)
    };
    all.push(manual.clone());
    children.push(manual);
    all.push(ExecutionRecord {
        parent_job: Some("elsewhere".to_owned()),
        parent_execution: Some(2),
        created_at: t(1_200_500),
        ..execution("x-2", "x", 1)
    });
    children.sort_by_key(|e| std::cmp::Reverse(e.created_at));
    (all, children)
}

async fn child_executions_by_parent<S: Store>(store: S) {
    let (mut all, children) = family();
    // Created out of order: ordering must come from the store.
    all.reverse();
    all.swap(1, 4);
    create_executions(&store, &all).await;
    let page = store
        .list_child_executions("parent", None, &PageRequest::first(100))
        .await
        .must("list_child_executions(parent)");
    let ids: Vec<_> = page.items.iter().map(|e| e.execution_id.as_str()).collect();
    assert_eq!(
        ids,
        ["c1-manual", "c2-3", "c1-3", "c2-2", "c1-2", "c2-1", "c1-1"],
        "list_child_executions(parent) is every child run, newest (latest created_at) first"
    );
    assert_eq!(page.items, children, "child executions as stored");
    assert_eq!(page.next_cursor, None, "one page holds all children");

    let none = store
        .list_child_executions("c1", None, &PageRequest::first(10))
        .await
        .must("list_child_executions(c1)");
    assert_eq!(
        none,
        Page {
            items: vec![],
            next_cursor: None
        },
        "a job without children"
    );
}

async fn child_executions_by_parent_execution<S: Store>(store: S) {
    let (all, _) = family();
    create_executions(&store, &all).await;
    for (parent_execution, want) in [
        (1, ["c2-1", "c1-1"]),
        (2, ["c2-2", "c1-2"]),
        (3, ["c2-3", "c1-3"]),
    ] {
        let page = store
            .list_child_executions("parent", Some(parent_execution), &PageRequest::first(100))
            .await
            .must("list_child_executions(parent, n)");
        let ids: Vec<_> = page.items.iter().map(|e| e.execution_id.as_str()).collect();
        assert_eq!(
            ids, want,
            "list_child_executions(parent, {parent_execution})"
        );
        assert_eq!(
            page.next_cursor, None,
            "list_child_executions(parent, {parent_execution}) fits one page"
        );
    }
    let page = store
        .list_child_executions("parent", Some(4), &PageRequest::first(100))
        .await
        .must("list_child_executions(parent, 4)");
    assert!(
        page.items.is_empty(),
        "no child was started by parent execution 4"
    );
}

async fn child_executions_pagination<S: Store>(store: S) {
    let (all, children) = family();
    create_executions(&store, &all).await;
    for limit in 1..=children.len() + 1 {
        let store = &store;
        let got = walk("list_child_executions", limit, |page| async move {
            store.list_child_executions("parent", None, &page).await
        })
        .await;
        assert_eq!(
            got, children,
            "list_child_executions(parent) pages with limit {limit}"
        );
    }
    let of_two: Vec<_> = children
        .iter()
        .filter(|e| e.parent_execution == Some(2))
        .cloned()
        .collect();
    let store = &store;
    let got = walk("list_child_executions(parent, 2)", 1, |page| async move {
        store.list_child_executions("parent", Some(2), &page).await
    })
    .await;
    assert_eq!(
        got, of_two,
        "list_child_executions(parent, 2) pages with limit 1"
    );
}

// ---------------------------------------------------------------------------------------------
// Clean

/// Jobs `live` (5 runs) and `small` (2 runs) exist; `deleted` (3 runs) was deleted alone
/// (`delete_job`), `dropped` (1 run) in a batch (`Write::DeleteJob`, as the API deletes). The
/// rule covers every job id that has or had a job: a store may find them without a scan (the
/// DynamoDB store lists the deleted ones by the tombstones their deletions left).
async fn clean_fixture<S: Store>(store: &S) {
    create_jobs(
        store,
        &[job("live"), job("small"), job("deleted"), job("dropped")],
    )
    .await;
    let mut runs = Vec::new();
    for n in 1..=5 {
        runs.push(execution(&format!("live-{n}"), "live", n));
    }
    for n in 1..=2 {
        runs.push(execution(&format!("small-{n}"), "small", n));
    }
    for n in 1..=3 {
        runs.push(execution(&format!("deleted-{n}"), "deleted", n));
    }
    runs.push(execution("dropped-1", "dropped", 1));
    create_executions(store, &runs).await;
    assert!(
        store
            .delete_job("deleted")
            .await
            .must("delete_job(deleted)"),
        "delete_job(deleted) of an existing job"
    );
    let dropped = store
        .get_job("dropped")
        .await
        .must("get_job(dropped)")
        .expect("dropped exists");
    store
        .write_all(&[Write::DeleteJob("dropped", dropped.version)])
        .await
        .map_err(StoreError::from)
        .must("write_all(DeleteJob(dropped))");
}

async fn numbers_of<S: Store>(store: &S, job_id: &str) -> Vec<u64> {
    let page = store
        .list_executions(job_id, &PageRequest::first(100))
        .await
        .must("list_executions");
    page.items.iter().map(|e| e.execute_number).collect()
}

async fn clean_retains_newest<S: Store>(store: S) {
    clean_fixture(&store).await;
    let report = store
        .clean_executions(3, false)
        .await
        .must("clean_executions(3, false)");
    assert_eq!(
        report.executions_deleted, 2,
        "clean(3): live loses runs 1 and 2 ({report:?})"
    );
    assert_eq!(
        report.destroyed_jobs_cleaned, 0,
        "clean without purge cleans no deleted job ({report:?})"
    );
    assert_eq!(
        numbers_of(&store, "live").await,
        [5, 4, 3],
        "clean(3) keeps live's newest three"
    );
    assert_eq!(
        numbers_of(&store, "small").await,
        [2, 1],
        "clean(3) keeps all of small"
    );
    assert_eq!(
        numbers_of(&store, "deleted").await,
        [3, 2, 1],
        "clean(3) without purge keeps deleted job's runs"
    );
    assert_eq!(
        store
            .get_execution("live-1")
            .await
            .must("get_execution(live-1)"),
        None,
        "cleaned run is gone"
    );

    let again = store
        .clean_executions(3, false)
        .await
        .must("second clean_executions(3, false)");
    assert_eq!(
        again.executions_deleted, 0,
        "clean is idempotent ({again:?})"
    );

    let report = store
        .clean_executions(2, false)
        .await
        .must("clean_executions(2, false)");
    assert_eq!(
        report.executions_deleted, 2,
        "clean(2): live run 3 and deleted run 1 ({report:?})"
    );
    assert_eq!(
        numbers_of(&store, "live").await,
        [5, 4],
        "clean(2) keeps live's newest two"
    );
    assert_eq!(
        numbers_of(&store, "deleted").await,
        [3, 2],
        "retention applies to deleted jobs' runs too"
    );
    assert_eq!(
        numbers_of(&store, "dropped").await,
        [1],
        "clean(2) keeps the dropped job's only run"
    );
}

async fn clean_purges_deleted_jobs<S: Store>(store: S) {
    clean_fixture(&store).await;
    let report = store
        .clean_executions(2, true)
        .await
        .must("clean_executions(2, true)");
    assert_eq!(
        report.executions_deleted,
        3 + 3 + 1,
        "clean(2, purge): live 1-3, all of deleted and dropped ({report:?})"
    );
    assert_eq!(
        report.destroyed_jobs_cleaned, 2,
        "clean(2, purge): deleted and dropped ({report:?})"
    );
    assert_eq!(
        numbers_of(&store, "live").await,
        [5, 4],
        "clean(2, purge) keeps live's newest two"
    );
    assert_eq!(
        numbers_of(&store, "small").await,
        [2, 1],
        "clean(2, purge) keeps all of small"
    );
    assert!(
        numbers_of(&store, "deleted").await.is_empty(),
        "a deleted job's runs are purged"
    );
    assert!(
        numbers_of(&store, "dropped").await.is_empty(),
        "runs of a job deleted in a batch are purged"
    );
    assert!(
        store.get_job("live").await.must("get_job(live)").is_some(),
        "clean never touches jobs"
    );

    let again = store
        .clean_executions(2, true)
        .await
        .must("second clean_executions(2, true)");
    assert_eq!(
        again.executions_deleted, 0,
        "second purge deletes nothing ({again:?})"
    );
    assert_eq!(
        again.destroyed_jobs_cleaned, 0,
        "second purge cleans no job ({again:?})"
    );
}

// ---------------------------------------------------------------------------------------------
// Wake-up index

/// A tick's batch: the job, its fires, its timer entry.
fn tick<'a>(
    job: &'a JobRecord,
    fires: &'a [ExecutionRecord],
    due: Option<DateTime<Utc>>,
) -> Vec<Write<'a>> {
    let mut writes = vec![Write::UpdateJob(job)];
    writes.extend(fires.iter().map(Write::CreateExecution));
    writes.push(Write::SetWakeup("job:ticked", due));
    writes
}

async fn write_all_is_all_or_nothing<S: Store>(store: S) {
    store.create_job(&job("ticked")).await.expect("create");
    store
        .set_wakeup("job:ticked", Some(t(1_000)))
        .await
        .expect("set");
    let fires = [
        execution("ticked~1", "ticked", 1),
        execution("ticked~2", "ticked", 2),
    ];
    let mut advanced = job("ticked");
    advanced.state = "paused".into();
    store
        .write_all(&tick(&advanced, &fires, Some(t(60_000))))
        .await
        .expect("commit");
    let stored = store.get_job("ticked").await.expect("get").expect("job");
    assert_eq!((stored.version, stored.state.as_str()), (2, "paused"));
    for fire in &fires {
        let got = store.get_execution(&fire.execution_id).await.expect("get");
        assert_eq!(
            got.as_ref().map(|e| e.execute_number),
            Some(fire.execute_number)
        );
    }
    assert_eq!(
        store.get_wakeup("job:ticked").await.expect("get"),
        Some(t(60_000))
    );

    // A stale version writes nothing: no execution, no timer move; the error names the write.
    let stale = [execution("ticked~3", "ticked", 3)];
    let err = expect_err(
        store
            .write_all(&tick(&job("ticked"), &stale, Some(t(120_000))))
            .await,
        "a commit against a stale version",
    );
    assert_eq!(err.index, Some(0), "{err:?}");
    assert!(
        matches!(err.error, StoreError::VersionConflict { .. }),
        "{err:?}"
    );
    assert_eq!(store.get_execution("ticked~3").await.expect("get"), None);
    assert_eq!(
        store.get_wakeup("job:ticked").await.expect("get"),
        Some(t(60_000))
    );

    // An execution that exists aborts the whole batch, naming it.
    let mut current = stored.clone();
    current.state = "active".into();
    let clash = [
        execution("ticked~4", "ticked", 4),
        execution("ticked~2", "ticked", 2),
    ];
    let err = expect_err(
        store.write_all(&tick(&current, &clash, None)).await,
        "a commit with an existing execution",
    );
    assert_eq!(
        err,
        WriteAllError::at(2, StoreError::AlreadyExists("ticked~2".into()))
    );
    assert_eq!(store.get_execution("ticked~4").await.expect("get"), None);
    let unchanged = store.get_job("ticked").await.expect("get").expect("job");
    assert_eq!((unchanged.version, unchanged.state.as_str()), (2, "paused"));
    assert_eq!(
        store.get_wakeup("job:ticked").await.expect("get"),
        Some(t(60_000))
    );

    // A job that is gone is NotFound; a batch may remove a timer entry.
    let err = expect_err(
        store
            .write_all(&[
                Write::UpdateJob(&job("ghost")),
                Write::SetWakeup("job:ghost", None),
            ])
            .await,
        "a commit for a missing job",
    );
    assert_eq!(
        err,
        WriteAllError::at(0, StoreError::NotFound("ghost".into()))
    );
    store
        .write_all(&tick(&current, &[], None))
        .await
        .expect("commit with no fires");
    assert_eq!(store.get_wakeup("job:ticked").await.expect("get"), None);
    store.write_all(&[]).await.expect("an empty batch");
}

/// The shape of a dispatch step: an execution's transition, the job slot it takes or frees and a
/// wake-up removed, together or not at all; a lost race on either names it.
/// The stored facts the non-run ledger reads (`App::occurrences`): the missed, dropped and
/// debug-mode ranges kept in the job's state, written in the same `write_all` as the skipped run
/// that counts them, and that run read back by id with the event that says why it was skipped.
async fn ledger_facts_round_trip<S: Store>(store: S) {
    use sundial_core::ledger::{FireRange, RangeReason, RunFact};
    store.create_job(&job("quiet")).await.must("create");
    let ranges = vec![
        FireRange {
            reason: RangeReason::Missed,
            first: t(0),
            last: t(86_399_000),
            count: 86_400,
        },
        FireRange {
            reason: RangeReason::Dropped,
            first: t(90_000_000),
            last: t(90_002_000),
            count: 3,
        },
        FireRange {
            reason: RangeReason::DebugMode,
            first: t(95_000_000),
            last: t(95_000_000),
            count: 1,
        },
    ];
    let mut counted = job("quiet");
    counted.document["state"]["fireRanges"] = serde_json::to_value(&ranges).expect("ranges");
    let mut skipped = execution("quiet~20240310T123500Z", "quiet", 1);
    skipped.state = "Skipped".into();
    skipped.document["events"] = json!([
        {"at": "2024-03-10T12:35:00Z", "to": "Scheduled", "message": "due"},
        {"at": "2024-03-10T12:36:10Z", "to": "Skipped", "message": "missed the catch-up window (1m)"},
    ]);
    store
        .write_all(&[Write::UpdateJob(&counted), Write::CreateExecution(&skipped)])
        .await
        .expect("the job's ranges with the skipped run");

    let stored = store.get_job("quiet").await.must("get").expect("job");
    let read: Vec<FireRange> =
        serde_json::from_value(stored.document["state"]["fireRanges"].clone()).expect("ranges");
    assert_eq!(read, ranges, "the ranges come back exactly");
    let many = store
        .read_many(
            &["quiet~20240310T123500Z".to_owned(), "quiet~gone".to_owned()],
            &[],
        )
        .await
        .must("read_many");
    let Some(run) = &many.executions[0] else {
        panic!("the skipped run by id: {many:?}")
    };
    assert_eq!(many.executions[1], None);
    let reason = run.document["events"][1]["message"].as_str();
    let fact = RunFact::of_execution(&run.execution_id, &run.state, reason);
    assert_eq!(fact.not_run, Some(RangeReason::Missed), "{fact:?}");

    // What the ledger reads of many runs: each state, the document only of a skipped one.
    let ran = execution("quiet~20240310T123400Z", "quiet", 2);
    assert!(store.create_execution(&ran).await.must("create"));
    let states = store
        .read_states(&[
            "quiet~20240310T123500Z".to_owned(),
            "quiet~gone".to_owned(),
            "quiet~20240310T123400Z".to_owned(),
        ])
        .await
        .must("read_states");
    assert_eq!(
        states,
        vec![
            Some(StateRead::of_record(run.clone())),
            None,
            Some(StateRead {
                execution_id: "quiet~20240310T123400Z".into(),
                state: "Enqueued".into(),
                skipped_document: None,
            }),
        ]
    );
}

async fn write_all_execution_and_job<S: Store>(store: S) {
    store.create_job(&job("slot")).await.expect("create");
    let run = execution("slot~1", "slot", 1);
    assert!(store.create_execution(&run).await.expect("create"));
    store
        .set_wakeup("exec:slot~1", Some(t(5_000)))
        .await
        .expect("set");
    let mut processing = run.clone();
    processing.state = "Processing".into();
    let mut taken = job("slot");
    taken.state = "paused".into();
    store
        .write_all(&[
            Write::UpdateJob(&taken),
            Write::UpdateExecution(&processing),
            Write::SetWakeup("exec:slot~1", None),
        ])
        .await
        .expect("admit");
    let after = store
        .get_execution("slot~1")
        .await
        .expect("get")
        .expect("run");
    assert_eq!((after.version, after.state.as_str()), (2, "Processing"));
    assert_eq!(store.get_wakeup("exec:slot~1").await.expect("get"), None);

    // The execution moved on (version 2): a write from version 1 loses, and the job stays.
    let mut succeeded = run.clone();
    succeeded.state = "Succeeded".into();
    let mut freed = taken.clone();
    freed.version = 2;
    freed.state = "active".into();
    let err = expect_err(
        store
            .write_all(&[Write::UpdateExecution(&succeeded), Write::UpdateJob(&freed)])
            .await,
        "a finish from a stale execution",
    );
    assert_eq!(err.index, Some(0), "{err:?}");
    assert!(
        matches!(err.error, StoreError::VersionConflict { .. }),
        "{err:?}"
    );
    assert_eq!(
        store.get_job("slot").await.expect("get").map(|j| j.version),
        Some(2),
        "the job was not written"
    );

    // The job moved on: the execution stays as it was.
    succeeded.version = 2;
    let mut stale_job = taken.clone();
    stale_job.version = 1;
    let err = expect_err(
        store
            .write_all(&[
                Write::UpdateExecution(&succeeded),
                Write::UpdateJob(&stale_job),
            ])
            .await,
        "a finish against a stale job",
    );
    assert_eq!(err.index, Some(1), "{err:?}");
    let still = store
        .get_execution("slot~1")
        .await
        .expect("get")
        .expect("run");
    assert_eq!((still.version, still.state.as_str()), (2, "Processing"));

    store
        .write_all(&[Write::UpdateExecution(&succeeded), Write::UpdateJob(&freed)])
        .await
        .expect("finish");
    let done = store
        .get_execution("slot~1")
        .await
        .expect("get")
        .expect("run");
    assert_eq!((done.version, done.state.as_str()), (3, "Succeeded"));

    // Read together, in the order asked; a key asked twice answers twice.
    let read = store
        .read_many(
            &["slot~1".to_owned(), "slot~9".to_owned()],
            &["slot".to_owned(), "nojob".to_owned(), "slot".to_owned()],
        )
        .await
        .expect("read");
    let executions: Vec<_> = read
        .executions
        .iter()
        .map(|e| e.as_ref().map(|e| e.version))
        .collect();
    assert_eq!(executions, [Some(3), None]);
    let jobs: Vec<_> = read
        .jobs
        .iter()
        .map(|j| j.as_ref().map(|j| (j.version, j.state.clone())))
        .collect();
    let active = Some((3, "active".to_owned()));
    assert_eq!(jobs, [active.clone(), None, active]);
    let empty = store.read_many(&[], &[]).await.expect("read nothing");
    assert!(empty.executions.is_empty() && empty.jobs.is_empty());

    // The same key twice is refused before anything is written.
    let err = expect_err(
        store
            .write_all(&[
                Write::SetWakeup("exec:slot~1", Some(t(1))),
                Write::SetWakeup("exec:slot~1", None),
            ])
            .await,
        "a batch writing one key twice",
    );
    assert_eq!(err.index, None);
    assert_eq!(store.get_wakeup("exec:slot~1").await.expect("get"), None);
}

/// A run written with its own wake-up (`exec:{id}`) set or removed in the same batch, the job not
/// in it: as atomic as any batch (DynamoDB writes it as one conditional write of the run's item,
/// no transaction), a stale version or a taken id failing write 0 and leaving both as they were.
async fn write_all_a_run_with_its_own_wakeup<S: Store>(store: S) {
    store.create_job(&job("own")).await.expect("create");
    let run = execution("own~1", "own", 1);
    store
        .write_all(&[
            Write::CreateExecution(&run),
            Write::SetWakeup("exec:own~1", Some(t(5_000))),
        ])
        .await
        .expect("create with its fallback");
    assert_eq!(
        store.get_wakeup("exec:own~1").await.expect("get"),
        Some(t(5_000))
    );
    let err = expect_err(
        store
            .write_all(&[
                Write::CreateExecution(&run),
                Write::SetWakeup("exec:own~1", Some(t(9_000))),
            ])
            .await,
        "a second creation of the same run",
    );
    assert_eq!(err.index, Some(0), "{err:?}");
    assert!(matches!(err.error, StoreError::AlreadyExists(_)), "{err:?}");
    assert_eq!(
        store.get_wakeup("exec:own~1").await.expect("get"),
        Some(t(5_000)),
        "the failed batch left the wake-up"
    );

    let mut processing = run.clone();
    processing.state = "Processing".into();
    store
        .write_all(&[
            Write::UpdateExecution(&processing),
            Write::SetWakeup("exec:own~1", None),
        ])
        .await
        .expect("admit");
    let after = store
        .get_execution("own~1")
        .await
        .expect("get")
        .expect("run");
    assert_eq!((after.version, after.state.as_str()), (2, "Processing"));
    assert_eq!(store.get_wakeup("exec:own~1").await.expect("get"), None);

    // From version 1 again: refused, and the wake-up it would set is not set.
    let err = expect_err(
        store
            .write_all(&[
                Write::UpdateExecution(&processing),
                Write::SetWakeup("exec:own~1", Some(t(7_000))),
            ])
            .await,
        "an update from a stale version",
    );
    assert_eq!(err.index, Some(0), "{err:?}");
    assert!(
        matches!(err.error, StoreError::VersionConflict { .. }),
        "{err:?}"
    );
    assert_eq!(store.get_wakeup("exec:own~1").await.expect("get"), None);
    let still = store
        .get_execution("own~1")
        .await
        .expect("get")
        .expect("run");
    assert_eq!(still.version, 2);
}

async fn wakeup_set_get_overwrite_remove<S: Store>(store: S) {
    assert_eq!(
        store.get_wakeup("job:a").await.must("get_wakeup(job:a)"),
        None,
        "unset wake-up"
    );
    store
        .set_wakeup("job:a", Some(t(42)))
        .await
        .must("set_wakeup(job:a)");
    store
        .set_wakeup("exec:a", Some(t(43)))
        .await
        .must("set_wakeup(exec:a)");
    assert_eq!(
        store.get_wakeup("job:a").await.must("get_wakeup(job:a)"),
        Some(t(42)),
        "set then get"
    );
    store
        .set_wakeup("job:a", Some(t(-3_600_001)))
        .await
        .must("overwrite job:a");
    assert_eq!(
        store.get_wakeup("job:a").await.must("get_wakeup(job:a)"),
        Some(t(-3_600_001)),
        "overwrite"
    );
    store.set_wakeup("job:a", None).await.must("remove job:a");
    assert_eq!(
        store.get_wakeup("job:a").await.must("get_wakeup(job:a)"),
        None,
        "set_wakeup(None) removes"
    );
    store
        .set_wakeup("job:a", None)
        .await
        .must("remove job:a again");
    store
        .set_wakeup("never-set", None)
        .await
        .must("remove an unset key");
    assert_eq!(
        store.get_wakeup("exec:a").await.must("get_wakeup(exec:a)"),
        Some(t(43)),
        "other keys untouched"
    );
}

async fn wakeups_due<S: Store>(store: S) {
    for (key, offset) in [
        ("job:a", 3_000),
        ("exec:b", 1_000),
        ("job:c", 2_000),
        ("job:d", 5_000),
    ] {
        store
            .set_wakeup(key, Some(t(offset)))
            .await
            .must("set_wakeup");
    }
    let wake = |key: &str, offset: i64| WakeUp {
        key: key.to_owned(),
        due: t(offset),
    };

    let due = store
        .due_wakeups(t(3_000), 10)
        .await
        .must("due_wakeups(3000)");
    assert_eq!(
        due,
        [
            wake("exec:b", 1_000),
            wake("job:c", 2_000),
            wake("job:a", 3_000)
        ],
        "due_wakeups is entries due at or before `until`, earliest first"
    );
    let due = store
        .due_wakeups(t(2_999), 10)
        .await
        .must("due_wakeups(2999)");
    assert_eq!(
        due,
        [wake("exec:b", 1_000), wake("job:c", 2_000)],
        "due_wakeups just before an entry"
    );
    let due = store
        .due_wakeups(t(10_000), 2)
        .await
        .must("due_wakeups(10000, 2)");
    assert_eq!(
        due,
        [wake("exec:b", 1_000), wake("job:c", 2_000)],
        "due_wakeups respects limit, earliest first"
    );
    let due = store.due_wakeups(t(999), 10).await.must("due_wakeups(999)");
    assert!(
        due.is_empty(),
        "nothing due before the earliest entry: {due:?}"
    );

    store
        .set_wakeup("job:d", Some(t(500)))
        .await
        .must("move job:d earlier");
    store.set_wakeup("job:c", None).await.must("remove job:c");
    let due = store
        .due_wakeups(t(10_000), 10)
        .await
        .must("due_wakeups(10000)");
    assert_eq!(
        due,
        [
            wake("job:d", 500),
            wake("exec:b", 1_000),
            wake("job:a", 3_000)
        ],
        "due_wakeups after an overwrite and a removal"
    );
}

// ---------------------------------------------------------------------------------------------
// Concurrency

const RACERS: usize = 20;

async fn concurrent_job_updates<S: Store>(store: S) {
    let store = Arc::new(store);
    let original = job("contended");
    create_jobs(store.as_ref(), std::slice::from_ref(&original)).await;
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut tasks = Vec::new();
    for racer in 0..RACERS {
        let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
        let mut record = original.clone();
        record.document = json!({"winner": racer});
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store.update_job(&record).await
        }));
    }
    let mut winners = Vec::new();
    for (racer, task) in tasks.into_iter().enumerate() {
        match task.await.expect("update task finished") {
            Ok(version) => {
                assert_eq!(version, 2, "the winning update returns version 2");
                winners.push(racer);
            }
            Err(StoreError::VersionConflict { expected: 1, .. }) => {}
            Err(other) => {
                panic!("a losing concurrent update_job must be VersionConflict, got {other:?}")
            }
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one of {RACERS} concurrent update_job calls succeeds: {winners:?}"
    );
    let stored = store
        .get_job("contended")
        .await
        .must("get_job(contended)")
        .expect("job exists");
    assert_eq!(stored.version, 2, "one update applied");
    assert_eq!(
        stored.document,
        json!({"winner": winners[0]}),
        "the stored document is the winner's"
    );
}

async fn concurrent_execution_creates<S: Store>(store: S) {
    let store = Arc::new(store);
    let barrier = Arc::new(Barrier::new(RACERS));
    let mut tasks = Vec::new();
    for racer in 0..RACERS {
        let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
        let record = ExecutionRecord {
            document: json!({"creator": racer}),
            ..execution("same-fire", "job", 1)
        };
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store.create_execution(&record).await
        }));
    }
    let mut winners = Vec::new();
    for (racer, task) in tasks.into_iter().enumerate() {
        if task
            .await
            .expect("create task finished")
            .must("concurrent create_execution")
        {
            winners.push(racer);
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one of {RACERS} concurrent create_execution calls returns true: {winners:?}"
    );
    let stored = store
        .get_execution("same-fire")
        .await
        .must("get_execution(same-fire)")
        .expect("execution exists");
    assert_eq!(
        stored.document,
        json!({"creator": winners[0]}),
        "the stored execution is the winner's"
    );
    let page = store
        .list_executions("job", &PageRequest::first(100))
        .await
        .must("list_executions(job)");
    assert_eq!(
        page.items.len(),
        1,
        "concurrent duplicates create one execution"
    );
}

async fn wakeup_cleared_only_if_unchanged<S: Store>(store: S) {
    store
        .set_wakeup("exec:x", Some(t(1_000)))
        .await
        .must("set_wakeup(exec:x)");
    let cleared = store
        .clear_wakeup_if("exec:x", t(2_000))
        .await
        .must("clear_wakeup_if(other due)");
    assert!(
        !cleared,
        "clear_wakeup_if removed an entry due at another time"
    );
    assert_eq!(
        store.get_wakeup("exec:x").await.must("get_wakeup(exec:x)"),
        Some(t(1_000))
    );
    let cleared = store
        .clear_wakeup_if("exec:x", t(1_000))
        .await
        .must("clear_wakeup_if(same due)");
    assert!(
        cleared,
        "clear_wakeup_if kept an entry due at the given time"
    );
    assert_eq!(
        store.get_wakeup("exec:x").await.must("get_wakeup(exec:x)"),
        None
    );
    let cleared = store
        .clear_wakeup_if("exec:none", t(1_000))
        .await
        .must("clear_wakeup_if(absent)");
    assert!(!cleared);
}

/// Settings (the debug mode): absent until written; version 1 creates, each later version
/// replaces exactly the one before it; the document and the time round-trip.
/// A signed-out console session is refused until the expiry it was recorded with; another
/// session, and the same one after that expiry, are not (times are near the wall clock: DynamoDB
/// drops items whose TTL has passed on read).
async fn revoked_sessions_are_remembered_until_they_expire<S: Store>(store: S) {
    let now = chrono::Utc::now();
    let expiry = now + chrono::Duration::hours(8);
    assert!(!store.session_revoked("a1b2", now).await.unwrap());
    store.revoke_session("a1b2", expiry).await.unwrap();
    assert!(store.session_revoked("a1b2", now).await.unwrap());
    assert!(!store.session_revoked("c3d4", now).await.unwrap());
    // Signing out twice (two tabs) is no error.
    store.revoke_session("a1b2", expiry).await.unwrap();
    assert!(store.session_revoked("a1b2", now).await.unwrap());
    // Once the cookie would have expired anyway, the record may be forgotten.
    assert!(!store
        .session_revoked("a1b2", expiry + chrono::Duration::seconds(1))
        .await
        .unwrap());
}

async fn settings_are_versioned_documents<S: Store>(store: S) {
    assert_eq!(store.get_setting("debugMode").await.unwrap(), None);
    let first = SettingRecord {
        name: "debugMode".into(),
        version: 1,
        updated_at: t(1_000),
        value: json!({"mode": "schedules", "history": [{"by": "alice", "from": "off", "to": "schedules"}]}),
    };
    store.put_setting(&first).await.unwrap();
    assert_eq!(
        store.get_setting("debugMode").await.unwrap(),
        Some(first.clone())
    );
    assert!(matches!(
        store.put_setting(&first).await,
        Err(StoreError::AlreadyExists(key)) if key.contains("debugMode")
    ));
    let second = SettingRecord {
        version: 2,
        updated_at: t(2_000),
        value: json!({"mode": "off"}),
        ..first.clone()
    };
    store.put_setting(&second).await.unwrap();
    // A writer that read version 1 lost the race.
    assert!(matches!(
        store.put_setting(&second).await,
        Err(StoreError::VersionConflict { key, .. }) if key.contains("debugMode")
    ));
    let skipped = SettingRecord {
        version: 5,
        ..second.clone()
    };
    assert!(matches!(
        store.put_setting(&skipped).await,
        Err(StoreError::VersionConflict { .. })
    ));
    let other = SettingRecord {
        name: "other".into(),
        version: 3,
        ..second.clone()
    };
    assert!(matches!(
        store.put_setting(&other).await,
        Err(StoreError::NotFound(key)) if key.contains("other")
    ));
    assert_eq!(store.get_setting("debugMode").await.unwrap(), Some(second));
    assert_eq!(store.get_setting("other").await.unwrap(), None);
}

fn calendar(name: &str, version: u64, at: i64) -> CalendarRecord {
    CalendarRecord {
        name: name.into(),
        version,
        updated_at: t(at),
        document: json!({
            "calendar": {"name": name, "timeZone": "Europe/London", "weekend": "SAT,SUN",
                         "dates": ["2024-12-24"], "description": "Rémi's \"holidays\" ✓"},
            "updatedBy": "alice",
        }),
        listings: 0,
    }
}

/// An entry of the calendar `name`'s own trail (`calendar:{name}`), entry `n`.
fn history(name: &str, n: u64) -> AuditRecord {
    let at = t(1_000 + n as i64);
    AuditRecord {
        job_id: format!("calendar:{name}"),
        entry_id: crate::store::audit::entry_id(at, n, n),
        at,
        document: json!({"action": "calendar:update", "calendar": name, "n": n}),
    }
}

/// Calendars: absent until written; version 1 creates, each later version replaces exactly the
/// one before it; listed in name order; deleted only at the version read.
async fn calendars_are_versioned_documents<S: Store>(store: S) {
    assert_eq!(store.get_calendar("london").await.unwrap(), None);
    assert_eq!(store.list_calendars().await.unwrap(), vec![]);
    let first = calendar("london", 1, 1_000);
    store
        .put_calendar(&first, &history("c", 101))
        .await
        .unwrap();
    assert_eq!(
        store.get_calendar("london").await.unwrap(),
        Some(first.clone())
    );
    assert!(matches!(
        store.put_calendar(&first, &history("c", 102)).await,
        Err(StoreError::AlreadyExists(key)) if key.contains("london")
    ));
    let second = CalendarRecord {
        version: 2,
        updated_at: t(2_000),
        document: json!({"calendar": {"name": "london"}, "updatedBy": "bob"}),
        ..first.clone()
    };
    store
        .put_calendar(&second, &history("c", 103))
        .await
        .unwrap();
    assert!(matches!(
        store.put_calendar(&second, &history("c", 104)).await,
        Err(StoreError::VersionConflict { key, .. }) if key.contains("london")
    ));
    assert!(matches!(
        store.put_calendar(&calendar("paris", 2, 0), &history("c", 105)).await,
        Err(StoreError::NotFound(key)) if key.contains("paris")
    ));
    let other = calendar("frankfurt", 1, 3_000);
    store
        .put_calendar(&other, &history("c", 106))
        .await
        .unwrap();
    assert_eq!(
        store.list_calendars().await.unwrap(),
        vec![other.clone(), second.clone()],
        "name order"
    );
    assert!(matches!(
        store.delete_calendar("london", 1, 0, &history("c", 109)).await,
        Err(StoreError::VersionConflict { key, .. }) if key.contains("london")
    ));
    assert!(matches!(
        store.delete_calendar("paris", 1, 0, &history("c", 110)).await,
        Err(StoreError::NotFound(key)) if key.contains("paris")
    ));
    store
        .delete_calendar("london", 2, 0, &history("c", 111))
        .await
        .unwrap();
    assert_eq!(store.get_calendar("london").await.unwrap(), None);
    assert_eq!(store.list_calendars().await.unwrap(), vec![other]);
    // A name can be used again after a deletion.
    store
        .put_calendar(&first, &history("c", 107))
        .await
        .unwrap();
}

/// A calendar's change and its history entry are one write: both are stored, or, when either's
/// condition fails (the calendar's version, the entry's id), neither.
async fn calendar_change_and_history_are_one_write<S: Store>(store: S) {
    async fn trail<S: Store>(store: &S) -> Vec<AuditRecord> {
        store
            .list_audit(
                "calendar:london",
                &AuditQuery::default(),
                &PageRequest::first(10),
            )
            .await
            .unwrap()
            .items
    }
    let first = calendar("london", 1, 1_000);
    store
        .put_calendar(&first, &history("london", 1))
        .await
        .unwrap();
    assert_eq!(trail(&store).await, vec![history("london", 1)]);
    // The entry's id is taken: the calendar is not written either.
    let second = CalendarRecord {
        version: 2,
        updated_at: t(2_000),
        ..first.clone()
    };
    assert!(matches!(
        store.put_calendar(&second, &history("london", 1)).await,
        Err(StoreError::AlreadyExists(key)) if key.contains("calendar:london")
    ));
    assert_eq!(
        store.get_calendar("london").await.unwrap(),
        Some(first.clone())
    );
    // The calendar's condition fails: no entry is written.
    assert!(matches!(
        store.put_calendar(&first, &history("london", 2)).await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert!(matches!(
        store
            .delete_calendar("london", 7, 0, &history("london", 3))
            .await,
        Err(StoreError::VersionConflict { .. })
    ));
    assert_eq!(trail(&store).await, vec![history("london", 1)]);
    // A deletion whose entry's id is taken deletes nothing.
    assert!(matches!(
        store
            .delete_calendar("london", 1, 0, &history("london", 1))
            .await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(store.get_calendar("london").await.unwrap(), Some(first));
    store
        .put_calendar(&second, &history("london", 4))
        .await
        .unwrap();
    store
        .delete_calendar("london", 2, 0, &history("london", 5))
        .await
        .unwrap();
    assert_eq!(store.get_calendar("london").await.unwrap(), None);
    let mut ids: Vec<u64> = trail(&store)
        .await
        .iter()
        .map(|e| e.document["n"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 4, 5]);
}

/// Calendar names as the calendar-users methods take them.
fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The index of jobs by calendar: adding is idempotent, removing what is absent is no error, a
/// job is listed under each of its calendars in id order, and a calendar's deletion does not
/// touch it.
async fn calendar_users_index<S: Store>(store: S) {
    assert_eq!(
        store.calendar_users("london").await.unwrap(),
        Vec::<String>::new()
    );
    for (n, name) in ["london", "ny", "lon", "busy"].into_iter().enumerate() {
        store
            .put_calendar(&calendar(name, 1, 0), &history("c", 120 + n as u64))
            .await
            .unwrap();
    }
    store
        .add_calendar_users("job-b", &names(&["london", "ny"]))
        .await
        .unwrap();
    store
        .add_calendar_users("job-a", &names(&["london"]))
        .await
        .unwrap();
    store
        .add_calendar_users("job-a", &names(&["london"]))
        .await
        .unwrap();
    // A name that is a prefix of another is its own partition.
    store
        .add_calendar_users("job-c", &names(&["lon"]))
        .await
        .unwrap();
    assert_eq!(
        store.calendar_users("london").await.unwrap(),
        names(&["job-a", "job-b"])
    );
    assert_eq!(store.calendar_users("ny").await.unwrap(), names(&["job-b"]));
    assert_eq!(
        store.calendar_users("lon").await.unwrap(),
        names(&["job-c"])
    );
    store
        .remove_calendar_users("job-b", &names(&["london", "paris"]))
        .await
        .unwrap();
    assert_eq!(
        store.calendar_users("london").await.unwrap(),
        names(&["job-a"])
    );
    assert_eq!(store.calendar_users("ny").await.unwrap(), names(&["job-b"]));
    let london = store.get_calendar("london").await.unwrap().unwrap();
    store
        .delete_calendar("london", 1, london.listings, &history("c", 112))
        .await
        .unwrap();
    assert_eq!(
        store.calendar_users("london").await.unwrap(),
        names(&["job-a"])
    );
    // Many users: more than one page of any store's reads.
    let many: Vec<String> = (0..130).map(|i| format!("job-{i:03}")).collect();
    for id in &many {
        store
            .add_calendar_users(id, &names(&["busy"]))
            .await
            .unwrap();
    }
    assert_eq!(store.calendar_users("busy").await.unwrap(), many);
}

/// What keeps a delete from racing a job that starts to use the calendar: every listing counts on
/// the calendar (a put keeps the count), a delete is made only at the count read, listing under a
/// calendar that is not there fails without listing, and a batch requiring a listing that is not
/// there writes nothing.
async fn calendar_listings_guard_deletes<S: Store>(store: S) {
    store
        .put_calendar(&calendar("london", 1, 0), &history("c", 130))
        .await
        .unwrap();
    let read = store.get_calendar("london").await.unwrap().unwrap();
    assert_eq!(read.listings, 0);
    store
        .add_calendar_users("job-a", &names(&["london"]))
        .await
        .unwrap();
    store
        .add_calendar_users("job-a", &names(&["london"]))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_calendar("london")
            .await
            .unwrap()
            .unwrap()
            .listings,
        2,
        "each listing counts, a repeated one too"
    );
    // The job left again: the delete's check finds no job, but it read the count before the
    // listings, so the delete fails and nothing is written.
    store
        .remove_calendar_users("job-a", &names(&["london"]))
        .await
        .unwrap();
    assert!(matches!(
        store.delete_calendar("london", 1, read.listings, &history("c", 131)).await,
        Err(StoreError::VersionConflict { key, .. }) if key.contains("london")
    ));
    assert!(store.get_calendar("london").await.unwrap().is_some());
    // A later version keeps the stored count, whatever the record says.
    let second = CalendarRecord {
        version: 2,
        updated_at: t(2_000),
        listings: 0,
        ..read.clone()
    };
    store
        .put_calendar(&second, &history("c", 132))
        .await
        .unwrap();
    let now = store.get_calendar("london").await.unwrap().unwrap();
    assert_eq!((now.version, now.listings), (2, 2));
    // A calendar that is not there lists nobody.
    assert!(matches!(
        store.add_calendar_users("job-b", &names(&["paris"])).await,
        Err(StoreError::NotFound(key)) if key.contains("paris")
    ));
    assert_eq!(
        store.calendar_users("paris").await.unwrap(),
        Vec::<String>::new()
    );
    // A batch that requires a listing writes only when it is there.
    let unlisted = job("job-b");
    let refused = store
        .write_all(&[
            Write::CreateJob(&unlisted),
            Write::RequireCalendarUser("london", "job-b"),
        ])
        .await
        .unwrap_err();
    assert_eq!(refused.index, Some(1), "{refused:?}");
    assert!(
        matches!(&refused.error, StoreError::NotFound(key) if key.contains("london") && key.contains("job-b")),
        "{refused:?}"
    );
    assert_eq!(store.get_job("job-b").await.unwrap(), None);
    store
        .add_calendar_users("job-b", &names(&["london"]))
        .await
        .unwrap();
    store
        .write_all(&[
            Write::CreateJob(&unlisted),
            Write::RequireCalendarUser("london", "job-b"),
        ])
        .await
        .unwrap();
    assert!(store.get_job("job-b").await.unwrap().is_some());
    // At the count it reads, the delete goes through.
    store
        .remove_calendar_users("job-b", &names(&["london"]))
        .await
        .unwrap();
    let last = store.get_calendar("london").await.unwrap().unwrap();
    store
        .delete_calendar("london", last.version, last.listings, &history("c", 133))
        .await
        .unwrap();
    assert_eq!(store.get_calendar("london").await.unwrap(), None);
}
