//! The schedule-spec language: when a job fires.
//!
//! Every input form (cron strings in four dialects, calendars, intervals, `timer`s (docs/api.md)) compiles to
//! one canonical [`Schedule`]: a union of calendars and epoch-aligned intervals, minus excluded
//! calendars, bounded by start and end times, evaluated in one IANA zone under one DST policy. The
//! canonical form is what `describe` and `spec preview` show and what round-trips through JSON.
//!
//! ```
//! use sundial_core::spec::Schedule;
//! let schedule = Schedule::from_json_str(r#"{"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"}"#).unwrap();
//! let from = "2024-01-05T13:00:00Z".parse().unwrap();
//! let next = schedule.next_after(from).unwrap();
//! assert_eq!(schedule.format_time(next), "2024-01-08T12:00:00+00:00");
//! ```

mod business;
mod calendar;
mod civil;
mod cron;
mod dst;
mod eval;
mod field;
mod input;
mod interval;
mod jitter;
mod recurrence;
mod words;
mod zone;

use std::sync::Arc;

use chrono::{DateTime, Datelike, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;
use serde_json::{json, Value};

pub use business::{calendar_names, BusinessCalendar, CalendarSet, Observance, Roll, YearlyRule};
pub use dst::{DstGap, DstOverlap, DstPolicy};
pub use recurrence::rrule_wall_times;

use crate::duration::Duration;
use calendar::Calendar;
use eval::WallSource;
use interval::Interval;
use recurrence::Recurrence;
use zone::ZoneRules;

pub(crate) use cron::exact_calendar;

/// An invalid spec: `path` names the field (`cron[0]`, `calendars[1].dayOfWeek`, `timer.period`) and
/// `message` says what is wrong with which token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SpecError {
    /// Where in the input the problem is, in JSON path form.
    pub path: String,
    /// What is wrong, quoting the offending token.
    pub message: String,
}

impl SpecError {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The same error nested under a parent field, e.g. `schedule.` + `cron[0]`.
    pub fn under(mut self, parent: &str) -> Self {
        self.path = if self.path.is_empty() {
            parent.to_string()
        } else {
            format!("{parent}.{}", self.path)
        };
        self
    }
}

/// Whose reading of cron strings a spec follows, so specs can be pasted verbatim from a peer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// Vixie cron with the croner/Quartz extensions; 6 fields = seconds first.
    #[default]
    Standard,
    /// Temporal Schedules: the 6th field is the year; day of month AND day of week; no `? L W #`.
    Temporal,
    /// Quartz: seconds first, day of week 1–7 with 1 = Sunday, one of the day fields is `?`.
    Quartz,
    /// Amazon EventBridge: `min hour dom mon dow year`, 1 = Sunday, `?` rules.
    EventBridge,
}

impl Dialect {
    /// The name used in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Standard => "standard",
            Dialect::Temporal => "temporal",
            Dialect::Quartz => "quartz",
            Dialect::EventBridge => "eventbridge",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [
            Dialect::Standard,
            Dialect::Temporal,
            Dialect::Quartz,
            Dialect::EventBridge,
        ]
        .into_iter()
        .find(|d| d.name() == text)
    }
}

/// A fire time: the nominal time the spec names and the due time, after jitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FireTime {
    /// The time the spec computes, before jitter; executions are keyed by it.
    pub nominal: DateTime<Utc>,
    /// When to start: nominal plus the job's deterministic jitter.
    pub due: DateTime<Utc>,
}

/// Wall-clock times of a schedule that one DST gap took away ([`Schedule::dst_gaps`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GapTime {
    /// The gap's transition: the first instant of the later offset.
    pub at: DateTime<Utc>,
    /// The first of the wall-clock times that did not exist, in the schedule's zone.
    pub wall_time: chrono::NaiveDateTime,
    /// How many of the schedule's wall-clock times fell in the gap.
    pub count: u32,
    /// The `dst.gap` policy that decided: `skip` (they did not fire), `shift` (moved by the
    /// gap's length), `transition` (moved to the gap's end).
    pub policy: &'static str,
    /// Where the first of them fired instead (`shift`, `transition`).
    pub moved_to: Option<DateTime<Utc>>,
}

/// A time a schedule would have fired but for a named calendar ([`Schedule::calendar_removals`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CalendarRemoval {
    /// The nominal time removed.
    pub at: DateTime<Utc>,
    /// The calendar whose days removed it (for `onlyOn`, the first entry's when none allowed it).
    pub calendar: String,
    /// How: `exclude` (the day is one the calendar's entry in `exclude` names) or `onlyOn` (no
    /// entry of `onlyOn` allows the day).
    pub rule: &'static str,
}

