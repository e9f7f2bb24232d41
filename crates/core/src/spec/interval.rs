//! Fixed intervals aligned to the Unix epoch, as in Temporal.
//!
//! `every 6h offset 5h` fires at 05:00, 11:00, 17:00 and 23:00 UTC whatever the zone or the creation
//! time: alignment to the epoch (not to "now") is what makes the fire times of an interval a property
//! of the spec alone, so every tick, replica and restart computes the same ones.

use serde_json::{json, Value};

use super::calendar::{FireFields, LOCAL_LIMIT};
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

    /// The wall-clock fields this interval's fires can take in a zone whose offsets are all whole
    /// minutes (`whole_minute_offsets`): a whole number of minutes apart, they all fall on the
    /// second of their offset, so an exclusion that covers that second skips them a minute (or
    /// more) at a time instead of fire by fire. Any other interval may fire at any second.
    pub(crate) fn fire_fields(self, whole_minute_offsets: bool) -> FireFields {
        if whole_minute_offsets && self.every.is_multiple_of(60) {
            FireFields {
                second: 1 << (self.offset % 60),
                ..FireFields::ANY
            }
        } else {
            FireFields::ANY
        }
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
