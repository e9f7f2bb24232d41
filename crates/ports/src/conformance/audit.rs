//! The audit trail's contract ([`AuditStore`] and the writes of [`Write`] that carry it:
//! `AppendAudit`, `CreateJob`, `DeleteJob`), run by [`super::store::run_all`] on every store.
//!
//! What it pins: an entry is written only with the batch it is in (a failed condition anywhere
//! writes neither the change nor the entry); entries list per job, newest first or oldest first,
//! within a time range (`from` inclusive, `to` exclusive), in pages that look ahead like every
//! listing; a job's trail outlives the job; `clean_audit` keeps the newest `retain` entries of
//! every job id and, when purging, none of a deleted job's.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::store::{create_executions, create_jobs, execution, expect_err, job, t, Must};
use crate::store::audit::entry_id;
use crate::store::{AuditQuery, AuditRecord, PageRequest, Store, StoreError, Write, WriteAllError};

/// Runs every case, each against a fresh store from `make_store`, adding failures to `failures`.
pub async fn run_cases<S: Store, F: Fn() -> S>(make_store: &F, failures: &mut Vec<String>) {
    run_cases!(
        make_store,
        *failures,
        audit_written_with_job_create,
        audit_never_without_its_change,
        audit_entry_ids_are_unique,
        delete_job_in_a_batch,
        audit_lists_in_time_order_and_pages,
        audit_time_range,
        audit_invalid_cursor,
        audit_retention,
    );
}

/// An entry of `job_id` made at `t(offset_ms)` for `version`.
fn entry(job_id: &str, offset_ms: i64, version: u64) -> AuditRecord {
    AuditRecord {
        job_id: job_id.to_owned(),
        entry_id: entry_id(t(offset_ms), version, 7),
        at: t(offset_ms),
        document: json!({
            "actor": "alice", "action": "update", "version": version,
            "changes": [{"path": "/timer/period", "old": "1m", "new": "5m"}],
            "reason": "Rémi's ✓ \"quoted\"", "n": 9_007_199_254_740_993_u64,
        }),
    }
}

async fn append<S: Store>(store: &S, entries: &[AuditRecord]) {
    for e in entries {
        store
            .write_all(&[Write::AppendAudit(e)])
            .await
            .map_err(StoreError::from)
            .must(&format!("append {}", e.entry_id));
    }
}

async fn all<S: Store>(store: &S, job_id: &str, query: &AuditQuery) -> Vec<AuditRecord> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list_audit(job_id, query, &PageRequest { limit: 2, cursor })
            .await
            .must(&format!("list_audit({job_id})"));
        assert!(
            page.items.len() == 2 || page.next_cursor.is_none(),
            "a page short of its limit is the last: {page:?}"
        );
        out.extend(page.items);
        cursor = page.next_cursor;
        if cursor.is_none() {
            return out;
        }
    }
}

fn ids(entries: &[AuditRecord]) -> Vec<&str> {
    entries.iter().map(|e| e.entry_id.as_str()).collect()
}

async fn audit_written_with_job_create<S: Store>(store: S) {
    let created = job("a");
    let first = entry("a", 0, 1);
    store
        .write_all(&[Write::CreateJob(&created), Write::AppendAudit(&first)])
        .await
        .map_err(StoreError::from)
        .must("write_all(create a + entry)");
    let stored = store.get_job("a").await.must("get_job(a)").expect("job a");
    assert_eq!(stored, created, "CreateJob stores the job as given");
    let listed = all(&store, "a", &AuditQuery::default()).await;
    assert_eq!(listed, vec![first], "the entry round-trips exactly");

    let error = expect_err(
        store
            .write_all(&[
                Write::CreateJob(&created),
                Write::AppendAudit(&entry("a", 5, 1)),
            ])
            .await,
        "CreateJob of a taken id",
    );
    assert_eq!(error.index, Some(0), "{error:?}");
    assert!(
        matches!(&error.error, StoreError::AlreadyExists(key) if key.contains('a')),
        "{error:?}"
    );
    assert_eq!(all(&store, "a", &AuditQuery::default()).await.len(), 1);
}

