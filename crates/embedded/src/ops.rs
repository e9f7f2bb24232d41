//! The store operations as blocking functions over one connection.
//!
//! The writer thread runs each function in a savepoint of its batch transaction (see `writer.rs`),
//! so a function that fails leaves nothing behind and needs no transaction of its own; reads run on
//! the reader connection, each statement its own read transaction.
//! Every value reaches SQLite as a bound parameter: the SQL of the listings varies with the
//! filters and cursor given, and is assembled from constant fragments only.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use sundial_ports::store::{
    CleanReport, ExecutionRecord, JobFilter, JobOrder, JobRecord, Page, PageRequest, StateRead,
    StoreError, WakeUp, Write, WriteAllError, MAX_PAGE,
};

use crate::codec::{
    child_cursor, db, execution_cursor, execution_from_row, int, job_cursor, job_from_row, millis,
    ordered_job_cursor, parse_child_cursor, parse_execution_cursor, parse_job_cursor,
    parse_ordered_job_cursor, time_from_millis, ExecutionRow, JobRow, Json, Unsigned,
    EXECUTION_COLUMNS, JOB_COLUMNS,
};
use crate::labels;

fn next_version(version: u64) -> Result<u64, StoreError> {
    version
        .checked_add(1)
        .ok_or_else(|| StoreError::unavailable(format!("version {version} cannot be incremented")))
}

/// The number of rows to fetch for a page: one more than it holds, to learn whether another follows.
/// A limit of 0 is read as 1 so that following cursors always makes progress.
fn fetch_count(page: &PageRequest) -> (usize, i64) {
    let limit = page.limit.clamp(1, MAX_PAGE);
    (limit, i64::try_from(limit + 1).unwrap_or(i64::MAX))
}

/// Cuts the look-ahead row off and derives the next cursor from the page's last item.
fn into_page<T>(mut items: Vec<T>, limit: usize, cursor_of: impl Fn(&T) -> String) -> Page<T> {
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = if more {
        items.last().map(cursor_of)
    } else {
        None
    };
    Page { items, next_cursor }
}

// ---------------------------------------------------------------------------------------------
// Jobs

pub(crate) fn create_job(conn: &mut Connection, job: &JobRow) -> Result<(), StoreError> {
    let version = int(job.version)?;
    let inserted = conn
        .prepare_cached(
            "INSERT INTO jobs (job_id, version, creator, parent_job, service, state, created_at, updated_at, document, labels)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (job_id) DO NOTHING",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                job.job_id,
                version,
                job.creator,
                job.parent_job,
                job.service,
                job.state,
                job.created_at,
                job.updated_at,
                job.document,
                job.labels.text,
            ])
        })
        .map_err(db)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists(job.job_id.clone()));
    }
    labels::write(conn, &job.job_id, &job.labels)
}

