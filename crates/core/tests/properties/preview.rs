//! Property 2: preview invariants on random valid specs, the canonical JSON round trip,
//! `fire_after` jitter bounds and `format_time`.

use std::time::{Duration as StdDuration, Instant};

use crate::generate::*;
use crate::support::*;
use chrono::{DateTime, Utc};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use sundial_core::duration::Duration;
use sundial_core::spec::Schedule;

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
        let again = s.fire_after(from, "job-prop").map(|f| f.due);
        prop_assert_eq!(again, Some(f.due), "jitter not deterministic\n{}", ctx);
        let d = (f.due - f.nominal).num_milliseconds();
        prop_assert!(
            d >= 0,
            "actual {} before nominal {}\n{ctx}",
            rfc(f.due),
            rfc(f.nominal)
        );
        match jitter_ms {
            None | Some(0) => {
                prop_assert_eq!(f.due, f.nominal, "no jitter but actual != nominal\n{}", ctx)
            }
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
