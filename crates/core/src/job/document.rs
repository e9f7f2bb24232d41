//! The job document's top-level fields, described once: each field's name, the part of the job
//! it belongs to, whether a run reads it when it starts, and its bounds. The definition's parser
//! refuses any other field and reads the bounds from here ([`super::JobDefinition::parse`]), the
//! change preview compares the fields runs read ([`crate::change`]), and every mirror outside
//! the core (the OpenAPI document of `sundial-api`, the API's arbitrary-JSON test, the fuzz
//! targets) is generated from or tested against this table. Adding a field is one row here, its
//! parsing, and its docs.

use super::limits::{
    MAX_CREATOR_BYTES, MAX_JOB_NAME_BYTES, MAX_NOTIFICATIONS, MAX_REQUESTS, MAX_RETRY_RULES,
    MAX_SENSITIVE_HEADERS, MAX_STRING_BYTES,
};
use super::MAX_LABELS;

/// Largest `checkRateSeconds`: an hour between checks.
pub const MAX_CHECK_RATE_SECONDS: u64 = 3600;
/// Largest `timeoutSeconds`: a day.
pub const MAX_TIMEOUT_SECONDS: u64 = 86_400;
/// Largest `maxRetries`.
pub const MAX_MAX_RETRIES: u64 = 100;
/// Largest `maxConcurrency`.
pub const MAX_CONCURRENCY: u64 = 10_000;
/// Largest count a job takes (`remainingActions`, `parentJobExecution`): a signed 64-bit integer,
/// the OpenAPI document's `int64`, which every JSON client and store can hold.
pub const MAX_COUNT: u64 = i64::MAX as u64;
/// Longest job id (`jobId`, `parentJob`), in characters.
pub const MAX_JOB_ID_CHARS: usize = 128;

/// The part of a job a field describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldPart {
    /// Who the job is and who owns it: id, name, description, owner, labels.
    Identity,
    /// When it runs by itself: `active`, `timer`, `schedule`.
    When,
    /// What a run does: the request chain or target, async completion, secret headers.
    Action,
    /// How a failed or slow attempt is retried and timed out.
    Retries,
    /// Who is told how a run ended, and how insistently.
    Notifications,
    /// How fires and runs are admitted: overlap, concurrency, catch-up, pause on failure, the
    /// remaining actions and the parent close policy.
    Policies,
    /// The parent job this one was started by.
    Lineage,
}

/// Whether a run reads a field when it starts (so an update reaches runs not yet started).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadByRuns {
    /// No: it decides which fires are planned, or names the job.
    No,
    /// Yes, every run.
    Every,
    /// Only runs of scheduled fires (the catch-up fields).
    Scheduled,
}

/// A field's bounds, as the parser enforces them and the OpenAPI document states them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// None beyond its type.
    None,
    /// An integer from `min` to `max`, inclusive.
    Range {
        /// The least value.
        min: u64,
        /// The greatest value.
        max: u64,
    },
    /// A string of at most this many bytes (characters for ids).
    MaxLength(usize),
    /// A list or map of at most this many entries.
    MaxItems(usize),
}

/// The JSON type of a field's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// `true` or `false`.
    Boolean,
    /// A whole number in the field's [`Bound::Range`].
    Integer,
    /// Anything more: a string with a syntax, an object, a list. The HTTP API describes its
    /// shape (`sundial-api`'s `schema`); every other kind it builds from this table alone.
    Shaped,
}

/// One top-level field of the job document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobField {
    /// Its name in JSON.
    pub name: &'static str,
    /// The part of the job it describes.
    pub part: FieldPart,
    /// Whether runs read it when they start.
    pub read_by_runs: ReadByRuns,
    /// Its bounds.
    pub bound: Bound,
    /// The JSON type of its value.
    pub kind: FieldKind,
    /// What it means, in one sentence with its default: the OpenAPI document's description.
    pub description: &'static str,
}

const fn field(
    name: &'static str,
    part: FieldPart,
    read_by_runs: ReadByRuns,
    bound: Bound,
    kind: FieldKind,
    description: &'static str,
) -> JobField {
    JobField {
        name,
        part,
        read_by_runs,
        bound,
        kind,
        description,
    }
}