async fn audit_never_without_its_change<S: Store>(store: S) {
    create_jobs(&store, &[job("a")]).await;
    let mut stale = job("a");
    stale.version = 7;
    stale.state = "paused".into();
    let lost = entry("a", 10, 8);
    for writes in [
        [Write::UpdateJob(&stale), Write::AppendAudit(&lost)],
        [Write::AppendAudit(&lost), Write::UpdateJob(&stale)],
    ] {
        let error = expect_err(store.write_all(&writes).await, "update at a stale version");
        assert!(
            matches!(
                error,
                WriteAllError {
                    error: StoreError::VersionConflict { .. },
                    ..
                }
            ),
            "{error:?}"
        );
    }
    assert!(
        all(&store, "a", &AuditQuery::default()).await.is_empty(),
        "a change that failed leaves no entry"
    );
    let stored = store.get_job("a").await.must("get_job(a)").expect("job a");
    assert_eq!((stored.version, stored.state.as_str()), (1, "active"));

    let mut fresh = job("a");
    fresh.state = "paused".into();
    let kept = entry("a", 20, 2);
    store
        .write_all(&[Write::UpdateJob(&fresh), Write::AppendAudit(&kept)])
        .await
        .map_err(StoreError::from)
        .must("update at the version read + entry");
    assert_eq!(
        ids(&all(&store, "a", &AuditQuery::default()).await),
        [kept.entry_id.as_str()]
    );
    let stored = store.get_job("a").await.must("get_job(a)").expect("job a");
    assert_eq!((stored.version, stored.state.as_str()), (2, "paused"));
}

async fn audit_entry_ids_are_unique<S: Store>(store: S) {
    create_jobs(&store, &[job("a")]).await;
    let first = entry("a", 0, 1);
    append(&store, std::slice::from_ref(&first)).await;
    let mut paused = job("a");
    paused.state = "paused".into();
    let error = expect_err(
        store
            .write_all(&[Write::UpdateJob(&paused), Write::AppendAudit(&first)])
            .await,
        "an entry id already taken",
    );
    assert_eq!(error.index, Some(1), "{error:?}");
    assert!(
        matches!(&error.error, StoreError::AlreadyExists(_)),
        "{error:?}"
    );
    let stored = store.get_job("a").await.must("get_job(a)").expect("job a");
    assert_eq!(
        stored.version, 1,
        "the job's write went with the refused entry"
    );
    assert_eq!(all(&store, "a", &AuditQuery::default()).await, vec![first]);
}

async fn delete_job_in_a_batch<S: Store>(store: S) {
    create_jobs(&store, &[job("gone"), job("kept")]).await;
    create_executions(&store, &[execution("gone-1", "gone", 1)]).await;
    store
        .set_wakeup("job:gone", Some(t(1_000)))
        .await
        .must("set_wakeup(job:gone)");
    let deleted = entry("gone", 30, 2);

    let error = expect_err(
        store
            .write_all(&[Write::DeleteJob("gone", 3), Write::AppendAudit(&deleted)])
            .await,
        "DeleteJob at a stale version",
    );
    assert_eq!(error.index, Some(0), "{error:?}");
    assert!(
        matches!(&error.error, StoreError::VersionConflict { key, expected: 3 } if key.contains("gone")),
        "{error:?}"
    );
    let error = expect_err(
        store
            .write_all(&[
                Write::DeleteJob("nope", 1),
                Write::AppendAudit(&entry("nope", 1, 2)),
            ])
            .await,
        "DeleteJob of a missing job",
    );
    assert!(
        matches!(&error, WriteAllError { index: Some(0), error: StoreError::NotFound(key) } if key.contains("nope")),
        "{error:?}"
    );
    assert!(store.get_job("gone").await.must("get_job").is_some());
    assert!(all(&store, "gone", &AuditQuery::default()).await.is_empty());
    assert!(all(&store, "nope", &AuditQuery::default()).await.is_empty());

    store
        .write_all(&[Write::DeleteJob("gone", 1), Write::AppendAudit(&deleted)])
        .await
        .map_err(StoreError::from)
        .must("DeleteJob at the version read + entry");
    assert_eq!(store.get_job("gone").await.must("get_job(gone)"), None);
    assert_eq!(
        store.get_wakeup("job:gone").await.must("get_wakeup"),
        None,
        "DeleteJob removes the job's wake-up"
    );
    assert!(store.get_job("kept").await.must("get_job(kept)").is_some());
    assert!(
        store
            .get_execution("gone-1")
            .await
            .must("get_execution")
            .is_some(),
        "executions outlive the job"
    );
    assert_eq!(
        all(&store, "gone", &AuditQuery::default()).await,
        vec![deleted],
        "the trail outlives the job"
    );
}

