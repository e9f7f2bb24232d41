//! Reading a `schedule` JSON object into a [`Schedule`], with errors that name the field.
//!
//! The input is walked as a `serde_json::Value` rather than derived with serde: fields take several
//! shapes (a cron string or a list, a calendar field as text or as ranges, an interval as `"6h/5h"` or
//! an object) and every rejection has to say where it happened and which token was wrong.

use chrono::DateTime;
use chrono_tz::Tz;
use serde_json::{Map, Value};

use super::business::{BusinessDays, BusinessRule, CalendarSet, DayFilter, DaySet, Roll};
use super::calendar::Calendar;
use super::cron::{parse_cron, syntax, CronBody};
use super::dst::{DstGap, DstOverlap, DstPolicy};
use super::field::{parse_field, parse_structured, FieldKind, FieldSpec, Syntax, TEMPORAL_YEARS};
use super::interval::Interval;
use super::recurrence::Recurrence;
use super::{Dialect, Schedule, ScheduleParts, SpecError};
use crate::duration::Duration;

const KEYS: [&str; 12] = [
    "cron",
    "calendars",
    "rrule",
    "onlyOn",
    "intervals",
    "exclude",
    "startTime",
    "endTime",
    "jitter",
    "timeZone",
    "dialect",
    "dst",
];
const CALENDAR_KEYS: [&str; 12] = [
    "second",
    "minute",
    "hour",
    "dayOfMonth",
    "month",
    "year",
    "dayOfWeek",
    "comment",
    "calendar",
    "businessDay",
    "roll",
    "businessDayOffset",
];

/// More entries than this in one list are refused: a spec is configuration, not data.
const MAX_ITEMS: usize = 256;

pub(crate) fn parse_schedule(value: &Value, named: &CalendarSet) -> Result<Schedule, SpecError> {
    let obj = value
        .as_object()
        .ok_or_else(|| SpecError::new("schedule", "expected a JSON object"))?;
    for key in obj.keys() {
        if !KEYS.contains(&key.as_str()) {
            return Err(SpecError::new(
                key.as_str(),
                format!("unknown field; expected one of {}", KEYS.join(", ")),
            ));
        }
    }
    let dialect = parse_dialect(obj.get("dialect"))?;
    let mut tz = parse_time_zone(obj.get("timeZone"))?;

    let (mut calendars, mut intervals) = parse_crons(obj.get("cron"), dialect, &mut tz)?;
    for (i, cal) in list(obj.get("calendars"), "calendars")?.iter().enumerate() {
        calendars.push(
            parse_calendar(cal, dialect, Some(named))
                .map_err(|e| e.under(&format!("calendars[{i}]")))?,
        );
    }
    for (i, item) in list(obj.get("intervals"), "intervals")?.iter().enumerate() {
        intervals
            .push(parse_interval(item).map_err(|m| SpecError::new(format!("intervals[{i}]"), m))?);
    }
    let (exclude, days) = parse_days(obj, dialect, named)?;
    let start = instant(obj.get("startTime"), "startTime")?;
    let zone = tz.unwrap_or(Tz::UTC);
    let rrules = parse_rrules(obj.get("rrule"), start, zone)?;
    if calendars.is_empty() && intervals.is_empty() && rrules.is_empty() {
        return Err(SpecError::new(
            "schedule",
            "needs at least one of cron, calendars, rrule or intervals",
        ));
    }
    if calendars.len() > MAX_ITEMS * 2 {
        return Err(SpecError::new(
            "calendars",
            format!("at most {MAX_ITEMS} calendars"),
        ));
    }
    let end = instant(obj.get("endTime"), "endTime")?;
    if let (Some(s), Some(e)) = (start, end) {
        if e < s {
            return Err(SpecError::new("endTime", "is before startTime"));
        }
    }
    let jitter = parse_jitter(obj.get("jitter"))?;
    let dst = parse_dst(obj.get("dst"), dialect)?;
    Ok(Schedule::assemble(ScheduleParts {
        calendars,
        rrules,
        intervals,
        exclude,
        days,
        start,
        end,
        jitter,
        dialect,
        dst,
        tz: zone,
    }))
}

