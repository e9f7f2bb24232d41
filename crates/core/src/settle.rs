//! Settling an attempt: how the way an attempt ended moves its run, as a pure function of the
//! execution, its job's definition and the time.
//!
//! When an attempt's action ends, the engine must move the run to its next state — succeeded,
//! waiting for an async job's report, failed with a retry scheduled, or terminated — say when the
//! run must be looked at next (an async check, a deadline, a retry) and whether the job's
//! notifications go out. Those decisions are written once, here, without I/O or a clock, beside
//! [`crate::retry`] (which this module asks whether to retry) and [`crate::plan`]; the engine only
//! stores what [`settle_attempt`] decided, frees the run's slot, and sends what it says to send.
//! docs/engine.md, "Retries and timeouts", describes the rules.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::execution::{Execution, ExecutionState, TransitionError};
use crate::job::JobDefinition;
use crate::outcome::{Outcome, Verdict};
use crate::retry::{self, GiveUpReason, RetryDecision};

/// How one attempt's action ended.
#[derive(Clone, Debug, PartialEq)]
pub enum AttemptEnd {
    /// Finished well; `result`, when present, becomes the execution's result.
    Succeeded {
        /// How the target answered.
        outcome: Outcome,
        /// The execution's result (docs/api.md's `result` of the last response), if any.
        result: Option<Value>,
        /// The last response, for the notifications.
        response: Value,
    },
    /// The chain is done; the async job reports later (by `checkUrl` polls or feedback).
    AwaitAsync,
    /// Failed: the retry rules decide what follows.
    Failed {
        /// How the target answered (or the transport error).
        outcome: Outcome,
        /// The last response, for the notifications.
        response: Value,
        /// What failed, for the execution's log.
        detail: String,
    },
}

impl AttemptEnd {
    /// The outcome and response the notifications of this end carry; `None` while an async job
    /// is still to report.
    pub fn outcome_and_response(&self) -> Option<(&Outcome, &Value)> {
        match self {
            AttemptEnd::Succeeded {
                outcome, response, ..
            }
            | AttemptEnd::Failed {
                outcome, response, ..
            } => Some((outcome, response)),
            AttemptEnd::AwaitAsync => None,
        }
    }
}

/// What settling decided beyond the execution's new state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settled {
    /// When the run must take its next step: an async check, its attempt's or heartbeat's
    /// deadline, or its retry. `None` once it has ended.
    pub wake: Option<DateTime<Utc>>,
    /// Whether the job's notifications for this end go out (every end but waiting for an async
    /// job's report).
    pub notify: bool,
}

/// Moves `execution` by how its attempt ended at `now`: the state transition with its log
/// message, the result or error, the run's lease released, and for a failure the retry decided
/// by [`retry::decide`] (recorded in the run's history). `timed_out_before_start` (the attempt
/// never started within `scheduleToStart`) ends the run without retries.
///
/// The execution must be running (not finished): a finished one cannot transition, which is
/// the error.
pub fn settle_attempt(
    execution: &mut Execution,
    definition: &JobDefinition,
    end: &AttemptEnd,
    now: DateTime<Utc>,
    timed_out_before_start: bool,
) -> Result<Settled, TransitionError> {
    let settled = settle_end(execution, definition, end, now, timed_out_before_start)?;
    // A run that ended keeps its chain's responses only for its notifications, which are
    // rendered when delivered; without any, its result (the last response) is all that is
    // read again, so the record does not store each body twice (issue 31).
    if execution.is_finished() && definition.notifications().is_empty() {
        execution.run.responses.clear();
        execution.run.named.clear();
    }
    Ok(settled)
}

fn settle_end(
    execution: &mut Execution,
    definition: &JobDefinition,
    end: &AttemptEnd,
    now: DateTime<Utc>,
    timed_out_before_start: bool,
) -> Result<Settled, TransitionError> {
    match end {
        AttemptEnd::AwaitAsync => {
            let waiting_for = if definition.check_url().is_some() {
                "checkUrl polls"
            } else {
                "feedback"
            };
            execution.record(
                now,
                format!("request chain done; waiting for {waiting_for}"),
            );
            let run = &mut execution.run;
            run.awaiting_async = true;
            run.lease_until = None;
            run.next_check = definition
                .check_url()
                .map(|_| now + check_interval(definition));
            // The heartbeat counts from the attempt's start until the first report.
            let heartbeat =
                retry::heartbeat_deadline(run.last_report_at.unwrap_or(now), definition.timeouts());
            let wake = [run.next_check, run.attempt_deadline, heartbeat]
                .into_iter()
                .flatten()
                .min();
            Ok(Settled {
                wake,
                notify: false,
            })
        }
        AttemptEnd::Succeeded { result, .. } => {
            execution.transition(ExecutionState::Succeeded, now, "succeeded")?;
            if result.is_some() {
                execution.result = result.clone();
            }
            execution.error = None;
            execution.run.lease_until = None;
            Ok(Settled {
                wake: None,
                notify: true,
            })
        }
        AttemptEnd::Failed {
            outcome, detail, ..
        } => {
            let (code, retryable) = match outcome.verdict() {
                Verdict::Failed { code, retryable } => (code, retryable),
                _ => ("failed".to_string(), true),
            };
            let decision = if retryable && !timed_out_before_start {
                retry::decide(
                    definition,
                    &code,
                    &execution.run.retries,
                    execution.due_at(),
                    now,
                )
            } else {
                RetryDecision::GiveUp {
                    reason: GiveUpReason::NoRetryRule,
                    detail: format!("{code} is final"),
                }
            };
            execution.error = Some(code.clone());
            execution.run.lease_until = None;
            execution.run.awaiting_async = false;
            let wake = match decision {
                RetryDecision::RetryAfter {
                    at, rule, number, ..
                } => {
                    execution.run.retries.record_retry(&code);
                    execution.run.retry_at = Some(at);
                    let message =
                        format!("{detail}; retry {number} by {rule} at {}", at.to_rfc3339());
                    execution.transition(ExecutionState::Failed, now, message)?;
                    Some(at)
                }
                RetryDecision::GiveUp { detail: why, .. } => {
                    execution.transition(
                        ExecutionState::Terminated,
                        now,
                        format!("{detail}; not retried: {why}"),
                    )?;
                    None
                }
            };
            Ok(Settled { wake, notify: true })
        }
    }
}

/// How often an async job's `checkUrl` is polled: its `checkRateSeconds`, at least a second.
pub fn check_interval(definition: &JobDefinition) -> chrono::Duration {
    chrono::Duration::seconds(i64::from(definition.check_rate_seconds().max(1)))
}

#[cfg(test)]
mod tests;
