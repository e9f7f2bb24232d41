//! Issue 27: a calendar's change re-plans its jobs through the queue where the engine says so
//! (AWS), taken by [`Engine::handle_message`] as any notify-queue message: idempotent under a
//! duplicate delivery, and a job whose re-plan fails comes back with its message.

use super::*;
use crate::app::{ChangeBy, REPLAN_BATCH};
use sundial_ports::queue::Delivery;
use sundial_ports::store::{AuditQuery, AuditRecord, AuditStore, CalendarStore};

/// docs/spec.md §16.1's London calendar (Good Friday is 29 March 2024).
fn london(extra_dates: &[&str]) -> Value {
    json!({
        "timeZone": "Europe/London",
        "rules": [{"easter": -2, "comment": "Good Friday"}, {"easter": 1}],
        "dates": extra_dates,
    })
}

/// Payroll on the last business day of the month in London, at 18:00.
fn payroll() -> Value {
    json!({"schedule": {"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                        "timeZone": "Europe/London"}})
}

fn queued_world() -> World {
    World::with_configs(
        "2024-03-10T00:00:00Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        |config| config.replan_by_queue = true,
        |_, _| ok(json!({})),
    )
}

async fn next_fire(w: &World, id: &str) -> String {
    w.app()
        .load(&JobId::parse(id).unwrap())
        .await
        .unwrap()
        .job
        .next_fire()
        .unwrap()
        .to_rfc3339()
}

/// The `calendar:update` entries of a job's trail.
async fn replans(w: &World, id: &str) -> usize {
    w.app()
        .store()
        .list_audit(id, &AuditQuery::default(), &PageRequest::first(100))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| e.document["action"] == json!("calendar:update"))
        .count()
}

async fn receive_all(w: &World) -> Vec<Delivery> {
    w.engine
        .queue(QueueKind::Notify)
        .receive(100, StdDuration::from_secs(30))
        .await
        .unwrap()
}

async fn handle(w: &World, delivery: &Delivery) -> Handled {
    w.engine
        .handle_message(QueueKind::Notify, &delivery.receipt, delivery, None)
        .await
}

#[tokio::test]
async fn a_calendar_change_queues_its_jobs_and_the_queue_replans_them_once() {
    let w = queued_world();
    let by = ChangeBy::anonymous();
    w.app()
        .put_calendar_by(&by, "london", &london(&[]))
        .await
        .unwrap();
    let jobs: Vec<String> = (0..REPLAN_BATCH + 5)
        .map(|i| format!("payroll-{i:02}"))
        .collect();
    for id in &jobs {
        w.create(id, payroll()).await;
    }
    assert_eq!(
        next_fire(&w, "payroll-00").await,
        "2024-03-28T18:00:00+00:00"
    );

    // 28 March becomes a holiday: the answer comes at once, nothing re-planned yet.
    let put = w
        .app()
        .put_calendar_by(&by, "london", &london(&["2024-03-28"]))
        .await
        .unwrap();
    assert_eq!((put.queued, put.replanned), (jobs.len(), 0));
    assert_eq!(
        next_fire(&w, "payroll-00").await,
        "2024-03-28T18:00:00+00:00"
    );

    // Two messages, 25 jobs and 5.
    let deliveries = receive_all(&w).await;
    let sizes: Vec<usize> = deliveries
        .iter()
        .map(|d| ReplanMessage::from_body(&d.body).unwrap().jobs.len())
        .collect();
    assert_eq!(sizes, [REPLAN_BATCH, 5]);
    for delivery in &deliveries {
        assert_eq!(handle(&w, delivery).await, Handled::Done);
        w.engine
            .queue(QueueKind::Notify)
            .ack(&delivery.receipt)
            .await
            .unwrap();
    }
    for id in &jobs {
        assert_eq!(next_fire(&w, id).await, "2024-03-27T18:00:00+00:00", "{id}");
        assert_eq!(replans(&w, id).await, 1, "{id}");
    }

    // The first message delivered again: nothing is written, no second entry.
    let writes = w.app().store().writes();
    w.engine
        .queue(QueueKind::Notify)
        .send(&deliveries[0].body, StdDuration::ZERO)
        .await
        .unwrap();
    let again = receive_all(&w).await;
    assert_eq!(again.len(), 1);
    assert_eq!(handle(&w, &again[0]).await, Handled::Done);
    assert_eq!(
        w.app().store().writes(),
        writes,
        "a duplicate writes nothing"
    );
    for id in &jobs {
        assert_eq!(replans(&w, id).await, 1, "{id}");
    }

    // The calendar's history records the change and how many jobs it queued.
    let trail = w
        .app()
        .calendar_history("london", &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(trail.items[0]["action"], json!("calendar:update"));
    assert_eq!(trail.items[0]["queued"], json!(jobs.len()));
}

#[tokio::test]
async fn a_job_whose_replan_fails_comes_back_with_its_message() {
    let w = queued_world();
    let by = ChangeBy::anonymous();
    w.app()
        .put_calendar_by(&by, "london", &london(&[]))
        .await
        .unwrap();
    for id in ["pay-a", "pay-b"] {
        w.create(id, payroll()).await;
    }
    w.app()
        .put_calendar_by(&by, "london", &london(&["2024-03-28"]))
        .await
        .unwrap();
    let first = receive_all(&w).await;
    assert_eq!(first.len(), 1);
    // The first job's write fails: the message comes back; the second job is re-planned.
    w.app().store().fail_write(0);
    assert_eq!(handle(&w, &first[0]).await, Handled::Retry);
    assert_eq!(next_fire(&w, "pay-a").await, "2024-03-28T18:00:00+00:00");
    assert_eq!(next_fire(&w, "pay-b").await, "2024-03-27T18:00:00+00:00");

    // After its backoff the message is taken again: the first job is re-planned, the second
    // left as it is.
    w.clock.advance(Duration::seconds(2));
    let second = receive_all(&w).await;
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].receive_count, 2);
    assert_eq!(handle(&w, &second[0]).await, Handled::Done);
    assert_eq!(next_fire(&w, "pay-a").await, "2024-03-27T18:00:00+00:00");
    assert_eq!(
        (replans(&w, "pay-a").await, replans(&w, "pay-b").await),
        (1, 1)
    );
}

/// A message that arrives after a later change re-plans with the calendar as it is now, and a
/// message for a calendar deleted since does nothing.
#[tokio::test]
async fn a_late_message_replans_with_the_calendar_as_stored_now() {
    let w = queued_world();
    let by = ChangeBy::anonymous();
    w.app()
        .put_calendar_by(&by, "london", &london(&[]))
        .await
        .unwrap();
    w.create("pay", payroll()).await;
    w.app()
        .put_calendar_by(&by, "london", &london(&["2024-03-28"]))
        .await
        .unwrap();
    w.app()
        .put_calendar_by(&by, "london", &london(&["2024-03-28", "2024-03-27"]))
        .await
        .unwrap();
    let deliveries = receive_all(&w).await;
    assert_eq!(deliveries.len(), 2);
    // Taken newest first: the older message finds the job already re-planned.
    for delivery in deliveries.iter().rev() {
        assert_eq!(handle(&w, delivery).await, Handled::Done);
    }
    assert_eq!(next_fire(&w, "pay").await, "2024-03-26T18:00:00+00:00");
    assert_eq!(replans(&w, "pay").await, 1);
}

/// `sundial serve` (no queue for re-plans) re-plans in the request and answers the same field.
#[tokio::test]
async fn without_the_queue_the_replan_is_in_the_request() {
    let (w, by) = with_london().await;
    w.create("pay", payroll()).await;
    let put = w
        .app()
        .put_calendar_by(&by, "london", &london(&["2024-03-28"]))
        .await
        .unwrap();
    assert_eq!((put.queued, put.replanned), (1, 1));
    assert_eq!(next_fire(&w, "pay").await, "2024-03-27T18:00:00+00:00");
    assert!(receive_all(&w).await.is_empty());
}

/// The job body of [`payroll`], whole.
fn payroll_job() -> Value {
    let mut body = payroll();
    body["jobName"] = json!("payroll");
    body["creator"] = json!("c");
    body["creatorName"] = json!("C");
    body["request"] = json!([{"method": "POST", "url": "service://main/run"}]);
    body
}

/// A world (not re-planning through the queue) with the calendar `london`, and who changes it.
async fn with_london() -> (World, ChangeBy) {
    let w = World::new("2024-03-10T00:00:00Z", |_, _| ok(json!({})));
    let by = ChangeBy::anonymous();
    w.app()
        .put_calendar_by(&by, "london", &london(&[]))
        .await
        .unwrap();
    (w, by)
}

/// Deletes the calendar `london` through the control plane just before the next job write.
fn delete_london_before_the_next_job_write(w: &World) {
    let app = Arc::clone(w.engine.app());
    w.app().store().before_next_job_write(move || {
        Box::pin(async move {
            app.delete_calendar_by(&ChangeBy::anonymous(), "london")
                .await
                .expect("the job is not written yet: the delete goes through");
        })
    });
}

#[tokio::test]
async fn a_delete_between_a_jobs_listing_and_its_creation_fails_the_creation() {
    let (w, by) = with_london().await;
    // The creation lists the job under london and reads it; the delete then finds the listing
    // of a job that does not exist, drops it and deletes the calendar.
    delete_london_before_the_next_job_write(&w);
    let id = JobId::parse("payroll").unwrap();
    let refused = w.app().create_job_by(&by, &doc(&id, &payroll_job())).await;
    assert!(
        matches!(&refused, Err(AppError::Conflict(why)) if why.contains("payroll") && why.contains("calendar")),
        "{refused:?}"
    );
    assert!(matches!(
        w.app().load(&id).await,
        Err(AppError::NotFound(_))
    ));
    assert!(matches!(
        w.app().get_calendar("london").await,
        Err(AppError::NotFound(_))
    ));
    // Asked again, the creation is refused for the calendar it names.
    let again = w.app().create_job_by(&by, &doc(&id, &payroll_job())).await;
    assert!(
        matches!(&again, Err(AppError::Invalid(e)) if e.to_string().contains("london")),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_delete_between_a_jobs_listing_and_its_update_fails_the_update() {
    let (w, by) = with_london().await;
    w.create("payroll", json!({"schedule": {"cron": ["0 18 * * *"]}}))
        .await;
    let id = JobId::parse("payroll").unwrap();
    let before = w.app().load(&id).await.unwrap();
    // The update starts using london: the delete's check finds the job on its old schedule.
    delete_london_before_the_next_job_write(&w);
    let refused = w.app().update_job_by(&by, &doc(&id, &payroll_job())).await;
    assert!(
        matches!(&refused, Err(AppError::Conflict(why)) if why.contains("calendar")),
        "{refused:?}"
    );
    let after = w.app().load(&id).await.unwrap();
    assert_eq!(after.version, before.version, "the job was not written");
    assert!(after.job.definition.calendars().get("london").is_none());
}

#[tokio::test]
async fn a_job_listed_after_the_deletes_check_makes_the_delete_look_again() {
    let (w, by) = with_london().await;
    let read = w
        .app()
        .store()
        .get_calendar("london")
        .await
        .unwrap()
        .unwrap();
    // A creation lists its job after a delete read the calendar and found no job.
    w.app()
        .store()
        .add_calendar_users("payroll", &["london".to_owned()])
        .await
        .unwrap();
    let history = AuditRecord {
        job_id: "calendar:london".into(),
        entry_id: "e".into(),
        at: w.clock.now(),
        document: json!({}),
    };
    assert!(matches!(
        w.app()
            .store()
            .delete_calendar("london", read.version, read.listings, &history)
            .await,
        Err(StoreError::VersionConflict { .. })
    ));
    // Through the control plane, the delete reads again: the job is there now, so it is refused.
    w.create("payroll", payroll()).await;
    let refused = w.app().delete_calendar_by(&by, "london").await;
    assert!(
        matches!(&refused, Err(AppError::Conflict(why)) if why.contains("used by 1 job(s): payroll")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_calendar_changed_while_a_job_is_written_ends_in_the_job() {
    let (w, by) = with_london().await;
    let id = JobId::parse("payroll").unwrap();
    w.app()
        .create_job_by(&by, &doc(&id, &payroll_job()))
        .await
        .unwrap();
    // The update read london before it changed; the change re-plans the job before the update's
    // write, which then retries over it with the copy it read.
    let app = Arc::clone(w.engine.app());
    w.app().store().before_next_job_write(move || {
        Box::pin(async move {
            app.put_calendar_by(&ChangeBy::anonymous(), "london", &london(&["2024-03-28"]))
                .await
                .expect("the calendar changes");
        })
    });
    let mut later = payroll_job();
    later["schedule"]["calendars"][0]["hour"] = json!("19");
    w.app().update_job_by(&by, &doc(&id, &later)).await.unwrap();
    let stored = w.app().get_calendar("london").await.unwrap();
    let job = w.app().load(&id).await.unwrap().job;
    let copy = job.definition.calendars();
    let copy = copy.get("london").expect("the job uses london");
    assert_eq!(
        **copy,
        stored.parsed().unwrap(),
        "the job's copy is the calendar as it is now"
    );
    // 2024-03-28 is a day off now: the last business day of March is the 27th.
    assert_eq!(next_fire(&w, "payroll").await, "2024-03-27T19:00:00+00:00");
}
