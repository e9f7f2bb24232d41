//! Group commit per job. Concurrent tasks of this process that each need a read-modify-write of
//! the same job queue their items; whichever of them gets the job's turn applies every item
//! queued so far with one read and one write, and hands each task its result. Without it, the
//! runs of a backfill window, finishing together, would each lose the job's conditional write to
//! the others and retry: work quadratic in the window, and late fires for every other job while
//! the store is busy with it. Across processes (Lambda invocations) the conditional write still
//! decides; this only keeps one process from racing itself.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{oneshot, Mutex as AsyncMutex};

/// Items waiting for their job's turn, by job id.
pub(super) struct Batches<T, R> {
    queues: Mutex<HashMap<String, Arc<JobQueue<T, R>>>>,
}

struct JobQueue<T, R> {
    items: Mutex<Vec<(T, oneshot::Sender<R>)>>,
    turn: AsyncMutex<()>,
}

/// A plain lock whose holder cannot panic mid-update (pushes and takes only), so a poisoned one
/// is still consistent.
fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<T, R> Batches<T, R> {
    pub(super) fn new() -> Self {
        Batches {
            queues: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `item` for job `key` together with the items other tasks queued meanwhile. `apply`
    /// gets them in arrival order and answers one result per item, in the same order; it runs
    /// only in the task that holds the job's turn, which may be this one or another. `None` when
    /// the batch that took this item gave no answer for it (`apply` answered `None`, or its task
    /// was dropped): the caller then does its work alone.
    pub(super) async fn run<F, Fut>(&self, key: &str, item: T, apply: F) -> Option<R>
    where
        F: FnOnce(Vec<T>) -> Fut,
        Fut: Future<Output = Option<Vec<R>>>,
    {
        let queue = {
            let mut queues = lock(&self.queues);
            Arc::clone(queues.entry(key.to_string()).or_insert_with(|| {
                Arc::new(JobQueue {
                    items: Mutex::new(Vec::new()),
                    turn: AsyncMutex::new(()),
                })
            }))
        };
        let (answer, answered) = oneshot::channel();
        lock(&queue.items).push((item, answer));
        {
            let _turn = queue.turn.lock().await;
            let taken = std::mem::take(&mut *lock(&queue.items));
            // Empty when the task that held the turn before took this item with its own.
            if !taken.is_empty() {
                let (items, answers): (Vec<T>, Vec<oneshot::Sender<R>>) = taken.into_iter().unzip();
                if let Some(results) = apply(items).await {
                    for (answer, result) in answers.into_iter().zip(results) {
                        // The task that asked may be gone; its result then has no use.
                        let _ = answer.send(result);
                    }
                }
            }
        }
        self.forget_if_idle(key, &queue);
        answered.await.ok()
    }

    /// Drops a job's queue once no task holds or fills it, so the map holds only busy jobs.
    fn forget_if_idle(&self, key: &str, queue: &Arc<JobQueue<T, R>>) {
        let mut queues = lock(&self.queues);
        // Two holders: the map and the caller.
        if Arc::strong_count(queue) == 2 && lock(&queue.items).is_empty() {
            queues.remove(key);
        }
    }

    /// How many jobs have a queue (tests: idle queues are dropped).
    #[cfg(test)]
    fn busy_jobs(&self) -> usize {
        lock(&self.queues).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Tasks that queue while another holds the job's turn are applied together, each gets its
    /// own result, and the queue is dropped once idle.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_items_of_one_job_are_applied_in_few_batches() {
        let batches = Arc::new(Batches::<usize, usize>::new());
        let calls = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let batches = Arc::clone(&batches);
                let calls = Arc::clone(&calls);
                tokio::spawn(async move {
                    batches
                        .run("job", i, |items| async move {
                            calls.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                            Some(items.iter().map(|i| i * 10).collect())
                        })
                        .await
                })
            })
            .collect();
        for (i, task) in tasks.into_iter().enumerate() {
            assert_eq!(task.await.unwrap(), Some(i * 10));
        }
        let calls = calls.load(Ordering::SeqCst);
        assert!(calls < 200, "{calls} batches for 200 items");
        assert_eq!(batches.busy_jobs(), 0);
    }

    /// A batch that gives no answer leaves each of its callers to work alone.
    #[tokio::test]
    async fn a_batch_without_answers_answers_none() {
        let batches = Batches::<u8, u8>::new();
        let got = batches.run("job", 1, |_| async { None }).await;
        assert_eq!(got, None);
        assert_eq!(batches.busy_jobs(), 0);
    }
}
