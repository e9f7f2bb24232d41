//! One field of a calendar: its canonical value ranges and the day specials (`L`, `W`, `#`).
//!
//! Cron strings and calendar strings share this grammar, so a construct means the same thing wherever
//! it is written; a [`Syntax`] switches on what each dialect allows. Every value ends up in canonical
//! numbering (day of week 0 = Sunday … 6 = Saturday), whatever numbering the input used, which is what
//! lets one evaluator and one canonical form serve every dialect.

use serde_json::{json, Value};

/// Which calendar field a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldKind {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    Year,
    DayOfWeek,
}

/// Years the engine evaluates, and the years Temporal accepts. Cron strings of the other dialects
/// accept [`PEER_YEARS`] so that Quartz and EventBridge expressions paste unchanged, but a year field
/// must select at least one evaluated year: one that never can is refused, not left to never fire.
pub(crate) const FIRST_YEAR: i32 = 2000;
pub(crate) const LAST_YEAR: i32 = 2100;

/// The year range of Temporal: its dialect and every calendar object.
pub(crate) const TEMPORAL_YEARS: (u32, u32) = (FIRST_YEAR as u32, LAST_YEAR as u32);
/// The year range cron strings of the `standard`, `quartz` and `eventbridge` dialects accept
/// (Quartz allows 1970–2099, EventBridge 1970–2199).
pub(crate) const PEER_YEARS: (u32, u32) = (1970, 2199);

impl FieldKind {
    pub(crate) const ALL: [FieldKind; 7] = [
        FieldKind::Second,
        FieldKind::Minute,
        FieldKind::Hour,
        FieldKind::DayOfMonth,
        FieldKind::Month,
        FieldKind::Year,
        FieldKind::DayOfWeek,
    ];

    /// Inclusive bounds of canonical values.
    pub(crate) fn bounds(self) -> (u32, u32) {
        match self {
            FieldKind::Second | FieldKind::Minute => (0, 59),
            FieldKind::Hour => (0, 23),
            FieldKind::DayOfMonth => (1, 31),
            FieldKind::Month => (1, 12),
            FieldKind::Year => PEER_YEARS,
            FieldKind::DayOfWeek => (0, 6),
        }
    }

    /// What `*` means: for years, the span the engine evaluates.
    pub(crate) fn star(self) -> Range {
        match self {
            FieldKind::Year => Range::new(FIRST_YEAR as u32, LAST_YEAR as u32, 1),
            _ => {
                let (lo, hi) = self.bounds();
                Range::new(lo, hi, 1)
            }
        }
    }

    /// The field's key in calendar JSON.
    pub(crate) fn json_name(self) -> &'static str {
        match self {
            FieldKind::Second => "second",
            FieldKind::Minute => "minute",
            FieldKind::Hour => "hour",
            FieldKind::DayOfMonth => "dayOfMonth",
            FieldKind::Month => "month",
            FieldKind::Year => "year",
            FieldKind::DayOfWeek => "dayOfWeek",
        }
    }

    /// The field's name in cron error messages.
    pub(crate) fn cron_name(self) -> &'static str {
        match self {
            FieldKind::Second => "second",
            FieldKind::Minute => "minute",
            FieldKind::Hour => "hour",
            FieldKind::DayOfMonth => "day-of-month",
            FieldKind::Month => "month",
            FieldKind::Year => "year",
            FieldKind::DayOfWeek => "day-of-week",
        }
    }

    /// Temporal's calendar defaults: second, minute and hour 0, everything else `*`.
    pub(crate) fn default_text(self) -> &'static str {
        match self {
            FieldKind::Second | FieldKind::Minute | FieldKind::Hour => "0",
            _ => "*",
        }
    }
}

/// An inclusive range of canonical values with a step, as in Temporal's structured calendar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Range {
    pub start: u32,
    pub end: u32,
    pub step: u32,
}

impl Range {
    pub(crate) fn new(start: u32, end: u32, step: u32) -> Self {
        Range { start, end, step }
    }

    pub(crate) fn single(value: u32) -> Self {
        Range::new(value, value, 1)
    }

