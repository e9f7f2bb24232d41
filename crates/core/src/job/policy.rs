//! Policies: overlap, retries, timeouts, parent close, quality of service.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::duration::Duration;

/// What happens when a fire comes while an earlier run of the same job is still going (docs/engine.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OverlapPolicy {
    /// Don't start the new run; count it as skipped.
    #[default]
    Skip,
    /// Keep one run waiting; a later fire replaces nothing and is dropped.
    BufferOne,
    /// Keep every run waiting and start them in order.
    BufferAll,
    /// Cancel the running execution, then start the new one.
    CancelOther,
    /// Terminate the running execution, then start the new one.
    TerminateOther,
    /// Start the new run alongside the old ones.
    AllowAll,
}

impl OverlapPolicy {
    /// Every policy, in the order of the docs.
    pub const ALL: [OverlapPolicy; 6] = [
        OverlapPolicy::Skip,
        OverlapPolicy::BufferOne,
        OverlapPolicy::BufferAll,
        OverlapPolicy::CancelOther,
        OverlapPolicy::TerminateOther,
        OverlapPolicy::AllowAll,
    ];

    /// The name used in JSON: `Skip`, `BufferOne`, ….
    pub fn name(self) -> &'static str {
        match self {
            OverlapPolicy::Skip => "Skip",
            OverlapPolicy::BufferOne => "BufferOne",
            OverlapPolicy::BufferAll => "BufferAll",
            OverlapPolicy::CancelOther => "CancelOther",
            OverlapPolicy::TerminateOther => "TerminateOther",
            OverlapPolicy::AllowAll => "AllowAll",
        }
    }

    /// Reads a policy name, ignoring case (`skip`, `allowAll`).
    pub fn parse(text: &str) -> Option<OverlapPolicy> {
        OverlapPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for OverlapPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What happens to a child's running executions when its parent's execution ends (Temporal's
/// parent close policy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParentClosePolicy {
    /// Leave them running.
    #[default]
    Abandon,
    /// Cancel them.
    Cancel,
    /// Terminate them.
    Terminate,
}

impl ParentClosePolicy {
    /// Every policy.
    pub const ALL: [ParentClosePolicy; 3] = [
        ParentClosePolicy::Abandon,
        ParentClosePolicy::Cancel,
        ParentClosePolicy::Terminate,
    ];

    /// The name used in JSON: `abandon`, `cancel`, `terminate`.
    pub fn name(self) -> &'static str {
        match self {
            ParentClosePolicy::Abandon => "abandon",
            ParentClosePolicy::Cancel => "cancel",
            ParentClosePolicy::Terminate => "terminate",
        }
    }

    /// Reads a policy name, ignoring case.
    pub fn parse(text: &str) -> Option<ParentClosePolicy> {
        ParentClosePolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for ParentClosePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// docs/api.md's `qos`: how hard Sundial tries to keep an execution's progress and its notifications.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Qos {
    /// `0`: notifications are retried 3 times, 20 s apart, then dropped.
    #[default]
    Normal,
    /// `1`: undelivered notifications are kept and retried until delivered.
    Reliable,
}

impl Qos {
    /// The number used in JSON.
    pub fn as_u8(self) -> u8 {
        match self {
            Qos::Normal => 0,
            Qos::Reliable => 1,
        }
    }
}

/// A docs/api.md retry rule: errors equal to `error_equals` are retried `max_attempts` times, waiting
/// `interval_seconds × backoff_rate^(n-1)` before retry `n`.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryRule {
    /// The error code it matches: an HTTP status (`"500"`), an async `error` value, or `timeout`.
    pub error_equals: String,
    /// Seconds before the first retry (default 1).
    pub interval_seconds: u32,
    /// Retries of this error before giving up (default 2).
    pub max_attempts: u32,
    /// Factor between successive intervals (default 2.0, at least 1.0).
    pub backoff_rate: f64,
}

impl RetryRule {
    /// Default `intervalSeconds`.
    pub const DEFAULT_INTERVAL_SECONDS: u32 = 1;
    /// Default `maxAttempts`.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 2;
    /// Default `backoffRate`.
    pub const DEFAULT_BACKOFF_RATE: f64 = 2.0;
}

/// Temporal's retry policy, used when no docs/api.md rule matches an error.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Wait before the first retry (default 1 s).
    pub initial_interval: Duration,
    /// Factor between successive waits (default 2.0, at least 1.0).
    pub backoff_coefficient: f64,
    /// Longest wait (default 100 × the initial interval).
    pub maximum_interval: Duration,
    /// Attempts in all, the first included; 0 means unlimited (the default).
    pub maximum_attempts: u32,
    /// Error codes never retried.
    pub non_retryable_errors: Vec<String>,
}

