//! RFC 5545 recurrence rules (`"rrule": ["FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1"]`), a source
//! of wall-clock fire times like a calendar.
//!
//! The rule is expanded by the `rrule` crate in a zone-less frame: `DTSTART` is the spec's
//! `startTime` as wall-clock time in the spec's zone, and every occurrence is a wall-clock time. The
//! schedule then maps wall-clock times to instants under its DST policy, exactly as it does for
//! calendars, so a rule's 02:30 in a spring-forward gap is skipped, shifted or moved to the
//! transition as `dst.gap` says.
//!
//! A query never iterates from `DTSTART`: a rule without `COUNT` repeats per period (year, month,
//! week, day, hour, minute, second) every `INTERVAL` periods, so the rule is restarted at the start
//! of the aligned period that holds the query time, with every part that the crate would take from
//! `DTSTART` (`BYMONTH`, `BYMONTHDAY`, `BYDAY`, `BYHOUR`, `BYMINUTE`, `BYSECOND`) written out. A rule
//! with `COUNT` is expanded once, when it is parsed (at most [`MAX_COUNT`] occurrences).

use std::sync::Arc;

use chrono::{Datelike, NaiveDate, NaiveDateTime, TimeDelta, TimeZone};
use rrule::{Frequency, RRule, RRuleSet, Tz as RuleTz, Unvalidated, Validated};

use super::calendar::LOCAL_LIMIT;

/// The most occurrences a rule with `COUNT` may have: they are computed when the spec is parsed.
pub(crate) const MAX_COUNT: u32 = 10_000;

/// Rule strings longer than this are refused before any work is done.
const MAX_RULE_LEN: usize = 1024;

/// One `rrule` entry, compiled.
#[derive(Clone, Debug)]
pub(crate) struct Recurrence {
    /// The rule as the canonical form shows it (`FREQ=…;…`, no `RRULE:` prefix).
    text: String,
    /// The rule with the parts taken from `DTSTART` written out.
    rule: RRule<Validated>,
    /// `DTSTART`, wall-clock seconds.
    dtstart: i64,
    /// The last wall-clock second an occurrence may have (`UNTIL`), if any.
    until: Option<i64>,
    /// For a rule with `COUNT`: every occurrence, in wall-clock seconds.
    counted: Option<Arc<[i64]>>,
    fixed_time: bool,
}

impl PartialEq for Recurrence {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.dtstart == other.dtstart && self.until == other.until
    }
}

/// How `UNTIL` was written.
pub(crate) enum Until {
    /// `UNTIL=19971224T000000Z`: an instant (Unix seconds), turned into wall time by the caller.
    Instant(i64),
    /// `UNTIL=19971224T000000` or `UNTIL=19971224`: wall-clock seconds (a date means its last second).
    Wall(i64),
}

fn wall_of(naive: NaiveDateTime) -> i64 {
    naive.and_utc().timestamp()
}

fn naive_of(wall: i64) -> Option<NaiveDateTime> {
    chrono::DateTime::from_timestamp(wall, 0).map(|t| t.naive_utc())
}

fn rule_time(wall: i64) -> Option<chrono::DateTime<RuleTz>> {
    RuleTz::UTC.timestamp_opt(wall, 0).single()
}

fn parse_until(value: &str) -> Result<Until, String> {
    let bad = || {
        format!("invalid UNTIL {value:?}: expected a date like 20241231, a time like 20241231T170000 or a UTC time like 20241231T170000Z")
    };
    if let Some(utc) = value.strip_suffix('Z') {
        let t = NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S").map_err(|_| bad())?;
        return Ok(Until::Instant(wall_of(t)));
    }
    if value.contains('T') {
        let t = NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S").map_err(|_| bad())?;
        return Ok(Until::Wall(wall_of(t)));
    }
    let d = NaiveDate::parse_from_str(value, "%Y%m%d").map_err(|_| bad())?;
    let end = d.and_hms_opt(23, 59, 59).ok_or_else(bad)?;
    Ok(Until::Wall(wall_of(end)))
}

