//! What started a run, read from its execution's `scheduledById`: the one classification the
//! pause and the debug mode (at admission, [`crate::plan::may_start`],
//! [`crate::debug_mode::debug_mode_stops`]), run search's `source` filter and the manual run's
//! own `scheduledById` ([`crate::trigger::plan_manual_run`]) share.
//!
//! | `scheduledById` | source |
//! |---|---|
//! | the job's id | [`RunSource::Schedule`] |
//! | `trigger:<key>` | [`RunSource::ProgramTrigger`] |
//! | `console:<key>` | [`RunSource::ConsoleTrigger`] |
//! | `update:<id>` | [`RunSource::Update`] |
//! | `backfill:<tag>` | [`RunSource::Backfill`] |
//!
//! Anything else (none is written today) reads as a program's trigger.

/// What started a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunSource {
    /// A fire of the job's schedule.
    Schedule,
    /// A trigger a program sent through the API (`POST /jobs/{id}/trigger`, a bulk trigger).
    ProgramTrigger,
    /// A trigger a person started on the console's trigger form.
    ConsoleTrigger,
    /// The run of update and run (`POST /jobs/{id}/update`).
    Update,
    /// A run of a backfill.
    Backfill,
}

impl RunSource {
    /// The source of a run of the job `job_id` from its execution's `scheduledById`.
    pub fn of_scheduled_by(scheduled_by_id: &str, job_id: &str) -> RunSource {
        if scheduled_by_id == job_id {
            return RunSource::Schedule;
        }
        match scheduled_by_id.split_once(':').map(|(prefix, _)| prefix) {
            Some("backfill") => RunSource::Backfill,
            Some("console") => RunSource::ConsoleTrigger,
            Some("update") => RunSource::Update,
            _ => RunSource::ProgramTrigger,
        }
    }

    /// The source of `execution`.
    pub fn of(execution: &crate::execution::Execution) -> RunSource {
        RunSource::of_scheduled_by(&execution.scheduled_by_id, execution.job_id.as_str())
    }

    /// The `scheduledById` prefix of a run not of the schedule (`trigger`, `console`, `update`,
    /// `backfill`); `None` for a scheduled fire, whose `scheduledById` is its job's id.
    pub fn prefix(self) -> Option<&'static str> {
        match self {
            RunSource::Schedule => None,
            RunSource::ProgramTrigger => Some("trigger"),
            RunSource::ConsoleTrigger => Some("console"),
            RunSource::Update => Some("update"),
            RunSource::Backfill => Some("backfill"),
        }
    }

    /// Whether someone asked for the run (every source but the schedule): a pause does not stop
    /// it (Temporal's rule: a paused schedule still takes the actions someone asks for).
    pub fn is_request(self) -> bool {
        self != RunSource::Schedule
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_come_from_scheduled_by_id_and_give_it_back() {
        use RunSource::*;
        for (scheduled_by, source) in [
            ("a", Schedule),
            ("trigger:x", ProgramTrigger),
            ("console:x", ConsoleTrigger),
            ("update:x", Update),
            ("backfill:2024-01-01T00:00:00Z", Backfill),
            ("other", ProgramTrigger),
        ] {
            assert_eq!(
                RunSource::of_scheduled_by(scheduled_by, "a"),
                source,
                "{scheduled_by}"
            );
        }
        for source in [ProgramTrigger, ConsoleTrigger, Update, Backfill] {
            let written = format!("{}:k", source.prefix().unwrap_or_default());
            assert_eq!(RunSource::of_scheduled_by(&written, "a"), source);
            assert!(source.is_request());
        }
        assert_eq!(Schedule.prefix(), None);
        assert!(!Schedule.is_request());
    }
}
