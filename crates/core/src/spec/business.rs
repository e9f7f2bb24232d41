//! Business calendars: named sets of non-working days (holidays) with a weekend, and the
//! business-day rules specs build on them (docs/spec.md §16).
//!
//! A [`BusinessCalendar`] lists days: dates, date ranges and yearly rules ("first Monday of May",
//! "25 December, or the next weekday when it falls on a weekend", "Good Friday"). A day is a
//! *business day* when it is neither a weekend day nor listed. Every day from 2000-01-01 to
//! 2100-12-31 (the span schedules evaluate) is resolved once, when the calendar is built, into two
//! bit sets, so the engine's per-month questions ("the 3rd business day", "the 25th rolled to a
//! business day") are a few bit operations.
//!
//! Specs name calendars; a [`CalendarSet`] passed to [`super::Schedule::from_json_with`] resolves
//! the names. Nothing here reads a clock, a file or the network.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{Datelike, NaiveDate};
use chrono_tz::Tz;
use serde_json::{json, Map, Value};

use super::civil::{civil_from_days, days_from_civil, days_in_month, weekday};
use super::field::{parse_field, FieldKind, FIRST_YEAR, LAST_YEAR};
use super::{Dialect, SpecError};

/// Days since 1970-01-01 of 2000-01-01, the first day a calendar resolves.
fn first_day() -> i64 {
    days_from_civil(FIRST_YEAR, 1, 1)
}

fn last_day() -> i64 {
    days_from_civil(LAST_YEAR, 12, 31)
}

/// What happens to a fixed-date holiday that falls on a weekend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observance {
    /// It stays where it is (and is then no extra day off).
    None,
    /// It moves to the next day that is neither a weekend day nor already a holiday (UK substitute
    /// days: Christmas on Saturday is observed Monday, Boxing Day on Saturday Tuesday).
    NextWeekday,
    /// Saturday moves to Friday, Sunday to Monday (US federal holidays).
    NearestWeekday,
}

/// A holiday that recurs every year.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum YearlyRule {
    /// A fixed month and day, e.g. 25 December.
    Fixed {
        /// 1–12.
        month: u32,
        /// 1–31.
        day: u32,
        /// What a weekend occurrence becomes.
        observed: Observance,
    },
    /// The nth (1–5) or last (-1) given weekday of a month, e.g. the first Monday of May.
    NthWeekday {
        /// 1–12.
        month: u32,
        /// 0 = Sunday … 6 = Saturday.
        weekday: u32,
        /// 1–5, or -1 for the last.
        nth: i32,
    },
    /// Days from Western (Gregorian) Easter Sunday: -2 is Good Friday, 1 Easter Monday.
    Easter {
        /// Days after Easter Sunday (negative: before).
        offset: i32,
    },
}

impl YearlyRule {
    /// The rule in words, as the console shows it: `first Monday of May`, `last Monday of
    /// August`, `25 December, or the next weekday when on a weekend`, `2 days before Easter
    /// Sunday`. The one place a rule is worded.
    pub fn describe(&self) -> String {
        use super::words::{MONTHS, WEEKDAYS};
        let month = |m: u32| {
            MONTHS
                .get(m.wrapping_sub(1) as usize)
                .copied()
                .unwrap_or("?")
        };
        match *self {
            YearlyRule::Fixed {
                month: m,
                day,
                observed,
            } => {
                let when = match observed {
                    Observance::None => "",
                    Observance::NextWeekday => ", or the next weekday when on a weekend",
                    Observance::NearestWeekday => {
                        ", or the nearest weekday when on a weekend (Saturday: the Friday before, Sunday: the Monday after)"
                    }
                };
                format!("{day} {}{when}", month(m))
            }
            YearlyRule::NthWeekday {
                month: m,
                weekday,
                nth,
            } => {
                let nth = match nth {
                    1 => "first",
                    2 => "second",
                    3 => "third",
                    4 => "fourth",
                    5 => "fifth",
                    _ => "last",
                };
                let weekday = WEEKDAYS.get(weekday as usize).copied().unwrap_or("?");
                format!("{nth} {weekday} of {}", month(m))
            }
            YearlyRule::Easter { offset } => match offset {
                0 => "Easter Sunday".to_owned(),
                1 => "the day after Easter Sunday".to_owned(),
                -1 => "the day before Easter Sunday".to_owned(),
                n if n > 0 => format!("{n} days after Easter Sunday"),
                n => format!("{} days before Easter Sunday", n.unsigned_abs()),
            },
        }
    }
}

/// A named business calendar.
#[derive(Clone)]
pub struct BusinessCalendar {
    name: String,
    description: Option<String>,
    zone: Tz,
    /// Bit w set for weekday w (0 = Sunday) that is a weekend day.
    weekend: u8,
    dates: Vec<NaiveDate>,
    ranges: Vec<(NaiveDate, NaiveDate)>,
    rules: Vec<(YearlyRule, Option<String>)>,
    /// Bit i: day `first_day() + i` is listed (a holiday).
    listed: Vec<u64>,
}

