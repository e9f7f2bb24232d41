//! Statistics from rollups: `GET /jobs/{jobId}/stats` and the window figures of `GET /stats`.
//!
//! Both read only the hourly rollup buckets of the window (never executions) and merge them here,
//! at read time: a job's hours into its figures, and every job's hours into the figures of all
//! jobs, so no single stored item counts every run. Across jobs, an hour that can no longer
//! change is merged once and kept as its summary ([`sundial_core::fleet_hour`]), so a week's
//! figures read 169 summaries rather than a bucket per job and hour. What a bucket holds and how it merges is
//! [`sundial_core::stats`].

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use sundial_core::fleet_hour::{is_sealed, FleetHour, WindowTotals};
use sundial_core::job::JobId;
use sundial_core::stats::{merge_all, series, top_jobs, Figures, Rollup, SeriesPoint, StatsWindow};

use super::{App, AppError};
use sundial_ports::cause::Cause;
use sundial_ports::store::{FleetHourRecord, RollupRecord, Store, StoreError};

/// How many jobs `GET /stats` names as the top failing and as the slowest.
pub const TOP_JOBS: usize = 10;

/// Among how many jobs with the longest mean duration `GET /stats` picks the slowest by p95.
pub(crate) const SLOWEST_CANDIDATES: usize = 3 * TOP_JOBS;

/// The most hours of every job's buckets one read holds at once while summarizing.
const SUMMARIZE_HOURS: i64 = 24;

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

/// A job's runs over the last 24 hours as the jobs list shows them: how many ran to an end of
/// their own and how many of those succeeded ([`Rollup::success_counts`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DaySuccess {
    /// Runs that succeeded.
    pub succeeded: u64,
    /// Runs that succeeded or were terminated.
    pub ended: u64,
}

impl DaySuccess {
    /// `succeeded / ended`; `None` when no run ended.
    pub fn rate(self) -> Option<f64> {
        (self.ended > 0).then(|| self.succeeded as f64 / self.ended as f64)
    }
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

    /// Each job's runs of the last 24 hours (the window `24h` of [`App::job_stats`]), in the
    /// order of `job_ids`: the jobs list's column, read from the jobs' own hourly buckets (a
    /// page of jobs, so a read per job, all at once) and never from executions. A job that does
    /// not exist has no runs.
    pub async fn day_success(&self, job_ids: &[&JobId]) -> Result<Vec<DaySuccess>, AppError> {
        let (from, to) = StatsWindow::Day.hours(self.now());
        let reads = job_ids
            .iter()
            .map(|id| self.store.job_rollups(id.as_str(), from, to));
        let mut out = Vec::with_capacity(job_ids.len());
        for records in futures_util::future::join_all(reads).await {
            let merged = merge_all(buckets(&records?).iter().map(|(_, r)| r));
            let (succeeded, ended) = merged.success_counts();
            out.push(DaySuccess { succeeded, ended });
        }
        Ok(out)
    }

    /// All jobs' figures over `window`, and the top failing and slowest jobs (`GET /stats`).
    ///
    /// Sealed hours are read from their fleet summaries ([`sundial_core::fleet_hour`]), written
    /// by the first read that needs them; the last hour or two from every job's bucket. The top
    /// failing jobs are ranked exactly from the summaries' totals; the slowest by p95 among the
    /// `SLOWEST_CANDIDATES` with the longest mean duration. The figures of every job named are
    /// its own buckets', exactly as `GET /jobs/{jobId}/stats` gives them.
    pub async fn fleet_stats(&self, window: StatsWindow) -> Result<FleetStats, AppError> {
        let now = self.now();
        let (from, to) = window.hours(now);
        let totals = self.window_totals(from, to, now).await?;
        let failing = totals.most_failing(TOP_JOBS);
        let candidates = totals.longest_running(SLOWEST_CANDIDATES);
        let mut figures: BTreeMap<String, Figures> = BTreeMap::new();
        for id in failing.iter().chain(&candidates) {
            if !figures.contains_key(id) {
                let records = self.store.job_rollups(id, from, to).await?;
                let merged = merge_all(buckets(&records).iter().map(|(_, r)| r));
                figures.insert(id.clone(), Figures::of(&merged));
            }
        }
        let (_, slowest) = top_jobs(&figures, TOP_JOBS);
        let named = |ids: Vec<String>| {
            ids.into_iter()
                .filter_map(|id| figures.get(&id).map(|f| (id.clone(), f.clone())))
                .collect()
        };
        Ok(FleetStats {
            all: window_stats(window, now, &totals.fleet_buckets()),
            top_failing: named(failing),
            slowest: named(slowest),
        })
    }

    /// The fleet's hours `from..=to` at `now`: each sealed hour from its summary, or from every
    /// job's bucket (then summarized and stored for the next read); the hours not yet sealed
    /// from the buckets.
    async fn window_totals(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<WindowTotals, AppError> {
        let mut totals = WindowTotals::default();
        let stored = self.store.fleet_hours(from, to).await?;
        let mut parts: BTreeMap<DateTime<Utc>, Vec<&str>> = BTreeMap::new();
        for record in &stored {
            parts
                .entry(record.hour)
                .or_default()
                .push(record.body.as_str());
        }
        let mut summarized = BTreeSet::new();
        for (hour, texts) in parts {
            let added = is_sealed(hour, now)
                && totals
                    .add_summary(hour, &texts)
                    .map_err(|e| StoreError::corrupt(e.to_string(), Some(Cause::new(e))))?;
            if added {
                summarized.insert(hour);
            }
        }
        let mut unread: Vec<DateTime<Utc>> = Vec::new();
        let mut hour = from;
        while hour <= to {
            if !summarized.contains(&hour) {
                unread.push(hour);
            }
            hour += Duration::hours(1);
        }
        // Contiguous runs of unread hours, a day at most at once, so that summarizing a month
        // for the first time never holds a month of every job's buckets.
        let mut runs: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        for hour in unread {
            match runs.last_mut() {
                Some((first, last))
                    if *last + Duration::hours(1) == hour
                        && hour - *first < Duration::hours(SUMMARIZE_HOURS) =>
                {
                    *last = hour;
                }
                _ => runs.push((hour, hour)),
            }
        }
        for (first, last) in runs {
            let records = self.store.all_rollups(first, last).await?;
            let mut by_hour: BTreeMap<DateTime<Utc>, Vec<(&str, Rollup)>> = BTreeMap::new();
            for record in &records {
                let rollup = Rollup::from_counters(&record.counters);
                totals.add_bucket(record.hour, &record.job_id, &rollup);
                by_hour
                    .entry(record.hour)
                    .or_default()
                    .push((record.job_id.as_str(), rollup));
            }
            let mut sealed = Vec::new();
            let mut hour = first;
            while hour <= last && is_sealed(hour, now) {
                let buckets = by_hour.get(&hour).map(Vec::as_slice).unwrap_or_default();
                let summary = FleetHour::of(hour, buckets.iter().map(|(id, r)| (*id, r)));
                for (part, body) in summary.encode().into_iter().enumerate() {
                    sealed.push(FleetHourRecord {
                        hour,
                        part: u32::try_from(part).unwrap_or(u32::MAX),
                        body,
                    });
                }
                hour += Duration::hours(1);
            }
            if !sealed.is_empty() {
                // A summary not stored costs the next read the buckets again, nothing more.
                if let Err(e) = self.store.put_fleet_hours(&sealed).await {
                    tracing::warn!(error = %e, "storing fleet hour summaries");
                }
            }
        }
        Ok(totals)
    }
}
