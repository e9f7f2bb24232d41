//! The audit trail's port: every change to a job, kept as one entry per change under the job's
//! id, so a job's history (`GET /jobs/{jobId}/history`) outlives the job.
//!
//! Entries are written only inside [`Store::write_all`](super::Store::write_all) batches
//! ([`Write::AppendAudit`](super::Write::AppendAudit)) beside the change they record, so a change
//! without its entry, or an entry without its change, cannot be stored. Reading is by job id and
//! time range, in either order, never a scan: what the history route and the non-run ledger
//! ("the definition in force at each time") read.

use std::future::Future;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Page, PageRequest, StoreError};

/// One entry of a job's audit trail, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditRecord {
    /// The job the change was made to.
    pub job_id: String,
    /// The entry's key within the job: it sorts as the entries' time order (see [`entry_id`]).
    pub entry_id: String,
    /// When the change was made.
    pub at: DateTime<Utc>,
    /// The entry as the API shows it (`actor`, `action`, `reason`, `version`, `changes`,
    /// `definition`, …); the store does not read it.
    pub document: Value,
}

/// The key of an entry made at `at` for the job `version` the change left (or, for a deletion,
/// the version it removed plus one): the time in milliseconds, zero-padded, so keys sort as times;
/// then the version, so two changes in one millisecond keep their order; then `nonce`, so two
/// entries can never share a key.
pub fn entry_id(at: DateTime<Utc>, version: u64, nonce: u64) -> String {
    format!(
        "{:015}-{version:010}-{nonce:016x}",
        at.timestamp_millis().max(0)
    )
}

/// The least entry id of an entry made at or after `at` (see [`entry_id`]): a time range of
/// entries is a range of their ids, `[floor(from), floor(to))`, which a store reads as a range
/// of its key rather than by filtering every entry of the job.
pub fn entry_id_floor(at: DateTime<Utc>) -> String {
    format!("{:015}", at.timestamp_millis().max(0))
}

/// Which entries of a job to list, and in which order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only entries made at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Only entries made before this time.
    pub to: Option<DateTime<Utc>>,
    /// Oldest first (the ledger's reading); by default newest first (the history route's).
    pub oldest_first: bool,
}

/// What [`AuditStore::clean_audit`] removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuditCleanReport {
    /// Entries deleted.
    pub entries_deleted: u64,
}

/// The audit trail: entries appended with the change they record (through `write_all`), listed
/// per job by time, trimmed by the executions' retention rule.
///
/// Implementations must be safe to call concurrently and must make each method atomic.
pub trait AuditStore: Send + Sync + 'static {
    /// A job's entries matching `query`, a page at a time; the cursor is the store's own.
    fn list_audit(
        &self,
        job_id: &str,
        query: &AuditQuery,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Page<AuditRecord>, StoreError>> + Send;

    /// The rule of [`ExecutionStore::clean_executions`](super::ExecutionStore::clean_executions)
    /// for entries: keeps the newest `retain` entries of every job id that has or had a job,
    /// whether or not the job still exists, and, when `purge_deleted_jobs`, removes every entry of
    /// jobs that no longer exist.
    fn clean_audit(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> impl Future<Output = Result<AuditCleanReport, StoreError>> + Send;
}

/// Whether an entry made at `at` is in the time range of `query`.
pub fn in_range(query: &AuditQuery, at: DateTime<Utc>) -> bool {
    let ms = at.timestamp_millis();
    query.from.is_none_or(|from| ms >= from.timestamp_millis())
        && query.to.is_none_or(|to| ms < to.timestamp_millis())
}
