//! Issue 15 item 7: a trigger's overrides — the nominal time its run reports, its overlap policy,
//! and a delay before it starts — under simulated time.

use sundial_core::trigger::TriggerOptions;

use super::*;

fn options(
    scheduled_time: Option<&str>,
    overlap: Option<&str>,
    delay: Option<&str>,
) -> TriggerOptions {
    TriggerOptions::parse(scheduled_time, overlap, delay).unwrap()
}

/// A trigger delayed 90 s stays `Scheduled` and calls at its time, not before; one delayed 20
/// minutes (past the queue's longest delay) waits in the wake-up index and calls on its second.
/// A `scheduleToStart` of 10 s counts from when the run is due, not from the trigger.
#[tokio::test]
async fn a_delayed_trigger_is_scheduled_until_its_time() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create(
        "later",
        json!({
            "timer": {"period": "external"},
            "timeouts": {"scheduleToStart": "10s"},
            "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}],
        }),
    )
    .await;
    let job = JobId::parse("later").unwrap();
    let soon = w
        .app()
        .trigger(
            &job,
            json!({}),
            Some("soon"),
            options(None, None, Some("90s")),
        )
        .await
        .unwrap();
    assert_eq!(soon.state(), ExecutionState::Scheduled);
    assert_eq!(soon.scheduled_time, t("2024-01-01T00:01:30Z"));
    let far = w
        .app()
        .trigger(
            &job,
            json!({}),
            Some("far"),
            options(None, None, Some("20m")),
        )
        .await
        .unwrap();
    w.drain().await;
    assert!(w.calls().is_empty(), "nothing runs before its time");
    let soon_now = w.app().get_execution(&soon.id()).await.unwrap();
    assert_eq!(soon_now.state(), ExecutionState::Scheduled);
    w.run_until("2024-01-01T00:20:05Z").await;
    assert_eq!(
        w.call_instants("/run"),
        ["2024-01-01T00:01:30Z", "2024-01-01T00:20:00Z"]
    );
    let calls = w.calls();
    assert!(
        calls[0].url.ends_with("at=2024-01-01T00:01:30Z"),
        "{}",
        calls[0].url
    );
    for id in [&soon.execution_id, &far.execution_id] {
        let run = w.app().get_execution(&eid(id)).await.unwrap();
        assert_eq!(run.state(), ExecutionState::Succeeded, "{id}");
        let log = log_lines(&run).join("\n");
        assert!(log.contains("trigger overrides: delay"), "{log}");
    }
}

/// `scheduledTime` is the nominal time the run reports (and its templates read); `overlap` is
/// the policy it is admitted under: a second run of a busy `Skip` job waits in the buffer under
/// `BufferAll` instead of being skipped. Both are recorded in the run's log.
#[tokio::test]
async fn a_trigger_reports_its_scheduled_time_and_takes_its_overlap_policy() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create(
        "report",
        json!({
            "timer": {"period": "external"},
            "async": true, "timeoutSeconds": 30,
            "timeouts": {"scheduleToStart": "10s"},
            "request": [{"method": "POST", "url": "service://main/run?at=${scheduledTime}"}],
        }),
    )
    .await;
    let job = JobId::parse("report").unwrap();
    let first = w
        .app()
        .trigger(
            &job,
            json!({}),
            Some("june"),
            options(Some("2023-06-01T06:00:00Z"), None, None),
        )
        .await
        .unwrap();
    w.drain().await;
    let second = w
        .app()
        .trigger(
            &job,
            json!({}),
            Some("queued"),
            options(None, Some("BufferAll"), None),
        )
        .await
        .unwrap();
    let skipped = w
        .app()
        .trigger(&job, json!({}), Some("plain"), TriggerOptions::default())
        .await
        .unwrap();
    w.drain().await;

    let first = w.app().get_execution(&first.id()).await.unwrap();
    assert_eq!(first.scheduled_time, t("2023-06-01T06:00:00Z"));
    // Its scheduleToStart counts from when it was due, not from the time it reports.
    assert_eq!(first.state(), ExecutionState::Processing);
    assert!(w.calls()[0].url.ends_with("at=2023-06-01T06:00:00Z"));
    let log = log_lines(&first).join("\n");
    assert!(
        log.contains("trigger overrides: scheduledTime 2023-06-01T06:00:00Z"),
        "{log}"
    );
    let second = w.app().get_execution(&second.id()).await.unwrap();
    assert_eq!(second.state(), ExecutionState::Enqueued, "buffered");
    assert!(log_lines(&second).join("\n").contains("overlap BufferAll"));
    let skipped = w.app().get_execution(&skipped.id()).await.unwrap();
    assert_eq!(skipped.state(), ExecutionState::Skipped);
    assert_eq!(w.job_state("report").await.buffered, [second.execution_id]);
}
