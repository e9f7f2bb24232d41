//! The in-memory store against the shared store conformance suite.

use sundial_service::store::{conformance, MemoryStore};

#[tokio::test(flavor = "multi_thread")]
async fn memory_store_conforms() {
    conformance::run_all(MemoryStore::new).await;
}
