use super::*;
use serde_json::json;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// A simulation request: an every-minute job with `extra` fields, from `from` to `to`.
fn request(extra: Value, scenario: Value) -> Request {
    let mut body = json!({
        "jobName": "sim", "creator": "c", "creatorName": "C",
        "request": [{"method": "GET", "url": "http://127.0.0.1:1/x"}],
        "schedule": {"cron": ["* * * * *"]},
        "from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z",
        "rows": 10000,
    });
    for (k, v) in extra
        .as_object()
        .unwrap()
        .iter()
        .chain(scenario.as_object().unwrap())
    {
        body[k] = v.clone();
    }
    Request::parse(&body, MAX_FIRES).unwrap()
}

fn rows_of(report: &Report, kind: RowKind) -> Vec<&Row> {
    report.rows.iter().filter(|r| r.kind == kind).collect()
}

#[test]
fn an_every_minute_job_with_skip_and_90_s_calls_runs_every_other_minute() {
    let report = request(
        json!({"overlap": "Skip", "timeoutSeconds": 300}),
        json!({"simulatedTarget": {"p50": "90s", "p99": "90s"}}),
    )
    .run();
    let t = &report.totals;
    assert_eq!(t.fires, 60);
    assert_eq!(t.runs, 30);
    assert_eq!(t.succeeded, 30);
    assert_eq!(t.skipped, 30);
    let starts: Vec<String> = rows_of(&report, RowKind::Attempt)
        .iter()
        .map(|r| r.at.format("%H:%M:%S").to_string())
        .collect();
    assert_eq!(starts[..3], ["00:00:00", "00:02:00", "00:04:00"]);
    let first = rows_of(&report, RowKind::Attempt)[0];
    assert_eq!(first.end, Some(at("2026-01-01T00:01:30Z")));
    assert_eq!(first.outcome.as_deref(), Some("200"));
    let skipped = rows_of(&report, RowKind::Skipped);
    assert_eq!(skipped[0].nominal, Some(at("2026-01-01T00:01:00Z")));
    assert!(
        skipped[0].detail.contains("skipped by overlap policy Skip"),
        "{}",
        skipped[0].detail
    );
}

#[test]
fn with_buffer_one_the_next_run_waits_and_the_one_after_is_dropped() {
    let report = request(
        json!({"overlap": "BufferOne", "timeoutSeconds": 600}),
        json!({"simulatedTarget": {"p50": "150s"}, "to": "2026-01-01T00:10:00Z"}),
    )
    .run();
    let t = &report.totals;
    assert_eq!(t.fires, 10);
    assert!(t.buffered > 0 && t.dropped > 0, "{t:?}");
    assert_eq!(t.runs + t.dropped, 10, "{t:?}");
    // The buffered run starts when the one before it ends: back to back.
    let attempts = rows_of(&report, RowKind::Attempt);
    assert_eq!(attempts[1].at, attempts[0].end.unwrap());
}

#[test]
fn retries_follow_the_policys_backoff() {
    let report = request(
        json!({
            "schedule": {"cron": ["0 * * * *"]},
            "retryPolicy": {"initialInterval": "10s", "backoffCoefficient": 2, "maximumAttempts": 4},
        }),
        json!({"simulatedTarget": {"p50": "1s", "failureRate": 1}}),
    )
    .run();
    let attempts = rows_of(&report, RowKind::Attempt);
    assert_eq!(attempts.len(), 4, "{attempts:#?}");
    let t0 = at("2026-01-01T00:00:00Z");
    let starts: Vec<i64> = attempts.iter().map(|r| (r.at - t0).num_seconds()).collect();
    // Each attempt lasts 1 s, then waits 10 s, 20 s, 40 s.
    assert_eq!(starts, [0, 11, 32, 73]);
    assert_eq!(attempts[0].retry_at, Some(t0 + Duration::seconds(11)));
    assert_eq!(attempts[0].outcome.as_deref(), Some("500"));
    assert!(attempts[3].retry_at.is_none());
    assert_eq!(report.totals.failed, 1);
    assert_eq!(report.totals.retries, 3);
    assert_eq!(report.totals.attempts, 4);
}

