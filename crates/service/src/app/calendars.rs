//! Named business calendars (docs/spec.md §16, docs/api.md "Calendars"): `PUT`, `GET`, `DELETE
//! /calendars/{name}` and `GET /calendars`, and what a calendar's change does to the jobs that
//! name it.
//!
//! The rules (docs/engine.md, "Calendars"):
//! - A job's schedule is parsed against the calendars it names, read from the store when the
//!   job is created or changed; its stored document keeps a copy of each, so a fire never reads
//!   a calendar (and the process caches each copy parsed, [`crate::records`]).
//! - The store indexes which jobs use which calendar ([`CalendarStore`]): a job is listed before it
//!   is written and unlisted after, so the index may name a job that no longer uses the calendar,
//!   never miss one that does.
//! - Changing a calendar re-plans every job listed under it, each with an entry `calendar:update`
//!   in its audit trail (who changed the calendar, and the definition in force from then on):
//!   in the request (`sundial serve`), or, where the engine says so
//!   ([`EngineHooks::replans_by_queue`](super::EngineHooks::replans_by_queue), on AWS), through
//!   its queue, a message per [`REPLAN_BATCH`] jobs. The answer says how many jobs were queued
//!   for re-planning (`queued`) and how many were re-planned before it (`replanned`).
//! - A re-plan ([`App::replan_job`]) is idempotent: it reads the calendar as stored now and
//!   leaves a job whose copy already equals it untouched, so a message delivered twice, or late
//!   behind a newer change, writes nothing wrong.
//! - Deleting a calendar that jobs use is refused (409) naming them.
//! - Every change of a calendar is also recorded in the calendar's own trail
//!   (`GET /calendars/{name}/history`), kept in the audit store under `calendar:{name}`, written
//!   in the same atomic store write as the change itself ([`CalendarStore::put_calendar`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sundial_core::job::{JobDefinition, JobDocument, JobId};
use sundial_core::spec::{calendar_names, BusinessCalendar, CalendarSet};
use sundial_ports::store::audit::entry_id;
use sundial_ports::store::{
    AuditQuery, AuditRecord, CalendarRecord, Page, PageRequest, Store, StoreError, Write,
    WriteAllError, MAX_CALENDARS,
};

use super::{audit_record, field_error, Actor, App, AppError, ChangeBy, Entry};
use crate::records::json_time;

/// A stored calendar as the API shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredCalendar {
    /// The calendar in its JSON form (docs/spec.md §16.1).
    pub calendar: Value,
    /// 1 when created, +1 on every change.
    pub version: u64,
    /// When it was last changed.
    pub updated_at: DateTime<Utc>,
    /// Who last changed it.
    pub updated_by: String,
}

impl StoredCalendar {
    /// The API form: the calendar's fields, with `version`, `updatedAt` and `updatedBy`.
    pub fn to_json(&self) -> Value {
        let mut shown = self.calendar.clone();
        if let Value::Object(map) = &mut shown {
            map.insert("version".into(), json!(self.version));
            map.insert("updatedAt".into(), json_time(self.updated_at));
            map.insert("updatedBy".into(), json!(self.updated_by));
        }
        shown
    }