pub(crate) fn get_job(
    conn: &mut Connection,
    job_id: &str,
) -> Result<Option<JobRecord>, StoreError> {
    conn.prepare_cached(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE job_id = ?1"))
        .and_then(|mut select| select.query_row([job_id], job_from_row).optional())
        .map_err(db)
}

pub(crate) fn update_job(conn: &mut Connection, job: &JobRow) -> Result<u64, StoreError> {
    let version = next_version(job.version)?;
    let (new_version, expected) = (int(version)?, int(job.version)?);
    let (created_at, updated_at, document) = (job.created_at, job.updated_at, &job.document);
    // Most updates (every run's admission and end) change only the document. SQLite rewrites the
    // entries of every index whose columns a `SET` names, changed or not, so the indexed columns
    // are first matched instead of set; only when one of them changed is the full update needed.
    let updated = conn
        .prepare_cached(
            "UPDATE jobs SET version = ?1, updated_at = ?2, document = ?3
             WHERE job_id = ?4 AND version = ?5 AND creator = ?6 AND parent_job IS ?7
               AND service IS ?8 AND state = ?9 AND created_at = ?10 AND labels IS ?11",
        )
        .and_then(|mut update| {
            update.execute(params![
                new_version,
                updated_at,
                document,
                job.job_id,
                expected,
                job.creator,
                job.parent_job,
                job.service,
                job.state,
                created_at,
                job.labels.text,
            ])
        })
        .map_err(db)?;
    if updated > 0 {
        return Ok(version);
    }
    let updated = conn
        .prepare_cached(
            "UPDATE jobs SET version = ?1, creator = ?2, parent_job = ?3, service = ?4, state = ?5,
                             created_at = ?6, updated_at = ?7, document = ?8, labels = ?11
             WHERE job_id = ?9 AND version = ?10",
        )
        .and_then(|mut update| {
            update.execute(params![
                new_version,
                job.creator,
                job.parent_job,
                job.service,
                job.state,
                created_at,
                updated_at,
                document,
                job.job_id,
                expected,
                job.labels.text,
            ])
        })
        .map_err(db)?;
    if updated > 0 {
        // Rewritten whether or not the labels were what changed: this path is the rare one.
        labels::write(conn, &job.job_id, &job.labels)?;
    }
    if updated == 0 {
        // Nothing matched (id, version): tell a lost race from a missing job.
        let exists = conn
            .prepare_cached("SELECT 1 FROM jobs WHERE job_id = ?1")
            .and_then(|mut select| select.query_row([&job.job_id], |_| Ok(())).optional())
            .map_err(db)?
            .is_some();
        return Err(if exists {
            StoreError::VersionConflict {
                key: job.job_id.clone(),
                expected: job.version,
            }
        } else {
            StoreError::NotFound(job.job_id.clone())
        });
    }
    Ok(version)
}

/// Deletes a job at `version` with its wake-up (`Write::DeleteJob`): `NotFound` if there is no
/// job, `VersionConflict` if its version moved.
fn delete_job_at(conn: &mut Connection, job_id: &str, version: u64) -> Result<(), StoreError> {
    let expected = int(version)?;
    let deleted = conn
        .prepare_cached("DELETE FROM jobs WHERE job_id = ?1 AND version = ?2")
        .and_then(|mut delete| delete.execute(params![job_id, expected]))
        .map_err(db)?;
    if deleted == 0 {
        return Err(match get_job(conn, job_id)? {
            Some(_) => StoreError::VersionConflict {
                key: job_id.to_owned(),
                expected: version,
            },
            None => StoreError::NotFound(job_id.to_owned()),
        });
    }
    labels::remove(conn, job_id)?;
    set_wakeup(conn, &format!("job:{job_id}"), None)
}

pub(crate) fn delete_job(conn: &mut Connection, job_id: &str) -> Result<bool, StoreError> {
    let deleted = conn
        .execute("DELETE FROM jobs WHERE job_id = ?1", [job_id])
        .map_err(db)?;
    labels::remove(conn, job_id)?;
    conn.execute(
        "DELETE FROM wakeups WHERE key = ?1",
        [format!("job:{job_id}")],
    )
    .map_err(db)?;
    Ok(deleted > 0)
}

pub(crate) fn list_jobs(
    conn: &mut Connection,
    filter: &JobFilter,
    order: JobOrder,
    page: &PageRequest,
) -> Result<Page<JobRecord>, StoreError> {
    let (limit, fetch) = fetch_count(page);
    // The sort key of the order (table `job_orders`, schema step 3), read back for the cursor; the id order
    // has none.
    let columns = JOB_COLUMNS
        .split(", ")
        .map(|c| format!("j.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (key, from) = match order {
        JobOrder::Id => ("0", "jobs j"),
        JobOrder::NextFire => (
            "o.next_fire",
            "job_orders o JOIN jobs j ON j.job_id = o.job_id",
        ),
        JobOrder::LastRun => (
            "o.last_run",
            "job_orders o JOIN jobs j ON j.job_id = o.job_id",
        ),
    };
    let mut sql = format!("SELECT {columns}, {key} FROM {from} WHERE 1 = 1");
    let mut values: Vec<SqlValue> = Vec::new();
    let conditions = [
        (" AND j.state = ?", &filter.state),
        (" AND j.creator = ?", &filter.creator),
        (" AND j.parent_job = ?", &filter.parent_job),
        (" AND j.service = ?", &filter.service),
    ];
    for (condition, value) in conditions {
        if let Some(value) = value {
            sql.push_str(condition);
            values.push(SqlValue::Text(value.clone()));
        }
    }
    labels::conditions(filter, &mut sql, &mut values);
    // Parameters are all positional (`?`): the filters before them vary. Each after-the-cursor
    // condition starts with a range on the order's index, so a page is a
    // seek, then the few ties at the cursor's key are skipped by id.
    match (order, page.cursor.as_deref()) {
        (_, None) => {}
        (JobOrder::Id, Some(cursor)) => {
            sql.push_str(" AND j.job_id > ?");
            values.push(SqlValue::Text(parse_job_cursor(cursor)?));
        }
        (JobOrder::NextFire, Some(cursor)) => {
            let (after, id) = parse_ordered_job_cursor(order, cursor)?;
            sql.push_str(" AND o.next_fire >= ? AND (o.next_fire > ? OR o.job_id > ?)");
            values.extend([after.into(), after.into(), id.into()]);
        }
        (JobOrder::LastRun, Some(cursor)) => {
            let (after, id) = parse_ordered_job_cursor(order, cursor)?;
            sql.push_str(" AND o.last_run <= ? AND (o.last_run < ? OR o.job_id > ?)");
            values.extend([after.into(), after.into(), id.into()]);
        }
    }
    sql.push_str(match order {
        JobOrder::Id => " ORDER BY j.job_id LIMIT ?",
        JobOrder::NextFire => " ORDER BY o.next_fire, o.job_id LIMIT ?",
        JobOrder::LastRun => " ORDER BY o.last_run DESC, o.job_id LIMIT ?",
    });
    values.push(SqlValue::Integer(fetch));

    let rows: Vec<(JobRecord, i64)> = conn
        .prepare_cached(&sql)
        .and_then(|mut select| {
            select
                .query_map(params_from_iter(values), |row| {
                    Ok((job_from_row(row)?, row.get::<_, i64>(9)?))
                })?
                .collect()
        })
        .map_err(db)?;
    let page = into_page(rows, limit, |(job, key)| match order {
        JobOrder::Id => job_cursor(&job.job_id),
        _ => ordered_job_cursor(order, *key, &job.job_id),
    });
    Ok(Page {
        items: page.items.into_iter().map(|(job, _)| job).collect(),
        next_cursor: page.next_cursor,
    })
}

// ---------------------------------------------------------------------------------------------
// Executions

pub(crate) fn create_execution(
    conn: &mut Connection,
    execution: &ExecutionRow,
) -> Result<bool, StoreError> {
    let (number, version) = (int(execution.execute_number)?, int(execution.version)?);
    let parent_execution = execution.parent_execution.map(int).transpose()?;
    // `ON CONFLICT (execution_id) DO NOTHING` rather than `INSERT OR IGNORE`: only a duplicate id
    // is a no-op; any other constraint failure stays an error.
    let inserted = conn
        .prepare_cached(
            "INSERT INTO executions (execution_id, job_id, execute_number, state, parent_job, parent_execution,
                                     created_at, version, document, scheduled_at, ended_at, source)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (execution_id) DO NOTHING",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                execution.execution_id,
                execution.job_id,
                number,
                execution.state,
                execution.parent_job,
                parent_execution,
                execution.created_at,
                version,
                execution.document,
                execution.scheduled_at,
                execution.ended_at,
                execution.source,
            ])
        })
        .map_err(db)?;
    Ok(inserted > 0)
}

