//! Next fire time of one calendar in a time zone, under a DST policy.
//!
//! The zone is a sequence of segments of constant offset. Inside a segment wall-clock time and
//! instants map one to one, so the next fire is the next wall-clock match inside the segment's
//! wall-clock range. What DST adds lives at the segment edges: a gap's missing wall times may fire
//! (shifted or at the transition) at the start of the following segment, and an overlap's repeated
//! wall times belong to the end of one segment (first pass) and the start of the next (second pass).

use super::calendar::Calendar;
use super::dst::{DstGap, DstOverlap, Resolved};
use super::recurrence::Recurrence;
use super::zone::ZoneRules;

/// A source of wall-clock fire times: a calendar or a recurrence rule.
pub(crate) trait WallSource {
    /// The first wall-clock second `n` it fires at with `from <= n < limit`, if any.
    fn next_match(&self, from: i64, limit: i64) -> Option<i64>;
}

impl WallSource for Calendar {
    fn next_match(&self, from: i64, limit: i64) -> Option<i64> {
        Calendar::next_match(self, from, limit)
    }
}

impl WallSource for Recurrence {
    fn next_match(&self, from: i64, limit: i64) -> Option<i64> {
        Recurrence::next_match(self, from, limit)
    }
}

/// The first fire of `calendar` (any wall-clock source) strictly after instant `t` (Unix seconds).
pub(crate) fn next_fire<S: WallSource + ?Sized>(
    calendar: &S,
    zone: &ZoneRules,
    policy: Resolved,
    t: i64,
) -> Option<i64> {
    let after = t.checked_add(1)?;
    if zone.is_fixed() {
        let offset = i64::from(zone.min_offset);
        return calendar
            .next_match(after + offset, i64::MAX)
            .map(|n| n - offset);
    }
    // Every fire after `t` comes from a wall-clock match at or after `after + min_offset`, and fires
    // no earlier than that match minus the largest offset: start the segment walk there.
    let earliest_wall = calendar.next_match(after + i64::from(zone.min_offset), i64::MAX)?;
    let lower = after.max(earliest_wall - i64::from(zone.max_offset));
    let mut index = zone.segment_index(lower);
    loop {
        let segment = zone.segment(index);
        let entering = index.checked_sub(1).map(|i| zone.transitions[i]);
        let leaving = zone.transitions.get(index).copied();
        let mut best: Option<i64> = None;

        if let Some(tr) = entering.filter(|tr| tr.is_gap()) {
            let (gap_start, gap_end) = (tr.at + i64::from(tr.before), tr.at + i64::from(tr.after));
            best = match policy.gap {
                DstGap::Shift => calendar
                    .next_match(gap_start.max(after + i64::from(tr.before)), gap_end)
                    .map(|wall| wall - i64::from(tr.before)),
                DstGap::Transition if tr.at > t => {
                    calendar.next_match(gap_start, gap_end).map(|_| tr.at)
                }
                _ => None,
            };
        }

        let offset = i64::from(segment.offset);
        let mut from = lower.max(segment.start) + offset;
        let mut until = segment.end.saturating_add(offset);
        if let Some(tr) = entering.filter(|tr| tr.is_overlap()) {
            if policy.overlap == DstOverlap::First {
                // Wall times before the previous offset's end already fired in the first pass.
                from = from.max(tr.at + i64::from(tr.before));
            }
        }
        if let Some(tr) = leaving.filter(|tr| tr.is_overlap()) {
            if policy.overlap == DstOverlap::Second {
                // Wall times from here on repeat after the transition; fire them then.
                until = until.min(tr.at + i64::from(tr.after));
            }
        }
        if let Some(wall) = calendar.next_match(from, until) {
            let instant = wall - offset;
            best = Some(best.map_or(instant, |b| b.min(instant)));
        }
        if best.is_some() {
            return best;
        }
        leaving?;
        index += 1;
    }
}
