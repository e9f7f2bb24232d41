//! docs/api.md's `timer` field compiled into a schedule.
//!
//! A timer is kept on the job exactly as written; this module decides what it means:
//!
//! | timer | meaning |
//! |---|---|
//! | absent, `{}`, or `dueTime` or a duration `period` absent (docs/api.md) | one run at creation |
//! | `period` zero (`"0s"`) with a `dueTime` | one run at the due time |
//! | `period` zero without `dueTime`, `R<n>/PT0S`, `period: ""` with a `dueTime` | refused |
//! | `R<n>/…` whose last run lies past every representable time | unbounded (saturates) |
//! | `dueTime` + duration `period` | every period from the due time (whole seconds) |
//! | `period: "R4/PT3S"` | the same, four runs |
//! | cron `period` (Quartz form, or 5-field standard) | that cron; `dueTime` is ignored |
//! | `period: "external"` | manual triggers only |
//! | `ttl` | no runs after creation + ttl (a run at exactly creation + ttl runs) |
//! | `timeZone` | the IANA zone cron periods and fixed `dueTime`s are read in (default UTC) |
//!
//! `dueTime` is a duration from creation (`10s`, `PT10S`) or a fixed time (`2023-10-01 09:00:01`,
//! read in `timeZone`, or RFC 3339 with its own offset).
//!
//! **Times from a creation at a fraction of a second** (issue 26 item 5). Every time of a timer is
//! counted from its *base*, the creation instant truncated to the whole second: the due time is
//! base + `dueTime`, the later runs every `period` after it, and the last possible run is base +
//! `ttl`, inclusive. Created at 09:00:00.734 with `{"dueTime": "1s", "period": "1s", "ttl": "3s"}`,
//! the runs are at 09:00:01, 09:00:02 and 09:00:03: three, as the seed's arithmetic gives, whatever
//! the fraction. A `dueTime` of zero (and "run once now") is the base itself, which has begun when
//! the job is created: the engine runs it at once.

use chrono::{DateTime, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use serde_json::Value;

use crate::duration::{Duration, DurationError};
use crate::spec::{
    exact_calendar, CalendarSet, Dialect, DstPolicy, Schedule, ScheduleParts, SpecError,
};

/// What a timer, or a preview request, compiles to.
#[derive(Clone, Debug, PartialEq)]
pub enum TimerPlan {
    /// Fires by this schedule.
    Scheduled(Schedule),
    /// Never fires by itself: manual triggers only (`period: "external"`).
    External,
}

/// Compiles a `timer` (docs/api.md) object; `created_at` anchors relative due times and the ttl.
pub fn compile_timer(timer: &Value, created_at: DateTime<Utc>) -> Result<TimerPlan, SpecError> {
    compile(timer, created_at).map_err(|e| e.under("timer"))
}

/// Compiles the spec part of a preview request: a bare schedule object, `{"schedule": …}` or
/// `{"timer": …}` (other keys such as `from` and `count` are left to the caller).
pub fn compile_preview_request(
    value: &Value,
    created_at: DateTime<Utc>,
) -> Result<TimerPlan, SpecError> {
    compile_preview_request_with(value, created_at, &CalendarSet::new())
}

/// [`compile_preview_request`] against the named business calendars of `calendars` (docs/spec.md
/// §16): a spec naming one that is not in the set is an error naming the field and the calendar.
pub fn compile_preview_request_with(
    value: &Value,
    created_at: DateTime<Utc>,
    calendars: &CalendarSet,
) -> Result<TimerPlan, SpecError> {
    if let Some(obj) = value.as_object() {
        match (obj.get("schedule"), obj.get("timer")) {
            (Some(_), Some(_)) => {
                return Err(SpecError::new(
                    "schedule",
                    "give either schedule or timer, not both",
                ))
            }
            (Some(schedule), None) => {
                return Schedule::from_json_with(schedule, calendars)
                    .map(TimerPlan::Scheduled)
                    .map_err(|e| e.under("schedule"))
            }
            (None, Some(timer)) => return compile_timer(timer, created_at),
            (None, None) => {}
        }
    }
    Schedule::from_json_with(value, calendars).map(TimerPlan::Scheduled)
}

/// The answer to a preview request: what `sundial spec preview` and `POST /specs/preview` return.
#[derive(Clone, Debug, PartialEq)]
pub struct Preview {
    /// Fire times, RFC 3339 in the schedule's zone.
    pub times: Vec<String>,
    /// The canonical schedule; `None` for a triggered-only timer.
    pub schedule: Option<Value>,
    /// Problems that do not make the request invalid, each starting with the field it is about:
    /// `"timer: it never fires: …"` when there is no fire time after `from`.
    pub warnings: Vec<String>,
}

/// Previews a request (see [`compile_preview_request`]) as if created at `from`: up to `count` fire
/// times strictly after `from`, jittered for `job_id` when given. A timer's times count from its
/// creation's whole second (the module's rule), so for timers that second is included.
pub fn preview(
    value: &Value,
    from: DateTime<Utc>,
    count: usize,
    job_id: Option<&str>,
) -> Result<Preview, SpecError> {
    preview_with(value, from, count, job_id, &CalendarSet::new())
}

/// A `POST /specs/preview` request, read: `{"schedule"|"timer": …, "from", "count", "jobId"}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PreviewRequest {
    /// The request as sent: its `schedule` or `timer` is compiled as a job's would be.
    body: Value,
    /// From when (default: now, which the caller knows).
    pub from: Option<DateTime<Utc>>,
    /// How many times, 1–1000 (default 10).
    pub count: usize,
    /// The job whose jitter the times take, if any.
    pub job_id: Option<String>,
}

