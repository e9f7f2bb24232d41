//! A sealed hour across all jobs: what `GET /stats` reads instead of every job's bucket of that
//! hour once no run can add to it any more.
//!
//! A bucket is the hour an outcome was recorded in ([`crate::stats`]), so an hour stops changing
//! once it has passed; [`is_sealed`] waits [`SEAL_AFTER`] past its end for writes that were on
//! their way. The first reader of a window that finds a sealed hour without its summary merges
//! that hour's buckets (as it always did) and stores the result; every later reader reads one
//! summary per hour instead of one bucket per job and hour. Figures stay merged at read time: no
//! stored item is added to by every run, so none is hot.
//!
//! A summary holds the hour's fleet [`Rollup`] (all figures and the time series) and, per job
//! that recorded something, the few totals the top lists rank by ([`JobTotals`]): exact counts of
//! succeeded and failed runs, and the count and sum of the durations (the sum read from the
//! histogram's buckets, so within [`crate::stats::RELATIVE_ERROR`]). It is written as text in
//! parts of at most [`JOBS_PER_PART`] jobs (a DynamoDB item holds 400 KB), and only a complete
//! set of parts is read back ([`WindowTotals::add_summary`]).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Duration, Utc};

use crate::execution::ExecutionState;
use crate::stats::{LogHistogram, Rollup};

/// How long after an hour ends it is taken as sealed: a write recorded in the hour and still on
/// its way (a store's retries) has this long to land.
pub const SEAL_AFTER: Duration = Duration::minutes(10);

/// The most jobs one part of a summary lists (each at most about 200 bytes of text).
pub const JOBS_PER_PART: usize = 1000;

/// What a summary's text starts with: a name and the format's version.
const MAGIC: &str = "sundial-fleet-hour 1";

/// Whether the hour starting at `hour` is sealed at `now`: it ended [`SEAL_AFTER`] ago.
pub fn is_sealed(hour: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    hour + Duration::hours(1) + SEAL_AFTER <= now
}

/// One job's totals over some hours: what the top failing and slowest jobs are ranked by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobTotals {
    /// Runs that ended `Succeeded`.
    pub succeeded: u64,
    /// Runs that ended `Terminated`.
    pub failed: u64,
    /// Runs whose duration was recorded.
    pub durations: u64,
    /// The sum of those durations in milliseconds, from the histogram's bucket values.
    pub duration_ms_sum: u64,
}

impl JobTotals {
    /// The totals of one job's bucket (or merged buckets).
    pub fn of(rollup: &Rollup) -> JobTotals {
        JobTotals {
            succeeded: rollup.runs_in(ExecutionState::Succeeded),
            failed: rollup.runs_in(ExecutionState::Terminated),
            durations: rollup.duration.count(),
            duration_ms_sum: histogram_sum(&rollup.duration),
        }
    }

    /// Adds `other`'s totals.
    pub fn merge(&mut self, other: &JobTotals) {
        self.succeeded = self.succeeded.saturating_add(other.succeeded);
        self.failed = self.failed.saturating_add(other.failed);
        self.durations = self.durations.saturating_add(other.durations);
        self.duration_ms_sum = self.duration_ms_sum.saturating_add(other.duration_ms_sum);
    }

    /// The mean duration in milliseconds; `None` when none was recorded.
    pub fn mean_duration_ms(&self) -> Option<f64> {
        (self.durations > 0).then(|| self.duration_ms_sum as f64 / self.durations as f64)
    }

    fn is_empty(&self) -> bool {
        *self == JobTotals::default()
    }
}

fn histogram_sum(histogram: &LogHistogram) -> u64 {
    let sum: f64 = histogram
        .buckets()
        .map(|(i, n)| LogHistogram::value_of(i) * n as f64)
        .sum();
    // Saturating float-to-int conversion: a sum past u64::MAX reads as u64::MAX.
    sum.round() as u64
}

/// One sealed hour across all jobs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetHour {
    /// The start of the hour.
    pub hour: DateTime<Utc>,
    /// Every job's bucket of the hour, merged.
    pub fleet: Rollup,
    /// Per job that recorded a run in the hour, its totals.
    pub jobs: BTreeMap<String, JobTotals>,
}