async fn audit_lists_in_time_order_and_pages<S: Store>(store: S) {
    // Offsets out of order; two entries in one millisecond keep their version order. Job ids
    // that share a prefix ("a", "a-1", "a#") must not see each other's entries.
    let a = [
        entry("a", 300, 4),
        entry("a", 0, 1),
        entry("a", 100, 2),
        entry("a", 100, 3),
        entry("a", 5_000, 5),
    ];
    append(&store, &a).await;
    append(
        &store,
        &[entry("a-1", 50, 1), entry("a#", 60, 1), entry("b", 70, 1)],
    )
    .await;
    let newest: Vec<String> = [4, 0, 3, 2, 1]
        .iter()
        .map(|&i| a[i].entry_id.clone())
        .collect();
    assert_eq!(ids(&all(&store, "a", &AuditQuery::default()).await), newest);
    let oldest_first = AuditQuery {
        oldest_first: true,
        ..AuditQuery::default()
    };
    let mut oldest = newest.clone();
    oldest.reverse();
    assert_eq!(ids(&all(&store, "a", &oldest_first).await), oldest);
    assert_eq!(all(&store, "a-1", &AuditQuery::default()).await.len(), 1);
    assert_eq!(all(&store, "a#", &AuditQuery::default()).await.len(), 1);
    assert!(all(&store, "c", &AuditQuery::default()).await.is_empty());

    let page = store
        .list_audit("a", &AuditQuery::default(), &PageRequest::first(5))
        .await
        .must("list_audit(a, 5)");
    assert_eq!(page.items.len(), 5);
    assert_eq!(
        page.next_cursor, None,
        "the page holding the last entry is the last"
    );
}

async fn audit_time_range<S: Store>(store: S) {
    let a = [
        entry("a", 0, 1),
        entry("a", 100, 2),
        entry("a", 200, 3),
        entry("a", 300, 4),
    ];
    append(&store, &a).await;
    let query = AuditQuery {
        from: Some(t(100)),
        to: Some(t(300)),
        oldest_first: false,
    };
    assert_eq!(
        ids(&all(&store, "a", &query).await),
        [a[2].entry_id.as_str(), a[1].entry_id.as_str()],
        "from is inclusive, to exclusive"
    );
    let before = AuditQuery {
        to: Some(t(250)),
        ..AuditQuery::default()
    };
    let latest = store
        .list_audit("a", &before, &PageRequest::first(1))
        .await
        .must("list_audit(a, to, 1)");
    assert_eq!(
        ids(&latest.items),
        [a[2].entry_id.as_str()],
        "the entry in force at a time: the newest before it"
    );
    let after = AuditQuery {
        from: Some(t(150)),
        oldest_first: true,
        ..AuditQuery::default()
    };
    assert_eq!(
        ids(&all(&store, "a", &after).await),
        [a[2].entry_id.as_str(), a[3].entry_id.as_str()]
    );
}

async fn audit_invalid_cursor<S: Store>(store: S) {
    append(&store, &[entry("a", 0, 1)]).await;
    for cursor in ["", "garbage", "e1.1.x", "h1."] {
        let result = store
            .list_audit(
                "a",
                &AuditQuery::default(),
                &PageRequest {
                    limit: 1,
                    cursor: Some(cursor.to_owned()),
                },
            )
            .await;
        assert_eq!(
            result.map(|p| p.items.len()),
            Err(StoreError::InvalidCursor),
            "cursor {cursor:?}"
        );
    }
}

async fn audit_retention<S: Store>(store: S) {
    create_jobs(&store, &[job("live"), job("gone")]).await;
    let live: Vec<AuditRecord> = (0..4)
        .map(|i| entry("live", i * 10, (i + 1) as u64))
        .collect();
    let gone: Vec<AuditRecord> = (0..3)
        .map(|i| entry("gone", i * 10, (i + 1) as u64))
        .collect();
    append(&store, &live).await;
    append(&store, &gone).await;
    // A job's trail outlives it.
    assert!(store.delete_job("gone").await.must("delete_job(gone)"));

    let report = store
        .clean_audit(2, false)
        .await
        .must("clean_audit(2, false)");
    assert_eq!(report.entries_deleted, 3, "2 of live's, 1 of gone's");
    assert_eq!(
        ids(&all(&store, "live", &AuditQuery::default()).await),
        [live[3].entry_id.as_str(), live[2].entry_id.as_str()],
        "the newest are kept"
    );
    assert_eq!(
        all(&store, "gone", &AuditQuery::default()).await.len(),
        2,
        "a deleted job's trail is kept by the same rule"
    );

    let report = store
        .clean_audit(2, true)
        .await
        .must("clean_audit(2, true)");
    assert_eq!(report.entries_deleted, 2, "only the deleted job's");
    assert!(all(&store, "gone", &AuditQuery::default()).await.is_empty());
    assert_eq!(all(&store, "live", &AuditQuery::default()).await.len(), 2);
}