use Bound::{MaxItems, MaxLength, Range};
use FieldKind::{Boolean, Integer, Shaped};
use FieldPart::{Action, Identity, Lineage, Notifications, Policies, Retries, When};
use ReadByRuns::{Every, No, Scheduled};

/// Every top-level field a job may have: docs/api.md's create table, then its extensions.
pub const JOB_FIELDS: &[JobField] = &[
    field(
        "jobId",
        Identity, No, MaxLength(MAX_JOB_ID_CHARS),
        Shaped,
        "The job's id.",
    ),
    field(
        "jobName",
        Identity, No, MaxLength(MAX_JOB_NAME_BYTES),
        Shaped,
        "docs/api.md's name of the job (at most 256 bytes, not blank, no control characters).",
    ),
    field(
        "jobDescription",
        Identity, No, MaxLength(MAX_STRING_BYTES),
        Shaped,
        "What it is for (no control characters but tab and line breaks).",
    ),
    field(
        "creator",
        Identity, No, MaxLength(MAX_CREATOR_BYTES),
        Shaped,
        "The owner's id (at most 256 bytes, not blank, no control characters); `GET /jobs?creator=` filters by it.",
    ),
    field(
        "creatorName",
        Identity, No, MaxLength(MAX_STRING_BYTES),
        Shaped,
        "The owner's name (not blank, no control characters).",
    ),
    field(
        "notification",
        Notifications,
        Every,
        MaxItems(MAX_NOTIFICATIONS),
        Shaped,
        "Notification rules (at most 20).",
    ),
    field(
        "active",
        When, No, Bound::None,
        Shaped,
        "1 (scheduled, the default) or 0 (paused).",
    ),
    field(
        "timer",
        When, No, Bound::None,
        Shaped,
        "When the job runs (docs/api.md); not with `schedule`.",
    ),
    field(
        "request",
        Action, Every, MaxItems(MAX_REQUESTS),
        Shaped,
        "docs/api.md's request chain, called in order (1–20 calls). Required unless `target` is given; never with it.",
    ),
    field(
        "async",
        Action, Every, Bound::None,
        Boolean,
        "After the chain, wait for feedback or poll `checkUrl` (default false).",
    ),
    field(
        "checkUrl",
        Action, Every, Bound::None,
        Shaped,
        "Polled every `checkRateSeconds` until the async job reports an end.",
    ),
    field(
        "cancelUrl",
        Action, Every, Bound::None,
        Shaped,
        "Called (default `POST`) when a run of the async job is cancelled or terminated after its request was sent.",
    ),
    field(
        "checkRateSeconds",
        Action,
        Every,
        Range {
            min: 1,
            max: MAX_CHECK_RATE_SECONDS,
        },
        Integer,
        "Seconds between checks (default 1).",
    ),
    field(
        "timeoutSeconds",
        Retries,
        Every,
        Range {
            min: 1,
            max: MAX_TIMEOUT_SECONDS,
        },
        Integer,
        "One attempt's limit, async checks included (default 60).",
    ),
    field(
        "retry",
        Retries, Every, MaxItems(MAX_RETRY_RULES),
        Shaped,
        "docs/api.md retry rules (at most 20).",
    ),
    field(
        "maxRetries",
        Retries,
        Every,
        Range {
            min: 0,
            max: MAX_MAX_RETRIES,
        },
        Integer,
        "Optional: when given, the cap on all retries, retryPolicy's included; when not, 5 caps the retries of retry rules and retryPolicy alone decides its own.",
    ),
    field(
        "qos",
        Notifications, Every, Range { min: 0, max: 1 },
        Integer,
        "1 keeps undelivered notifications and keeps retrying them (default 0).",
    ),
    field(
        "parentJob",
        Lineage, No, MaxLength(MAX_JOB_ID_CHARS),
        Shaped,
        "The parent job's id (docs/api.md).",
    ),
    field(
        "parentJobExecution",
        Lineage,
        No,
        Range {
            min: 1,
            max: MAX_COUNT,
        },
        Integer,
        "The parent's execute number; only with `parentJob`.",
    ),
    field(
        "schedule",
        When, No, Bound::None,
        Shaped,
        "When the job runs (docs/spec.md); not with `timer`.",
    ),
    field(
        "overlap",
        Policies, No, Bound::None,
        Shaped,
        "Overlap policy (default `Skip`).",
    ),
    field(
        "maxConcurrency",
        Policies,
        No,
        Range {
            min: 1,
            max: MAX_CONCURRENCY,
        },
        Integer,
        "Most runs at once (default 1; unbounded by default with `AllowAll`).",
    ),
    field(
        "catchupWindow",
        Policies, Scheduled, Bound::None,
        Shaped,
        "Fires older than this after downtime are counted as missed (default 1m, at least 10s). The same as `catchup.window`.",
    ),
    field(
        "catchup",
        Policies, Scheduled, Bound::None,
        Shaped,
        "How late fires are caught up: `{policy, window, maxRuns}`.",
    ),
    field(
        "pauseOnFailure",
        Policies, Every, Bound::None,
        Boolean,
        "Pause after a run ends failed or timed out.",
    ),
    field(
        "remainingActions",
        Policies,
        No,
        Range {
            min: 0,
            max: MAX_COUNT,
        },
        Integer,
        "Scheduled runs left; triggers and backfills don't count.",
    ),
    field(
        "retryPolicy",
        Retries, Every, Bound::None,
        Shaped,
        "Temporal retry policy.",
    ),
    field(
        "timeouts",
        Retries, Every, Bound::None,
        Shaped,
        "Timeouts beyond `timeoutSeconds`.",
    ),
    field(
        "parentClosePolicy",
        Policies, Every, Bound::None,
        Shaped,
        "What the end of a parent run does to this job's runs (default `abandon`).",
    ),
    field(
        "target",
        Action, Every, Bound::None,
        Shaped,
        "A queue or bus instead of `request`.",
    ),
    field(
        "sensitiveHeaders",
        Action,
        Every,
        MaxItems(MAX_SENSITIVE_HEADERS),
        Shaped,
        "Header names, beyond the built-in rule, whose values are never shown (at most 100).",
    ),
    field(
        "labels",
        Identity, No, MaxItems(MAX_LABELS),
        Shaped,
        "What the job is, for `GET /jobs?label=key:value` and bulk actions.",
    ),
];

