//! A pause pauses (issue 26 item 1): every run of the job not yet started ends `Skipped` with the
//! reason the ledger reads back, and is never called — runs waiting for their time, in line, in
//! the buffer, and runs admitted ahead and held for their fire time; a manual trigger of the
//! paused job still runs; a run already in its call finishes.

use sundial_core::job::{JobStatus, PauseEnd};
use sundial_core::ledger::Fate;
use sundial_ports::store::{AuditQuery, AuditStore, WakeUpIndex};

use crate::app::{Actor, ChangeBy};

use super::*;

async fn pause(w: &World, job: &str, notes: &str) {
    w.app()
        .set_active(&JobId::parse(job).unwrap(), false, Some(notes.into()))
        .await
        .unwrap();
}

/// An every-second job paused between two fires: the runs the tick created ahead of the pause
/// are skipped, nothing is called after the pause, the ledger says `paused` with the notes, and a
/// trigger of the paused job runs.
#[tokio::test]
async fn a_pause_skips_the_runs_not_yet_started() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create("sec", json!({"schedule": {"cron": ["* * * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:00:05Z").await;
    let before = w.calls().len();
    assert!(before >= 5, "{before}");
    let created = w.executions("sec").await.len();
    assert!(
        created > before,
        "runs exist ahead of their time: {created}"
    );
    w.clock.set(t("2024-01-01T00:00:05.300Z"));
    pause(&w, "sec", "freeze").await;
    w.run_until("2024-01-01T00:00:10Z").await;
    assert_eq!(w.calls().len(), before, "no call after the pause");
    let executions = w.executions("sec").await;
    let skipped: Vec<&Execution> = executions
        .iter()
        .filter(|e| e.state() == ExecutionState::Skipped)
        .collect();
    assert_eq!(skipped.len(), created - before, "{:?}", states(&executions));
    for run in &skipped {
        assert_eq!(
            run.events().last().map(|e| e.message.as_str()),
            Some("paused: its job was paused before it started (freeze)")
        );
        assert_eq!(run.attempts(), 0);
    }
    let state = w.job_state("sec").await;
    assert!(state.running.is_empty() && state.waiting.is_empty());
    // "Why didn't it run": paused, with the notes and when the pause began.
    let ledger = w
        .app()
        .occurrences(
            &JobId::parse("sec").unwrap(),
            t("2024-01-01T00:00:05Z"),
            t("2024-01-01T00:00:08Z"),
        )
        .await
        .unwrap()
        .entries;
    let paused = Fate::Paused {
        notes: Some("freeze".into()),
        since: t("2024-01-01T00:00:05.300Z"),
    };
    assert_eq!(
        ledger.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>(),
        [
            Fate::Ran {
                execution_id: "sec~20240101T000005Z".into(),
                state: "Succeeded".into()
            },
            paused.clone(),
            paused
        ]
    );
    // A manual trigger of the paused job runs.
    w.app()
        .trigger(
            &JobId::parse("sec").unwrap(),
            json!({}),
            None,
            Default::default(),
        )
        .await
        .unwrap();
    w.drain().await;
    assert_eq!(w.calls().len(), before + 1, "the trigger ran");
}

/// A run admitted ahead and held for its fire time is not called when its job is paused before
/// its last look (100 ms before the fire): it ends `Skipped`, counts no attempt, frees its slot.
#[tokio::test]
async fn a_pause_stops_a_run_held_for_its_fire_time() {
    let w = admitting_ahead(
        "held",
        json!({"schedule": {"cron": ["* * * * *"]}}),
        json!({}),
    )
    .await;
    w.clock.set(t("2024-01-01T00:00:59.500Z"));
    w.engine.tick().await.unwrap();
    let worker = tokio::spawn(dispatch_visible(Arc::clone(&w.engine)));
    wait_for_newest(&w, "held", ExecutionState::Processing).await;
    w.clock.set(t("2024-01-01T00:00:59.600Z"));
    pause(&w, "held", "stop").await;
    w.clock.set(t("2024-01-01T00:00:59.900Z"));
    w.clock.set(t("2024-01-01T00:01:00Z"));
    worker.await.unwrap();
    w.drain().await;
    assert!(w.calls().is_empty(), "not called");
    let executions = w.executions("held").await;
    assert_eq!(states(&executions), ["Skipped"]);
    assert_eq!(executions[0].attempts(), 0);
    assert_eq!(executions[0].started_at(), None);
    assert!(w.job_state("held").await.running.is_empty());
}

/// A pause answered after a held run's last look and before its fire time: the run looks once
/// more before calling (this process answered a pause since), and is not called.
#[tokio::test]
async fn a_pause_after_the_last_look_still_stops_the_call() {
    let w = admitting_ahead(
        "late",
        json!({"schedule": {"cron": ["* * * * *"]}}),
        json!({}),
    )
    .await;
    w.clock.set(t("2024-01-01T00:00:59.500Z"));
    w.engine.tick().await.unwrap();
    let worker = tokio::spawn(dispatch_visible(Arc::clone(&w.engine)));
    wait_for_newest(&w, "late", ExecutionState::Processing).await;
    // The last look, 100 ms before the fire: the job is active.
    w.clock.set(t("2024-01-01T00:00:59.950Z"));
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    pause(&w, "late", "now").await;
    w.clock.set(t("2024-01-01T00:01:00Z"));
    worker.await.unwrap();
    w.drain().await;
    assert!(w.calls().is_empty(), "not called after the pause's answer");
    assert_eq!(states(&w.executions("late").await), ["Skipped"]);
}

/// A run already in its call when its job is paused finishes: a pause stops only runs not yet
/// started.
#[tokio::test]
async fn a_run_in_its_call_finishes_after_a_pause() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "slow",
        json!({"schedule": {"cron": ["* * * * *"]}, "async": true, "timeoutSeconds": 600}),
    )
    .await;
    w.run_until("2024-01-01T00:01:05Z").await;
    let running = w.executions("slow").await.pop().unwrap();
    assert_eq!(running.state(), ExecutionState::Processing);
    pause(&w, "slow", "hold").await;
    w.engine
        .apply_feedback(&running.execution_id, &json!({"status": "succeed"}))
        .await
        .unwrap();
    w.drain().await;
    assert_eq!(states(&w.executions("slow").await), ["Succeeded"]);
}

/// Issue 30 item 4: a pause given an end resumes by itself. An every-minute job paused at 00:02:30
/// until 00:05 does not run 00:03 or 00:04, is resumed by the tick as the system (its history says
/// why), and runs 00:05 on, even when the tick that ends the pause comes late.
#[tokio::test]
async fn a_pause_until_ends_by_itself_and_the_schedule_goes_on_from_its_end() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create("minute", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:02:30Z").await;
    let id = JobId::parse("minute").unwrap();
    let job = w
        .app()
        .pause_by(
            &ChangeBy::new(Actor::new("olga")),
            &id,
            Some("vendor maintenance".into()),
            Some(PauseEnd::At(t("2024-01-01T00:05:00Z"))),
        )
        .await
        .unwrap();
    assert_eq!(job.state.paused_until, Some(t("2024-01-01T00:05:00Z")));
    assert_eq!(
        job.to_api_json()["pausedUntil"],
        json!("2024-01-01T00:05:00Z")
    );
    // Its wake-up waits for the end of the pause.
    assert_eq!(
        w.app().store().get_wakeup("job:minute").await.unwrap(),
        Some(t("2024-01-01T00:05:00Z"))
    );
    // The tick that ends it comes 40 s late: 00:05 still runs (within the catch-up window).
    w.run_until("2024-01-01T00:04:59Z").await;
    assert_eq!(
        w.call_times(),
        ["00:00:01", "00:01:00", "00:02:00"],
        "nothing runs while paused"
    );
    w.resume_at("2024-01-01T00:05:40Z").await;
    w.run_until("2024-01-01T00:06:30Z").await;
    assert_eq!(
        w.call_times(),
        ["00:00:01", "00:01:00", "00:02:00", "00:05:40", "00:06:00"]
    );
    let job = w.app().get_job(&id).await.unwrap();
    assert_eq!(job.status(), JobStatus::Active);
    assert_eq!(job.state.paused_until, None);
    assert!(job.to_api_json().get("pausedUntil").is_none());
    let history = w
        .app()
        .store()
        .list_audit("minute", &AuditQuery::default(), &PageRequest::first(10))
        .await
        .unwrap()
        .items;
    let actions: Vec<(String, String)> = history
        .iter()
        .map(|e| {
            (
                e.document["action"].as_str().unwrap_or_default().to_owned(),
                e.document["actor"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        actions[..2],
        [
            ("unpause".to_owned(), "system".to_owned()),
            ("pause".to_owned(), "olga".to_owned())
        ],
        "newest first: {history:#?}"
    );
    assert_eq!(
        history[0].document["reason"],
        json!("the pause until 2024-01-01T00:05:00Z ended")
    );
    assert_eq!(history[1].document["until"], json!("2024-01-01T00:05:00Z"));
}

/// A pause given an end is replaced by a later pause or ended by a resume: neither is undone when
/// the first end comes. A duration counts from the pause; an end not later than now is refused.
#[tokio::test]
async fn a_pause_until_is_replaced_by_a_later_pause_or_a_resume() {
    let w = World::new("2024-01-01T00:00:00Z", |_, _| ok(json!({})));
    w.create("minute", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    let id = JobId::parse("minute").unwrap();
    let by = ChangeBy::anonymous();
    let job = w
        .app()
        .pause_by(&by, &id, None, Some(PauseEnd::parse("2m").unwrap()))
        .await
        .unwrap();
    assert_eq!(job.state.paused_until, Some(t("2024-01-01T00:02:00Z")));
    // Paused again, until resumed: the first end passes and the job stays paused.
    w.app().pause_by(&by, &id, None, None).await.unwrap();
    w.run_until("2024-01-01T00:03:30Z").await;
    assert_eq!(
        w.app().get_job(&id).await.unwrap().status(),
        JobStatus::Paused
    );
    assert!(w.calls().is_empty());
    // Resumed by hand before the end: the end does nothing.
    w.app()
        .pause_by(&by, &id, None, Some(PauseEnd::parse("PT5M").unwrap()))
        .await
        .unwrap();
    w.app().set_active(&id, true, None).await.unwrap();
    w.app().pause_by(&by, &id, None, None).await.unwrap();
    w.run_until("2024-01-01T00:09:00Z").await;
    assert_eq!(
        w.app().get_job(&id).await.unwrap().status(),
        JobStatus::Paused
    );
    // An end not later than now names the field.
    for end in [
        PauseEnd::At(t("2024-01-01T00:09:00Z")),
        PauseEnd::parse("0s").unwrap(),
    ] {
        let refused = w.app().pause_by(&by, &id, None, Some(end)).await;
        assert!(
            matches!(&refused, Err(AppError::Invalid(e)) if e.path == "until"),
            "{refused:?}"
        );
    }
    assert!(PauseEnd::parse("tomorrow").is_err());
}