#[test]
fn sundial_down_longer_than_the_catch_up_window_misses_fires() {
    let report = request(
        json!({"catchup": {"policy": "all", "window": "5m"}}),
        json!({"downtime": [{"start": "2026-01-01T00:10:30Z", "length": "20m"}]}),
    )
    .run();
    let missed = rows_of(&report, RowKind::Missed);
    assert_eq!(missed.len(), 1, "{missed:#?}");
    // Back at 00:30:30: the fires of 00:11 to 00:25 are older than the 5 minute window.
    assert_eq!(missed[0].at, at("2026-01-01T00:30:30Z"));
    assert_eq!(missed[0].nominal, Some(at("2026-01-01T00:11:00Z")));
    assert_eq!(missed[0].end, Some(at("2026-01-01T00:25:00Z")));
    assert_eq!(missed[0].count, 15);
    assert_eq!(report.totals.missed, 15);
    // The five within the window run when Sundial is back (catch-up policy all).
    assert_eq!(report.totals.fires, 45);
    let late: Vec<_> = rows_of(&report, RowKind::Attempt)
        .into_iter()
        .filter(|r| r.at == at("2026-01-01T00:30:30Z"))
        .collect();
    assert!(!late.is_empty());
}

#[test]
fn catch_up_policy_latest_runs_one_late_fire_after_downtime() {
    let report = request(
        json!({"catchup": {"policy": "latest", "window": "1h"}, "overlap": "AllowAll"}),
        json!({"downtime": [{"start": "2026-01-01T00:10:30Z", "length": "10m"}]}),
    )
    .run();
    // 00:11 to 00:20 fall in the downtime: the newest runs, nine are missed.
    assert_eq!(
        report.totals.missed,
        9,
        "{:#?}",
        rows_of(&report, RowKind::Missed)
    );
    assert_eq!(report.totals.runs, 51);
}

#[test]
fn a_target_outage_fails_its_calls_and_retries_go_on_after_it() {
    let report = request(
        json!({"schedule": {"cron": ["*/10 * * * *"]}, "retryPolicy": {"initialInterval": "5m", "backoffCoefficient": 1, "maximumAttempts": 3}}),
        json!({"outages": [{"start": "2026-01-01T00:20:00Z", "length": "7m"}]}),
    )
    .run();
    let at_20: Vec<_> = rows_of(&report, RowKind::Attempt)
        .into_iter()
        .filter(|r| r.nominal == Some(at("2026-01-01T00:20:00Z")))
        .collect();
    assert_eq!(at_20.len(), 3, "{at_20:#?}");
    assert_eq!(at_20[0].outcome.as_deref(), Some("connection"));
    assert_eq!(at_20[1].outcome.as_deref(), Some("connection"));
    assert_eq!(at_20[2].outcome.as_deref(), Some("200"));
    assert_eq!(report.totals.failed, 0);
}

#[test]
fn an_outage_in_timeout_mode_hangs_calls_until_the_timeout() {
    let report = request(
        json!({"schedule": {"cron": ["0 * * * *"]}, "timeoutSeconds": 30}),
        json!({"outages": [{"start": "2026-01-01T00:00:00Z", "length": "1m", "mode": "timeout"}]}),
    )
    .run();
    let attempt = rows_of(&report, RowKind::Attempt)[0];
    assert_eq!(attempt.outcome.as_deref(), Some("timeout"));
    assert_eq!(attempt.end, Some(at("2026-01-01T00:00:30Z")));
    assert_eq!(report.totals.timeouts, 1);
}

