//! Sundial's embedded backend: the [`Store`] port on one SQLite file, for `sundial serve`, and the
//! [`Queue`](sundial_ports::queue::Queue) port in the same file ([`SqliteStore::queue`],
//! [`SqliteQueue`]), so one process needs one database and nothing else.
//!
//! **One connection, one writer thread, group commit.** SQLite allows one writer at a time anyway.
//! The connection lives on a thread of its own (`writer.rs`); every operation is sent to it and
//! answered through a channel. The thread takes whatever operations are waiting (up to
//! `writer::MAX_BATCH`), runs them in one `IMMEDIATE` transaction, each inside a savepoint of
//! its own (an operation that fails is rolled back alone), commits once, and only then answers
//! them all. Under load many fires share one commit — the WAL append and the file locks that
//! dominated the cost of a run — and an operation alone is committed at once, so latency at rest
//! does not change. The conditional writes the contract demands (`UPDATE … WHERE version = ?`,
//! insert-unless-exists) are exact because one thread runs them in order, and every operation is
//! atomic because of its savepoint. On a file, reads go to a second, read-only connection on a
//! reader thread of their own: WAL lets them run while the writer commits, and a read sees every
//! write answered before it. Callers never block a runtime worker on the disk, and a stopped
//! thread surfaces as [`StoreError::Unavailable`], never as a panic of the caller.
//!
//! **Checkpoints in the background.** A third connection copies the write-ahead log into the
//! database file every 100 ms (`checkpoint.rs`), so the writer's commits do not wait for it.
//!
//! **WAL, `synchronous=NORMAL`.** Write-ahead logging lets readers proceed while a write commits
//! and turns each commit into an append; with `NORMAL` a commit survives a crash of the process
//! and, at worst, the last commits are lost on power failure, never corrupting the file. A local
//! scheduler prefers that to an fsync per fire. A busy timeout makes a second process wait
//! for the write lock instead of failing at once.
//!
//! Times are stored as integer milliseconds, so they round-trip at millisecond precision, the
//! precision the store contract (and its conformance suite) promises.
//!
//! ```no_run
//! use sundial_embedded::SqliteStore;
//! use sundial_ports::store::{Store, ExecutionStore, JobStore, WakeUpIndex};
//!
//! # async fn demo() -> Result<(), sundial_ports::store::StoreError> {
//! let store = SqliteStore::open(std::path::Path::new("/var/lib/sundial/sundial.db"))?;
//! let _job = store.get_job("nightly-report").await?;
//! # Ok(()) }
//! ```

mod audit;
mod calendars;
mod checkpoint;
mod codec;
mod documents;
mod labels;
mod ops;
mod queue;
mod rollups;
mod schema;
mod search;
mod sessions;
mod settings;
mod writer;

pub use queue::SqliteQueue;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags};
use sundial_ports::clock::Clock;
use sundial_ports::store::{
    check_batch, AuditCleanReport, AuditQuery, AuditRecord, AuditStore, CalendarRecord,
    CalendarStore, CleanReport, ExecutionQuery, ExecutionRecord, ExecutionStore, FleetHourRecord,
    JobFilter, JobOrder, JobRecord, JobStore, ManyRead, Page, PageRequest, RollupRecord,
    RollupStore, SessionStore, SettingRecord, SettingStore, StateRead, Store, StoreError, WakeUp,
    WakeUpIndex, Write, WriteAllError,
};

use crate::codec::{db, ExecutionRow, JobRow};

/// How long a write waits for another process holding the database lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The [`Store`] on SQLite: a file for `sundial serve`, or memory for tests.
///
/// Cloning is cheap and shares the connection.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    db: writer::Db,
    reads: writer::Db,
    /// The background checkpoints of a file (none in memory).
    _checkpoints: Option<checkpoint::Checkpoints>,
}

/// Creates `path` as an empty file (an empty file is a new SQLite database) readable and writable
/// by its owner only, unless it exists.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

