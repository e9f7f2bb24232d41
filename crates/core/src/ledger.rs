//! The non-run ledger (`GET /jobs/{jobId}/occurrences`, issue 15 item 2): the compact records of
//! fires that did not run, kept on the job's state ([`JobState::fire_ranges`](crate::job::JobState::fire_ranges)),
//! and the pure computation of what became of each nominal time from the facts stored about it.
//!
//! Missed and dropped fires are kept as ranges of consecutive nominal times, not one record per
//! time: a fire extends the last range of its reason when it is the schedule's next time after
//! that range's last one, so a day-long outage of an every-second job is one record of 86,400.
//!
//! [`ledger`] decides each time's fate by precedence: outside the job's life (not yet created,
//! already ended), then a run of that time (ran, skipped by overlap with the run that held the
//! slot, dropped or missed as its skipped execution says), then a range (missed, dropped), then
//! the intervals the job was paused (with the notes in force) or debug mode was on, then not yet
//! (after `now`, or after the last time the engine planned); a time with none of these has no
//! record (its run was removed by retention, or the facts were kept from after it). Which
//! definition was in force at each time is the caller's (the audit trail's versions give the
//! nominal times). A DST gap leaves no nominal time of its own (the spec engine moves or drops a
//! nonexistent wall-clock time by its `dst.gap` policy first), so [`gap_entries`] lists each gap
//! that took times of the schedules in force, with the policy that decided, and [`with_gaps`]
//! puts those entries among the nominal times.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::spec::{GapTime, Schedule};

/// The most ranges a job keeps ([`crate::job::JobState::fire_ranges`]): past it the oldest go.
/// A range is one outage or one burst of drops however long, so 100 cover months of incidents
/// and cost a few kilobytes on the job's item.
pub const MAX_FIRE_RANGES: usize = 100;

/// Why a range's fires did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RangeReason {
    /// Older than the catch-up window when the engine reached them.
    Missed,
    /// Dropped from a full overlap buffer.
    Dropped,
    /// Due while debug mode was on (automatic runs stopped).
    DebugMode,
    /// Its run was stopped by a pause of its job before it started (a run's reason, from its
    /// skipped execution; never a stored range).
    Paused,
}

/// Consecutive nominal times of one job that did not run for one reason, stored as
/// `{"kind", "from", "to", "count"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FireRange {
    /// Why.
    #[serde(rename = "kind")]
    pub reason: RangeReason,
    /// The first time of the range.
    #[serde(rename = "from", with = "crate::time_serde::rfc3339")]
    pub first: DateTime<Utc>,
    /// The last time of the range. Past [`crate::plan::MAX_MISSED_COUNTED`] missed fires in one
    /// tick the planner jumps ahead without evaluating each: the range then ends at the jump and
    /// `count` is a lower bound.
    #[serde(rename = "to", with = "crate::time_serde::rfc3339")]
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
        add(ranges, reason, time, |last| next_after(last) == Some(time));
    }
}

/// Extends the last range with `time` when it has `reason` and `follows` its last time; starts a
/// new range otherwise, dropping the oldest past [`MAX_FIRE_RANGES`].
fn add(
    ranges: &mut Vec<FireRange>,
    reason: RangeReason,
    time: DateTime<Utc>,
    follows: impl FnOnce(DateTime<Utc>) -> bool,
) {
    if let Some(last) = ranges.last_mut() {
        if last.reason == reason && follows(last.last) {
            last.last = time;
            last.count = last.count.saturating_add(1);
            return;
        }
    }
    ranges.push(FireRange {
        reason,
        first: time,
        last: time,
        count: 1,
    });
    if ranges.len() > MAX_FIRE_RANGES {
        let excess = ranges.len() - MAX_FIRE_RANGES;
        ranges.drain(..excess);
    }
}

/// Adds one fire `time` that did not run for `reason`, when the caller knows the schedule's time
/// before it (`previous`: the planner walks the times in order): the last range of the same
/// reason grows when it ends at `previous`. What [`record`] does without evaluating the schedule.
pub fn record_after(
    ranges: &mut Vec<FireRange>,
    reason: RangeReason,
    time: DateTime<Utc>,
    previous: DateTime<Utc>,
) {
    add(ranges, reason, time, |last| last == previous);
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
    /// When it ended `Skipped` because it was dropped from a full buffer or missed its chance.
    pub not_run: Option<RangeReason>,
}

