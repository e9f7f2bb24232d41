//! Statistics rollups under simulated time: each run's final state, duration, fire lag and
//! retries, and each skipped, dropped or missed fire, land in the hour bucket of its job that the
//! write recording it adds to (docs/api.md "Statistics").

use sundial_core::stats::{LogHistogram, Rollup, StatsWindow};

use super::*;
use sundial_ports::store::RollupStore;

/// The job's one bucket for hour `hour` (RFC 3339), as stored.
async fn bucket(w: &World, job: &str, hour: &str) -> Rollup {
    let found = w
        .app()
        .store()
        .job_rollups(job, t(hour), t(hour))
        .await
        .unwrap();
    assert!(found.len() <= 1, "{found:?}");
    found
        .first()
        .map(|r| Rollup::from_counters(&r.counters))
        .unwrap_or_default()
}

/// A world at 00:00:30 with one every-minute job `id` whose calls succeed.
async fn minutely(id: &str) -> World {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(id, json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w
}

fn one(value_ms: u64) -> LogHistogram {
    let mut h = LogHistogram::new();
    h.record(value_ms);
    h
}

#[tokio::test]
async fn a_runs_end_duration_lag_and_retries_land_in_its_hour() {
    let w = World::new("2024-01-01T00:59:00Z", |_, _| status(500));
    w.create(
        "flaky",
        json!({
            "timer": {"dueTime": "50s", "period": "0s"},
            "retry": [{"errorEquals": "500", "intervalSeconds": 2, "maxAttempts": 3, "backoffRate": 2.0}],
        }),
    )
    .await;
    w.run_until("2024-01-01T01:01:00Z").await;
    // First attempt 00:59:50, retries at :52, :56 and 01:00:04, where it ends Terminated.
    let executions = w.executions("flaky").await;
    assert_eq!(states(&executions), ["Terminated"]);
    let ended = bucket(&w, "flaky", "2024-01-01T01:00:00Z").await;
    assert_eq!(ended.states, BTreeMap::from([("Terminated".to_owned(), 1)]));
    assert_eq!(ended.retries, 3);
    assert_eq!(ended.duration, one(14_000), "00:59:50 → 01:00:04");
    assert_eq!(ended.lag, one(0), "started on its second");
    assert_eq!(ended.minutes, BTreeMap::from([(0, 1)]));
    assert_eq!(ended.failed_minutes, BTreeMap::from([(0, 1)]));
    assert_eq!(
        bucket(&w, "flaky", "2024-01-01T00:00:00Z").await,
        Rollup::default(),
        "counted once, in the hour it ended"
    );
    let stats = w
        .app()
        .job_stats(&JobId::parse("flaky").unwrap(), StatsWindow::Hour)
        .await
        .unwrap();
    assert_eq!(stats.figures.runs, 1);
    assert_eq!(stats.figures.success_rate, Some(0.0));
    let p50 = stats.figures.duration.p50.unwrap();
    assert!((p50 - 14_000.0).abs() <= 14_000.0 * 0.05, "{p50}");
    let minute = stats
        .series
        .iter()
        .find(|p| p.at == t("2024-01-01T01:00:00Z"))
        .unwrap();
    assert_eq!((minute.runs, minute.failed), (1, 1));
}

#[tokio::test]
async fn a_late_start_is_fire_lag() {
    let w = minutely("late").await;
    // Down from 00:00:30 to 00:01:25: the 00:01 fire is within its one-minute catch-up window
    // and starts 25 s late.
    w.resume_at("2024-01-01T00:01:25Z").await;
    let hour = bucket(&w, "late", "2024-01-01T00:00:00Z").await;
    assert_eq!(hour.runs_in(ExecutionState::Succeeded), 1);
    assert_eq!(hour.lag, one(25_000));
    assert_eq!(hour.duration, one(0));
}

#[tokio::test]
async fn skipped_and_dropped_fires_are_counted_with_their_runs() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("skip", long_job("Skip")).await;
    w.create("buffer-one", long_job("BufferOne")).await;
    w.run_until("2024-01-01T00:03:30Z").await;
    let skip = bucket(&w, "skip", "2024-01-01T00:00:00Z").await;
    assert_eq!((skip.skipped, skip.dropped, skip.missed), (2, 0, 0));
    assert_eq!(skip.states, BTreeMap::from([("Skipped".to_owned(), 2)]));
    assert_eq!(
        skip.lag,
        LogHistogram::new(),
        "a skipped fire never started"
    );
    let buffer = bucket(&w, "buffer-one", "2024-01-01T00:00:00Z").await;
    assert_eq!((buffer.skipped, buffer.dropped), (0, 1));
    // A user's cancel is a final write too.
    w.cancel_first("buffer-one").await;
    let buffer = bucket(&w, "buffer-one", "2024-01-01T00:00:00Z").await;
    assert_eq!(buffer.runs_in(ExecutionState::Cancelled), 1);
    assert_eq!(buffer.duration.count(), 1, "it had started");
}