impl PreviewRequest {
    /// Reads a request; errors name the field. The spec itself is checked when it is compiled
    /// ([`PreviewRequest::preview`]), against the calendars it names.
    pub fn parse(body: &Value) -> Result<PreviewRequest, SpecError> {
        let field_error = |key: &str, message: String| SpecError::new(key, message);
        let obj = body
            .as_object()
            .ok_or_else(|| field_error("body", "expected a JSON object".into()))?;
        if let Some(key) = obj.keys().find(|key| {
            !matches!(
                key.as_str(),
                "schedule" | "timer" | "from" | "count" | "jobId"
            )
        }) {
            return Err(field_error(
                key,
                "unknown field; expected schedule or timer, from, count, jobId".into(),
            ));
        }
        if !obj.contains_key("schedule") && !obj.contains_key("timer") {
            return Err(field_error("schedule", "required (or timer)".into()));
        }
        let from = match obj.get("from") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(
                DateTime::parse_from_rfc3339(text)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| {
                        field_error("from", format!("expected an RFC 3339 time, got {text:?}"))
                    })?,
            ),
            Some(other) => {
                return Err(field_error(
                    "from",
                    format!("expected an RFC 3339 time, got {other}"),
                ))
            }
        };
        let count = match obj.get("count") {
            None | Some(Value::Null) => 10,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| {
                    field_error(
                        "count",
                        format!("expected an integer from 1 to 1000, got {v}"),
                    )
                })? as usize,
        };
        let job_id = match obj.get("jobId") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id.clone()),
            Some(other) => {
                return Err(field_error(
                    "jobId",
                    format!("expected a string, got {other}"),
                ))
            }
        };
        Ok(PreviewRequest {
            body: body.clone(),
            from,
            count,
            job_id,
        })
    }

    /// The `schedule` spec, if the request has one (its named calendars are read for it).
    pub fn schedule(&self) -> Option<&Value> {
        self.body.get("schedule")
    }

    /// The times from `from` (the request's, else `now`), against the named calendars of
    /// `calendars` ([`preview_with`]).
    pub fn preview(
        &self,
        now: DateTime<Utc>,
        calendars: &CalendarSet,
    ) -> Result<Preview, SpecError> {
        preview_with(
            &self.body,
            self.from.unwrap_or(now),
            self.count,
            self.job_id.as_deref(),
            calendars,
        )
    }
}

/// [`preview`] against the named business calendars of `calendars`, as
/// [`compile_preview_request_with`] reads them: what `POST /specs/preview` answers with the
/// calendars the store holds.
pub fn preview_with(
    value: &Value,
    from: DateTime<Utc>,
    count: usize,
    job_id: Option<&str>,
    calendars: &CalendarSet,
) -> Result<Preview, SpecError> {
    let schedule = match compile_preview_request_with(value, from, calendars)? {
        TimerPlan::External => {
            return Ok(Preview {
                times: Vec::new(),
                schedule: None,
                warnings: Vec::new(),
            })
        }
        TimerPlan::Scheduled(schedule) => schedule,
    };
    let mut after = from;
    if value.get("timer").is_some() {
        after = DateTime::from_timestamp(from.timestamp() - 1, 0).unwrap_or(from);
    }
    let field = if value.get("timer").is_some() {
        "timer"
    } else {
        "schedule"
    };
    let warnings = schedule
        .never_fires_after(after)
        .map(|why| format!("{field}: {why}"))
        .into_iter()
        .collect();
    let times = match job_id {
        None => schedule.preview(after, count),
        Some(job_id) => {
            let mut times = Vec::with_capacity(count.min(1024));
            while times.len() < count {
                let Some(fire) = schedule.fire_after(after, job_id) else {
                    break;
                };
                times.push(fire.due);
                after = fire.nominal;
            }
            times
        }
    };
    Ok(Preview {
        times: times.into_iter().map(|t| schedule.format_time(t)).collect(),
        schedule: Some(schedule.to_canonical_json()),
        warnings,
    })
}

