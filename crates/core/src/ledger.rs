//! Groundwork of the non-run ledger (`GET /jobs/{jobId}/occurrences`, issue 15 item 2; not wired
//! into the engine or the API yet): the compact records of fires that did not run, and the pure
//! computation of what became of each nominal time from the facts stored about it.
//!
//! Missed and dropped fires are kept as ranges of consecutive nominal times, not one record per
//! time: a fire extends the last range of its reason when it is the schedule's next time after
//! that range's last one, so a day-long outage of an every-second job is one record of 86,400.
//!
//! [`ledger`] decides each time's fate by precedence: outside the job's life (not yet created,
//! already ended), then a run of that time (ran, or skipped by overlap with the run that held the
//! slot), then a range (missed, dropped), then the intervals the job was paused (with the notes in
//! force) or debug mode was on, then still ahead; a time with none of these has no record (its run
//! was removed by retention, or the facts were kept from after it). Which definition was in force
//! at each time, and DST gaps with the policy that decided, come with the audit trail's versions.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

/// Why a range's fires did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RangeReason {
    /// Older than the catch-up window when the engine reached them.
    Missed,
    /// Dropped from a full overlap buffer.
    Dropped,
}

/// Consecutive nominal times of one job that did not run for one reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FireRange {
    /// Why.
    pub reason: RangeReason,
    /// The first time of the range.
    pub first: DateTime<Utc>,
    /// The last time of the range.
    pub last: DateTime<Utc>,
    /// How many nominal times it holds.
    pub count: u64,
}

/// Adds `times` (ascending nominal times that did not run for `reason`) to `ranges`, extending
/// the last range of the same reason while each time is `next_after` its last one (the job's
/// schedule evaluated after that time), and starting a new range otherwise.
pub fn record(
    ranges: &mut Vec<FireRange>,
    reason: RangeReason,
    times: &[DateTime<Utc>],
    next_after: impl Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
) {
    for &time in times {
        if let Some(last) = ranges.last_mut() {
            if last.reason == reason && next_after(last.last) == Some(time) {
                last.last = time;
                last.count = last.count.saturating_add(1);
                continue;
            }
        }
        ranges.push(FireRange {
            reason,
            first: time,
            last: time,
            count: 1,
        });
    }
}

/// The range holding `time`, if one does.
pub fn range_of(ranges: &[FireRange], time: DateTime<Utc>) -> Option<&FireRange> {
    ranges.iter().find(|r| r.first <= time && time <= r.last)
}

/// A stored run of one nominal time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFact {
    /// Its execution.
    pub execution_id: String,
    /// Its state now.
    pub state: String,
    /// When it ended `Skipped` by the overlap policy: the run that held the slot, if known.
    pub skipped_for: Option<String>,
}

/// A span of time with the notes in force (`to` `None`: still going).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// Its start.
    pub from: DateTime<Utc>,
    /// Its end, exclusive.
    pub to: Option<DateTime<Utc>>,
    /// The notes (a pause's).
    pub notes: Option<String>,
}

impl Span {
    fn holds(&self, time: DateTime<Utc>) -> bool {
        self.from <= time && self.to.is_none_or(|to| time < to)
    }
}

/// What is stored about a job's fires: the inputs of [`ledger`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// When the job was created (`None`: unknown, taken as before every time).
    pub created_at: Option<DateTime<Utc>>,
    /// When it was deleted or its schedule ended, if it did.
    pub ended_at: Option<DateTime<Utc>>,
    /// Runs by nominal time.
    pub runs: BTreeMap<DateTime<Utc>, RunFact>,
    /// Missed and dropped ranges.
    pub ranges: Vec<FireRange>,
    /// When the job was paused.
    pub paused: Vec<Span>,
    /// When debug mode was on.
    pub debug: Vec<Span>,
}

/// What became of one nominal time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Before the job existed.
    NotYetCreated,
    /// After the job was deleted or its schedule ended.
    Ended,
    /// It ran: its execution and state.
    Ran {
        /// The execution.
        execution_id: String,
        /// Its state now.
        state: String,
    },
    /// Skipped by the overlap policy while another run held the slot.
    Skipped {
        /// The skipped fire's execution.
        execution_id: String,
        /// The run that held the slot, if known.
        held_by: Option<String>,
    },
    /// Missed the catch-up window.
    Missed,
    /// Dropped from a full buffer.
    Dropped,
    /// The job was paused, with the notes in force.
    Paused {
        /// The pause's notes.
        notes: Option<String>,
    },
    /// Debug mode was on.
    DebugMode,
    /// Still ahead of `now`.
    Ahead,
    /// Nothing is stored about it.
    NoRecord,
}

