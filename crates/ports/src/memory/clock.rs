//! A clock for tests and simulations: it moves only when told to, so schedules are driven without
//! sleeping.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

use crate::clock::Clock;

/// A clock that only moves when told to; [`Clock::sleep_until`] on it returns once it has been
/// moved far enough.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    moved: Notify,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        ManualClock {
            now: Mutex::new(start),
            moved: Notify::new(),
        }
    }

    /// Moves the clock to `to`.
    pub fn set(&self, to: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = to;
        self.moved.notify_waiters();
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: chrono::Duration) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) += by;
        self.moved.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Yields to the other tasks: the clock does not move by itself, so a real wait would last
    /// until a test moved it.
    fn back_off(
        &self,
        _wait: std::time::Duration,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::task::yield_now())
    }

    fn sleep_until(&self, at: DateTime<Utc>) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            loop {
                // Registered before looking, so a move in between still wakes us.
                let moved = self.moved.notified();
                tokio::pin!(moved);
                moved.as_mut().enable();
                if self.now() >= at {
                    return;
                }
                moved.await;
            }
        })
    }
}