/// The most removals one call of [`Schedule::calendar_removals`] lists.
pub const MAX_CALENDAR_REMOVALS: usize = 10_000;

/// How many excluded candidates one query may step over before it gives up and reports no further
/// fire time. Exclusions skip whole runs at a time, so only adversarial specs get near this.
const MAX_EXCLUDED_STEPS: usize = 100_000;

/// The last instant the engine evaluates: the end of 2100 in the furthest zone.
const LAST_INSTANT: i64 = calendar::LOCAL_LIMIT + 14 * 3600;

/// A compiled schedule spec. Construct it with [`Schedule::from_json`]; a value that exists is valid.
#[derive(Clone, Debug)]
pub struct Schedule {
    calendars: Vec<Calendar>,
    /// RFC 5545 rules (`rrule`), sources after the calendars.
    rrules: Vec<Recurrence>,
    intervals: Vec<Interval>,
    exclude: Vec<Calendar>,
    /// `onlyOn` and the calendar names in `exclude` (shared: a schedule is cloned often).
    days: Arc<business::DayFilter>,
    start: Option<i64>,
    end: Option<i64>,
    jitter: Duration,
    dialect: Dialect,
    dst: DstPolicy,
    zone: Arc<ZoneRules>,
    /// The DST policy resolved for each calendar, then each rule, index for index.
    resolved: Vec<dst::Resolved>,
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.calendars == other.calendars
            && self.rrules == other.rrules
            && self.intervals == other.intervals
            && self.exclude == other.exclude
            && self.days == other.days
            && self.start == other.start
            && self.end == other.end
            && self.jitter == other.jitter
            && self.dialect == other.dialect
            && self.dst == other.dst
            && self.zone.tz == other.zone.tz
    }
}

/// The parts of a schedule before its zone rules and per-calendar policies are attached.
pub(crate) struct ScheduleParts {
    pub calendars: Vec<Calendar>,
    pub rrules: Vec<Recurrence>,
    pub intervals: Vec<Interval>,
    pub exclude: Vec<Calendar>,
    pub days: business::DayFilter,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub jitter: Duration,
    pub dialect: Dialect,
    pub dst: DstPolicy,
    pub tz: Tz,
}

impl Schedule {
    pub(crate) fn assemble(parts: ScheduleParts) -> Schedule {
        let resolved = parts
            .calendars
            .iter()
            .map(|c| parts.dst.resolve(c))
            .chain(
                parts
                    .rrules
                    .iter()
                    .map(|r| parts.dst.resolve_fixed(r.is_fixed_time())),
            )
            .collect();
        Schedule {
            calendars: parts.calendars,
            rrules: parts.rrules,
            intervals: parts.intervals,
            exclude: parts.exclude,
            days: Arc::new(parts.days),
            start: parts.start,
            end: parts.end,
            jitter: parts.jitter,
            dialect: parts.dialect,
            dst: parts.dst,
            zone: ZoneRules::get(parts.tz),
            resolved,
        }
    }

    /// Parses a `schedule` JSON object (docs/spec.md). A spec that names a business calendar needs
    /// [`Schedule::from_json_with`].
    pub fn from_json(value: &Value) -> Result<Schedule, SpecError> {
        input::parse_schedule(value, &CalendarSet::new())
    }

    /// Parses a `schedule` JSON object whose calendar names (`onlyOn`, `exclude`, business-day
    /// rules, docs/spec.md §16) resolve in `calendars`.
    pub fn from_json_with(value: &Value, calendars: &CalendarSet) -> Result<Schedule, SpecError> {
        input::parse_schedule(value, calendars)
    }

