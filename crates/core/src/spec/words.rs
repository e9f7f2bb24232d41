//! A schedule in words, for people: "At 12:00 on weekdays, Europe/London".
//!
//! The text is written from the canonical form, not from what the user typed, so every input form
//! (the four cron dialects, calendars, intervals, compiled `timer`s) reads the same way and a
//! Quartz `0 0 12 ? * MON-FRI` and a standard `0 12 * * 1-5` are described identically. The
//! operator console and `sundial job list` show it beside the canonical JSON, which stays the
//! authority: the words aim to be right and short, not to round-trip.

use chrono::{DateTime, Utc};

use super::calendar::Calendar;
use super::field::{DaySpecial, FieldKind, FieldSpec, Range, WeekdaySpecial};
use super::interval::Interval;
use super::Schedule;

pub(super) const WEEKDAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// How many clock times are listed one by one before the text falls back to field phrases.
const MAX_LISTED_TIMES: usize = 6;

impl Schedule {
    /// The schedule in English words, ending with its time zone, e.g.
    /// `"At 12:00 on weekdays, Europe/London"` or `"Every 6 hours (offset 5 hours), UTC"`.
    ///
    /// ```
    /// use sundial_core::spec::Schedule;
    /// let schedule = Schedule::from_json_str(r#"{"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"}"#).unwrap();
    /// assert_eq!(schedule.in_words(), "At 12:00 on weekdays, Europe/London");
    /// ```
    pub fn in_words(&self) -> String {
        let mut parts: Vec<String> = self.calendars.iter().map(calendar_words).collect();
        parts.extend(self.intervals.iter().map(|i| interval_words(*i)));
        let mut text = if parts.is_empty() {
            "Never".to_string()
        } else {
            capitalize(&join_or(&parts))
        };
        if !self.exclude.is_empty() {
            let excluded: Vec<String> = self.exclude.iter().map(calendar_words).collect();
            text.push_str(&format!(", except {}", join_or(&excluded)));
        }
        let instant = |t: i64| DateTime::<Utc>::from_timestamp(t, 0).map(|d| self.format_time(d));
        if let Some(start) = self.start.and_then(instant) {
            text.push_str(&format!(", from {start}"));
        }
        if let Some(end) = self.end.and_then(instant) {
            text.push_str(&format!(", until {end}"));
        }
        if self.jitter.as_millis() > 0 {
            text.push_str(&format!(", with up to {} of jitter", self.jitter));
        }
        text.push_str(", ");
        text.push_str(self.zone.tz.name());
        text
    }
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Alternatives: a union of calendars fires when any of them matches.
fn join_or(items: &[String]) -> String {
    items.join("; or ")
}

fn interval_words(interval: Interval) -> String {
    let (every, offset) = interval.seconds();
    let mut text = format!("every {}", seconds_in_words(every, true));
    if offset > 0 {
        text.push_str(&format!(" (offset {})", seconds_in_words(offset, false)));
    }
    text
}

/// `6 hours`, `1 day 2 hours`, `90 seconds`; with `drop_one`, `hour` rather than `1 hour`.
fn seconds_in_words(secs: u64, drop_one: bool) -> String {
    const UNITS: [(u64, &str); 4] = [
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
        (1, "second"),
    ];
    let mut rest = secs;
    let mut parts = Vec::new();
    for (size, name) in UNITS {
        let n = rest / size;
        rest %= size;
        if n == 1 {
            parts.push(format!("1 {name}"));
        } else if n > 1 {
            parts.push(format!("{n} {name}s"));
        }
    }
    match parts.as_slice() {
        [] => "0 seconds".to_string(),
        [one] if drop_one => one.strip_prefix("1 ").unwrap_or(one).to_string(),
        _ => parts.join(" "),
    }
}

/// The values a plain field selects, or `None` when it has specials or more than `cap` values.
fn values(field: &FieldSpec, cap: usize) -> Option<Vec<u32>> {
    if !field.days.is_empty() || !field.weekdays.is_empty() {
        return None;
    }
    let mut out: Vec<u32> = Vec::new();
    for range in &field.ranges {
        for v in range.values() {
            if out.len() >= cap {
                return None;
            }
            out.push(v);
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The step of a field that selects `lo, lo+step, …` over the whole of its bounds, e.g. `*/5`.
fn full_step(field: &FieldSpec, kind: FieldKind) -> Option<u32> {
    match field.ranges.as_slice() {
        [range] if field.days.is_empty() && field.weekdays.is_empty() => {
            let (lo, hi) = kind.bounds();
            (range.start == lo && range.step > 1 && range.end + range.step > hi)
                .then_some(range.step)
        }
        _ => None,
    }
}

fn calendar_words(calendar: &Calendar) -> String {
    let mut text = time_words(calendar);
    let days = day_words(calendar);
    if !days.is_empty() {
        text.push(' ');
        text.push_str(&days);
    }
    let month = calendar.field(FieldKind::Month);
    if !month.is_full(FieldKind::Month) {
        text.push_str(&format!(" in {}", ranges_words(&month.ranges, month_name)));
    }
    let year = calendar.field(FieldKind::Year);
    if !year.is_full(FieldKind::Year) {
        text.push_str(&format!(
            " in {}",
            ranges_words(&year.ranges, |y| y.to_string())
        ));
    }
    text
}

fn month_name(m: u32) -> String {
    MONTHS
        .get(m.wrapping_sub(1) as usize)
        .map_or_else(|| m.to_string(), |s| (*s).to_string())
}

fn weekday_name(d: u32) -> String {
    WEEKDAYS
        .get(d as usize)
        .map_or_else(|| d.to_string(), |s| (*s).to_string())
}

/// `Monday to Friday`, `January, April and July`, `every 2nd value from 1 to 31`.
fn ranges_words(ranges: &[Range], name: impl Fn(u32) -> String) -> String {
    let items: Vec<String> = ranges
        .iter()
        .map(|r| {
            if r.start == r.end {
                name(r.start)
            } else if r.step <= 1 {
                format!("{} to {}", name(r.start), name(r.end))
            } else {
                format!(
                    "every {} from {} to {}",
                    ordinal(r.step),
                    name(r.start),
                    name(r.end)
                )
            }
        })
        .collect();
    join_and(&items)
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn clock(hour: u32, minute: u32, second: u32) -> String {
    if second == 0 {
        format!("{hour:02}:{minute:02}")
    } else {
        format!("{hour:02}:{minute:02}:{second:02}")
    }
}

/// The time-of-day part: `at 09:00 and 17:30`, `every 15 minutes from 09:00 to 17:45`.
fn time_words(calendar: &Calendar) -> String {
    let second = calendar.field(FieldKind::Second);
    let minute = calendar.field(FieldKind::Minute);
    let hour = calendar.field(FieldKind::Hour);
    let (s, m, h) = (values(second, 60), values(minute, 60), values(hour, 24));
    // A few clock times: list them.
    if let (Some(s), Some(m), Some(h)) = (&s, &m, &h) {
        if s.len() * m.len() * h.len() <= MAX_LISTED_TIMES {
            let mut times = Vec::new();
            for hour in h {
                for minute in m {
                    for second in s {
                        times.push(clock(*hour, *minute, *second));
                    }
                }
            }
            return format!("at {}", join_and(&times));
        }
    }
    // Otherwise the finest field that varies leads: every second, every 5 minutes, every hour…
    let second_fixed = s
        .as_ref()
        .filter(|v| v.len() == 1)
        .and_then(|v| v.first().copied());
    let minute_fixed = m
        .as_ref()
        .filter(|v| v.len() == 1)
        .and_then(|v| v.first().copied());
    let hours = hour_span(hour, h.as_deref());
    let mut text = if second_fixed.is_none() {
        let mut t = field_phrase(second, FieldKind::Second, "second");
        if !minute.is_full(FieldKind::Minute) {
            t.push_str(&format!(
                " of minute {}",
                ranges_words(&minute.ranges, |v| v.to_string())
            ));
        }
        t
    } else if minute_fixed.is_none() {
        let mut t = field_phrase(minute, FieldKind::Minute, "minute");
        if let Some(sec) = second_fixed.filter(|s| *s != 0) {
            t.push_str(&format!(" at second {sec}"));
        }
        t
    } else {
        let (sec, min) = (second_fixed.unwrap_or(0), minute_fixed.unwrap_or(0));
        let mut t = field_phrase(hour, FieldKind::Hour, "hour");
        let at = if sec == 0 {
            format!(":{min:02}")
        } else {
            format!(":{min:02}:{sec:02}")
        };
        t.push_str(&format!(" at {at}"));
        // The hours are said already: every hour, every 2 hours, hours 9 to 17.
        return t;
    };
    if !hours.is_empty() {
        text.push(' ');
        text.push_str(&hours);
    }
    text
}

/// `every minute`, `every 5 minutes`, `at minutes 0 and 30 of every hour`.
fn field_phrase(field: &FieldSpec, kind: FieldKind, unit: &str) -> String {
    if field.is_full(kind) {
        return format!("every {unit}");
    }
    if let Some(step) = full_step(field, kind) {
        return format!("every {step} {unit}s");
    }
    let name = |v: u32| {
        if kind == FieldKind::Hour {
            format!("{v:02}:00")
        } else {
            v.to_string()
        }
    };
    match kind {
        FieldKind::Hour => format!("every hour from {}", ranges_words(&field.ranges, name)),
        _ => format!("at {unit} {}", ranges_words(&field.ranges, name)),
    }
}

/// The hours a sub-hourly calendar runs in: ``, `from 09:00 to 17:59`, `during hours 9 and 17`.
fn hour_span(hour: &FieldSpec, values: Option<&[u32]>) -> String {
    if hour.is_full(FieldKind::Hour) {
        return String::new();
    }
    if let Some(step) = full_step(hour, FieldKind::Hour) {
        return format!("of every {} hour", ordinal(step));
    }
    match (hour.ranges.as_slice(), values) {
        ([r], _) if r.step <= 1 => format!("from {:02}:00 to {:02}:59", r.start, r.end),
        (_, Some(v)) => {
            let items: Vec<String> = v.iter().map(|h| format!("{h:02}:00")).collect();
            format!("in the hours starting {}", join_and(&items))
        }
        _ => format!("in hours {}", ranges_words(&hour.ranges, |v| v.to_string())),
    }
}

/// The day part: `on weekdays`, `on the 1st and 15th`, `on the last Friday`, or nothing (every day).
fn day_words(calendar: &Calendar) -> String {
    let dom = calendar.field(FieldKind::DayOfMonth);
    let dow = calendar.field(FieldKind::DayOfWeek);
    let dom_full = dom.is_full(FieldKind::DayOfMonth);
    let dow_full = dow.is_full(FieldKind::DayOfWeek);
    match (dom_full, dow_full) {
        (true, true) => String::new(),
        (false, true) => format!("on {}", month_days(dom)),
        (true, false) => format!("on {}", week_days(dow)),
        // Both restricted: every field must match (day of month AND day of week).
        (false, false) => format!("on {}, if it is {}", month_days(dom), week_days(dow)),
    }
}

fn month_days(field: &FieldSpec) -> String {
    let mut items: Vec<String> = Vec::new();
    let plain: Vec<String> = field
        .ranges
        .iter()
        .map(|r| {
            if r.start == r.end {
                ordinal(r.start)
            } else if r.step <= 1 {
                format!("{} to {}", ordinal(r.start), ordinal(r.end))
            } else {
                format!(
                    "every {} day from the {} to the {}",
                    ordinal(r.step),
                    ordinal(r.start),
                    ordinal(r.end)
                )
            }
        })
        .collect();
    if !plain.is_empty() {
        let every = plain.iter().any(|p| p.starts_with("every"));
        items.push(if every {
            join_and(&plain)
        } else {
            format!("the {}", join_and(&plain))
        });
    }
    for special in &field.days {
        items.push(match special {
            DaySpecial::LastDay(0) => "the last day of the month".to_string(),
            DaySpecial::LastDay(n) => format!("{} before the last day of the month", days(*n)),
            DaySpecial::NearestWeekday(d) => format!("the weekday nearest the {}", ordinal(*d)),
            DaySpecial::LastWeekday(0) => "the last weekday of the month".to_string(),
            DaySpecial::LastWeekday(n) => {
                format!(
                    "the weekday nearest {} before the last day of the month",
                    days(*n)
                )
            }
        });
    }
    join_and(&items)
}

fn days(n: u32) -> String {
    if n == 1 {
        "1 day".to_string()
    } else {
        format!("{n} days")
    }
}

fn week_days(field: &FieldSpec) -> String {
    let mut items: Vec<String> = Vec::new();
    let plain = FieldSpec {
        ranges: field.ranges.clone(),
        ..FieldSpec::default()
    };
    match values(&plain, 7) {
        Some(days) if days.is_empty() => {}
        Some(days) => items.push(match days.as_slice() {
            [1, 2, 3, 4, 5] => "weekdays".to_string(),
            [0, 6] => "weekends".to_string(),
            _ => match field.ranges.as_slice() {
                // Runs of three or more read better as a range.
                [r] if r.step <= 1 && r.end >= r.start + 2 => {
                    format!("{} to {}", weekday_name(r.start), weekday_name(r.end))
                }
                _ => {
                    let names: Vec<String> = days
                        .iter()
                        .map(|d| format!("{}s", weekday_name(*d)))
                        .collect();
                    join_and(&names)
                }
            },
        }),
        None => items.push(ranges_words(&field.ranges, weekday_name)),
    }
    for special in &field.weekdays {
        items.push(match special {
            WeekdaySpecial::Nth { weekday, nth } => {
                format!(
                    "the {} {} of the month",
                    ordinal(*nth),
                    weekday_name(*weekday)
                )
            }
            WeekdaySpecial::Last { weekday } => {
                format!("the last {} of the month", weekday_name(*weekday))
            }
        });
    }
    join_and(&items)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::super::Schedule;

    fn words(spec: Value) -> String {
        match Schedule::from_json(&spec) {
            Ok(s) => s.in_words(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn fixed_times() {
        assert_eq!(
            words(json!({"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"})),
            "At 12:00 on weekdays, Europe/London"
        );
        assert_eq!(
            words(json!({"cron": ["30 9,17 * * *"]})),
            "At 09:30 and 17:30, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["15 30 6 * * *"]})),
            "At 06:30:15, UTC"
        );
        assert_eq!(words(json!({"cron": ["@daily"]})), "At 00:00, UTC");
    }

    #[test]
    fn every_dialect_reads_the_same() {
        let expected = "At 12:00 on weekdays, UTC";
        assert_eq!(words(json!({"cron": ["0 12 * * 1-5"]})), expected);
        assert_eq!(
            words(json!({"cron": ["0 0 12 ? * MON-FRI"], "dialect": "quartz"})),
            expected
        );
        assert_eq!(
            words(json!({"cron": ["0 0 12 ? * 2-6"], "dialect": "quartz"})),
            expected
        );
        assert_eq!(
            words(json!({"cron": ["0 12 ? * 2-6 *"], "dialect": "eventbridge"})),
            expected
        );
        assert_eq!(
            words(json!({"cron": ["0 12 * * MON-FRI"], "dialect": "temporal"})),
            expected
        );
        assert_eq!(
            words(json!({"calendars": [{"hour": "12", "dayOfWeek": "MON-FRI"}]})),
            expected
        );
    }

    #[test]
    fn frequent_runs() {
        assert_eq!(
            words(json!({"cron": ["*/5 * * * *"]})),
            "Every 5 minutes, UTC"
        );
        assert_eq!(words(json!({"cron": ["* * * * *"]})), "Every minute, UTC");
        assert_eq!(words(json!({"cron": ["* * * * * *"]})), "Every second, UTC");
        assert_eq!(
            words(json!({"cron": ["*/15 * * * * *"]})),
            "Every 15 seconds, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["*/15 9-17 * * MON-FRI"]})),
            "Every 15 minutes from 09:00 to 17:59 on weekdays, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 * * * *"]})),
            "Every hour at :00, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["30 */2 * * *"]})),
            "Every 2 hours at :30, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 9-17 * * *"]})),
            "Every hour from 09:00 to 17:00 at :00, UTC"
        );
    }

