//! RFC 5545 §3.8.5.3's recurrence examples (`tests/fixtures/rfc5545-rrule.jsonl`), evaluated by the
//! engine that schedules `rrule` entries, zone-less as the RFC lists them (wall-clock times).
//!
//! Run with `cargo test -p sundial-core --test rrule_rfc5545 -- --nocapture` to see the tally.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{NaiveDateTime, TimeDelta};
use serde_json::Value;
use sundial_core::spec::rrule_wall_times;

fn naive(text: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S")
        .unwrap_or_else(|e| panic!("fixture: bad time {text:?}: {e}"))
}

#[test]
fn rfc5545_examples() {
    let text = include_str!("fixtures/rfc5545-rrule.jsonl");
    let mut agreed = 0;
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("fixture: a JSON object per line");
        let id = v["id"].as_str().expect("id");
        let rule = v["rrule"].as_str().expect("rrule");
        let dtstart = naive(v["dtstart"].as_str().expect("dtstart"));
        let expected: Vec<NaiveDateTime> = v["expected"]
            .as_array()
            .expect("expected")
            .iter()
            .map(|t| naive(t.as_str().expect("time")))
            .collect();
        let got = rrule_wall_times(
            rule,
            dtstart,
            dtstart - TimeDelta::seconds(1),
            expected.len(),
        );
        match got {
            Ok(times) if times == expected => agreed += 1,
            other => failures.push(format!("{id} ({rule}): got {other:?}, want {expected:?}")),
        }
    }
    let total = agreed + failures.len();
    println!("RFC 5545 §3.8.5.3 examples: {agreed}/{total} agreed");
    for f in &failures {
        println!("  DISAGREEMENT {f}");
    }
    assert!(total >= 40, "fixture has {total} vectors");
    assert!(
        failures.is_empty(),
        "{} RFC 5545 examples disagree",
        failures.len()
    );
}
