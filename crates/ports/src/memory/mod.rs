//! The ports in memory: fast, deterministic stand-ins for tests of the use cases, the engine and
//! the HTTP API. Each mirrors the SQLite adapter wherever the port's contract leaves room, and
//! passes the same conformance suites (`sundial_ports::conformance`).

mod clock;
mod events;
mod queue;
mod store;

pub use clock::ManualClock;
pub use events::{Published, RecordingPublisher};
pub use queue::MemoryQueue;
pub use store::MemoryStore;

#[cfg(test)]
mod tests {
    use super::{MemoryQueue, MemoryStore};
    use crate::conformance::queue::{self, MIN_MAX_RECEIVES};
    use crate::conformance::{rollups, store};

    #[tokio::test(flavor = "multi_thread")]
    async fn memory_store_conforms() {
        store::run_all(MemoryStore::new).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn memory_store_conforms_on_labels() {
        crate::conformance::labels::run_all(MemoryStore::new).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn memory_store_conforms_on_search() {
        crate::conformance::search::run_all(MemoryStore::new).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn memory_store_rollups_conform() {
        rollups::run_all(MemoryStore::new).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn memory_queue_conforms() {
        queue::run_all(|clock| MemoryQueue::new(clock)).await;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn memory_queue_conforms_with_few_receives() {
        queue::run_all(|clock| MemoryQueue::new(clock).with_max_receives(MIN_MAX_RECEIVES)).await;
    }
}
