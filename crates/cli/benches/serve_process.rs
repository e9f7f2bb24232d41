//! Benchmarks of the real `sundial serve` process, as a user runs it: the release binary started on
//! a free loopback port with a temp data dir (the `common` helpers of the cli tests), driven over
//! its HTTP API, calling a loopback target (`sundial_testkit::Target`) in this process. What is
//! measured is the server's own process, not this one: its peak RSS is read from
//! `/proc/<pid>/status`.
//!
//! 1. `crash_recovery`: `SERVE_PROCESS_KILLS` (20) cycles of issue 11's crash. A one-second `Skip`
//!    job (`timer` `dueTime 0s`, `period 1s`, `qos 1`) whose first call the target holds; 1.5 s into
//!    the call the server is killed with SIGKILL, restarted 1 s later on the same data dir, and
//!    left running 4 s before the job is paused. Per cycle: the time from the restart to the
//!    orphan's repeated call (same `Idempotency-Key`), the fires with a nominal time two seconds or
//!    more after the restart that were `Skipped`, and the executions left unfinished.
//! 2. `backfill_rss`: one `AllowAll` job backfilled over `SERVE_PROCESS_BACKFILL_RUNS` (100,000)
//!    seconds in requests of 10,000 (the per-request limit), beside 10 every-second jobs: the
//!    server's peak RSS (VmHWM), the time to drain, the every-second jobs' fire lag while it drains
//!    and the slowest `GET /health` answer meanwhile.
//!
//! `SERVE_PROCESS_ONLY=crash_recovery` runs one phase. Run:
//! `cargo bench -p sundial-cli --bench serve_process`. Figures: docs/performance.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use common::{is_final, start, Server};
use sundial_testkit::{Received, Target, TempDir};
use support::{env_usize, mb, percentile, status_kb};

