//! Preview, stats, health.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn preview_schedules_and_timers() {
    let api = Api::new();
    let (status, body) = api
        .post(
            "/specs/preview",
            &json!({"schedule": {"cron": ["0 12 * * *"]}, "from": "2024-01-01T00:00:00Z", "count": 3}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["times"],
        json!([
            "2024-01-01T12:00:00+00:00",
            "2024-01-02T12:00:00+00:00",
            "2024-01-03T12:00:00+00:00"
        ])
    );
    assert!(
        body["schedule"].is_object(),
        "the canonical schedule: {body}"
    );
    assert!(body.get("triggeredOnly").is_none());

    // The canonical form previews the same times.
    let canonical = body["schedule"].clone();
    let again = api
        .post(
            "/specs/preview",
            &json!({"schedule": canonical, "from": "2024-01-01T00:00:00Z", "count": 3}),
        )
        .await;
    assert_eq!(again.1["times"], body["times"]);

    // Without `from`, the clock's now; 10 times by default.
    let body = api
        .post(
            "/specs/preview",
            &json!({"schedule": {"cron": ["0 * * * *"]}}),
        )
        .await
        .1;
    let times = body["times"].as_array().unwrap();
    assert_eq!(times.len(), 10);
    assert_eq!(times[0], json!("2024-03-10T13:00:00+00:00"));

    let timer = json!({"timer": {"dueTime": "10s", "period": "R3/PT5S"}, "from": "2024-01-01T00:00:00Z", "count": 5});
    let (status, body) = api.post("/specs/preview", &timer).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["times"],
        json!([
            "2024-01-01T00:00:10+00:00",
            "2024-01-01T00:00:15+00:00",
            "2024-01-01T00:00:20+00:00"
        ])
    );

    let seed_timer = json!({"timer": seed_job()["timer"].clone(), "from": NOW, "count": 2});
    assert_eq!(
        api.post("/specs/preview", &seed_timer).await.1["times"],
        json!(["2024-03-10T12:35:00+00:00", "2024-03-10T12:40:00+00:00"])
    );

    let external = api
        .post("/specs/preview", &json!({"timer": {"period": "external"}}))
        .await;
    assert_eq!(
        external,
        (
            StatusCode::OK,
            json!({"times": [], "schedule": null, "triggeredOnly": true})
        )
    );

    let bad = [
        (json!({"from": "2024-01-01T00:00:00Z"}), "schedule:"),
        (
            json!({"schedule": {"cron": ["0 25 * * *"]}}),
            "schedule.cron[0]:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "timer": {"period": "external"}}),
            "schedule:",
        ),
        (json!({"timer": {"period": "soon"}}), "timer.period:"),
        (
            json!({"timer": {"dueTime": "1s", "period": "5s", "every": "x"}}),
            "timer.every:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "count": 0}),
            "count:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "count": 1001}),
            "count:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "from": "noon"}),
            "from:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "jobId": 5}),
            "jobId:",
        ),
        (
            json!({"schedule": {"cron": ["* * * * *"]}, "to": "x"}),
            "to:",
        ),
        (json!(["0 12 * * *"]), "body:"),
    ];
    for (body, prefix) in bad {
        assert_error(&api.post("/specs/preview", &body).await, 400, prefix);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_and_health() {
    let api = Api::new();
    // The counts; the window figures beside them are tests/api/stats.rs's.
    let counts = |(status, body): (StatusCode, Value)| {
        let pick = |key: &str| body.get(key).cloned().unwrap_or(Value::Null);
        (
            status,
            json!({"jobs": pick("jobs"), "executions": pick("executions"), "debugMode": pick("debugMode")}),
        )
    };
    assert_eq!(
        counts(api.get("/stats").await),
        (
            StatusCode::OK,
            json!({"jobs": {}, "executions": {}, "debugMode": false})
        )
    );
    api.create("one", &seed_job_as("one")).await;
    api.create("two", &triggered_job("001")).await;
    api.put("/jobs/one?active=0", None).await;
    api.trigger("two", &json!({})).await;
    api.trigger("two", &json!({})).await;
    assert_eq!(
        counts(api.get("/stats").await),
        (
            StatusCode::OK,
            json!({"jobs": {"active": 1, "paused": 1}, "executions": {"Enqueued": 2}, "debugMode": false})
        )
    );
    assert_eq!(
        api.get("/health").await,
        (StatusCode::OK, json!({"status": "ok", "debugMode": "off"}))
    );
}