#[tokio::test]
async fn missed_fires_are_counted_by_the_tick_that_finds_them() {
    let w = minutely("caught").await;
    w.resume_at("2024-01-01T01:10:20Z").await;
    let state = w.job_state("caught").await;
    let found = bucket(&w, "caught", "2024-01-01T01:00:00Z").await;
    assert_eq!(found.missed, state.missed_catchup_window);
    assert_eq!(found.missed, 69, "00:01 … 01:09");
    assert_eq!(found.runs_in(ExecutionState::Succeeded), 1, "01:10 ran");
    let stats = w.app().fleet_stats(StatsWindow::Day).await.unwrap();
    assert_eq!(stats.all.figures.missed, 69);
    assert!(stats.top_failing.is_empty());
    assert_eq!(stats.slowest.len(), 1);
}

/// `GET /stats`'s counts: jobs by state; executions not ended now, read from what each job holds
/// (planned, in line, in flight, between attempts), and those ended within the window from the
/// statistics, so that no read of every execution is needed (issue 31: no request is a scan).
#[tokio::test]
async fn stats_count_jobs_runs_in_flight_and_runs_ended_in_the_window() {
    // `slow` answers 500 until its third call; the others at once.
    let w = World::new("2024-01-01T00:00:30Z", |request, _| {
        if request.url.contains("slow") {
            return status(500);
        }
        ok(json!({}))
    });
    w.create("steady", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.create(
        "slow",
        json!({
            "request": [{"method": "POST", "url": "service://main/slow"}],
            "schedule": {"cron": ["0 * * * *"]},
            "retry": [{"errorEquals": "500", "intervalSeconds": 600, "maxAttempts": 3, "backoffRate": 1.0}],
        }),
    )
    .await;
    w.create("resting", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    let resting = JobId::parse("resting").unwrap();
    w.app().set_active(&resting, false, None).await.unwrap();
    // 00:01 … 00:03 of `steady` run; `slow`'s 01:00 fire would come later: trigger it now.
    w.run_until("2024-01-01T00:03:30Z").await;
    let slow = JobId::parse("slow").unwrap();
    w.app()
        .trigger(&slow, json!({}), None, Default::default())
        .await
        .unwrap();
    // The tick plans 2 s ahead: at 00:03:59 `steady`'s 00:04 fire is planned, not yet due.
    w.run_until("2024-01-01T00:03:59Z").await;

    let stats = w.app().stats(StatsWindow::Day).await.unwrap();
    assert_eq!(
        stats.jobs,
        BTreeMap::from([("active".to_owned(), 2), ("paused".to_owned(), 1)])
    );
    // Ended within the window: `steady`'s three runs. Not ended: `slow`'s run between attempts,
    // and the 00:04 fire of `steady`, planned ahead.
    assert_eq!(
        stats.executions,
        BTreeMap::from([
            ("Failed".to_owned(), 1),
            ("Scheduled".to_owned(), 1),
            ("Succeeded".to_owned(), 3),
        ]),
        "{:#?}",
        w.executions("steady").await
    );
    assert_eq!(stats.fleet.all.figures.runs, 3);
}
