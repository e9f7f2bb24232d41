//! The database schema and its migrations: the store's tables (step 1) and the queues' (step 2),
//! all in one file so one backup holds everything.
//!
//! A `schema_version` table records how far the file has been migrated; opening a store applies the
//! missing steps of [`MIGRATIONS`] in one transaction, so a file is never left half-migrated. A file
//! written by a newer build (a version past the end of the list) is refused rather than guessed at.
//!
//! Times are integer milliseconds since the Unix epoch: they sort and compare as numbers (the
//! wake-up index's `due <= ?` is an index range), and millisecond precision is what the store
//! contract promises. Documents are JSON text; only the fields the store filters or orders by are
//! columns of their own.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use sundial_ports::store::StoreError;

use crate::codec::db;

/// Step `i` migrates a file from schema version `i` to `i + 1`. Append only: never edit a step
/// that has shipped.
const MIGRATIONS: &[&str] = &[
    // 1: jobs, executions and the wake-up index.
    "
    CREATE TABLE jobs (
        job_id     TEXT    NOT NULL PRIMARY KEY,
        version    INTEGER NOT NULL,
        creator    TEXT    NOT NULL,
        parent_job TEXT,
        service    TEXT,
        state      TEXT    NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        document   TEXT    NOT NULL
    );
    -- job_id is in every index so a filtered listing reads in page order without sorting.
    CREATE INDEX jobs_by_creator ON jobs (creator, job_id);
    CREATE INDEX jobs_by_parent  ON jobs (parent_job, job_id);
    CREATE INDEX jobs_by_service ON jobs (service, job_id);
    CREATE INDEX jobs_by_state   ON jobs (state, job_id);

    CREATE TABLE executions (
        execution_id     TEXT    NOT NULL PRIMARY KEY,
        job_id           TEXT    NOT NULL,
        execute_number   INTEGER NOT NULL,
        state            TEXT    NOT NULL,
        parent_job       TEXT,
        parent_execution INTEGER,
        created_at       INTEGER NOT NULL,
        version          INTEGER NOT NULL,
        document         TEXT    NOT NULL
    );
    CREATE INDEX executions_by_job    ON executions (job_id, execute_number DESC);
    CREATE INDEX executions_by_parent ON executions (parent_job, parent_execution);

    CREATE TABLE wakeups (
        key TEXT    NOT NULL PRIMARY KEY,
        due INTEGER NOT NULL
    );
    CREATE INDEX wakeups_by_due ON wakeups (due, key);
    ",
    // 2: the queues (`dispatch`, `notify`, …) in one table, and their dead letters in another.
    "
    CREATE TABLE queue_messages (
        queue         TEXT    NOT NULL,
        -- AUTOINCREMENT: ids, and with them receipts, are never reused, even after a delete.
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        body          TEXT    NOT NULL,
        visible_at    INTEGER NOT NULL,
        receive_count INTEGER NOT NULL DEFAULT 0,
        receipt       TEXT,
        sent_at       INTEGER NOT NULL
    );
    -- Every index ends with the rowid (id): receive reads visible messages in (visible_at, id)
    -- order, and next_visible_in reads the first entry, without sorting.
    CREATE INDEX queue_messages_by_visible ON queue_messages (queue, visible_at);

    CREATE TABLE queue_dead_letters (
        queue         TEXT    NOT NULL,
        -- The order messages died in, which is the order dead_letters lists them.
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        message_id    INTEGER NOT NULL,
        body          TEXT    NOT NULL,
        receive_count INTEGER NOT NULL,
        sent_at       INTEGER NOT NULL,
        dead_at       INTEGER NOT NULL
    );
    CREATE INDEX queue_dead_letters_by_queue ON queue_dead_letters (queue);
    ",
    // 3: the jobs list's time orders (`JobOrder`): each job's next fire (the due time of its
    // `job:{id}` wake-up) and last run (the latest `created_at` of its executions), in a narrow
    // table of their own with an index each, so a page by either order is an index range like a
    // page by id. Not columns of `jobs`: SQLite rewrites a whole row to change one column, and
    // keeping these current on every wake-up and execution then rewrote the job's document each
    // time (engine throughput −12 %, docs/performance.md). Triggers keep them from the wake-ups
    // and executions they copy, whichever operation writes those, fill them for a job created
    // after its wake-up or executions, and drop them with the job. A value is never NULL: no next
    // fire is the largest integer and no run the smallest, so that jobs without one sort last in
    // both orders and the index alone gives the order.
    "
    CREATE TABLE job_orders (
        job_id    TEXT    NOT NULL PRIMARY KEY,
        next_fire INTEGER NOT NULL,
        last_run  INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO job_orders (job_id, next_fire, last_run)
    SELECT job_id,
           COALESCE((SELECT due FROM wakeups WHERE key = 'job:' || jobs.job_id),
                    9223372036854775807),
           COALESCE((SELECT MAX(created_at) FROM executions
                     WHERE executions.job_id = jobs.job_id),
                    -9223372036854775808)
    FROM jobs;
    CREATE INDEX job_orders_by_next_fire ON job_orders (next_fire, job_id);
    CREATE INDEX job_orders_by_last_run  ON job_orders (last_run DESC, job_id);

    CREATE TRIGGER job_orders_on_job_insert AFTER INSERT ON jobs BEGIN
        INSERT OR REPLACE INTO job_orders (job_id, next_fire, last_run) VALUES (
            NEW.job_id,
            COALESCE((SELECT due FROM wakeups WHERE key = 'job:' || NEW.job_id),
                     9223372036854775807),
            COALESCE((SELECT MAX(created_at) FROM executions
                      WHERE executions.job_id = NEW.job_id),
                     -9223372036854775808));
    END;
    CREATE TRIGGER job_orders_on_job_delete AFTER DELETE ON jobs BEGIN
        DELETE FROM job_orders WHERE job_id = OLD.job_id;
    END;
    CREATE TRIGGER job_orders_next_fire_on_wakeup_insert AFTER INSERT ON wakeups
    WHEN substr(NEW.key, 1, 4) = 'job:' BEGIN
        UPDATE job_orders SET next_fire = NEW.due WHERE job_id = substr(NEW.key, 5);
    END;
    CREATE TRIGGER job_orders_next_fire_on_wakeup_update AFTER UPDATE OF due ON wakeups
    WHEN substr(NEW.key, 1, 4) = 'job:' BEGIN
        UPDATE job_orders SET next_fire = NEW.due WHERE job_id = substr(NEW.key, 5);
    END;
    CREATE TRIGGER job_orders_next_fire_on_wakeup_delete AFTER DELETE ON wakeups
    WHEN substr(OLD.key, 1, 4) = 'job:' BEGIN
        UPDATE job_orders SET next_fire = 9223372036854775807 WHERE job_id = substr(OLD.key, 5);
    END;
    CREATE TRIGGER job_orders_last_run_on_execution AFTER INSERT ON executions BEGIN
        UPDATE job_orders SET last_run = NEW.created_at
        WHERE job_id = NEW.job_id AND last_run < NEW.created_at;
    END;
    ",
    // 4: job labels (`crate::labels`): the canonical JSON of a job's labels beside it, so an
    // update that keeps them is told apart without reading the index, and the index itself, one
    // row per label, read by `(key, value)` in id order. Jobs written before this step have no
    // labels (the definition refused the field), so there is nothing to fill.
    "
    ALTER TABLE jobs ADD COLUMN labels TEXT;
    CREATE TABLE job_labels (
        job_id TEXT NOT NULL,
        key    TEXT NOT NULL,
        value  TEXT NOT NULL,
        PRIMARY KEY (job_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX job_labels_by_label ON job_labels (key, value, job_id);
    ",
    // 5: statistics rollups (`RollupStore`): a job's counters per hour as JSON, read by
    // job and hour range or by hour across jobs (`GET /stats`). A rowid table, not WITHOUT ROWID:
    // a busy hour's row is 2–3 KB, which an index b-tree (what WITHOUT ROWID stores rows in)
    // keeps mostly on overflow pages (it holds about 1 KB of a row in place on a 4 KB page),
    // doubling the pages a 30-day read touches.
    "
    CREATE TABLE rollups (
        job_id   TEXT    NOT NULL,
        hour     INTEGER NOT NULL,
        counters TEXT    NOT NULL
    );
    CREATE UNIQUE INDEX rollups_by_job ON rollups (job_id, hour);
    CREATE INDEX rollups_by_hour ON rollups (hour, job_id);
    ",
    // 6: the audit trail: one row per change of a job, kept after the job (no foreign key), a
    // job's entries one range of the primary key, in time order (entry ids start with the time).
    "
    CREATE TABLE audit (
        job_id   TEXT    NOT NULL,
        entry_id TEXT    NOT NULL,
        at       INTEGER NOT NULL,
        document TEXT    NOT NULL,
        PRIMARY KEY (job_id, entry_id)
    ) WITHOUT ROWID;
    ",
    // 7: sealed hours' summaries across all jobs (`RollupStore::fleet_hours`), one row per part,
    // read by hour range for `GET /stats`; aged out with the rollups.
    "
    CREATE TABLE fleet_hours (
        hour INTEGER NOT NULL,
        part INTEGER NOT NULL,
        body TEXT    NOT NULL,
        PRIMARY KEY (hour, part)
    );
    ",
    // 8: searching executions across jobs (`ExecutionStore::search_executions`): the run's
    // scheduled time and end (ms) and what fired it, copied from the document, and two indexes
    // in search order (newest scheduled time first, then id), one of them by state first. Rows
    // written before this step get the columns from their documents here (`julianday` of the
    // RFC 3339 text, to the millisecond).
    "
    ALTER TABLE executions ADD COLUMN scheduled_at INTEGER;
    ALTER TABLE executions ADD COLUMN ended_at INTEGER;
    ALTER TABLE executions ADD COLUMN source TEXT;
    UPDATE executions SET
        scheduled_at = CAST(ROUND((julianday(json_extract(document, '$.scheduledTime'))
                                   - 2440587.5) * 86400000.0) AS INTEGER),
        ended_at = CAST(ROUND((julianday(json_extract(document, '$.finishedAt'))
                               - 2440587.5) * 86400000.0) AS INTEGER),
        source = CASE
            WHEN json_extract(document, '$.scheduledById') = job_id THEN 'schedule'
            WHEN substr(json_extract(document, '$.scheduledById'), 1, 8) = 'trigger:' THEN 'trigger'
            WHEN substr(json_extract(document, '$.scheduledById'), 1, 7) = 'update:' THEN 'trigger'
            WHEN substr(json_extract(document, '$.scheduledById'), 1, 9) = 'backfill:' THEN 'backfill'
        END;
    CREATE INDEX executions_by_scheduled ON executions (scheduled_at DESC, execution_id DESC);
    CREATE INDEX executions_by_state_scheduled
        ON executions (state, scheduled_at DESC, execution_id DESC);
    ",
    // 9: settings switched at run time (`SettingStore`: the debug mode), one versioned JSON
    // document per name.
    "
    CREATE TABLE IF NOT EXISTS settings (
        name       TEXT    NOT NULL PRIMARY KEY,
        version    INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        value      TEXT    NOT NULL
    );
    ",
    // 10: named business calendars (`CalendarStore`), one versioned JSON document per name, and
    // the index of the jobs using each (a calendar's change re-plans them; docs/engine.md).
    "
    CREATE TABLE IF NOT EXISTS calendars (
        name       TEXT    NOT NULL PRIMARY KEY,
        version    INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        document   TEXT    NOT NULL
    );
    CREATE TABLE IF NOT EXISTS calendar_users (
        calendar TEXT NOT NULL,
        job_id   TEXT NOT NULL,
        PRIMARY KEY (calendar, job_id)
    ) WITHOUT ROWID;
    ",
    // 11: console sessions signed out before they expired (`SessionStore`), so that a logout
    // survives a restart; rows past their expiry are deleted by the next logout.
    "
    CREATE TABLE IF NOT EXISTS revoked_sessions (
        nonce      TEXT    NOT NULL PRIMARY KEY,
        expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    ",
    // 12: how many times jobs were listed under each calendar (`CalendarRecord::listings`): a
    // delete is made only at the count its check of the jobs read. A table of its own rather than
    // a column, so that the step can run again over a file that has it, as every step can.
    "
    CREATE TABLE IF NOT EXISTS calendar_listings (
        name     TEXT    NOT NULL PRIMARY KEY,
        listings INTEGER NOT NULL
    ) WITHOUT ROWID;
    ",
];

/// The schema version this build writes.
pub(crate) const CURRENT_VERSION: u32 = MIGRATIONS.len() as u32;

/// Brings the database up to [`CURRENT_VERSION`].
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .map_err(db)?;
    let found: u32 = tx
        .query_row("SELECT MAX(version) FROM schema_version", [], |row| {
            row.get::<_, Option<u32>>(0)
        })
        .optional()
        .map_err(db)?
        .flatten()
        .unwrap_or(0);
    if found > CURRENT_VERSION {
        return Err(StoreError::unavailable(format!(
            "the database has schema version {found}, newer than this build's {CURRENT_VERSION}; \
             upgrade sundial to open it"
        )));
    }
    if found == CURRENT_VERSION {
        return Ok(());
    }
    for step in MIGRATIONS.iter().skip(found as usize) {
        tx.execute_batch(step).map_err(db)?;
    }
    tx.execute("DELETE FROM schema_version", []).map_err(db)?;
    tx.execute(
        "INSERT INTO schema_version (version) VALUES (?1)",
        [CURRENT_VERSION],
    )
    .map_err(db)?;
    tx.commit().map_err(db)?;
    tracing::info!(
        from = found,
        to = CURRENT_VERSION,
        "migrated the SQLite store schema"
    );
    Ok(())
}