    pub(crate) fn values(self) -> impl Iterator<Item = u32> {
        (self.start..=self.end).step_by(self.step.max(1) as usize)
    }

    pub(crate) fn to_json(self) -> Value {
        let mut obj = serde_json::Map::new();
        obj.insert("start".into(), json!(self.start));
        if self.end != self.start {
            obj.insert("end".into(), json!(self.end));
        }
        if self.step != 1 {
            obj.insert("step".into(), json!(self.step));
        }
        Value::Object(obj)
    }
}

/// Day-of-month constructs that depend on the month (Quartz `L`, `L-n`, `nW`, `LW`, `L-nW`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DaySpecial {
    /// The last day of the month minus `n` days (`L`, `L-3`).
    LastDay(u32),
    /// The weekday nearest to day `d`, staying inside the month (`15W`).
    NearestWeekday(u32),
    /// The weekday nearest to the last day minus `n` (`LW`, `L-3W`).
    LastWeekday(u32),
}

/// Day-of-week constructs that depend on the month (`5#3`, `5L`, `FRI#L`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WeekdaySpecial {
    /// The `nth` (1–5) given weekday of the month.
    Nth { weekday: u32, nth: u32 },
    /// The last given weekday of the month.
    Last { weekday: u32 },
}

impl DaySpecial {
    /// The day of the month this special selects, if the month has one.
    pub(crate) fn day(self, month_len: u32, first_weekday: u32) -> Option<u32> {
        match self {
            DaySpecial::LastDay(n) => (month_len > n).then(|| month_len - n),
            DaySpecial::NearestWeekday(d) => nearest_weekday(d, month_len, first_weekday),
            DaySpecial::LastWeekday(n) => (month_len > n)
                .then(|| month_len - n)
                .and_then(|d| nearest_weekday(d, month_len, first_weekday)),
        }
    }

    pub(crate) fn to_json(self) -> Value {
        match self {
            DaySpecial::LastDay(n) => json!({ "lastDay": n }),
            DaySpecial::NearestWeekday(d) => json!({ "nearestWeekday": d }),
            DaySpecial::LastWeekday(n) => json!({ "lastWeekday": n }),
        }
    }
}

/// Quartz's `W`: a Saturday moves to Friday and a Sunday to Monday, but never across the month's
/// edge (the 1st on a Saturday moves to Monday the 3rd). A day the month lacks selects nothing, as
/// in croner: `31W` never fires in April.
fn nearest_weekday(day: u32, month_len: u32, first_weekday: u32) -> Option<u32> {
    if day == 0 || day > month_len {
        return None;
    }
    let weekday = (first_weekday + day - 1) % 7;
    Some(match weekday {
        6 if day > 1 => day - 1,
        6 => day + 2,
        0 if day < month_len => day + 1,
        0 => day - 2,
        _ => day,
    })
}

impl WeekdaySpecial {
    pub(crate) fn day(self, month_len: u32, first_weekday: u32) -> Option<u32> {
        match self {
            WeekdaySpecial::Nth { weekday, nth } => {
                let first = 1 + (weekday + 7 - first_weekday) % 7;
                let day = first + 7 * (nth - 1);
                (day <= month_len).then_some(day)
            }
            WeekdaySpecial::Last { weekday } => {
                let last_weekday = (first_weekday + month_len - 1) % 7;
                Some(month_len - (last_weekday + 7 - weekday) % 7)
            }
        }
    }

    pub(crate) fn to_json(self) -> Value {
        match self {
            WeekdaySpecial::Nth { weekday, nth } => json!({ "weekday": weekday, "nth": nth }),
            WeekdaySpecial::Last { weekday } => json!({ "weekday": weekday, "last": true }),
        }
    }
}

/// A parsed field: plain ranges plus the month-dependent specials.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSpec {
    pub ranges: Vec<Range>,
    pub days: Vec<DaySpecial>,
    pub weekdays: Vec<WeekdaySpecial>,
}

impl FieldSpec {
    pub(crate) fn star(kind: FieldKind) -> Self {
        FieldSpec {
            ranges: vec![kind.star()],
            ..FieldSpec::default()
        }
    }

