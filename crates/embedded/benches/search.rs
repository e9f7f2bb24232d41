//! `GET /executions` on the SQLite store of `sundial serve`, on a file as `serve` opens it, with
//! 1,000,000 executions: 1,000 jobs (ten teams by label) of 1,000 runs each, a run every 2.6 s
//! over 30 days, 2 % of them Failed and the rest Succeeded. Times the use case
//! (`App::search_executions`: checking the filters, the store's query, decoding the page):
//!
//! - a filtered first page: `state=Failed&since=24h`, 50 runs;
//! - a time-range page: `since=…&until=…` (one hour, mid-range), 100 runs, and the page after it
//!   through its cursor;
//! - a label page: `label=team:t7&state=Failed`, 50 runs.
//!
//! Median of `SEARCH_BENCH_ROUNDS` (30) calls each. Seeding takes a few minutes; the file is
//! kept under `SEARCH_BENCH_DB` when that is set, and reused when it already holds the runs.
//!
//! Run: `cargo bench -p sundial-embedded --bench search`. Figures: docs/performance.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::json;
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::JobId;
use sundial_embedded::SqliteStore;
use sundial_ports::memory::ManualClock;
use sundial_ports::store::{ExecutionRecord, PageRequest, Store, Write};
use sundial_service::app::SearchFilters;
use sundial_service::{App, AppConfig};

const JOBS: u64 = 1_000;
const RUNS_PER_JOB: u64 = 1_000;
const SPACING_MS: i64 = 2_600;

fn median(mut samples: Vec<StdDuration>) -> StdDuration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: StdDuration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let rounds: usize = std::env::var("SEARCH_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let dir = sundial_testkit::TempDir::new("search-bench");
    let file = std::env::var("SEARCH_BENCH_DB")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| dir.join("sundial.db"));
    let store = SqliteStore::open(&file).expect("store");
    let start: DateTime<Utc> = "2026-10-01T00:00:00Z".parse().unwrap();
    let total = JOBS * RUNS_PER_JOB;
    let end = start + Duration::milliseconds(SPACING_MS * total as i64);
    let clock = Arc::new(ManualClock::new(start));
    let app = App::new(
        store.clone(),
        clock.clone(),
        AppConfig::new(b"bench-signing-secret-0123456789abcdef".to_vec()),
    );
    let seeded = store
        .execution_counts()
        .await
        .unwrap()
        .values()
        .sum::<u64>();
    if seeded < total {
        let began = Instant::now();
        for j in 0..JOBS {
            let body = json!({"jobName": "bench", "creator": format!("c{}", j % 7),
                "creatorName": "Bench", "request": [{"url": "http://127.0.0.1:9/run"}],
                "timer": {"period": "external"}, "labels": {"team": format!("t{}", j % 10)}});
            app.create_job(&JobId::parse(&format!("job-{j:04}")).unwrap(), &body)
                .await
                .unwrap();
        }
        let template = {
            let mut e = Execution::new(
                "x".into(),
                JobId::parse("job-0000").unwrap(),
                1,
                ExecutionState::Enqueued,
                start,
                "job-0000".into(),
                start,
            )
            .unwrap();
            e.transition(ExecutionState::Processing, start, "start")
                .unwrap();
            e.transition(ExecutionState::Succeeded, start, "done")
                .unwrap();
            serde_json::to_value(&e).unwrap()
        };
        let mut batch: Vec<ExecutionRecord> = Vec::with_capacity(100);
        for n in 0..total {
            // Runs interleave across jobs in time: run n is job n % JOBS's (n / JOBS + 1)th.
            let job = format!("job-{:04}", n % JOBS);
            let number = n / JOBS + 1;
            let at = start + Duration::milliseconds(SPACING_MS * n as i64);
            let state = if n % 50 == 7 { "Failed" } else { "Succeeded" };
            let id = format!("{job}~{number}");
            let mut document = template.clone();
            let text = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
            document["executionId"] = json!(id);
            document["jobId"] = json!(job);
            document["executeNumber"] = json!(number);
            document["scheduledTime"] = json!(text(at));
            document["scheduledById"] = json!(job);
            document["state"] = json!(state);
            document["startedAt"] = json!(text(at));
            document["finishedAt"] = json!(text(at + Duration::seconds(2)));
            batch.push(ExecutionRecord {
                execution_id: id,
                job_id: job,
                execute_number: number,
                state: state.into(),
                parent_job: None,
                parent_execution: None,
                created_at: at,
                version: 1,
                document,
            });
            if batch.len() == 100 || n + 1 == total {
                let writes: Vec<Write<'_>> = batch.iter().map(Write::CreateExecution).collect();
                store.write_all(&writes).await.unwrap();
                batch.clear();
            }
            if n % 100_000 == 0 {
                eprintln!("seeded {n} runs in {:.0?}", began.elapsed());
            }
        }
        eprintln!("seeded {total} runs in {:.0?}", began.elapsed());
    }
    clock.set(end);

    let hour_from = start + Duration::days(15);
    let cases: Vec<(&str, SearchFilters, usize)> = vec![
        (
            "state=Failed&since=24h, first page of 50",
            SearchFilters {
                state: Some("Failed".into()),
                since: Some("24h".into()),
                ..SearchFilters::default()
            },
            50,
        ),
        (
            "since/until (one hour), first page of 100",
            SearchFilters {
                since: Some(hour_from.to_rfc3339()),
                until: Some((hour_from + Duration::hours(1)).to_rfc3339()),
                ..SearchFilters::default()
            },
            100,
        ),
        (
            "label=team:t7&state=Failed, first page of 50",
            SearchFilters {
                state: Some("Failed".into()),
                labels: vec!["team:t7".into()],
                ..SearchFilters::default()
            },
            50,
        ),
    ];
    println!("GET /executions on SQLite, {total} executions, median of {rounds}:");
    for (what, filters, limit) in &cases {
        let first = PageRequest::first(*limit);
        let page = app.search_executions(filters, &first).await.unwrap();
        assert_eq!(page.items.len(), *limit, "{what}: a full page");
        let mut samples = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let began = Instant::now();
            let page = app.search_executions(filters, &first).await.unwrap();
            samples.push(began.elapsed());
            assert_eq!(page.items.len(), *limit);
        }
        println!("  {what}: {:.2} ms", ms(median(samples)));
        let next = PageRequest {
            limit: *limit,
            cursor: page.next_cursor.clone(),
        };
        let mut samples = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let began = Instant::now();
            let page = app.search_executions(filters, &next).await.unwrap();
            samples.push(began.elapsed());
            assert!(!page.items.is_empty());
        }
        println!(
            "  {what}, its second page (cursor): {:.2} ms",
            ms(median(samples))
        );
    }
}