/// `dialect`: `standard` when absent.
fn parse_dialect(value: Option<&Value>) -> Result<Dialect, SpecError> {
    match value {
        None | Some(Value::Null) => Ok(Dialect::Standard),
        Some(v) => v.as_str().and_then(Dialect::parse).ok_or_else(|| {
            SpecError::new(
                "dialect",
                format!(
                    "expected \"standard\", \"temporal\", \"quartz\" or \"eventbridge\", got {v}"
                ),
            )
        }),
    }
}

/// `timeZone`, if given.
fn parse_time_zone(value: Option<&Value>) -> Result<Option<Tz>, SpecError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => parse_zone(name)
            .map(Some)
            .map_err(|m| SpecError::new("timeZone", m)),
        Some(other) => Err(SpecError::new(
            "timeZone",
            format!("expected an IANA zone name like \"America/New_York\", got {other}"),
        )),
    }
}

/// `jitter`: none when absent.
fn parse_jitter(value: Option<&Value>) -> Result<Duration, SpecError> {
    match value {
        None | Some(Value::Null) => Ok(Duration::ZERO),
        Some(Value::String(text)) => Duration::parse(text).map_err(|m| SpecError::new("jitter", m)),
        Some(other) => Err(SpecError::new(
            "jitter",
            format!("expected a duration like \"30s\", got {other}"),
        )),
    }
}

