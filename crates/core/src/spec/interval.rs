//! Fixed intervals aligned to the Unix epoch, as in Temporal.
//!
//! `every 6h offset 5h` fires at 05:00, 11:00, 17:00 and 23:00 UTC whatever the zone or the creation
//! time: alignment to the epoch (not to "now") is what makes the fire times of an interval a property
//! of the spec alone, so every tick, replica and restart computes the same ones.

use serde_json::{json, Value};

use super::calendar::LOCAL_LIMIT;
use crate::duration::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Interval {
    every: u64,
    offset: u64,
}

impl Interval {
    pub(crate) fn new(every: Duration, offset: Duration) -> Result<Self, String> {
        if !every.is_whole_seconds() || every.as_secs() == 0 {
            return Err(format!(
                "interval {every} must be a whole number of seconds, at least 1s"
            ));
        }
        if !offset.is_whole_seconds() {
            return Err(format!("offset {offset} must be a whole number of seconds"));
        }
        if offset >= every {
            return Err(format!(
                "offset {offset} must be less than the interval {every}"
            ));
        }
        Ok(Interval {
            every: every.as_secs(),
            offset: offset.as_secs(),
        })
    }

    /// `"6h/5h"` or `"45m"`.
    pub(crate) fn parse_compact(text: &str) -> Result<Self, String> {
        let (every, offset) = match text.split_once('/') {
            Some((e, o)) => (e, Some(o)),
            None => (text, None),
        };
        let every = Duration::parse(every)?;
        let offset = offset
            .map(Duration::parse)
            .transpose()?
            .unwrap_or(Duration::ZERO);
        Interval::new(every, offset)
    }

    /// The first fire strictly after `t`, within the evaluated span (until the end of 2100 UTC).
    pub(crate) fn next_after(self, t: i64) -> Option<i64> {
        let every = i64::try_from(self.every).ok()?;
        let offset = i64::try_from(self.offset).ok()?;
        let k = t.checked_sub(offset)?.div_euclid(every).checked_add(1)?;
        let next = k.checked_mul(every)?.checked_add(offset)?;
        (next < LOCAL_LIMIT).then_some(next)
    }

    /// The period and the offset from the epoch, in seconds.
    pub(crate) fn seconds(self) -> (u64, u64) {
        (self.every, self.offset)
    }

    pub(crate) fn to_json(self) -> Value {
        json!({ "every": Duration::from_secs(self.every).to_string(), "offset": Duration::from_secs(self.offset).to_string() })
    }
}