    #[test]
    fn days_of_the_month_and_week() {
        assert_eq!(
            words(json!({"cron": ["0 0 1,15 * *"]})),
            "At 00:00 on the 1st and 15th, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 0 0 L * ?"], "dialect": "quartz"})),
            "At 00:00 on the last day of the month, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 0 0 15W * ?"], "dialect": "quartz"})),
            "At 00:00 on the weekday nearest the 15th, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 0 0 LW * ?"], "dialect": "quartz"})),
            "At 00:00 on the last weekday of the month, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 10 * * FRI#3"]})),
            "At 10:00 on the 3rd Friday of the month, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 10 * * 5L"]})),
            "At 10:00 on the last Friday of the month, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 8 * * SAT,SUN"]})),
            "At 08:00 on weekends, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 8 * * MON,WED,FRI"]})),
            "At 08:00 on Mondays, Wednesdays and Fridays, UTC"
        );
        // Vixie OR: a union of two calendars.
        assert_eq!(
            words(json!({"cron": ["0 0 1 * WED"]})),
            "At 00:00 on the 1st; or at 00:00 on Wednesdays, UTC"
        );
        // Temporal AND: Friday the 13th.
        assert_eq!(
            words(json!({"calendars": [{"hour": "0", "dayOfMonth": "13", "dayOfWeek": "FRI"}]})),
            "At 00:00 on the 13th, if it is Fridays, UTC"
        );
    }

    #[test]
    fn months_years_and_bounds() {
        assert_eq!(
            words(json!({"cron": ["0 9 1 JAN,JUL *"]})),
            "At 09:00 on the 1st in January and July, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 0 9 1 1-3 ? 2030"], "dialect": "quartz"})),
            "At 09:00 on the 1st in January to March in 2030, UTC"
        );
        assert_eq!(
            words(json!({"cron": ["0 12 * * *"], "startTime": "2030-01-01T00:00:00Z", "endTime": "2030-12-31T00:00:00Z", "jitter": "30s"})),
            "At 12:00, from 2030-01-01T00:00:00+00:00, until 2030-12-31T00:00:00+00:00, with up to 30s of jitter, UTC"
        );
        assert_eq!(
            words(
                json!({"cron": ["0 12 * * *"], "exclude": [{"hour": "*", "minute": "*", "second": "*", "month": "DEC", "dayOfMonth": "25"}]})
            ),
            "At 12:00, except every second on the 25th in December, UTC"
        );
    }

    #[test]
    fn intervals() {
        assert_eq!(
            words(json!({"intervals": ["6h/5h"], "timeZone": "America/New_York"})),
            "Every 6 hours (offset 5 hours), America/New_York"
        );
        assert_eq!(
            words(json!({"intervals": [{"every": "90s"}]})),
            "Every 1 minute 30 seconds, UTC"
        );
        assert_eq!(words(json!({"intervals": ["1d"]})), "Every day, UTC");
        assert_eq!(
            words(json!({"cron": ["@every 14h/3h"]})),
            "Every 14 hours (offset 3 hours), UTC"
        );
    }
}