#[test]
fn cancel_other_stops_the_running_call() {
    let report = request(
        json!({"overlap": "CancelOther", "timeoutSeconds": 600}),
        json!({"simulatedTarget": {"p50": "90s"}, "to": "2026-01-01T00:05:00Z"}),
    )
    .run();
    assert_eq!(report.totals.cancelled, 4, "{:#?}", report.rows);
    assert_eq!(report.totals.runs, 5);
    assert_eq!(report.totals.succeeded, 1);
    // The cancelled run's attempt ends when the next one starts.
    let first = rows_of(&report, RowKind::Attempt)[0];
    assert_eq!(first.end, Some(at("2026-01-01T00:01:00Z")));
    assert_eq!(first.outcome.as_deref(), Some("cancelled"));
}

#[test]
fn pause_on_failure_stops_the_schedule() {
    let report = request(
        json!({"pauseOnFailure": true}),
        json!({"simulatedTarget": {"failureRate": 1}}),
    )
    .run();
    assert_eq!(report.paused_at, Some(at("2026-01-01T00:00:01Z")));
    assert_eq!(rows_of(&report, RowKind::Paused).len(), 1);
    assert_eq!(report.totals.runs, 1);
    assert_eq!(report.totals.fires, 1);
}

#[test]
fn the_same_seed_answers_the_same_and_durations_follow_the_percentiles() {
    let scenario = json!({
        "to": "2026-01-02T00:00:00Z",
        "simulatedTarget": {"p50": "2s", "p99": "30s", "failureRate": 0.05, "seed": 7},
    });
    let a = request(json!({"overlap": "AllowAll"}), scenario.clone()).run();
    let b = request(json!({"overlap": "AllowAll"}), scenario).run();
    assert_eq!(a, b);
    let mut durations: Vec<i64> = rows_of(&a, RowKind::Attempt)
        .iter()
        .map(|r| (r.end.unwrap() - r.at).num_milliseconds())
        .collect();
    durations.sort_unstable();
    let p50 = durations[durations.len() / 2];
    let p99 = durations[durations.len() * 99 / 100];
    assert!((1_700..2_300).contains(&p50), "p50 {p50}");
    assert!((20_000..45_000).contains(&p99), "p99 {p99}");
    let failed = a.totals.failed_attempts as f64 / a.totals.attempts as f64;
    assert!((0.03..0.07).contains(&failed), "{failed}");
    let other = request(
        json!({"overlap": "AllowAll"}),
        json!({"to": "2026-01-02T00:00:00Z", "simulatedTarget": {"p50": "2s", "p99": "30s", "failureRate": 0.05, "seed": 8}}),
    )
    .run();
    assert_ne!(a.rows, other.rows);
}

#[test]
fn dst_and_calendars_come_from_the_spec_engine() {
    // 02:30 each day in Berlin: on 29 March 2026 that time does not exist; the spec's dst.gap
    // rule (auto: to the end of the gap, 03:00 CEST) decides, and the simulation shows it.
    let report = request(
        json!({"schedule": {"cron": ["30 2 * * *"], "timeZone": "Europe/Berlin"}}),
        json!({"from": "2026-03-28T00:00:00Z", "to": "2026-03-31T00:00:00Z"}),
    )
    .run();
    let times: Vec<String> = rows_of(&report, RowKind::Attempt)
        .iter()
        .map(|r| crate::time_serde::format(&r.nominal.unwrap()))
        .collect();
    assert_eq!(
        times,
        [
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z"
        ]
    );
}

#[test]
fn the_fire_cap_truncates_and_says_so() {
    let mut request = request(json!({"overlap": "AllowAll"}), json!({}));
    request.scenario.max_fires = 10;
    let report = request.run();
    assert_eq!(report.totals.fires, 10);
    assert!(report.truncated);
    assert_eq!(report.planned_through, Some(at("2026-01-01T00:09:00Z")));
}

#[test]
fn rows_past_the_limit_are_counted() {
    let report = request(json!({}), json!({"rows": 5})).run();
    assert_eq!(report.rows.len(), 5);
    assert_eq!(report.rows_left_off, 55);
    assert_eq!(report.totals.runs, 60);
}