impl std::fmt::Debug for BusinessCalendar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BusinessCalendar")
            .field("name", &self.name)
            .field("zone", &self.zone)
            .field("weekend", &weekend_text(self.weekend))
            .field("dates", &self.dates.len())
            .field("ranges", &self.ranges.len())
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

impl PartialEq for BusinessCalendar {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.zone == other.zone
            && self.weekend == other.weekend
            && self.dates == other.dates
            && self.ranges == other.ranges
            && self.rules == other.rules
    }
}

const CALENDAR_KEYS: [&str; 7] = [
    "name",
    "description",
    "timeZone",
    "weekend",
    "dates",
    "ranges",
    "rules",
];

/// At most this many dates, ranges or rules in one calendar.
const MAX_ENTRIES: usize = 10_000;

fn date(text: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

fn days_of(d: NaiveDate) -> i64 {
    days_from_civil(d.year(), d.month(), d.day())
}

fn naive(days: i64) -> Option<NaiveDate> {
    let (y, m, d) = civil_from_days(days);
    NaiveDate::from_ymd_opt(y, m, d)
}

/// Gregorian Easter Sunday (anonymous Gregorian algorithm), as days since 1970-01-01.
fn easter(year: i32) -> i64 {
    let a = year % 19;
    let b = year / 100;
    let c = year % 100;
    let d = b / 4;
    let e = b % 4;
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let i = c / 4;
    let k = c % 4;
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = (h + l - 7 * m + 114) % 31 + 1;
    days_from_civil(year, month as u32, day as u32)
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

fn weekend_mask(text: &str) -> Result<u8, String> {
    if text.trim().is_empty() {
        return Ok(0);
    }
    let syntax = super::cron::syntax(Dialect::Standard);
    let spec = parse_field(FieldKind::DayOfWeek, text, syntax)?;
    if !spec.days.is_empty() || !spec.weekdays.is_empty() {
        return Err(format!(
            "{text:?}: expected weekdays like \"SAT,SUN\" or \"FRI-SAT\""
        ));
    }
    let mut mask = 0u8;
    for range in &spec.ranges {
        for w in range.values() {
            mask |= 1 << (w % 7);
        }
    }
    if mask == 0x7f {
        return Err(format!(
            "{text:?}: every day would be a weekend day, leaving no business day"
        ));
    }
    Ok(mask)
}

fn weekend_text(mask: u8) -> String {
    const NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
    // Saturday first so the usual weekend reads "SAT,SUN".
    [6usize, 0, 1, 2, 3, 4, 5]
        .into_iter()
        .filter(|w| mask >> w & 1 == 1)
        .map(|w| NAMES[w])
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_rule(value: &Value) -> Result<(YearlyRule, Option<String>), String> {
    let obj = value
        .as_object()
        .ok_or_else(|| format!("expected a rule object, got {}", kind_of(value)))?;
    const KEYS: [&str; 7] = [
        "month", "day", "observed", "weekday", "nth", "easter", "comment",
    ];
    for key in obj.keys() {
        if !KEYS.contains(&key.as_str()) {
            return Err(format!(
                "{key}: unknown field; expected one of {}",
                KEYS.join(", ")
            ));
        }
    }
    let int = |key: &str| -> Result<Option<i64>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| format!("{key}: expected an integer, got {}", kind_of(v))),
        }
    };
    let comment = match obj.get("comment") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) if c.len() <= 1024 => Some(c.clone()),
        Some(_) => return Err("comment: expected a string of at most 1024 bytes".into()),
    };
    if let Some(offset) = int("easter")? {
        if obj.len() > 1 + usize::from(comment.is_some()) {
            return Err("easter: stands alone (with a comment): {\"easter\": -2}".into());
        }
        if !(-100..=100).contains(&offset) {
            return Err(format!("easter: {offset} is out of range -100 to 100 days"));
        }
        return Ok((
            YearlyRule::Easter {
                offset: offset as i32,
            },
            comment,
        ));
    }
    let month = int("month")?.ok_or("month: required (1-12), or {\"easter\": n}")?;
    if !(1..=12).contains(&month) {
        return Err(format!("month: {month} is out of range 1-12"));
    }
    let month = month as u32;
    match (int("day")?, obj.get("weekday")) {
        (Some(day), None) => {
            if !(1..=31).contains(&day) {
                return Err(format!("day: {day} is out of range 1-31"));
            }
            if int("nth")?.is_some() {
                return Err("nth: goes with weekday, not day".into());
            }
            let observed = match obj.get("observed") {
                None | Some(Value::Null) => Observance::None,
                Some(Value::String(s)) if s == "none" => Observance::None,
                Some(Value::String(s)) if s == "nextWeekday" => Observance::NextWeekday,
                Some(Value::String(s)) if s == "nearestWeekday" => Observance::NearestWeekday,
                Some(other) => {
                    return Err(format!(
                        "observed: expected \"none\", \"nextWeekday\" or \"nearestWeekday\", got {other}"
                    ))
                }
            };
            Ok((
                YearlyRule::Fixed {
                    month,
                    day: day as u32,
                    observed,
                },
                comment,
            ))
        }
        (None, Some(w)) => {
            let text = w.as_str().ok_or_else(|| {
                format!("weekday: expected a name like \"MON\", got {}", kind_of(w))
            })?;
            let mask = weekend_mask(text).map_err(|m| format!("weekday: {m}"))?;
            if mask.count_ones() != 1 {
                return Err(format!("weekday: {text:?}: expected one weekday"));
            }
            let nth = int("nth")?.ok_or("nth: required with weekday (1-5, or -1 for the last)")?;
            if !(nth == -1 || (1..=5).contains(&nth)) {
                return Err(format!("nth: {nth}: expected 1 to 5, or -1 for the last"));
            }
            if obj.get("observed").is_some() {
                return Err("observed: only for a fixed day".into());
            }
            Ok((
                YearlyRule::NthWeekday {
                    month,
                    weekday: mask.trailing_zeros(),
                    nth: nth as i32,
                },
                comment,
            ))
        }
        (Some(_), Some(_)) => Err("give day or weekday, not both".into()),
        (None, None) => Err("needs day (with month) or weekday and nth (with month)".into()),
    }
}

