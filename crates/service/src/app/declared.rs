//! Jobs declared as a whole set, reconciled with the stored ones by one three-way merge
//! ([`plan_reconcile`]): a service's timer list (`PUT /services/{serviceName}/timers`) and the
//! job files of a repository (`POST /apply`, `sundial apply`).
//!
//! Both send every job they declare. The set is checked whole before anything is written; each
//! declared job is created, merged (only the fields the declaration changed since the one kept
//! with the job are written: an operator's pause, notes, labels and edits of other fields stay) or
//! left as it is; and the jobs of the set's scope that it no longer declares are removed. They
//! differ in what they own: a service owns the jobs it declared; an apply owns the jobs an apply
//! wrote, and removes one only when asked to prune, within a label selector.

use std::collections::BTreeMap;

use serde_json::Value;
use sundial_core::declaration::{plan_reconcile, Reconcile};
use sundial_core::job::{
    definition_changes, FieldChange, FieldError, Job, JobDefinition, JobDocument, JobId,
    LabelSelector, ServiceName,
};
use sundial_core::spec::CalendarSet;

use super::bulk::label_selectors;
use super::jobs::Declarer;
use super::{field_error, App, AppError, ChangeBy, DeclarationReport};
use crate::records::{decode_job, StoredJob};
use sundial_ports::store::{JobFilter, JobOrder, PageRequest, Store};

/// The most jobs one apply may declare.
pub const MAX_APPLY_JOBS: usize = 1000;

/// A checked `POST /apply` request: the jobs of some files, and what else to remove.
#[derive(Clone, Debug)]
pub struct ApplyRequest {
    /// The declared jobs, each a job definition with its `jobId`.
    pub jobs: Vec<Value>,
    /// Remove the jobs an apply wrote before that match these labels and are not declared now.
    /// `None`: remove nothing.
    pub prune: Option<Vec<LabelSelector>>,
    /// Only say what would change.
    pub dry_run: bool,
    /// The change's id in the audit trail (a commit, say); one is made when not given.
    pub change_id: Option<String>,
}

impl ApplyRequest {
    /// Reads `{"jobs": [job, …], "prune": {"labels": {key: value, …}}, "dryRun": bool,
    /// "changeId": string}`. `prune` selects by its labels (at least one) the jobs that may be
    /// removed. Errors name the field.
    pub fn parse(body: &Value) -> Result<ApplyRequest, AppError> {
        const FIELDS: [&str; 4] = ["jobs", "prune", "dryRun", "changeId"];
        let Value::Object(obj) = body else {
            return Err(field_error(
                "body",
                format!("expected an object of {}", FIELDS.join(", ")),
            ));
        };
        if let Some(key) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(field_error(
                key,
                format!("unknown field; expected one of {}", FIELDS.join(", ")),
            ));
        }
        let jobs = match obj.get("jobs") {
            Some(Value::Array(jobs)) if jobs.len() <= MAX_APPLY_JOBS => jobs.clone(),
            Some(Value::Array(jobs)) => {
                return Err(field_error(
                    "jobs",
                    format!("{} jobs; at most {MAX_APPLY_JOBS} per apply", jobs.len()),
                ))
            }
            Some(_) => return Err(field_error("jobs", "expected an array of job definitions")),
            None => return Err(field_error("jobs", "required")),
        };
        let prune = match obj.get("prune") {
            None | Some(Value::Null) => None,
            Some(Value::Object(prune)) => {
                if let Some(key) = prune.keys().find(|k| k.as_str() != "labels") {
                    return Err(field_error(
                        &format!("prune.{key}"),
                        "unknown field; expected labels",
                    ));
                }
                let labels = label_selectors(prune.get("labels")).map_err(|e| match e {
                    AppError::Invalid(e) => AppError::Invalid(e.under("prune")),
                    other => other,
                })?;
                if labels.is_empty() {
                    return Err(field_error(
                        "prune.labels",
                        "required: at least one label, selecting the jobs the prune may remove",
                    ));
                }
                Some(labels)
            }
            Some(_) => {
                return Err(field_error(
                    "prune",
                    "expected {\"labels\": {key: value, …}}",
                ))
            }
        };
        let dry_run = match obj.get("dryRun") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(field_error("dryRun", "expected a boolean")),
        };
        let change_id = match obj.get("changeId") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if valid_change_id(id) => Some(id.clone()),
            Some(_) => {
                return Err(field_error(
                    "changeId",
                    "expected 1–128 characters of A–Z a–z 0–9 _ . : / -",
                ))
            }
        };
        Ok(ApplyRequest {
            jobs,
            prune,
            dry_run,
            change_id,
        })
    }
}

