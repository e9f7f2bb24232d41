//! The `Queue` contract, executable: every adapter's tests call [`run_all`] with a factory of fresh,
//! empty queues, so the in-memory queue, the embedded SQLite queue and the SQS queue are held to the
//! same behaviour — the behaviour of SQS, which is all the engine may rely on.
//!
//! Each case gets its own [`ManualClock`] (starting at a fixed instant) and a queue built on it by
//! the factory, and runs in its own tokio task; a failing case does not stop the others, and the
//! final panic lists every failed case by name with its message. Time only moves when a case moves
//! the clock, so delays and visibility timeouts are tested exactly, without sleeping.
//!
//! What the suite pins where the trait's doc comments leave room:
//! - **Times** have millisecond precision: a message sent with delay `d` at `t` is hidden at
//!   `t + d - 1 ms` and visible at `t + d`; the same for a visibility timeout and a postponement.
//! - **Receipts** are per delivery: each receive of a message hands out a new receipt, and the
//!   previous one is `StaleReceipt` from then on. Until the message is received again, its receipt
//!   stays valid, even after the visibility timeout expired, and across a postponement. An acked
//!   message's receipt, and anything that is not a receipt, are `StaleReceipt`.
//! - **Dead letters** are moved by the receive that would deliver a message for the
//!   `max_receives + 1`-th time; that receive returns the other visible messages instead, and
//!   [`Queue::dead_letters`] lists bodies in the order they became dead letters.
//!   [`Queue::dead_letter`] moves a received message at once, with its latest receipt only.
//! - **`next_visible_in`** counts every live message, in flight ones included (they come back when
//!   their timeout expires), is zero when one is visible now, and `None` for an empty queue.
//! - **Bodies** round-trip exactly (unicode, quotes, newlines, JSON).
//!
//! Ordering is never checked: SQS does not keep it.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Barrier;

use super::store::run_case;
use crate::memory::ManualClock;
use crate::queue::{Delivery, Queue, QueueError, MAX_DELAY};

