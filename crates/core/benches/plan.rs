//! Tick-planning benchmark: how many jobs per second the pure planner handles
//! (docs/performance.md, goal ≥ 1M jobs/s per core).
//!
//! One iteration is what a tick does for one due job: [`plan_tick`] over a one-minute horizon (the
//! AWS tick period), on a copy of the job made outside the timed part. Three job shapes: a fire
//! every minute (one planned fire), a fire every second (sixty), and a job whose next fire is past
//! the horizon (nothing to plan: the common case when a tick reads an entry due at the horizon's
//! edge). jobs/s = 1 / median.
//!
//! Run: `cargo bench -p sundial-core --bench plan`. Figures: docs/performance.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::Duration;

use chrono::{DateTime, Utc};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::{json, Value};
use sundial_core::job::{Job, JobDefinition, JobId};
use sundial_core::plan::plan_tick;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn job(schedule: Value) -> Job {
    let body = json!({
        "jobName": "bench", "creator": "c", "creatorName": "C",
        "request": [{"method": "POST", "url": "http://127.0.0.1:9/run"}],
        "schedule": schedule,
    });
    let id = JobId::parse("bench-job").unwrap();
    let mut job = Job::new(JobDefinition::parse(&id, &body, at("2024-01-01T00:00:00Z")).unwrap());
    job.state.last_scheduled_time = Some(at("2024-06-01T11:59:00Z"));
    job
}

fn bench(c: &mut Criterion) {
    let now = at("2024-06-01T11:59:30Z");
    let horizon = at("2024-06-01T12:00:30Z");
    let shapes = [
        ("every_minute", job(json!({"cron": ["* * * * *"]}))),
        ("every_second", job(json!({"intervals": ["1s"]}))),
        (
            "nothing_due",
            job(json!({"cron": ["0 0 1 1 *"], "timeZone": "America/New_York"})),
        ),
    ];
    let mut group = c.benchmark_group("plan_tick");
    for (name, template) in &shapes {
        group.bench_function(*name, |b| {
            b.iter_batched(
                || template.clone(),
                // The job is returned so that dropping it is not timed.
                |mut job| {
                    let plan = plan_tick(&mut job, now, horizon, false);
                    black_box((job, plan))
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench
}
criterion_main!(benches);
