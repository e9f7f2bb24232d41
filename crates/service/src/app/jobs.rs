//! Job lifecycle: create, read, update, pause, delete, list, and the merge of a declared job.

use std::collections::BTreeMap;

use serde_json::Value;
use sundial_core::change::{affected_runs, AffectedRun, RunPlace, UnstartedRun};
use sundial_core::declaration::{plan_reconcile, Reconcile};
use sundial_core::execution::incarnation_of_execution;
use sundial_core::job::{
    Job, JobDefinition, JobDocument, JobId, JobState, JobStatus, LabelSelector, PauseEnd,
};

use super::calendars;
use super::declared::{merged_definition, DeclaredChange};
use super::{
    audit_race, audit_record, field_error, upcoming_fires, App, AppError, ChangeBy, Entry,
};
use crate::records::{decode_execution, decode_job, encode_job, json_time, time_text, StoredJob};
use chrono::{DateTime, Utc};
use sundial_ports::store::{
    JobFilter, JobOrder, Page, PageRequest, Store, StoreError, Write, WriteAllError,
};

/// Who declares a job being created, if anyone: a declarer's next declaration of it is merged
/// three ways against the one kept with the job (`app::declared`).
#[derive(Clone, Debug)]
pub(super) enum Declarer {
    /// Created by a request of its own (`POST /jobs/{jobId}`): no declaration kept.
    None,
    /// Declared by this service's timer list, which owns it.
    Service(String),
    /// Declared by an apply of job files.
    Apply,
}

/// How many next fire times a preview of a change shows before and after (as `describe` shows).
const PREVIEW_FIRES: usize = 10;

/// What a change of a job's definition would do (`POST /jobs/{jobId}/update?dryRun=true`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdatePreview {
    /// The next fire times now, with jitter, in the schedule's zone.
    pub before: Vec<String>,
    /// The next fire times with the change.
    pub after: Vec<String>,
    /// The runs not yet started the change would affect, and how.
    pub affected: Vec<AffectedRun>,
    /// What an update with this body would warn about.
    pub warnings: Vec<String>,
    /// The definition the preview was made against (a hash of it as written): an update given it
    /// ([`App::update_job_if_by`]) is refused if the definition changed since.
    pub definition_tag: String,
}

/// A short tag of `job`'s definition as written (pausing and resuming change it; the engine's
/// records of fires do not), so that a change previewed against one definition is not saved
/// over another (the console's edit page).
pub(crate) fn definition_tag(job: &Job) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    job.definition.as_written().to_string().hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// What `PUT /services/{name}/timers` changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeclarationReport {
    /// Jobs created.
    pub created: Vec<String>,
    /// Jobs whose definition changed: the fields the code changed were applied.
    pub updated: Vec<String>,
    /// For each updated job, the fields the code changed (and the update applied), in name order.
    pub changed_fields: BTreeMap<String, Vec<String>>,
    /// Jobs already as declared.
    pub unchanged: Vec<String>,
    /// Jobs of the service that the list no longer declares.
    pub removed: Vec<String>,
}

/// The list filters of `GET /jobs` and of the bulk actions, checked: a 400 names `state` or
/// `idPrefix` (label selectors are parsed by their reader, which names them).
pub fn job_filter(
    state: Option<String>,
    creator: Option<String>,
    parent_job: Option<String>,
    service: Option<String>,
    id_prefix: Option<String>,
    labels: Vec<LabelSelector>,
) -> Result<JobFilter, AppError> {
    if let Some(state) = &state {
        if JobStatus::parse(state).is_none() {
            return Err(field_error(
                "state",
                format!("expected active or paused, got {state:?}"),
            ));
        }
    }
    if let Some(prefix) = &id_prefix {
        // A prefix of an id is an id as far as its characters go.
        JobId::parse(prefix).map_err(|e| field_error("idPrefix", e.message))?;
    }
    Ok(JobFilter {
        state,
        creator,
        parent_job,
        service,
        labels,
        id_prefix,
    })
}

impl<S: Store> App<S> {
    /// Creates a job from a docs/api.md body (`POST /jobs/{jobId}`), as an anonymous caller.
    pub async fn create_job(&self, job_id: &JobId, body: &Value) -> Result<Job, AppError> {
        let document = JobDocument::read(job_id, body)?;
        self.create_job_by(&ChangeBy::anonymous(), &document).await
    }

