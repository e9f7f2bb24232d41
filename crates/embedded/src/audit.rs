//! The audit trail on SQLite: one row per entry in `audit` (schema step 4), keyed by job id and
//! entry id, so a job's history is a range of the primary key in either direction. Entries are
//! appended only inside `write_all` batches (see `ops::write_all`), beside the change they record.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, params_from_iter, Connection};
use sundial_ports::store::audit::entry_id_floor;
use sundial_ports::store::{
    cursor, AuditCleanReport, AuditQuery, AuditRecord, Page, PageRequest, StoreError, MAX_PAGE,
};

use crate::codec::{db, json_text, millis, Json, Millis};

/// An entry as the writer binds it, its document already JSON text.
pub(crate) struct AuditRow {
    job_id: String,
    entry_id: String,
    at: i64,
    document: String,
}

impl AuditRow {
    pub(crate) fn new(entry: &AuditRecord) -> Result<AuditRow, StoreError> {
        Ok(AuditRow {
            job_id: entry.job_id.clone(),
            entry_id: entry.entry_id.clone(),
            at: millis(&entry.at),
            document: json_text(&entry.document)?,
        })
    }
}

/// Appends an entry; `AlreadyExists` (naming it as the write's key) if its id is taken.
pub(crate) fn append(conn: &mut Connection, entry: &AuditRow) -> Result<(), StoreError> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO audit (job_id, entry_id, at, document) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (job_id, entry_id) DO NOTHING",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                entry.job_id,
                entry.entry_id,
                entry.at,
                entry.document
            ])
        })
        .map_err(db)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists(format!(
            "audit {} {}",
            entry.job_id, entry.entry_id
        )));
    }
    Ok(())
}

pub(crate) fn list(
    conn: &mut Connection,
    job_id: &str,
    query: &AuditQuery,
    page: &PageRequest,
) -> Result<Page<AuditRecord>, StoreError> {
    let after = page
        .cursor
        .as_deref()
        .map(cursor::parse_audit)
        .transpose()?;
    let limit = page.limit.clamp(1, MAX_PAGE);
    let mut sql = String::from("SELECT job_id, entry_id, at, document FROM audit WHERE job_id = ?");
    let mut values = vec![SqlValue::Text(job_id.to_owned())];
    // A time range is a range of the primary key: entry ids start with the time.
    if let Some(from) = query.from {
        sql.push_str(" AND entry_id >= ?");
        values.push(SqlValue::Text(entry_id_floor(from)));
    }
    if let Some(to) = query.to {
        sql.push_str(" AND entry_id < ?");
        values.push(SqlValue::Text(entry_id_floor(to)));
    }
    let (past, order) = if query.oldest_first {
        (" AND entry_id > ?", " ORDER BY entry_id ASC")
    } else {
        (" AND entry_id < ?", " ORDER BY entry_id DESC")
    };
    if let Some(after) = after {
        sql.push_str(past);
        values.push(SqlValue::Text(after.to_owned()));
    }
    sql.push_str(order);
    sql.push_str(" LIMIT ?");
    values.push(SqlValue::Integer(
        i64::try_from(limit + 1).unwrap_or(i64::MAX),
    ));
    let mut items: Vec<AuditRecord> = conn
        .prepare_cached(&sql)
        .and_then(|mut select| {
            select
                .query_map(params_from_iter(values), |row| {
                    Ok(AuditRecord {
                        job_id: row.get(0)?,
                        entry_id: row.get(1)?,
                        at: row.get::<_, Millis>(2)?.0,
                        document: row.get::<_, Json>(3)?.0,
                    })
                })?
                .collect()
        })
        .map_err(db)?;
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = more
        .then(|| items.last().map(|e| cursor::audit(&e.entry_id)))
        .flatten();
    Ok(Page { items, next_cursor })
}

/// The executions' retention rule for entries (see `ops::clean_executions`).
pub(crate) fn clean(
    conn: &mut Connection,
    retain: usize,
    purge_deleted_jobs: bool,
) -> Result<AuditCleanReport, StoreError> {
    let tx = conn.savepoint().map_err(db)?;
    let mut deleted = 0;
    if purge_deleted_jobs {
        deleted += tx
            .execute(
                "DELETE FROM audit WHERE job_id NOT IN (SELECT job_id FROM jobs)",
                [],
            )
            .map_err(db)?;
    }
    deleted += tx
        .execute(
            "DELETE FROM audit WHERE (job_id, entry_id) IN (
                 SELECT job_id, entry_id FROM (
                     SELECT job_id, entry_id,
                            ROW_NUMBER() OVER (PARTITION BY job_id ORDER BY entry_id DESC) AS newness
                     FROM audit
                 ) WHERE newness > ?1
             )",
            [i64::try_from(retain).unwrap_or(i64::MAX)],
        )
        .map_err(db)?;
    tx.commit().map_err(db)?;
    Ok(AuditCleanReport {
        entries_deleted: deleted as u64,
    })
}
