//! A file store keeps its data across reopening, and refuses files it does not understand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use chrono::DateTime;
use serde_json::json;
use sundial_embedded::SqliteStore;
use sundial_ports::store::{
    ExecutionRecord, ExecutionStore, JobFilter, JobOrder, JobRecord, JobStore, PageRequest,
    StoreError, WakeUpIndex,
};
use sundial_testkit::TempDir;

fn job() -> JobRecord {
    JobRecord {
        job_id: "nightly".to_owned(),
        version: 1,
        creator: "alice".to_owned(),
        parent_job: Some("parent".to_owned()),
        service: None,
        state: "active".to_owned(),
        created_at: DateTime::from_timestamp_millis(1_700_000_000_123).unwrap(),
        updated_at: DateTime::from_timestamp_millis(1_700_000_100_456).unwrap(),
        document: json!({"definition": {"jobName": "Nightly ✓", "timer": {"period": "0 0 2 * * ?"}}, "state": {"active": true}}),
    }
}

fn execution() -> ExecutionRecord {
    ExecutionRecord {
        execution_id: "nightly-1".to_owned(),
        job_id: "nightly".to_owned(),
        execute_number: 1,
        state: "Enqueued".to_owned(),
        parent_job: Some("parent".to_owned()),
        parent_execution: Some(7),
        created_at: DateTime::from_timestamp_millis(1_700_000_200_789).unwrap(),
        version: 1,
        document: json!({"executionId": "nightly-1", "attempts": []}),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn data_survives_reopening() {
    let dir = TempDir::new("embedded-reopen");
    let file = dir.path().join("sundial.db");
    let due = DateTime::from_timestamp_millis(1_700_000_300_001).unwrap();
    {
        let store = SqliteStore::open(&file).expect("open a new file store");
        store.create_job(&job()).await.unwrap();
        let updated = JobRecord {
            state: "paused".to_owned(),
            ..job()
        };
        assert_eq!(store.update_job(&updated).await.unwrap(), 2);
        assert!(store.create_execution(&execution()).await.unwrap());
        store.set_wakeup("job:nightly", Some(due)).await.unwrap();
    }
    assert!(file.exists(), "the database file is created");

    let store = SqliteStore::open(&file).expect("reopen the file store");
    let expected = JobRecord {
        state: "paused".to_owned(),
        version: 2,
        ..job()
    };
    assert_eq!(
        store.get_job("nightly").await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        store.get_execution("nightly-1").await.unwrap(),
        Some(execution())
    );
    assert_eq!(store.get_wakeup("job:nightly").await.unwrap(), Some(due));
    let page = store
        .list_jobs(&JobFilter::default(), JobOrder::Id, &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(page.items, [expected]);
    // The reopened store still writes.
    assert!(
        !store.create_execution(&execution()).await.unwrap(),
        "ids persist, so duplicates stay no-ops"
    );
}

/// A restarted engine takes back at once what the dead process received and never acknowledged;
/// messages it never received keep their delay.
#[tokio::test(flavor = "multi_thread")]
async fn messages_a_dead_process_received_come_back_at_once() {
    use std::sync::Arc;
    use std::time::Duration;
    use sundial_ports::clock::Clock;
    use sundial_ports::memory::ManualClock;
    use sundial_ports::queue::Queue;

    let dir = TempDir::new("embedded-release");
    let file = dir.path().join("sundial.db");
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp_millis(1_700_000_000_000).unwrap(),
    ));
    let visibility = Duration::from_secs(30);
    {
        let store = SqliteStore::open(&file).unwrap();
        let queue = store.queue("dispatch", clock.clone() as Arc<dyn Clock>);
        queue.send("in flight", Duration::ZERO).await.unwrap();
        queue.send("later", Duration::from_secs(60)).await.unwrap();
        let taken = queue.receive(10, visibility).await.unwrap();
        assert_eq!(taken.len(), 1);
        // The process dies here, holding "in flight" unacknowledged.
    }
    clock.advance(chrono::Duration::seconds(1));
    let store = SqliteStore::open(&file).unwrap();
    let queue = store.queue("dispatch", clock.clone() as Arc<dyn Clock>);
    assert!(queue.receive(10, visibility).await.unwrap().is_empty());
    assert_eq!(queue.release_received().await.unwrap(), 1);
    let back = queue.receive(10, visibility).await.unwrap();
    let bodies: Vec<&str> = back.iter().map(|d| d.body.as_str()).collect();
    assert_eq!(bodies, ["in flight"]);
    assert_eq!(back[0].receive_count, 2);
    assert_eq!(
        queue.release_received().await.unwrap(),
        1,
        "only received ones"
    );
}

#[test]
fn file_store_uses_wal_and_records_its_schema_version() {
    let dir = TempDir::new("embedded-pragmas");
    let file = dir.path().join("sundial.db");
    drop(SqliteStore::open(&file).expect("open"));

    let raw = rusqlite::Connection::open(&file).unwrap();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let versions: Vec<u32> = raw
        .prepare("SELECT version FROM schema_version")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        versions,
        [12],
        "store tables (1), queue tables (2), the jobs list's orders (3), labels (4), statistics rollups (5), the audit trail (6), fleet summaries (7), run search (8), settings (9), calendars (10), signed-out console sessions (11), calendars' listings (12)"
    );
    drop(raw);
    drop(SqliteStore::open(&file).expect("reopening an up-to-date file migrates nothing"));
}

