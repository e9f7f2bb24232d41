//! Operations and tools: health, stats, spec preview, declarative timers.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::extract::{JsonBody, Params, PathParams};
use super::schema::{
    Applied, ApplyBody, DebugModeAnswer, DebugModeRequest, EngineHealth, Envelope, ErrorEnvelope,
    Health, HealthStatus, Preview, PreviewRequest, TimerList, TimersReconciled,
};
use super::stats::Stats;
use super::{ApiResult, AppState};
use sundial_core::debug_mode::DebugMode;
use sundial_ports::store::Store;
use sundial_service::app::{timer_list, ApplyRequest};
use sundial_service::AppError;

/// 200 while the process serves requests and its engine (if it runs one) ticks; 503 with
/// `"status": "stalled"` when the tick is late. Always open: no token needed.
#[utoipa::path(
    get,
    path = "/health",
    tag = "operations",
    security(()),
    responses(
        (status = 200, description = "Serving, and the tick (if any) is on time.", body = Health,
            example = json!({"status": "ok", "engine": {"lastTick": "2026-11-21T19:13:04.001Z", "lastDispatch": "2026-11-21T19:13:04.312Z", "tickLateAfterSeconds": 10}, "debugMode": "off"})),
        (status = 503, description = "The engine's tick is late: restart or drain the process.", body = Health),
    )
)]
pub(super) async fn health<S: Store>(State(app): AppState<S>) -> Response {
    let report = app.health();
    let debug_mode = app.debug_mode_now().await;
    let status = if report.is_stalled() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = Health {
        status: if report.is_stalled() {
            HealthStatus::Stalled
        } else {
            HealthStatus::Ok
        },
        engine: report.engine.map(|engine| EngineHealth {
            last_tick: engine.last_tick,
            last_dispatch: engine.last_dispatch,
            tick_late_after_seconds: engine.tick_late_after_seconds,
        }),
        debug_mode: debug_mode.name(),
    };
    (status, Json(body)).into_response()
}

/// Jobs by state, executions by state, and whether debug mode is on; and over a window (from
/// rollups, as `GET /jobs/{jobId}/stats`), the figures of all jobs, the top failing jobs and the
/// slowest jobs (at most 10 each, with their figures).
#[utoipa::path(
    get,
    path = "/stats",
    tag = "operations",
    params(super::stats::WindowQuery),
    responses(
        (status = 200, description = "The counts and the window's figures.", body = Stats,
            example = json!({"jobs": {"active": 3}, "executions": {"Cancelled": 1, "Enqueued": 4}, "debugMode": false, "debugModeSetting": "off",
                "window": "24h", "from": "2026-11-20T19:00:00Z", "to": "2026-11-21T19:13:04Z",
                "runs": 2, "byState": {"Succeeded": 1, "Terminated": 1}, "successRate": 0.5,
                "durationMs": {"p50": 95, "p95": 2950, "p99": 2950}, "lagMs": {"p50": 3, "p95": 12, "p99": 12},
                "retries": 1, "skipped": 0, "missed": 4, "dropped": 0,
                "series": [{"at": "2026-11-21T18:00:00Z", "runs": 2, "failed": 1, "durationP95Ms": 2950}],
                "topFailing": [{"jobId": "daily-report", "runs": 1, "byState": {"Terminated": 1}, "successRate": 0.0,
                    "durationMs": {"p50": 2950, "p95": 2950, "p99": 2950}, "lagMs": {"p50": 12, "p95": 12, "p99": 12},
                    "retries": 1, "skipped": 0, "missed": 0, "dropped": 0}],
                "slowest": [{"jobId": "daily-report", "runs": 1, "byState": {"Terminated": 1}, "successRate": 0.0,
                    "durationMs": {"p50": 2950, "p95": 2950, "p99": 2950}, "lagMs": {"p50": 12, "p95": 12, "p99": 12},
                    "retries": 1, "skipped": 0, "missed": 0, "dropped": 0}]})),
        (status = 400, description = "`window` is malformed, or another parameter was given.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn stats<S: Store>(State(app): AppState<S>, params: Params) -> ApiResult {
    let window = super::stats::window_of(params)?;
    let stats = app.stats(window).await?;
    let (figures, top_failing, slowest) = super::stats::fleet(&stats.fleet);
    Ok(Json(Stats {
        jobs: stats.jobs,
        executions: stats.executions,
        debug_mode: stats.debug_mode,
        debug_mode_setting: stats.debug_mode_setting,
        window: figures,
        top_failing,
        slowest,
    })
    .into_response())
}

/// Evaluates a `schedule` spec or a docs/api.md `timer` without creating a job, as
/// `sundial spec preview` does: times strictly after `from` (a timer is read as if created at
/// `from`, so its first run may fall on `from`'s own second), and the canonical spec.
#[utoipa::path(
    post,
    path = "/specs/preview",
    tag = "operations",
    request_body(content = PreviewRequest),
    responses(
        (status = 200, description = "The times and the canonical spec; `warnings` when no time is ahead.", body = Preview),
        (status = 400, description = "The spec is invalid (the message names the field: cron syntax, calendar ranges, durations, zones are checked beyond the schema; a named calendar there is none of: `schedule.onlyOn[0]: unknown calendar \"paris\"; known: london`), neither `schedule` nor `timer` is given, `from` or `count` is invalid, a field is unknown, or the body is not JSON.", body = ErrorEnvelope),
    )
)]
pub(super) async fn preview<S: Store>(
    State(app): AppState<S>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let request = sundial_core::timer::PreviewRequest::parse(&body).map_err(AppError::Invalid)?;
    let preview = app.preview_spec(&request).await?;
    Ok(Json(Preview {
        triggered_only: preview.schedule.is_none().then_some(true),
        times: preview.times,
        schedule: preview.schedule,
        warnings: (!preview.warnings.is_empty()).then_some(preview.warnings),
    })
    .into_response())
}

