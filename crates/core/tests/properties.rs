//! Property tests for the schedule spec engine (BRIEF §2.2).
//!
//! * Invariants of `preview`/`next_after` on random valid specs (cron, calendars, intervals,
//!   excludes, bounds, zones with odd DST rules, every DST policy), the canonical JSON round trip,
//!   `fire_after` jitter bounds and `format_time`.
//! * Differential tests against croner (the reference engine named in the brief) on the cron
//!   syntax both engines read the same way: standard 5/6 fields in UTC and New York (away from
//!   offset changes), `L`/`W`/`#`, DOM-AND-DOW (`temporal` dialect, `+`), quartz and eventbridge.
//! * Oracles built from croner's field matcher: calendars ∪ intervals − excludes within bounds
//!   (UTC), and every DST gap/overlap policy near real offset changes (wall-clock oracle).
//! * Robustness: random bytes, strings, JSON trees, fuzzed specs, cron and calendar fields,
//!   durations and timers give `Ok` or `Err`, never a panic or a hang, and whatever parses
//!   previews within 50 ms; valid specs queried from any instant chrono can hold.
//! * Never-firing specs yield no times, quickly.
//!
//! Every run is reproducible (`sundial_testkit::proptest_config`): one fixed seed unless
//! `SUNDIAL_PROPTEST_SEED` names another, printed with any failure, and the seeds of cases found
//! earlier kept in `proptest-regressions/properties.txt` and replayed first. When a property finds
//! an engine bug, the shrunk input is also added as a plain `#[test]` regression at the end of the
//! file, so it keeps testing the bug after the strategies change.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::str::FromStr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Datelike, FixedOffset, Offset, SecondsFormat, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Map, Value};
use sundial_core::duration::Duration;
use sundial_core::spec::Schedule;
use sundial_core::timer::{compile_preview_request, compile_timer, TimerPlan};

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// The brief's "a spec that can never fire yields no times, quickly", and the robustness bound
/// for anything that parses. Debug build, so 50 ms.
const FAST: StdDuration = StdDuration::from_millis(50);
/// A call that has not returned after this long is treated as unbounded work.
const HANG: StdDuration = StdDuration::from_secs(10);

fn cfg(cases: u32) -> ProptestConfig {
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

fn ts(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).expect("timestamp in range")
}

fn ymd(y: i32, m: u32, d: u32) -> i64 {
    Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap().timestamp()
}

fn from_min() -> i64 {
    ymd(2000, 1, 1)
}
fn from_max() -> i64 {
    ymd(2100, 1, 1) - 1
}
/// Nothing at or after this instant is compared: Sundial's year range ends with 2100.
fn year_2101() -> DateTime<Utc> {
    ts(ymd(2101, 1, 1))
}

fn rfc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn zone(name: &str) -> Tz {
    Tz::from_str(name).expect("known zone")
}

fn offset_at(tz: Tz, secs: i64) -> i32 {
    tz.offset_from_utc_datetime(&ts(secs).naive_utc())
        .fix()
        .local_minus_utc()
}