    /// True when the field selects every value and no special: `*`, `?`, `0-59`.
    pub(crate) fn is_full(&self, kind: FieldKind) -> bool {
        if !self.days.is_empty() || !self.weekdays.is_empty() {
            return false;
        }
        let (lo, hi) = kind.bounds();
        let hi = if kind == FieldKind::Year {
            LAST_YEAR as u32
        } else {
            hi
        };
        let lo = if kind == FieldKind::Year {
            FIRST_YEAR as u32
        } else {
            lo
        };
        (lo..=hi).all(|v| {
            self.ranges
                .iter()
                .any(|r| r.start <= v && v <= r.end && (v - r.start) % r.step == 0)
        })
    }

    pub(crate) fn to_json(&self) -> Value {
        let items = self.ranges.iter().map(|r| r.to_json());
        let days = self.days.iter().map(|d| d.to_json());
        let weekdays = self.weekdays.iter().map(|w| w.to_json());
        Value::Array(items.chain(days).chain(weekdays).collect())
    }
}

/// What a dialect allows inside a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Syntax {
    /// Day-of-week numbers 1–7 with 1 = Sunday (Quartz, EventBridge) instead of 0–7 with 0 and 7 = Sunday.
    pub weekday_one_based: bool,
    /// `?` in day-of-month and day-of-week.
    pub question_mark: bool,
    /// `L`, `W`, `#`.
    pub specials: bool,
    /// Ranges whose end is below their start wrap around (`FRI-MON`, `22-2`), as croniter and Quartz do.
    pub wrap_ranges: bool,
    /// Quartz's own limits: a step no larger than the field (`0/120` in minutes is an error), and
    /// `L` or `#` in day of week only as the field's single item.
    pub quartz_limits: bool,
    /// The years a year field may name, inclusive.
    pub years: (u32, u32),
    /// The dialect's name for error messages.
    pub dialect: &'static str,
}

impl Syntax {
    /// Inclusive bounds of canonical values of `kind` under this syntax: the year range is the
    /// dialect's own.
    pub(super) fn bounds(self, kind: FieldKind) -> (u32, u32) {
        match kind {
            FieldKind::Year => self.years,
            _ => kind.bounds(),
        }
    }
}

/// Refuses a year field that selects no year the engine evaluates: it could never fire.
fn check_evaluable_years(kind: FieldKind, spec: &FieldSpec, text: &str) -> Result<(), String> {
    let evaluated = FIRST_YEAR as u32..=LAST_YEAR as u32;
    let any = spec
        .ranges
        .iter()
        .any(|r| r.values().any(|y| evaluated.contains(&y)));
    if kind == FieldKind::Year && !any {
        return Err(format!(
            "{text} selects no year from {FIRST_YEAR} to {LAST_YEAR}, the years Sundial evaluates, so it could never fire"
        ));
    }
    Ok(())
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];
const WEEKDAYS: [&str; 7] = [
    "sunday",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
];

/// A name as Temporal reads it: any prefix of at least three letters for months (`Sept`) and two for
/// weekdays (`tu`, `thurs`), case-insensitive.
fn lookup_name(kind: FieldKind, token: &str) -> Option<u32> {
    let (names, min_len, base): (&[&str], usize, u32) = match kind {
        FieldKind::Month => (&MONTHS, 3, 1),
        FieldKind::DayOfWeek => (&WEEKDAYS, 2, 0),
        _ => return None,
    };
    if token.len() < min_len || !token.is_ascii() {
        return None;
    }
    let lower = token.to_ascii_lowercase();
    names
        .iter()
        .position(|name| name.starts_with(&lower))
        .map(|i| i as u32 + base)
}