/// `cron`: its strings' calendars and intervals, in order; a string's `CRON_TZ=` zone becomes the
/// schedule's (`tz`), and must agree with `timeZone` and, in the temporal dialect, with every
/// other string's.
fn parse_crons(
    value: Option<&Value>,
    dialect: Dialect,
    tz: &mut Option<Tz>,
) -> Result<(Vec<Calendar>, Vec<Interval>), SpecError> {
    let mut calendars = Vec::new();
    let mut intervals = Vec::new();
    // Temporal: every cron string carries the same `CRON_TZ=` prefix, or none does.
    let mut first_prefix: Option<Option<Tz>> = None;
    for (i, text) in string_list(value, "cron")?.into_iter().enumerate() {
        let path = format!("cron[{i}]");
        let parsed = parse_cron(text, dialect).map_err(|m| SpecError::new(path.as_str(), m))?;
        if dialect == Dialect::Temporal {
            match first_prefix {
                None => first_prefix = Some(parsed.zone),
                Some(first) if first != parsed.zone => {
                    let name = |z: Option<Tz>| {
                        z.map_or_else(
                            || "no CRON_TZ= prefix".to_string(),
                            |z| format!("CRON_TZ={}", z.name()),
                        )
                    };
                    return Err(SpecError::new(
                        path,
                        format!(
                            "{} disagrees with cron[0], which has {}: in the temporal dialect every cron string \
                             has the same CRON_TZ= prefix or none does, as in Temporal",
                            name(parsed.zone),
                            name(first)
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        if let Some(zone) = parsed.zone {
            match *tz {
                Some(existing) if existing != zone => {
                    return Err(SpecError::new(
                        path,
                        format!(
                            "time zone {} conflicts with {}",
                            zone.name(),
                            existing.name()
                        ),
                    ));
                }
                _ => *tz = Some(zone),
            }
        }
        match parsed.body {
            CronBody::Calendars(cals) => calendars.extend(cals),
            CronBody::Interval(iv) => intervals.push(iv),
        }
    }
    Ok((calendars, intervals))
}

/// `exclude` and `onlyOn`: the calendars whose times are left out, and the days (named calendars'
/// days, or business days) to leave out or keep to.
fn parse_days(
    obj: &serde_json::Map<String, Value>,
    dialect: Dialect,
    named: &CalendarSet,
) -> Result<(Vec<Calendar>, DayFilter), SpecError> {
    let mut exclude = Vec::new();
    let mut days = DayFilter::default();
    for (i, cal) in list(obj.get("exclude"), "exclude")?.iter().enumerate() {
        let path = format!("exclude[{i}]");
        // A calendar name (or `{"businessDaysOf": name}`) excludes that calendar's days.
        let names_days = cal.is_string()
            || cal
                .as_object()
                .is_some_and(|o| o.contains_key("businessDaysOf"));
        if names_days {
            days.exclude
                .push(DaySet::parse(cal, named).map_err(|m| SpecError::new(path, m))?);
            continue;
        }
        exclude.push(parse_calendar(cal, dialect, None).map_err(|e| e.under(&path))?);
    }
    for (i, item) in list(obj.get("onlyOn"), "onlyOn")?.iter().enumerate() {
        days.only_on.push(
            DaySet::parse(item, named).map_err(|m| SpecError::new(format!("onlyOn[{i}]"), m))?,
        );
    }
    Ok((exclude, days))
}

/// `rrule`: each RFC 5545 rule, with the schedule's `startTime` as its DTSTART in `zone`.
fn parse_rrules(
    value: Option<&Value>,
    start: Option<i64>,
    zone: Tz,
) -> Result<Vec<Recurrence>, SpecError> {
    let mut rrules = Vec::new();
    for (i, text) in string_list(value, "rrule")?.into_iter().enumerate() {
        let path = format!("rrule[{i}]");
        // RFC 5545: DTSTART is the spec's startTime, as wall-clock time in its zone.
        let dtstart = start
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .map(|s| s.with_timezone(&zone).naive_local())
            .ok_or_else(|| {
                SpecError::new(
                    path.as_str(),
                    "needs startTime: it is the rule's DTSTART (RFC 5545), read in timeZone",
                )
            })?;
        let until_wall = |instant: i64| {
            DateTime::from_timestamp(instant, 0).map_or(instant, |t| {
                t.with_timezone(&zone).naive_local().and_utc().timestamp()
            })
        };
        rrules.push(
            Recurrence::parse(text, dtstart, until_wall)
                .map_err(|m| SpecError::new(path.as_str(), m))?,
        );
    }
    Ok(rrules)
}

fn parse_zone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>().map_err(|_| {
        format!("unknown time zone {name:?}; expected an IANA name like \"America/New_York\"")
    })
}

fn list<'a>(value: Option<&'a Value>, path: &str) -> Result<&'a [Value], SpecError> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) if items.len() <= MAX_ITEMS => Ok(items),
        Some(Value::Array(_)) => Err(SpecError::new(path, format!("at most {MAX_ITEMS} entries"))),
        Some(other) => Err(SpecError::new(
            path,
            format!("expected an array, got {}", kind_of(other)),
        )),
    }
}

fn string_list<'a>(value: Option<&'a Value>, path: &str) -> Result<Vec<&'a str>, SpecError> {
    if let Some(Value::String(s)) = value {
        return Ok(vec![s.as_str()]);
    }
    list(value, path)?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str().ok_or_else(|| {
                SpecError::new(
                    format!("{path}[{i}]"),
                    format!("expected a string, got {}", kind_of(v)),
                )
            })
        })
        .collect()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses a calendar object; `named` is `None` for `exclude` entries, which take no business-day
