//! Backfill requests (`POST /jobs/{jobId}/backfill`): checked and counted here, run by the engine
//! window by window ([`sundial_core::plan::plan_backfills`]). What ran of each fire time is read
//! by id — a time's scheduled run is `{fire id}`, its re-runs `{fire id}~r1`, `~r2`, … — so modes
//! `missing` and `failed` need no scan and no index.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::backfill::BackfillRequest;
use sundial_core::execution::{execution_id_for_fire, execution_id_for_rerun, ExecutionState};
use sundial_core::job::{BackfillMode, JobId, When};
use sundial_core::plan::RunsOfTime;

use super::{audit_record, App, AppError, ChangeBy, Entry};
use sundial_ports::store::Store;

/// The most backfill ranges a job may have waiting.
const MAX_PENDING_BACKFILLS: usize = 100;

/// What a backfill request did, or with `dryRun` would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackfillReport {
    /// How many runs it makes: the fire times its ranges hold that its mode selects.
    pub count: usize,
    /// Nothing was recorded: the request only asked.
    pub dry_run: bool,
    /// With `dryRun`, the times that would run, in the order they would, with the schedule's
    /// zone offset.
    pub times: Vec<String>,
}

impl<S: Store> App<S> {
    /// Records a backfill request (`POST /jobs/{jobId}/backfill`): the fire times of its ranges
    /// that its mode selects will run now, exempt from the catch-up window, oldest first or
    /// (`reverse`) newest first. With `dryRun` it only says which times, and writes nothing.
    /// As an anonymous caller; see [`App::backfill_by`].
    pub async fn backfill(&self, job_id: &JobId, body: &Value) -> Result<BackfillReport, AppError> {
        let request = BackfillRequest::parse(body)?;
        self.backfill_by(&ChangeBy::anonymous(), job_id, &request)
            .await
    }

    /// [`App::backfill`] by `by`, recorded in the job's audit trail with the request and how many
    /// times it selected (a dry run records nothing).
    pub async fn backfill_by(
        &self,
        by: &ChangeBy,
        job_id: &JobId,
        request: &BackfillRequest,
    ) -> Result<BackfillReport, AppError> {
        let stored = self.load(job_id).await?;
        let When::Scheduled(schedule) = stored.job.definition.when() else {
            return Err(no_schedule(job_id));
        };
        let times = request.times(schedule)?;
        let runs = if request.mode == BackfillMode::All {
            HashMap::new()
        } else {
            // Boxed, as the engine's lookups: a store's batch reads are deep futures.
            Box::pin(self.runs_of_times(job_id, stored.job.state.incarnation, &times)).await?
        };
        let selected = request.select(&stored.job, times, &runs);
        let count = selected.len();
        if request.dry_run {
            return Ok(BackfillReport {
                count,
                dry_run: true,
                times: selected.iter().map(|t| schedule.format_time(*t)).collect(),
            });
        }
        let now = self.now();
        self.modify_recorded(None, job_id, |stored| {
            if !matches!(stored.job.definition.when(), When::Scheduled(_)) {
                return Err(no_schedule(job_id));
            }
            let pending = &mut stored.job.state.pending_backfills;
            if pending.len() + request.ranges.len() > MAX_PENDING_BACKFILLS {
                return Err(AppError::Conflict(format!(
                    "job {job_id} already has {} backfills waiting; at most {MAX_PENDING_BACKFILLS} may wait",
                    pending.len()
                )));
            }
            pending.extend(request.backfills(now));
            Ok(())
        }, |_, after, version| {
            let mut entry = Entry::new("backfill", Some(after), version);
            entry.details.insert("request".into(), request.as_sent.clone());
            entry.details.insert("count".into(), count.into());
            Some(audit_record(by, job_id, now, entry))
        })
        .await?;
        tracing::info!(job_id = %job_id, count, mode = %request.mode, "backfill recorded");
        Ok(BackfillReport {
            count,
            dry_run: false,
            times: Vec::new(),
        })
    }

    /// What ran of each of `times` of a job's incarnation, read by id: the time's scheduled run
    /// and its re-runs `~r1`, `~r2`, … up to the first missing, a round of reads per re-run.
    pub(crate) async fn runs_of_times(
        &self,
        job_id: &JobId,
        incarnation: u32,
        times: &[DateTime<Utc>],
    ) -> Result<HashMap<DateTime<Utc>, RunsOfTime>, AppError> {
        let mut found: HashMap<DateTime<Utc>, RunsOfTime> =
            times.iter().map(|t| (*t, RunsOfTime::default())).collect();
        // The first round asks for the scheduled run and the first re-run of every time: a time a
        // backfill filled has a re-run without a scheduled run.
        let mut probes: Vec<(DateTime<Utc>, u32)> =
            times.iter().flat_map(|t| [(*t, 0), (*t, 1)]).collect();
        while !probes.is_empty() {
            let ids: Vec<String> = probes
                .iter()
                .map(|(t, k)| match k {
                    0 => execution_id_for_fire(job_id, incarnation, *t),
                    k => execution_id_for_rerun(job_id, incarnation, *t, *k),
                })
                .collect();
            let records = self.executions_by_id(&ids).await?;
            let mut next = Vec::new();
            for ((t, k), record) in probes.into_iter().zip(records) {
                let Some(record) = record else { continue };
                let state =
                    ExecutionState::parse(&record.state).ok_or_else(|| AppError::Corrupt {
                        message: format!(
                            "stored execution {} has an unknown state {:?}",
                            record.execution_id, record.state
                        ),
                        source: None,
                    })?;
                let of_time = found.entry(t).or_default();
                if k == 0 && of_time.reruns == 0 {
                    of_time.latest = Some(state);
                }
                if k > 0 && k >= of_time.reruns {
                    of_time.reruns = k;
                    of_time.latest = Some(state);
                    next.push((t, k + 1));
                }
            }
            probes = next;
        }
        Ok(found)
    }
}

fn no_schedule(job_id: &JobId) -> AppError {
    AppError::Conflict(format!("job {job_id} has no schedule to backfill"))
}