impl RunFact {
    /// The fact of a stored execution in `state` whose `error` holds the engine's reason when
    /// it ended `Skipped`: `skipped by overlap policy <p>: <running ids> still running` names
    /// the runs that held the slot.
    pub fn of_execution(execution_id: &str, state: &str, error: Option<&str>) -> RunFact {
        let skipped_for = match (state, error) {
            ("Skipped", Some(reason)) if reason.starts_with("skipped by overlap policy") => reason
                .split_once(": ")
                .map(|(_, rest)| rest.trim_end_matches(" still running").to_owned()),
            _ => None,
        };
        RunFact {
            execution_id: execution_id.to_owned(),
            state: state.to_owned(),
            skipped_for,
            not_run: match (state, error) {
                ("Skipped", Some(reason)) if reason.starts_with("dropped") => {
                    Some(RangeReason::Dropped)
                }
                ("Skipped", Some(reason)) if reason.starts_with("missed") => {
                    Some(RangeReason::Missed)
                }
                ("Skipped", Some(reason)) if reason.starts_with("paused") => {
                    Some(RangeReason::Paused)
                }
                ("Skipped", Some(reason)) if reason.starts_with("debug mode") => {
                    Some(RangeReason::DebugMode)
                }
                _ => None,
            },
        }
    }
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
    /// The last nominal time the engine planned: later times are not yet, even before `now`.
    pub planned_through: Option<DateTime<Utc>>,
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
    /// Missed the catch-up window, or left out by the catch-up policy.
    Missed {
        /// Its skipped execution, when it reached the gate before it missed.
        execution_id: Option<String>,
    },
    /// Dropped from a full buffer.
    Dropped {
        /// Its skipped execution, when it is still stored.
        execution_id: Option<String>,
    },
    /// The job was paused, with the notes in force.
    Paused {
        /// The pause's notes.
        notes: Option<String>,
        /// When the pause with these notes began: the time of the change (an audit entry) that
        /// paused the job or last changed its notes.
        since: DateTime<Utc>,
    },
    /// Debug mode was on.
    DebugMode,
    /// A DST gap took wall-clock times of the schedule (listed at the gap's transition, beside
    /// the nominal times): which, and what its `dst.gap` policy did with them.
    DstGap(GapTime),
    /// A named calendar removed the time (listed beside the nominal times, which it never
    /// became): which calendar, and how (`exclude` or `onlyOn`).
    Calendar {
        /// The calendar's name.
        calendar: String,
        /// `exclude` or `onlyOn`.
        rule: &'static str,
    },
    /// Still ahead of `now`, or not planned yet.
    Ahead,
    /// Nothing is stored about it.
    NoRecord,
}

impl Fate {
    /// Its name in answers and pages (`GET /jobs/{jobId}/occurrences`' `status`).
    pub fn status(&self) -> &'static str {
        match self {
            Fate::NotYetCreated => "beforeCreated",
            Fate::Ended => "ended",
            Fate::Ran { .. } => "ran",
            Fate::Skipped { .. } => "skipped",
            Fate::Missed { .. } => "missed",
            Fate::Dropped { .. } => "dropped",
            Fate::Paused { .. } => "paused",
            Fate::DebugMode => "debugMode",
            Fate::DstGap(_) => "dstGap",
            Fate::Calendar { .. } => "calendar",
            Fate::Ahead => "notYet",
            Fate::NoRecord => "noRecord",
        }
    }
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
        let execution_id = Some(run.execution_id.clone());
        return match (&run.skipped_for, run.state.as_str(), run.not_run) {
            (held_by, "Skipped", _) if held_by.is_some() => Fate::Skipped {
                execution_id: run.execution_id.clone(),
                held_by: held_by.clone(),
            },
            (_, _, Some(RangeReason::Dropped)) => Fate::Dropped { execution_id },
            (_, _, Some(RangeReason::Missed)) => Fate::Missed { execution_id },
            (_, _, Some(RangeReason::DebugMode)) => Fate::DebugMode,
            // Stopped by the pause in force at its time, or by the first one after it (the run
            // was still waiting then).
            (_, _, Some(RangeReason::Paused)) => {
                let pause = facts
                    .paused
                    .iter()
                    .find(|p| p.holds(time))
                    .or_else(|| facts.paused.iter().find(|p| p.from > time));
                Fate::Paused {
                    notes: pause.and_then(|p| p.notes.clone()),
                    since: pause.map_or(time, |p| p.from),
                }
            }
            _ => Fate::Ran {
                execution_id: run.execution_id.clone(),
                state: run.state.clone(),
            },
        };
    }
    if let Some(range) = range_of(&facts.ranges, time) {
        return match range.reason {
            RangeReason::Missed => Fate::Missed { execution_id: None },
            RangeReason::Dropped => Fate::Dropped { execution_id: None },
            RangeReason::DebugMode => Fate::DebugMode,
            RangeReason::Paused => Fate::Paused {
                notes: None,
                since: range.first,
            },
        };
    }
    if let Some(pause) = facts.paused.iter().find(|p| p.holds(time)) {
        return Fate::Paused {
            notes: pause.notes.clone(),
            since: pause.from,
        };
    }
    if facts.debug.iter().any(|d| d.holds(time)) {
        return Fate::DebugMode;
    }
    if time > now || facts.planned_through.is_some_and(|p| time > p) {
        return Fate::Ahead;
    }
    Fate::NoRecord
}