fn compile(timer: &Value, created_at: DateTime<Utc>) -> Result<TimerPlan, SpecError> {
    let empty = serde_json::Map::new();
    let obj = match timer {
        Value::Null => &empty,
        Value::Object(obj) => obj,
        _ => {
            return Err(SpecError::new(
                "",
                "expected an object like {\"dueTime\": \"10s\", \"period\": \"5m\"}",
            ))
        }
    };
    for key in obj.keys() {
        if !matches!(key.as_str(), "dueTime" | "period" | "ttl" | "timeZone") {
            return Err(SpecError::new(
                key.as_str(),
                "unknown field; expected dueTime, period, ttl, timeZone",
            ));
        }
    }
    let text = |key: &str| -> Result<Option<&str>, SpecError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim())),
            Some(other) => Err(SpecError::new(
                key,
                format!("expected a string, got {other}"),
            )),
        }
    };
    let zone = match text("timeZone")? {
        None => None,
        Some(name) => Some(name.parse::<Tz>().map_err(|_| {
            SpecError::new(
                "timeZone",
                format!("unknown time zone {name:?}; expected an IANA name like \"Asia/Shanghai\""),
            )
        })?),
    };
    let tz = zone.unwrap_or(Tz::UTC);
    // The base every time counts from: the creation's whole second (see the module's rule).
    let created = created_at.timestamp();
    let end = match text("ttl")? {
        Some(ttl) => {
            Some(created + secs(Duration::parse(ttl).map_err(|m| SpecError::new("ttl", m))?))
        }
        None => None,
    };
    let period = text("period")?;
    // Read before the branches that ignore it (an external or cron period), so that a dueTime of
    // the wrong type is refused there too rather than stored and shown back.
    let due = text("dueTime")?;
    if period.is_some_and(|p| p.eq_ignore_ascii_case("external")) {
        return Ok(TimerPlan::External);
    }
    if let Some(cron) = period.filter(|p| p.contains(char::is_whitespace) || p.starts_with('@')) {
        return cron_timer(cron, zone, end);
    }
    // docs/api.md: "if timer is not set, or either dueTime or period is empty, run once, now". What is
    // written is still validated, so a typo is an error rather than a silent "now", and a period
    // that would throw a written dueTime away is refused rather than ignored.
    let period_written_blank =
        matches!(obj.get("period"), Some(Value::String(p)) if p.trim().is_empty());
    if period_written_blank && due.is_some() {
        return Err(SpecError::new(
            "period",
            "is empty, which would ignore dueTime and run once now; give a period \
             (\"0s\" for one run at dueTime), or leave dueTime out for one run now",
        ));
    }
    let (anchor, (every, runs)) = anchor_and_period(due, period, created, tz)?;
    timer_schedule(anchor, every, runs, end, tz).map(TimerPlan::Scheduled)
}

/// A timer whose period is a cron string: a schedule of that cron in the timer's zone, ending at
/// its `ttl`.
fn cron_timer(cron: &str, zone: Option<Tz>, end: Option<i64>) -> Result<TimerPlan, SpecError> {
    // docs/api.md writes cron periods in Quartz form (`0 */1 * * * ?`); a 5-field string is standard cron.
    // A `CRON_TZ=`/`TZ=` prefix is not a field: count what follows it.
    let body = match cron.split_once(char::is_whitespace) {
        Some((prefix, rest)) if prefix.starts_with("CRON_TZ=") || prefix.starts_with("TZ=") => {
            rest.trim()
        }
        _ => cron,
    };
    let dialect = if body.split_whitespace().count() == 5 || body.starts_with('@') {
        "standard"
    } else {
        "quartz"
    };
    let mut spec = serde_json::json!({ "cron": [cron], "dialect": dialect });
    if let Some(zone) = zone {
        // A prefix that names another zone is refused by the spec engine, as in a schedule.
        spec["timeZone"] = Value::String(zone.name().to_string());
    }
    if let Some(end) = end.and_then(|e| DateTime::from_timestamp(e, 0)) {
        spec["endTime"] = Value::String(end.to_rfc3339());
    }
    Schedule::from_json(&spec)
        .map(TimerPlan::Scheduled)
        .map_err(|e| SpecError::new("period", e.message))
}

/// How a timer repeats: every so long and at most so many runs; `(None, None)` for one run.
type Repeat = (Option<Duration>, Option<u64>);

