//! The rollup part of the store contract ([`RollupStore`] and [`Write::AddRollup`]): adding in
//! place inside an atomic batch, concurrent adds to one bucket all counting, window reads by job
//! and across jobs, and ageing out. Every adapter runs it next to [`super::store::run_all`].

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::json;

use crate::store::{ExecutionRecord, FleetHourRecord, RollupRecord, Store, StoreError, Write};

/// Runs every rollup case, each on a fresh store from `make_store`; panics listing the failures.
pub async fn run_all<S: Store, F: Fn() -> S>(make_store: F) {
    let mut failures: Vec<String> = Vec::new();
    run_cases!(
        make_store,
        failures,
        rollup_adds_and_reads_by_job_window,
        rollup_reads_across_jobs_by_hour,
        rollup_add_is_all_or_nothing_with_its_batch,
        rollup_concurrent_adds_all_count,
        rollup_clean_removes_old_hours_only,
        fleet_hours_read_by_range_replace_and_age_out,
    );
    super::report("rollup", &failures);
}

/// Hour `n` after 2024-03-10T00:00Z.
fn hour(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 3, 10, 0, 0, 0)
        .single()
        .unwrap_or_default()
        + Duration::hours(n)
}

fn counters(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

fn rollup(job_id: &str, h: i64, pairs: &[(&str, u64)]) -> RollupRecord {
    RollupRecord {
        job_id: job_id.to_owned(),
        hour: hour(h),
        counters: counters(pairs),
    }
}

async fn add<S: Store>(store: &S, record: &RollupRecord) {
    if let Err(e) = store.write_all(&[Write::AddRollup(record)]).await {
        panic!("adding {}: {e}", record.key());
    }
}

async fn read_job<S: Store>(store: &S, job_id: &str, from: i64, to: i64) -> Vec<RollupRecord> {
    match store.job_rollups(job_id, hour(from), hour(to)).await {
        Ok(found) => found,
        Err(e) => panic!("reading {job_id}'s rollups: {e}"),
    }
}

fn sorted(mut records: Vec<RollupRecord>) -> Vec<RollupRecord> {
    records.sort_by(|a, b| (a.hour, &a.job_id).cmp(&(b.hour, &b.job_id)));
    records
}

async fn rollup_adds_and_reads_by_job_window<S: Store>(store: S) {
    add(&store, &rollup("a", 0, &[("s.Succeeded", 1), ("d.40", 1)])).await;
    add(&store, &rollup("a", 0, &[("s.Succeeded", 2), ("d.41", 1)])).await;
    add(&store, &rollup("a", 1, &[("missed", 5)])).await;
    add(&store, &rollup("a", 5, &[("m.59", 1)])).await;
    add(&store, &rollup("ab", 1, &[("s.Skipped", 1)])).await;
    let found = read_job(&store, "a", 0, 5).await;
    assert_eq!(
        found,
        vec![
            rollup("a", 0, &[("s.Succeeded", 3), ("d.40", 1), ("d.41", 1)]),
            rollup("a", 1, &[("missed", 5)]),
            rollup("a", 5, &[("m.59", 1)]),
        ],
        "a job's buckets are added up, earliest first, and only its own"
    );
    assert_eq!(
        read_job(&store, "a", 1, 4).await,
        vec![rollup("a", 1, &[("missed", 5)])],
        "both ends of the range are included"
    );
    assert!(
        read_job(&store, "a", 2, 4).await.is_empty(),
        "a range with no bucket is empty"
    );
    assert!(
        read_job(&store, "nobody", 0, 5).await.is_empty(),
        "a job with no bucket has none"
    );
}

async fn rollup_reads_across_jobs_by_hour<S: Store>(store: S) {
    for (job, h) in [("x", 0), ("y", 0), ("y", 2), ("z", 3), ("x", 7)] {
        add(&store, &rollup(job, h, &[("s.Succeeded", 1)])).await;
    }
    let all = match store.all_rollups(hour(0), hour(3)).await {
        Ok(all) => sorted(all),
        Err(e) => panic!("reading all rollups: {e}"),
    };
    assert_eq!(
        all,
        vec![
            rollup("x", 0, &[("s.Succeeded", 1)]),
            rollup("y", 0, &[("s.Succeeded", 1)]),
            rollup("y", 2, &[("s.Succeeded", 1)]),
            rollup("z", 3, &[("s.Succeeded", 1)]),
        ],
        "every job's buckets in the hour range, and nothing after it"
    );
}

async fn rollup_add_is_all_or_nothing_with_its_batch<S: Store>(store: S) {
    // An execution update whose version does not match fails the batch: its rollup is not added.
    let execution = ExecutionRecord {
        execution_id: "j-1".into(),
        job_id: "j".into(),
        execute_number: 1,
        state: "Processing".into(),
        parent_job: None,
        parent_execution: None,
        created_at: hour(0),
        version: 1,
        document: json!({"executionId": "j-1"}),
    };
    if let Err(e) = store.create_execution(&execution).await {
        panic!("creating the execution: {e}");
    }
    let ended = ExecutionRecord {
        state: "Succeeded".into(),
        version: 7,
        ..execution.clone()
    };
    let record = rollup("j", 0, &[("s.Succeeded", 1)]);
    let failed = store
        .write_all(&[Write::UpdateExecution(&ended), Write::AddRollup(&record)])
        .await;
    match failed {
        Err(e) if e.index == Some(0) && matches!(e.error, StoreError::VersionConflict { .. }) => {}
        other => {
            panic!("a stale update with a rollup: want a version conflict at 0, got {other:?}")
        }
    }
    assert!(
        read_job(&store, "j", 0, 0).await.is_empty(),
        "a failed batch adds nothing"
    );
    let ended = ExecutionRecord {
        version: 1,
        ..ended
    };
    if let Err(e) = store
        .write_all(&[Write::UpdateExecution(&ended), Write::AddRollup(&record)])
        .await
    {
        panic!("the final update with its rollup: {e}");
    }
    assert_eq!(
        read_job(&store, "j", 0, 0).await,
        vec![record],
        "the batch added its rollup"
    );
}

async fn rollup_concurrent_adds_all_count<S: Store>(store: S) {
    const WRITERS: u64 = 24;
    let store = Arc::new(store);
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let record = rollup(
                "busy",
                0,
                &[
                    ("s.Succeeded", 1),
                    ("d.10", 1),
                    (&format!("m.{}", i % 3), 2),
                ],
            );
            add(&*store, &record).await;
        }));
    }
    for task in tasks {
        if let Err(e) = task.await {
            panic!("a writer failed: {e}");
        }
    }
    let found = read_job(&*store, "busy", 0, 0).await;
    let want = rollup(
        "busy",
        0,
        &[
            ("s.Succeeded", WRITERS),
            ("d.10", WRITERS),
            ("m.0", 16),
            ("m.1", 16),
            ("m.2", 16),
        ],
    );
    assert_eq!(found, vec![want], "every concurrent add counts");
}

