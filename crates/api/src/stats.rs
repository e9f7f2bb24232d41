//! Statistics: `GET /jobs/{jobId}/stats?window=` and the window figures `GET /stats` adds to its
//! counts (docs/api.md "Statistics"). The figures come from rollups ([`sundial_service::app::JobStats`]);
//! this module only reads the window and shapes the answer.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use sundial_core::stats::{Figures, Quantiles, SeriesPoint, StatsWindow};
use utoipa::{IntoParams, ToSchema};

use super::extract::{Params, PathParams};
use super::schema::{ErrorEnvelope, JobPath};
use super::{ApiResult, AppState};
use sundial_ports::store::Store;
use sundial_service::app::{parse_job_id, AppError, JobStats};

/// `window` of the statistics routes.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct WindowQuery {
    /// How far back: `1h` (a series point per minute), `24h` (default; per hour), `7d` (per hour)
    /// or `30d` (per day). Anything else is a 400 naming `window`.
    #[param(pattern = "^(1h|24h|7d|30d)$", example = "24h")]
    window: Option<String>,
}

/// The window of a request: `window`, default `24h`; any other parameter is a 400.
pub(super) fn window_of(params: Params) -> Result<StatsWindow, super::ApiError> {
    let params = params.only(&["window"])?;
    match params.0.get("window") {
        None => Ok(StatsWindow::Day),
        Some(text) => Ok(StatsWindow::parse(text).map_err(AppError::from)?),
    }
}

/// Three quantiles in whole milliseconds (within 5 % of the exact ones); `null` with no runs.
#[derive(ToSchema, Serialize, Clone, Debug)]
pub struct QuantilesMs {
    /// The median.
    pub p50: Option<u64>,
    /// The 95th percentile.
    pub p95: Option<u64>,
    /// The 99th percentile.
    pub p99: Option<u64>,
}

fn ms(value: Option<f64>) -> Option<u64> {
    value.map(|v| v.round().max(0.0) as u64)
}

impl From<&Quantiles> for QuantilesMs {
    fn from(q: &Quantiles) -> Self {
        QuantilesMs {
            p50: ms(q.p50),
            p95: ms(q.p95),
            p99: ms(q.p99),
        }
    }
}

/// The figures of a window.
#[derive(ToSchema, Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct FiguresBody {
    /// Runs that ended in the window, in any final state.
    pub runs: u64,
    /// Runs that ended, by final state (`Succeeded`, `Terminated`, `Cancelled`, `Skipped`).
    pub by_state: BTreeMap<String, u64>,
    /// `Succeeded / (Succeeded + Terminated)`; `null` when neither.
    pub success_rate: Option<f64>,
    /// Durations (first start to end) of the runs that started.
    pub duration_ms: QuantilesMs,
    /// Fire lag (first start − due time, jitter included) of the runs that started.
    pub lag_ms: QuantilesMs,
    /// Attempts after the first.
    pub retries: u64,
    /// Fires skipped by the overlap policy.
    pub skipped: u64,
    /// Fires that missed the catch-up window.
    pub missed: u64,
    /// Fires dropped from a full buffer.
    pub dropped: u64,
}

impl From<&Figures> for FiguresBody {
    fn from(f: &Figures) -> Self {
        FiguresBody {
            runs: f.runs,
            by_state: f.by_state.clone(),
            success_rate: f.success_rate,
            duration_ms: (&f.duration).into(),
            lag_ms: (&f.lag).into(),
            retries: f.retries,
            skipped: f.skipped,
            missed: f.missed,
            dropped: f.dropped,
        }
    }
}

/// One point of the series.
#[derive(ToSchema, Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SeriesPointBody {
    /// The start of the point's minute, hour or day (UTC).
    #[schema(format = DateTime)]
    pub at: String,
    /// Runs that ended in it.
    pub runs: u64,
    /// Runs that ended `Terminated` in it.
    pub failed: u64,
    /// The 95th percentile duration of its runs; `null` per minute (`1h`) and with no runs.
    pub duration_p95_ms: Option<u64>,
}

impl From<&SeriesPoint> for SeriesPointBody {
    fn from(p: &SeriesPoint) -> Self {
        SeriesPointBody {
            at: json_time(p.at),
            runs: p.runs,
            failed: p.failed,
            duration_p95_ms: ms(p.duration_p95_ms),
        }
    }
}