/// Runs every case of the suite, each against a fresh queue that `make_queue` builds on the case's
/// own [`ManualClock`], and panics naming every case that failed.
///
/// Call it from a multi-threaded tokio test so the concurrency case races for real:
///
/// ```ignore
/// #[tokio::test(flavor = "multi_thread")]
/// async fn conforms() {
///     sundial_ports::conformance::queue::run_all(|clock| MyQueue::new(clock)).await;
/// }
/// ```
///
/// The cases that redeliver a message need three deliveries before it dies, so the factory's queues
/// must have [`Queue::max_receives`] of at least [`MIN_MAX_RECEIVES`]; the dead-letter case uses
/// whatever limit they report.
pub async fn run_all<Q: Queue, F: Fn(Arc<ManualClock>) -> Q>(make_queue: F) {
    let probe = make_queue(Arc::new(ManualClock::new(start()))).max_receives();
    assert!(
        probe >= MIN_MAX_RECEIVES,
        "queue conformance needs max_receives() >= {MIN_MAX_RECEIVES}, the factory gives {probe}"
    );
    let mut failures: Vec<String> = Vec::new();
    macro_rules! run {
        ($($case:ident),* $(,)?) => {
            $({
                let clock = Arc::new(ManualClock::new(start()));
                let queue = make_queue(Arc::clone(&clock));
                run_case(stringify!($case), $case(queue, clock), &mut failures).await;
            })*
        };
    }
    run!(
        send_receive_ack,
        bodies_round_trip,
        empty_queue_answers_at_once,
        delay_hides_until_due,
        batches_keep_each_delay,
        delay_longer_than_max_rejected,
        visibility_timeout_redelivers,
        stale_receipt_rejected,
        receipt_valid_until_next_receive,
        postpone_moves_visibility,
        max_respected,
        at_least_once,
        dead_letters_after_max_receives,
        dead_letter_moves_a_message_at_once,
        next_visible_in,
        concurrent_senders_and_receivers,
    );
    if !failures.is_empty() {
        panic!(
            "queue conformance: {} case(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

/// The least [`Queue::max_receives`] the suite's queues may have (see [`run_all`]).
pub const MIN_MAX_RECEIVES: u32 = 3;

// ---------------------------------------------------------------------------------------------
// Fixtures

/// 2024-03-10T12:34:56.789Z: a fixed instant with a non-zero millisecond part.
const BASE_MS: i64 = 1_710_074_096_789;

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(BASE_MS).expect("fixture time in range")
}

const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

const fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Moves the clock forward by `by`.
fn advance(clock: &ManualClock, by: Duration) {
    clock.advance(chrono::Duration::from_std(by).expect("advance fits chrono"));
}

async fn send<Q: Queue>(queue: &Q, body: &str, delay: Duration) {
    queue
        .send(body, delay)
        .await
        .unwrap_or_else(|err| panic!("send({body:?}, {delay:?}) failed: {err}"));
}

async fn receive<Q: Queue>(queue: &Q, max: usize, visibility: Duration) -> Vec<Delivery> {
    let deliveries = queue
        .receive(max, visibility)
        .await
        .unwrap_or_else(|err| panic!("receive({max}, {visibility:?}) failed: {err}"));
    assert!(
        deliveries.len() <= max,
        "receive({max}, …) returned {} messages",
        deliveries.len()
    );
    deliveries
}

/// Receives exactly one message, panicking with `what` otherwise.
async fn receive_one<Q: Queue>(queue: &Q, visibility: Duration, what: &str) -> Delivery {
    let mut deliveries = receive(queue, 10, visibility).await;
    assert_eq!(
        deliveries.len(),
        1,
        "{what}: expected exactly one message, got {deliveries:?}"
    );
    deliveries.remove(0)
}

async fn assert_empty<Q: Queue>(queue: &Q, what: &str) {
    let deliveries = receive(queue, 10, secs(30)).await;
    assert!(
        deliveries.is_empty(),
        "{what}: expected no visible message, got {deliveries:?}"
    );
}

async fn ack<Q: Queue>(queue: &Q, receipt: &str) {
    queue
        .ack(receipt)
        .await
        .unwrap_or_else(|err| panic!("ack({receipt:?}) of the latest delivery failed: {err}"));
}

async fn next_in<Q: Queue>(queue: &Q) -> Option<Duration> {
    queue
        .next_visible_in()
        .await
        .unwrap_or_else(|err| panic!("next_visible_in failed: {err}"))
}

fn bodies(deliveries: &[Delivery]) -> Vec<String> {
    let mut bodies: Vec<String> = deliveries.iter().map(|d| d.body.clone()).collect();
    bodies.sort();
    bodies
}

// ---------------------------------------------------------------------------------------------
// Cases

async fn send_receive_ack<Q: Queue>(queue: Q, _clock: Arc<ManualClock>) {
    send(&queue, r#"{"executionId":"e-1"}"#, Duration::ZERO).await;
    let delivery = receive_one(&queue, secs(30), "a message sent without delay").await;
    assert_eq!(delivery.body, r#"{"executionId":"e-1"}"#, "body as sent");
    assert_eq!(
        delivery.receive_count, 1,
        "first delivery has receive_count 1"
    );
    assert!(!delivery.receipt.is_empty(), "a receipt is never empty");
    assert_empty(&queue, "a received message is hidden for its visibility").await;
    ack(&queue, &delivery.receipt).await;
    assert_eq!(
        queue.ack(&delivery.receipt).await,
        Err(QueueError::StaleReceipt),
        "acking twice: the second ack finds the message deleted"
    );
    assert_eq!(next_in(&queue).await, None, "an acked message is gone");
}

async fn bodies_round_trip<Q: Queue>(queue: Q, _clock: Arc<ManualClock>) {
    let sent = [
        r#"{"kind":"dispatch","executionId":"nightly-1","attempt":3}"#.to_owned(),
        "Rémi's report ✓ — \"quoted\", with\nnewline and\ttab 🚀".to_owned(),
        "x".repeat(10_000),
        " leading and trailing spaces ".to_owned(),
    ];
    for body in &sent {
        send(&queue, body, Duration::ZERO).await;
    }
    let deliveries = receive(&queue, 10, secs(30)).await;
    let mut expected = sent.to_vec();
    expected.sort();
    assert_eq!(bodies(&deliveries), expected, "bodies come back exactly");
}

async fn empty_queue_answers_at_once<Q: Queue>(queue: Q, _clock: Arc<ManualClock>) {
    let answer = tokio::time::timeout(secs(5), queue.receive(10, secs(30))).await;
    let deliveries = answer
        .expect("receive on an empty queue must answer at once, not wait for messages")
        .expect("receive on an empty queue");
    assert!(deliveries.is_empty(), "empty queue gave {deliveries:?}");
    assert_eq!(
        next_in(&queue).await,
        None,
        "next_visible_in of an empty queue"
    );
    assert_eq!(
        queue.dead_letters(10).await.expect("dead_letters"),
        Vec::<String>::new(),
        "a new queue has no dead letters"
    );
}

async fn delay_hides_until_due<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    send(&queue, "later", secs(90)).await;
    send(&queue, "max", MAX_DELAY).await;
    assert_empty(&queue, "right after sending with a delay").await;
    advance(&clock, secs(90) - millis(1));
    assert_empty(&queue, "1 ms before the delay ends").await;
    advance(&clock, millis(1));
    let delivery = receive_one(&queue, secs(30), "when the delay ends").await;
    assert_eq!(delivery.body, "later");
    ack(&queue, &delivery.receipt).await;
    advance(&clock, secs(3600));
    let delivery = receive_one(&queue, secs(30), "long after the delay ends").await;
    assert_eq!(
        delivery.body, "max",
        "a delay of exactly MAX_DELAY is accepted"
    );
}

async fn batches_keep_each_delay<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    let batch: Vec<(String, Duration)> = (0..12)
        .map(|i| (format!("now-{i}"), Duration::ZERO))
        .chain([("later".to_owned(), secs(5))])
        .collect();
    queue.send_batch(&batch).await.expect("send_batch");
    let mut now = Vec::new();
    for _ in 0..4 {
        now.extend(
            receive(&queue, 10, secs(30))
                .await
                .into_iter()
                .map(|d| d.body),
        );
    }
    now.sort();
    let mut want: Vec<String> = (0..12).map(|i| format!("now-{i}")).collect();
    want.sort();
    assert_eq!(now, want, "every undelayed message of the batch, once");
    advance(&clock, secs(5));
    let delivery = receive_one(&queue, secs(30), "the delayed one after its delay").await;
    assert_eq!(delivery.body, "later");
}

async fn delay_longer_than_max_rejected<Q: Queue>(queue: Q, _clock: Arc<ManualClock>) {
    let too_long = MAX_DELAY + millis(1);
    assert_eq!(
        queue.send("too late", too_long).await,
        Err(QueueError::DelayTooLong(too_long)),
        "a delay past MAX_DELAY is refused"
    );
    assert_eq!(
        queue.send("far too late", secs(86_400)).await,
        Err(QueueError::DelayTooLong(secs(86_400))),
        "a day's delay is refused"
    );
    assert_eq!(
        next_in(&queue).await,
        None,
        "a refused message is not queued"
    );
}

async fn visibility_timeout_redelivers<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    send(&queue, "work", Duration::ZERO).await;
    let first = receive_one(&queue, secs(30), "first delivery").await;
    advance(&clock, secs(30) - millis(1));
    assert_empty(&queue, "1 ms before the visibility timeout ends").await;
    advance(&clock, millis(1));
    let second = receive_one(&queue, secs(30), "after the visibility timeout").await;
    assert_eq!(second.body, "work");
    assert_eq!(
        second.receive_count, 2,
        "a redelivery counts the earlier one"
    );
    assert_ne!(
        second.receipt, first.receipt,
        "each delivery has its own receipt"
    );
    assert_empty(&queue, "the redelivered message is hidden again").await;
    advance(&clock, secs(30));
    let third = receive_one(&queue, secs(30), "after the second timeout").await;
    assert_eq!(third.receive_count, 3);
    ack(&queue, &third.receipt).await;
    advance(&clock, secs(60));
    assert_empty(&queue, "an acked message never comes back").await;
}

async fn stale_receipt_rejected<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    send(&queue, "work", Duration::ZERO).await;
    let first = receive_one(&queue, secs(10), "first delivery").await;
    advance(&clock, secs(10));
    let second = receive_one(&queue, secs(10), "redelivery").await;
    assert_eq!(
        queue.ack(&first.receipt).await,
        Err(QueueError::StaleReceipt),
        "the receipt of an earlier delivery cannot ack"
    );
    assert_eq!(
        queue.postpone(&first.receipt, secs(1)).await,
        Err(QueueError::StaleReceipt),
        "the receipt of an earlier delivery cannot postpone"
    );
    for garbage in ["", "nonsense", "0", "0:0", "999999:1", ":", "1:1:1"] {
        if garbage == second.receipt {
            continue;
        }
        assert_eq!(
            queue.ack(garbage).await,
            Err(QueueError::StaleReceipt),
            "ack of unknown receipt {garbage:?}"
        );
        assert_eq!(
            queue.postpone(garbage, secs(1)).await,
            Err(QueueError::StaleReceipt),
            "postpone of unknown receipt {garbage:?}"
        );
    }
    assert_empty(&queue, "a rejected ack or postpone changes nothing").await;
    ack(&queue, &second.receipt).await;
    assert_eq!(
        queue.postpone(&second.receipt, secs(1)).await,
        Err(QueueError::StaleReceipt),
        "the receipt of an acked message cannot postpone"
    );
    assert_eq!(next_in(&queue).await, None, "the latest receipt acked it");
}

