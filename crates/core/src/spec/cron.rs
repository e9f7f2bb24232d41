//! Cron strings in the four dialects, compiled to canonical calendars or an interval.
//!
//! The dialect decides how fields are counted and numbered and how day of month and day of week
//! combine; after that every dialect shares the field grammar of [`super::field`]. Vixie cron's OR of
//! a restricted day of month with a restricted day of week becomes a union of two calendars, so the
//! canonical form keeps Temporal's rule that every field of a calendar must match.

use chrono_tz::Tz;

use super::calendar::Calendar;
use super::field::{parse_field, FieldKind, FieldSpec, Range, Syntax, PEER_YEARS, TEMPORAL_YEARS};
use super::interval::Interval;
use super::Dialect;
use crate::duration::{Duration, DurationError};

/// A cron string after parsing.
#[derive(Debug)]
pub(crate) struct ParsedCron {
    /// The zone of a `CRON_TZ=`/`TZ=` prefix.
    pub zone: Option<Tz>,
    pub body: CronBody,
}

#[derive(Debug)]
pub(crate) enum CronBody {
    Calendars(Vec<Calendar>),
    Interval(Interval),
}

/// Cron strings longer than this are refused before any work is done.
const MAX_CRON_LEN: usize = 1024;

pub(crate) fn syntax(dialect: Dialect) -> Syntax {
    match dialect {
        Dialect::Standard => Syntax {
            weekday_one_based: false,
            question_mark: true,
            specials: true,
            wrap_ranges: true,
            quartz_limits: false,
            years: PEER_YEARS,
            dialect: "standard",
        },
        Dialect::Temporal => Syntax {
            weekday_one_based: false,
            question_mark: false,
            specials: false,
            wrap_ranges: false,
            quartz_limits: false,
            years: TEMPORAL_YEARS,
            dialect: "temporal",
        },
        Dialect::Quartz => Syntax {
            weekday_one_based: true,
            question_mark: true,
            specials: true,
            wrap_ranges: true,
            quartz_limits: true,
            years: PEER_YEARS,
            dialect: "quartz",
        },
        Dialect::EventBridge => Syntax {
            weekday_one_based: true,
            question_mark: true,
            specials: true,
            wrap_ranges: false,
            quartz_limits: true,
            years: PEER_YEARS,
            dialect: "eventbridge",
        },
    }
}

/// Parses one cron string. Errors are messages without the path.
pub(crate) fn parse_cron(text: &str, dialect: Dialect) -> Result<ParsedCron, String> {
    if text.len() > MAX_CRON_LEN {
        return Err(format!("cron string is longer than {MAX_CRON_LEN} bytes"));
    }
    let mut rest = text.trim();
    let mut zone = None;
    for prefix in ["CRON_TZ=", "TZ="] {
        if let Some(after) = rest.strip_prefix(prefix) {
            let (name, tail) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
            zone = Some(
                name.parse::<Tz>()
                    .map_err(|_| format!("unknown time zone {name:?} in {prefix} prefix"))?,
            );
            rest = tail.trim();
            break;
        }
    }
    // Temporal: text after `#` is a comment, kept as the calendar's comment (Temporal's
    // `parseCronString` cuts it off the same way, after the zone prefix).
    let mut comment_override = None;
    if dialect == Dialect::Temporal {
        if let Some((body, comment)) = rest.split_once('#') {
            comment_override = Some(comment.trim().to_string());
            rest = body.trim();
        }
    }
    if rest.is_empty() {
        return Err("empty cron string".into());
    }
    let mut parsed = parse_body(text, rest, zone, dialect)?;
    if let (Some(comment), CronBody::Calendars(calendars)) = (comment_override, &mut parsed.body) {
        for calendar in calendars {
            calendar.set_comment(Some(comment.clone()));
        }
    }
    Ok(parsed)
}

