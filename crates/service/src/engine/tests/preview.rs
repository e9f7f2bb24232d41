//! Issue 15 item 8: the preview of a change (`POST /jobs/{jobId}/update?dryRun=true`), under
//! simulated time.

use super::*;

/// Issue 15 item 8: the preview of a change. A `BufferAll` job every minute whose 00:01 run waits
/// for its async job: at 00:02:59 the 00:02 run is buffered and the 00:03 fire waits in line,
/// `Scheduled`. Previewing a change to hourly, `Skip` and a shorter timeout lists both with what
/// changes for them, and the fire times before and after — and writes nothing: the store counts
/// no write, the job and its runs are as they were. The update itself then applies.
#[tokio::test]
async fn previewing_a_change_lists_the_runs_it_affects_and_writes_nothing() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    let body = |cron: &str, overlap: &str, timeout: u32| {
        json!({
            "jobName": "busy", "creator": "c", "creatorName": "C",
            "request": [{"method": "POST", "url": "service://main/run"}],
            "schedule": {"cron": [cron]}, "overlap": overlap,
            "async": true, "timeoutSeconds": timeout,
        })
    };
    let id = JobId::parse("busy").unwrap();
    w.app()
        .create_job(&id, &body("* * * * *", "BufferAll", 600))
        .await
        .unwrap();
    w.run_until("2024-01-01T00:02:59Z").await;
    let runs = w.executions("busy").await;
    assert_eq!(states(&runs), ["Processing", "Enqueued", "Scheduled"]);

    let job_before = w.app().get_job(&id).await.unwrap();
    let writes = w.app().store().writes();
    let change = body("0 * * * *", "Skip", 30);
    let preview = w.app().preview_update(&doc(&id, &change)).await.unwrap();
    assert_eq!(w.app().store().writes(), writes, "a preview writes nothing");
    assert_eq!(w.app().get_job(&id).await.unwrap(), job_before);
    assert_eq!(w.executions("busy").await, runs);

    assert_eq!(
        preview.before[..2],
        ["2024-01-01T00:04:00+00:00", "2024-01-01T00:05:00+00:00"]
    );
    assert_eq!(
        preview.after[..2],
        ["2024-01-01T01:00:00+00:00", "2024-01-01T02:00:00+00:00"]
    );
    let affected: Vec<(&str, &str, Vec<&str>)> = preview
        .affected
        .iter()
        .map(|a| {
            (
                a.run.execution_id.as_str(),
                a.run.place.name(),
                a.changes
                    .iter()
                    .map(|c| c.split(':').next().unwrap_or_default())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        affected,
        [
            (
                "busy~20240101T000300Z",
                "waiting",
                vec!["overlap", "schedule", "timeoutSeconds"]
            ),
            (
                "busy~20240101T000200Z",
                "buffered",
                vec!["overlap", "schedule", "timeoutSeconds"]
            ),
        ]
    );
    assert_eq!(preview.affected[0].changes[0], "overlap: BufferAll → Skip");

    // A preview of what is already there affects nothing.
    let same = w
        .app()
        .preview_update(&doc(&id, &body("* * * * *", "BufferAll", 600)))
        .await
        .unwrap();
    assert!(same.affected.is_empty());
    assert_eq!(same.before, same.after);

    w.app().update_job(&id, &change).await.unwrap();
    assert_ne!(w.app().store().writes(), writes);
    assert_eq!(
        w.job_state("busy").await,
        job_before.state,
        "the update keeps the state"
    );
    assert_eq!(
        w.app()
            .get_job(&id)
            .await
            .unwrap()
            .definition
            .overlap()
            .name(),
        "Skip"
    );
}