    fn from_record(record: &CalendarRecord) -> StoredCalendar {
        StoredCalendar {
            calendar: record
                .document
                .get("calendar")
                .cloned()
                .unwrap_or(Value::Null),
            version: record.version,
            updated_at: record.updated_at,
            updated_by: record
                .document
                .get("updatedBy")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// Its days off (listed days, weekends aside) from `from` for `days` days: what the console
    /// shows of a calendar.
    pub fn days_off(
        &self,
        from: chrono::NaiveDate,
        days: u32,
    ) -> Result<Vec<chrono::NaiveDate>, AppError> {
        let calendar = self.parsed()?;
        Ok(from
            .iter_days()
            .take(days as usize)
            .filter(|d| calendar.is_listed(*d))
            .collect())
    }

    /// Its yearly rules in words (`first Monday of May`, with the rule's comment after a dash
    /// when it has one): what the console shows of them.
    pub fn rules_in_words(&self) -> Result<Vec<String>, AppError> {
        Ok(self
            .parsed()?
            .rules()
            .iter()
            .map(|(rule, comment)| match comment {
                Some(comment) => format!("{} — {comment}", rule.describe()),
                None => rule.describe(),
            })
            .collect())
    }

    pub(crate) fn parsed(&self) -> Result<BusinessCalendar, AppError> {
        BusinessCalendar::from_json(&self.calendar)
            .map_err(|e| AppError::corrupt(format!("stored calendar {} is unreadable", e.path), e))
    }
}

/// What `PUT /calendars/{name}` did.
#[derive(Clone, Debug, PartialEq)]
pub struct CalendarPut {
    /// The calendar as stored.
    pub calendar: StoredCalendar,
    /// Whether it was created (else replaced).
    pub created: bool,
    /// How many jobs were queued for re-planning with it: those listed under it (the index may
    /// name a job that no longer uses it; its re-plan then drops it).
    pub queued: usize,
    /// How many of them were re-planned before the answer where the re-plan runs in the request
    /// (`sundial serve`): those that use it and held another version of it; none where it goes
    /// through the queue (AWS).
    pub replanned: usize,
}

/// How many jobs one queued re-plan message names: a few seconds of work for its receiver.
pub const REPLAN_BATCH: usize = 25;

/// The re-plan of jobs after a change of their calendar, as the engine queues it
/// ([`EngineHooks::queue_replans`](super::EngineHooks::queue_replans)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplanOrder {
    /// The calendar that changed.
    pub calendar: String,
    /// Who changed it (recorded in each job's trail).
    pub actor: String,
    /// The reason the change gave, if any.
    pub reason: Option<String>,
    /// The jobs to re-plan: at most [`REPLAN_BATCH`] per message sent.
    pub jobs: Vec<String>,
}

impl ReplanOrder {
    /// Who the re-plans are by: the change's author, action `calendar:update`.
    fn by(&self) -> ChangeBy {
        let by = ChangeBy::new(Actor::new(self.actor.clone()));
        let by = match &self.reason {
            Some(reason) => by.with_reason(reason.clone()),
            None => by,
        };
        by.calendar(&self.calendar)
    }
}

/// Reads the calendar `name` from its JSON form (docs/spec.md §16.1): its `ics` file merged in,
/// and a `name` in the body, if any, the path's. Errors name the field.
pub fn read_calendar(name: &str, body: &Value) -> Result<BusinessCalendar, AppError> {
    if name == "." || name == ".." {
        return Err(field_error(
            "name",
            format!("{name:?}: a path segment of its own meaning; choose another name"),
        ));
    }
    let mut body = body.clone();
    let Value::Object(map) = &mut body else {
        return Err(field_error("calendar", "expected a JSON object"));
    };
    if let Some(ics) = map.remove("ics") {
        merge_ics(map, &ics)?;
    }
    match map.get("name") {
        None | Some(Value::Null) => {
            map.insert("name".into(), json!(name));
        }
        Some(Value::String(given)) if given == name => {}
        Some(other) => {
            return Err(field_error(
                "name",
                format!("the body says {other} but the path says {name:?}"),
            ))
        }
    }
    Ok(BusinessCalendar::from_json(&body)?)
}

/// The audit trail key of a calendar's own changes: not a job id (job ids hold no `:`).
fn trail_key(name: &str) -> String {
    format!("calendar:{name}")
}

impl<S: Store> App<S> {
    /// [`read_calendar`] then [`App::save_calendar_by`]: the calendar `name` from its JSON form,
    /// as `PUT /calendars/{name}` takes it.
    pub async fn put_calendar_by(
        &self,
        by: &ChangeBy,
        name: &str,
        body: &Value,
    ) -> Result<CalendarPut, AppError> {
        self.save_calendar_by(by, read_calendar(name, body)?).await
    }