/// Parses one field written as text, e.g. `"1,15"`, `"MON-FRI"`, `"*/5"`, `"L-2"`, `"FRI#3"`.
///
/// Errors are messages without the field's name; the caller adds the path.
pub(crate) fn parse_field(
    kind: FieldKind,
    text: &str,
    syntax: Syntax,
) -> Result<FieldSpec, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty field".into());
    }
    let mut spec = FieldSpec::default();
    for item in text.split(',') {
        parse_item(kind, item.trim(), syntax, &mut spec)?;
    }
    let lone_special =
        text.contains(',') && (text.contains('#') || text.to_ascii_uppercase().contains('L'));
    if syntax.quartz_limits && kind == FieldKind::DayOfWeek && lone_special {
        return Err(format!(
            "{text:?}: L and # cannot be combined with other days in the {} dialect",
            syntax.dialect
        ));
    }
    check_evaluable_years(kind, &spec, &format!("{text:?}"))?;
    Ok(spec)
}

fn parse_item(
    kind: FieldKind,
    item: &str,
    syntax: Syntax,
    spec: &mut FieldSpec,
) -> Result<(), String> {
    if item.is_empty() {
        return Err("empty list item".into());
    }
    if item == "?" {
        if !syntax.question_mark || !matches!(kind, FieldKind::DayOfMonth | FieldKind::DayOfWeek) {
            return Err(format!(
                "\"?\" is not allowed here in the {} dialect",
                syntax.dialect
            ));
        }
        spec.ranges.push(kind.star());
        return Ok(());
    }
    if kind == FieldKind::DayOfWeek && syntax.specials && item.eq_ignore_ascii_case("L") {
        // Quartz: `L` alone in day-of-week is the last day of the week, Saturday.
        spec.ranges.push(Range::single(6));
        return Ok(());
    }
    // croniter: `L` as the end of a day-of-month range is day 31 (`29-L`, `1-L/8`); days a month
    // lacks never match, so `29-L` is "the 29th to the last day".
    let rewritten;
    let item = match croniter_last_range(kind, item, syntax) {
        Some(text) => {
            rewritten = text;
            rewritten.as_str()
        }
        None => item,
    };
    if let Some(special) = parse_special(kind, item, syntax)? {
        match special {
            Special::Day(d) => spec.days.push(d),
            Special::Weekday(w) => spec.weekdays.push(w),
        }
        return Ok(());
    }
    let (range_text, step) = match item.split_once('/') {
        Some((range, step)) => {
            let step_value: u32 = step.parse().map_err(|_| {
                format!("invalid step {step:?} in {item:?}: expected a positive number")
            })?;
            if step_value == 0 {
                return Err(format!("step must be at least 1 in {item:?}"));
            }
            let (lo, hi) = syntax.bounds(kind);
            if syntax.quartz_limits && step_value > hi - lo + 1 {
                return Err(format!(
                    "step {step_value} is larger than the field in {item:?}"
                ));
            }
            (range, Some(step_value))
        }
        None => (item, None),
    };
    let (lo, hi) = syntax.bounds(kind);
    let (start, end) = if range_text == "*" {
        let star = kind.star();
        (star.start, star.end)
    } else if let Some((a, b)) = split_range(range_text) {
        (
            parse_value(kind, a, syntax, item)?,
            parse_value(kind, b, syntax, item)?,
        )
    } else {
        let v = parse_value(kind, range_text, syntax, item)?;
        // `N/step` runs from N to the end of the field (Quartz, robfig, croniter, Temporal).
        let end = if step.is_some() {
            if kind == FieldKind::Year {
                // To the last evaluated year; a start past it selects nothing (refused below).
                (LAST_YEAR as u32).max(v)
            } else {
                hi
            }
        } else {
            v
        };
        (v, end)
    };
    let step = step.unwrap_or(1);
    push_range(kind, start, end, step, syntax, item, spec, (lo, hi))
}

/// `A-L` or `A-L/step` in a standard-dialect day-of-month, rewritten as `A-31` (croniter).
fn croniter_last_range(kind: FieldKind, item: &str, syntax: Syntax) -> Option<String> {
    if kind != FieldKind::DayOfMonth || syntax.dialect != "standard" {
        return None;
    }
    let (range, step) = match item.split_once('/') {
        Some((range, step)) => (range, Some(step)),
        None => (item, None),
    };
    let (start, end) = split_range(range)?;
    if !end.eq_ignore_ascii_case("L")
        || start.is_empty()
        || start.to_ascii_uppercase().contains('L')
    {
        return None;
    }
    Some(match step {
        Some(step) => format!("{start}-31/{step}"),
        None => format!("{start}-31"),
    })
}