impl BusinessCalendar {
    /// Builds a calendar; `dates` and `ranges` are inclusive; rules recur every year.
    pub fn new(
        name: &str,
        description: Option<String>,
        zone: Tz,
        weekend: &str,
        dates: Vec<NaiveDate>,
        ranges: Vec<(NaiveDate, NaiveDate)>,
        rules: Vec<(YearlyRule, Option<String>)>,
    ) -> Result<BusinessCalendar, SpecError> {
        let name = check_name(name).map_err(|m| SpecError::new("name", m))?;
        let weekend = weekend_mask(weekend).map_err(|m| SpecError::new("weekend", m))?;
        for (i, (start, end)) in ranges.iter().enumerate() {
            if end < start {
                return Err(SpecError::new(
                    format!("ranges[{i}]"),
                    format!("end {end} is before start {start}"),
                ));
            }
        }
        let mut calendar = BusinessCalendar {
            name,
            description,
            zone,
            weekend,
            dates,
            ranges,
            rules,
            listed: Vec::new(),
        };
        calendar.resolve();
        Ok(calendar)
    }

    /// Parses a calendar object (docs/spec.md §16):
    /// `{"name", "description", "timeZone", "weekend", "dates", "ranges", "rules"}`.
    pub fn from_json(value: &Value) -> Result<BusinessCalendar, SpecError> {
        let obj = value
            .as_object()
            .ok_or_else(|| SpecError::new("calendar", "expected a JSON object"))?;
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
        let text = |key: &str| -> Result<Option<&str>, SpecError> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(other) => Err(SpecError::new(
                    key,
                    format!("expected a string, got {}", kind_of(other)),
                )),
            }
        };
        let name = text("name")?.ok_or_else(|| SpecError::new("name", "required"))?;
        let description = text("description")?.map(String::from);
        if description.as_ref().is_some_and(|d| d.len() > 1024) {
            return Err(SpecError::new("description", "at most 1024 bytes"));
        }
        let zone = match text("timeZone")? {
            None => Tz::UTC,
            Some(z) => z.parse::<Tz>().map_err(|_| {
                SpecError::new(
                    "timeZone",
                    format!(
                        "unknown time zone {z:?}; expected an IANA name like \"Europe/London\""
                    ),
                )
            })?,
        };
        let weekend = text("weekend")?.unwrap_or("SAT,SUN");
        let list = |key: &str| -> Result<&[Value], SpecError> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(&[]),
                Some(Value::Array(items)) if items.len() <= MAX_ENTRIES => Ok(items),
                Some(Value::Array(_)) => Err(SpecError::new(
                    key,
                    format!("at most {MAX_ENTRIES} entries"),
                )),
                Some(other) => Err(SpecError::new(
                    key,
                    format!("expected an array, got {}", kind_of(other)),
                )),
            }
        };
        let bad_date = |path: String, v: &Value| {
            SpecError::new(
                path,
                format!("expected a date like \"2024-12-25\", got {v}"),
            )
        };
        let mut dates = Vec::new();
        for (i, v) in list("dates")?.iter().enumerate() {
            let d = v
                .as_str()
                .and_then(date)
                .ok_or_else(|| bad_date(format!("dates[{i}]"), v))?;
            dates.push(d);
        }
        let mut ranges = Vec::new();
        for (i, v) in list("ranges")?.iter().enumerate() {
            let get = |k: &str| {
                v.get(k)
                    .and_then(Value::as_str)
                    .and_then(date)
                    .ok_or_else(|| {
                        bad_date(format!("ranges[{i}].{k}"), v.get(k).unwrap_or(&Value::Null))
                    })
            };
            if let Some(extra) = v
                .as_object()
                .and_then(|o| o.keys().find(|k| *k != "start" && *k != "end"))
            {
                return Err(SpecError::new(
                    format!("ranges[{i}].{extra}"),
                    "unknown field; expected start, end",
                ));
            }
            ranges.push((get("start")?, get("end")?));
        }
        let mut rules = Vec::new();
        for (i, v) in list("rules")?.iter().enumerate() {
            rules.push(parse_rule(v).map_err(|m| SpecError::new(format!("rules[{i}]"), m))?);
        }
        BusinessCalendar::new(name, description, zone, weekend, dates, ranges, rules)
    }

    /// The calendar as JSON, in the form [`BusinessCalendar::from_json`] reads.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("name".into(), json!(self.name));
        if let Some(d) = &self.description {
            obj.insert("description".into(), json!(d));
        }
        obj.insert("timeZone".into(), json!(self.zone.name()));
        obj.insert("weekend".into(), json!(weekend_text(self.weekend)));
        obj.insert(
            "dates".into(),
            Value::Array(self.dates.iter().map(|d| json!(d.to_string())).collect()),
        );
        obj.insert(
            "ranges".into(),
            Value::Array(
                self.ranges
                    .iter()
                    .map(|(s, e)| json!({"start": s.to_string(), "end": e.to_string()}))
                    .collect(),
            ),
        );
        let rules = self
            .rules
            .iter()
            .map(|(rule, comment)| {
                let mut r = match rule {
                    YearlyRule::Fixed {
                        month,
                        day,
                        observed,
                    } => {
                        let mut m = json!({"month": month, "day": day});
                        let name = match observed {
                            Observance::None => None,
                            Observance::NextWeekday => Some("nextWeekday"),
                            Observance::NearestWeekday => Some("nearestWeekday"),
                        };
                        if let Some(name) = name {
                            m["observed"] = json!(name);
                        }
                        m
                    }
                    YearlyRule::NthWeekday {
                        month,
                        weekday,
                        nth,
                    } => {
                        json!({"month": month, "weekday": weekend_text(1 << weekday), "nth": nth})
                    }
                    YearlyRule::Easter { offset } => json!({"easter": offset}),
                };
                if let Some(c) = comment {
                    r["comment"] = json!(c);
                }
                r
            })
            .collect();
        obj.insert("rules".into(), Value::Array(rules));
        Value::Object(obj)
    }

    /// Its yearly rules, in order, each with its comment.
    pub fn rules(&self) -> &[(YearlyRule, Option<String>)] {
        &self.rules
    }

    /// The calendar's name, by which specs refer to it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The zone its dates are meant in (specs match dates in their own `timeZone`).
    pub fn time_zone(&self) -> Tz {
        self.zone
    }

    /// Whether `day` is listed (a holiday). Days outside 2000–2100 are not.
    pub fn is_listed(&self, day: NaiveDate) -> bool {
        self.listed_days(days_of(day))
    }

    /// Whether `day` is a business day: not a weekend day and not listed.
    pub fn is_business_day(&self, day: NaiveDate) -> bool {
        self.business(days_of(day))
    }

    /// The `n`th business day of a month (1 = the first, -1 = the last), if the month has one.
    pub fn nth_business_day(&self, year: i32, month: u32, n: i32) -> Option<NaiveDate> {
        naive(self.nth_business(year, month, n)?)
    }

    /// `day` moved to a business day by `roll` (itself when it is one).
    pub fn roll(&self, day: NaiveDate, roll: Roll) -> Option<NaiveDate> {
        naive(self.roll_days(days_of(day), roll)?)
    }

    /// The business day `n` business days after `day` (before, for negative `n`); `n = 0` is `day`
    /// itself when it is a business day, else the next one.
    pub fn add_business_days(&self, day: NaiveDate, n: i32) -> Option<NaiveDate> {
        naive(self.offset_days(days_of(day), n)?)
    }

    fn resolve(&mut self) {
        let (first, last) = (first_day(), last_day());
        let mut listed = vec![0u64; ((last - first) / 64 + 1) as usize];
        let set = |d: i64, listed: &mut Vec<u64>| {
            if (first..=last).contains(&d) {
                let i = (d - first) as usize;
                listed[i / 64] |= 1 << (i % 64);
            }
        };
        for d in &self.dates {
            set(days_of(*d), &mut listed);
        }
        for (s, e) in &self.ranges {
            for d in days_of(*s).max(first - 1)..=days_of(*e).min(last + 1) {
                set(d, &mut listed);
            }
        }
        let is_set = |d: i64, listed: &Vec<u64>| {
            (first..=last).contains(&d) && {
                let i = (d - first) as usize;
                listed[i / 64] >> (i % 64) & 1 == 1
            }
        };
        for year in FIRST_YEAR..=LAST_YEAR {
            // Rules that do not move first, then observed ones in order, so a substitute day
            // skips days that are already holidays (Christmas and Boxing Day on a weekend).
            for (rule, _) in &self.rules {
                match *rule {
                    YearlyRule::Fixed {
                        month,
                        day,
                        observed: Observance::None,
                    } => {
                        if day <= days_in_month(year, month) {
                            set(days_from_civil(year, month, day), &mut listed);
                        }
                    }
                    YearlyRule::NthWeekday {
                        month,
                        weekday: w,
                        nth,
                    } => {
                        if let Some(d) = nth_weekday(year, month, w, nth) {
                            set(d, &mut listed);
                        }
                    }
                    YearlyRule::Easter { offset } => {
                        set(easter(year) + i64::from(offset), &mut listed)
                    }
                    YearlyRule::Fixed { .. } => {}
                }
            }
            for (rule, _) in &self.rules {
                let YearlyRule::Fixed {
                    month,
                    day,
                    observed,
                } = *rule
                else {
                    continue;
                };
                if observed == Observance::None || day > days_in_month(year, month) {
                    continue;
                }
                let mut d = days_from_civil(year, month, day);
                if self.weekend >> weekday(d) & 1 == 1 {
                    match observed {
                        Observance::NearestWeekday => {
                            // Saturday to Friday, Sunday to Monday; other weekend days forward.
                            d = if weekday(d) == 6 { d - 1 } else { d + 1 };
                        }
                        _ => {
                            while self.weekend >> weekday(d) & 1 == 1 || is_set(d, &listed) {
                                d += 1;
                            }
                        }
                    }
                }
                set(d, &mut listed);
            }
        }
        self.listed = listed;
    }

    fn listed_days(&self, d: i64) -> bool {
        let first = first_day();
        if !(first..=last_day()).contains(&d) {
            return false;
        }
        let i = (d - first) as usize;
        self.listed
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    pub(crate) fn business(&self, d: i64) -> bool {
        self.weekend >> weekday(d) & 1 == 0 && !self.listed_days(d)
    }

    /// Days since 1970-01-01 of the nth business day of a month.
    pub(crate) fn nth_business(&self, year: i32, month: u32, n: i32) -> Option<i64> {
        let start = days_from_civil(year, month, 1);
        let len = i64::from(days_in_month(year, month));
        let days: Box<dyn Iterator<Item = i64>> = if n > 0 {
            Box::new(start..start + len)
        } else {
            Box::new((start..start + len).rev())
        };
        days.filter(|&d| self.business(d))
            .nth(n.unsigned_abs().checked_sub(1)? as usize)
    }

    pub(crate) fn roll_days(&self, d: i64, roll: Roll) -> Option<i64> {
        if self.business(d) {
            return Some(d);
        }
        let step = |d: i64, forward: bool| -> Option<i64> {
            let mut x = d;
            for _ in 0..366 {
                x += if forward { 1 } else { -1 };
                if self.business(x) {
                    return Some(x);
                }
            }
            None
        };
        let month_of = |x: i64| {
            let (y, m, _) = civil_from_days(x);
            (y, m)
        };
        match roll {
            Roll::Following => step(d, true),
            Roll::Preceding => step(d, false),
            Roll::ModifiedFollowing => match step(d, true) {
                Some(x) if month_of(x) == month_of(d) => Some(x),
                _ => step(d, false).filter(|&x| month_of(x) == month_of(d)),
            },
            Roll::ModifiedPreceding => match step(d, false) {
                Some(x) if month_of(x) == month_of(d) => Some(x),
                _ => step(d, true).filter(|&x| month_of(x) == month_of(d)),
            },
        }
    }

    pub(crate) fn offset_days(&self, d: i64, n: i32) -> Option<i64> {
        if n == 0 {
            return self.roll_days(d, Roll::Following);
        }
        let forward = n > 0;
        let mut left = n.unsigned_abs();
        let mut x = d;
        let mut guard = 0u32;
        while left > 0 {
            x += if forward { 1 } else { -1 };
            if !(first_day() - 1..=last_day() + 1).contains(&x) {
                return None;
            }
            if self.business(x) {
                left -= 1;
            }
            guard += 1;
            if guard > 400 * 366 {
                return None;
            }
        }
        Some(x)
    }
}

