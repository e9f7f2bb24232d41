//! docs/spec.md's checked examples: every `json` block right after a `<!-- check: calendar -->`
//! line is a business calendar (they form the set the examples resolve names in), and every one
//! after `<!-- check: example -->` is `{"spec", "from", "times"}`: the spec's first fire times after
//! `from`, formatted in its zone, must be `times` exactly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::spec::{BusinessCalendar, CalendarSet, Schedule};

/// `(marker, block text)` for each marked block, in order.
fn marked_blocks(page: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        let Some(marker) = line
            .trim()
            .strip_prefix("<!-- check: ")
            .and_then(|r| r.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert_eq!(
            fence.trim(),
            "```json",
            "a check marker is followed by a json block"
        );
        let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        out.push((marker.to_string(), body.join("\n")));
    }
    out
}

#[test]
fn spec_md_examples_hold() {
    let page = include_str!("../../../docs/spec.md");
    let blocks = marked_blocks(page);
    let mut calendars = CalendarSet::new();
    let mut checked = 0;
    for (marker, text) in &blocks {
        let value: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("docs/spec.md block is not JSON: {e}\n{text}"));
        match marker.as_str() {
            "calendar" => calendars.insert(
                BusinessCalendar::from_json(&value)
                    .unwrap_or_else(|e| panic!("calendar: {e}\n{text}")),
            ),
            "example" => {
                let schedule = Schedule::from_json_with(&value["spec"], &calendars)
                    .unwrap_or_else(|e| panic!("{e}\n{text}"));
                let from: DateTime<Utc> = value["from"]
                    .as_str()
                    .expect("from")
                    .parse()
                    .expect("RFC 3339 from");
                let want: Vec<&str> = value["times"]
                    .as_array()
                    .expect("times")
                    .iter()
                    .map(|t| t.as_str().expect("time"))
                    .collect();
                let got: Vec<String> = schedule
                    .preview(from, want.len())
                    .into_iter()
                    .map(|t| schedule.format_time(t))
                    .collect();
                assert_eq!(got, want, "docs/spec.md example:\n{text}");
                checked += 1;
            }
            other => panic!("unknown check marker {other:?}"),
        }
    }
    println!("docs/spec.md: {checked} examples checked");
    assert!(checked >= 6, "only {checked} checked examples found");
}
