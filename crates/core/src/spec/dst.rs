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
pub enum DstGap {
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
pub enum DstOverlap {
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
    pub gap: DstGap,
    /// For times a backward change repeats.
    pub overlap: DstOverlap,
}

/// A policy with `Auto` resolved for one calendar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub gap: DstGap,
    pub overlap: DstOverlap,
}

impl DstPolicy {
    /// The peer reading of each dialect.
    pub fn default_for(dialect: Dialect) -> Self {
        let (gap, overlap) = match dialect {
            Dialect::Standard => (DstGap::Auto, DstOverlap::Auto),
            Dialect::Temporal => (DstGap::Skip, DstOverlap::Both),
            Dialect::EventBridge => (DstGap::Skip, DstOverlap::First),
            Dialect::Quartz => (DstGap::Skip, DstOverlap::Second),
        };
        DstPolicy { gap, overlap }
    }

    pub(crate) fn resolve(self, calendar: &Calendar) -> Resolved {
        self.resolve_fixed(calendar.is_fixed_time())
    }

    /// The policy for a source that is (or is not) fixed-time.
    pub(crate) fn resolve_fixed(self, fixed: bool) -> Resolved {
        Resolved {
            gap: match self.gap {
                DstGap::Auto if fixed => DstGap::Transition,
                DstGap::Auto => DstGap::Skip,
                other => other,
            },
            overlap: match self.overlap {
                DstOverlap::Auto if fixed => DstOverlap::First,
                DstOverlap::Auto => DstOverlap::Both,
                other => other,
            },
        }
    }
}

impl DstGap {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DstGap::Skip => "skip",
            DstGap::Shift => "shift",
            DstGap::Transition => "transition",
            DstGap::Auto => "auto",
        }
    }
    pub(crate) fn parse(text: &str) -> Option<Self> {
        [
            DstGap::Skip,
            DstGap::Shift,
            DstGap::Transition,
            DstGap::Auto,
        ]
        .into_iter()
        .find(|p| p.name() == text)
    }
}

impl DstOverlap {
    pub(crate) fn name(self) -> &'static str {
        match self {
            DstOverlap::Both => "both",
            DstOverlap::First => "first",
            DstOverlap::Second => "second",
            DstOverlap::Auto => "auto",
        }
    }
    pub(crate) fn parse(text: &str) -> Option<Self> {
        [
            DstOverlap::Both,
            DstOverlap::First,
            DstOverlap::Second,
            DstOverlap::Auto,
        ]
        .into_iter()
        .find(|p| p.name() == text)
    }
}