/// croniter's `L<n>` in a standard-dialect day-of-week: the last weekday `n` (0–7) of the month.
fn is_croniter_last_weekday(upper: &str, syntax: Syntax) -> bool {
    syntax.dialect == "standard"
        && upper.len() > 1
        && upper.starts_with('L')
        && upper[1..].bytes().all(|b| b.is_ascii_digit())
}

fn split_range(text: &str) -> Option<(&str, &str)> {
    // A leading '-' is a negative number, not a range. Positions come from char_indices so that
    // non-ASCII input splits on character boundaries (and then fails as an unknown value).
    let (pos, _) = text.char_indices().skip(1).find(|&(_, c)| c == '-')?;
    Some((&text[..pos], &text[pos + 1..]))
}

fn parse_value(kind: FieldKind, token: &str, syntax: Syntax, item: &str) -> Result<u32, String> {
    if token.is_empty() {
        return Err(format!("missing value in {item:?}"));
    }
    if token.bytes().all(|b| b.is_ascii_digit()) {
        let v: u32 = token
            .parse()
            .map_err(|_| format!("{token:?} is out of range"))?;
        let v = match kind {
            FieldKind::DayOfWeek if syntax.weekday_one_based => {
                if !(1..=7).contains(&v) {
                    return Err(format!("{v} is out of range 1-7 (1 = Sunday) in {item:?}"));
                }
                v - 1
            }
            FieldKind::DayOfWeek => {
                if v > 7 {
                    return Err(format!(
                        "{v} is out of range 0-7 (0 and 7 = Sunday) in {item:?}"
                    ));
                }
                v
            }
            _ => {
                let (lo, hi) = syntax.bounds(kind);
                if v < lo || v > hi {
                    return Err(format!("{v} is out of range {lo}-{hi} in {item:?}"));
                }
                v
            }
        };
        return Ok(v);
    }
    match lookup_name(kind, token) {
        Some(v) => Ok(v),
        None => Err(match kind {
            FieldKind::Month | FieldKind::DayOfWeek => {
                format!("unknown name {token:?} in {item:?}")
            }
            _ => format!("invalid value {token:?} in {item:?}: expected a number"),
        }),
    }
}

#[allow(clippy::too_many_arguments)]
fn push_range(
    kind: FieldKind,
    start: u32,
    end: u32,
    step: u32,
    syntax: Syntax,
    item: &str,
    spec: &mut FieldSpec,
    (lo, hi): (u32, u32),
) -> Result<(), String> {
    if kind == FieldKind::DayOfWeek {
        // Standard numbering: 7 is Sunday too. A range ending at 7 keeps its order (`5-7` = Fri–Sun).
        let hi_cyclic = 7;
        let values: Vec<u32> = if start <= end {
            (start..=end).step_by(step as usize).collect()
        } else if syntax.wrap_ranges {
            wrap_values(start, end, step, 0, hi_cyclic - 1)
        } else {
            return Err(format!("range {item:?} runs backwards (wrap-around ranges are not allowed in the {} dialect)", syntax.dialect));
        };
        let mut days: Vec<u32> = values.into_iter().map(|v| v % 7).collect();
        days.sort_unstable();
        days.dedup();
        if start <= end && end < 7 {
            spec.ranges.push(Range::new(start, end.min(6), step));
        } else {
            spec.ranges.extend(compress(&days));
        }
        return Ok(());
    }
    if start > end {
        if !syntax.wrap_ranges || kind == FieldKind::Year {
            return Err(format!("range {item:?} runs backwards (wrap-around ranges are not allowed in the {} dialect)", syntax.dialect));
        }
        let values = wrap_values(start, end, step, lo, hi);
        spec.ranges.extend(compress(&values));
        return Ok(());
    }
    spec.ranges.push(Range::new(start, end, step));
    Ok(())
}

