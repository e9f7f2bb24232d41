//! The canonical calendar: every cron string and calendar object becomes one or more of these.
//!
//! A calendar matches a wall-clock time when every field matches (day of month AND day of week, as
//! in Temporal; the Vixie OR of cron is expressed as a union of two calendars). Fields compile to
//! bit masks so that finding the next matching wall-clock second is a handful of bit operations per
//! month, which is what keeps a never-matching spec (Feb 30) answering in microseconds.

use std::sync::Arc;

use serde_json::{json, Value};

use super::business::BusinessDays;
use super::civil::{days_from_civil, days_in_month, weekday, WallClock, DAY};
use super::field::{FieldKind, FieldSpec, FIRST_YEAR, LAST_YEAR};

/// One calendar of a schedule, in canonical values.
#[derive(Clone, Debug)]
pub(crate) struct Calendar {
    fields: [FieldSpec; 7],
    comment: Option<String>,
    masks: Masks,
    /// A business-day rule (docs/spec.md §16): it decides the days; `dayOfMonth` feeds it.
    business: Option<Arc<BusinessDays>>,
}

impl PartialEq for Calendar {
    fn eq(&self, other: &Self) -> bool {
        self.fields == other.fields
            && self.comment == other.comment
            && self.business == other.business
    }
}

#[derive(Clone, Debug, Default)]
struct Masks {
    second: u64,
    minute: u64,
    hour: u32,
    /// Bit d for day d (1–31) from plain day-of-month ranges.
    day_of_month: u32,
    month: u16,
    /// Bit y - 2000 for the years the engine evaluates.
    year: u128,
    /// For each weekday of the 1st of a month, the days (bit d) whose weekday is selected.
    weekday_days: [u32; 7],
    /// Day of month and day of week select every day: the common case needs no per-month work.
    every_day: bool,
}

/// The fields a source of fire times (a calendar, or an interval: any time) can fire in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FireFields {
    pub second: u64,
    pub minute: u64,
    pub hour: u32,
    pub month: u16,
}

impl FireFields {
    /// Every value of every field.
    pub(crate) const ANY: FireFields = FireFields {
        second: (1 << 60) - 1,
        minute: (1 << 60) - 1,
        hour: (1 << 24) - 1,
        month: 0b1_1111_1111_1110,
    };
}

/// The end of the evaluated span: 2101-01-01T00:00:00 as local seconds.
pub(crate) const LOCAL_LIMIT: i64 = 4_133_980_800;

impl Calendar {
    /// Builds a calendar from its seven fields, in [`FieldKind::ALL`] order.
    pub(crate) fn new(fields: [FieldSpec; 7], comment: Option<String>) -> Self {
        let masks = Masks::compile(&fields);
        Calendar {
            fields,
            comment,
            masks,
            business: None,
        }
    }

    /// The same calendar with its days decided by a business-day rule.
    /// The business calendar its business-day rule counts in, if it has one.
    pub(crate) fn business_calendar(&self) -> Option<&Arc<super::business::BusinessCalendar>> {
        self.business.as_ref().map(|b| &b.calendar)
    }

    pub(crate) fn with_business(mut self, business: BusinessDays) -> Self {
        self.business = Some(Arc::new(business));
        self.masks.every_day = false;
        self
    }

    /// Replaces the free-text comment (it takes no part in matching).
    pub(crate) fn set_comment(&mut self, comment: Option<String>) {
        self.comment = comment;
    }

    pub(crate) fn field(&self, kind: FieldKind) -> &FieldSpec {
        &self.fields[kind as usize]
    }

    /// True when second, minute and hour each select exactly one value. cronie and croner treat such
    /// "fixed-time" jobs specially around DST changes; see `DstPolicy`.
    pub(crate) fn is_fixed_time(&self) -> bool {
        self.masks.second.count_ones() == 1
            && self.masks.minute.count_ones() == 1
            && self.masks.hour.count_ones() == 1
    }

