//! Statistics from rollups: `GET /jobs/{jobId}/stats` and the window figures of `GET /stats`.
//!
//! Both read only the hourly rollup buckets of the window (never executions) and merge them here,
//! at read time: a job's hours into its figures, and every job's hours into the figures of all
//! jobs, so no single stored item counts every run. What a bucket holds and how it merges is
//! [`sundial_core::stats`].

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sundial_core::job::JobId;
use sundial_core::stats::{merge_all, series, top_jobs, Figures, Rollup, SeriesPoint, StatsWindow};

use super::{App, AppError};
use crate::ports::store::{RollupRecord, Store};

/// How many jobs `GET /stats` names as the top failing and as the slowest.
pub const TOP_JOBS: usize = 10;

/// `GET /jobs/{jobId}/stats`.
#[derive(Clone, Debug, PartialEq)]
pub struct JobStats {
    /// The window asked for.
    pub window: StatsWindow,
    /// The start of the first hour bucket read.
    pub from: DateTime<Utc>,
    /// When the figures were read.
    pub to: DateTime<Utc>,
    /// The window's figures.
    pub figures: Figures,
    /// The window's time series.
    pub series: Vec<SeriesPoint>,
}

/// The window figures of `GET /stats`: all jobs, and the jobs that stand out.
#[derive(Clone, Debug, PartialEq)]
pub struct FleetStats {
    /// The window, its figures and series across all jobs.
    pub all: JobStats,
    /// The jobs with the most failed runs (at most [`TOP_JOBS`]), with their figures.
    pub top_failing: Vec<(String, Figures)>,
    /// The jobs with the highest p95 duration (at most [`TOP_JOBS`]), with their figures.
    pub slowest: Vec<(String, Figures)>,
}

fn buckets(records: &[RollupRecord]) -> Vec<(DateTime<Utc>, Rollup)> {
    records
        .iter()
        .map(|r| (r.hour, Rollup::from_counters(&r.counters)))
        .collect()
}

fn window_stats(
    window: StatsWindow,
    now: DateTime<Utc>,
    hours: &[(DateTime<Utc>, Rollup)],
) -> JobStats {
    JobStats {
        window,
        from: window.hours(now).0,
        to: now,
        figures: Figures::of(&merge_all(hours.iter().map(|(_, r)| r))),
        series: series(window, now, hours),
    }
}

impl<S: Store> App<S> {
    /// A job's figures over `window` (`GET /jobs/{jobId}/stats`); `NotFound` if the job does not
    /// exist.
    pub async fn job_stats(
        &self,
        job_id: &JobId,
        window: StatsWindow,
    ) -> Result<JobStats, AppError> {
        self.load(job_id).await?;
        let now = self.now();
        let (from, to) = window.hours(now);
        let records = self.store.job_rollups(job_id.as_str(), from, to).await?;
        Ok(window_stats(window, now, &buckets(&records)))
    }

    /// All jobs' figures over `window`, and the top failing and slowest jobs (`GET /stats`).
    pub async fn fleet_stats(&self, window: StatsWindow) -> Result<FleetStats, AppError> {
        let now = self.now();
        let (from, to) = window.hours(now);
        let records = self.store.all_rollups(from, to).await?;
        let hours = buckets(&records);
        let mut per_job: BTreeMap<String, Rollup> = BTreeMap::new();
        for (record, (_, rollup)) in records.iter().zip(&hours) {
            per_job
                .entry(record.job_id.clone())
                .or_default()
                .merge(rollup);
        }
        let figures: BTreeMap<String, Figures> = per_job
            .iter()
            .map(|(id, rollup)| (id.clone(), Figures::of(rollup)))
            .collect();
        let (failing, slowest) = top_jobs(&figures, TOP_JOBS);
        let named = |ids: Vec<String>| {
            ids.into_iter()
                .filter_map(|id| figures.get(&id).map(|f| (id.clone(), f.clone())))
                .collect()
        };
        Ok(FleetStats {
            all: window_stats(window, now, &hours),
            top_failing: named(failing),
            slowest: named(slowest),
        })
    }
}
