//! The [`Store`] port in memory, for fast tests of the use cases and the HTTP API.
//!
//! One `std::sync::Mutex` around ordered maps: every method takes the lock once and never awaits
//! while holding it, so each is atomic and the conditional writes are exact. It mirrors the SQLite
//! adapter wherever the contract leaves room — times are kept at millisecond precision, listings
//! look one item ahead, and cursors are versioned sort keys that are checked before use — so a test
//! that passes here behaves the same on `sundial serve`.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use chrono::{DateTime, SubsecRound, Utc};

use crate::store::audit::in_range;
use crate::store::retention::past_retention;
use crate::store::{
    check_batch, cursor, AuditCleanReport, AuditQuery, AuditRecord, AuditStore, CalendarRecord,
    CalendarStore, CleanReport, ExecutionQuery, ExecutionRecord, ExecutionStore, FleetHourRecord,
    JobFilter, JobOrder, JobRecord, JobStore, ManyRead, Page, PageRequest, RollupRecord,
    RollupStore, SessionStore, SettingRecord, SettingStore, Store, StoreError, WakeUp, WakeUpIndex,
    Write, WriteAllError, MAX_PAGE,
};

/// An in-memory [`Store`]; each instance is a fresh, empty store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    data: Mutex<Data>,
    /// What [`MemoryStore::before_next_job_write`] set, until its write comes.
    before_job_write: Interleave,
}

/// A step a test runs in the middle of a use case.
type Interleaved =
    Box<dyn FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send>;

/// The step [`MemoryStore::before_next_job_write`] holds.
#[derive(Default)]
struct Interleave(Mutex<Option<Interleaved>>);

impl std::fmt::Debug for Interleave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self.0.lock().map(|step| step.is_some()).unwrap_or(false);
        f.debug_tuple("Interleave").field(&set).finish()
    }
}

#[derive(Debug, Default)]
struct Data {
    jobs: BTreeMap<String, JobRecord>,
    executions: BTreeMap<String, ExecutionRecord>,
    wakeups: BTreeMap<String, DateTime<Utc>>,
    /// The audit trail by (job id, entry id): a job's entries in time order.
    audit: BTreeMap<(String, String), AuditRecord>,
    /// Rollup buckets by (hour, job id): hour first, as the cross-job read goes by hour.
    rollups: BTreeMap<(DateTime<Utc>, String), BTreeMap<String, u64>>,
    fleet_hours: BTreeMap<(DateTime<Utc>, u32), String>,
    settings: BTreeMap<String, SettingRecord>,
    calendars: BTreeMap<String, CalendarRecord>,
    /// The jobs using each calendar, by (calendar, job id).
    calendar_users: std::collections::BTreeSet<(String, String)>,
    /// Console sessions signed out, with the expiry they were recorded with.
    revoked_sessions: BTreeMap<String, DateTime<Utc>>,
    /// Writes left before an injected failure ([`MemoryStore::fail_write`]).
    fail_in: Option<usize>,
    /// Write operations asked for so far ([`MemoryStore::writes`]).
    writes: u64,
    /// What reads that may be behind answer from ([`MemoryStore::lag_stale_reads`]): the jobs
    /// and executions as they were at the previous such read.
    lagging: Option<(
        BTreeMap<String, JobRecord>,
        BTreeMap<String, ExecutionRecord>,
    )>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// Makes the `n`th write from now (0: the next one) fail once with `Unavailable`: what a test
    /// sees of a process killed at that step, since every write is one atomic operation.
    pub fn fail_write(&self, n: usize) {
        if let Ok(mut data) = self.data.lock() {
            data.fail_in = Some(n);
        }
    }

    /// Runs `step` (awaited) just before the next [`Store::write_all`] that creates or updates a
    /// job, once: how a test puts a concurrent request between a use case's reads and its write,
    /// to see that the write's conditions catch what the request changed.
    pub fn before_next_job_write(
        &self,
        step: impl FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
            + Send
            + 'static,
    ) {
        if let Ok(mut slot) = self.before_job_write.0.lock() {
            *slot = Some(Box::new(step));
        }
    }

