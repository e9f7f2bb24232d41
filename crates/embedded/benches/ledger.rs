//! The non-run ledger on the SQLite store of `sundial serve`, on a file as `serve` opens it:
//! `GET /jobs/{jobId}/occurrences` over 10,000 nominal times of an every-second job (the most one
//! request lists), every one of them with a stored run (the most reads: 100 `read_many` batches),
//! a tenth of them skipped by the overlap policy, with the job paused and unpaused (with notes)
//! and its schedule updated in the range, so the audit trail holds the definitions and pauses in
//! force. Median of `LEDGER_BENCH_ROUNDS` (30) calls of `App::occurrences`.
//!
//! Run: `cargo bench -p sundial-embedded --bench ledger`. Figures: docs/performance.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use sundial_core::execution::execution_id_for_fire;
use sundial_core::job::JobId;
use sundial_core::ledger::Fate;
use sundial_embedded::SqliteStore;
use sundial_ports::memory::ManualClock;
use sundial_ports::store::{ExecutionRecord, Store, Write};
use sundial_service::{App, AppConfig};

const TIMES: i64 = 10_000;

fn median(mut samples: Vec<StdDuration>) -> StdDuration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let rounds: usize = std::env::var("LEDGER_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let dir = sundial_testkit::TempDir::new("ledger-bench");
    let store = SqliteStore::open(&dir.join("sundial.db")).expect("store");
    let created: DateTime<Utc> = "2026-11-25T00:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(created));
    let app = App::new(
        store,
        clock.clone(),
        AppConfig::new(b"bench-signing-secret-0123456789abcdef".to_vec()),
    );
    let job = JobId::parse("every-second").unwrap();
    let mut body = json!({"jobName": "every-second", "creator": "bench", "creatorName": "Bench",
        "request": [{"url": "http://127.0.0.1:9/run"}], "schedule": {"intervals": ["1s"]}});
    app.create_job(&job, &body).await.expect("job");
    // Changes in the range: a pause with notes, an unpause, an update (same times, a new
    // definition version to read).
    clock.set(created + Duration::seconds(2_000));
    app.set_active(&job, false, Some("deploy".into()))
        .await
        .unwrap();
    clock.set(created + Duration::seconds(2_100));
    app.set_active(&job, true, None).await.unwrap();
    clock.set(created + Duration::seconds(5_000));
    body["timeoutSeconds"] = json!(30);
    app.update_job(&job, &body).await.unwrap();

    let mut batch = Vec::with_capacity(100);
    for n in 1..=TIMES {
        let time = created + Duration::seconds(n);
        let id = execution_id_for_fire(&job, 0, time);
        let skipped = n % 10 == 0;
        let state = if skipped { "Skipped" } else { "Succeeded" };
        let last = if skipped {
            json!({"at": time.to_rfc3339(), "from": "Enqueued", "to": "Skipped",
                "message": format!("skipped by overlap policy Skip: {} still running",
                    execution_id_for_fire(&job, 0, time - Duration::seconds(1)))})
        } else {
            json!({"at": time.to_rfc3339(), "from": "Processing", "to": "Succeeded", "message": "HTTP 200"})
        };
        batch.push(ExecutionRecord {
            execution_id: id.clone(),
            job_id: job.to_string(),
            execute_number: n as u64,
            state: state.into(),
            parent_job: None,
            parent_execution: None,
            created_at: time,
            version: 3,
            document: json!({"executionId": id, "jobId": job.as_str(), "executeNumber": n,
                "state": state, "scheduledTime": time.to_rfc3339(), "scheduledById": job.as_str(),
                "startedAt": time.to_rfc3339(), "finishedAt": time.to_rfc3339(), "attempts": 1,
                "events": [
                    {"at": time.to_rfc3339(), "from": null, "to": "Scheduled", "message": "scheduled"},
                    {"at": time.to_rfc3339(), "from": "Scheduled", "to": "Enqueued", "message": "enqueued"},
                    last
                ]}),
        });
        if batch.len() == 100 {
            let writes: Vec<Write<'_>> = batch.iter().map(Write::CreateExecution).collect();
            app.store().write_all(&writes).await.expect("seed");
            batch.clear();
        }
    }
    clock.set(created + Duration::seconds(TIMES + 600));
    let (from, to) = (
        created + Duration::seconds(1),
        created + Duration::seconds(TIMES + 1),
    );
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let ledger = app.occurrences(&job, from, to).await.expect("ledger");
        samples.push(started.elapsed());
        assert_eq!(ledger.entries.len(), TIMES as usize);
        let skipped = ledger
            .entries
            .iter()
            .filter(|(_, f)| matches!(f, Fate::Skipped { .. }))
            .count();
        assert_eq!(skipped, TIMES as usize / 10);
    }
    println!(
        "GET /jobs/{{jobId}}/occurrences, {TIMES} nominal times with a run each (SQLite file): median {:.1} ms, max {:.1} ms — {rounds} rounds",
        median(samples.clone()).as_secs_f64() * 1e3,
        samples.iter().max().unwrap().as_secs_f64() * 1e3,
    );
}