async fn receipt_valid_until_next_receive<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    send(&queue, "slow", Duration::ZERO).await;
    let delivery = receive_one(&queue, secs(10), "first delivery").await;
    advance(&clock, secs(25));
    // The timeout has expired but nobody received the message since: the receipt still holds.
    ack(&queue, &delivery.receipt).await;
    assert_empty(
        &queue,
        "acked after its timeout, before anyone else took it",
    )
    .await;
    assert_eq!(next_in(&queue).await, None);
}

async fn postpone_moves_visibility<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    send(&queue, "retry soon", Duration::ZERO).await;
    send(&queue, "retry later", Duration::ZERO).await;
    let deliveries = receive(&queue, 10, secs(60)).await;
    assert_eq!(
        bodies(&deliveries),
        ["retry later", "retry soon"],
        "both sent"
    );
    let receipt_of = |body: &str| {
        deliveries
            .iter()
            .find(|d| d.body == body)
            .map(|d| d.receipt.clone())
            .expect("delivered")
    };
    let (soon, later) = (receipt_of("retry soon"), receipt_of("retry later"));

    // Shorter than the visibility timeout: the message comes back early.
    queue
        .postpone(&soon, secs(5))
        .await
        .expect("postpone within the visibility timeout");
    // Longer than the visibility timeout: the message stays hidden past it.
    queue
        .postpone(&later, secs(120))
        .await
        .expect("postpone past the visibility timeout");

    advance(&clock, secs(5) - millis(1));
    assert_empty(&queue, "1 ms before the short postponement ends").await;
    advance(&clock, millis(1));
    let again = receive_one(&queue, secs(600), "when the short postponement ends").await;
    assert_eq!(again.body, "retry soon");
    assert_eq!(
        again.receive_count, 2,
        "a postponed message counts deliveries"
    );
    ack(&queue, &again.receipt).await;

    advance(&clock, secs(60));
    assert_empty(
        &queue,
        "after the visibility timeout but before the long postponement ends",
    )
    .await;
    // The receipt survives a postponement: postponing again (to now) and acking both work.
    queue
        .postpone(&later, Duration::ZERO)
        .await
        .expect("a postponed message's receipt stays valid");
    let now_visible = receive_one(&queue, secs(30), "after postponing to now").await;
    assert_eq!(now_visible.body, "retry later");
    assert_eq!(
        queue.ack(&later).await,
        Err(QueueError::StaleReceipt),
        "the receipt from before the redelivery is stale"
    );
    ack(&queue, &now_visible.receipt).await;
    assert_eq!(next_in(&queue).await, None);
}

