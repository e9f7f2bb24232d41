//! When the engine's loops last ran, for `GET /health`.
//!
//! A process whose tick has stopped still answers requests, but plans no fire: its health must
//! say so (503) instead of "ok", so that a supervisor or load balancer can act. The engine's
//! runner reports each tick and each pass of the dispatch poller here; the API reads the report.
//! A process without an engine (`serve --api-only`, the API Lambda) reports no engine.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// A tick this many periods late makes the process unhealthy...
const LATE_PERIODS: i64 = 10;
/// ...but never less late than this: a busy tick may take a few seconds.
const MIN_LATE_MILLIS: i64 = 10_000;

/// Never: the atomics' value before the first report.
const NEVER: i64 = i64::MIN;

/// The engine's heartbeats in this process.
#[derive(Debug)]
pub struct Liveness {
    expected_tick_every_ms: AtomicI64,
    last_tick_ms: AtomicI64,
    last_dispatch_ms: AtomicI64,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            expected_tick_every_ms: AtomicI64::new(NEVER),
            last_tick_ms: AtomicI64::new(NEVER),
            last_dispatch_ms: AtomicI64::new(NEVER),
        }
    }
}

/// What `GET /health` answers.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthReport {
    /// `ok`, or `stalled` when the tick is late beyond [`EngineHealth::tick_late_after_seconds`].
    pub status: &'static str,
    /// The engine's loops, when this process runs them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineHealth>,
}

/// When the engine's loops last ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineHealth {
    /// The last tick that finished (or the engine's start, before the first).
    pub last_tick: String,
    /// The last pass of the dispatch poller, if any yet.
    pub last_dispatch: Option<String>,
    /// How late the tick may be before the process reports `stalled`.
    pub tick_late_after_seconds: i64,
}

impl HealthReport {
    /// Whether the report should be answered with 503.
    pub fn is_stalled(&self) -> bool {
        self.status != "ok"
    }
}

impl Liveness {
    /// The engine starts at `now` and ticks every `every`: from now on a late tick is reported.
    pub fn engine_started(&self, now: DateTime<Utc>, every: StdDuration) {
        let every = i64::try_from(every.as_millis()).unwrap_or(i64::MAX);
        self.expected_tick_every_ms.store(every, Ordering::Relaxed);
        self.last_tick_ms
            .store(now.timestamp_millis(), Ordering::Relaxed);
    }

    /// A tick finished at `at`.
    pub fn tick_ran(&self, at: DateTime<Utc>) {
        self.last_tick_ms
            .fetch_max(at.timestamp_millis(), Ordering::Relaxed);
    }

    /// The dispatch poller made a pass at `at`.
    pub fn dispatch_ran(&self, at: DateTime<Utc>) {
        self.last_dispatch_ms
            .fetch_max(at.timestamp_millis(), Ordering::Relaxed);
    }

    /// The report at `now`.
    pub fn report(&self, now: DateTime<Utc>) -> HealthReport {
        let every = self.expected_tick_every_ms.load(Ordering::Relaxed);
        if every == NEVER {
            return HealthReport {
                status: "ok",
                engine: None,
            };
        }
        let late_after = every.saturating_mul(LATE_PERIODS).max(MIN_LATE_MILLIS);
        let last_tick = self.last_tick_ms.load(Ordering::Relaxed);
        let stalled = now.timestamp_millis().saturating_sub(last_tick) > late_after;
        let show = |ms: i64| {
            DateTime::from_timestamp_millis(ms)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        };
        let last_dispatch = self.last_dispatch_ms.load(Ordering::Relaxed);
        HealthReport {
            status: if stalled { "stalled" } else { "ok" },
            engine: Some(EngineHealth {
                last_tick: show(last_tick).unwrap_or_default(),
                last_dispatch: (last_dispatch != NEVER)
                    .then(|| show(last_dispatch))
                    .flatten(),
                tick_late_after_seconds: late_after / 1000,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap_or_default()
    }

    #[test]
    fn no_engine_is_healthy_and_says_nothing_of_one() {
        let liveness = Liveness::default();
        let report = liveness.report(at("2024-01-01T00:00:00Z"));
        assert_eq!(
            report,
            HealthReport {
                status: "ok",
                engine: None
            }
        );
    }

    #[test]
    fn a_tick_late_beyond_ten_periods_is_a_stall() {
        let liveness = Liveness::default();
        liveness.engine_started(at("2024-01-01T00:00:00Z"), StdDuration::from_secs(1));
        liveness.dispatch_ran(at("2024-01-01T00:00:00.500Z"));
        let report = liveness.report(at("2024-01-01T00:00:10Z"));
        assert!(!report.is_stalled());
        assert_eq!(
            report.engine,
            Some(EngineHealth {
                last_tick: "2024-01-01T00:00:00.000Z".into(),
                last_dispatch: Some("2024-01-01T00:00:00.500Z".into()),
                tick_late_after_seconds: 10,
            })
        );
        assert!(liveness.report(at("2024-01-01T00:00:10.001Z")).is_stalled());
        liveness.tick_ran(at("2024-01-01T00:00:09Z"));
        assert!(!liveness.report(at("2024-01-01T00:00:12Z")).is_stalled());
        // A tick once a minute (AWS) may be ten minutes late.
        liveness.engine_started(at("2024-01-01T00:00:00Z"), StdDuration::from_secs(60));
        let report = liveness.report(at("2024-01-01T00:09:00Z"));
        assert_eq!(report.engine.map(|e| e.tick_late_after_seconds), Some(600));
    }
}