#[test]
fn newer_schema_is_refused() {
    let dir = TempDir::new("embedded-newer");
    let file = dir.path().join("sundial.db");
    drop(SqliteStore::open(&file).expect("open"));
    let raw = rusqlite::Connection::open(&file).unwrap();
    raw.execute("UPDATE schema_version SET version = 99", [])
        .unwrap();
    drop(raw);

    match SqliteStore::open(&file) {
        Err(StoreError::Unavailable { message, .. }) => {
            assert!(message.contains("99"), "{message}")
        }
        other => panic!("expected Unavailable for a newer schema, got {other:?}"),
    }
}

/// A row whose document is not JSON (a hand edit, a bad disk) is corrupt data, which no retry
/// reads, not a store that is unavailable.
#[tokio::test(flavor = "multi_thread")]
async fn a_row_that_does_not_decode_is_corrupt() {
    let dir = TempDir::new("embedded-corrupt");
    let file = dir.path().join("sundial.db");
    {
        let store = SqliteStore::open(&file).expect("open");
        store.create_job(&job()).await.unwrap();
    }
    let raw = rusqlite::Connection::open(&file).unwrap();
    raw.execute(
        "UPDATE jobs SET document = '{not json' WHERE job_id = 'nightly'",
        [],
    )
    .unwrap();
    drop(raw);

    let store = SqliteStore::open(&file).expect("reopen");
    match store.get_job("nightly").await {
        Err(StoreError::Corrupt {
            source: Some(_), ..
        }) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn missing_directory_is_unavailable() {
    let dir = TempDir::new("embedded-missing");
    let file = dir.path().join("no").join("such").join("dir.db");
    assert!(matches!(
        SqliteStore::open(&file),
        Err(StoreError::Unavailable {
            source: Some(_),
            ..
        })
    ));
}

/// The database holds every job's request headers: a new file and the `-wal` and `-shm` files
/// beside it are readable by their owner only, whatever the umask.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn new_database_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("embedded-modes");
    let file = dir.path().join("sundial.db");
    let store = SqliteStore::open(&file).expect("open a new file store");
    store.create_job(&job()).await.unwrap();
    for name in ["sundial.db", "sundial.db-wal", "sundial.db-shm"] {
        let path = dir.path().join(name);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}: {mode:o}");
    }
}

/// A file written before the jobs list had its time orders (schema version 2) gets them from
/// the wake-ups and executions it already holds when it is opened.
#[tokio::test(flavor = "multi_thread")]
async fn the_orders_of_an_older_file_are_filled_when_it_is_migrated() {
    let dir = TempDir::new("embedded-migrate-orders");
    let file = dir.path().join("sundial.db");
    let at = |ms: i64| DateTime::from_timestamp_millis(1_700_000_000_000 + ms).unwrap();
    {
        let store = SqliteStore::open(&file).expect("open");
        for id in ["a", "b", "c"] {
            let job = JobRecord {
                job_id: id.to_owned(),
                ..job()
            };
            store.create_job(&job).await.unwrap();
        }
        store.set_wakeup("job:c", Some(at(1))).await.unwrap();
        store.set_wakeup("job:a", Some(at(2))).await.unwrap();
        for (id, job_id, ms) in [("b-1", "b", 5), ("a-1", "a", 3)] {
            let run = ExecutionRecord {
                execution_id: id.to_owned(),
                job_id: job_id.to_owned(),
                created_at: at(ms),
                ..execution()
            };
            store.create_execution(&run).await.unwrap();
        }
    }
    // Back to version 2: steps 8, 7, 6, 5, 4 and 3 undone, newest first.
    let raw = rusqlite::Connection::open(&file).unwrap();
    raw.execute_batch(support::UNDO_RUN_SEARCH).unwrap();
    raw.execute_batch(support::UNDO_FLEET_HOURS).unwrap();
    raw.execute_batch(support::UNDO_AUDIT).unwrap();
    raw.execute_batch(support::UNDO_ROLLUPS).unwrap();
    raw.execute_batch(support::UNDO_JOB_ORDERS).unwrap();
    raw.execute_batch("UPDATE schema_version SET version = 2;")
        .unwrap();
    drop(raw);

    let store = SqliteStore::open(&file).expect("migrate to version 3");
    let ids = |page: sundial_ports::store::Page<JobRecord>| {
        page.items.into_iter().map(|j| j.job_id).collect::<Vec<_>>()
    };
    let everyone = JobFilter::default();
    let first = PageRequest::first(10);
    let by_next_fire = store
        .list_jobs(&everyone, JobOrder::NextFire, &first)
        .await
        .unwrap();
    assert_eq!(ids(by_next_fire), ["c", "a", "b"]);
    let by_last_run = store
        .list_jobs(&everyone, JobOrder::LastRun, &first)
        .await
        .unwrap();
    assert_eq!(ids(by_last_run), ["b", "a", "c"]);
}