async fn rollup_clean_removes_old_hours_only<S: Store>(store: S) {
    for (job, h) in [("a", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 3)] {
        add(&store, &rollup(job, h, &[("retries", 1)])).await;
    }
    let removed = match store.clean_rollups(hour(2)).await {
        Ok(n) => n,
        Err(e) => panic!("cleaning rollups: {e}"),
    };
    assert_eq!(removed, 3, "the buckets of hours 0 and 1 are removed");
    let left = match store.all_rollups(hour(0), hour(10)).await {
        Ok(all) => sorted(all),
        Err(e) => panic!("reading all rollups: {e}"),
    };
    assert_eq!(
        left,
        vec![
            rollup("a", 2, &[("retries", 1)]),
            rollup("b", 3, &[("retries", 1)])
        ],
        "buckets from the cut-off hour on stay"
    );
}

fn part(h: i64, part: u32, body: &str) -> FleetHourRecord {
    FleetHourRecord {
        hour: hour(h),
        part,
        body: body.to_owned(),
    }
}

async fn fleet_hours_in<S: Store>(store: &S, from: i64, to: i64) -> Vec<FleetHourRecord> {
    match store.fleet_hours(hour(from), hour(to)).await {
        Ok(mut found) => {
            found.sort_by_key(|p| (p.hour, p.part));
            found
        }
        Err(e) => panic!("reading fleet hours: {e}"),
    }
}

async fn fleet_hours_read_by_range_replace_and_age_out<S: Store>(store: S) {
    // A part's text can be large (a thousand jobs' lines) and holds newlines.
    let big = "sundial-fleet-hour 1 1 2\n".to_owned() + &"job-0001 1 2 3 4\n".repeat(4000);
    let parts = [
        part(0, 0, "h0"),
        part(1, 0, "h1 first\nline"),
        part(1, 1, &big),
        part(3, 0, "h3"),
    ];
    if let Err(e) = store.put_fleet_hours(&parts).await {
        panic!("storing fleet hours: {e}");
    }
    assert_eq!(fleet_hours_in(&store, 0, 3).await, parts.to_vec());
    assert_eq!(
        fleet_hours_in(&store, 1, 2).await,
        parts[1..3].to_vec(),
        "both parts of hour 1, nothing of hours 0 and 3"
    );
    assert!(fleet_hours_in(&store, 4, 9).await.is_empty());
    assert!(
        fleet_hours_in(&store, 3, 1).await.is_empty(),
        "an empty range"
    );
    // Written again (two readers summarizing one hour): replaced, not doubled.
    if let Err(e) = store.put_fleet_hours(&[part(1, 0, "h1 again")]).await {
        panic!("storing fleet hours again: {e}");
    }
    let hour_1 = fleet_hours_in(&store, 1, 1).await;
    assert_eq!(hour_1, vec![part(1, 0, "h1 again"), parts[2].clone()]);
    // Aged out with the buckets.
    add(&store, &rollup("a", 0, &[("retries", 1)])).await;
    if let Err(e) = store.clean_rollups(hour(2)).await {
        panic!("cleaning rollups: {e}");
    }
    assert_eq!(fleet_hours_in(&store, 0, 9).await, vec![parts[3].clone()]);
}
