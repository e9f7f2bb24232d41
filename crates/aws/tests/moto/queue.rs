//! The SQS queue on moto. The queue conformance suite drives a manual clock that SQS cannot follow
//! (its delays and visibility timeouts run on real seconds), so these tests check the same contract
//! in real time, with second-sized waits.

use std::time::Duration;

use sundial_aws::sqs::DEAD_LETTER_REASON;
use sundial_aws::SqsQueue;
use sundial_ports::queue::{Queue, QueueError, MAX_DELAY};

use crate::need_moto;

async fn fresh() -> Option<(SqsQueue, SqsQueue)> {
    let moto = crate::support::moto()?;
    let env = moto.fresh_resources();
    let sqs = aws_sdk_sqs::Client::new(&moto.sdk().await);
    let queue = SqsQueue::new(sqs.clone(), &env["SUNDIAL_DISPATCH_QUEUE_URL"])
        .with_dead_letter_queue(&env["SUNDIAL_DISPATCH_DLQ_URL"]);
    let other = SqsQueue::new(sqs, &env["SUNDIAL_NOTIFY_QUEUE_URL"]);
    Some((queue, other))
}

#[tokio::test(flavor = "multi_thread")]
async fn send_receive_ack_round_trips_bodies() {
    let _moto = need_moto!();
    let Some((queue, _)) = fresh().await else {
        return;
    };
    let body = r#"{"executionId":"job~1","note":"ünïcode \"quoted\"\nnewline"}"#;
    queue.send(body, Duration::ZERO).await.expect("send");
    let got = queue
        .receive(10, Duration::from_secs(30))
        .await
        .expect("receive");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, body);
    assert_eq!(got[0].receive_count, 1);
    queue.ack(&got[0].receipt).await.expect("ack");
    assert!(queue
        .receive(10, Duration::from_secs(30))
        .await
        .expect("receive")
        .is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn delay_hides_then_shows() {
    let _moto = need_moto!();
    let Some((queue, _)) = fresh().await else {
        return;
    };
    queue
        .send("later", Duration::from_millis(1_900))
        .await
        .expect("send");
    // Rounded down to whole seconds: visible after one second, not two.
    assert!(queue
        .receive(1, Duration::from_secs(30))
        .await
        .expect("receive")
        .is_empty());
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    let got = queue
        .receive(1, Duration::from_secs(30))
        .await
        .expect("receive");
    assert_eq!(got.len(), 1, "visible after its delay");
    assert!(matches!(
        queue
            .send("too late", MAX_DELAY + Duration::from_secs(1))
            .await,
        Err(QueueError::DelayTooLong(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn unacked_message_comes_back_and_postpone_moves_it() {
    let _moto = need_moto!();
    let Some((queue, _)) = fresh().await else {
        return;
    };
    queue.send("work", Duration::ZERO).await.expect("send");
    let first = queue
        .receive(1, Duration::from_secs(1))
        .await
        .expect("receive");
    assert_eq!(first.len(), 1);
    assert!(queue
        .receive(1, Duration::from_secs(1))
        .await
        .expect("receive")
        .is_empty());
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let again = queue
        .receive(1, Duration::from_secs(30))
        .await
        .expect("receive");
    assert_eq!(
        again.len(),
        1,
        "redelivered after the visibility timeout (a lost worker)"
    );
    assert_eq!(again[0].receive_count, 2);
    queue
        .postpone(&again[0].receipt, Duration::ZERO)
        .await
        .expect("postpone");
    let third = queue
        .receive(1, Duration::from_secs(30))
        .await
        .expect("receive");
    assert_eq!(third.len(), 1, "visible at once after a zero postponement");
    queue.ack(&third[0].receipt).await.expect("ack");
}

#[tokio::test(flavor = "multi_thread")]
async fn garbage_receipts_are_stale() {
    let _moto = need_moto!();
    let Some((queue, _)) = fresh().await else {
        return;
    };
    assert_eq!(
        queue.ack("not-a-receipt").await,
        Err(QueueError::StaleReceipt)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn redrive_moves_poison_messages_to_the_dead_letter_queue() {
    let _moto = need_moto!();
    let Some((queue, other)) = fresh().await else {
        return;
    };
    queue.send("poison", Duration::ZERO).await.expect("send");
    let mut deliveries = 0;
    for _ in 0..queue.max_receives() + 2 {
        deliveries += queue
            .receive(1, Duration::ZERO)
            .await
            .expect("receive")
            .len();
    }
    assert_eq!(
        deliveries as u32,
        queue.max_receives(),
        "delivered maxReceiveCount times, then moved"
    );
    assert_eq!(
        queue.dead_letters(10).await.expect("dead letters"),
        ["poison"]
    );
    assert!(other
        .dead_letters(10)
        .await
        .expect("no DLQ configured")
        .is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn batches_send_every_message_with_its_delay() {
    let _moto = need_moto!();
    let Some((queue, _)) = fresh().await else {
        return;
    };
    let messages: Vec<(String, Duration)> = (0..23)
        .map(|i| (format!("m{i}"), Duration::ZERO))
        .chain([("later".to_owned(), Duration::from_secs(60))])
        .collect();
    queue.send_batch(&messages).await.expect("batch");
    let mut got = Vec::new();
    for _ in 0..10 {
        let batch = queue
            .receive(10, Duration::from_secs(30))
            .await
            .expect("receive");
        if batch.is_empty() {
            break;
        }
        got.extend(batch.into_iter().map(|d| d.body));
    }
    got.sort();
    let mut want: Vec<String> = (0..23).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(
        got, want,
        "all 23 immediate messages, and not the delayed one"
    );
    assert!(matches!(
        queue
            .send_batch(&[("x".into(), MAX_DELAY + Duration::from_secs(1))])
            .await,
        Err(QueueError::DelayTooLong(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn dead_letter_sends_the_body_and_its_reason_to_the_dlq_and_deletes_the_message() {
    let moto = need_moto!();
    let Some((queue, other)) = fresh().await else {
        return;
    };
    queue.send("poison", Duration::ZERO).await.expect("send");
    let got = queue
        .receive(1, Duration::from_secs(1))
        .await
        .expect("receive");
    assert_eq!(got.len(), 1);
    queue
        .dead_letter(
            &got[0],
            "corrupt stored data: stored execution x is unreadable",
        )
        .await
        .expect("dead_letter");
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert!(
        queue
            .receive(1, Duration::from_secs(30))
            .await
            .expect("receive")
            .is_empty(),
        "deleted from its queue, not only copied"
    );
    assert_eq!(
        queue.dead_letters(10).await.expect("dead letters"),
        ["poison"]
    );
    // The reason travels with the message, for whoever reads the DLQ.
    let sqs = aws_sdk_sqs::Client::new(&moto.sdk().await);
    let dlq = queue_dlq_url(&sqs, &queue).await;
    let read = sqs
        .receive_message()
        .queue_url(dlq)
        .message_attribute_names("All")
        .visibility_timeout(0)
        .send()
        .await
        .expect("receive from the DLQ");
    let reason = read
        .messages()
        .first()
        .and_then(|m| m.message_attributes())
        .and_then(|a| a.get(DEAD_LETTER_REASON))
        .and_then(|v| v.string_value())
        .map(str::to_owned);
    assert_eq!(
        reason.as_deref(),
        Some("corrupt stored data: stored execution x is unreadable")
    );

    // Without a DLQ configured the message cannot be moved, and stays where it is.
    other.send("stuck", Duration::ZERO).await.expect("send");
    let got = other
        .receive(1, Duration::from_secs(1))
        .await
        .expect("receive");
    assert!(matches!(
        other.dead_letter(&got[0], "poison").await,
        Err(QueueError::Unavailable { .. })
    ));
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(
        other
            .receive(1, Duration::from_secs(30))
            .await
            .expect("receive")
            .len(),
        1
    );
}

/// The DLQ of `queue` as SQS knows it (its redrive policy), not as the test configured it.
async fn queue_dlq_url(sqs: &aws_sdk_sqs::Client, queue: &SqsQueue) -> String {
    use aws_sdk_sqs::types::QueueAttributeName;
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(queue.url())
        .attribute_names(QueueAttributeName::RedrivePolicy)
        .send()
        .await
        .expect("attributes");
    let policy: serde_json::Value = attributes
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy))
        .and_then(|p| serde_json::from_str(p).ok())
        .expect("a redrive policy");
    let arn = policy["deadLetterTargetArn"].as_str().expect("an ARN");
    let name = arn.rsplit(':').next().expect("a queue name");
    sqs.get_queue_url()
        .queue_name(name)
        .send()
        .await
        .expect("the DLQ's URL")
        .queue_url()
        .expect("a URL")
        .to_owned()
}
