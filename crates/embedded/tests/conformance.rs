//! The SQLite store against the shared store conformance suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use sundial_embedded::SqliteStore;
use sundial_testkit::TempDir;

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_store_conforms() {
    sundial_ports::conformance::store::run_all(|| {
        SqliteStore::in_memory().expect("in-memory SQLite store")
    })
    .await;
}

/// On a file, reads go to a second, read-only connection beside the batching writer: the same
/// suite checks that a read sees every write answered before it.
#[tokio::test(flavor = "multi_thread")]
async fn sqlite_file_store_conforms() {
    let dir = TempDir::new("embedded-conformance");
    let next = std::sync::atomic::AtomicU32::new(0);
    sundial_ports::conformance::store::run_all(|| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SqliteStore::open(&dir.join(format!("case-{n}.db"))).expect("file SQLite store")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_store_conforms_on_labels() {
    sundial_ports::conformance::labels::run_all(|| {
        SqliteStore::in_memory().expect("in-memory SQLite store")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_store_conforms_on_search() {
    sundial_ports::conformance::search::run_all(|| {
        SqliteStore::in_memory().expect("in-memory SQLite store")
    })
    .await;
}

/// A search reads on the reader connection: it must see every write answered before it.
#[tokio::test(flavor = "multi_thread")]
async fn sqlite_file_store_conforms_on_search() {
    let dir = TempDir::new("embedded-search");
    let next = std::sync::atomic::AtomicU32::new(0);
    sundial_ports::conformance::search::run_all(|| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SqliteStore::open(&dir.join(format!("case-{n}.db"))).expect("file SQLite store")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_store_rollups_conform() {
    sundial_ports::conformance::rollups::run_all(|| {
        SqliteStore::in_memory().expect("in-memory SQLite store")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_file_store_rollups_conform() {
    let dir = TempDir::new("embedded-rollups");
    let next = std::sync::atomic::AtomicU32::new(0);
    sundial_ports::conformance::rollups::run_all(|| {
        let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SqliteStore::open(&dir.join(format!("case-{n}.db"))).expect("file SQLite store")
    })
    .await;
}
