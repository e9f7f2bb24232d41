//! The non-run ledger (`GET /jobs/{jobId}/occurrences`): gathers what the pure computation
//! ([`sundial_core::ledger`]) needs — the definitions in force and the pauses from the audit
//! trail, the runs of each nominal time read by id, the missed and dropped ranges kept on the
//! job's state — and hands it over. Nothing here decides a fate.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sundial_core::execution::{execution_id_for_fire, incarnation_of_execution};
use sundial_core::job::{JobDefinition, JobId};
use sundial_core::ledger::{self, Facts, Fate, FireRange, RunFact, TooMany, MAX_OCCURRENCES};

use super::{field_error, App, AppError};
use sundial_ports::store::{AuditQuery, PageRequest, Store, MAX_PAGE};

/// A job's ledger over a range.
#[derive(Clone, Debug)]
pub struct Occurrences {
    /// Every nominal time of the range with its fate, oldest first, and at each DST gap that
    /// took wall-clock times of the schedule, a [`Fate::DstGap`] entry.
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
    /// The change created the job (this life of its id starts).
    created: bool,
    /// The change deleted the job.
    deleted: bool,
}

/// One life of a job id, as the ledger reads it: what is stored about its fires.
struct Life {
    created_at: DateTime<Utc>,
    /// When it was deleted or its schedule ended.
    ended_at: Option<DateTime<Utc>>,
    /// The incarnation its runs' ids carry.
    incarnation: u32,
    /// Its changes, oldest first; the first puts its first definition in force.
    changes: Vec<Change>,
    ranges: Vec<FireRange>,
    planned_through: Option<DateTime<Utc>>,
}

