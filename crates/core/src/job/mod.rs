//! The job model: what users create, parsed once into types that cannot hold an invalid value.
//!
//! A job is created from docs/api.md's JSON (`POST /jobs/{jobId}`) plus its extension fields. [`JobDefinition::parse`] reads every field with its default, compiles the `timer` or
//! `schedule` into [`When`], parses every `${…}` template, and rejects unknown fields so that a typo
//! is an error instead of a silently ignored setting. Every error is a [`FieldError`] whose path is
//! the field in JSON form (`request[1].url`, `retry[0].backoffRate`, `schedule.cron[0]`).
//!
//! The body is also kept exactly as written: `GET /jobs/{jobId}` returns it, and stored jobs are
//! re-parsed from it, so the parsed form is never a second source of truth. What changes over a
//! job's life (pause notes, counters, the last result) is [`JobState`]; a [`Job`] is the two together.
//!
//! ```
//! use sundial_core::job::{JobDefinition, JobId, When};
//! let id = JobId::parse("nightly-report").unwrap();
//! let body = serde_json::json!({
//!     "jobName": "Nightly report", "creator": "001", "creatorName": "reports",
//!     "request": [{"url": "https://example.com/run?job=${jobId}"}],
//!     "schedule": {"cron": ["0 2 * * *"]}
//! });
//! let created = "2024-01-01T00:00:00Z".parse().unwrap();
//! let def = JobDefinition::parse(&id, &body, created).unwrap();
//! assert!(matches!(def.when(), When::Scheduled(_)));
//! assert_eq!(def.timeout_seconds(), 60);
//! ```

mod definition;
mod diff;
pub mod document;
mod fields;
mod http;
mod id;
mod labels;
mod policy;
mod redact;
mod state;

#[cfg(test)]
mod tests;

pub use crate::spec::SpecError as FieldError;
pub use definition::{
    JobDefinition, JobDocument, LastResultsNamed, When, DEFAULT_MAX_RETRIES,
    LAST_COMPLETION_RESULT, LAST_FAILURE, POLICY_RETRY_CAP,
};
pub use diff::{definition_changes, FieldChange};
pub use http::{
    is_reserved_header, Action, HttpMethod, HttpTemplate, NotificationRule, RequestStep, Target,
    IDEMPOTENCY_KEY_HEADER, RESERVED_HEADERS,
};
pub use id::{JobId, ServiceName};
pub use labels::{LabelSelector, Labels, MAX_LABELS, MAX_LABEL_KEY, MAX_LABEL_VALUE_BYTES};
pub use policy::{
    BackfillMode, Catchup, CatchupPolicy, OverlapPolicy, ParentClosePolicy, Qos, RetryPolicy,
    RetryRule, Timeouts, MAX_CATCHUP_RUNS,
};
pub use redact::{
    is_sensitive_header, keep_redacted, listed_sensitive_headers, redact_job_body, REDACTED,
    SENSITIVE_HEADERS, SENSITIVE_NAME_PARTS,
};
pub use state::{covers, Backfill, Job, JobState, JobStatus, PauseEnd, PendingFire, WaitingRun};

pub(crate) use fields::quote;
pub(crate) use id::is_id_text;

/// Limits on what one job definition may hold. They keep a job inside one DynamoDB item (400 KB)
/// with room for its state, and bound the work a create request can cause.
pub mod limits {
    /// Longest `jobName`, in bytes.
    pub const MAX_JOB_NAME_BYTES: usize = 256;
    /// Longest `creator`, in bytes (it is an indexed key).
    pub const MAX_CREATOR_BYTES: usize = 256;
    /// Longest string in any other field, in bytes.
    pub const MAX_STRING_BYTES: usize = 8 * 1024;
    /// Largest request or notification `body`, in bytes of JSON.
    pub const MAX_BODY_BYTES: usize = 64 * 1024;
    /// Deepest nesting of arrays and objects inside a `body`.
    pub const MAX_BODY_DEPTH: usize = 32;
    /// Largest whole definition, in bytes of JSON as written.
    pub const MAX_DEFINITION_BYTES: usize = 256 * 1024;
    /// Most entries in `request`.
    pub const MAX_REQUESTS: usize = 20;
    /// Most entries in `notification`.
    pub const MAX_NOTIFICATIONS: usize = 20;
    /// Most entries in `retry`.
    pub const MAX_RETRY_RULES: usize = 20;
    /// Most headers in one `headers` map.
    pub const MAX_HEADERS: usize = 50;
    /// Most names in `sensitiveHeaders`.
    pub const MAX_SENSITIVE_HEADERS: usize = 100;
    /// Most entries in `retryPolicy.nonRetryableErrors`.
    pub const MAX_NON_RETRYABLE_ERRORS: usize = 50;
}
