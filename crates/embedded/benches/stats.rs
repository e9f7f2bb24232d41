//! `GET /jobs/{jobId}/stats` on SQLite for a job with 1,000,000 runs over 30 days, through the
//! `App` use case the route calls (`App::job_stats`: the job read, its window's hourly rollups
//! read, merged, quantiles and series computed).
//!
//! Seeding: the job's 1,000,000 runs spread evenly over the 720 hours before "now" (1,389 per
//! hour), each with a final state (97 % `Succeeded`, 3 % `Terminated` with 1–2 retries), a
//! duration (log-uniform 20 ms–20 s), a fire lag (0–250 ms) and its minute, recorded into the
//! same `Rollup` buckets `Rollup::of_run` fills, and added to the store with `Write::AddRollup`
//! one minute's runs at a time (43,200 adds; a batch never holds one key twice, so the
//! per-run adds of the same minute are merged before they are written — the row each hour ends
//! with is the one a million single adds make). Also `GET /stats` over the same data, and, for a
//! ratio, the naive alternative: reading a job's executions page by page and computing the same
//! figures, on 100,000 executions (seeding a million full executions is not cheap; the scan is
//! linear in them, so ×10 is a floor for a million).
//!
//! Run: `cargo bench -p sundial-embedded --bench stats` (`STATS_BENCH_ROUNDS`, default 30).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, Utc};
use cpu_time::ProcessTime;
use serde_json::json;
use sundial_core::job::JobId;
use sundial_core::stats::{hour_of, LogHistogram, Rollup, StatsWindow};
use sundial_embedded::SqliteStore;
use sundial_ports::memory::ManualClock;
use sundial_ports::store::{
    ExecutionRecord, ExecutionStore, PageRequest, RollupRecord, RollupStore, Store, Write,
};
use sundial_service::{App, AppConfig};

const RUNS: u64 = 1_000_000;
const HOURS: u64 = 720;
const SCAN_RUNS: u64 = 100_000;

/// A deterministic generator (Knuth's MMIX linear congruential one, high bits), so every run
/// seeds the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11
    }

    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 53) as f64
    }
}

/// One run: (failed, retries, duration ms, lag ms).
fn run(rng: &mut Rng) -> (bool, u64, u64, u64) {
    let failed = rng.unit() < 0.03;
    let retries = if failed { 1 + rng.next() % 2 } else { 0 };
    let duration = (20.0 * 1000f64.powf(rng.unit())) as u64;
    let lag = rng.next() % 251;
    (failed, retries, duration, lag)
}