/// The first time a timer counts from (its `dueTime`, or its creation) and its period: every so
/// long and how many runs, or none for one run. A period or due time written wrong is refused
/// even where the other leaves it unused.
fn anchor_and_period(
    due: Option<&str>,
    period: Option<&str>,
    created: i64,
    tz: Tz,
) -> Result<(i64, Repeat), SpecError> {
    Ok(match (due, period) {
        (Some(due), Some(period)) => (
            parse_due(due, created, tz).map_err(|m| SpecError::new("dueTime", m))?,
            match parse_period(period).map_err(|m| SpecError::new("period", m))? {
                // docs/api.md: `"dueTime": "2023-10-01 09:00:01", "period": "0s"` runs once then.
                Period::Zero => (None, None),
                Period::Every(every, runs) => (Some(every), runs),
            },
        ),
        (due, period) => {
            if let Some(due) = due {
                parse_due(due, created, tz).map_err(|m| SpecError::new("dueTime", m))?;
            }
            if let Some(period) = period {
                if parse_period(period).map_err(|m| SpecError::new("period", m))? == Period::Zero {
                    return Err(SpecError::new(
                        "period",
                        format!(
                            "{period:?} is zero, which means one run at dueTime, and there is no \
                             dueTime; give one, or leave the timer out for one run now"
                        ),
                    ));
                }
            }
            (created, (None, None))
        }
    })
}

/// The schedule of a timer counting from `anchor`: one run at it, or a run every `every` (at most
/// `runs` of them), until `end`.
fn timer_schedule(
    anchor: i64,
    every: Option<Duration>,
    runs: Option<u64>,
    end: Option<i64>,
    tz: Tz,
) -> Result<Schedule, SpecError> {
    let parts = |calendars, intervals, start, end| ScheduleParts {
        calendars,
        rrules: Vec::new(),
        intervals,
        exclude: Vec::new(),
        days: Default::default(),
        start,
        end,
        jitter: Duration::ZERO,
        dialect: Dialect::Standard,
        dst: DstPolicy::default_for(Dialect::Standard),
        tz,
    };
    match every {
        None => {
            // One run at `anchor`, a calendar of its wall time in the zone. A wall time the clocks
            // pass twice is taken at the pass `anchor` is in.
            let instant = DateTime::from_timestamp(anchor, 0)
                .ok_or_else(|| SpecError::new("dueTime", "out of range"))?;
            let naive = instant.with_timezone(&tz).naive_local();
            let second_pass = matches!(
                tz.from_local_datetime(&naive),
                LocalResult::Ambiguous(first, _) if first.timestamp() != anchor
            );
            let comment = Some("timer: one run".to_string());
            let mut one = parts(vec![exact_calendar(naive, comment)], Vec::new(), None, end);
            if second_pass {
                one.dst.overlap = crate::spec::DstOverlap::Second;
            }
            Ok(Schedule::assemble(one))
        }
        Some(every) => {
            let step = secs(every);
            let offset = Duration::from_secs(anchor.rem_euclid(step) as u64);
            let interval =
                crate::spec::interval_of(every, offset).map_err(|m| SpecError::new("period", m))?;
            // `R<n>` times the period may pass any representable instant: then the runs outlast
            // the span the engine evaluates, and the count sets no end (it saturates). An end no
            // RFC 3339 time can show (past the year 9999) is no end either: the canonical form,
            // whose `endTime` is RFC 3339, could not carry it.
            let last = runs.and_then(|n| {
                i64::try_from(n - 1)
                    .ok()
                    .and_then(|k| k.checked_mul(step))
                    .and_then(|span| anchor.checked_add(span))
                    .filter(|last| *last <= LATEST_RFC3339_SECOND)
            });
            let end = match (last, end) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            Ok(Schedule::assemble(parts(
                Vec::new(),
                vec![interval],
                Some(anchor),
                end,
            )))
        }
    }
}

/// 9999-12-31T23:59:59Z, the latest time RFC 3339's four-digit years can write (chrono reaches
/// further, to year 262143, which no `endTime` can be given as).
const LATEST_RFC3339_SECOND: i64 = 253_402_300_799;

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 4)
}

/// A due time: a duration after the base `created`, or a fixed time (read in `tz`).
fn parse_due(text: &str, created: i64, tz: Tz) -> Result<i64, String> {
    match Duration::parse(text) {
        Ok(d) => {
            let millis =
                i64::try_from(d.as_millis()).map_err(|_| "too far in the future".to_string())?;
            return Ok(created + (millis + 999) / 1000);
        }
        Err(e @ DurationError::TooLong(_)) => return Err(e.into()),
        Err(DurationError::Invalid(_)) => {}
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp());
    }
    parse_fixed_time(text).map(|t| local_instant(tz, t)).ok_or_else(|| {
        format!("expected a duration (\"10s\", \"PT10S\") or a time (\"2023-10-01 09:00:01\"), got {text:?}")
    })
}

