//! What the audit trail costs on the SQLite store of `sundial serve`, on a file as `serve` opens it:
//!
//! 1. `write`: a job's write alone (`update_job`) against the same write with its audit entry in
//!    one batch (`write_all([UpdateJob, AppendAudit])`), what every change through the API now
//!    does; rounds of each interleaved, so both see the same machine. Median per write.
//! 2. `read`: with `AUDIT_BENCH_ENTRIES` (10,000) entries on the job, the first page of its
//!    history (100, newest first: `GET /jobs/{jobId}/history`) and the one entry in force at a
//!    time in the middle (newest before it, limit 1: the ledger's question). Median per read.
//!
//! Run: `cargo bench -p sundial-embedded --bench audit`. Figures: docs/performance.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::json;
use sundial_embedded::SqliteStore;
use sundial_ports::store::audit::entry_id;
use sundial_ports::store::{
    AuditQuery, AuditRecord, AuditStore, JobRecord, JobStore, PageRequest, Store, Write,
};
use sundial_testkit::TempDir;

const ROUNDS: usize = 10;
const WRITES_PER_ROUND: usize = 200;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(1_764_000_000_000 + ms).unwrap()
}

fn job(version: u64) -> JobRecord {
    JobRecord {
        job_id: "bench".into(),
        version,
        creator: "u-1001".into(),
        parent_job: None,
        service: None,
        state: "active".into(),
        created_at: at(0),
        updated_at: at(version as i64),
        document: json!({
            "definition": {
                "jobName": "Daily report", "creator": "u-1001", "creatorName": "Ana",
                "request": [{"method": "POST", "url": "http://127.0.0.1:9/reports/daily"}],
                "schedule": {"cron": ["0 6 * * *"], "timeZone": "Europe/London"}
            },
            "state": {"active": true, "nextExecuteNumber": version}
        }),
    }
}

/// An entry as an update makes it: the changed field and the definition after.
fn entry(ms: i64, version: u64) -> AuditRecord {
    AuditRecord {
        job_id: "bench".into(),
        entry_id: entry_id(at(ms), version, version),
        at: at(ms),
        document: json!({
            "at": at(ms).to_rfc3339(), "jobId": "bench", "actor": "ops", "action": "update",
            "version": version, "state": "active",
            "changes": [{"path": "/schedule/cron/0", "old": "0 6 * * *", "new": "30 7 * * *"}],
            "definition": {
                "jobName": "Daily report", "creator": "u-1001", "creatorName": "Ana",
                "request": [{"method": "POST", "url": "http://127.0.0.1:9/reports/daily"}],
                "schedule": {"cron": ["30 7 * * *"], "timeZone": "Europe/London"}
            }
        }),
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    let dir = TempDir::new("audit-bench");
    let store = SqliteStore::open(&dir.join("sundial.db")).expect("open");
    store.create_job(&job(1)).await.unwrap();
    let mut version = 1;
    let (mut plain, mut audited) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for _ in 0..WRITES_PER_ROUND {
            let started = Instant::now();
            version = store.update_job(&job(version)).await.unwrap();
            plain.push(started.elapsed());
        }
        for _ in 0..WRITES_PER_ROUND {
            let (record, note) = (job(version), entry(version as i64, version + 1));
            let started = Instant::now();
            store
                .write_all(&[Write::UpdateJob(&record), Write::AppendAudit(&note)])
                .await
                .unwrap();
            audited.push(started.elapsed());
            version += 1;
        }
    }
    let (plain, audited) = (median(plain), median(audited));
    println!(
        "write: job alone {:.1} µs, job + audit entry {:.1} µs (+{:.1} µs) — median of {} each",
        plain.as_secs_f64() * 1e6,
        audited.as_secs_f64() * 1e6,
        (audited.as_secs_f64() - plain.as_secs_f64()) * 1e6,
        ROUNDS * WRITES_PER_ROUND
    );

    let entries = env_usize("AUDIT_BENCH_ENTRIES", 10_000);
    let existing = ROUNDS * WRITES_PER_ROUND;
    let extra: Vec<AuditRecord> = (existing..entries)
        .map(|i| entry(1_000_000 + i as i64 * 1000, 1_000_000 + i as u64))
        .collect();
    for chunk in extra.chunks(100) {
        let writes: Vec<Write<'_>> = chunk.iter().map(Write::AppendAudit).collect();
        store.write_all(&writes).await.unwrap();
    }
    let middle = at(1_000_000 + (entries as i64 / 2) * 1000);
    let (mut pages, mut in_force) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = Instant::now();
        let page = store
            .list_audit("bench", &AuditQuery::default(), &PageRequest::first(100))
            .await
            .unwrap();
        pages.push(started.elapsed());
        assert_eq!(page.items.len(), 100);
        let before = AuditQuery {
            to: Some(middle),
            ..AuditQuery::default()
        };
        let started = Instant::now();
        let page = store
            .list_audit("bench", &before, &PageRequest::first(1))
            .await
            .unwrap();
        in_force.push(started.elapsed());
        assert_eq!(page.items.len(), 1);
    }
    println!(
        "read ({} entries): first page of 100 {:.2} ms, entry in force at a time {:.3} ms — median of 200",
        entries.max(existing),
        median(pages).as_secs_f64() * 1e3,
        median(in_force).as_secs_f64() * 1e3
    );
}