impl FleetHour {
    /// The summary of `hour` from its buckets, `(job id, bucket)`.
    pub fn of<'a>(
        hour: DateTime<Utc>,
        buckets: impl IntoIterator<Item = (&'a str, &'a Rollup)>,
    ) -> FleetHour {
        let mut summary = FleetHour {
            hour,
            ..FleetHour::default()
        };
        for (job_id, rollup) in buckets {
            summary.fleet.merge(rollup);
            let totals = JobTotals::of(rollup);
            if !totals.is_empty() {
                summary
                    .jobs
                    .entry(job_id.to_owned())
                    .or_default()
                    .merge(&totals);
            }
        }
        summary
    }

    /// The summary as the texts of its parts, in order: each names its number and the count of
    /// parts; the first also holds the fleet's counters. Job ids are the job id alphabet
    /// (`A–Z a–z 0–9 _ . -`), so they never hold the separators.
    pub fn encode(&self) -> Vec<String> {
        let jobs: Vec<(&String, &JobTotals)> = self.jobs.iter().collect();
        let chunks: Vec<&[(&String, &JobTotals)]> = if jobs.is_empty() {
            vec![&[]]
        } else {
            jobs.chunks(JOBS_PER_PART).collect()
        };
        let parts = chunks.len();
        chunks
            .into_iter()
            .enumerate()
            .map(|(part, chunk)| {
                let mut text = format!("{MAGIC} {part} {parts}\n");
                if part == 0 {
                    let counters: Vec<String> = self
                        .fleet
                        .to_counters()
                        .into_iter()
                        .map(|(name, n)| format!("{name}={n}"))
                        .collect();
                    text.push_str(&counters.join(","));
                    text.push('\n');
                }
                for (id, t) in chunk {
                    text.push_str(&format!(
                        "{id} {} {} {} {}\n",
                        t.succeeded, t.failed, t.durations, t.duration_ms_sum
                    ));
                }
                text
            })
            .collect()
    }
}

/// A summary's text that cannot be read: a bug or a foreign write, reported as the store's
/// corruption by the caller.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("fleet summary of {hour} is unreadable: {why}")]
pub struct SummaryError {
    /// The hour.
    pub hour: DateTime<Utc>,
    /// What is wrong.
    pub why: String,
}

/// A window's fleet figures as they are read: per hour the fleet's bucket, and per job its totals
/// over every hour added. Summaries are added without building a [`FleetHour`] for each, so a
/// week of a large fleet's summaries is read in one pass over their lines.
#[derive(Clone, Debug, Default)]
pub struct WindowTotals {
    /// Per hour, every job's buckets merged.
    pub hours: BTreeMap<DateTime<Utc>, Rollup>,
    /// Per job, its totals over the hours added.
    pub jobs: HashMap<String, JobTotals>,
}

impl WindowTotals {
    /// Adds one job's bucket of `hour` (an hour read from the buckets, not sealed or not yet
    /// summarized).
    pub fn add_bucket(&mut self, hour: DateTime<Utc>, job_id: &str, rollup: &Rollup) {
        self.hours.entry(hour).or_default().merge(rollup);
        let totals = JobTotals::of(rollup);
        if !totals.is_empty() {
            self.add_job(job_id, &totals);
        }
    }

    fn add_job(&mut self, job_id: &str, totals: &JobTotals) {
        match self.jobs.get_mut(job_id) {
            Some(at) => at.merge(totals),
            None => {
                self.jobs.insert(job_id.to_owned(), *totals);
            }
        }
    }

