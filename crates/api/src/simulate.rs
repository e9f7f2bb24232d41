//! `POST /jobs/simulate`: what a job would do over a range of time against a synthetic target,
//! before it goes live (docs/api.md, "Simulating a job"). The handler translates; the use case is
//! `App::simulate_job`, the simulation `sundial_core::simulate`.

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use utoipa::ToSchema;

use super::extract::JsonBody;
use super::schema::{ErrorEnvelope, SimulationRequest};
use super::{ApiResult, AppState};
use sundial_ports::store::Store;
use sundial_service::app::MAX_API_FIRES;

/// Simulates a job: its definition (as for create, `jobId` optional) run through the engine's
/// planner, catch-up, overlap, retry and settle rules under a virtual clock, against a synthetic
/// target whose calls take `simulatedTarget.p50`/`.p99`, fail at `simulatedTarget.failureRate` and fail or
/// hang during `outages`; `downtime` is Sundial itself down. Nothing is stored. The range is at
/// most 366 days and at most 100,000 fires are planned (past that `truncated` is true); at most
/// `rows` rows (default 200, at most 10,000) are listed, the totals count everything.
#[utoipa::path(
    post,
    path = "/jobs/simulate",
    tag = "jobs",
    request_body(content = SimulationRequest, description = "A job definition as for create, plus the scenario."),
    responses(
        (status = 200, description = "What would happen, time by time, with totals.", body = SimulationReport,
            example = json!({"totals": {"fires": 60, "runs": 30, "attempts": 30, "succeeded": 30, "failed": 0, "failedAttempts": 0, "timeouts": 0, "retries": 0, "skipped": 30, "buffered": 0, "dropped": 0, "missed": 0, "cancelled": 0, "terminated": 0, "notStarted": 0}, "rows": [{"at": "2026-01-01T00:00:00Z", "kind": "attempt", "scheduledTime": "2026-01-01T00:00:00Z", "attempt": 1, "end": "2026-01-01T00:01:30Z", "outcome": "200", "count": 1, "detail": "succeeded"}, {"at": "2026-01-01T00:01:00Z", "kind": "skipped", "scheduledTime": "2026-01-01T00:01:00Z", "count": 1, "detail": "skipped by overlap policy Skip: simulated~20260101T000000Z still running"}], "rowsLeftOff": 58, "truncated": false, "plannedThrough": "2026-01-01T00:59:00Z", "pausedAt": null, "lastEnd": "2026-01-01T00:59:30Z"})),
        (status = 400, description = "A field is invalid (the message names it: the job's fields as for create, `from`, `to` (after `from`, at most 366 days later), `simulatedTarget.*`, `outages[i].*`, `downtime[i].*`, `rows`), or the body is not JSON.", body = ErrorEnvelope),
        (status = 503, description = "The simulation could not run; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn simulate_job<S: Store>(
    State(app): AppState<S>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let request = sundial_core::simulate::Request::parse(&body, MAX_API_FIRES)
        .map_err(sundial_service::AppError::Invalid)?;
    let report = app.simulate_job(request).await?;
    Ok(Json(report.to_json()).into_response())
}

/// One thing that happened.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) struct SimulationRow {
    /// When (an attempt's start).
    #[schema(format = DateTime)]
    at: String,
    /// What.
    #[schema(value_type = super::schema::SimulationRowKind)]
    kind: String,
    /// The fire time of the run (for `missed`, the first time missed).
    #[schema(format = DateTime, nullable = false)]
    scheduled_time: Option<String>,
    /// An attempt's number, 1 for the first.
    #[schema(minimum = 1, nullable = false)]
    attempt: Option<u32>,
    /// An attempt's end.
    #[schema(format = DateTime, nullable = false)]
    end: Option<String>,
    /// For `missed`, the last time missed.
    #[schema(format = DateTime, nullable = false)]
    last_time: Option<String>,
    /// An attempt's outcome: the HTTP status, `timeout` or `connection`.
    #[schema(nullable = false)]
    outcome: Option<String>,
    /// When a failed attempt is retried.
    #[schema(format = DateTime, nullable = false)]
    retry_at: Option<String>,
    /// How many fire times the row stands for (more than 1 only for `missed`).
    #[schema(minimum = 1)]
    count: u64,
    /// What followed or why, as the run's log would say it.
    detail: String,
}

/// The totals of a simulation.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) struct SimulationTotals {
    /// Fires planned.
    fires: u64,
    /// Runs that made an attempt.
    runs: u64,
    /// Attempts (first attempts and retries).
    attempts: u64,
    /// Runs that succeeded.
    succeeded: u64,
    /// Runs that failed for good.
    failed: u64,
    /// Attempts that failed.
    failed_attempts: u64,
    /// Attempts that timed out.
    timeouts: u64,
    /// Retries scheduled.
    retries: u64,
    /// Runs skipped by overlap policy `Skip`.
    skipped: u64,
    /// Runs that waited in the overlap buffer.
    buffered: u64,
    /// Runs dropped from a full buffer.
    dropped: u64,
    /// Fire times missed by catch-up.
    missed: u64,
    /// Runs cancelled by a newer one.
    cancelled: u64,
    /// Runs terminated by a newer one.
    terminated: u64,
    /// Runs not started because the job was paused.
    not_started: u64,
}

/// `POST /jobs/simulate`'s answer.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) struct SimulationReport {
    /// Over the whole range.
    totals: SimulationTotals,
    /// The first rows, in time order.
    rows: Vec<SimulationRow>,
    /// Rows not listed.
    rows_left_off: u64,
    /// Planning stopped at the fire cap.
    truncated: bool,
    /// The last fire time planned.
    #[schema(format = DateTime)]
    planned_through: Option<String>,
    /// When `pauseOnFailure` paused the job.
    #[schema(format = DateTime)]
    paused_at: Option<String>,
    /// When the last run ended.
    #[schema(format = DateTime)]
    last_end: Option<String>,
}
