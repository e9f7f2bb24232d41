//! The steady-state cost of a run on AWS (issue 31 item 2): the real tick → SQS → dispatch → final
//! write path, with the DynamoDB, SQS and EventBridge adapters on moto behind the capacity meter,
//! a manual clock moved second by second and the tick called at each minute as the EventBridge
//! rule calls it, through a mix of jobs (130 fires in two minutes by default, 1,040 with
//! `SUNDIAL_STEADY_MINUTES=16`): every-minute crons with a
//! tiny, a 200-byte and a 4 KB response, every-10-second intervals, a run that fails once and is
//! retried, an async job finished by feedback through the API function, and a paused job. Then
//! each of the plain every-minute shapes alone, for the per-run figures at 0 B, 200 B and 4 KB.
//!
//! SQS delays are real seconds on moto, so the simulated minute cannot wait for them: a proxy in
//! front of the meter takes each sent message's `DelaySeconds` out of the request and notes when,
//! on the manual clock, the message would have become visible; the harness receives messages at
//! once (straight from moto, unmetered: on AWS the event source mapping's polls are its own, and
//! are priced below as one receive and one delete per batch) and hands each to the dispatch
//! handler, in batches of up to ten as the event source mapping does, one second after it became
//! visible. (A message comes up to a second early on AWS and waits in place; a second late it
//! never waits, so no handler here blocks on the manual clock.)
//!
//! It prints per run: WRU (of which indexes), RRU, DynamoDB requests, SQS requests, events, Lambda
//! GB-s from a stated model, and dollars per million runs at stated list prices. It fails if a run
//! of the mix or of a plain shape costs more than today's figures (a regression guard), and prints
//! how far each stands from issue 31's goals (≤ $2.50 per million, ≤ 3 WRU, ≤ 2 RRU):
//! `SUNDIAL_REQUIRE_MOTO=1 cargo test -p sundial-aws --test moto steady -- --nocapture`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use axum::body::Bytes;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sundial_aws::handlers::{self, QueueKind};
use sundial_meter::{Bill, Meter};

use crate::lambda::{at, fixture, Rig};
use crate::need_moto;
use crate::requests::{rewriting_proxy, Rewrite};

/// List prices, us-east-1, on demand, as of 2026-11 (aws.amazon.com pricing pages).
mod price {
    /// DynamoDB, per write request unit.
    pub(super) const WRU: f64 = 0.625e-6;
    /// DynamoDB, per read request unit.
    pub(super) const RRU: f64 = 0.125e-6;
    /// SQS standard queue, per request (64 KB chunk).
    pub(super) const SQS: f64 = 0.40e-6;
    /// EventBridge custom events, per event.
    pub(super) const EVENT: f64 = 1.0e-6;
    /// Lambda arm64, per GB-second.
    pub(super) const LAMBDA_GB_S: f64 = 0.000_013_333_4;
    /// Lambda, per invocation.
    pub(super) const LAMBDA_INVOCATION: f64 = 0.20e-6;
    /// CloudWatch Logs ingestion, per GB.
    pub(super) const LOG_GB: f64 = 0.50;
    /// When these were read.
    pub(super) const DATE: &str = "2026-11 (us-east-1 on-demand list prices)";
}

/// The Lambda model (issue 31 item 3): a dispatch invocation handles up to ten messages at once;
/// it lasts the CPU of its runs at the function's share of a vCPU, plus one run's chain of
/// DynamoDB calls at 5 ms each, plus the target's 100 ms (the runs' calls overlap).
mod lambda_model {
    /// The function's memory.
    pub(super) const MEMORY_GB: f64 = 0.125;
    /// Lambda gives 1 vCPU at 1,769 MB: 128 MB is this share of one.
    pub(super) const VCPU_SHARE: f64 = 128.0 / 1769.0;
    /// CPU of one run in a release build on one core: 2 cores / 8,809 executions per second, the
    /// local engine's throughput with its store, HTTP client and loopback target in the same
    /// process (`cargo bench -p sundial-cli --bench engine_load`, run 11, docs/performance.md).
    pub(super) const RELEASE_CPU_PER_RUN_S: f64 = 2.0 / 8_809.0;
    /// Each DynamoDB call.
    pub(super) const DYNAMO_CALL_S: f64 = 0.005;
    /// The target's answer.
    pub(super) const TARGET_S: f64 = 0.100;
    /// A dispatch invocation's log: its metrics document and one line per state (EMF), measured
    /// at about 1.6 KB for a batch of ten (docs/performance.md, "Lambda functions").
    pub(super) const LOG_BYTES_PER_INVOCATION: f64 = 1_600.0;
}

