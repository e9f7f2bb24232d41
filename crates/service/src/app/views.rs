//! Read models: describe, stats and spec preview.

use std::collections::BTreeMap;

use serde_json::Value;
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::{Job, JobId, When};
use sundial_core::timer::PreviewRequest;

use super::{App, AppError};
use crate::records::decode_job;
use sundial_core::stats::StatsWindow;
use sundial_ports::store::{JobFilter, JobOrder, PageRequest, Store};

/// How many future fire times and recent actions `describe` shows (Temporal's describe shows 10).
const DESCRIBE_COUNT: usize = 10;

/// `GET /jobs/{jobId}/describe`: the job, what it will do and what it has done.
#[derive(Clone, Debug)]
pub struct Describe {
    /// The job as `GET /jobs/{jobId}` returns it (its `timer` or `schedule` as written).
    pub job: Value,
    /// The job's spec in the canonical form (docs/spec.md §1, as Temporal's describe shows the
    /// normalized spec): its `schedule`, or what its `timer` compiles to; `None` for a
    /// triggered-only job.
    pub schedule: Option<Value>,
    /// The job's counters and state (`actionCount`, `overlapSkipped`, …).
    pub state: sundial_core::job::JobState,
    /// The next fire times (jitter applied), in the schedule's zone; empty when paused or
    /// triggered-only.
    pub future_action_times: Vec<String>,
    /// The most recent executions, newest first.
    pub recent_actions: Vec<Execution>,
    /// The executions not finished yet (`Enqueued`, `Processing`), newest first.
    pub running_executions: Vec<Execution>,
}

/// `GET /stats`.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Jobs by state.
    pub jobs: BTreeMap<String, u64>,
    /// Executions by state: those not ended now, and those ended within the window.
    pub executions: BTreeMap<String, u64>,
    /// Whether a debug mode is on (docs/api.md's debug mode).
    pub debug_mode: bool,
    /// Which one (`off`, `schedules`, `triggers`, `both`).
    pub debug_mode_setting: &'static str,
    /// All jobs' figures over the window, and the top failing and slowest jobs.
    #[serde(skip)]
    pub fleet: super::stats::FleetStats,
}

impl<S: Store> App<S> {
    /// What a job will do and has done (`GET /jobs/{jobId}/describe`).
    pub async fn describe(&self, job_id: &JobId) -> Result<Describe, AppError> {
        let job = self.get_job(job_id).await?;
        let recent = self
            .list_executions(job_id, &PageRequest::first(100))
            .await?
            .items;
        let future_action_times = describe_fires(&job, &recent, self.now());
        let running_executions = recent
            .iter()
            .filter(|e| {
                matches!(
                    e.state(),
                    ExecutionState::Enqueued | ExecutionState::Processing
                )
            })
            .cloned()
            .collect();
        let mut recent_actions = recent;
        recent_actions.truncate(DESCRIBE_COUNT);
        let schedule = match job.definition.when() {
            When::Scheduled(schedule) => Some(schedule.to_canonical_json()),
            When::TriggeredOnly => None,
        };
        Ok(Describe {
            job: job.to_api_json(),
            schedule,
            state: job.state,
            future_action_times,
            recent_actions,
            running_executions,
        })
    }