/// rule.
pub(crate) fn parse_calendar(
    value: &Value,
    dialect: Dialect,
    named: Option<&CalendarSet>,
) -> Result<Calendar, SpecError> {
    let obj: &Map<String, Value> = value.as_object().ok_or_else(|| {
        SpecError::new(
            "",
            format!("expected a calendar object, got {}", kind_of(value)),
        )
    })?;
    for key in obj.keys() {
        if !CALENDAR_KEYS.contains(&key.as_str()) {
            return Err(SpecError::new(
                key.as_str(),
                format!(
                    "unknown field; expected one of {}",
                    CALENDAR_KEYS.join(", ")
                ),
            ));
        }
    }
    // Calendars are Temporal's construct: weekdays are numbered 0–7 (0 and 7 = Sunday) and years
    // are 2000–2100 in every dialect, as in Temporal; the dialect only decides whether L, W and #
    // are allowed.
    let syntax = Syntax {
        weekday_one_based: false,
        quartz_limits: false,
        years: TEMPORAL_YEARS,
        ..syntax(dialect)
    };
    let mut fields: [FieldSpec; 7] = Default::default();
    for kind in FieldKind::ALL {
        let name = kind.json_name();
        let spec = match obj.get(name) {
            None | Some(Value::Null) => parse_field(kind, kind.default_text(), syntax),
            Some(Value::String(text)) if text.trim().is_empty() => {
                parse_field(kind, kind.default_text(), syntax)
            }
            Some(Value::String(text)) => parse_field(kind, text, syntax),
            Some(Value::Number(n)) => parse_field(kind, &n.to_string(), syntax),
            Some(Value::Array(items)) => parse_structured(kind, items, syntax),
            Some(other) => Err(format!(
                "expected a string like \"1,15\" or an array of ranges, got {}",
                kind_of(other)
            )),
        }
        .map_err(|m| SpecError::new(name, m))?;
        fields[kind as usize] = spec;
    }
    let comment = match obj.get("comment") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if c.len() <= 1024 => Some(c.clone()),
        Some(_) => {
            return Err(SpecError::new(
                "comment",
                "expected a string of at most 1024 bytes",
            ))
        }
    };
    let day_fields_full = (
        fields[FieldKind::DayOfMonth as usize].is_full(FieldKind::DayOfMonth),
        fields[FieldKind::DayOfWeek as usize].is_full(FieldKind::DayOfWeek),
    );
    let calendar = Calendar::new(fields, comment);
    match parse_business(obj, named, day_fields_full)? {
        Some(business) => Ok(calendar.with_business(business)),
        None => Ok(calendar),
    }
}

/// The business-day rule of a calendar object (docs/spec.md §16), if it has one.
fn parse_business(
    obj: &Map<String, Value>,
    named: Option<&CalendarSet>,
    (every_day_of_month, every_weekday): (bool, bool),
) -> Result<Option<BusinessDays>, SpecError> {
    const RULE_KEYS: [&str; 3] = ["businessDay", "roll", "businessDayOffset"];
    let given: Vec<&str> = RULE_KEYS
        .into_iter()
        .filter(|k| obj.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    let calendar = obj.get("calendar").filter(|v| !v.is_null());
    if given.is_empty() && calendar.is_none() {
        return Ok(None);
    }
    let Some(named) = named else {
        let key = given.first().copied().unwrap_or("calendar");
        return Err(SpecError::new(
            key,
            "business-day rules go in calendars, not in exclude (exclude a calendar by its name: \"exclude\": [\"london\"])",
        ));
    };
    let rule_key = match given.as_slice() {
        [one] => *one,
        [] => {
            return Err(SpecError::new(
                "calendar",
                "needs businessDay, roll or businessDayOffset (to keep to a calendar's days, use onlyOn)",
            ))
        }
        [first, second, ..] => {
            return Err(SpecError::new(
                *second,
                format!("give one of businessDay, roll and businessDayOffset, not {first} and {second}"),
            ))
        }
    };
    let name = calendar
        .ok_or_else(|| {
            SpecError::new(
                "calendar",
                format!("required with {rule_key}: the name of a business calendar"),
            )
        })?
        .as_str()
        .ok_or_else(|| SpecError::new("calendar", "expected a calendar name like \"london\""))?;
    let calendar = named
        .resolve(name)
        .map_err(|m| SpecError::new("calendar", m))?;
    if !every_weekday {
        return Err(SpecError::new(
            "dayOfWeek",
            format!("not with {rule_key}: the business calendar decides the weekdays"),
        ));
    }
    let value = &obj[rule_key];
    let int = |min: i64, max: i64| -> Result<i32, SpecError> {
        value
            .as_i64()
            .filter(|n| {
                (min..=max).contains(n) && *n != 0 || (rule_key == "businessDayOffset" && *n == 0)
            })
            .map(|n| n as i32)
            .ok_or_else(|| {
                SpecError::new(
                    rule_key,
                    format!(
                        "expected an integer from {min} to {max}{}, got {value}",
                        if rule_key == "businessDay" {
                            " other than 0 (-1 is the last)"
                        } else {
                            ""
                        }
                    ),
                )
            })
    };
    let rule = match rule_key {
        "businessDay" => {
            if !every_day_of_month {
                return Err(SpecError::new(
                    "dayOfMonth",
                    "not with businessDay: it counts the business days of the month",
                ));
            }
            BusinessRule::Nth(int(-23, 23)?)
        }
        "roll" => BusinessRule::Roll(value.as_str().and_then(Roll::parse).ok_or_else(|| {
            SpecError::new(
                "roll",
                format!("expected \"following\", \"modifiedFollowing\", \"preceding\" or \"modifiedPreceding\", got {value}"),
            )
        })?),
        _ => BusinessRule::Offset(int(-30, 30)?),
    };
    Ok(Some(BusinessDays { calendar, rule }))
}

fn parse_interval(value: &Value) -> Result<Interval, String> {
    match value {
        Value::String(text) => Interval::parse_compact(text),
        Value::Object(obj) => {
            for key in obj.keys() {
                if key != "every" && key != "offset" {
                    return Err(format!("unknown field {key:?}; expected every, offset"));
                }
            }
            let duration = |key: &str| -> Result<Option<Duration>, String> {
                match obj.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Duration::parse(s)
                        .map(Some)
                        .map_err(|m| format!("{key}: {m}")),
                    Some(other) => Err(format!(
                        "{key}: expected a duration like \"6h\", got {}",
                        kind_of(other)
                    )),
                }
            };
            let every = duration("every")?
                .ok_or("every: required, e.g. {\"every\": \"6h\", \"offset\": \"5h\"}")?;
            Interval::new(every, duration("offset")?.unwrap_or(Duration::ZERO))
        }
        other => Err(format!(
            "expected \"6h/5h\" or {{\"every\": \"6h\", \"offset\": \"5h\"}}, got {}",
            kind_of(other)
        )),
    }
}