/// Values of a wrap-around range `start-end/step` over a cyclic field `lo..=hi`.
fn wrap_values(start: u32, end: u32, step: u32, lo: u32, hi: u32) -> Vec<u32> {
    let span = hi - lo + 1;
    let length = (end + span - start) % span;
    (0..=length)
        .step_by(step as usize)
        .map(|k| lo + (start - lo + k) % span)
        .collect()
}

/// Sorted distinct values as the fewest runs of consecutive values.
fn compress(values: &[u32]) -> Vec<Range> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<Range> = Vec::new();
    for v in sorted {
        match out.last_mut() {
            Some(r) if r.end + 1 == v => r.end = v,
            _ => out.push(Range::single(v)),
        }
    }
    out
}

enum Special {
    Day(DaySpecial),
    Weekday(WeekdaySpecial),
}

/// `L`, `L-n`, `nW`, `LW`, `L-nW` in day-of-month; `nL`, `NAMEL`, `n#k`, `n#L`, `L` in day-of-week.
fn parse_special(kind: FieldKind, item: &str, syntax: Syntax) -> Result<Option<Special>, String> {
    let upper = item.to_ascii_uppercase();
    let looks_special = match kind {
        FieldKind::DayOfMonth => upper.contains('L') || upper.ends_with('W'),
        FieldKind::DayOfWeek => {
            upper.contains('#')
                || (upper.ends_with('L') && !upper.contains('-') && !upper.contains('/'))
                || is_croniter_last_weekday(&upper, syntax)
        }
        _ => false,
    };
    if !looks_special {
        return Ok(None);
    }
    if !syntax.specials {
        return Err(format!(
            "{item:?}: L, W and # are not supported in the {} dialect",
            syntax.dialect
        ));
    }
    let bad = |why: &str| format!("invalid {item:?}: {why}");
    if kind == FieldKind::DayOfMonth {
        let (body, weekday) = match upper.strip_suffix('W') {
            Some(b) => (b, true),
            None => (upper.as_str(), false),
        };
        if let Some(rest) = body.strip_prefix('L') {
            let offset = if rest.is_empty() {
                0
            } else {
                let n = rest
                    .strip_prefix('-')
                    .ok_or_else(|| bad("expected L, L-n, LW or L-nW"))?;
                let n: u32 = n
                    .parse()
                    .map_err(|_| bad("expected a number of days after L-"))?;
                if n > 30 {
                    return Err(bad("L-n takes n from 0 to 30"));
                }
                n
            };
            return Ok(Some(Special::Day(if weekday {
                DaySpecial::LastWeekday(offset)
            } else {
                DaySpecial::LastDay(offset)
            })));
        }
        if weekday {
            let d: u32 = body
                .parse()
                .map_err(|_| bad("expected nW with n from 1 to 31"))?;
            if !(1..=31).contains(&d) {
                return Err(bad("nW takes n from 1 to 31"));
            }
            return Ok(Some(Special::Day(DaySpecial::NearestWeekday(d))));
        }
        return Err(bad("expected L, L-n, nW, LW or L-nW"));
    }
    // Day of week.
    let weekday_of = |token: &str| -> Result<u32, String> {
        Ok(parse_value(FieldKind::DayOfWeek, token, syntax, item)? % 7)
    };
    if is_croniter_last_weekday(&upper, syntax) {
        return Ok(Some(Special::Weekday(WeekdaySpecial::Last {
            weekday: weekday_of(&upper[1..])?,
        })));
    }
    if let Some((day, nth)) = upper.split_once('#') {
        let weekday = weekday_of(day)?;
        if nth == "L" {
            return Ok(Some(Special::Weekday(WeekdaySpecial::Last { weekday })));
        }
        let nth: u32 = nth.parse().map_err(|_| bad("expected #1 to #5 or #L"))?;
        if !(1..=5).contains(&nth) {
            return Err(bad("expected #1 to #5 or #L"));
        }
        return Ok(Some(Special::Weekday(WeekdaySpecial::Nth { weekday, nth })));
    }
    let day = &upper[..upper.len() - 1];
    Ok(Some(Special::Weekday(WeekdaySpecial::Last {
        weekday: weekday_of(day)?,
    })))
}

