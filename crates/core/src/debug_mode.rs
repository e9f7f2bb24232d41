//! Seed 004's debug mode: a switch that stops runs while a system is being tested, without
//! pausing each job.
//!
//! | mode | schedules | program triggers | console triggers | backfills |
//! |---|---|---|---|---|
//! | `off` | run | run | run | run |
//! | `schedules` | stopped | run | run | run |
//! | `triggers` | run | stopped | run | run |
//! | `both` | stopped | stopped | run | run |
//!
//! A *program trigger* is a run a program asked for through the API (`POST /jobs/{id}/trigger`,
//! update-and-run); a *console trigger* one a person started on the console's trigger form, which
//! is how a job is tried by hand in debug mode. A backfill is an operator's explicit request for
//! past times and is never stopped. Whether a run is stopped is [`debug_mode_stops`], the one
//! place that decides it.

use std::fmt;

pub use crate::source::RunSource;

/// The debug mode: which runs it stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DebugMode {
    /// Nothing is stopped.
    #[default]
    Off,
    /// Scheduled fires do not run (they are recorded as passed over in debug mode).
    Schedules,
    /// Runs programs trigger do not run.
    Triggers,
    /// Both.
    Both,
}

impl DebugMode {
    /// Every mode, in the documentation's order.
    pub const ALL: [DebugMode; 4] = [
        DebugMode::Off,
        DebugMode::Schedules,
        DebugMode::Triggers,
        DebugMode::Both,
    ];

    /// The name in JSON, the CLI and the console: `off`, `schedules`, `triggers`, `both`.
    pub fn name(self) -> &'static str {
        match self {
            DebugMode::Off => "off",
            DebugMode::Schedules => "schedules",
            DebugMode::Triggers => "triggers",
            DebugMode::Both => "both",
        }
    }

    /// The mode named `name` (exactly).
    pub fn parse(name: &str) -> Option<DebugMode> {
        DebugMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The mode of the older on/off switch (`--debug-mode`, `SUNDIAL_DEBUG_MODE`), which stopped
    /// scheduled fires only.
    pub fn from_flag(on: bool) -> DebugMode {
        if on {
            DebugMode::Schedules
        } else {
            DebugMode::Off
        }
    }

    /// Whether scheduled fires are stopped.
    pub fn stops_schedules(self) -> bool {
        debug_mode_stops(self, RunSource::Schedule)
    }

    /// How the console's banner and `sundial health` say it: `None` when off.
    pub fn describe(self) -> Option<&'static str> {
        match self {
            DebugMode::Off => None,
            DebugMode::Schedules => {
                Some("Debug mode (schedules): scheduled fires do not run; triggers still run.")
            }
            DebugMode::Triggers => Some(
                "Debug mode (triggers): runs triggered by programs do not run; schedules and console triggers still run.",
            ),
            DebugMode::Both => Some(
                "Debug mode (both): scheduled fires and runs triggered by programs do not run; console triggers still run.",
            ),
        }
    }
}

impl fmt::Display for DebugMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether debug mode `mode` stops a run started by `source` (the module's table). Pure.
pub fn debug_mode_stops(mode: DebugMode, source: RunSource) -> bool {
    match source {
        RunSource::Schedule => matches!(mode, DebugMode::Schedules | DebugMode::Both),
        RunSource::ProgramTrigger | RunSource::Update => {
            matches!(mode, DebugMode::Triggers | DebugMode::Both)
        }
        RunSource::ConsoleTrigger | RunSource::Backfill => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        use RunSource::*;
        let row = |mode| {
            [Schedule, ProgramTrigger, Update, ConsoleTrigger, Backfill]
                .map(|s| debug_mode_stops(mode, s))
        };
        assert_eq!(row(DebugMode::Off), [false; 5]);
        assert_eq!(
            row(DebugMode::Schedules),
            [true, false, false, false, false]
        );
        assert_eq!(row(DebugMode::Triggers), [false, true, true, false, false]);
        assert_eq!(row(DebugMode::Both), [true, true, true, false, false]);
    }

    #[test]
    fn names_and_sources() {
        for mode in DebugMode::ALL {
            assert_eq!(DebugMode::parse(mode.name()), Some(mode));
        }
        assert_eq!(DebugMode::parse("on"), None);
        assert_eq!(DebugMode::from_flag(true), DebugMode::Schedules);
    }
}