/// The cron string after its zone prefix (and, in `temporal`, its comment) is taken off.
fn parse_body(
    text: &str,
    mut rest: &str,
    zone: Option<Tz>,
    dialect: Dialect,
) -> Result<ParsedCron, String> {
    if dialect == Dialect::EventBridge {
        if let Some(body) = strip_call(rest, "rate") {
            return Ok(ParsedCron {
                zone,
                body: CronBody::Interval(parse_rate(body)?),
            });
        }
        if let Some(body) = strip_call(rest, "at") {
            return Ok(ParsedCron {
                zone,
                body: CronBody::Calendars(vec![parse_at(body)?]),
            });
        }
        if let Some(body) = strip_call(rest, "cron") {
            rest = body.trim();
        }
    }
    if let Some(macro_name) = rest.strip_prefix('@') {
        return parse_macro(macro_name, rest, dialect).map(|body| ParsedCron { zone, body });
    }
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let texts = assign_fields(&fields, dialect)?;
    let calendars = build_calendars(texts, dialect, text.trim())?;
    Ok(ParsedCron {
        zone,
        body: CronBody::Calendars(calendars),
    })
}

fn strip_call<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.strip_prefix(name)?
        .trim_start()
        .strip_prefix('(')?
        .strip_suffix(')')
}

/// Field texts in [`FieldKind::ALL`] order (second, minute, hour, day of month, month, year, day of week).
fn assign_fields<'a>(fields: &[&'a str], dialect: Dialect) -> Result<[&'a str; 7], String> {
    let n = fields.len();
    let (s, m, h, dom, mon, dow, year) = match (dialect, n) {
        (Dialect::Standard, 5) => (
            "0", fields[0], fields[1], fields[2], fields[3], fields[4], "*",
        ),
        (Dialect::Standard, 6) => (
            fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], "*",
        ),
        (Dialect::Standard, 7) => (
            fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6],
        ),
        (Dialect::Temporal, 5) => (
            "0", fields[0], fields[1], fields[2], fields[3], fields[4], "*",
        ),
        // Temporal reads a sixth field as the year, not as seconds.
        (Dialect::Temporal, 6) => (
            "0", fields[0], fields[1], fields[2], fields[3], fields[4], fields[5],
        ),
        (Dialect::Temporal, 7) => (
            fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6],
        ),
        (Dialect::Quartz, 6) => (
            fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], "*",
        ),
        (Dialect::Quartz, 7) => (
            fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], fields[6],
        ),
        (Dialect::EventBridge, 6) => (
            "0", fields[0], fields[1], fields[2], fields[3], fields[4], fields[5],
        ),
        (dialect, _) => {
            let expected = match dialect {
                Dialect::Standard => "5 (minute hour day-of-month month day-of-week), 6 (seconds first) or 7 (seconds first, year last)",
                Dialect::Temporal => "5, 6 (the sixth is the year) or 7 (seconds first, year last)",
                Dialect::Quartz => "6 (second minute hour day-of-month month day-of-week) or 7 (plus year)",
                Dialect::EventBridge => "6 (minute hour day-of-month month day-of-week year)",
            };
            return Err(format!("expected {expected} fields, got {n}"));
        }
    };
    Ok([s, m, h, dom, mon, year, dow])
}

fn build_calendars(
    texts: [&str; 7],
    dialect: Dialect,
    comment: &str,
) -> Result<Vec<Calendar>, String> {
    let syntax = syntax(dialect);
    let dom_text = texts[FieldKind::DayOfMonth as usize];
    let mut dow_text = texts[FieldKind::DayOfWeek as usize];
    let mut and_days = dialect != Dialect::Standard;
    if dialect == Dialect::Standard {
        // croner: a `+` before day of week asks for AND instead of OR.
        if let Some(stripped) = dow_text.strip_prefix('+') {
            dow_text = stripped;
            and_days = true;
        }
    }
    if matches!(dialect, Dialect::Quartz | Dialect::EventBridge)
        && ((dom_text == "?") == (dow_text == "?"))
    {
        return Err(format!(
            "exactly one of day-of-month ({dom_text:?}) and day-of-week ({dow_text:?}) must be \"?\" in the {} dialect",
            syntax.dialect
        ));
    }
    let mut fields: [FieldSpec; 7] = Default::default();
    for kind in FieldKind::ALL {
        let text = if kind == FieldKind::DayOfWeek {
            dow_text
        } else {
            texts[kind as usize]
        };
        fields[kind as usize] =
            parse_field(kind, text, syntax).map_err(|e| format!("{}: {e}", kind.cron_name()))?;
    }
    // Vixie cron: a day field written as `*` (or `?`, or `*/1`) does not restrict; when both are
    // restricted a day matches either. `*/2` counts as restricted, as in croniter, robfig and croner.
    let unrestricted = |t: &str| matches!(t, "*" | "?" | "*/1");
    let comment = Some(comment.to_string());
    if and_days || unrestricted(dom_text) || unrestricted(dow_text) {
        return Ok(vec![Calendar::new(fields, comment)]);
    }
    let mut by_weekday = fields.clone();
    fields[FieldKind::DayOfWeek as usize] = FieldSpec::star(FieldKind::DayOfWeek);
    by_weekday[FieldKind::DayOfMonth as usize] = FieldSpec::star(FieldKind::DayOfMonth);
    Ok(vec![
        Calendar::new(fields, comment.clone()),
        Calendar::new(by_weekday, comment),
    ])
}

