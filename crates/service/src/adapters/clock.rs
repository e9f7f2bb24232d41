//! The real clock: the system's wall time.

use chrono::{DateTime, Utc};

use crate::ports::clock::Clock;

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}