pub(crate) fn update_execution(
    conn: &mut Connection,
    execution: &ExecutionRow,
) -> Result<u64, StoreError> {
    let version = next_version(execution.version)?;
    let (new_version, expected) = (int(version)?, int(execution.version)?);
    let number = int(execution.execute_number)?;
    let parent_execution = execution.parent_execution.map(int).transpose()?;
    let (created_at, document) = (execution.created_at, &execution.document);
    // As in `update_job`: a step changes the state, the document and the end (not indexed),
    // never the other indexed columns, which are matched rather than set so that their index
    // entries stay as they are.
    let updated = conn
        .prepare_cached(
            "UPDATE executions SET state = ?1, version = ?2, document = ?3, ended_at = ?11
             WHERE execution_id = ?4 AND version = ?5 AND job_id = ?6 AND execute_number = ?7
               AND parent_job IS ?8 AND parent_execution IS ?9 AND created_at = ?10
               AND scheduled_at IS ?12 AND source IS ?13",
        )
        .and_then(|mut update| {
            update.execute(params![
                execution.state,
                new_version,
                document,
                execution.execution_id,
                expected,
                execution.job_id,
                number,
                execution.parent_job,
                parent_execution,
                created_at,
                execution.ended_at,
                execution.scheduled_at,
                execution.source,
            ])
        })
        .map_err(db)?;
    if updated > 0 {
        return Ok(version);
    }
    let updated = conn
        .prepare_cached(
            "UPDATE executions SET job_id = ?1, execute_number = ?2, state = ?3, parent_job = ?4,
                                   parent_execution = ?5, created_at = ?6, version = ?7, document = ?8,
                                   scheduled_at = ?11, ended_at = ?12, source = ?13
             WHERE execution_id = ?9 AND version = ?10",
        )
        .and_then(|mut update| {
            update.execute(params![
                execution.job_id,
                number,
                execution.state,
                execution.parent_job,
                parent_execution,
                created_at,
                new_version,
                document,
                execution.execution_id,
                expected,
                execution.scheduled_at,
                execution.ended_at,
                execution.source,
            ])
        })
        .map_err(db)?;
    if updated == 0 {
        let exists = conn
            .prepare_cached("SELECT 1 FROM executions WHERE execution_id = ?1")
            .and_then(|mut select| {
                select
                    .query_row([&execution.execution_id], |_| Ok(()))
                    .optional()
            })
            .map_err(db)?
            .is_some();
        return Err(if exists {
            StoreError::VersionConflict {
                key: execution.execution_id.clone(),
                expected: execution.version,
            }
        } else {
            StoreError::NotFound(execution.execution_id.clone())
        });
    }
    Ok(version)
}

