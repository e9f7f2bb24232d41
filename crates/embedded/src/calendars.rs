//! Calendars (`CalendarStore`): one row per name in `calendars`, written only over the version
//! read; the jobs using each in `calendar_users`, keyed by (calendar, job id).

use rusqlite::{params, Connection, OptionalExtension};
use sundial_ports::store::{AuditRecord, CalendarRecord, StoreError, Write, MAX_CALENDARS};

use crate::audit::{self, AuditRow};
use crate::codec::{db, Unsigned};
use crate::documents::{self, Table};

const CALENDARS: Table = Table {
    name: "calendars",
    column: "document",
    noun: "calendar",
};

/// The columns of a calendar record after its name: the versioned document's, then its count of
/// listings (a row of `calendar_listings`, none until the first).
const COLUMNS: &str = "c.version, c.updated_at, c.document, COALESCE(l.listings, 0)";

/// The calendars joined with their counts of listings.
const JOINED: &str = "calendars c LEFT JOIN calendar_listings l ON l.name = c.name";

fn record(name: String, r: &rusqlite::Row<'_>) -> rusqlite::Result<CalendarRecord> {
    let (version, updated_at, document) = documents::row(r)?;
    Ok(CalendarRecord {
        name,
        version,
        updated_at,
        document,
        listings: r.get::<_, Unsigned>(3)?.0,
    })
}

pub(crate) fn get(conn: &mut Connection, name: &str) -> Result<Option<CalendarRecord>, StoreError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM {JOINED} WHERE c.name = ?1"))
        .and_then(|mut select| {
            select
                .query_row(params![name], |r| record(name.to_owned(), r))
                .optional()
        })
        .map_err(db)
}

pub(crate) fn list(conn: &mut Connection) -> Result<Vec<CalendarRecord>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, c.name FROM {JOINED} ORDER BY c.name LIMIT ?1"
    ))
    .and_then(|mut select| {
        select
            .query_map(params![MAX_CALENDARS as i64], |r| record(r.get(4)?, r))?
            .collect()
    })
    .map_err(db)
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

/// Deletes the calendar `name` at `version` and `listings` and appends `history`, in one
/// operation.
pub(crate) fn delete(
    conn: &mut Connection,
    name: &str,
    version: u64,
    listings: u64,
    history: &AuditRecord,
) -> Result<(), StoreError> {
    let history = AuditRow::new(history)?;
    if get(conn, name)?.is_some_and(|stored| stored.listings != listings) {
        return Err(StoreError::VersionConflict {
            key: format!("calendar {name}"),
            expected: version,
        });
    }
    documents::delete(conn, &CALENDARS, name, version)?;
    // A calendar of this name made later counts from 0.
    conn.prepare_cached("DELETE FROM calendar_listings WHERE name = ?1")
        .and_then(|mut delete| delete.execute(params![name]))
        .map_err(db)?;
    audit::append(conn, &history)
}

pub(crate) fn add_users(
    conn: &mut Connection,
    job_id: &str,
    names: &[String],
) -> Result<(), StoreError> {
    // The writer runs each operation inside its own transaction: a missing calendar undoes the
    // whole listing.
    for name in names {
        if get(conn, name)?.is_none() {
            return Err(StoreError::NotFound(format!("calendar {name}")));
        }
        conn.prepare_cached(
            "INSERT INTO calendar_listings (name, listings) VALUES (?1, 1)
             ON CONFLICT (name) DO UPDATE SET listings = listings + 1",
        )
        .and_then(|mut count| count.execute(params![name]))
        .map_err(db)?;
        conn.prepare_cached(
            "INSERT INTO calendar_users (calendar, job_id) VALUES (?1, ?2)
             ON CONFLICT (calendar, job_id) DO NOTHING",
        )
        .and_then(|mut insert| insert.execute(params![name, job_id]))
        .map_err(db)?;
    }
    Ok(())
}

/// [`Write::RequireCalendarUser`](sundial_ports::store::Write::RequireCalendarUser): `NotFound`
/// unless `job_id` is listed under `calendar`.
pub(crate) fn require_user(
    conn: &mut Connection,
    calendar: &str,
    job_id: &str,
) -> Result<(), StoreError> {
    let listed = conn
        .prepare_cached("SELECT 1 FROM calendar_users WHERE calendar = ?1 AND job_id = ?2")
        .and_then(|mut select| select.exists(params![calendar, job_id]))
        .map_err(db)?;
    if listed {
        Ok(())
    } else {
        Err(StoreError::NotFound(
            Write::RequireCalendarUser(calendar, job_id).key(),
        ))
    }
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
