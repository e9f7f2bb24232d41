//! Unit tests per construct and per dialect; peer vectors live in tests/conformance.rs.

use super::*;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap_or_default()
}

/// The next `count` times after `from`, formatted in the schedule's zone, or the error.
fn times(spec: Value, from: &str, count: usize) -> Vec<String> {
    match Schedule::from_json(&spec) {
        Ok(s) => s
            .preview(at(from), count)
            .into_iter()
            .map(|t| s.format_time(t))
            .collect(),
        Err(e) => vec![format!("error: {e}")],
    }
}

fn error(spec: Value) -> String {
    Schedule::from_json(&spec)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| "ok".into())
}

#[test]
fn weekday_noon() {
    assert_eq!(
        times(
            json!({"cron": ["0 12 * * MON-FRI"]}),
            "2024-01-05T13:00:00Z",
            2
        ),
        ["2024-01-08T12:00:00+00:00", "2024-01-09T12:00:00+00:00"]
    );
}

#[test]
fn standard_dom_dow_or_and_plus_and() {
    // 1st of the month OR Wednesday.
    assert_eq!(
        times(json!({"cron": ["0 0 1 * wed"]}), "2010-01-25T00:00:00Z", 3),
        [
            "2010-01-27T00:00:00+00:00",
            "2010-02-01T00:00:00+00:00",
            "2010-02-03T00:00:00+00:00"
        ]
    );
    // croner's `+`: Mondays that are the 1st.
    assert_eq!(
        times(
            json!({"cron": ["0 12 1 * +MON"]}),
            "2024-01-01T13:00:00Z",
            1
        ),
        ["2024-04-01T12:00:00+00:00"]
    );
    // Temporal ANDs: Friday the 13th.
    assert_eq!(
        times(
            json!({"cron": ["0 12 13 * 5"], "dialect": "temporal"}),
            "2024-01-01T00:00:00Z",
            2
        ),
        ["2024-09-13T12:00:00+00:00", "2024-12-13T12:00:00+00:00"]
    );
}

#[test]
fn seconds_and_years_by_dialect() {
    assert_eq!(
        times(
            json!({"cron": ["30 0 12 * * *"]}),
            "2024-01-01T00:00:00Z",
            1
        ),
        ["2024-01-01T12:00:30+00:00"]
    );
    assert_eq!(
        times(
            json!({"cron": ["0 12 * * * 2026"], "dialect": "temporal"}),
            "2024-01-01T00:00:00Z",
            1
        ),
        ["2026-01-01T12:00:00+00:00"]
    );
    // Temporal reads `0 30 9 * * *` as minute 0, hour 30: an error, not seconds-first.
    assert!(
        error(json!({"cron": ["0 30 9 * * *"], "dialect": "temporal"}))
            .starts_with("cron[0]: hour: 30")
    );
    assert_eq!(
        times(
            json!({"cron": ["0 15 10 ? * 6L"], "dialect": "quartz"}),
            "2024-01-01T00:00:00Z",
            2
        ),
        ["2024-01-26T10:15:00+00:00", "2024-02-23T10:15:00+00:00"]
    );
    assert_eq!(
        times(
            json!({"cron": ["cron(0 12 ? * 2#1 *)"], "dialect": "eventbridge"}),
            "2024-01-01T13:00:00Z",
            2
        ),
        ["2024-02-05T12:00:00+00:00", "2024-03-04T12:00:00+00:00"]
    );
    assert!(
        error(json!({"cron": ["0 12 * * * *"], "dialect": "quartz"})).contains("exactly one of")
    );
}

#[test]
fn specials() {
    assert_eq!(
        times(json!({"cron": ["0 0 L * *"]}), "2024-01-31T00:00:00Z", 2),
        ["2024-02-29T00:00:00+00:00", "2024-03-31T00:00:00+00:00"]
    );
    assert_eq!(
        times(json!({"cron": ["0 0 LW * *"]}), "2024-03-01T00:00:00Z", 1),
        ["2024-03-29T00:00:00+00:00"]
    );
    assert_eq!(
        times(json!({"cron": ["0 0 15W * *"]}), "2024-06-01T00:00:00Z", 1),
        ["2024-06-14T00:00:00+00:00"]
    );
    assert_eq!(
        times(
            json!({"cron": ["0 0 * * FRI#L"]}),
            "2024-01-01T00:00:00Z",
            1
        ),
        ["2024-01-26T00:00:00+00:00"]
    );
    assert_eq!(
        times(
            json!({"calendars": [{"dayOfWeek": "TUE#2", "hour": "9"}]}),
            "2024-01-01T00:00:00Z",
            1
        ),
        ["2024-01-09T09:00:00+00:00"]
    );
    assert!(
        error(json!({"calendars": [{"dayOfMonth": "L"}], "dialect": "temporal"}))
            .starts_with("calendars[0].dayOfMonth:")
    );
}