pub(crate) fn get_execution(
    conn: &mut Connection,
    execution_id: &str,
) -> Result<Option<ExecutionRecord>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {EXECUTION_COLUMNS} FROM executions WHERE execution_id = ?1"
    ))
    .and_then(|mut select| {
        select
            .query_row([execution_id], execution_from_row)
            .optional()
    })
    .map_err(db)
}

/// An execution's state, with its document only when it is `Skipped` (SQLite leaves the other
/// documents unread and undecoded).
pub(crate) fn get_state(
    conn: &mut Connection,
    execution_id: &str,
) -> Result<Option<StateRead>, StoreError> {
    conn.prepare_cached(
        "SELECT execution_id, state, CASE WHEN state = 'Skipped' THEN document END \
         FROM executions WHERE execution_id = ?1",
    )
    .and_then(|mut select| {
        select
            .query_row([execution_id], |row| {
                Ok(StateRead {
                    execution_id: row.get(0)?,
                    state: row.get(1)?,
                    skipped_document: row.get::<_, Option<Json>>(2)?.map(|json| json.0),
                })
            })
            .optional()
    })
    .map_err(db)
}

pub(crate) fn list_executions(
    conn: &mut Connection,
    job_id: &str,
    page: &PageRequest,
) -> Result<Page<ExecutionRecord>, StoreError> {
    let after = page
        .cursor
        .as_deref()
        .map(parse_execution_cursor)
        .transpose()?;
    let (limit, fetch) = fetch_count(page);
    let mut values = vec![SqlValue::Text(job_id.to_owned())];
    // A row-value comparison, so the index on (job_id, execute_number DESC) seeks to the cursor.
    let keyset = match after {
        Some((number, id)) => {
            let number = i64::try_from(number).map_err(|_| StoreError::InvalidCursor)?;
            values.extend([SqlValue::Integer(number), SqlValue::Text(id)]);
            " AND (execute_number, execution_id) < (?, ?)"
        }
        None => "",
    };
    values.push(SqlValue::Integer(fetch));
    let items = conn
        .prepare_cached(&format!(
            "SELECT {EXECUTION_COLUMNS} FROM executions WHERE job_id = ?{keyset}
             ORDER BY execute_number DESC, execution_id DESC LIMIT ?"
        ))
        .and_then(|mut select| {
            select
                .query_map(params_from_iter(values), execution_from_row)?
                .collect()
        })
        .map_err(db)?;
    Ok(into_page(items, limit, execution_cursor))
}

