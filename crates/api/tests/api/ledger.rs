//! `GET /jobs/{jobId}/occurrences`: the range read from `from` and `to` (400 naming the field
//! when missing, malformed, reversed or too large), and the answer's shape.

use axum::http::StatusCode;
use serde_json::json;

use crate::support::{assert_error, seed_job_as, Api};

fn minutely(id: &str) -> serde_json::Value {
    let mut body = seed_job_as(id);
    body.as_object_mut().unwrap().remove("timer");
    body["schedule"] = json!({"cron": ["* * * * *"]});
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn a_range_lists_each_nominal_time_with_its_status() {
    let api = Api::new();
    // Created at 12:34:56.
    api.create("m", &minutely("m")).await;
    let (status, body) = api
        .get("/jobs/m/occurrences?from=2024-03-10T12:33:00Z&to=2024-03-10T12:36:00Z")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({
            "jobId": "m", "from": "2024-03-10T12:33:00Z", "to": "2024-03-10T12:36:00Z", "count": 3,
            "occurrences": [
                {"time": "2024-03-10T12:33:00Z", "status": "beforeCreated"},
                {"time": "2024-03-10T12:34:00Z", "status": "beforeCreated"},
                {"time": "2024-03-10T12:35:00Z", "status": "notYet"}
            ],
            "ranges": []
        })
    );
    // Paused with notes, now: the times from now on are paused.
    let (status, body) = api.post("/jobs/m/pause", &json!({"notes": "deploy"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = api
        .get("/jobs/m/occurrences?from=2024-03-10T12:35:00Z&to=2024-03-10T12:36:00Z")
        .await;
    assert_eq!(
        body["occurrences"],
        json!([{
            "time": "2024-03-10T12:35:00Z", "status": "paused", "notes": "deploy",
            "pausedAt": "2024-03-10T12:34:56Z"
        }])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dst_gap_is_listed_at_its_transition_with_its_policy() {
    let api = Api::new();
    // 2024-03-10: New York's clocks jump from 02:00 EST to 03:00 EDT (07:00Z), so 02:30 does not
    // exist that day.
    for (id, gap) in [("ny-skip", "skip"), ("ny-shift", "shift")] {
        let mut body = minutely(id);
        body["schedule"] = json!({
            "cron": ["30 2 * * *"], "timeZone": "America/New_York", "dst": {"gap": gap}
        });
        api.create(id, &body).await;
    }
    let (status, body) = api
        .get("/jobs/ny-skip/occurrences?from=2024-03-09T00:00:00Z&to=2024-03-12T00:00:00Z")
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["count"], json!(2), "{body}");
    assert_eq!(
        body["occurrences"],
        json!([
            {"time": "2024-03-09T07:30:00Z", "status": "beforeCreated"},
            {
                "time": "2024-03-10T07:00:00Z", "status": "dstGap",
                "wallTime": "2024-03-10T02:30:00", "count": 1, "policy": "skip"
            },
            {"time": "2024-03-11T06:30:00Z", "status": "notYet"}
        ])
    );
    // Shift: the time moved by the gap's length is a nominal time of its own, after the gap.
    let (_, body) = api
        .get("/jobs/ny-shift/occurrences?from=2024-03-10T00:00:00Z&to=2024-03-11T00:00:00Z")
        .await;
    assert_eq!(
        body["occurrences"],
        json!([
            {
                "time": "2024-03-10T07:00:00Z", "status": "dstGap",
                "wallTime": "2024-03-10T02:30:00", "count": 1, "policy": "shift",
                "movedTo": "2024-03-10T07:30:00Z"
            },
            {"time": "2024-03-10T07:30:00Z", "status": "beforeCreated"}
        ]),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_ranges_name_their_field() {
    let api = Api::new();
    api.create("m", &minutely("m")).await;
    let cases = [
        ("to=2024-03-10T12:36:00Z", "from: is required"),
        ("from=2024-03-10T12:36:00Z", "to: is required"),
        (
            "from=yesterday&to=2024-03-10T12:36:00Z",
            "from: \"yesterday\" is not an RFC 3339 time",
        ),
        (
            "from=2024-03-10T12:36:00Z&to=2024-03-10T12:30:00Z",
            "to: must be after from",
        ),
        (
            "from=2024-03-10T00:00:00Z&to=2024-03-20T00:00:00Z",
            "to: the range holds 14400 nominal times; at most 10000",
        ),
        (
            "from=2024-03-10T12:36:00Z&to=2024-03-10T12:37:00Z&window=1h",
            "window",
        ),
    ];
    for (query, prefix) in cases {
        let answer = api.get(&format!("/jobs/m/occurrences?{query}")).await;
        assert_error(&answer, 400, prefix);
    }
    let answer = api
        .get("/jobs/nobody/occurrences?from=2024-03-10T12:36:00Z&to=2024-03-10T12:37:00Z")
        .await;
    assert_eq!(answer.0, StatusCode::NOT_FOUND, "{}", answer.1);
}
