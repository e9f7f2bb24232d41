//! Helpers shared by the properties: time arithmetic, zones' offset changes, and a guard that
//! turns a panic or unbounded work in the engine into a test failure.

use std::str::FromStr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Offset, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sundial_core::spec::Schedule;

/// docs/spec.md's "a spec that can never fire yields no times, quickly", and the robustness bound
/// for anything that parses. Debug build, so 50 ms.
pub(crate) const FAST: StdDuration = StdDuration::from_millis(50);
/// A call that has not returned after this long is treated as unbounded work.
pub(crate) const HANG: StdDuration = StdDuration::from_secs(10);

/// The configuration of every property here: `cases` cases drawn from the run's seed
/// (`sundial_testkit::proptest_config`), failures kept in and replayed from
/// `proptest-regressions/properties.txt`, and more room to shrink than proptest's default.
pub(crate) fn cfg(cases: u32) -> ProptestConfig {
    ProptestConfig {
        max_shrink_iters: 2048,
        max_shrink_time: 90_000,
        ..sundial_testkit::proptest_config(
            cases,
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/proptest-regressions/properties.txt"
            ),
        )
    }
}

pub(crate) fn ts(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).expect("timestamp in range")
}

pub(crate) fn ymd(y: i32, m: u32, d: u32) -> i64 {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap().timestamp()
}

pub(crate) fn from_min() -> i64 {
    ymd(2000, 1, 1)
}
pub(crate) fn from_max() -> i64 {
    ymd(2100, 1, 1) - 1
}
/// Nothing at or after this instant is compared: Sundial's year range ends with 2100.
pub(crate) fn year_2101() -> DateTime<Utc> {
    ts(ymd(2101, 1, 1))
}

pub(crate) fn rfc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

pub(crate) fn zone(name: &str) -> Tz {
    Tz::from_str(name).expect("known zone")
}

pub(crate) fn offset_at(tz: Tz, secs: i64) -> i32 {
    tz.offset_from_utc_datetime(&ts(secs).naive_utc())
        .fix()
        .local_minus_utc()
}

/// Every UTC offset change of `tz` in `year`, as the first second of the new offset.
pub(crate) fn transitions_in_year(tz: Tz, year: i32) -> Vec<i64> {
    let start = ymd(year, 1, 1);
    let end = ymd(year + 1, 1, 1);
    let step = 6 * 3600;
    let mut out = Vec::new();
    let mut t = start;
    let mut o = offset_at(tz, t);
    while t < end {
        let t2 = (t + step).min(end);
        let o2 = offset_at(tz, t2);
        if o2 != o {
            let (mut lo, mut hi) = (t, t2);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if offset_at(tz, mid) == o {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            out.push(hi);
        }
        t = t2;
        o = o2;
    }
    out
}

/// Runs `f` on its own thread: a panic or a hang becomes a test failure instead of killing or
/// blocking the run. A hung thread is leaked (there is no way to stop it).
pub(crate) fn guarded<F>(f: F) -> Result<(), TestCaseError>
where
    F: FnOnce() -> Result<(), String> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let r = f();
        let _ = tx.send(r);
    });
    match rx.recv_timeout(HANG) {
        Ok(Ok(())) => {
            let _ = handle.join();
            Ok(())
        }
        Ok(Err(msg)) => {
            let _ = handle.join();
            Err(TestCaseError::fail(msg))
        }
        Err(RecvTimeoutError::Timeout) => Err(TestCaseError::fail(format!(
            "did not return within {HANG:?} (unbounded work)"
        ))),
        Err(RecvTimeoutError::Disconnected) => {
            let _ = handle.join();
            Err(TestCaseError::fail(
                "panicked (see the panic message above)",
            ))
        }
    }
}

/// `f` timed by the CPU time of this thread, not the wall clock: the bounds here are about the
/// work a call does, and a machine shared with a build (CI, two cores) stretches wall time many
/// times over while the work stays the same. A slow first run is measured twice more and the
/// fastest counts.
pub(crate) fn cpu_timed<T>(mut f: impl FnMut() -> T) -> (T, StdDuration) {
    let mut best: Option<(T, StdDuration)> = None;
    for _ in 0..3 {
        let t0 = cpu_time::ThreadTime::now();
        let v = f();
        let e = t0.elapsed();
        let better = best.as_ref().is_none_or(|(_, b)| e < *b);
        if better {
            best = Some((v, e));
        }
        if e < FAST {
            break;
        }
    }
    best.expect("ran at least once")
}

/// `preview` timed by [`cpu_timed`].
pub(crate) fn timed_preview(
    s: &Schedule,
    from: DateTime<Utc>,
    n: usize,
) -> (Vec<DateTime<Utc>>, StdDuration) {
    cpu_timed(|| s.preview(from, n))
}

/// Any schedule that parsed must preview 3 times within [`FAST`].
pub(crate) fn check_fast_preview(
    s: &Schedule,
    from: DateTime<Utc>,
    what: &str,
) -> Result<(), String> {
    let (times, took) = timed_preview(s, from, 3);
    if took >= FAST {
        return Err(format!(
            "preview(from={}, 3) took {took:?} (limit {FAST:?}); {what}\ncanonical: {}",
            rfc(from),
            s.to_canonical_json()
        ));
    }
    for w in times.windows(2) {
        if w[0] >= w[1] {
            return Err(format!("preview not increasing: {times:?}; {what}"));
        }
    }
    if times.first().is_some_and(|&t| t <= from) {
        return Err(format!(
            "preview returned {times:?}, not after {}; {what}",
            rfc(from)
        ));
    }
    Ok(())
}
