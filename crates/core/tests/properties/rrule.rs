//! Property: an `rrule` entry's fire times after any instant are the rule's own occurrences (the
//! `rrule` crate iterated from DTSTART, with no restart), whatever the frequency, interval,
//! week start and BY-parts: the engine restarts a rule at the aligned period that holds the
//! query, and this checks the restart loses and adds nothing.

use crate::support::*;
use chrono::{NaiveDate, NaiveDateTime, TimeDelta, TimeZone};
use proptest::prelude::*;
use rrule::{RRuleSet, Tz as RuleTz};
use sundial_core::spec::rrule_wall_times;

fn rule_strategy() -> impl Strategy<Value = String> {
    let freq = prop::sample::select(vec!["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY"]);
    let parts = prop::sample::subsequence(
        vec![
            "BYDAY=MO,WE,FR",
            "BYDAY=TU",
            "BYDAY=SU,TU",
            "BYMONTHDAY=1,15,-1",
            "BYMONTH=2,6,11",
            "BYHOUR=9,17",
            "BYMINUTE=0,30",
            "BYSETPOS=-1",
            "WKST=SU",
        ],
        0..4,
    );
    (freq, 1u16..5, parts).prop_map(|(freq, interval, parts)| {
        let mut rule = format!("FREQ={freq};INTERVAL={interval}");
        for part in parts {
            rule.push(';');
            rule.push_str(part);
        }
        rule
    })
}

fn oracle(
    rule: &str,
    dtstart: NaiveDateTime,
    after: NaiveDateTime,
    n: usize,
) -> Option<Vec<NaiveDateTime>> {
    let start = RuleTz::UTC.from_utc_datetime(&dtstart);
    let set: RRuleSet = rule
        .parse::<rrule::RRule<rrule::Unvalidated>>()
        .ok()?
        .build(start)
        .ok()?;
    let mut out = Vec::new();
    for t in (&set.limit()).into_iter() {
        let t = t.naive_utc();
        if t > after {
            out.push(t);
            if out.len() == n {
                break;
            }
        }
        if t.and_utc().timestamp() > ts(ymd(2060, 1, 1)).timestamp() {
            break;
        }
    }
    Some(out)
}

proptest! {
    #![proptest_config(cfg(256))]

    #[test]
    fn rrule_restart_matches_iteration_from_dtstart(
        rule in rule_strategy(),
        start_day in 0i64..3000,
        start_secs in 0i64..86_400,
        offset_days in 0i64..2000,
        offset_secs in 0i64..86_400,
    ) {
        let base = NaiveDate::from_ymd_opt(2020, 1, 1).and_then(|d| d.and_hms_opt(0, 0, 0)).expect("date");
        let dtstart = base + TimeDelta::days(start_day) + TimeDelta::seconds(start_secs);
        let after = dtstart + TimeDelta::days(offset_days) + TimeDelta::seconds(offset_secs);
        let Some(want) = oracle(&rule, dtstart, after, 4) else {
            // The crate refuses the combination (e.g. BYSETPOS alone): so must the engine.
            prop_assert!(rrule_wall_times(&rule, dtstart, after, 4).is_err(), "{rule} accepted");
            return Ok(());
        };
        let got = rrule_wall_times(&rule, dtstart, after, want.len());
        prop_assert_eq!(got, Ok(want), "{} from DTSTART {} after {}", rule, dtstart, after);
    }
}
