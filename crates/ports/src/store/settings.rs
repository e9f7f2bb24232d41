//! Settings an operator switches at run time (the debug mode): one small JSON document per name,
//! versioned like a job, so that two operators switching at once do not lose a change.

use std::future::Future;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::StoreError;

/// A setting as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingRecord {
    /// The setting's name (`debugMode`).
    pub name: String,
    /// Optimistic-concurrency version: 1 when first written, +1 on every write.
    pub version: u64,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
    /// The setting's document.
    pub value: Value,
}

/// The store of settings.
///
/// Implementations must be safe to call concurrently and must make each method atomic.
pub trait SettingStore: Send + Sync + 'static {
    /// The setting `name`, if it was ever written.
    fn get_setting(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<Option<SettingRecord>, StoreError>> + Send;

    /// Writes `setting` at its version: version 1 only when the setting does not exist yet
    /// (else `AlreadyExists`), a later version only over version − 1 (else `VersionConflict`,
    /// or `NotFound` when there is none).
    fn put_setting(
        &self,
        setting: &SettingRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
