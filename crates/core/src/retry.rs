//! Retry decisions and timeout arithmetic, as pure functions of a job definition, an execution's
//! retry history and the time.
//!
//! When an attempt fails, the executor (Lambda or embedded) must decide whether to try again and
//! after how long. The rules are spread over two sources: docs/api.md's `retry` rules, matched by exact
//! error code and capped across all rules by `maxRetries`, and Temporal's `retryPolicy` (docs/engine.md),
//! used for errors no rule names. Both are bounded by the `scheduleToClose` timeout. Writing that
//! arithmetic once, here, without I/O or a clock, keeps every adapter deciding the same way and lets
//! the rules be tested exactly, down to the millisecond of each backoff.
//!
//! The history ([`RetryHistory`]) is stored inside the execution; [`decide`] reads it and never
//! changes it, and the caller records a retry with [`RetryHistory::record_retry`] once it has
//! scheduled one.
//!
//! ```
//! use sundial_core::job::{JobDefinition, JobId};
//! use sundial_core::retry::{decide, RetryDecision, RetryHistory};
//! let body = serde_json::json!({
//!     "jobName": "j", "creator": "001", "creatorName": "c",
//!     "request": [{"url": "https://example.com/run"}],
//!     "retry": [{"errorEquals": "500", "intervalSeconds": 2, "backoffRate": 2.0, "maxAttempts": 3}]
//! });
//! let now = "2024-01-01T00:00:00Z".parse().unwrap();
//! let def = JobDefinition::parse(&JobId::parse("j").unwrap(), &body, now).unwrap();
//! let mut history = RetryHistory::default();
//! let mut waits = Vec::new();
//! while let RetryDecision::RetryAfter { wait, .. } = decide(&def, "500", &history, now, now) {
//!     waits.push(wait.as_secs());
//!     history.record_retry("500");
//! }
//! assert_eq!(waits, [2, 4, 8]);
//! ```

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::job::{JobDefinition, RetryPolicy, RetryRule, Timeouts, POLICY_RETRY_CAP};
use crate::outcome::{SYNC_TIMEOUT_CODE, TIMEOUT};

/// The longest wait [`decide`] ever asks for, in milliseconds (365 days): whatever the backoff
/// arithmetic gives, a retry is never put further off than this.
pub const MAX_WAIT_MILLIS: u64 = 365 * 86_400_000;

/// What an execution has retried so far. Stored inside the execution (camelCase JSON); a missing
/// field reads as zero, so older executions load as "no retries yet".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetryHistory {
    /// Retries scheduled so far, by every rule and the policy together (what `maxRetries` caps).
    pub retries: u32,
    /// Retries scheduled so far for each error code (what a rule's `maxAttempts` caps and its
    /// backoff counts).
    pub retries_by_code: BTreeMap<String, u32>,
}

impl RetryHistory {
    /// Records that a retry was scheduled after an attempt failed with `code`.
    pub fn record_retry(&mut self, code: &str) {
        self.retries = self.retries.saturating_add(1);
        let count = self.retries_by_code.entry(code.to_string()).or_insert(0);
        *count = count.saturating_add(1);
    }

    /// Attempts made so far, the first included, assuming the one that just failed is the latest:
    /// `retries + 1`.
    pub fn attempts(&self) -> u32 {
        self.retries.saturating_add(1)
    }

    /// Retries scheduled so far for `code`.
    pub fn retries_of(&self, code: &str) -> u32 {
        self.retries_by_code.get(code).copied().unwrap_or(0)
    }
}

/// Why [`decide`] gave up. The names ([`GiveUpReason::as_str`]) are stable: they go into execution
/// logs and API responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GiveUpReason {
    /// `maxRetries`: the execution has made all the retries the job allows.
    MaxRetries,
    /// The matching docs/api.md rule's `maxAttempts` retries of this error were all made.
    MaxAttempts,
    /// No `retry` rule names the error and the job has no `retryPolicy`.
    NoRetryRule,
    /// The error is in `retryPolicy.nonRetryableErrors`.
    NonRetryable,
    /// `retryPolicy.maximumAttempts` attempts were made.
    MaximumAttempts,
    /// The retry would start after the `scheduleToClose` deadline.
    ScheduleToClose,
}

impl GiveUpReason {
    /// The reason's stable name: `maxRetries`, `maxAttempts`, `noRetryRule`, `nonRetryableErrors`,
    /// `maximumAttempts` or `scheduleToClose` (each the field that decided).
    pub fn as_str(self) -> &'static str {
        match self {
            GiveUpReason::MaxRetries => "maxRetries",
            GiveUpReason::MaxAttempts => "maxAttempts",
            GiveUpReason::NoRetryRule => "noRetryRule",
            GiveUpReason::NonRetryable => "nonRetryableErrors",
            GiveUpReason::MaximumAttempts => "maximumAttempts",
            GiveUpReason::ScheduleToClose => "scheduleToClose",
        }
    }
}

impl fmt::Display for GiveUpReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do after an attempt failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Try again after `wait`, at `at`.
    RetryAfter {
        /// How long to wait before the retry (at most [`MAX_WAIT_MILLIS`]).
        wait: Duration,
        /// When the retry starts: `now + wait`.
        at: DateTime<Utc>,
        /// Which rule decided, for the log: `retry[0]` (the index in `retry`) or `retryPolicy`.
        rule: String,
        /// Which retry of that rule this is, from 1 (the `n` of the backoff formula).
        number: u32,
    },
    /// Don't retry: the execution has failed for good.
    GiveUp {
        /// The field that decided.
        reason: GiveUpReason,
        /// A sentence for the log, naming the error and the limit.
        detail: String,
    },
}

