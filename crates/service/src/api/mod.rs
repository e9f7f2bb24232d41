//! The HTTP API: seed 002's routes and envelope, plus the extensions of BRIEF §2.1.
//!
//! One router serves `sundial serve` and the API Lambda. Handlers only translate HTTP to a use case
//! of [`App`] and its result back; every rule lives in the use case. Errors always come back as
//! seed 002's envelope, `{"resp_code": <status>, "resp_msg": "<field>: <problem>"}`, with the same
//! HTTP status, including for malformed JSON, oversized bodies and unknown routes, so a client never
//! has to parse a plain-text error.

mod error;
mod extract;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use sundial_core::execution::Execution;
use sundial_core::job::OverlapPolicy;

use crate::app::{parse_job_id, App, AppError};
use crate::cause::chain;
use crate::ports::store::{JobFilter, Page, PageRequest, Store, MAX_PAGE};
pub use error::ApiError;
use extract::{JsonBody, Params, PathParams};

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// How long a request body may take to arrive once its handler reads it.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

type AppState<S> = State<Arc<App<S>>>;
type ApiResult = Result<Response, ApiError>;

/// The API router over `app`. With `bearer_token`, every route but `/health` requires
/// `Authorization: Bearer <token>`.
pub fn router<S: Store>(app: Arc<App<S>>, bearer_token: Option<String>) -> Router {
    let routes = Router::new()
        .route("/health", get(health::<S>))
        .route("/stats", get(stats::<S>))
        .route("/jobs", get(list_jobs::<S>))
        .route(
            "/jobs/{job_id}",
            post(create_job::<S>)
                .get(get_job::<S>)
                .put(set_active::<S>)
                .delete(delete_job::<S>),
        )
        .route("/job/{job_id}", axum::routing::delete(delete_job::<S>))
        .route("/jobs/{job_id}/update", post(update_job::<S>))
        .route("/jobs/{job_id}/trigger", post(trigger::<S>))
        .route(
            "/jobs/{job_id}/feedback/{request_counts}",
            post(feedback::<S>),
        )
        .route("/jobs/{job_id}/pause", post(pause::<S>))
        .route("/jobs/{job_id}/unpause", post(unpause::<S>))
        .route("/jobs/{job_id}/backfill", post(backfill::<S>))
        .route("/jobs/{job_id}/describe", get(describe::<S>))
        .route("/jobs/{job_id}/executions", get(job_executions::<S>))
        .route("/executions/{execution_id}", get(get_execution::<S>))
        .route("/executions/{execution_id}/cancel", post(cancel::<S>))
        .route("/executions/{execution_id}/terminate", post(terminate::<S>))
        .route("/specs/preview", post(preview::<S>))
        .route(
            "/services/{service_name}/timers",
            put(reconcile_timers::<S>),
        )
        .route("/main/schedule/clean", axum::routing::delete(clean::<S>))
        .route("/main/execution", get(main_execution::<S>))
        .route("/main/getChildJobLogs", get(child_logs::<S>))
        .route(
            "/main/getChildJobLogsByExecutionId",
            get(child_logs_by_execution::<S>),
        )
        .route(
            "/main/destroyByParentJob",
            axum::routing::delete(destroy_by_parent::<S>),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(app);
    match bearer_token {
        Some(token) => routes.layer(middleware::from_fn_with_state(
            Arc::<str>::from(token),
            require_bearer,
        )),
        None => routes,
    }
}

fn envelope() -> Value {
    json!({ "resp_code": 200, "resp_msg": null })
}

/// The success envelope with a `warnings` array beside `resp_code` and `resp_msg` when there is
/// anything to warn about; without, the envelope is seed 002's exactly.
fn envelope_warning(warnings: Vec<String>, extra: Value) -> Response {
    let mut extra = extra;
    if let (false, Some(obj)) = (warnings.is_empty(), extra.as_object_mut()) {
        obj.insert("warnings".into(), json!(warnings));
    }
    envelope_with(extra)
}

/// The success envelope with extra fields beside `resp_code` and `resp_msg`.
fn envelope_with(extra: Value) -> Response {
    let mut body = envelope();
    if let (Some(target), Value::Object(extra)) = (body.as_object_mut(), extra) {
        target.extend(extra);
    }
    Json(body).into_response()
}

/// 200 while the process serves requests and its engine (if it runs one) ticks; 503 when the
/// tick is late (docs/api.md, "Health").
async fn health<S: Store>(State(app): AppState<S>) -> Response {
    let report = app.health();
    let status = if report.is_stalled() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    (status, Json(report)).into_response()
}

async fn stats<S: Store>(State(app): AppState<S>) -> ApiResult {
    Ok(Json(app.stats().await?).into_response())
}

async fn create_job<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let job = app.create_job(&job_id, &body).await?;
    Ok(envelope_warning(app.warnings(&job), json!({})))
}

