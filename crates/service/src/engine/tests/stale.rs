//! Issue 31: a batch of dispatch messages is read with reads that may be behind the latest
//! writes (DynamoDB's eventually consistent reads, at half the price). With every such read one
//! step behind (the memory store's lag), each fire still runs once, on its second, and a run
//! cancelled after the lagging read is never called.

use super::*;

/// Every-second and every-five-second jobs run for 20 s, their batches read as the runners
/// read them; with `lag`, every such read one read behind. The calls made, and each job's runs.
async fn twenty_seconds(lag: bool) -> (Vec<String>, Vec<&'static str>, Vec<&'static str>) {
    let mut w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.prefetch = true;
    if lag {
        w.app().store().lag_stale_reads();
    }
    w.create("sec", json!({"schedule": {"cron": ["* * * * * *"]}}))
        .await;
    w.create("five", json!({"schedule": {"cron": ["*/5 * * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:00:20Z").await;
    let calls = w
        .http
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|(at, request)| format!("{} {}", at.format("%H:%M:%S"), request.url))
        .collect();
    (
        calls,
        states(&w.executions("sec").await),
        states(&w.executions("five").await),
    )
}

/// New runs missing from the read and known ones one state behind: the same calls, at the
/// same seconds, as with reads of the latest writes; every run succeeded, none was taken for
/// one whose job is gone.
#[tokio::test]
async fn batches_read_behind_the_latest_writes_still_run_each_fire_once() {
    let ended = |states: &[&str]| {
        assert!(
            states
                .iter()
                .all(|s| matches!(*s, "Succeeded" | "Scheduled")),
            "{states:?}"
        );
        states.iter().filter(|s| **s == "Succeeded").count()
    };
    let (latest, sec, five) = twenty_seconds(false).await;
    assert_eq!(ended(&sec), 21, "the fires of 00:00:00 to 00:00:20");
    assert_eq!(ended(&five), 5);
    let (behind, sec, five) = twenty_seconds(true).await;
    assert_eq!(behind, latest);
    assert_eq!((ended(&sec), ended(&five)), (21, 5));
}

/// A run cancelled after the lagging read saw it `Scheduled`: its admission, written from the
/// stale read, fails its condition, and the step reads again and finds it ended.
#[tokio::test]
async fn a_run_cancelled_after_a_lagging_read_is_not_called() {
    let mut w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.prefetch = true;
    w.create("once", json!({"schedule": {"cron": ["0 * * * * *"]}}))
        .await;
    // The run for 00:01:00 exists, planned ahead; the lagging read sees it Scheduled.
    w.run_until("2024-01-01T00:00:59Z").await;
    w.app().store().lag_stale_reads();
    let ids: Vec<String> = w
        .executions("once")
        .await
        .iter()
        .map(|e| e.execution_id.clone())
        .collect();
    let _ = w.engine.prefetch(&ids).await;
    let planned = w
        .executions("once")
        .await
        .into_iter()
        .find(|e| e.state() == ExecutionState::Scheduled)
        .expect("the 00:01:00 run, planned ahead");
    assert_eq!(planned.scheduled_time, t("2024-01-01T00:01:00Z"));
    let before = w.call_times();
    w.app()
        .cancel_execution(&planned.id(), "test")
        .await
        .unwrap();
    w.run_until("2024-01-01T00:01:05Z").await;
    assert_eq!(w.call_times(), before, "no call for the cancelled run");
    let run = w.app().get_execution(&planned.id()).await.unwrap();
    assert_eq!(run.state(), ExecutionState::Cancelled);
}