/// Names are what specs write: letters, digits, `-`, `_`, `.`; 1–64 characters.
fn check_name(name: &str) -> Result<String, String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{name:?}: expected 1 to 64 letters, digits, '-', '_' or '.'"
        ))
    }
}

/// Days since 1970-01-01 of the nth (1–5) or last (-1) weekday `w` of a month.
fn nth_weekday(year: i32, month: u32, w: u32, nth: i32) -> Option<i64> {
    let first = days_from_civil(year, month, 1);
    let len = i64::from(days_in_month(year, month));
    if nth > 0 {
        let first_match = first + i64::from((w + 7 - weekday(first)) % 7);
        let d = first_match + 7 * i64::from(nth - 1);
        (d < first + len).then_some(d)
    } else {
        let last = first + len - 1;
        Some(last - i64::from((weekday(last) + 7 - w) % 7))
    }
}

/// How a day that is not a business day moves to one (ISDA business-day conventions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Roll {
    /// The next business day.
    Following,
    /// The next business day, unless that is in the next month: then the previous one.
    ModifiedFollowing,
    /// The previous business day.
    Preceding,
    /// The previous business day, unless that is in the previous month: then the next one.
    ModifiedPreceding,
}

impl Roll {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Roll::Following => "following",
            Roll::ModifiedFollowing => "modifiedFollowing",
            Roll::Preceding => "preceding",
            Roll::ModifiedPreceding => "modifiedPreceding",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Roll> {
        [
            Roll::Following,
            Roll::ModifiedFollowing,
            Roll::Preceding,
            Roll::ModifiedPreceding,
        ]
        .into_iter()
        .find(|r| r.name() == text)
    }
}