fn valid_change_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:/-".contains(c))
}

/// What an apply changed, or with `dryRun` would change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApplyReport {
    /// The change's id in the audit trail.
    pub change_id: String,
    /// Nothing was written.
    pub dry_run: bool,
    /// Jobs created.
    pub created: Vec<String>,
    /// Jobs updated, each with its changes by JSON pointer (secret header values redacted, as the
    /// audit trail shows them).
    pub updated: BTreeMap<String, Vec<FieldChange>>,
    /// Jobs the files did not change since the last apply.
    pub unchanged: Vec<String>,
    /// Jobs pruned: written by an apply, matching the selector, no longer declared.
    pub deleted: Vec<String>,
}

impl ApplyReport {
    /// Whether the server differs from the files (something was, or would be, changed).
    pub fn differs(&self) -> bool {
        !(self.created.is_empty() && self.updated.is_empty() && self.deleted.is_empty())
    }
}

/// Whose set of declared jobs is reconciled.
enum Scope<'a> {
    /// A service's timer list: the service owns what it declares, and removes what it no longer
    /// declares.
    Service(&'a str),
    /// An apply: owns the jobs an apply wrote (no service's); removes those the selector matches
    /// when pruning.
    Apply { prune: Option<&'a [LabelSelector]> },
}

/// What a declaration changes on one stored job: the top-level fields it writes, and the changes
/// of the definition by JSON pointer, redacted as reads show them.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct DeclaredChange {
    pub fields: Vec<String>,
    pub changes: Vec<FieldChange>,
}

impl DeclaredChange {
    /// The change from the definition `before` to `after` (as written) of the `fields` a
    /// declaration writes.
    pub(super) fn new(fields: Vec<String>, before: &Value, after: &Value) -> Self {
        DeclaredChange {
            fields,
            changes: definition_changes(before, after),
        }
    }
}

/// What a reconciliation did (or, dry, would do).
#[derive(Default)]
struct Reconciled {
    created: Vec<String>,
    updated: BTreeMap<String, DeclaredChange>,
    unchanged: Vec<String>,
    removed: Vec<String>,
}

impl<S: Store> App<S> {
    /// Reconciles the jobs a service declares (docs/api.md's timer list and its check-timers job,
    /// read from its envelope by [`timer_list`]): creates the missing, updates the changed,
    /// removes the undeclared. Idempotent. Every job it creates, updates or removes gets an entry
    /// `timers:create`, `timers:update` (with the fields changed) or `timers:delete` in its audit
    /// trail. A declared job that exists is merged three ways ([`plan_reconcile`]): only the fields
    /// the code changed since its previous declaration are applied; its pause state, pause notes
    /// and labels are never touched, and an operator's edit of a field the code did not change
    /// stays.
    pub async fn reconcile_declared_jobs_by(
        &self,
        by: &ChangeBy,
        service: &str,
        list: &[Value],
    ) -> Result<DeclarationReport, AppError> {
        let by = &by.declaration(service);
        let service = ServiceName::parse(service)?;
        let service = service.as_str();
        let done = self
            .reconcile(by, &Scope::Service(service), "timer", list, false)
            .await?;
        tracing::info!(
            service,
            created = done.created.len(),
            updated = done.updated.len(),
            removed = done.removed.len(),
            "timers reconciled"
        );
        Ok(DeclarationReport {
            created: done.created,
            changed_fields: done
                .updated
                .iter()
                .map(|(id, change)| (id.clone(), change.fields.clone()))
                .collect(),
            updated: done.updated.into_keys().collect(),
            unchanged: done.unchanged,
            removed: done.removed,
        })
    }

