//! Property 5: specs that can never fire yield no times, quickly.

use crate::support::*;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sundial_core::spec::Schedule;

#[test]
fn never_firing_specs_yield_nothing_quickly() {
    let from_2020 = ts(ymd(2020, 1, 1));
    let cases: Vec<(Value, DateTime<Utc>)> = vec![
        (json!({"cron": ["0 0 30 2 *"]}), from_2020),
        (json!({"cron": ["0 0 31 4,6,9,11 *"]}), from_2020),
        (
            json!({"cron": ["0 0 30 2 *"], "timeZone": "America/New_York"}),
            from_2020,
        ),
        (json!({"calendars": [{"year": "2001"}]}), from_2020),
        (
            json!({"calendars": [{"dayOfMonth": "30", "month": "FEB"}]}),
            from_2020,
        ),
        (
            json!({"calendars": [{"dayOfMonth": "31", "month": "2,4,6,9,11"}]}),
            from_2020,
        ),
        (json!({"cron": ["0 0 0 1 1 * 2001"]}), from_2020),
        (
            json!({"cron": ["0 0 1 1 * 2001"], "dialect": "temporal"}),
            from_2020,
        ),
        (
            json!({"cron": ["0 12 * * *"], "exclude": [{"hour": "*"}]}),
            from_2020,
        ),
        (
            json!({"cron": ["*/5 * * * *"], "exclude": [{"second": "*", "minute": "*", "hour": "*"}]}),
            from_2020,
        ),
        (
            json!({"cron": ["* * * * * *"], "exclude": [{"second": "*", "minute": "*", "hour": "*"}]}),
            from_2020,
        ),
        (
            json!({"intervals": ["1s"], "exclude": [{"second": "*", "minute": "*", "hour": "*"}]}),
            from_2020,
        ),
        (
            json!({"intervals": [{"every": "1m", "offset": "30s"}], "calendars": [{"hour": "*/2"}],
                   "exclude": [{"second": "*", "minute": "*", "hour": "*"}], "timeZone": "Australia/Lord_Howe"}),
            from_2020,
        ),
        (
            json!({"cron": ["* * * * *"], "exclude": [{"second": "*", "minute": "*", "hour": "*", "dayOfWeek": "MON-FRI"},
                                                       {"second": "*", "minute": "*", "hour": "*", "dayOfWeek": "SAT,SUN"}]}),
            from_2020,
        ),
        (
            json!({"cron": ["* * * * *"], "endTime": "2019-12-31T23:59:59Z"}),
            from_2020,
        ),
        (
            json!({"cron": ["0 0 13 * 5"], "dialect": "temporal", "endTime": "2020-03-12T00:00:00Z"}),
            from_2020,
        ),
    ];
    let mut failures = Vec::new();
    for (spec, from) in cases {
        let s = match Schedule::from_json(&spec) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{spec}: rejected: {e}"));
                continue;
            }
        };
        let (times, took) = timed_preview(&s, from, 5);
        if !times.is_empty() {
            failures.push(format!(
                "{spec} from {}: expected no times, got {:?}",
                rfc(from),
                times.iter().map(|t| rfc(*t)).collect::<Vec<_>>()
            ));
        }
        if took >= FAST {
            failures.push(format!(
                "{spec} from {}: preview took {took:?} (limit {FAST:?})",
                rfc(from)
            ));
        }
        let (n, took) = cpu_timed(|| s.next_after(from));
        if n.is_some() || took >= FAST {
            failures.push(format!("{spec}: next_after gave {n:?} in {took:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "never-firing specs:\n{}",
        failures.join("\n")
    );
}

/// A sparse but satisfiable spec is also found quickly: Feb 29 that is a Monday (AND semantics).
#[test]
fn sparse_spec_is_found_quickly() {
    let s = Schedule::from_json(&json!({"cron": ["0 0 29 2 1"], "dialect": "temporal"}))
        .expect("parses");
    let (times, took) = timed_preview(&s, ts(ymd(2000, 1, 1)), 3);
    let got: Vec<String> = times.into_iter().map(rfc).collect();
    assert_eq!(
        got,
        [
            "2016-02-29T00:00:00Z",
            "2044-02-29T00:00:00Z",
            "2072-02-29T00:00:00Z"
        ]
    );
    assert!(took < FAST, "took {took:?}");
}
