//! The audit trail of the control plane: who changed a job, how, and why.
//!
//! Every use case that changes a job takes a [`ChangeBy`] (the actor, the reason, and where the
//! change came from) and writes one entry with the change, in the same atomic
//! [`Store::write_all`] batch ([`Write::AppendAudit`]). The entries are read back newest first by
//! `GET /jobs/{jobId}/history` ([`App::history`]) and oldest first by whoever reconstructs the
//! definition in force at a time ([`App::audit_entries`]): an entry with a `definition` puts that
//! definition in force from its time on, and an entry whose `state` is `deleted` ends it.

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{json, Map, Value};
use sundial_core::job::{definition_changes, Job, JobId};

use super::{App, AppError};
use crate::records::json_time;
use sundial_ports::store::audit::entry_id;
use sundial_ports::store::{AuditCleanReport, AuditQuery, AuditRecord, Page, PageRequest, Store};

/// The most bytes of an update's `changes` kept with their values: beyond, only the paths are
/// kept (`changesTruncated`). The definition itself is at most a request body (256 KiB), so an
/// entry stays well inside a DynamoDB item (400 KB) whatever the update.
const MAX_CHANGES_BYTES: usize = 32 * 1024;

/// Who made a change: the name of the API token locally, the IAM principal or JWT subject on
/// AWS, [`Actor::SYSTEM`] for the engine's own policies, [`Actor::ANONYMOUS`] when the API asks
/// for no credentials.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Actor(String);

impl Actor {
    /// The engine's policies (pause on failure).
    pub const SYSTEM: &'static str = "system";
    /// A caller of an API that asks for no credentials (`sundial serve` on loopback without tokens).
    pub const ANONYMOUS: &'static str = "anonymous";

    /// An actor named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Actor(name.into())
    }

    /// [`Actor::SYSTEM`].
    pub fn system() -> Self {
        Actor::new(Actor::SYSTEM)
    }

    /// [`Actor::ANONYMOUS`].
    pub fn anonymous() -> Self {
        Actor::new(Actor::ANONYMOUS)
    }

    /// The name the trail records.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Actor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who makes a change and why: what the audit entry of the change records beside the change.
///
/// The entry's action is the use case's own (`create`, `update`, `pause`, `unpause`, `trigger`,
/// `backfill`, `delete`), prefixed by the origin when the change is one of many made for one
/// request: `timers:create` for `PUT /services/{name}/timers`, `bulk:pause` for a bulk action
/// ([`ChangeBy::bulk`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeBy {
    /// Who.
    pub actor: Actor,
    /// Why, when the request said (a bulk action's `reason`; pause notes are the use case's own).
    pub reason: Option<String>,
    origin: Option<String>,
}

impl ChangeBy {
    /// A change by `actor`, for no stated reason.
    pub fn new(actor: Actor) -> Self {
        ChangeBy {
            actor,
            reason: None,
            origin: None,
        }
    }

    /// A change by [`Actor::ANONYMOUS`].
    pub fn anonymous() -> Self {
        ChangeBy::new(Actor::anonymous())
    }

    /// A change by [`Actor::SYSTEM`].
    pub fn system() -> Self {
        ChangeBy::new(Actor::system())
    }

    /// The same change, for `reason`.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// One job's part of the bulk action `action` (`pause`, `unpause`, `trigger`, `delete`,
    /// `backfill`) by `actor` for `reason`: its entry's action is `bulk:{action}`, whatever use
    /// case the bulk action calls for the job.
    pub fn bulk(actor: Actor, action: &str, reason: impl Into<String>) -> Self {
        ChangeBy {
            actor,
            reason: Some(reason.into()),
            origin: Some(format!("bulk:{action}")),
        }
    }

    /// A change of `PUT /services/{service}/timers`: actions `timers:create`, `timers:update`,
    /// `timers:delete`.
    pub(crate) fn declaration(&self, service: &str) -> Self {
        ChangeBy {
            actor: self.actor.clone(),
            reason: Some(
                self.reason
                    .clone()
                    .unwrap_or_else(|| format!("timers of service {service}")),
            ),
            origin: Some("timers".into()),
        }
    }

    /// A change of `POST /apply` whose change id is `change_id`: actions `apply:create`,
    /// `apply:update`, `apply:delete`, for the reason `apply {change_id}` unless the caller gave
    /// one (then the reason ends with the change id in brackets).
    pub(crate) fn applied(&self, change_id: &str) -> Self {
        ChangeBy {
            actor: self.actor.clone(),
            reason: Some(match &self.reason {
                Some(reason) => format!("{reason} [apply {change_id}]"),
                None => format!("apply {change_id}"),
            }),
            origin: Some("apply".into()),
        }
    }

    /// The re-plan of a job because the calendar `name` changed: action `calendar:update`.
    pub(crate) fn calendar(&self, name: &str) -> Self {
        ChangeBy {
            actor: self.actor.clone(),
            reason: Some(
                self.reason
                    .clone()
                    .unwrap_or_else(|| format!("calendar {name} changed")),
            ),
            origin: Some("calendar".into()),
        }
    }

    /// The action an entry records for the use case `action`.
    fn action(&self, action: &str) -> String {
        match &self.origin {
            // A bulk origin names the action itself.
            Some(origin) if origin.starts_with("bulk:") => origin.clone(),
            Some(origin) => format!("{origin}:{action}"),
            None => action.to_owned(),
        }
    }
}

