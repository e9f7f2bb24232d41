//! What a change of a job's definition would do (`POST /jobs/{jobId}/update?dryRun=true`): which
//! of its runs not yet started it would affect, and how. A run that has not passed the overlap
//! gate — planned, waiting in line, or buffered — reads its job when it starts, so it is
//! admitted, called, retried and timed out by the definition as it is then: the change applies
//! to it. Runs already created keep their time and id: a run planned for a time the new schedule
//! does not have still runs.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::execution::{Execution, ExecutionState};
use crate::job::document::{ReadByRuns, JOB_FIELDS};
use crate::job::{Job, OverlapPolicy, PendingFire};
use crate::plan::concurrency_limit;

/// Where a run not yet started is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunPlace {
    /// Planned by the tick; its execution is not created yet.
    Planned,
    /// Created, waiting in line for the overlap gate (`Scheduled` or `Enqueued`).
    Waiting,
    /// Through the gate into the buffer, waiting for a slot.
    Buffered,
}

impl RunPlace {
    /// The name used in JSON: `planned`, `waiting`, `buffered`.
    pub fn name(self) -> &'static str {
        match self {
            RunPlace::Planned => "planned",
            RunPlace::Waiting => "waiting",
            RunPlace::Buffered => "buffered",
        }
    }
}

/// A run of the job that has not started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnstartedRun {
    /// Its execution id.
    pub execution_id: String,
    /// Where it is.
    pub place: RunPlace,
    /// Its state; `None` while only planned.
    pub state: Option<ExecutionState>,
    /// The nominal time it reports.
    pub scheduled_time: DateTime<Utc>,
    /// A fire of the job's schedule (not a trigger's or a backfill's run).
    pub scheduled: bool,
    /// Its overlap override (a trigger's or a backfill's).
    pub overlap: Option<OverlapPolicy>,
}

impl UnstartedRun {
    /// A fire the tick planned.
    pub fn planned(job: &Job, fire: &PendingFire) -> UnstartedRun {
        UnstartedRun {
            execution_id: fire.execution_id.clone(),
            place: RunPlace::Planned,
            state: None,
            scheduled_time: fire.nominal,
            scheduled: fire.scheduled_by_id == job.job_id().as_str(),
            overlap: fire.overlap,
        }
    }

    /// A created execution, at `place`.
    pub fn created(job: &Job, execution: &Execution, place: RunPlace) -> UnstartedRun {
        UnstartedRun {
            execution_id: execution.execution_id.clone(),
            place,
            state: Some(execution.state()),
            scheduled_time: execution.scheduled_time,
            scheduled: execution.scheduled_by_id == job.job_id().as_str(),
            overlap: execution.run.overlap,
        }
    }
}

/// A run the change affects, and how, in words that start with the field (`overlap: Skip →
/// BufferAll`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffectedRun {
    /// The run.
    pub run: UnstartedRun,
    /// What changes for it.
    pub changes: Vec<String>,
}

/// Which of `runs` (the runs of `before` not yet started) replacing `before`'s definition by
/// `after`'s would affect, and how; runs it leaves as they are are not listed.
pub fn affected_runs(before: &Job, after: &Job, runs: &[UnstartedRun]) -> Vec<AffectedRun> {
    let fields = changed_fields(before, after);
    runs.iter()
        .filter_map(|run| {
            let mut changes = Vec::new();
            let policy_before = run.overlap.unwrap_or_else(|| before.definition.overlap());
            let policy_after = run.overlap.unwrap_or_else(|| after.definition.overlap());
            if policy_before != policy_after {
                changes.push(format!("overlap: {policy_before} → {policy_after}"));
            }
            let limit_before = concurrency_limit(before, policy_before);
            let limit_after = concurrency_limit(after, policy_after);
            if limit_before != limit_after {
                changes.push(format!(
                    "maxConcurrency: {} → {}",
                    limit_text(limit_before),
                    limit_text(limit_after)
                ));
            }
            if run.scheduled {
                if let Some(note) = schedule_change(after, run.scheduled_time) {
                    changes.push(note);
                }
            }
            // Triggers and backfills are exempt from catch-up: its fields concern fires only.
            let fields: Vec<&str> = fields
                .iter()
                .filter(|(_, read)| run.scheduled || *read != ReadByRuns::Scheduled)
                .map(|(name, _)| *name)
                .collect();
            if !fields.is_empty() {
                changes.push(format!(
                    "{}: changed; the run uses the new value",
                    fields.join(", ")
                ));
            }
            (!changes.is_empty()).then(|| AffectedRun {
                run: run.clone(),
                changes,
            })
        })
        .collect()
}

/// The definition fields a run reads when it starts and runs ([`ReadByRuns`] in the document's
/// table) whose written value differs, with which runs read each. Timing fields — `timer`,
/// `schedule`, `active`, `remainingActions` — decide which fires are planned, not how a planned
/// one runs; `overlap` and `maxConcurrency` are shown with their values.
fn changed_fields(before: &Job, after: &Job) -> Vec<(&'static str, ReadByRuns)> {
    let (old, new) = (
        before.definition.as_written(),
        after.definition.as_written(),
    );
    JOB_FIELDS
        .iter()
        .filter(|field| field.read_by_runs != ReadByRuns::No)
        .filter(|field| present(old, field.name) != present(new, field.name))
        .map(|field| (field.name, field.read_by_runs))
        .collect()
}

