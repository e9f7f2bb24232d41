//! End-to-end tests of `sundial spec preview`: they run the real binary and check its stdout,
//! stderr and exit code as a user or script would see them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use chrono::{DateTime, FixedOffset};
use serde_json::{json, Value};

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn sundial(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_sundial"))
        .args(args)
        .output()
        .expect("run sundial");
    Output {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

/// Runs `spec preview` with `flags` and `spec`, expects success and one JSON line, returns it parsed.
fn preview(flags: &[&str], spec: &str) -> Value {
    let mut args = vec!["spec", "preview"];
    args.extend_from_slice(flags);
    args.push(spec);
    let out = sundial(&args);
    assert_eq!(out.code, 0, "args {args:?}\nstderr: {}", out.stderr);
    assert_eq!(out.stderr, "");
    assert!(
        out.stdout.ends_with('\n') && out.stdout.matches('\n').count() == 1,
        "one line: {:?}",
        out.stdout
    );
    serde_json::from_str(&out.stdout).expect("stdout is JSON")
}

fn times(v: &Value) -> Vec<String> {
    v["times"]
        .as_array()
        .expect("times array")
        .iter()
        .map(|t| t.as_str().expect("string").to_string())
        .collect()
}

fn parse(t: &str) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(t).unwrap_or_else(|e| panic!("{t:?} is not RFC 3339: {e}"))
}

/// Runs `spec preview` expecting exit 2; returns stderr.
fn preview_fails(flags: &[&str], spec: &str) -> String {
    let mut args = vec!["spec", "preview"];
    args.extend_from_slice(flags);
    args.push(spec);
    let out = sundial(&args);
    assert_eq!(
        out.code, 2,
        "args {args:?}\nstdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.starts_with("error: ") && out.stderr.ends_with('\n'),
        "{:?}",
        out.stderr
    );
    out.stderr
}

const WEEKDAYS_NOON: &str = r#"{"cron":["0 12 * * MON-FRI"]}"#;

#[test]
fn cron_times_after_from() {
    let v = preview(
        &["--from", "2024-01-05T13:00:00Z", "--count", "3"],
        WEEKDAYS_NOON,
    );
    assert_eq!(
        times(&v),
        [
            "2024-01-08T12:00:00+00:00",
            "2024-01-09T12:00:00+00:00",
            "2024-01-10T12:00:00+00:00"
        ]
    );
    assert!(v["schedule"].is_object(), "canonical schedule: {v}");
    assert_eq!(
        v.as_object().unwrap().len(),
        2,
        "only times and schedule: {v}"
    );
}

#[test]
fn times_are_strictly_after_from() {
    let v = preview(
        &["--from", "2024-01-08T12:00:00Z", "--count", "1"],
        WEEKDAYS_NOON,
    );
    assert_eq!(times(&v), ["2024-01-09T12:00:00+00:00"]);
}

#[test]
fn from_accepts_any_offset() {
    let a = preview(
        &["--from", "2024-01-05T13:00:00Z", "--count", "3"],
        WEEKDAYS_NOON,
    );
    let b = preview(
        &["--from=2024-01-05T08:00:00-05:00", "--count=3"],
        WEEKDAYS_NOON,
    );
    assert_eq!(a, b);
}

#[test]
fn count_defaults_to_ten() {
    let v = preview(&["--from", "2024-01-05T13:00:00Z"], WEEKDAYS_NOON);
    let expected: Vec<String> = [8, 9, 10, 11, 12, 15, 16, 17, 18, 19]
        .iter()
        .map(|d| format!("2024-01-{d:02}T12:00:00+00:00"))
        .collect();
    assert_eq!(times(&v), expected);
}

#[test]
fn from_defaults_to_now() {
    let before = chrono::Utc::now();
    let v = preview(&[], r#"{"cron":["* * * * *"]}"#);
    let ts = times(&v);
    assert_eq!(ts.len(), 10);
    let first = parse(&ts[0]);
    assert!(
        first > before && first <= before + chrono::Duration::minutes(2),
        "{first} vs now {before}"
    );
}

#[test]
fn the_schedule_spec_may_be_wrapped() {
    let bare = preview(&["--from", "2024-01-05T13:00:00Z"], WEEKDAYS_NOON);
    let wrapped = preview(
        &["--from", "2024-01-05T13:00:00Z"],
        &json!({"schedule": {"cron": ["0 12 * * MON-FRI"]}}).to_string(),
    );
    assert_eq!(bare, wrapped);
}

#[test]
fn times_carry_the_zone_offset_across_dst() {
    // Spring forward in New York: 2024-03-10 02:00 EST becomes 03:00 EDT.
    let hourly = r#"{"cron":["0 * * * *"],"timeZone":"America/New_York"}"#;
    let v = preview(&["--from", "2024-03-10T05:00:00Z", "--count", "4"], hourly);
    assert_eq!(
        times(&v),
        [
            "2024-03-10T01:00:00-05:00",
            "2024-03-10T03:00:00-04:00",
            "2024-03-10T04:00:00-04:00",
            "2024-03-10T05:00:00-04:00"
        ]
    );

    // A fixed-time spec whose time is skipped fires at the transition (dst.gap "auto").
    let daily = r#"{"cron":["30 2 * * *"],"timeZone":"America/New_York"}"#;
    let v = preview(&["--from", "2024-03-09T00:00:00Z", "--count", "3"], daily);
    assert_eq!(
        times(&v),
        [
            "2024-03-09T02:30:00-05:00",
            "2024-03-10T03:00:00-04:00",
            "2024-03-11T02:30:00-04:00"
        ]
    );

    // Fall back, 2024-11-03: 01:30 happens twice; a fixed-time spec fires once, at the first (dst.overlap "auto").
    let daily = r#"{"cron":["30 1 * * *"],"timeZone":"America/New_York"}"#;
    let v = preview(&["--from", "2024-11-02T12:00:00Z", "--count", "2"], daily);
    assert_eq!(
        times(&v),
        ["2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"]
    );
}

#[test]
fn timer_with_repetitions_is_anchored_at_from() {
    let v = preview(
        &["--from", "2024-01-01T00:00:00Z"],
        r#"{"timer":{"dueTime":"10s","period":"R4/PT3S"}}"#,
    );
    assert_eq!(
        times(&v),
        [
            "2024-01-01T00:00:10+00:00",
            "2024-01-01T00:00:13+00:00",
            "2024-01-01T00:00:16+00:00",
            "2024-01-01T00:00:19+00:00"
        ]
    );
}

#[test]
fn timer_run_now_falls_on_the_creation_second() {
    for from in ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.500Z"] {
        let v = preview(&["--from", from], r#"{"timer":{}}"#);
        // Issue 26 item 5: a timer's times count from its creation truncated to the second.
        assert_eq!(times(&v), ["2024-01-01T00:00:00+00:00"], "from {from}");
    }
    let v = preview(
        &["--from", "2024-01-01T00:00:00Z", "--count", "2"],
        r#"{"timer":{"dueTime":"0s","period":"5s"}}"#,
    );
    assert_eq!(
        times(&v),
        ["2024-01-01T00:00:00+00:00", "2024-01-01T00:00:05+00:00"]
    );
}

#[test]
fn external_timer_is_triggered_only() {
    let v = preview(
        &["--from", "2024-01-01T00:00:00Z"],
        r#"{"timer":{"period":"external"}}"#,
    );
    assert_eq!(
        v,
        json!({"times": [], "schedule": null, "triggeredOnly": true})
    );
}

#[test]
fn canonical_schedule_round_trips() {
    let specs = [
        WEEKDAYS_NOON,
        r#"{"cron":["30 2 * * *"],"timeZone":"America/New_York"}"#,
        r#"{"calendars":[{"hour":"9","minute":"*/20","dayOfWeek":"MON-FRI"}],"exclude":[{"month":"DEC"}],"jitter":"1m"}"#,
        r#"{"intervals":["6h/5h"],"startTime":"2024-01-01T00:00:00Z","endTime":"2024-02-01T00:00:00Z"}"#,
        r#"{"cron":["0 0 0 ? * 2#1"],"dialect":"quartz"}"#,
        r#"{"timer":{"dueTime":"10s","period":"R4/PT3S"}}"#,
        r#"{"timer":{"period":"0 0/5 * * * ?"}}"#,
    ];
    let flags = ["--from", "2024-01-05T13:00:00Z", "--count", "25"];
    for spec in specs {
        let first = preview(&flags, spec);
        let canonical = first["schedule"].to_string();
        // A timer's preview includes its creation second; the canonical schedule is exclusive.
        let second = if spec.contains("timer") {
            preview(
                &["--from", "2024-01-05T12:59:59Z", "--count", "25"],
                &canonical,
            )
        } else {
            preview(&flags, &canonical)
        };
        assert_eq!(
            times(&first),
            times(&second),
            "spec {spec}\ncanonical {canonical}"
        );
        assert_eq!(
            first["schedule"], second["schedule"],
            "canonical form is a fixed point: {spec}"
        );
        assert!(!times(&first).is_empty(), "{spec} should fire");
    }
}

#[test]
fn job_id_prints_jittered_times() {
    let spec = r#"{"cron":["0 * * * *"],"jitter":"30m"}"#;
    let flags = ["--from", "2024-01-05T13:00:00Z"];
    let nominal = times(&preview(&flags, spec));
    let jittered = preview(&[&flags[..], &["--job-id", "job-1"]].concat(), spec);
    let actual = times(&jittered);
    assert_eq!(actual.len(), 10);
    for (n, a) in nominal.iter().zip(&actual) {
        let (n, a) = (parse(n), parse(a));
        assert!(
            a >= n && a < n + chrono::Duration::minutes(30),
            "nominal {n}, actual {a}"
        );
    }
    assert_ne!(
        nominal, actual,
        "30m of jitter moves at least one of 10 times"
    );
    // Deterministic per job; another job gets other offsets.
    assert_eq!(
        jittered,
        preview(&[&flags[..], &["--job-id", "job-1"]].concat(), spec)
    );
    assert_ne!(
        actual,
        times(&preview(
            &[&flags[..], &["--job-id", "job-2"]].concat(),
            spec
        ))
    );
    // Without jitter the actual times are the nominal ones.
    assert_eq!(
        times(&preview(
            &[&flags[..], &["--job-id", "job-1"]].concat(),
            WEEKDAYS_NOON
        )),
        times(&preview(&flags, WEEKDAYS_NOON))
    );
}

#[test]
fn invalid_spec_names_the_field() {
    let err = preview_fails(
        &["--from", "2024-01-01T00:00:00Z"],
        r#"{"cron":["0 12 * * XYZ"]}"#,
    );
    assert!(err.starts_with("error: cron[0]"), "{err:?}");
    let err = preview_fails(
        &[],
        r#"{"cron":["0 12 * * MON"],"timeZone":"Mars/Olympus"}"#,
    );
    assert!(err.starts_with("error: timeZone"), "{err:?}");
}

#[test]
fn malformed_json_exits_2() {
    let err = preview_fails(&[], r#"{"cron": ["#);
    assert!(err.starts_with("error: SPEC_JSON: "), "{err:?}");
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    assert_eq!(
        preview_fails(&["--from", "x"], WEEKDAYS_NOON),
        "error: --from: expected an RFC 3339 time, got \"x\"\n"
    );
    assert!(preview_fails(&["--count", "0"], WEEKDAYS_NOON).starts_with("error: --count"));
    assert!(preview_fails(&["--count", "10001"], WEEKDAYS_NOON).starts_with("error: --count"));
    assert!(preview_fails(&["--frm", "2024-01-01T00:00:00Z"], WEEKDAYS_NOON).contains("--frm"));
    let out = sundial(&["spec", "preview"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: SPEC_JSON"),
        "{:?}",
        out.stderr
    );
}

#[test]
fn help_and_unknown_commands() {
    for args in [&["--help"][..], &["help"], &["-h"]] {
        let out = sundial(args);
        assert_eq!(out.code, 0, "{args:?}");
        assert!(
            out.stdout.contains("sundial spec preview"),
            "{args:?}: {}",
            out.stdout
        );
        assert_eq!(out.stderr, "");
    }
    let out = sundial(&["spec", "preview", "--help"]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("--count") && out.stdout.contains("--job-id"),
        "{}",
        out.stdout
    );

    for args in [
        &["frobnicate"][..],
        &[],
        &["spec"],
        &["spec", "review", "{}"],
    ] {
        let out = sundial(args);
        assert_eq!(out.code, 2, "{args:?}");
        assert_eq!(out.stdout, "", "{args:?}");
        assert!(out.stderr.contains("Usage:"), "{args:?}: {}", out.stderr);
    }
}
