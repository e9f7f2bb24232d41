//! Rollups: per job and hour, named counters that runs add to as they end (statistics,
//! `GET /jobs/{jobId}/stats` and `GET /stats`; what the counters mean is
//! [`sundial_core::stats::Rollup`]'s business, not the store's).
//!
//! A bucket is only ever added to, with [`Write::AddRollup`](super::Write::AddRollup) inside the
//! same atomic [`Store::write_all`](super::Store::write_all) as the run's final update, so a
//! count is written exactly when the outcome is. Adding never reads the bucket first: two runs of
//! one job that end together both count, on every adapter (SQLite's one writer; DynamoDB's `ADD`).
//! Reads are by job and hour range, or by hour range across all jobs, never a scan of executions.

use std::collections::BTreeMap;
use std::future::Future;

use chrono::{DateTime, Utc};

use super::StoreError;

/// One job's bucket for one hour: counter name → count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RollupRecord {
    /// The job.
    pub job_id: String,
    /// The start of the hour (whole hours, UTC).
    pub hour: DateTime<Utc>,
    /// What to add (in a write) or what was added up (in a read). Names are short ASCII.
    pub counters: BTreeMap<String, u64>,
}

impl RollupRecord {
    /// The key [`Write::key`](super::Write::key) names it by.
    pub fn key(&self) -> String {
        format!("rollup {}@{}", self.job_id, self.hour.timestamp())
    }
}

/// Reading and ageing out rollups; adding is [`Write::AddRollup`](super::Write::AddRollup).
///
/// Implementations must be safe to call concurrently.
pub trait RollupStore: Send + Sync + 'static {
    /// `job_id`'s buckets whose hour is in `from..=to`, earliest first.
    fn job_rollups(
        &self,
        job_id: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<RollupRecord>, StoreError>> + Send;

    /// Every job's buckets whose hour is in `from..=to`, in no particular order: what
    /// `GET /stats` merges. Read by hour, never by scanning every bucket.
    fn all_rollups(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<RollupRecord>, StoreError>> + Send;

    /// Removes every bucket whose hour is before `before`; returns how many it removed.
    fn clean_rollups(
        &self,
        before: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}