/// A field's value as written; `null` counts as absent.
fn present<'a>(body: &'a Value, field: &str) -> Option<&'a Value> {
    body.get(field).filter(|v| !v.is_null())
}

/// Why a planned fire at `nominal` is out of step with the new definition, if it is.
fn schedule_change(after: &Job, nominal: DateTime<Utc>) -> Option<String> {
    let time = nominal.to_rfc3339();
    match after.definition.schedule() {
        None => Some(format!(
            "schedule: the job would run only when triggered; this fire of {time} still runs"
        )),
        Some(schedule) => {
            let still =
                schedule.next_after(nominal - chrono::Duration::seconds(1)) == Some(nominal);
            (!still).then(|| {
                format!(
                    "schedule: {time} is not a fire time of the new schedule; the run still runs"
                )
            })
        }
    }
}

fn limit_text(limit: usize) -> String {
    if limit == usize::MAX {
        "unbounded".to_string()
    } else {
        limit.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobDefinition, JobId};
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn job(extra: Value) -> Job {
        let mut body = json!({
            "jobName": "j", "creator": "c", "creatorName": "C",
            "request": [{"method": "GET", "url": "http://127.0.0.1:1/x"}],
            "schedule": {"cron": ["* * * * *"]},
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let id = JobId::parse("job-1").unwrap();
        Job::new(JobDefinition::parse(&id, &body, at("2024-01-01T00:00:00Z")).unwrap())
    }

    fn run(
        id: &str,
        place: RunPlace,
        time: &str,
        scheduled: bool,
        overlap: Option<OverlapPolicy>,
    ) -> UnstartedRun {
        UnstartedRun {
            execution_id: id.into(),
            place,
            state: None,
            scheduled_time: at(time),
            scheduled,
            overlap,
        }
    }

    #[test]
    fn a_change_lists_the_runs_it_affects_and_how() {
        let before = job(json!({"overlap": "BufferAll"}));
        let mut after = before.clone();
        after.apply_definition(
            job(json!({"overlap": "Skip", "schedule": {"cron": ["0 * * * *"]}, "timeoutSeconds": 5}))
                .definition,
        );
        let runs = [
            run(
                "job-1~20240101T000100Z",
                RunPlace::Waiting,
                "2024-01-01T00:01:00Z",
                true,
                None,
            ),
            run(
                "job-1~20240101T010000Z",
                RunPlace::Planned,
                "2024-01-01T01:00:00Z",
                true,
                None,
            ),
            run(
                "job-1~t~x",
                RunPlace::Buffered,
                "2024-01-01T00:00:30Z",
                false,
                Some(OverlapPolicy::BufferAll),
            ),
        ];
        let affected = affected_runs(&before, &after, &runs);
        let changes: Vec<(&str, &[String])> = affected
            .iter()
            .map(|a| (a.run.execution_id.as_str(), a.changes.as_slice()))
            .collect();
        assert_eq!(
            changes,
            [
                (
                    "job-1~20240101T000100Z",
                    &[
                        "overlap: BufferAll → Skip".to_string(),
                        "schedule: 2024-01-01T00:01:00+00:00 is not a fire time of the new schedule; the run still runs".to_string(),
                        "timeoutSeconds: changed; the run uses the new value".to_string(),
                    ][..]
                ),
                (
                    "job-1~20240101T010000Z",
                    &[
                        "overlap: BufferAll → Skip".to_string(),
                        "timeoutSeconds: changed; the run uses the new value".to_string(),
                    ][..]
                ),
                (
                    "job-1~t~x",
                    &["timeoutSeconds: changed; the run uses the new value".to_string()][..]
                ),
            ]
        );
        // The same definition affects nothing; a new maxConcurrency affects every waiting run.
        assert!(affected_runs(&before, &before, &runs).is_empty());
        let mut wider = before.clone();
        wider
            .apply_definition(job(json!({"overlap": "BufferAll", "maxConcurrency": 3})).definition);
        let affected = affected_runs(&before, &wider, &runs);
        assert_eq!(affected.len(), 3);
        assert_eq!(affected[0].changes, ["maxConcurrency: 1 → 3"]);
        // A new catch-up policy concerns the scheduled fires, not a trigger's run.
        let mut latest = before.clone();
        latest.apply_definition(
            job(json!({"overlap": "BufferAll", "catchup": {"policy": "latest"}})).definition,
        );
        let affected = affected_runs(&before, &latest, &runs);
        let ids: Vec<&str> = affected
            .iter()
            .map(|a| a.run.execution_id.as_str())
            .collect();
        assert_eq!(ids, ["job-1~20240101T000100Z", "job-1~20240101T010000Z"]);
        assert_eq!(
            affected[0].changes,
            ["catchup: changed; the run uses the new value"]
        );
        // A job that becomes triggered-only still runs the fires it planned.
        let mut manual = before.clone();
        manual.apply_definition(
            job(json!({"overlap": "BufferAll", "schedule": null, "timer": {"period": "external"}}))
                .definition,
        );
        let affected = affected_runs(&before, &manual, &runs[..1]);
        assert!(
            affected[0].changes[0].starts_with("schedule: the job would run only when triggered")
        );
    }
}
