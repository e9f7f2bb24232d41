//! `ReqwestClient` against a real HTTP server on 127.0.0.1: statuses, time limits, the body cap,
//! redirects, and the address policy.
//!
//! The only traffic these tests send goes to 127.0.0.1. Refusals of other addresses must happen
//! before any connection is attempted, which the tests check by timing them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use axum::{Json, Router};
use http_body_util::{BodyExt, Full};
use sundial_ports::http::{HttpClient, HttpError, HttpRequest, HttpResponse, MAX_RESPONSE_BYTES};
use sundial_service::adapters::http::{AddressPolicy, ReqwestClient, USER_AGENT};

/// A body of `len` bytes sent chunked, with no `Content-Length`, so the client cannot refuse it
/// up front and must count while reading.
fn chunked(len: usize) -> Body {
    Body::new(Full::new(Bytes::from(vec![b'x'; len])).map_frame(|frame| frame))
}

async fn server() -> SocketAddr {
    let app = Router::new()
        .route(
            "/ok",
            get(|| async { Json(serde_json::json!({ "ok": true })) }),
        )
        .route(
            "/fail",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                "late"
            }),
        )
        .route("/huge", get(|| async { vec![b'x'; 2 * 1024 * 1024] }))
        .route("/huge-chunked", get(|| async { chunked(2 * 1024 * 1024) }))
        .route("/at-limit", get(|| async { chunked(MAX_RESPONSE_BYTES) }))
        .route(
            "/over-limit",
            get(|| async { chunked(MAX_RESPONSE_BYTES + 1) }),
        )
        .route(
            "/redirect",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }),
        )
        .route(
            "/echo",
            post(|headers: axum::http::HeaderMap, body: Bytes| async move {
                let agent = headers
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                let custom = headers
                    .get("x-custom")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                Json(serde_json::json!({
                    "agent": agent,
                    "custom": custom,
                    "body": String::from_utf8_lossy(&body),
                }))
                .into_response()
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn get_request(url: String, timeout: Duration) -> HttpRequest {
    HttpRequest {
        method: "GET".to_owned(),
        url,
        headers: Vec::new(),
        body: None,
        timeout,
    }
}

fn client(policy: AddressPolicy) -> ReqwestClient {
    ReqwestClient::new(policy).unwrap()
}

fn no_loopback(allow_hosts: &[&str]) -> AddressPolicy {
    AddressPolicy {
        allow_loopback: false,
        allow_private: false,
        allow_hosts: allow_hosts.iter().map(|s| (*s).to_owned()).collect(),
    }
}

async fn get_url(client: &ReqwestClient, url: String) -> Result<HttpResponse, HttpError> {
    client.send(get_request(url, Duration::from_secs(5))).await
}

#[tokio::test]
async fn a_json_200_is_returned_whole() {
    let addr = server().await;
    let response = get_url(&client(AddressPolicy::local()), format!("http://{addr}/ok"))
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert!(response.is_success());
    assert_eq!(response.body, br#"{"ok":true}"#);
}

#[tokio::test]
async fn a_500_is_a_response_not_an_error() {
    let addr = server().await;
    let response = get_url(
        &client(AddressPolicy::local()),
        format!("http://{addr}/fail"),
    )
    .await
    .unwrap();
    assert_eq!(response.status, 500);
    assert!(!response.is_success());
    assert_eq!(response.body, b"boom");
}

#[tokio::test]
async fn method_headers_body_and_user_agent_are_sent() {
    let addr = server().await;
    let request = HttpRequest {
        method: "POST".to_owned(),
        url: format!("http://{addr}/echo"),
        headers: vec![("X-Custom".to_owned(), "yes".to_owned())],
        body: Some(b"hello".to_vec()),
        timeout: Duration::from_secs(5),
    };
    let response = client(AddressPolicy::local()).send(request).await.unwrap();
    assert_eq!(response.status, 200);
    let echoed: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(echoed["agent"], USER_AGENT);
    assert_eq!(echoed["custom"], "yes");
    assert_eq!(echoed["body"], "hello");
}

#[tokio::test]
async fn one_client_serves_many_calls() {
    let addr = server().await;
    let client = client(AddressPolicy::local());
    for _ in 0..5 {
        let response = get_url(&client, format!("http://{addr}/ok")).await.unwrap();
        assert_eq!(response.status, 200);
    }
}

#[tokio::test]
async fn a_slow_endpoint_times_out_at_the_request_limit() {
    let addr = server().await;
    let started = Instant::now();
    let result = client(AddressPolicy::local())
        .send(get_request(
            format!("http://{addr}/slow"),
            Duration::from_millis(300),
        ))
        .await;
    assert_eq!(result, Err(HttpError::Timeout));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
}

#[tokio::test]
async fn bodies_over_the_cap_are_refused() {
    let addr = server().await;
    let client = client(AddressPolicy::local());
    for path in ["huge", "huge-chunked", "over-limit"] {
        let result = get_url(&client, format!("http://{addr}/{path}")).await;
        assert_eq!(result, Err(HttpError::BodyTooLarge), "{path}");
    }
    let response = get_url(&client, format!("http://{addr}/at-limit"))
        .await
        .unwrap();
    assert_eq!(response.body.len(), MAX_RESPONSE_BYTES);
}

#[tokio::test]
async fn redirects_are_returned_not_followed() {
    let addr = server().await;
    let response = get_url(
        &client(AddressPolicy::local()),
        format!("http://{addr}/redirect"),
    )
    .await
    .unwrap();
    assert_eq!(response.status, 307);
}

#[tokio::test]
async fn only_http_and_https_are_called() {
    let client = client(AddressPolicy::local());
    for url in [
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "not a url",
        "http://",
    ] {
        let result = get_url(&client, url.to_owned()).await;
        assert!(
            matches!(result, Err(HttpError::InvalidUrl(_))),
            "{url}: {result:?}"
        );
    }
}

#[tokio::test]
async fn loopback_is_refused_unless_allowed() {
    let addr = server().await;
    let port = addr.port();
    let client = client(AddressPolicy::aws());
    for url in [
        format!("http://127.0.0.1:{port}/ok"),
        format!("http://localhost:{port}/ok"),
        format!("http://[::ffff:127.0.0.1]:{port}/ok"),
    ] {
        let result = get_url(&client, url.clone()).await;
        match result {
            Err(HttpError::Refused(reason)) => assert!(reason.contains("loopback"), "{reason}"),
            other => panic!("{url}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_closed_loopback_port_is_a_transport_error() {
    // Bind and drop to find a port nothing listens on.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let result = get_url(&client(AddressPolicy::local()), format!("http://{addr}/")).await;
    assert!(matches!(result, Err(HttpError::Transport(_))), "{result:?}");
}

/// These addresses are refused from the URL alone: nothing is resolved or dialled, so the answer
/// comes back at once (a connection attempt to an unroutable address would take seconds).
#[tokio::test]
async fn private_and_metadata_addresses_are_refused_without_any_traffic() {
    let client = client(AddressPolicy::local());
    for url in [
        "http://10.0.0.1/",
        "https://10.0.0.1:8443/admin",
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.170.2/v2/credentials",
        "http://2852039166/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[fe80::1]/",
        "http://192.168.1.1/",
        "http://0.0.0.0/",
    ] {
        let started = Instant::now();
        let result = client
            .send(get_request(url.to_owned(), Duration::from_secs(30)))
            .await;
        let elapsed = started.elapsed();
        assert!(
            matches!(result, Err(HttpError::Refused(_))),
            "{url}: {result:?}"
        );
        assert!(elapsed < Duration::from_millis(100), "{url}: {elapsed:?}");
    }
}

#[tokio::test]
async fn allow_hosts_lets_an_address_through() {
    let addr = server().await;
    let port = addr.port();
    let cases = [
        (vec!["127.0.0.1"], format!("http://127.0.0.1:{port}/ok")),
        (vec!["127.0.0.0/8"], format!("http://127.0.0.1:{port}/ok")),
        (vec!["localhost"], format!("http://localhost:{port}/ok")),
        (vec!["127.0.0.1"], format!("http://localhost:{port}/ok")),
    ];
    for (allow, url) in cases {
        let response = get_url(&client(no_loopback(&allow)), url.clone())
            .await
            .unwrap_or_else(|e| panic!("{allow:?} {url}: {e}"));
        assert_eq!(response.status, 200, "{allow:?} {url}");
    }
    // An entry for another address opens nothing.
    let result = get_url(
        &client(no_loopback(&["127.0.0.2"])),
        format!("http://127.0.0.1:{port}/ok"),
    )
    .await;
    assert!(matches!(result, Err(HttpError::Refused(_))), "{result:?}");
}

#[tokio::test]
async fn malformed_allow_hosts_entries_fail_construction() {
    assert!(ReqwestClient::new(no_loopback(&["10.0.0.0/33"])).is_err());
    assert!(ReqwestClient::new(no_loopback(&["host:80"])).is_err());
}
