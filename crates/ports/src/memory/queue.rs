//! The [`Queue`] port in memory, for fast tests of the engine.
//!
//! Time comes from an injected [`Clock`], never from the system: a test holding a
//! [`ManualClock`](super::ManualClock) drives delays and visibility timeouts by moving the
//! clock, without sleeping. One `std::sync::Mutex` guards all messages; every method takes it once
//! and never awaits while holding it, so each method is atomic.
//!
//! It mirrors the SQLite queue wherever the contract leaves room, so a test passing here behaves the
//! same on `sundial serve`:
//! - times are whole milliseconds (sub-millisecond delays round up, so a message is never visible
//!   early);
//! - visible messages are handed out in order of (visible since, send order), which is fair but not
//!   a promise of ordering;
//! - a receipt is `"{message id}:{receive count}"`, so each delivery has its own and the receipt
//!   of an earlier delivery is stale once the message has been received again;
//! - messages past [`Queue::max_receives`] are moved to the dead letters by the `receive` that would
//!   have delivered them once too often, and [`Queue::dead_letter`] moves one at once.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::Clock;
use crate::queue::{Delivery, Queue, QueueError, DEFAULT_MAX_RECEIVES, MAX_DELAY};

/// An in-memory [`Queue`]; each instance is a fresh, empty queue.
pub struct MemoryQueue {
    clock: Arc<dyn Clock>,
    max_receives: u32,
    data: Mutex<Data>,
}

#[derive(Debug, Default)]
struct Data {
    /// The id the next message gets; ids are never reused, so neither are receipts.
    next_id: u64,
    /// Live messages (waiting or in flight) by id, that is in send order.
    messages: BTreeMap<u64, Message>,
    /// Bodies of dead letters, in the order they died.
    dead: Vec<String>,
    /// Sends left before an injected failure ([`MemoryQueue::fail_send`]).
    fail_in: Option<usize>,
}

#[derive(Debug)]
struct Message {
    body: String,
    /// Milliseconds since the Unix epoch from which the message may be received.
    visible_at: i64,
    receive_count: u32,
    /// The receipt of the latest delivery; `None` before the first.
    receipt: Option<String>,
}

impl MemoryQueue {
    /// An empty queue reading the time from `clock`, with [`DEFAULT_MAX_RECEIVES`].
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        MemoryQueue {
            clock,
            max_receives: DEFAULT_MAX_RECEIVES,
            data: Mutex::new(Data::default()),
        }
    }

    /// The same queue with messages dead-lettered after `max_receives` deliveries (0 is read as 1).
    pub fn with_max_receives(mut self, max_receives: u32) -> Self {
        self.max_receives = max_receives.max(1);
        self
    }

    /// Makes the `n`th send from now (0: the next one) fail once, its message lost: what the
    /// queue sees of a process killed just before it sent.
    pub fn fail_send(&self, n: usize) {
        if let Ok(mut data) = self.data.lock() {
            data.fail_in = Some(n);
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Data>, QueueError> {
        self.data.lock().map_err(|_| {
            QueueError::unavailable("the memory queue was poisoned by an earlier panic")
        })
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }
}

impl fmt::Debug for MemoryQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let waiting = self.data.lock().map(|data| data.messages.len()).ok();
        f.debug_struct("MemoryQueue")
            .field("max_receives", &self.max_receives)
            .field("messages", &waiting)
            .finish_non_exhaustive()
    }
}

