//! A time zone as a list of offset changes between 2000 and 2100.
//!
//! DST policies are decided per transition (is this wall time in a gap, or in the first or second
//! pass of an overlap?), so the evaluator needs the transitions themselves. chrono-tz only answers
//! "what is the offset at this instant", so the transitions are found once per zone by probing daily
//! and bisecting to the second, then cached for the life of the process (zone data is compiled in,
//! so it never changes under us).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Offset, TimeZone};
use chrono_tz::Tz;

use super::civil::{days_from_civil, DAY};

/// A change of UTC offset at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transition {
    /// The first instant (Unix seconds) with the new offset.
    pub at: i64,
    /// Offset in seconds east of UTC before `at`.
    pub before: i32,
    /// Offset in seconds east of UTC from `at` on.
    pub after: i32,
}

impl Transition {
    /// Wall-clock times skipped: the clock jumps forward.
    pub(super) fn is_gap(&self) -> bool {
        self.after > self.before
    }
    /// Wall-clock times repeated: the clock falls back.
    pub(super) fn is_overlap(&self) -> bool {
        self.after < self.before
    }
}

/// The offsets of one zone over the evaluated span.
#[derive(Debug)]
pub(crate) struct ZoneRules {
    pub tz: Tz,
    pub transitions: Vec<Transition>,
    initial_offset: i32,
    pub min_offset: i32,
    pub max_offset: i32,
    /// Every offset over the span is a whole number of minutes.
    whole_minutes: bool,
}

/// A stretch of time with one offset: `[start, end)` in Unix seconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub start: i64,
    pub end: i64,
    pub offset: i32,
}

impl ZoneRules {
    /// The rules of a zone, computed on first use and shared afterwards.
    pub(super) fn get(tz: Tz) -> Arc<ZoneRules> {
        static CACHE: OnceLock<Mutex<HashMap<Tz, Arc<ZoneRules>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        // A poisoned lock only means another thread panicked mid-insert of an Arc; the map is intact.
        let mut map = cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        map.entry(tz)
            .or_insert_with(|| Arc::new(ZoneRules::compute(tz)))
            .clone()
    }

    fn compute(tz: Tz) -> ZoneRules {
        let offset_at = |t: i64| -> i32 {
            DateTime::from_timestamp(t, 0)
                .map(|d| {
                    tz.offset_from_utc_datetime(&d.naive_utc())
                        .fix()
                        .local_minus_utc()
                })
                .unwrap_or(0)
        };
        // Probe a little beyond the evaluated span on both sides so that wall times at its edges
        // resolve correctly.
        let first = days_from_civil(1999, 12, 1) * DAY;
        let last = days_from_civil(2101, 2, 1) * DAY;
        let initial_offset = offset_at(first);
        let mut transitions = Vec::new();
        if tz != Tz::UTC {
            let mut t = first;
            let mut offset = initial_offset;
            while t < last {
                let next = t + DAY;
                let next_offset = offset_at(next);
                if next_offset != offset {
                    // Bisect to the first second with the new offset.
                    let (mut lo, mut hi) = (t, next);
                    while hi - lo > 1 {
                        let mid = lo + (hi - lo) / 2;
                        if offset_at(mid) == offset {
                            lo = mid;
                        } else {
                            hi = mid;
                        }
                    }
                    transitions.push(Transition {
                        at: hi,
                        before: offset,
                        after: next_offset,
                    });
                    offset = next_offset;
                }
                t = next;
            }
        }
        let offsets = transitions
            .iter()
            .map(|tr| tr.after)
            .chain([initial_offset]);
        let min_offset = offsets.clone().min().unwrap_or(initial_offset);
        let max_offset = offsets.clone().max().unwrap_or(initial_offset);
        let whole_minutes = offsets.into_iter().all(|offset| offset % 60 == 0);
        ZoneRules {
            tz,
            transitions,
            initial_offset,
            min_offset,
            max_offset,
            whole_minutes,
        }
    }

    /// Whether every offset of the zone over the evaluated span is a whole number of minutes
    /// (all of today's are; some zones' local mean times before 2000 were not).
    pub(crate) fn whole_minute_offsets(&self) -> bool {
        self.whole_minutes
    }

    /// The index of the segment containing instant `t`.
    pub(super) fn segment_index(&self, t: i64) -> usize {
        self.transitions.partition_point(|tr| tr.at <= t)
    }

    pub(super) fn segment(&self, index: usize) -> Segment {
        let start = if index == 0 {
            i64::MIN
        } else {
            self.transitions[index - 1].at
        };
        let end = self.transitions.get(index).map_or(i64::MAX, |tr| tr.at);
        let offset = if index == 0 {
            self.initial_offset
        } else {
            self.transitions[index - 1].after
        };
        Segment { start, end, offset }
    }

    pub(super) fn offset_at(&self, t: i64) -> i32 {
        self.segment(self.segment_index(t)).offset
    }

    pub(super) fn is_fixed(&self) -> bool {
        self.transitions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_agree_with_chrono_tz() {
        for name in [
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "Pacific/Apia",
            "America/Havana",
            "Asia/Kolkata",
        ] {
            let tz: Tz = name.parse().unwrap_or(Tz::UTC);
            let rules = ZoneRules::get(tz);
            let mut t = days_from_civil(2000, 1, 1) * DAY;
            while t < days_from_civil(2100, 12, 31) * DAY {
                let expected = DateTime::from_timestamp(t, 0)
                    .map(|d| {
                        tz.offset_from_utc_datetime(&d.naive_utc())
                            .fix()
                            .local_minus_utc()
                    })
                    .unwrap_or(0);
                assert_eq!(rules.offset_at(t), expected, "{name} at {t}");
                t += 3 * 3600 + 17;
            }
        }
    }

    #[test]
    fn new_york_2024() {
        let rules = ZoneRules::get(chrono_tz::America::New_York);
        let spring = days_from_civil(2024, 3, 10) * DAY + 7 * 3600;
        let i = rules.segment_index(spring);
        assert_eq!(
            rules.transitions[i - 1],
            Transition {
                at: spring,
                before: -5 * 3600,
                after: -4 * 3600
            }
        );
        assert_eq!((rules.min_offset, rules.max_offset), (-5 * 3600, -4 * 3600));
    }
}
