//! The coming fires of one job, and of many jobs merged into one timeline in time order.
//!
//! A job's coming fires start after the last fire it planned (or its creation) and after `now`,
//! with its jitter applied, and stop at its `remainingActions`; a paused or triggered-only job has
//! none. The timeline merges the jobs' fires by start time up to a horizon and a budget, so a
//! fleet of every-second jobs costs the budget, not a day of fires per job. Each fire says
//! whether its zone's UTC offset changed since the job's previous fire (or since `now`, for its
//! first): a daylight-saving transition between the two.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use chrono::{DateTime, FixedOffset, Offset, TimeZone, Utc};
use chrono_tz::Tz;

use crate::job::{Job, When};
use crate::spec::{FireTime, Schedule};

/// A job's coming fires, soonest first ([`coming_fires`]).
pub struct ComingFires<'a> {
    job_id: &'a str,
    schedule: Option<&'a Schedule>,
    after: DateTime<Utc>,
    remaining: Option<u64>,
}

/// `job`'s fires after `now`, soonest first: none for a paused or triggered-only job, and no more
/// than its remaining actions.
pub fn coming_fires(job: &Job, now: DateTime<Utc>) -> ComingFires<'_> {
    let schedule = match job.definition.when() {
        When::Scheduled(schedule) if job.definition.active() => Some(schedule),
        _ => None,
    };
    let created = job.created_at - chrono::Duration::seconds(1);
    let after = job
        .state
        .last_scheduled_time
        .map_or(created, |t| t.max(created))
        .max(now);
    ComingFires {
        job_id: job.definition.job_id().as_str(),
        schedule,
        after,
        remaining: job.state.remaining_actions,
    }
}

impl Iterator for ComingFires<'_> {
    type Item = FireTime;

    fn next(&mut self) -> Option<FireTime> {
        if self.remaining == Some(0) {
            return None;
        }
        let fire = self.schedule?.fire_after(self.after, self.job_id)?;
        self.after = fire.nominal;
        self.remaining = self.remaining.map(|n| n - 1);
        Some(fire)
    }
}

/// One fire of a [`Timeline`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineFire {
    /// The job's index in the slice given to [`timeline`].
    pub job: usize,
    /// The fire's nominal and actual (jittered) times.
    pub time: FireTime,
    /// The job zone's UTC offsets before and after, when they differ from the job's previous
    /// fire (or from `now`, for its first fire).
    pub offset_change: Option<(FixedOffset, FixedOffset)>,
}

/// The merged coming fires of many jobs ([`timeline`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// Fires by actual time (ties by job order), every one before `complete_until`.
    pub fires: Vec<TimelineFire>,
    /// Every fire of the jobs before this time is in `fires`: the horizon asked for, or earlier
    /// when the budget ran out (the start time of the first fire left out).
    pub complete_until: DateTime<Utc>,
    /// Whether the budget ran out before the horizon.
    pub cut_by_budget: bool,
}

/// The UTC offset of `zone` at `time`.
pub fn offset_at(zone: Tz, time: DateTime<Utc>) -> FixedOffset {
    zone.offset_from_utc_datetime(&time.naive_utc()).fix()
}