/// Reconciles the jobs a service declares (docs/api.md's timer list): the missing are created; of
/// the others, only the fields the code changed since the previous declaration are applied
/// (state, history, pause, pause notes, labels and operators' edits of other fields kept), and an
/// unchanged declaration changes nothing; jobs the service declared before but no longer lists
/// are removed. The whole list is checked first, so a bad entry or a job owned by someone else
/// changes nothing. Idempotent.
#[utoipa::path(
    put,
    path = "/services/{serviceName}/timers",
    tag = "jobs",
    params(
        ("serviceName" = String, Path, description = "The service: 1–128 characters of `A–Z a–z 0–9 _ . -`, not `.` or `..`.", pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128),
    ),
    request_body(content = TimerList, description = "The service's whole list of jobs."),
    responses(
        (status = 200, description = "Reconciled: what changed.", body = TimersReconciled,
            example = json!({"resp_code": 200, "resp_msg": null, "created": ["billing-nightly"], "updated": ["billing-reminders"], "changedFields": {"billing-reminders": ["timer"]}, "unchanged": [], "removed": []})),
        (status = 400, description = "An entry is invalid (the message names `timer[i].field`), an id is declared twice, the list is not an array, the body is not JSON, or `serviceName` is malformed.", body = ErrorEnvelope),
        (status = 409, description = "A declared job exists and belongs to no or another service, or a job is busy.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn reconcile_declared_jobs<S: Store>(
    State(app): AppState<S>,
    super::auth::Authenticated(caller): super::auth::Authenticated,
    PathParams(service_name): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let report = app
        .reconcile_declared_jobs_by(&caller.change(), &service_name, timer_list(&body)?)
        .await?;
    Ok(Json(TimersReconciled {
        envelope: Envelope::ok(),
        created: report.created,
        updated: report.updated,
        changed_fields: report.changed_fields,
        unchanged: report.unchanged,
        removed: report.removed,
    })
    .into_response())
}

/// Applies a set of job files (`sundial apply`): the missing jobs are created; of the others, only
/// the fields the files changed since the last apply are written (state, history, pause, pause
/// notes, labels and operators' edits of other fields kept, as for declared timers); with `prune`,
/// the jobs an earlier apply wrote that match its labels and are no longer listed are deleted.
/// The whole set is checked first, so a bad entry or a job a service owns changes nothing. Each
/// change is audited as `apply:create`, `apply:update` or `apply:delete` with the change id.
#[utoipa::path(
    post,
    path = "/apply",
    tag = "jobs",
    request_body(content = ApplyBody, description = "The jobs of the files, and what to prune."),
    responses(
        (status = 200, description = "Applied (or with `dryRun`, what would be): what changed.", body = Applied,
            example = json!({"resp_code": 200, "resp_msg": null, "changeId": "git:3f2c1a9", "dryRun": false, "created": ["nightly-report"], "updated": {"hourly-sync": [{"path": "/timeoutSeconds", "old": 60, "new": 90}]}, "unchanged": [], "deleted": ["old-report"]})),
        (status = 400, description = "An entry is invalid (the message names `jobs[i].field`), an id is listed twice, `prune` has no label, `changeId` is malformed, a field is unknown, or the body is not JSON.", body = ErrorEnvelope),
        (status = 409, description = "A listed job is declared by a service's timer list, or a job is busy.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn apply<S: Store>(
    State(app): AppState<S>,
    super::auth::Authenticated(caller): super::auth::Authenticated,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let request = ApplyRequest::parse(&body)?;
    let report = app.apply_jobs_by(&caller.change(), &request).await?;
    Ok(Json(Applied {
        envelope: Envelope::ok(),
        change_id: report.change_id,
        dry_run: report.dry_run,
        created: report.created,
        updated: report
            .updated
            .into_iter()
            .map(|(id, changes)| {
                let changes = changes
                    .into_iter()
                    .map(|c| serde_json::json!(super::schema::FieldChange::from(c)))
                    .collect();
                (id, changes)
            })
            .collect(),
        unchanged: report.unchanged,
        deleted: report.deleted,
    })
    .into_response())
}

/// The debug mode in force and its switches, newest first (who, when, from what to what, why).
#[utoipa::path(
    get,
    path = "/settings/debugMode",
    tag = "operations",
    responses(
        (status = 200, description = "The mode and its switches.", body = DebugModeAnswer,
            example = json!({"mode": "schedules", "source": "stored", "history": [{"at": "2026-11-27T19:40:00.000Z", "by": "alice", "from": "off", "to": "schedules", "reason": "load test of the billing service"}]})),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn get_debug_mode<S: Store>(State(app): AppState<S>) -> ApiResult {
    let setting = app.debug_mode_setting().await?;
    Ok(Json(debug_mode_answer(setting)).into_response())
}

/// Switches the debug mode at run time (seed 004): `off`, `schedules` (scheduled fires do not
/// run), `triggers` (runs programs trigger do not run) or `both`; console triggers and backfills
/// always run. Recorded with the setting; every instance applies it within 5 s.
#[utoipa::path(
    put,
    path = "/settings/debugMode",
    tag = "operations",
    request_body(content = DebugModeRequest),
    responses(
        (status = 200, description = "Switched (or already so): the mode and its switches.", body = DebugModeAnswer),
        (status = 400, description = "`mode` is missing or not one of off, schedules, triggers, both; `reason` is not a string; a field is unknown; the body is not JSON.", body = ErrorEnvelope),
        (status = 409, description = "Switched concurrently too many times; retry.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn put_debug_mode<S: Store>(
    State(app): AppState<S>,
    super::auth::Authenticated(caller): super::auth::Authenticated,
    JsonBody(body): JsonBody,
) -> ApiResult {
    use super::error::ApiError;
    let Some(obj) = body.as_object() else {
        return Err(ApiError::invalid(
            "body",
            "expected {\"mode\": \"off\" | \"schedules\" | \"triggers\" | \"both\", \"reason\": …}",
        ));
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "mode" | "reason"))
    {
        return Err(ApiError::invalid(
            key,
            "unknown field; expected mode, reason",
        ));
    }
    let mode = match obj.get("mode") {
        Some(serde_json::Value::String(name)) => DebugMode::parse(name).ok_or_else(|| {
            ApiError::invalid(
                "mode",
                format!("expected off, schedules, triggers or both, got {name:?}"),
            )
        })?,
        None => {
            return Err(ApiError::invalid(
                "mode",
                "required: off, schedules, triggers or both",
            ))
        }
        Some(other) => {
            return Err(ApiError::invalid(
                "mode",
                format!("expected a string (off, schedules, triggers or both), got {other}"),
            ))
        }
    };
    let mut by = caller.change();
    match obj.get("reason") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(reason)) if reason.len() <= 1024 => {
            by = by.with_reason(reason.clone());
        }
        Some(serde_json::Value::String(_)) => {
            return Err(ApiError::invalid("reason", "is longer than 1024 bytes"))
        }
        Some(other) => {
            return Err(ApiError::invalid(
                "reason",
                format!("expected a string, got {other}"),
            ))
        }
    }
    let setting = app.set_debug_mode_by(&by, mode).await?;
    Ok(Json(debug_mode_answer(setting)).into_response())
}

fn debug_mode_answer(setting: sundial_service::app::DebugModeSetting) -> DebugModeAnswer {
    DebugModeAnswer {
        mode: setting.mode,
        source: setting.source,
        history: setting.history,
    }
}
