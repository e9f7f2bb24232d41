//! Fallback wake-ups, and the runs that do without one because their job's own wake-up brings the
//! tick back to them first (docs/engine.md, "Fallback wake-ups"), as on AWS: a tick planning 80 s
//! ahead. A run's message is lost here the way a tick that died after its write loses it: the send
//! fails (the tick's write is done, its messages are not).

use sundial_ports::store::WakeUpIndex;

use super::*;

/// A world as on AWS whose target answers every call at once.
fn world(start: &str) -> World {
    World::with_configs(
        start,
        AppConfig::new(TEST_SECRET.to_vec()),
        aws_like,
        |_, _| ok(json!({})),
    )
}

/// The run of job `job` for its fire at `hhmm` (`00:02`) on 2024-01-01.
fn fire_id(job: &str, hhmm: &str) -> String {
    let nominal = t(&format!("2024-01-01T{hhmm}:00Z"));
    sundial_core::execution::execution_id_for_fire(&JobId::parse(job).unwrap(), 0, nominal)
}

async fn fallback_of(w: &World, execution_id: &str) -> Option<DateTime<Utc>> {
    w.app()
        .store()
        .get_wakeup(&crate::records::execution_wakeup_key(execution_id))
        .await
        .unwrap()
}

async fn state_of(w: &World, execution_id: &str) -> String {
    w.app()
        .store()
        .get_execution(execution_id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{execution_id} exists"))
        .state
}

/// Loses the message of the fire the next tick plans: the tick at `at` (one second on) writes
/// the run and dies before its send.
async fn lose_the_next_planned_fire(w: &World, at: &str) {
    let before = t(at) - Duration::seconds(1);
    w.run_until(&before.to_rfc3339()).await;
    w.engine.dispatch_queue().fail_send(0);
}

#[tokio::test]
async fn a_minutely_jobs_runs_ride_on_its_wakeup_and_a_rare_jobs_keep_their_own() {
    let w = world("2024-01-01T00:00:30Z");
    w.create("minutely", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    w.create("hourly", json!({"schedule": {"cron": ["0 * * * *"]}}))
        .await;
    // The tick at 00:00:40 plans the minutely job's 00:02 fire, 80 s ahead.
    w.run_until("2024-01-01T00:01:30Z").await;
    let minutely = fire_id("minutely", "00:02");
    assert_eq!(state_of(&w, &minutely).await, "Scheduled");
    assert_eq!(fallback_of(&w, &minutely).await, None, "rides on the job's");
    let waiting = w.job_state("minutely").await.waiting;
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0].execution_id, minutely);
    assert_eq!(
        waiting[0].fallback_at,
        Some(t("2024-01-01T00:03:30Z")),
        "due + horizon + grace"
    );
    // An hourly job's next wake-up is an hour out: its planned fire keeps a fallback.
    w.run_until("2024-01-01T00:59:00Z").await;
    let hourly = fire_id("hourly", "01:00");
    assert_eq!(state_of(&w, &hourly).await, "Scheduled");
    assert_eq!(
        fallback_of(&w, &hourly).await,
        Some(t("2024-01-01T01:01:30Z"))
    );
    w.run_until("2024-01-01T01:00:30Z").await;
    assert_eq!(state_of(&w, &hourly).await, "Succeeded");
    assert_eq!(fallback_of(&w, &hourly).await, None, "admission removed it");
}

#[tokio::test]
async fn a_riding_run_whose_message_was_lost_is_sent_again_by_the_tick() {
    let w = world("2024-01-01T00:00:30Z");
    w.create("quick", json!({"schedule": {"cron": ["* * * * *"]}}))
        .await;
    lose_the_next_planned_fire(&w, "2024-01-01T00:00:40Z").await;
    w.run_until("2024-01-01T00:05:30Z").await;
    let lost = fire_id("quick", "00:02");
    assert_eq!(state_of(&w, &lost).await, "Succeeded");
    let executions = w.executions("quick").await;
    // 00:06, planned 80 s ahead, waits for its time.
    assert_eq!(
        states(&executions),
        [
            "Succeeded",
            "Succeeded",
            "Succeeded",
            "Succeeded",
            "Succeeded",
            "Scheduled"
        ],
        "{executions:#?}"
    );
    assert_eq!(w.calls().len(), 5, "one call per fire");
    // Sent again by the tick's first visit to the job once its fallback would have come due
    // (due + 10 s): here the tick at 00:02:40 that plans 00:04.
    assert_eq!(
        w.call_times(),
        ["00:01:00", "00:02:40", "00:03:00", "00:04:00", "00:05:00"]
    );
}

