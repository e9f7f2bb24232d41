//! Errors and authentication: transport errors are envelopes, the bearer token guards
//! everything but health.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::json;
use sundial_api::MAX_BODY_BYTES;
use sundial_ports::store::{JobRecord, JobStore};

use crate::support::*;

#[tokio::test(flavor = "multi_thread")]
async fn transport_errors_are_envelopes() {
    let api = Api::new();
    let malformed = Request::post("/jobs/x")
        .body(Body::from("{\"jobName\": "))
        .unwrap();
    assert_error(&api.send(malformed).await, 400, "body: invalid JSON");

    let huge = vec![b' '; MAX_BODY_BYTES + 1];
    let declared = Request::post("/jobs/x")
        .header(header::CONTENT_LENGTH, huge.len())
        .body(Body::from(huge.clone()))
        .unwrap();
    assert_error(&api.send(declared).await, 413, "body:");
    let streamed = Request::post("/jobs/x/trigger")
        .body(Body::from(huge))
        .unwrap();
    assert_error(&api.send(streamed).await, 413, "body:");
    // Exactly the limit is fine (whitespace around an object).
    let mut at_limit = vec![b' '; MAX_BODY_BYTES - 2];
    at_limit.extend_from_slice(b"{}");
    let request = Request::post("/specs/preview")
        .body(Body::from(at_limit))
        .unwrap();
    assert_error(&api.send(request).await, 400, "schedule:");

    // A path segment that is not UTF-8 once percent-decoded.
    assert_error(&api.get("/jobs/%FF").await, 400, "path:");
    assert_error(
        &api.post("/jobs/x/feedback/%C3%28", &json!({})).await,
        400,
        "path:",
    );
    assert_error(&api.get("/executions/%FE%FF").await, 400, "path:");

    assert_error(&api.get("/no/such/route").await, 404, "");
    assert_error(&api.get("/jobs/x/nothing").await, 404, "");
    assert_error(&api.call(Method::PATCH, "/jobs/x", None).await, 405, "");
    assert_error(&api.get("/jobs/x/trigger").await, 405, "");
    assert_error(&api.call(Method::POST, "/health", None).await, 405, "");
    assert_error(&api.get("/job/x").await, 405, "");
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_token_guards_everything_but_health() {
    let api = Api::with_token(Some("s3cret-token-0123"));
    let with = |auth: Option<&str>, uri: &str| {
        let mut request = Request::get(uri);
        if let Some(auth) = auth {
            request = request.header(header::AUTHORIZATION, auth);
        }
        request.body(Body::empty()).unwrap()
    };
    assert_error(&api.send(with(None, "/stats")).await, 401, "");
    assert_error(
        &api.send(with(Some("Bearer wrong"), "/stats")).await,
        401,
        "",
    );
    assert_error(
        &api.send(with(Some("Bearer s3cret-token-012"), "/stats"))
            .await,
        401,
        "",
    );
    assert_error(
        &api.send(with(Some("s3cret-token-0123"), "/stats")).await,
        401,
        "",
    );
    assert_error(
        &api.send(with(Some("Basic s3cret-token-0123"), "/stats"))
            .await,
        401,
        "",
    );
    assert_error(&api.send(with(None, "/jobs/x")).await, 401, "");
    assert_error(
        &api.send(with(Some("Bearers3cret-token-0123"), "/stats"))
            .await,
        401,
        "",
    );
    // RFC 7235: the scheme is case-insensitive, and one or more spaces follow it.
    for auth in [
        "Bearer s3cret-token-0123",
        "bearer s3cret-token-0123",
        "BEARER s3cret-token-0123",
        "bEaReR   s3cret-token-0123",
    ] {
        assert_eq!(
            api.send(with(Some(auth), "/stats")).await.0,
            StatusCode::OK,
            "{auth}"
        );
    }
    assert_eq!(
        api.send(with(None, "/health")).await,
        (StatusCode::OK, json!({"status": "ok", "debugMode": "off"}))
    );

    let create = Request::post("/jobs/20220125")
        .header(header::AUTHORIZATION, "Bearer s3cret-token-0123")
        .body(Body::from(seed_job().to_string()))
        .unwrap();
    assert_eq!(api.send(create).await, (StatusCode::OK, ok()));
    let unauthorised = Request::post("/jobs/other")
        .body(Body::from(seed_job_as("other").to_string()))
        .unwrap();
    assert_error(&api.send(unauthorised).await, 401, "");
    assert!(
        api.app.store().get_job("other").await.unwrap().is_none(),
        "a refused request changes nothing"
    );
}

/// A stored record that does not decode is a 500 naming it, not a 503: trying again cannot help
/// until it is repaired. A store that is down stays a 503.
#[tokio::test(flavor = "multi_thread")]
async fn corrupt_stored_data_is_a_500_naming_the_record() {
    let api = Api::new();
    let now = chrono::DateTime::parse_from_rfc3339(NOW)
        .unwrap()
        .with_timezone(&chrono::Utc);
    let corrupt = JobRecord {
        job_id: "broken".into(),
        version: 1,
        creator: "001".into(),
        parent_job: None,
        service: None,
        state: "active".into(),
        created_at: now,
        updated_at: now,
        document: json!({"definition": {"jobName": 7}, "state": {}}),
    };
    api.app.store().create_job(&corrupt).await.unwrap();
    assert_error(
        &api.get("/jobs/broken").await,
        500,
        "stored job broken is unreadable",
    );

    api.app.store().fail_write(0);
    assert_error(
        &api.post("/jobs/other", &seed_job_as("other")).await,
        503,
        "temporarily unavailable",
    );
}