    /// Adds the summary of `hour` from the texts of its parts (any order). `Ok(false)`, adding
    /// nothing, when a part is missing (a writer stopped between parts): the caller then reads
    /// the hour's buckets and writes the summary again.
    pub fn add_summary(
        &mut self,
        hour: DateTime<Utc>,
        parts: &[&str],
    ) -> Result<bool, SummaryError> {
        let bad = |why: String| SummaryError { hour, why };
        let mut by_number: BTreeMap<usize, &str> = BTreeMap::new();
        let mut expected = None;
        for text in parts {
            let (header, body) = text.split_once('\n').unwrap_or((text, ""));
            let fields: Vec<&str> = header.rsplitn(3, ' ').collect();
            let (count, number, magic) = match fields.as_slice() {
                [count, number, magic] => (*count, *number, *magic),
                _ => return Err(bad(format!("header {header:?}"))),
            };
            if magic != MAGIC {
                return Err(bad(format!("header {header:?}")));
            }
            let count: usize = count
                .parse()
                .map_err(|_| bad(format!("part count {count:?}")))?;
            let number: usize = number
                .parse()
                .map_err(|_| bad(format!("part number {number:?}")))?;
            if *expected.get_or_insert(count) != count || number >= count {
                return Err(bad(format!("part {number} of {count}")));
            }
            by_number.insert(number, body);
        }
        match expected {
            Some(count) if by_number.len() == count => {}
            _ => return Ok(false),
        }
        let mut fleet = Rollup::default();
        let mut jobs: Vec<(&str, JobTotals)> = Vec::new();
        for (number, body) in by_number {
            let mut lines = body.lines();
            if number == 0 {
                let counters = lines.next().unwrap_or("");
                fleet = Rollup::from_counters(&parse_counters(counters).map_err(bad)?);
            }
            for line in lines {
                jobs.push(parse_job(line).map_err(bad)?);
            }
        }
        self.hours.entry(hour).or_default().merge(&fleet);
        for (id, totals) in jobs {
            self.add_job(id, &totals);
        }
        Ok(true)
    }

    /// The fleet's buckets, earliest first.
    pub fn fleet_buckets(&self) -> Vec<(DateTime<Utc>, Rollup)> {
        self.hours
            .iter()
            .map(|(hour, rollup)| (*hour, rollup.clone()))
            .collect()
    }

    /// The `n` jobs with the most failed runs (then the lowest success rate, then by id), only
    /// jobs with a failure: the same order as [`crate::stats::top_jobs`], exactly, from totals.
    pub fn most_failing(&self, n: usize) -> Vec<String> {
        let mut failing: Vec<(&String, &JobTotals)> =
            self.jobs.iter().filter(|(_, t)| t.failed > 0).collect();
        let rate = |t: &JobTotals| t.succeeded as f64 / (t.succeeded + t.failed) as f64;
        failing.sort_by(|(a, x), (b, y)| {
            y.failed
                .cmp(&x.failed)
                .then_with(|| rate(x).total_cmp(&rate(y)))
                .then_with(|| a.cmp(b))
        });
        failing
            .into_iter()
            .take(n)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The `n` jobs with the highest mean duration (then by id): the candidates among which the
    /// slowest by p95 are chosen from their own buckets.
    pub fn longest_running(&self, n: usize) -> Vec<String> {
        let mut running: Vec<(&String, f64)> = self
            .jobs
            .iter()
            .filter_map(|(id, t)| t.mean_duration_ms().map(|m| (id, m)))
            .collect();
        running.sort_by(|(a, x), (b, y)| y.total_cmp(x).then_with(|| a.cmp(b)));
        running
            .into_iter()
            .take(n)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

fn parse_counters(text: &str) -> Result<BTreeMap<String, u64>, String> {
    text.split(',')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, n) = pair
                .split_once('=')
                .ok_or_else(|| format!("counter {pair:?}"))?;
            let n = n.parse().map_err(|_| format!("counter {pair:?}"))?;
            Ok((name.to_owned(), n))
        })
        .collect()
}