/// A riding run whose message was lost, then its job changed so that the job's wake-up no longer
/// brings the tick back in time (paused, deleted, moved to a rare schedule, run out of actions):
/// the change writes the run's fallback, and the run still reaches an end.
#[tokio::test]
async fn a_change_that_moves_the_jobs_wakeup_away_gives_riding_runs_their_fallbacks() {
    let changes: [(&str, &str); 4] = [
        ("pause", "Skipped"),
        ("delete", "Cancelled"),
        ("hourly", "Succeeded"),
        ("until", "Succeeded"),
    ];
    for (change, ends) in changes {
        let w = world("2024-01-01T00:00:30Z");
        // A fallback wake-up sends its run 90 s after it was due (its own time): a catch-up
        // window longer than that lets it run rather than count as missed.
        let job = json!({"schedule": {"cron": ["* * * * *"]}, "catchupWindow": "10m"});
        w.create("quick", job).await;
        lose_the_next_planned_fire(&w, "2024-01-01T00:00:40Z").await;
        w.run_until("2024-01-01T00:01:50Z").await;
        let lost = fire_id("quick", "00:02");
        assert_eq!(fallback_of(&w, &lost).await, None, "{change}: riding");
        let id = JobId::parse("quick").unwrap();
        match change {
            "pause" => {
                w.app().set_active(&id, false, None).await.unwrap();
            }
            "delete" => w.app().delete_job(&id).await.unwrap(),
            "hourly" => {
                let mut body = w
                    .app()
                    .get_job(&id)
                    .await
                    .unwrap()
                    .definition
                    .as_written()
                    .clone();
                body["schedule"] = json!({"cron": ["0 * * * *"]});
                w.app().update_job(&id, &body).await.unwrap();
            }
            _ => {
                // No fire after 00:02: the schedule ends there.
                let mut body = w
                    .app()
                    .get_job(&id)
                    .await
                    .unwrap()
                    .definition
                    .as_written()
                    .clone();
                body["schedule"]["endTime"] = json!("2024-01-01T00:02:30Z");
                w.app().update_job(&id, &body).await.unwrap();
            }
        }
        assert_eq!(
            fallback_of(&w, &lost).await,
            Some(t("2024-01-01T00:03:30Z")),
            "{change}: its own now"
        );
        w.run_until("2024-01-01T00:06:00Z").await;
        assert_eq!(state_of(&w, &lost).await, ends, "{change}");
    }
}

/// As `a_crash_at_any_step_loses_and_duplicates_nothing`, with the tick planning 80 s ahead:
/// every run of the minutely job rides on the job's wake-up.
#[tokio::test]
async fn a_crash_at_any_step_of_riding_runs_loses_and_duplicates_nothing() {
    for crash_at in 0..24 {
        let w = World::with_configs(
            "2024-01-01T00:00:30Z",
            AppConfig::new(TEST_SECRET.to_vec()),
            aws_like,
            |_, _| ok(json!({})),
        );
        let job = json!({"schedule": {"cron": ["* * * * *"]}, "overlap": "AllowAll"});
        w.create("sturdy", job).await;
        w.app().store().fail_write(crash_at);
        w.run_until("2024-01-01T00:04:30Z").await;
        let id = JobId::parse("sturdy").unwrap();
        if w.app().set_active(&id, false, None).await.is_err() {
            w.app().set_active(&id, false, None).await.unwrap();
        }
        w.run_until("2024-01-01T00:08:00Z").await;
        let executions = w.executions("sturdy").await;
        // Fires 00:01 to 00:05 (the tick planned 00:05 before the pause, which skips it unless it
        // was admitted already) and nothing twice.
        let ended: Vec<&str> = states(&executions);
        assert!(
            ended.iter().all(|s| *s == "Succeeded" || *s == "Skipped"),
            "crash at write {crash_at}: {executions:#?}"
        );
        let succeeded = ended.iter().filter(|s| **s == "Succeeded").count();
        assert!(succeeded >= 4, "crash at write {crash_at}: {executions:#?}");
        let mut keys: Vec<String> = w
            .calls()
            .iter()
            .filter_map(|r| {
                r.headers
                    .iter()
                    .find(|(n, _)| n == "Idempotency-Key")
                    .map(|(_, v)| v.split(':').next().unwrap_or_default().to_string())
            })
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(
            keys.len(),
            succeeded,
            "one fire, one run: crash at write {crash_at}"
        );
    }
}
