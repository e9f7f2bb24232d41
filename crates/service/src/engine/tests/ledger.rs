//! The non-run ledger under simulated time: after driving the engine through each reason a fire
//! does not run (a pause with notes, an outage past the catch-up window, a full buffer, an
//! overlap skip, a job created mid-range, remainingActions spent), `App::occurrences` says so.

use sundial_core::ledger::{Fate, RangeReason};

use super::*;

/// The ledger of `job` over `[from, to)` as `(HH:MM, fate)`.
async fn ledger(w: &World, job: &str, from: &str, to: &str) -> Vec<(String, Fate)> {
    w.app()
        .occurrences(&JobId::parse(job).unwrap(), t(from), t(to))
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|(time, fate)| (time.format("%H:%M").to_string(), fate))
        .collect()
}

fn ran(job: &str, minute: &str) -> Fate {
    Fate::Ran {
        execution_id: format!("{job}~20240101T{minute}00Z"),
        state: "Succeeded".into(),
    }
}

#[tokio::test]
async fn created_ran_paused_missed_and_not_yet() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("j", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:02:30Z").await;
    let id = JobId::parse("j").unwrap();
    w.app()
        .set_active(&id, false, Some("deploy".into()))
        .await
        .unwrap();
    w.run_until("2024-01-01T00:04:30Z").await;
    w.app().set_active(&id, true, None).await.unwrap();
    w.run_until("2024-01-01T00:05:30Z").await;
    // Down from 00:05:30 to 00:10:20: 00:06 … 00:09 are past the one-minute window.
    w.resume_at("2024-01-01T00:10:20Z").await;
    let fates = ledger(&w, "j", "2023-12-31T23:59:00Z", "2024-01-01T00:12:00Z").await;
    let paused = Fate::Paused {
        notes: Some("deploy".into()),
        since: t("2024-01-01T00:02:30Z"),
    };
    let missed = Fate::Missed { execution_id: None };
    let expected: Vec<(String, Fate)> = [
        ("23:59", Fate::NotYetCreated),
        ("00:00", Fate::NotYetCreated),
        ("00:01", ran("j", "0001")),
        ("00:02", ran("j", "0002")),
        ("00:03", paused.clone()),
        ("00:04", paused),
        ("00:05", ran("j", "0005")),
        ("00:06", missed.clone()),
        ("00:07", missed.clone()),
        ("00:08", missed.clone()),
        ("00:09", missed),
        ("00:10", ran("j", "0010")),
        ("00:11", Fate::Ahead),
    ]
    .into_iter()
    .map(|(m, f)| (m.to_owned(), f))
    .collect();
    assert_eq!(fates, expected);
    let occurrences = w
        .app()
        .occurrences(&id, t("2024-01-01T00:00:00Z"), t("2024-01-01T00:12:00Z"))
        .await
        .unwrap();
    assert_eq!(occurrences.ranges.len(), 1);
    assert_eq!(occurrences.ranges[0].reason, RangeReason::Missed);
    assert_eq!(occurrences.ranges[0].count, 4);
}

#[tokio::test]
async fn skipped_by_overlap_and_dropped_from_the_buffer() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("skip", long_job("Skip")).await;
    w.create("buffer-one", long_job("BufferOne")).await;
    w.run_until("2024-01-01T00:03:30Z").await;
    let skipped = ledger(&w, "skip", "2024-01-01T00:01:00Z", "2024-01-01T00:04:00Z").await;
    assert_eq!(
        skipped[1].1,
        Fate::Skipped {
            execution_id: "skip~20240101T000200Z".into(),
            held_by: Some("skip~20240101T000100Z".into()),
        }
    );
    let buffered = ledger(
        &w,
        "buffer-one",
        "2024-01-01T00:01:00Z",
        "2024-01-01T00:04:00Z",
    )
    .await;
    assert_eq!(
        buffered[2].1,
        Fate::Dropped {
            execution_id: Some("buffer-one~20240101T000300Z".into())
        }
    );
    // The drop left a range too, for when retention removes the execution.
    let state = w.job_state("buffer-one").await;
    assert_eq!(state.fire_ranges.len(), 1);
    assert_eq!(state.fire_ranges[0].reason, RangeReason::Dropped);
    assert_eq!(state.fire_ranges[0].first, t("2024-01-01T00:03:00Z"));
}

#[tokio::test]
async fn remaining_actions_spent_end_the_job() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create(
        "twice",
        json!({"schedule": {"cron": ["* * * * *"]}, "remainingActions": 2}),
    )
    .await;
    w.run_until("2024-01-01T00:04:30Z").await;
    let fates = ledger(&w, "twice", "2024-01-01T00:01:00Z", "2024-01-01T00:06:00Z").await;
    let fates: Vec<Fate> = fates.into_iter().map(|(_, f)| f).collect();
    assert_eq!(
        fates,
        [
            ran("twice", "0001"),
            ran("twice", "0002"),
            Fate::Ended,
            Fate::Ended,
            Fate::Ended
        ]
    );
}