/// The instant of the wall time `local` in `tz`, as a fixed-time calendar reads it (docs/spec.md's
/// `auto` DST policy): a time the clocks pass twice is its first pass; a time they skip is the
/// first instant after the gap.
fn local_instant(tz: Tz, local: NaiveDateTime) -> i64 {
    if let Some(t) = tz.from_local_datetime(&local).earliest() {
        return t.timestamp();
    }
    // In a gap: the first whole minute after it (gaps start and end on whole minutes; the longest,
    // a skipped day, is 24 hours).
    let mut probe = local;
    for _ in 0..(2 * 24 * 60) {
        probe += chrono::Duration::minutes(1);
        let minute = probe.with_second(0).unwrap_or(probe);
        if let Some(t) = tz.from_local_datetime(&minute).earliest() {
            return t.timestamp();
        }
    }
    local.and_utc().timestamp()
}

/// `2023-10-01 09:00:01`, also with unpadded parts (`2023-10-1 9:00:01`) as docs/api.md writes them.
fn parse_fixed_time(text: &str) -> Option<NaiveDateTime> {
    let (date, time) = text.split_once([' ', 'T'])?;
    let mut d = date.split('-').map(|p| p.parse::<u32>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.trim().split(':').map(|p| p.parse::<u32>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next().flatten().unwrap_or(0));
    if d.next().is_some() || t.next().is_some() {
        return None;
    }
    NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m, day)?.and_hms_opt(h, min, s)
}

/// What a duration `period` asks for.
#[derive(Debug, PartialEq)]
enum Period {
    /// `0s`: a single run at the due time (docs/api.md).
    Zero,
    /// Every so long, `n` runs when `R<n>/` gave a count.
    Every(Duration, Option<u64>),
}

