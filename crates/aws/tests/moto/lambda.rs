//! The Lambda handlers end to end on moto: a job created through the API handler (an API Gateway
//! v2 event from events/), the tick handler, the SQS messages it sent fed to the dispatch handler,
//! a loopback target, the notification delivered by the notify handler — with duplicate
//! deliveries and a worker that dies mid-call.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use http_body_util::BodyExt;
use lambda_http::tower::ServiceExt;
use serde_json::{json, Value};
use sundial_aws::handlers::{self, QueueKind};
use sundial_aws::{Settings, SqsQueue, Sundial};
use sundial_ports::memory::ManualClock;
use sundial_ports::queue::Queue;
use sundial_testkit::{Received, Target};

use crate::need_moto;

pub(crate) fn fixture(name: &str) -> String {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The job service the runs call (`sundial-testkit`'s loopback target): the first call to
/// `/hang/…` never gets an answer, so its caller can die waiting; later ones do.
fn target() -> Target {
    let answered_hang = AtomicBool::new(false);
    Target::with_delay(Arc::new(move |call: &Received| {
        let hang = call.path.starts_with("/hang") && !answered_hang.swap(true, Ordering::SeqCst);
        hang.then_some(Duration::from_secs(3_600))
    }))
}

pub(crate) struct Rig {
    pub sundial: Arc<Sundial>,
    /// Another execution environment on the same resources and clock (an API function while
    /// `sundial` dispatches, or a second dispatch invocation): its engine has calls of its own.
    pub other: Arc<Sundial>,
    pub clock: Arc<ManualClock>,
    dispatch: SqsQueue,
    notify: SqsQueue,
    sqs: aws_sdk_sqs::Client,
    pub target: Target,
    pub port: u16,
}

async fn rig(start: DateTime<Utc>) -> Option<Rig> {
    Rig::start_via(start, None).await
}

impl Rig {
    /// A rig on fresh resources; `endpoint` overrides moto's URL (a counting proxy in front of it).
    pub(crate) async fn start_via(start: DateTime<Utc>, endpoint: Option<&str>) -> Option<Rig> {
        Rig::start_with_clock(Arc::new(ManualClock::new(start)), endpoint).await
    }

    /// [`Rig::start_via`] on a clock of the caller's (one a proxy in front of moto reads too).
    pub(crate) async fn start_with_clock(
        clock: Arc<ManualClock>,
        endpoint: Option<&str>,
    ) -> Option<Rig> {
        let moto = crate::support::moto()?;
        let target = target();
        let port = target.port;
        let mut env: BTreeMap<String, String> = moto.fresh_resources();
        env.insert(
            "SUNDIAL_SIGNING_SECRET".into(),
            "an-e2e-secret-of-at-least-32-bytes!!".into(),
        );
        env.insert("SUNDIAL_OUTBOUND_ALLOW".into(), "127.0.0.1".into());
        env.insert(
            "SUNDIAL_PUBLIC_URL".into(),
            "https://api.example.test".into(),
        );
        env.insert(
            "SUNDIAL_SERVICES".into(),
            format!("work=http://127.0.0.1:{port}"),
        );
        let settings = Settings::from_vars(env.clone().into_iter().collect()).expect("settings");
        let sdk = moto.sdk_at(endpoint.unwrap_or(&moto.endpoint)).await;
        let sundial =
            Arc::new(Sundial::with_clock(&settings, &sdk, clock.clone()).expect("sundial"));
        let other = Arc::new(Sundial::with_clock(&settings, &sdk, clock.clone()).expect("sundial"));
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        Some(Rig {
            sundial,
            other,
            clock,
            dispatch: SqsQueue::new(sqs.clone(), &env["SUNDIAL_DISPATCH_QUEUE_URL"]),
            notify: SqsQueue::new(sqs.clone(), &env["SUNDIAL_NOTIFY_QUEUE_URL"]),
            sqs,
            target,
            port,
        })
    }

    /// Sends an API Gateway v2 event (the fixture, with this method, path and body) through the
    /// API handler, as the Lambda runtime would.
    pub(crate) async fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut event: Value = serde_json::from_str(&fixture("api-create-job.json")).expect("JSON");
        event["rawPath"] = json!(path);
        event["routeKey"] = json!(format!("{method} {path}"));
        event["requestContext"]["http"]["method"] = json!(method);
        event["requestContext"]["http"]["path"] = json!(path);
        event["body"] = body.map_or(Value::Null, |b| json!(b.to_string()));
        self.api_event(&event).await
    }

    /// Sends an API Gateway v2 event as it is through the API handler.
    pub(crate) async fn api_event(&self, event: &Value) -> (u16, Value) {
        let request =
            lambda_http::request::from_str(&event.to_string()).expect("an API Gateway v2 event");
        let response = handlers::api_router(&self.sundial)
            .oneshot(request)
            .await
            .expect("infallible");
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// What the SQS event source would hand the function: up to ten messages as an SQS event.
    /// The visibility timeout is short so a message whose worker "died" comes back quickly.
    async fn poll(queue: &SqsQueue) -> SqsEvent {
        let deliveries = queue
            .receive(10, Duration::from_secs(2))
            .await
            .expect("receive");
        let mut event = SqsEvent::default();
        for (i, delivery) in deliveries.into_iter().enumerate() {
            let mut message = SqsMessage::default();
            message.message_id = Some(format!("m{i}-{}", delivery.receipt.len()));
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

    /// What the notify queue holds now, as the event source would hand it to the function.
    pub(crate) async fn poll_notify(&self) -> SqsEvent {
        Rig::poll(&self.notify).await
    }

    /// Deletes a notify batch the function handled, as the event source does.
    pub(crate) async fn delete_notify(&self, event: &SqsEvent) {
        self.delete_batch(self.notify.url(), event).await;
    }

    /// The dispatch queue's URL.
    pub(crate) fn dispatch_url(&self) -> &str {
        self.dispatch.url()
    }

    /// Drains the dispatch queue without keeping what was fed.
    pub(crate) async fn drain_dispatch_quiet(&self) {
        self.drain_dispatch().await;
    }

    /// Feeds the dispatch queue to the dispatch handler until it is empty; returns every batch fed.
    pub(crate) async fn drain_dispatch(&self) -> Vec<SqsEvent> {
        let mut fed = Vec::new();
        for _ in 0..20 {
            let event = Rig::poll(&self.dispatch).await;
            if event.records.is_empty() {
                break;
            }
            let response = handlers::batch(&self.sundial, QueueKind::Dispatch, event.clone()).await;
            assert!(
                response.batch_item_failures.is_empty(),
                "no failures: {response:?}"
            );
            // The event source deletes what the function did not report as failed.
            self.delete_batch(self.dispatch.url(), &event).await;
            fed.push(event);
        }
        fed
    }

    async fn drain_notify(&self) {
        for _ in 0..10 {
            let event = Rig::poll(&self.notify).await;
            if event.records.is_empty() {
                return;
            }
            let response = handlers::batch(&self.sundial, QueueKind::Notify, event.clone()).await;
            assert!(response.batch_item_failures.is_empty(), "{response:?}");
            self.delete_batch(self.notify.url(), &event).await;
        }
    }

    /// What the SQS event source does with a batch the function handled: one
    /// `DeleteMessageBatch` for its messages.
    async fn delete_batch(&self, url: &str, event: &SqsEvent) {
        let entries: Vec<_> = event
            .records
            .iter()
            .enumerate()
            .filter_map(|(i, record)| {
                aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                    .id(format!("m{i}"))
                    .set_receipt_handle(record.receipt_handle.clone())
                    .build()
                    .ok()
            })
            .collect();
        if entries.is_empty() {
            return;
        }
        let _ = self
            .sqs
            .delete_message_batch()
            .queue_url(url)
            .set_entries(Some(entries))
            .send()
            .await;
    }

    async fn executions(&self, job_id: &str) -> Vec<Value> {
        let (status, body) = self
            .api("GET", &format!("/jobs/{job_id}/executions"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        let list = body.get("data").cloned().unwrap_or(body);
        list.get("executions")
            .or_else(|| list.get("items"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

pub(crate) fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("time")
        .with_timezone(&Utc)
}

pub(crate) fn job(port: u16) -> Value {
    json!({
        "jobName": "e2e on moto", "creator": "001", "creatorName": "tests",
        "request": [{"method": "POST", "url": "service://work/run/${jobId}?n=${executeNumber}",
                     "body": {"n": "${executeNumber}|json", "scheduled": "${scheduledTime}"}}],
        "notification": [{"stateEquals": "200", "method": "POST",
                          "url": format!("http://127.0.0.1:{port}/notify/${{jobId}}"),
                          "body": "${schedulingNotifyBody}|json"}],
        "schedule": {"cron": ["* * * * *"]},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scheduled_run_goes_api_tick_dispatch_target_notify_exactly_once() {
    let _moto = need_moto!();
    // Created 90 s before its first fire, beyond the tick's 80 s horizon: the API leaves the fire
    // to the tick (a nearer one it plans at once: the next test).
    let Some(rig) = rig(at("2029-12-31T23:59:30Z")).await else {
        return;
    };
    let mut minutely = job(rig.port);
    minutely["schedule"]["startTime"] = json!("2030-01-01T00:01:00Z");
    let (status, body) = rig.api("POST", "/jobs/minutely", Some(minutely)).await;
    assert_eq!(status, 200, "{body}");
    assert!(rig.executions("minutely").await.is_empty());

    // The minute comes; EventBridge delivers the tick (the fixture), and then delivers it again.
    rig.clock.set(at("2030-01-01T00:01:00Z"));
    let tick: Value = serde_json::from_str(&fixture("tick.json")).expect("JSON");
    let first = handlers::tick(&rig.sundial, &tick).await.expect("tick");
    // The tick plans the fires within TICK_HORIZON (80 s): 00:01:00 and 00:02:00.
    assert_eq!(first["fires"], 2, "{first}");
    let again = handlers::tick(&rig.sundial, &tick)
        .await
        .expect("tick again");
    assert_eq!(
        again["fires"], 0,
        "a repeated tick creates nothing new: {again}"
    );

    let fed = rig.drain_dispatch().await;
    assert!(!fed.is_empty());
    let runs = rig.target.received("/run/minutely");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].body["n"], 1);
    assert_eq!(runs[0].body["scheduled"], "2030-01-01T00:01:00Z");
    let key = runs[0]
        .header("idempotency-key")
        .expect("an Idempotency-Key header");

    // SQS delivers the same messages again: nothing runs twice.
    for event in &fed {
        let response = handlers::batch(&rig.sundial, QueueKind::Dispatch, event.clone()).await;
        assert!(response.batch_item_failures.is_empty());
    }
    assert_eq!(rig.target.received("/run/minutely").len(), 1);

    rig.drain_notify().await;
    let notes = rig.target.received("/notify/minutely");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].body["httpStatus"], "200", "{notes:?}");

    let executions = rig.executions("minutely").await;
    let done: Vec<_> = executions
        .iter()
        .filter(|e| e["state"] == "Succeeded")
        .collect();
    assert_eq!(done.len(), 1, "{executions:#?}");
    assert_eq!(
        executions.len(),
        2,
        "the minute's run and the next, planned ahead: {executions:#?}"
    );
    assert_eq!(key, "minutely~20300101T000100Z:1:0");
}

/// A job whose first fire is within the tick's horizon is planned by the API function in the
/// creating request (docs/engine.md, "New and changed jobs are planned at once"): on DynamoDB and
/// SQS its execution exists and its message is on the dispatch queue, with an SQS delay up to the
/// fire, before any tick; it runs once, and the tick finds nothing to add.
#[tokio::test(flavor = "multi_thread")]
async fn the_api_plans_a_near_first_fire_at_once() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:00Z")).await else {
        return;
    };
    let mut once = job(rig.port);
    once.as_object_mut().expect("an object").remove("schedule");
    // One run at the due time, a second from now ("period": "0s"; docs/api.md).
    once["timer"] = json!({"dueTime": "1s", "period": "0s"});
    let (status, body) = rig.api("POST", "/jobs/soon", Some(once)).await;
    assert_eq!(status, 200, "{body}");
    let planned = rig.executions("soon").await;
    assert_eq!(planned.len(), 1, "{planned:#?}");
    assert_eq!(planned[0]["executionId"], "soon~20300101T000001Z");

    // The fire's second comes. SQS counts the message's 1 s delay in real time.
    rig.clock.set(at("2030-01-01T00:00:01Z"));
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let report = handlers::tick(&rig.sundial, &json!({}))
        .await
        .expect("tick");
    assert_eq!(report["fires"], 0, "planned already: {report}");
    rig.drain_dispatch().await;
    let runs = rig.target.received("/run/soon");
    assert_eq!(runs.len(), 1, "{runs:?}");
    let executions = rig.executions("soon").await;
    assert_eq!(executions.len(), 1, "{executions:#?}");
    assert_eq!(executions[0]["state"], "Succeeded", "{executions:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_that_dies_mid_call_is_replaced_and_the_run_finishes_once() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    let mut fragile = job(rig.port);
    fragile["request"][0]["url"] = json!("service://work/hang/${jobId}");
    fragile["schedule"] = json!({"cron": ["0 0 1 1 *"]});
    let (status, body) = rig.api("POST", "/jobs/fragile", Some(fragile)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = rig
        .api("POST", "/jobs/fragile/trigger", Some(json!({})))
        .await;
    assert_eq!(status, 200, "{body}");

    // A worker takes the message and calls the target, which does not answer; the worker dies
    // (its task is aborted mid-call, as a Lambda killed at its timeout would be).
    let event = Rig::poll(&rig.dispatch).await;
    assert_eq!(event.records.len(), 1);
    let worker = {
        let sundial = Arc::clone(&rig.sundial);
        tokio::spawn(async move { handlers::batch(&sundial, QueueKind::Dispatch, event).await })
    };
    for _ in 0..100 {
        if !rig.target.received("/hang/fragile").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.abort();
    assert_eq!(rig.target.received("/hang/fragile").len(), 1);

    // The attempt's lease (timeout + margin) runs out; SQS redelivers the unacknowledged message
    // once its visibility timeout ends, and the next worker runs the attempt again.
    rig.clock.advance(chrono::Duration::seconds(120));
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    let fed = rig.drain_dispatch().await;
    assert!(fed.iter().any(|e| e
        .records
        .iter()
        .any(|r| r.attributes["ApproximateReceiveCount"] == "2")));
    let calls = rig.target.received("/hang/fragile");
    assert_eq!(calls.len(), 2, "called again by the new worker: {calls:?}");
    let keys: Vec<_> = calls.iter().map(|c| c.header("idempotency-key")).collect();
    assert!(keys[0].is_some(), "{calls:?}");
    assert_eq!(keys[0], keys[1], "with the same Idempotency-Key");
    let executions = rig.executions("fragile").await;
    assert_eq!(executions.len(), 1, "{executions:#?}");
    assert_eq!(executions[0]["state"], "Succeeded", "{executions:#?}");
}

/// Issue 26 item 6 on AWS: a cancel written by another execution environment (the API function)
/// reaches the dispatch invocation's call at its read 5 s after the call started, which closes it
/// and frees the run's slot; before that read nothing is read.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_from_another_environment_closes_the_call_at_its_next_read() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    let mut held = job(rig.port);
    held["request"][0]["url"] = json!("service://work/hang/${jobId}");
    held["schedule"] = json!({"cron": ["0 0 1 1 *"]});
    let (status, body) = rig.api("POST", "/jobs/held", Some(held)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = rig.api("POST", "/jobs/held/trigger", Some(json!({}))).await;
    assert_eq!(status, 200, "{body}");
    let id = body["executionId"]
        .as_str()
        .expect("executionId")
        .to_string();

    let event = Rig::poll(&rig.dispatch).await;
    assert_eq!(event.records.len(), 1);
    let worker = {
        let sundial = Arc::clone(&rig.sundial);
        tokio::spawn(async move { handlers::batch(&sundial, QueueKind::Dispatch, event).await })
    };
    for _ in 0..100 {
        if !rig.target.received("/hang/held").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rig.target.received("/hang/held").len(), 1);
    rig.other
        .engine
        .app()
        .cancel_execution(
            &sundial_core::execution::ExecutionId::parse(&id).expect("an id"),
            "from the API function",
        )
        .await
        .expect("cancel");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !worker.is_finished(),
        "no read before 5 s: the call is still open"
    );
    rig.clock.advance(chrono::Duration::seconds(5));
    let response = tokio::time::timeout(Duration::from_secs(10), worker)
        .await
        .expect("the read at 5 s closes the call")
        .expect("the worker");
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let executions = rig.executions("held").await;
    assert_eq!(executions[0]["state"], "Cancelled", "{executions:#?}");
    let job = rig
        .sundial
        .engine
        .app()
        .get_job(&sundial_core::job::JobId::parse("held").expect("an id"))
        .await
        .expect("the job");
    assert!(job.state.running.is_empty(), "its slot is free: {job:?}");
}

/// A `CancelOther` run dispatched in another environment than the old run's call starts its own
/// call only after that call's invocation read the stop and closed it.
#[tokio::test(flavor = "multi_thread")]
async fn cancel_other_across_environments_waits_for_the_old_call_to_close() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    let mut single = job(rig.port);
    single["request"][0]["url"] = json!("service://work/hang/${jobId}?n=${executeNumber}");
    single["schedule"] = json!({"cron": ["0 0 1 1 *"]});
    single["overlap"] = json!("CancelOther");
    let (status, body) = rig.api("POST", "/jobs/single", Some(single)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = rig
        .api("POST", "/jobs/single/trigger", Some(json!({})))
        .await;
    assert_eq!(status, 200, "{body}");
    let event = Rig::poll(&rig.dispatch).await;
    let worker = {
        let sundial = Arc::clone(&rig.sundial);
        tokio::spawn(async move { handlers::batch(&sundial, QueueKind::Dispatch, event).await })
    };
    for _ in 0..100 {
        if !rig.target.received("/hang/single").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rig.target.received("/hang/single").len(), 1);

    // The second run, in another environment, stops the first and waits for its call.
    let (status, body) = rig
        .api("POST", "/jobs/single/trigger", Some(json!({})))
        .await;
    assert_eq!(status, 200, "{body}");
    let event = Rig::poll(&rig.dispatch).await;
    assert_eq!(event.records.len(), 1);
    let response = handlers::batch(&rig.other, QueueKind::Dispatch, event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(
        rig.target.received("/hang/single").len(),
        1,
        "no second call while the first is open"
    );
    assert!(!worker.is_finished());

    // The first call's read at 5 s finds the stop and closes it; the second run's next look
    // starts its call.
    rig.clock.advance(chrono::Duration::seconds(5));
    tokio::time::timeout(Duration::from_secs(10), worker)
        .await
        .expect("the read at 5 s closes the call")
        .expect("the worker");
    let closed = std::time::Instant::now();
    let deadline = closed + Duration::from_secs(20);
    while rig.target.received("/hang/single").len() < 2 && std::time::Instant::now() < deadline {
        let event = Rig::poll(&rig.dispatch).await;
        if !event.records.is_empty() {
            handlers::batch(&rig.other, QueueKind::Dispatch, event).await;
        }
    }
    let calls = rig.target.received("/hang/single");
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1].path, "/hang/single?n=2");
    assert!(
        calls[1].at >= closed,
        "the second call after the first closed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn batches_report_only_the_failed_messages() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    // The fixture's two records name executions that do not exist: a no-op, not a failure.
    let event: SqsEvent = serde_json::from_str(&fixture("dispatch.json")).expect("an SQS event");
    assert_eq!(event.records.len(), 2);
    let response = handlers::batch(&rig.sundial, QueueKind::Dispatch, event.clone()).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");

    // A notify record whose execution is gone is dropped too.
    let notify: SqsEvent = serde_json::from_str(&fixture("notify.json")).expect("an SQS event");
    let response = handlers::batch(&rig.sundial, QueueKind::Notify, notify).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");

    // With the table gone, every message fails and is reported by its id.
    let moto = crate::support::moto().expect("moto");
    let dynamo = aws_sdk_dynamodb::Client::new(&moto.sdk().await);
    let table = rig.sundial.engine.app().store().table().to_owned();
    dynamo
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .expect("delete table");
    let response = handlers::batch(&rig.sundial, QueueKind::Dispatch, event.clone()).await;
    let mut failed: Vec<_> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    failed.sort();
    let mut ids: Vec<_> = event
        .records
        .iter()
        .filter_map(|r| r.message_id.clone())
        .collect();
    ids.sort();
    assert_eq!(failed, ids);
    assert!(
        handlers::tick(&rig.sundial, &json!({})).await.is_err(),
        "a tick without its table fails loudly"
    );
}

/// A message that will never succeed is sent to the dispatch DLQ at once, not after ten
/// receives, and not reported as failed (the event source then deletes it).
#[tokio::test(flavor = "multi_thread")]
async fn poison_messages_go_to_the_dead_letter_queue_at_once() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    rig.dispatch
        .send("not a dispatch message", Duration::ZERO)
        .await
        .expect("send");
    let event = Rig::poll(&rig.dispatch).await;
    assert_eq!(event.records.len(), 1);
    let response = handlers::batch(&rig.sundial, QueueKind::Dispatch, event.clone()).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    rig.delete_batch(rig.dispatch.url(), &event).await;
    let dead = rig
        .sundial
        .engine
        .queue(QueueKind::Dispatch)
        .dead_letters(10)
        .await
        .expect("dead letters");
    assert_eq!(dead, ["not a dispatch message"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_fixtures_reach_their_routes() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    let health: Value = serde_json::from_str(&fixture("api-get-health.json")).expect("JSON");
    let (status, body) = rig.api_event(&health).await;
    assert_eq!(status, 200, "{body}");

    // The sample job, as written in the fixture, is accepted.
    let create: Value = serde_json::from_str(&fixture("api-create-job.json")).expect("JSON");
    let (status, body) = rig.api_event(&create).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resp_code"], 200, "{body}");

    // The feedback route needs no API credentials but a token signed with the deployment's
    // secret; the fixture's was signed with another, so it is refused.
    let feedback: Value = serde_json::from_str(&fixture("api-feedback.json")).expect("JSON");
    let (status, body) = rig.api_event(&feedback).await;
    assert_eq!(status, 401, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn queue_and_bus_targets_receive_one_message_per_run() {
    let moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    let sdk = moto.sdk().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let events = aws_sdk_eventbridge::Client::new(&sdk);
    let queue_url = |name: &str| {
        let sqs = sqs.clone();
        let name = format!("{name}-{}", rig.port);
        async move {
            sqs.create_queue()
                .queue_name(name)
                .send()
                .await
                .expect("queue")
                .queue_url
                .expect("url")
        }
    };
    let target_queue = queue_url("target").await;
    let bus_queue = queue_url("from-bus").await;
    // The bus's events that the job sends reach a queue through a rule, as a consumer's would.
    let bus = rig
        .sundial
        .engine
        .config()
        .state_change_bus
        .clone()
        .expect("a bus");
    let bus_queue_arn = sqs
        .get_queue_attributes()
        .queue_url(&bus_queue)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .expect("attributes")
        .attributes
        .and_then(|a| {
            a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
                .cloned()
        })
        .expect("arn");
    events
        .put_rule()
        .name(format!("jobs-{}", rig.port))
        .event_bus_name(&bus)
        .event_pattern(r#"{"source": ["my.app"]}"#)
        .send()
        .await
        .expect("rule");
    events
        .put_targets()
        .rule(format!("jobs-{}", rig.port))
        .event_bus_name(&bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("queue")
                .arn(bus_queue_arn)
                .build()
                .expect("target"),
        )
        .send()
        .await
        .expect("targets");

    // Triggered only: a job with no schedule and no timer would also run once now.
    let base = json!({"jobName": "targets", "creator": "001", "creatorName": "tests",
                      "timer": {"period": "external"}});
    let mut to_queue = base.clone();
    to_queue["target"] = json!({"sqs": {"queueUrl": target_queue}});
    let mut to_bus = base;
    to_bus["target"] =
        json!({"eventbridge": {"busName": bus, "source": "my.app", "detailType": "Tick"}});
    for (id, job) in [("to-queue", to_queue), ("to-bus", to_bus)] {
        let (status, body) = rig.api("POST", &format!("/jobs/{id}"), Some(job)).await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = rig
            .api(
                "POST",
                &format!("/jobs/{id}/trigger"),
                Some(json!({"n": 7})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    rig.drain_dispatch_quiet().await;

    let received = |url: String| {
        let sqs = sqs.clone();
        async move {
            let out = sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .send()
                .await;
            out.expect("receive")
                .messages
                .unwrap_or_default()
                .into_iter()
                .filter_map(|m| m.body)
                .map(|b| serde_json::from_str::<Value>(&b).expect("JSON"))
                .collect::<Vec<_>>()
        }
    };
    let messages = received(target_queue).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["jobId"], "to-queue");
    assert_eq!(messages[0]["executeNumber"], 1);
    let from_bus = received(bus_queue).await;
    assert_eq!(from_bus.len(), 1, "{from_bus:?}");
    assert_eq!(from_bus[0]["source"], "my.app");
    assert_eq!(from_bus[0]["detail-type"], "Tick");
    assert_eq!(from_bus[0]["detail"]["jobId"], "to-bus");
    for id in ["to-queue", "to-bus"] {
        let executions = rig.executions(id).await;
        assert_eq!(executions.len(), 1);
        assert_eq!(executions[0]["state"], "Succeeded", "{executions:#?}");
    }
}

/// Contention on DynamoDB (issue 12, item 7): 50 triggers of one job sent at once through the API
/// handler all succeed, with 50 distinct execute numbers, although each is a conditional write of
/// the same job item.
#[tokio::test(flavor = "multi_thread")]
async fn fifty_parallel_triggers_of_one_job_all_succeed() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    let mut body = job(rig.port);
    body["timer"] = json!({"period": "external"});
    body.as_object_mut().map(|o| o.remove("schedule"));
    let (status, answer) = rig.api("POST", "/jobs/contended", Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    let rig = Arc::new(rig);
    let mut triggers = tokio::task::JoinSet::new();
    for i in 0..50 {
        let rig = Arc::clone(&rig);
        triggers.spawn(async move {
            rig.api("POST", "/jobs/contended/trigger", Some(json!({"i": i})))
                .await
        });
    }
    let mut numbers = std::collections::BTreeSet::new();
    while let Some(joined) = triggers.join_next().await {
        let (status, answer) = joined.expect("trigger task");
        assert_eq!(status, 200, "{answer}");
        numbers.insert(answer["executeNumber"].as_u64().expect("executeNumber"));
    }
    assert_eq!(numbers.len(), 50, "distinct execute numbers: {numbers:?}");
}

/// Issue 15's backfill modes on DynamoDB, through the API and tick handlers: a time's runs are
/// read by id in batches (`BatchGetItem`), so after an `all` backfill of one time, `missing` runs
/// only the other times, as their first re-runs, newest first; then nothing is missing or failed.
/// (`BufferAll`: under `AllowAll` the runs finish together, and the dispatch step that settles
/// them overflows a 2 MiB worker stack in a debug build; main does the same.)
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_backfill_reads_each_times_runs_by_id() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:30Z")).await else {
        return;
    };
    // Yearly: its next fire is far beyond the tick's horizon, so nothing but the backfills runs.
    let mut yearly = job(rig.port);
    yearly["schedule"] = json!({"cron": ["0 0 1 1 *"]});
    let (status, body) = rig.api("POST", "/jobs/filled", Some(yearly)).await;
    assert_eq!(status, 200, "{body}");
    let tick: Value = serde_json::from_str(&fixture("tick.json")).expect("JSON");
    let one = json!({"startTime": "2028-01-01T00:00:00Z", "endTime": "2028-01-01T00:00:00Z"});
    let (status, answer) = rig.api("POST", "/jobs/filled/backfill", Some(one)).await;
    assert_eq!((status, &answer["count"]), (200, &json!(1)), "{answer}");
    handlers::tick(&rig.sundial, &tick).await.expect("tick");
    rig.drain_dispatch_quiet().await;
    assert_eq!(rig.target.received("/run/filled").len(), 1);

    let range = json!({"startTime": "2026-01-01T00:00:00Z", "endTime": "2029-12-31T00:00:00Z",
                       "mode": "missing", "reverse": true, "overlap": "BufferAll"});
    let mut dry = range.clone();
    dry["dryRun"] = json!(true);
    let (status, answer) = rig
        .api("POST", "/jobs/filled/backfill", Some(dry.clone()))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["times"],
        json!([
            "2029-01-01T00:00:00+00:00",
            "2027-01-01T00:00:00+00:00",
            "2026-01-01T00:00:00+00:00"
        ])
    );
    let (status, answer) = rig.api("POST", "/jobs/filled/backfill", Some(range)).await;
    assert_eq!((status, &answer["count"]), (200, &json!(3)), "{answer}");
    handlers::tick(&rig.sundial, &tick).await.expect("tick");
    rig.drain_dispatch_quiet().await;
    let runs: Vec<String> = rig
        .target
        .received("/run/filled")
        .iter()
        .map(|r| r.body["scheduled"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        runs,
        [
            "2028-01-01T00:00:00Z",
            "2029-01-01T00:00:00Z",
            "2027-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z"
        ]
    );
    let ids: Vec<String> = rig
        .executions("filled")
        .await
        .iter()
        .map(|e| e["executionId"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        ids.contains(&"filled~20260101T000000Z~r1".to_string()),
        "{ids:?}"
    );
    for mode in ["missing", "failed"] {
        dry["mode"] = json!(mode);
        let (_, answer) = rig
            .api("POST", "/jobs/filled/backfill", Some(dry.clone()))
            .await;
        assert_eq!(answer["count"], 0, "{mode}: {answer}");
    }
}

/// Issue 26 item 1 on DynamoDB and SQS through the handlers: the tick planned a job's next fire
/// (its execution exists, its message waits in SQS); the job is paused through the API handler;
/// when the fire's message reaches the dispatch handler, the run ends `Skipped` saying why and
/// the target is not called. A manual trigger of the paused job still runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_pause_skips_a_fire_planned_before_it() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2029-12-31T23:59:30Z")).await else {
        return;
    };
    let mut minutely = job(rig.port);
    minutely["schedule"]["startTime"] = json!("2030-01-01T00:01:00Z");
    let (status, body) = rig.api("POST", "/jobs/paused", Some(minutely)).await;
    assert_eq!(status, 200, "{body}");
    rig.clock.set(at("2030-01-01T00:01:00Z"));
    let tick: Value = serde_json::from_str(&fixture("tick.json")).expect("JSON");
    let report = handlers::tick(&rig.sundial, &tick).await.expect("tick");
    assert_eq!(report["fires"], 2, "00:01 and 00:02 planned: {report}");
    rig.drain_dispatch().await;
    assert_eq!(rig.target.received("/run/paused").len(), 1);

    rig.clock.set(at("2030-01-01T00:01:10Z"));
    let (status, body) = rig
        .api(
            "POST",
            "/jobs/paused/pause",
            Some(json!({"notes": "freeze"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let calls_at_answer = rig.target.received("/run/paused").len();

    // 00:02: the fire's message (sent by the tick with a 60 s SQS delay) as the event source
    // hands it to dispatch.
    rig.clock.set(at("2030-01-01T00:02:00Z"));
    let mut message = SqsMessage::default();
    message.message_id = Some("fire-0002".into());
    message.receipt_handle = Some("fire-0002".into());
    message.body = Some(json!({"executionId": "paused~20300101T000200Z"}).to_string());
    message
        .attributes
        .insert("ApproximateReceiveCount".into(), "1".into());
    let mut event = SqsEvent::default();
    event.records.push(message);
    let response = handlers::batch(&rig.sundial, QueueKind::Dispatch, event).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    let after = rig.target.received("/run/paused").len() - calls_at_answer;
    eprintln!("calls after the pause's answer on moto: {after}");
    assert_eq!(after, 0, "no call after the pause's answer");
    let (status, fire) = rig
        .api("GET", "/executions/paused~20300101T000200Z", None)
        .await;
    assert_eq!(status, 200, "{fire}");
    let fire = fire.get("data").cloned().unwrap_or(fire);
    assert_eq!(fire["state"], "Skipped", "{fire:#}");
    assert!(
        fire.to_string()
            .contains("paused: its job was paused before it started (freeze)"),
        "{fire:#}"
    );

    // A trigger of the paused job runs.
    let (status, body) = rig
        .api("POST", "/jobs/paused/trigger", Some(json!({})))
        .await;
    assert_eq!(status, 200, "{body}");
    rig.drain_dispatch().await;
    assert_eq!(
        rig.target.received("/run/paused").len(),
        calls_at_answer + 1
    );
}

/// A pause until a time on DynamoDB (issue 30 item 4): the job's wake-up waits for the end, the
/// tick of that minute resumes the job as the system and plans its fires from the end on.
#[tokio::test(flavor = "multi_thread")]
async fn a_pause_until_ends_at_the_tick_of_its_minute() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2029-12-31T23:59:30Z")).await else {
        return;
    };
    let mut minutely = job(rig.port);
    minutely["schedule"]["startTime"] = json!("2030-01-01T00:01:00Z");
    let (status, body) = rig.api("POST", "/jobs/window", Some(minutely)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = rig
        .api(
            "POST",
            "/jobs/window/pause",
            Some(json!({"notes": "vendor window", "until": "2030-01-01T00:03:00Z"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, shown) = rig.api("GET", "/jobs/window", None).await;
    let shown = shown.get("data").cloned().unwrap_or(shown);
    assert_eq!(shown["pausedUntil"], "2030-01-01T00:03:00Z", "{shown:#}");
    let tick: Value = serde_json::from_str(&fixture("tick.json")).expect("JSON");
    for minute in ["00:01:00", "00:02:00"] {
        rig.clock.set(at(&format!("2030-01-01T{minute}Z")));
        let report = handlers::tick(&rig.sundial, &tick).await.expect("tick");
        assert_eq!(report["fires"], 0, "paused at {minute}: {report}");
    }
    // The tick of 00:03 comes 20 s late: the job resumes at 00:03 and its 00:03 fire runs.
    rig.clock.set(at("2030-01-01T00:03:20Z"));
    let report = handlers::tick(&rig.sundial, &tick).await.expect("tick");
    assert!(report["fires"].as_u64() >= Some(1), "{report}");
    rig.drain_dispatch().await;
    assert_eq!(rig.target.received("/run/window").len(), 1);
    let (_, shown) = rig.api("GET", "/jobs/window", None).await;
    let shown = shown.get("data").cloned().unwrap_or(shown);
    assert_eq!(shown["state"], "active", "{shown:#}");
    assert!(shown.get("pausedUntil").is_none(), "{shown:#}");
    let (_, run) = rig
        .api("GET", "/executions/window~20300101T000300Z", None)
        .await;
    let run = run.get("data").cloned().unwrap_or(run);
    assert_eq!(run["state"], "Succeeded", "{run:#}");
    let (_, history) = rig.api("GET", "/jobs/window/history", None).await;
    let history = history.get("data").cloned().unwrap_or(history);
    assert_eq!(history["entries"][0]["action"], "unpause", "{history:#}");
    assert_eq!(history["entries"][0]["actor"], "system", "{history:#}");
}

/// What every function does at cold start (`Sundial::from_env` → `Sundial::check_layout`): a
/// fresh stack's table takes this layout, and a table of an older one stops the function with a
/// message that says what to do.
#[tokio::test(flavor = "multi_thread")]
async fn a_function_starts_on_a_fresh_table_and_refuses_one_of_an_older_layout() {
    let _moto = need_moto!();
    let Some(rig) = rig(at("2030-01-01T00:00:00Z")).await else {
        return;
    };
    rig.sundial
        .check_layout()
        .await
        .expect("a fresh table takes this layout");
    rig.sundial.check_layout().await.expect("and keeps it");
    let store = rig.sundial.engine.app().store();
    let layout = sundial_aws::dynamo::layout::LAYOUT_VERSION;
    let refused_layout = sundial_aws::dynamo::layout::UPGRADES_FROM - 1;
    assert!(refused_layout < layout);
    store.record_layout(refused_layout).await.expect("record");
    let refused = rig
        .sundial
        .check_layout()
        .await
        .expect_err("an older layout is refused")
        .to_string();
    assert!(
        refused.contains(store.table()) && refused.contains("Layout versions"),
        "{refused}"
    );
}