#[tokio::test]
async fn the_definition_in_force_gives_the_times() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("j", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:02:30Z").await;
    let id = JobId::parse("j").unwrap();
    let mut body = w
        .app()
        .get_job(&id)
        .await
        .unwrap()
        .definition
        .as_written()
        .clone();
    body["schedule"] = json!({"cron": ["*/2 * * * *"]});
    w.app().update_job(&id, &body).await.unwrap();
    w.run_until("2024-01-01T00:06:30Z").await;
    let fates = ledger(&w, "j", "2024-01-01T00:01:00Z", "2024-01-01T00:07:00Z").await;
    let minutes: Vec<&str> = fates.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(minutes, ["00:01", "00:02", "00:04", "00:06"]);
    assert!(
        fates.iter().all(|(_, f)| matches!(f, Fate::Ran { .. })),
        "{fates:?}"
    );
}

#[tokio::test]
async fn a_reversed_or_too_large_range_names_to() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("s", json!({"schedule": {"intervals": ["1s"]}}))
        .await;
    let id = JobId::parse("s").unwrap();
    for (from, to, says) in [
        (
            "2024-01-01T00:10:00Z",
            "2024-01-01T00:00:00Z",
            "must be after from",
        ),
        (
            "2024-01-01T00:00:00Z",
            "2024-01-01T04:00:00Z",
            "holds 14400 nominal times",
        ),
        (
            "2024-01-01T00:00:00Z",
            "2024-02-01T00:00:00Z",
            "holds more than 100000",
        ),
    ] {
        match w.app().occurrences(&id, t(from), t(to)).await {
            Err(AppError::Invalid(e)) => {
                assert_eq!(e.path, "to");
                assert!(e.message.contains(says), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn a_deleted_jobs_last_life_is_read_from_its_trail() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    w.create("gone", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:02:30Z").await;
    let id = JobId::parse("gone").unwrap();
    w.app()
        .set_active(&id, false, Some("incident 7".into()))
        .await
        .unwrap();
    w.run_until("2024-01-01T00:03:30Z").await;
    w.app().set_active(&id, true, None).await.unwrap();
    w.run_until("2024-01-01T00:04:30Z").await;
    w.app().delete_job(&id).await.unwrap();
    w.run_until("2024-01-01T00:06:30Z").await;
    let fates = ledger(&w, "gone", "2024-01-01T00:00:00Z", "2024-01-01T00:07:00Z").await;
    let expected: Vec<(String, Fate)> = [
        ("00:00", Fate::NotYetCreated),
        ("00:01", ran("gone", "0001")),
        ("00:02", ran("gone", "0002")),
        (
            "00:03",
            Fate::Paused {
                notes: Some("incident 7".into()),
                since: t("2024-01-01T00:02:30Z"),
            },
        ),
        ("00:04", ran("gone", "0004")),
        ("00:05", Fate::Ended),
        ("00:06", Fate::Ended),
    ]
    .into_iter()
    .map(|(m, f)| (m.to_owned(), f))
    .collect();
    assert_eq!(fates, expected);
    // A range wholly before the deletion reads the same life.
    let before = ledger(&w, "gone", "2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z").await;
    assert_eq!(before, vec![("00:01".to_owned(), ran("gone", "0001"))]);

    // Created again under the same id: the ledger is the new life's, its runs a new incarnation.
    w.create("gone", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:08:30Z").await;
    let again = ledger(&w, "gone", "2024-01-01T00:06:00Z", "2024-01-01T00:09:00Z").await;
    assert_eq!(again[0], ("00:06".to_owned(), Fate::NotYetCreated));
    assert!(
        matches!(&again[2].1, Fate::Ran { execution_id, .. } if execution_id.contains("~i1")),
        "{again:?}"
    );
    // An id that never existed is still not found.
    let never = w
        .app()
        .occurrences(
            &JobId::parse("never").unwrap(),
            t("2024-01-01T00:00:00Z"),
            t("2024-01-01T00:01:00Z"),
        )
        .await;
    assert!(matches!(never, Err(AppError::NotFound(_))), "{never:?}");
}

#[tokio::test]
async fn fires_due_in_debug_mode_say_so_and_are_not_run_later() {
    let config = AppConfig {
        debug_mode: sundial_core::debug_mode::DebugMode::Schedules,
        ..AppConfig::new(TEST_SECRET.to_vec())
    };
    let w = World::with_config("2024-01-01T00:00:30Z", config, |_, _| ok(json!({})));
    w.create("quiet", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.run_until("2024-01-01T00:03:30Z").await;
    assert!(w.calls().is_empty(), "debug mode runs nothing");
    let fates = ledger(&w, "quiet", "2024-01-01T00:01:00Z", "2024-01-01T00:05:00Z").await;
    let expected: Vec<(String, Fate)> = [
        ("00:01", Fate::DebugMode),
        ("00:02", Fate::DebugMode),
        ("00:03", Fate::DebugMode),
        ("00:04", Fate::Ahead),
    ]
    .into_iter()
    .map(|(m, f)| (m.to_owned(), f))
    .collect();
    assert_eq!(fates, expected);
    let occurrences = w
        .app()
        .occurrences(
            &JobId::parse("quiet").unwrap(),
            t("2024-01-01T00:00:00Z"),
            t("2024-01-01T00:05:00Z"),
        )
        .await
        .unwrap();
    assert_eq!(occurrences.ranges.len(), 1, "{:?}", occurrences.ranges);
    assert_eq!(occurrences.ranges[0].reason, RangeReason::DebugMode);
    assert_eq!(occurrences.ranges[0].count, 3);
}
