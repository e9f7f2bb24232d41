//! The `Clock` port: where "now" comes from.
//!
//! Everything time-dependent takes its time from here, so tests drive schedules with a
//! [`ManualClock`](crate::memory::ManualClock) instead of sleeping.

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};

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

    /// Waits `wait` before trying a write again that lost a race: a pause of milliseconds that
    /// no schedule depends on. The default sleeps on the runtime's timer (virtual under tokio's
    /// paused time); a clock that moves only when told to yields instead, so racing writers in a
    /// simulation take turns without anyone moving the clock.
    fn back_off(&self, wait: std::time::Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
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
