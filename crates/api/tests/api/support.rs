//! What every area uses: the router over an `App` on the in-memory store and a manual clock
//! (`Api`), the envelope checks, and the jobs the tests create.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use chrono::{DateTime, Utc};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use sundial_api::{router, ApiAuth};
use sundial_ports::memory::{ManualClock, MemoryStore};
use sundial_service::{App, AppConfig};
use tower::ServiceExt;

/// The signing secret of every test app.
pub(crate) const TEST_SECRET: &[u8] = b"api-test-signing-secret-0123456789ab";

/// The manual clock's time: 2024-03-10T12:34:56Z.
pub(crate) const NOW: &str = "2024-03-10T12:34:56Z";

pub(crate) struct Api {
    pub(crate) router: Router,
    pub(crate) app: Arc<App<MemoryStore>>,
}

impl Api {
    pub(crate) fn new() -> Api {
        Api::with_token(None)
    }

    pub(crate) fn with_token(token: Option<&str>) -> Api {
        Api::with_auth(ApiAuth::from(token.map(str::to_owned)))
    }

    /// The router behind `auth` (named tokens with scopes).
    pub(crate) fn with_auth(auth: ApiAuth) -> Api {
        Api::with(AppConfig::new(TEST_SECRET.to_vec()), auth)
    }

    /// The router on a control plane with `config`, at [`NOW`], with no token.
    pub(crate) fn with_config(config: AppConfig) -> Api {
        Api::with(config, ApiAuth::from(None))
    }

    fn with(config: AppConfig, auth: ApiAuth) -> Api {
        let now: DateTime<Utc> = NOW.parse().unwrap();
        let clock = Arc::new(ManualClock::new(now));
        let app = Arc::new(App::new(MemoryStore::new(), clock, config));
        Api {
            router: router(Arc::clone(&app), auth),
            app,
        }
    }

    pub(crate) async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "{status}: body is not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        (status, body)
    }

    pub(crate) async fn call(
        &self,
        method: Method,
        uri: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(uri);
        let body = match body {
            Some(value) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Body::from(serde_json::to_vec(value).unwrap())
            }
            None => Body::empty(),
        };
        self.send(request.body(body).unwrap()).await
    }

    pub(crate) async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::GET, uri, None).await
    }

    pub(crate) async fn post(&self, uri: &str, body: &Value) -> (StatusCode, Value) {
        self.call(Method::POST, uri, Some(body)).await
    }

    pub(crate) async fn put(&self, uri: &str, body: Option<&Value>) -> (StatusCode, Value) {
        self.call(Method::PUT, uri, body).await
    }

    pub(crate) async fn delete(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, uri, None).await
    }

    /// Creates a job, expecting the success envelope.
    pub(crate) async fn create(&self, job_id: &str, body: &Value) {
        let answer = self.post(&format!("/jobs/{job_id}"), body).await;
        assert_eq!(answer, (StatusCode::OK, ok()), "create {job_id}");
    }

    /// Triggers a job, returning the execution id.
    pub(crate) async fn trigger(&self, job_id: &str, arguments: &Value) -> String {
        let (status, body) = self
            .post(&format!("/jobs/{job_id}/trigger"), arguments)
            .await;
        assert_eq!(status, StatusCode::OK, "trigger {job_id}: {body}");
        body["executionId"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn job(&self, job_id: &str) -> Value {
        let (status, body) = self.get(&format!("/jobs/{job_id}")).await;
        assert_eq!(status, StatusCode::OK, "GET /jobs/{job_id}: {body}");
        body
    }

    pub(crate) async fn status_of(&self, job_id: &str) -> StatusCode {
        self.get(&format!("/jobs/{job_id}")).await.0
    }
}

pub(crate) fn ok() -> Value {
    json!({"resp_code": 200, "resp_msg": null})
}

/// Asserts an error envelope: the status, a matching `resp_code`, and a message starting with `prefix`.
#[track_caller]
pub(crate) fn assert_error(answer: &(StatusCode, Value), status: u16, prefix: &str) {
    let (got, body) = answer;
    assert_eq!(got.as_u16(), status, "status of {body}");
    assert_eq!(body["resp_code"], json!(status), "resp_code of {body}");
    let message = body["resp_msg"]
        .as_str()
        .unwrap_or_else(|| panic!("resp_msg of {body}"));
    assert!(
        message.starts_with(prefix),
        "resp_msg {message:?} should start with {prefix:?}"
    );
}

/// docs/api.md's example job (the "timer 列表" entry), URLs pointed at a closed local port.
pub(crate) fn seed_job() -> Value {
    serde_json::from_str(include_str!("../fixtures/seed002-job.json")).unwrap()
}

/// The seed job under another id.
pub(crate) fn seed_job_as(job_id: &str) -> Value {
    let mut body = seed_job();
    body["jobId"] = json!(job_id);
    body
}

/// A job that only runs when triggered.
pub(crate) fn triggered_job(creator: &str) -> Value {
    json!({
        "jobName": "on demand",
        "creator": creator,
        "creatorName": "tests",
        "request": [{"url": "http://127.0.0.1:9/run/${jobId}", "method": "POST"}],
        "timer": {"period": "external"}
    })
}

pub(crate) fn child_job(parent: &str, parent_execution: Option<u64>) -> Value {
    let mut body = triggered_job("001");
    body["parentJob"] = json!(parent);
    if let Some(n) = parent_execution {
        body["parentJobExecution"] = json!(n);
    }
    body
}