async fn get_job<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
) -> ApiResult {
    let job = app.get_job(&parse_job_id(&job_id)?).await?;
    Ok(Json(job.to_api_json()).into_response())
}

async fn set_active<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    params: Params,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let Params(params) = params.only(&["active"])?;
    let active = match params.get("active").map(String::as_str) {
        Some("1") | Some("true") => true,
        Some("0") | Some("false") => false,
        Some(other) => {
            return Err(ApiError::invalid(
                "active",
                format!("expected 0 or 1, got {other:?}"),
            ))
        }
        None => {
            return Err(ApiError::invalid(
                "active",
                "required query parameter: ?active=0 or ?active=1",
            ))
        }
    };
    app.set_active(&job_id, active, None).await?;
    Ok(Json(envelope()).into_response())
}

async fn delete_job<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
) -> ApiResult {
    app.delete_job(&parse_job_id(&job_id)?).await?;
    Ok(Json(envelope()).into_response())
}

async fn update_job<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let job = app.update_job(&job_id, &body).await?;
    let execution = app.run_now(&job_id).await?;
    Ok(envelope_warning(
        app.warnings(&job),
        json!({ "executionId": execution.execution_id }),
    ))
}

async fn trigger<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    params: Params,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let Params(params) = params.only(&["overlap"])?;
    let arguments = if body.is_null() { json!({}) } else { body };
    let key = headers.get("idempotency-key").map(|v| {
        v.to_str()
            .map_err(|_| ApiError::invalid("Idempotency-Key", "must be ASCII"))
    });
    let key = key.transpose()?;
    let overlap = match params.get("overlap") {
        None => None,
        Some(text) => Some(OverlapPolicy::parse(text).ok_or_else(|| {
            ApiError::invalid(
                "overlap",
                format!("expected Skip, BufferOne, BufferAll, CancelOther, TerminateOther or AllowAll, got {text:?}"),
            )
        })?),
    };
    let execution = app.trigger(&job_id, arguments, key, overlap).await?;
    Ok(envelope_with(
        json!({ "executionId": execution.execution_id, "executeNumber": execution.execute_number }),
    ))
}

async fn feedback<S: Store>(
    State(app): AppState<S>,
    PathParams((job_id, request_counts)): PathParams<(String, String)>,
    Params(params): Params,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let request_counts: u64 = request_counts.parse().map_err(|_| {
        ApiError::invalid(
            "requestCounts",
            format!("expected a non-negative integer, got {request_counts:?}"),
        )
    })?;
    app.feedback(
        &job_id,
        request_counts,
        params.get("executionId").map(String::as_str),
        params.get("token").map(String::as_str),
        &body,
    )
    .await?;
    Ok(Json(envelope()).into_response())
}

fn notes_of(body: &Value) -> Result<Option<String>, ApiError> {
    match body {
        Value::Null => Ok(None),
        Value::Object(obj) => match obj.get("notes") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(notes)) if notes.len() <= 4096 => Ok(Some(notes.clone())),
            Some(_) => Err(ApiError::invalid(
                "notes",
                "expected a string of at most 4096 bytes",
            )),
        },
        _ => Err(ApiError::invalid("body", "expected {\"notes\": \"…\"}")),
    }
}

async fn pause<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let notes = notes_of(&body)?.or_else(|| Some("paused".to_string()));
    app.set_active(&job_id, false, notes).await?;
    Ok(Json(envelope()).into_response())
}

async fn unpause<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let notes = notes_of(&body)?;
    app.set_active(&job_id, true, notes).await?;
    Ok(Json(envelope()).into_response())
}

async fn backfill<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let count = app.backfill(&parse_job_id(&job_id)?, &body).await?;
    Ok(envelope_with(json!({ "count": count })))
}

async fn describe<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
) -> ApiResult {
    let describe = app.describe(&parse_job_id(&job_id)?).await?;
    Ok(Json(json!({ "job": describe.job, "info": describe.info })).into_response())
}