    /// From now on, reads that may be behind ([`Store::read_many_maybe_stale`]) answer as the
    /// store was at the previous such read (the first finds nothing): every run one step
    /// behind, new ones missing, what DynamoDB's eventually consistent reads may do at worst. A
    /// test of a caller of those reads sees that it still acts on the latest writes.
    pub fn lag_stale_reads(&self) {
        if let Ok(mut data) = self.data.lock() {
            data.lagging = Some(Default::default());
        }
    }

    /// How many write operations (each method that may change something, `write_all` counting
    /// once) were asked of this store so far, whether or not they changed anything: a test that
    /// must prove a request wrote nothing compares it before and after.
    pub fn writes(&self) -> u64 {
        self.lock().map_or(0, |data| data.writes)
    }

    /// Locks for a write, spending the injected failure when its turn comes.
    fn lock_write(&self) -> Result<MutexGuard<'_, Data>, StoreError> {
        let mut data = self.lock()?;
        data.writes += 1;
        match data.fail_in {
            Some(0) => {
                data.fail_in = None;
                Err(StoreError::unavailable("injected write failure"))
            }
            Some(n) => {
                data.fail_in = Some(n - 1);
                Ok(data)
            }
            None => Ok(data),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Data>, StoreError> {
        self.data.lock().map_err(|_| {
            StoreError::unavailable("the memory store was poisoned by an earlier panic")
        })
    }
}

impl Data {
    /// Whether `write`'s condition holds: a conditional write's version, a create's free id.
    fn check(&self, write: &Write<'_>) -> Result<(), StoreError> {
        let versioned = |key: &str, stored, expected| at_version(key.to_owned(), stored, expected);
        match write {
            Write::UpdateJob(job) => versioned(
                &job.job_id,
                self.jobs.get(&job.job_id).map(|j| j.version),
                job.version,
            ),
            Write::UpdateExecution(e) => versioned(
                &e.execution_id,
                self.executions.get(&e.execution_id).map(|e| e.version),
                e.version,
            ),
            Write::CreateExecution(e) if self.executions.contains_key(&e.execution_id) => {
                Err(StoreError::AlreadyExists(e.execution_id.clone()))
            }
            Write::CreateJob(job) if self.jobs.contains_key(&job.job_id) => {
                Err(StoreError::AlreadyExists(job.job_id.clone()))
            }
            Write::DeleteJob(job_id, version) => {
                versioned(job_id, self.jobs.get(*job_id).map(|j| j.version), *version)
            }
            Write::AppendAudit(entry)
                if self
                    .audit
                    .contains_key(&(entry.job_id.clone(), entry.entry_id.clone())) =>
            {
                Err(StoreError::AlreadyExists(write.key()))
            }
            Write::RequireCalendarUser(calendar, job_id)
                if !self
                    .calendar_users
                    .contains(&((*calendar).to_owned(), (*job_id).to_owned())) =>
            {
                Err(StoreError::NotFound(write.key()))
            }
            Write::CreateExecution(_)
            | Write::RequireCalendarUser(..)
            | Write::SetWakeup(..)
            | Write::CreateJob(_)
            | Write::AppendAudit(_)
            | Write::AddRollup(_) => Ok(()),
        }
    }