async fn max_respected<Q: Queue>(queue: Q, _clock: Arc<ManualClock>) {
    for i in 0..5 {
        send(&queue, &format!("m{i}"), Duration::ZERO).await;
    }
    assert!(
        receive(&queue, 0, secs(30)).await.is_empty(),
        "receive(0) returns nothing"
    );
    let mut seen = Vec::new();
    for expected in [2, 2, 1, 0] {
        let batch = receive(&queue, 2, secs(30)).await;
        assert_eq!(
            batch.len(),
            expected,
            "receive(2) with {} visible",
            5 - seen.len()
        );
        seen.extend(batch);
    }
    assert_eq!(
        bodies(&seen),
        ["m0", "m1", "m2", "m3", "m4"],
        "every message once"
    );
}

async fn at_least_once<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    const COUNT: usize = 100;
    for i in 0..COUNT {
        send(&queue, &format!("msg-{i:03}"), Duration::ZERO).await;
    }
    // Receive everything in small batches, acking only the even messages: a "crash" on the rest.
    let mut first_round = Vec::new();
    loop {
        let batch = receive(&queue, 7, secs(30)).await;
        if batch.is_empty() {
            break;
        }
        for delivery in batch {
            assert_eq!(delivery.receive_count, 1, "{} first round", delivery.body);
            let n: usize = delivery.body["msg-".len()..].parse().expect("body as sent");
            if n.is_multiple_of(2) {
                ack(&queue, &delivery.receipt).await;
            }
            first_round.push(delivery);
        }
        assert!(
            first_round.len() <= COUNT,
            "more deliveries than messages before any timeout"
        );
    }
    let expected: Vec<String> = (0..COUNT).map(|i| format!("msg-{i:03}")).collect();
    assert_eq!(
        bodies(&first_round),
        expected,
        "each message delivered exactly once before any timeout"
    );

    advance(&clock, secs(30));
    let mut second_round = Vec::new();
    loop {
        let batch = receive(&queue, 7, secs(30)).await;
        if batch.is_empty() {
            break;
        }
        for delivery in batch {
            assert_eq!(delivery.receive_count, 2, "{} second round", delivery.body);
            ack(&queue, &delivery.receipt).await;
            second_round.push(delivery);
        }
        assert!(
            second_round.len() <= COUNT / 2,
            "duplicates in the redelivery"
        );
    }
    let unacked: Vec<String> = (0..COUNT)
        .filter(|i| i % 2 == 1)
        .map(|i| format!("msg-{i:03}"))
        .collect();
    assert_eq!(
        bodies(&second_round),
        unacked,
        "exactly the un-acked messages are redelivered"
    );
    advance(&clock, secs(60));
    assert_empty(&queue, "everything was acked").await;
    assert_eq!(next_in(&queue).await, None);
}