/// The calendars specs may name, passed to [`super::Schedule::from_json_with`]. Pure: it holds
/// calendars already loaded; it never looks one up anywhere else.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CalendarSet {
    calendars: BTreeMap<String, Arc<BusinessCalendar>>,
}

impl CalendarSet {
    /// No calendars: a spec that names one is an error.
    pub fn new() -> Self {
        CalendarSet::default()
    }

    /// Adds (or replaces) a calendar under its name.
    pub fn insert(&mut self, calendar: BusinessCalendar) {
        self.calendars
            .insert(calendar.name.clone(), Arc::new(calendar));
    }

    /// Adds (or replaces) a calendar already shared (a process cache's).
    pub fn insert_shared(&mut self, calendar: Arc<BusinessCalendar>) {
        self.calendars.insert(calendar.name.clone(), calendar);
    }

    /// Only the calendars of `names` that it holds.
    pub fn only(&self, names: &BTreeSet<String>) -> CalendarSet {
        CalendarSet {
            calendars: self
                .calendars
                .iter()
                .filter(|(name, _)| names.contains(*name))
                .map(|(name, c)| (name.clone(), Arc::clone(c)))
                .collect(),
        }
    }

    /// Whether it holds no calendar.
    pub fn is_empty(&self) -> bool {
        self.calendars.is_empty()
    }