fn median(mut samples: Vec<StdDuration>) -> StdDuration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: StdDuration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let rounds: usize = std::env::var("STATS_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let dir = sundial_testkit::TempDir::new("stats-bench");
    let store = SqliteStore::open(&dir.join("sundial.db")).expect("store");
    let now: DateTime<Utc> = "2026-11-25T12:30:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let app = App::new(
        store,
        clock,
        AppConfig::new(b"bench-signing-secret-0123456789abcdef".to_vec()),
    );
    let job = JobId::parse("busy").unwrap();
    let body = json!({"jobName": "busy", "creator": "bench", "creatorName": "Bench",
        "request": [{"url": "http://127.0.0.1:9/run"}], "timer": {"period": "external"}});
    app.create_job(&job, &body).await.expect("job");

    let seeding = Instant::now();
    let mut rng = Rng(0x5eed_5eed_5eed_5eed);
    let first_hour = hour_of(now) - Duration::hours(HOURS as i64 - 1);
    let mut seeded = 0u64;
    for h in 0..HOURS {
        let hour = first_hour + Duration::hours(h as i64);
        let in_hour = RUNS * (h + 1) / HOURS - RUNS * h / HOURS;
        let mut writes = Vec::with_capacity(60);
        for minute in 0..60u32 {
            let n = in_hour * u64::from(minute + 1) / 60 - in_hour * u64::from(minute) / 60;
            let mut rollup = Rollup::default();
            for _ in 0..n {
                let (failed, retries, duration, lag) = run(&mut rng);
                let state = if failed { "Terminated" } else { "Succeeded" };
                *rollup.states.entry(state.to_owned()).or_insert(0) += 1;
                rollup.retries += retries;
                rollup.duration.record(duration);
                rollup.lag.record(lag);
                *rollup.minutes.entry(minute).or_insert(0) += 1;
                if failed {
                    *rollup.failed_minutes.entry(minute).or_insert(0) += 1;
                }
            }
            seeded += n;
            writes.push(RollupRecord {
                job_id: job.to_string(),
                hour,
                counters: rollup.to_counters(),
            });
        }
        for record in &writes {
            app.store()
                .write_all(&[Write::AddRollup(record)])
                .await
                .expect("seed");
        }
    }
    assert_eq!(seeded, RUNS);
    println!(
        "seeded {RUNS} runs over {HOURS} hours as {} rollup adds in {:.1} s",
        HOURS * 60,
        seeding.elapsed().as_secs_f64()
    );

    for window in [
        StatsWindow::Month,
        StatsWindow::Week,
        StatsWindow::Day,
        StatsWindow::Hour,
    ] {
        let stats = app.job_stats(&job, window).await.expect("stats");
        let mut samples = Vec::with_capacity(rounds);
        let mut cpu = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let started = Instant::now();
            let cpu_started = ProcessTime::now();
            let stats = app.job_stats(&job, window).await.expect("stats");
            cpu.push(cpu_started.elapsed());
            samples.push(started.elapsed());
            std::hint::black_box(stats);
        }
        // CPU time of the whole process (the store's reader thread included; nothing else runs):
        // what the answer costs whatever else the machine is doing.
        println!(
            "job stats {:>3}: median {:7.2} ms wall, {:7.2} ms CPU  ({} runs, p95 duration {:.0} ms, {} points)",
            window.name(),
            ms(median(samples)),
            ms(median(cpu)),
            stats.figures.runs,
            stats.figures.duration.p95.unwrap_or(0.0),
            stats.series.len()
        );
        if window == StatsWindow::Month {
            assert_eq!(stats.figures.runs, RUNS);
        }
    }
    // Where the 30-day answer's time goes: the store's read alone.
    let (from, to) = StatsWindow::Month.hours(now);
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        std::hint::black_box(
            app.store()
                .job_rollups("busy", from, to)
                .await
                .expect("read"),
        );
        samples.push(started.elapsed());
    }
    println!(
        "  of which the store's read of the 720 rows: median {:7.2} ms",
        ms(median(samples))
    );
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        std::hint::black_box(app.fleet_stats(StatsWindow::Month).await.expect("fleet"));
        samples.push(started.elapsed());
    }
    println!(
        "GET /stats 30d (this one job): median {:7.2} ms",
        ms(median(samples))
    );

    if std::env::var("STATS_BENCH_SCAN").as_deref() == Ok("0") {
        return;
    }
    // The naive alternative, on a tenth of the runs: page through the executions and compute.
    let scan = JobId::parse("scanned").unwrap();
    app.create_job(&scan, &body).await.expect("job");
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let spacing = Duration::milliseconds((HOURS * 3_600_000 / SCAN_RUNS) as i64);
    let mut batch = Vec::with_capacity(100);
    for n in 0..SCAN_RUNS {
        let (failed, retries, duration, lag) = run(&mut rng);
        let due = first_hour + spacing * n as i32;
        let started = due + Duration::milliseconds(lag as i64);
        let finished = started + Duration::milliseconds(duration as i64);
        let state = if failed { "Terminated" } else { "Succeeded" };
        let id = format!("scanned~{n:08}");
        batch.push(ExecutionRecord {
            execution_id: id.clone(),
            job_id: "scanned".into(),
            execute_number: n + 1,
            state: state.into(),
            parent_job: None,
            parent_execution: None,
            created_at: due,
            version: 1,
            document: json!({"executionId": id, "jobId": "scanned", "executeNumber": n + 1,
                "state": state, "scheduledTime": due.to_rfc3339(), "startedAt": started.to_rfc3339(),
                "finishedAt": finished.to_rfc3339(),
                "attempts": retries + 1}),
        });
        if batch.len() == 100 || n + 1 == SCAN_RUNS {
            let writes: Vec<Write<'_>> = batch.iter().map(Write::CreateExecution).collect();
            app.store()
                .write_all(&writes)
                .await
                .expect("seed executions");
            batch.clear();
        }
    }
    let mut samples = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let mut durations = LogHistogram::new();
        let mut page = PageRequest::first(1000);
        let mut seen = 0u64;
        loop {
            let found = app
                .store()
                .list_executions("scanned", &page)
                .await
                .expect("page");
            for e in &found.items {
                let at = |k: &str| {
                    e.document[k]
                        .as_str()
                        .and_then(|t| t.parse::<DateTime<Utc>>().ok())
                };
                if let (Some(s), Some(f)) = (at("startedAt"), at("finishedAt")) {
                    durations.record((f - s).num_milliseconds().max(0) as u64);
                }
                seen += 1;
            }
            match found.next_cursor {
                Some(cursor) => page.cursor = Some(cursor),
                None => break,
            }
        }
        assert_eq!(seen, SCAN_RUNS);
        std::hint::black_box(durations.quantile(0.95));
        samples.push(started.elapsed());
    }
    let scan_ms = ms(median(samples));
    println!(
        "naive scan of {SCAN_RUNS} executions: median {scan_ms:.0} ms (×10 ≈ {:.1} s for {RUNS})",
        scan_ms * 10.0 / 1000.0
    );
}