async fn dead_letters_after_max_receives<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    let max = queue.max_receives();
    assert!(max >= 1, "max_receives is at least 1, got {max}");

    // Deliver `body` max times without acking, then check the next receive dead-letters it.
    async fn exhaust<Q: Queue>(queue: &Q, clock: &ManualClock, body: &str, max: u32) {
        for count in 1..=max {
            let delivery = receive_one(queue, secs(10), &format!("{body} delivery {count}")).await;
            assert_eq!(delivery.body, body);
            assert_eq!(delivery.receive_count, count);
            advance(clock, secs(10));
        }
    }

    send(&queue, "poison-1", Duration::ZERO).await;
    exhaust(&queue, &clock, "poison-1", max).await;
    assert_eq!(
        queue.dead_letters(10).await.expect("dead_letters"),
        Vec::<String>::new(),
        "not dead before the receive that would exceed max_receives"
    );
    send(&queue, "healthy", Duration::ZERO).await;
    let delivery = receive_one(&queue, secs(10), "past max_receives").await;
    assert_eq!(
        delivery.body,
        "healthy",
        "the poison message is not delivered a {}th time; other messages are",
        max + 1
    );
    ack(&queue, &delivery.receipt).await;
    assert_eq!(
        queue.dead_letters(10).await.expect("dead_letters"),
        ["poison-1"],
        "the poison message is a dead letter"
    );
    assert_eq!(
        next_in(&queue).await,
        None,
        "a dead letter is not waiting to be delivered"
    );
    advance(&clock, secs(600));
    assert_empty(&queue, "a dead letter never comes back").await;

    send(&queue, "poison-2", Duration::ZERO).await;
    exhaust(&queue, &clock, "poison-2", max).await;
    assert_empty(&queue, "the second poison message past max_receives").await;
    assert_eq!(
        queue.dead_letters(10).await.expect("dead_letters"),
        ["poison-1", "poison-2"],
        "dead letters in the order they died"
    );
    assert_eq!(
        queue.dead_letters(1).await.expect("dead_letters"),
        ["poison-1"],
        "dead_letters(1) gives the oldest"
    );
    assert!(
        queue
            .dead_letters(0)
            .await
            .expect("dead_letters")
            .is_empty(),
        "dead_letters(0) gives none"
    );
}