    /// The calendars, in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<BusinessCalendar>> {
        self.calendars.values()
    }

    /// The calendar of that name.
    pub fn get(&self, name: &str) -> Option<&Arc<BusinessCalendar>> {
        self.calendars.get(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.calendars.keys().map(String::as_str)
    }

    pub(crate) fn resolve(&self, name: &str) -> Result<Arc<BusinessCalendar>, String> {
        self.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = self.names().collect();
            if known.is_empty() {
                format!("unknown calendar {name:?}: no calendars are defined")
            } else {
                format!("unknown calendar {name:?}; known: {}", known.join(", "))
            }
        })
    }
}

/// The names of the business calendars a schedule object refers to: the strings and
/// `businessDaysOf` names of `onlyOn` and `exclude`, and the `calendar` of its `calendars`
/// entries. What is not shaped as a name is left to the parser to report; this only says which
/// calendars a parse of `schedule` needs ([`super::Schedule::from_json_with`]).
pub fn calendar_names(schedule: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let items = |key: &str| {
        schedule
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    for item in items("onlyOn").iter().chain(items("exclude")) {
        let name = match item {
            Value::String(name) => Some(name.as_str()),
            Value::Object(obj) => obj.get("businessDaysOf").and_then(Value::as_str),
            _ => None,
        };
        if let Some(name) = name {
            names.insert(name.to_owned());
        }
    }
    for entry in items("calendars") {
        if let Some(name) = entry.get("calendar").and_then(Value::as_str) {
            names.insert(name.to_owned());
        }
    }
    names
}

/// A business-day rule of a calendar entry in a spec.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BusinessRule {
    /// `"businessDay": n`: the nth (or, negative, nth-last) business day of the month.
    Nth(i32),
    /// `"roll": …`: the days `dayOfMonth` selects, moved to business days.
    Roll(Roll),
    /// `"businessDayOffset": n`: n business days after (before) the days `dayOfMonth` selects.
    Offset(i32),
}

/// A business-day rule bound to its calendar.
#[derive(Clone, Debug)]
pub(crate) struct BusinessDays {
    pub calendar: Arc<BusinessCalendar>,
    pub rule: BusinessRule,
}

impl PartialEq for BusinessDays {
    fn eq(&self, other: &Self) -> bool {
        self.rule == other.rule && *self.calendar == *other.calendar
    }
}