impl SqliteStore {
    /// Every stored execution counted by state, in one read: what a bench or a test checks a
    /// load against. Not a port method: the API's counts (`GET /stats`) come from the jobs and
    /// the statistics, the same way on every store.
    pub async fn execution_counts(
        &self,
    ) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
        self.read(ops::execution_counts).await
    }

    /// Opens (creating if needed) the database file at `path`, switches it to WAL and brings its
    /// schema up to date. The directory must exist.
    ///
    /// A new file is created readable by its owner only (0600), since it holds every job's
    /// request headers; SQLite gives the `-wal` and `-shm` files it creates beside it the
    /// database file's mode. An existing file keeps the mode it has.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        create_private(path).map_err(|err| {
            StoreError::unavailable_because(format!("cannot create {}", path.display()), err)
        })?;
        let conn = Connection::open(path).map_err(|err| {
            StoreError::unavailable_because(format!("cannot open {}", path.display()), err)
        })?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(db)?;
        if !mode.eq_ignore_ascii_case("wal") {
            // Some file systems (network mounts) cannot hold a WAL; the store still works, slower.
            tracing::warn!(path = %path.display(), mode, "SQLite refused WAL mode");
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db)?;
        conn.pragma_update(
            None,
            "wal_autocheckpoint",
            checkpoint::WRITER_CHECKPOINT_PAGES,
        )
        .map_err(db)?;
        let mut store = Self::ready(conn)?;
        // Reads get a connection of their own (opened after the schema is migrated), so they do
        // not queue behind the writer's batches.
        let reader = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|err| {
            StoreError::unavailable_because(format!("cannot open {} to read", path.display()), err)
        })?;
        reader.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        store.reads = writer::Db::start_reader(reader)
            .map_err(|e| StoreError::unavailable_because("starting the SQLite reader", e))?;
        let checkpointer = Connection::open(path).map_err(|err| {
            StoreError::unavailable_because(
                format!("cannot open {} to checkpoint", path.display()),
                err,
            )
        })?;
        checkpointer.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        store._checkpoints =
            Some(checkpoint::start(checkpointer).map_err(|e| {
                StoreError::unavailable_because("starting the SQLite checkpoints", e)
            })?);
        Ok(store)
    }

    /// A private, empty in-memory database: for tests and `--data`-less runs.
    pub fn in_memory() -> Result<SqliteStore, StoreError> {
        let conn = Connection::open_in_memory().map_err(db)?;
        Self::ready(conn)
    }

    fn ready(mut conn: Connection) -> Result<SqliteStore, StoreError> {
        schema::migrate(&mut conn)?;
        let db = writer::Db::start(conn)
            .map_err(|e| StoreError::unavailable_because("starting the SQLite writer", e))?;
        // An in-memory database is private to its connection: its reads go to the writer too.
        Ok(SqliteStore {
            reads: db.clone(),
            db,
            _checkpoints: None,
        })
    }

    /// Runs a read-only `op` on the reader connection.
    async fn read<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.reads.run(StoreError::unavailable, op).await
    }

    /// Runs `op` on the connection, on the writer thread, in the next batch.
    async fn run<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.db.run(StoreError::unavailable, op).await
    }

    /// A named queue (`dispatch`, `notify`, …) in this database, sharing the store's connection.
    ///
    /// Queues of different names share one table but nothing else: a message, a receipt or a dead
    /// letter of one is invisible to the others. `clock` decides when delays and visibility
    /// timeouts end; the queue starts with [`DEFAULT_MAX_RECEIVES`](sundial_ports::queue::DEFAULT_MAX_RECEIVES).
    pub fn queue(&self, name: &str, clock: Arc<dyn Clock>) -> SqliteQueue {
        SqliteQueue::new(self.db.clone(), name, clock)
    }
}