/// The names of [`JOB_FIELDS`], in its order, as the parser checks a body's keys against them:
/// made once, at compile time, not on every parse of a stored job.
pub const FIELD_NAMES: [&str; JOB_FIELDS.len()] = {
    let mut names = [""; JOB_FIELDS.len()];
    let mut i = 0;
    while i < JOB_FIELDS.len() {
        names[i] = JOB_FIELDS[i].name;
        i += 1;
    }
    names
};

/// The names of every field, in the table's order.
pub fn field_names() -> impl Iterator<Item = &'static str> {
    JOB_FIELDS.iter().map(|field| field.name)
}

/// The field named `name`, if the document has one.
pub fn job_field(name: &str) -> Option<&'static JobField> {
    JOB_FIELDS.iter().find(|field| field.name == name)
}

/// The range of the integer field `name`, as the parser reads it: `(min, max)`.
///
/// # Panics
/// Never for the names of the table's integer fields, which is all the parser asks for; a test
/// checks each.
pub(crate) fn range_of(name: &str) -> (u64, u64) {
    match job_field(name).map(|field| field.bound) {
        Some(Range { min, max }) => (min, max),
        _ => (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_is_named_once() {
        let mut names: Vec<&str> = field_names().collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), JOB_FIELDS.len());
    }

    #[test]
    fn the_integer_fields_the_parser_reads_have_ranges() {
        for name in [
            "checkRateSeconds",
            "timeoutSeconds",
            "maxRetries",
            "qos",
            "parentJobExecution",
            "maxConcurrency",
            "remainingActions",
        ] {
            let (min, max) = range_of(name);
            assert!(min <= max && max > 0, "{name}: {min}..={max}");
        }
    }
}