    /// Applies a set of job files (`POST /apply`) by `by`, with the three-way merge of declared
    /// timers: jobs missing are created, the fields the files changed since the last apply are
    /// written (an operator's pause, notes, labels and edits of other fields stay), and with
    /// `prune` the jobs an apply wrote before that match the selector and are no longer declared
    /// are deleted. Audited as `apply:create`, `apply:update`, `apply:delete` with the change id.
    /// With `dryRun` it writes nothing and says what it would do.
    pub async fn apply_jobs_by(
        &self,
        by: &ChangeBy,
        request: &ApplyRequest,
    ) -> Result<ApplyReport, AppError> {
        let change_id = match &request.change_id {
            Some(id) => id.clone(),
            None => self.now().format("%Y%m%dT%H%M%S%.3fZ").to_string(),
        };
        let scope = Scope::Apply {
            prune: request.prune.as_deref(),
        };
        let done = self
            .reconcile(
                &by.applied(&change_id),
                &scope,
                "jobs",
                &request.jobs,
                request.dry_run,
            )
            .await?;
        if !request.dry_run {
            tracing::info!(
                change_id,
                created = done.created.len(),
                updated = done.updated.len(),
                deleted = done.removed.len(),
                "jobs applied"
            );
        }
        Ok(ApplyReport {
            change_id,
            dry_run: request.dry_run,
            created: done.created,
            updated: done
                .updated
                .into_iter()
                .map(|(id, change)| (id, change.changes))
                .collect(),
            unchanged: done.unchanged,
            deleted: done.removed,
        })
    }