/// Messages sent, by body, with the manual-clock time each becomes visible (`DelaySeconds` after
/// its send), in sending order.
type Visible = Arc<Mutex<HashMap<String, VecDeque<DateTime<Utc>>>>>;

/// The proxy's rewrite: `DelaySeconds` out of every sent message, noted in `visible`.
fn hold_delays(clock: Arc<sundial_ports::memory::ManualClock>, visible: Visible) -> Rewrite {
    use sundial_ports::clock::Clock;
    Arc::new(move |operation: &str, body: Bytes| {
        if !matches!(
            operation,
            "AmazonSQS.SendMessage" | "AmazonSQS.SendMessageBatch"
        ) {
            return body;
        }
        let Ok(mut request) = serde_json::from_slice::<Value>(&body) else {
            return body;
        };
        let now = clock.now();
        let mut note = |entry: &mut Value| {
            let delay = entry
                .get("DelaySeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if let Some(fields) = entry.as_object_mut() {
                fields.remove("DelaySeconds");
            }
            let body = entry
                .get("MessageBody")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            visible
                .lock()
                .expect("visible")
                .entry(body)
                .or_default()
                .push_back(now + chrono::Duration::seconds(delay));
        };
        match request.get_mut("Entries").and_then(Value::as_array_mut) {
            Some(entries) => entries.iter_mut().for_each(&mut note),
            None => note(&mut request),
        }
        Bytes::from(serde_json::to_vec(&request).expect("JSON"))
    })
}

/// What the job service answers: `/ok` a tiny body, `/body/{n}` a JSON body of `n` bytes,
/// `/flaky` a 500 to each run's first attempt (its `Idempotency-Key` ends `:1:0`), `/async` an
/// accepted async job (the harness sends its feedback). Every call is recorded.
#[derive(Clone, Default)]
struct Service {
    calls: Arc<Mutex<Vec<Call>>>,
}

/// A call the job service received.
#[derive(Clone, Debug)]
struct Call {
    path: String,
    body: Value,
    /// `{executionId}:{attempt}:{request index}`.
    key: String,
}

impl Call {
    /// The run it belongs to.
    fn execution_id(&self) -> &str {
        self.key.split(':').next().unwrap_or_default()
    }

    /// The job it belongs to.
    fn job_id(&self) -> &str {
        self.execution_id().split('~').next().unwrap_or_default()
    }
}

async fn answer(
    axum::extract::State(service): axum::extract::State<Service>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> (axum::http::StatusCode, String) {
    let path = uri.path().to_owned();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    service.calls.lock().expect("calls").push(Call {
        path: path.clone(),
        body,
        key: key.clone(),
    });
    if path.starts_with("/flaky") && key.ends_with(":1:0") {
        return (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"error":"first attempt"}"#.into(),
        );
    }
    if let Some(size) = path
        .strip_prefix("/body/")
        .and_then(|n| n.parse::<usize>().ok())
    {
        // `{"data":"…"}`, `size` bytes in all, of letters and digits drawn at random (a fixed
        // LCG): about as compressible as an id-heavy JSON answer, where a repeated pattern would
        // deflate to nothing and hide the body's cost.
        let mut state: u64 = 0x5eed;
        let filler: String = (0..size.saturating_sub(11))
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
                char::from(alphabet[(state >> 33) as usize % alphabet.len()])
            })
            .collect();
        return (
            axum::http::StatusCode::OK,
            json!({ "data": filler }).to_string(),
        );
    }
    (axum::http::StatusCode::OK, r#"{"ok":true}"#.into())
}