    /// Creates or replaces a calendar, then re-plans every job that uses it. By `by`, recorded in
    /// the calendar's trail and in each re-planned job's.
    pub async fn save_calendar_by(
        &self,
        by: &ChangeBy,
        calendar: BusinessCalendar,
    ) -> Result<CalendarPut, AppError> {
        let name = calendar.name().to_owned();
        let name = name.as_str();
        let stored_form = calendar.to_json();
        let calendar = Arc::new(calendar);
        let now = self.now();
        let mut retry = super::ConflictRetry::new(&*self.clock);
        let mut written = None;
        while retry.next_round().await {
            let existing = self.store.get_calendar(name).await?;
            if existing.is_none() && self.store.list_calendars().await?.len() >= MAX_CALENDARS {
                return Err(AppError::Conflict(format!(
                    "there are {MAX_CALENDARS} calendars already, the most a store keeps; delete one first"
                )));
            }
            let version = existing.as_ref().map_or(1, |r| r.version.saturating_add(1));
            let record = CalendarRecord {
                name: name.to_owned(),
                version,
                updated_at: now,
                document: json!({"calendar": stored_form, "updatedBy": by.actor.name()}),
                // The store keeps its own count.
                listings: existing.as_ref().map_or(0, |r| r.listings),
            };
            let action = if existing.is_none() {
                "create"
            } else {
                "update"
            };
            // The jobs listed under it as it changes: what the history says the change queued.
            let listed = self.store.calendar_users(name).await?.len();
            let mut details = Map::new();
            details.insert("definition".into(), record.document["calendar"].clone());
            details.insert("queued".into(), json!(listed));
            let history = calendar_entry(by, name, action, version, now, details);
            match self.store.put_calendar(&record, &history).await {
                Ok(()) => {
                    written = Some((record, existing.is_none()));
                    break;
                }
                Err(StoreError::VersionConflict { .. } | StoreError::AlreadyExists(_)) => {
                    retry.lost(format!("calendar {name} was changed concurrently"));
                }
                Err(e) => return Err(e.into()),
            }
        }
        let Some((record, created)) = written else {
            return Err(AppError::Conflict(
                retry.exhausted(|| format!("calendar {name} is busy; retry")),
            ));
        };
        // Listed after the write: a job listed meanwhile read the calendar before it changed
        // (it is listed before it reads), so it is re-planned too.
        let jobs = self.store.calendar_users(name).await?;
        let queued = jobs.len();
        let order = ReplanOrder {
            calendar: name.to_owned(),
            actor: by.actor.name().to_owned(),
            reason: by.reason.clone(),
            jobs,
        };
        let replanned = self.replan(order, &calendar).await?;
        tracing::info!(calendar = %name, queued, replanned, "calendar {}", if created { "created" } else { "updated" });
        Ok(CalendarPut {
            calendar: StoredCalendar::from_record(&record),
            created,
            queued,
            replanned,
        })
    }

    /// The calendar `name`.
    pub async fn get_calendar(&self, name: &str) -> Result<StoredCalendar, AppError> {
        self.store
            .get_calendar(name)
            .await?
            .map(|r| StoredCalendar::from_record(&r))
            .ok_or_else(|| AppError::NotFound(format!("calendar {name}")))
    }

    /// Every calendar, in name order.
    pub async fn list_calendars(&self) -> Result<Vec<StoredCalendar>, AppError> {
        Ok(self
            .store
            .list_calendars()
            .await?
            .iter()
            .map(StoredCalendar::from_record)
            .collect())
    }

    /// The jobs that use the calendar `name`, in id order (the index, checked against each job).
    pub async fn calendar_jobs(&self, name: &str) -> Result<Vec<String>, AppError> {
        let mut using = Vec::new();
        for id in self.store.calendar_users(name).await? {
            if self.job_uses(&id, name).await? {
                using.push(id);
            }
        }
        Ok(using)
    }

