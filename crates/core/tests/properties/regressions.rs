//! Regressions found by the properties (exact shrunk inputs), kept as plain tests so they keep
//! testing the bug after the strategies change.

use crate::support::*;
use chrono::{DateTime, Utc};
use serde_json::json;
use sundial_core::spec::Schedule;
use sundial_core::timer::{compile_timer, TimerPlan};

/// A calendar or cron field starting with a multi-byte character used to panic in
/// `field::split_range` (`text[1..]` is not a char boundary). Found by `robust_calendar_fields`,
/// `robust_cron_strings`.
#[test]
fn regression_non_ascii_field_text_is_an_error_not_a_panic() {
    for spec in [
        json!({"calendars": [{"second": "¡"}]}),
        json!({"calendars": [{"second": "é*"}]}),
        json!({"exclude": [{"second": "࿎"}], "cron": ["* * * * *"]}),
        json!({"cron": ["é * * * *"]}),
    ] {
        let text = spec.to_string();
        let r = std::panic::catch_unwind(move || Schedule::from_json(&spec).is_ok());
        assert_eq!(
            r.ok(),
            Some(false),
            "{text}: expected Err, got a panic or Ok"
        );
    }
}

/// `R<n>/…` with a huge `n` overflowed `anchor + (n - 1) * step` in `timer.rs` (debug: panic
/// "attempt to multiply with overflow"; release: a wrapped, wrong end time). Found by `robust_timers`.
#[test]
fn regression_huge_repeat_count_is_not_an_overflow() {
    let created = ts(ymd(2000, 1, 1));
    for period in [
        "R1024819114823848/P1D",
        "R9223372036854775807/PT1S",
        "R18446744073709551615/P1D",
    ] {
        let timer = json!({"period": period});
        let r = std::panic::catch_unwind(move || match compile_timer(&timer, created) {
            Ok(TimerPlan::Scheduled(s)) => s.preview(created, 3).len(),
            _ => 0,
        });
        assert!(r.is_ok(), "{period}: compile_timer/preview panicked");
    }
}

/// `format_time` panicked inside chrono ("Local time out of range for `NaiveDateTime`") for an
/// instant the schedule itself returned: intervals have no lower year bound, so preview from
/// `DateTime::MIN_UTC` returns times there, and a zone west of UTC cannot show them. Found by
/// `robust_format_time_of_returned_times`.
#[test]
fn regression_format_time_at_chrono_limits_does_not_panic() {
    let s = Schedule::from_json(&json!({"intervals": ["1s"], "timeZone": "America/Havana"}))
        .expect("parses");
    let r = std::panic::catch_unwind(move || {
        let mut shown = Vec::new();
        for t in s.preview(DateTime::<Utc>::MIN_UTC, 2) {
            shown.push(s.format_time(t));
        }
        shown.push(s.format_time(DateTime::<Utc>::MIN_UTC));
        shown.push(s.format_time(DateTime::<Utc>::MAX_UTC));
        shown
    });
    assert!(r.is_ok(), "format_time panicked");
}
