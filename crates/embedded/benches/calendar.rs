//! Re-planning after a calendar change on the SQLite store of `sundial serve`, on a file as
//! `serve` opens it: 10,000 jobs whose schedules name one calendar (payroll on the last business
//! day of the month in `london`), then `PUT /calendars/london` with a changed calendar, which
//! re-plans all of them (each read, parsed again with the new calendar, its next fire recomputed,
//! written with its audit entry). Median of `CALENDAR_BENCH_ROUNDS` (5) puts of
//! `App::put_calendar_by`, each answering `replanned: 10000`.
//!
//! Run: `cargo bench -p sundial-embedded --bench calendar`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Utc};
use serde_json::json;
use sundial_core::job::JobId;
use sundial_embedded::SqliteStore;
use sundial_ports::memory::ManualClock;
use sundial_service::{App, AppConfig, ChangeBy};

fn median(mut samples: Vec<StdDuration>) -> StdDuration {
    samples.sort();
    samples[samples.len() / 2]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let rounds: usize = std::env::var("CALENDAR_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let jobs: usize = std::env::var("CALENDAR_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = sundial_testkit::TempDir::new("calendar-bench");
    let store = SqliteStore::open(&dir.join("sundial.db")).expect("store");
    let now: DateTime<Utc> = "2026-11-25T00:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let app = App::new(
        store,
        clock,
        AppConfig::new(b"bench-signing-secret-0123456789abcdef".to_vec()),
    );
    let mut calendar = json!({"timeZone": "Europe/London", "rules": [
        {"month": 1, "day": 1, "observed": "nextWeekday"}, {"easter": -2}, {"easter": 1},
        {"month": 5, "weekday": "MON", "nth": 1}, {"month": 5, "weekday": "MON", "nth": -1},
        {"month": 8, "weekday": "MON", "nth": -1},
        {"month": 12, "day": 25, "observed": "nextWeekday"},
        {"month": 12, "day": 26, "observed": "nextWeekday"}]});
    let by = ChangeBy::anonymous();
    app.put_calendar_by(&by, "london", &calendar).await.unwrap();
    let started = Instant::now();
    for n in 0..jobs {
        let id = JobId::parse(&format!("payroll-{n:05}")).unwrap();
        let body = json!({"jobName": "payroll", "creator": "bench", "creatorName": "Bench",
            "request": [{"url": "http://127.0.0.1:9/pay"}],
            "schedule": {"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                         "timeZone": "Europe/London"}});
        app.create_job(&id, &body).await.expect("job");
    }
    println!(
        "created {jobs} jobs naming calendar london in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..rounds {
        // A new one-off holiday each round: every job's schedule changes.
        calendar["dates"] = json!([format!("2027-0{}-1{}", 1 + round % 9, round % 10)]);
        let started = Instant::now();
        let put = app.put_calendar_by(&by, "london", &calendar).await.unwrap();
        let took = started.elapsed();
        assert_eq!(put.replanned, jobs, "every job re-planned");
        println!(
            "round {round}: re-planned {} jobs in {took:.2?}",
            put.replanned
        );
        samples.push(took);
    }
    let median = median(samples);
    println!(
        "PUT /calendars/london re-planning {jobs} jobs on SQLite: median {median:.2?} over {rounds} rounds ({:.1} µs per job)",
        median.as_secs_f64() * 1e6 / jobs as f64
    );
}