impl RetryDecision {
    /// True for [`RetryDecision::RetryAfter`].
    pub fn is_retry(&self) -> bool {
        matches!(self, RetryDecision::RetryAfter { .. })
    }
}

/// Decides whether an execution of `definition` retries after an attempt failed with `code` (an
/// HTTP status such as `"500"`, an async job's `error`, `"timeout"` or `"connection"`).
///
/// `history` is what the execution retried before this failure, `scheduled_time` when it was
/// scheduled (the start of `scheduleToClose`), `now` the time of the failure. In order:
///
/// 1. `maxRetries`, when the job gives it, caps all retries of the execution, whatever rule
///    grants them. Not given, its default (5) caps the retries `retry` rules grant, and a
///    `retryPolicy` alone decides its own (Temporal's `maximumAttempts: 0` is unlimited, bounded
///    by `scheduleToClose`; with neither bound, by [`POLICY_RETRY_CAP`]).
/// 2. The first `retry` rule whose `errorEquals` is exactly `code` decides (for a sync job's
///    `timeout` with no rule of its own, the first rule for `"500"`, seed 002's code for it): it
///    allows `maxAttempts` retries, waiting `intervalSeconds × backoffRate^(n-1)` before retry
///    `n` (counted per rule: the retries of the codes it decides).
/// 3. With no matching rule, `retryPolicy` decides: never for `nonRetryableErrors`, not once
///    `maximumAttempts` attempts (the first included, every rule's) were made, and otherwise after
///    `min(initialInterval × backoffCoefficient^(n-1), maximumInterval)`, where `n` counts the
///    retries the policy granted (the retries of codes no rule names). With no policy either, no
///    retry.
/// 4. A retry that would start after `scheduled_time + scheduleToClose` is not made.
///
/// Waits are capped at [`MAX_WAIT_MILLIS`]; non-finite or out-of-range factors are read as 1.0,
/// so the arithmetic never overflows or panics.
pub fn decide(
    definition: &JobDefinition,
    code: &str,
    history: &RetryHistory,
    scheduled_time: DateTime<Utc>,
    now: DateTime<Utc>,
) -> RetryDecision {
    if let Some(max_retries) = definition.max_retries_given() {
        if history.retries >= max_retries {
            return give_up(
                GiveUpReason::MaxRetries,
                format!(
                    "error {code:?}: {} retries made, maxRetries is {max_retries}",
                    history.retries
                ),
            );
        }
    }

    let (wait, rule, number) = match rule_for(definition, code) {
        Some((index, rule)) => {
            // Seed 002's rules are capped by maxRetries's default when the job gives none.
            let max_retries = definition.max_retries();
            if history.retries >= max_retries {
                return give_up(
                    GiveUpReason::MaxRetries,
                    format!(
                        "error {code:?}: {} retries made, maxRetries is {max_retries} (the default)",
                        history.retries
                    ),
                );
            }
            let done = retries_by_rule(definition, rule, history);
            if done >= rule.max_attempts {
                return give_up(
                    GiveUpReason::MaxAttempts,
                    format!(
                        "error {code:?}: {done} retries made, retry[{index}].maxAttempts is {}",
                        rule.max_attempts
                    ),
                );
            }
            (rule_wait(rule, done), format!("retry[{index}]"), done + 1)
        }
        None => {
            let Some(policy) = definition.retry_policy() else {
                return give_up(
                    GiveUpReason::NoRetryRule,
                    format!("error {code:?}: no retry rule matches and there is no retryPolicy"),
                );
            };
            if policy.non_retryable_errors.iter().any(|e| e == code) {
                return give_up(
                    GiveUpReason::NonRetryable,
                    format!("error {code:?} is in retryPolicy.nonRetryableErrors"),
                );
            }
            if definition.policy_retries_unbounded() && history.retries >= POLICY_RETRY_CAP {
                return give_up(
                    GiveUpReason::MaxRetries,
                    format!(
                        "error {code:?}: {} retries made, the server-wide cap of a retryPolicy nothing else bounds",
                        history.retries
                    ),
                );
            }
            let attempts = history.attempts();
            if policy.maximum_attempts > 0 && attempts >= policy.maximum_attempts {
                return give_up(
                    GiveUpReason::MaximumAttempts,
                    format!(
                        "error {code:?}: {attempts} attempts made, retryPolicy.maximumAttempts is {}",
                        policy.maximum_attempts
                    ),
                );
            }
            // The policy's own retries: those of every code no rule names.
            let done = history
                .retries_by_code
                .iter()
                .filter(|(c, _)| rule_for(definition, c).is_none())
                .fold(0u32, |sum, (_, n)| sum.saturating_add(*n));
            (
                policy_wait(policy, done),
                "retryPolicy".to_string(),
                done.saturating_add(1),
            )
        }
    };

    let at = add(now, wait).unwrap_or(DateTime::<Utc>::MAX_UTC);
    if let Some(deadline) = schedule_to_close_deadline(scheduled_time, definition.timeouts()) {
        if at > deadline {
            return give_up(
                GiveUpReason::ScheduleToClose,
                format!(
                    "error {code:?}: the retry after {wait} would start after the scheduleToClose deadline {}",
                    deadline.to_rfc3339()
                ),
            );
        }
    }
    RetryDecision::RetryAfter {
        wait,
        at,
        rule,
        number,
    }
}

fn give_up(reason: GiveUpReason, detail: String) -> RetryDecision {
    RetryDecision::GiveUp { reason, detail }
}