    /// Makes a write whose condition [`Data::check`] accepted; returns the version written.
    fn apply(&mut self, write: &Write<'_>) -> Result<u64, StoreError> {
        match *write {
            Write::UpdateJob(job) => {
                let version = next_version(job.version)?;
                let record = JobRecord {
                    version,
                    created_at: ms(job.created_at),
                    updated_at: ms(job.updated_at),
                    ..job.clone()
                };
                self.jobs.insert(job.job_id.clone(), record);
                Ok(version)
            }
            Write::CreateExecution(e) | Write::UpdateExecution(e) => {
                let version = match write {
                    Write::UpdateExecution(_) => next_version(e.version)?,
                    _ => e.version,
                };
                let record = ExecutionRecord {
                    version,
                    created_at: ms(e.created_at),
                    ..e.clone()
                };
                self.executions.insert(e.execution_id.clone(), record);
                Ok(version)
            }
            Write::SetWakeup(key, due) => {
                match due {
                    Some(due) => self.wakeups.insert(key.to_owned(), ms(due)),
                    None => self.wakeups.remove(key),
                };
                Ok(0)
            }
            Write::CreateJob(job) => {
                let stored = JobRecord {
                    created_at: ms(job.created_at),
                    updated_at: ms(job.updated_at),
                    ..job.clone()
                };
                self.jobs.insert(job.job_id.clone(), stored);
                Ok(job.version)
            }
            Write::DeleteJob(job_id, _) => {
                self.wakeups.remove(&format!("job:{job_id}"));
                self.jobs.remove(job_id);
                Ok(0)
            }
            Write::AppendAudit(entry) => {
                let stored = AuditRecord {
                    at: ms(entry.at),
                    ..entry.clone()
                };
                self.audit
                    .insert((entry.job_id.clone(), entry.entry_id.clone()), stored);
                Ok(0)
            }
            Write::AddRollup(rollup) => {
                let bucket = self
                    .rollups
                    .entry((rollup.hour, rollup.job_id.clone()))
                    .or_default();
                for (name, n) in &rollup.counters {
                    let at = bucket.entry(name.clone()).or_insert(0);
                    *at = at.saturating_add(*n);
                }
                Ok(0)
            }
            Write::RequireCalendarUser(..) => Ok(0),
        }
    }

    /// Buckets with an hour in `from..=to` that `keep` accepts, earliest first.
    fn rollups_in(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<RollupRecord> {
        if from > to {
            return Vec::new();
        }
        self.rollups
            .range((from, String::new())..)
            .take_while(|((hour, _), _)| *hour <= to)
            .filter(|((_, job_id), _)| keep(job_id))
            .map(|((hour, job_id), counters)| RollupRecord {
                job_id: job_id.clone(),
                hour: *hour,
                counters: counters.clone(),
            })
            .collect()
    }

    /// The latest `created_at` of each job id's executions.
    fn last_runs(&self) -> BTreeMap<&str, DateTime<Utc>> {
        let mut last = BTreeMap::new();
        for e in self.executions.values() {
            let at = last.entry(e.job_id.as_str()).or_insert(e.created_at);
            *at = (*at).max(e.created_at);
        }
        last
    }

    /// Checks then makes one write.
    fn write(&mut self, write: Write<'_>) -> Result<u64, StoreError> {
        self.check(&write)?;
        self.apply(&write)
    }
}

/// Times as the SQLite adapter keeps them: whole milliseconds.
fn ms(time: DateTime<Utc>) -> DateTime<Utc> {
    time.trunc_subsecs(3)
}

fn next_version(version: u64) -> Result<u64, StoreError> {
    version
        .checked_add(1)
        .ok_or_else(|| StoreError::unavailable(format!("version {version} cannot be incremented")))
}

/// The first `limit` (1..=[`MAX_PAGE`]) of `items`, already sorted and past the cursor, with the
/// next cursor only if more follow.
fn page<T: Clone>(items: Vec<&T>, limit: usize, cursor_of: impl Fn(&T) -> String) -> Page<T> {
    let limit = limit.clamp(1, MAX_PAGE);
    let more = items.len() > limit;
    let items: Vec<T> = items.into_iter().take(limit).cloned().collect();
    let next_cursor = more.then(|| items.last().map(cursor_of)).flatten();
    Page { items, next_cursor }
}

fn execution_cursor(execution: &ExecutionRecord) -> String {
    cursor::execution(execution.execute_number, &execution.execution_id)
}

fn search_cursor(execution: &ExecutionRecord) -> String {
    let (ms, id) = execution.search_key();
    cursor::search(ms, id)
}

fn child_cursor(execution: &ExecutionRecord) -> String {
    cursor::child(
        execution.created_at.timestamp_millis(),
        &execution.execution_id,
    )
}

impl JobStore for MemoryStore {
    async fn create_job(&self, job: &JobRecord) -> Result<(), StoreError> {
        self.lock_write()?.write(Write::CreateJob(job)).map(drop)
    }

    async fn get_job(&self, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
        Ok(self.lock()?.jobs.get(job_id).cloned())
    }

    async fn update_job(&self, job: &JobRecord) -> Result<u64, StoreError> {
        self.lock_write()?.write(Write::UpdateJob(job))
    }

