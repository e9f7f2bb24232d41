//! The non-run ledger (`GET /jobs/{jobId}/occurrences`): gathers what the pure computation
//! ([`sundial_core::ledger`]) needs — the definitions in force and the pauses from the audit
//! trail, the runs of each nominal time read by id, the missed and dropped ranges kept on the
//! job's state — and hands it over. Nothing here decides a fate.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::execution::execution_id_for_fire;
use sundial_core::job::{JobDefinition, JobId};
use sundial_core::ledger::{self, Facts, Fate, FireRange, RunFact, TooMany, MAX_OCCURRENCES};

use super::{field_error, App, AppError};
use crate::ports::store::{AuditQuery, PageRequest, Store, MAX_PAGE};

/// How many executions one [`Store::read_many`] call asks for.
const READ_BATCH: usize = 100;

/// A job's ledger over a range.
#[derive(Clone, Debug)]
pub struct Occurrences {
    /// Every nominal time of the range with its fate, oldest first.
    pub entries: Vec<(DateTime<Utc>, Fate)>,
    /// The missed and dropped ranges the job keeps that meet the range.
    pub ranges: Vec<FireRange>,
}

/// A job's change as the ledger reads it from the audit trail.
struct Change {
    at: DateTime<Utc>,
    definition: Option<JobDefinition>,
    paused: bool,
    notes: Option<String>,
}

impl<S: Store> App<S> {
    /// What became of every nominal time of `job_id` in `[from, to)` (`GET
    /// /jobs/{jobId}/occurrences`): `Invalid` naming `to` when the range is empty or reversed or
    /// holds more than [`MAX_OCCURRENCES`] times, `NotFound` when the job does not exist.
    pub async fn occurrences(
        &self,
        job_id: &JobId,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Occurrences, AppError> {
        if to <= from {
            return Err(field_error(
                "to",
                format!(
                    "must be after from ({} is not after {})",
                    to.to_rfc3339(),
                    from.to_rfc3339()
                ),
            ));
        }
        let stored = self.load(job_id).await?;
        let job = &stored.job;
        let now = self.now();
        let changes = self.changes(job_id, job.created_at, to).await?;
        // Without a trail (a job from before it), the definition now since its creation.
        let mut versions: Vec<(DateTime<Utc>, &JobDefinition)> = changes
            .iter()
            .filter_map(|c| c.definition.as_ref().map(|d| (c.at, d)))
            .collect();
        if versions.is_empty() {
            versions.push((job.created_at, &job.definition));
        }
        let schedules: Vec<_> = versions.iter().map(|(at, d)| (*at, d.schedule())).collect();
        let times =
            ledger::nominal_times(&schedules, job_id.as_str(), from, to).map_err(too_many)?;
        let mut pauses: Vec<(DateTime<Utc>, bool, Option<String>)> = changes
            .iter()
            .map(|c| (c.at, c.paused, c.notes.clone()))
            .collect();
        if pauses.is_empty() && !job.definition.active() {
            pauses.push((job.created_at, true, job.state.paused_notes.clone()));
        }
        let state = &job.state;
        let first_pending = state.pending_fires.iter().map(|f| f.nominal).min();
        let facts = Facts {
            created_at: Some(job.created_at),
            ended_at: (state.remaining_actions == Some(0))
                .then_some(state.last_scheduled_time)
                .flatten()
                .map(|last| last + chrono::Duration::nanoseconds(1)),
            runs: self.runs(job_id, state.incarnation, &times).await?,
            ranges: state.fire_ranges.clone(),
            paused: ledger::pause_spans(&pauses),
            debug: Vec::new(),
            planned_through: match first_pending {
                Some(first) => Some(first - chrono::Duration::nanoseconds(1)),
                None => state.last_scheduled_time,
            },
        };
        Ok(Occurrences {
            entries: ledger::ledger(&times, &facts, now),
            ranges: state
                .fire_ranges
                .iter()
                .filter(|r| r.first < to && r.last >= from)
                .cloned()
                .collect(),
        })
    }

    /// The job's changes since its creation (this life of its id) made before `to`, oldest
    /// first, as the ledger reads them.
    async fn changes(
        &self,
        job_id: &JobId,
        created_at: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Change>, AppError> {
        let query = AuditQuery {
            from: Some(created_at),
            to: Some(to),
            oldest_first: true,
        };
        let mut page = PageRequest {
            limit: MAX_PAGE,
            cursor: None,
        };
        let mut changes = Vec::new();
        loop {
            let records = self
                .store
                .list_audit(job_id.as_str(), &query, &page)
                .await?;
            for record in records.items {
                let doc = &record.document;
                let definition = doc
                    .get("definition")
                    .and_then(|body| JobDefinition::parse(job_id, body, created_at).ok());
                changes.push(Change {
                    at: record.at,
                    definition,
                    paused: doc.get("state").and_then(Value::as_str) == Some("paused"),
                    notes: doc.get("reason").and_then(Value::as_str).map(str::to_owned),
                });
            }
            match records.next_cursor {
                Some(cursor) => page.cursor = Some(cursor),
                None => return Ok(changes),
            }
        }
    }

    /// The runs of `times`, read by the ids their fires get, a hundred at a time.
    async fn runs(
        &self,
        job_id: &JobId,
        incarnation: u32,
        times: &[DateTime<Utc>],
    ) -> Result<BTreeMap<DateTime<Utc>, RunFact>, AppError> {
        let mut runs = BTreeMap::new();
        for chunk in times.chunks(READ_BATCH) {
            let ids: Vec<String> = chunk
                .iter()
                .map(|time| execution_id_for_fire(job_id, incarnation, *time))
                .collect();
            let read = self.store.read_many(&ids, &[]).await?;
            for (time, record) in chunk.iter().zip(read.executions) {
                let Some(record) = record else { continue };
                let reason = skip_reason(&record.document);
                runs.insert(
                    *time,
                    RunFact::of_execution(&record.execution_id, &record.state, reason),
                );
            }
        }
        Ok(runs)
    }
}

/// The message of the event that ended an execution `Skipped`: the engine's reason.
fn skip_reason(document: &Value) -> Option<&str> {
    document
        .get("events")?
        .as_array()?
        .iter()
        .rev()
        .find(|event| event.get("to").and_then(Value::as_str) == Some("Skipped"))?
        .get("message")?
        .as_str()
}

fn too_many(too_many: TooMany) -> AppError {
    let how_many = if too_many.more {
        format!("more than {}", too_many.counted)
    } else {
        too_many.counted.to_string()
    };
    field_error(
        "to",
        format!("the range holds {how_many} nominal times; at most {MAX_OCCURRENCES} are listed at once: narrow it"),
    )
}