/// Counts of jobs and executions by state, and the figures of a window.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Jobs by state (`active`, `paused`); states with none are absent.
    pub jobs: BTreeMap<String, u64>,
    /// Executions by state: those not ended now, and those ended within the window (`Enqueued`, `Succeeded`, …); states with none are absent.
    pub executions: BTreeMap<String, u64>,
    /// Whether a debug mode is on (docs/api.md debug mode): some runs are stopped.
    pub debug_mode: bool,
    /// The debug mode in force: which runs it stops (`GET /settings/debugMode`).
    #[schema(pattern = "^(off|schedules|triggers|both)$")]
    pub debug_mode_setting: &'static str,
    /// All jobs' figures over the window (`GET /jobs/{jobId}/stats`'s fields).
    #[serde(flatten)]
    pub window: WindowStats,
    /// The jobs with the most runs ended `Terminated` in the window (then the lowest success
    /// rate), at most 10, only jobs with a failure.
    pub top_failing: Vec<JobFigures>,
    /// The jobs with the highest p95 duration in the window, at most 10.
    pub slowest: Vec<JobFigures>,
}

/// A window's figures and series.
#[derive(ToSchema, Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct WindowStats {
    /// The window (`1h`, `24h`, `7d`, `30d`).
    pub window: String,
    /// The start of the first hour read: the hour the window's start falls in.
    #[schema(format = DateTime)]
    pub from: String,
    /// When the figures were read.
    #[schema(format = DateTime)]
    pub to: String,
    /// The figures.
    #[serde(flatten)]
    pub figures: FiguresBody,
    /// Per minute (`1h`), hour (`24h`, `7d`) or day (`30d`), oldest first, empty steps included.
    pub series: Vec<SeriesPointBody>,
}

impl From<&JobStats> for WindowStats {
    fn from(s: &JobStats) -> Self {
        WindowStats {
            window: s.window.name().to_owned(),
            from: json_time(s.from),
            to: json_time(s.to),
            figures: (&s.figures).into(),
            series: s.series.iter().map(Into::into).collect(),
        }
    }
}

/// `GET /jobs/{jobId}/stats`.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStatsBody {
    /// The job.
    pub job_id: String,
    /// The window.
    #[serde(flatten)]
    pub stats: WindowStats,
}

/// A job named by `GET /stats`, with its figures over the window.
#[derive(ToSchema, Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct JobFigures {
    /// The job.
    pub job_id: String,
    /// Its figures.
    #[serde(flatten)]
    pub figures: FiguresBody,
}

fn json_time(time: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::SubsecRound;
    time.trunc_subsecs(3)
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// A job's runs by final state, success rate, duration and fire-lag percentiles, retries,
/// skipped, missed and dropped fires over a window, with a time series: read from hourly rollups,
/// never from executions.
#[utoipa::path(
    get,
    path = "/jobs/{jobId}/stats",
    tag = "executions",
    params(JobPath, WindowQuery),
    responses(
        (status = 200, description = "The job's figures over the window.", body = JobStatsBody,
            example = json!({"jobId": "daily-report", "window": "1h", "from": "2026-11-21T18:00:00Z", "to": "2026-11-21T19:13:04Z",
                "runs": 3, "byState": {"Succeeded": 2, "Terminated": 1}, "successRate": 0.6666666666666666,
                "durationMs": {"p50": 1203, "p95": 2950, "p99": 2950}, "lagMs": {"p50": 12, "p95": 40, "p99": 40},
                "retries": 2, "skipped": 1, "missed": 0, "dropped": 0,
                "series": [{"at": "2026-11-21T18:14:00Z", "runs": 1, "failed": 0, "durationP95Ms": null}]})),
        (status = 400, description = "`jobId` or `window` is malformed, or another parameter was given.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn job_stats<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    params: Params,
) -> ApiResult {
    let window = window_of(params)?;
    let job_id = parse_job_id(&job_id)?;
    let stats = app.job_stats(&job_id, window).await?;
    Ok(Json(JobStatsBody {
        job_id: job_id.to_string(),
        stats: (&stats).into(),
    })
    .into_response())
}

/// The figures `GET /stats` adds to its counts: all jobs over the window, and the top failing
/// and slowest jobs.
pub(super) fn fleet(
    fleet: &sundial_service::app::FleetStats,
) -> (WindowStats, Vec<JobFigures>, Vec<JobFigures>) {
    let named = |jobs: &[(String, Figures)]| {
        jobs.iter()
            .map(|(id, f)| JobFigures {
                job_id: id.clone(),
                figures: f.into(),
            })
            .collect()
    };
    (
        (&fleet.all).into(),
        named(&fleet.top_failing),
        named(&fleet.slowest),
    )
}