/// Parts that a sub-hourly rule cannot filter on: matches could be more than the crate's 100,000
/// empty periods apart, and it would stop looking.
fn refuse_sparse_filters(rule: &RRule<Validated>, text: &str) -> Result<(), String> {
    let freq = rule.get_freq();
    let mut parts: Vec<&str> = Vec::new();
    if matches!(freq, Frequency::Minutely | Frequency::Secondly) {
        if !rule.get_by_month().is_empty() {
            parts.push("BYMONTH");
        }
        if !rule.get_by_month_day().is_empty() {
            parts.push("BYMONTHDAY");
        }
        if !rule.get_by_year_day().is_empty() {
            parts.push("BYYEARDAY");
        }
        if !rule.get_by_week_no().is_empty() {
            parts.push("BYWEEKNO");
        }
    }
    if freq == Frequency::Secondly && !rule.get_by_weekday().is_empty() {
        parts.push("BYDAY");
    }
    match parts.first() {
        None => Ok(()),
        Some(part) => Err(format!(
            "{text:?}: FREQ={freq} with {part} can leave more than 100000 empty periods between fires; \
             use FREQ=DAILY (or coarser) with BYHOUR, BYMINUTE and BYSECOND instead"
        )),
    }
}

impl Recurrence {
    /// Parses one rule with `DTSTART` at wall-clock time `dtstart`. `until_wall` turns a UTC `UNTIL`
    /// into wall-clock time in the spec's zone. Errors are messages without the path.
    pub(crate) fn parse(
        text: &str,
        dtstart: NaiveDateTime,
        until_wall: impl Fn(i64) -> i64,
    ) -> Result<Recurrence, String> {
        if text.len() > MAX_RULE_LEN {
            return Err(format!("rule is longer than {MAX_RULE_LEN} bytes"));
        }
        let upper = text.trim().to_ascii_uppercase();
        let body = upper.strip_prefix("RRULE:").unwrap_or(&upper).trim();
        if body.is_empty() {
            return Err("empty rule: expected e.g. \"FREQ=WEEKLY;BYDAY=MO\"".into());
        }
        let mut until = None;
        let mut until_text = None;
        let mut kept: Vec<&str> = Vec::new();
        for part in body.split(';') {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("{text:?}: expected NAME=VALUE parts, got {part:?}"))?;
            match key.trim() {
                "UNTIL" => {
                    until = Some(match parse_until(value.trim())? {
                        Until::Instant(t) => until_wall(t),
                        Until::Wall(t) => t,
                    });
                    until_text = Some(value.trim().to_string());
                }
                "DTSTART" | "TZID" => {
                    return Err(format!(
                        "{text:?}: {key} is not part of the rule here: DTSTART is the spec's startTime in its timeZone"
                    ))
                }
                _ => kept.push(part),
            }
        }
        let rule: RRule<Unvalidated> = kept
            .join(";")
            .parse()
            .map_err(|e| format!("invalid rule {text:?}: {e}"))?;
        let start = rule_time(wall_of(dtstart)).ok_or("startTime is out of range")?;
        let validated = rule
            .clone()
            .validate(start)
            .map_err(|e| format!("invalid rule {text:?}: {e}"))?;
        refuse_sparse_filters(&validated, text)?;
        let dtstart = wall_of(dtstart);
        if let Some(until) = until {
            if until < dtstart {
                return Err(format!("{text:?}: UNTIL is before startTime"));
            }
        }
        let counted = match validated.get_count() {
            None => None,
            Some(count) if count > MAX_COUNT => {
                return Err(format!(
                "{text:?}: COUNT={count} is more than {MAX_COUNT}; use UNTIL or the spec's endTime"
            ))
            }
            Some(count) => {
                let limit = until.map_or(LOCAL_LIMIT, |u| u.saturating_add(1).min(LOCAL_LIMIT));
                let set = RRuleSet::new(start).rrule(validated.clone()).limit();
                let all: Vec<i64> = (&set)
                    .into_iter()
                    .take(count as usize)
                    .map(|t| t.timestamp())
                    .take_while(|&t| t < limit)
                    .collect();
                Some(Arc::from(all))
            }
        };
        let fixed_time = validated.get_freq() <= Frequency::Daily
            && validated.get_by_hour().len() == 1
            && validated.get_by_minute().len() == 1
            && validated.get_by_second().len() == 1;
        let mut canonical = rule.to_string();
        if let Some(u) = until_text {
            canonical.push_str(";UNTIL=");
            canonical.push_str(&u);
        }
        Ok(Recurrence {
            text: canonical,
            rule: validated,
            dtstart,
            until,
            counted,
            fixed_time,
        })
    }

    /// The rule as the canonical form writes it.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// True when the rule fires once a day or less often, at one time of day (DST `auto` policies).
    pub(crate) fn is_fixed_time(&self) -> bool {
        self.fixed_time
    }

    /// The first occurrence `n` (wall-clock seconds) with `from <= n < limit`, if any.
    pub(crate) fn next_match(&self, from: i64, limit: i64) -> Option<i64> {
        let mut limit = limit.min(LOCAL_LIMIT);
        if let Some(until) = self.until {
            limit = limit.min(until.saturating_add(1));
        }
        let from = from.max(self.dtstart);
        if from >= limit {
            return None;
        }
        if let Some(all) = &self.counted {
            let i = all.partition_point(|&t| t < from);
            return all.get(i).copied().filter(|&t| t < limit);
        }
        let anchor = self.period_start(from)?.max(self.dtstart);
        let set = RRuleSet::new(rule_time(anchor)?)
            .rrule(self.rule.clone())
            .limit();
        for occurrence in &set {
            let wall = occurrence.timestamp();
            if wall >= limit {
                return None;
            }
            if wall >= from {
                return Some(wall);
            }
        }
        None
    }

    /// The start of the period (of the rule's frequency, aligned to `INTERVAL` periods from
    /// `DTSTART`'s period) that holds wall-clock second `t`.
    fn period_start(&self, t: i64) -> Option<i64> {
        let at = naive_of(t)?;
        let start = naive_of(self.dtstart)?;
        let interval = i64::from(self.rule.get_interval().max(1));
        let align = |n: i64| n.div_euclid(interval) * interval;
        let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).map(wall_of);
        match self.rule.get_freq() {
            Frequency::Yearly => {
                let k = align(i64::from(at.year() - start.year()));
                let year = i32::try_from(i64::from(start.year()) + k).ok()?;
                midnight(NaiveDate::from_ymd_opt(year, 1, 1)?)
            }
            Frequency::Monthly => {
                let index = |d: NaiveDateTime| i64::from(d.year()) * 12 + i64::from(d.month0());
                let m = index(start) + align(index(at) - index(start));
                let year = i32::try_from(m.div_euclid(12)).ok()?;
                let month = u32::try_from(m.rem_euclid(12)).ok()? + 1;
                midnight(NaiveDate::from_ymd_opt(year, month, 1)?)
            }
            Frequency::Weekly => {
                let week_start = self.rule.get_week_start();
                let first_day = |d: NaiveDate| {
                    d - TimeDelta::days(i64::from(d.weekday().days_since(week_start)))
                };
                let (a, s) = (first_day(at.date()), first_day(start.date()));
                let weeks = align((a - s).num_days().div_euclid(7));
                midnight(s + TimeDelta::days(weeks.checked_mul(7)?))
            }
            Frequency::Daily => {
                let days = align((at.date() - start.date()).num_days());
                midnight(start.date() + TimeDelta::days(days))
            }
            Frequency::Hourly => Some(self.unit_start(t, 3600, interval)),
            Frequency::Minutely => Some(self.unit_start(t, 60, interval)),
            Frequency::Secondly => Some(self.unit_start(t, 1, interval)),
        }
    }

    fn unit_start(&self, t: i64, unit: i64, interval: i64) -> i64 {
        let base = self.dtstart.div_euclid(unit);
        let k = (t.div_euclid(unit) - base).div_euclid(interval) * interval;
        (base + k) * unit
    }
}

/// Up to `count` occurrences of `rule` with `DTSTART` at wall-clock time `dtstart`, strictly after
/// wall-clock time `after`, as wall-clock times: the rule alone, without a zone, DST policy or the
/// 2000–2100 span a schedule evaluates (RFC 5545's examples are in 1997). `UNTIL` with `Z` is read
/// as wall-clock time. For conformance tests and tools.
pub fn rrule_wall_times(
    rule: &str,
    dtstart: NaiveDateTime,
    after: NaiveDateTime,
    count: usize,
) -> Result<Vec<NaiveDateTime>, String> {
    let recurrence = Recurrence::parse(rule, dtstart, |t| t)?;
    let mut out = Vec::with_capacity(count.min(1024));
    let mut from = wall_of(after).saturating_add(1);
    while out.len() < count {
        let Some(next) = recurrence.next_match(from, i64::MAX) else {
            break;
        };
        out.extend(naive_of(next));
        from = next + 1;
    }
    Ok(out)
}