async fn dead_letter_moves_a_message_at_once<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    send(&queue, "poison", Duration::ZERO).await;
    send(&queue, "healthy", secs(5)).await;
    let poison = receive_one(&queue, secs(10), "the poison message").await;
    queue
        .dead_letter(&poison, "does not decode")
        .await
        .unwrap_or_else(|err| panic!("dead_letter of the latest delivery failed: {err}"));
    assert_eq!(
        queue.dead_letters(10).await.expect("dead_letters"),
        ["poison"],
        "a dead letter on its first delivery"
    );
    assert_eq!(
        next_in(&queue).await,
        Some(secs(5)),
        "only the healthy message is waiting"
    );
    advance(&clock, secs(60));
    let healthy = receive_one(&queue, secs(10), "the healthy message, not the poison").await;
    assert_eq!(healthy.body, "healthy");
    assert_eq!(
        queue.ack(&poison.receipt).await,
        Err(QueueError::StaleReceipt),
        "a dead-lettered message's receipt cannot ack"
    );
    assert_eq!(
        queue.dead_letter(&poison, "again").await,
        Err(QueueError::StaleReceipt),
        "nor dead-letter it twice"
    );

    // An earlier delivery's receipt cannot dead-letter what another receiver holds now.
    advance(&clock, secs(10));
    let again = receive_one(&queue, secs(10), "the healthy message, redelivered").await;
    assert_eq!(
        queue.dead_letter(&healthy, "stale").await,
        Err(QueueError::StaleReceipt),
        "the receipt of an earlier delivery cannot dead-letter"
    );
    ack(&queue, &again.receipt).await;
    assert_eq!(
        queue.dead_letters(10).await.expect("dead_letters"),
        ["poison"],
        "a refused dead_letter moves nothing"
    );
}