impl<S: Store> App<S> {
    /// What became of every nominal time of `job_id` in `[from, to)` (`GET
    /// /jobs/{jobId}/occurrences`): `Invalid` naming `to` when the range is empty or reversed or
    /// holds more than [`MAX_OCCURRENCES`] times. A deleted job's last life is read from its
    /// audit trail (its times after the deletion `ended`); `NotFound` when the job does not exist
    /// and its trail holds no deletion.
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
        let now = self.now();
        let stored = match self.load(job_id).await {
            Ok(stored) => stored,
            Err(AppError::NotFound(what)) => {
                return match self.deleted_life(job_id).await? {
                    Some(life) => self.ledger_of(job_id, life, from, to, now).await,
                    None => Err(AppError::NotFound(what)),
                };
            }
            Err(e) => return Err(e),
        };
        let job = &stored.job;
        let state = &job.state;
        let first_pending = state.pending_fires.iter().map(|f| f.nominal).min();
        let mut changes = self.changes(job_id, Some(job.created_at), Some(to)).await?;
        // Without a trail (a job from before it), the definition now since its creation, and
        // with no change at all, its pause since then.
        if !changes.iter().any(|c| c.definition.is_some()) {
            let paused = changes.is_empty() && !job.definition.active();
            changes.insert(
                0,
                Change {
                    at: job.created_at,
                    definition: Some(job.definition.clone()),
                    paused,
                    notes: paused.then(|| state.paused_notes.clone()).flatten(),
                    created: true,
                    deleted: false,
                },
            );
        }
        let life = Life {
            created_at: job.created_at,
            ended_at: (state.remaining_actions == Some(0))
                .then_some(state.last_scheduled_time)
                .flatten()
                .map(|last| last + chrono::Duration::nanoseconds(1)),
            incarnation: state.incarnation,
            changes,
            ranges: state.fire_ranges.clone(),
            planned_through: match first_pending {
                Some(first) => Some(first - chrono::Duration::nanoseconds(1)),
                None => state.last_scheduled_time,
            },
        };
        self.ledger_of(job_id, life, from, to, now).await
    }

    /// The ledger of one life of `job_id` over `[from, to)` at `now`.
    async fn ledger_of(
        &self,
        job_id: &JobId,
        life: Life,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Occurrences, AppError> {
        let versions: Vec<(DateTime<Utc>, &JobDefinition)> = life
            .changes
            .iter()
            .filter_map(|c| c.definition.as_ref().map(|d| (c.at, d)))
            .collect();
        let schedules: Vec<_> = versions.iter().map(|(at, d)| (*at, d.schedule())).collect();
        let times =
            ledger::nominal_times(&schedules, job_id.as_str(), from, to).map_err(too_many)?;
        let pauses: Vec<(DateTime<Utc>, bool, Option<String>)> = life
            .changes
            .iter()
            .map(|c| (c.at, c.paused, c.notes.clone()))
            .collect();
        // Only the times of this life can have its runs: those before its creation or after its
        // end are read from nothing (a long range of a young job reads a few ids, not 10,000).
        let in_life: Vec<DateTime<Utc>> = times
            .iter()
            .copied()
            .filter(|t| *t >= life.created_at && life.ended_at.is_none_or(|end| *t < end))
            .collect();
        let facts = Facts {
            created_at: Some(life.created_at),
            ended_at: life.ended_at,
            runs: self.runs(job_id, life.incarnation, &in_life).await?,
            ranges: life.ranges.clone(),
            paused: ledger::pause_spans(&pauses),
            debug: Vec::new(),
            planned_through: life.planned_through,
        };
        let mut gaps = ledger::gap_entries(&schedules, from, to);
        // The times named calendars removed, among the gaps (neither is a nominal time).
        gaps.extend(ledger::calendar_entries(&schedules, from, to));
        gaps.sort_by_key(|(at, _)| *at);
        Ok(Occurrences {
            entries: ledger::with_gaps(ledger::ledger(&times, &facts, now), gaps),
            ranges: life
                .ranges
                .into_iter()
                .filter(|r| r.first < to && r.last >= from)
                .collect(),
        })
    }

    /// The last life of a deleted job, from its audit trail: from the creation before its
    /// deletion to the deletion, with the definitions and pauses between, and its runs' ids read
    /// from its last execution. `None` when the trail holds no deletion (the id never existed, or
    /// retention has trimmed the trail). The missed and dropped ranges went with the job's state.
    async fn deleted_life(&self, job_id: &JobId) -> Result<Option<Life>, AppError> {
        let mut changes = self.changes(job_id, None, None).await?;
        let Some(deleted) = changes.iter().rposition(|c| c.deleted) else {
            return Ok(None);
        };
        let Some(created) = changes[..deleted].iter().rposition(|c| c.created) else {
            return Ok(None);
        };
        let ended_at = changes[deleted].at;
        changes.truncate(deleted);
        changes.drain(..created);
        let created_at = changes.first().map_or(ended_at, |c| c.at);
        let incarnation = self
            .store
            .list_executions(job_id.as_str(), &PageRequest::first(1))
            .await?
            .items
            .first()
            .map_or(0, |last| incarnation_of_execution(&last.execution_id));
        Ok(Some(Life {
            created_at,
            ended_at: Some(ended_at),
            incarnation,
            changes,
            ranges: Vec::new(),
            planned_through: Some(ended_at),
        }))
    }

    /// The job's changes since `since` (its creation: this life of its id; `None`: every life)
    /// made before `to` (`None`: all), oldest first, as the ledger reads them.
    async fn changes(
        &self,
        job_id: &JobId,
        since: Option<DateTime<Utc>>,
        to: Option<DateTime<Utc>>,
    ) -> Result<Vec<Change>, AppError> {
        let query = AuditQuery {
            from: since,
            to,
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
                // The calendars it named, as they were then (the entry keeps a copy).
                let calendars = sundial_core::job::Job::document_calendars(
                    doc,
                    crate::records::cached_calendar,
                )
                .unwrap_or_default();
                let definition = doc.get("definition").and_then(|body| {
                    JobDefinition::parse_with(job_id, body, record.at, &calendars).ok()
                });
                let action = doc.get("action").and_then(Value::as_str).unwrap_or("");
                let state = doc.get("state").and_then(Value::as_str);
                changes.push(Change {
                    at: record.at,
                    created: action == "create" || action.ends_with(":create"),
                    deleted: state == Some("deleted"),
                    definition,
                    paused: state == Some("paused"),
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
        let ids: Vec<String> = times
            .iter()
            .map(|time| execution_id_for_fire(job_id, incarnation, *time))
            .collect();
        let mut runs = BTreeMap::new();
        for (time, read) in times.iter().zip(self.states_by_id(&ids).await?) {
            let Some(read) = read else { continue };
            let reason = read.skipped_document.as_ref().and_then(skip_reason);
            runs.insert(
                *time,
                RunFact::of_execution(&read.execution_id, &read.state, reason),
            );
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
