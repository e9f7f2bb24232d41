//! The in-memory queue against the shared queue conformance suite.

use sundial_service::queue::conformance::{self, MIN_MAX_RECEIVES};
use sundial_service::queue::MemoryQueue;

#[tokio::test(flavor = "multi_thread")]
async fn memory_queue_conforms() {
    conformance::run_all(|clock| MemoryQueue::new(clock)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_queue_conforms_with_few_receives() {
    conformance::run_all(|clock| MemoryQueue::new(clock).with_max_receives(MIN_MAX_RECEIVES)).await;
}