#[test]
fn macros_and_every() {
    assert_eq!(
        times(json!({"cron": ["@weekly"]}), "2024-01-01T00:00:00Z", 1),
        ["2024-01-07T00:00:00+00:00"]
    );
    assert_eq!(
        times(
            json!({"cron": ["@every 14h/3h"]}),
            "2024-01-01T00:00:00Z",
            2
        ),
        // Aligned to the epoch: 14h periods start at 2023-12-31T12:00Z, plus 3h.
        ["2024-01-01T05:00:00+00:00", "2024-01-01T19:00:00+00:00"]
    );
    assert_eq!(
        times(
            json!({"cron": ["TZ=Asia/Tokyo @midnight"]}),
            "2024-01-01T00:00:00Z",
            1
        ),
        ["2024-01-02T00:00:00+09:00"]
    );
}

#[test]
fn intervals_union_exclude_bounds() {
    assert_eq!(
        times(json!({"intervals": ["6h/5h"]}), "2024-01-01T00:00:00Z", 3),
        [
            "2024-01-01T05:00:00+00:00",
            "2024-01-01T11:00:00+00:00",
            "2024-01-01T17:00:00+00:00"
        ]
    );
    assert!(
        error(json!({"intervals": [{"every": "3h", "offset": "4h"}]})).starts_with("intervals[0]:")
    );
    // Mondays at noon except in the first week of the month.
    assert_eq!(
        times(
            json!({"calendars": [{"dayOfWeek": "MON", "hour": "12"}], "exclude": [{"dayOfMonth": "1-7", "hour": "*", "minute": "*", "second": "*"}]}),
            "2024-01-01T00:00:00Z",
            2
        ),
        ["2024-01-08T12:00:00+00:00", "2024-01-15T12:00:00+00:00"]
    );
    assert_eq!(
        times(
            json!({"cron": ["0 * * * *"], "startTime": "2024-01-01T05:00:00Z", "endTime": "2024-01-01T07:00:00Z"}),
            "2023-01-01T00:00:00Z",
            5
        ),
        [
            "2024-01-01T05:00:00+00:00",
            "2024-01-01T06:00:00+00:00",
            "2024-01-01T07:00:00+00:00"
        ]
    );
}

