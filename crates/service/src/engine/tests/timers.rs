//! Issue 26 item 5: a seed-002 `timer`'s times, from a creation at any fraction of a second, under
//! simulated time.

use super::*;

/// Issue 26 item 5: `{"dueTime": "1s", "period": "1s", "ttl": "3s"}` created at an odd fraction
/// of a second listed two fire times and ran twice, where the seed's arithmetic gives three. The
/// rule (docs/engine.md, "A timer's times"): the creation instant truncated to the second, plus
/// `dueTime`, then every `period`, up to and including creation + `ttl` (same truncated second).
/// Created at 00:00:00.xxx: fires at 00:00:01, 00:00:02 and 00:00:03, whatever the fraction.
#[tokio::test]
async fn a_timer_created_at_any_fraction_of_a_second_fires_by_the_seeds_arithmetic() {
    for fraction in ["000", "001", "250", "500", "734", "999"] {
        let start = format!("2024-01-01T00:00:00.{fraction}Z");
        let w = World::new(&start, |_, _| ok(json!({})));
        w.create(
            "ticker",
            json!({"timer": {"dueTime": "1s", "period": "1s", "ttl": "3s"}}),
        )
        .await;
        let described = w
            .app()
            .describe(&JobId::parse("ticker").unwrap())
            .await
            .unwrap();
        assert_eq!(
            described.future_action_times,
            [
                "2024-01-01T00:00:01+00:00",
                "2024-01-01T00:00:02+00:00",
                "2024-01-01T00:00:03+00:00"
            ],
            "described, created at {start}"
        );
        w.run_until("2024-01-01T00:00:10Z").await;
        assert_eq!(
            w.call_times(),
            ["00:00:01", "00:00:02", "00:00:03"],
            "ran, created at {start}"
        );
    }
}

/// The same rule with a relative `dueTime` of zero and a one-run timer: "run now" is the
/// creation's second, which the engine runs at once, and nothing runs twice.
#[tokio::test]
async fn a_timer_due_at_creation_runs_once_at_once_whatever_the_fraction() {
    for fraction in ["000", "500", "999"] {
        let start = format!("2024-01-01T00:00:00.{fraction}Z");
        let w = World::new(&start, |_, _| ok(json!({})));
        w.create(
            "now-then",
            json!({"timer": {"dueTime": "0s", "period": "2s", "ttl": "4s"}}),
        )
        .await;
        w.create("once", json!({})).await;
        w.run_until("2024-01-01T00:00:10Z").await;
        let mut calls = w.call_times();
        calls.sort();
        assert_eq!(
            calls,
            ["00:00:01", "00:00:01", "00:00:02", "00:00:04"],
            "created at {start}"
        );
    }
}