impl RollupStore for SqliteStore {
    async fn job_rollups(
        &self,
        job_id: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<RollupRecord>, StoreError> {
        let job_id = job_id.to_owned();
        self.read(move |conn| rollups::job_rollups(conn, &job_id, from, to))
            .await
    }

    async fn all_rollups(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<RollupRecord>, StoreError> {
        self.read(move |conn| rollups::all_rollups(conn, from, to))
            .await
    }

    async fn fleet_hours(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<FleetHourRecord>, StoreError> {
        self.read(move |conn| rollups::fleet_hours(conn, from, to))
            .await
    }

    async fn put_fleet_hours(&self, parts: &[FleetHourRecord]) -> Result<(), StoreError> {
        let parts = parts.to_vec();
        self.run(move |conn| rollups::put_fleet_hours(conn, &parts))
            .await
    }

    async fn clean_rollups(&self, before: DateTime<Utc>) -> Result<u64, StoreError> {
        self.run(move |conn| rollups::clean(conn, before)).await
    }
}

impl JobStore for SqliteStore {
    async fn create_job(&self, job: &JobRecord) -> Result<(), StoreError> {
        let job = JobRow::new(job)?;
        self.run(move |conn| ops::create_job(conn, &job)).await
    }

    async fn get_job(&self, job_id: &str) -> Result<Option<JobRecord>, StoreError> {
        let job_id = job_id.to_owned();
        self.read(move |conn| ops::get_job(conn, &job_id)).await
    }

    async fn update_job(&self, job: &JobRecord) -> Result<u64, StoreError> {
        let job = JobRow::new(job)?;
        self.run(move |conn| ops::update_job(conn, &job)).await
    }

    async fn delete_job(&self, job_id: &str) -> Result<bool, StoreError> {
        let job_id = job_id.to_owned();
        self.run(move |conn| ops::delete_job(conn, &job_id)).await
    }

    async fn list_jobs(
        &self,
        filter: &JobFilter,
        order: JobOrder,
        page: &PageRequest,
    ) -> Result<Page<JobRecord>, StoreError> {
        let (filter, page) = (filter.clone(), page.clone());
        self.read(move |conn| ops::list_jobs(conn, &filter, order, &page))
            .await
    }
}

impl ExecutionStore for SqliteStore {
    async fn create_execution(&self, execution: &ExecutionRecord) -> Result<bool, StoreError> {
        let execution = ExecutionRow::new(execution)?;
        self.run(move |conn| ops::create_execution(conn, &execution))
            .await
    }

    async fn update_execution(&self, execution: &ExecutionRecord) -> Result<u64, StoreError> {
        let execution = ExecutionRow::new(execution)?;
        self.run(move |conn| ops::update_execution(conn, &execution))
            .await
    }

    async fn get_execution(
        &self,
        execution_id: &str,
    ) -> Result<Option<ExecutionRecord>, StoreError> {
        let execution_id = execution_id.to_owned();
        self.read(move |conn| ops::get_execution(conn, &execution_id))
            .await
    }

    async fn list_executions(
        &self,
        job_id: &str,
        page: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let (job_id, page) = (job_id.to_owned(), page.clone());
        self.read(move |conn| ops::list_executions(conn, &job_id, &page))
            .await
    }

    async fn list_child_executions(
        &self,
        parent_job: &str,
        parent_execution: Option<u64>,
        page: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let (parent_job, page) = (parent_job.to_owned(), page.clone());
        self.read(move |conn| {
            ops::list_child_executions(conn, &parent_job, parent_execution, &page)
        })
        .await
    }

    async fn search_executions(
        &self,
        query: &ExecutionQuery,
        page: &PageRequest,
    ) -> Result<Page<ExecutionRecord>, StoreError> {
        let (query, page) = (query.clone(), page.clone());
        self.read(move |conn| search::search_executions(conn, &query, &page))
            .await
    }

    async fn clean_executions(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> Result<CleanReport, StoreError> {
        self.run(move |conn| ops::clean_executions(conn, retain, purge_deleted_jobs))
            .await
    }
}

impl WakeUpIndex for SqliteStore {
    async fn set_wakeup(&self, key: &str, due: Option<DateTime<Utc>>) -> Result<(), StoreError> {
        let key = key.to_owned();
        self.run(move |conn| ops::set_wakeup(conn, &key, due)).await
    }

    async fn clear_wakeup_if(&self, key: &str, due: DateTime<Utc>) -> Result<bool, StoreError> {
        let key = key.to_owned();
        self.run(move |conn| ops::clear_wakeup_if(conn, &key, due))
            .await
    }

    async fn get_wakeup(&self, key: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let key = key.to_owned();
        self.read(move |conn| ops::get_wakeup(conn, &key)).await
    }

    async fn due_wakeups(
        &self,
        until: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<WakeUp>, StoreError> {
        self.read(move |conn| ops::due_wakeups(conn, until, limit))
            .await
    }
}

impl AuditStore for SqliteStore {
    async fn list_audit(
        &self,
        job_id: &str,
        query: &AuditQuery,
        page: &PageRequest,
    ) -> Result<Page<AuditRecord>, StoreError> {
        let (job_id, query, page) = (job_id.to_owned(), query.clone(), page.clone());
        self.read(move |conn| audit::list(conn, &job_id, &query, &page))
            .await
    }

    async fn clean_audit(
        &self,
        retain: usize,
        purge_deleted_jobs: bool,
    ) -> Result<AuditCleanReport, StoreError> {
        self.run(move |conn| audit::clean(conn, retain, purge_deleted_jobs))
            .await
    }
}

impl SettingStore for SqliteStore {
    async fn get_setting(&self, name: &str) -> Result<Option<SettingRecord>, StoreError> {
        let name = name.to_owned();
        self.read(move |conn| settings::get(conn, &name)).await
    }

    async fn put_setting(&self, setting: &SettingRecord) -> Result<(), StoreError> {
        let setting = setting.clone();
        self.run(move |conn| settings::put(conn, &setting)).await
    }
}

impl SessionStore for SqliteStore {
    async fn revoke_session(
        &self,
        nonce: &str,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), StoreError> {
        let nonce = nonce.to_owned();
        let now = chrono::Utc::now();
        self.run(move |conn| sessions::revoke(conn, &nonce, &expires_at, &now))
            .await
    }

    async fn session_revoked(
        &self,
        nonce: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, StoreError> {
        let nonce = nonce.to_owned();
        self.read(move |conn| sessions::revoked(conn, &nonce, &now))
            .await
    }
}

impl CalendarStore for SqliteStore {
    async fn get_calendar(&self, name: &str) -> Result<Option<CalendarRecord>, StoreError> {
        let name = name.to_owned();
        self.read(move |conn| calendars::get(conn, &name)).await
    }

    async fn list_calendars(&self) -> Result<Vec<CalendarRecord>, StoreError> {
        self.read(calendars::list).await
    }

    async fn put_calendar(
        &self,
        calendar: &CalendarRecord,
        history: &AuditRecord,
    ) -> Result<(), StoreError> {
        let (calendar, history) = (calendar.clone(), history.clone());
        self.run(move |conn| calendars::put(conn, &calendar, &history))
            .await
    }

    async fn delete_calendar(
        &self,
        name: &str,
        version: u64,
        listings: u64,
        history: &AuditRecord,
    ) -> Result<(), StoreError> {
        let (name, history) = (name.to_owned(), history.clone());
        self.run(move |conn| calendars::delete(conn, &name, version, listings, &history))
            .await
    }

    async fn add_calendar_users(&self, job_id: &str, names: &[String]) -> Result<(), StoreError> {
        let (job_id, names) = (job_id.to_owned(), names.to_vec());
        self.run(move |conn| calendars::add_users(conn, &job_id, &names))
            .await
    }

    async fn remove_calendar_users(
        &self,
        job_id: &str,
        names: &[String],
    ) -> Result<(), StoreError> {
        let (job_id, names) = (job_id.to_owned(), names.to_vec());
        self.run(move |conn| calendars::remove_users(conn, &job_id, &names))
            .await
    }

    async fn calendar_users(&self, name: &str) -> Result<Vec<String>, StoreError> {
        let name = name.to_owned();
        self.read(move |conn| calendars::users(conn, &name)).await
    }
}

impl Store for SqliteStore {
    async fn read_many(
        &self,
        execution_ids: &[String],
        job_ids: &[String],
    ) -> Result<ManyRead, StoreError> {
        let (execution_ids, job_ids) = (execution_ids.to_vec(), job_ids.to_vec());
        self.read(move |conn| {
            Ok(ManyRead {
                executions: execution_ids
                    .iter()
                    .map(|id| ops::get_execution(conn, id))
                    .collect::<Result<_, _>>()?,
                jobs: job_ids
                    .iter()
                    .map(|id| ops::get_job(conn, id))
                    .collect::<Result<_, _>>()?,
            })
        })
        .await
    }

    async fn read_states(
        &self,
        execution_ids: &[String],
    ) -> Result<Vec<Option<StateRead>>, StoreError> {
        let execution_ids = execution_ids.to_vec();
        self.read(move |conn| {
            execution_ids
                .iter()
                .map(|id| ops::get_state(conn, id))
                .collect()
        })
        .await
    }

    async fn write_all(&self, writes: &[Write<'_>]) -> Result<(), WriteAllError> {
        check_batch(writes)?;
        let writes = writes
            .iter()
            .enumerate()
            .map(|(index, write)| {
                ops::OwnedWrite::try_from(write).map_err(|e| WriteAllError::at(index, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.db
            .run(
                |why| WriteAllError::whole(StoreError::unavailable(why)),
                move |conn| ops::write_all(conn, &writes),
            )
            .await
    }
}