/// The DST gaps in `[from, to)` that took wall-clock times of the schedules in force (`versions`
/// as for [`nominal_times`]), as entries at their transitions.
pub fn gap_entries(
    versions: &[(DateTime<Utc>, Option<&Schedule>)],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<(DateTime<Utc>, Fate)> {
    let mut entries = Vec::new();
    for (i, (since, schedule)) in versions.iter().enumerate() {
        let Some(schedule) = schedule else { continue };
        let start = if i == 0 { from } else { from.max(*since) };
        let end = versions.get(i + 1).map_or(to, |(next, _)| to.min(*next));
        if start < end {
            entries.extend(
                schedule
                    .dst_gaps(start, end)
                    .into_iter()
                    .map(|gap| (gap.at, Fate::DstGap(gap))),
            );
        }
    }
    entries
}

/// The times in `[from, to)` that the named calendars of the schedules in force (`versions` as
/// for [`nominal_times`]) removed, as entries naming the calendar
/// ([`crate::spec::Schedule::calendar_removals`]); merge them with [`with_gaps`].
pub fn calendar_entries(
    versions: &[(DateTime<Utc>, Option<&Schedule>)],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<(DateTime<Utc>, Fate)> {
    let mut entries = Vec::new();
    for (i, (since, schedule)) in versions.iter().enumerate() {
        let Some(schedule) = schedule else { continue };
        let start = if i == 0 { from } else { from.max(*since) };
        let end = versions.get(i + 1).map_or(to, |(next, _)| to.min(*next));
        if start < end {
            entries.extend(schedule.calendar_removals(start, end).into_iter().map(|r| {
                (
                    r.at,
                    Fate::Calendar {
                        calendar: r.calendar,
                        rule: r.rule,
                    },
                )
            }));
        }
    }
    entries
}

/// `entries` (a ledger, in time order) with `gaps` ([`gap_entries`]) put in time order, a gap
/// before a nominal time at the same instant (the time it moved to, under `transition`).
pub fn with_gaps(
    entries: Vec<(DateTime<Utc>, Fate)>,
    gaps: Vec<(DateTime<Utc>, Fate)>,
) -> Vec<(DateTime<Utc>, Fate)> {
    if gaps.is_empty() {
        return entries;
    }
    let mut merged = Vec::with_capacity(entries.len() + gaps.len());
    let mut gaps = gaps.into_iter().peekable();
    for entry in entries {
        while let Some(gap) = gaps.next_if(|(at, _)| *at <= entry.0) {
            merged.push(gap);
        }
        merged.push(entry);
    }
    merged.extend(gaps);
    merged
}

/// The most nominal times one ledger lists (`GET /jobs/{jobId}/occurrences`).
pub const MAX_OCCURRENCES: usize = 10_000;

/// How far [`nominal_times`] counts a range too large to list, to say how many it holds.
pub const MAX_COUNTED: usize = 100_000;

/// A range holding more than [`MAX_OCCURRENCES`] nominal times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooMany {
    /// How many it holds, counted up to [`MAX_COUNTED`].
    pub counted: usize,
    /// Whether it holds more than `counted`.
    pub more: bool,
}

/// The nominal times in `[from, to)` of a job whose definitions were in force as `versions`
/// says: each `(since, schedule)` from `since` until the next one's `since` (the first also
/// before its `since`: the times before the job was created are its first schedule's); `None`
/// for a job only triggers run. At most [`MAX_OCCURRENCES`], oldest first.
pub fn nominal_times(
    versions: &[(DateTime<Utc>, Option<&Schedule>)],
    job_id: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<DateTime<Utc>>, TooMany> {
    let mut times = Vec::new();
    let mut counted = 0usize;
    for (i, (since, schedule)) in versions.iter().enumerate() {
        let Some(schedule) = schedule else { continue };
        let start = if i == 0 { from } else { from.max(*since) };
        let end = versions.get(i + 1).map_or(to, |(next, _)| to.min(*next));
        if start >= end {
            continue;
        }
        // `fire_after` is strictly after a whole second: start a second early, keep from `start`.
        let mut after = start - chrono::Duration::seconds(1);
        while let Some(fire) = schedule.fire_after(after, job_id) {
            if fire.nominal >= end {
                break;
            }
            after = fire.nominal;
            if fire.nominal < start {
                continue;
            }
            counted += 1;
            if counted > MAX_COUNTED {
                return Err(TooMany {
                    counted: MAX_COUNTED,
                    more: true,
                });
            }
            if counted <= MAX_OCCURRENCES {
                times.push(fire.nominal);
            }
        }
    }
    if counted > MAX_OCCURRENCES {
        return Err(TooMany {
            counted,
            more: false,
        });
    }
    Ok(times)
}

/// The spans a job was paused, from its changes in order: `(at, paused after it, notes)`. A
/// pause opens a span with its notes, an unpause closes it, a pause of a paused job (new notes)
/// starts a new span.
pub fn pause_spans(changes: &[(DateTime<Utc>, bool, Option<String>)]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut paused = false;
    for (at, now_paused, notes) in changes {
        let notes_changed = spans.last().is_some_and(|s| &s.notes != notes);
        if paused && (!now_paused || notes_changed) {
            if let Some(open) = spans.last_mut() {
                open.to = Some(*at);
            }
        }
        if *now_paused && (!paused || notes_changed) {
            spans.push(Span {
                from: *at,
                to: None,
                notes: notes.clone(),
            });
        }
        paused = *now_paused;
    }
    spans
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use chrono::Duration;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::seconds(1_700_000_000 + s)
    }

    fn fates_of(times: &[DateTime<Utc>], facts: &Facts, now: DateTime<Utc>) -> Vec<Fate> {
        ledger(times, facts, now)
            .into_iter()
            .map(|(_, f)| f)
            .collect()
    }

    fn every_second(after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        Some(after + Duration::seconds(1))
    }

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    /// A New York schedule at 02:30 every day, or every 20 minutes from 01:00 to 03:59, under
    /// the `dst.gap` policy `gap`.
    fn new_york(cron: &str, gap: &str) -> Schedule {
        Schedule::from_json(&serde_json::json!({
            "cron": [cron], "timeZone": "America/New_York", "dst": {"gap": gap}
        }))
        .unwrap()
    }

    #[test]
    fn a_dst_gap_names_the_wall_times_it_took_and_the_policy() {
        // 2024-03-10: New York's clocks jump from 02:00 EST to 03:00 EDT (07:00Z).
        let (from, to) = (utc("2024-03-09T00:00:00Z"), utc("2024-03-12T00:00:00Z"));
        let jump = utc("2024-03-10T07:00:00Z");
        let wall =
            |text: &str| chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").unwrap();
        for (gap, moved_to) in [
            ("skip", None),
            ("shift", Some(utc("2024-03-10T07:30:00Z"))),
            ("transition", Some(jump)),
        ] {
            let schedule = new_york("30 2 * * *", gap);
            let versions = [(from, Some(&schedule))];
            let times = nominal_times(&versions, "j", from, to).unwrap();
            let gaps = gap_entries(&versions, from, to);
            assert_eq!(
                gaps,
                vec![(
                    jump,
                    Fate::DstGap(GapTime {
                        at: jump,
                        wall_time: wall("2024-03-10T02:30:00"),
                        count: 1,
                        policy: gap,
                        moved_to,
                    })
                )],
                "{gap}"
            );
            // Skip: two nominal times in three days; the others list the moved time too.
            assert_eq!(times.len(), if gap == "skip" { 2 } else { 3 }, "{gap}");
            let facts = Facts::default();
            let listed = with_gaps(ledger(&times, &facts, to), gaps);
            assert_eq!(listed.len(), times.len() + 1);
            let first_from_jump = listed.iter().find(|(t, _)| *t >= jump).map(|(_, f)| f);
            assert!(
                matches!(first_from_jump, Some(Fate::DstGap(_))),
                "{gap}: the gap comes first"
            );
        }
        // Several times in one gap are one entry that counts them; outside the range, none.
        let every_20 = new_york("*/20 1-3 * * *", "skip");
        let gaps = gap_entries(&[(from, Some(&every_20))], from, to);
        assert!(
            matches!(&gaps[..], [(_, Fate::DstGap(g))] if g.count == 3),
            "{gaps:?}"
        );
        let before = gap_entries(&[(from, Some(&every_20))], from, jump);
        assert!(before.is_empty(), "the range ends at the jump (exclusive)");
        // The November overlap takes nothing.
        let fall = gap_entries(
            &[(from, Some(&every_20))],
            utc("2024-11-01T00:00:00Z"),
            utc("2024-11-05T00:00:00Z"),
        );
        assert!(fall.is_empty());
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
            not_run: None,
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
            planned_through: None,
        };
        let times: Vec<_> = [0, 10, 20, 30, 40, 50, 60, 70, 80, 100].map(t).to_vec();
        let fates = fates_of(&times, &facts, t(75));
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
                Fate::Dropped { execution_id: None },
                Fate::Dropped { execution_id: None },
                Fate::Paused {
                    notes: Some("maintenance".into()),
                    since: t(55),
                },
                Fate::DebugMode,
                Fate::DebugMode,
                Fate::Ended,
            ]
        );
        let quiet = Facts::default();
        assert_eq!(
            fates_of(&[t(1), t(9)], &quiet, t(5)),
            vec![Fate::NoRecord, Fate::Ahead]
        );
    }

    #[test]
    fn skipped_executions_say_why() {
        let skipped = RunFact::of_execution(
            "j~2",
            "Skipped",
            Some("skipped by overlap policy Skip: j~1 still running"),
        );
        assert_eq!(skipped.skipped_for.as_deref(), Some("j~1"));
        let dropped = RunFact::of_execution(
            "j~3",
            "Skipped",
            Some("dropped: the buffer of overlap policy BufferOne is full (1 waiting)"),
        );
        let missed =
            RunFact::of_execution("j~4", "Skipped", Some("missed the catch-up window: due …"));
        let ran = RunFact::of_execution("j~5", "Succeeded", None);
        let facts = Facts {
            runs: BTreeMap::from([
                (t(2), skipped),
                (t(3), dropped),
                (t(4), missed),
                (t(5), ran),
            ]),
            planned_through: Some(t(6)),
            ..Facts::default()
        };
        let fates = fates_of(&[t(2), t(3), t(4), t(5), t(6), t(7)], &facts, t(100));
        assert_eq!(
            fates,
            vec![
                Fate::Skipped {
                    execution_id: "j~2".into(),
                    held_by: Some("j~1".into())
                },
                Fate::Dropped {
                    execution_id: Some("j~3".into())
                },
                Fate::Missed {
                    execution_id: Some("j~4".into())
                },
                Fate::Ran {
                    execution_id: "j~5".into(),
                    state: "Succeeded".into()
                },
                // Before now, planned, nothing stored.
                Fate::NoRecord,
                // Before now, but after the last time planned.
                Fate::Ahead,
            ]
        );
    }

    #[test]
    fn ranges_grow_by_the_previous_time_and_keep_the_newest() {
        let mut ranges = Vec::new();
        record_after(&mut ranges, RangeReason::Missed, t(1), t(0));
        record_after(&mut ranges, RangeReason::Missed, t(2), t(1));
        record_after(&mut ranges, RangeReason::Dropped, t(3), t(2));
        record_after(&mut ranges, RangeReason::Dropped, t(5), t(4));
        assert_eq!(
            ranges.iter().map(|r| r.count).collect::<Vec<_>>(),
            vec![2, 1, 1]
        );
        for i in 0..(MAX_FIRE_RANGES as i64 + 10) {
            record_after(&mut ranges, RangeReason::Missed, t(100 + 2 * i), t(0));
        }
        assert_eq!(ranges.len(), MAX_FIRE_RANGES);
        assert_eq!(
            ranges.last().map(|r| r.first),
            Some(t(100 + 2 * (MAX_FIRE_RANGES as i64 + 9)))
        );
        let stored = serde_json::to_value(&ranges[0]).unwrap();
        assert_eq!(
            stored
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(vec![
                "kind".into(),
                "from".into(),
                "to".into(),
                "count".into()
            ])
        );
        let back: FireRange = serde_json::from_value(stored).unwrap();
        assert_eq!(back, ranges[0]);
    }

    fn schedule(spec: serde_json::Value) -> Schedule {
        let id = crate::job::JobId::parse("j").unwrap();
        let body = serde_json::json!({
            "jobName": "j", "creator": "c", "creatorName": "C",
            "request": [{"method": "GET", "url": "http://127.0.0.1:1/x"}],
            "schedule": spec,
        });
        crate::job::JobDefinition::parse(&id, &body, t(0))
            .unwrap()
            .schedule()
            .cloned()
            .unwrap()
    }

    #[test]
    fn nominal_times_follow_the_definition_in_force() {
        let every_10s = schedule(serde_json::json!({"intervals": ["10s"]}));
        let every_30s = schedule(serde_json::json!({"intervals": ["30s"]}));
        // Every 10 s, then every 30 s from t(60).
        let versions = [(t(25), Some(&every_10s)), (t(60), Some(&every_30s))];
        let times = nominal_times(&versions, "j", t(0), t(120)).unwrap();
        let ten: Vec<_> = times.iter().filter(|x| **x < t(60)).collect();
        let thirty: Vec<_> = times.iter().filter(|x| **x >= t(60)).collect();
        // The first schedule also before its version (the times before creation).
        assert_eq!(ten.len(), 6);
        assert!(ten
            .windows(2)
            .all(|w| *w[1] - *w[0] == Duration::seconds(10)));
        assert!(thirty
            .windows(2)
            .all(|w| *w[1] - *w[0] == Duration::seconds(30)));
        assert!(!thirty.is_empty() && thirty.len() <= 2);
        // A triggered-only version has no times.
        assert_eq!(
            nominal_times(&[(t(0), None)], "j", t(0), t(100)),
            Ok(Vec::new())
        );
        let every_second = schedule(serde_json::json!({"intervals": ["1s"]}));
        assert_eq!(
            nominal_times(&[(t(0), Some(&every_second))], "j", t(0), t(10_000)).map(|v| v.len()),
            Ok(10_000)
        );
        assert_eq!(
            nominal_times(&[(t(0), Some(&every_second))], "j", t(0), t(12_000)),
            Err(TooMany {
                counted: 12_000,
                more: false
            })
        );
        assert_eq!(
            nominal_times(&[(t(0), Some(&every_second))], "j", t(0), t(1_000_000)),
            Err(TooMany {
                counted: MAX_COUNTED,
                more: true
            })
        );
    }

    #[test]
    fn pauses_open_and_close_spans_with_their_notes() {
        let spans = pause_spans(&[
            (t(0), false, None),
            (t(10), true, Some("deploy".into())),
            (t(20), true, Some("still deploying".into())),
            (t(30), false, Some("done".into())),
            (t(40), true, None),
        ]);
        let span = |from, to: Option<i64>, notes: Option<&str>| Span {
            from: t(from),
            to: to.map(t),
            notes: notes.map(Into::into),
        };
        assert_eq!(
            spans,
            vec![
                span(10, Some(20), Some("deploy")),
                span(20, Some(30), Some("still deploying")),
                span(40, None, None),
            ]
        );
    }
}