    /// `GET /stats` over `window`: jobs by state; executions by state, those not ended now read
    /// from every job's line and slots (never a scan of executions) and those ended within the
    /// window from the statistics ([`App::fleet_stats`], whose figures come along); the debug
    /// mode. Reads every job (a page at a time) and the runs they hold, so it costs what the jobs
    /// and the runs in flight cost, whatever the number of executions stored.
    pub async fn stats(&self, window: StatsWindow) -> Result<Stats, AppError> {
        let mut jobs: BTreeMap<String, u64> = BTreeMap::new();
        let mut executions: BTreeMap<String, u64> = BTreeMap::new();
        let mut cursor = None;
        loop {
            let page = self
                .store
                .list_jobs(
                    &JobFilter::default(),
                    JobOrder::Id,
                    &PageRequest {
                        limit: STATS_PAGE,
                        cursor,
                    },
                )
                .await?;
            let mut held: Vec<String> = Vec::new();
            for record in &page.items {
                *jobs.entry(record.state.clone()).or_default() += 1;
                let state = decode_job(record)?.job.state;
                held.extend(state.running);
                held.extend(state.buffered);
                held.extend(state.waiting.into_iter().map(|w| w.execution_id));
            }
            held.sort();
            held.dedup();
            for run in self.store.read_states(&held).await?.into_iter().flatten() {
                let not_ended = ExecutionState::parse(&run.state).is_some_and(|s| !s.is_final());
                if not_ended {
                    *executions.entry(run.state).or_default() += 1;
                }
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        let fleet = self.fleet_stats(window).await?;
        for (state, count) in &fleet.all.figures.by_state {
            *executions.entry(state.clone()).or_default() += count;
        }
        let mode = self.debug_mode_now().await;
        Ok(Stats {
            jobs,
            executions,
            debug_mode: mode != sundial_core::debug_mode::DebugMode::Off,
            debug_mode_setting: mode.name(),
            fleet,
        })
    }
}

/// How many jobs [`App::stats`] reads at once.
const STATS_PAGE: usize = 500;

/// Previews write nothing; they read only the calendars a spec names.
impl<S: Store> App<S> {
    /// `POST /specs/preview`, read by [`PreviewRequest::parse`]. A spec naming stored calendars
    /// (`onlyOn`, `exclude`, business-day rules) is read against them, as job creation reads it;
    /// an unknown name is an error naming the field
    /// (`schedule.onlyOn[0]: unknown calendar "paris"; known: london`).
    pub async fn preview_spec(
        &self,
        request: &PreviewRequest,
    ) -> Result<sundial_core::timer::Preview, AppError> {
        let calendars = match request.schedule() {
            Some(schedule) => self.calendars_named_by(schedule).await?,
            None => Default::default(),
        };
        Ok(request.preview(self.now(), &calendars)?)
    }
}

/// Describe's future action times: the scheduled fires already planned and not started yet (their
/// executions `Scheduled`, among `recent`) and the coming ones, soonest first, at most
/// [`DESCRIBE_COUNT`], in the schedule's zone. Issue 26 item 5: the fires the engine plans at
/// creation are still to come, and were left out.
fn describe_fires(
    job: &Job,
    recent: &[Execution],
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<String> {
    let When::Scheduled(schedule) = job.definition.when() else {
        return Vec::new();
    };
    let mut times: Vec<chrono::DateTime<chrono::Utc>> = recent
        .iter()
        .filter(|e| {
            e.state() == ExecutionState::Scheduled
                && e.scheduled_by_id == job.definition.job_id().as_str()
        })
        .map(|e| e.run.due.unwrap_or(e.scheduled_time))
        .collect();
    times.extend(
        sundial_core::upcoming::coming_fires(job, now)
            .take(DESCRIBE_COUNT)
            .map(|fire| fire.due),
    );
    times.sort();
    times.dedup();
    times.truncate(DESCRIBE_COUNT);
    times.into_iter().map(|t| schedule.format_time(t)).collect()
}

/// Up to `count` coming fire times of `job` after `now` (jitter applied), formatted in the
/// schedule's zone; none for a paused or triggered-only job, and no more than its remaining actions.
pub fn upcoming_fires(job: &Job, now: chrono::DateTime<chrono::Utc>, count: usize) -> Vec<String> {
    let When::Scheduled(schedule) = job.definition.when() else {
        return Vec::new();
    };
    sundial_core::upcoming::coming_fires(job, now)
        .take(count)
        .map(|fire| schedule.format_time(fire.due))
        .collect()
}
