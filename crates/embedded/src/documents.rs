//! Versioned named documents: a settings row, a calendar row. One row per name in a table of
//! `(name, version, updated_at, <document column>)`, written only over the version read: what
//! `settings` and `calendars` share.

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use sundial_ports::store::StoreError;

use crate::codec::{db, int, json_text, millis, Json, Millis, Unsigned};

/// A table of versioned documents: its name, the column holding the document, and the word
/// naming a row in errors (`setting london`).
pub(crate) struct Table {
    pub(crate) name: &'static str,
    pub(crate) column: &'static str,
    pub(crate) noun: &'static str,
}

/// A row as read: version, last write, document.
pub(crate) type Row = (u64, DateTime<Utc>, Value);

pub(crate) fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        r.get::<_, Unsigned>(0)?.0,
        r.get::<_, Millis>(1)?.0,
        r.get::<_, Json>(2)?.0,
    ))
}

/// The row `name` of `table`.
pub(crate) fn get(
    conn: &mut Connection,
    table: &Table,
    name: &str,
) -> Result<Option<Row>, StoreError> {
    let sql = format!(
        "SELECT version, updated_at, {} FROM {} WHERE name = ?1",
        table.column, table.name
    );
    conn.prepare_cached(&sql)
        .and_then(|mut select| select.query_row(params![name], row).optional())
        .map_err(db)
}

/// Writes the row `name` at `version`: version 1 only when there is none (else
/// `AlreadyExists`), a later version only over version − 1 (else `VersionConflict`, or
/// `NotFound` when there is none).
pub(crate) fn put(
    conn: &mut Connection,
    table: &Table,
    name: &str,
    version: u64,
    updated_at: &DateTime<Utc>,
    document: &Value,
) -> Result<(), StoreError> {
    let key = format!("{} {name}", table.noun);
    let (at_version, updated_at, text) = (int(version)?, millis(updated_at), json_text(document)?);
    if version <= 1 {
        let sql = format!(
            "INSERT INTO {} (name, version, updated_at, {}) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (name) DO NOTHING",
            table.name, table.column
        );
        let inserted = conn
            .prepare_cached(&sql)
            .and_then(|mut insert| insert.execute(params![name, at_version, updated_at, text]))
            .map_err(db)?;
        return if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError::AlreadyExists(key))
        };
    }
    let sql = format!(
        "UPDATE {} SET version = ?2, updated_at = ?3, {} = ?4 WHERE name = ?1 AND version = ?5",
        table.name, table.column
    );
    let updated = conn
        .prepare_cached(&sql)
        .and_then(|mut update| {
            update.execute(params![name, at_version, updated_at, text, at_version - 1])
        })
        .map_err(db)?;
    if updated == 1 {
        return Ok(());
    }
    Err(missing_or_moved(conn, table, name, key, version - 1)?)
}

/// Deletes the row `name` at `version` (`NotFound` when there is none, `VersionConflict` when it
/// is at another version).
pub(crate) fn delete(
    conn: &mut Connection,
    table: &Table,
    name: &str,
    version: u64,
) -> Result<(), StoreError> {
    let sql = format!(
        "DELETE FROM {} WHERE name = ?1 AND version = ?2",
        table.name
    );
    let at_version = int(version)?;
    let deleted = conn
        .prepare_cached(&sql)
        .and_then(|mut delete| delete.execute(params![name, at_version]))
        .map_err(db)?;
    if deleted == 1 {
        return Ok(());
    }
    let key = format!("{} {name}", table.noun);
    Err(missing_or_moved(conn, table, name, key, version)?)
}

/// Why a conditional write of the row `name` at `expected` matched no row.
fn missing_or_moved(
    conn: &mut Connection,
    table: &Table,
    name: &str,
    key: String,
    expected: u64,
) -> Result<StoreError, StoreError> {
    Ok(if get(conn, table, name)?.is_some() {
        StoreError::VersionConflict { key, expected }
    } else {
        StoreError::NotFound(key)
    })
}