/// Parses a field given as structured JSON: an array of `{start, end, step}` ranges and special objects.
pub(crate) fn parse_structured(
    kind: FieldKind,
    items: &[Value],
    syntax: Syntax,
) -> Result<FieldSpec, String> {
    let mut spec = FieldSpec::default();
    if items.is_empty() {
        return Err("empty array: write [{\"start\": …}] or omit the field for its default".into());
    }
    if items.len() > 512 {
        return Err("too many ranges (at most 512)".into());
    }
    for (i, item) in items.iter().enumerate() {
        let obj = item.as_object().ok_or_else(|| {
            format!("[{i}]: expected an object like {{\"start\": 1, \"end\": 5, \"step\": 1}}")
        })?;
        let number = |key: &str| -> Result<Option<u32>, String> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| format!("[{i}].{key}: expected a non-negative integer")),
            }
        };
        let is_special = ["lastDay", "nearestWeekday", "lastWeekday", "weekday"]
            .iter()
            .any(|k| obj.contains_key(*k));
        if is_special {
            if !syntax.specials {
                return Err(format!("[{i}]: last-day, nearest-weekday and nth-weekday are not supported in the {} dialect", syntax.dialect));
            }
            spec_special_from_json(kind, obj, i, &number, &mut spec)?;
            continue;
        }
        for key in obj.keys() {
            if !matches!(key.as_str(), "start" | "end" | "step") {
                return Err(format!("[{i}]: unknown key {key:?}"));
            }
        }
        let start = number("start")?.unwrap_or(0);
        // Temporal: a missing or smaller end means a single value; a missing or zero step means 1.
        let end = number("end")?.filter(|&e| e >= start).unwrap_or(start);
        // Temporal's `Range` reads a missing step as 1; a step written as 0 is refused, as `*/0` is.
        let step = match number("step")? {
            None => 1,
            Some(0) => return Err(format!("[{i}].step: must be at least 1, got 0")),
            Some(step) => step,
        };
        let (lo, hi) = syntax.bounds(kind);
        if start < lo || end > hi {
            return Err(format!("[{i}]: range {start}-{end} is outside {lo}-{hi}"));
        }
        spec.ranges.push(Range::new(start, end, step));
    }
    check_evaluable_years(kind, &spec, "the year ranges")?;
    Ok(spec)
}