impl BusinessDays {
    /// The days (bit d for day d) of `year`/`month` this rule fires on; `base(y, m)` gives the
    /// days `dayOfMonth` selects in a month (for roll and offset rules).
    pub(crate) fn day_mask(&self, year: i32, month: u32, base: impl Fn(i32, u32) -> u32) -> u32 {
        let start = days_from_civil(year, month, 1);
        let len = i64::from(days_in_month(year, month));
        let mut mask = 0u32;
        let mut mark = |d: i64| {
            if (start..start + len).contains(&d) {
                mask |= 1 << (d - start + 1);
            }
        };
        match self.rule {
            BusinessRule::Nth(n) => {
                if let Some(d) = self.calendar.nth_business(year, month, n) {
                    mark(d);
                }
            }
            BusinessRule::Roll(_) | BusinessRule::Offset(_) => {
                // A day may move into this month from the months around it.
                let neighbours = [
                    if month == 1 {
                        (year - 1, 12)
                    } else {
                        (year, month - 1)
                    },
                    (year, month),
                    if month == 12 {
                        (year + 1, 1)
                    } else {
                        (year, month + 1)
                    },
                ];
                for (y, m) in neighbours {
                    if !(FIRST_YEAR..=LAST_YEAR).contains(&y) {
                        continue;
                    }
                    let days = base(y, m);
                    let first = days_from_civil(y, m, 1);
                    for d in 1..=31u32 {
                        if days >> d & 1 == 0 {
                            continue;
                        }
                        let source = first + i64::from(d) - 1;
                        let target = match self.rule {
                            BusinessRule::Roll(roll) => self.calendar.roll_days(source, roll),
                            BusinessRule::Offset(n) => self.calendar.offset_days(source, n),
                            BusinessRule::Nth(_) => None,
                        };
                        if let Some(t) = target {
                            mark(t);
                        }
                    }
                }
            }
        }
        mask
    }

    pub(crate) fn write_json(&self, obj: &mut Map<String, Value>) {
        obj.insert("calendar".into(), json!(self.calendar.name));
        match self.rule {
            BusinessRule::Nth(n) => obj.insert("businessDay".into(), json!(n)),
            BusinessRule::Roll(r) => obj.insert("roll".into(), json!(r.name())),
            BusinessRule::Offset(n) => obj.insert("businessDayOffset".into(), json!(n)),
        };
    }
}

/// Schedule-level day filters: `onlyOn` and the calendar names in `exclude`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct DayFilter {
    /// Fire only on days that some entry accepts (empty: every day).
    pub only_on: Vec<DaySet>,
    /// Never fire on these days.
    pub exclude: Vec<DaySet>,
}

/// Which days of a calendar a filter means.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DaySet {
    /// Its listed days (holidays): `"london"`.
    Listed(Arc<BusinessCalendar>),
    /// Its business days: `{"businessDaysOf": "london"}`.
    Business(Arc<BusinessCalendar>),
}

impl DaySet {
    fn contains(&self, d: i64) -> bool {
        match self {
            DaySet::Listed(c) => c.listed_days(d),
            DaySet::Business(c) => c.business(d),
        }
    }

    fn calendar_name(&self) -> &str {
        &self.calendar().name
    }

    pub(crate) fn calendar(&self) -> &Arc<BusinessCalendar> {
        match self {
            DaySet::Listed(c) | DaySet::Business(c) => c,
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        match self {
            DaySet::Listed(c) => json!(c.name),
            DaySet::Business(c) => json!({"businessDaysOf": c.name}),
        }
    }

    pub(crate) fn parse(value: &Value, calendars: &CalendarSet) -> Result<DaySet, String> {
        match value {
            Value::String(name) => Ok(DaySet::Listed(calendars.resolve(name)?)),
            Value::Object(obj) if obj.len() == 1 && obj.contains_key("businessDaysOf") => {
                let name = obj["businessDaysOf"]
                    .as_str()
                    .ok_or("businessDaysOf: expected a calendar name")?;
                Ok(DaySet::Business(calendars.resolve(name)?))
            }
            other => Err(format!(
                "expected a calendar name like \"london\" or {{\"businessDaysOf\": \"london\"}}, got {}",
                kind_of(other)
            )),
        }
    }
}

impl DayFilter {
    pub(crate) fn is_empty(&self) -> bool {
        self.only_on.is_empty() && self.exclude.is_empty()
    }

    /// The calendar and the rule (`exclude`, `onlyOn`) that keep the wall-clock day `d` from
    /// firing, if any.
    pub(crate) fn removed_by(&self, d: i64) -> Option<(String, &'static str)> {
        if let Some(set) = self.exclude.iter().find(|s| s.contains(d)) {
            return Some((set.calendar_name().to_owned(), "exclude"));
        }
        if !self.only_on.is_empty() && !self.only_on.iter().any(|s| s.contains(d)) {
            return Some((self.only_on[0].calendar_name().to_owned(), "onlyOn"));
        }
        None
    }