fn instant(value: Option<&Value>, path: &str) -> Result<Option<i64>, SpecError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => DateTime::parse_from_rfc3339(text)
            .map(|t| Some(t.timestamp()))
            .map_err(|_| {
                SpecError::new(
                    path,
                    format!(
                        "expected an RFC 3339 time like \"2024-01-01T00:00:00Z\", got {text:?}"
                    ),
                )
            }),
        Some(other) => Err(SpecError::new(
            path,
            format!("expected an RFC 3339 time string, got {}", kind_of(other)),
        )),
    }
}

fn parse_dst(value: Option<&Value>, dialect: Dialect) -> Result<DstPolicy, SpecError> {
    let mut policy = DstPolicy::default_for(dialect);
    let obj = match value {
        None | Some(Value::Null) => return Ok(policy),
        Some(Value::Object(obj)) => obj,
        Some(other) => {
            return Err(SpecError::new(
                "dst",
                format!(
                    "expected {{\"gap\": …, \"overlap\": …}}, got {}",
                    kind_of(other)
                ),
            ))
        }
    };
    for key in obj.keys() {
        if key != "gap" && key != "overlap" {
            return Err(SpecError::new(
                format!("dst.{key}"),
                "unknown field; expected gap, overlap",
            ));
        }
    }
    if let Some(gap) = obj.get("gap").filter(|v| !v.is_null()) {
        policy.gap = gap.as_str().and_then(DstGap::parse).ok_or_else(|| {
            SpecError::new(
                "dst.gap",
                format!("expected \"skip\", \"shift\", \"transition\" or \"auto\", got {gap}"),
            )
        })?;
    }
    if let Some(overlap) = obj.get("overlap").filter(|v| !v.is_null()) {
        policy.overlap = overlap
            .as_str()
            .and_then(DstOverlap::parse)
            .ok_or_else(|| {
                SpecError::new(
                    "dst.overlap",
                    format!("expected \"both\", \"first\", \"second\" or \"auto\", got {overlap}"),
                )
            })?;
    }
    Ok(policy)
}
