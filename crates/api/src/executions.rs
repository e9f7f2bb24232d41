//! Execution routes: trigger, feedback, backfill, describe, executions, cancel and terminate.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};
use sundial_core::execution::Execution as CoreExecution;
use sundial_core::trigger::TriggerOptions;

use super::auth::Authenticated;
use super::extract::{JsonBody, LabelledParams, Params, PathParams};
use super::schema::{
    BackfillAccepted, BackfillRequest, DescribeInfo, Described, Envelope, ErrorEnvelope, Execution,
    ExecutionEvent, ExecutionLogsPage, ExecutionPath, ExecutionSearchQuery, ExecutionSummary,
    ExecutionsPage, FeedbackReport, JobPath, PageQuery, Reason, RecentAction, RunningExecution,
    StateChanged, TriggerArguments, Triggered,
};
use super::{count_param, page_of, ApiError, ApiResult, AppState};
use sundial_ports::store::{Page, Store};
use sundial_service::app::{parse_execution_id, parse_job_id, AppError, SearchFilters};

/// A time as answers show it: RFC 3339 in UTC, `Z`, sub-seconds only when present (as the
/// domain stores it).
fn json_time(time: chrono::DateTime<chrono::Utc>) -> String {
    time.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

impl From<&CoreExecution> for ExecutionSummary {
    fn from(execution: &CoreExecution) -> Self {
        ExecutionSummary {
            execution_id: execution.execution_id.clone(),
            job_id: execution.job_id.to_string(),
            execute_number: execution.execute_number,
            state: execution.state(),
            scheduled_time: json_time(execution.scheduled_time),
            scheduled_by_id: execution.scheduled_by_id.clone(),
            started_at: execution.started_at().map(json_time),
            finished_at: execution.finished_at().map(json_time),
            attempts: execution.attempts(),
            progress: execution.progress.clone(),
            error: execution.error.clone(),
            result: execution.result.clone(),
            arguments: execution.arguments.clone(),
            parent_job: execution.parent_job.as_ref().map(ToString::to_string),
            parent_job_execution: execution.parent_job_execution,
        }
    }
}

/// An execution with its log. The engine's own bookkeeping of the run (deadlines, leases, the
/// responses kept for templates) is not part of the answer: it is no contract, and the responses
/// may hold what a target echoed back.
impl From<&CoreExecution> for Execution {
    fn from(execution: &CoreExecution) -> Self {
        Execution {
            summary: execution.into(),
            events: execution
                .events()
                .iter()
                .map(|event| ExecutionEvent {
                    at: json_time(event.at),
                    from: event.from,
                    to: event.to,
                    message: event.message.clone(),
                })
                .collect(),
            dropped_events: execution.dropped_events(),
        }
    }
}

pub(super) fn executions_page(page: Page<CoreExecution>) -> ExecutionsPage {
    ExecutionsPage {
        executions: page.items.iter().map(Into::into).collect(),
        next_cursor: page.next_cursor,
    }
}

pub(super) fn execution_logs_page(page: Page<CoreExecution>) -> ExecutionLogsPage {
    ExecutionLogsPage {
        executions: page.items.iter().map(Into::into).collect(),
        next_cursor: page.next_cursor,
    }
}

/// Starts one run now (or `delay` later), whatever the schedule says (paused and triggered-only
/// jobs too, and in debug mode). The same `Idempotency-Key` always answers with the same run. The
/// body stays the map of arguments; the overrides of this one run are query parameters, and the
/// run's event log records them.
#[utoipa::path(
    post,
    path = "/jobs/{jobId}/trigger",
    tag = "executions",
    params(
        JobPath,
        ("overlap" = Option<super::schema::OverlapPolicy>, Query, description = "Overrides the job's overlap policy for this run (any case)."),
        ("scheduledTime" = Option<String>, Query, format = DateTime, description = "The nominal time the run reports (`scheduledTime`, `${scheduledTime}`), RFC 3339; default: when it is due. Its timeouts still count from when it is due."),
        ("delay" = Option<super::schema::Duration>, Query, description = "Start the run this much later (`5m`, `PT1H`); it is `Scheduled` until then."),
        ("Idempotency-Key" = Option<String>, Header, description = "1–64 characters of `A–Z a–z 0–9 _ . -`: the run's id is `{jobId}~t~{key}`, so a retried request finds the run it made.", pattern = r"^[A-Za-z0-9_.-]{1,64}$"),
    ),
    request_body(content = Option<TriggerArguments>, description = "docs/api.md's map of arguments for the templates; may be empty."),
    responses(
        (status = 200, description = "The run.", body = Triggered,
            links(
                ("get_execution" = (operation_id = "get_execution", parameters(("id" = "$response.body#/executionId")))),
                ("cancel" = (operation_id = "cancel", parameters(("id" = "$response.body#/executionId")))),
                ("terminate" = (operation_id = "terminate", parameters(("id" = "$response.body#/executionId")))),
                ("describe" = (operation_id = "describe", parameters(("jobId" = "$request.path.jobId")))),
                ("job_executions" = (operation_id = "job_executions", parameters(("jobId" = "$request.path.jobId")))),
            )),
        (status = 400, description = "The body is not a JSON object, `overlap`, `scheduledTime`, `delay` or `Idempotency-Key` is invalid, a parameter is unknown or given twice, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 409, description = "The job is busy; retry.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn trigger<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
    PathParams(job_id): PathParams<String>,
    params: Params,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let Params(params) = params.only(&["overlap", "scheduledTime", "delay"])?;
    let arguments = if body.is_null() { json!({}) } else { body };
    let key = headers.get("idempotency-key").map(|v| {
        v.to_str()
            .map_err(|_| ApiError::invalid("Idempotency-Key", "must be ASCII"))
    });
    let key = key.transpose()?;
    let options = TriggerOptions::parse(
        params.get("scheduledTime").map(String::as_str),
        params.get("overlap").map(String::as_str),
        params.get("delay").map(String::as_str),
    )
    .map_err(AppError::from)?;
    let execution = app
        .trigger_by(&caller.change(), &job_id, arguments, key, options)
        .await?;
    Ok(Json(Triggered {
        envelope: Envelope::ok(),
        execution_id: execution.execution_id,
        execute_number: execution.execute_number,
    })
    .into_response())
}

/// docs/api.md's feedback URL: an async job reports on the run that waits for it. Sundial hands the
/// URL to the job in `${schedulingFeedbackUrl}`, with the run's `executionId` and HMAC `token`;
/// the token is checked before anything is looked up, so without one that verifies every request
/// gets the same 401. No bearer token is needed (on AWS, no IAM or JWT either).
#[utoipa::path(
    post,
    path = "/jobs/{jobId}/feedback/{requestCounts}",
    tag = "executions",
    security(()),
    params(
        JobPath,
        ("requestCounts" = u64, Path, description = "The run's execute number (docs/api.md's `requestCounts`)."),
        ("executionId" = Option<String>, Query, description = "The run, as the feedback URL names it."),
        ("token" = Option<String>, Query, description = "The run's HMAC token, as the feedback URL carries it."),
    ),
    request_body(content = Option<FeedbackReport>, description = "The report."),
    responses(
        (status = 200, description = "Recorded.", body = Envelope),
        (status = 400, description = "`requestCounts` is not a number, the report has a field of the wrong type, the body is not JSON, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 401, description = "`executionId` and `token` are missing or do not verify.", body = ErrorEnvelope),
        (status = 404, description = "The job does not exist, or the execution is not that run of it.", body = ErrorEnvelope),
        (status = 409, description = "The run is not waiting for feedback.", body = ErrorEnvelope),
        (status = 503, description = "The store failed, or no engine runs here; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn feedback<S: Store>(
    State(app): AppState<S>,
    PathParams((job_id, request_counts)): PathParams<(String, String)>,
    Params(params): Params,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let request_counts = count_param(&request_counts, "requestCounts")?;
    app.feedback(
        &job_id,
        request_counts,
        params.get("executionId").map(String::as_str),
        params.get("token").map(String::as_str),
        &body,
    )
    .await?;
    Ok(Json(Envelope::ok()).into_response())
}

/// Asks for the fire times of the job's schedule in `[startTime, endTime]` (or in each of
/// `ranges`) to run now, exempt from the catch-up window: all of them, or by `mode` those with no
/// run or whose latest run failed; oldest first, or newest first with `reverse`. The engine
/// creates the runs. With `dryRun` it only answers which times, and records nothing.
#[utoipa::path(
    post,
    path = "/jobs/{jobId}/backfill",
    tag = "executions",
    params(JobPath),
    request_body(content = BackfillRequest),
    responses(
        (status = 200, description = "Recorded (or, with `dryRun`, only counted): how many runs it makes, and with `dryRun` which times.", body = BackfillAccepted),
        (status = 400, description = "A time is missing or not RFC 3339, `endTime` is before `startTime`, ranges overlap, the request holds more than 10,000 fire times, `overlap`, `mode` or another field is invalid, the body is not JSON, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 409, description = "The job has no schedule (triggered only), would have more than 100 backfill ranges waiting, or is busy.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn backfill<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let request =
        sundial_core::backfill::BackfillRequest::parse(&body).map_err(AppError::Invalid)?;
    let report = app.backfill_by(&caller.change(), &job_id, &request).await?;
    Ok(Json(BackfillAccepted {
        envelope: Envelope::ok(),
        count: report.count as u64,
        dry_run: report.dry_run.then_some(true),
        times: report.dry_run.then_some(report.times),
    })
    .into_response())
}

/// The job, its next 10 fire times, its 10 most recent runs, the runs not finished, counters.
#[utoipa::path(
    get,
    path = "/jobs/{jobId}/describe",
    tag = "executions",
    params(JobPath),
    responses(
        (status = 200, description = "The job and what it will do and has done.", body = Described,
            links(
                ("job_executions" = (operation_id = "job_executions", parameters(("jobId" = "$request.path.jobId")))),
                ("delete_job" = (operation_id = "delete_job", parameters(("jobId" = "$request.path.jobId")))),
            )),
        (status = 400, description = "`jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn describe<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
) -> ApiResult {
    let described = app.describe(&parse_job_id(&job_id)?).await?;
    let state = &described.state;
    let info = DescribeInfo {
        future_action_times: described.future_action_times,
        recent_actions: described
            .recent_actions
            .iter()
            .map(|e| RecentAction {
                scheduled_time: json_time(e.scheduled_time),
                actual_time: e.started_at().map(json_time),
                execution_id: e.execution_id.clone(),
                state: e.state(),
            })
            .collect(),
        running_executions: described
            .running_executions
            .iter()
            .map(|e| RunningExecution {
                execution_id: e.execution_id.clone(),
                state: e.state(),
                started_at: e.started_at().map(json_time),
            })
            .collect(),
        action_count: state.action_count,
        overlap_skipped: state.overlap_skipped,
        missed_catchup_window: state.missed_catchup_window,
        buffer_dropped: state.buffer_dropped,
        buffer_size: state.buffer_size,
        remaining_actions: state.remaining_actions,
        pending_backfills: state.pending_backfills.len() as u64,
    };
    Ok(Json(Described {
        job: described.job,
        schedule: described.schedule,
        info,
    })
    .into_response())
}

/// A job's executions, newest first, without their logs. The job may be deleted: its executions
/// stay until retention removes them, so an unknown job has an empty list, not a 404.
#[utoipa::path(
    get,
    path = "/jobs/{jobId}/executions",
    tag = "executions",
    params(JobPath, PageQuery),
    responses(
        (status = 200, description = "A page of executions.", body = ExecutionsPage,
            links(
                ("get_execution" = (operation_id = "get_execution", parameters(("id" = "$response.body#/executions/0/executionId")))),
                ("delete_job" = (operation_id = "delete_job", parameters(("jobId" = "$request.path.jobId")))),
            )),
        (status = 400, description = "`limit` or `cursor` is invalid, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn job_executions<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    Params(params): Params,
) -> ApiResult {
    let page = app
        .list_executions(&parse_job_id(&job_id)?, &page_of(&params)?)
        .await?;
    Ok(Json(executions_page(page)).into_response())
}

/// Executions of every job, newest scheduled first, filtered by state, job, label, creator,
/// source and time ranges; without their logs.
#[utoipa::path(
    get,
    path = "/executions",
    tag = "executions",
    params(ExecutionSearchQuery),
    responses(
        (status = 200, description = "A page of executions; it may be short, even empty, with a `nextCursor`.", body = ExecutionsPage,
            links(
                ("get_execution" = (operation_id = "get_execution", parameters(("id" = "$response.body#/executions/0/executionId")))),
            )),
        (status = 400, description = "A filter is invalid (the message names it: `state`, `jobId`, `label`, `source`, `since`, `until`, `endedSince`, `endedUntil`), unknown or given twice (all but `label`), or `limit` or `cursor` is invalid.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn search_executions<S: Store>(
    State(app): AppState<S>,
    LabelledParams(params, labels): LabelledParams,
) -> ApiResult {
    let Params(params) = params.only(&[
        "state",
        "jobId",
        "creator",
        "source",
        "since",
        "until",
        "endedSince",
        "endedUntil",
        "limit",
        "cursor",
    ])?;
    // A filter given empty (`?state=`) is refused, as the OpenAPI patterns say: an API client
    // that sends one has lost a value. (The console's search form, whose empty fields mean
    // "any", reaches the same `SearchFilters` without this adapter.)
    for name in [
        "state",
        "jobId",
        "creator",
        "source",
        "since",
        "until",
        "endedSince",
        "endedUntil",
    ] {
        if params
            .get(name)
            .is_some_and(|value| value.trim().is_empty())
        {
            return Err(crate::error::ApiError::invalid(
                name,
                "is empty; leave it out to not filter by it",
            ));
        }
    }
    if labels.iter().any(|label| label.trim().is_empty()) {
        return Err(crate::error::ApiError::invalid(
            "label",
            "is empty; leave it out to not filter by it",
        ));
    }
    let param = |name: &str| params.get(name).cloned();
    let filters = SearchFilters {
        state: param("state"),
        job_id: param("jobId"),
        labels,
        creator: param("creator"),
        source: param("source"),
        since: param("since"),
        until: param("until"),
        ended_since: param("endedSince"),
        ended_until: param("endedUntil"),
    };
    let page = app.search_executions(&filters, &page_of(&params)?).await?;
    Ok(Json(executions_page(page)).into_response())
}

/// One execution with its append-only event log.
#[utoipa::path(
    get,
    path = "/executions/{id}",
    tag = "executions",
    params(ExecutionPath),
    responses(
        (status = 200, description = "The execution.", body = Execution),
        (status = 404, description = "No such execution.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn get_execution<S: Store>(
    State(app): AppState<S>,
    PathParams(execution_id): PathParams<String>,
) -> ApiResult {
    let execution = app
        .get_execution(&parse_execution_id(&execution_id)?)
        .await?;
    Ok(Json(Execution::from(&execution)).into_response())
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

/// Cancels an execution that has not finished.
#[utoipa::path(
    post,
    path = "/executions/{id}/cancel",
    tag = "executions",
    params(ExecutionPath),
    request_body(content = Option<Reason>, description = "Optional; goes into the event log."),
    responses(
        (status = 200, description = "Cancelled.", body = StateChanged),
        (status = 400, description = "`reason` is not a string of at most 4096 bytes, or the body is not JSON.", body = ErrorEnvelope),
        (status = 404, description = "No such execution.", body = ErrorEnvelope),
        (status = 409, description = "The execution's state cannot become Cancelled (it has finished), or it is busy.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn cancel<S: Store>(
    State(app): AppState<S>,
    PathParams(execution_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let execution_id = parse_execution_id(&execution_id)?;
    let reason = reason_of(&body, "cancelled by a user")?;
    let execution = app.cancel_execution(&execution_id, &reason).await?;
    Ok(Json(StateChanged {
        envelope: Envelope::ok(),
        state: execution.state(),
    })
    .into_response())
}

/// Ends a `Processing` or `Failed` execution for good.
#[utoipa::path(
    post,
    path = "/executions/{id}/terminate",
    tag = "executions",
    params(ExecutionPath),
    request_body(content = Option<Reason>, description = "Optional; goes into the event log."),
    responses(
        (status = 200, description = "Terminated.", body = StateChanged),
        (status = 400, description = "`reason` is not a string of at most 4096 bytes, or the body is not JSON.", body = ErrorEnvelope),
        (status = 404, description = "No such execution.", body = ErrorEnvelope),
        (status = 409, description = "The execution's state cannot become Terminated (only Processing and Failed can), or it is busy.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn terminate<S: Store>(
    State(app): AppState<S>,
    PathParams(execution_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let execution_id = parse_execution_id(&execution_id)?;
    let reason = reason_of(&body, "terminated by a user")?;
    let execution = app.terminate_execution(&execution_id, &reason).await?;
    Ok(Json(StateChanged {
        envelope: Envelope::ok(),
        state: execution.state(),
    })
    .into_response())
}