    /// Whether the wall-clock day `d` (days since 1970-01-01) may fire.
    pub(crate) fn allows(&self, d: i64) -> bool {
        (self.only_on.is_empty() || self.only_on.iter().any(|s| s.contains(d)))
            && !self.exclude.iter().any(|s| s.contains(d))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn yearly_rules_in_words() {
        let cases = [
            (
                YearlyRule::NthWeekday { month: 5, weekday: 1, nth: 1 },
                "first Monday of May",
            ),
            (
                YearlyRule::NthWeekday { month: 8, weekday: 1, nth: -1 },
                "last Monday of August",
            ),
            (
                YearlyRule::NthWeekday { month: 11, weekday: 4, nth: 4 },
                "fourth Thursday of November",
            ),
            (
                YearlyRule::Fixed { month: 12, day: 25, observed: Observance::NextWeekday },
                "25 December, or the next weekday when on a weekend",
            ),
            (
                YearlyRule::Fixed { month: 7, day: 4, observed: Observance::NearestWeekday },
                "4 July, or the nearest weekday when on a weekend (Saturday: the Friday before, Sunday: the Monday after)",
            ),
            (
                YearlyRule::Fixed { month: 1, day: 1, observed: Observance::None },
                "1 January",
            ),
            (YearlyRule::Easter { offset: -2 }, "2 days before Easter Sunday"),
            (YearlyRule::Easter { offset: 1 }, "the day after Easter Sunday"),
            (YearlyRule::Easter { offset: 0 }, "Easter Sunday"),
            (YearlyRule::Easter { offset: 39 }, "39 days after Easter Sunday"),
        ];
        for (rule, words) in cases {
            assert_eq!(rule.describe(), words, "{rule:?}");
        }
    }

    use super::*;

    fn d(s: &str) -> NaiveDate {
        date(s).unwrap_or_default()
    }

    #[test]
    fn easter_dates() {
        for (y, want) in [
            (2024, "2024-03-31"),
            (2025, "2025-04-20"),
            (2000, "2000-04-23"),
            (2038, "2038-04-25"),
        ] {
            assert_eq!(naive(easter(y)), Some(d(want)), "{y}");
        }
    }

    #[test]
    fn calendar_errors_name_the_field() {
        let err = |v: Value| BusinessCalendar::from_json(&v).err().map(|e| e.to_string());
        assert_eq!(
            err(json!({"name": "x", "rules": [{}, {}, {}, {"month": 5, "weekday": "MON", "nth": 6}]})).as_deref(),
            Some("rules[0]: month: required (1-12), or {\"easter\": n}")
        );
        assert_eq!(
            err(json!({"name": "x", "rules": [{"month": 5, "weekday": "MON", "nth": 6}]}))
                .as_deref(),
            Some("rules[0]: nth: 6: expected 1 to 5, or -1 for the last")
        );
        assert_eq!(
            err(json!({"name": "x", "dates": ["25/12/2024"]})).as_deref(),
            Some("dates[0]: expected a date like \"2024-12-25\", got \"25/12/2024\"")
        );
        assert_eq!(
            err(json!({"name": "x", "weekend": "SAT-FRI"})).as_deref(),
            Some("weekend: \"SAT-FRI\": every day would be a weekend day, leaving no business day")
        );
        assert_eq!(
            err(json!({"name": "no spaces"})).as_deref(),
            Some("name: \"no spaces\": expected 1 to 64 letters, digits, '-', '_' or '.'")
        );
        assert_eq!(
            err(json!({"name": "x", "ranges": [{"start": "2024-01-05", "end": "2024-01-01"}]}))
                .as_deref(),
            Some("ranges[0]: end 2024-01-01 is before start 2024-01-05")
        );
        // The JSON form round-trips.
        let cal = BusinessCalendar::from_json(&json!({"name": "x", "weekend": "FRI,SAT",
            "rules": [{"month": 7, "day": 4, "observed": "nearestWeekday"}, {"easter": 1, "comment": "Easter Monday"}],
            "dates": ["2024-02-02"], "ranges": [{"start": "2024-08-01", "end": "2024-08-03"}]}))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            BusinessCalendar::from_json(&cal.to_json()).ok(),
            Some(cal.clone())
        );
        assert!(cal.is_listed(d("2024-08-02")));
        // 4 July 2026 is a Saturday (a weekend day here only when SAT is): Friday the 3rd.
        let us = BusinessCalendar::from_json(
            &json!({"name": "us", "rules": [{"month": 7, "day": 4, "observed": "nearestWeekday"}]}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(us.is_listed(d("2026-07-03")));
        assert!(!us.is_listed(d("2026-07-04")));
    }

    #[test]
    fn substitute_days_chain() {
        // 2021: Christmas is a Saturday, Boxing Day a Sunday: observed Monday 27 and Tuesday 28.
        let cal = BusinessCalendar::new(
            "uk",
            None,
            Tz::UTC,
            "SAT,SUN",
            vec![],
            vec![],
            vec![
                (
                    YearlyRule::Fixed {
                        month: 12,
                        day: 25,
                        observed: Observance::NextWeekday,
                    },
                    None,
                ),
                (
                    YearlyRule::Fixed {
                        month: 12,
                        day: 26,
                        observed: Observance::NextWeekday,
                    },
                    None,
                ),
            ],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(cal.is_listed(d("2021-12-27")));
        assert!(cal.is_listed(d("2021-12-28")));
        assert!(cal.is_business_day(d("2021-12-29")));
        assert!(!cal.is_business_day(d("2021-12-25")));
        assert_eq!(cal.nth_business_day(2021, 12, -1), Some(d("2021-12-31")));
    }
}
