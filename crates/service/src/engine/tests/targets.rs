//! Issue 15 item 10: jobs' `sqs` and `eventbridge` targets where the publisher delivers none
//! (`sundial serve` without `--aws-targets`), under simulated time.

use super::*;

/// A target job stored while targets were delivered (the control plane refuses new ones where
/// they are not) does not succeed by delivering nothing once they are not: each attempt fails,
/// saying why and how to configure delivery, is retried by the job's policy, and nothing is
/// recorded as sent.
#[tokio::test]
async fn a_target_run_fails_where_targets_are_not_delivered() {
    let publisher = RecordingPublisher::new().without_targets("start with --aws-targets");
    let w = World::with_publisher(
        "2024-01-01T00:00:00Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        |_| {},
        publisher,
        |_, _| ok(json!({})),
    );
    let id = JobId::parse("to-queue").unwrap();
    let job = json!({
        "jobName": "q", "creator": "c", "creatorName": "C",
        "target": {"sqs": {"queueUrl": "https://sqs.us-east-1.amazonaws.com/1/q"}},
        "timer": {"period": "external"},
        "retryPolicy": {"initialInterval": "1s", "maximumAttempts": 2},
    });
    w.app().create_job(&id, &job).await.unwrap();
    w.app()
        .trigger(&id, json!({}), None, Default::default())
        .await
        .unwrap();
    w.run_until("2024-01-01T00:00:10Z").await;
    let runs = w.executions("to-queue").await;
    assert_eq!(states(&runs), ["Terminated"]);
    assert_eq!(runs[0].attempts(), 2, "retried by the job's policy");
    let lines = log_lines(&runs[0]);
    let refusals = lines
        .iter()
        .filter(|l| l.contains("target: not delivered, this server sends to no SQS queue or EventBridge bus; start with --aws-targets"))
        .count();
    assert_eq!(refusals, 2, "{lines:#?}");
    assert!(
        !w.engine
            .publisher()
            .sent()
            .iter()
            .any(|p| matches!(p, sundial_ports::memory::Published::QueueMessage { .. })),
        "nothing was sent"
    );
}
