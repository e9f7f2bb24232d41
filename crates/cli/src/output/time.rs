//! Times as people read them: in the job's zone, with how long ago or how soon, and a note where a
//! DST change moves the clock between two fire times.
//!
//! The fire times themselves come from the server (`describe`'s `futureActionTimes`); this module
//! only shows them. The job's zone is read with the spec engine's own parser, so a `CRON_TZ=`
//! prefix or a `timeZone` names the zone the server computes in; the zone data is chrono-tz's, as
//! the server's.

use chrono::{DateTime, Duration, LocalResult, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use serde_json::Value;
use sundial_core::spec::Schedule;
use sundial_core::timer::{compile_timer, TimerPlan};

/// The zone a job's times are shown in: its schedule's, or its `timer`'s (`timeZone`, or a
/// `CRON_TZ=` prefix of its cron period), else UTC (triggered-only jobs).
pub(crate) fn job_zone(job: &Value) -> Tz {
    match (job.get("schedule"), job.get("timer")) {
        (Some(schedule), _) if schedule.is_object() => Schedule::from_json(schedule)
            .map(|s| s.time_zone())
            .unwrap_or(Tz::UTC),
        (_, Some(timer)) => {
            // The create table allows a timer as JSON text.
            let timer = match timer {
                Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
                other => other.clone(),
            };
            // The zone does not depend on the creation time the timer is compiled at.
            match compile_timer(&timer, DateTime::UNIX_EPOCH) {
                Ok(TimerPlan::Scheduled(s)) => s.time_zone(),
                _ => Tz::UTC,
            }
        }
        _ => Tz::UTC,
    }
}

/// A time from the API (RFC 3339 with any offset).
pub(crate) fn parse(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `2026-11-22 06:00:00 GMT`: the wall time in `zone` and the zone's abbreviation.
pub(crate) fn wall(time: DateTime<Utc>, zone: Tz) -> String {
    time.with_timezone(&zone)
        .format("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// `Mon 2026-11-23 12:00:00 GMT`: [`wall`] with the weekday, for fire times.
pub(crate) fn wall_with_weekday(time: DateTime<Utc>, zone: Tz) -> String {
    time.with_timezone(&zone)
        .format("%a %Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// `2026-11-22 06:00:00 GMT (in 3 min)`.
pub(crate) fn wall_and_relative(time: DateTime<Utc>, zone: Tz, now: DateTime<Utc>) -> String {
    format!("{} ({})", wall(time, zone), relative(time, now))
}

/// `in 3 min`, `2 h ago`, `now`: the distance from `now` in its largest whole unit.
pub(crate) fn relative(time: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let delta = time - now;
    let seconds = delta.num_seconds().abs();
    if seconds < 1 {
        return "now".into();
    }
    let amount = span(seconds);
    if delta > Duration::zero() {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A length of time in its largest whole unit: `45 s`, `3 min`, `5 h`, `12 d`.
pub(crate) fn span(seconds: i64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 48 * 3600 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

/// How long a run took, to the tenth of a second below a minute: `0.4 s`, `12.0 s`, `3 min`.
pub(crate) fn took(start: DateTime<Utc>, end: DateTime<Utc>) -> String {
    let millis = (end - start).num_milliseconds().max(0);
    if millis < 60_000 {
        format!("{}.{} s", millis / 1000, (millis % 1000) / 100)
    } else {
        span(millis / 1000)
    }
}

fn offset_seconds(time: DateTime<Utc>, zone: Tz) -> i32 {
    zone.offset_from_utc_datetime(&time.naive_utc())
        .fix()
        .local_minus_utc()
}

/// The DST note of each fire time in `times` (in order, all after `now`): where the zone's offset
/// changed since the previous time (or since `now` for the first), and where a time falls in a
/// wall-clock hour that a change repeats or right after one it skips.
pub(crate) fn dst_notes(
    times: &[DateTime<Utc>],
    zone: Tz,
    now: DateTime<Utc>,
) -> Vec<Option<String>> {
    let mut previous = now;
    times
        .iter()
        .map(|&time| {
            let mut notes = Vec::new();
            let before = offset_seconds(previous, zone);
            let after = offset_seconds(time, zone);
            if before != after && time > previous {
                let change = change_between(previous, time, zone);
                let local = change.with_timezone(&zone);
                let from = previous.with_timezone(&zone).format("%Z").to_string();
                let to = local.format("%Z").to_string();
                let direction = if after > before {
                    "forward"
                } else {
                    "back"
                };
                let by = span((i64::from(after) - i64::from(before)).abs());
                notes.push(if change == time {
                    format!(
                        "clocks go {direction} {by} at this instant ({from} → {to}): the skipped wall times fire here"
                    )
                } else {
                    format!(
                        "clocks go {direction} {by} on {} ({from} → {to})",
                        local.format("%a %Y-%m-%d")
                    )
                });
            }
            let local = time.with_timezone(&zone).naive_local();
            if let LocalResult::Ambiguous(first, _) = zone.from_local_datetime(&local) {
                let which = if first.with_timezone(&Utc) == time {
                    "first"
                } else {
                    "second"
                };
                notes.push(format!(
                    "{} happens twice this day (clocks go back); this is the {which}",
                    time.with_timezone(&zone).format("%H:%M:%S")
                ));
            }
            previous = time;
            (!notes.is_empty()).then(|| notes.join("; "))
        })
        .collect()
}

/// The first instant in `(from, to]` with `to`'s offset, to the second (bisection: offsets change
/// at most a few times a year, and fire times are near each other).
fn change_between(from: DateTime<Utc>, to: DateTime<Utc>, zone: Tz) -> DateTime<Utc> {
    let target = offset_seconds(to, zone);
    let (mut low, mut high) = (from, to);
    while (high - low).num_seconds() > 1 {
        let middle = low + (high - low) / 2;
        if offset_seconds(middle, zone) == target {
            high = middle;
        } else {
            low = middle;
        }
    }
    high
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(text: &str) -> DateTime<Utc> {
        parse(text).unwrap()
    }

    #[test]
    fn relative_times_in_their_largest_unit() {
        let now = t("2026-11-21T12:00:00Z");
        assert_eq!(relative(t("2026-11-21T12:03:30Z"), now), "in 3 min");
        assert_eq!(relative(t("2026-11-21T10:00:00Z"), now), "2 h ago");
        assert_eq!(relative(t("2026-11-21T12:00:00.4Z"), now), "now");
        assert_eq!(relative(t("2026-11-21T11:59:15Z"), now), "45 s ago");
        assert_eq!(relative(t("2026-11-23T11:00:00Z"), now), "in 47 h");
        assert_eq!(relative(t("2026-12-21T12:00:00Z"), now), "in 30 d");
        assert_eq!(took(now, t("2026-11-21T12:00:01.25Z")), "1.2 s");
    }

    /// Issue 26 item 4: a timer's zone (`timeZone`, or a `CRON_TZ=` prefix) is the job's.
    #[test]
    fn zones_come_from_the_timer() {
        let job = json!({"timer": {"period": "0 0 9 * * ?", "timeZone": "Asia/Shanghai"}});
        assert_eq!(job_zone(&job), Tz::Asia__Shanghai);
        let job = json!({"timer": {"period": "CRON_TZ=Asia/Tokyo 0 9 * * *"}});
        assert_eq!(job_zone(&job), Tz::Asia__Tokyo);
        let job = json!({"timer": "{\"dueTime\": \"1h\", \"period\": \"5m\", \"timeZone\": \"Europe/Paris\"}"});
        assert_eq!(job_zone(&job), Tz::Europe__Paris);
        assert_eq!(job_zone(&json!({"timer": {"period": "external"}})), Tz::UTC);
    }

    #[test]
    fn zones_come_from_the_schedule() {
        let job = json!({"schedule": {"cron": ["0 12 * * *"], "timeZone": "Europe/London"}});
        assert_eq!(job_zone(&job), chrono_tz::Europe::London);
        let job = json!({"schedule": {"cron": ["CRON_TZ=Asia/Tokyo 0 12 * * *"]}});
        assert_eq!(job_zone(&job), chrono_tz::Asia::Tokyo);
        assert_eq!(job_zone(&json!({"timer": {"period": "1h"}})), Tz::UTC);
        assert_eq!(
            wall(t("2026-07-01T11:00:00Z"), chrono_tz::Europe::London),
            "2026-07-01 12:00:00 BST"
        );
    }

    #[test]
    fn dst_changes_between_fire_times_are_noted() {
        let london = chrono_tz::Europe::London;
        // Daily at 12:00 London across the spring change (Sunday 2027-03-28, 01:00 UTC).
        let times = [
            t("2027-03-27T12:00:00+00:00"),
            t("2027-03-28T12:00:00+01:00"),
            t("2027-03-29T12:00:00+01:00"),
        ];
        let notes = dst_notes(&times, london, t("2027-03-27T00:00:00Z"));
        assert_eq!(notes[0], None);
        assert_eq!(
            notes[1].as_deref(),
            Some("clocks go forward 1 h on Sun 2027-03-28 (GMT → BST)")
        );
        assert_eq!(notes[2], None);
    }

    #[test]
    fn repeated_and_skipped_wall_times_are_noted() {
        let new_york = chrono_tz::America::New_York;
        // 01:30 on 2026-11-01 happens at 05:30Z (EDT) and 06:30Z (EST).
        let times = [t("2026-11-01T05:30:00Z"), t("2026-11-01T06:30:00Z")];
        let notes = dst_notes(&times, new_york, t("2026-10-31T12:00:00Z"));
        assert_eq!(
            notes[0].as_deref(),
            Some("01:30:00 happens twice this day (clocks go back); this is the first")
        );
        assert_eq!(
            notes[1].as_deref(),
            Some("clocks go back 1 h on Sun 2026-11-01 (EDT → EST); 01:30:00 happens twice this day (clocks go back); this is the second")
        );
        // 02:30 does not exist on 2027-03-14; a fixed-time spec fires at 03:00 EDT (07:00Z).
        let notes = dst_notes(
            &[t("2027-03-14T07:00:00Z")],
            new_york,
            t("2027-03-13T12:00:00Z"),
        );
        assert_eq!(
            notes[0].as_deref(),
            Some("clocks go forward 1 h at this instant (EST → EDT): the skipped wall times fire here")
        );
    }
}