    /// The days of a month (bit d for day d) that `dayOfMonth` alone selects.
    fn dom_days(&self, year: i32, month: u32) -> u32 {
        let len = days_in_month(year, month);
        let valid = ((1u64 << (len + 1)) - 2) as u32;
        let first_weekday = weekday(days_from_civil(year, month, 1));
        let mut dom = self.masks.day_of_month;
        for special in &self.field(FieldKind::DayOfMonth).days {
            if let Some(d) = special.day(len, first_weekday) {
                dom |= 1 << d;
            }
        }
        dom & valid
    }

    /// The days of a month (bit d for day d) that match day of month AND day of week.
    fn day_mask(&self, year: i32, month: u32) -> u32 {
        let len = days_in_month(year, month);
        let valid = ((1u64 << (len + 1)) - 2) as u32;
        if let Some(business) = &self.business {
            return business.day_mask(year, month, |y, m| self.dom_days(y, m)) & valid;
        }
        if self.masks.every_day {
            return valid;
        }
        let first_weekday = weekday(days_from_civil(year, month, 1));
        let mut dom = self.masks.day_of_month;
        for special in &self.field(FieldKind::DayOfMonth).days {
            if let Some(d) = special.day(len, first_weekday) {
                dom |= 1 << d;
            }
        }
        let mut dow = self.masks.weekday_days[first_weekday as usize];
        for special in &self.field(FieldKind::DayOfWeek).weekdays {
            if let Some(d) = special.day(len, first_weekday) {
                dow |= 1 << d;
            }
        }
        dom & dow & valid
    }

    fn year_matches(&self, year: i32) -> bool {
        (FIRST_YEAR..=LAST_YEAR).contains(&year) && self.masks.year >> (year - FIRST_YEAR) & 1 == 1
    }

    /// Whether a wall-clock time (local seconds) matches every field.
    pub(crate) fn matches(&self, local: i64) -> bool {
        let wall = WallClock::from_local_seconds(local);
        self.year_matches(wall.year)
            && self.masks.month >> wall.month & 1 == 1
            && self.day_mask(wall.year, wall.month) >> wall.day & 1 == 1
            && self.masks.hour >> wall.hour() & 1 == 1
            && self.masks.minute >> wall.minute() & 1 == 1
            && self.masks.second >> wall.second() & 1 == 1
    }

    /// The first matching wall-clock second `n` with `from <= n < limit`, if any.
    pub(crate) fn next_match(&self, from: i64, limit: i64) -> Option<i64> {
        let limit = limit.min(LOCAL_LIMIT);
        if from >= limit {
            return None;
        }
        let start = WallClock::from_local_seconds(from.max(first_local()));
        let (mut year, mut month, mut day) = (start.year, start.month, start.day);
        let mut time = Some(start.second_of_day);
        loop {
            if year > LAST_YEAR {
                return None;
            }
            if !self.year_matches(year) {
                year = self.next_year(year + 1)?;
                (month, day, time) = (1, 1, None);
                continue;
            }
            if self.masks.month >> month & 1 == 0 {
                match next_bit16(self.masks.month, month + 1) {
                    Some(m) => (month, day, time) = (m, 1, None),
                    None => (year, month, day, time) = (year + 1, 1, 1, None),
                }
                continue;
            }
            let days = self.day_mask(year, month) & !((1u32 << day) - 1);
            if days == 0 {
                (year, month, day, time) = if month == 12 {
                    (year + 1, 1, 1, None)
                } else {
                    (year, month + 1, 1, None)
                };
                continue;
            }
            let matching_day = days.trailing_zeros();
            if matching_day != day {
                (day, time) = (matching_day, None);
            }
            let base = days_from_civil(year, month, day) * DAY;
            if base >= limit {
                return None;
            }
            match self.next_time_of_day(time.unwrap_or(0)) {
                Some(t) => {
                    let found = base + i64::from(t);
                    return (found < limit).then_some(found);
                }
                None => (day, time) = (day + 1, None),
            }
            if day > 31 {
                (year, month, day, time) = if month == 12 {
                    (year + 1, 1, 1, None)
                } else {
                    (year, month + 1, 1, None)
                };
            }
        }
    }

