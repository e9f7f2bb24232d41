//! Settings (`SettingStore`): one row per name in `settings`, written only over the version read.

use rusqlite::{params, Connection, OptionalExtension};
use sundial_ports::store::{SettingRecord, StoreError};

use crate::codec::{db, int, json_text, millis, Json, Millis, Unsigned};

pub(crate) fn get(conn: &mut Connection, name: &str) -> Result<Option<SettingRecord>, StoreError> {
    conn.prepare_cached("SELECT version, updated_at, value FROM settings WHERE name = ?1")
        .and_then(|mut select| {
            select
                .query_row(params![name], |row| {
                    Ok(SettingRecord {
                        name: name.to_owned(),
                        version: row.get::<_, Unsigned>(0)?.0,
                        updated_at: row.get::<_, Millis>(1)?.0,
                        value: row.get::<_, Json>(2)?.0,
                    })
                })
                .optional()
        })
        .map_err(db)
}

pub(crate) fn put(conn: &mut Connection, setting: &SettingRecord) -> Result<(), StoreError> {
    let key = format!("setting {}", setting.name);
    let (version, updated_at, value) = (
        int(setting.version)?,
        millis(&setting.updated_at),
        json_text(&setting.value)?,
    );
    if setting.version == 1 {
        let inserted = conn
            .prepare_cached(
                "INSERT INTO settings (name, version, updated_at, value) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (name) DO NOTHING",
            )
            .and_then(|mut insert| {
                insert.execute(params![setting.name, version, updated_at, value])
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
            "UPDATE settings SET version = ?2, updated_at = ?3, value = ?4
             WHERE name = ?1 AND version = ?5",
        )
        .and_then(|mut update| {
            update.execute(params![
                setting.name,
                version,
                updated_at,
                value,
                version - 1
            ])
        })
        .map_err(db)?;
    if updated == 1 {
        return Ok(());
    }
    let exists = get(conn, &setting.name)?.is_some();
    Err(if exists {
        StoreError::VersionConflict {
            key,
            expected: setting.version - 1,
        }
    } else {
        StoreError::NotFound(key)
    })
}