fn spec_special_from_json(
    kind: FieldKind,
    obj: &serde_json::Map<String, Value>,
    i: usize,
    number: &dyn Fn(&str) -> Result<Option<u32>, String>,
    spec: &mut FieldSpec,
) -> Result<(), String> {
    let wrong_field = |key: &str| format!("[{i}]: {key:?} is not valid in {}", kind.json_name());
    if let Some(n) = number("lastDay")? {
        if kind != FieldKind::DayOfMonth {
            return Err(wrong_field("lastDay"));
        }
        if n > 30 {
            return Err(format!("[{i}].lastDay: expected 0 to 30"));
        }
        spec.days.push(DaySpecial::LastDay(n));
    } else if let Some(d) = number("nearestWeekday")? {
        if kind != FieldKind::DayOfMonth {
            return Err(wrong_field("nearestWeekday"));
        }
        if !(1..=31).contains(&d) {
            return Err(format!("[{i}].nearestWeekday: expected 1 to 31"));
        }
        spec.days.push(DaySpecial::NearestWeekday(d));
    } else if let Some(n) = number("lastWeekday")? {
        if kind != FieldKind::DayOfMonth {
            return Err(wrong_field("lastWeekday"));
        }
        if n > 30 {
            return Err(format!("[{i}].lastWeekday: expected 0 to 30"));
        }
        spec.days.push(DaySpecial::LastWeekday(n));
    } else {
        if kind != FieldKind::DayOfWeek {
            return Err(wrong_field("weekday"));
        }
        let weekday = number("weekday")?
            .filter(|&w| w <= 6)
            .ok_or_else(|| format!("[{i}].weekday: expected 0 (Sunday) to 6"))?;
        let last = obj.get("last").and_then(Value::as_bool).unwrap_or(false);
        match (last, number("nth")?) {
            (true, None) => spec.weekdays.push(WeekdaySpecial::Last { weekday }),
            (false, Some(nth)) if (1..=5).contains(&nth) => {
                spec.weekdays.push(WeekdaySpecial::Nth { weekday, nth })
            }
            _ => {
                return Err(format!(
                    "[{i}]: expected either \"nth\": 1 to 5 or \"last\": true"
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STANDARD: Syntax = Syntax {
        weekday_one_based: false,
        question_mark: true,
        specials: true,
        wrap_ranges: true,
        quartz_limits: false,
        years: PEER_YEARS,
        dialect: "standard",
    };

    fn values(kind: FieldKind, text: &str) -> Vec<u32> {
        let spec = parse_field(kind, text, STANDARD).unwrap_or_default();
        let mut v: Vec<u32> = spec.ranges.iter().flat_map(|r| r.values()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn lists_ranges_steps_and_names() {
        assert_eq!(values(FieldKind::Minute, "1,15"), vec![1, 15]);
        assert_eq!(values(FieldKind::Hour, "11-14"), vec![11, 12, 13, 14]);
        assert_eq!(values(FieldKind::Minute, "*/15"), vec![0, 15, 30, 45]);
        assert_eq!(values(FieldKind::Hour, "4/6"), vec![4, 10, 16, 22]);
        assert_eq!(
            values(FieldKind::Month, "Jan,Apr,Jul,Oct"),
            vec![1, 4, 7, 10]
        );
        assert_eq!(values(FieldKind::Month, "sept"), vec![9]);
        assert_eq!(values(FieldKind::DayOfWeek, "tu,thurs"), vec![2, 4]);
        assert_eq!(values(FieldKind::DayOfWeek, "5-7"), vec![0, 5, 6]);
        assert_eq!(values(FieldKind::DayOfWeek, "Wed-Sun"), vec![0, 3, 4, 5, 6]);
        assert_eq!(values(FieldKind::Hour, "22-2"), vec![0, 1, 2, 22, 23]);
        assert_eq!(values(FieldKind::DayOfWeek, "1-7/2"), vec![0, 1, 3, 5]);
    }

    #[test]
    fn rejects_bad_values_with_the_token() {
        for (kind, text, needle) in [
            (FieldKind::Minute, "60", "60"),
            (FieldKind::Minute, "*/0", "*/0"),
            (FieldKind::DayOfWeek, "XYZ", "XYZ"),
            (FieldKind::Minute, "-9", "-9"),
            (FieldKind::Second, "2/3/5", "3/5"),
            (FieldKind::DayOfMonth, "random text", "random text"),
            (FieldKind::Minute, "1,,2", "empty"),
        ] {
            let err = parse_field(kind, text, STANDARD).err().unwrap_or_default();
            assert!(err.contains(needle), "{text:?} gave {err:?}");
        }
    }

    #[test]
    fn specials() {
        let spec = parse_field(FieldKind::DayOfMonth, "L,L-2,15W,LW", STANDARD).unwrap_or_default();
        assert_eq!(
            spec.days,
            vec![
                DaySpecial::LastDay(0),
                DaySpecial::LastDay(2),
                DaySpecial::NearestWeekday(15),
                DaySpecial::LastWeekday(0)
            ]
        );
        let spec =
            parse_field(FieldKind::DayOfWeek, "FRI#3,5L,MON#L", STANDARD).unwrap_or_default();
        assert_eq!(
            spec.weekdays,
            vec![
                WeekdaySpecial::Nth { weekday: 5, nth: 3 },
                WeekdaySpecial::Last { weekday: 5 },
                WeekdaySpecial::Last { weekday: 1 }
            ]
        );
    }

    #[test]
    fn nearest_weekday_stays_in_the_month() {
        // March 2025 starts on a Saturday (weekday 6).
        assert_eq!(nearest_weekday(1, 31, 6), Some(3));
        // The 30th of a 30-day month starting on a Saturday is a Sunday: back to Friday the 28th.
        assert_eq!(nearest_weekday(30, 30, 6), Some(28));
        assert_eq!(nearest_weekday(31, 30, 6), None);
    }
}