/// What an entry records of one change, beside who and why.
pub(crate) struct Entry<'a> {
    /// The use case's action (`create`, `pause`, …).
    pub action: &'a str,
    /// The job after the change; `None` for a deletion.
    pub after: Option<&'a Job>,
    /// The definition before the change, for an update's diff.
    pub before: Option<&'a Job>,
    /// The version the change leaves (a deletion: the version it removed plus one).
    pub version: u64,
    /// Notes of a pause or unpause: the entry's reason when the caller gave none.
    pub notes: Option<&'a str>,
    /// Fields of this action (`executionId` of a trigger, `count` of a backfill).
    pub details: Map<String, Value>,
}

impl<'a> Entry<'a> {
    pub(crate) fn new(action: &'a str, after: Option<&'a Job>, version: u64) -> Self {
        Entry {
            action,
            after,
            before: None,
            version,
            notes: None,
            details: Map::new(),
        }
    }
}

/// The record of `entry` about the job `job_id`, made at `at` by `by`. Only creations and
/// updates (the entries whose action ends in `create` or `update`) carry the definition they put
/// in force, and updates the fields that changed; every entry carries the job's state after it.
pub(crate) fn audit_record(
    by: &ChangeBy,
    job_id: &JobId,
    at: DateTime<Utc>,
    entry: Entry<'_>,
) -> AuditRecord {
    static NONCE: AtomicU64 = AtomicU64::new(0);
    let nonce = NONCE
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::from(d.subsec_nanos()));
    // Milliseconds, as the store keeps times and answers show a job's timestamps.
    let at = at.trunc_subsecs(3);
    let action = by.action(entry.action);
    let mut document = Map::new();
    document.insert("at".into(), json_time(at));
    document.insert("jobId".into(), json!(job_id.as_str()));
    document.insert("actor".into(), json!(by.actor.name()));
    document.insert("action".into(), json!(action));
    if let Some(reason) = by.reason.as_deref().or(entry.notes) {
        document.insert("reason".into(), json!(reason));
    }
    document.insert("version".into(), json!(entry.version));
    let state = entry.after.map_or("deleted", |job| job.status().name());
    document.insert("state".into(), json!(state));
    let sets_definition = entry.action == "create" || entry.action == "update";
    if let (Some(after), true) = (entry.after, sets_definition) {
        if let Some(before) = entry.before {
            let changes: Vec<Value> = definition_changes(
                before.definition.as_written(),
                after.definition.as_written(),
            )
            .into_iter()
            .map(|change| {
                let mut field = Map::new();
                field.insert("path".into(), json!(change.path));
                if let Some(old) = change.old {
                    field.insert("old".into(), old);
                }
                if let Some(new) = change.new {
                    field.insert("new".into(), new);
                }
                Value::Object(field)
            })
            .collect();
            let size = serde_json::to_vec(&changes).map_or(usize::MAX, |bytes| bytes.len());
            let changes = if size <= MAX_CHANGES_BYTES {
                changes
            } else {
                document.insert("changesTruncated".into(), Value::Bool(true));
                changes
                    .into_iter()
                    .map(|change| json!({"path": change["path"]}))
                    .collect()
            };
            document.insert("changes".into(), Value::Array(changes));
        }
        document.insert("definition".into(), after.definition.as_shown());
        // The calendars the definition names, as they were: what it meant then (the ledger).
        let calendars = after.definition.calendars();
        if !calendars.is_empty() {
            document.insert(
                "calendars".into(),
                Value::Array(calendars.iter().map(|c| c.to_json()).collect()),
            );
        }
    }
    document.extend(entry.details);
    AuditRecord {
        job_id: job_id.to_string(),
        entry_id: entry_id(at, entry.version, nonce),
        at,
        document: Value::Object(document),
    }
}

impl<S: Store> App<S> {
    /// A job's audit trail, newest first (`GET /jobs/{jobId}/history`). A deleted job's trail
    /// stays until retention removes it, so an unknown job has an empty trail, not a 404.
    pub async fn history(
        &self,
        job_id: &JobId,
        page: &PageRequest,
    ) -> Result<Page<Value>, AppError> {
        self.audit_entries(job_id, &AuditQuery::default(), page)
            .await
    }

    /// A job's audit entries matching `query` (a time range, either order), as the history
    /// route shows them: what the non-run ledger reads to know the definition in force at a
    /// time (the latest entry with a `definition` before it, unless a later one is `deleted`).
    pub async fn audit_entries(
        &self,
        job_id: &JobId,
        query: &AuditQuery,
        page: &PageRequest,
    ) -> Result<Page<Value>, AppError> {
        let records = self.store.list_audit(job_id.as_str(), query, page).await?;
        Ok(Page {
            items: records.items.into_iter().map(|r| r.document).collect(),
            next_cursor: records.next_cursor,
        })
    }

    /// Retention of the audit trail, by the rule of the executions'
    /// ([`App::clean`]): the newest `retain` entries of every job, none of a deleted job's when
    /// `purge_deleted_jobs`.
    pub(crate) async fn clean_audit(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> Result<AuditCleanReport, AppError> {
        Ok(self.store.clean_audit(retain, purge_deleted_jobs).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_take_their_origin() {
        let by = ChangeBy::new(Actor::new("alice"));
        assert_eq!(by.action("pause"), "pause");
        assert_eq!(by.declaration("billing").action("create"), "timers:create");
        assert_eq!(by.applied("c1").action("update"), "apply:update");
        assert_eq!(by.applied("c1").reason.as_deref(), Some("apply c1"));
        assert_eq!(
            ChangeBy::bulk(Actor::new("bob"), "pause", "maintenance").action("pause"),
            "bulk:pause"
        );
    }
}