/// The first rule naming `code` exactly, with its index in `retry`.
fn find_rule<'r>(rules: &'r [RetryRule], code: &str) -> Option<(usize, &'r RetryRule)> {
    rules
        .iter()
        .enumerate()
        .find(|(_, rule)| rule.error_equals == code)
}

/// The `retry` rule of `definition` that decides a failure with `code`: the first whose
/// `errorEquals` is `code`; for a sync job's timeout with no rule of its own, the first rule for
/// `"500"` (seed 002 has no `timeout` code: a sync job's timeouts are its 500s) — unless the
/// job's `retryPolicy` names `timeout` in `nonRetryableErrors`, which matches the code as it is.
fn rule_for<'r>(definition: &'r JobDefinition, code: &str) -> Option<(usize, &'r RetryRule)> {
    let rules = definition.retry_rules();
    find_rule(rules, code).or_else(|| {
        let non_retryable = definition
            .retry_policy()
            .is_some_and(|policy| policy.non_retryable_errors.iter().any(|e| e == code));
        (code == TIMEOUT && !definition.is_async() && !non_retryable)
            .then(|| find_rule(rules, SYNC_TIMEOUT_CODE))
            .flatten()
    })
}

/// The retries `rule` already granted: those of the codes it decides ([`rule_for`]).
fn retries_by_rule(definition: &JobDefinition, rule: &RetryRule, history: &RetryHistory) -> u32 {
    history
        .retries_by_code
        .iter()
        .filter(|(code, _)| rule_for(definition, code).is_some_and(|(_, r)| std::ptr::eq(r, rule)))
        .fold(0u32, |sum, (_, n)| sum.saturating_add(*n))
}

/// The wait before a docs/api.md rule's retry number `done + 1`: `intervalSeconds × backoffRate^done`.
pub fn rule_wait(rule: &RetryRule, done: u32) -> Duration {
    let base = u64::from(rule.interval_seconds).saturating_mul(1000);
    Duration::from_millis(backoff_millis(
        base,
        rule.backoff_rate,
        done,
        MAX_WAIT_MILLIS,
    ))
}

/// The wait before a `retryPolicy` retry number `done + 1`:
/// `min(initialInterval × backoffCoefficient^done, maximumInterval)`.
pub fn policy_wait(policy: &RetryPolicy, done: u32) -> Duration {
    let cap = policy.maximum_interval.as_millis().min(MAX_WAIT_MILLIS);
    Duration::from_millis(backoff_millis(
        policy.initial_interval.as_millis(),
        policy.backoff_coefficient,
        done,
        cap,
    ))
}

/// `base × factor^exponent` milliseconds, rounded, at most `cap`. A factor that is NaN or below 1
/// counts as 1; an infinite or overflowing product gives `cap`.
fn backoff_millis(base: u64, factor: f64, exponent: u32, cap: u64) -> u64 {
    if base == 0 {
        return 0;
    }
    let factor = if factor.is_nan() || factor < 1.0 {
        1.0
    } else {
        factor
    };
    let exponent = i32::try_from(exponent).unwrap_or(i32::MAX);
    let millis = base as f64 * factor.powi(exponent);
    if !millis.is_finite() || millis >= cap as f64 {
        cap
    } else {
        // Finite, non-negative and below `cap`, so the conversion is exact enough and in range.
        (millis.round() as u64).min(cap)
    }
}

/// `time + duration`, or `None` past the end of chrono's calendar.
fn add(time: DateTime<Utc>, duration: Duration) -> Option<DateTime<Utc>> {
    let millis = i64::try_from(duration.as_millis()).ok()?;
    time.checked_add_signed(TimeDelta::try_milliseconds(millis)?)
}

/// When an attempt started at `started_at` times out: `started_at + timeoutSeconds` (docs/api.md's
/// `timeoutSeconds` covers one attempt, async checks included). `None` only past the end of the
/// calendar.
pub fn attempt_deadline(started_at: DateTime<Utc>, timeout_seconds: u32) -> Option<DateTime<Utc>> {
    add(started_at, Duration::from_secs(u64::from(timeout_seconds)))
}

/// When an execution scheduled at `scheduled_time` must have started its first attempt:
/// `scheduled_time + scheduleToStart`, or `None` without that timeout.
pub fn schedule_to_start_deadline(
    scheduled_time: DateTime<Utc>,
    timeouts: &Timeouts,
) -> Option<DateTime<Utc>> {
    add(scheduled_time, timeouts.schedule_to_start?)
}

/// When an execution scheduled at `scheduled_time` must have ended, retries included:
/// `scheduled_time + scheduleToClose`, or `None` without that timeout.
pub fn schedule_to_close_deadline(
    scheduled_time: DateTime<Utc>,
    timeouts: &Timeouts,
) -> Option<DateTime<Utc>> {
    add(scheduled_time, timeouts.schedule_to_close?)
}

