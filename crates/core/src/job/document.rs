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
}

const fn field(
    name: &'static str,
    part: FieldPart,
    read_by_runs: ReadByRuns,
    bound: Bound,
) -> JobField {
    JobField {
        name,
        part,
        read_by_runs,
        bound,
    }
}

use Bound::{MaxItems, MaxLength, Range};
use FieldPart::{Action, Identity, Lineage, Notifications, Policies, Retries, When};
use ReadByRuns::{Every, No, Scheduled};

/// Every top-level field a job may have: docs/api.md's create table, then its extensions.
pub const JOB_FIELDS: &[JobField] = &[
    field("jobId", Identity, No, MaxLength(MAX_JOB_ID_CHARS)),
    field("jobName", Identity, No, MaxLength(MAX_JOB_NAME_BYTES)),
    field("jobDescription", Identity, No, MaxLength(MAX_STRING_BYTES)),
    field("creator", Identity, No, MaxLength(MAX_CREATOR_BYTES)),
    field("creatorName", Identity, No, MaxLength(MAX_STRING_BYTES)),
    field(
        "notification",
        Notifications,
        Every,
        MaxItems(MAX_NOTIFICATIONS),
    ),
    field("active", When, No, Bound::None),
    field("timer", When, No, Bound::None),
    field("request", Action, Every, MaxItems(MAX_REQUESTS)),
    field("async", Action, Every, Bound::None),
    field("checkUrl", Action, Every, Bound::None),
    field(
        "checkRateSeconds",
        Action,
        Every,
        Range {
            min: 1,
            max: MAX_CHECK_RATE_SECONDS,
        },
    ),
    field(
        "timeoutSeconds",
        Retries,
        Every,
        Range {
            min: 1,
            max: MAX_TIMEOUT_SECONDS,
        },
    ),
    field("retry", Retries, Every, MaxItems(MAX_RETRY_RULES)),
    field(
        "maxRetries",
        Retries,
        Every,
        Range {
            min: 0,
            max: MAX_MAX_RETRIES,
        },
    ),
    field("qos", Notifications, Every, Range { min: 0, max: 1 }),
    field("parentJob", Lineage, No, MaxLength(MAX_JOB_ID_CHARS)),
    field(
        "parentJobExecution",
        Lineage,
        No,
        Range {
            min: 1,
            max: MAX_COUNT,
        },
    ),
    field("schedule", When, No, Bound::None),
    field("overlap", Policies, No, Bound::None),
    field(
        "maxConcurrency",
        Policies,
        No,
        Range {
            min: 1,
            max: MAX_CONCURRENCY,
        },
    ),
    field("catchupWindow", Policies, Scheduled, Bound::None),
    field("catchup", Policies, Scheduled, Bound::None),
    field("pauseOnFailure", Policies, Every, Bound::None),
    field(
        "remainingActions",
        Policies,
        No,
        Range {
            min: 0,
            max: MAX_COUNT,
        },
    ),
    field("retryPolicy", Retries, Every, Bound::None),
    field("timeouts", Retries, Every, Bound::None),
    field("parentClosePolicy", Policies, Every, Bound::None),
    field("target", Action, Every, Bound::None),
    field(
        "sensitiveHeaders",
        Action,
        Every,
        MaxItems(MAX_SENSITIVE_HEADERS),
    ),
    field("labels", Identity, No, MaxItems(MAX_LABELS)),
];

/// The names of [`JOB_FIELDS`], in its order.
pub const fn field_count() -> usize {
    JOB_FIELDS.len()
}

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