/// The fires of `jobs` starting after `now` and before `until`, soonest first, at most `budget` of
/// them. Work is proportional to the fires returned and the number of jobs, never to the fires
/// the jobs have past the budget.
pub fn timeline(jobs: &[Job], now: DateTime<Utc>, until: DateTime<Utc>, budget: usize) -> Timeline {
    let mut sources: Vec<(ComingFires<'_>, Tz, FixedOffset)> = jobs
        .iter()
        .map(|job| {
            let zone = match job.definition.when() {
                When::Scheduled(schedule) => schedule.time_zone(),
                When::TriggeredOnly => Tz::UTC,
            };
            (coming_fires(job, now), zone, offset_at(zone, now))
        })
        .collect();
    let mut heap = BinaryHeap::new();
    for (index, (fires, _, _)) in sources.iter_mut().enumerate() {
        if let Some(fire) = fires.next() {
            heap.push(Reverse((fire.due, index, fire.nominal)));
        }
    }
    let mut listed = Vec::new();
    let mut complete_until = until;
    let mut cut_by_budget = false;
    while let Some(&Reverse((actual, index, nominal))) = heap.peek() {
        if actual >= until {
            break;
        }
        if listed.len() >= budget {
            complete_until = actual;
            cut_by_budget = true;
            break;
        }
        heap.pop();
        let (fires, zone, previous) = &mut sources[index];
        let offset = offset_at(*zone, actual);
        let offset_change = (offset != *previous).then_some((*previous, offset));
        *previous = offset;
        listed.push(TimelineFire {
            job: index,
            time: FireTime {
                nominal,
                due: actual,
            },
            offset_change,
        });
        if let Some(fire) = fires.next() {
            heap.push(Reverse((fire.due, index, fire.nominal)));
        }
    }
    Timeline {
        fires: listed,
        complete_until,
        cut_by_budget,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobDefinition, JobId};
    use serde_json::{json, Value};

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .expect("test time")
    }

    fn definition(id: &str, schedule: Value, active: u8, created: &str) -> JobDefinition {
        let body = json!({
            "jobName": id, "creator": "c", "creatorName": "C", "active": active,
            "schedule": schedule,
            "request": [{"method": "GET", "url": "http://127.0.0.1:9/x"}],
        });
        let id = JobId::parse(id).expect("valid test id");
        JobDefinition::parse(&id, &body, at(created)).expect("valid test job")
    }

    fn job(id: &str, schedule: Value, created: &str) -> Job {
        Job::new(definition(id, schedule, 1, created))
    }

    #[test]
    fn fires_of_several_jobs_come_merged_in_time_order_up_to_the_horizon() {
        let now = at("2026-01-01T00:00:00Z");
        let jobs = [
            job("a", json!({"intervals": ["20m"]}), "2025-12-31T23:59:30Z"),
            job("b", json!({"cron": ["15 * * * *"]}), "2025-12-31T23:59:30Z"),
        ];
        let line = timeline(&jobs, now, at("2026-01-01T01:00:00Z"), 100);
        let got: Vec<(usize, String)> = line
            .fires
            .iter()
            .map(|f| (f.job, f.time.due.format("%H:%M").to_string()))
            .collect();
        // Intervals count from the epoch; the horizon (01:00) is not included.
        let want: Vec<(usize, String)> = [(1, "00:15"), (0, "00:20"), (0, "00:40")]
            .into_iter()
            .map(|(j, t)| (j, t.to_string()))
            .collect();
        assert_eq!(got, want);
        assert!(!line.cut_by_budget);
        assert_eq!(line.complete_until, at("2026-01-01T01:00:00Z"));
    }

    #[test]
    fn the_budget_cuts_the_timeline_and_says_where() {
        let now = at("2026-01-01T00:00:00Z");
        let jobs = [job(
            "every-second",
            json!({"intervals": ["1s"]}),
            "2025-12-31T23:59:59Z",
        )];
        let line = timeline(&jobs, now, at("2026-01-02T00:00:00Z"), 10);
        assert_eq!(line.fires.len(), 10);
        assert!(line.cut_by_budget);
        assert!(line.fires.iter().all(|f| f.time.due < line.complete_until));
        assert_eq!(
            line.complete_until,
            line.fires[9].time.due + chrono::Duration::seconds(1)
        );
    }

    #[test]
    fn a_daylight_saving_change_is_marked_on_the_first_fire_after_it() {
        let now = at("2026-03-07T12:00:00Z");
        let jobs = [job(
            "ny",
            json!({"cron": ["0 9 * * *"], "timeZone": "America/New_York"}),
            "2026-03-01T00:00:00Z",
        )];
        let line = timeline(&jobs, now, at("2026-03-11T00:00:00Z"), 100);
        let marked: Vec<String> = line
            .fires
            .iter()
            .filter(|f| f.offset_change.is_some())
            .map(|f| f.time.nominal.to_rfc3339())
            .collect();
        // 2026-03-08 02:00 EST → EDT: the 9 a.m. fire of the 8th is the first at −04:00.
        assert_eq!(marked, vec!["2026-03-08T13:00:00+00:00".to_string()]);
    }

    #[test]
    fn paused_and_finished_jobs_have_no_coming_fires() {
        let now = at("2026-01-01T00:00:00Z");
        let paused = Job::new(definition(
            "p",
            json!({"intervals": ["1m"]}),
            0,
            "2025-12-31T00:00:00Z",
        ));
        assert_eq!(coming_fires(&paused, now).count(), 0);
        let mut spent = job("s", json!({"intervals": ["1m"]}), "2025-12-31T00:00:00Z");
        spent.state.remaining_actions = Some(2);
        assert_eq!(coming_fires(&spent, now).count(), 2);
    }
}