    fn next_year(&self, from: i32) -> Option<i32> {
        if from > LAST_YEAR {
            return None;
        }
        let shifted = self.masks.year >> (from.max(FIRST_YEAR) - FIRST_YEAR);
        (shifted != 0).then(|| from.max(FIRST_YEAR) + shifted.trailing_zeros() as i32)
    }

    /// The first matching second of the day at or after `second_of_day`.
    fn next_time_of_day(&self, second_of_day: u32) -> Option<u32> {
        let (h, m, s) = (
            second_of_day / 3600,
            second_of_day / 60 % 60,
            second_of_day % 60,
        );
        let Masks {
            second,
            minute,
            hour,
            ..
        } = self.masks;
        let first_second = second.trailing_zeros();
        let first_minute = minute.trailing_zeros();
        if hour >> h & 1 == 1 {
            if minute >> m & 1 == 1 {
                if let Some(sec) = next_bit64(second, s) {
                    return Some(h * 3600 + m * 60 + sec);
                }
            }
            if let Some(min) = next_bit64(minute, m + 1) {
                return Some(h * 3600 + min * 60 + first_second);
            }
        }
        let hr = next_bit32(hour, h + 1)?;
        Some(hr * 3600 + first_minute * 60 + first_second)
    }

    /// The time-of-day and month fields this calendar can fire in, for [`Calendar::skip_end`].
    pub(crate) fn fire_fields(&self) -> FireFields {
        FireFields {
            second: self.masks.second,
            minute: self.masks.minute,
            hour: self.masks.hour,
            month: self.masks.month,
        }
    }

    /// Where the search may resume after a candidate at wall time `local` was excluded by this
    /// calendar: the end of the largest unit (minute, hour, day, month, year) around `local` in
    /// which this calendar excludes every time the schedule can fire (`fires`). An exclude of all
    /// of December skips December in one step instead of minute by minute.
    pub(crate) fn skip_end(&self, local: i64, fires: &FireFields) -> i64 {
        let covers = |mine: u64, theirs: u64| theirs & !mine == 0;
        let wall = WallClock::from_local_seconds(local);
        let day_start = local - i64::from(wall.second_of_day);
        if !covers(self.masks.second, fires.second) {
            return local + 1;
        }
        if !covers(self.masks.minute, fires.minute) {
            return local - i64::from(wall.second()) + 60;
        }
        if !covers(u64::from(self.masks.hour), u64::from(fires.hour)) {
            return local - i64::from(wall.second_of_day % 3600) + 3600;
        }
        if !self.masks.every_day {
            return day_start + DAY;
        }
        if !covers(u64::from(self.masks.month), u64::from(fires.month)) {
            let (year, month) = if wall.month == 12 {
                (wall.year + 1, 1)
            } else {
                (wall.year, wall.month + 1)
            };
            return days_from_civil(year, month, 1) * DAY;
        }
        // Every fire of the year is excluded; the run lasts while consecutive years match.
        let mut year = wall.year + 1;
        while year <= LAST_YEAR && self.year_matches(year) {
            year += 1;
        }
        days_from_civil(year, 1, 1) * DAY
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut obj = serde_json::Map::new();
        for kind in FieldKind::ALL {
            obj.insert(kind.json_name().into(), self.field(kind).to_json());
        }
        if let Some(business) = &self.business {
            business.write_json(&mut obj);
        }
        if let Some(comment) = &self.comment {
            obj.insert("comment".into(), json!(comment));
        }
        Value::Object(obj)
    }
}

fn first_local() -> i64 {
    FIRST_LOCAL
}

/// The start of the evaluated span: 2000-01-01T00:00:00 as local seconds.
pub(crate) const FIRST_LOCAL: i64 = 946_684_800;

fn next_bit64(mask: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let m = mask >> from;
    (m != 0).then(|| from + m.trailing_zeros())
}

fn next_bit32(mask: u32, from: u32) -> Option<u32> {
    if from >= 32 {
        return None;
    }
    let m = mask >> from;
    (m != 0).then(|| from + m.trailing_zeros())
}

fn next_bit16(mask: u16, from: u32) -> Option<u32> {
    if from >= 16 {
        return None;
    }
    let m = mask >> from;
    (m != 0).then(|| from + m.trailing_zeros())
}

