//! The rollup histogram of per-job statistics (`sundial_core::stats`): merging is associative and
//! commutative (so hours and jobs merge in any order), merging is the same as recording every
//! value in one histogram, and a quantile is within the documented relative error of the exact one.

use proptest::prelude::*;
use sundial_core::stats::{LogHistogram, Rollup, RELATIVE_ERROR};

use crate::support::cfg;

fn histogram(values: &[u64]) -> LogHistogram {
    let mut h = LogHistogram::new();
    for v in values {
        h.record(*v);
    }
    h
}

fn rollup(values: &[u64], minutes: &[u32]) -> Rollup {
    let mut r = Rollup {
        duration: histogram(values),
        lag: histogram(&values.iter().map(|v| v / 3).collect::<Vec<_>>()),
        ..Rollup::default()
    };
    for (i, m) in minutes.iter().enumerate() {
        *r.minutes.entry(m % 60).or_insert(0) += 1;
        let state = ["Succeeded", "Terminated", "Cancelled", "Skipped"][i % 4];
        *r.states.entry(state.to_owned()).or_insert(0) += 1;
        r.retries += u64::from(*m % 3);
    }
    r
}

fn values() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(
        prop_oneof![0u64..100, 0u64..100_000, 0u64..10_000_000_000],
        0..200,
    )
}

proptest! {
    #![proptest_config(cfg(512))]

    #[test]
    fn rollup_merge_is_associative_and_commutative(
        a in values(), b in values(), c in values(),
        ma in prop::collection::vec(0u32..60, 0..20),
        mb in prop::collection::vec(0u32..60, 0..20),
        mc in prop::collection::vec(0u32..60, 0..20),
    ) {
        let (x, y, z) = (rollup(&a, &ma), rollup(&b, &mb), rollup(&c, &mc));
        let mut left = x.clone();
        left.merge(&y);
        left.merge(&z);
        let mut yz = y.clone();
        yz.merge(&z);
        let mut right = x.clone();
        right.merge(&yz);
        prop_assert_eq!(&left, &right);
        let mut swapped = z.clone();
        swapped.merge(&x);
        swapped.merge(&y);
        prop_assert_eq!(&left, &swapped);
        // Stored as counters and read back, nothing changes.
        prop_assert_eq!(Rollup::from_counters(&left.to_counters()), left);
    }

    #[test]
    fn merged_histograms_equal_one_histogram_of_all_values(a in values(), b in values()) {
        let mut merged = histogram(&a);
        merged.merge(&histogram(&b));
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        prop_assert_eq!(merged, histogram(&all));
    }

    #[test]
    fn quantile_error_is_bounded(mut all in prop::collection::vec(0u64..10_000_000_000, 1..400), q in 0.0f64..=1.0) {
        let h = histogram(&all);
        all.sort_unstable();
        let rank = ((q * all.len() as f64).ceil() as usize).clamp(1, all.len());
        let exact = all[rank - 1] as f64;
        let got = h.quantile(q).unwrap_or(f64::NAN);
        // Float rounding at a bucket's edge may cost a hair more than the bound.
        let bound = exact * (RELATIVE_ERROR + 1e-9) + 1e-9;
        prop_assert!((got - exact).abs() <= bound, "q {} exact {} got {} (bound {})", q, exact, got, bound);
    }
}

proptest! {
    #![proptest_config(cfg(256))]

    /// The ledger's range records (`sundial_core::ledger::record`): however the missed times of
    /// an every-`step` schedule arrive, in pieces and with gaps, the ranges hold each time once,
    /// in order, one range per unbroken run of times (the newest `MAX_FIRE_RANGES` of them).
    #[test]
    fn fire_ranges_are_compact_and_lose_nothing(
        step in 1i64..3600,
        present in prop::collection::vec(any::<bool>(), 1..400),
        piece in 1usize..50,
    ) {
        use chrono::{DateTime, Duration, Utc};
        use sundial_core::ledger::{range_of, record, RangeReason, MAX_FIRE_RANGES};
        let at = |i: usize| DateTime::<Utc>::UNIX_EPOCH + Duration::seconds(1_700_000_000 + step * i as i64);
        let times: Vec<DateTime<Utc>> = present.iter().enumerate().filter(|(_, p)| **p).map(|(i, _)| at(i)).collect();
        let mut ranges = Vec::new();
        for chunk in times.chunks(piece) {
            record(&mut ranges, RangeReason::Missed, chunk, |t| Some(t + Duration::seconds(step)));
        }
        let runs = present.split(|p| !*p).filter(|run| !run.is_empty()).count();
        // Past MAX_FIRE_RANGES the oldest ranges go: what is kept is exact.
        prop_assert_eq!(ranges.len(), runs.min(MAX_FIRE_RANGES));
        let kept_from = ranges.first().map_or(DateTime::<Utc>::MAX_UTC, |r| r.first);
        let kept = times.iter().filter(|t| **t >= kept_from).count();
        prop_assert_eq!(ranges.iter().map(|r| r.count).sum::<u64>(), kept as u64);
        for (i, p) in present.iter().enumerate() {
            prop_assert_eq!(range_of(&ranges, at(i)).is_some(), *p && at(i) >= kept_from);
        }
        prop_assert!(ranges.windows(2).all(|w| w[0].last < w[1].first));
    }
}