async fn next_visible_in<Q: Queue>(queue: Q, clock: Arc<ManualClock>) {
    assert_eq!(next_in(&queue).await, None, "empty queue");
    send(&queue, "delayed", secs(10)).await;
    assert_eq!(next_in(&queue).await, Some(secs(10)), "one delayed message");
    advance(&clock, secs(4));
    assert_eq!(
        next_in(&queue).await,
        Some(secs(6)),
        "counts down with the clock"
    );
    send(&queue, "now", Duration::ZERO).await;
    assert_eq!(
        next_in(&queue).await,
        Some(Duration::ZERO),
        "a visible message: zero"
    );
    let now = receive_one(&queue, secs(30), "the undelayed message").await;
    assert_eq!(now.body, "now");
    assert_eq!(
        next_in(&queue).await,
        Some(secs(6)),
        "the delayed message is due before the in-flight one returns"
    );
    advance(&clock, secs(6));
    let delayed = receive_one(&queue, secs(60), "the delayed message").await;
    assert_eq!(delayed.body, "delayed");
    assert_eq!(
        next_in(&queue).await,
        Some(secs(24)),
        "in-flight messages count: the first returns 30 s after it was received"
    );
    ack(&queue, &now.receipt).await;
    assert_eq!(
        next_in(&queue).await,
        Some(secs(60)),
        "after acking the earlier one"
    );
    ack(&queue, &delayed.receipt).await;
    assert_eq!(next_in(&queue).await, None, "all acked");
}

async fn concurrent_senders_and_receivers<Q: Queue>(queue: Q, _clock: Arc<ManualClock>) {
    const SENDERS: usize = 4;
    const RECEIVERS: usize = 4;
    const PER_SENDER: usize = 50;
    const TOTAL: usize = SENDERS * PER_SENDER;

    let queue = Arc::new(queue);
    let barrier = Arc::new(Barrier::new(SENDERS + RECEIVERS));
    let acked = Arc::new(AtomicUsize::new(0));

    let mut senders = Vec::new();
    for s in 0..SENDERS {
        let (queue, barrier) = (Arc::clone(&queue), Arc::clone(&barrier));
        senders.push(tokio::spawn(async move {
            barrier.wait().await;
            for i in 0..PER_SENDER {
                send(&*queue, &format!("s{s}-{i:03}"), Duration::ZERO).await;
            }
        }));
    }
    let mut receivers = Vec::new();
    for _ in 0..RECEIVERS {
        let (queue, barrier, acked) =
            (Arc::clone(&queue), Arc::clone(&barrier), Arc::clone(&acked));
        receivers.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut got = Vec::new();
            while acked.load(Ordering::SeqCst) < TOTAL {
                // The clock never moves, so nothing times out: each message is delivered once.
                let batch = receive(&*queue, 3, secs(30)).await;
                if batch.is_empty() {
                    tokio::time::sleep(millis(1)).await;
                    continue;
                }
                for delivery in batch {
                    assert_eq!(
                        delivery.receive_count, 1,
                        "{} redelivered without a timeout",
                        delivery.body
                    );
                    ack(&*queue, &delivery.receipt).await;
                    acked.fetch_add(1, Ordering::SeqCst);
                    got.push(delivery.body);
                }
            }
            got
        }));
    }

    let aborts: Vec<_> = senders
        .iter()
        .map(|task| task.abort_handle())
        .chain(receivers.iter().map(|task| task.abort_handle()))
        .collect();
    let all = async {
        for sender in senders {
            sender.await.expect("sender task");
        }
        let mut got = Vec::new();
        for receiver in receivers {
            got.extend(receiver.await.expect("receiver task"));
        }
        got
    };
    let got = tokio::time::timeout(secs(60), all)
        .await
        .unwrap_or_else(|_| {
            aborts.iter().for_each(|task| task.abort());
            panic!(
                "messages were lost: only {} of {TOTAL} acked within 60 s",
                acked.load(Ordering::SeqCst)
            )
        });

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for body in &got {
        *counts.entry(body.as_str()).or_insert(0) += 1;
    }
    let duplicates: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicates.is_empty(), "delivered twice: {duplicates:?}");
    let expected: Vec<String> = (0..SENDERS)
        .flat_map(|s| (0..PER_SENDER).map(move |i| format!("s{s}-{i:03}")))
        .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort();
    let mut expected_sorted = expected;
    expected_sorted.sort();
    assert_eq!(got_sorted, expected_sorted, "every message delivered once");
    assert_empty(&*queue, "all acked").await;
    assert_eq!(next_in(&*queue).await, None);
}
