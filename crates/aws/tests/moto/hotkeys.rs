//! Hot keys: where a run's writes land, per partition key value of the table and of each index,
//! measured by the capacity meter (`sundial-meter`) on the real tick → SQS → dispatch path.
//!
//! `N` minutely jobs run their first minute (which creates each job's rollup item of the hour:
//! its `gsi2` rollup shard figures are printed too), then the next minute is measured: its tick and every dispatch booked in one meter second, so a
//! key's units in that second are its units for `N` runs. The test prints the busiest keys of each
//! index with their units per run and, for keys every run shares (the write-sharded `T` and `R`
//! shards), the WCU per second they would take at 100,000 runs a minute spread evenly (units per
//! run × 1,667 runs per second); and it fails if any write of a steady-state run lands on a key of
//! `gsi1` or `gsi2` shared by all jobs (the jobs list's `JOBS`, the rollups' `RH` shards), or if the
//! busiest shard of a sharded index would take more than 500 WCU/s at 100,000 runs a minute (issue
//! 31): the index's measured units per run, times 1,667 runs a second, times the largest share of
//! 100,000 job ids its hash puts on one shard:
//! `SUNDIAL_REQUIRE_MOTO=1 cargo test -p sundial-aws --test moto hot_keys -- --nocapture`.

use std::sync::Arc;

use serde_json::json;
use sundial_meter::{HotKey, Meter};
use sundial_ports::store::{ExecutionStore, PageRequest};

use crate::lambda::{at, job, Rig};
use crate::need_moto;

/// Runs a minute, at 100,000 runs a minute spread over it.
const RUNS_PER_SECOND_AT_100K: f64 = 100_000.0 / 60.0;

/// The most write units per second one partition key value of the table or an index may take at
/// 100,000 runs a minute (issue 31; a partition takes 1,000).
const MOST_WCU_PER_KEY: f64 = 500.0;

/// The largest share of 100,000 jobs' keys that `shard` puts on one shard value: 1/n for a
/// perfectly even hash over n shards.
fn busiest_share(shard: impl Fn(u64) -> String) -> f64 {
    const JOBS: u64 = 100_000;
    let mut counts = std::collections::HashMap::<String, u64>::new();
    for i in 0..JOBS {
        *counts.entry(shard(i)).or_default() += 1;
    }
    counts.values().copied().max().unwrap_or(0) as f64 / JOBS as f64
}

/// The write units per second the busiest key of a sharded index takes at 100,000 runs a
/// minute, from `units` the index took for `runs` runs, its keys spread as `share` says.
fn busiest_wcu(units: f64, runs: f64, share: f64) -> f64 {
    units / runs * RUNS_PER_SECOND_AT_100K * share
}

