//! Searching executions across jobs (`GET /executions`): by state, job, the job's labels and
//! creator, what started the run, and ranges of its scheduled and end times, newest first.
//!
//! The order is the run's scheduled time (`scheduledTime`, the nominal time), newest first, ties
//! broken by execution id, descending: a cursor names the last run of its page by both
//! ([`cursor::search`](super::cursor::search)), so the next page starts right after it whatever
//! was written meanwhile. Stores index the scheduled time (SQLite: `executions_by_scheduled`;
//! DynamoDB: the sharded keys-only `runs` index) and apply [`ExecutionQuery::matches`], the one
//! definition of what a query selects, to what the index returned.
//!
//! A store may answer a page shorter than the limit, even empty, with a cursor: DynamoDB reads at
//! most `limit` index entries per page and filters them after reading, so a selective filter
//! leaves pages short. Only a page without a cursor ends the listing.

use chrono::{DateTime, Utc};

use sundial_core::source::RunSource;

use super::{ExecutionRecord, JobRecord, LabelSelector};

/// Run search's `source` filter: the kinds of [what started a run](RunSource) it tells apart,
/// and `parent` (runs of child jobs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceFilter {
    /// A fire of the job's schedule.
    Schedule,
    /// A manual run: a program's trigger, the console's, or update-and-run's.
    Trigger,
    /// A backfill's run.
    Backfill,
    /// A run of a child job: one whose job names a parent job (`parentJob`), whatever fired it.
    Parent,
}

impl SourceFilter {
    /// Every filter, in the order the API documents them.
    pub const ALL: [SourceFilter; 4] = [
        SourceFilter::Schedule,
        SourceFilter::Trigger,
        SourceFilter::Backfill,
        SourceFilter::Parent,
    ];

    /// The name the API uses (`source=backfill`).
    pub fn name(self) -> &'static str {
        match self {
            SourceFilter::Schedule => "schedule",
            SourceFilter::Trigger => "trigger",
            SourceFilter::Backfill => "backfill",
            SourceFilter::Parent => "parent",
        }
    }

    /// The filter named `name`, if there is one.
    pub fn parse(name: &str) -> Option<SourceFilter> {
        SourceFilter::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The filter a run of `source` falls under (never `parent`, which is a kind of job).
    pub fn of(source: RunSource) -> SourceFilter {
        match source {
            RunSource::Schedule => SourceFilter::Schedule,
            RunSource::ProgramTrigger | RunSource::ConsoleTrigger | RunSource::Update => {
                SourceFilter::Trigger
            }
            RunSource::Backfill => SourceFilter::Backfill,
        }
    }
}

/// A time range: `since <= t < until`, either end open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeRange {
    /// Inclusive lower bound.
    pub since: Option<DateTime<Utc>>,
    /// Exclusive upper bound.
    pub until: Option<DateTime<Utc>>,
}

impl TimeRange {
    /// Whether neither end is given.
    pub fn is_open(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    /// Whether `at` is in the range; a missing time is in it only when the range is open.
    pub fn contains(&self, at: Option<DateTime<Utc>>) -> bool {
        match at {
            None => self.is_open(),
            Some(at) => {
                self.since.is_none_or(|since| at >= since)
                    && self.until.is_none_or(|until| at < until)
            }
        }
    }
}

/// The filters of `GET /executions`; all given filters must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecutionQuery {
    /// The run's state must be one of these (`Failed`, `TimedOut`…); all states when empty.
    pub states: Vec<String>,
    /// Exact job id.
    pub job_id: Option<String>,
    /// Labels the run's job must have, every one; a run whose job is gone has none.
    pub labels: Vec<LabelSelector>,
    /// The run's job's creator; a run whose job is gone has none.
    pub creator: Option<String>,
    /// What started the run.
    pub source: Option<SourceFilter>,
    /// Range of the run's scheduled time (`scheduledTime`).
    pub scheduled: TimeRange,
    /// Range of the run's end (`finishedAt`); a run not yet ended is outside every closed range.
    pub ended: TimeRange,
}

impl ExecutionQuery {
    /// Whether the query needs the run's job (its labels or creator).
    pub fn needs_job(&self) -> bool {
        !self.labels.is_empty() || self.creator.is_some()
    }

    /// Whether `execution`, whose job is `job` (`None` when gone or not read), matches every filter.
    pub fn matches(&self, execution: &ExecutionRecord, job: Option<&JobRecord>) -> bool {
        let job_ok = !self.needs_job()
            || job.is_some_and(|job| {
                job.job_id == execution.job_id
                    && self.creator.as_ref().is_none_or(|c| &job.creator == c)
                    && (self.labels.is_empty() || {
                        let labels = job.labels();
                        self.labels
                            .iter()
                            .all(|s| labels.get(&s.key) == Some(&s.value))
                    })
            });
        job_ok
            && (self.states.is_empty() || self.states.contains(&execution.state))
            && self.job_id.as_ref().is_none_or(|j| j == &execution.job_id)
            && self.source.is_none_or(|s| execution.is_from(s))
            && self.scheduled.contains(execution.scheduled_at())
            && self.ended.contains(execution.ended_at())
    }
}

impl ExecutionRecord {
    /// The run's scheduled time (`document.scheduledTime`), the search order.
    pub fn scheduled_at(&self) -> Option<DateTime<Utc>> {
        self.time("scheduledTime")
    }

    /// When the run reached a final state (`document.finishedAt`).
    pub fn ended_at(&self) -> Option<DateTime<Utc>> {
        self.time("finishedAt")
    }

    /// What fired the run, from `document.scheduledById` ([`RunSource::of_scheduled_by`]).
    pub fn fired_by(&self) -> Option<SourceFilter> {
        let by = self.document.get("scheduledById")?.as_str()?;
        Some(SourceFilter::of(RunSource::of_scheduled_by(
            by,
            &self.job_id,
        )))
    }

    /// Whether the run is from `source`.
    pub fn is_from(&self, source: SourceFilter) -> bool {
        match source {
            SourceFilter::Parent => self.parent_job.is_some(),
            fired => self.fired_by() == Some(fired),
        }
    }

    /// The run's place in the search order: scheduled time in ms (the smallest when missing).
    pub fn search_key(&self) -> (i64, &str) {
        (
            self.scheduled_at()
                .map_or(i64::MIN, |at| at.timestamp_millis()),
            &self.execution_id,
        )
    }

    fn time(&self, field: &str) -> Option<DateTime<Utc>> {
        let text = self.document.get(field)?.as_str()?;
        DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|at| at.with_timezone(&Utc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_come_from_scheduled_by_id() {
        for (by, filter) in [
            ("job-a", SourceFilter::Schedule),
            ("trigger:x", SourceFilter::Trigger),
            ("update:x", SourceFilter::Trigger),
            ("console:x", SourceFilter::Trigger),
            ("backfill:q1", SourceFilter::Backfill),
        ] {
            assert_eq!(
                SourceFilter::of(RunSource::of_scheduled_by(by, "job-a")),
                filter,
                "{by}"
            );
        }
        for s in SourceFilter::ALL {
            assert_eq!(SourceFilter::parse(s.name()), Some(s));
        }
    }

    #[test]
    fn ranges_are_half_open() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let range = TimeRange {
            since: Some(t("2024-01-01T00:00:00Z")),
            until: Some(t("2024-01-02T00:00:00Z")),
        };
        assert!(range.contains(Some(t("2024-01-01T00:00:00Z"))));
        assert!(!range.contains(Some(t("2024-01-02T00:00:00Z"))));
        assert!(!range.contains(None));
        assert!(TimeRange::default().contains(None));
    }
}
