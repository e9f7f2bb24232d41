//! The store conformance suite, the same one the SQLite and memory stores pass, on DynamoDB.

use std::time::Duration;

use chrono::Utc;
use serde_json::json;
use sundial_aws::DynamoStore;
use sundial_ports::conformance::store as conformance;
use sundial_ports::store::audit::entry_id;
use sundial_ports::store::{
    AuditRecord, ExecutionRecord, ExecutionStore, JobRecord, JobStore, Store, WakeUpIndex, Write,
};

use crate::need_moto;
use crate::support::namespace;

async fn store() -> Option<DynamoStore> {
    let moto = crate::support::moto()?;
    let client = aws_sdk_dynamodb::Client::new(&moto.sdk().await);
    Some(DynamoStore::new(client, &moto.env["SUNDIAL_TABLE"]).with_namespace(namespace()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_store_conforms() {
    let Some(base) = store().await else { return };
    conformance::run_all(|| base.clone().with_namespace(namespace())).await;
}

/// Label filters read a label's index partition (see `dynamo::labels`), never a scan.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_store_conforms_on_labels() {
    let Some(base) = store().await else { return };
    sundial_ports::conformance::labels::run_all(|| base.clone().with_namespace(namespace())).await;
}

/// Searches read the sharded keys-only `runs` index and filter what they read, never a scan.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_store_conforms_on_search() {
    let Some(base) = store().await else { return };
    sundial_ports::conformance::search::run_all(|| base.clone().with_namespace(namespace())).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn conforms_with_one_timer_shard_too() {
    let Some(base) = store().await else { return };
    let one = base.with_wakeup_shards(1);
    let now = Utc::now();
    for (key, offset) in [("job:a", 3), ("job:b", 1), ("exec:c", 2)] {
        one.set_wakeup(key, Some(now + chrono::Duration::seconds(offset)))
            .await
            .expect("set");
    }
    let due = one
        .due_wakeups(now + chrono::Duration::seconds(2), 10)
        .await
        .expect("due");
    let keys: Vec<_> = due.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(keys, ["job:b", "exec:c"]);
}

/// An active job of ana's, at `version`, with `document`.
fn job_record(id: &str, version: u64, document: serde_json::Value) -> JobRecord {
    JobRecord {
        job_id: id.into(),
        version,
        creator: "ana".into(),
        parent_job: None,
        service: None,
        state: "active".into(),
        created_at: Utc::now(),
        updated_at: Utc::now(),
        document,
    }
}

fn execution(id: &str, state: &str) -> ExecutionRecord {
    ExecutionRecord {
        execution_id: id.into(),
        job_id: "ttl-job".into(),
        execute_number: 1,
        state: state.into(),
        parent_job: None,
        parent_execution: None,
        created_at: Utc::now(),
        version: 1,
        document: json!({"id": id}),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn finished_executions_expire_and_reads_respect_it() {
    let _moto = need_moto!();
    let Some(base) = store().await else { return };
    // Zero retention: a finished execution is expired the moment it is written, though DynamoDB
    // (and moto) would delete it only later.
    let store = base.with_execution_retention(Duration::ZERO);
    assert!(store
        .create_execution(&execution("running", "Processing"))
        .await
        .expect("create"));
    assert!(store
        .create_execution(&execution("done", "Succeeded"))
        .await
        .expect("create"));
    assert!(store.get_execution("running").await.expect("get").is_some());
    assert_eq!(store.get_execution("done").await.expect("get"), None);
    let listed = store
        .list_executions("ttl-job", &sundial_ports::store::PageRequest::first(10))
        .await
        .expect("list");
    let ids: Vec<_> = listed
        .items
        .iter()
        .map(|e| e.execution_id.as_str())
        .collect();
    assert_eq!(ids, ["running"]);
}

/// A job's history is retained like its executions: with a retention, an entry expires (TTL)
/// that long after it is written, and reads treat an expired entry as gone.
#[tokio::test(flavor = "multi_thread")]
async fn audit_entries_expire_with_the_retention() {
    use sundial_ports::store::audit::entry_id;
    use sundial_ports::store::{AuditQuery, AuditRecord, AuditStore, PageRequest, Write};
    let _moto = need_moto!();
    let Some(base) = store().await else { return };
    let entry = |n: u64| AuditRecord {
        job_id: "ttl-job".into(),
        entry_id: entry_id(Utc::now(), n, n),
        at: Utc::now(),
        document: json!({"action": "pause", "version": n}),
    };
    let kept = base.clone();
    kept.write_all(&[Write::AppendAudit(&entry(1))])
        .await
        .expect("append without retention");
    let expiring = base.with_execution_retention(Duration::ZERO);
    expiring
        .write_all(&[Write::AppendAudit(&entry(2))])
        .await
        .expect("append with a zero retention");
    let listed = kept
        .list_audit("ttl-job", &AuditQuery::default(), &PageRequest::first(10))
        .await
        .expect("list");
    let versions: Vec<_> = listed
        .items
        .iter()
        .map(|e| e.document["version"].clone())
        .collect();
    assert_eq!(versions, [json!(1)], "the expired entry reads as gone");
}

fn labelled_job(id: &str, version: u64, labels: serde_json::Value) -> JobRecord {
    JobRecord {
        job_id: id.into(),
        version,
        creator: "alice".into(),
        parent_job: None,
        service: None,
        state: "active".into(),
        created_at: Utc::now(),
        updated_at: Utc::now(),
        document: json!({"definition": {"labels": labels}, "state": {}}),
    }
}

/// The sort keys of a job's item collection: the job (`J`) and its label items (`L#{key}`).
async fn collection(
    client: &aws_sdk_dynamodb::Client,
    store: &DynamoStore,
    id: &str,
) -> Vec<String> {
    let output = client
        .query()
        .table_name(store.table())
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(store.keys().job_pk(id)),
        )
        .consistent_read(true)
        .send()
        .await
        .expect("query");
    output
        .items
        .unwrap_or_default()
        .iter()
        .filter_map(|item| item.get("sk")?.as_s().ok().cloned())
        .collect()
}

/// The label index items follow the job through updates (one by one and in a batch) and go with
/// it when it is deleted: no index item outlives its label.
#[tokio::test(flavor = "multi_thread")]
async fn label_items_follow_their_job() {
    let moto = need_moto!();
    let client = aws_sdk_dynamodb::Client::new(&moto.sdk().await);
    let Some(store) = store().await else { return };
    store
        .create_job(&labelled_job("l", 1, json!({"a": "1", "b": "2"})))
        .await
        .expect("create");
    assert_eq!(collection(&client, &store, "l").await, ["J", "L#a", "L#b"]);
    store
        .update_job(&labelled_job("l", 1, json!({"a": "1", "c": "3"})))
        .await
        .expect("update");
    assert_eq!(collection(&client, &store, "l").await, ["J", "L#a", "L#c"]);
    store
        .create_job(&labelled_job("m", 1, json!({})))
        .await
        .expect("create m");
    store
        .write_all(&[
            Write::UpdateJob(&labelled_job("l", 2, json!({}))),
            Write::UpdateJob(&labelled_job("m", 1, json!({"a": "1"}))),
        ])
        .await
        .expect("write_all");
    assert_eq!(collection(&client, &store, "l").await, ["J"]);
    assert_eq!(collection(&client, &store, "m").await, ["J", "L#a"]);
    assert!(store.delete_job("m").await.expect("delete"));
    // What is left of a deleted job's collection is its tombstone (layout 6), which retention
    // reads instead of scanning.
    assert_eq!(collection(&client, &store, "m").await, ["G"]);
    assert!(!store.delete_job("m").await.expect("delete again"));

    // The API's creation and deletion: write_all with the job's audit entry beside it.
    let at = Utc::now();
    let entry = |version: u64| AuditRecord {
        job_id: "n".into(),
        entry_id: entry_id(at, version, 1),
        at,
        document: json!({"version": version}),
    };
    store
        .write_all(&[
            Write::CreateJob(&labelled_job("n", 1, json!({"a": "1", "b": "2"}))),
            Write::AppendAudit(&entry(1)),
        ])
        .await
        .expect("CreateJob + AppendAudit");
    assert_eq!(collection(&client, &store, "n").await, ["J", "L#a", "L#b"]);
    store
        .write_all(&[Write::DeleteJob("n", 1), Write::AppendAudit(&entry(2))])
        .await
        .expect("DeleteJob + AppendAudit");
    assert_eq!(
        collection(&client, &store, "n").await,
        ["G"],
        "no label item outlives a job deleted through write_all; its tombstone stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_store_rollups_conform() {
    let Some(base) = store().await else { return };
    sundial_ports::conformance::rollups::run_all(|| base.clone().with_namespace(namespace())).await;
}

/// The layout record: written on a fresh table, a table of the layout before upgraded in place,
/// and a table of another layout refused with a message that names both layouts and where the
/// rule is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_table_of_another_layout_is_refused() {
    use sundial_aws::dynamo::layout::{LayoutError, LAYOUT_VERSION, UPGRADES_FROM};
    let Some(base) = store().await else { return };
    // Fresh: recorded once, though two functions start at once.
    let fresh = base.clone().with_namespace(namespace());
    let (a, b) = tokio::join!(fresh.check_layout(), fresh.check_layout());
    assert_eq!(
        (a.ok(), b.ok()),
        (Some(LAYOUT_VERSION), Some(LAYOUT_VERSION))
    );
    assert_eq!(fresh.check_layout().await.ok(), Some(LAYOUT_VERSION));
    // Jobs but no record: a table from before the record, layout 1.
    let unrecorded = base.clone().with_namespace(namespace());
    let job = job_record("old-job", 1, json!({"jobId": "old-job"}));
    unrecorded.create_job(&job).await.expect("create");
    let refused = unrecorded.check_layout().await.expect_err("refused");
    assert!(
        matches!(refused, LayoutError::Older { found: 1, .. }),
        "{refused}"
    );
    let message = refused.to_string();
    assert!(
        message.contains("layout 1") && message.contains("docs/deploy.md"),
        "{message}"
    );
    // Recorded older layouts: below the one these binaries upgrade from, refused.
    let older = base.clone().with_namespace(namespace());
    older
        .record_layout(UPGRADES_FROM - 1)
        .await
        .expect("record");
    assert!(matches!(
        older.check_layout().await,
        Err(LayoutError::Older { .. })
    ));
    // From UPGRADES_FROM on: upgraded in place, once, though two functions start at once; a
    // document written by that layout (plain `doc` text) still reads.
    let upgradable = base.clone().with_namespace(namespace());
    upgradable
        .record_layout(UPGRADES_FROM)
        .await
        .expect("record");
    let (a, b) = tokio::join!(upgradable.check_layout(), upgradable.check_layout());
    assert_eq!(
        (a.ok(), b.ok()),
        (Some(LAYOUT_VERSION), Some(LAYOUT_VERSION))
    );
    assert_eq!(upgradable.check_layout().await.ok(), Some(LAYOUT_VERSION));
    let newer = base.clone().with_namespace(namespace());
    newer
        .record_layout(LAYOUT_VERSION + 1)
        .await
        .expect("record");
    let refused = newer.check_layout().await.expect_err("refused");
    assert!(matches!(refused, LayoutError::Newer { .. }), "{refused}");
}

/// Layout 5 keeps a job's wake-up on the job's item, and a write of the job keeps it there. A
/// wake-up set while its job did not exist is an item of its own; the tick's read of due wake-ups
/// moves it onto the job once, so later reads find one entry, and a removal takes it away.
#[tokio::test(flavor = "multi_thread")]
async fn a_jobs_wakeup_lives_on_the_job_and_an_own_item_moves_there() {
    let moto = need_moto!();
    let Some(base) = store().await else { return };
    let store = base.with_namespace(namespace()).with_wakeup_shards(1);
    let client = aws_sdk_dynamodb::Client::new(&moto.sdk().await);
    let item = |key: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>| {
        let client = client.clone();
        let table = store.table().to_owned();
        async move {
            client
                .get_item()
                .table_name(table)
                .set_key(Some(key))
                .consistent_read(true)
                .send()
                .await
                .expect("get")
                .item
        }
    };
    // Whole milliseconds, as the index keeps them.
    let due = chrono::DateTime::from_timestamp_millis(Utc::now().timestamp_millis() - 30_000)
        .expect("a time");
    let later = due + chrono::Duration::seconds(10);
    let job = |id: &str, version: u64| {
        job_record(
            id,
            version,
            json!({"definition": {"jobId": id, "labels": {"team": "a"}}}),
        )
    };

    // With its job, in one batch: on the job's item, no item of its own.
    let written = job("carried", 1);
    store
        .write_all(&[
            Write::CreateJob(&written),
            Write::SetWakeup("job:carried", Some(due)),
        ])
        .await
        .expect("create with wake-up");
    let on_job = item(store.keys().job("carried")).await.expect("the job");
    assert!(on_job.contains_key("tdue"), "{on_job:?}");
    assert_eq!(item(store.keys().wakeup("job:carried")).await, None);
    // A write of the job keeps it (an update, not a replacement), relabelled or not.
    let mut relabelled = job("carried", 1);
    relabelled.document = json!({"definition": {"jobId": "carried", "labels": {"team": "b"}}});
    store.update_job(&relabelled).await.expect("update");
    assert_eq!(store.get_wakeup("job:carried").await, Ok(Some(due)));
    store
        .write_all(&[
            Write::UpdateJob(&job("carried", 2)),
            Write::SetWakeup("job:carried", Some(later)),
        ])
        .await
        .expect("update with wake-up");
    assert_eq!(store.get_wakeup("job:carried").await, Ok(Some(later)));

    // Set before its job existed: an item of its own, moved onto the job when read due.
    store
        .set_wakeup("job:moving", Some(due))
        .await
        .expect("set");
    store.create_job(&job("moving", 1)).await.expect("create");
    assert!(item(store.keys().wakeup("job:moving")).await.is_some());
    let keys = |due: Vec<sundial_ports::store::WakeUp>| -> Vec<String> {
        due.into_iter().map(|w| w.key).collect()
    };
    let first = store.due_wakeups(Utc::now(), 10).await.expect("due");
    assert_eq!(keys(first), ["job:moving", "job:carried"]);
    assert_eq!(item(store.keys().wakeup("job:moving")).await, None);
    let moved = item(store.keys().job("moving")).await.expect("the job");
    assert!(moved.contains_key("tdue"), "{moved:?}");
    let again = store.due_wakeups(Utc::now(), 10).await.expect("due");
    assert_eq!(keys(again), ["job:moving", "job:carried"], "one entry each");
    // Removed: from the job's item, the job kept.
    store.set_wakeup("job:moving", None).await.expect("remove");
    assert_eq!(store.get_wakeup("job:moving").await, Ok(None));
    assert!(store.get_job("moving").await.expect("get").is_some());
    assert!(store
        .clear_wakeup_if("job:carried", later)
        .await
        .expect("clear"));
    assert!(store
        .due_wakeups(Utc::now(), 10)
        .await
        .expect("due")
        .is_empty());
}

/// Retention without a scan (layout 6): a deleted job's runs and history are found by its
/// tombstone, which goes once the second of the two cleans has purged both, or at once when the
/// job id is in use again.
#[tokio::test(flavor = "multi_thread")]
async fn retention_finds_deleted_jobs_by_their_tombstones() {
    use sundial_ports::store::AuditStore;
    let moto = need_moto!();
    let client = aws_sdk_dynamodb::Client::new(&moto.sdk().await);
    let Some(base) = store().await else { return };
    let store = base.with_namespace(namespace());
    let run = |job: &str, n: u64| ExecutionRecord {
        job_id: job.into(),
        execute_number: n,
        ..execution(&format!("{job}~{n}"), "Succeeded")
    };
    let at = Utc::now();
    let entry = |job: &str, version: u64| AuditRecord {
        job_id: job.into(),
        entry_id: entry_id(at, version, 1),
        at,
        document: json!({"version": version}),
    };
    for job in ["gone", "back"] {
        store
            .write_all(&[
                Write::CreateJob(&job_record(job, 1, json!({}))),
                Write::AppendAudit(&entry(job, 1)),
            ])
            .await
            .expect("create");
        for n in 1..=3 {
            assert!(store.create_execution(&run(job, n)).await.expect("run"));
        }
        store
            .write_all(&[Write::DeleteJob(job, 1), Write::AppendAudit(&entry(job, 2))])
            .await
            .expect("delete");
        assert_eq!(collection(&client, &store, job).await, ["G"], "{job}");
    }
    // `back` is created again: its tombstone is spent at the next clean, its runs kept by the rule.
    store
        .create_job(&job_record("back", 1, json!({})))
        .await
        .expect("create again");

    let report = store.clean_executions(1, true).await.expect("clean runs");
    assert_eq!(
        (report.executions_deleted, report.destroyed_jobs_cleaned),
        (3 + 2, 1),
        "all of gone's runs, back's two oldest"
    );
    assert_eq!(
        collection(&client, &store, "gone").await,
        ["G"],
        "its history is still there"
    );
    assert_eq!(collection(&client, &store, "back").await, ["J"]);
    let audit = store.clean_audit(1, true).await.expect("clean history");
    assert_eq!(audit.entries_deleted, 2 + 1, "gone's two, back's oldest");
    assert!(
        collection(&client, &store, "gone").await.is_empty(),
        "nothing of gone is left, nor its tombstone"
    );
    let again = store.clean_executions(1, true).await.expect("again");
    assert_eq!(
        (again.executions_deleted, again.destroyed_jobs_cleaned),
        (0, 0)
    );
}