/// The fate of each of `times` (the job's nominal times in a range) at `now`, by the precedence
/// of the module's rule.
pub fn ledger(
    times: &[DateTime<Utc>],
    facts: &Facts,
    now: DateTime<Utc>,
) -> Vec<(DateTime<Utc>, Fate)> {
    times
        .iter()
        .map(|&time| (time, fate(time, facts, now)))
        .collect()
}

fn fate(time: DateTime<Utc>, facts: &Facts, now: DateTime<Utc>) -> Fate {
    if facts.created_at.is_some_and(|created| time < created) {
        return Fate::NotYetCreated;
    }
    if facts.ended_at.is_some_and(|ended| time >= ended) {
        return Fate::Ended;
    }
    if let Some(run) = facts.runs.get(&time) {
        return match (&run.skipped_for, run.state.as_str()) {
            (held_by, "Skipped") if held_by.is_some() => Fate::Skipped {
                execution_id: run.execution_id.clone(),
                held_by: held_by.clone(),
            },
            _ => Fate::Ran {
                execution_id: run.execution_id.clone(),
                state: run.state.clone(),
            },
        };
    }
    if let Some(range) = range_of(&facts.ranges, time) {
        return match range.reason {
            RangeReason::Missed => Fate::Missed,
            RangeReason::Dropped => Fate::Dropped,
        };
    }
    if let Some(pause) = facts.paused.iter().find(|p| p.holds(time)) {
        return Fate::Paused {
            notes: pause.notes.clone(),
        };
    }
    if facts.debug.iter().any(|d| d.holds(time)) {
        return Fate::DebugMode;
    }
    if time > now {
        return Fate::Ahead;
    }
    Fate::NoRecord
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::Duration;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::seconds(1_700_000_000 + s)
    }

    fn every_second(after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        Some(after + Duration::seconds(1))
    }

    #[test]
    fn a_day_long_outage_of_an_every_second_job_is_one_record() {
        let mut ranges = Vec::new();
        let day: Vec<DateTime<Utc>> = (0..86_400).map(t).collect();
        // Found in pieces, as ticks find them: still one range.
        for chunk in day.chunks(80) {
            record(&mut ranges, RangeReason::Missed, chunk, every_second);
        }
        assert_eq!(
            ranges,
            vec![FireRange {
                reason: RangeReason::Missed,
                first: t(0),
                last: t(86_399),
                count: 86_400
            }]
        );
        // A gap, or another reason, starts a new range.
        record(&mut ranges, RangeReason::Missed, &[t(86_401)], every_second);
        record(
            &mut ranges,
            RangeReason::Dropped,
            &[t(86_402)],
            every_second,
        );
        assert_eq!(ranges.len(), 3);
        assert_eq!(range_of(&ranges, t(500)).unwrap().count, 86_400);
        assert!(range_of(&ranges, t(86_400)).is_none());
    }

    #[test]
    fn each_time_gets_the_first_fate_that_applies() {
        let run = |id: &str, state: &str, held: Option<&str>| RunFact {
            execution_id: id.into(),
            state: state.into(),
            skipped_for: held.map(Into::into),
        };
        let facts = Facts {
            created_at: Some(t(10)),
            ended_at: Some(t(100)),
            runs: BTreeMap::from([
                (t(10), run("j-10", "Succeeded", None)),
                (t(20), run("j-20", "Skipped", Some("j-10"))),
                (t(30), run("j-30", "Terminated", None)),
            ]),
            ranges: vec![FireRange {
                reason: RangeReason::Dropped,
                first: t(40),
                last: t(50),
                count: 2,
            }],
            paused: vec![Span {
                from: t(55),
                to: Some(t(65)),
                notes: Some("maintenance".into()),
            }],
            debug: vec![Span {
                from: t(65),
                to: None,
                notes: None,
            }],
        };
        let times: Vec<_> = [0, 10, 20, 30, 40, 50, 60, 70, 80, 100].map(t).to_vec();
        let fates: Vec<Fate> = ledger(&times, &facts, t(75))
            .into_iter()
            .map(|(_, f)| f)
            .collect();
        assert_eq!(
            fates,
            vec![
                Fate::NotYetCreated,
                Fate::Ran {
                    execution_id: "j-10".into(),
                    state: "Succeeded".into()
                },
                Fate::Skipped {
                    execution_id: "j-20".into(),
                    held_by: Some("j-10".into())
                },
                Fate::Ran {
                    execution_id: "j-30".into(),
                    state: "Terminated".into()
                },
                Fate::Dropped,
                Fate::Dropped,
                Fate::Paused {
                    notes: Some("maintenance".into())
                },
                Fate::DebugMode,
                Fate::DebugMode,
                Fate::Ended,
            ]
        );
        let quiet = Facts::default();
        assert_eq!(
            ledger(&[t(1), t(9)], &quiet, t(5))
                .into_iter()
                .map(|(_, f)| f)
                .collect::<Vec<_>>(),
            vec![Fate::NoRecord, Fate::Ahead]
        );
    }
}
