//! The SQLite queue against the shared queue conformance suite, and what only it promises: named
//! queues share a database without seeing each other, and messages outlive the process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use chrono::DateTime;
use sundial_embedded::SqliteStore;
use sundial_ports::conformance::queue::{run_all, MIN_MAX_RECEIVES};
use sundial_ports::memory::ManualClock;
use sundial_ports::queue::{Queue, QueueError};
use sundial_ports::store::WakeUpIndex;
use sundial_testkit::TempDir;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        DateTime::from_timestamp_millis(1_700_000_000_123).unwrap(),
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_queue_conforms() {
    run_all(|clock| {
        SqliteStore::in_memory()
            .expect("in-memory SQLite store")
            .queue("dispatch", clock)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_queue_conforms_with_few_receives() {
    run_all(|clock| {
        SqliteStore::in_memory()
            .expect("in-memory SQLite store")
            .queue("notify", clock)
            .with_max_receives(MIN_MAX_RECEIVES)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_file_queue_conforms() {
    let dir = TempDir::new("embedded-queue-conforms");
    let file = dir.path().join("sundial.db");
    let store = SqliteStore::open(&file).expect("open a file store");
    // Every case gets its own queue name in the one file, so cases start empty.
    let next = std::sync::atomic::AtomicUsize::new(0);
    run_all(|clock| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        store.queue(&format!("case-{n}"), clock)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn named_queues_are_independent() {
    let store = SqliteStore::in_memory().unwrap();
    let clock = clock();
    let dispatch = store.queue("dispatch", clock.clone()).with_max_receives(1);
    let notify = store.queue("notify", clock.clone());
    assert_eq!(dispatch.name(), "dispatch");

    dispatch.send("run e-1", Duration::ZERO).await.unwrap();
    notify
        .send("tell alice", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        notify.next_visible_in().await.unwrap(),
        Some(Duration::from_secs(5)),
        "notify sees only its own message"
    );
    assert!(notify
        .receive(10, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());

    let run = dispatch.receive(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].body, "run e-1");
    assert_eq!(
        notify.ack(&run[0].receipt).await,
        Err(QueueError::StaleReceipt),
        "a receipt of one queue is nothing to another"
    );
    assert_eq!(
        notify.postpone(&run[0].receipt, Duration::ZERO).await,
        Err(QueueError::StaleReceipt)
    );

    // Dead letters are per queue too.
    clock.advance(chrono::Duration::seconds(30));
    assert!(dispatch
        .receive(10, Duration::from_secs(30))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(dispatch.dead_letters(10).await.unwrap(), ["run e-1"]);
    assert!(notify.dead_letters(10).await.unwrap().is_empty());

    let tell = notify.receive(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(tell.len(), 1);
    assert_eq!(tell[0].body, "tell alice");
    notify.ack(&tell[0].receipt).await.unwrap();
    assert_eq!(notify.next_visible_in().await.unwrap(), None);
    assert_eq!(dispatch.next_visible_in().await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_survive_reopening_and_unacked_ones_come_back() {
    let dir = TempDir::new("embedded-queue-reopen");
    let file = dir.path().join("sundial.db");
    let clock = clock();
    let crashed_receipt = {
        let store = SqliteStore::open(&file).expect("open a new file store");
        let dispatch = store.queue("dispatch", clock.clone());
        dispatch.send("in flight", Duration::ZERO).await.unwrap();
        let taken = dispatch.receive(10, Duration::from_secs(30)).await.unwrap();
        assert_eq!(taken.len(), 1);
        dispatch.send("waiting", Duration::ZERO).await.unwrap();
        dispatch
            .send("delayed", Duration::from_secs(60))
            .await
            .unwrap();
        store
            .queue("notify", clock.clone())
            .send("notification", Duration::ZERO)
            .await
            .unwrap();
        // "Crash": everything is dropped without acking the message taken.
        taken[0].receipt.clone()
    };

    let store = SqliteStore::open(&file).expect("reopen the file store");
    let dispatch = store.queue("dispatch", clock.clone());
    let after_restart = dispatch.receive(10, Duration::from_secs(30)).await.unwrap();
    let bodies: Vec<&str> = after_restart.iter().map(|d| d.body.as_str()).collect();
    assert_eq!(
        bodies,
        ["waiting"],
        "the in-flight message stays hidden until its timeout, the delayed one until its delay"
    );
    dispatch.ack(&after_restart[0].receipt).await.unwrap();

    clock.advance(chrono::Duration::seconds(30));
    let redelivered = dispatch.receive(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(redelivered.len(), 1, "{redelivered:?}");
    assert_eq!(redelivered[0].body, "in flight");
    assert_eq!(
        redelivered[0].receive_count, 2,
        "the count survives the restart"
    );
    assert_ne!(redelivered[0].receipt, crashed_receipt);
    assert_eq!(
        dispatch.ack(&crashed_receipt).await,
        Err(QueueError::StaleReceipt),
        "the receipt from before the crash is stale once redelivered"
    );
    dispatch.ack(&redelivered[0].receipt).await.unwrap();

    clock.advance(chrono::Duration::seconds(30));
    let delayed = dispatch.receive(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(delayed.len(), 1);
    assert_eq!(delayed[0].body, "delayed");
    assert_eq!(delayed[0].receive_count, 1);

    let notify = store.queue("notify", clock.clone());
    let notification = notify.receive(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(notification.len(), 1);
    assert_eq!(notification[0].body, "notification");
}

#[tokio::test(flavor = "multi_thread")]
async fn ids_and_receipts_are_not_reused_after_reopening() {
    let dir = TempDir::new("embedded-queue-ids");
    let file = dir.path().join("sundial.db");
    let clock = clock();
    let first = {
        let store = SqliteStore::open(&file).unwrap();
        let queue = store.queue("dispatch", clock.clone());
        queue.send("one", Duration::ZERO).await.unwrap();
        let taken = queue.receive(1, Duration::ZERO).await.unwrap();
        queue.ack(&taken[0].receipt).await.unwrap();
        taken[0].receipt.clone()
    };
    let store = SqliteStore::open(&file).unwrap();
    let queue = store.queue("dispatch", clock.clone());
    queue.send("two", Duration::ZERO).await.unwrap();
    let taken = queue.receive(1, Duration::from_secs(30)).await.unwrap();
    assert_ne!(
        taken[0].receipt, first,
        "a deleted message's id is not reused"
    );
    assert_eq!(queue.ack(&first).await, Err(QueueError::StaleReceipt));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_version_1_file_gains_the_queue_tables() {
    let dir = TempDir::new("embedded-queue-upgrade");
    let file = dir.path().join("sundial.db");
    drop(SqliteStore::open(&file).unwrap());
    // Turn the file back into what a build before the queues wrote: schema version 1 (without
    // steps 3 to 8: jobs-list orders, labels, rollups, the audit trail, fleet summaries and run
    // search, newest undone first).
    let raw = rusqlite::Connection::open(&file).unwrap();
    raw.execute_batch(support::UNDO_RUN_SEARCH).unwrap();
    raw.execute_batch(support::UNDO_FLEET_HOURS).unwrap();
    raw.execute_batch(support::UNDO_AUDIT).unwrap();
    raw.execute_batch(support::UNDO_ROLLUPS).unwrap();
    raw.execute_batch(support::UNDO_JOB_ORDERS).unwrap();
    raw.execute_batch(
        "DROP TABLE queue_messages; DROP TABLE queue_dead_letters;
         UPDATE schema_version SET version = 1;
         INSERT INTO wakeups (key, due) VALUES ('job:kept', 1700000000000);",
    )
    .unwrap();
    drop(raw);

    let store = SqliteStore::open(&file).expect("a version-1 file is migrated");
    assert!(
        store.get_wakeup("job:kept").await.unwrap().is_some(),
        "the store's data survives the migration"
    );
    let queue = store.queue("dispatch", clock());
    queue.send("after upgrade", Duration::ZERO).await.unwrap();
    let taken = queue.receive(1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(taken[0].body, "after upgrade");
}
