//! The tick: turn what the timer index says is due into executions and queue messages.
//!
//! A tick reads only the index entries due before its horizon (never a scan of jobs). For a job
//! entry it plans in one conditional write — the fires, their execute numbers and the advanced
//! schedule position all land in the job's `pendingFires` — and then creates the executions and
//! sends them. A crash between the two leaves the fires pending and the job's entry due, so the
//! next tick creates them; creating an execution that exists is a no-op. Two ticks at once race on
//! the job's version: one plans, the other re-reads and finds nothing new. A late tick plans the
//! same fires a punctual one would have, minus those past the catch-up window.

use chrono::{DateTime, Utc};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::{Job, JobId, PendingFire};
use sundial_core::plan;

use super::{Engine, EngineError, MAX_STEP_RETRIES};
use crate::app::{decode, encode_execution, wakeup_key};
use crate::events::EventPublisher;
use crate::http::HttpClient;
use crate::queue::Queue;
use crate::store::Store;

/// How many index entries one tick reads per batch; it reads batches until none are left due.
const BATCH: usize = 500;

/// The most batches one tick works through; the rest waits for the next tick.
const MAX_BATCHES: usize = 200;

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Jobs whose schedule was evaluated.
    pub jobs: usize,
    /// Executions created for scheduled fires and backfills.
    pub fires: usize,
    /// Fire times missed (older than the catch-up window).
    pub missed: u64,
    /// Execution wake-ups turned into dispatch messages.
    pub wakeups: usize,
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Runs one tick at the clock's current time: safe to run late, twice, or concurrently.
    pub async fn tick(&self) -> Result<TickReport, EngineError> {
        let now = self.now();
        let horizon = now
            + chrono::Duration::from_std(self.config.tick_horizon)
                .unwrap_or_else(|_| chrono::Duration::seconds(60));
        let mut report = TickReport::default();
        for _ in 0..MAX_BATCHES {
            let due = self.store().due_wakeups(horizon, BATCH).await?;
            let count = due.len();
            let mut progressed = false;
            for entry in due {
                if let Some(job_id) = entry.key.strip_prefix("job:") {
                    let Ok(job_id) = JobId::parse(job_id) else {
                        self.store().clear_wakeup_if(&entry.key, entry.due).await?;
                        continue;
                    };
                    let (fires, missed) = self.tick_job(&job_id, now, horizon).await?;
                    report.jobs += 1;
                    report.fires += fires;
                    report.missed += missed;
                    // The job's entry now points past the horizon (or is gone) unless it changed
                    // meanwhile; either way this batch made progress.
                    progressed = true;
                } else if let Some(execution_id) = entry.key.strip_prefix("exec:") {
                    let delay = (entry.due - now).to_std().unwrap_or_default();
                    self.send_dispatch(execution_id, delay).await?;
                    self.store().clear_wakeup_if(&entry.key, entry.due).await?;
                    report.wakeups += 1;
                    progressed = true;
                } else {
                    tracing::warn!(key = %entry.key, "unknown timer-index entry removed");
                    self.store().clear_wakeup_if(&entry.key, entry.due).await?;
                }
            }
            if count < BATCH || !progressed {
                break;
            }
        }
        if report.fires > 0 || report.missed > 0 || report.wakeups > 0 {
            tracing::debug!(?report, "tick");
        }
        Ok(report)
    }

    /// Plans a job's fires up to `horizon`, creates and sends them. Returns (fires created, missed).
    async fn tick_job(
        &self,
        job_id: &JobId,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
    ) -> Result<(usize, u64), EngineError> {
        let mut planned = None;
        for _ in 0..MAX_STEP_RETRIES {
            let Some(record) = self.store().get_job(job_id.as_str()).await? else {
                self.store().set_wakeup(&wakeup_key(job_id), None).await?;
                return Ok((0, 0));
            };
            let mut stored = decode(&record)?;
            let before = stored.job.state.clone();
            plan::plan_backfills(&mut stored.job, now);
            let plan = plan::plan_tick(&mut stored.job, now, horizon, self.app.debug_mode());
            if stored.job.state != before {
                stored.job.updated_at = now;
                match self.app.save(&stored).await {
                    Ok(_) => {}
                    Err(crate::AppError::Conflict(_)) => continue,
                    Err(e) => return Err(e.into()),
                }
            } else {
                self.app.refresh_wakeup(&stored.job).await?;
            }
            planned = Some((stored.job, plan.missed));
            break;
        }
        let Some((job, missed)) = planned else {
            return Err(EngineError::Contended(format!("job {job_id}")));
        };
        let pending = &job.state.pending_fires;
        if pending.is_empty() {
            return Ok((0, missed));
        }
        let mut created = 0;
        for fire in pending {
            if self.materialise(&job, fire, now).await? {
                created += 1;
            }
        }
        self.clear_pending(job_id, pending).await?;
        Ok((created, missed))
    }

    /// Creates the execution of a planned fire (unless it exists) and sends it to start at its due
    /// time. Returns whether it created it.
    async fn materialise(
        &self,
        job: &Job,
        fire: &PendingFire,
        now: DateTime<Utc>,
    ) -> Result<bool, EngineError> {
        let job_id = job.job_id();
        let definition = &job.definition;
        let initial = if fire.due > now {
            ExecutionState::Scheduled
        } else {
            ExecutionState::Enqueued
        };
        let mut execution = Execution::new(
            fire.execution_id.clone(),
            job_id.clone(),
            fire.execute_number,
            initial,
            fire.nominal,
            fire.scheduled_by_id.clone(),
            now,
        )
        .map_err(|e| crate::AppError::Unavailable(e.to_string()))?;
        execution.parent_job = definition.parent_job().cloned();
        execution.parent_job_execution = definition.parent_job_execution();
        execution.run.due = Some(fire.due);
        execution.run.overlap = fire.overlap;
        let created = self
            .store()
            .create_execution(&encode_execution(&execution, 1)?)
            .await?;
        if created {
            self.publish_state(&execution).await;
        }
        // Sent even when it existed: the earlier tick may have died before sending. A duplicate
        // message finds the execution past Scheduled and does nothing twice.
        self.wake_at(&fire.execution_id, fire.due).await?;
        Ok(created)
    }

    /// Removes materialised fires from the job's `pendingFires` (and refreshes its index entry).
    async fn clear_pending(&self, job_id: &JobId, done: &[PendingFire]) -> Result<(), EngineError> {
        let result = self
            .app
            .modify(job_id, |stored| {
                stored
                    .job
                    .state
                    .pending_fires
                    .retain(|fire| !done.iter().any(|d| d.execution_id == fire.execution_id));
                Ok(())
            })
            .await;
        match result {
            Ok(_) | Err(crate::AppError::NotFound(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