impl Masks {
    fn compile(fields: &[FieldSpec; 7]) -> Self {
        let bits = |kind: FieldKind| -> u128 {
            let mut mask = 0u128;
            for range in &fields[kind as usize].ranges {
                for v in range.values() {
                    let bit = if kind == FieldKind::Year {
                        i64::from(v) - i64::from(FIRST_YEAR)
                    } else {
                        i64::from(v)
                    };
                    if (0..128).contains(&bit) {
                        mask |= 1 << bit;
                    }
                }
            }
            mask
        };
        let dow = bits(FieldKind::DayOfWeek) as u8;
        let mut weekday_days = [0u32; 7];
        for (first, days) in weekday_days.iter_mut().enumerate() {
            for d in 1..=31u32 {
                if dow >> ((first as u32 + d - 1) % 7) & 1 == 1 {
                    *days |= 1 << d;
                }
            }
        }
        let year_span = (1u128 << (LAST_YEAR - FIRST_YEAR + 1)) - 1;
        Masks {
            second: bits(FieldKind::Second) as u64,
            minute: bits(FieldKind::Minute) as u64,
            hour: bits(FieldKind::Hour) as u32,
            day_of_month: bits(FieldKind::DayOfMonth) as u32,
            month: bits(FieldKind::Month) as u16,
            year: bits(FieldKind::Year) & year_span,
            weekday_days,
            every_day: fields[FieldKind::DayOfMonth as usize].is_full(FieldKind::DayOfMonth)
                && fields[FieldKind::DayOfWeek as usize].is_full(FieldKind::DayOfWeek),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::field::{parse_field, Syntax, PEER_YEARS};

    const STANDARD: Syntax = Syntax {
        weekday_one_based: false,
        question_mark: true,
        specials: true,
        wrap_ranges: true,
        quartz_limits: false,
        years: PEER_YEARS,
        dialect: "standard",
    };

    fn calendar(texts: [&str; 7]) -> Calendar {
        let mut fields: [FieldSpec; 7] = Default::default();
        for (i, kind) in FieldKind::ALL.into_iter().enumerate() {
            fields[i] = parse_field(kind, texts[i], STANDARD).unwrap_or_default();
        }
        Calendar::new(fields, None)
    }

    fn local(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
        days_from_civil(y, mo, d) * DAY + i64::from(h * 3600 + mi * 60 + s)
    }

    #[test]
    fn finds_the_next_weekday_noon() {
        let cal = calendar(["0", "0", "12", "*", "*", "*", "1-5"]);
        // Friday 2024-01-05 13:00 → Monday 2024-01-08 12:00.
        assert_eq!(
            cal.next_match(local(2024, 1, 5, 13, 0, 0), LOCAL_LIMIT),
            Some(local(2024, 1, 8, 12, 0, 0))
        );
        assert!(cal.matches(local(2024, 1, 8, 12, 0, 0)));
        assert!(!cal.matches(local(2024, 1, 6, 12, 0, 0)));
    }

    #[test]
    fn never_matching_days_end_quickly() {
        let cal = calendar(["0", "0", "0", "30", "2", "*", "*"]);
        assert_eq!(
            cal.next_match(local(2000, 1, 1, 0, 0, 0), LOCAL_LIMIT),
            None
        );
        let leap_sunday = calendar(["0", "0", "0", "29", "2", "*", "0"]);
        assert_eq!(
            leap_sunday.next_match(local(2016, 1, 1, 0, 0, 0), LOCAL_LIMIT),
            Some(local(2032, 2, 29, 0, 0, 0))
        );
    }

    #[test]
    fn respects_the_limit() {
        let cal = calendar(["0", "0", "0", "*", "*", "*", "*"]);
        assert_eq!(
            cal.next_match(local(2024, 1, 1, 0, 0, 1), local(2024, 1, 2, 0, 0, 0)),
            None
        );
        assert_eq!(
            cal.next_match(local(2024, 1, 1, 0, 0, 1), local(2024, 1, 2, 0, 0, 1)),
            Some(local(2024, 1, 2, 0, 0, 0))
        );
    }
}
