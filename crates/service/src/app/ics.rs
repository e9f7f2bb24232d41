//! iCalendar (`.ics`, RFC 5545) import for named calendars: the `ics` field of a calendar body
//! (docs/api.md "Calendars"). The file is parsed by the `icalendar` crate; each all-day `VEVENT`
//! becomes a date (or a range, when it spans days), and a simple yearly `RRULE` a yearly rule:
//! `FREQ=YEARLY` alone or with `BYMONTH` and `BYMONTHDAY` (a fixed day), or with `BYMONTH` and
//! one `BYDAY` such as `1MO` or `-1MO` (the nth weekday of the month). Anything else is refused
//! naming the event, rather than guessed.

use chrono::{Datelike, NaiveDate};
use icalendar::parser::{read_calendar, unfold, Component};
use serde_json::{json, Value};

/// The most `VEVENT`s one file may hold.
const MAX_EVENTS: usize = 10_000;

/// What an `.ics` file adds to a calendar.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Imported {
    pub dates: Vec<Value>,
    pub ranges: Vec<Value>,
    pub rules: Vec<Value>,
    /// `X-WR-TIMEZONE`, when the file names one.
    pub zone: Option<String>,
    /// `X-WR-CALDESC`, else `X-WR-CALNAME`.
    pub description: Option<String>,
}

fn property<'a>(component: &'a Component<'_>, name: &str) -> Option<&'a str> {
    component
        .properties
        .iter()
        .find(|p| p.name.as_str().eq_ignore_ascii_case(name))
        .map(|p| p.val.as_str())
}

fn day(text: &str) -> Option<NaiveDate> {
    let digits = text.get(..8)?;
    (text.len() == 8 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| NaiveDate::parse_from_str(digits, "%Y%m%d").ok())
        .flatten()
}

/// Reads `text` (an iCalendar file); errors say which event and why, for the field `ics`.
pub(crate) fn import(text: &str) -> Result<Imported, String> {
    let unfolded = unfold(text);
    let begins = unfolded.trim_start().get(..15).unwrap_or_default();
    if !begins.eq_ignore_ascii_case("BEGIN:VCALENDAR") {
        return Err("not an iCalendar file: it does not begin with BEGIN:VCALENDAR".into());
    }
    let calendar = read_calendar(&unfolded).map_err(|e| {
        let first = e.lines().next().unwrap_or("").trim().to_owned();
        format!("not an iCalendar file: {first}")
    })?;
    let mut out = Imported::default();
    let root = |name: &str| {
        calendar
            .properties
            .iter()
            .find(|p| p.name.as_str().eq_ignore_ascii_case(name))
            .map(|p| p.val.as_str().to_owned())
    };
    out.zone = root("X-WR-TIMEZONE");
    out.description = root("X-WR-CALDESC").or_else(|| root("X-WR-CALNAME"));
    let events: Vec<&Component<'_>> = calendar
        .components
        .iter()
        .filter(|c| c.name.as_str().eq_ignore_ascii_case("VEVENT"))
        .collect();
    if events.len() > MAX_EVENTS {
        return Err(format!("{} events; at most {MAX_EVENTS}", events.len()));
    }
    for (i, event) in events.iter().enumerate() {
        let summary = property(event, "SUMMARY").unwrap_or("").to_owned();
        let which = if summary.is_empty() {
            format!("event {i}")
        } else {
            format!("event {i} ({summary:?})")
        };
        let start_text =
            property(event, "DTSTART").ok_or_else(|| format!("{which}: has no DTSTART"))?;
        let start = day(start_text).ok_or_else(|| {
            format!("{which}: DTSTART {start_text:?} is not an all-day date (YYYYMMDD); only all-day events are days off")
        })?;
        // DTEND of an all-day event is exclusive (RFC 5545 §3.6.1); none means one day.
        let end = match property(event, "DTEND") {
            None => start,
            Some(text) => {
                let end = day(text)
                    .ok_or_else(|| format!("{which}: DTEND {text:?} is not a date (YYYYMMDD)"))?;
                end.pred_opt().filter(|e| *e >= start).unwrap_or(start)
            }
        };
        let comment = (!summary.is_empty()).then(|| summary.clone());
        match property(event, "RRULE") {
            None if end == start => out.dates.push(json!(start.to_string())),
            None => out
                .ranges
                .push(json!({"start": start.to_string(), "end": end.to_string()})),
            Some(rule) => {
                if end != start {
                    return Err(format!(
                        "{which}: a recurring event of several days is not supported"
                    ));
                }
                let mut yearly = simple_yearly(rule, start)
                    .map_err(|m| format!("{which}: RRULE {rule:?}: {m}"))?;
                if let Some(comment) = comment {
                    yearly["comment"] = json!(comment);
                }
                out.rules.push(yearly);
            }
        }
    }
    Ok(out)
}

