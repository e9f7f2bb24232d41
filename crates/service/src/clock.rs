//! The `Clock` port: where "now" comes from.
//!
//! Everything time-dependent takes its time from here, so tests drive schedules with a
//! [`ManualClock`] instead of sleeping.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;

    /// Waits until the clock shows `at`; at once if it already does. The default sleeps for the
    /// difference on the runtime's timer.
    fn sleep_until(&self, at: DateTime<Utc>) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let wait = (at - self.now()).to_std().unwrap_or_default();
        Box::pin(tokio::time::sleep(wait))
    }
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

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
