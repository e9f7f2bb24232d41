//! Statistics routes: `GET /jobs/{jobId}/stats?window=` and the window figures of `GET /stats`,
//! read from rollups seeded through the store port, and a user's cancel counted by its write.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};
use sundial_core::stats::{LogHistogram, Rollup};
use sundial_ports::store::{RollupRecord, Store, Write};

use crate::support::*;

fn now() -> DateTime<Utc> {
    NOW.parse().unwrap()
}

/// Adds to `job`'s bucket `hours_ago` hours before the current hour.
async fn seed(api: &Api, job: &str, hours_ago: i64, rollup: Rollup) {
    let hour = sundial_core::stats::hour_of(now()) - Duration::hours(hours_ago);
    let record = RollupRecord {
        job_id: job.to_owned(),
        hour,
        counters: rollup.to_counters(),
    };
    api.app
        .store()
        .write_all(&[Write::AddRollup(&record)])
        .await
        .unwrap();
}

fn runs(state: &str, n: u64, minute: u32, duration_ms: u64) -> Rollup {
    let mut duration = LogHistogram::new();
    for _ in 0..n {
        duration.record(duration_ms);
    }
    let failed = if state == "Terminated" {
        BTreeMap::from([(minute, n)])
    } else {
        BTreeMap::new()
    };
    Rollup {
        states: BTreeMap::from([(state.to_owned(), n)]),
        minutes: BTreeMap::from([(minute, n)]),
        failed_minutes: failed,
        duration,
        ..Rollup::default()
    }
}