pub(crate) fn list_child_executions(
    conn: &mut Connection,
    parent_job: &str,
    parent_execution: Option<u64>,
    page: &PageRequest,
) -> Result<Page<ExecutionRecord>, StoreError> {
    let after = page.cursor.as_deref().map(parse_child_cursor).transpose()?;
    let (limit, fetch) = fetch_count(page);
    let mut values = vec![SqlValue::Text(parent_job.to_owned())];
    let by_execution = match parent_execution {
        Some(number) => {
            // No stored execute number exceeds SQLite's signed range: nothing can match.
            let Ok(number) = i64::try_from(number) else {
                return Ok(Page {
                    items: Vec::new(),
                    next_cursor: None,
                });
            };
            values.push(SqlValue::Integer(number));
            " AND parent_execution = ?"
        }
        None => "",
    };
    let keyset = match after {
        Some((created, id)) => {
            values.extend([SqlValue::Integer(created), SqlValue::Text(id)]);
            " AND (created_at, execution_id) < (?, ?)"
        }
        None => "",
    };
    values.push(SqlValue::Integer(fetch));
    let items = conn
        .prepare_cached(&format!(
            "SELECT {EXECUTION_COLUMNS} FROM executions WHERE parent_job = ?{by_execution}{keyset}
             ORDER BY created_at DESC, execution_id DESC LIMIT ?"
        ))
        .and_then(|mut select| {
            select
                .query_map(params_from_iter(values), execution_from_row)?
                .collect()
        })
        .map_err(db)?;
    Ok(into_page(items, limit, child_cursor))
}

pub(crate) fn clean_executions(
    conn: &mut Connection,
    retain: usize,
    purge_deleted_jobs: bool,
) -> Result<CleanReport, StoreError> {
    let tx = conn.savepoint().map_err(db)?;
    let mut report = CleanReport::default();
    if purge_deleted_jobs {
        report.destroyed_jobs_cleaned = tx
            .query_row(
                "SELECT COUNT(DISTINCT job_id) FROM executions WHERE job_id NOT IN (SELECT job_id FROM jobs)",
                [],
                |row| row.get::<_, Unsigned>(0),
            )
            .map_err(db)?
            .0;
        let purged = tx
            .execute(
                "DELETE FROM executions WHERE job_id NOT IN (SELECT job_id FROM jobs)",
                [],
            )
            .map_err(db)?;
        report.executions_deleted += purged as u64;
    }
    // Retention counts every job id with executions, whether or not the job still exists.
    let trimmed = tx
        .execute(
            "DELETE FROM executions WHERE execution_id IN (
                 SELECT execution_id FROM (
                     SELECT execution_id,
                            ROW_NUMBER() OVER (PARTITION BY job_id ORDER BY execute_number DESC, execution_id DESC)
                              AS newness
                     FROM executions
                 ) WHERE newness > ?1
             )",
            [i64::try_from(retain).unwrap_or(i64::MAX)],
        )
        .map_err(db)?;
    report.executions_deleted += trimmed as u64;
    tx.commit().map_err(db)?;
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// Wake-up index

/// Writes every write of a batch or none. Atomic because the writer runs every operation in a
/// savepoint of its own and rolls it back when it returns an error (see `writer.rs`): a failed
/// condition undoes the writes made before it.
pub(crate) fn write_all(conn: &mut Connection, writes: &[OwnedWrite]) -> Result<(), WriteAllError> {
    for (index, write) in writes.iter().enumerate() {
        let at = |e| WriteAllError::at(index, e);
        match write {
            OwnedWrite::UpdateJob(job) => {
                update_job(conn, job).map_err(at)?;
            }
            OwnedWrite::CreateExecution(execution) => {
                if !create_execution(conn, execution).map_err(at)? {
                    return Err(at(StoreError::AlreadyExists(
                        execution.execution_id.clone(),
                    )));
                }
            }
            OwnedWrite::UpdateExecution(execution) => {
                update_execution(conn, execution).map_err(at)?;
            }
            OwnedWrite::SetWakeup(key, due) => set_wakeup(conn, key, *due).map_err(at)?,
            OwnedWrite::CreateJob(job) => create_job(conn, job).map_err(at)?,
            OwnedWrite::DeleteJob(job_id, version) => {
                delete_job_at(conn, job_id, *version).map_err(at)?
            }
            OwnedWrite::AppendAudit(entry) => crate::audit::append(conn, entry).map_err(at)?,
            OwnedWrite::AddRollup(rollup) => crate::rollups::add(conn, rollup).map_err(at)?,
            OwnedWrite::RequireCalendarUser(calendar, job_id) => {
                crate::calendars::require_user(conn, calendar, job_id).map_err(at)?
            }
        }
    }
    Ok(())
}

