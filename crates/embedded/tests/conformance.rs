//! The SQLite store against the shared store conformance suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use sundial_embedded::SqliteStore;

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_store_conforms() {
    sundial_service::store::conformance::run_all(|| {
        SqliteStore::in_memory().expect("in-memory SQLite store")
    })
    .await;
}