/// Every UTC offset change of `tz` in `year`, as the first second of the new offset.
fn transitions_in_year(tz: Tz, year: i32) -> Vec<i64> {
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
fn guarded<F>(f: F) -> Result<(), TestCaseError>
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
fn cpu_timed<T>(mut f: impl FnMut() -> T) -> (T, StdDuration) {
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
fn timed_preview(s: &Schedule, from: DateTime<Utc>, n: usize) -> (Vec<DateTime<Utc>>, StdDuration) {
    cpu_timed(|| s.preview(from, n))
}

/// Any schedule that parsed must preview 3 times within [`FAST`].
fn check_fast_preview(s: &Schedule, from: DateTime<Utc>, what: &str) -> Result<(), String> {
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

// ---------------------------------------------------------------------------------------------
// Cron field generators (valid syntax)
// ---------------------------------------------------------------------------------------------

const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Havana",
    "Pacific/Apia",
];
const GAPS: &[&str] = &["skip", "shift", "transition", "auto"];
const OVERLAPS: &[&str] = &["both", "first", "second", "auto"];
const DIALECTS: &[&str] = &["standard", "temporal", "quartz", "eventbridge"];
const MONTHS: &[&str] = &[
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAYS: &[&str] = &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

#[derive(Clone, Copy, Debug)]
struct Field {
    min: u32,
    max: u32,
    names: &'static [&'static str],
    name_base: u32,
}

const SECOND: Field = Field {
    min: 0,
    max: 59,
    names: &[],
    name_base: 0,
};
const MINUTE: Field = Field {
    min: 0,
    max: 59,
    names: &[],
    name_base: 0,
};
const HOUR: Field = Field {
    min: 0,
    max: 23,
    names: &[],
    name_base: 0,
};
const DOM: Field = Field {
    min: 1,
    max: 31,
    names: &[],
    name_base: 0,
};
const MONTH: Field = Field {
    min: 1,
    max: 12,
    names: MONTHS,
    name_base: 1,
};
/// Cron day of week: 0-7, 0 and 7 = Sunday.
const DOW: Field = Field {
    min: 0,
    max: 7,
    names: DAYS,
    name_base: 0,
};
/// Calendar day of week: 0-6.
const CAL_DOW: Field = Field {
    min: 0,
    max: 6,
    names: DAYS,
    name_base: 0,
};
const YEAR: Field = Field {
    min: 2000,
    max: 2100,
    names: &[],
    name_base: 0,
};

fn step_max(f: Field) -> u32 {
    (f.max - f.min).max(1)
}

fn name_or_num(f: Field, v: u32, use_name: bool, range_end: bool) -> String {
    if use_name {
        let i = v.wrapping_sub(f.name_base) as usize;
        // "X-SUN" is read as 7 by croner and as 0 by Vixie: never put SUN at a range end.
        let sun_end = range_end && f.names.first() == Some(&"SUN") && v == 0;
        if i < f.names.len() && !sun_end {
            return f.names[i].to_string();
        }
    }
    v.to_string()
}

/// One list item: `v`, `a-b`, `a-b/s` (never `N/s`: croner rejects it, peers disagree on it).
fn item(f: Field, names: bool) -> BoxedStrategy<String> {
    let n = names && !f.names.is_empty();
    let single =
        (f.min..=f.max, any::<bool>()).prop_map(move |(v, nm)| name_or_num(f, v, n && nm, false));
    let range = (f.min..=f.max, f.min..=f.max, any::<bool>(), any::<bool>()).prop_map(
        move |(a, b, na, nb)| {
            let (a, b) = (a.min(b), a.max(b));
            format!(
                "{}-{}",
                name_or_num(f, a, n && na, false),
                name_or_num(f, b, n && nb, true)
            )
        },
    );
    let stepped = (f.min..=f.max, f.min..=f.max, 1..=step_max(f)).prop_map(|(a, b, s)| {
        let (a, b) = (a.min(b), a.max(b));
        format!("{a}-{b}/{s}")
    });
    prop_oneof![3 => single, 2 => range, 1 => stepped].boxed()
}

/// A comma list of 1-3 items (a restricted field).
fn restricted(f: Field, names: bool) -> BoxedStrategy<String> {
    vec(item(f, names), 1..=3).prop_map(|v| v.join(",")).boxed()
}

fn star_step(f: Field) -> BoxedStrategy<String> {
    (1..=step_max(f)).prop_map(|s| format!("*/{s}")).boxed()
}

fn field(f: Field, names: bool, allow_star_step: bool) -> BoxedStrategy<String> {
    if allow_star_step {
        prop_oneof![2 => Just("*".to_string()), 1 => star_step(f), 4 => restricted(f, names)]
            .boxed()
    } else {
        prop_oneof![2 => Just("*".to_string()), 4 => restricted(f, names)].boxed()
    }
}

// ---------------------------------------------------------------------------------------------
// Durations
// ---------------------------------------------------------------------------------------------

fn go_dur(secs: u64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (v, u) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if v > 0 {
            out.push_str(&format!("{v}{u}"));
        }
    }
    out
}

fn iso_dur(secs: u64) -> String {
    if secs == 0 {
        return "PT0S".into();
    }
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let mut out = "P".to_string();
    if d > 0 {
        out.push_str(&format!("{d}D"));
    }
    if h + m + s > 0 {
        out.push('T');
        for (v, u) in [(h, "H"), (m, "M"), (s, "S")] {
            if v > 0 {
                out.push_str(&format!("{v}{u}"));
            }
        }
    }
    out
}

fn fmt_dur(secs: u64, style: u8) -> String {
    match style % 3 {
        0 => go_dur(secs),
        1 => format!("{secs}s"),
        _ => iso_dur(secs),
    }
}

fn every_secs() -> BoxedStrategy<u64> {
    prop_oneof![
        1u64..=300,
        (1u64..=1440).prop_map(|m| m * 60),
        (1u64..=72).prop_map(|h| h * 3600),
        (1u64..=40).prop_map(|d| d * 86400),
        1u64..=5_000_000,
    ]
    .boxed()
}

/// (every, offset) with 0 <= offset < every.
fn every_offset() -> BoxedStrategy<(u64, u64)> {
    (every_secs(), any::<u64>(), any::<bool>())
        .prop_map(|(e, r, zero)| (e, if zero { 0 } else { r % e }))
        .boxed()
}

fn interval() -> BoxedStrategy<Value> {
    (every_offset(), any::<u8>(), any::<u8>(), 0u8..4)
        .prop_map(|((e, o), se, so, form)| {
            let (es, os) = (fmt_dur(e, se), fmt_dur(o, so));
            match form {
                0 => json!({"every": es, "offset": os}),
                1 if o == 0 => json!({"every": es}),
                1 => json!({"every": es, "offset": os}),
                2 => json!(format!("{es}/{os}")),
                _ if o == 0 => json!(es),
                _ => json!(format!("{es}/{os}")),
            }
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Spec generators (property 1)
// ---------------------------------------------------------------------------------------------

/// A standard-dialect cron string: 5/6/7 fields, names, lists, ranges, steps, sometimes
/// `L`/`W`/`LW`/`L-n`/`nL`/`n#k`/`?`, or a macro.
fn std_cron() -> BoxedStrategy<String> {
    let dom = prop_oneof![
        10 => field(DOM, false, true),
        1 => Just("L".to_string()),
        1 => Just("LW".to_string()),
        1 => (1..=31u32).prop_map(|d| format!("{d}W")),
        1 => (1..=15u32).prop_map(|n| format!("L-{n}")),
        1 => Just("?".to_string()),
    ];
    let dow = prop_oneof![
        10 => field(DOW, true, true),
        1 => (0..=6u32).prop_map(|d| format!("{d}L")),
        1 => (0..=6u32, 1..=5u32, any::<bool>())
            .prop_map(|(d, k, nm)| if nm { format!("{}#{k}", DAYS[d as usize]) } else { format!("{d}#{k}") }),
        1 => Just("?".to_string()),
    ];
    let five = (
        field(MINUTE, false, true),
        field(HOUR, false, true),
        dom,
        field(MONTH, true, true),
        dow,
    )
        .prop_map(|(m, h, d, mo, w)| {
            // Both day fields "?" is a Quartz error and means nothing useful: keep one.
            let w = if d == "?" && w == "?" {
                "*".to_string()
            } else {
                w
            };
            format!("{m} {h} {d} {mo} {w}")
        })
        .boxed();
    let six = (field(SECOND, false, true), five.clone()).prop_map(|(s, f)| format!("{s} {f}"));
    let seven = (
        field(SECOND, false, true),
        five.clone(),
        field(YEAR, false, false),
    )
        .prop_map(|(s, f, y)| format!("{s} {f} {y}"));
    let macros = select(vec![
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@hourly",
    ])
    .prop_map(str::to_string);
    let every = every_offset().prop_map(|(e, o)| {
        if o == 0 {
            format!("@every {}", go_dur(e))
        } else {
            format!("@every {}/{}", go_dur(e), go_dur(o))
        }
    });
    prop_oneof![8 => five, 3 => six, 1 => seven, 1 => macros, 1 => every].boxed()
}

/// Cron strings that fire in and around the small hours, where DST gaps and overlaps live.
fn dst_cron() -> BoxedStrategy<String> {
    let s = select(vec!["", "", "0 ", "30 ", "*/20 "]);
    let m = select(vec![
        "0", "30", "15,45", "*/15", "*/30", "*", "0-59/20", "59", "1",
    ]);
    let h = select(vec![
        "*", "0", "1", "2", "3", "0-3", "1,2", "2-3", "*/2", "23", "0,12", "22-23", "1-2",
    ]);
    let w = select(vec!["*", "*", "*", "SUN", "0,6"]);
    (s, m, h, w)
        .prop_map(|(s, m, h, w)| format!("{s}{m} {h} * * {w}"))
        .boxed()
}

fn range_obj(f: Field) -> BoxedStrategy<Value> {
    (f.min..=f.max, f.min..=f.max, 1..=step_max(f))
        .prop_map(|(a, b, s)| json!({"start": a.min(b), "end": a.max(b), "step": s}))
        .boxed()
}

fn cal_value(f: Field, names: bool) -> BoxedStrategy<Value> {
    prop_oneof![
        4 => field(f, names, true).prop_map(Value::String),
        1 => vec(range_obj(f), 1..=3).prop_map(Value::Array),
    ]
    .boxed()
}

fn calendar() -> BoxedStrategy<Value> {
    let general = (
        weighted(0.3, cal_value(SECOND, false)),
        weighted(0.5, cal_value(MINUTE, false)),
        weighted(0.5, cal_value(HOUR, false)),
        weighted(0.4, cal_value(DOM, false)),
        weighted(0.4, cal_value(MONTH, true)),
        weighted(0.2, cal_value(YEAR, false)),
        weighted(0.4, cal_value(CAL_DOW, true)),
        weighted(0.2, "[a-z ]{0,12}"),
    )
        .prop_map(|(s, mi, h, d, mo, y, w, c)| {
            let mut m = Map::new();
            for (k, v) in [
                ("second", s),
                ("minute", mi),
                ("hour", h),
                ("dayOfMonth", d),
                ("month", mo),
                ("year", y),
                ("dayOfWeek", w),
                ("comment", c.map(Value::String)),
            ] {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            }
            Value::Object(m)
        });
    let small_hours = (
        select(vec!["0", "1", "2", "3", "1-3", "*", "0,2"]),
        select(vec!["0", "30", "*/15", "45"]),
    )
        .prop_map(|(h, m)| json!({"hour": h, "minute": m}));
    prop_oneof![4 => general, 1 => small_hours].boxed()
}

#[derive(Debug, Clone)]
struct FromChoice {
    uniform: i64,
    millis: Option<u32>,
    near_dst: bool,
    year: i32,
    pick: usize,
    delta: i64,
}

fn from_choice() -> BoxedStrategy<FromChoice> {
    (
        from_min()..=from_max(),
        weighted(0.2, 1u32..1000),
        any::<bool>(),
        prop_oneof![2000i32..=2099, 2009i32..=2022],
        any::<usize>(),
        -6 * 3600i64..=6 * 3600,
    )
        .prop_map(
            |(uniform, millis, near_dst, year, pick, delta)| FromChoice {
                uniform,
                millis,
                near_dst,
                year,
                pick,
                delta,
            },
        )
        .boxed()
}

/// Half of the time, a `from` within 6 h of one of the zone's offset changes.
fn resolve_from(fc: &FromChoice, tz: Tz) -> DateTime<Utc> {
    let mut secs = fc.uniform;
    if fc.near_dst {
        let tr = transitions_in_year(tz, fc.year);
        if !tr.is_empty() {
            secs = (tr[fc.pick % tr.len()] + fc.delta).clamp(from_min(), from_max());
        }
    }
    DateTime::from_timestamp(secs, fc.millis.unwrap_or(0) * 1_000_000).expect("in range")
}

#[derive(Debug, Clone)]
struct Parts {
    crons: Vec<String>,
    cron_single_string: bool,
    /// (use "CRON_TZ=" rather than "TZ=", zone); applied only to a lone cron without timeZone.
    cron_tz: Option<(bool, &'static str)>,
    calendars: Vec<Value>,
    intervals: Vec<Value>,
    exclude: Vec<Value>,
    /// startTime / endTime as offsets in seconds from `from`.
    start: Option<i64>,
    end: Option<i64>,
    bound_style: u8,
    jitter: Option<&'static str>,
    zone: Option<&'static str>,
    dialect: Option<&'static str>,
    dst: Option<(Option<&'static str>, Option<&'static str>)>,
    from: FromChoice,
}

/// Zones with offset changes in 2000-2099 (Apia only 2010-2021, including the 2011 date-line jump).
const DST_ZONES: &[&str] = &[
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "America/Havana",
    "Pacific/Apia",
];

/// Mixes rich specs (unions of several sources) with single-source specs in a DST zone whose
/// `from` lies near an offset change, where policies make a difference.
fn parts() -> BoxedStrategy<Parts> {
    prop_oneof![3 => rich_parts(), 2 => focused_parts()].boxed()
}

fn focused_parts() -> BoxedStrategy<Parts> {
    let source = prop_oneof![
        3 => dst_cron().prop_map(|c| (vec![c], Vec::new())),
        1 => calendar().prop_map(|k| (Vec::new(), vec![k])),
        1 => std_cron().prop_map(|c| (vec![c], Vec::new())),
    ];
    let from = (from_choice(), 2009i32..=2022).prop_map(|(mut f, y)| {
        f.near_dst = true;
        f.year = y;
        f.delta = f.delta.clamp(-6 * 3600, 2 * 3600);
        f
    });
    (
        source,
        select(DST_ZONES),
        weighted(
            0.85,
            (weighted(0.9, select(GAPS)), weighted(0.9, select(OVERLAPS))),
        ),
        weighted(0.2, select(DIALECTS)),
        weighted(0.15, (-2 * 86400i64..=2 * 86400, 0i64..=3 * 86400)),
        from,
    )
        .prop_map(
            |((crons, calendars), zone, dst, dialect, bounds, from)| Parts {
                crons,
                cron_single_string: false,
                cron_tz: None,
                calendars,
                intervals: Vec::new(),
                exclude: Vec::new(),
                start: bounds.map(|b| b.0),
                end: bounds.map(|b| b.0 + b.1),
                bound_style: 0,
                jitter: None,
                zone: Some(zone),
                dialect,
                dst,
                from,
            },
        )
        .boxed()
}

fn rich_parts() -> BoxedStrategy<Parts> {
    let cron_any = prop_oneof![3 => std_cron(), 1 => dst_cron()];
    let sources = (
        vec(cron_any, 0..=2),
        vec(calendar(), 0..=2),
        vec(interval(), 0..=1),
    )
        .prop_filter(
            "a spec needs a cron, a calendar or an interval",
            |(c, k, i)| !(c.is_empty() && k.is_empty() && i.is_empty()),
        );
    let bounds = (
        weighted(0.25, -40 * 86400i64..=40 * 86400),
        weighted(0.25, 0i64..=400 * 86400),
        any::<u8>(),
    )
        .prop_map(|(start, span, style)| match (start, span) {
            (Some(s), Some(sp)) => (Some(s), Some(s + sp), style),
            (None, Some(sp)) => (None, Some(sp - 10 * 86400), style),
            (s, None) => (s, None, style),
        });
    let extras = (
        any::<bool>(),
        weighted(0.15, (any::<bool>(), select(ZONES))),
        prop_oneof![3 => Just(Vec::new()), 1 => vec(calendar(), 1..=2)],
        bounds,
        weighted(0.2, select(vec!["30s", "1m", "0s", "PT10S", "2h"])),
        weighted(0.8, select(ZONES)),
        weighted(0.3, select(DIALECTS)),
        weighted(
            0.6,
            (weighted(0.8, select(GAPS)), weighted(0.8, select(OVERLAPS))),
        ),
    );
    (sources, extras, from_choice())
        .prop_map(
            |(
                (crons, calendars, intervals),
                (single, cron_tz, exclude, bounds, jitter, zone, dialect, dst),
                from,
            )| {
                Parts {
                    crons,
                    cron_single_string: single,
                    cron_tz,
                    calendars,
                    intervals,
                    exclude,
                    start: bounds.0,
                    end: bounds.1,
                    bound_style: bounds.2,
                    jitter,
                    zone,
                    dialect,
                    dst,
                    from,
                }
            },
        )
        .boxed()
}

impl Parts {
    fn prefix_applies(&self) -> bool {
        self.cron_tz.is_some() && self.crons.len() == 1 && self.zone.is_none()
    }

    fn effective_zone(&self) -> Tz {
        match (self.zone, self.cron_tz) {
            (Some(z), _) => zone(z),
            (None, Some((_, z))) if self.prefix_applies() => zone(z),
            _ => chrono_tz::UTC,
        }
    }

    fn from(&self) -> DateTime<Utc> {
        resolve_from(&self.from, self.effective_zone())
    }

    fn fmt_bound(&self, t: DateTime<Utc>) -> String {
        match self.bound_style % 4 {
            0 => t.to_rfc3339_opts(SecondsFormat::Secs, true),
            1 => t.to_rfc3339(),
            2 => t
                .with_timezone(&FixedOffset::east_opt(5 * 3600 + 1800).unwrap())
                .to_rfc3339(),
            _ => t.with_timezone(&self.effective_zone()).to_rfc3339(),
        }
    }

    /// The spec JSON plus its inclusive bounds.
    fn build(&self, from: DateTime<Utc>) -> (Value, Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
        let base = from.timestamp();
        let start = self
            .start
            .map(|o| ts((base + o).clamp(from_min(), from_max())));
        let end = self
            .end
            .map(|o| ts((base + o).clamp(from_min(), from_max())));
        let mut m = Map::new();
        if !self.crons.is_empty() {
            let crons: Vec<String> = if self.prefix_applies() {
                let (long, z) = self.cron_tz.unwrap();
                let p = if long { "CRON_TZ" } else { "TZ" };
                vec![format!("{p}={z} {}", self.crons[0])]
            } else {
                self.crons.clone()
            };
            if crons.len() == 1 && self.cron_single_string {
                m.insert("cron".into(), json!(crons[0]));
            } else {
                m.insert("cron".into(), json!(crons));
            }
        }
        if !self.calendars.is_empty() {
            m.insert("calendars".into(), json!(self.calendars));
        }
        if !self.intervals.is_empty() {
            m.insert("intervals".into(), json!(self.intervals));
        }
        if !self.exclude.is_empty() {
            m.insert("exclude".into(), json!(self.exclude));
        }
        if let Some(s) = start {
            m.insert("startTime".into(), json!(self.fmt_bound(s)));
        }
        if let Some(e) = end {
            m.insert("endTime".into(), json!(self.fmt_bound(e)));
        }
        if let Some(j) = self.jitter {
            m.insert("jitter".into(), json!(j));
        }
        if let Some(z) = self.zone {
            m.insert("timeZone".into(), json!(z));
        }
        // Other dialects read cron strings differently; this generator writes standard ones.
        // The engine also reads calendar dayOfWeek numbers in the quartz/eventbridge numbering
        // (1 = Sunday), so those dialects are only combined with calendars without dayOfWeek.
        let has_dow = self
            .calendars
            .iter()
            .chain(&self.exclude)
            .any(|c| c.get("dayOfWeek").is_some());
        match self.dialect {
            Some("quartz" | "eventbridge") if has_dow => {}
            Some(d) if self.crons.is_empty() || d == "standard" => {
                m.insert("dialect".into(), json!(d));
            }
            _ => {}
        }
        if let Some((gap, overlap)) = self.dst {
            let mut d = Map::new();
            if let Some(g) = gap {
                d.insert("gap".into(), json!(g));
            }
            if let Some(o) = overlap {
                d.insert("overlap".into(), json!(o));
            }
            m.insert("dst".into(), Value::Object(d));
        }
        (Value::Object(m), start, end)
    }
}

fn parse_valid(spec: &Value) -> Result<Schedule, TestCaseError> {
    Schedule::from_json(spec)
        .map_err(|e| TestCaseError::fail(format!("valid spec rejected: {e}\nspec: {spec}")))
}

// ---------------------------------------------------------------------------------------------
// Property 2: preview invariants, canonical round trip, fire_after, format_time
// ---------------------------------------------------------------------------------------------

fn check_preview(p: &Parts) -> Result<(), TestCaseError> {
    let from = p.from();
    let (spec, start, end) = p.build(from);
    let ctx = format!("spec: {spec}\nfrom: {}", rfc(from));
    let s = parse_valid(&spec)?;
    let t0 = Instant::now();
    let times = s.preview(from, 5);
    let took = t0.elapsed();
    if took > StdDuration::from_millis(250) {
        eprintln!("note: slow preview ({took:?}) for {ctx}");
    }
    prop_assert!(
        times.len() <= 5,
        "preview(5) returned {} times\n{ctx}",
        times.len()
    );
    let one = chrono::Duration::seconds(1);
    for (i, &t) in times.iter().enumerate() {
        prop_assert!(
            t > from,
            "time {} is not after from\ntimes: {times:?}\n{ctx}",
            rfc(t)
        );
        prop_assert_eq!(
            t.timestamp_subsec_nanos(),
            0,
            "nominal time {} has a fraction\n{}",
            rfc(t),
            ctx
        );
        if i > 0 {
            prop_assert!(
                times[i - 1] < t,
                "not strictly increasing: {times:?}\n{ctx}"
            );
        }
        if let Some(st) = start {
            prop_assert!(
                t >= st,
                "time {} before startTime {}\n{ctx}",
                rfc(t),
                rfc(st)
            );
        }
        if let Some(en) = end {
            prop_assert!(t <= en, "time {} after endTime {}\n{ctx}", rfc(t), rfc(en));
        }
        let back = s.next_after(t - one);
        prop_assert_eq!(
            back,
            Some(t),
            "next_after(t - 1s) != t for t = {}\ntimes: {:?}\n{}",
            rfc(t),
            times,
            ctx
        );
    }
    prop_assert_eq!(
        s.next_after(from),
        times.first().copied(),
        "next_after(from) != preview[0]\n{}",
        ctx
    );
    for w in times.windows(2) {
        prop_assert_eq!(
            s.next_after(w[0]),
            Some(w[1]),
            "next_after(preview[i]) != preview[i+1]\n{}",
            ctx
        );
        let mid = ts(w[0].timestamp() + (w[1].timestamp() - w[0].timestamp()) / 2);
        if mid > w[0] {
            prop_assert_eq!(
                s.next_after(mid),
                Some(w[1]),
                "next_after({}) (between two fire times) skipped ahead or back\ntimes: {:?}\n{}",
                rfc(mid),
                times,
                ctx
            );
        }
    }
    if times.len() < 5 {
        if let Some(&last) = times.last() {
            prop_assert_eq!(
                s.next_after(last),
                None,
                "preview stopped early at {}\n{}",
                rfc(last),
                ctx
            );
        }
    }
    Ok(())
}

fn check_round_trip(p: &Parts) -> Result<(), TestCaseError> {
    let from = p.from();
    let (spec, _, _) = p.build(from);
    let ctx = format!("spec: {spec}\nfrom: {}", rfc(from));
    let s = parse_valid(&spec)?;
    let canonical = s.to_canonical_json();
    let s2 = Schedule::from_json(&canonical).map_err(|e| {
        TestCaseError::fail(format!(
            "canonical JSON rejected: {e}\ncanonical: {canonical}\n{ctx}"
        ))
    })?;
    prop_assert_eq!(
        s2.preview(from, 5),
        s.preview(from, 5),
        "preview differs after canonical round trip\ncanonical: {}\n{}",
        canonical,
        ctx
    );
    let canonical2 = s2.to_canonical_json();
    prop_assert_eq!(
        &canonical2,
        &canonical,
        "canonical JSON is not a fixed point\n{}",
        ctx
    );
    prop_assert!(
        s2 == s,
        "from_json(to_canonical_json()) != self\ncanonical: {canonical}\n{ctx}"
    );
    prop_assert_eq!(
        s2.time_zone(),
        s.time_zone(),
        "zone lost in round trip\n{}",
        ctx
    );
    let s3 = Schedule::from_json_str(&canonical.to_string())
        .map_err(|e| TestCaseError::fail(format!("canonical JSON text rejected: {e}\n{ctx}")))?;
    prop_assert!(
        s3 == s2,
        "from_json_str(canonical) != from_json(canonical)\n{ctx}"
    );
    Ok(())
}

fn check_fire_and_format(p: &Parts) -> Result<(), TestCaseError> {
    let from = p.from();
    let (spec, _, _) = p.build(from);
    let ctx = format!("spec: {spec}\nfrom: {}", rfc(from));
    let s = parse_valid(&spec)?;
    let tz = p.effective_zone();
    prop_assert_eq!(s.time_zone(), tz, "time_zone()\n{}", ctx);
    let jitter_ms = p.jitter.map(|j| {
        Duration::parse(j)
            .expect("generator's jitter parses")
            .as_millis()
    });
    let fire = s.fire_after(from, "job-prop");
    prop_assert_eq!(
        fire.as_ref().map(|f| f.nominal),
        s.next_after(from),
        "fire_after nominal\n{}",
        ctx
    );
    if let Some(f) = fire {
        let again = s.fire_after(from, "job-prop").map(|f| f.actual);
        prop_assert_eq!(again, Some(f.actual), "jitter not deterministic\n{}", ctx);
        let d = (f.actual - f.nominal).num_milliseconds();
        prop_assert!(
            d >= 0,
            "actual {} before nominal {}\n{ctx}",
            rfc(f.actual),
            rfc(f.nominal)
        );
        match jitter_ms {
            None | Some(0) => prop_assert_eq!(
                f.actual,
                f.nominal,
                "no jitter but actual != nominal\n{}",
                ctx
            ),
            Some(j) => {
                let mut bound = j as i64;
                if let Some(n2) = s.next_after(f.nominal) {
                    bound = bound.min((n2 - f.nominal).num_milliseconds());
                }
                prop_assert!(
                    d < bound,
                    "jitter {d} ms not below min(jitter, gap) = {bound} ms\n{ctx}"
                );
            }
        }
    }
    for t in s.preview(from, 3) {
        let text = s.format_time(t);
        let parsed = DateTime::parse_from_rfc3339(&text)
            .map_err(|e| TestCaseError::fail(format!("format_time gave {text:?}: {e}\n{ctx}")))?;
        prop_assert_eq!(
            parsed.with_timezone(&Utc),
            t,
            "format_time({}) = {} is another instant\n{}",
            rfc(t),
            text,
            ctx
        );
        prop_assert_eq!(
            parsed.offset().local_minus_utc(),
            offset_at(tz, t.timestamp()),
            "format_time({}) = {} has the wrong offset for {}\n{}",
            rfc(t),
            text,
            tz.name(),
            ctx
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn preview_invariants(p in parts()) {
        check_preview(&p)?;
    }

    #[test]
    fn canonical_round_trip(p in parts()) {
        check_round_trip(&p)?;
    }

    #[test]
    fn fire_after_and_format_time(p in parts()) {
        check_fire_and_format(&p)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Property 3: differential against croner
// ---------------------------------------------------------------------------------------------

/// 5-field (sometimes 6 with seconds first) cron strings that croner and Sundial's standard dialect
/// read the same way: no `L W # ?`, no `N/step`, no wrap-around ranges; DOM/DOW both restricted
/// (OR in both engines); `*/n` in a day field only when the other day field is `*` (Vixie counts
/// `*/n` as unrestricted, croner as restricted — the two agree only then).
fn croner_cron() -> BoxedStrategy<String> {
    let days = prop_oneof![
        2 => Just(("*".to_string(), "*".to_string())),
        2 => restricted(DOW, true).prop_map(|w| ("*".to_string(), w)),
        2 => restricted(DOM, false).prop_map(|d| (d, "*".to_string())),
        3 => (restricted(DOM, false), restricted(DOW, true)),
        1 => star_step(DOM).prop_map(|d| (d, "*".to_string())),
        1 => star_step(DOW).prop_map(|w| ("*".to_string(), w)),
    ];
    (
        weighted(0.25, field(SECOND, false, true)),
        field(MINUTE, false, true),
        field(HOUR, false, true),
        days,
        field(MONTH, true, true),
    )
        .prop_map(|(s, m, h, (d, w), mo)| match s {
            Some(s) => format!("{s} {m} {h} {d} {mo} {w}"),
            None => format!("{m} {h} {d} {mo} {w}"),
        })
        .boxed()
}

/// Within 3 h of an offset change of `tz`.
fn near_transition(tz: Tz, t: DateTime<Utc>) -> bool {
    let s = t.timestamp();
    offset_at(tz, s - 3 * 3600) != offset_at(tz, s + 3 * 3600)
}

/// First instant at or after `t` that is not near a transition.
fn escape_transition(tz: Tz, t: DateTime<Utc>) -> DateTime<Utc> {
    let (mut lo, mut hi) = (t.timestamp(), t.timestamp() + 6 * 3600 + 1);
    // near(lo) holds, near(hi) does not (zones here have no two changes within 6 h).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if near_transition(tz, ts(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ts(hi)
}

/// Up to 5 successive fire times after `from`, skipping (identically for both engines) every time
/// within 3 h of a transition of `skip_zone`. Returns the times and the horizon up to which the
/// list is complete.
fn walk(
    next: &dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    from: DateTime<Utc>,
    skip_zone: Option<Tz>,
) -> (Vec<DateTime<Utc>>, DateTime<Utc>) {
    let limit = year_2101();
    let mut x = from;
    let mut out = Vec::new();
    for _ in 0..40 {
        if out.len() == 5 {
            return (out, x);
        }
        match next(x) {
            None => return (out, limit),
            Some(n) if n >= limit => return (out, limit),
            Some(n) => match skip_zone {
                Some(tz) if near_transition(tz, n) => {
                    x = escape_transition(tz, n) - chrono::Duration::seconds(1)
                }
                _ => {
                    out.push(n);
                    x = n;
                }
            },
        }
    }
    (out, x)
}

fn differential(cron: &str, from_secs: i64, tz: Option<Tz>) -> Result<(), TestCaseError> {
    let spec = match tz {
        None => json!({"cron": [cron]}),
        Some(z) => json!({"cron": [cron], "timeZone": z.name()}),
    };
    differential_spec(&spec, cron, from_secs, tz)
}

/// Sundial's `spec` against croner's reading of `cron` (the same schedule in croner syntax).
fn differential_spec(
    spec: &Value,
    cron: &str,
    from_secs: i64,
    tz: Option<Tz>,
) -> Result<(), TestCaseError> {
    let c = croner::Cron::from_str(cron).map_err(|e| {
        TestCaseError::fail(format!("generator bug: croner rejects {cron:?}: {e:?}"))
    })?;
    let s = parse_valid(spec)?;
    let mut from = ts(from_secs);
    if let Some(z) = tz {
        if near_transition(z, from) {
            from = escape_transition(z, from);
        }
    }
    let sundial_next = |x: DateTime<Utc>| s.next_after(x);
    // croner errors only when its search runs out (year 5000): no further time.
    let croner_next = |x: DateTime<Utc>| -> Option<DateTime<Utc>> {
        match tz {
            None => c.find_next_occurrence(&x, false).ok(),
            Some(z) => c
                .find_next_occurrence(&x.with_timezone(&z), false)
                .ok()
                .map(|d| d.with_timezone(&Utc)),
        }
    };
    let (a, ha) = walk(&sundial_next, from, tz);
    let (b, hb) = walk(&croner_next, from, tz);
    let horizon = ha.min(hb);
    let a: Vec<String> = a.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    let b: Vec<String> = b.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    prop_assert_eq!(
        a,
        b,
        "Sundial (left) vs croner (right) for {} (croner: {:?}) in {} from {} (compared up to {})",
        spec,
        cron,
        tz.map_or("UTC", |z| z.name()),
        rfc(from),
        rfc(horizon)
    );
    Ok(())
}

fn diff_from() -> std::ops::Range<i64> {
    from_min()..ymd(2091, 1, 1)
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_utc(cron in croner_cron(), from in diff_from()) {
        differential(&cron, from, None)?;
    }

    #[test]
    fn differential_croner_new_york_away_from_dst(cron in croner_cron(), from in diff_from()) {
        differential(&cron, from, Some(chrono_tz::America::New_York))?;
    }
}

/// Cron strings with croner's day extensions: `L`, `nW` in day-of-month, `nL`, `n#k` in
/// day-of-week (never both restricted with one of these, where OR/AND readings of `L` differ).
fn croner_cron_lw() -> BoxedStrategy<String> {
    // croner 3 has no `LW`.
    let special_dom = prop_oneof![
        Just("L".to_string()),
        (1..=31u32).prop_map(|d| format!("{d}W"))
    ];
    let special_dow = prop_oneof![
        (0..=6u32, any::<bool>()).prop_map(|(d, nm)| if nm {
            format!("{}L", DAYS[d as usize])
        } else {
            format!("{d}L")
        }),
        (0..=6u32, 1..=5u32, any::<bool>()).prop_map(|(d, k, nm)| if nm {
            format!("{}#{k}", DAYS[d as usize])
        } else {
            format!("{d}#{k}")
        }),
    ];
    let days = prop_oneof![
        special_dom.clone().prop_map(|d| (d, "*".to_string())),
        special_dow.clone().prop_map(|w| ("*".to_string(), w)),
        (special_dom, restricted(DOW, true)),
        (restricted(DOM, false), special_dow),
    ];
    (
        field(MINUTE, false, true),
        field(HOUR, false, true),
        days,
        field(MONTH, true, true),
    )
        .prop_map(|(m, h, (d, w), mo)| format!("{m} {h} {d} {mo} {w}"))
        .boxed()
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_utc_last_weekday_nth(cron in croner_cron_lw(), from in diff_from()) {
        differential(&cron, from, None)?;
    }
}

/// Day-of-month AND day-of-week: the `temporal` dialect, and a `+` prefix on day-of-week in the
/// standard dialect, against croner's `+` (AND) reading. Both day fields restricted.
fn and_cron() -> BoxedStrategy<(String, String)> {
    let dom = prop_oneof![3 => restricted(DOM, false), 1 => star_step(DOM)];
    let dow = prop_oneof![3 => restricted(DOW, true), 1 => star_step(DOW)];
    (
        field(MINUTE, false, true),
        field(HOUR, false, true),
        dom,
        field(MONTH, true, true),
        dow,
    )
        .prop_map(|(m, h, d, mo, w)| (format!("{m} {h} {d} {mo}"), w))
        .boxed()
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_dom_and_dow(
        (head, dow) in and_cron(),
        temporal in any::<bool>(),
        from in diff_from(),
    ) {
        let plus = format!("{head} +{dow}");
        let spec = if temporal {
            json!({"cron": [format!("{head} {dow}")], "dialect": "temporal"})
        } else {
            json!({"cron": [plus.clone()]})
        };
        differential_spec(&spec, &plus, from, None)?;
    }
}

/// A calendar as a croner 7-field pattern (`sec min hour dom month +dow year`, `+` = AND), with
/// the calendar defaults (second, minute, hour 0; the rest `*`).
fn calendar_as_croner(cal: &Value) -> String {
    let get = |k: &str, default: &str| match cal.get(k) {
        None => default.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(ranges)) => ranges
            .iter()
            .map(|r| format!("{}-{}/{}", r["start"], r["end"], r["step"]))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => panic!("generator wrote {other} for {k}"),
    };
    format!(
        "{} {} {} {} {} +{} {}",
        get("second", "0"),
        get("minute", "0"),
        get("hour", "0"),
        get("dayOfMonth", "*"),
        get("month", "*"),
        get("dayOfWeek", "*"),
        // A year step counts from 2000, the first year of Sundial's range (croner: from year 1).
        get("year", "*").replace("*/", "2000-2100/")
    )
}

#[derive(Debug, Clone)]
struct UnionCase {
    calendar: Option<Value>,
    interval: Option<(u64, u64, u8)>,
    exclude: Option<Value>,
    start: Option<i64>,
    end: Option<i64>,
    from: i64,
}

fn union_case() -> BoxedStrategy<UnionCase> {
    (
        weighted(0.8, calendar()),
        weighted(0.5, (every_offset(), any::<u8>())),
        weighted(0.4, calendar()),
        weighted(0.25, -40 * 86400i64..=40 * 86400),
        weighted(0.25, 0i64..=400 * 86400),
        diff_from(),
    )
        .prop_filter("needs a calendar or an interval", |c| {
            c.0.is_some() || c.1.is_some()
        })
        .prop_map(
            |(calendar, interval, exclude, start, span, from)| UnionCase {
                calendar,
                interval: interval.map(|((e, o), style)| (e, o, style)),
                exclude,
                start,
                end: span.map(|sp| start.unwrap_or(-10 * 86400) + sp),
                from,
            },
        )
        .boxed()
}

/// Oracle for a UTC union of one calendar (croner) and one epoch-aligned interval, minus one
/// exclude calendar (croner's matcher), within inclusive bounds, before 2101.
enum OracleStep {
    Found(DateTime<Utc>),
    End,
    GaveUp(DateTime<Utc>),
}

fn differential_union(case: &UnionCase) -> Result<(), TestCaseError> {
    let from = ts(case.from);
    let start = case.start.map(|o| ts(case.from + o));
    let end = case.end.map(|o| ts(case.from + o));
    let mut m = Map::new();
    let mut cal_cron = None;
    if let Some(cal) = &case.calendar {
        m.insert("calendars".into(), json!([cal]));
        let text = calendar_as_croner(cal);
        let c = croner::Cron::from_str(&text).map_err(|e| {
            TestCaseError::fail(format!("generator bug: croner rejects {text:?}: {e:?}"))
        })?;
        cal_cron = Some(c);
    }
    if let Some((e, o, style)) = case.interval {
        m.insert(
            "intervals".into(),
            json!([{"every": fmt_dur(e, style), "offset": fmt_dur(o, style / 3)}]),
        );
    }
    let mut excl_cron = None;
    if let Some(x) = &case.exclude {
        m.insert("exclude".into(), json!([x]));
        let text = calendar_as_croner(x);
        let c = croner::Cron::from_str(&text).map_err(|e| {
            TestCaseError::fail(format!("generator bug: croner rejects {text:?}: {e:?}"))
        })?;
        excl_cron = Some(c);
    }
    if let Some(t) = start {
        m.insert("startTime".into(), json!(rfc(t)));
    }
    if let Some(t) = end {
        m.insert("endTime".into(), json!(rfc(t)));
    }
    let spec = Value::Object(m);
    let s = parse_valid(&spec)?;
    let limit = year_2101();
    let one = chrono::Duration::seconds(1);
    let oracle_next = |after: DateTime<Utc>| -> OracleStep {
        let mut x = after;
        if let Some(st) = start {
            if x < st - one {
                x = st - one;
            }
        }
        for _ in 0..300 {
            let a = cal_cron
                .as_ref()
                .and_then(|c| c.find_next_occurrence(&x, false).ok());
            let b = case.interval.map(|(e, o, _)| {
                let (e, o) = (e as i64, o as i64);
                ts(((x.timestamp() - o).div_euclid(e) + 1) * e + o)
            });
            let t = match (a, b) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return OracleStep::End,
                },
            };
            if t >= limit || end.is_some_and(|e| t > e) {
                return OracleStep::End;
            }
            if excl_cron
                .as_ref()
                .is_some_and(|c| c.is_time_matching(&t).unwrap_or(false))
            {
                x = t;
                continue;
            }
            return OracleStep::Found(t);
        }
        OracleStep::GaveUp(x)
    };
    let mut want = Vec::new();
    let mut horizon = limit;
    let mut x = from;
    while want.len() < 5 {
        match oracle_next(x) {
            OracleStep::Found(t) => {
                want.push(t);
                x = t;
            }
            OracleStep::End => break,
            OracleStep::GaveUp(at) => {
                horizon = at;
                break;
            }
        }
    }
    let got = s.preview(from, 5);
    if got.len() == 5 {
        horizon = horizon.min(got[4]);
    }
    if want.len() == 5 {
        horizon = horizon.min(want[4]);
    }
    let got: Vec<String> = got.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    let want: Vec<String> = want
        .into_iter()
        .filter(|t| *t <= horizon)
        .map(rfc)
        .collect();
    prop_assert_eq!(
        got,
        want,
        "Sundial (left) vs oracle (right)\nspec: {}\nfrom: {} (compared up to {})",
        spec,
        rfc(from),
        rfc(horizon)
    );
    Ok(())
}

proptest! {
    #![proptest_config(cfg(2048))]

    /// Calendars (AND of all fields), epoch-aligned intervals, excludes and inclusive bounds in
    /// UTC against croner's field matcher plus interval arithmetic.
    #[test]
    fn differential_calendars_intervals_exclude_utc(case in union_case()) {
        differential_union(&case)?;
    }
}

/// Quartz-numbered day of week (1-7, 1 = SUN): numbers, names, ranges and stepped ranges, `nL`,
/// `n#k`. No `*/n` (croner's Quartz mode cannot read it) and no SUN name at a range end.
fn quartz_dow() -> BoxedStrategy<String> {
    let name = |v: u32, nm: bool, end: bool| {
        if nm && !(end && v == 1) {
            DAYS[(v - 1) as usize].to_string()
        } else {
            v.to_string()
        }
    };
    let item = prop_oneof![
        3 => (1..=7u32, any::<bool>()).prop_map(move |(v, nm)| name(v, nm, false)),
        2 => (1..=7u32, 1..=7u32, any::<bool>(), any::<bool>()).prop_map(move |(a, b, na, nb)| {
            let (a, b) = (a.min(b), a.max(b));
            format!("{}-{}", name(a, na, false), name(b, nb, true))
        }),
        1 => (1..=7u32, 1..=7u32, 1..=6u32).prop_map(|(a, b, st)| format!("{}-{}/{st}", a.min(b), a.max(b))),
    ];
    prop_oneof![
        4 => vec(item, 1..=3).prop_map(|v| v.join(",")),
        1 => (1..=7u32).prop_map(|d| format!("{d}L")),
        1 => (1..=7u32, 1..=5u32).prop_map(|(d, k)| format!("{d}#{k}")),
    ]
    .boxed()
}

/// (Sundial spec, croner pattern) pairs in the quartz and eventbridge dialects: exactly one of
/// day-of-month / day-of-week is `?`.
fn quartz_like() -> BoxedStrategy<(Value, String)> {
    let dom = prop_oneof![
        4 => field(DOM, false, true),
        1 => Just("L".to_string()),
        1 => (1..=31u32).prop_map(|d| format!("{d}W")),
    ];
    let days = prop_oneof![
        dom.prop_map(|d| (d, "?".to_string())),
        quartz_dow().prop_map(|w| ("?".to_string(), w)),
    ];
    (
        field(SECOND, false, true),
        field(MINUTE, false, true),
        field(HOUR, false, true),
        days,
        field(MONTH, true, true),
        any::<bool>(),
    )
        .prop_map(|(sec, m, h, (d, w), mo, eventbridge)| {
            let croner = format!(
                "{} {m} {h} {d} {mo} {w} *",
                if eventbridge { "0" } else { &sec }
            );
            let spec = if eventbridge {
                json!({"cron": [format!("{m} {h} {d} {mo} {w} *")], "dialect": "eventbridge"})
            } else {
                json!({"cron": [format!("{sec} {m} {h} {d} {mo} {w}")], "dialect": "quartz"})
            };
            (spec, croner)
        })
        .boxed()
}

fn differential_quartz(spec: &Value, cron: &str, from_secs: i64) -> Result<(), TestCaseError> {
    use croner::parser::{CronParser, Seconds};
    let c = CronParser::builder()
        .seconds(Seconds::Required)
        .alternative_weekdays(true)
        .build()
        .parse(cron)
        .map_err(|e| {
            TestCaseError::fail(format!("generator bug: croner rejects {cron:?}: {e:?}"))
        })?;
    let s = parse_valid(spec)?;
    let from = ts(from_secs);
    let sundial_next = |x: DateTime<Utc>| s.next_after(x);
    let croner_next = |x: DateTime<Utc>| c.find_next_occurrence(&x, false).ok();
    let (a, ha) = walk(&sundial_next, from, None);
    let (b, hb) = walk(&croner_next, from, None);
    let horizon = ha.min(hb);
    let a: Vec<String> = a.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    let b: Vec<String> = b.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    prop_assert_eq!(
        a,
        b,
        "Sundial (left) vs croner Quartz mode (right) for {} (croner: {:?}) from {}",
        spec,
        cron,
        rfc(from)
    );
    Ok(())
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_quartz_eventbridge_utc((spec, cron) in quartz_like(), from in diff_from()) {
        differential_quartz(&spec, &cron, from)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Property 3b: DST policies against a wall-clock oracle
// ---------------------------------------------------------------------------------------------

/// 5-field cron strings for the small hours, in the syntax croner shares.
fn dst_cron5() -> BoxedStrategy<String> {
    let m = select(vec![
        "0", "30", "15,45", "*/15", "*/30", "*", "0-59/20", "59", "1", "7,8", "10-12",
    ]);
    let h = select(vec![
        "*", "0", "1", "2", "3", "0-3", "1,2", "2-3", "*/2", "23", "0,12", "22-23", "1-2", "12",
    ]);
    let w = select(vec!["*", "*", "*", "SUN", "0,6"]);
    (m, h, w)
        .prop_map(|(m, h, w)| format!("{m} {h} * * {w}"))
        .boxed()
}

/// The instants a wall-clock time `n` stands for under the brief's DST policies (§2.2), with
/// `Auto` resolved by `fixed`.
fn oracle_instants(
    tz: Tz,
    n: chrono::NaiveDateTime,
    gap: &str,
    overlap: &str,
    fixed: bool,
) -> Vec<i64> {
    use chrono::LocalResult;
    match tz.from_local_datetime(&n) {
        LocalResult::Single(t) => vec![t.timestamp()],
        LocalResult::Ambiguous(a, b) => match (overlap, fixed) {
            ("both", _) | ("auto", false) => vec![a.timestamp(), b.timestamp()],
            ("first", _) | ("auto", true) => vec![a.timestamp()],
            _ => vec![b.timestamp()],
        },
        LocalResult::None => {
            let wall = n.and_utc().timestamp();
            // The change whose gap holds `n`: T + before <= n < T + after.
            let mut found = None;
            for y in [n.year() - 1, n.year(), n.year() + 1] {
                for t in transitions_in_year(tz, y) {
                    let (before, after) = (offset_at(tz, t - 1) as i64, offset_at(tz, t) as i64);
                    if after > before && t + before <= wall && wall < t + after {
                        found = Some((t, before));
                    }
                }
            }
            let Some((t, before)) = found else {
                return vec![];
            };
            match (gap, fixed) {
                ("shift", _) => vec![wall - before],
                ("transition", _) | ("auto", true) => vec![t],
                _ => vec![],
            }
        }
    }
}

fn dst_oracle(
    cron: &str,
    zone_name: &str,
    gap: &str,
    overlap: &str,
    from_choice: &FromChoice,
) -> Result<(), TestCaseError> {
    let tz = zone(zone_name);
    let c = croner::Cron::from_str(cron).map_err(|e| {
        TestCaseError::fail(format!("generator bug: croner rejects {cron:?}: {e:?}"))
    })?;
    let count = |f: &dyn Fn(u32) -> bool, n: u32| (0..n).filter(|v| f(*v)).count();
    let fixed = count(&|v| c.pattern.second_match(v).unwrap_or(false), 60) == 1
        && count(&|v| c.pattern.minute_match(v).unwrap_or(false), 60) == 1
        && count(&|v| c.pattern.hour_match(v).unwrap_or(false), 24) == 1;
    let spec =
        json!({"cron": [cron], "timeZone": zone_name, "dst": {"gap": gap, "overlap": overlap}});
    let s = parse_valid(&spec)?;
    let from = ts(resolve_from(from_choice, tz).timestamp());
    let got = s.preview(from, 5);
    let mut horizon = from.timestamp() + 86400;
    if got.len() == 5 {
        horizon = horizon.min(got[4].timestamp());
    }
    // Every wall-clock minute that could map into (from, horizon].
    let local_from =
        from.naive_utc() + chrono::Duration::seconds(offset_at(tz, from.timestamp()) as i64);
    let start = local_from.with_second(0).unwrap() - chrono::Duration::hours(26);
    let mut want = Vec::new();
    let mut n = start;
    let end = local_from + chrono::Duration::hours(50);
    while n <= end {
        let as_utc = Utc.from_utc_datetime(&n);
        if c.is_time_matching(&as_utc).unwrap_or(false) {
            want.extend(oracle_instants(tz, n, gap, overlap, fixed));
        }
        n += chrono::Duration::minutes(1);
    }
    want.sort_unstable();
    want.dedup();
    let want: Vec<String> = want
        .into_iter()
        .filter(|t| *t > from.timestamp() && *t <= horizon)
        .map(|t| {
            format!(
                "{} ({})",
                rfc(ts(t)),
                ts(t).with_timezone(&tz).format("%F %T %:z")
            )
        })
        .collect();
    let got: Vec<String> = got
        .into_iter()
        .filter(|t| t.timestamp() <= horizon)
        .map(|t| format!("{} ({})", rfc(t), t.with_timezone(&tz).format("%F %T %:z")))
        .collect();
    prop_assert_eq!(
        got,
        want,
        "Sundial (left) vs wall-clock oracle (right)\nspec: {}\nfrom: {} ({}), fixed-time: {}, compared up to {}",
        spec,
        rfc(from),
        from.with_timezone(&tz).format("%F %T %:z"),
        fixed,
        rfc(ts(horizon))
    );
    Ok(())
}

proptest! {
    #![proptest_config(cfg(1024))]

    /// Sundial's fire times near offset changes equal the brief's DST rules applied to plain
    /// wall-clock matching (croner's field matcher, no croner DST logic), for every gap/overlap
    /// policy pair.
    #[test]
    fn dst_policies_match_wall_clock_oracle(
        cron in prop_oneof![3 => dst_cron5(), 1 => croner_cron().prop_filter("5 fields", |c| c.split(' ').count() == 5)],
        zone_name in select(DST_ZONES),
        gap in select(GAPS),
        overlap in select(OVERLAPS),
        from in (from_choice(), 2009i32..=2022).prop_map(|(mut f, y)| {
            f.near_dst = true;
            f.year = y;
            f.millis = None;
            f.delta = f.delta.clamp(-6 * 3600, 2 * 3600);
            f
        }),
    ) {
        dst_oracle(&cron, zone_name, gap, overlap, &from)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Property 4: robustness
// ---------------------------------------------------------------------------------------------

const CRON_TOKENS: &[&str] = &[
    "*",
    "?",
    "L",
    "W",
    "LW",
    "#",
    "-",
    "/",
    ",",
    " ",
    " ",
    " ",
    "0",
    "1",
    "2",
    "5",
    "7",
    "8",
    "12",
    "13",
    "23",
    "24",
    "29",
    "30",
    "31",
    "32",
    "59",
    "60",
    "61",
    "99",
    "1999",
    "2000",
    "2100",
    "2101",
    "65535",
    "65536",
    "4294967296",
    "18446744073709551616",
    "-1",
    "MON",
    "mon",
    "FRI",
    "SUN",
    "SAT",
    "JAN",
    "FEB",
    "DEC",
    "XYZ",
    "L-3",
    "L-31",
    "L-0",
    "5L",
    "5#3",
    "5#6",
    "0#0",
    "15W",
    "32W",
    "0W",
    "*/0",
    "*/1",
    "*/61",
    "0/0",
    "1/1",
    "@yearly",
    "@daily",
    "@hourly",
    "@every",
    "@every 0s",
    "@every 1s/2s",
    "@every 14h/3h",
    "@reboot",
    "CRON_TZ=",
    "TZ=",
    "UTC",
    "America/New_York",
    "Mars/Olympus",
    "+",
    "\t",
    "\n",
    "é",
    "\u{0}",
    "cron(",
    ")",
    "rate(",
    "5 minutes",
    "1 minute",
    "0 days",
    "at(",
    "2030-01-01T00:00:00",
    "1-",
    "-5",
    "5-",
    "7-1",
    "6-1/0",
];
const CAL_TOKENS: &[&str] = &[
    "*",
    "-",
    "/",
    ",",
    " ",
    "0",
    "1",
    "7",
    "12",
    "31",
    "59",
    "60",
    "61",
    "2000",
    "2100",
    "2101",
    "1999",
    "99999999999",
    "-5",
    "MON",
    "Monday",
    "mo",
    "m",
    "JAN",
    "January",
    "Sept",
    "Feb",
    "xyz",
    "*/0",
    "1-0",
    "5-1/2",
    "L",
    "?",
    "é",
    "\u{0}",
    "18446744073709551616",
];
const DUR_TOKENS: &[&str] = &[
    "0",
    "1",
    "5",
    "10",
    "45",
    "90",
    "1.5",
    ".5",
    "5.",
    ".",
    "99999999999999999999",
    "18446744073709551615",
    "9223372036854775807",
    "-",
    "+",
    "d",
    "h",
    "m",
    "s",
    "ms",
    "us",
    "µs",
    "ns",
    "w",
    "y",
    "P",
    "T",
    "Y",
    "M",
    "W",
    "D",
    "H",
    "S",
    "R",
    "R4",
    "R0",
    "R-1",
    "/",
    "PT",
    "P1D",
    "PT2H30M",
    "1d2h0m2s",
    " ",
    ",",
    "e",
    "E5",
    "∞",
    "NaN",
    "inf",
    "0.0000001",
    "1e400",
];
const TIME_TOKENS: &[&str] = &[
    "2023-10-01 09:00:01",
    "2023-02-30 09:00:01",
    "2023-10-01T09:00:01Z",
    "2023-10-01T09:00:01+05:30",
    "9999-12-31 23:59:59",
    "0000-01-01 00:00:00",
    "2101-01-01T00:00:00Z",
    "1999-12-31T23:59:59Z",
    "2024-03-10 02:30:00",
    "2023-10-01",
    "09:00:01",
    "2023-13-01 00:00:00",
    "2023-10-01 24:00:00",
    "-2023-10-01 00:00:00",
    "now",
    "",
];
const ZONE_TOKENS: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Havana",
    "Pacific/Apia",
    "Etc/GMT+12",
    "EST5EDT",
    "utc",
    "Mars/Base",
    "",
    "America/New_York ",
    "../etc/passwd",
];
const SPEC_KEYS: &[&str] = &[
    "cron",
    "calendars",
    "intervals",
    "exclude",
    "startTime",
    "endTime",
    "jitter",
    "timeZone",
    "dialect",
    "dst",
    "gap",
    "overlap",
    "every",
    "offset",
    "second",
    "minute",
    "hour",
    "dayOfMonth",
    "month",
    "year",
    "dayOfWeek",
    "comment",
    "start",
    "end",
    "step",
    "schedule",
    "timer",
    "dueTime",
    "period",
    "ttl",
    "x",
];

fn soup(tokens: &'static [&'static str], max: usize) -> BoxedStrategy<String> {
    prop_oneof![
        4 => vec(select(tokens), 0..=max).prop_map(|v| v.concat()),
        1 => "\\PC{0,40}",
        1 => ".{0,20}",
    ]
    .boxed()
}

/// A cron-shaped string: 1-8 space-separated fields of token soup.
fn cron_fields_soup() -> BoxedStrategy<String> {
    let no_space: Vec<&'static str> = CRON_TOKENS
        .iter()
        .copied()
        .filter(|t| !t.contains(char::is_whitespace))
        .collect();
    let no_space: &'static [&'static str] = Box::leak(no_space.into_boxed_slice());
    vec(vec(select(no_space), 1..=4).prop_map(|v| v.concat()), 1..=8)
        .prop_map(|v| v.join(" "))
        .boxed()
}

fn any_cron_string() -> BoxedStrategy<String> {
    prop_oneof![soup(CRON_TOKENS, 24), cron_fields_soup()].boxed()
}

fn arb_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(Value::from),
        select(SPEC_KEYS).prop_map(|s| json!(s)),
        any_cron_string().prop_map(Value::String),
        soup(DUR_TOKENS, 8).prop_map(Value::String),
        select(TIME_TOKENS).prop_map(|s| json!(s)),
        select(ZONE_TOKENS).prop_map(|s| json!(s)),
        select(GAPS).prop_map(|s| json!(s)),
    ]
    .boxed()
}

fn arb_json() -> BoxedStrategy<Value> {
    arb_leaf()
        .prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                vec((prop_oneof![4 => select(SPEC_KEYS).prop_map(str::to_string), 1 => "\\PC{0,8}"], inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

fn fuzz_calendar_value() -> BoxedStrategy<Value> {
    let range = (
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        -5i64..2200,
        -5i64..2200,
        -2i64..40,
        0u8..4,
    )
        .prop_map(|(a, b, c, x, y, z, mode)| match mode {
            0 => json!({"start": a, "end": b, "step": c}),
            1 => json!({"start": x}),
            2 => json!({"start": x, "end": y}),
            _ => json!({"start": x, "end": y, "step": z}),
        });
    prop_oneof![
        5 => soup(CAL_TOKENS, 10).prop_map(Value::String),
        2 => vec(range, 0..4).prop_map(Value::Array),
        1 => arb_leaf(),
    ]
    .boxed()
}

fn fuzz_calendar() -> BoxedStrategy<Value> {
    let keys = vec![
        "second",
        "minute",
        "hour",
        "dayOfMonth",
        "month",
        "year",
        "dayOfWeek",
        "comment",
        "x",
    ];
    prop_oneof![
        6 => vec((select(keys), fuzz_calendar_value()), 0..5)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        1 => arb_json(),
    ]
    .boxed()
}

fn fuzz_interval() -> BoxedStrategy<Value> {
    prop_oneof![
        (soup(DUR_TOKENS, 6), soup(DUR_TOKENS, 6)).prop_map(|(a, b)| json!(format!("{a}/{b}"))),
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        (soup(DUR_TOKENS, 6), weighted(0.6, soup(DUR_TOKENS, 6))).prop_map(|(e, o)| match o {
            Some(o) => json!({"every": e, "offset": o}),
            None => json!({"every": e}),
        }),
        arb_leaf(),
    ]
    .boxed()
}

/// A schedule object whose keys are the real ones and whose values are fuzzed.
fn fuzz_spec() -> BoxedStrategy<Value> {
    (
        (
            weighted(0.6, prop_oneof![
                any_cron_string().prop_map(Value::String),
                vec(any_cron_string(), 0..3).prop_map(|v| json!(v)),
                arb_leaf(),
            ]),
            weighted(0.4, prop_oneof![4 => vec(fuzz_calendar(), 0..3).prop_map(Value::Array), 1 => arb_leaf()]),
            weighted(0.4, prop_oneof![4 => vec(fuzz_interval(), 0..3).prop_map(Value::Array), 1 => arb_leaf()]),
            weighted(0.3, prop_oneof![4 => vec(fuzz_calendar(), 0..3).prop_map(Value::Array), 1 => arb_leaf()]),
        ),
        (
            weighted(0.3, select(TIME_TOKENS)),
            weighted(0.3, select(TIME_TOKENS)),
            weighted(0.3, soup(DUR_TOKENS, 6)),
            weighted(0.5, select(ZONE_TOKENS)),
            weighted(0.4, select(vec!["standard", "temporal", "quartz", "eventbridge", "Standard", "vixie", ""])),
            weighted(0.4, (weighted(0.8, select(vec!["skip", "shift", "transition", "auto", "both", "x"])),
                           weighted(0.8, select(vec!["both", "first", "second", "auto", "skip", "x"])))),
            weighted(0.1, arb_json()),
        ),
    )
        .prop_map(|((cron, cals, ints, excl), (st, en, jit, tz, dia, dst, extra))| {
            let mut m = Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            };
            put("cron", cron);
            put("calendars", cals);
            put("intervals", ints);
            put("exclude", excl);
            put("startTime", st.map(|s| json!(s)));
            put("endTime", en.map(|s| json!(s)));
            put("jitter", jit.map(Value::String));
            put("timeZone", tz.map(|s| json!(s)));
            put("dialect", dia.map(|s| json!(s)));
            put(
                "dst",
                dst.map(|(g, o)| {
                    let mut d = Map::new();
                    if let Some(g) = g {
                        d.insert("gap".into(), json!(g));
                    }
                    if let Some(o) = o {
                        d.insert("overlap".into(), json!(o));
                    }
                    Value::Object(d)
                }),
            );
            put("unknownKey", extra);
            Value::Object(m)
        })
        .boxed()
}

fn fuzz_timer() -> BoxedStrategy<Value> {
    let due = prop_oneof![
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        select(TIME_TOKENS).prop_map(|s| json!(s)),
        arb_leaf(),
    ];
    let period = prop_oneof![
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        (
            prop_oneof![
                Just(String::new()),
                any::<i64>().prop_map(|n| n.to_string()),
                any::<u64>().prop_map(|n| n.to_string()),
                (0u32..6).prop_map(|n| n.to_string()),
                select(vec![
                    "9223372036854775807",
                    "9223372036854775808",
                    "18446744073709551615",
                    "4294967296",
                    "1024819114823848",
                ])
                .prop_map(str::to_string),
            ],
            soup(DUR_TOKENS, 6)
        )
            .prop_map(|(n, d)| json!(format!("R{n}/{d}"))),
        any_cron_string().prop_map(Value::String),
        select(vec![
            "external",
            "EXTERNAL",
            "0 0/5 * * * ?",
            "0 0 12 ? * MON-FRI",
            "R4/PT3S",
            "R/PT1H",
            "PT0S",
            "0s",
            ""
        ])
        .prop_map(|s| json!(s)),
        arb_leaf(),
    ];
    let ttl = prop_oneof![
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        select(TIME_TOKENS).prop_map(|s| json!(s)),
        arb_leaf(),
    ];
    prop_oneof![
        8 => (weighted(0.7, due), weighted(0.7, period), weighted(0.4, ttl)).prop_map(|(d, p, t)| {
            let mut m = Map::new();
            if let Some(d) = d { m.insert("dueTime".into(), d); }
            if let Some(p) = p { m.insert("period".into(), p); }
            if let Some(t) = t { m.insert("ttl".into(), t); }
            Value::Object(m)
        }),
        1 => arb_json(),
    ]
    .boxed()
}

fn instant() -> BoxedStrategy<DateTime<Utc>> {
    (from_min()..=from_max()).prop_map(ts).boxed()
}

/// Parse with `Schedule::from_json`, and check a successful parse previews quickly.
fn robust_spec(v: Value, from: DateTime<Utc>) -> Result<(), TestCaseError> {
    guarded(move || {
        if let Ok(s) = Schedule::from_json(&v) {
            check_fast_preview(&s, from, &format!("input: {v}"))?;
            let _ = s.to_canonical_json();
            let _ = s.fire_after(from, "job");
        }
        Ok(())
    })
}

fn robust_plan(
    plan: Result<TimerPlan, sundial_core::spec::SpecError>,
    from: DateTime<Utc>,
    what: String,
) -> Result<(), String> {
    if let Ok(TimerPlan::Scheduled(s)) = plan {
        check_fast_preview(&s, from, &what)?;
        let _ = s.to_canonical_json();
    }
    Ok(())
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn robust_random_bytes_as_json(bytes in vec(any::<u8>(), 0..256), from in instant()) {
        guarded(move || {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if let Ok(s) = Schedule::from_json_str(&text) {
                check_fast_preview(&s, from, &format!("input: {text:?}"))?;
            }
            Ok(())
        })?;
    }

    #[test]
    fn robust_random_strings_as_json(
        text in prop_oneof![
            "\\PC{0,200}",
            "[{}\\[\\]\":,0-9a-zA-Z *\\-/@#?]{0,120}",
            fuzz_spec().prop_map(|v| v.to_string()),
            (fuzz_spec(), any::<usize>(), any::<usize>()).prop_map(|(v, a, b)| {
                // a truncated or spliced document
                let s = v.to_string();
                let mut cut: String = s.chars().take(a % (s.chars().count() + 1)).collect();
                cut.extend(s.chars().skip(b % (s.chars().count() + 1)));
                cut
            }),
        ],
        from in instant(),
    ) {
        guarded(move || {
            if let Ok(s) = Schedule::from_json_str(&text) {
                check_fast_preview(&s, from, &format!("input: {text:?}"))?;
            }
            Ok(())
        })?;
    }

    #[test]
    fn robust_random_json_trees(v in prop_oneof![
        arb_json(),
        vec((select(SPEC_KEYS), arb_json()), 0..8)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
    ], from in instant()) {
        robust_spec(v, from)?;
    }

    #[test]
    fn robust_fuzzed_specs(v in fuzz_spec(), from in instant()) {
        robust_spec(v, from)?;
    }

    #[test]
    fn robust_cron_strings(
        cron in any_cron_string(),
        dialect in weighted(0.6, select(DIALECTS)),
        tz in weighted(0.3, select(ZONES)),
        from in instant(),
    ) {
        let mut m = Map::new();
        m.insert("cron".into(), json!([cron]));
        if let Some(d) = dialect { m.insert("dialect".into(), json!(d)); }
        if let Some(z) = tz { m.insert("timeZone".into(), json!(z)); }
        robust_spec(Value::Object(m), from)?;
    }

    #[test]
    fn robust_calendar_fields(
        fields in vec((select(vec!["second", "minute", "hour", "dayOfMonth", "month", "year", "dayOfWeek", "comment"]),
                       fuzz_calendar_value()), 1..4),
        as_exclude in any::<bool>(),
        tz in weighted(0.3, select(ZONES)),
        from in instant(),
    ) {
        let cal = Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let mut m = Map::new();
        if as_exclude {
            m.insert("cron".into(), json!(["* * * * *"]));
            m.insert("exclude".into(), json!([cal]));
        } else {
            m.insert("calendars".into(), json!([cal]));
        }
        if let Some(z) = tz { m.insert("timeZone".into(), json!(z)); }
        robust_spec(Value::Object(m), from)?;
    }

    #[test]
    fn robust_durations(text in soup(DUR_TOKENS, 10)) {
        guarded(move || {
            if let Ok(d) = Duration::parse(&text) {
                let shown = d.to_string();
                match Duration::parse(&shown) {
                    Ok(d2) if d2 == d => {}
                    other => return Err(format!("{text:?} parsed to {d} ({} ms) but its Display {shown:?} parses to {other:?}", d.as_millis())),
                }
                if Duration::from_millis(d.as_millis()) != d || d.as_secs() != d.as_millis() / 1000 {
                    return Err(format!("{text:?}: millis/secs accessors disagree"));
                }
            }
            Ok(())
        })?;
    }

    #[test]
    fn robust_timers(timer in fuzz_timer(), created in instant()) {
        guarded(move || {
            let plan = compile_timer(&timer, created);
            robust_plan(plan, created, format!("timer: {timer}"))
        })?;
    }

    #[test]
    fn robust_preview_requests(which in 0u8..3, timer in fuzz_timer(), spec in fuzz_spec(), created in instant()) {
        let req = match which {
            0 => json!({"timer": timer}),
            1 => json!({"schedule": spec}),
            _ => spec,
        };
        guarded(move || {
            let plan = compile_preview_request(&req, created);
            robust_plan(plan, created, format!("request: {req}"))
        })?;
    }
}

fn extreme_instant() -> BoxedStrategy<DateTime<Utc>> {
    let min = DateTime::<Utc>::MIN_UTC.timestamp();
    let max = DateTime::<Utc>::MAX_UTC.timestamp();
    prop_oneof![
        (min..=max).prop_map(ts),
        (0i64..=3600).prop_map(move |d| ts(min + d)),
        (0i64..=3600).prop_map(move |d| ts(max - d)),
        (0i64..=from_min()).prop_map(ts),
        (ymd(2099, 6, 1)..=ymd(2102, 1, 1)).prop_map(ts),
        (ymd(2102, 1, 1)..=ymd(3000, 1, 1)).prop_map(ts),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(cfg(2048))]

    /// Valid specs queried from any instant chrono can hold (year -262143 to 262142): no panic,
    /// bounded work, and the usual ordering.
    #[test]
    fn robust_valid_specs_from_extreme_instants(p in parts(), from in extreme_instant()) {
        let (spec, _, _) = p.build(ts(ymd(2030, 1, 1)));
        guarded(move || {
            let s = Schedule::from_json(&spec)
                .map_err(|e| format!("valid spec rejected: {e}; {spec}"))?;
            check_fast_preview(&s, from, &format!("spec: {spec}"))?;
            if let Some(f) = s.fire_after(from, "job") {
                if f.nominal <= from {
                    return Err(format!(
                        "fire_after({}) gave {}; spec: {spec}",
                        rfc(from),
                        rfc(f.nominal)
                    ));
                }
            }
            Ok(())
        })?;
    }

    /// `format_time` of any time a schedule returns, from any starting instant.
    #[test]
    fn robust_format_time_of_returned_times(p in parts(), from in extreme_instant()) {
        let (spec, _, _) = p.build(ts(ymd(2030, 1, 1)));
        guarded(move || {
            let s = Schedule::from_json(&spec)
                .map_err(|e| format!("valid spec rejected: {e}; {spec}"))?;
            for t in s.preview(from, 2) {
                let text = s.format_time(t);
                if DateTime::parse_from_rfc3339(&text).is_err() && (2000..=2100).contains(&t.year()) {
                    return Err(format!("format_time({}) = {text:?} is not RFC 3339", rfc(t)));
                }
            }
            Ok(())
        })?;
    }
}

proptest! {
    #![proptest_config(cfg(1024))]

    /// Seed-002 timers (BRIEF §2.2): `dueTime` (a duration from creation or a UTC date-time) with a
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

// ---------------------------------------------------------------------------------------------
// Property 5: never-firing specs are empty and fast
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Regressions found by the properties above (exact shrunk inputs)
// ---------------------------------------------------------------------------------------------

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
