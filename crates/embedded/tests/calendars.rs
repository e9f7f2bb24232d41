//! Issue 27 on SQLite: a calendar's change with the re-plans queued ([`EngineConfig::replan_by_queue`],
//! as on AWS) on the store's own notify queue, taken through `Engine::handle_message` (the routing
//! of every notify message), delivered twice; and the change and its history entry in one write.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sundial_core::job::JobId;
use sundial_embedded::SqliteStore;
use sundial_ports::http::{HttpClient, HttpError, HttpRequest, HttpResponse};
use sundial_ports::memory::{ManualClock, RecordingPublisher};
use sundial_ports::queue::Queue;
use sundial_ports::store::{AuditQuery, AuditStore, PageRequest};
use sundial_service::engine::{Engine, EngineConfig, Handled, QueueKind};
use sundial_service::{App, AppConfig, ChangeBy};

/// No job here makes a call.
struct NoHttp;

impl HttpClient for NoHttp {
    async fn send(&self, _: HttpRequest) -> Result<HttpResponse, HttpError> {
        Err(HttpError::Refused("no calls in this test".into()))
    }
}

fn london(dates: &[&str]) -> Value {
    json!({"timeZone": "Europe/London", "rules": [{"easter": -2}, {"easter": 1}], "dates": dates})
}

fn payroll() -> Value {
    json!({"jobName": "payroll", "creator": "c", "creatorName": "C",
           "request": [{"method": "POST", "url": "http://127.0.0.1:9/pay"}],
           "schedule": {"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                        "timeZone": "Europe/London"}})
}

#[tokio::test(flavor = "multi_thread")]
async fn queued_replans_on_sqlite_are_taken_once_however_often_delivered() {
    let dir = sundial_testkit::TempDir::new("embedded-calendars");
    let start: DateTime<Utc> = "2024-03-10T00:00:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let store = SqliteStore::open(&dir.path().join("sundial.db")).unwrap();
    let app = Arc::new(App::new(
        store.clone(),
        clock.clone(),
        AppConfig::new(b"a-test-secret-of-at-least-32-bytes!!".to_vec()),
    ));
    let engine = Engine::new(
        app.clone(),
        store.queue(QueueKind::Dispatch.name(), clock.clone()),
        store.queue(QueueKind::Notify.name(), clock.clone()),
        NoHttp,
        RecordingPublisher::new(),
        EngineConfig {
            replan_by_queue: true,
            ..EngineConfig::default()
        },
    );
    let by = ChangeBy::anonymous();
    app.put_calendar_by(&by, "london", &london(&[]))
        .await
        .unwrap();
    let id = JobId::parse("payroll").unwrap();
    app.create_job(&id, &payroll()).await.unwrap();
    let next = || async { app.describe(&id).await.unwrap().future_action_times[0].clone() };
    assert_eq!(next().await, "2024-03-28T18:00:00+00:00");

    let put = app
        .put_calendar_by(&by, "london", &london(&["2024-03-28"]))
        .await
        .unwrap();
    assert_eq!((put.queued, put.replanned), (1, 0));
    assert_eq!(
        next().await,
        "2024-03-28T18:00:00+00:00",
        "not yet re-planned"
    );

    let notify = engine.queue(QueueKind::Notify);
    let deliveries = notify.receive(10, Duration::from_secs(30)).await.unwrap();
    assert_eq!(deliveries.len(), 1);
    let delivery = &deliveries[0];
    // Delivered twice (the second before the first is deleted): re-planned once.
    for _ in 0..2 {
        let handled = engine
            .handle_message(QueueKind::Notify, "m1", delivery, None)
            .await;
        assert_eq!(handled, Handled::Done);
    }
    notify.ack(&delivery.receipt).await.unwrap();
    assert_eq!(next().await, "2024-03-27T18:00:00+00:00");
    let entries = store
        .list_audit("payroll", &AuditQuery::default(), &PageRequest::first(50))
        .await
        .unwrap()
        .items;
    let replans = entries
        .iter()
        .filter(|e| e.document["action"] == "calendar:update")
        .count();
    assert_eq!(replans, 1);

    // The calendar's history: written with each change.
    let trail = app
        .calendar_history("london", &PageRequest::first(10))
        .await
        .unwrap()
        .items;
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["calendar:update", "calendar:create"]);
    assert_eq!(trail[0]["queued"], json!(1));
}