/// A yearly rule from a simple `RRULE` of an event starting on `start`.
fn simple_yearly(rule: &str, start: NaiveDate) -> Result<Value, String> {
    let mut freq = None;
    let mut month = None;
    let mut month_day = None;
    let mut by_day = None;
    for part in rule
        .trim_start_matches("RRULE:")
        .split(';')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("{part:?} is not KEY=VALUE"))?;
        match key.to_ascii_uppercase().as_str() {
            "FREQ" => freq = Some(value.to_ascii_uppercase()),
            "BYMONTH" => {
                month = Some(
                    value
                        .parse::<u32>()
                        .map_err(|_| format!("BYMONTH={value}: one month expected"))?,
                )
            }
            "BYMONTHDAY" => {
                month_day = Some(
                    value
                        .parse::<u32>()
                        .map_err(|_| format!("BYMONTHDAY={value}: one day expected"))?,
                )
            }
            "BYDAY" => by_day = Some(value.to_ascii_uppercase()),
            "INTERVAL" if value == "1" => {}
            "WKST" => {}
            other => {
                return Err(format!(
                "{other} is not supported (only FREQ=YEARLY with BYMONTH, BYMONTHDAY or one BYDAY)"
            ))
            }
        }
    }
    if freq.as_deref() != Some("YEARLY") {
        return Err("only FREQ=YEARLY rules are supported".into());
    }
    let month = month.unwrap_or(start.month());
    if !(1..=12).contains(&month) {
        return Err(format!("BYMONTH={month}: expected 1-12"));
    }
    match (by_day, month_day) {
        (None, day) => Ok(json!({"month": month, "day": day.unwrap_or(start.day())})),
        (Some(by_day), None) => {
            let split = by_day
                .find(|c: char| c.is_ascii_alphabetic())
                .ok_or_else(|| format!("BYDAY={by_day}: expected like 1MO or -1MO"))?;
            let (nth, weekday) = by_day.split_at(split);
            let nth: i32 = nth.trim_start_matches('+').parse().map_err(|_| {
                format!("BYDAY={by_day}: expected one weekday with its number, like 1MO or -1MO")
            })?;
            let weekday = match weekday {
                "SU" => "SUN",
                "MO" => "MON",
                "TU" => "TUE",
                "WE" => "WED",
                "TH" => "THU",
                "FR" => "FRI",
                "SA" => "SAT",
                _ => return Err(format!("BYDAY={by_day}: expected one weekday, like 1MO")),
            };
            Ok(json!({"month": month, "weekday": weekday, "nth": nth}))
        }
        (Some(_), Some(_)) => Err("BYDAY with BYMONTHDAY is not supported".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UK: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nX-WR-CALNAME:UK holidays\r\n\
X-WR-TIMEZONE:Europe/London\r\n\
BEGIN:VEVENT\r\nUID:1\r\nDTSTART;VALUE=DATE:20241225\r\nDTEND;VALUE=DATE:20241226\r\nSUMMARY:Christmas Day\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:2\r\nDTSTART;VALUE=DATE:20241223\r\nDTEND;VALUE=DATE:20241225\r\nSUMMARY:Office closed\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:3\r\nDTSTART;VALUE=DATE:20240506\r\nRRULE:FREQ=YEARLY;BYMONTH=5;BYDAY=1MO\r\nSUMMARY:Early May\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:4\r\nDTSTART;VALUE=DATE:20240101\r\nRRULE:FREQ=YEARLY\r\nSUMMARY:New Year\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";

    #[test]
    fn all_day_events_and_simple_yearly_rules() {
        let got = import(UK).unwrap();
        assert_eq!(got.dates, vec![json!("2024-12-25")]);
        assert_eq!(
            got.ranges,
            vec![json!({"start": "2024-12-23", "end": "2024-12-24"})]
        );
        assert_eq!(
            got.rules,
            vec![
                json!({"month": 5, "weekday": "MON", "nth": 1, "comment": "Early May"}),
                json!({"month": 1, "day": 1, "comment": "New Year"}),
            ]
        );
        assert_eq!(got.zone.as_deref(), Some("Europe/London"));
        assert_eq!(got.description.as_deref(), Some("UK holidays"));
    }

    #[test]
    fn timed_events_and_other_rules_are_refused_naming_the_event() {
        let timed = UK.replace("DTSTART;VALUE=DATE:20241225", "DTSTART:20241225T090000Z");
        let e = import(&timed).unwrap_err();
        assert!(
            e.starts_with(
                "event 0 (\"Christmas Day\"): DTSTART \"20241225T090000Z\" is not an all-day date"
            ),
            "{e}"
        );
        let weekly = UK.replace("RRULE:FREQ=YEARLY\r\n", "RRULE:FREQ=WEEKLY\r\n");
        let e = import(&weekly).unwrap_err();
        assert!(
            e.contains("event 3 (\"New Year\"): RRULE \"FREQ=WEEKLY\": only FREQ=YEARLY"),
            "{e}"
        );
        assert!(
            import("hello")
                .unwrap_err()
                .starts_with("not an iCalendar file")
                || import("hello").unwrap().dates.is_empty()
        );
    }
}