/// A duration in whole milliseconds, rounded up so nothing becomes visible early, saturating.
fn ceil_ms(duration: Duration) -> i64 {
    let ms = duration.as_nanos().div_ceil(1_000_000);
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// The receipt of a message's `receive_count`-th delivery.
fn receipt(id: u64, receive_count: u32) -> String {
    format!("{id}:{receive_count}")
}

/// The message id a receipt names, if it is one this queue could have written.
fn receipt_id(receipt: &str) -> Option<u64> {
    receipt.split_once(':')?.0.parse().ok()
}

impl Queue for MemoryQueue {
    async fn send(&self, body: &str, delay: Duration) -> Result<(), QueueError> {
        if delay > MAX_DELAY {
            return Err(QueueError::DelayTooLong(delay));
        }
        let visible_at = self.now_ms().saturating_add(ceil_ms(delay));
        let mut data = self.lock()?;
        match data.fail_in {
            Some(0) => {
                data.fail_in = None;
                return Err(QueueError::unavailable("injected send failure"));
            }
            Some(n) => data.fail_in = Some(n - 1),
            None => {}
        }
        let id = data.next_id;
        data.next_id += 1;
        data.messages.insert(
            id,
            Message {
                body: body.to_owned(),
                visible_at,
                receive_count: 0,
                receipt: None,
            },
        );
        Ok(())
    }

    async fn receive(&self, max: usize, visibility: Duration) -> Result<Vec<Delivery>, QueueError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let now = self.now_ms();
        let hidden_until = now.saturating_add(ceil_ms(visibility));
        let mut data = self.lock()?;
        let Data { messages, dead, .. } = &mut *data;

        let mut visible: Vec<(i64, u64)> = messages
            .iter()
            .filter(|(_, m)| m.visible_at <= now)
            .map(|(id, m)| (m.visible_at, *id))
            .collect();
        visible.sort_unstable();

        let mut deliveries = Vec::new();
        for (_, id) in visible {
            if deliveries.len() == max {
                break;
            }
            let Some(message) = messages.get_mut(&id) else {
                continue;
            };
            if message.receive_count >= self.max_receives {
                if let Some(message) = messages.remove(&id) {
                    dead.push(message.body);
                }
                continue;
            }
            message.receive_count += 1;
            message.visible_at = hidden_until;
            let handle = receipt(id, message.receive_count);
            message.receipt = Some(handle.clone());
            deliveries.push(Delivery {
                body: message.body.clone(),
                receipt: handle,
                receive_count: message.receive_count,
            });
        }
        Ok(deliveries)
    }

    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        let id = receipt_id(receipt).ok_or(QueueError::StaleReceipt)?;
        let mut data = self.lock()?;
        match data.messages.get(&id) {
            Some(message) if message.receipt.as_deref() == Some(receipt) => {
                data.messages.remove(&id);
                Ok(())
            }
            _ => Err(QueueError::StaleReceipt),
        }
    }

    async fn postpone(&self, receipt: &str, delay: Duration) -> Result<(), QueueError> {
        let id = receipt_id(receipt).ok_or(QueueError::StaleReceipt)?;
        let visible_at = self.now_ms().saturating_add(ceil_ms(delay));
        let mut data = self.lock()?;
        match data.messages.get_mut(&id) {
            Some(message) if message.receipt.as_deref() == Some(receipt) => {
                message.visible_at = visible_at;
                Ok(())
            }
            _ => Err(QueueError::StaleReceipt),
        }
    }

    async fn next_visible_in(&self) -> Result<Option<Duration>, QueueError> {
        let now = self.now_ms();
        let data = self.lock()?;
        let earliest = data.messages.values().map(|m| m.visible_at).min();
        Ok(earliest
            .map(|at| Duration::from_millis(u64::try_from(at.saturating_sub(now)).unwrap_or(0))))
    }

    /// Keeps the body only, as the SQLite queue does; the caller logs the reason.
    async fn dead_letter(&self, delivery: &Delivery, _reason: &str) -> Result<(), QueueError> {
        let id = receipt_id(&delivery.receipt).ok_or(QueueError::StaleReceipt)?;
        let mut data = self.lock()?;
        match data.messages.get(&id) {
            Some(message) if message.receipt.as_deref() == Some(delivery.receipt.as_str()) => {
                if let Some(message) = data.messages.remove(&id) {
                    data.dead.push(message.body);
                }
                Ok(())
            }
            _ => Err(QueueError::StaleReceipt),
        }
    }

    async fn dead_letters(&self, max: usize) -> Result<Vec<String>, QueueError> {
        Ok(self.lock()?.dead.iter().take(max).cloned().collect())
    }

    fn max_receives(&self) -> u32 {
        self.max_receives
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::ManualClock;

    fn queue(max_receives: u32) -> MemoryQueue {
        let start = chrono::DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
        MemoryQueue::new(Arc::new(ManualClock::new(start))).with_max_receives(max_receives)
    }

    #[tokio::test]
    async fn zero_max_receives_is_read_as_one() {
        let queue = queue(0);
        assert_eq!(queue.max_receives(), 1);
        queue.send("once", Duration::ZERO).await.unwrap();
        let first = queue.receive(10, Duration::ZERO).await.unwrap();
        assert_eq!(first.len(), 1, "delivered once");
        assert!(queue.receive(10, Duration::ZERO).await.unwrap().is_empty());
        assert_eq!(queue.dead_letters(10).await.unwrap(), ["once"]);
    }

    #[tokio::test]
    async fn receipts_name_message_and_delivery() {
        let queue = queue(5);
        queue.send("a", Duration::ZERO).await.unwrap();
        queue.send("b", Duration::ZERO).await.unwrap();
        let receipts: Vec<String> = queue
            .receive(10, Duration::ZERO)
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.receipt)
            .collect();
        assert_eq!(receipts, ["0:1", "1:1"]);
        let again = queue.receive(1, Duration::ZERO).await.unwrap();
        assert_eq!(again[0].receipt, "0:2");
    }
}
