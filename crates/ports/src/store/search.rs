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

use super::{ExecutionRecord, JobRecord, LabelSelector};

/// What started a run, from its `scheduledById` (and, for `parent`, its job's parent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunSource {
    /// A fire of the job's schedule (`scheduledById` is the job id).
    Schedule,
    /// A manual run: `POST /jobs/{id}/trigger` (`trigger:…`) or update-and-run (`update:…`).
    Trigger,
    /// A backfill (`backfill:…`).
    Backfill,
    /// A run of a child job: one whose job names a parent job (`parentJob`), whatever fired it.
    Parent,
}

impl RunSource {
    /// Every source, in the order the API documents them.
    pub const ALL: [RunSource; 4] = [
        RunSource::Schedule,
        RunSource::Trigger,
        RunSource::Backfill,
        RunSource::Parent,
    ];

    /// The name the API uses (`source=backfill`).
    pub fn name(self) -> &'static str {
        match self {
            RunSource::Schedule => "schedule",
            RunSource::Trigger => "trigger",
            RunSource::Backfill => "backfill",
            RunSource::Parent => "parent",
        }
    }

    /// The source named `name`, if there is one.
    pub fn parse(name: &str) -> Option<RunSource> {
        RunSource::ALL.into_iter().find(|s| s.name() == name)
    }

    /// What fired a run (`schedule`, `trigger` or `backfill`) from its `scheduledById` and job
    /// id; `None` for anything else. [`RunSource::Parent`] is not a firing but a kind of job.
    pub fn of_fire(scheduled_by_id: &str, job_id: &str) -> Option<RunSource> {
        if scheduled_by_id == job_id {
            return Some(RunSource::Schedule);
        }
        match scheduled_by_id.split_once(':').map(|(kind, _)| kind) {
            Some("trigger" | "console" | "update") => Some(RunSource::Trigger),
            Some("backfill") => Some(RunSource::Backfill),
            _ => None,
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
    pub source: Option<RunSource>,
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

    /// What fired the run (`document.scheduledById`): see [`RunSource::of_fire`].
    pub fn fired_by(&self) -> Option<RunSource> {
        let by = self.document.get("scheduledById")?.as_str()?;
        RunSource::of_fire(by, &self.job_id)
    }

    /// Whether the run is from `source`.
    pub fn is_from(&self, source: RunSource) -> bool {
        match source {
            RunSource::Parent => self.parent_job.is_some(),
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
        assert_eq!(
            RunSource::of_fire("job-a", "job-a"),
            Some(RunSource::Schedule)
        );
        assert_eq!(
            RunSource::of_fire("trigger:x", "job-a"),
            Some(RunSource::Trigger)
        );
        assert_eq!(
            RunSource::of_fire("update:x", "job-a"),
            Some(RunSource::Trigger)
        );
        assert_eq!(
            RunSource::of_fire("console:x", "job-a"),
            Some(RunSource::Trigger)
        );
        assert_eq!(
            RunSource::of_fire("backfill:q1", "job-a"),
            Some(RunSource::Backfill)
        );
        assert_eq!(RunSource::of_fire("other", "job-a"), None);
        for s in RunSource::ALL {
            assert_eq!(RunSource::parse(s.name()), Some(s));
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
