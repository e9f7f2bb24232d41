//! Issue 15 item 5: the catch-up policy (`catchup: {policy, window, maxRuns}`) decides which of
//! the fires an engine reaches late still run, when the tick plans them and again when a fire
//! planned before an outage reaches the gate after it.

use super::*;

/// A job that calls `/run/{jobId}`, so that each job's calls can be told apart.
fn every_minute(catchup: Value) -> Value {
    json!({
        "schedule": {"cron": ["* * * * *"]},
        "overlap": "AllowAll",
        "catchup": catchup,
        "request": [{"method": "POST", "url": "service://main/run/${jobId}"}],
    })
}

/// Down from 00:00:30 to 00:10:20: the fires of 00:01 … 00:10 are late, all within the one-hour
/// window. `all` runs them all, `latest` the newest, `skip` none, `maxRuns: 3` the newest three;
/// every policy runs 00:11 on time, and what a policy leaves out is counted as missed.
#[tokio::test]
async fn each_catch_up_policy_runs_its_share_of_the_late_fires() {
    let w = World::new("2024-01-01T00:00:30Z", |_, _| ok(json!({})));
    let policies = [
        ("all", json!({"window": "1h"}), 10, 0),
        ("latest", json!({"policy": "latest", "window": "1h"}), 1, 9),
        ("skip", json!({"policy": "skip", "window": "1h"}), 0, 10),
        ("capped", json!({"window": "1h", "maxRuns": 3}), 3, 7),
    ];
    for (id, catchup, _, _) in &policies {
        w.create(id, every_minute(catchup.clone())).await;
    }
    w.clock.set(t("2024-01-01T00:10:20Z"));
    w.engine.tick().await.unwrap();
    w.drain().await;
    w.run_until("2024-01-01T00:11:05Z").await;
    for (id, _, late_runs, missed) in policies {
        let calls = w.call_instants(&format!("/run/{id}"));
        let caught_up = calls
            .iter()
            .filter(|at| *at == "2024-01-01T00:10:20Z")
            .count();
        assert_eq!(caught_up, late_runs, "{id}: {calls:?}");
        assert_eq!(
            calls.last().map(String::as_str),
            Some("2024-01-01T00:11:00Z"),
            "{id}"
        );
        assert_eq!(calls.len(), late_runs + 1, "{id}: {calls:?}");
        assert_eq!(w.job_state(id).await.missed_catchup_window, missed, "{id}");
    }
    // `latest` ran the newest late fire: its execution is 00:10's.
    let latest = w.executions("latest").await;
    assert_eq!(latest[0].execution_id, "latest~20240101T001000Z");
}

/// The fire of 00:01 is planned at 00:00:59, then the process is down until 00:05:30: its
/// message reaches the gate behind the fires the tick plans after the outage. Under `latest`
/// the tick plans only 00:05, and the gate leaves 00:01 out because 00:05 is newer and due;
/// under `skip` the gate leaves it out because it is late. Under `all` (the default) both run.
#[tokio::test]
async fn the_gate_applies_the_catch_up_policy_to_a_fire_queued_before_an_outage() {
    let w = World::new("2024-01-01T00:00:50Z", |_, _| ok(json!({})));
    w.create(
        "latest",
        every_minute(json!({"policy": "latest", "window": "1h"})),
    )
    .await;
    w.create(
        "skip",
        every_minute(json!({"policy": "skip", "window": "1h"})),
    )
    .await;
    w.create("all", every_minute(json!({"window": "1h"}))).await;
    w.clock.set(t("2024-01-01T00:00:59Z"));
    w.engine.tick().await.unwrap();
    w.clock.set(t("2024-01-01T00:05:30Z"));
    w.engine.tick().await.unwrap();
    w.drain().await;
    w.run_until("2024-01-01T00:06:05Z").await;

    assert_eq!(
        w.call_instants("/run/latest"),
        ["2024-01-01T00:05:30Z", "2024-01-01T00:06:00Z"]
    );
    let latest = w.executions("latest").await;
    assert_eq!(states(&latest), ["Skipped", "Succeeded", "Succeeded"]);
    assert_eq!(latest[0].execution_id, "latest~20240101T000100Z");
    let why = log_lines(&latest[0]).join("\n");
    assert!(why.contains("catch-up policy latest"), "{why}");
    assert_eq!(w.job_state("latest").await.missed_catchup_window, 4);

    assert_eq!(w.call_instants("/run/skip"), ["2024-01-01T00:06:00Z"]);
    let skip = w.executions("skip").await;
    assert_eq!(states(&skip), ["Skipped", "Succeeded"]);
    let why = log_lines(&skip[0]).join("\n");
    assert!(
        why.contains("catch-up policy skip runs no late fire"),
        "{why}"
    );
    assert_eq!(w.job_state("skip").await.missed_catchup_window, 5);

    assert_eq!(
        w.call_instants("/run/all").len(),
        6,
        "00:01 … 00:05, then 00:06"
    );
    assert_eq!(w.job_state("all").await.missed_catchup_window, 0);
}
