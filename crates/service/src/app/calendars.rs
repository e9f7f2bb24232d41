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
//! - Changing a calendar re-plans every job listed under it, in the request, each with an entry
//!   `calendar:update` in its audit trail (who changed the calendar, and the definition in force
//!   from then on); the answer says how many (`replanned`).
//! - Deleting a calendar that jobs use is refused (409) naming them.
//! - Every change of a calendar is also recorded in the calendar's own trail
//!   (`GET /calendars/{name}/history`), kept in the audit store under `calendar:{name}`.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use sundial_core::job::{JobDefinition, JobId};
use sundial_core::spec::{calendar_names, BusinessCalendar, CalendarSet};
use sundial_ports::store::audit::entry_id;
use sundial_ports::store::{
    AuditQuery, AuditRecord, CalendarRecord, Page, PageRequest, Store, StoreError, Write,
    MAX_CALENDARS,
};

use super::{audit_race, audit_record, field_error, App, AppError, ChangeBy, Entry};
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

    fn parsed(&self) -> Result<BusinessCalendar, AppError> {
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
    /// How many jobs were re-planned with it.
    pub replanned: usize,
}

/// The audit trail key of a calendar's own changes: not a job id (job ids hold no `:`).
fn trail_key(name: &str) -> String {
    format!("calendar:{name}")
}

impl<S: Store> App<S> {
    /// Creates or replaces the calendar `name` from its JSON form (docs/spec.md §16.1; a `name`
    /// in the body must be `name`), then re-plans every job that uses it. By `by`, recorded in
    /// the calendar's trail and in each re-planned job's.
    pub async fn put_calendar_by(
        &self,
        by: &ChangeBy,
        name: &str,
        body: &Value,
    ) -> Result<CalendarPut, AppError> {
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
        let calendar = BusinessCalendar::from_json(&body)?;
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
            };
            match self.store.put_calendar(&record).await {
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
            return Err(retry.exhausted(|| format!("calendar {name} is busy; retry")));
        };
        let replanned = self.replan_users(by, &calendar).await?;
        let action = if created { "create" } else { "update" };
        let mut details = Map::new();
        details.insert("replanned".into(), json!(replanned));
        details.insert("calendar".into(), record.document["calendar"].clone());
        self.record_calendar_change(by, name, action, record.version, now, details)
            .await?;
        tracing::info!(calendar = %name, replanned, "calendar {action}d");
        Ok(CalendarPut {
            calendar: StoredCalendar::from_record(&record),
            created,
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
        match self.store.delete_calendar(name, record.version).await {
            Ok(()) => {}
            Err(StoreError::NotFound(_)) => {
                return Err(AppError::NotFound(format!("calendar {name}")))
            }
            Err(StoreError::VersionConflict { .. }) => {
                return Err(AppError::Conflict(format!(
                    "calendar {name} was changed concurrently; retry"
                )))
            }
            Err(e) => return Err(e.into()),
        }
        let now = self.now();
        self.record_calendar_change(
            by,
            name,
            "delete",
            record.version.saturating_add(1),
            now,
            Map::new(),
        )
        .await?;
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
        let mut set = CalendarSet::new();
        let Some(schedule) = body.get("schedule") else {
            return Ok(set);
        };
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

    /// Lists `job_id` under `calendars` (before the job is written).
    pub(crate) async fn list_calendar_users(
        &self,
        job_id: &JobId,
        calendars: &CalendarSet,
    ) -> Result<(), AppError> {
        let names = names_of(calendars);
        if !names.is_empty() {
            self.store
                .add_calendar_users(job_id.as_str(), &names)
                .await?;
        }
        Ok(())
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

    /// Re-plans every job using `calendar` with it: each job's schedule is parsed again against
    /// the new calendar and its next fire recomputed, as an update of the job would; returns how
    /// many.
    async fn replan_users(
        &self,
        by: &ChangeBy,
        calendar: &Arc<BusinessCalendar>,
    ) -> Result<usize, AppError> {
        let name = calendar.name();
        let by = by.calendar(name);
        let mut replanned = 0;
        for id in self.store.calendar_users(name).await? {
            if !self.job_uses(&id, name).await? {
                continue;
            }
            let job_id = JobId::parse(&id)
                .map_err(|e| AppError::corrupt(format!("calendar index names job {id:?}"), e))?;
            let now = self.now();
            let result = self
                .modify_recorded(
                    None,
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
                        Some(audit_record(&by, &job_id, now, entry))
                    },
                )
                .await;
            match result {
                Ok((stored, ())) => {
                    self.plan_now(&stored.job).await;
                    replanned += 1;
                }
                // Deleted since the index was read.
                Err(AppError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(replanned)
    }

    async fn record_calendar_change(
        &self,
        by: &ChangeBy,
        name: &str,
        action: &str,
        version: u64,
        at: DateTime<Utc>,
        details: Map<String, Value>,
    ) -> Result<(), AppError> {
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
        for (key, value) in details {
            let key = if key == "calendar" {
                "definition".to_owned()
            } else {
                key
            };
            document.insert(key, value);
        }
        let nonce = u64::from(at.timestamp_subsec_nanos()) ^ version.rotate_left(32);
        let entry = AuditRecord {
            job_id: trail_key(name),
            entry_id: entry_id(at, version, nonce),
            at,
            document: Value::Object(document),
        };
        self.store
            .write_all(&[Write::AppendAudit(&entry)])
            .await
            .map_err(audit_race)?;
        Ok(())
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

fn names_of(set: &CalendarSet) -> Vec<String> {
    set.names().map(str::to_owned).collect()
}