/// `limit` (1–1000, default 100) and `cursor` query parameters.
fn page_of(params: &HashMap<String, String>) -> Result<PageRequest, ApiError> {
    let limit = match params.get("limit") {
        None => 100,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_PAGE).contains(n))
            .ok_or_else(|| {
                ApiError::invalid(
                    "limit",
                    format!("expected an integer from 1 to {MAX_PAGE}, got {text:?}"),
                )
            })?,
    };
    Ok(PageRequest {
        limit,
        cursor: params.get("cursor").cloned(),
    })
}

/// Executions as lists show them: without the event log, which `GET /executions/{id}` has.
fn execution_summary(execution: &Execution) -> Value {
    let mut value = serde_json::to_value(execution).unwrap_or(Value::Null);
    if let Some(obj) = value.as_object_mut() {
        obj.remove("events");
        obj.remove("droppedEvents");
    }
    value
}

fn executions_page(page: Page<Execution>, with_events: bool) -> Response {
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|e| {
            if with_events {
                serde_json::to_value(e).unwrap_or(Value::Null)
            } else {
                execution_summary(e)
            }
        })
        .collect();
    Json(json!({ "executions": items, "nextCursor": page.next_cursor })).into_response()
}

async fn job_executions<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    Params(params): Params,
) -> ApiResult {
    let page = app
        .list_executions(&parse_job_id(&job_id)?, &page_of(&params)?)
        .await?;
    Ok(executions_page(page, false))
}

async fn list_jobs<S: Store>(State(app): AppState<S>, params: Params) -> ApiResult {
    let Params(params) = params.only(&[
        "state",
        "creator",
        "parentJob",
        "service",
        "limit",
        "cursor",
    ])?;
    if let Some(state) = params.get("state") {
        if state != "active" && state != "paused" {
            return Err(ApiError::invalid(
                "state",
                format!("expected active or paused, got {state:?}"),
            ));
        }
    }
    let filter = JobFilter {
        state: params.get("state").cloned(),
        creator: params.get("creator").cloned(),
        parent_job: params.get("parentJob").cloned(),
        service: params.get("service").cloned(),
    };
    let page = app.list_jobs(&filter, &page_of(&params)?).await?;
    let jobs: Vec<Value> = page.items.iter().map(|j| j.to_api_json()).collect();
    Ok(Json(json!({ "jobs": jobs, "nextCursor": page.next_cursor })).into_response())
}

async fn get_execution<S: Store>(
    State(app): AppState<S>,
    PathParams(execution_id): PathParams<String>,
) -> ApiResult {
    let execution = app.get_execution(&execution_id).await?;
    Ok(Json(execution).into_response())
}

fn reason_of(body: &Value, default: &str) -> Result<String, ApiError> {
    match body.get("reason") {
        None | Some(Value::Null) => Ok(default.to_string()),
        Some(Value::String(r)) if r.len() <= 4096 => Ok(r.clone()),
        Some(_) => Err(ApiError::invalid(
            "reason",
            "expected a string of at most 4096 bytes",
        )),
    }
}

async fn cancel<S: Store>(
    State(app): AppState<S>,
    PathParams(execution_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let reason = reason_of(&body, "cancelled by a user")?;
    let execution = app.cancel_execution(&execution_id, &reason).await?;
    Ok(envelope_with(
        json!({ "state": execution.state().to_string() }),
    ))
}

async fn terminate<S: Store>(
    State(app): AppState<S>,
    PathParams(execution_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let reason = reason_of(&body, "terminated by a user")?;
    let execution = app.terminate_execution(&execution_id, &reason).await?;
    Ok(envelope_with(
        json!({ "state": execution.state().to_string() }),
    ))
}

async fn preview<S: Store>(State(app): AppState<S>, JsonBody(body): JsonBody) -> ApiResult {
    Ok(Json(app.preview_spec(&body)?).into_response())
}

async fn reconcile_timers<S: Store>(
    State(app): AppState<S>,
    PathParams(service_name): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let report = app.reconcile_timers(&service_name, &body).await?;
    Ok(envelope_with(
        serde_json::to_value(report).unwrap_or(Value::Null),
    ))
}

fn bool_param(
    params: &HashMap<String, String>,
    key: &str,
    default: bool,
) -> Result<bool, ApiError> {
    match params.get(key).map(String::as_str) {
        None => Ok(default),
        // A bare flag (`?cleanDestroyJob`) means yes.
        Some("") | Some("true") | Some("1") => Ok(true),
        Some("false") | Some("0") => Ok(false),
        Some(other) => Err(ApiError::invalid(
            key,
            format!("expected true or false, got {other:?}"),
        )),
    }
}

fn required_param<'a>(params: &'a HashMap<String, String>, key: &str) -> Result<&'a str, ApiError> {
    params
        .get(key)
        .map(String::as_str)
        .ok_or_else(|| ApiError::invalid(key, "required query parameter"))
}