    /// Reconciles the jobs `list` declares (each at `{path}[i]`) within `scope`: checks the whole
    /// list (ids, definitions, ownership) before writing anything, then creates, merges or leaves
    /// each job, then removes the scope's jobs the list does not declare. `dry` writes nothing.
    async fn reconcile(
        &self,
        by: &ChangeBy,
        scope: &Scope<'_>,
        path: &str,
        list: &[Value],
        dry: bool,
    ) -> Result<Reconciled, AppError> {
        let mut declared = BTreeMap::new();
        for (i, body) in list.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let id = body
                .get("jobId")
                .and_then(Value::as_str)
                .ok_or_else(|| field_error(&format!("{at}.jobId"), "required"))?;
            let job_id = JobId::parse(id).map_err(|e| AppError::Invalid(e.under(&at)))?;
            let document =
                JobDocument::read(&job_id, body).map_err(|e| AppError::Invalid(e.under(&at)))?;
            if declared
                .insert(job_id.to_string(), (at, document))
                .is_some()
            {
                return Err(field_error(
                    &format!("{path}[{i}].jobId"),
                    format!("{id:?} is declared twice"),
                ));
            }
        }
        let mut existing = BTreeMap::new();
        for id in declared.keys() {
            if let Some(record) = self.store().get_job(id).await? {
                existing.insert(id.clone(), decode_job(&record)?);
            }
        }
        // Every definition, so a bad entry changes nothing.
        let now = self.now();
        for (id, (at, document)) in &declared {
            let (job_id, body) = (document.job_id(), document.body());
            // A service declares its timers with their real values: no redaction markers. A job
            // file may keep a stored secret header's marker (as `sundial export` writes it).
            let previous = match scope {
                Scope::Service(_) => None,
                Scope::Apply { .. } => existing.get(id).map(|e| &e.job.definition),
            };
            let calendars = self.calendars_for(body).await?;
            let definition =
                JobDefinition::parse_submitted_with(job_id, body, now, previous, &calendars)
                    .map_err(|e| AppError::Invalid(e.under(at)))?;
            self.check_platform_limits(&definition)
                .map_err(|e| match e {
                    AppError::Invalid(e) => AppError::Invalid(e.under(at)),
                    other => other,
                })?;
        }
        // Ownership of every declared id, before anything is written.
        for (id, job) in &existing {
            check_owner(scope, id, job)?;
        }
        let declarer = match scope {
            Scope::Service(service) => Declarer::Service(service.to_string()),
            Scope::Apply { .. } => Declarer::Apply,
        };
        let mut done = Reconciled::default();
        for (id, (_, document)) in &declared {
            let body = document.body();
            let stored = existing.get(id);
            let plan = plan_reconcile(
                stored.and_then(|e| e.job.state.declaration.as_ref()),
                body,
                stored.map(|e| e.job.definition.as_written()),
            );
            match (plan, stored) {
                (Reconcile::Create, _) | (_, None) => {
                    if !dry {
                        self.create_job_for(by, document, declarer.clone()).await?;
                    }
                    done.created.push(id.clone());
                }
                (Reconcile::Unchanged { record: false }, Some(_)) => {
                    done.unchanged.push(id.clone())
                }
                (Reconcile::Unchanged { record: true }, Some(_)) if dry => {
                    done.unchanged.push(id.clone())
                }
                (Reconcile::Update { fields, definition }, Some(stored)) if dry => {
                    // What the write would store: secret markers restored, as it restores them.
                    let calendars = self.calendars_for(&definition).await?;
                    let merged = merged_definition(&stored.job, &definition, &calendars)?;
                    let change = DeclaredChange::new(
                        fields,
                        stored.job.definition.as_written(),
                        merged.as_written(),
                    );
                    if change.changes.is_empty() {
                        done.unchanged.push(id.clone());
                    } else {
                        done.updated.insert(id.clone(), change);
                    }
                }
                (Reconcile::Unchanged { record: true } | Reconcile::Update { .. }, Some(_)) => {
                    match self.apply_declaration(by, document).await? {
                        Some(change) => {
                            done.updated.insert(id.clone(), change);
                        }
                        None => done.unchanged.push(id.clone()),
                    }
                }
            }
        }
        for id in self.undeclared(scope, &declared).await? {
            if !dry {
                self.delete_recorded(by, &id).await?;
            }
            done.removed.push(id);
        }
        Ok(done)
    }

    /// The jobs of `scope` that `declared` does not list, by id: a service's other jobs; with an
    /// apply's prune, the jobs an apply wrote (they keep its declaration, and no service owns
    /// them) that match the selector.
    async fn undeclared<T>(
        &self,
        scope: &Scope<'_>,
        declared: &BTreeMap<String, T>,
    ) -> Result<Vec<String>, AppError> {
        let filter = match scope {
            Scope::Service(service) => JobFilter {
                service: Some(service.to_string()),
                ..JobFilter::default()
            },
            Scope::Apply { prune: None } => return Ok(Vec::new()),
            Scope::Apply {
                prune: Some(labels),
            } => JobFilter {
                labels: labels.to_vec(),
                ..JobFilter::default()
            },
        };
        let mut cursor = None;
        let mut stale = Vec::new();
        loop {
            let page = self
                .store()
                .list_jobs(&filter, JobOrder::Id, &PageRequest { limit: 500, cursor })
                .await?;
            for record in page.items {
                if declared.contains_key(&record.job_id) {
                    continue;
                }
                if let Scope::Apply { .. } = scope {
                    let job = decode_job(&record)?;
                    if job.service.is_some() || job.job.state.declaration.is_none() {
                        continue;
                    }
                }
                stale.push(record.job_id);
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        Ok(stale)
    }
}

/// The definition a declaration's merge `merged` of the stored `job` parses to: as an update, a
/// secret header's `***` keeps the stored value.
pub(super) fn merged_definition(
    job: &Job,
    merged: &Value,
    calendars: &CalendarSet,
) -> Result<JobDefinition, FieldError> {
    JobDefinition::parse_submitted_with(
        job.definition.job_id(),
        merged,
        job.created_at,
        Some(&job.definition),
        calendars,
    )
}

/// Refuses a declared id whose stored job another owner has: a service's job for another service
/// or for an apply, and for a service a job nobody declared.
fn check_owner(scope: &Scope<'_>, id: &str, job: &StoredJob) -> Result<(), AppError> {
    match (scope, job.service.as_deref()) {
        (Scope::Service(service), Some(owner)) if owner == *service => Ok(()),
        (Scope::Service(service), _) => Err(AppError::Conflict(format!(
            "job {id} exists and is not declared by service {service}"
        ))),
        (Scope::Apply { .. }, None) => Ok(()),
        (Scope::Apply { .. }, Some(owner)) => Err(AppError::Conflict(format!(
            "job {id} is declared by service {owner}; change it through that service's timer list"
        ))),
    }
}

/// A timer list's jobs, read from the body of `PUT /services/{serviceName}/timers`:
/// `{"timer": […]}`, `{"timers": […]}` or a bare array.
pub fn timer_list(timers: &Value) -> Result<&[Value], AppError> {
    match timers {
        Value::Array(list) => Ok(list),
        Value::Object(obj) => {
            // Exactly one of `timer` and `timers` (docs/api.md, "Declarative timers"): anything
            // else beside it is a typo or a misunderstanding, refused like an unknown field.
            if let Some(key) = obj
                .keys()
                .find(|k| !matches!(k.as_str(), "timer" | "timers"))
            {
                return Err(field_error(
                    key,
                    "unknown field; expected {\"timer\": [job, …]} (or \"timers\")",
                ));
            }
            if obj.contains_key("timer") && obj.contains_key("timers") {
                return Err(field_error(
                    "timers",
                    "give either timer or timers, not both",
                ));
            }
            match obj.get("timer").or_else(|| obj.get("timers")) {
                Some(Value::Array(list)) => Ok(list),
                _ => Err(field_error("timer", "expected an array of job definitions")),
            }
        }
        _ => Err(field_error("timer", "expected an array of job definitions")),
    }
}
