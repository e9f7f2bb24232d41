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

/// One part of a sealed hour's summary across all jobs ([`sundial_core::fleet_hour`]): text the
/// core writes and reads, opaque to the store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetHourRecord {
    /// The start of the hour (whole hours, UTC).
    pub hour: DateTime<Utc>,
    /// The part's number, from 0.
    pub part: u32,
    /// The part's text (at most a few hundred kB).
    pub body: String,
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

    /// Every part of the fleet summaries of hours in `from..=to`, in no particular order.
    fn fleet_hours(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> impl Future<Output = Result<Vec<FleetHourRecord>, StoreError>> + Send;

    /// Stores the parts of a sealed hour's fleet summary, each replacing the part of that hour
    /// and number if there is one (readers that summarize the same hour at once write the same
    /// text). Not atomic across parts: a reader takes an hour with a part missing as not
    /// summarized.
    fn put_fleet_hours(
        &self,
        parts: &[FleetHourRecord],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Removes every bucket and fleet summary whose hour is before `before`; returns how many
    /// buckets it removed.
    fn clean_rollups(
        &self,
        before: DateTime<Utc>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}