/// Optional Temporal-style timeouts beside docs/api.md's `timeoutSeconds` (start-to-close).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// Longest wait from the fire to the first attempt starting.
    pub schedule_to_start: Option<Duration>,
    /// Longest time from the fire to the end, all attempts and retries included.
    pub schedule_to_close: Option<Duration>,
    /// Longest gap between progress reports of an async run.
    pub heartbeat: Option<Duration>,
}

/// The largest `catchup.maxRuns`: one tick's planning ([`crate::plan::MAX_FIRES_PER_TICK`]) and
/// one job's buffer ([`crate::plan::MAX_BUFFERED`]) hold a burst this large. Kubernetes refuses to
/// catch up past 100 missed schedules; Temporal buffers about 1,000 starts.
pub const MAX_CATCHUP_RUNS: u32 = 1000;

/// `catchup.policy`: which of the fires an engine reaches late still run (docs/engine.md,
/// "Catch-up"). Fires older than the window never run, whatever the policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CatchupPolicy {
    /// None of the late fires: the schedule resumes with the fires that are on time.
    Skip,
    /// Only the most recent fire that is due (Kubernetes CronJob's behaviour).
    Latest,
    /// Every fire in the window, or the newest `maxRuns` of those due (Temporal's behaviour; the
    /// default).
    #[default]
    All,
}

impl CatchupPolicy {
    /// Every policy, in the order of the docs.
    pub const ALL: [CatchupPolicy; 3] = [
        CatchupPolicy::Skip,
        CatchupPolicy::Latest,
        CatchupPolicy::All,
    ];

    /// The name used in JSON: `skip`, `latest`, `all`.
    pub fn name(self) -> &'static str {
        match self {
            CatchupPolicy::Skip => "skip",
            CatchupPolicy::Latest => "latest",
            CatchupPolicy::All => "all",
        }
    }

    /// Reads a policy name, ignoring case.
    pub fn parse(text: &str) -> Option<CatchupPolicy> {
        CatchupPolicy::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for CatchupPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `catchup` (and the older `catchupWindow`): how a job catches up on fires its engine reached
/// late, after an outage or a tick that fell behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Catchup {
    /// Which late fires run.
    pub policy: CatchupPolicy,
    /// Fires older than this when reached never run (default 1 minute, at least 10 s).
    pub window: Duration,
    /// With policy `all`, at most this many of the fires due at once run: the newest. `None`
    /// for no cap beyond the window.
    pub max_runs: Option<u32>,
}

impl Catchup {
    /// How many of the fires due at once may run, the newest ones, when some of them are late:
    /// 0 for `skip`, 1 for `latest`, `maxRuns` for `all` (`None`: every one).
    pub fn cap(&self) -> Option<usize> {
        match self.policy {
            CatchupPolicy::Skip => Some(0),
            CatchupPolicy::Latest => Some(1),
            CatchupPolicy::All => self
                .max_runs
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        }
    }
}

/// `mode` of a backfill: which fire times of its ranges run (Airflow 3's reprocess behaviours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackfillMode {
    /// Every time, whatever ran before (the default).
    #[default]
    All,
    /// Only times with no run at all: no scheduled run, no run of an earlier backfill.
    Missing,
    /// Only times whose latest run ended `Terminated` (it failed for good or timed out).
    Failed,
}

impl BackfillMode {
    /// Every mode, in the order of the docs.
    pub const ALL: [BackfillMode; 3] = [
        BackfillMode::All,
        BackfillMode::Missing,
        BackfillMode::Failed,
    ];

    /// The name used in JSON: `all`, `missing`, `failed`.
    pub fn name(self) -> &'static str {
        match self {
            BackfillMode::All => "all",
            BackfillMode::Missing => "missing",
            BackfillMode::Failed => "failed",
        }
    }

    /// Reads a mode name, ignoring case.
    pub fn parse(text: &str) -> Option<BackfillMode> {
        BackfillMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(text.trim()))
    }

    fn is_all(&self) -> bool {
        *self == BackfillMode::All
    }
}

impl fmt::Display for BackfillMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// For `#[serde(skip_serializing_if)]`: the default mode is not stored.
pub(crate) fn is_all_mode(mode: &BackfillMode) -> bool {
    mode.is_all()
}
