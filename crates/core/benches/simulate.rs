//! Simulation benchmark (issue 27 item 5): a year of an every-minute job (525,600 fires) run
//! through [`sundial_core::simulate`] — the planner, admission, retries and settling under a
//! virtual clock — with a target of 2 s median, 30 s p99 calls and 5 % failures (retried by a
//! policy). The goal is under a second in a release build. Timed in the thread's CPU time, not
//! the wall clock, so that other work on a shared machine does not count, under mimalloc, the
//! allocator of `sundial serve` (crates/cli/src/main.rs).
//!
//! Run: `cargo bench -p sundial-core --bench simulate`. Figures: docs/performance.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

/// `sundial serve`'s allocator (crates/cli/src/main.rs): the laptop the goal speaks of runs the
/// simulation there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use serde_json::json;
use sundial_core::simulate::{Request, MAX_FIRES};

fn bench(c: &mut Criterion) {
    let body = json!({
        "jobName": "bench", "creator": "c", "creatorName": "C",
        "request": [{"method": "POST", "url": "http://127.0.0.1:9/run"}],
        "schedule": {"cron": ["* * * * *"]},
        "overlap": "Skip",
        "retryPolicy": {"initialInterval": "5s", "backoffCoefficient": 2, "maximumAttempts": 3},
        "from": "2026-01-01T00:00:00Z", "to": "2027-01-01T00:00:00Z",
        "simulatedTarget": {"p50": "2s", "p99": "30s", "failureRate": 0.05, "seed": 1},
        "rows": 200,
    });
    let request = Request::parse(&body, MAX_FIRES).unwrap();
    let report = request.run();
    assert_eq!(report.totals.fires, 525_600);
    assert!(!report.truncated);
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("year_every_minute", |b| {
        b.iter_custom(|iterations| {
            let start = cpu_time::ThreadTime::now();
            for _ in 0..iterations {
                black_box(request.run());
            }
            start.elapsed()
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
