//! The handlers on the in-memory adapters, driven by the `events/` fixtures: what each function
//! does with its event, with failures, panics and poison messages, and no AWS (the same paths on
//! moto are in `tests/moto/lambda.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use http_body_util::BodyExt;
use lambda_http::tower::ServiceExt;
use serde_json::{json, Value};
use sundial_ports::http::{HttpError, HttpRequest, HttpResponse};
use sundial_ports::memory::{ManualClock, MemoryQueue, MemoryStore, RecordingPublisher};
use sundial_ports::store::{ExecutionRecord, ExecutionStore};
use sundial_service::engine::retry_backoff;

use super::*;
use crate::metrics::Metrics;
use crate::runtime::{Ports, Settings};

/// The secret `events/api-feedback.json`'s token was signed with (docs/deploy.md).
pub(super) const FIXTURE_SECRET: &str = "sample-signing-secret-for-the-fixtures";

fn fixture(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn sqs_fixture(name: &str) -> SqsEvent {
    serde_json::from_value(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

/// The job service: answers 200 and records every call; a call to a `/panic` path panics, as a
/// bug in a step would.
#[derive(Clone, Default)]
pub(super) struct Target {
    calls: Arc<Mutex<Vec<HttpRequest>>>,
}

impl Target {
    fn calls(&self) -> Vec<HttpRequest> {
        self.calls.lock().unwrap().clone()
    }
}

impl HttpClient for Target {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        self.calls.lock().unwrap().push(request.clone());
        if request.url.contains("/panic") {
            panic!("the target client panicked on {}", request.url);
        }
        Ok(HttpResponse {
            status: 200,
            body: br#"{"ok": true}"#.to_vec(),
        })
    }
}

pub(super) type MemorySundial = Sundial<MemoryStore, MemoryQueue, Target, RecordingPublisher>;

pub(super) struct Rig {
    pub(super) sundial: MemorySundial,
    clock: Arc<ManualClock>,
    target: Target,
}

/// The functions' wiring ([`Sundial::on`], the settings a deployment gives) on the in-memory
/// adapters, at `start`.
pub(super) fn memory_rig(start: &str, secret: &str) -> Rig {
    let vars = [
        ("SUNDIAL_TABLE", "memory"),
        ("SUNDIAL_DISPATCH_QUEUE_URL", "memory://dispatch"),
        ("SUNDIAL_NOTIFY_QUEUE_URL", "memory://notify"),
        ("SUNDIAL_SIGNING_SECRET", secret),
    ];
    let settings =
        Settings::from_vars(vars.map(|(k, v)| (k.to_owned(), v.to_owned())).to_vec()).unwrap();
    let clock = Arc::new(ManualClock::new(at(start)));
    let target = Target::default();
    let ports = Ports {
        store: MemoryStore::new(),
        dispatch_queue: MemoryQueue::new(clock.clone()),
        notify_queue: MemoryQueue::new(clock.clone()),
        http: target.clone(),
        publisher: RecordingPublisher::new(),
        clock: clock.clone(),
    };
    Rig {
        sundial: Sundial::on(&settings, ports, Arc::new(Metrics::default())),
        clock,
        target,
    }
}

impl Rig {
    /// Sends an API Gateway v2 event through the API handler, as the Lambda runtime would.
    async fn api_event(&self, event: &Value) -> (u16, Value) {
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        let response = api_router(&self.sundial).oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// The create-job fixture turned into another request.
    pub(super) async fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut event = fixture("api-create-job.json");
        event["rawPath"] = json!(path);
        event["requestContext"]["http"]["method"] = json!(method);
        event["requestContext"]["http"]["path"] = json!(path);
        event["body"] = body.map_or(Value::Null, |b| json!(b.to_string()));
        self.api_event(&event).await
    }

    /// A job calling `path` on the target, triggered once: one dispatch message waiting.
    async fn triggered(&self, job_id: &str, path: &str) {
        let job = json!({
            "jobName": job_id, "creator": "001", "creatorName": "tests",
            "request": [{"method": "POST", "url": format!("http://127.0.0.1:9{path}")}],
            "timer": {"period": "external"},
        });
        let (status, body) = self
            .api("POST", &format!("/jobs/{job_id}"), Some(job))
            .await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = self
            .api("POST", &format!("/jobs/{job_id}/trigger"), Some(json!({})))
            .await;
        assert_eq!(status, 200, "{body}");
    }

    fn queue(&self, kind: QueueKind) -> &MemoryQueue {
        self.sundial.engine.queue(kind)
    }

    /// What the SQS event source would hand the function: the visible messages as an SQS event.
    async fn poll(&self, kind: QueueKind) -> SqsEvent {
        let deliveries = self
            .queue(kind)
            .receive(10, Duration::from_secs(30))
            .await
            .unwrap();
        let mut event = SqsEvent::default();
        for delivery in deliveries {
            let mut message = SqsMessage::default();
            message.message_id = Some(format!("message-{}", delivery.receipt));
            message.receipt_handle = Some(delivery.receipt);
            message.body = Some(delivery.body);
            message.attributes.insert(
                "ApproximateReceiveCount".into(),
                delivery.receive_count.to_string(),
            );
            event.records.push(message);
        }
        event
    }

    /// Feeds a queue to its handler until it is empty, as the event source would, deleting what
    /// the handler did not report (no failure is expected).
    async fn drain(&self, kind: QueueKind) {
        for _ in 0..20 {
            let event = self.poll(kind).await;
            if event.records.is_empty() {
                return;
            }
            let response = batch(&self.sundial, kind, event.clone()).await;
            assert!(response.batch_item_failures.is_empty(), "{response:?}");
            for record in &event.records {
                let _ = self
                    .queue(kind)
                    .ack(record.receipt_handle.as_deref().unwrap())
                    .await;
            }
        }
        panic!("the {} queue never drained", kind.name());
    }

    async fn executions(&self, job_id: &str) -> Vec<Value> {
        let (status, body) = self
            .api("GET", &format!("/jobs/{job_id}/executions"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        body["executions"].as_array().cloned().unwrap_or_default()
    }
}

fn failed_ids(response: &SqsBatchResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

#[tokio::test]
async fn the_fixtures_take_a_job_from_the_api_through_tick_and_dispatch_to_its_target() {
    // Two minutes before the fire: beyond the tick's 80 s horizon, so the API leaves it to the tick.
    let rig = memory_rig("2024-06-10T11:58:00Z", FIXTURE_SECRET);
    let (status, body) = rig.api_event(&fixture("api-create-job.json")).await;
    assert_eq!((status, &body["resp_code"]), (200, &json!(200)), "{body}");
    assert!(rig.executions("sample-report").await.is_empty());

    // EventBridge delivers the 12:00 tick (the fixture), and then again.
    rig.clock.set(at("2024-06-10T12:00:00Z"));
    let tick_event = fixture("tick.json");
    let report = tick(&rig.sundial, &tick_event).await.unwrap();
    assert_eq!(report["fires"], 1, "the */5 job's 12:00 fire: {report}");
    let again = tick(&rig.sundial, &tick_event).await.unwrap();
    assert_eq!(again["fires"], 0, "a repeated tick plans nothing new");

    // The dispatch fixture names that fire and a trigger that does not exist (a no-op).
    let response = batch(
        &rig.sundial,
        QueueKind::Dispatch,
        sqs_fixture("dispatch.json"),
    )
    .await;
    assert!(failed_ids(&response).is_empty(), "{response:?}");
    // The tick's own message for the same fire changes nothing: delivery is at least once.
    rig.drain(QueueKind::Dispatch).await;
    let calls = rig.target.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].url, "http://127.0.0.1:9/reports/build?run=1");
    assert_eq!(calls[0].body.as_deref(), Some(&br#"{"format":"pdf"}"#[..]));
    let executions = rig.executions("sample-report").await;
    assert_eq!(executions.len(), 1, "{executions:#?}");
    assert_eq!(
        executions[0]["executionId"],
        "sample-report~20240610T120000Z"
    );
    assert_eq!(executions[0]["state"], "Succeeded", "{executions:#?}");

    // The notify fixture's rule 0 does not exist on this job: dropped, not failed.
    let response = batch(&rig.sundial, QueueKind::Notify, sqs_fixture("notify.json")).await;
    assert!(failed_ids(&response).is_empty(), "{response:?}");
}

/// The identity API Gateway authorized is the actor of the request's changes: the IAM principal's
/// ARN (the fixture signs with SigV4), or the JWT's subject under a JWT authorizer.
#[tokio::test]
async fn the_principal_or_the_jwt_subject_is_the_actor_in_the_history() {
    let rig = memory_rig("2024-06-10T11:58:00Z", FIXTURE_SECRET);
    let (status, body) = rig.api_event(&fixture("api-create-job.json")).await;
    assert_eq!(status, 200, "{body}");

    let mut event = fixture("api-create-job.json");
    event["rawPath"] = json!("/jobs/sample-report/pause");
    event["requestContext"]["http"]["path"] = json!("/jobs/sample-report/pause");
    event["body"] = json!(json!({"notes": "by JWT"}).to_string());
    event["requestContext"]["authorizer"] = json!({
        "jwt": {"claims": {"sub": "user-42", "iss": "https://issuer.example",
                           "scope": "sundial/write"}, "scopes": ["sundial/write"]}
    });
    let (status, body) = rig.api_event(&event).await;
    assert_eq!(status, 200, "{body}");

    // No authorizer at all (an API deployed without one): anonymous.
    event["rawPath"] = json!("/jobs/sample-report/unpause");
    event["requestContext"]["http"]["path"] = json!("/jobs/sample-report/unpause");
    event["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    let (status, body) = rig.api_event(&event).await;
    assert_eq!(status, 200, "{body}");

    let (status, history) = rig.api("GET", "/jobs/sample-report/history", None).await;
    assert_eq!(status, 200, "{history}");
    let entries: Vec<(&str, &str)> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        entries,
        [
            ("unpause", "anonymous"),
            ("pause", "user-42"),
            ("create", "arn:aws:iam::123456789012:user/ana"),
        ]
    );
}

/// A JWT has the scope its claims grant (`JwtScopeClaim`, `JwtWriteScope`, `JwtReadScope`; the
/// defaults here): `sundial/read` reads and asks dry runs but changes nothing, a token with
/// neither scope is refused everything, both with the API's 403 envelope naming the scope.
#[tokio::test]
async fn a_jwt_has_the_scope_its_claims_grant() {
    let rig = memory_rig("2024-06-10T11:58:00Z", FIXTURE_SECRET);
    let (status, body) = rig.api_event(&fixture("api-create-job.json")).await;
    assert_eq!(status, 200, "{body}");
    let with_jwt = |method: &str, path: &str, body: Option<Value>, claims: Value| {
        let mut event = fixture("api-create-job.json");
        event["rawPath"] = json!(path);
        event["requestContext"]["http"]["method"] = json!(method);
        event["requestContext"]["http"]["path"] = json!(path);
        event["body"] = body.map_or(Value::Null, |b| json!(b.to_string()));
        let scopes = claims["scope"]
            .as_str()
            .map(|s| s.split_whitespace().collect::<Vec<_>>());
        event["requestContext"]["authorizer"] =
            json!({"jwt": {"claims": claims, "scopes": scopes}});
        event
    };
    let reader = json!({"sub": "viewer-7", "scope": "openid sundial/read"});
    let (status, body) = rig
        .api_event(&with_jwt(
            "GET",
            "/jobs/sample-report",
            None,
            reader.clone(),
        ))
        .await;
    assert_eq!(status, 200, "a reader reads: {body}");
    let pause = json!({"notes": "by a reader"});
    let (status, body) = rig
        .api_event(&with_jwt(
            "POST",
            "/jobs/sample-report/pause",
            Some(pause),
            reader.clone(),
        ))
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["resp_msg"],
        "scope: this route needs scope write; token viewer-7 has scope read"
    );
    let dry_run = json!({"jobIds": ["sample-report"], "reason": "try", "dryRun": true});
    let (status, body) = rig
        .api_event(&with_jwt("POST", "/bulk/jobs/pause", Some(dry_run), reader))
        .await;
    assert_eq!(status, 200, "a dry run is a read: {body}");

    let stranger = json!({"sub": "stranger", "scope": "openid profile"});
    let (status, body) = rig
        .api_event(&with_jwt("GET", "/jobs", None, stranger))
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["resp_code"], 403, "{body}");
    assert!(
        body["resp_msg"]
            .as_str()
            .is_some_and(|m| m.contains("token stranger grants no scope")),
        "{body}"
    );

    let (status, job) = rig.api("GET", "/jobs/sample-report", None).await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(
        job["state"], "active",
        "the reader's pause did nothing: {job}"
    );
}

/// Without the console's secret (the stack's default), the API function serves no page
/// (docs/deploy.md, "The operator console"): its router answers the console's paths with the
/// API's own 404 envelope, never a page or a login form.
#[tokio::test]
async fn the_api_function_serves_no_console_page() {
    let rig = memory_rig("2024-06-10T12:00:00Z", FIXTURE_SECRET);
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/ui/jobs"),
        ("GET", "/ui/jobs/new"),
        ("GET", "/ui/login"),
        ("GET", "/ui/assets/console.js"),
        ("POST", "/ui/jobs/new"),
        ("POST", "/ui/specs/preview"),
    ] {
        let (status, body) = rig.api(method, path, None).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert_eq!(body["resp_code"], 404, "{method} {path}: {body}");
        assert!(body["resp_msg"].is_string(), "{method} {path}: {body}");
    }
}

/// A console request as API Gateway passes it on the console's routes, which have no authorizer:
/// no identity in the request context, the session cookie and a form body, if any.
fn console_event(method: &str, path: &str, cookie: Option<&str>, form: Option<&str>) -> Value {
    let mut event = fixture("api-create-job.json");
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    event["rawPath"] = json!(path);
    event["rawQueryString"] = json!(query);
    event["requestContext"]["http"]["method"] = json!(method);
    event["requestContext"]["http"]["path"] = json!(path);
    event["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    let mut headers = json!({"host": "abc.execute-api.us-east-1.amazonaws.com"});
    // Payload 2.0 moves the request's cookies out of the headers into `cookies`.
    if let Some(cookie) = cookie {
        event["cookies"] = json!([format!("sundial_session={cookie}")]);
    }
    if form.is_some() {
        headers["content-type"] = json!("application/x-www-form-urlencoded");
    }
    event["headers"] = headers;
    event["body"] = form.map_or(Value::Null, |f| json!(f));
    event["isBase64Encoded"] = json!(false);
    event
}

/// What the console answered: status, `Location`, `Set-Cookie` and the page.
struct Answer {
    status: u16,
    location: String,
    set_cookie: String,
    page: String,
}

impl Answer {
    /// The session cookie's value it set.
    fn session(&self) -> String {
        self.set_cookie
            .strip_prefix("sundial_session=")
            .and_then(|rest| rest.split(';').next())
            .unwrap_or_default()
            .to_owned()
    }

    /// The CSRF token its forms carry.
    fn csrf(&self) -> String {
        let at = self
            .page
            .find("name=\"csrf\" value=\"")
            .expect("a form with a CSRF token");
        let rest = &self.page[at + "name=\"csrf\" value=\"".len()..];
        rest[..rest.find('"').unwrap()].to_owned()
    }
}

/// The console's tokens on the stack: a write token and a read one, as the secret holds them.
const CONSOLE_SECRET: &str =
    "alice:write:alice-token-0123456789abcdef,auditor:read:auditor-token-0123456789ab";

async fn console_call(router: &axum::Router, event: Value) -> Answer {
    let request = lambda_http::request::from_str(&event.to_string()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (location, set_cookie) = (header("location"), header("set-cookie"));
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        location,
        set_cookie,
        page: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The API function with the console on (docs/deploy.md, "The operator console"): its pages
/// behind the login of the stack's tokens, `Secure` cookies, the token's name as the actor of a
/// change, a read token refused every change, and a logout that holds in a new execution
/// environment (a router built afresh over the same table).
#[tokio::test]
async fn the_api_function_serves_the_console_behind_the_login_of_the_stacks_tokens() {
    let rig = memory_rig("2024-06-10T11:58:00Z", FIXTURE_SECRET);
    let (status, body) = rig.api_event(&fixture("api-create-job.json")).await;
    assert_eq!(status, 200, "{body}");
    let auth = crate::console::tokens_of_secret(CONSOLE_SECRET).unwrap();
    let router = api_router_with_console(&rig.sundial, Some(crate::console::config(auth.clone())));
    let call = |method, path, cookie: Option<String>, form: Option<String>| {
        let event = console_event(method, path, cookie.as_deref(), form.as_deref());
        let router = router.clone();
        async move { console_call(&router, event).await }
    };

    // No session: every page sends the reader to the login page; the assets are open.
    for path in ["/", "/ui/jobs", "/ui/jobs/sample-report", "/ui/dashboard"] {
        let answer = call("GET", path, None, None).await;
        assert_eq!(
            (answer.status, answer.location.as_str()),
            (303, "/ui/login"),
            "{path}"
        );
    }
    let answer = call(
        "POST",
        "/ui/jobs/sample-report/pause",
        None,
        Some("csrf=x".into()),
    )
    .await;
    assert_eq!(
        (answer.status, answer.location.as_str()),
        (303, "/ui/login")
    );
    assert_eq!(
        call("GET", "/ui/assets/console.css", None, None)
            .await
            .status,
        200
    );
    let login = call("GET", "/ui/login", None, None).await;
    assert_eq!(login.status, 200);
    assert!(login.page.contains("Access token"), "{}", login.page);

    // A wrong token, and the API's own credentials are not asked for.
    let wrong = call(
        "POST",
        "/ui/login",
        None,
        Some("token=nope-0123456789abcdef0".into()),
    )
    .await;
    assert_eq!(wrong.status, 401);

    let login = call(
        "POST",
        "/ui/login",
        None,
        Some("token=alice-token-0123456789abcdef".into()),
    )
    .await;
    assert_eq!((login.status, login.location.as_str()), (303, "/"));
    for attribute in [
        "HttpOnly",
        "SameSite=Strict",
        "Secure",
        "Path=/",
        "Max-Age=28800",
    ] {
        assert!(
            login.set_cookie.contains(attribute),
            "{attribute}: {}",
            login.set_cookie
        );
    }
    let alice = login.session();

    let list = call("GET", "/", Some(alice.clone()), None).await;
    assert_eq!(list.status, 200);
    assert!(list.page.contains("sample-report"), "{}", list.page);
    let job = call("GET", "/ui/jobs/sample-report", Some(alice.clone()), None).await;
    assert_eq!(job.status, 200);
    let csrf = job.csrf();
    // A form without the session's CSRF token changes nothing.
    let forged = call(
        "POST",
        "/ui/jobs/sample-report/pause",
        Some(alice.clone()),
        Some("csrf=forged&notes=x".into()),
    )
    .await;
    assert_eq!(forged.status, 403);
    let paused = call(
        "POST",
        "/ui/jobs/sample-report/pause",
        Some(alice.clone()),
        Some(format!("csrf={csrf}&notes=from+the+console")),
    )
    .await;
    assert_eq!(paused.status, 303, "{}", paused.page);

    // A read token's session sees the pages and changes nothing.
    let login = call(
        "POST",
        "/ui/login",
        None,
        Some("token=auditor-token-0123456789ab".into()),
    )
    .await;
    let auditor = login.session();
    let job = call("GET", "/ui/jobs/sample-report", Some(auditor.clone()), None).await;
    assert_eq!(job.status, 200);
    let refused = call(
        "POST",
        "/ui/jobs/sample-report/unpause",
        Some(auditor.clone()),
        Some(format!("csrf={}&notes=x", job.csrf())),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.page);
    assert!(refused.page.contains("scope read"), "{}", refused.page);

    let (status, history) = rig.api("GET", "/jobs/sample-report/history", None).await;
    assert_eq!(status, 200, "{history}");
    let entries: Vec<(&str, &str)> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        entries,
        [
            ("pause", "alice"),
            ("create", "arn:aws:iam::123456789012:user/ana")
        ]
    );

    // Logout: the cookie is cleared and refused from then on, here and in a new execution
    // environment (the console's state built afresh, the table the same).
    let logout = call(
        "POST",
        "/ui/logout",
        Some(alice.clone()),
        Some(format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(
        (logout.status, logout.location.as_str()),
        (303, "/ui/login")
    );
    assert!(logout.set_cookie.contains("Max-Age=0") && logout.set_cookie.contains("Secure"));
    let after = call("GET", "/", Some(alice.clone()), None).await;
    assert_eq!(
        (after.status, after.location.as_str()),
        (303, "/ui/login?expired=1")
    );
    let cold = api_router_with_console(&rig.sundial, Some(crate::console::config(auth)));
    let event = console_event("GET", "/ui/jobs", Some(&alice), None);
    let after = console_call(&cold, event).await;
    assert_eq!(
        (after.status, after.location.as_str()),
        (303, "/ui/login?expired=1")
    );
    // The other session is still on.
    let event = console_event("GET", "/ui/jobs", Some(&auditor), None);
    assert_eq!(console_call(&cold, event).await.status, 200);
}

/// A job whose first fire falls within the tick's horizon is planned by the API function in the
/// creating request: its execution exists and its message is on the dispatch queue before any tick,
/// so it runs on its second instead of after the next minute's tick.
#[tokio::test]
async fn the_api_function_plans_a_new_job_whose_first_fire_is_near() {
    let rig = memory_rig("2024-06-10T11:59:30Z", FIXTURE_SECRET);
    let (status, body) = rig.api_event(&fixture("api-create-job.json")).await;
    assert_eq!((status, &body["resp_code"]), (200, &json!(200)), "{body}");
    let executions = rig.executions("sample-report").await;
    assert_eq!(executions.len(), 1, "{executions:#?}");
    assert_eq!(
        executions[0]["executionId"],
        "sample-report~20240610T120000Z"
    );

    // The tick at 12:00 finds it planned: nothing new.
    rig.clock.set(at("2024-06-10T12:00:00Z"));
    let report = tick(&rig.sundial, &fixture("tick.json")).await.unwrap();
    assert_eq!(report["fires"], 0, "{report}");
    rig.drain(QueueKind::Dispatch).await;
    let calls = rig.target.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let executions = rig.executions("sample-report").await;
    assert_eq!(executions[0]["state"], "Succeeded", "{executions:#?}");
}

#[tokio::test]
async fn the_api_fixtures_reach_their_routes() {
    let rig = memory_rig("2024-06-10T12:00:00Z", FIXTURE_SECRET);
    let (status, body) = rig.api_event(&fixture("api-get-health.json")).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = rig.api_event(&fixture("api-create-job.json")).await;
    assert_eq!(status, 200, "{body}");
    // The feedback fixture's token is valid under the documented secret: it gets past the token
    // check to the lookup of its execution, which this store does not have.
    let feedback = fixture("api-feedback.json");
    let (status, body) = rig.api_event(&feedback).await;
    assert_eq!(status, 404, "{body}");

    // Under another secret the same token is refused.
    let other = memory_rig(
        "2024-06-10T12:00:00Z",
        "another-signing-secret-of-32-bytes-or-more",
    );
    let (status, body) = other.api_event(&fixture("api-create-job.json")).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = other.api_event(&feedback).await;
    assert_eq!(status, 401, "{body}");
}

#[tokio::test]
async fn a_message_whose_step_panics_is_reported_and_comes_back_after_the_backoff() {
    let rig = memory_rig("2030-01-01T00:00:00Z", FIXTURE_SECRET);
    rig.triggered("boom", "/panic").await;
    // A healthy message in the same batch: an execution that does not exist, a no-op.
    rig.queue(QueueKind::Dispatch)
        .send(r#"{"executionId":"gone~t~1"}"#, Duration::ZERO)
        .await
        .unwrap();
    let event = rig.poll(QueueKind::Dispatch).await;
    assert_eq!(event.records.len(), 2);
    let panicking = event
        .records
        .iter()
        .find(|r| r.body.as_deref().is_some_and(|b| b.contains("boom")))
        .and_then(|r| r.message_id.clone())
        .unwrap();

    let response = batch(&rig.sundial, QueueKind::Dispatch, event).await;
    assert_eq!(
        failed_ids(&response),
        [panicking],
        "the panicked message is a batch failure, the other one is done"
    );
    assert_eq!(
        rig.target.calls().len(),
        1,
        "the call was made, then panicked"
    );

    // It comes back after the backoff of its first delivery, not the 30 s visibility timeout.
    let backoff = chrono::Duration::from_std(retry_backoff(1)).unwrap();
    rig.clock
        .advance(backoff - chrono::Duration::milliseconds(1));
    assert!(rig.poll(QueueKind::Dispatch).await.records.is_empty());
    rig.clock.advance(chrono::Duration::milliseconds(1));
    let again = rig.poll(QueueKind::Dispatch).await;
    let counts: Vec<_> = again
        .records
        .iter()
        .map(|r| r.attributes["ApproximateReceiveCount"].clone())
        .collect();
    assert_eq!(counts, ["2"], "{again:?}");
}

#[tokio::test]
async fn undecodable_messages_go_to_the_dead_letters_at_once() {
    let rig = memory_rig("2030-01-01T00:00:00Z", FIXTURE_SECRET);
    for (kind, body) in [
        (QueueKind::Dispatch, "not json"),
        (QueueKind::Notify, r#"{"executionId": 5}"#),
    ] {
        rig.queue(kind).send(body, Duration::ZERO).await.unwrap();
        let event = rig.poll(kind).await;
        let response = batch(&rig.sundial, kind, event).await;
        assert!(
            failed_ids(&response).is_empty(),
            "poison is not retried: {response:?}"
        );
        assert_eq!(rig.queue(kind).dead_letters(10).await.unwrap(), [body]);
        rig.clock.advance(chrono::Duration::minutes(10));
        assert!(
            rig.poll(kind).await.records.is_empty(),
            "a dead letter does not come back"
        );
    }
}

#[tokio::test]
async fn a_message_whose_execution_is_corrupt_goes_to_the_dead_letters_at_once() {
    let rig = memory_rig("2030-01-01T00:00:00Z", FIXTURE_SECRET);
    let corrupt = ExecutionRecord {
        execution_id: "broken~t~1".into(),
        job_id: "broken".into(),
        execute_number: 1,
        state: "Enqueued".into(),
        parent_job: None,
        parent_execution: None,
        created_at: at("2030-01-01T00:00:00Z"),
        version: 1,
        document: json!({"executionId": "broken~t~1", "state": "no such state"}),
    };
    let store = rig.sundial.engine.app().store();
    assert!(store.create_execution(&corrupt).await.unwrap());
    let body = r#"{"executionId":"broken~t~1"}"#;
    rig.queue(QueueKind::Dispatch)
        .send(body, Duration::ZERO)
        .await
        .unwrap();

    let response = batch(
        &rig.sundial,
        QueueKind::Dispatch,
        rig.poll(QueueKind::Dispatch).await,
    )
    .await;
    assert!(failed_ids(&response).is_empty(), "{response:?}");
    assert_eq!(
        rig.queue(QueueKind::Dispatch)
            .dead_letters(10)
            .await
            .unwrap(),
        [body]
    );
}

#[tokio::test]
async fn a_store_failure_is_reported_and_the_message_succeeds_when_it_comes_back() {
    let rig = memory_rig("2030-01-01T00:00:00Z", FIXTURE_SECRET);
    rig.triggered("flaky", "/run").await;
    rig.sundial.engine.app().store().fail_write(0);
    let event = rig.poll(QueueKind::Dispatch).await;
    let ids: Vec<_> = event
        .records
        .iter()
        .filter_map(|r| r.message_id.clone())
        .collect();
    let response = batch(&rig.sundial, QueueKind::Dispatch, event).await;
    assert_eq!(failed_ids(&response), ids, "the store failed: retried");
    assert!(rig
        .queue(QueueKind::Dispatch)
        .dead_letters(10)
        .await
        .unwrap()
        .is_empty());

    rig.clock
        .advance(chrono::Duration::from_std(retry_backoff(1)).unwrap());
    rig.drain(QueueKind::Dispatch).await;
    assert_eq!(rig.target.calls().len(), 1);
    let executions = rig.executions("flaky").await;
    assert_eq!(executions[0]["state"], "Succeeded", "{executions:#?}");
}
