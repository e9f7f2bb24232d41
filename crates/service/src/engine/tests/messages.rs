//! What becomes of a message ([`Engine::handle_message`]), the one rule the local runner and the
//! Lambda handlers share: done, back after [`retry_backoff`], or poison to the dead letters at once.

use super::*;
use crate::engine::runner::{self, RunnerOptions};
use sundial_ports::queue::{Delivery, DEFAULT_MAX_RECEIVES};
use sundial_ports::store::ExecutionRecord;

#[test]
fn retry_backoff_doubles_from_a_second_to_a_minute() {
    let backoffs: Vec<u64> = (0..=12).map(|n| retry_backoff(n).as_secs()).collect();
    assert_eq!(
        backoffs,
        [1, 1, 2, 4, 8, 16, 32, 60, 60, 60, 60, 60, 60],
        "receive counts 0 (never sent by a queue) to 12"
    );
    assert_eq!(retry_backoff(u32::MAX), StdDuration::from_secs(60));
    // The ten deliveries before a queue dead-letters a message span about four minutes.
    let total: u64 = (1..DEFAULT_MAX_RECEIVES)
        .map(|n| retry_backoff(n).as_secs())
        .sum();
    assert_eq!(total, 243);
}

/// Receives the one visible message of `kind`'s queue.
async fn receive_one(w: &World, kind: QueueKind) -> Delivery {
    let mut deliveries = w
        .engine
        .queue(kind)
        .receive(10, StdDuration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    deliveries.remove(0)
}

/// A triggered-only job (with `extra` fields), triggered once: one dispatch message waiting.
async fn triggered(w: &World, id: &str, extra: Value) {
    let mut body = json!({"timer": {"period": "external"}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    w.create(id, body).await;
    w.app()
        .trigger(
            &JobId::parse(id).unwrap(),
            json!({}),
            None,
            Default::default(),
        )
        .await
        .unwrap();
}

async fn handle(w: &World, kind: QueueKind, delivery: &Delivery) -> Handled {
    w.engine
        .handle_message(kind, &delivery.receipt, delivery, None)
        .await
}

/// A corrupt execution record: stored, but not an execution this build can read.
fn corrupt_execution(id: &str) -> ExecutionRecord {
    ExecutionRecord {
        execution_id: id.into(),
        job_id: "broken".into(),
        execute_number: 1,
        state: "Enqueued".into(),
        parent_job: None,
        parent_execution: None,
        created_at: t("2024-01-01T00:00:00Z"),
        version: 1,
        document: json!({"executionId": id, "state": "no such state"}),
    }
}

#[tokio::test]
async fn a_step_that_succeeds_is_done_and_left_for_its_receiver_to_delete() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    triggered(&w, "quick", json!({})).await;
    let delivery = receive_one(&w, QueueKind::Dispatch).await;
    assert_eq!(
        handle(&w, QueueKind::Dispatch, &delivery).await,
        Handled::Done
    );
    assert_eq!(w.calls().len(), 1);
    // Not acked by `handle_message`: the receipt still holds for the receiver's delete.
    w.engine
        .queue(QueueKind::Dispatch)
        .ack(&delivery.receipt)
        .await
        .unwrap();
}

#[tokio::test]
async fn undecodable_bodies_are_poison_on_both_queues() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    for (kind, body) in [
        (QueueKind::Dispatch, "{"),
        (QueueKind::Notify, r#"{"executionId": "x~t~1"}"#),
    ] {
        let queue = w.engine.queue(kind);
        queue.send(body, StdDuration::ZERO).await.unwrap();
        let delivery = receive_one(&w, kind).await;
        assert_eq!(handle(&w, kind, &delivery).await, Handled::DeadLettered);
        assert_eq!(queue.dead_letters(10).await.unwrap(), [body]);
        assert_eq!(queue.next_visible_in().await.unwrap(), None, "gone");
    }
}

#[tokio::test]
async fn corrupt_stored_data_is_poison() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    let store = w.app().store();
    assert!(store
        .create_execution(&corrupt_execution("broken~t~1"))
        .await
        .unwrap());
    let error = w.engine.dispatch("broken~t~1").await.unwrap_err();
    assert!(!error.is_retryable(), "{error:?}");
    assert!(
        matches!(&error, EngineError::App(AppError::Corrupt { message, source: Some(_) })
            if message.contains("broken~t~1")),
        "names the record and keeps the decoder's error: {error:?}"
    );

    w.engine
        .send_dispatch("broken~t~1", StdDuration::ZERO)
        .await
        .unwrap();
    let delivery = receive_one(&w, QueueKind::Dispatch).await;
    assert_eq!(
        handle(&w, QueueKind::Dispatch, &delivery).await,
        Handled::DeadLettered
    );
    assert_eq!(
        w.engine
            .queue(QueueKind::Dispatch)
            .dead_letters(10)
            .await
            .unwrap(),
        [r#"{"executionId":"broken~t~1"}"#]
    );
}

#[tokio::test]
async fn a_failed_step_comes_back_after_the_backoff_of_its_receive_count() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    triggered(&w, "flaky", json!({})).await;
    let queue = w.engine.queue(QueueKind::Dispatch);
    for receive_count in 1..=3 {
        let delivery = receive_one(&w, QueueKind::Dispatch).await;
        assert_eq!(delivery.receive_count, receive_count);
        w.app().store().fail_write(0);
        assert_eq!(
            handle(&w, QueueKind::Dispatch, &delivery).await,
            Handled::Retry
        );
        let backoff = retry_backoff(receive_count);
        assert_eq!(queue.next_visible_in().await.unwrap(), Some(backoff));
        w.clock.advance(Duration::from_std(backoff).unwrap());
    }
    assert!(queue.dead_letters(10).await.unwrap().is_empty());
    let delivery = receive_one(&w, QueueKind::Dispatch).await;
    assert_eq!(
        handle(&w, QueueKind::Dispatch, &delivery).await,
        Handled::Done
    );
}

#[tokio::test]
async fn a_panicking_step_is_a_failure_that_comes_back() {
    let w = World::new("2024-01-01T00:00:00Z", |request, _| {
        if request.url.contains("boom") {
            panic!("a bug in a step");
        }
        ok(json!({}))
    });
    triggered(
        &w,
        "boom",
        json!({"request": [{"method": "POST", "url": "service://main/boom"}]}),
    )
    .await;
    let delivery = receive_one(&w, QueueKind::Dispatch).await;
    assert_eq!(
        handle(&w, QueueKind::Dispatch, &delivery).await,
        Handled::Retry
    );
    assert_eq!(
        w.engine
            .queue(QueueKind::Dispatch)
            .next_visible_in()
            .await
            .unwrap(),
        Some(retry_backoff(1)),
        "back after the backoff, not lost"
    );
}

/// The local runner hands its messages to the same rule: a poison message is in the dead
/// letters at once, not after ten deliveries.
#[tokio::test(flavor = "multi_thread")]
async fn the_runner_moves_poison_to_the_dead_letters_at_once() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    assert!(w
        .app()
        .store()
        .create_execution(&corrupt_execution("broken~t~2"))
        .await
        .unwrap());
    let queue = w.engine.queue(QueueKind::Dispatch);
    queue
        .send("not a message", StdDuration::ZERO)
        .await
        .unwrap();
    w.engine
        .send_dispatch("broken~t~2", StdDuration::ZERO)
        .await
        .unwrap();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(runner::run(
        Arc::clone(&w.engine),
        RunnerOptions {
            max_idle: StdDuration::from_millis(10),
            ..RunnerOptions::default()
        },
        async move {
            let _ = stopped.await;
        },
    ));
    let mut dead = Vec::new();
    for _ in 0..200 {
        dead = queue.dead_letters(10).await.unwrap();
        if dead.len() == 2 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    let _ = stop.send(());
    running.await.unwrap();
    dead.sort();
    assert_eq!(
        dead,
        ["not a message", r#"{"executionId":"broken~t~2"}"#],
        "both dead-lettered on their first delivery"
    );
}