    /// Deletes the calendar `name`, refused (`Conflict`) while jobs use it, naming them.
    pub async fn delete_calendar_by(&self, by: &ChangeBy, name: &str) -> Result<(), AppError> {
        // A job listed under the calendar after its jobs were checked moves its listings count,
        // and the delete, made at the count read, fails: then the jobs are checked again.
        let mut retry = super::ConflictRetry::new(&*self.clock);
        let mut deleted = false;
        while retry.next_round().await {
            let record = self
                .store
                .get_calendar(name)
                .await?
                .ok_or_else(|| AppError::NotFound(format!("calendar {name}")))?;
            let using = self.calendar_jobs(name).await?;
            if !using.is_empty() {
                const SHOWN: usize = 20;
                let more = using.len().saturating_sub(SHOWN);
                let mut names = using
                    .iter()
                    .take(SHOWN)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                if more > 0 {
                    names.push_str(&format!(" and {more} more"));
                }
                return Err(AppError::Conflict(format!(
                    "calendar {name} is used by {} job(s): {names}; change or delete them first",
                    using.len()
                )));
            }
            let history = calendar_entry(
                by,
                name,
                "delete",
                record.version.saturating_add(1),
                self.now(),
                Map::new(),
            );
            match self
                .store
                .delete_calendar(name, record.version, record.listings, &history)
                .await
            {
                Ok(()) => {
                    deleted = true;
                    break;
                }
                Err(StoreError::NotFound(_)) => {
                    return Err(AppError::NotFound(format!("calendar {name}")))
                }
                Err(StoreError::VersionConflict { .. } | StoreError::AlreadyExists(_)) => {
                    retry.lost(format!(
                        "calendar {name} was changed or given a job concurrently; retry"
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
        if !deleted {
            return Err(AppError::Conflict(
                retry.exhausted(|| format!("calendar {name} is busy; retry")),
            ));
        }
        tracing::info!(calendar = %name, "calendar deleted");
        Ok(())
    }

    /// A calendar's own trail, newest first (`GET /calendars/{name}/history`).
    pub async fn calendar_history(
        &self,
        name: &str,
        page: &PageRequest,
    ) -> Result<Page<Value>, AppError> {
        let records = self
            .store
            .list_audit(&trail_key(name), &AuditQuery::default(), page)
            .await?;
        Ok(Page {
            items: records.items.into_iter().map(|r| r.document).collect(),
            next_cursor: records.next_cursor,
        })
    }

    /// The calendars a job body's `schedule` names, read from the store (those that do not exist
    /// are left out: the parser then names the field and the calendar).
    pub(crate) async fn calendars_for(&self, body: &Value) -> Result<CalendarSet, AppError> {
        match body.get("schedule") {
            Some(schedule) => self.calendars_named_by(schedule).await,
            None => Ok(CalendarSet::new()),
        }
    }

    /// The calendars the spec `schedule` names, read from the store (those that do not exist
    /// are left out, as in [`App::calendars_for`]).
    pub(crate) async fn calendars_named_by(
        &self,
        schedule: &Value,
    ) -> Result<CalendarSet, AppError> {
        let mut set = CalendarSet::new();
        let mut missing = false;
        for name in calendar_names(schedule) {
            match self.store.get_calendar(&name).await? {
                Some(record) => set.insert(StoredCalendar::from_record(&record).parsed()?),
                None => missing = true,
            }
        }
        if missing {
            // The parse fails naming the field and the calendar; with every calendar in the set
            // its message also lists the names there are (`; known: london`).
            for record in self.store.list_calendars().await? {
                set.insert(StoredCalendar::from_record(&record).parsed()?);
            }
        }
        Ok(set)
    }

    /// The calendars `body`'s schedule names, read from the store after `job_id` is listed under
    /// each of them (docs/engine.md, "Calendars"): a calendar changed after this read re-plans
    /// the job, and one deleted after it cannot be deleted under the job's write, which requires
    /// the listings ([`calendar_checks`]). A name without a calendar is left to the definition's
    /// parse, which refuses it naming the field.
    pub(crate) async fn listed_calendars_for(
        &self,
        document: &JobDocument,
    ) -> Result<CalendarSet, AppError> {
        for name in document.calendar_names() {
            match self
                .store
                .add_calendar_users(document.job_id().as_str(), std::slice::from_ref(&name))
                .await
            {
                Ok(()) | Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.calendars_for(document.body()).await
    }

    /// Unlists `job_id` from the calendars of `before` that `after` (`None`: the job was deleted)
    /// no longer uses (after the job is written).
    pub(crate) async fn unlist_calendar_user(
        &self,
        job_id: &JobId,
        before: &CalendarSet,
        after: Option<&CalendarSet>,
    ) -> Result<(), AppError> {
        let kept: BTreeSet<String> = after
            .map(names_of)
            .unwrap_or_default()
            .into_iter()
            .collect();
        let gone: Vec<String> = names_of(before)
            .into_iter()
            .filter(|n| !kept.contains(n))
            .collect();
        if !gone.is_empty() {
            self.store
                .remove_calendar_users(job_id.as_str(), &gone)
                .await?;
        }
        Ok(())
    }

    /// Whether the job `id` exists and uses the calendar `name`; an entry of the index that says
    /// otherwise is removed.
    async fn job_uses(&self, id: &str, name: &str) -> Result<bool, AppError> {
        let uses = match self.store.get_job(id).await? {
            None => false,
            Some(record) => crate::records::decode_job(&record)?
                .job
                .definition
                .calendars()
                .get(name)
                .is_some(),
        };
        if !uses {
            self.store
                .remove_calendar_users(id, &[name.to_owned()])
                .await?;
        }
        Ok(uses)
    }

    /// Re-plans the jobs of `order` after their calendar changed to `calendar`: through the
    /// engine's queue where it says so (then none is re-planned here: answers 0), else here, one
    /// by one (answers how many were). Should the queue refuse, here too.
    async fn replan(
        &self,
        order: ReplanOrder,
        calendar: &Arc<BusinessCalendar>,
    ) -> Result<usize, AppError> {
        if order.jobs.is_empty() {
            return Ok(0);
        }
        if let Some(engine) = self.engine().filter(|e| e.replans_by_queue()) {
            match engine.queue_replans(order.clone()).await {
                Ok(()) => return Ok(0),
                Err(e) => {
                    tracing::warn!(calendar = %order.calendar, error = %e, "could not queue the re-plans; re-planning in the request");
                }
            }
        }
        let by = order.by();
        let mut replanned = 0;
        for id in &order.jobs {
            if self.replan_job(&by, calendar, id).await? {
                replanned += 1;
            }
        }
        Ok(replanned)
    }

    /// Re-plans the jobs of a queued re-plan message ([`ReplanOrder`]) with their calendar as it
    /// is stored now (a message late behind a newer change re-plans with the newer one; none, when
    /// the calendar is gone). Every job is tried; the first failure is the answer, so the message
    /// comes back and the jobs already re-planned are left as they are.
    pub async fn replan_queued(&self, order: &ReplanOrder) -> Result<usize, AppError> {
        let Some(record) = self.store.get_calendar(&order.calendar).await? else {
            tracing::info!(calendar = %order.calendar, "re-plan: the calendar is gone; nothing to do");
            return Ok(0);
        };
        let calendar = Arc::new(StoredCalendar::from_record(&record).parsed()?);
        let by = order.by();
        let mut replanned = 0;
        let mut failed = None;
        for id in &order.jobs {
            match self.replan_job(&by, &calendar, id).await {
                Ok(true) => replanned += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(calendar = %order.calendar, job_id = %id, error = %e, "re-plan failed; the message comes back");
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(replanned),
        }
    }

    /// Re-plans `job`, just written, with each calendar it uses that changed since the read its
    /// write was parsed against. The change's own re-plan may have come before the write (the job
    /// listed, its old schedule re-planned, then the write retried over it with the copy it had
    /// read); read after the write, the calendar is either the copy written or newer, and then
    /// this brings the job to it. A change after this read re-plans the job itself.
    pub(crate) async fn catch_up_calendars(
        &self,
        by: &ChangeBy,
        job: &sundial_core::job::Job,
    ) -> Result<(), AppError> {
        let copies = job.definition.calendars();
        for copy in copies.iter() {
            let Some(record) = self.store.get_calendar(copy.name()).await? else {
                continue;
            };
            let stored = Arc::new(StoredCalendar::from_record(&record).parsed()?);
            if *stored != **copy {
                tracing::info!(job_id = %job.job_id(), calendar = %copy.name(), "the calendar changed while the job was written: re-planned with it");
                self.replan_job(by, &stored, job.job_id().as_str()).await?;
            }
        }
        Ok(())
    }

    /// Re-plans the job `id` with `calendar`: its schedule parsed again against it and its next
    /// fire recomputed, as an update of the job would, with an entry `calendar:update` by `by`.
    /// Nothing when the job is gone or no longer uses the calendar (its index entry is then
    /// dropped), or when its copy of the calendar already is `calendar` (re-planned already):
    /// answers whether it wrote.
    pub(crate) async fn replan_job(
        &self,
        by: &ChangeBy,
        calendar: &Arc<BusinessCalendar>,
        id: &str,
    ) -> Result<bool, AppError> {
        let name = calendar.name();
        let job_id = JobId::parse(id)
            .map_err(|e| AppError::corrupt(format!("calendar index names job {id:?}"), e))?;
        let stored = match self.load(&job_id).await {
            Ok(stored) => stored,
            Err(AppError::NotFound(_)) => {
                self.store
                    .remove_calendar_users(id, &[name.to_owned()])
                    .await?;
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        match stored.job.definition.calendars().get(name) {
            None => {
                self.store
                    .remove_calendar_users(id, &[name.to_owned()])
                    .await?;
                return Ok(false);
            }
            Some(copy) if **copy == **calendar => return Ok(false),
            Some(_) => {}
        }
        let now = self.now();
        let result = self
            .modify_recorded(
                Some(stored),
                &job_id,
                |stored| {
                    let mut set = stored.job.definition.calendars();
                    set.insert_shared(Arc::clone(calendar));
                    let definition = JobDefinition::parse_with(
                        &job_id,
                        stored.job.definition.as_written(),
                        stored.job.created_at,
                        &set,
                    )?;
                    stored.job.apply_definition(definition);
                    Ok(())
                },
                |before, after, version| {
                    let mut entry = Entry::new("update", Some(after), version);
                    entry.before = Some(before);
                    Some(audit_record(by, &job_id, now, entry))
                },
            )
            .await;
        match result {
            Ok((stored, ())) => {
                self.plan_now(&stored.job).await;
                Ok(true)
            }
            // Deleted since it was read.
            Err(AppError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The entry of a calendar's own trail recording `action` (`create`, `update`, `delete`) by `by`
/// at `version`, with `details` (the calendar put in force as `definition`, `queued`).
fn calendar_entry(
    by: &ChangeBy,
    name: &str,
    action: &str,
    version: u64,
    at: DateTime<Utc>,
    details: Map<String, Value>,
) -> AuditRecord {
    let at = chrono::SubsecRound::trunc_subsecs(at, 3);
    let mut document = Map::new();
    document.insert("at".into(), json_time(at));
    document.insert("calendar".into(), json!(name));
    document.insert("actor".into(), json!(by.actor.name()));
    document.insert("action".into(), json!(format!("calendar:{action}")));
    if let Some(reason) = &by.reason {
        document.insert("reason".into(), json!(reason));
    }
    document.insert("version".into(), json!(version));
    document.extend(details);
    let nonce = u64::from(at.timestamp_subsec_nanos()) ^ version.rotate_left(32);
    AuditRecord {
        job_id: trail_key(name),
        entry_id: entry_id(at, version, nonce),
        at,
        document: Value::Object(document),
    }
}

/// Adds what the iCalendar text `ics` holds (docs/api.md "Calendars") to the calendar body `map`:
/// its dates, ranges and yearly rules after those the body gives, and its zone and description
/// where the body gives none.
fn merge_ics(map: &mut Map<String, Value>, ics: &Value) -> Result<(), AppError> {
    let text = ics
        .as_str()
        .ok_or_else(|| field_error("ics", "expected the text of an iCalendar (.ics) file"))?;
    let imported = super::ics::import(text).map_err(|m| field_error("ics", m))?;
    for (key, items) in [
        ("dates", imported.dates),
        ("ranges", imported.ranges),
        ("rules", imported.rules),
    ] {
        match map.entry(key).or_insert_with(|| Value::Array(Vec::new())) {
            Value::Array(list) => list.extend(items),
            _ => return Err(field_error(key, "expected an array")),
        }
    }
    if let Some(zone) = imported.zone {
        map.entry("timeZone").or_insert(json!(zone));
    }
    if let Some(description) = imported.description {
        map.entry("description").or_insert(json!(description));
    }
    Ok(())
}

pub(crate) fn names_of(set: &CalendarSet) -> Vec<String> {
    set.names().map(str::to_owned).collect()
}

/// The checks that go with a job write whose definition uses `calendars`: each requires the
/// job's listing under one of them, so that a delete of the calendar that dropped the listing
/// fails the write instead of leaving a job on a deleted calendar.
pub(crate) fn calendar_checks<'a>(job_id: &'a str, calendars: &'a [String]) -> Vec<Write<'a>> {
    calendars
        .iter()
        .map(|calendar| Write::RequireCalendarUser(calendar, job_id))
        .collect()
}

/// The answer to a job write that failed on one of its [`calendar_checks`] (from `first_check`
/// on in the batch): the listing was dropped meanwhile, by a delete of the calendar or the check
/// of a concurrent change that did not yet see the job use it. `None` for any other failure.
pub(crate) fn lost_listing(
    job_id: &JobId,
    error: &WriteAllError,
    first_check: usize,
) -> Option<AppError> {
    match (error.index, &error.error) {
        (Some(index), StoreError::NotFound(_)) if index >= first_check => {
            Some(AppError::Conflict(format!(
                "a calendar job {job_id} uses was deleted or changed while the job was written; retry"
            )))
        }
        _ => None,
    }
}
