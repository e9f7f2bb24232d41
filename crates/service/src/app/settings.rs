//! Settings switched at run time: the debug mode (`GET`/`PUT /settings/debugMode`).
//!
//! The stored switch ([`SettingStore`], on every store) wins over the start-up value
//! ([`AppConfig::debug_mode`](super::AppConfig::debug_mode): `--debug-mode`, or the AWS template's
//! parameter), which holds until the first switch. Each process caches the mode for at most
//! [`DEBUG_MODE_CACHE`]: the engine reads it once per tick, never per fire, and a switch made
//! elsewhere reaches every instance within that time. Every switch is recorded with the setting:
//! who, when, from what to what, and why, the newest [`DEBUG_MODE_HISTORY`] kept.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use sundial_core::debug_mode::DebugMode;
use sundial_ports::store::{SettingRecord, Store, StoreError};

use super::{App, AppError, ChangeBy};

/// The setting's name in the store and in the API path.
pub const DEBUG_MODE_SETTING: &str = "debugMode";
/// How long a process uses the mode it read before reading it again.
pub const DEBUG_MODE_CACHE: Duration = Duration::seconds(5);
/// How many switches the setting keeps.
pub const DEBUG_MODE_HISTORY: usize = 50;

/// The mode a process read, and when.
#[derive(Debug, Default)]
pub(crate) struct DebugModeCache(Mutex<Option<(DebugMode, DateTime<Utc>)>>);

/// One switch of the debug mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugModeChange {
    /// When (RFC 3339).
    pub at: String,
    /// Who: the caller's token name (`anonymous` without tokens).
    pub by: String,
    /// The mode before.
    pub from: String,
    /// The mode after.
    pub to: String,
    /// Why, when the request said.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

/// `GET /settings/debugMode`: the mode in force and its switches, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugModeSetting {
    /// `off`, `schedules`, `triggers` or `both`.
    pub mode: String,
    /// `stored` once switched at run time; `startup` while the start-up value holds.
    pub source: &'static str,
    /// The switches, newest first.
    pub history: Vec<DebugModeChange>,
}

impl DebugModeSetting {
    /// The mode.
    pub fn debug_mode(&self) -> DebugMode {
        DebugMode::parse(&self.mode).unwrap_or_default()
    }
}

impl<S: Store> App<S> {
    /// The debug mode in force, as this process knows it: read from the store at most every
    /// [`DEBUG_MODE_CACHE`]. A store that fails keeps the last mode read (or the start-up one),
    /// and is asked again at the next call.
    pub async fn debug_mode_now(&self) -> DebugMode {
        let now = self.now();
        if let Ok(cache) = self.debug_cache.0.lock() {
            if let Some((mode, read_at)) = *cache {
                if now - read_at < DEBUG_MODE_CACHE && now >= read_at {
                    return mode;
                }
            }
        }
        match self.read_debug_mode().await {
            Ok(setting) => {
                let mode = setting.debug_mode();
                self.remember_debug_mode(mode, now);
                mode
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the debug mode failed; keeping the last known");
                self.cached_debug_mode()
            }
        }
    }

    /// `GET /settings/debugMode`: read from the store (not the cache).
    pub async fn debug_mode_setting(&self) -> Result<DebugModeSetting, AppError> {
        let setting = self.read_debug_mode().await?;
        self.remember_debug_mode(setting.debug_mode(), self.now());
        Ok(setting)
    }

    /// `PUT /settings/debugMode`: switches the debug mode to `mode` by `by`, recorded with the
    /// setting (who, when, from, to, why). Switching to the mode in force records nothing.
    pub async fn set_debug_mode_by(
        &self,
        by: &ChangeBy,
        mode: DebugMode,
    ) -> Result<DebugModeSetting, AppError> {
        let mut retry = super::ConflictRetry::new(&*self.clock);
        while retry.next_round().await {
            let now = self.now();
            let stored = self.store.get_setting(DEBUG_MODE_SETTING).await?;
            let current = self.setting_of(stored.as_ref());
            if current.debug_mode() == mode && stored.is_some() {
                self.remember_debug_mode(mode, now);
                return Ok(current);
            }
            let mut history = current.history.clone();
            history.insert(
                0,
                DebugModeChange {
                    at: now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    by: by.actor.name().to_owned(),
                    from: current.mode.clone(),
                    to: mode.name().to_owned(),
                    reason: by.reason.clone(),
                },
            );
            history.truncate(DEBUG_MODE_HISTORY);
            let record = SettingRecord {
                name: DEBUG_MODE_SETTING.to_owned(),
                version: stored.as_ref().map_or(1, |s| s.version.saturating_add(1)),
                updated_at: now,
                value: json!({"mode": mode.name(), "history": history}),
            };
            match self.store.put_setting(&record).await {
                Ok(()) => {
                    tracing::info!(
                        by = %by.actor,
                        from = %current.mode,
                        to = mode.name(),
                        "debug mode switched"
                    );
                    self.remember_debug_mode(mode, now);
                    return Ok(DebugModeSetting {
                        mode: mode.name().to_owned(),
                        source: "stored",
                        history,
                    });
                }
                Err(StoreError::VersionConflict { .. } | StoreError::AlreadyExists(_)) => {
                    retry.lost("the debug mode was switched concurrently".into());
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(AppError::Conflict(
            retry.exhausted(|| "the debug mode is busy; retry".into()),
        ))
    }

    async fn read_debug_mode(&self) -> Result<DebugModeSetting, AppError> {
        let stored = self.store.get_setting(DEBUG_MODE_SETTING).await?;
        Ok(self.setting_of(stored.as_ref()))
    }

    /// The setting a stored record says, or the start-up value when there is none. A stored
    /// mode this build does not know reads as off, with a warning.
    fn setting_of(&self, stored: Option<&SettingRecord>) -> DebugModeSetting {
        let Some(stored) = stored else {
            return DebugModeSetting {
                mode: self.startup_debug_mode().name().to_owned(),
                source: "startup",
                history: Vec::new(),
            };
        };
        let name = stored
            .value
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mode = DebugMode::parse(name).unwrap_or_else(|| {
            tracing::warn!(mode = name, "stored debug mode unknown; reading it as off");
            DebugMode::Off
        });
        let history = stored
            .value
            .get("history")
            .cloned()
            .and_then(|h| serde_json::from_value(h).ok())
            .unwrap_or_default();
        DebugModeSetting {
            mode: mode.name().to_owned(),
            source: "stored",
            history,
        }
    }
}

impl<S> App<S> {
    /// The start-up value: `--debug-mode` / `SUNDIAL_DEBUG_MODE` (or the AWS template's
    /// parameter), in force until the first switch is stored.
    pub fn startup_debug_mode(&self) -> DebugMode {
        self.config.debug_mode
    }

    /// The mode this process read last (the start-up one before any read), without reading:
    /// for pages that show it.
    pub fn cached_debug_mode(&self) -> DebugMode {
        self.debug_cache
            .0
            .lock()
            .ok()
            .and_then(|cache| cache.map(|(mode, _)| mode))
            .unwrap_or(self.config.debug_mode)
    }

    fn remember_debug_mode(&self, mode: DebugMode, at: DateTime<Utc>) {
        if let Ok(mut cache) = self.debug_cache.0.lock() {
            *cache = Some((mode, at));
        }
    }
}
