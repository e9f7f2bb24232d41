//! Calendars (`CalendarStore`): one row per name in `calendars`, written only over the version
//! read; the jobs using each in `calendar_users`, keyed by (calendar, job id).

use rusqlite::{params, Connection, OptionalExtension};
use sundial_ports::store::{CalendarRecord, StoreError, MAX_CALENDARS};

use crate::codec::{db, int, json_text, millis, Json, Millis, Unsigned};

fn row(name: String, row: &rusqlite::Row<'_>) -> rusqlite::Result<CalendarRecord> {
    Ok(CalendarRecord {
        name,
        version: row.get::<_, Unsigned>(0)?.0,
        updated_at: row.get::<_, Millis>(1)?.0,
        document: row.get::<_, Json>(2)?.0,
    })
}

pub(crate) fn get(conn: &mut Connection, name: &str) -> Result<Option<CalendarRecord>, StoreError> {
    conn.prepare_cached("SELECT version, updated_at, document FROM calendars WHERE name = ?1")
        .and_then(|mut select| {
            select
                .query_row(params![name], |r| row(name.to_owned(), r))
                .optional()
        })
        .map_err(db)
}

pub(crate) fn list(conn: &mut Connection) -> Result<Vec<CalendarRecord>, StoreError> {
    conn.prepare_cached(
        "SELECT version, updated_at, document, name FROM calendars ORDER BY name LIMIT ?1",
    )
    .and_then(|mut select| {
        select
            .query_map(params![MAX_CALENDARS as i64], |r| row(r.get(3)?, r))?
            .collect()
    })
    .map_err(db)
}

pub(crate) fn put(conn: &mut Connection, calendar: &CalendarRecord) -> Result<(), StoreError> {
    let key = format!("calendar {}", calendar.name);
    let (version, updated_at, document) = (
        int(calendar.version)?,
        millis(&calendar.updated_at),
        json_text(&calendar.document)?,
    );
    if calendar.version == 1 {
        let inserted = conn
            .prepare_cached(
                "INSERT INTO calendars (name, version, updated_at, document) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (name) DO NOTHING",
            )
            .and_then(|mut insert| {
                insert.execute(params![calendar.name, version, updated_at, document])
            })
            .map_err(db)?;
        return if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError::AlreadyExists(key))
        };
    }
    let updated = conn
        .prepare_cached(
            "UPDATE calendars SET version = ?2, updated_at = ?3, document = ?4
             WHERE name = ?1 AND version = ?5",
        )
        .and_then(|mut update| {
            update.execute(params![
                calendar.name,
                version,
                updated_at,
                document,
                version - 1
            ])
        })
        .map_err(db)?;
    if updated == 1 {
        return Ok(());
    }
    Err(if get(conn, &calendar.name)?.is_some() {
        StoreError::VersionConflict {
            key,
            expected: calendar.version - 1,
        }
    } else {
        StoreError::NotFound(key)
    })
}

pub(crate) fn delete(conn: &mut Connection, name: &str, version: u64) -> Result<(), StoreError> {
    let key = format!("calendar {name}");
    let at = int(version)?;
    let deleted = conn
        .prepare_cached("DELETE FROM calendars WHERE name = ?1 AND version = ?2")
        .and_then(|mut delete| delete.execute(params![name, at]))
        .map_err(db)?;
    if deleted == 1 {
        return Ok(());
    }
    Err(if get(conn, name)?.is_some() {
        StoreError::VersionConflict {
            key,
            expected: version,
        }
    } else {
        StoreError::NotFound(key)
    })
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