    async fn delete_job(&self, job_id: &str) -> Result<bool, StoreError> {
        let mut data = self.lock_write()?;
        data.wakeups.remove(&format!("job:{job_id}"));
        Ok(data.jobs.remove(job_id).is_some())
    }

    async fn list_jobs(
        &self,
        filter: &JobFilter,
        order: JobOrder,
        request: &PageRequest,
    ) -> Result<Page<JobRecord>, StoreError> {
        let after = match &request.cursor {
            None => None,
            Some(text) if order == JobOrder::Id => Some((0, cursor::parse_job(text)?.to_owned())),
            Some(text) => Some(cursor::parse_ordered_job(order, text)?),
        };
        let data = self.lock()?;
        // Each job's place: a key, then its id. No key sorts last (`i64::MAX`); the latest run
        // comes first, so its key is the negated time.
        let last_runs = match order {
            JobOrder::LastRun => data.last_runs(),
            _ => BTreeMap::new(),
        };
        let key = |job: &JobRecord| -> i64 {
            match order {
                JobOrder::Id => 0,
                JobOrder::NextFire => data
                    .wakeups
                    .get(&format!("job:{}", job.job_id))
                    .map_or(i64::MAX, |due| due.timestamp_millis()),
                JobOrder::LastRun => last_runs
                    .get(job.job_id.as_str())
                    .map_or(i64::MAX, |at| -at.timestamp_millis()),
            }
        };
        let mut placed: Vec<(i64, &JobRecord)> = data
            .jobs
            .values()
            .filter(|job| filter.matches(job))
            .map(|job| (key(job), job))
            .filter(|(key, job)| {
                after.as_ref().is_none_or(|(after_key, after_id)| {
                    (*key, job.job_id.as_str()) > (*after_key, after_id.as_str())
                })
            })
            .collect();
        placed.sort_by(|(a, x), (b, y)| (a, &x.job_id).cmp(&(b, &y.job_id)));
        let limit = request.limit.clamp(1, MAX_PAGE);
        let next_cursor = placed
            .get(limit.saturating_sub(1))
            .filter(|_| placed.len() > limit)
            .map(|(key, job)| match order {
                JobOrder::Id => cursor::job(&job.job_id),
                _ => cursor::ordered_job(order, *key, &job.job_id),
            });
        Ok(Page {
            items: placed
                .into_iter()
                .take(limit)
                .map(|(_, job)| job.clone())
                .collect(),
            next_cursor,
        })
    }
}

impl ExecutionStore for MemoryStore {
    async fn create_execution(&self, execution: &ExecutionRecord) -> Result<bool, StoreError> {
        match self.lock_write()?.write(Write::CreateExecution(execution)) {
            Ok(_) => Ok(true),
            Err(StoreError::AlreadyExists(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn update_execution(&self, execution: &ExecutionRecord) -> Result<u64, StoreError> {
        self.lock_write()?.write(Write::UpdateExecution(execution))
    }

    async fn get_execution(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionRecord>, StoreError> {
        Ok(self.lock()?.executions.get(execution_id).cloned())
    }

    async fn list_executions(
        &self,
        job_id: &str,
        request: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_execution)
            .transpose()?;
        let data = self.lock()?;
        let key = |e: &ExecutionRecord| (e.execute_number, e.execution_id.clone());
        let mut items: Vec<_> = data
            .executions
            .values()
            .filter(|e| e.job_id == job_id && after.as_ref().is_none_or(|after| key(e) < *after))
            .collect();
        items.sort_by_key(|e| Reverse(key(e)));
        Ok(page(items, request.limit, execution_cursor))
    }

    async fn list_child_executions(
        &self,
        parent_job: &str,
        parent_execution: Option<u64>,
        request: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_child)
            .transpose()?;
        let data = self.lock()?;
        let key = |e: &ExecutionRecord| (e.created_at.timestamp_millis(), e.execution_id.clone());
        let mut items: Vec<_> = data
            .executions
            .values()
            .filter(|e| e.parent_job.as_deref() == Some(parent_job))
            .filter(|e| parent_execution.is_none() || e.parent_execution == parent_execution)
            .filter(|e| after.as_ref().is_none_or(|after| key(e) < *after))
            .collect();
        items.sort_by_key(|e| Reverse(key(e)));
        Ok(page(items, request.limit, child_cursor))
    }

    async fn search_executions(
        &self,
        query: &ExecutionQuery,
        request: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_search)
            .transpose()?;
        let data = self.lock()?;
        let mut items: Vec<_> = data
            .executions
            .values()
            .filter(|e| {
                after
                    .as_ref()
                    .is_none_or(|(ms, id)| e.search_key() < (*ms, id.as_str()))
            })
            .filter(|e| query.matches(e, data.jobs.get(&e.job_id)))
            .collect();
        items.sort_by(|a, b| b.search_key().cmp(&a.search_key()));
        Ok(page(items, request.limit, search_cursor))
    }

    async fn clean_executions(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> Result<CleanReport, StoreError> {
        let mut data = self.lock_write()?;
        let Data {
            jobs, executions, ..
        } = &mut *data;
        let mut by_job: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
        for e in executions.values() {
            by_job
                .entry(e.job_id.clone())
                .or_default()
                .push((e.execute_number, e.execution_id.clone()));
        }
        let past = past_retention(
            by_job,
            |id| jobs.contains_key(id),
            retain,
            purge_deleted_jobs,
        );
        for (_, (_, id)) in &past.removed {
            executions.remove(id);
        }
        Ok(CleanReport {
            executions_deleted: past.removed.len() as u64,
            destroyed_jobs_cleaned: past.purged_jobs,
        })
    }
}

impl AuditStore for MemoryStore {
    async fn list_audit(
        &self,
        job_id: &str,
        query: &AuditQuery,
        request: &PageRequest,
    ) -> Result<Page<AuditRecord>, StoreError> {
        let after = request
            .cursor
            .as_deref()
            .map(cursor::parse_audit)
            .transpose()?;
        let data = self.lock()?;
        let of_job = data
            .audit
            .range((job_id.to_owned(), String::new())..)
            .take_while(|((job, _), _)| job == job_id)
            .map(|(_, entry)| entry)
            .filter(|entry| in_range(query, entry.at));
        let items: Vec<&AuditRecord> = if query.oldest_first {
            of_job
                .filter(|e| after.is_none_or(|after| e.entry_id.as_str() > after))
                .collect()
        } else {
            let mut items: Vec<&AuditRecord> = of_job
                .filter(|e| after.is_none_or(|after| e.entry_id.as_str() < after))
                .collect();
            items.reverse();
            items
        };
        Ok(page(items, request.limit, |e| cursor::audit(&e.entry_id)))
    }

    async fn clean_audit(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> Result<AuditCleanReport, StoreError> {
        let mut data = self.lock_write()?;
        let Data { jobs, audit, .. } = &mut *data;
        let mut by_job: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (job_id, entry_id) in audit.keys() {
            by_job
                .entry(job_id.clone())
                .or_default()
                .push(entry_id.clone());
        }
        let past = past_retention(
            by_job,
            |id| jobs.contains_key(id),
            retain,
            purge_deleted_jobs,
        );
        for key in &past.removed {
            audit.remove(key);
        }
        Ok(AuditCleanReport {
            entries_deleted: past.removed.len() as u64,
        })
    }
}

impl WakeUpIndex for MemoryStore {
    async fn set_wakeup(&self, key: &str, due: Option<DateTime<Utc>>) -> Result<(), StoreError> {
        self.lock_write()?
            .write(Write::SetWakeup(key, due))
            .map(drop)
    }

    async fn clear_wakeup_if(&self, key: &str, due: DateTime<Utc>) -> Result<bool, StoreError> {
        let mut data = self.lock_write()?;
        if data.wakeups.get(key) == Some(&ms(due)) {
            data.wakeups.remove(key);
            return Ok(true);
        }
        Ok(false)
    }

    async fn get_wakeup(&self, key: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        Ok(self.lock()?.wakeups.get(key).copied())
    }

    async fn due_wakeups(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<WakeUp>, StoreError> {
        let data = self.lock()?;
        let mut due: Vec<_> = data
            .wakeups
            .iter()
            .filter(|(_, due)| **due <= ms(until))
            .map(|(key, due)| WakeUp {
                key: key.clone(),
                due: *due,
            })
            .collect();
        due.sort_by(|a, b| (a.due, &a.key).cmp(&(b.due, &b.key)));
        due.truncate(limit);
        Ok(due)
    }
}

impl RollupStore for MemoryStore {
    async fn job_rollups(
        &self,
        job_id: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<RollupRecord>, StoreError> {
        Ok(self.lock()?.rollups_in(from, to, |id| id == job_id))
    }

    async fn all_rollups(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<RollupRecord>, StoreError> {
        Ok(self.lock()?.rollups_in(from, to, |_| true))
    }

    async fn fleet_hours(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<FleetHourRecord>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        Ok(self
            .lock()?
            .fleet_hours
            .range((from, 0)..=(to, u32::MAX))
            .map(|((hour, part), body)| FleetHourRecord {
                hour: *hour,
                part: *part,
                body: body.clone(),
            })
            .collect())
    }

    async fn put_fleet_hours(&self, parts: &[FleetHourRecord]) -> Result<(), StoreError> {
        // What readers derive from the buckets and keep, not a change: not counted in
        // `writes()` (a read-only caller "writes nothing") and never an injected failure.
        let mut data = self.lock()?;
        for part in parts {
            data.fleet_hours
                .insert((part.hour, part.part), part.body.clone());
        }
        Ok(())
    }

    async fn clean_rollups(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut data = self.lock_write()?;
        let before_count = data.rollups.len();
        data.rollups.retain(|(hour, _), _| *hour >= before);
        data.fleet_hours.retain(|(hour, _), _| *hour >= before);
        Ok((before_count - data.rollups.len()) as u64)
    }
}

impl SettingStore for MemoryStore {
    async fn get_setting(&self, name: &str) -> Result<Option<SettingRecord>, StoreError> {
        Ok(self.lock()?.settings.get(name).cloned())
    }

    async fn put_setting(&self, setting: &SettingRecord) -> Result<(), StoreError> {
        let mut data = self.lock_write()?;
        let key = format!("setting {}", setting.name);
        let stored = data.settings.get(&setting.name).map(|s| s.version);
        check_next_version(stored, setting.version, key)?;
        data.settings.insert(setting.name.clone(), setting.clone());
        Ok(())
    }
}

/// Whether a versioned document (a setting, a calendar) at `stored` (`None`: there is none) may
/// be written at `version`: 1 only when there is none (else `AlreadyExists`), a later version
/// only over version − 1 (else `VersionConflict`, or `NotFound` when there is none).
fn check_next_version(stored: Option<u64>, version: u64, key: String) -> Result<(), StoreError> {
    match (stored, version) {
        (Some(_), 1) => Err(StoreError::AlreadyExists(key)),
        (None, 1) => Ok(()),
        (stored, version) => at_version(key, stored, version - 1),
    }
}

/// Whether a versioned record at `stored` (`None`: there is none) is at `expected` (else
/// `NotFound` or `VersionConflict`, naming `key`).
fn at_version(key: String, stored: Option<u64>, expected: u64) -> Result<(), StoreError> {
    match stored {
        None => Err(StoreError::NotFound(key)),
        Some(version) if version != expected => Err(StoreError::VersionConflict { key, expected }),
        Some(_) => Ok(()),
    }
}

impl SessionStore for MemoryStore {
    async fn revoke_session(
        &self,
        nonce: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut data = self.lock_write()?;
        data.revoked_sessions.insert(nonce.to_owned(), expires_at);
        Ok(())
    }

    async fn session_revoked(&self, nonce: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        Ok(self
            .lock()?
            .revoked_sessions
            .get(nonce)
            .is_some_and(|expiry| *expiry > now))
    }
}

impl CalendarStore for MemoryStore {
    async fn get_calendar(&self, name: &str) -> Result<Option<CalendarRecord>, StoreError> {
        Ok(self.lock()?.calendars.get(name).cloned())
    }

    async fn list_calendars(&self) -> Result<Vec<CalendarRecord>, StoreError> {
        Ok(self
            .lock()?
            .calendars
            .values()
            .take(crate::store::MAX_CALENDARS)
            .cloned()
            .collect())
    }

    async fn put_calendar(
        &self,
        calendar: &CalendarRecord,
        history: &AuditRecord,
    ) -> Result<(), StoreError> {
        let mut data = self.lock_write()?;
        let key = format!("calendar {}", calendar.name);
        let stored = data.calendars.get(&calendar.name).map(|c| c.version);
        check_next_version(stored, calendar.version, key)?;
        let history = Write::AppendAudit(history);
        data.check(&history)?;
        let listings = data.calendars.get(&calendar.name).map_or(0, |c| c.listings);
        data.calendars.insert(
            calendar.name.clone(),
            CalendarRecord {
                listings,
                ..calendar.clone()
            },
        );
        data.apply(&history)?;
        Ok(())
    }

    async fn delete_calendar(
        &self,
        name: &str,
        version: u64,
        listings: u64,
        history: &AuditRecord,
    ) -> Result<(), StoreError> {
        let mut data = self.lock_write()?;
        let key = format!("calendar {name}");
        let stored = data.calendars.get(name);
        at_version(key.clone(), stored.map(|c| c.version), version)?;
        if stored.is_some_and(|c| c.listings != listings) {
            return Err(StoreError::VersionConflict {
                key,
                expected: version,
            });
        }
        let history = Write::AppendAudit(history);
        data.check(&history)?;
        data.calendars.remove(name);
        data.apply(&history)?;
        Ok(())
    }

    async fn add_calendar_users(&self, job_id: &str, names: &[String]) -> Result<(), StoreError> {
        let mut data = self.lock_write()?;
        for name in names {
            let Some(calendar) = data.calendars.get_mut(name) else {
                return Err(StoreError::NotFound(format!("calendar {name}")));
            };
            calendar.listings = calendar.listings.saturating_add(1);
            data.calendar_users
                .insert((name.clone(), job_id.to_owned()));
        }
        Ok(())
    }

    async fn remove_calendar_users(
        &self,
        job_id: &str,
        names: &[String],
    ) -> Result<(), StoreError> {
        let mut data = self.lock_write()?;
        for name in names {
            data.calendar_users
                .remove(&(name.clone(), job_id.to_owned()));
        }
        Ok(())
    }

    async fn calendar_users(&self, name: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .lock()?
            .calendar_users
            .range((name.to_owned(), String::new())..)
            .take_while(|(calendar, _)| calendar == name)
            .map(|(_, job)| job.clone())
            .collect())
    }
}

impl Store for MemoryStore {
    async fn read_many_maybe_stale(
        &self,
        execution_ids: &[String],
        job_ids: &[String],
    ) -> Result<ManyRead, StoreError> {
        let lagged = {
            let mut data = self.lock()?;
            let snapshot = data.lagging.take();
            if snapshot.is_some() {
                data.lagging = Some((data.jobs.clone(), data.executions.clone()));
            }
            snapshot
        };
        match lagged {
            None => self.read_many(execution_ids, job_ids).await,
            Some((jobs, executions)) => Ok(ManyRead {
                executions: execution_ids
                    .iter()
                    .map(|id| executions.get(id).cloned())
                    .collect(),
                jobs: job_ids.iter().map(|id| jobs.get(id).cloned()).collect(),
            }),
        }
    }

    async fn write_all(&self, writes: &[Write<'_>]) -> Result<(), WriteAllError> {
        check_batch(writes)?;
        if writes
            .iter()
            .any(|w| matches!(w, Write::CreateJob(_) | Write::UpdateJob(_)))
        {
            let step = self
                .before_job_write
                .0
                .lock()
                .ok()
                .and_then(|mut slot| slot.take());
            if let Some(step) = step {
                step().await;
            }
        }
        let mut data = self.lock_write().map_err(WriteAllError::whole)?;
        for (index, write) in writes.iter().enumerate() {
            data.check(write).map_err(|e| WriteAllError::at(index, e))?;
        }
        for write in writes {
            data.apply(write).map_err(WriteAllError::whole)?;
        }
        Ok(())
    }
}
