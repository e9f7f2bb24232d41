//! Settings (`SettingStore`): one row per name in `settings`, written only over the version read
//! (see [`crate::documents`]).

use rusqlite::Connection;
use sundial_ports::store::{SettingRecord, StoreError};

use crate::documents::{self, Table};

const SETTINGS: Table = Table {
    name: "settings",
    column: "value",
    noun: "setting",
};

pub(crate) fn get(conn: &mut Connection, name: &str) -> Result<Option<SettingRecord>, StoreError> {
    Ok(
        documents::get(conn, &SETTINGS, name)?.map(|(version, updated_at, value)| SettingRecord {
            name: name.to_owned(),
            version,
            updated_at,
            value,
        }),
    )
}

pub(crate) fn put(conn: &mut Connection, setting: &SettingRecord) -> Result<(), StoreError> {
    documents::put(
        conn,
        &SETTINGS,
        &setting.name,
        setting.version,
        &setting.updated_at,
        &setting.value,
    )
}