#[tokio::test(flavor = "multi_thread")]
async fn hot_keys_no_run_writes_a_key_all_jobs_share() {
    let moto = need_moto!();
    let meter = Arc::new(Meter::new());
    let (metered, _task) = sundial_meter::proxy::start(&moto.endpoint, Arc::clone(&meter))
        .await
        .expect("the capacity meter starts");
    let Some(rig) = Rig::start_via(at("2029-12-31T23:59:30Z"), Some(&metered)).await else {
        return;
    };
    const N: u64 = 24;
    for i in 0..N {
        let mut spec = job(rig.port);
        spec["notification"] = json!([]);
        spec["schedule"]["startTime"] = json!("2030-01-01T00:01:00Z");
        let (status, body) = rig.api("POST", &format!("/jobs/hot-{i}"), Some(spec)).await;
        assert_eq!(status, 200, "{body}");
    }
    // The first minute: fires planned, run, each job's rollup item of the hour created.
    // (Each phase's units booked in one meter second: the peak of a key is its phase's units.)
    meter.reset();
    meter.set_second(1);
    rig.clock.set(at("2030-01-01T00:01:00Z"));
    sundial_aws::handlers::tick(&rig.sundial, &json!({}))
        .await
        .expect("tick");
    rig.drain_dispatch_quiet().await;
    // The rollup shards of gsi2 take a write when a job's first run of an hour creates its
    // rollup item (with keys only, never again that hour): the first minute of each hour.
    let first_minute = meter.hottest_writes(10_000);
    let rollup_shards: Vec<&HotKey> = first_minute
        .iter()
        .filter(|h| h.at.space.ends_with("/gsi2"))
        .collect();
    let total = rollup_shards.iter().fold(0.0, |sum, h| sum + h.peak);
    println!(
        "gsi2 in the first minute of an hour ({N} runs, each job's first of the hour): {} keys, {total} WRU",
        rollup_shards.len()
    );
    for h in rollup_shards.iter().take(3) {
        println!("  {:<36} {:>6.1}", h.at.key, h.peak);
    }
    let keys = rig.sundial.engine.app().store().keys().clone();
    let rollup_share = busiest_share(|i| keys.rollup_shard(&format!("job-{i}")));
    let rollup_wcu = busiest_wcu(total, N as f64, rollup_share);
    println!(
        "  busiest rollup shard at 100k jobs' first runs of the hour in a minute: {rollup_wcu:.0} WCU/s \
         ({:.1} % of the jobs)",
        rollup_share * 100.0
    );
    assert!(
        rollup_wcu <= MOST_WCU_PER_KEY,
        "a rollup shard takes {rollup_wcu:.0} WCU/s in an hour's first minute"
    );
    // The 00:02 fires the first tick planned (80 s ahead). Their SQS messages are delayed in real
    // seconds, so the measured minute hands them to dispatch directly: the same engine step
    // (admission, call, final write) that their message would start.
    let store = rig.sundial.engine.app().store();
    let mut planned = Vec::new();
    for i in 0..N {
        let page = store
            .list_executions(&format!("hot-{i}"), &PageRequest::first(10))
            .await
            .expect("executions");
        planned.extend(
            page.items
                .into_iter()
                .filter(|e| e.state == "Scheduled")
                .map(|e| e.execution_id),
        );
    }
    assert_eq!(planned.len() as u64, N, "each job's 00:02 fire is planned");
    // The measured minute, steady state: the tick plans 00:03, dispatch runs 00:02.
    meter.reset();
    meter.set_second(2);
    rig.clock.set(at("2030-01-01T00:02:00Z"));
    sundial_aws::handlers::tick(&rig.sundial, &json!({}))
        .await
        .expect("tick");
    for id in &planned {
        rig.sundial.engine.dispatch(id).await.expect("dispatch");
    }
    let runs = rig.target.received("/run/hot-").len() as u64;
    assert_eq!(runs, 2 * N, "each job ran both minutes");
    let hot = meter.hottest_writes(10_000);
    let table = store.table();
    let n = N as f64;
    println!("busiest partition keys, steady-state minute of {N} minutely jobs ({N} runs):");
    println!("space                key                          WRU   per run  WCU/s at 100k runs/min (shared keys)");
    for space in ["", "/gsi1", "/gsi2", "/timers", "/runs"] {
        let name = format!("{table}{space}");
        let keys: Vec<&HotKey> = hot.iter().filter(|h| h.at.space == name).collect();
        let total = keys.iter().fold(0.0, |sum, h| sum + h.peak);
        println!(
            "{:<20} ({} keys, {total} WRU, {:.2} per run)",
            if space.is_empty() {
                "table"
            } else {
                &space[1..]
            },
            keys.len(),
            total / n
        );
        for h in keys.iter().take(4) {
            // A key of one job (its id in it) takes that job's run only; the others every run's.
            let (per_run, projected) = if h.at.key.contains("hot-") {
                (h.peak, "one job's key".to_owned())
            } else {
                let per_run = h.peak / n;
                (per_run, format!("{:.0}", per_run * RUNS_PER_SECOND_AT_100K))
            };
            println!(
                "  {:<36} {:>6.1}  {per_run:>6.2}  {projected}",
                h.at.key, h.peak
            );
        }
    }
    assert!(
        hot.iter().any(|h| h.at.space == table),
        "the meter saw the run's writes: {hot:?}"
    );
    // The sharded indexes every run writes: the wake-up index (a job's entry by `job:{id}`, a
    // run's fallback by `exec:{id}`, both hashed over the store's shards) and run search (by
    // execution id over `RUN_SHARDS`). At 100,000 jobs the hash spreads them as `busiest_share`
    // measures; the units per run are the meter's.
    let share = |space: &str| match space {
        "/timers" => {
            let jobs = busiest_share(|i| keys.timer_shard(&format!("job:job-{i}")));
            let runs = busiest_share(|i| keys.timer_shard(&format!("exec:job-{i}~0000000001")));
            jobs.max(runs)
        }
        _ => busiest_share(|i| keys.run_shard(&format!("job-{i}~0000000001"))),
    };
    println!("busiest shard at 100,000 runs a minute (goal: at most {MOST_WCU_PER_KEY} WCU/s):");
    for space in ["/timers", "/runs"] {
        let name = format!("{table}{space}");
        let units = hot
            .iter()
            .filter(|h| h.at.space == name)
            .fold(0.0, |sum, h| sum + h.peak);
        let share = share(space);
        let wcu = busiest_wcu(units, n, share);
        println!(
            "  {:<8} {:.2} WRU per run, busiest shard {:.1} % of the keys: {wcu:.0} WCU/s",
            &space[1..],
            units / n,
            share * 100.0
        );
        assert!(units > 0.0, "a run writes {space}");
        assert!(
            wcu <= MOST_WCU_PER_KEY,
            "{space}'s busiest shard would take {wcu:.0} WCU/s at 100,000 runs a minute"
        );
    }
    // No key of gsi1 or gsi2 that every job shares (`JOBS`, the `RH` rollup shards) gets a write
    // from a steady-state run; each job's own keys (its executions' `JE#` key) get one run's.
    for h in &hot {
        let index = h.at.space.rsplit('/').next().unwrap_or_default();
        if h.at.space.contains('/') && (index == "gsi1" || index == "gsi2") {
            assert!(
                h.at.key.contains("hot-") && h.peak <= 2.0,
                "a run's write landed on a shared {index} key: {h:?}"
            );
        }
    }
}