async fn start_service() -> (u16, Service) {
    let service = Service::default();
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(service.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, service)
}

/// One job of the mix: its id prefix, how many, and its definition.
struct Shape {
    name: &'static str,
    count: usize,
    body: Value,
}

fn definition(port: u16, path: &str, schedule: Value) -> Value {
    json!({
        "jobName": "steady state", "creator": "001", "creatorName": "cost",
        "request": [{"method": "POST", "url": format!("http://127.0.0.1:{port}{path}"),
                     "body": {"n": "${executeNumber}|json"}}],
        "notification": [],
        "overlap": "Skip",
        "schedule": schedule,
    })
}

fn every_minute() -> Value {
    json!({"cron": ["* * * * *"], "startTime": "2030-01-01T00:01:00Z"})
}

/// What a phase cost, with what it did.
#[derive(Debug, Default)]
struct Phase {
    bill: Bill,
    runs: u64,
    /// Dispatch batches handed to the handler (each one invocation, one receive, one delete).
    batches: u64,
    messages: u64,
    /// API function invocations (the async job's feedback).
    api_calls: u64,
    /// Tick invocations.
    ticks: u64,
}

impl Phase {
    fn per_run(&self, units: f64) -> f64 {
        units / self.runs.max(1) as f64
    }

    /// Lambda GB-s per run, by the model.
    fn lambda_gb_s(&self) -> f64 {
        use lambda_model::*;
        let runs = self.runs.max(1) as f64;
        let cpu = RELEASE_CPU_PER_RUN_S / VCPU_SHARE;
        let calls_per_message = self.bill.dynamo_requests as f64 / self.messages.max(1) as f64;
        let per_batch = (self.messages as f64 / self.batches.max(1) as f64) * cpu
            + calls_per_message * DYNAMO_CALL_S
            + TARGET_S;
        let invocations = self.batches as f64 + self.api_calls as f64 + self.ticks as f64;
        invocations.max(1.0) * per_batch * MEMORY_GB / runs
    }

    fn invocations_per_run(&self) -> f64 {
        self.per_run((self.batches + self.api_calls + self.ticks) as f64)
    }

    /// SQS requests per run: the adapters' sends (metered) and the event source mapping's
    /// receive and delete per batch.
    fn sqs_per_run(&self) -> f64 {
        self.per_run(self.bill.sqs_requests as f64 + 2.0 * self.batches as f64)
    }

    fn dollars_per_million(&self) -> f64 {
        let per_run = self.per_run(self.bill.wru) * price::WRU
            + self.per_run(self.bill.rru) * price::RRU
            + self.sqs_per_run() * price::SQS
            + self.per_run(self.bill.events as f64) * price::EVENT
            + self.lambda_gb_s() * price::LAMBDA_GB_S
            + self.invocations_per_run() * price::LAMBDA_INVOCATION
            + self.invocations_per_run() * lambda_model::LOG_BYTES_PER_INVOCATION / 1e9
                * price::LOG_GB;
        per_run * 1e6
    }

    fn row(&self, what: &str) -> String {
        format!(
            "{what:<34} {:>5} {:>6.2} ({:>5.2}) {:>5.2} {:>5.2} {:>5.2} {:>5.2} {:>8.5} {:>7.2}",
            self.runs,
            self.per_run(self.bill.wru),
            self.per_run(self.bill.index_wru),
            self.per_run(self.bill.rru),
            self.per_run(self.bill.dynamo_requests as f64),
            self.sqs_per_run(),
            self.per_run(self.bill.events as f64),
            self.lambda_gb_s(),
            self.dollars_per_million(),
        )
    }
}

/// The harness: a rig behind the delay-holding proxy and the meter, the job service, and the
/// messages received and held until their time.
struct Harness {
    rig: Rig,
    meter: Arc<Meter>,
    visible: Visible,
    service: Service,
    port: u16,
    sqs: aws_sdk_sqs::Client,
    /// Received messages, each with the time it is handed to dispatch.
    held: Vec<(DateTime<Utc>, aws_sdk_sqs::types::Message)>,
    /// Feedback URLs of async calls already answered.
    answered: usize,
}