fn time(value: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn main() {
    let only = std::env::var("SERVE_PROCESS_ONLY").unwrap_or_default();
    let selected = |phase: &str| only.is_empty() || only.split(',').any(|o| o.trim() == phase);
    println!(
        "serve_process: {} cores, binary {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        env!("CARGO_BIN_EXE_sundial")
    );
    if selected("crash_recovery") {
        crash_recovery();
    }
    if selected("backfill_rss") {
        backfill_rss();
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Crash recovery.

/// Polls the job's executions until every one is final (at most `limit`).
fn settled_executions(server: &Server, job_id: &str, limit: Duration) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    loop {
        let executions = server.executions(job_id);
        if executions.iter().all(is_final) || Instant::now() > deadline {
            return executions;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn crash_recovery() {
    let kills = env_usize("SERVE_PROCESS_KILLS", 20);
    // The first call of every cycle's job is held far longer than the cycle: the server dies in it.
    let held: Arc<Mutex<HashSet<String>>> = Arc::default();
    let target = Target::with_delay(Arc::new(move |r: &Received| {
        let path = r.path.split('?').next().unwrap_or_default().to_string();
        let first = held
            .lock()
            .map(|mut seen| seen.insert(path))
            .unwrap_or(false);
        first.then_some(Duration::from_secs(300))
    }));
    let mut resumed_ms = Vec::with_capacity(kills);
    let (mut skipped, mut unfinished, mut not_resumed) = (0, 0, 0);
    for cycle in 0..kills {
        let dir = TempDir::new("serve-process-crash");
        let mut server = start(&dir, &[], &[]);
        let path = format!("/hold/{cycle}");
        let body = json!({
            "jobName": "crash", "creator": "bench", "creatorName": "bench",
            "timer": {"dueTime": "0s", "period": "1s"}, "qos": 1, "timeoutSeconds": 600,
            "request": [{"method": "POST", "url": format!("{}{path}?n=${{executeNumber}}", target.url()),
                         "body": {"n": "${executeNumber}|json"}}],
        });
        server
            .call("POST", "/jobs/every-second", Some(&body))
            .ok_envelope();
        let first = target.wait_for(&path, 1);
        assert_eq!(first.len(), 1, "cycle {cycle}: no first call");
        std::thread::sleep(Duration::from_millis(1500));
        server.kill();
        std::thread::sleep(Duration::from_secs(1));

        let restarted = Instant::now();
        let restarted_at = Utc::now();
        let server = start(&dir, &[], &[]);
        let calls = target.wait_for_within(&path, 2, Duration::from_secs(60));
        let orphan_key = first[0].header("idempotency-key").map(str::to_string);
        match calls.get(1) {
            Some(again) if again.header("idempotency-key").map(str::to_string) == orphan_key => {
                resumed_ms.push((again.at - restarted).as_secs_f64() * 1000.0);
            }
            _ => not_resumed += 1,
        }
        std::thread::sleep(Duration::from_secs(4));
        server
            .call(
                "POST",
                "/jobs/every-second/pause",
                Some(&json!({"notes": "bench"})),
            )
            .ok_envelope();
        let executions = settled_executions(&server, "every-second", Duration::from_secs(60));
        unfinished += executions.iter().filter(|e| !is_final(e)).count();
        skipped += executions
            .iter()
            .filter(|e| {
                e["state"] == "Skipped"
                    && time(&e["scheduledTime"])
                        .is_some_and(|t| t >= restarted_at + chrono::Duration::seconds(2))
            })
            .count();
    }
    resumed_ms.sort_by(f64::total_cmp);
    println!(
        "crash_recovery kills={kills}: restart → orphan's repeated call p50={:.0} ms max={:.0} ms \
         (resumed {}, not resumed {not_resumed}); fires ≥ 2 s after a restart skipped: {skipped}; \
         executions left unfinished: {unfinished}",
        percentile(&resumed_ms, 50.0),
        resumed_ms.last().copied().unwrap_or(f64::NAN),
        resumed_ms.len(),
    );
}

// ---------------------------------------------------------------------------------------------
// 2. A large backfill.

fn backfill_rss() {
    let runs = env_usize("SERVE_PROCESS_BACKFILL_RUNS", 100_000);
    let tickers = 10;
    let limit = Duration::from_secs(env_usize("SERVE_PROCESS_BACKFILL_LIMIT_SECS", 400) as u64);
    let target = Target::start();
    // Arrivals are `Instant`s; this pair turns them into wall-clock times for the lag.
    let (epoch, epoch_at) = (Instant::now(), Utc::now());
    let wall = |at: Instant| epoch_at + chrono::Duration::from_std(at - epoch).unwrap_or_default();
    let dir = TempDir::new("serve-process-backfill");
    let mut server = start(&dir, &[], &[("RUST_LOG", "warn")]);
    let pid = server.pid();
    let filled = json!({
        "jobName": "filled", "creator": "bench", "creatorName": "bench",
        "schedule": {"intervals": ["1s"]}, "active": 0, "overlap": "AllowAll",
        "request": [{"method": "POST", "url": format!("{}/count", target.url()), "body": {"backfill": true}}],
    });
    server
        .call("POST", "/jobs/filled", Some(&filled))
        .ok_envelope();
    for i in 0..tickers {
        let ticker = json!({
            "jobName": format!("ticker {i}"), "creator": "bench", "creatorName": "bench",
            "schedule": {"intervals": ["1s"]}, "overlap": "AllowAll",
            "request": [{"method": "POST", "url": format!("{}/hit", target.url()),
                         "body": {"scheduledTime": "${scheduledTime}"}}],
        });
        server
            .call("POST", &format!("/jobs/ticker-{i:02}"), Some(&ticker))
            .ok_envelope();
    }
    std::thread::sleep(Duration::from_secs(2));
    let rss_before = status_kb(Some(pid), "VmRSS:");
    let start_at: DateTime<Utc> = "2020-01-01T00:00:00Z".parse().unwrap();
    let t0 = Instant::now();
    let measure_from = Utc::now();
    let mut requested = 0;
    while requested < runs {
        let size = (runs - requested).min(10_000);
        let from = start_at + chrono::Duration::seconds(requested as i64);
        let to = from + chrono::Duration::seconds(size as i64 - 1);
        let reply = server.call(
            "POST",
            "/jobs/filled/backfill",
            Some(&json!({"startTime": from.to_rfc3339(), "endTime": to.to_rfc3339()})),
        );
        assert_eq!(reply.status, 200, "backfill: {:?}", reply.body);
        requested += size;
    }
    let accepted_in = t0.elapsed();
    let deadline = t0 + limit;
    let report_every = Duration::from_secs(env_usize("SERVE_PROCESS_REPORT_SECS", 10) as u64);
    let mut last_report = Instant::now();
    let mut slowest_health = Duration::ZERO;
    while target.count("/count") < runs && Instant::now() < deadline {
        let asked = Instant::now();
        let health = server.call("GET", "/health", None);
        slowest_health = slowest_health.max(asked.elapsed());
        assert_eq!(
            health.status, 200,
            "health while draining: {:?}",
            health.body
        );
        std::thread::sleep(Duration::from_millis(250));
        if last_report.elapsed() >= report_every {
            last_report = Instant::now();
            println!(
                "  backfill: {} runs after {:.0} s, server RSS {:.1} MB (anonymous {:.1}, file {:.1}), {} threads",
                target.count("/count"),
                t0.elapsed().as_secs_f64(),
                mb(status_kb(Some(pid), "VmRSS:")),
                mb(status_kb(Some(pid), "RssAnon:")),
                mb(status_kb(Some(pid), "RssFile:")),
                status_kb(Some(pid), "Threads:"),
            );
        }
    }
    let drained_in = t0.elapsed();
    let done = target.count("/count");
    let peak = status_kb(Some(pid), "VmHWM:");
    server.kill();
    let mut lags: Vec<f64> = target
        .received("/hit")
        .iter()
        .filter_map(|r| {
            let due = time(&r.body["scheduledTime"])?;
            (due > measure_from + chrono::Duration::seconds(2))
                .then(|| (wall(r.at) - due).num_microseconds().unwrap_or(0) as f64 / 1000.0)
        })
        .collect();
    lags.sort_by(f64::total_cmp);
    println!(
        "backfill_rss runs={runs} (accepted in {:.1} s) drained {done} in {:.1} s ({:.0}/s); \
         server peak_rss={:.1} MB (before the backfill {:.1} MB); every-second jobs' fire lag \
         while draining p50={:.1} ms p99={:.1} max={:.1} ({} fires); slowest /health {:.0} ms",
        accepted_in.as_secs_f64(),
        drained_in.as_secs_f64(),
        done as f64 / drained_in.as_secs_f64(),
        mb(peak),
        mb(rss_before),
        percentile(&lags, 50.0),
        percentile(&lags, 99.0),
        lags.last().copied().unwrap_or(f64::NAN),
        lags.len(),
        slowest_health.as_secs_f64() * 1000.0,
    );
    if done < runs {
        println!("backfill_rss: only {done} of {runs} runs drained within {limit:?}");
        std::process::exit(1);
    }
}
