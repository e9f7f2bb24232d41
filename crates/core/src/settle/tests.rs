//! Exact decisions of [`settle_attempt`]: state, log line, error, result, lease, retry history,
//! wake-up and notification for each way an attempt can end.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::*;
use crate::job::{JobDefinition, JobId};

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

const T0: &str = "2024-01-01T00:00:00Z";

fn definition(extra: Value) -> JobDefinition {
    let mut body = json!({
        "jobName": "j", "creator": "001", "creatorName": "c",
        "request": [{"url": "https://example.com/run"}],
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    JobDefinition::parse(&JobId::parse("j").unwrap(), &body, at(T0)).unwrap()
}

/// A run in its first attempt (Processing, leased), as dispatch leaves it before the call.
fn running() -> Execution {
    let mut execution = Execution::new(
        "j~1".into(),
        JobId::parse("j").unwrap(),
        1,
        ExecutionState::Enqueued,
        at(T0),
        "j".into(),
        at(T0),
    )
    .unwrap();
    execution
        .transition(ExecutionState::Processing, at(T0), "attempt 1")
        .unwrap();
    execution.run.lease_until = Some(at("2024-01-01T00:01:30Z"));
    execution
}

fn failed(status: u16) -> AttemptEnd {
    AttemptEnd::Failed {
        outcome: Outcome::Http { status },
        response: json!({"status": status}),
        detail: format!("https://example.com/run answered {status}"),
    }
}

fn last_message(execution: &Execution) -> &str {
    &execution.events().last().unwrap().message
}

#[test]
fn a_success_ends_the_run_with_its_result_and_notifies() {
    let mut execution = running();
    execution.error = Some("500".into());
    let end = AttemptEnd::Succeeded {
        outcome: Outcome::Http { status: 200 },
        result: Some(json!({"rows": 3})),
        response: json!({"rows": 3}),
    };
    let now = at("2024-01-01T00:00:02Z");
    let settled = settle_attempt(&mut execution, &definition(json!({})), &end, now, false).unwrap();
    assert_eq!(
        settled,
        Settled {
            wake: None,
            notify: true
        }
    );
    assert_eq!(execution.state(), ExecutionState::Succeeded);
    assert_eq!(last_message(&execution), "succeeded");
    assert_eq!(execution.result, Some(json!({"rows": 3})));
    assert_eq!(execution.error, None);
    assert_eq!(execution.run.lease_until, None);
    assert_eq!(
        end.outcome_and_response(),
        Some((&Outcome::Http { status: 200 }, &json!({"rows": 3})))
    );
}

#[test]
fn a_success_without_a_result_keeps_the_one_it_had() {
    let mut execution = running();
    execution.result = Some(json!("earlier"));
    let end = AttemptEnd::Succeeded {
        outcome: Outcome::Http { status: 204 },
        result: None,
        response: Value::Null,
    };
    settle_attempt(&mut execution, &definition(json!({})), &end, at(T0), false).unwrap();
    assert_eq!(execution.result, Some(json!("earlier")));
}

#[test]
fn a_failure_with_a_matching_rule_is_retried_after_its_interval() {
    let mut execution = running();
    let def = definition(json!({
        "retry": [{"errorEquals": "500", "intervalSeconds": 2, "backoffRate": 2.0, "maxAttempts": 3}]
    }));
    let now = at("2024-01-01T00:00:05Z");
    let settled = settle_attempt(&mut execution, &def, &failed(500), now, false).unwrap();
    let retry_at = at("2024-01-01T00:00:07Z");
    assert_eq!(
        settled,
        Settled {
            wake: Some(retry_at),
            notify: true
        }
    );
    assert_eq!(execution.state(), ExecutionState::Failed);
    assert_eq!(execution.error.as_deref(), Some("500"));
    assert_eq!(execution.run.retry_at, Some(retry_at));
    assert_eq!(execution.run.lease_until, None);
    assert!(!execution.run.awaiting_async);
    assert_eq!(
        last_message(&execution),
        format!(
            "https://example.com/run answered 500; retry 1 by retry[0] at {}",
            retry_at.to_rfc3339()
        )
    );
    // The retry is recorded: the next failure waits twice as long.
    execution
        .transition(ExecutionState::Processing, retry_at, "attempt 2")
        .unwrap();
    let now = at("2024-01-01T00:00:08Z");
    let settled = settle_attempt(&mut execution, &def, &failed(500), now, false).unwrap();
    assert_eq!(settled.wake, Some(at("2024-01-01T00:00:12Z")));
}

#[test]
fn a_failure_no_rule_covers_terminates_the_run() {
    let mut execution = running();
    let now = at("2024-01-01T00:00:05Z");
    let settled = settle_attempt(
        &mut execution,
        &definition(json!({})),
        &failed(404),
        now,
        false,
    )
    .unwrap();
    assert_eq!(
        settled,
        Settled {
            wake: None,
            notify: true
        }
    );
    assert_eq!(execution.state(), ExecutionState::Terminated);
    assert_eq!(execution.error.as_deref(), Some("404"));
    assert!(
        last_message(&execution).starts_with("https://example.com/run answered 404; not retried: "),
        "{}",
        last_message(&execution)
    );
}

#[test]
fn a_timeout_before_start_is_never_retried() {
    let mut execution = running();
    let def = definition(json!({
        "retry": [{"errorEquals": "500", "intervalSeconds": 2, "maxAttempts": 3}]
    }));
    let settled = settle_attempt(&mut execution, &def, &failed(500), at(T0), true).unwrap();
    assert_eq!(settled.wake, None);
    assert_eq!(execution.state(), ExecutionState::Terminated);
    assert_eq!(
        last_message(&execution),
        "https://example.com/run answered 500; not retried: 500 is final"
    );
}

#[test]
fn a_final_failure_report_is_never_retried() {
    let mut execution = running();
    let def = definition(json!({
        "retry": [{"errorEquals": "finalFailed", "intervalSeconds": 2, "maxAttempts": 3}]
    }));
    let end = AttemptEnd::Failed {
        outcome: Outcome::Refused("169.254.169.254 is link-local".into()),
        response: Value::Null,
        detail: "refused".into(),
    };
    let settled = settle_attempt(&mut execution, &def, &end, at(T0), false).unwrap();
    assert_eq!(settled.wake, None);
    assert_eq!(execution.state(), ExecutionState::Terminated);
}

#[test]
fn an_async_job_with_a_check_url_waits_for_its_first_poll() {
    let mut execution = running();
    let def = definition(json!({
        "async": true, "checkUrl": {"url": "https://example.com/status"}, "checkRateSeconds": 7
    }));
    let now = at("2024-01-01T00:00:03Z");
    let settled =
        settle_attempt(&mut execution, &def, &AttemptEnd::AwaitAsync, now, false).unwrap();
    let poll = at("2024-01-01T00:00:10Z");
    assert_eq!(
        settled,
        Settled {
            wake: Some(poll),
            notify: false
        }
    );
    assert_eq!(execution.state(), ExecutionState::Processing);
    assert!(execution.run.awaiting_async);
    assert_eq!(execution.run.next_check, Some(poll));
    assert_eq!(execution.run.lease_until, None);
    assert_eq!(
        last_message(&execution),
        "request chain done; waiting for checkUrl polls"
    );
    assert_eq!(AttemptEnd::AwaitAsync.outcome_and_response(), None);
}

#[test]
fn an_async_job_without_a_check_url_waits_for_feedback_until_its_deadline() {
    let mut execution = running();
    let deadline = at("2024-01-01T00:05:00Z");
    execution.run.attempt_deadline = Some(deadline);
    let def = definition(json!({"async": true}));
    let settled =
        settle_attempt(&mut execution, &def, &AttemptEnd::AwaitAsync, at(T0), false).unwrap();
    assert_eq!(settled.wake, Some(deadline));
    assert_eq!(execution.run.next_check, None);
    assert_eq!(
        last_message(&execution),
        "request chain done; waiting for feedback"
    );
}

#[test]
fn a_finished_run_cannot_be_settled_again() {
    let mut execution = running();
    execution
        .transition(ExecutionState::Cancelled, at(T0), "cancelled")
        .unwrap();
    let end = AttemptEnd::Succeeded {
        outcome: Outcome::Http { status: 200 },
        result: None,
        response: Value::Null,
    };
    let err =
        settle_attempt(&mut execution, &definition(json!({})), &end, at(T0), false).unwrap_err();
    assert_eq!(err.to, ExecutionState::Succeeded);
    assert_eq!(execution.state(), ExecutionState::Cancelled);
}

#[test]
fn check_interval_is_the_check_rate() {
    assert_eq!(
        check_interval(&definition(json!({"async": true, "checkRateSeconds": 7}))),
        chrono::Duration::seconds(7)
    );
}

/// A run that ended keeps its chain's responses only when a notification may still render
/// them; otherwise its result is the one copy of the last body its record stores (issue 31).
#[test]
fn an_ended_run_keeps_its_responses_only_for_its_notifications() {
    let end = AttemptEnd::Succeeded {
        outcome: Outcome::Http { status: 200 },
        result: Some(json!({"rows": 3})),
        response: json!({"rows": 3}),
    };
    let now = at("2024-01-01T00:00:02Z");
    let settle = |definition: &JobDefinition, end: &AttemptEnd| {
        let mut execution = running();
        execution.run.responses.push(json!({"rows": 3}));
        execution
            .run
            .named
            .insert("ROWS".into(), json!({"rows": 3}));
        settle_attempt(&mut execution, definition, end, now, false).unwrap();
        (execution.run.responses.len(), execution.run.named.len())
    };
    assert_eq!(settle(&definition(json!({})), &end), (0, 0));
    let notified = definition(json!({"notification": [
        {"url": "https://example.com/hook", "method": "POST",
         "body": {"rows": "${$.responses[0].rows}"}}]}));
    assert_eq!(settle(&notified, &end), (1, 1));
    // A failed attempt that will be retried is not the end: its next attempt starts afresh.
    let retried = definition(json!({"retry": [{"errorEquals": "500", "maxAttempts": 2}]}));
    assert_eq!(settle(&retried, &failed(500)), (1, 1));
    assert_eq!(settle(&definition(json!({})), &failed(500)), (0, 0));
}