fn parse_job(line: &str) -> Result<(&str, JobTotals), String> {
    let mut fields = line.split(' ');
    let id = fields.next().filter(|id| !id.is_empty());
    let mut number = || -> Option<u64> { fields.next()?.parse().ok() };
    match (id, number(), number(), number(), number()) {
        (Some(id), Some(succeeded), Some(failed), Some(durations), Some(duration_ms_sum)) => Ok((
            id,
            JobTotals {
                succeeded,
                failed,
                durations,
                duration_ms_sum,
            },
        )),
        _ => Err(format!("job line {line:?}")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::stats::{merge_all, top_jobs, Figures};
    use chrono::TimeZone;

    fn hour() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 10, 0, 0).unwrap()
    }

    fn bucket(succeeded: u64, failed: u64, duration_ms: u64) -> Rollup {
        let mut r = Rollup::default();
        if succeeded > 0 {
            r.states.insert("Succeeded".into(), succeeded);
        }
        if failed > 0 {
            r.states.insert("Terminated".into(), failed);
        }
        for _ in 0..succeeded + failed {
            r.duration.record(duration_ms);
            r.lag.record(3);
        }
        r.minutes.insert(7, succeeded + failed);
        r
    }

    #[test]
    fn sealed_only_after_the_grace() {
        let end = hour() + Duration::hours(1);
        assert!(!is_sealed(hour(), end));
        assert!(!is_sealed(hour(), end + SEAL_AFTER - Duration::seconds(1)));
        assert!(is_sealed(hour(), end + SEAL_AFTER));
    }

    #[test]
    fn a_summary_reads_back_what_its_buckets_add_up_to() {
        let buckets: Vec<(String, Rollup)> = (0..2500)
            .map(|k| (format!("job-{k:05}"), bucket(k % 7, k % 3, 10 * k)))
            .collect();
        let summary = FleetHour::of(hour(), buckets.iter().map(|(id, r)| (id.as_str(), r)));
        let parts = summary.encode();
        assert_eq!(parts.len(), 3, "2,500 jobs in parts of {JOBS_PER_PART}");
        let mut read = WindowTotals::default();
        // Parts in any order.
        let texts: Vec<&str> = parts.iter().rev().map(String::as_str).collect();
        assert!(read.add_summary(hour(), &texts).unwrap());
        let mut direct = WindowTotals::default();
        for (id, r) in &buckets {
            direct.add_bucket(hour(), id, r);
        }
        assert_eq!(read.hours, direct.hours);
        assert_eq!(read.jobs, direct.jobs);
        assert_eq!(
            read.hours[&hour()],
            merge_all(buckets.iter().map(|(_, r)| r))
        );
    }

    #[test]
    fn a_missing_part_reads_as_absent_and_a_bad_text_as_an_error() {
        let buckets: Vec<(String, Rollup)> = (0..1500)
            .map(|k| (format!("j{k}"), bucket(1, 0, 5)))
            .collect();
        let parts = FleetHour::of(hour(), buckets.iter().map(|(id, r)| (id.as_str(), r))).encode();
        let mut read = WindowTotals::default();
        assert!(!read.add_summary(hour(), &[parts[1].as_str()]).unwrap());
        assert!(!read.add_summary(hour(), &[]).unwrap());
        assert!(read.hours.is_empty() && read.jobs.is_empty());
        for bad in ["nonsense", "sundial-fleet-hour 1 0 1\ns.Succeeded=x\n"] {
            assert!(read.add_summary(hour(), &[bad]).is_err(), "{bad}");
        }
        // An hour with no job still has one part.
        let empty = FleetHour::of(hour(), []).encode();
        assert_eq!(empty.len(), 1);
        assert!(read.add_summary(hour(), &[empty[0].as_str()]).unwrap());
    }

    #[test]
    fn most_failing_ranks_as_top_jobs_does() {
        let buckets: Vec<(String, Rollup)> = (0..60)
            .map(|k| (format!("j{k:02}"), bucket(k % 5, k % 4, 100)))
            .collect();
        let mut totals = WindowTotals::default();
        let mut figures = BTreeMap::new();
        for (id, r) in &buckets {
            totals.add_bucket(hour(), id, r);
            figures.insert(id.clone(), Figures::of(r));
        }
        let (failing, _) = top_jobs(&figures, 10);
        assert_eq!(totals.most_failing(10), failing);
    }

    #[test]
    fn longest_running_ranks_by_mean_duration() {
        let mut totals = WindowTotals::default();
        totals.add_bucket(hour(), "short", &bucket(3, 0, 10));
        totals.add_bucket(hour(), "long", &bucket(1, 0, 5000));
        totals.add_bucket(
            hour(),
            "none",
            &Rollup::not_run(crate::stats::NotRun::Missed, 4),
        );
        assert_eq!(totals.longest_running(5), vec!["long", "short"]);
        assert!(!totals.jobs.contains_key("none"));
    }
}