    /// Creates the job `document` defines, by `by`, recorded in the job's audit trail with the
    /// definition.
    pub async fn create_job_by(
        &self,
        by: &ChangeBy,
        document: &JobDocument,
    ) -> Result<Job, AppError> {
        self.create_job_for(by, document, Declarer::None).await
    }

    /// Creates a job; a declarer keeps its document as the job's declaration for the next merge.
    pub(super) async fn create_job_for(
        &self,
        by: &ChangeBy,
        document: &JobDocument,
        declarer: Declarer,
    ) -> Result<Job, AppError> {
        let (job_id, body) = (document.job_id(), document.body());
        let now = self.now();
        // A redaction marker has no stored value to keep on create: refused naming the header.
        let calendars = self.listed_calendars_for(document).await?;
        let definition = JobDefinition::parse_submitted_with(job_id, body, now, None, &calendars)?;
        self.check_platform_limits(&definition)?;
        if let Some(parent) = definition.parent_job() {
            if parent == job_id {
                return Err(field_error("parentJob", "a job cannot be its own parent"));
            }
        }
        let mut state = JobState::for_definition(&definition);
        if !matches!(declarer, Declarer::None) {
            state.declaration = Some(body.clone());
        }
        let service = match declarer {
            Declarer::Service(service) => Some(service),
            Declarer::None | Declarer::Apply => None,
        };
        // A job id used before (deleted, its executions kept) starts a new incarnation: new
        // execution ids, and execute numbers that continue after the old job's.
        let last = self
            .store
            .list_executions(job_id.as_str(), &PageRequest::first(1))
            .await?
            .items
            .into_iter()
            .next();
        if let Some(last) = last {
            state.incarnation = incarnation_of_execution(&last.execution_id).saturating_add(1);
            state.next_execute_number = last.execute_number.saturating_add(1);
        }
        // Children may have been declared before their parent.
        let children = JobFilter {
            parent_job: Some(job_id.to_string()),
            ..JobFilter::default()
        };
        state.has_children = !self
            .store
            .list_jobs(&children, JobOrder::Id, &PageRequest::first(1))
            .await?
            .items
            .is_empty();
        let job = Job {
            definition,
            state,
            created_at: now,
            updated_at: now,
        };
        let record = encode_job(&job, 1, service);
        let entry = audit_record(by, job_id, now, Entry::new("create", Some(&job), 1));
        let uses = calendars::names_of(&job.definition.calendars());
        let mut writes = vec![Write::CreateJob(&record), Write::AppendAudit(&entry)];
        let first_check = writes.len();
        writes.extend(calendars::calendar_checks(job_id.as_str(), &uses));
        match self.store.write_all(&writes).await {
            Err(WriteAllError {
                index: Some(0),
                error: StoreError::AlreadyExists(_),
            }) => {
                return Err(AppError::Conflict(format!("job {job_id} already exists")));
            }
            Err(e) => match calendars::lost_listing(job_id, &e, first_check) {
                Some(lost) => return Err(lost),
                None => return Err(audit_race(e).into()),
            },
            Ok(()) => {}
        }
        self.refresh_wakeup(&job).await?;
        self.catch_up_calendars(by, &job).await?;
        self.plan_now(&job).await;
        self.mark_parent(&job).await?;
        tracing::info!(job_id = %job_id, "job created");
        Ok(job)
    }