fn field(answer: &(StatusCode, Value), pointer: &str) -> Value {
    answer.1.pointer(pointer).cloned().unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread")]
async fn windows_read_their_hours_and_series_steps() {
    let api = Api::new();
    api.create("a", &seed_job_as("a")).await;
    // 12:30 and 12:33 of the current hour (12:34:56), 3 days and 20 days ago.
    seed(&api, "a", 0, runs("Succeeded", 2, 30, 100)).await;
    seed(&api, "a", 0, runs("Terminated", 1, 33, 4000)).await;
    seed(&api, "a", 72, runs("Succeeded", 5, 0, 100)).await;
    seed(&api, "a", 480, runs("Succeeded", 7, 0, 100)).await;
    let mut skip = Rollup::not_run(sundial_core::stats::NotRun::Skipped, 2);
    skip.missed = 3;
    seed(&api, "a", 1, skip).await;

    let hour = api.get("/jobs/a/stats?window=1h").await;
    assert_eq!(hour.0, StatusCode::OK, "{hour:?}");
    assert_eq!(field(&hour, "/jobId"), json!("a"));
    assert_eq!(field(&hour, "/window"), json!("1h"));
    assert_eq!(field(&hour, "/from"), json!("2024-03-10T11:00:00Z"));
    assert_eq!(field(&hour, "/runs"), json!(3));
    assert_eq!(
        field(&hour, "/byState"),
        json!({"Succeeded": 2, "Terminated": 1})
    );
    assert_eq!(
        field(&hour, "/skipped"),
        json!(2),
        "the hour before is read too"
    );
    assert_eq!(field(&hour, "/missed"), json!(3));
    let series = field(&hour, "/series");
    let points = series.as_array().unwrap();
    assert_eq!(points.len(), 61, "a point per minute, 11:34 … 12:34");
    let at_1230 = points
        .iter()
        .find(|p| p["at"] == "2024-03-10T12:30:00Z")
        .unwrap();
    assert_eq!(
        (at_1230["runs"].clone(), at_1230["failed"].clone()),
        (json!(2), json!(0))
    );
    let at_1233 = points
        .iter()
        .find(|p| p["at"] == "2024-03-10T12:33:00Z")
        .unwrap();
    assert_eq!(at_1233["failed"], json!(1));
    let rate = field(&hour, "/successRate").as_f64().unwrap();
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");
    let p99 = field(&hour, "/durationMs/p99").as_u64().unwrap();
    assert!(p99.abs_diff(4000) <= 200, "{p99}");

    let day = api.get("/jobs/a/stats?window=24h").await;
    assert_eq!(field(&day, "/runs"), json!(3));
    assert_eq!(field(&day, "/series").as_array().unwrap().len(), 25);
    let default = api.get("/jobs/a/stats").await;
    assert_eq!(field(&default, "/window"), json!("24h"));
    let week = api.get("/jobs/a/stats?window=7d").await;
    assert_eq!(field(&week, "/runs"), json!(8));
    let month = api.get("/jobs/a/stats?window=30d").await;
    assert_eq!(field(&month, "/runs"), json!(15));
    assert_eq!(
        field(&month, "/series").as_array().unwrap().len(),
        31,
        "a point per day"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_windows_and_unknown_jobs_are_refused() {
    let api = Api::new();
    api.create("a", &seed_job_as("a")).await;
    for uri in [
        "/jobs/a/stats?window=2h",
        "/jobs/a/stats?window=",
        "/stats?window=1d",
    ] {
        assert_error(&api.get(uri).await, 400, "window:");
    }
    assert_error(&api.get("/jobs/a/stats?windw=1h").await, 400, "windw:");
    assert_error(&api.get("/stats?from=x").await, 400, "from:");
    assert_error(&api.get("/jobs/nobody/stats").await, 404, "");
    assert_error(&api.get("/jobs/bad%20id/stats").await, 400, "jobId");
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_merges_all_jobs_and_names_the_failing_and_the_slow() {
    let api = Api::new();
    seed(&api, "fast", 0, runs("Succeeded", 10, 1, 10)).await;
    seed(&api, "fast", 3, runs("Terminated", 1, 1, 10)).await;
    seed(&api, "slow", 2, runs("Succeeded", 2, 1, 9000)).await;
    seed(&api, "bad", 0, runs("Terminated", 4, 2, 50)).await;
    seed(&api, "old", 30, runs("Terminated", 9, 2, 50)).await;
    let stats = api.get("/stats?window=24h").await;
    assert_eq!(stats.0, StatusCode::OK, "{stats:?}");
    assert_eq!(field(&stats, "/jobs"), json!({}), "the counts stay");
    assert_eq!(field(&stats, "/runs"), json!(17));
    assert_eq!(
        field(&stats, "/byState"),
        json!({"Succeeded": 12, "Terminated": 5})
    );
    let ids = |key: &str| -> Vec<Value> {
        field(&stats, key)
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["jobId"].clone())
            .collect()
    };
    assert_eq!(ids("/topFailing"), [json!("bad"), json!("fast")]);
    assert_eq!(
        ids("/slowest"),
        [json!("slow"), json!("bad"), json!("fast")]
    );
    assert_eq!(field(&stats, "/topFailing/0/runs"), json!(4));
    let week = api.get("/stats?window=7d").await;
    assert_eq!(
        field(&week, "/runs"),
        json!(26),
        "the old job's hour is in the week"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_counts_in_the_jobs_stats() {
    let api = Api::new();
    api.create("two", &triggered_job("001")).await;
    let execution = api.trigger("two", &json!({})).await;
    let cancelled = api
        .post(&format!("/executions/{execution}/cancel"), &json!({}))
        .await;
    assert_eq!(cancelled.0, StatusCode::OK, "{cancelled:?}");
    let hour = api.get("/jobs/two/stats?window=1h").await;
    assert_eq!(field(&hour, "/byState"), json!({"Cancelled": 1}));
    assert_eq!(
        field(&hour, "/durationMs/p50"),
        Value::Null,
        "it never started"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sealed_hours_are_summarized_once_and_read_back_alike() {
    use sundial_core::fleet_hour::FleetHour;
    use sundial_ports::store::{FleetHourRecord, RollupStore};

    let api = Api::new();
    // Thirty jobs over the last two days: failures and durations that differ per job.
    for k in 0..30u64 {
        let job = format!("job-{k:02}");
        for hours_ago in [0, 1, 5, 30] {
            seed(
                &api,
                &job,
                hours_ago,
                runs("Succeeded", k % 4 + 1, 5, 10 * (k + 1)),
            )
            .await;
        }
        if k % 3 == 0 {
            seed(
                &api,
                &job,
                2,
                runs("Terminated", k / 3 + 1, 7, 20_000 * (k + 1)),
            )
            .await;
        }
    }
    let hour = sundial_core::stats::hour_of(now());
    let store = api.app.store();
    assert!(store
        .fleet_hours(hour - Duration::days(8), hour)
        .await
        .unwrap()
        .is_empty());

    let first = api.get("/stats?window=7d").await;
    assert_eq!(first.0, StatusCode::OK, "{first:?}");
    // Every sealed hour of the window is summarized (empty ones too), the current one is not.
    let stored = store
        .fleet_hours(hour - Duration::days(8), hour)
        .await
        .unwrap();
    let hours: std::collections::BTreeSet<_> = stored.iter().map(|p| p.hour).collect();
    assert_eq!(hours.len(), 168, "7 days of sealed hours");
    assert!(
        !hours.contains(&hour),
        "the current hour is read from its buckets"
    );
    let second = api.get("/stats?window=7d").await;
    assert_eq!(
        second, first,
        "summaries read back as the buckets they replace"
    );
    assert_eq!(field(&second, "/runs"), json!(347));
    assert_eq!(
        field(&second, "/topFailing/0/jobId"),
        json!("job-27"),
        "10 failed runs"
    );
    assert_eq!(field(&second, "/topFailing/0/runs"), json!(26));
    assert_eq!(field(&second, "/slowest/0/jobId"), json!("job-27"));
    assert_eq!(field(&second, "/topFailing").as_array().unwrap().len(), 10);
    let day = api.get("/stats?window=24h").await;
    assert_eq!(
        field(&day, "/runs"),
        json!(347 - 73),
        "the 30-hour-old runs are out"
    );

    // A later run of the current hour counts at once.
    seed(&api, "job-00", 0, runs("Terminated", 100, 9, 5)).await;
    let later = api.get("/stats?window=7d").await;
    assert_eq!(field(&later, "/runs"), json!(447));
    assert_eq!(field(&later, "/topFailing/0/jobId"), json!("job-00"));

    // Read from the summary, not the buckets: a summary standing for other buckets is believed.
    let two_hours_ago = hour - Duration::hours(2);
    let mut other = runs("Succeeded", 1000, 0, 1);
    other.minutes.clear();
    let summary = FleetHour::of(two_hours_ago, [("ghost", &other)]);
    let parts: Vec<FleetHourRecord> = summary
        .encode()
        .into_iter()
        .enumerate()
        .map(|(part, body)| FleetHourRecord {
            hour: two_hours_ago,
            part: part as u32,
            body,
        })
        .collect();
    store.put_fleet_hours(&parts).await.unwrap();
    let replaced = api.get("/stats?window=7d").await;
    // Hour −2 held the failed runs; now it holds 1,000 succeeded runs of a ghost job.
    let failed_two_hours_ago: u64 = (0..30u64).filter(|k| k % 3 == 0).map(|k| k / 3 + 1).sum();
    assert_eq!(
        field(&replaced, "/runs").as_u64().unwrap(),
        447 - failed_two_hours_ago + 1000
    );
}

/// Issue 26 item 9: the debug mode, switched at run time (`PUT /settings/debugMode`), read back
/// with its switches (who, when, from, to, why), shown by `/health` and `/stats`; a bad mode or
/// field is a 400 naming it.
#[tokio::test(flavor = "multi_thread")]
async fn the_debug_mode_switches_at_run_time() {
    let api = Api::new();
    let (status, body) = api.get("/settings/debugMode").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        serde_json::json!({"mode": "off", "source": "startup", "history": []})
    );
    let (status, body) = api
        .put(
            "/settings/debugMode",
            Some(&serde_json::json!({"mode": "both", "reason": "load test"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["mode"], &body["source"]),
        (&serde_json::json!("both"), &serde_json::json!("stored"))
    );
    let change = &body["history"][0];
    assert_eq!(
        (&change["from"], &change["to"], &change["reason"]),
        (
            &serde_json::json!("off"),
            &serde_json::json!("both"),
            &serde_json::json!("load test")
        )
    );
    assert!(
        change["by"].is_string() && change["at"].is_string(),
        "{change}"
    );
    assert_eq!(api.get("/settings/debugMode").await.1["mode"], "both");
    assert_eq!(api.get("/health").await.1["debugMode"], "both");
    assert_eq!(api.get("/stats").await.1["debugMode"], true);
    for (bad, field) in [
        (serde_json::json!({"mode": "on"}), "mode:"),
        (serde_json::json!({"mode": 1}), "mode:"),
        (serde_json::json!({}), "mode:"),
        (serde_json::json!({"mode": "off", "why": "x"}), "why:"),
        (serde_json::json!({"mode": "off", "reason": 5}), "reason:"),
    ] {
        assert_error(
            &api.put("/settings/debugMode", Some(&bad)).await,
            400,
            field,
        );
    }
    let body = api
        .put(
            "/settings/debugMode",
            Some(&serde_json::json!({"mode": "off"})),
        )
        .await
        .1;
    assert_eq!(body["history"].as_array().map(Vec::len), Some(2));
    assert_eq!(api.get("/health").await.1["debugMode"], "off");
}
