//! Issue 31 (review change A): which state changes are published is a level (`StateChangeEvents`:
//! none, final, all), and every change is observed for the metrics whatever the level.

use super::*;

fn states_published(publisher: &RecordingPublisher) -> Vec<String> {
    publisher
        .sent()
        .iter()
        .filter_map(|sent| match sent {
            sundial_ports::memory::Published::Event(event) => event
                .detail
                .get("state")
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// Two minutes of a minutely job, the second minute's call failing once and then retried to
/// success a second later, at `level`: (states published, states observed).
async fn two_minutes_at(level: StateChangeEvents) -> (Vec<String>, Vec<String>) {
    let w = World::with_configs(
        "2024-01-01T00:00:30Z",
        AppConfig::new(TEST_SECRET.to_vec()),
        |config| config.state_change_events = level,
        |_, n| if n == 2 { status(503) } else { ok(json!({})) },
    );
    w.create(
        "minutely",
        json!({"schedule": {"cron": ["* * * * *"]},
               "retryPolicy": {"initialInterval": "1s", "maximumAttempts": 3}}),
    )
    .await;
    w.run_until("2024-01-01T00:02:10Z").await;
    assert_eq!(
        states(&w.executions("minutely").await),
        ["Succeeded", "Succeeded"]
    );
    let publisher = w.engine.publisher();
    (states_published(publisher), publisher.observed())
}

#[tokio::test]
async fn state_change_events_publish_all_final_or_none_and_every_change_is_observed() {
    let (all, observed_all) = two_minutes_at(StateChangeEvents::All).await;
    let (finals, observed_final) = two_minutes_at(StateChangeEvents::Final).await;
    let (none, observed_none) = two_minutes_at(StateChangeEvents::None).await;
    // all: every state entered, the failed attempt and its retry included.
    assert!(
        all.iter().any(|s| s == "Processing") && all.iter().any(|s| s == "Failed"),
        "{all:?}"
    );
    assert_eq!(all, observed_all, "all publishes what it observes");
    // final: one event per run, its final state.
    assert_eq!(finals, ["Succeeded", "Succeeded"]);
    // none: nothing.
    assert!(none.is_empty(), "{none:?}");
    // The metrics' source is the same at every level.
    assert_eq!(observed_final, observed_all);
    assert_eq!(observed_none, observed_all);
}

#[test]
fn levels_parse_with_the_old_on_off_aliases() {
    let parse = StateChangeEvents::parse;
    assert_eq!(parse("none"), Some(StateChangeEvents::None));
    assert_eq!(parse("final"), Some(StateChangeEvents::Final));
    assert_eq!(parse("all"), Some(StateChangeEvents::All));
    assert_eq!(parse("true"), Some(StateChangeEvents::All));
    assert_eq!(parse("false"), Some(StateChangeEvents::None));
    assert_eq!(parse("FINAL"), Some(StateChangeEvents::Final));
    assert_eq!(parse("some"), None);
    assert!(!StateChangeEvents::Final.publishes(ExecutionState::Failed));
    assert!(StateChangeEvents::Final.publishes(ExecutionState::Terminated));
}