fn parse_macro(name: &str, text: &str, dialect: Dialect) -> Result<CronBody, String> {
    let lower = name.to_ascii_lowercase();
    if let Some(every) = lower.strip_prefix("every") {
        return parse_every(every.trim()).map(CronBody::Interval);
    }
    let fields = match lower.as_str() {
        "yearly" | "annually" => "0 0 1 1 *",
        "monthly" => "0 0 1 * *",
        "weekly" => "0 0 * * 0",
        "daily" | "midnight" => "0 0 * * *",
        "hourly" => "0 * * * *",
        _ => return Err(format!("unknown macro {text:?}: expected @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every")),
    };
    let parts: Vec<&str> = fields.split(' ').collect();
    let texts = assign_fields(&parts, Dialect::Standard)?;
    let _ = dialect;
    build_calendars(texts, Dialect::Temporal, text).map(CronBody::Calendars)
}

/// `@every 90m` or `@every 6h/5h`: epoch-aligned, as in Temporal.
fn parse_every(text: &str) -> Result<Interval, String> {
    let (every, offset) = match text.split_once('/') {
        Some((e, o)) => (e, Some(o)),
        None => (text, None),
    };
    let every = Duration::parse(every).map_err(|e| format!("@every: {e}"))?;
    let offset = offset
        .map(Duration::parse)
        .transpose()
        .map_err(|e| format!("@every offset: {e}"))?
        .unwrap_or(Duration::ZERO);
    Interval::new(every, offset)
}

/// EventBridge `rate(5 minutes)`, aligned to the epoch like every Sundial interval.
fn parse_rate(body: &str) -> Result<Interval, String> {
    let mut words = body.split_whitespace();
    let (Some(value), Some(unit), None) = (words.next(), words.next(), words.next()) else {
        return Err(format!(
            "invalid rate({body}): expected rate(value unit), e.g. rate(5 minutes)"
        ));
    };
    let value: u64 = value
        .parse()
        .map_err(|_| format!("invalid rate value {value:?}: expected a positive number"))?;
    let secs = match unit.trim_end_matches('s') {
        "minute" => 60,
        "hour" => 3600,
        "day" => 86_400,
        _ => {
            return Err(format!(
                "invalid rate unit {unit:?}: expected minutes, hours or days"
            ))
        }
    };
    let every = value
        .checked_mul(secs)
        .and_then(|secs| Duration::checked_from_secs(secs).ok())
        .ok_or_else(|| DurationError::TooLong(format!("rate({body})")))?;
    Interval::new(every, Duration::ZERO)
}

/// EventBridge `at(2030-01-01T09:00:00)`: one wall-clock time.
fn parse_at(body: &str) -> Result<Calendar, String> {
    let bad = || format!("invalid at({body}): expected at(yyyy-mm-ddThh:mm:ss)");
    let naive = chrono::NaiveDateTime::parse_from_str(body.trim(), "%Y-%m-%dT%H:%M:%S")
        .map_err(|_| bad())?;
    Ok(exact_calendar(naive, Some(format!("at({body})"))))
}

/// A calendar that matches exactly one wall-clock second.
pub(crate) fn exact_calendar(naive: chrono::NaiveDateTime, comment: Option<String>) -> Calendar {
    use chrono::{Datelike, Timelike};
    let single = |v: u32| FieldSpec {
        ranges: vec![Range::single(v)],
        ..FieldSpec::default()
    };
    let fields = [
        single(naive.second()),
        single(naive.minute()),
        single(naive.hour()),
        single(naive.day()),
        single(naive.month()),
        single(naive.year().clamp(1970, 2199) as u32),
        FieldSpec::star(FieldKind::DayOfWeek),
    ];
    Calendar::new(fields, comment)
}