    /// Parses JSON text holding a `schedule` object.
    pub fn from_json_str(text: &str) -> Result<Schedule, SpecError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| SpecError::new("schedule", format!("invalid JSON: {e}")))?;
        Schedule::from_json(&value)
    }

    /// The zone calendars are evaluated in.
    pub fn time_zone(&self) -> Tz {
        self.zone.tz
    }

    /// The configured jitter bound.
    pub fn jitter(&self) -> Duration {
        self.jitter
    }

    /// The next nominal fire time strictly after `after`, or `None` when the schedule never fires
    /// again. Sub-second parts of `after` are ignored: specs have one-second resolution.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.next_nominal(after.timestamp())
            .and_then(|t| DateTime::from_timestamp(t, 0))
    }

    /// Up to `count` successive fire times strictly after `after`.
    pub fn preview(&self, after: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let mut times = Vec::with_capacity(count.min(1024));
        let mut t = after.timestamp();
        while times.len() < count {
            let Some(next) = self.next_nominal(t) else {
                break;
            };
            let Some(time) = DateTime::from_timestamp(next, 0) else {
                break;
            };
            times.push(time);
            t = next;
        }
        times
    }

    /// The next fire after `after` with `job_id`'s jitter applied: a deterministic delay in
    /// `[0, min(jitter, time to the following nominal fire))`, millisecond resolution.
    pub fn fire_after(&self, after: DateTime<Utc>, job_id: &str) -> Option<FireTime> {
        let nominal = self.next_nominal(after.timestamp())?;
        let mut max_millis = self.jitter.as_millis();
        if max_millis > 0 {
            if let Some(following) = self.next_nominal(nominal) {
                max_millis = max_millis.min(((following - nominal) as u64).saturating_mul(1000));
            }
        }
        let delay = jitter::jitter_millis(job_id, nominal, max_millis);
        let nominal_time = DateTime::from_timestamp(nominal, 0)?;
        let due = nominal_time + chrono::Duration::milliseconds(i64::try_from(delay).ok()?);
        Some(FireTime {
            nominal: nominal_time,
            due,
        })
    }

    /// Why the schedule has no fire time strictly after `after`, or `None` when it has one. A
    /// schedule like that is valid (Temporal and EventBridge accept one whose end has passed, and
    /// an update must not fail because a job has run its course), so callers report this as a
    /// warning rather than an error.
    pub fn never_fires_after(&self, after: DateTime<Utc>) -> Option<String> {
        let after = after.timestamp();
        if self.next_nominal(after).is_some() {
            return None;
        }
        let show = |t: i64| {
            DateTime::from_timestamp(t, 0)
                .map(|d| self.format_time(d))
                .unwrap_or_else(|| t.to_string())
        };
        Some(match (self.start, self.end) {
            (Some(start), _) if start > LAST_INSTANT => format!(
                "it never fires: it starts at {}, after the end of 2100, the last year Sundial evaluates",
                show(start)
            ),
            (Some(start), Some(end)) if end < start => format!(
                "it never fires: it ends at {} before it starts at {}",
                show(end),
                show(start)
            ),
            (_, Some(end)) if end <= after => {
                format!("it never fires again: it ended at {}", show(end))
            }
            _ => format!("it has no fire time after {}", show(after)),
        })
    }

    /// RFC 3339 in the schedule's zone, e.g. `2024-03-10T03:00:00-04:00`.
    pub fn format_time(&self, time: DateTime<Utc>) -> String {
        // chrono panics on local times beyond its range; no fire time is near it, but any argument may be.
        let far = time.year() <= -200_000 || time.year() >= 200_000;
        if far {
            return time.to_rfc3339_opts(SecondsFormat::AutoSi, false);
        }
        self.zone
            .tz
            .from_utc_datetime(&time.naive_utc())
            .to_rfc3339_opts(SecondsFormat::AutoSi, false)
    }

    /// The named business calendars it uses (`onlyOn`, calendar names in `exclude`, business-day
    /// rules), as it was parsed with them.
    pub fn business_calendars(&self) -> CalendarSet {
        let mut set = CalendarSet::new();
        for calendar in self
            .calendars
            .iter()
            .filter_map(Calendar::business_calendar)
        {
            set.insert_shared(Arc::clone(calendar));
        }
        for day_set in self.days.only_on.iter().chain(&self.days.exclude) {
            set.insert_shared(Arc::clone(day_set.calendar()));
        }
        set
    }

    /// The nominal times in `[from, to)` this schedule would have fired without its named
    /// calendars' day filters (`onlyOn`, and calendar names in `exclude`) and that they removed,
    /// each with the calendar that removed it, oldest first, at most [`MAX_CALENDAR_REMOVALS`]:
    /// what the non-run ledger reports. Business-day rules choose days rather than remove them,
    /// so they remove nothing here.
    pub fn calendar_removals(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Vec<CalendarRemoval> {
        if self.days.is_empty() {
            return Vec::new();
        }
        let mut unfiltered = self.clone();
        unfiltered.days = Arc::new(business::DayFilter::default());
        let mut removed = Vec::new();
        let mut after = from.timestamp() - 1;
        while removed.len() < MAX_CALENDAR_REMOVALS {
            let Some(t) = unfiltered.next_nominal(after) else {
                break;
            };
            if t >= to.timestamp() {
                break;
            }
            after = t;
            let wall = t + i64::from(self.zone.offset_at(t));
            let day = wall.div_euclid(civil::DAY);
            if let Some((calendar, rule)) = self.days.removed_by(day) {
                if let Some(at) = DateTime::from_timestamp(t, 0) {
                    removed.push(CalendarRemoval { at, calendar, rule });
                }
            }
        }
        removed
    }

    /// The wall-clock times of this schedule's calendars that DST gaps in `[from, to)` took away
    /// (the clock jumped over them), one [`GapTime`] per gap and resolved policy, oldest first:
    /// what the non-run ledger reports, since a time that does not exist never becomes a nominal
    /// time of its own. Intervals run on instants and lose nothing to a gap.
    pub fn dst_gaps(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<GapTime> {
        let (from, to) = (from.timestamp(), to.timestamp());
        let mut gaps: Vec<GapTime> = Vec::new();
        for tr in self.zone.transitions.iter().filter(|tr| tr.is_gap()) {
            if tr.at < from || tr.at >= to {
                continue;
            }
            if self.start.is_some_and(|start| tr.at < start)
                || self.end.is_some_and(|end| tr.at > end)
            {
                continue;
            }
            let (gap_start, gap_end) = (tr.at + i64::from(tr.before), tr.at + i64::from(tr.after));
            let sources = self
                .calendars
                .iter()
                .map(|c| c as &dyn WallSource)
                .chain(self.rrules.iter().map(|r| r as &dyn WallSource));
            for (calendar, policy) in sources.zip(&self.resolved) {
                let Some(first) = calendar.next_match(gap_start, gap_end) else {
                    continue;
                };
                let mut count = 0u32;
                let mut wall = Some(first);
                while let Some(w) = wall {
                    count += 1;
                    wall = calendar.next_match(w + 1, gap_end);
                }
                let moved_to = match policy.gap {
                    DstGap::Shift => Some(first - i64::from(tr.before)),
                    DstGap::Transition => Some(tr.at),
                    _ => None,
                };
                let (Some(at), Some(wall_time)) = (
                    DateTime::from_timestamp(tr.at, 0),
                    DateTime::from_timestamp(first, 0).map(|t| t.naive_utc()),
                ) else {
                    continue;
                };
                let policy = policy.gap.name();
                match gaps.iter_mut().find(|g| g.at == at && g.policy == policy) {
                    Some(same) => {
                        same.count += count;
                        if wall_time < same.wall_time {
                            same.wall_time = wall_time;
                            same.moved_to = moved_to.and_then(|t| DateTime::from_timestamp(t, 0));
                        }
                    }
                    None => gaps.push(GapTime {
                        at,
                        wall_time,
                        count,
                        policy,
                        moved_to: moved_to.and_then(|t| DateTime::from_timestamp(t, 0)),
                    }),
                }
            }
        }
        gaps
    }

    fn next_nominal(&self, after: i64) -> Option<i64> {
        // Nothing fires before 2000-01-01 local time (the earliest offset is at most 14 hours).
        let mut t = after.max(calendar::FIRST_LOCAL - 14 * 3600 - 1);
        if let Some(start) = self.start {
            t = t.max(start - 1);
        }
        // Each source (calendar or interval) keeps its own search position, so an exclusion that
        // covers one source's fires skips that source alone and leaves the others' fires in place.
        let sources = self.calendars.len() + self.rrules.len() + self.intervals.len();
        let mut next: Vec<Option<i64>> = (0..sources).map(|i| self.source_next(i, t)).collect();
        for _ in 0..MAX_EXCLUDED_STEPS {
            let candidate = next.iter().flatten().min().copied()?;
            if candidate > LAST_INSTANT || self.end.is_some_and(|end| candidate > end) {
                return None;
            }
            let offset = i64::from(self.zone.offset_at(candidate));
            let wall = candidate + offset;
            // Intervals run on instants; hold them to the span calendars keep in local time.
            if wall >= calendar::LOCAL_LIMIT {
                return None;
            }
            let exclusion = self.exclude.iter().find(|ex| ex.matches(wall));
            let day = wall.div_euclid(civil::DAY);
            let day_allowed = self.days.is_empty() || self.days.allows(day);
            if exclusion.is_none() && day_allowed && wall >= calendar::FIRST_LOCAL {
                return Some(candidate);
            }
            // A gap policy that moves fires (shift, transition) can move one out of an excluded
            // stretch at an offset change: then never step past one.
            let next_change = self
                .resolved
                .iter()
                .any(|policy| policy.gap != DstGap::Skip)
                .then(|| {
                    self.zone
                        .transitions
                        .get(self.zone.segment_index(candidate))
                        .map(|tr| tr.at - 1)
                })
                .flatten();
            for (i, slot) in next.iter_mut().enumerate() {
                if *slot != Some(candidate) {
                    continue;
                }
                // Converting a stretch's end with the largest offset errs early, never late.
                let max_offset = i64::from(self.zone.max_offset);
                let day_end = (!day_allowed).then(|| (day + 1) * civil::DAY - max_offset - 1);
                let resume = match exclusion {
                    Some(ex) => {
                        let end = ex.skip_end(wall, &self.source_fields(i)) - max_offset - 1;
                        day_end.map_or(end, |d| d.max(end))
                    }
                    None => day_end.unwrap_or(calendar::FIRST_LOCAL - offset - 1),
                };
                let resume = next_change.map_or(resume, |change| resume.min(change));
                *slot = self.source_next(i, resume.max(candidate));
            }
        }
        None
    }

    /// The next fire of source `i` (calendars first, then rules, then intervals) strictly after `t`.
    fn source_next(&self, i: usize, t: i64) -> Option<i64> {
        let policy = self.resolved.get(i).copied();
        if let Some(calendar) = self.calendars.get(i) {
            return eval::next_fire(calendar, &self.zone, policy?, t);
        }
        let i = i - self.calendars.len();
        match self.rrules.get(i) {
            Some(rule) => eval::next_fire(rule, &self.zone, policy?, t),
            None => self.intervals.get(i - self.rrules.len())?.next_after(t),
        }
    }

    /// The fields source `i` fires in; a rule or an interval may fire at any time of day.
    fn source_fields(&self, i: usize) -> calendar::FireFields {
        if let Some(calendar) = self.calendars.get(i) {
            return calendar.fire_fields();
        }
        let i = i - self.calendars.len();
        if i < self.rrules.len() {
            return calendar::FireFields::ANY;
        }
        self.intervals
            .get(i - self.rrules.len())
            .map_or(calendar::FireFields::ANY, |interval| {
                interval.fire_fields(self.zone.whole_minute_offsets())
            })
    }

    /// The canonical JSON form: calendars with range arrays, intervals, resolved DST policy.
    pub fn to_canonical_json(&self) -> Value {
        let mut obj = serde_json::Map::new();
        obj.insert(
            "calendars".into(),
            Value::Array(self.calendars.iter().map(Calendar::to_json).collect()),
        );
        if !self.rrules.is_empty() {
            obj.insert(
                "rrule".into(),
                Value::Array(self.rrules.iter().map(|r| json!(r.text())).collect()),
            );
        }
        obj.insert(
            "intervals".into(),
            Value::Array(self.intervals.iter().map(|i| i.to_json()).collect()),
        );
        obj.insert(
            "exclude".into(),
            Value::Array(
                self.exclude
                    .iter()
                    .map(Calendar::to_json)
                    .chain(self.days.exclude.iter().map(business::DaySet::to_json))
                    .collect(),
            ),
        );
        if !self.days.only_on.is_empty() {
            obj.insert(
                "onlyOn".into(),
                Value::Array(
                    self.days
                        .only_on
                        .iter()
                        .map(business::DaySet::to_json)
                        .collect(),
                ),
            );
        }
        let format_instant = |t: i64| DateTime::from_timestamp(t, 0).map(|d| self.format_time(d));
        if let Some(start) = self.start.and_then(format_instant) {
            obj.insert("startTime".into(), json!(start));
        }
        if let Some(end) = self.end.and_then(format_instant) {
            obj.insert("endTime".into(), json!(end));
        }
        if self.jitter > Duration::ZERO {
            obj.insert("jitter".into(), json!(self.jitter.to_string()));
        }
        obj.insert("timeZone".into(), json!(self.zone.tz.name()));
        obj.insert("dialect".into(), json!(self.dialect.name()));
        obj.insert(
            "dst".into(),
            json!({ "gap": self.dst.gap.name(), "overlap": self.dst.overlap.name() }),
        );
        Value::Object(obj)
    }
}

#[cfg(test)]
mod tests;

/// An epoch-aligned interval, for the timer compiler.
pub(crate) fn interval_of(every: Duration, offset: Duration) -> Result<Interval, String> {
    Interval::new(every, offset)
}
