//! Properties of business calendars (docs/spec.md §16), on random calendars: random holiday dates,
//! ranges and weekends.

use crate::support::*;
use chrono::{Datelike, NaiveDate, TimeDelta};
use proptest::prelude::*;
use serde_json::json;
use sundial_core::spec::{BusinessCalendar, CalendarSet, Roll, Schedule};

fn day(offset: i64) -> NaiveDate {
    NaiveDate::from_ymd_opt(2020, 1, 1).expect("date") + TimeDelta::days(offset)
}

fn calendar_strategy() -> impl Strategy<Value = BusinessCalendar> {
    let weekend = prop::sample::select(vec!["SAT,SUN", "FRI,SAT", "SUN", "", "SAT"]);
    let dates = prop::collection::vec(0i64..1500, 0..120);
    let ranges = prop::collection::vec((0i64..1500, 0i64..12), 0..6);
    (weekend, dates, ranges).prop_map(|(weekend, dates, ranges)| {
        let spec = json!({
            "name": "random",
            "weekend": weekend,
            "dates": dates.iter().map(|d| day(*d).to_string()).collect::<Vec<_>>(),
            "ranges": ranges.iter().map(|(s, len)| json!({"start": day(*s).to_string(), "end": day(s + len).to_string()})).collect::<Vec<_>>(),
            "rules": [{"month": 12, "day": 25, "observed": "nextWeekday"}, {"easter": -2}]
        });
        BusinessCalendar::from_json(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
    })
}

proptest! {
    #![proptest_config(cfg(256))]

    /// The nth business day is a business day of that month, and later for a larger n.
    #[test]
    fn nth_business_day_is_a_business_day_and_increasing(cal in calendar_strategy(), y in 2020i32..2024, m in 1u32..13) {
        let mut previous: Option<NaiveDate> = None;
        for n in 1..=31 {
            let Some(d) = cal.nth_business_day(y, m, n) else {
                // No nth: no later one either.
                prop_assert!(cal.nth_business_day(y, m, n + 1).is_none());
                break;
            };
            prop_assert!(cal.is_business_day(d), "{} is not a business day", d);
            prop_assert_eq!((d.year(), d.month()), (y, m));
            prop_assert!(previous.is_none_or(|p| p < d), "n = {} gives {} after {:?}", n, d, previous);
            previous = Some(d);
        }
        // The last business day is the largest one.
        prop_assert_eq!(cal.nth_business_day(y, m, -1), previous);
    }

    /// Rolls land on business days; the modified ones never leave the month; a business day stays.
    #[test]
    fn rolls_land_on_business_days(cal in calendar_strategy(), offset in 0i64..1500) {
        let d = day(offset);
        for roll in [Roll::Following, Roll::ModifiedFollowing, Roll::Preceding, Roll::ModifiedPreceding] {
            let Some(r) = cal.roll(d, roll) else { continue };
            prop_assert!(cal.is_business_day(r), "{:?} of {} gives {}", roll, d, r);
            if cal.is_business_day(d) {
                prop_assert_eq!(r, d);
            }
            match roll {
                Roll::Following => prop_assert!(r >= d),
                Roll::Preceding => prop_assert!(r <= d),
                _ => prop_assert_eq!((r.year(), r.month()), (d.year(), d.month()), "{:?} of {} left the month: {}", roll, d, r),
            }
        }
        // A month with a business day always has a modifiedFollowing answer.
        if cal.nth_business_day(d.year(), d.month(), 1).is_some() {
            prop_assert!(cal.roll(d, Roll::ModifiedFollowing).is_some());
        }
    }

    /// n business days after d: a business day with exactly n business days in (d, result].
    #[test]
    fn business_day_offsets_count_business_days(cal in calendar_strategy(), offset in 0i64..1400, n in 1i32..15) {
        let d = day(offset);
        let r = cal.add_business_days(d, n).expect("in range");
        prop_assert!(cal.is_business_day(r));
        let counted = (1..=(r - d).num_days())
            .filter(|k| cal.is_business_day(d + TimeDelta::days(*k)))
            .count();
        prop_assert_eq!(counted, n as usize);
        let back = cal.add_business_days(d, -n).expect("in range");
        prop_assert!(back < d && cal.is_business_day(back));
    }

    /// A schedule's `businessDay` fires only on business days, once a month at most.
    #[test]
    fn schedules_fire_on_business_days(cal in calendar_strategy(), n in prop::sample::select(vec![1, 2, 5, -1, -3])) {
        let probe = cal.clone();
        let mut set = CalendarSet::new();
        set.insert(cal);
        let s = Schedule::from_json_with(&json!({"calendars": [{"businessDay": n, "calendar": "random", "hour": "9"}]}), &set)
            .expect("valid");
        let times = s.preview(ts(ymd(2020, 1, 1)), 24);
        let mut months = Vec::new();
        for t in &times {
            let d = t.date_naive();
            prop_assert!(probe.is_business_day(d), "{} fired on a non-business day", t);
            prop_assert_eq!(probe.nth_business_day(d.year(), d.month(), n), Some(d));
            months.push((d.year(), d.month()));
        }
        let before = months.len();
        months.dedup();
        prop_assert_eq!(before, months.len());
    }
}