#[test]
fn bad_input_names_the_field() {
    let base = json!({
        "jobName": "sim", "creator": "c", "creatorName": "C",
        "request": [{"method": "GET", "url": "http://127.0.0.1:1/x"}],
        "schedule": {"cron": ["* * * * *"]},
        "from": "2026-01-01T00:00:00Z", "to": "2026-01-01T01:00:00Z",
    });
    let fails = |patch: Value| {
        let mut body = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            if v.is_null() {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        Request::parse(&body, MAX_FIRES).unwrap_err().path
    };
    assert_eq!(fails(json!({"from": null})), "from");
    assert_eq!(fails(json!({"to": "yesterday"})), "to");
    assert_eq!(fails(json!({"to": "2025-01-01T00:00:00Z"})), "to");
    assert_eq!(fails(json!({"to": "2027-06-01T00:00:00Z"})), "to");
    assert_eq!(
        fails(json!({"simulatedTarget": {"p50": "2x"}})),
        "simulatedTarget.p50"
    );
    assert_eq!(
        fails(json!({"simulatedTarget": {"p50": "2s", "p99": "1s"}})),
        "simulatedTarget.p99"
    );
    assert_eq!(
        fails(json!({"simulatedTarget": {"failureRate": 2}})),
        "simulatedTarget.failureRate"
    );
    assert_eq!(
        fails(json!({"simulatedTarget": {"seed": -1}})),
        "simulatedTarget.seed"
    );
    assert_eq!(
        fails(json!({"simulatedTarget": {"p95": "1s"}})),
        "simulatedTarget.p95"
    );
    assert_eq!(
        fails(json!({"outages": [{"start": "x", "length": "1h"}]})),
        "outages[0].start"
    );
    assert_eq!(
        fails(json!({"outages": [{"start": "2026-01-01T00:00", "length": "1h", "mode": "x"}]})),
        "outages[0].mode"
    );
    assert_eq!(
        fails(json!({"downtime": [{"start": "2026-01-01T00:00"}]})),
        "downtime[0].length"
    );
    assert_eq!(fails(json!({"rows": 100000})), "rows");
    assert_eq!(
        fails(json!({"schedule": {"cron": ["nope"]}})),
        "schedule.cron[0]"
    );
    assert!(Request::parse(&base, MAX_FIRES).is_ok());
}

#[test]
fn windows_are_written_start_slash_length() {
    let w = parse_window_text("--outage", "2026-12-24T10:00/2h").unwrap();
    assert_eq!(w.start, at("2026-12-24T10:00:00Z"));
    assert_eq!(w.end(), at("2026-12-24T12:00:00Z"));
    assert_eq!(
        parse_window_text("--outage", "2026-12-24T10:00")
            .unwrap_err()
            .path,
        "--outage"
    );
}

#[test]
fn rows_come_in_time_order() {
    let report = request(
        json!({"overlap": "Skip", "timeoutSeconds": 300}),
        json!({"simulatedTarget": {"p50": "90s"}}),
    )
    .run();
    assert!(report.rows.windows(2).all(|w| w[0].at <= w[1].at));
    assert_eq!(report.rows[0].kind, RowKind::Attempt);
    assert_eq!(report.rows[1].kind, RowKind::Skipped);
}

#[test]
fn the_report_answers_json() {
    let report = request(json!({}), json!({"rows": 1, "to": "2026-01-01T00:02:00Z"})).run();
    let v = report.to_json();
    assert_eq!(v["totals"]["fires"], 2);
    assert_eq!(v["rows"][0]["kind"], "attempt");
    assert_eq!(v["rows"][0]["scheduledTime"], "2026-01-01T00:00:00Z");
    assert_eq!(v["rows"][0]["end"], "2026-01-01T00:00:01Z");
    assert_eq!(v["rowsLeftOff"], 1);
    assert_eq!(v["truncated"], false);
}
