//! Calendars (`CalendarStore`): one row per name in `calendars`, written only over the version
//! read; the jobs using each in `calendar_users`, keyed by (calendar, job id).

use rusqlite::{params, Connection};
use sundial_ports::store::{AuditRecord, CalendarRecord, StoreError, MAX_CALENDARS};

use crate::audit::{self, AuditRow};
use crate::codec::db;
use crate::documents::{self, Table};

const CALENDARS: Table = Table {
    name: "calendars",
    column: "document",
    noun: "calendar",
};

fn record(name: String, (version, updated_at, document): documents::Row) -> CalendarRecord {
    CalendarRecord {
        name,
        version,
        updated_at,
        document,
    }
}

pub(crate) fn get(conn: &mut Connection, name: &str) -> Result<Option<CalendarRecord>, StoreError> {
    Ok(documents::get(conn, &CALENDARS, name)?.map(|row| record(name.to_owned(), row)))
}

pub(crate) fn list(conn: &mut Connection) -> Result<Vec<CalendarRecord>, StoreError> {
    Ok(documents::list(conn, &CALENDARS, MAX_CALENDARS)?
        .into_iter()
        .map(|(name, row)| record(name, row))
        .collect())
}

/// Writes `calendar` at its version and appends `history`, in one operation (the writer runs
/// each inside its own savepoint: both or neither).
pub(crate) fn put(
    conn: &mut Connection,
    calendar: &CalendarRecord,
    history: &AuditRecord,
) -> Result<(), StoreError> {
    let history = AuditRow::new(history)?;
    documents::put(
        conn,
        &CALENDARS,
        &calendar.name,
        calendar.version,
        &calendar.updated_at,
        &calendar.document,
    )?;
    audit::append(conn, &history)
}

/// Deletes the calendar `name` at `version` and appends `history`, in one operation.
pub(crate) fn delete(
    conn: &mut Connection,
    name: &str,
    version: u64,
    history: &AuditRecord,
) -> Result<(), StoreError> {
    let history = AuditRow::new(history)?;
    documents::delete(conn, &CALENDARS, name, version)?;
    audit::append(conn, &history)
}

pub(crate) fn add_users(
    conn: &mut Connection,
    job_id: &str,
    names: &[String],
) -> Result<(), StoreError> {
    // The writer runs each operation inside its own transaction.
    for name in names {
        conn.prepare_cached(
            "INSERT INTO calendar_users (calendar, job_id) VALUES (?1, ?2)
             ON CONFLICT (calendar, job_id) DO NOTHING",
        )
        .and_then(|mut insert| insert.execute(params![name, job_id]))
        .map_err(db)?;
    }
    Ok(())
}

pub(crate) fn remove_users(
    conn: &mut Connection,
    job_id: &str,
    names: &[String],
) -> Result<(), StoreError> {
    for name in names {
        conn.prepare_cached("DELETE FROM calendar_users WHERE calendar = ?1 AND job_id = ?2")
            .and_then(|mut delete| delete.execute(params![name, job_id]))
            .map_err(db)?;
    }
    Ok(())
}

pub(crate) fn users(conn: &mut Connection, name: &str) -> Result<Vec<String>, StoreError> {
    conn.prepare_cached("SELECT job_id FROM calendar_users WHERE calendar = ?1 ORDER BY job_id")
        .and_then(|mut select| {
            select
                .query_map(params![name], |r| r.get::<_, String>(0))?
                .collect()
        })
        .map_err(db)
}