async fn clean<S: Store>(State(app): AppState<S>, Params(params): Params) -> ApiResult {
    let purge = bool_param(&params, "cleanDestroyJob", true)?;
    let retain = match params.get("retainExecutionCount") {
        None => 10,
        Some(text) => text.parse::<usize>().map_err(|_| {
            ApiError::invalid(
                "retainExecutionCount",
                format!("expected a non-negative integer, got {text:?}"),
            )
        })?,
    };
    let report = app.clean(purge, retain).await?;
    Ok(envelope_with(json!({
        "executionsDeleted": report.executions_deleted,
        "destroyedJobsCleaned": report.destroyed_jobs_cleaned,
    })))
}

async fn main_execution<S: Store>(State(app): AppState<S>, Params(params): Params) -> ApiResult {
    let job_id = parse_job_id(required_param(&params, "jobId")?).map_err(ApiError::from)?;
    let page = app.list_executions(&job_id, &page_of(&params)?).await?;
    Ok(executions_page(page, false))
}

async fn child_logs<S: Store>(State(app): AppState<S>, Params(params): Params) -> ApiResult {
    let parent = parse_job_id(required_param(&params, "parentJobId")?)?;
    let execution = required_param(&params, "execution")?;
    let execution: u64 = execution.parse().map_err(|_| {
        ApiError::invalid(
            "execution",
            format!("expected the parent's execute number, got {execution:?}"),
        )
    })?;
    let page = app
        .child_executions(&parent, Some(execution), &page_of(&params)?)
        .await?;
    Ok(executions_page(page, true))
}

async fn child_logs_by_execution<S: Store>(
    State(app): AppState<S>,
    Params(params): Params,
) -> ApiResult {
    let execution_id = required_param(&params, "executionId")?;
    let parent = app.get_execution(execution_id).await?;
    let page = app
        .child_executions(
            &parent.job_id,
            Some(parent.execute_number),
            &page_of(&params)?,
        )
        .await?;
    Ok(executions_page(page, true))
}

async fn destroy_by_parent<S: Store>(State(app): AppState<S>, Params(params): Params) -> ApiResult {
    let parent = parse_job_id(required_param(&params, "parentJobId")?)?;
    let deleted = app.destroy_by_parent(&parent).await?;
    Ok(envelope_with(json!({ "deleted": deleted })))
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed on this route",
    )
}

async fn require_bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    // The feedback route is called by job services, which hold the execution's HMAC token in the
    // URL Sundial gave them, not the API's bearer token.
    let path = request.uri().path();
    let is_feedback = path.starts_with("/jobs/") && path.split('/').nth(3) == Some("feedback");
    if path == "/health" || is_feedback {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_credentials);
    match presented {
        Some(presented) if constant_time_eq(presented.as_bytes(), token.as_bytes()) => {
            next.run(request).await
        }
        _ => {
            ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response()
        }
    }
}

/// The credentials of an `Authorization: Bearer <token>` value. The scheme is case-insensitive
/// (RFC 7235 §2.1: `bearer`, `BEARER`) and separated from the token by one or more spaces.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_start_matches(' '))
}

/// Compares without an early exit, so response timing does not reveal how much of a token matched.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl From<AppError> for ApiError {
    fn from(e: AppError) -> Self {
        match e {
            AppError::Invalid(field) => ApiError::new(StatusCode::BAD_REQUEST, field.to_string()),
            AppError::NotFound(what) => {
                ApiError::new(StatusCode::NOT_FOUND, format!("{what} not found"))
            }
            AppError::Conflict(why) => ApiError::new(StatusCode::CONFLICT, why),
            AppError::Unauthorized(why) => ApiError::new(StatusCode::UNAUTHORIZED, why),
            AppError::Unavailable { .. } => {
                tracing::error!(error = %chain(&e), "request failed");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "temporarily unavailable; retry",
                )
            }
            // Not 503: retrying cannot help until the record is repaired, and the message names
            // it (without the decoder's detail, which stays in the log).
            AppError::Corrupt { ref message, .. } => {
                tracing::error!(error = %chain(&e), "request failed on corrupt stored data");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message.clone())
            }
        }
    }
}