/// When an async attempt whose last progress report (or start) was at `last_progress_at` times out
/// for lack of a heartbeat: `last_progress_at + heartbeat`, or `None` without that timeout.
pub fn heartbeat_deadline(
    last_progress_at: DateTime<Utc>,
    timeouts: &Timeouts,
) -> Option<DateTime<Utc>> {
    add(last_progress_at, timeouts.heartbeat?)
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::job::JobId;
    use crate::outcome::{CONNECTION, TIMEOUT};

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn t0() -> DateTime<Utc> {
        at("2024-01-01T00:00:00Z")
    }

    fn def(patch: Value) -> JobDefinition {
        let mut body = json!({
            "jobName": "job",
            "creator": "001",
            "creatorName": "client",
            "request": [{"url": "http://example.com/run"}]
        });
        if let (Value::Object(map), Value::Object(patch)) = (&mut body, patch) {
            map.extend(patch);
        }
        JobDefinition::parse(&JobId::parse("j").unwrap(), &body, t0()).unwrap()
    }

    /// Runs failures with the given codes in order, recording each granted retry; returns each
    /// decision's wait in milliseconds, or the reason it gave up.
    fn run(definition: &JobDefinition, codes: &[&str]) -> Vec<Result<u64, GiveUpReason>> {
        let mut history = RetryHistory::default();
        let mut out = Vec::new();
        for code in codes {
            match decide(definition, code, &history, t0(), t0()) {
                RetryDecision::RetryAfter { wait, .. } => {
                    history.record_retry(code);
                    out.push(Ok(wait.as_millis()));
                }
                RetryDecision::GiveUp { reason, .. } => out.push(Err(reason)),
            }
        }
        out
    }

    /// Retries `code` until the decision gives up; the waits in ms and the reason.
    fn until_give_up(definition: &JobDefinition, code: &str) -> (Vec<u64>, GiveUpReason) {
        let mut history = RetryHistory::default();
        let mut waits = Vec::new();
        for _ in 0..2000 {
            match decide(definition, code, &history, t0(), t0()) {
                RetryDecision::RetryAfter { wait, .. } => {
                    waits.push(wait.as_millis());
                    history.record_retry(code);
                }
                RetryDecision::GiveUp { reason, .. } => return (waits, reason),
            }
        }
        panic!("never gave up")
    }

    #[test]
    fn rule_backoff_is_exact() {
        let d = def(json!({
            "maxRetries": 100,
            "retry": [{"errorEquals": "500", "intervalSeconds": 2, "backoffRate": 2.0, "maxAttempts": 3}]
        }));
        assert_eq!(
            until_give_up(&d, "500"),
            (vec![2000, 4000, 8000], GiveUpReason::MaxAttempts)
        );
    }

    #[test]
    fn rule_defaults_are_one_second_doubling_twice() {
        let d = def(json!({"retry": [{"errorEquals": "error1"}]}));
        assert_eq!(
            until_give_up(&d, "error1"),
            (vec![1000, 2000], GiveUpReason::MaxAttempts)
        );
    }

    #[test]
    fn fractional_backoff_rate_rounds_to_millis() {
        // docs/api.md's example job: 500 → 2 s × 1.5.
        let d = def(
            json!({"retry": [{"errorEquals": "500", "intervalSeconds": 2, "backoffRate": 1.5, "maxAttempts": 2}]}),
        );
        assert_eq!(until_give_up(&d, "500").0, vec![2000, 3000]);
        let d = def(
            json!({"maxRetries": 10, "retry": [{"errorEquals": "500", "intervalSeconds": 1, "backoffRate": 1.1, "maxAttempts": 4}]}),
        );
        assert_eq!(until_give_up(&d, "500").0, vec![1000, 1100, 1210, 1331]);
    }

    #[test]
    fn seed_002_example_rules() {
        let d = def(json!({
            "retry": [
                {"maxAttempts": 2, "backoffRate": 1.5, "errorEquals": "500", "intervalSeconds": 2},
                {"maxAttempts": 2, "backoffRate": 2.0, "errorEquals": "timeout", "intervalSeconds": 5},
                {"maxAttempts": 2, "backoffRate": 2.0, "errorEquals": "error1", "intervalSeconds": 3}
            ]
        }));
        assert_eq!(
            until_give_up(&d, TIMEOUT),
            (vec![5000, 10_000], GiveUpReason::MaxAttempts)
        );
        assert_eq!(
            until_give_up(&d, "error1"),
            (vec![3000, 6000], GiveUpReason::MaxAttempts)
        );
        // Unnamed codes are not retried without a retryPolicy.
        assert_eq!(
            until_give_up(&d, "404"),
            (vec![], GiveUpReason::NoRetryRule)
        );
        assert_eq!(
            until_give_up(&d, CONNECTION),
            (vec![], GiveUpReason::NoRetryRule)
        );
    }

    #[test]
    fn rules_match_codes_exactly_and_the_first_wins() {
        let d = def(json!({
            "retry": [
                {"errorEquals": "500", "intervalSeconds": 7, "maxAttempts": 1},
                {"errorEquals": "500", "intervalSeconds": 9, "maxAttempts": 5},
                {"errorEquals": 502, "intervalSeconds": 4}
            ]
        }));
        assert_eq!(
            until_give_up(&d, "500"),
            (vec![7000], GiveUpReason::MaxAttempts)
        );
        // A number in errorEquals matches the status text.
        assert_eq!(until_give_up(&d, "502").0, vec![4000, 8000]);
        for other in ["50", "5000", " 500", "Error1", ""] {
            assert_eq!(
                until_give_up(&d, other),
                (vec![], GiveUpReason::NoRetryRule)
            );
        }
    }

    #[test]
    fn rule_with_zero_attempts_never_retries_even_with_a_policy() {
        let d = def(json!({
            "retry": [{"errorEquals": "500", "maxAttempts": 0}],
            "retryPolicy": {}
        }));
        assert_eq!(
            until_give_up(&d, "500"),
            (vec![], GiveUpReason::MaxAttempts)
        );
    }

    #[test]
    fn zero_interval_retries_at_once() {
        let d = def(json!({"retry": [{"errorEquals": "500", "intervalSeconds": 0}]}));
        assert_eq!(until_give_up(&d, "500").0, vec![0, 0]);
    }

    #[test]
    fn max_retries_caps_across_rules() {
        let d = def(json!({
            "maxRetries": 3,
            "retry": [
                {"errorEquals": "500", "maxAttempts": 2},
                {"errorEquals": "timeout", "maxAttempts": 2, "intervalSeconds": 5}
            ]
        }));
        // Each rule counts its own error; the backoff of one is not advanced by the other.
        assert_eq!(
            run(&d, &["500", "timeout", "500", "timeout", "500"]),
            vec![
                Ok(1000),
                Ok(5000),
                Ok(2000),
                Err(GiveUpReason::MaxRetries),
                Err(GiveUpReason::MaxRetries)
            ]
        );
    }

    #[test]
    fn max_retries_defaults_to_five() {
        let d =
            def(json!({"retry": [{"errorEquals": "500", "maxAttempts": 100, "backoffRate": 1.0}]}));
        assert_eq!(d.max_retries(), 5);
        assert_eq!(
            until_give_up(&d, "500"),
            (vec![1000; 5], GiveUpReason::MaxRetries)
        );
    }

    #[test]
    fn max_retries_zero_means_no_retry() {
        let d = def(json!({"maxRetries": 0, "retry": [{"errorEquals": "500"}], "retryPolicy": {}}));
        assert_eq!(until_give_up(&d, "500"), (vec![], GiveUpReason::MaxRetries));
        assert_eq!(until_give_up(&d, "404"), (vec![], GiveUpReason::MaxRetries));
    }

    #[test]
    fn policy_defaults() {
        let d = def(json!({"maxRetries": 100, "retryPolicy": {}}));
        let (waits, reason) = until_give_up(&d, "503");
        // 1 s doubling, clamped at 100 × 1 s, until maxRetries.
        assert_eq!(
            waits[..9],
            [1000, 2000, 4000, 8000, 16_000, 32_000, 64_000, 100_000, 100_000]
        );
        assert_eq!(waits.len(), 100);
        assert!(waits[7..].iter().all(|w| *w == 100_000));
        assert_eq!(reason, GiveUpReason::MaxRetries);
    }

    #[test]
    fn policy_maximum_interval_clamps() {
        let d = def(json!({
            "maxRetries": 6,
            "retryPolicy": {"initialInterval": "2s", "backoffCoefficient": 3.0, "maximumInterval": "30s"}
        }));
        assert_eq!(
            until_give_up(&d, "error9"),
            (
                vec![2000, 6000, 18_000, 30_000, 30_000, 30_000],
                GiveUpReason::MaxRetries
            )
        );
    }

    #[test]
    fn policy_maximum_attempts_counts_the_first_attempt() {
        let d = def(json!({"retryPolicy": {"maximumAttempts": 3}}));
        assert_eq!(
            until_give_up(&d, "503"),
            (vec![1000, 2000], GiveUpReason::MaximumAttempts)
        );
        let d = def(json!({"retryPolicy": {"maximumAttempts": 1}}));
        assert_eq!(
            until_give_up(&d, "503"),
            (vec![], GiveUpReason::MaximumAttempts)
        );
        // 0 is unlimited: with no maxRetries and no scheduleToClose, the server-wide cap stops it.
        let d = def(json!({"retryPolicy": {"maximumAttempts": 0}}));
        let (waits, reason) = until_give_up(&d, "503");
        assert_eq!(reason, GiveUpReason::MaxRetries);
        assert_eq!(waits.len(), POLICY_RETRY_CAP as usize);
        // A maxRetries given caps the policy too.
        let d = def(json!({"maxRetries": 7, "retryPolicy": {"maximumAttempts": 0}}));
        assert_eq!(until_give_up(&d, "503").0.len(), 7);
    }

    /// Issue 26 item 3: a Temporal-style policy (`maximumAttempts: 0`, bounded only by
    /// `scheduleToClose`) retries until the deadline, not six attempts: without `maxRetries`
    /// the policy alone decides. Seed 002's rules keep maxRetries's default of 5.
    #[test]
    fn an_unlimited_policy_retries_until_schedule_to_close() {
        let d = def(json!({
            "retryPolicy": {"maximumAttempts": 0, "initialInterval": "1s", "maximumInterval": "10s"},
            "timeouts": {"scheduleToClose": "10m"}
        }));
        assert_eq!(d.max_retries_given(), None);
        assert!(!d.policy_retries_unbounded());
        let mut history = RetryHistory::default();
        let mut now = t0();
        let reason = loop {
            match decide(&d, "503", &history, t0(), now) {
                RetryDecision::RetryAfter { at, .. } => {
                    history.record_retry("503");
                    now = at;
                }
                RetryDecision::GiveUp { reason, .. } => break reason,
            }
        };
        assert_eq!(reason, GiveUpReason::ScheduleToClose);
        // 1, 2, 4, 8 s (15 s), then 10 s each while the next starts within 10 minutes: 4 + 58
        // retries, not 5.
        assert_eq!(history.retries, 62);
        assert!(now <= t0() + TimeDelta::minutes(10));
        // The rules of the same job are still capped by the default of 5.
        let d = def(json!({
            "retry": [{"errorEquals": "500", "maxAttempts": 100, "backoffRate": 1.0}],
            "retryPolicy": {"maximumAttempts": 0},
            "timeouts": {"scheduleToClose": "1d"}
        }));
        assert_eq!(
            until_give_up(&d, "500"),
            (vec![1000; 5], GiveUpReason::MaxRetries)
        );
        assert!(run(&d, &["503"; 8]).iter().all(Result::is_ok));
    }

    /// Issue 26 item 7: seed 002 has no `timeout` code; a sync job's timeouts are matched by a
    /// `"500"` rule (which counts them with its 500s), unless a rule names `timeout`; an async
    /// job's are not; Temporal's nonRetryableErrors keep matching `timeout` as it is.
    #[test]
    fn a_sync_timeout_is_retried_by_a_500_rule() {
        let sync = def(json!({
            "retry": [{"errorEquals": "500", "maxAttempts": 3, "intervalSeconds": 2, "backoffRate": 1.0}]
        }));
        assert_eq!(
            run(&sync, &["timeout", "500", "timeout", "timeout"]),
            vec![Ok(2000), Ok(2000), Ok(2000), Err(GiveUpReason::MaxAttempts)]
        );
        let asynchronous = def(json!({
            "async": true,
            "retry": [{"errorEquals": "500", "maxAttempts": 3}]
        }));
        assert_eq!(
            run(&asynchronous, &["timeout"]),
            vec![Err(GiveUpReason::NoRetryRule)]
        );
        let own = def(json!({
            "retry": [
                {"errorEquals": "500", "maxAttempts": 3, "intervalSeconds": 2},
                {"errorEquals": "timeout", "maxAttempts": 1, "intervalSeconds": 7}
            ]
        }));
        assert_eq!(
            run(&own, &["timeout", "timeout"]),
            vec![Ok(7000), Err(GiveUpReason::MaxAttempts)]
        );
        // nonRetryableErrors match the code as it is: "timeout" stops a timeout even beside a
        // "500" rule, and "500" does not catch a timeout.
        let temporal = def(json!({
            "retry": [{"errorEquals": "500"}],
            "retryPolicy": {"nonRetryableErrors": ["timeout"]}
        }));
        assert_eq!(
            run(&temporal, &["timeout"]),
            vec![Err(GiveUpReason::NonRetryable)]
        );
        let temporal = def(json!({"retryPolicy": {"nonRetryableErrors": ["500"]}}));
        assert!(run(&temporal, &["timeout"])[0].is_ok());
    }

    /// A policy nothing bounds is accepted with a warning naming the cap.
    #[test]
    fn an_unbounded_policy_warns_at_create() {
        let unbounded = def(json!({"retryPolicy": {"maximumAttempts": 0}}));
        let warnings = unbounded.warnings(t0());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("retryPolicy: "), "{warnings:?}");
        assert!(warnings[0].contains("1000"), "{warnings:?}");
        for bounded in [
            json!({"retryPolicy": {"maximumAttempts": 0}, "maxRetries": 10}),
            json!({"retryPolicy": {"maximumAttempts": 0}, "timeouts": {"scheduleToClose": "1h"}}),
            json!({"retryPolicy": {"maximumAttempts": 4}}),
        ] {
            assert!(def(bounded.clone()).warnings(t0()).is_empty(), "{bounded}");
        }
    }

    #[test]
    fn policy_maximum_attempts_counts_rule_retries_too() {
        let d = def(json!({
            "retry": [{"errorEquals": "500", "maxAttempts": 2}],
            "retryPolicy": {"maximumAttempts": 3}
        }));
        // Two rule retries make three attempts; the policy allows no fourth.
        assert_eq!(
            run(&d, &["500", "500", "503"]),
            vec![Ok(1000), Ok(2000), Err(GiveUpReason::MaximumAttempts)]
        );
    }

    #[test]
    fn policy_backoff_counts_only_policy_retries() {
        let d = def(json!({
            "maxRetries": 10,
            "retry": [{"errorEquals": "500", "maxAttempts": 3, "intervalSeconds": 10}],
            "retryPolicy": {"initialInterval": "1s"}
        }));
        // Policy retries of different unnamed codes share one backoff; rule retries don't advance it.
        assert_eq!(
            run(&d, &["503", "500", "404", "500", "connection", "500"]),
            vec![
                Ok(1000),
                Ok(10_000),
                Ok(2000),
                Ok(20_000),
                Ok(4000),
                Ok(40_000)
            ]
        );
    }

    #[test]
    fn non_retryable_errors() {
        let d = def(json!({
            "retry": [{"errorEquals": "400"}],
            "retryPolicy": {"nonRetryableErrors": ["404", 401, "fatal"]}
        }));
        for code in ["404", "401", "fatal"] {
            assert_eq!(
                until_give_up(&d, code),
                (vec![], GiveUpReason::NonRetryable)
            );
        }
        // Without maxRetries the policy alone decides: unlimited (maximumAttempts 0), up to the
        // server-wide cap here (no scheduleToClose either).
        let policy = until_give_up(&d, "503").0;
        assert_eq!(policy[..5], [1000, 2000, 4000, 8000, 16_000]);
        assert_eq!(policy.len(), POLICY_RETRY_CAP as usize);
        // A rule naming a code wins over the policy.
        assert_eq!(until_give_up(&d, "400").0, vec![1000, 2000]);
    }

    #[test]
    fn no_rule_and_no_policy_means_no_retry() {
        let d = def(json!({}));
        for code in ["500", TIMEOUT, CONNECTION, "error1"] {
            assert_eq!(until_give_up(&d, code), (vec![], GiveUpReason::NoRetryRule));
        }
    }

    #[test]
    fn schedule_to_close_gives_up() {
        let d = def(json!({
            "maxRetries": 10,
            "retry": [{"errorEquals": "500", "intervalSeconds": 10, "maxAttempts": 10}],
            "timeouts": {"scheduleToClose": "1m"}
        }));
        let history = RetryHistory::default();
        // Failure 40 s after the fire: retry at 50 s is within the minute.
        let now = t0() + TimeDelta::seconds(40);
        match decide(&d, "500", &history, t0(), now) {
            RetryDecision::RetryAfter {
                wait,
                at: start,
                rule,
                number,
            } => {
                assert_eq!(wait.as_secs(), 10);
                assert_eq!(start, t0() + TimeDelta::seconds(50));
                assert_eq!(rule, "retry[0]");
                assert_eq!(number, 1);
            }
            other => panic!("{other:?}"),
        }
        // Exactly at the deadline is still allowed.
        let now = t0() + TimeDelta::seconds(50);
        assert!(decide(&d, "500", &history, t0(), now).is_retry());
        // One millisecond later is not.
        let now = t0() + TimeDelta::milliseconds(50_001);
        match decide(&d, "500", &history, t0(), now) {
            RetryDecision::GiveUp { reason, detail } => {
                assert_eq!(reason, GiveUpReason::ScheduleToClose);
                assert_eq!(reason.as_str(), "scheduleToClose");
                assert!(detail.contains("scheduleToClose"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        // Backoff growth reaches the deadline too: failing at the fire each time, 10 s, 20 s and 40 s
        // fit in the minute, 80 s does not.
        assert_eq!(
            until_give_up(&d, "500"),
            (vec![10_000, 20_000, 40_000], GiveUpReason::ScheduleToClose)
        );
    }

    #[test]
    fn schedule_to_close_applies_to_the_policy() {
        let d = def(json!({
            "retryPolicy": {"initialInterval": "30s"},
            "timeouts": {"scheduleToClose": "1m"}
        }));
        assert_eq!(
            until_give_up(&d, "503"),
            (vec![30_000, 60_000], GiveUpReason::ScheduleToClose)
        );
    }

    #[test]
    fn decision_labels_the_rule() {
        let d = def(json!({
            "retry": [{"errorEquals": "404"}, {"errorEquals": "500"}],
            "retryPolicy": {}
        }));
        let mut history = RetryHistory::default();
        history.record_retry("500");
        match decide(&d, "500", &history, t0(), t0()) {
            RetryDecision::RetryAfter { rule, number, .. } => {
                assert_eq!((rule.as_str(), number), ("retry[1]", 2));
            }
            other => panic!("{other:?}"),
        }
        match decide(&d, "503", &history, t0(), t0()) {
            RetryDecision::RetryAfter { rule, number, .. } => {
                assert_eq!((rule.as_str(), number), ("retryPolicy", 1));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn huge_and_nan_factors_never_panic() {
        // The parser bounds backoffRate to 100: 1 d, 100 d, then 10 000 d is capped at 365 d, and 100^99
        // stays finite but capped too.
        let d = def(json!({
            "maxRetries": 100,
            "retry": [{"errorEquals": "500", "intervalSeconds": 86400, "backoffRate": 100.0, "maxAttempts": 100}]
        }));
        let (waits, reason) = until_give_up(&d, "500");
        assert_eq!(waits.len(), 100);
        assert_eq!(waits[..2], [86_400_000, 8_640_000_000]);
        assert!(waits[2..].iter().all(|w| *w == MAX_WAIT_MILLIS));
        assert_eq!(reason, GiveUpReason::MaxRetries);

        // Rules and policies built by hand can hold anything.
        let rule = |rate: f64| RetryRule {
            error_equals: "x".into(),
            interval_seconds: u32::MAX,
            max_attempts: u32::MAX,
            backoff_rate: rate,
        };
        assert_eq!(rule_wait(&rule(f64::NAN), 5).as_millis(), MAX_WAIT_MILLIS);
        assert_eq!(
            rule_wait(&rule(f64::INFINITY), 5).as_millis(),
            MAX_WAIT_MILLIS
        );
        assert_eq!(rule_wait(&rule(2.0), u32::MAX).as_millis(), MAX_WAIT_MILLIS);
        let small = |rate: f64| RetryRule {
            interval_seconds: 3,
            ..rule(rate)
        };
        assert_eq!(rule_wait(&small(f64::NAN), 7).as_millis(), 3000);
        assert_eq!(rule_wait(&small(-5.0), 7).as_millis(), 3000);
        assert_eq!(rule_wait(&small(0.5), 7).as_millis(), 3000);
        assert_eq!(rule_wait(&small(f64::INFINITY), 0).as_millis(), 3000);
        assert_eq!(
            rule_wait(&small(f64::INFINITY), 1).as_millis(),
            MAX_WAIT_MILLIS
        );
        assert_eq!(rule_wait(&small(1.0), u32::MAX).as_millis(), 3000);
        let zero = RetryRule {
            interval_seconds: 0,
            ..rule(f64::INFINITY)
        };
        assert_eq!(rule_wait(&zero, u32::MAX).as_millis(), 0);

        let policy = |coeff: f64, max: u64| RetryPolicy {
            initial_interval: Duration::from_secs(1),
            backoff_coefficient: coeff,
            maximum_interval: Duration::from_millis(max),
            maximum_attempts: 0,
            non_retryable_errors: vec![],
        };
        assert_eq!(policy_wait(&policy(f64::NAN, 10_000), 3).as_millis(), 1000);
        assert_eq!(
            policy_wait(&policy(f64::INFINITY, 10_000), 3).as_millis(),
            10_000
        );
        assert_eq!(
            policy_wait(&policy(2.0, u64::MAX), 1000).as_millis(),
            MAX_WAIT_MILLIS
        );
        // A maximum shorter than the initial interval wins.
        assert_eq!(policy_wait(&policy(2.0, 500), 0).as_millis(), 500);
    }

    #[test]
    fn waits_near_the_end_of_time_do_not_overflow() {
        let d = def(json!({"retry": [{"errorEquals": "500", "intervalSeconds": 86400}]}));
        let end = DateTime::<Utc>::MAX_UTC;
        match decide(&d, "500", &RetryHistory::default(), end, end) {
            RetryDecision::RetryAfter { at: start, .. } => assert_eq!(start, end),
            other => panic!("{other:?}"),
        }
        let d = def(json!({
            "retry": [{"errorEquals": "500", "intervalSeconds": 86400}],
            "timeouts": {"scheduleToClose": "1h"}
        }));
        // The deadline itself is past the calendar: no deadline to enforce.
        assert!(decide(&d, "500", &RetryHistory::default(), end, end).is_retry());
    }

    #[test]
    fn history_counts_and_serialises_camel_case() {
        let mut history = RetryHistory::default();
        assert_eq!(history.attempts(), 1);
        history.record_retry("500");
        history.record_retry("timeout");
        history.record_retry("500");
        assert_eq!(history.retries, 3);
        assert_eq!(history.attempts(), 4);
        assert_eq!(history.retries_of("500"), 2);
        assert_eq!(history.retries_of("404"), 0);
        let value = serde_json::to_value(&history).unwrap();
        assert_eq!(
            value,
            json!({"retries": 3, "retriesByCode": {"500": 2, "timeout": 1}})
        );
        let back: RetryHistory = serde_json::from_value(value).unwrap();
        assert_eq!(back, history);
        let empty: RetryHistory = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty, RetryHistory::default());

        let mut full = RetryHistory {
            retries: u32::MAX,
            ..RetryHistory::default()
        };
        full.retries_by_code.insert("x".into(), u32::MAX);
        full.record_retry("x");
        assert_eq!((full.retries, full.retries_of("x")), (u32::MAX, u32::MAX));
        assert_eq!(full.attempts(), u32::MAX);
    }

    #[test]
    fn reasons_have_stable_names() {
        let names: Vec<String> = [
            GiveUpReason::MaxRetries,
            GiveUpReason::MaxAttempts,
            GiveUpReason::NoRetryRule,
            GiveUpReason::NonRetryable,
            GiveUpReason::MaximumAttempts,
            GiveUpReason::ScheduleToClose,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            names,
            [
                "maxRetries",
                "maxAttempts",
                "noRetryRule",
                "nonRetryableErrors",
                "maximumAttempts",
                "scheduleToClose"
            ]
        );
    }

    #[test]
    fn timeout_deadlines() {
        let started = at("2024-01-01T10:00:00Z");
        assert_eq!(
            attempt_deadline(started, 15),
            Some(at("2024-01-01T10:00:15Z"))
        );
        assert_eq!(attempt_deadline(started, 0), Some(started));
        assert_eq!(attempt_deadline(DateTime::<Utc>::MAX_UTC, 1), None);

        let none = Timeouts::default();
        assert_eq!(schedule_to_start_deadline(started, &none), None);
        assert_eq!(schedule_to_close_deadline(started, &none), None);
        assert_eq!(heartbeat_deadline(started, &none), None);

        let d = def(json!({
            "timeouts": {"scheduleToStart": "30s", "scheduleToClose": "PT1H", "heartbeat": "1m30s"}
        }));
        let timeouts = d.timeouts();
        assert_eq!(
            schedule_to_start_deadline(started, timeouts),
            Some(at("2024-01-01T10:00:30Z"))
        );
        assert_eq!(
            schedule_to_close_deadline(started, timeouts),
            Some(at("2024-01-01T11:00:00Z"))
        );
        assert_eq!(
            heartbeat_deadline(started, timeouts),
            Some(at("2024-01-01T10:01:30Z"))
        );
        assert_eq!(heartbeat_deadline(DateTime::<Utc>::MAX_UTC, timeouts), None);
    }

    proptest::proptest! {
        #![proptest_config(sundial_testkit::proptest_config(256, concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/retry.txt")))]

        #[test]
        fn decide_never_panics_and_waits_are_bounded(
            interval in 0u32..=86_400,
            rate in 1.0f64..=100.0,
            attempts in 0u32..=100,
            max_retries in 0u32..=100,
            retries in 0u32..=200,
            by_code in 0u32..=200,
            code in proptest::sample::select(vec!["500", "503", "timeout"]),
        ) {
            let d = def(json!({
                "maxRetries": max_retries,
                "retry": [{"errorEquals": "500", "intervalSeconds": interval, "backoffRate": rate, "maxAttempts": attempts}],
                "retryPolicy": {"initialInterval": "1d", "backoffCoefficient": rate, "maximumInterval": "100d"},
                "timeouts": {"scheduleToClose": "30d"}
            }));
            let mut history = RetryHistory { retries, ..RetryHistory::default() };
            history.retries_by_code.insert(code.to_string(), by_code);
            if let RetryDecision::RetryAfter { wait, at: start, number, .. } = decide(&d, code, &history, t0(), t0()) {
                proptest::prop_assert!(wait.as_millis() <= MAX_WAIT_MILLIS);
                proptest::prop_assert!(start <= t0() + TimeDelta::days(30));
                proptest::prop_assert!(retries < max_retries);
                proptest::prop_assert!(number >= 1);
            }
        }
    }
}