impl Harness {
    async fn start() -> Option<Harness> {
        let moto = crate::support::moto()?;
        let meter = Arc::new(Meter::new());
        let (metered, _task) = sundial_meter::proxy::start(&moto.endpoint, Arc::clone(&meter))
            .await
            .expect("the capacity meter starts");
        let visible: Visible = Arc::default();
        let clock = Arc::new(sundial_ports::memory::ManualClock::new(at(
            "2029-12-31T23:59:30Z",
        )));
        let (proxy, _counts) =
            rewriting_proxy(&metered, Some(hold_delays(clock.clone(), visible.clone()))).await;
        let rig = Rig::start_with_clock(clock, Some(&proxy)).await?;
        let (port, service) = start_service().await;
        let sqs = aws_sdk_sqs::Client::new(&moto.sdk().await);
        Some(Harness {
            rig,
            meter,
            visible,
            service,
            port,
            sqs,
            held: Vec::new(),
            answered: 0,
        })
    }

    async fn create(&self, shapes: &[Shape]) {
        for shape in shapes {
            for i in 0..shape.count {
                let (status, body) = self
                    .rig
                    .api(
                        "POST",
                        &format!("/jobs/{}-{i}", shape.name),
                        Some(shape.body.clone()),
                    )
                    .await;
                assert_eq!(status, 200, "{}: {body}", shape.name);
            }
        }
    }

    /// Moves the clock second by second over `seconds` from `from`, ticking at each minute,
    /// answering async calls and handing each message to dispatch at its time. Returns what the
    /// meter booked and what was handed over.
    async fn run(&mut self, from: DateTime<Utc>, seconds: i64) -> Phase {
        self.meter.reset();
        let mut phase = Phase::default();
        let calls_before = self.service.calls.lock().expect("calls").len();
        for second in 0..seconds {
            let now = from + chrono::Duration::seconds(second);
            self.rig.clock.set(now);
            if now.timestamp() % 60 == 0 {
                handlers::tick(&self.rig.sundial, &json!({}))
                    .await
                    .expect("tick");
                phase.ticks += 1;
            }
            phase.api_calls += self.answer_async().await;
            self.receive().await;
            let mut due = Vec::new();
            self.held.retain(|(at, message)| {
                if *at <= now {
                    due.push(message.clone());
                    false
                } else {
                    true
                }
            });
            for batch in due.chunks(10) {
                self.dispatch(batch).await;
                phase.batches += 1;
                phase.messages += batch.len() as u64;
            }
        }
        phase.bill = self.meter.total();
        let calls = self.service.calls.lock().expect("calls");
        let runs: std::collections::BTreeSet<&str> = calls[calls_before..]
            .iter()
            .map(Call::execution_id)
            .collect();
        phase.runs = runs.len() as u64;
        phase
    }

    /// Sends the feedback of each async call not yet answered, through the API function.
    async fn answer_async(&mut self) -> u64 {
        let urls: Vec<String> = {
            let calls = self.service.calls.lock().expect("calls");
            calls
                .iter()
                .filter(|call| call.path == "/async")
                .skip(self.answered)
                .filter_map(|call| call.body["feedback"].as_str().map(str::to_owned))
                .collect()
        };
        let mut sent = 0;
        for url in urls {
            self.answered += 1;
            let (path, query) = url
                .trim_start_matches("https://api.example.test")
                .split_once('?')
                .expect("a feedback URL has its executionId and token");
            let mut event: Value =
                serde_json::from_str(&fixture("api-feedback.json")).expect("JSON");
            event["rawPath"] = json!(path);
            event["rawQueryString"] = json!(query);
            event["requestContext"]["http"]["path"] = json!(path);
            event["queryStringParameters"] = query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .map(|(k, v)| (k.to_owned(), json!(v)))
                .collect::<serde_json::Map<_, _>>()
                .into();
            event["body"] = json!(json!({"status": "succeed", "data": {"rows": 3}}).to_string());
            let (status, body) = self.rig.api_event(&event).await;
            assert_eq!(status, 200, "feedback: {body}");
            sent += 1;
        }
        sent
    }

