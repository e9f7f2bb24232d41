//! `timer`s (docs/api.md) fire at their due time and every period after it; durations built from
//! known components parse to the right length.

use crate::generate::*;
use crate::support::*;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::json;
use sundial_core::duration::Duration;
use sundial_core::timer::{compile_timer, TimerPlan};

proptest! {
    #![proptest_config(cfg(1024))]

    /// `timer`s (docs/api.md): `dueTime` (a duration from creation or a UTC date-time) with a
    /// duration `period` or `R<n>/…` fires at the due time and every period after it, `n` times
    /// when given, never after creation + `ttl`.
    #[test]
    fn timers_fire_from_due_time_every_period(
        due in prop_oneof![Just(0u64), 1u64..=3600, 0u64..=40 * 86400],
        period in prop_oneof![1u64..=120, 1u64..=10 * 86400],
        runs in weighted(0.4, 1u64..=6),
        ttl in weighted(0.3, 1u64..=60 * 86400),
        styles in (0u8..4, any::<u8>(), any::<u8>()),
        created in (from_min()..=ymd(2090, 1, 1)).prop_map(ts),
    ) {
        let anchor = created.timestamp() + due as i64;
        let due_text = match styles.0 {
            3 => ts(anchor).format("%Y-%m-%d %H:%M:%S").to_string(),
            st => fmt_dur(due, st),
        };
        let period_text = match runs {
            Some(n) => format!("R{n}/{}", iso_dur(period)),
            None => fmt_dur(period, styles.1),
        };
        let mut timer = json!({"dueTime": due_text, "period": period_text});
        if let Some(l) = ttl {
            timer["ttl"] = json!(fmt_dur(l, styles.2));
        }
        let s = match compile_timer(&timer, created) {
            Ok(TimerPlan::Scheduled(s)) => s,
            other => {
                return Err(TestCaseError::fail(format!("timer {timer}: expected a schedule, got {other:?}")));
            }
        };
        let want: Vec<String> = (0..runs.unwrap_or(6).min(6) as i64)
            .map(|i| anchor + i * period as i64)
            .filter(|t| ttl.is_none_or(|l| *t <= created.timestamp() + l as i64))
            .map(|t| rfc(ts(t)))
            .collect();
        let got: Vec<String> = s.preview(created - chrono::Duration::seconds(1), 6).into_iter().map(rfc).collect();
        prop_assert_eq!(got, want, "timer {} created {}", timer, rfc(created));
    }
}

proptest! {
    #![proptest_config(cfg(512))]

    /// Issue 26 item 5: a timer created at any fraction of a second has exactly the times of one
    /// created at the start of that second (the creation truncated to the second, plus `dueTime`,
    /// every `period`, up to creation + `ttl` inclusive): no fire lost or added by the fraction.
    #[test]
    fn the_fraction_of_the_creation_second_changes_no_time(
        due in 0u64..=5,
        period in 1u64..=5,
        ttl in 0u64..=12,
        millis in 0u32..1000,
        created in (from_min()..=ymd(2090, 1, 1)).prop_map(ts),
    ) {
        let timer = json!({"dueTime": format!("{due}s"), "period": format!("{period}s"), "ttl": format!("{ttl}s")});
        let at_fraction = created + chrono::Duration::milliseconds(i64::from(millis));
        let times = |at: chrono::DateTime<chrono::Utc>| match compile_timer(&timer, at) {
            Ok(TimerPlan::Scheduled(s)) => s
                .preview(created - chrono::Duration::seconds(1), 20)
                .into_iter()
                .map(rfc)
                .collect::<Vec<_>>(),
            other => vec![format!("{other:?}")],
        };
        let want: Vec<String> = (0..20i64)
            .map(|i| created.timestamp() + due as i64 + i * period as i64)
            .filter(|t| *t <= created.timestamp() + ttl as i64)
            .map(|t| rfc(ts(t)))
            .collect();
        prop_assert_eq!(times(at_fraction), want.clone(), "timer {} created {}", timer, rfc(at_fraction));
        prop_assert_eq!(times(created), want);
    }
}

// Durations built from known components parse to the right length.
proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn durations_parse_to_their_components(
        d in 0u64..400, h in 0u64..100, m in 0u64..200, s in 0u64..100_000, ms in 0u64..1000,
        half_hour in any::<bool>(), zeros in any::<bool>(), style in 0u8..3,
    ) {
        let whole = ((d * 24 + h) * 60 + m) * 60 + s;
        let (text, expected_ms) = match style {
            0 => {
                // Go style with days; "1d2h0m2s" keeps zero components when `zeros`.
                let mut t = String::new();
                for (v, u) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
                    if v > 0 || zeros {
                        t.push_str(&format!("{v}{u}"));
                    }
                }
                if ms > 0 {
                    t.push_str(&format!("{ms}ms"));
                }
                if t.is_empty() {
                    t.push_str("0s");
                }
                (t, whole * 1000 + ms)
            }
            1 => {
                // fractional hours
                let t = if half_hour { format!("{h}.5h") } else { format!("{h}h") };
                (t, h * 3_600_000 + if half_hour { 1_800_000 } else { 0 })
            }
            _ => (iso_dur(whole), whole * 1000),
        };
        let parsed = Duration::parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?} rejected: {e}")))?;
        prop_assert_eq!(parsed.as_millis(), expected_ms, "{:?}", text);
        let shown = parsed.to_string();
        prop_assert_eq!(Duration::parse(&shown).ok(), Some(parsed), "Display {:?} of {:?} does not parse back", shown, text);
    }
}