/// A period: a duration, or `R<n>/<duration>` / `R/<duration>` (ISO 8601 repeating interval). A
/// repeating interval must repeat something: `R4/PT0S` is refused.
fn parse_period(text: &str) -> Result<Period, String> {
    let (repeating, runs, body) = match text.strip_prefix(['R', 'r']) {
        Some(rest) => {
            let (n, body) = rest.split_once('/').ok_or_else(|| {
                format!("expected R<n>/<duration> like \"R4/PT3S\", got {text:?}")
            })?;
            let runs = if n.is_empty() {
                None
            } else {
                let n: u64 = n
                    .parse()
                    .map_err(|_| format!("invalid repeat count {n:?} in {text:?}"))?;
                if n == 0 {
                    return Err(format!("{text:?} repeats zero times"));
                }
                Some(n)
            };
            (true, runs, body)
        }
        None => (false, None, text),
    };
    let every = Duration::parse(body)?;
    if every == Duration::ZERO {
        if repeating {
            return Err(format!(
                "{text:?} repeats a zero period; a repeating period must be at least 1s"
            ));
        }
        return Ok(Period::Zero);
    }
    if !every.is_whole_seconds() {
        return Err(format!("period {every} must be a whole number of seconds"));
    }
    Ok(Period::Every(every, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_request_is_read_with_its_defaults_and_refusals() {
        let request =
            PreviewRequest::parse(&serde_json::json!({"schedule": {"cron": ["0 9 * * *"]}}))
                .unwrap();
        assert_eq!(
            (request.from, request.count, request.job_id.as_deref()),
            (None, 10, None)
        );
        assert!(request.schedule().is_some());
        let times = request
            .preview(at("2026-12-02T10:00:00Z"), &CalendarSet::new())
            .unwrap()
            .times;
        assert_eq!(
            times.first().map(String::as_str),
            Some("2026-12-03T09:00:00+00:00")
        );
        for (body, field) in [
            (serde_json::json!([]), "body"),
            (
                serde_json::json!({"timer": {"period": "1h"}, "when": 1}),
                "when",
            ),
            (serde_json::json!({"count": 3}), "schedule"),
            (
                serde_json::json!({"timer": {"period": "1h"}, "count": 1001}),
                "count",
            ),
            (
                serde_json::json!({"timer": {"period": "1h"}, "from": "soon"}),
                "from",
            ),
            (
                serde_json::json!({"timer": {"period": "1h"}, "jobId": 7}),
                "jobId",
            ),
        ] {
            assert_eq!(
                PreviewRequest::parse(&body).unwrap_err().path,
                field,
                "{body}"
            );
        }
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap_or_default()
    }

    fn times(timer: Value, created: &str, count: usize) -> Vec<String> {
        match compile_timer(&timer, at(created)) {
            Ok(TimerPlan::Scheduled(s)) => s
                .preview(at(created) - chrono::Duration::seconds(1), count)
                .iter()
                .map(|t| t.to_rfc3339())
                .collect(),
            Ok(TimerPlan::External) => vec!["external".into()],
            Err(e) => vec![e.to_string()],
        }
    }

    /// Found by schemathesis through the API: with a cron or external period, which ignore
    /// `dueTime`, a `dueTime` of the wrong type (`{}`) was accepted and stored.
    #[test]
    fn a_due_time_of_the_wrong_type_is_refused_whatever_the_period() {
        let created = "2023-09-30T00:00:00Z";
        for period in ["0 0 6 * * ?", "external", "5m"] {
            let timer = serde_json::json!({"dueTime": {}, "period": period});
            assert_eq!(
                times(timer, created, 1),
                vec!["timer.dueTime: expected a string, got {}".to_string()],
                "{period}"
            );
        }
        // A string is still ignored with a cron period, as docs/api.md says.
        let timer = serde_json::json!({"dueTime": "10s", "period": "0 0 6 * * ?"});
        assert_eq!(times(timer, created, 1), vec!["2023-09-30T06:00:00+00:00"]);
    }

    #[test]
    fn seed_002_examples() {
        let created = "2023-09-30T00:00:00Z";
        assert_eq!(
            times(serde_json::json!(null), created, 3),
            vec!["2023-09-30T00:00:00+00:00"]
        );
        assert_eq!(
            times(
                serde_json::json!({"dueTime": "10s", "period": "R4/PT3S"}),
                created,
                9
            ),
            vec![
                "2023-09-30T00:00:10+00:00",
                "2023-09-30T00:00:13+00:00",
                "2023-09-30T00:00:16+00:00",
                "2023-09-30T00:00:19+00:00"
            ]
        );
        assert_eq!(
            times(
                serde_json::json!({"dueTime": "2023-10-01 09:00:01", "period": "0s"}),
                created,
                3
            ),
            vec!["2023-10-01T09:00:01+00:00"]
        );
        assert_eq!(
            times(
                serde_json::json!({"dueTime": "2023-10-1 09:00:01", "period": "5m"}),
                created,
                2
            ),
            vec!["2023-10-01T09:00:01+00:00", "2023-10-01T09:05:01+00:00"]
        );
        assert_eq!(
            times(
                serde_json::json!({"dueTime": "1h", "period": "5m"}),
                created,
                2
            ),
            vec!["2023-09-30T01:00:00+00:00", "2023-09-30T01:05:00+00:00"]
        );
        assert_eq!(
            times(
                serde_json::json!({"dueTime": "0s", "period": "0 */1 * * * ?"}),
                created,
                2
            ),
            vec!["2023-09-30T00:00:00+00:00", "2023-09-30T00:01:00+00:00"]
        );
        assert_eq!(
            times(
                serde_json::json!({"dueTime": "0s", "period": "1 0 9 1 10 ? 2023"}),
                created,
                2
            ),
            vec!["2023-10-01T09:00:01+00:00"]
        );
        assert_eq!(
            times(
                serde_json::json!({"dueTime": "0s", "period": "external"}),
                created,
                2
            ),
            vec!["external"]
        );
        assert_eq!(
            times(
                serde_json::json!({"period": "0 0/5 * * * ?", "dueTime": "2s", "ttl": "11m"}),
                created,
                5
            ),
            vec![
                "2023-09-30T00:00:00+00:00",
                "2023-09-30T00:05:00+00:00",
                "2023-09-30T00:10:00+00:00"
            ]
        );
    }

    #[test]
    fn one_empty_field_means_one_run_now() {
        let created = "2023-09-30T00:00:00Z";
        for timer in [
            serde_json::json!({"dueTime": "10s"}),
            serde_json::json!({"period": "5m"}),
            serde_json::json!({"dueTime": "", "period": "5m"}),
        ] {
            assert_eq!(times(timer, created, 3), vec!["2023-09-30T00:00:00+00:00"]);
        }
    }

    /// Issue 12 item 8: `R<n>` times the period used to wrap around 64-bit seconds (no times at
    /// all, or an end before the start) and to panic in debug builds. The count now saturates: runs
    /// that outlast every representable instant are unbounded.
    #[test]
    fn huge_repeat_counts_saturate() {
        let created = "2024-01-01T00:00:00Z";
        for (period, expected) in [
            (
                "R9223372036854775807/PT1S",
                ["2024-01-01T00:00:01+00:00", "2024-01-01T00:00:02+00:00"],
            ),
            (
                "R18446744073709551615/P1D",
                ["2024-01-01T00:00:01+00:00", "2024-01-02T00:00:01+00:00"],
            ),
            (
                "R9223372036854775808/PT1H",
                ["2024-01-01T00:00:01+00:00", "2024-01-01T01:00:01+00:00"],
            ),
        ] {
            let timer = serde_json::json!({"dueTime": "1s", "period": period});
            let got = times(timer, created, 2);
            assert_eq!(got, expected, "{period}");
        }
    }

    /// Found by the `timer` fuzz target: a count whose last run is a representable number of
    /// seconds but no representable time (here about 190 billion years out) left an end the
    /// canonical JSON could not show, so the schedule read back from it was another schedule.
    #[test]
    fn a_saturated_count_round_trips_through_the_canonical_form() {
        let timer = serde_json::json!({"dueTime": "PT10S", "period": "R2000000000000000000/PT3S"});
        let Ok(TimerPlan::Scheduled(schedule)) = compile_timer(&timer, at("2052-05-21T08:20:18Z"))
        else {
            panic!("a schedule");
        };
        let canonical = schedule.to_canonical_json();
        let again = crate::spec::Schedule::from_json(&canonical).expect("canonical parses");
        assert!(again == schedule, "{canonical}");
    }

    /// Found by the `timer` fuzz target in CI: a last run about 190,000 years out is a time chrono
    /// can hold but RFC 3339 cannot write (`+192200-…`), so the canonical JSON's `endTime` did
    /// not parse back.
    #[test]
    fn a_count_past_the_year_9999_saturates_too() {
        for created in ["2067-08-28T23:03:09Z", "2024-01-01T00:00:00Z"] {
            let timer = serde_json::json!({"dueTime": "PT10S", "period": "R2000000000000/PT3S"});
            let Ok(TimerPlan::Scheduled(schedule)) = compile_timer(&timer, at(created)) else {
                panic!("a schedule");
            };
            let canonical = schedule.to_canonical_json();
            let again = crate::spec::Schedule::from_json(&canonical).expect("canonical parses");
            assert!(again == schedule, "{canonical}");
        }
        // A count whose last run falls within the year 9999 keeps its end.
        let timer = serde_json::json!({"dueTime": "0s", "period": "R3/PT1S"});
        let Ok(TimerPlan::Scheduled(schedule)) = compile_timer(&timer, at("2024-01-01T00:00:00Z"))
        else {
            panic!("a schedule");
        };
        assert!(schedule
            .to_canonical_json()
            .to_string()
            .contains("2024-01-01T00:00:02"));
    }

    /// Issue 26 item 4: a timer had no zone, so cron periods and fixed dates were read in UTC.
    /// `timeZone` now reads both in the zone; relative due times are unchanged; the times are
    /// shown in the zone.
    #[test]
    fn time_zone_reads_cron_periods_and_fixed_dates_in_the_zone() {
        let created = "2023-09-30T00:00:00Z";
        let zoned = |timer: Value| times(timer, created, 2);
        assert_eq!(
            zoned(serde_json::json!({"period": "0 0 9 * * ?", "timeZone": "Asia/Shanghai"})),
            ["2023-09-30T01:00:00+00:00", "2023-10-01T01:00:00+00:00"]
        );
        assert_eq!(
            zoned(serde_json::json!({"period": "0 9 * * *", "timeZone": "Asia/Shanghai"})),
            ["2023-09-30T01:00:00+00:00", "2023-10-01T01:00:00+00:00"]
        );
        assert_eq!(
            zoned(
                serde_json::json!({"dueTime": "2023-10-01 09:00:01", "period": "0s", "timeZone": "Asia/Shanghai"})
            ),
            ["2023-10-01T01:00:01+00:00"]
        );
        assert_eq!(
            zoned(
                serde_json::json!({"dueTime": "2023-10-01 09:00:01", "period": "5m", "timeZone": "Asia/Shanghai"})
            ),
            ["2023-10-01T01:00:01+00:00", "2023-10-01T01:05:01+00:00"]
        );
        // Relative due times and RFC 3339 times with an offset do not depend on the zone.
        assert_eq!(
            zoned(
                serde_json::json!({"dueTime": "1h", "period": "5m", "timeZone": "Asia/Shanghai"})
            ),
            ["2023-09-30T01:00:00+00:00", "2023-09-30T01:05:00+00:00"]
        );
        assert_eq!(
            zoned(
                serde_json::json!({"dueTime": "2023-10-01T09:00:01Z", "period": "0s", "timeZone": "Asia/Shanghai"})
            ),
            ["2023-10-01T09:00:01+00:00"]
        );
        // The schedule shows its times in the zone.
        let Ok(TimerPlan::Scheduled(schedule)) = compile_timer(
            &serde_json::json!({"period": "0 0 9 * * ?", "timeZone": "Asia/Shanghai"}),
            at(created),
        ) else {
            panic!("a schedule");
        };
        assert_eq!(schedule.time_zone(), Tz::Asia__Shanghai);
        assert_eq!(
            schedule
                .preview(at(created), 1)
                .first()
                .map(|t| schedule.format_time(*t)),
            Some("2023-09-30T09:00:00+08:00".to_string())
        );
        assert_eq!(schedule.to_canonical_json()["timeZone"], "Asia/Shanghai");
    }

    /// `CRON_TZ=` (and `TZ=`) before a cron period sets its zone; a 5-field body after the prefix
    /// is standard cron, not a 6-field Quartz one; a prefix that disagrees with `timeZone` is
    /// refused; a bad zone names `timer.timeZone`.
    #[test]
    fn cron_tz_prefix_and_bad_zones() {
        let created = "2023-09-30T00:00:00Z";
        for period in [
            "CRON_TZ=Asia/Shanghai 0 9 * * *",
            "CRON_TZ=Asia/Shanghai 0 0 9 * * ?",
            "TZ=Asia/Shanghai 0 9 * * *",
        ] {
            assert_eq!(
                times(serde_json::json!({"period": period}), created, 1),
                ["2023-09-30T01:00:00+00:00"],
                "{period}"
            );
        }
        let conflict = times(
            serde_json::json!({"period": "CRON_TZ=Asia/Tokyo 0 9 * * *", "timeZone": "Asia/Shanghai"}),
            created,
            1,
        );
        assert!(
            conflict[0].starts_with("timer.period:") && conflict[0].contains("conflicts"),
            "{conflict:?}"
        );
        let bad = times(
            serde_json::json!({"period": "5m", "dueTime": "1s", "timeZone": "Mars/Olympus"}),
            created,
            1,
        );
        assert_eq!(
            bad,
            ["timer.timeZone: unknown time zone \"Mars/Olympus\"; expected an IANA name like \"Asia/Shanghai\""]
        );
        let typed = times(serde_json::json!({"timeZone": 8}), created, 1);
        assert!(typed[0].starts_with("timer.timeZone:"), "{typed:?}");
    }

    /// A fixed date in a DST change: a wall time the clocks pass twice is its first pass, one they
    /// skip the first instant after the gap (as a fixed-time cron reads them).
    #[test]
    fn fixed_dates_across_dst_changes() {
        let created = "2024-01-01T00:00:00Z";
        let ny = |due: &str| {
            times(
                serde_json::json!({"dueTime": due, "period": "1h", "timeZone": "America/New_York"}),
                created,
                1,
            )
        };
        // 2024-11-03 01:30 happens twice in New York (EDT, then EST): the first, 05:30Z.
        assert_eq!(ny("2024-11-03 01:30:00"), ["2024-11-03T05:30:00+00:00"]);
        // 2024-03-10 02:30 does not happen: 03:00 EDT, 07:00Z.
        assert_eq!(ny("2024-03-10 02:30:00"), ["2024-03-10T07:00:00+00:00"]);
        // One run at a relative time in the second pass keeps that pass.
        let Ok(TimerPlan::Scheduled(schedule)) = compile_timer(
            &serde_json::json!({"dueTime": "0s", "period": "0s", "timeZone": "America/New_York"}),
            at("2024-11-03T06:30:00Z"),
        ) else {
            panic!("a schedule");
        };
        assert_eq!(
            schedule.preview(at("2024-11-03T06:29:59Z"), 2),
            [at("2024-11-03T06:30:00Z")]
        );
    }

    /// Issue 26 item 5: the times count from the creation's whole second. Created at any fraction
    /// of 00:00:00, `{"dueTime": "1s", "period": "1s", "ttl": "3s"}` fires at 00:00:01, :02 and :03
    /// (the ttl's end is inclusive), and a timer due at once fires at 00:00:00.
    #[test]
    fn times_count_from_the_creations_whole_second() {
        for fraction in ["000", "001", "250", "500", "999"] {
            let created = format!("2023-09-30T00:00:00.{fraction}Z");
            let Ok(TimerPlan::Scheduled(schedule)) = compile_timer(
                &serde_json::json!({"dueTime": "1s", "period": "1s", "ttl": "3s"}),
                at(&created),
            ) else {
                panic!("a schedule");
            };
            let got: Vec<String> = schedule
                .preview(at(&created) - chrono::Duration::seconds(1), 5)
                .iter()
                .map(|t| t.to_rfc3339())
                .collect();
            assert_eq!(
                got,
                [
                    "2023-09-30T00:00:01+00:00",
                    "2023-09-30T00:00:02+00:00",
                    "2023-09-30T00:00:03+00:00"
                ],
                "created {created}"
            );
            let once = preview(&serde_json::json!({"timer": {}}), at(&created), 3, None)
                .map(|p| p.times)
                .unwrap_or_default();
            assert_eq!(once, ["2023-09-30T00:00:00+00:00"], "created {created}");
        }
    }

    #[test]
    fn errors_name_the_timer_field() {
        let err = |v: Value| {
            compile_timer(&v, at("2023-09-30T00:00:00Z"))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err(serde_json::json!({"period": "5x"})).starts_with("timer.period:"));
        assert!(err(serde_json::json!({"dueTime": "tomorrow"})).starts_with("timer.dueTime:"));
        assert!(err(serde_json::json!({"period": "R0/PT3S"})).starts_with("timer.period:"));
        assert!(err(serde_json::json!({"period": "0 0 * * * * * *"})).starts_with("timer.period:"));
        assert!(err(serde_json::json!({"due": "1s"})).starts_with("timer.due:"));
    }
}