    /// Records on a job's parent that it has children (see [`JobState::has_children`]). A parent
    /// that does not exist (yet) is no error: it finds its children when it is created.
    async fn mark_parent(&self, child: &Job) -> Result<(), AppError> {
        let Some(parent) = child.definition.parent_job() else {
            return Ok(());
        };
        let known = match self.load(parent).await {
            Ok(stored) if stored.job.state.has_children => return Ok(()),
            Ok(stored) => stored,
            Err(AppError::NotFound(_)) => return Ok(()),
            Err(e) => return Err(e),
        };
        match self
            .modify_from(Some(known), parent, |stored| {
                stored.job.state.has_children = true;
                Ok(())
            })
            .await
        {
            Ok(_) | Err(AppError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// What is worth telling the caller about a job just created or updated that does not make it
    /// invalid (see [`JobDefinition::warnings`]): a schedule that never fires, for one.
    pub fn warnings(&self, job: &Job) -> Vec<String> {
        job.definition.warnings(self.now())
    }

    /// Reads a job (`GET /jobs/{jobId}`).
    pub async fn get_job(&self, job_id: &JobId) -> Result<Job, AppError> {
        Ok(self.load(job_id).await?.job)
    }

    /// Pauses or resumes a job; `notes` say why (`PUT ?active=`, `/pause`, `/unpause`), as an
    /// anonymous caller.
    pub async fn set_active(
        &self,
        job_id: &JobId,
        active: bool,
        notes: Option<String>,
    ) -> Result<Job, AppError> {
        self.set_active_by(&ChangeBy::anonymous(), job_id, active, notes)
            .await
    }

    /// [`App::set_active`] by `by`, recorded in the job's audit trail (`pause` or `unpause`,
    /// the notes as the reason unless `by` gives one).
    pub async fn set_active_by(
        &self,
        by: &ChangeBy,
        job_id: &JobId,
        active: bool,
        notes: Option<String>,
    ) -> Result<Job, AppError> {
        if !active {
            return self.pause_by(by, job_id, notes, None).await;
        }
        let now = self.now();
        let (stored, ()) = self
            .modify_recorded(
                None,
                job_id,
                |stored| {
                    stored.job.unpause(notes.clone(), now);
                    Ok(())
                },
                |_, after, version| {
                    let mut entry = Entry::new("unpause", Some(after), version);
                    entry.notes = notes.as_deref();
                    Some(audit_record(by, job_id, now, entry))
                },
            )
            .await?;
        self.plan_now(&stored.job).await;
        tracing::info!(job_id = %job_id, "job resumed");
        Ok(stored.job)
    }

    /// Pauses a job by `by`, with `notes`, until resumed or, with `until`, until then
    /// (`POST /jobs/{jobId}/pause`): the tick resumes it at `until` as the system
    /// (`App::end_pause`). `until` must be later than now (else a 400 naming `until`). Recorded
    /// as `pause`, with `until` in the entry.
    pub async fn pause_by(
        &self,
        by: &ChangeBy,
        job_id: &JobId,
        notes: Option<String>,
        until: Option<PauseEnd>,
    ) -> Result<Job, AppError> {
        let now = self.now();
        let until = match until {
            None => None,
            Some(end) => Some(end.at(now).ok_or_else(|| {
                field_error("until", "the pause would end past the range of times")
            })?),
        };
        if let Some(until) = until {
            if until <= now {
                return Err(field_error(
                    "until",
                    format!(
                        "the pause would end at {}, which is not later than now ({})",
                        time_text(until),
                        time_text(now)
                    ),
                ));
            }
        }
        let (stored, ()) = self
            .modify_recorded(
                None,
                job_id,
                |stored| {
                    stored.job.pause_until(notes.clone(), now, until);
                    Ok(())
                },
                |_, after, version| {
                    let mut entry = Entry::new("pause", Some(after), version);
                    entry.notes = notes.as_deref();
                    if let Some(until) = until {
                        entry.details.insert("until".into(), json_time(until));
                    }
                    Some(audit_record(by, job_id, now, entry))
                },
            )
            .await?;
        if let Some(engine) = self.engine() {
            engine.paused(job_id);
        }
        tracing::info!(job_id = %job_id, ?until, "job paused");
        Ok(stored.job)
    }

    /// Resumes `job_id` if it is paused with an end (`pausedUntil`) that has come at `now`, as
    /// the system (the entry `unpause` gives the end as its reason): what the tick does when a
    /// paused job's wake-up comes. The schedule resumes at the end of the pause, not at `now`, so a
    /// tick that comes a little late still runs the fires due from the end on (within the
    /// catch-up window). `known` is the job as the tick read it. Answers whether it resumed: not
    /// when the job was resumed, deleted or paused again meanwhile.
    pub(crate) async fn end_pause(
        &self,
        known: StoredJob,
        job_id: &JobId,
        now: DateTime<Utc>,
    ) -> Result<bool, AppError> {
        const NOT_ENDED: &str = "the pause has no end that has come";
        let result = self
            .modify_recorded(
                Some(known),
                job_id,
                |stored| {
                    let until = stored
                        .job
                        .state
                        .paused_until
                        .filter(|_| stored.job.pause_ended(now))
                        .ok_or_else(|| AppError::Conflict(NOT_ENDED.into()))?;
                    stored.job.unpause(None, until);
                    Ok(())
                },
                |before, after, version| {
                    let until = before.state.paused_until?;
                    let by = ChangeBy::system()
                        .with_reason(format!("the pause until {} ended", time_text(until)));
                    Some(audit_record(
                        &by,
                        job_id,
                        now,
                        Entry::new("unpause", Some(after), version),
                    ))
                },
            )
            .await;
        match result {
            Ok(_) => {
                tracing::info!(job_id = %job_id, "the pause ended: job resumed");
                Ok(true)
            }
            Err(AppError::Conflict(why)) if why == NOT_ENDED => Ok(false),
            Err(AppError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Replaces a job's definition, keeping its state and history (`POST /jobs/{jobId}/update`),
    /// as an anonymous caller. The caller runs it afterwards.
    pub async fn update_job(&self, job_id: &JobId, body: &Value) -> Result<Job, AppError> {
        let document = JobDocument::read(job_id, body)?;
        self.update_job_by(&ChangeBy::anonymous(), &document).await
    }

    /// Replaces the definition of the job `document` names by it, by `by`, recorded in the job's
    /// audit trail with the fields that changed and the definition after.
    pub async fn update_job_by(
        &self,
        by: &ChangeBy,
        document: &JobDocument,
    ) -> Result<Job, AppError> {
        self.update_job_if_by(by, document, None).await
    }

    /// [`App::update_job_by`], refused (`Conflict`) when `previewed` is given and the job's
    /// definition is no longer the one it tags ([`UpdatePreview::definition_tag`]): someone
    /// changed, paused or resumed the job since the preview.
    pub async fn update_job_if_by(
        &self,
        by: &ChangeBy,
        document: &JobDocument,
        previewed: Option<&str>,
    ) -> Result<Job, AppError> {
        let (job_id, body) = (document.job_id(), document.body());
        let now = self.now();
        // Listed under its calendars before it is written (docs/engine.md, "Calendars").
        let calendars = self.listed_calendars_for(document).await?;
        let uses = calendars::names_of(&calendars);
        let (stored, before) = self
            .modify_listed(
                None,
                job_id,
                &uses,
                |stored| {
                    if previewed.is_some_and(|tag| tag != definition_tag(&stored.job)) {
                        return Err(AppError::Conflict(format!(
                            "job {job_id} was changed, paused or resumed since the preview: preview the change again"
                        )));
                    }
                    // A header value a read showed as the redaction marker keeps the stored secret.
                    let definition = JobDefinition::parse_submitted_with(
                        job_id,
                        body,
                        stored.job.created_at,
                        Some(&stored.job.definition),
                        &calendars,
                    )?;
                    self.check_platform_limits(&definition)?;
                    let before = stored.job.definition.calendars();
                    // The body is the whole job (docs/api.md): its `active` decides.
                    stored.job.apply_definition(definition);
                    Ok(before)
                },
                |before, after, version| {
                    let mut entry = Entry::new("update", Some(after), version);
                    entry.before = Some(before);
                    Some(audit_record(by, job_id, now, entry))
                },
            )
            .await?;
        self.unlist_calendar_user(job_id, &before, Some(&stored.job.definition.calendars()))
            .await?;
        self.catch_up_calendars(by, &stored.job).await?;
        self.plan_now(&stored.job).await;
        self.mark_parent(&stored.job).await?;
        Ok(stored.job)
    }

    /// What replacing a job's definition by `body` would do (`POST /jobs/{jobId}/update?dryRun=true`),
    /// without writing anything: the next fire times before and after, the runs not yet started
    /// it would affect and how ([`affected_runs`]), and the warnings an update would answer. The
    /// body is checked exactly as an update checks it. The runs are the job's planned fires, the
    /// runs in its line and in its buffer, read by id.
    pub async fn preview_update(&self, document: &JobDocument) -> Result<UpdatePreview, AppError> {
        let (job_id, body) = (document.job_id(), document.body());
        let stored = self.load(job_id).await?;
        let before = &stored.job;
        let calendars = self.calendars_for(body).await?;
        let definition = JobDefinition::parse_submitted_with(
            job_id,
            body,
            before.created_at,
            Some(&before.definition),
            &calendars,
        )?;
        self.check_platform_limits(&definition)?;
        let mut after = before.clone();
        after.apply_definition(definition);

        let state = &before.state;
        let mut runs: Vec<UnstartedRun> = state
            .pending_fires
            .iter()
            .map(|fire| UnstartedRun::planned(before, fire))
            .collect();
        let places: Vec<(String, RunPlace)> = state
            .waiting
            .iter()
            .map(|w| (w.execution_id.clone(), RunPlace::Waiting))
            .chain(
                state
                    .buffered
                    .iter()
                    .map(|id| (id.clone(), RunPlace::Buffered)),
            )
            .collect();
        let ids: Vec<String> = places.iter().map(|(id, _)| id.clone()).collect();
        let records = self.executions_by_id(&ids).await?;
        for ((_, place), record) in places.into_iter().zip(records) {
            // A line entry a crash left behind has no run to affect.
            if let Some(record) = record {
                let execution = decode_execution(&record)?;
                runs.push(UnstartedRun::created(before, &execution, place));
            }
        }
        let now = self.now();
        Ok(UpdatePreview {
            before: upcoming_fires(before, now, PREVIEW_FIRES),
            after: upcoming_fires(&after, now, PREVIEW_FIRES),
            affected: affected_runs(before, &after, &runs),
            warnings: after.definition.warnings(now),
            definition_tag: definition_tag(before),
        })
    }

    /// Deletes a job (`DELETE /job/{jobId}`), as an anonymous caller; its executions stay until
    /// `clean`.
    pub async fn delete_job(&self, job_id: &JobId) -> Result<(), AppError> {
        self.delete_job_by(&ChangeBy::anonymous(), job_id).await
    }

    /// [`App::delete_job`] by `by`, recorded in the job's audit trail, which outlives the job.
    pub async fn delete_job_by(&self, by: &ChangeBy, job_id: &JobId) -> Result<(), AppError> {
        if !self.delete_recorded(by, job_id.as_str()).await? {
            return Err(AppError::NotFound(format!("job {job_id}")));
        }
        tracing::info!(job_id = %job_id, "job deleted");
        Ok(())
    }

    /// Deletes the job `job_id` with its wake-up and the audit entry of the deletion, in one
    /// batch at the version read; returns whether there was a job.
    pub(super) async fn delete_recorded(
        &self,
        by: &ChangeBy,
        job_id: &str,
    ) -> Result<bool, AppError> {
        let id = JobId::parse(job_id)
            .map_err(|e| AppError::corrupt(format!("stored job {job_id} has an invalid id"), e))?;
        let mut retry = super::ConflictRetry::new(&*self.clock);
        while retry.next_round().await {
            let Some(record) = self.store.get_job(job_id).await? else {
                return Ok(false);
            };
            let mut stored = decode_job(&record)?;
            // Runs of its line that rode on its wake-up, which goes with it, get their own:
            // dispatch then ends them (their job is gone) even if their messages were lost.
            self.cover_waiting_runs(&mut stored.job, None, chrono::Duration::zero())
                .await?;
            let entry = Entry::new("delete", None, stored.version.saturating_add(1));
            let entry = audit_record(by, &id, self.now(), entry);
            match self
                .store
                .write_all(&[
                    Write::DeleteJob(job_id, stored.version),
                    Write::AppendAudit(&entry),
                ])
                .await
                .map_err(audit_race)
            {
                Ok(()) => {
                    self.unlist_calendar_user(&id, &stored.job.definition.calendars(), None)
                        .await?;
                    return Ok(true);
                }
                Err(StoreError::NotFound(_)) => return Ok(false),
                Err(StoreError::VersionConflict { key, .. }) => {
                    retry.lost(format!("job {key} was changed concurrently"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(AppError::Conflict(
            retry.exhausted(|| format!("job {job_id} is busy; retry")),
        ))
    }

    /// Lists jobs (`GET /jobs`) in `order`; an order the store cannot serve without a scan is
    /// [`AppError::Invalid`] naming `sort` (see [`JobOrder`]).
    pub async fn list_jobs(
        &self,
        filter: &JobFilter,
        order: JobOrder,
        page: &PageRequest,
    ) -> Result<Page<Job>, AppError> {
        let records = self.store.list_jobs(filter, order, page).await?;
        let items = records
            .items
            .iter()
            .map(|r| decode_job(r).map(|s| s.job))
            .collect::<Result<_, _>>()?;
        Ok(Page {
            items,
            next_cursor: records.next_cursor,
        })
    }

    /// Deletes every job whose parent is `parent`, their descendants, and the parent itself
    /// (`DELETE /main/destroyByParentJob`), as an anonymous caller. Returns the ids deleted.
    pub async fn destroy_by_parent(&self, parent: &JobId) -> Result<Vec<String>, AppError> {
        self.destroy_by_parent_by(&ChangeBy::anonymous(), parent)
            .await
    }

    /// [`App::destroy_by_parent`] by `by`: each deletion is recorded in its job's audit trail,
    /// for the reason `destroyByParentJob {parent}` unless `by` gives one.
    pub async fn destroy_by_parent_by(
        &self,
        by: &ChangeBy,
        parent: &JobId,
    ) -> Result<Vec<String>, AppError> {
        let by = match by.reason {
            Some(_) => by.clone(),
            None => by
                .clone()
                .with_reason(format!("destroyByParentJob {parent}")),
        };
        let mut deleted = Vec::new();
        let mut pending = vec![parent.to_string()];
        // Breadth-first over the parent links; `seen` guards against cycles written by hand.
        let mut seen = std::collections::BTreeSet::new();
        while let Some(current) = pending.pop() {
            if !seen.insert(current.clone()) {
                continue;
            }
            let filter = JobFilter {
                parent_job: Some(current.clone()),
                ..JobFilter::default()
            };
            let mut cursor = None;
            loop {
                let page = self
                    .store
                    .list_jobs(&filter, JobOrder::Id, &PageRequest { limit: 500, cursor })
                    .await?;
                pending.extend(page.items.into_iter().map(|r| r.job_id));
                cursor = page.next_cursor;
                if cursor.is_none() {
                    break;
                }
            }
            if self.delete_recorded(&by, &current).await? {
                deleted.push(current);
            }
        }
        if deleted.is_empty() {
            return Err(AppError::NotFound(format!("job {parent}")));
        }
        Ok(deleted)
    }

    /// Applies a service's new declaration `declared` to its stored job `job_id` by the three-way
    /// merge of [`plan_reconcile`], against the job as it is when written (a concurrent change
    /// is merged again): the fields the code changed are set, and the declaration is kept with the
    /// job for the next one. Returns the fields applied and the changes they made (redacted), `None` when there were none (then only
    /// the kept declaration is written, with no audit entry: the job did not change). An update
    /// is recorded as `timers:update` with its changed fields, as any update is.
    pub(super) async fn apply_declaration(
        &self,
        by: &ChangeBy,
        document: &JobDocument,
    ) -> Result<Option<DeclaredChange>, AppError> {
        let (job_id, declared) = (document.job_id(), document.body());
        let now = self.now();
        let declared_calendars = self.listed_calendars_for(document).await?;
        let uses = calendars::names_of(&declared_calendars);
        let mut before_calendars = sundial_core::spec::CalendarSet::new();
        let (stored, fields) = self
            .modify_listed(
                None,
                job_id,
                &uses,
                |stored| {
                    before_calendars = stored.job.definition.calendars();
                    let plan = plan_reconcile(
                        stored.job.state.declaration.as_ref(),
                        declared,
                        Some(stored.job.definition.as_written()),
                    );
                    let fields = match plan {
                        // Deleted meanwhile: the next declaration creates it again.
                        Reconcile::Create => None,
                        Reconcile::Unchanged { .. } => None,
                        Reconcile::Update { fields, definition } => {
                            let before = stored.job.definition.as_written().clone();
                            // The merged schedule is the declared one or the stored one.
                            let mut calendars = before_calendars.clone();
                            for calendar in declared_calendars.iter() {
                                calendars.insert_shared(std::sync::Arc::clone(calendar));
                            }
                            let definition =
                                merged_definition(&stored.job, &definition, &calendars)?;
                            self.check_platform_limits(&definition)?;
                            // The merged definition carries the stored `active`: a paused job stays
                            // paused, with its notes.
                            stored.job.apply_definition(definition);
                            // A secret's marker declared over its stored value changes nothing.
                            let change = DeclaredChange::new(
                                fields,
                                &before,
                                stored.job.definition.as_written(),
                            );
                            (!change.changes.is_empty()).then_some(change)
                        }
                    };
                    stored.job.state.declaration = Some(declared.clone());
                    Ok(fields)
                },
                |before, after, version| {
                    if before.definition.as_written() == after.definition.as_written() {
                        return None;
                    }
                    let mut entry = Entry::new("update", Some(after), version);
                    entry.before = Some(before);
                    entry.details.insert(
                        "fields".into(),
                        Value::from(changed_top_level_fields(
                            before.definition.as_written(),
                            after.definition.as_written(),
                        )),
                    );
                    Some(audit_record(by, job_id, now, entry))
                },
            )
            .await?;
        self.unlist_calendar_user(
            job_id,
            &before_calendars,
            Some(&stored.job.definition.calendars()),
        )
        .await?;
        if fields.is_some() {
            self.catch_up_calendars(by, &stored.job).await?;
            self.plan_now(&stored.job).await;
            self.mark_parent(&stored.job).await?;
        }
        Ok(fields)
    }
}

/// The top-level fields whose values differ between two definitions as written, in name order.
fn changed_top_level_fields(before: &Value, after: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (before, after) = (
        before.as_object().unwrap_or(&empty),
        after.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}