#[test]
fn never_matching_specs_answer_quickly() {
    for spec in [
        json!({"cron": ["0 0 30 2 *"]}),
        json!({"calendars": [{"year": "2001"}]}),
        json!({"cron": ["* * * * * *"], "exclude": [{"second": "*", "minute": "*", "hour": "*"}]}),
        json!({"cron": ["*/2 * * * * *"], "exclude": [{"second": "*/2", "minute": "*", "hour": "*"}]}),
    ] {
        let schedule = Schedule::from_json(&spec).unwrap_or_else(|e| panic!("{e}"));
        let started = std::time::Instant::now();
        let _ = schedule.next_after(at("2020-01-01T00:00:00Z"));
        assert!(
            started.elapsed() < std::time::Duration::from_millis(500),
            "{spec} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn long_exclusions_are_skipped_in_one_step() {
    // Every minute except January to November: the first fire is December 1st.
    let spec = json!({"cron": ["* * * * *"], "exclude": [{"minute": "*", "hour": "*", "month": "JAN-NOV"}]});
    assert_eq!(
        times(spec, "2024-01-01T00:00:00Z", 1),
        ["2024-12-01T00:00:00+00:00"]
    );
    // An exclusion of every second-0 in New York removes every fire of `* * * * *`.
    let spec = json!({"cron": ["* * * * *"], "timeZone": "America/New_York", "exclude": [{"minute": "*", "hour": "*"}]});
    let started = std::time::Instant::now();
    assert!(times(spec, "2024-01-01T00:00:00Z", 1).is_empty());
    assert!(started.elapsed() < std::time::Duration::from_millis(200));
    // A DST shift moves 02:30 out of an excluded 02:00 hour on the spring-forward day only.
    let spec = json!({"cron": ["30 2 * * *"], "timeZone": "America/New_York", "dst": {"gap": "shift"},
                      "exclude": [{"hour": "2", "minute": "*", "second": "*"}]});
    assert_eq!(
        times(spec, "2024-01-01T00:00:00Z", 2),
        ["2024-03-10T03:30:00-04:00", "2025-03-09T03:30:00-04:00"]
    );
}

#[test]
fn dst_new_york_spring_gap() {
    let from = "2024-03-09T12:00:00Z";
    let spec = |cron: &str, dst: Value| json!({"cron": [cron], "timeZone": "America/New_York", "dst": dst});
    assert_eq!(
        times(spec("30 2 * * *", json!({"gap": "skip"})), from, 1),
        ["2024-03-11T02:30:00-04:00"]
    );
    assert_eq!(
        times(spec("30 2 * * *", json!({"gap": "shift"})), from, 1),
        ["2024-03-10T03:30:00-04:00"]
    );
    assert_eq!(
        times(spec("30 2 * * *", json!({"gap": "transition"})), from, 1),
        ["2024-03-10T03:00:00-04:00"]
    );
    assert_eq!(
        times(spec("30 2 * * *", json!({})), from, 2),
        ["2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"]
    );
    // Non-fixed specs skip under auto: hourly goes 01:00 → 03:00.
    assert_eq!(
        times(spec("0 * * * *", json!({})), "2024-03-10T05:30:00Z", 2),
        ["2024-03-10T01:00:00-05:00", "2024-03-10T03:00:00-04:00"]
    );
}

#[test]
fn dst_new_york_fall_overlap() {
    let from = "2024-11-03T04:00:00Z"; // 00:00 EDT
    let spec = |cron: &str, dst: Value| json!({"cron": [cron], "timeZone": "America/New_York", "dst": dst});
    assert_eq!(
        times(spec("30 1 * * *", json!({"overlap": "both"})), from, 2),
        ["2024-11-03T01:30:00-04:00", "2024-11-03T01:30:00-05:00"]
    );
    assert_eq!(
        times(spec("30 1 * * *", json!({"overlap": "first"})), from, 2),
        ["2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"]
    );
    assert_eq!(
        times(spec("30 1 * * *", json!({"overlap": "second"})), from, 2),
        ["2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"]
    );
    // auto: fixed time once; hourly in both passes.
    assert_eq!(
        times(spec("30 1 * * *", json!({})), from, 2),
        ["2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"]
    );
    assert_eq!(
        times(spec("0 * * * *", json!({})), from, 4),
        [
            "2024-11-03T01:00:00-04:00",
            "2024-11-03T01:00:00-05:00",
            "2024-11-03T02:00:00-05:00",
            "2024-11-03T03:00:00-05:00"
        ]
    );
    // Starting inside the second pass still finds the repeated 01:30.
    assert_eq!(
        times(
            spec("30 1 * * *", json!({"overlap": "both"})),
            "2024-11-03T06:00:00Z",
            1
        ),
        ["2024-11-03T01:30:00-05:00"]
    );
}

#[test]
fn jitter_is_deterministic_and_bounded_by_the_next_fire() {
    let schedule = Schedule::from_json(&json!({"cron": ["* * * * *"], "jitter": "10m"}))
        .unwrap_or_else(|e| panic!("{e}"));
    let from = at("2024-01-01T00:00:00Z");
    let a = schedule.fire_after(from, "job-1");
    assert_eq!(a, schedule.fire_after(from, "job-1"));
    let a = a.unwrap_or_else(|| panic!("fires"));
    assert_eq!(a.nominal, at("2024-01-01T00:01:00Z"));
    assert!(a.due >= a.nominal && a.due < a.nominal + chrono::Duration::minutes(1));
}

#[test]
fn canonical_round_trip() {
    for spec in [
        json!({"cron": ["0 12 * * MON-FRI", "0 0 L * *", "15 10 1 * wed"], "timeZone": "Europe/Paris"}),
        json!({"cron": ["0 15 10 ? * 6#3"], "dialect": "quartz", "jitter": "30s"}),
        json!({"calendars": [{"month": "Jan,Apr", "dayOfMonth": "1,15", "hour": "11-14", "comment": "x"}], "intervals": ["6h/5h"],
               "exclude": [{"dayOfWeek": "sat,sun"}], "startTime": "2024-01-01T00:00:00Z", "dialect": "temporal"}),
    ] {
        let first = Schedule::from_json(&spec).unwrap_or_else(|e| panic!("{e}"));
        let canonical = first.to_canonical_json();
        let second = Schedule::from_json(&canonical).unwrap_or_else(|e| panic!("{e}: {canonical}"));
        assert_eq!(first, second, "{canonical}");
        assert_eq!(second.to_canonical_json(), canonical);
    }
}

#[test]
fn errors_name_field_and_token() {
    assert_eq!(
        error(json!({"cron": ["0 0 * * XYZ"]})),
        "cron[0]: day-of-week: unknown name \"XYZ\" in \"XYZ\""
    );
    assert_eq!(
        error(json!({"cron": ["0 60 * * *"]})),
        "cron[0]: hour: 60 is out of range 0-23 in \"60\""
    );
    assert!(error(json!({"cron": ["* * * *"]})).starts_with("cron[0]: expected 5"));
    assert!(
        error(json!({"calendars": [{"hour": [{"start": 0, "end": 24}]}]}))
            .starts_with("calendars[0].hour:")
    );
    assert!(
        error(json!({"timeZone": "Mars/Olympus", "cron": ["* * * * *"]})).starts_with("timeZone:")
    );
    assert!(error(json!({"crn": ["* * * * *"]})).starts_with("crn: unknown field"));
    assert!(error(json!({})).starts_with("schedule:"));
    assert!(
        error(json!({"cron": ["TZ=Asia/Tokyo 0 0 * * *"], "timeZone": "UTC"}))
            .contains("conflicts")
    );
}

#[test]
fn temporal_cron_strings_agree_on_their_zone_prefix() {
    // Temporal's canonicalization: every cron string has the same CRON_TZ= prefix, or none does.
    assert_eq!(
        error(json!({"dialect": "temporal", "cron": ["CRON_TZ=Europe/London 0 9 * * *", "0 12 * * *"]})),
        "cron[1]: no CRON_TZ= prefix disagrees with cron[0], which has CRON_TZ=Europe/London: in the \
         temporal dialect every cron string has the same CRON_TZ= prefix or none does, as in Temporal"
    );
    assert!(error(
        json!({"dialect": "temporal", "cron": ["0 9 * * *", "CRON_TZ=Asia/Tokyo 0 12 * * *"]})
    )
    .starts_with(
        "cron[1]: CRON_TZ=Asia/Tokyo disagrees with cron[0], which has no CRON_TZ= prefix"
    ));
    assert!(error(json!({"dialect": "temporal", "cron": ["TZ=Asia/Tokyo 0 9 * * *", "CRON_TZ=Europe/Berlin 0 12 * * *"]}))
        .starts_with("cron[1]: CRON_TZ=Europe/Berlin disagrees"));
    assert_eq!(
        error(
            json!({"dialect": "temporal", "cron": ["TZ=Asia/Tokyo 0 9 * * *", "CRON_TZ=Asia/Tokyo 0 12 * * *"]})
        ),
        "ok"
    );
    // The standard dialect keeps its rule: a string without a prefix uses the other's zone.
    assert_eq!(
        error(json!({"cron": ["CRON_TZ=Asia/Tokyo 0 9 * * *", "0 12 * * *"]})),
        "ok"
    );
}

#[test]
fn temporal_cron_comment_is_kept_as_the_comment() {
    let schedule = Schedule::from_json(
        &json!({"dialect": "temporal", "cron": ["CRON_TZ=US/Pacific 55 55,57 5 2/2 * wed-thurs *  # explanation"]}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let canonical = schedule.to_canonical_json();
    assert_eq!(canonical["calendars"][0]["comment"], json!("explanation"));
    assert_eq!(canonical["timeZone"], json!("US/Pacific"));
    // A comment after a macro too; without one, the source string stays the comment.
    let daily = Schedule::from_json(&json!({"dialect": "temporal", "cron": ["@daily # nightly"]}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        daily.to_canonical_json()["calendars"][0]["comment"],
        json!("nightly")
    );
    let plain = Schedule::from_json(&json!({"dialect": "temporal", "cron": ["0 12 * * *"]}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        plain.to_canonical_json()["calendars"][0]["comment"],
        json!("0 12 * * *")
    );
    // In the standard dialect `#` keeps its meaning (nth weekday).
    assert_eq!(
        times(json!({"cron": ["0 10 * * 1#2"]}), "2024-01-01T00:00:00Z", 1),
        ["2024-01-08T10:00:00+00:00"]
    );
}

#[test]
fn croniter_last_in_ranges_and_last_weekday() {
    assert_eq!(
        times(json!({"cron": ["0 0 29-L * *"]}), "2024-01-31T00:00:00Z", 3),
        [
            "2024-02-29T00:00:00+00:00",
            "2024-03-29T00:00:00+00:00",
            "2024-03-30T00:00:00+00:00"
        ]
    );
    assert_eq!(
        times(
            json!({"cron": ["0 0 1-L/8 * *"]}),
            "2024-02-25T00:00:00Z",
            2
        ),
        ["2024-03-01T00:00:00+00:00", "2024-03-09T00:00:00+00:00"]
    );
    // L5 = the last Friday, the same as 5L.
    assert_eq!(
        times(json!({"cron": ["0 17 * * L5"]}), "2024-01-01T00:00:00Z", 3),
        times(json!({"cron": ["0 17 * * 5L"]}), "2024-01-01T00:00:00Z", 3)
    );
    assert_eq!(
        error(json!({"cron": ["0 0 * * L8"]})),
        "cron[0]: day-of-week: 8 is out of range 0-7 (0 and 7 = Sunday) in \"L8\""
    );
    // croniter extensions only: the other dialects keep their peers' grammar.
    assert!(
        error(json!({"dialect": "quartz", "cron": ["0 0 0 29-L * ?"]}))
            .starts_with("cron[0]: day-of-month")
    );
    assert!(
        error(json!({"dialect": "temporal", "cron": ["0 0 * * L5"]}))
            .starts_with("cron[0]: day-of-week")
    );
}

#[test]
fn rrule_last_weekday_of_the_month_in_a_zone() {
    let spec = json!({
        "rrule": ["FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1"],
        "startTime": "2024-01-01T17:00:00-05:00",
        "timeZone": "America/New_York"
    });
    assert_eq!(
        times(spec.clone(), "2024-01-01T00:00:00Z", 4),
        [
            "2024-01-31T17:00:00-05:00",
            "2024-02-29T17:00:00-05:00",
            "2024-03-29T17:00:00-04:00",
            "2024-04-30T17:00:00-04:00"
        ]
    );
    // From far after DTSTART too (the rule restarts at the query's period).
    assert_eq!(
        times(spec.clone(), "2031-05-01T00:00:00Z", 2),
        ["2031-05-30T17:00:00-04:00", "2031-06-30T17:00:00-04:00"]
    );
    let schedule = Schedule::from_json(&spec).unwrap_or_else(|e| panic!("{e}"));
    let canonical = schedule.to_canonical_json();
    assert_eq!(
        canonical["rrule"],
        json!(["FREQ=MONTHLY;BYSETPOS=-1;BYDAY=MO,TU,WE,TH,FR"])
    );
    // The canonical form parses back to the same schedule.
    assert_eq!(Schedule::from_json(&canonical).ok(), Some(schedule));
}

#[test]
fn rrule_joins_the_union_with_exclude_and_end() {
    let spec = json!({
        "cron": ["0 12 * * *"],
        "rrule": ["FREQ=WEEKLY;BYDAY=SA;BYHOUR=9;BYMINUTE=0;BYSECOND=0"],
        "exclude": [{"dayOfMonth": "13", "hour": "*", "minute": "*", "second": "*"}],
        "startTime": "2024-01-01T00:00:00Z",
        "endTime": "2024-01-14T23:59:59Z"
    });
    let got = times(spec, "2024-01-11T00:00:00Z", 10);
    assert_eq!(
        got,
        [
            "2024-01-11T12:00:00+00:00",
            "2024-01-12T12:00:00+00:00",
            "2024-01-14T12:00:00+00:00"
        ]
    );
}

#[test]
fn rrule_follows_the_dst_policy() {
    // 02:30 daily does not exist in New York on 2024-03-10.
    let spec = |dst: Value| {
        json!({"rrule": ["FREQ=DAILY"], "startTime": "2024-03-01T02:30:00-05:00",
               "timeZone": "America/New_York", "dst": dst})
    };
    assert_eq!(
        times(spec(json!({"gap": "skip"})), "2024-03-09T12:00:00Z", 2),
        ["2024-03-11T02:30:00-04:00", "2024-03-12T02:30:00-04:00"]
    );
    assert_eq!(
        times(spec(json!({"gap": "shift"})), "2024-03-09T12:00:00Z", 2),
        ["2024-03-10T03:30:00-04:00", "2024-03-11T02:30:00-04:00"]
    );
    // Fixed-time rules follow `auto` like fixed-time cron: the transition.
    assert_eq!(
        times(spec(json!({})), "2024-03-09T12:00:00Z", 1),
        ["2024-03-10T03:00:00-04:00"]
    );
}

#[test]
fn rrule_errors_name_the_entry() {
    assert_eq!(
        error(json!({"rrule": ["FREQ=DAILY"]})),
        "rrule[0]: needs startTime: it is the rule's DTSTART (RFC 5545), read in timeZone"
    );
    let bad = error(
        json!({"rrule": ["FREQ=DAILY", "FREQ=SOMETIMES"], "startTime": "2024-01-01T00:00:00Z"}),
    );
    assert!(
        bad.starts_with("rrule[1]: invalid rule \"FREQ=SOMETIMES\""),
        "{bad}"
    );
    let bad = error(
        json!({"rrule": ["FREQ=DAILY;DTSTART=20240101T000000"], "startTime": "2024-01-01T00:00:00Z"}),
    );
    assert!(bad.starts_with("rrule[0]: \"FREQ=DAILY;DTSTART=20240101T000000\": DTSTART is not part of the rule here"), "{bad}");
    let bad =
        error(json!({"rrule": ["FREQ=DAILY;COUNT=20000"], "startTime": "2024-01-01T00:00:00Z"}));
    assert!(bad.contains("COUNT=20000 is more than 10000"), "{bad}");
    let bad =
        error(json!({"rrule": ["FREQ=SECONDLY;BYMONTH=2"], "startTime": "2024-01-01T00:00:00Z"}));
    assert!(
        bad.starts_with("rrule[0]: \"FREQ=SECONDLY;BYMONTH=2\": FREQ=SECONDLY with BYMONTH"),
        "{bad}"
    );
    let bad =
        error(json!({"rrule": ["FREQ=DAILY;UNTIL=tomorrow"], "startTime": "2024-01-01T00:00:00Z"}));
    assert!(
        bad.starts_with("rrule[0]: invalid UNTIL \"TOMORROW\""),
        "{bad}"
    );
    assert_eq!(
        error(json!({"rrule": [3], "startTime": "2024-01-01T00:00:00Z"})),
        "rrule[0]: expected a string, got a number"
    );
}

#[test]
fn rrule_count_and_until() {
    assert_eq!(
        times(
            json!({"rrule": ["FREQ=WEEKLY;COUNT=3"], "startTime": "2024-01-02T09:00:00Z"}),
            "2023-12-31T00:00:00Z",
            10
        ),
        [
            "2024-01-02T09:00:00+00:00",
            "2024-01-09T09:00:00+00:00",
            "2024-01-16T09:00:00+00:00"
        ]
    );
    // UNTIL with Z is an instant: 14:00Z is 09:00 in New York, so the 09:00 run that day fires.
    assert_eq!(
        times(
            json!({"rrule": ["FREQ=DAILY;UNTIL=20240103T140000Z"], "startTime": "2024-01-01T09:00:00-05:00",
                   "timeZone": "America/New_York"}),
            "2023-12-31T00:00:00Z",
            10
        ),
        [
            "2024-01-01T09:00:00-05:00",
            "2024-01-02T09:00:00-05:00",
            "2024-01-03T09:00:00-05:00"
        ]
    );
}

/// England and Wales bank holidays as rules (docs/spec.md §16).
fn london() -> CalendarSet {
    let calendar = BusinessCalendar::from_json(&json!({
        "name": "london",
        "description": "England and Wales bank holidays",
        "timeZone": "Europe/London",
        "weekend": "SAT,SUN",
        "rules": [
            {"month": 1, "day": 1, "observed": "nextWeekday", "comment": "New Year's Day"},
            {"easter": -2, "comment": "Good Friday"},
            {"easter": 1, "comment": "Easter Monday"},
            {"month": 5, "weekday": "MON", "nth": 1, "comment": "Early May bank holiday"},
            {"month": 5, "weekday": "MON", "nth": -1, "comment": "Spring bank holiday"},
            {"month": 8, "weekday": "MON", "nth": -1, "comment": "Summer bank holiday"},
            {"month": 12, "day": 25, "observed": "nextWeekday", "comment": "Christmas Day"},
            {"month": 12, "day": 26, "observed": "nextWeekday", "comment": "Boxing Day"}
        ],
        "dates": ["2022-06-02", "2022-06-03", "2023-05-08"]
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let mut set = CalendarSet::new();
    set.insert(calendar);
    set
}

fn times_with(spec: Value, calendars: &CalendarSet, from: &str, count: usize) -> Vec<String> {
    match Schedule::from_json_with(&spec, calendars) {
        Ok(s) => s
            .preview(at(from), count)
            .into_iter()
            .map(|t| s.format_time(t))
            .collect(),
        Err(e) => vec![format!("error: {e}")],
    }
}

#[test]
fn last_business_day_in_london_skips_good_friday() {
    let spec = json!({"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                      "timeZone": "Europe/London"});
    assert_eq!(
        times_with(spec.clone(), &london(), "2024-01-01T00:00:00Z", 6),
        [
            "2024-01-31T18:00:00+00:00",
            "2024-02-29T18:00:00+00:00",
            "2024-03-28T18:00:00+00:00",
            "2024-04-30T18:00:00+01:00",
            "2024-05-31T18:00:00+01:00",
            "2024-06-28T18:00:00+01:00"
        ]
    );
    // The canonical form names the calendar and round-trips with the same set.
    let schedule = Schedule::from_json_with(&spec, &london()).unwrap_or_else(|e| panic!("{e}"));
    let canonical = schedule.to_canonical_json();
    assert_eq!(canonical["calendars"][0]["businessDay"], json!(-1));
    assert_eq!(canonical["calendars"][0]["calendar"], json!("london"));
    assert_eq!(
        Schedule::from_json_with(&canonical, &london()).ok(),
        Some(schedule)
    );
}

#[test]
fn third_business_day_and_offsets_and_rolls() {
    let set = london();
    assert_eq!(
        times_with(
            json!({"calendars": [{"businessDay": 3, "calendar": "london", "hour": "9"}], "timeZone": "Europe/London"}),
            &set,
            "2024-12-01T00:00:00Z",
            2
        ),
        // 2025-01-01 is a holiday: 2, 3, 6 January.
        ["2024-12-04T09:00:00+00:00", "2025-01-06T09:00:00+00:00"]
    );
    assert_eq!(
        times_with(
            json!({"calendars": [{"dayOfMonth": "15", "businessDayOffset": 2, "calendar": "london", "hour": "9"}],
                          "timeZone": "Europe/London"}),
            &set,
            "2024-11-01T00:00:00Z",
            3
        ),
        // 15 Nov is a Friday: Tue 19; 15 Dec is a Sunday: Tue 17; 15 Jan is a Wednesday: Fri 17.
        [
            "2024-11-19T09:00:00+00:00",
            "2024-12-17T09:00:00+00:00",
            "2025-01-17T09:00:00+00:00"
        ]
    );
    assert_eq!(
        times_with(
            json!({"calendars": [{"dayOfMonth": "25", "roll": "modifiedFollowing", "calendar": "london", "hour": "9"}],
                          "timeZone": "Europe/London"}),
            &set,
            "2024-05-01T00:00:00Z",
            4
        ),
        // 25 May is a Saturday and 27 May a bank holiday: Tue 28. 25 Aug Sunday, 26 Aug holiday: 27.
        [
            "2024-05-28T09:00:00+01:00",
            "2024-06-25T09:00:00+01:00",
            "2024-07-25T09:00:00+01:00",
            "2024-08-27T09:00:00+01:00"
        ]
    );
    // modifiedFollowing never leaves the month; following may.
    assert_eq!(
        times_with(
            json!({"calendars": [{"dayOfMonth": "31", "roll": "modifiedFollowing", "calendar": "london", "hour": "9"}],
                          "timeZone": "Europe/London"}),
            &set,
            "2024-08-01T00:00:00Z",
            1
        ),
        ["2024-08-30T09:00:00+01:00"]
    );
    assert_eq!(
        times_with(
            json!({"calendars": [{"dayOfMonth": "31", "roll": "following", "calendar": "london", "hour": "9"}],
                          "timeZone": "Europe/London"}),
            &set,
            "2024-08-01T00:00:00Z",
            1
        ),
        ["2024-09-02T09:00:00+01:00"]
    );
}

#[test]
fn only_on_and_exclude_by_calendar_name() {
    let set = london();
    assert_eq!(
        times_with(
            json!({"cron": ["0 9 * * *"], "onlyOn": [{"businessDaysOf": "london"}], "timeZone": "Europe/London"}),
            &set,
            "2024-12-24T00:00:00Z",
            3
        ),
        [
            "2024-12-24T09:00:00+00:00",
            "2024-12-27T09:00:00+00:00",
            "2024-12-30T09:00:00+00:00"
        ]
    );
    assert_eq!(
        times_with(
            json!({"cron": ["0 9 * * MON-FRI"], "exclude": ["london"], "timeZone": "Europe/London"}),
            &set,
            "2024-03-28T12:00:00Z",
            2
        ),
        ["2024-04-02T09:00:00+01:00", "2024-04-03T09:00:00+01:00"]
    );
    assert_eq!(
        times_with(
            json!({"intervals": ["12h"], "onlyOn": ["london"], "timeZone": "UTC"}),
            &set,
            "2024-12-24T00:00:00Z",
            3
        ),
        [
            "2024-12-25T00:00:00+00:00",
            "2024-12-25T12:00:00+00:00",
            "2024-12-26T00:00:00+00:00"
        ]
    );
}

#[test]
fn business_rule_errors_name_the_field() {
    let set = london();
    let err = |spec: Value| {
        Schedule::from_json_with(&spec, &set)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "ok".into())
    };
    assert_eq!(
        err(json!({"calendars": [{"businessDay": 3, "calendar": "paris"}]})),
        "calendars[0].calendar: unknown calendar \"paris\"; known: london"
    );
    assert_eq!(
        err(json!({"calendars": [{"businessDay": 0, "calendar": "london"}]})),
        "calendars[0].businessDay: expected an integer from -23 to 23 other than 0 (-1 is the last), got 0"
    );
    assert_eq!(
        err(json!({"calendars": [{"businessDay": 3, "dayOfMonth": "5", "calendar": "london"}]})),
        "calendars[0].dayOfMonth: not with businessDay: it counts the business days of the month"
    );
    assert_eq!(
        err(json!({"calendars": [{"roll": "sideways", "dayOfMonth": "5", "calendar": "london"}]})),
        "calendars[0].roll: expected \"following\", \"modifiedFollowing\", \"preceding\" or \"modifiedPreceding\", got \"sideways\""
    );
    assert_eq!(
        err(json!({"calendars": [{"businessDay": 3}]})),
        "calendars[0].calendar: required with businessDay: the name of a business calendar"
    );
    assert!(err(
        json!({"cron": ["0 9 * * *"], "exclude": [{"businessDay": 1, "calendar": "london"}]})
    )
    .starts_with("exclude[0].businessDay: business-day rules go in calendars"));
    assert_eq!(
        err(json!({"cron": ["0 9 * * *"], "onlyOn": ["paris"]})),
        "onlyOn[0]: unknown calendar \"paris\"; known: london"
    );
    assert_eq!(
        error(json!({"cron": ["0 9 * * *"], "onlyOn": ["london"]})),
        "onlyOn[0]: unknown calendar \"london\": no calendars are defined"
    );
}
