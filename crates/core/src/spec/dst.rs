//! What a schedule does with wall-clock times that a DST change skips or repeats.
//!
//! Peers disagree here more than anywhere else (see docs/spec.md): Temporal and robfig skip missing
//! times and fire repeated times twice, Quartz fires repeated times once at the second pass, croner 10
//! and croniter shift missing times by the gap, cronie and croner 11 fire fixed-time jobs at the
//! transition. Sundial makes the choice explicit per schedule and defaults to the reading of the
//! dialect a spec was pasted from, so a spec moved from a peer keeps its behaviour.

use super::calendar::Calendar;
use super::Dialect;

/// Wall times that do not exist (the clock jumps from 02:00 to 03:00).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GapPolicy {
    /// Missing times do not fire.
    Skip,
    /// A missing time fires as far after the gap's start as it lies, i.e. moved by the gap's length
    /// (02:30 fires at 03:30).
    Shift,
    /// Missing times fire at the first instant after the gap (03:00).
    Transition,
    /// Fixed-time specs (one second, minute and hour) fire at the transition; others skip (cronie,
    /// croner 11).
    Auto,
}

/// Wall times that happen twice (the clock falls back from 02:00 to 01:00).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlapPolicy {
    /// Fire at both instants.
    Both,
    /// Fire only during the first pass (daylight time).
    First,
    /// Fire only during the second pass (standard time).
    Second,
    /// Fixed-time specs fire once, at the first pass; others fire in both passes (cronie, croner 11).
    Auto,
}

/// The DST policy of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DstPolicy {
    /// For times a forward change skips.
    pub gap: GapPolicy,
    /// For times a backward change repeats.
    pub overlap: OverlapPolicy,
}

/// A policy with `Auto` resolved for one calendar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub gap: GapPolicy,
    pub overlap: OverlapPolicy,
}

impl DstPolicy {
    /// The peer reading of each dialect.
    pub fn default_for(dialect: Dialect) -> Self {
        let (gap, overlap) = match dialect {
            Dialect::Standard => (GapPolicy::Auto, OverlapPolicy::Auto),
            Dialect::Temporal => (GapPolicy::Skip, OverlapPolicy::Both),
            Dialect::EventBridge => (GapPolicy::Skip, OverlapPolicy::First),
            Dialect::Quartz => (GapPolicy::Skip, OverlapPolicy::Second),
        };
        DstPolicy { gap, overlap }
    }

    pub(crate) fn resolve(self, calendar: &Calendar) -> Resolved {
        let fixed = calendar.is_fixed_time();
        Resolved {
            gap: match self.gap {
                GapPolicy::Auto if fixed => GapPolicy::Transition,
                GapPolicy::Auto => GapPolicy::Skip,
                other => other,
            },
            overlap: match self.overlap {
                OverlapPolicy::Auto if fixed => OverlapPolicy::First,
                OverlapPolicy::Auto => OverlapPolicy::Both,
                other => other,
            },
        }
    }
}

impl GapPolicy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            GapPolicy::Skip => "skip",
            GapPolicy::Shift => "shift",
            GapPolicy::Transition => "transition",
            GapPolicy::Auto => "auto",
        }
    }
    pub(crate) fn parse(text: &str) -> Option<Self> {
        [
            GapPolicy::Skip,
            GapPolicy::Shift,
            GapPolicy::Transition,
            GapPolicy::Auto,
        ]
        .into_iter()
        .find(|p| p.name() == text)
    }
}

impl OverlapPolicy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            OverlapPolicy::Both => "both",
            OverlapPolicy::First => "first",
            OverlapPolicy::Second => "second",
            OverlapPolicy::Auto => "auto",
        }
    }
    pub(crate) fn parse(text: &str) -> Option<Self> {
        [
            OverlapPolicy::Both,
            OverlapPolicy::First,
            OverlapPolicy::Second,
            OverlapPolicy::Auto,
        ]
        .into_iter()
        .find(|p| p.name() == text)
    }
}