/// A [`Write`] that owns its data, to cross to the writer thread, its documents serialised.
pub(crate) enum OwnedWrite {
    UpdateJob(JobRow),
    CreateExecution(ExecutionRow),
    UpdateExecution(ExecutionRow),
    SetWakeup(String, Option<chrono::DateTime<chrono::Utc>>),
    CreateJob(JobRow),
    DeleteJob(String, u64),
    AppendAudit(crate::audit::AuditRow),
    AddRollup(sundial_ports::store::RollupRecord),
    RequireCalendarUser(String, String),
}

impl TryFrom<&Write<'_>> for OwnedWrite {
    type Error = StoreError;

    fn try_from(write: &Write<'_>) -> Result<Self, StoreError> {
        Ok(match *write {
            Write::UpdateJob(job) => OwnedWrite::UpdateJob(JobRow::new(job)?),
            Write::CreateExecution(e) => OwnedWrite::CreateExecution(ExecutionRow::new(e)?),
            Write::UpdateExecution(e) => OwnedWrite::UpdateExecution(ExecutionRow::new(e)?),
            Write::SetWakeup(key, due) => OwnedWrite::SetWakeup(key.to_owned(), due),
            Write::CreateJob(job) => OwnedWrite::CreateJob(JobRow::new(job)?),
            Write::DeleteJob(job_id, version) => OwnedWrite::DeleteJob(job_id.to_owned(), version),
            Write::AppendAudit(entry) => {
                OwnedWrite::AppendAudit(crate::audit::AuditRow::new(entry)?)
            }
            Write::AddRollup(rollup) => OwnedWrite::AddRollup(rollup.clone()),
            Write::RequireCalendarUser(calendar, job_id) => {
                OwnedWrite::RequireCalendarUser(calendar.to_owned(), job_id.to_owned())
            }
        })
    }
}

pub(crate) fn set_wakeup(
    conn: &mut Connection,
    key: &str,
    due: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<(), StoreError> {
    match due {
        Some(due) => conn
            .prepare_cached(
                "INSERT INTO wakeups (key, due) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET due = excluded.due",
            )
            .and_then(|mut upsert| upsert.execute(params![key, millis(&due)])),
        None => conn
            .prepare_cached("DELETE FROM wakeups WHERE key = ?1")
            .and_then(|mut delete| delete.execute([key])),
    }
    .map(drop)
    .map_err(db)
}

pub(crate) fn clear_wakeup_if(
    conn: &mut Connection,
    key: &str,
    due: chrono::DateTime<chrono::Utc>,
) -> Result<bool, StoreError> {
    conn.prepare_cached("DELETE FROM wakeups WHERE key = ?1 AND due = ?2")
        .and_then(|mut delete| delete.execute(params![key, millis(&due)]))
        .map(|deleted| deleted > 0)
        .map_err(db)
}

pub(crate) fn get_wakeup(
    conn: &mut Connection,
    key: &str,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, StoreError> {
    let due: Option<i64> = conn
        .prepare_cached("SELECT due FROM wakeups WHERE key = ?1")
        .and_then(|mut select| select.query_row([key], |row| row.get(0)).optional())
        .map_err(db)?;
    due.map(time_from_millis).transpose()
}

pub(crate) fn due_wakeups(
    conn: &mut Connection,
    until: chrono::DateTime<chrono::Utc>,
    limit: usize,
) -> Result<Vec<WakeUp>, StoreError> {
    let rows: Vec<(String, i64)> = conn
        .prepare_cached("SELECT key, due FROM wakeups WHERE due <= ?1 ORDER BY due, key LIMIT ?2")
        .and_then(|mut select| {
            select
                .query_map(
                    params![millis(&until), i64::try_from(limit).unwrap_or(i64::MAX)],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )?
                .collect()
        })
        .map_err(db)?;
    rows.into_iter()
        .map(|(key, due)| {
            Ok(WakeUp {
                key,
                due: time_from_millis(due)?,
            })
        })
        .collect()
}

/// Every stored execution counted by state ([`SqliteStore::execution_counts`](crate::SqliteStore::execution_counts)).
pub(crate) fn execution_counts(
    conn: &mut Connection,
) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
    conn.prepare_cached("SELECT state, COUNT(*) FROM executions GROUP BY state")
        .and_then(|mut select| {
            select
                .query_map([], |row| Ok((row.get(0)?, row.get::<_, Unsigned>(1)?.0)))?
                .collect()
        })
        .map_err(db)
}