/// Each order reads its own index: a page is a seek, not a sort of every job.
#[test]
fn every_order_is_served_by_an_index() {
    let dir = TempDir::new("embedded-order-plans");
    let file = dir.path().join("sundial.db");
    drop(SqliteStore::open(&file).expect("open"));
    let raw = rusqlite::Connection::open(&file).unwrap();
    for (order, after) in [
        (
            "o.next_fire, o.job_id",
            "o.next_fire >= 0 AND (o.next_fire > 0 OR o.job_id > 'a')",
        ),
        (
            "o.last_run DESC, o.job_id",
            "o.last_run <= 0 AND (o.last_run < 0 OR o.job_id > 'a')",
        ),
    ] {
        let plan = query_plan(
            &raw,
            &format!(
                "SELECT j.* FROM job_orders o JOIN jobs j ON j.job_id = o.job_id \
                 WHERE {after} ORDER BY {order} LIMIT 51"
            ),
        );
        assert!(plan.contains("INDEX job_orders_by_"), "{order}: {plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{order} sorts: {plan}");
    }
}

/// A file written before the audit trail (schema version 5) gains its table, keeps its jobs, and
/// records changes from then on.
#[tokio::test(flavor = "multi_thread")]
async fn a_version_5_file_gains_the_audit_trail() {
    use sundial_ports::store::audit::entry_id;
    use sundial_ports::store::{AuditQuery, AuditRecord, AuditStore, Store, Write};
    let dir = TempDir::new("embedded-migrate-audit");
    let file = dir.path().join("sundial.db");
    {
        let store = SqliteStore::open(&file).expect("open");
        store.create_job(&job()).await.unwrap();
    }
    let raw = rusqlite::Connection::open(&file).unwrap();
    raw.execute_batch(support::UNDO_RUN_SEARCH).unwrap();
    raw.execute_batch(support::UNDO_FLEET_HOURS).unwrap();
    raw.execute_batch(support::UNDO_AUDIT).unwrap();
    raw.execute_batch("UPDATE schema_version SET version = 5;")
        .unwrap();
    drop(raw);

    let store = SqliteStore::open(&file).expect("migrate to the current version");
    let job_id = job().job_id;
    assert!(store.get_job(&job_id).await.unwrap().is_some());
    let at = DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
    let entry = AuditRecord {
        job_id: job_id.clone(),
        entry_id: entry_id(at, 2, 1),
        at,
        document: serde_json::json!({"action": "pause"}),
    };
    store
        .write_all(&[Write::AppendAudit(&entry)])
        .await
        .unwrap();
    let listed = store
        .list_audit(&job_id, &AuditQuery::default(), &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(listed.items, vec![entry]);
}

/// A label filter reads the label index for the jobs it selects, not every job.
#[test]
fn a_label_filter_is_served_by_the_label_index() {
    let dir = TempDir::new("embedded-label-plans");
    let file = dir.path().join("sundial.db");
    drop(SqliteStore::open(&file).expect("open"));
    let raw = rusqlite::Connection::open(&file).unwrap();
    let plan = query_plan(
        &raw,
        "SELECT j.* FROM jobs j WHERE 1 = 1 \
         AND j.job_id IN (SELECT job_id FROM job_labels WHERE key = 'team' AND value = 'x') \
         AND j.job_id > 'a' ORDER BY j.job_id LIMIT 51",
    );
    assert!(plan.contains("job_labels_by_label"), "{plan}");
    assert!(!plan.contains("SCAN j"), "reads every job: {plan}");
}

/// SQLite's plan of `select`, its steps joined by `; `.
fn query_plan(raw: &rusqlite::Connection, select: &str) -> String {
    let plan: Vec<String> = raw
        .prepare(&format!("EXPLAIN QUERY PLAN {select}"))
        .unwrap()
        .query_map([], |row| row.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    plan.join("; ")
}

/// A labelled job deleted through `write_all` (the API's deletion, beside its audit entry) leaves
/// no row in the label index: reads never show such rows, so only the table tells.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_deleted_in_a_batch_leaves_no_label_rows() {
    use sundial_ports::store::{Store, Write};
    let dir = TempDir::new("embedded-delete-labels");
    let file = dir.path().join("sundial.db");
    let store = SqliteStore::open(&file).expect("open");
    let mut labelled = job();
    labelled.document["definition"]["labels"] = json!({"team": "payments", "tier": "1"});
    store
        .write_all(&[Write::CreateJob(&labelled)])
        .await
        .unwrap();
    let rows = |raw: &rusqlite::Connection| -> i64 {
        raw.query_row("SELECT COUNT(*) FROM job_labels", [], |row| row.get(0))
            .unwrap()
    };
    let raw = rusqlite::Connection::open(&file).unwrap();
    assert_eq!(rows(&raw), 2);
    store
        .write_all(&[Write::DeleteJob("nightly", 1)])
        .await
        .unwrap();
    assert_eq!(rows(&raw), 0);
}

/// A file written before runs could be searched (schema version 7) gets each run's search columns
/// from its document when it is migrated: its scheduled time and end to the millisecond and what
/// fired it, so the runs it already held are found by time, end and source.
#[tokio::test(flavor = "multi_thread")]
async fn a_version_7_file_fills_the_search_columns_of_its_runs() {
    use sundial_ports::store::{ExecutionQuery, SourceFilter, TimeRange};
    let dir = TempDir::new("embedded-migrate-search");
    let file = dir.path().join("sundial.db");
    let at = |ms: i64| DateTime::from_timestamp_millis(ms).unwrap();
    {
        let store = SqliteStore::open(&file).expect("open");
        for (id, by, scheduled, ended) in [
            (
                "nightly~1",
                "nightly",
                "2026-11-25T05:30:00.123Z",
                Some("2026-11-25T05:30:02.5+00:00"),
            ),
            ("nightly~t~k", "trigger:k", "2026-11-25T06:00:00Z", None),
            (
                "nightly~b~q",
                "backfill:q",
                "2026-11-24T05:30:00Z",
                Some("2026-11-25T07:00:00Z"),
            ),
        ] {
            let mut run = execution();
            run.execution_id = id.to_owned();
            run.parent_job = None;
            run.parent_execution = None;
            run.document = json!({"executionId": id, "scheduledTime": scheduled, "scheduledById": by,
                                  "finishedAt": ended});
            store.create_execution(&run).await.unwrap();
        }
    }
    let raw = rusqlite::Connection::open(&file).unwrap();
    raw.execute_batch(support::UNDO_RUN_SEARCH).unwrap();
    raw.execute_batch("UPDATE schema_version SET version = 7;")
        .unwrap();
    drop(raw);

    let store = SqliteStore::open(&file).expect("migrate to the current version");
    let ids = |page: sundial_ports::store::Page<ExecutionRecord>| {
        page.items
            .into_iter()
            .map(|e| e.execution_id)
            .collect::<Vec<_>>()
    };
    let search = |query: ExecutionQuery| {
        let store = store.clone();
        async move {
            ids(store
                .search_executions(&query, &PageRequest::first(10))
                .await
                .unwrap())
        }
    };
    assert_eq!(
        search(ExecutionQuery::default()).await,
        ["nightly~t~k", "nightly~1", "nightly~b~q"]
    );
    // To the millisecond: 05:30:00.123 is at or after .123 and before .124.
    let exactly = ExecutionQuery {
        scheduled: TimeRange {
            since: Some(at(1_795_584_600_123)),
            until: Some(at(1_795_584_600_124)),
        },
        ..ExecutionQuery::default()
    };
    assert_eq!(search(exactly).await, ["nightly~1"]);
    let ended = ExecutionQuery {
        ended: TimeRange {
            since: Some(at(1_795_584_602_500)),
            until: None,
        },
        ..ExecutionQuery::default()
    };
    assert_eq!(search(ended).await, ["nightly~1", "nightly~b~q"]);
    for (source, want) in [
        (SourceFilter::Schedule, "nightly~1"),
        (SourceFilter::Trigger, "nightly~t~k"),
        (SourceFilter::Backfill, "nightly~b~q"),
    ] {
        let query = ExecutionQuery {
            source: Some(source),
            ..ExecutionQuery::default()
        };
        assert_eq!(search(query).await, [want], "{source:?}");
    }
}