    /// Receives every message moto has (their delays were taken out) and holds each until one
    /// second after the time it would have become visible.
    async fn receive(&mut self) {
        loop {
            // Sent and not yet received (each receive takes its note): when none, no request.
            let sent: usize = self
                .visible
                .lock()
                .expect("visible")
                .values()
                .map(VecDeque::len)
                .sum();
            if sent == 0 {
                return;
            }
            let received = self
                .sqs
                .receive_message()
                .queue_url(self.rig.dispatch_url())
                .max_number_of_messages(10)
                .visibility_timeout(43_200)
                .wait_time_seconds(0)
                .message_system_attribute_names(
                    aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
                )
                .send()
                .await
                .expect("receive");
            let messages = received.messages.unwrap_or_default();
            if messages.is_empty() {
                return;
            }
            for message in messages {
                let body = message.body.clone().unwrap_or_default();
                let visible = self
                    .visible
                    .lock()
                    .expect("visible")
                    .get_mut(&body)
                    .and_then(VecDeque::pop_front)
                    .unwrap_or_else(|| panic!("a message the proxy saw sent: {body}"));
                self.held
                    .push((visible + chrono::Duration::seconds(1), message));
            }
        }
    }

    /// Hands a batch to the dispatch handler as the event source mapping does, and deletes what
    /// it did not report as failed.
    async fn dispatch(&self, batch: &[aws_sdk_sqs::types::Message]) {
        let mut event = SqsEvent::default();
        for (i, message) in batch.iter().enumerate() {
            let mut record = SqsMessage::default();
            record.message_id = Some(format!("m{i}"));
            record.receipt_handle = message.receipt_handle.clone();
            record.body = message.body.clone();
            record.attributes.insert(
                "ApproximateReceiveCount".into(),
                message
                    .attributes
                    .as_ref()
                    .and_then(|a| {
                        a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount)
                    })
                    .cloned()
                    .unwrap_or_else(|| "1".into()),
            );
            event.records.push(record);
        }
        let response = tokio::time::timeout(
            Duration::from_secs(60),
            handlers::batch(&self.rig.sundial, QueueKind::Dispatch, event),
        )
        .await
        .expect("a dispatch batch never waits on the manual clock here");
        assert!(
            response.batch_item_failures.is_empty(),
            "no failures: {response:?}"
        );
        for message in batch {
            self.sqs
                .delete_message()
                .queue_url(self.rig.dispatch_url())
                .set_receipt_handle(message.receipt_handle.clone())
                .send()
                .await
                .expect("delete");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn steady_state_cost_per_run_of_a_job_mix() {
    let _moto = need_moto!();
    let Some(mut h) = Harness::start().await else {
        return;
    };
    let port = h.port;
    let minute = every_minute;
    let mut flaky = definition(port, "/flaky", minute());
    flaky["retryPolicy"] = json!({"initialInterval": "2s", "maximumAttempts": 3});
    let mut asynchronous = definition(port, "/async", minute());
    asynchronous["async"] = json!(true);
    asynchronous["timeoutSeconds"] = json!(600);
    asynchronous["request"][0]["body"]["feedback"] = json!("${schedulingFeedbackUrl}");
    let shapes = [
        Shape {
            name: "tiny",
            count: 20,
            body: definition(port, "/ok", minute()),
        },
        Shape {
            name: "b200",
            count: 20,
            body: definition(port, "/body/200", minute()),
        },
        Shape {
            name: "b4k",
            count: 4,
            body: definition(port, "/body/4096", minute()),
        },
        Shape {
            name: "ten",
            count: 3,
            body: definition(
                port,
                "/ok",
                json!({"intervals": ["10s"], "startTime": "2030-01-01T00:01:00Z"}),
            ),
        },
        Shape {
            name: "flaky",
            count: 2,
            body: flaky,
        },
        Shape {
            name: "async",
            count: 1,
            body: asynchronous,
        },
        Shape {
            name: "paused",
            count: 1,
            body: definition(port, "/paused", minute()),
        },
    ];
    h.create(&shapes).await;
    let (status, body) = h
        .rig
        .api(
            "POST",
            "/jobs/paused-0/pause",
            Some(json!({"notes": "cost"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The first minute plans and runs each job's first fire; the measured ones are steady.
    h.run(at("2029-12-31T23:59:40Z"), 80).await;
    let minutes = steady_minutes();
    let mix = h.run(at("2030-01-01T00:01:00Z"), minutes * 60).await;
    print_phase(&h, &mix, minutes);
    let calls = h.service.calls.lock().expect("calls").clone();
    let count = |prefix: &str| calls.iter().filter(|c| c.path.starts_with(prefix)).count();
    assert_eq!(count("/paused"), 0, "a paused job makes no call");
    // 65 fires a minute: 20 + 20 + 4 every-minute jobs, 3 every 10 s, 2 flaky, 1 async.
    assert!(mix.runs >= 64 * minutes as u64, "{} runs", mix.runs);
    // Each attempt's call made once (its Idempotency-Key seen once): nothing doubled.
    let mut keys = std::collections::BTreeMap::new();
    for call in &calls {
        *keys.entry(call.key.as_str()).or_insert(0) += 1;
    }
    let doubled: Vec<_> = keys.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "calls made twice: {doubled:?}");
    // Each job's runs in the measured minutes: every fire ran, nothing lost.
    let runs_of = |job: &str| {
        calls
            .iter()
            .filter(|c| c.job_id() == job)
            .map(Call::execution_id)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let minutes = minutes as usize;
    for job in ["tiny-0", "b200-19", "b4k-3", "flaky-1", "async-0"] {
        // Their first fire, 00:01, starts the measured minutes.
        assert_eq!(runs_of(job), minutes, "{job}");
    }
    assert_eq!(runs_of("ten-2"), 6 * minutes, "ten-2");
    let flaky_attempts = calls.iter().filter(|c| c.job_id() == "flaky-0").count();
    assert_eq!(
        flaky_attempts,
        2 * runs_of("flaky-0"),
        "each flaky run fails once and is retried once"
    );

    // Today's figures, with a little headroom: a change that makes a run dearer fails here.
    // Issue 31's goals are printed, not asserted, until the new per-run path meets them.
    assert!(mix.per_run(mix.bill.wru) <= 16.5, "{mix:?}");
    assert!(mix.per_run(mix.bill.rru) <= 2.5, "{mix:?}");
    assert!(mix.dollars_per_million() <= 11.0, "{mix:?}");
    goals("mix", &mix);
}

/// Each plain every-minute shape alone (Skip, success first try): the per-run figures at a tiny,
/// a 200-byte and a 4 KB response.
#[tokio::test(flavor = "multi_thread")]
async fn steady_state_cost_per_run_by_response_size() {
    /// Jobs of each shape (moto takes about a second per run).
    const PER_SHAPE: usize = 5;
    let _moto = need_moto!();
    let Some(mut h) = Harness::start().await else {
        return;
    };
    let port = h.port;
    let mut rows = BTreeMap::new();
    for (name, path) in [("b0", "/ok"), ("b200", "/body/200"), ("b4k", "/body/4096")] {
        h.create(&[Shape {
            name,
            count: PER_SHAPE,
            body: definition(port, path, every_minute()),
        }])
        .await;
    }
    // One shape at a time: the others paused. Each measured over two steady minutes.
    let mut start = at("2030-01-01T00:01:00Z");
    h.run(at("2029-12-31T23:59:40Z"), 20).await;
    for name in ["b0", "b200", "b4k"] {
        for other in ["b0", "b200", "b4k"] {
            let verb = if other == name { "unpause" } else { "pause" };
            for i in 0..PER_SHAPE {
                let (status, body) = h
                    .rig
                    .api(
                        "POST",
                        &format!("/jobs/{other}-{i}/{verb}"),
                        Some(json!({})),
                    )
                    .await;
                assert_eq!(status, 200, "{body}");
            }
        }
        // A minute to settle into the steady state (the unpaused jobs' fires planned again).
        h.run(start, 60).await;
        start += chrono::Duration::seconds(60);
        let phase = h.run(start, 2 * 60).await;
        start += chrono::Duration::seconds(2 * 60);
        assert_eq!(phase.runs, 2 * PER_SHAPE as u64, "{name}");
        rows.insert(name, phase);
    }
    println!(
        "{:<34} {:>5} {:>6} {:>7} {:>5} {:>5} {:>5} {:>5} {:>8} {:>7}",
        "every-minute job, response",
        "runs",
        "WRU",
        "(index)",
        "RRU",
        "ddb",
        "SQS",
        "evts",
        "GB-s",
        "$/M"
    );
    for (name, label) in [
        ("b0", "tiny body"),
        ("b200", "200-byte body"),
        ("b4k", "4 KB body"),
    ] {
        println!("{}", rows[name].row(label));
    }
    let goal = &rows["b200"];
    assert!(goal.per_run(goal.bill.wru) <= 16.5, "{goal:?}");
    assert!(goal.dollars_per_million() <= 11.5, "{goal:?}");
    goals("200-byte every-minute run", goal);
}

/// How many steady minutes the mix runs: `SUNDIAL_STEADY_MINUTES`, else 2 (130 fires, what
/// CI runs; moto takes about a second per run). 16 gives the issue's 1,040 fires.
fn steady_minutes() -> i64 {
    std::env::var("SUNDIAL_STEADY_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .filter(|m| *m > 0)
        .unwrap_or(2)
}

/// Prints the mix's bill per run, the Lambda model and the bill by operation.
fn print_phase(h: &Harness, mix: &Phase, minutes: i64) {
    println!(
        "steady-state cost per run on moto, the real adapters (prices {})",
        price::DATE
    );
    println!(
        "{:<34} {:>5} {:>6} {:>7} {:>5} {:>5} {:>5} {:>5} {:>8} {:>7}",
        "phase", "runs", "WRU", "(index)", "RRU", "ddb", "SQS", "evts", "GB-s", "$/M"
    );
    println!("{}", mix.row(&format!("mix ({minutes} minutes)")));
    println!(
        "  Lambda model: {:.2} ms CPU per run at 128 MB ({:.3} ms on a core, release), {} ms per DynamoDB call, {} ms target, {:.2} invocations per run",
        lambda_model::RELEASE_CPU_PER_RUN_S / lambda_model::VCPU_SHARE * 1e3,
        lambda_model::RELEASE_CPU_PER_RUN_S * 1e3,
        lambda_model::DYNAMO_CALL_S * 1e3,
        lambda_model::TARGET_S * 1e3,
        mix.invocations_per_run(),
    );
    println!("  by operation:");
    for (operation, bill) in h.meter.by_operation() {
        println!(
            "    {operation:<36} WRU {:>8.1}  RRU {:>7.1}  requests {:>5}",
            bill.wru,
            bill.rru,
            bill.dynamo_requests + bill.sqs_requests
        );
    }
}

/// Prints how far a phase stands from issue 31's goals.
fn goals(what: &str, phase: &Phase) {
    let judge = |ok: bool| if ok { "met" } else { "NOT met" };
    let (wru, rru, dollars) = (
        phase.per_run(phase.bill.wru),
        phase.per_run(phase.bill.rru),
        phase.dollars_per_million(),
    );
    println!(
        "issue 31 goals, {what}: ≤ 3 WRU {} ({wru:.2}); ≤ 2 RRU {} ({rru:.2}); ≤ $2.50 per million {} (${dollars:.2})",
        judge(wru <= 3.0),
        judge(rru <= 2.0),
        judge(dollars <= 2.5)
    );
}
