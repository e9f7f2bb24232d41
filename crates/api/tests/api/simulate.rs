//! `POST /jobs/simulate`: a job's definition and a scenario in, rows and totals out; nothing
//! stored; 400 naming the field; the route is not `/jobs/{jobId}`.

use serde_json::{json, Value};

use crate::support::{assert_error, Api};

fn body(extra: Value) -> Value {
    let mut body = json!({
        "jobName": "sync", "creator": "u-1", "creatorName": "U",
        "request": [{"method": "POST", "url": "http://127.0.0.1:9/run"}],
        "schedule": {"cron": ["* * * * *"]},
        "overlap": "Skip", "timeoutSeconds": 300,
        "from": "2026-12-24T00:00:00Z", "to": "2026-12-24T01:00:00Z",
        "simulatedTarget": {"p50": "90s", "p99": "90s"},
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

#[tokio::test]
async fn a_simulation_answers_rows_and_totals_and_stores_nothing() {
    let api = Api::new();
    let (status, answer) = api.post("/jobs/simulate", &body(json!({"rows": 3}))).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["totals"]["fires"], 60, "{answer}");
    assert_eq!(answer["totals"]["runs"], 30);
    assert_eq!(answer["totals"]["skipped"], 30);
    assert_eq!(answer["rows"].as_array().unwrap().len(), 3);
    assert_eq!(answer["rowsLeftOff"], 57);
    assert_eq!(answer["rows"][0]["kind"], "attempt");
    assert_eq!(answer["rows"][0]["end"], "2026-12-24T00:01:30Z");
    assert_eq!(answer["truncated"], false);
    // Nothing was created: not the job, nor under its own id.
    let (_, jobs) = api.get("/jobs").await;
    assert_eq!(jobs["jobs"], json!([]), "{jobs}");
    // Nulls are absent fields, as everywhere in the API.
    let (status, answer) = api
        .post(
            "/jobs/simulate",
            &body(
                json!({"outages": null, "downtime": null, "rows": null, "simulatedTarget": null}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test]
async fn the_fire_cap_cuts_a_long_range_short_and_says_where() {
    let api = Api::new();
    let (status, answer) = api
        .post(
            "/jobs/simulate",
            &body(json!({
                "schedule": {"cron": ["* * * * * ?"], "dialect": "quartz"},
                "overlap": "AllowAll", "from": "2026-12-24T00:00:00Z", "to": "2026-12-26T00:00:00Z",
                "simulatedTarget": {"p50": "10ms"}, "rows": 0,
            })),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["totals"]["fires"],
        sundial_service::app::MAX_API_FIRES as u64
    );
    assert_eq!(answer["truncated"], true);
    assert!(answer["plannedThrough"].as_str().unwrap() < "2026-12-26");
}

#[tokio::test]
async fn bad_input_is_a_400_naming_the_field() {
    let api = Api::new();
    for (patch, field) in [
        (json!({"from": "soon"}), "from:"),
        (json!({"to": "2028-01-01T00:00:00Z"}), "to:"),
        (
            json!({"simulatedTarget": {"p50": "2s", "p99": "1s"}}),
            "simulatedTarget.p99:",
        ),
        (
            json!({"simulatedTarget": {"failureRate": 1.5}}),
            "simulatedTarget.failureRate:",
        ),
        (
            json!({"outages": [{"start": "2026-12-24T10:00", "length": "forever"}]}),
            "outages[0].length:",
        ),
        (
            json!({"downtime": [{"start": "x", "length": "1h"}]}),
            "downtime[0].start:",
        ),
        (json!({"rows": 10001}), "rows:"),
        (
            json!({"schedule": {"cron": ["61 * * * *"]}}),
            "schedule.cron[0]",
        ),
        (json!({"jobNam": "typo"}), "jobNam"),
    ] {
        let answer = api.post("/jobs/simulate", &body(patch.clone())).await;
        assert_error(&answer, 400, field);
    }
}

#[tokio::test]
async fn simulate_is_not_a_job_id() {
    let api = Api::new();
    let mut job = body(json!({}));
    for key in ["from", "to", "simulatedTarget"] {
        job.as_object_mut().unwrap().remove(key);
    }
    // Through the declared timers, the only route that names a job in its body.
    job["jobId"] = json!("simulate");
    let answer = api
        .put("/services/svc/timers", Some(&json!({"timer": [job]})))
        .await;
    assert_error(&answer, 400, "timer[0].jobId");
}
