//! Job routes: create, read, pause and resume, update and run, delete, list.

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::Value;

use super::extract::{JsonBody, LabelledParams, Params, PathParams};

use super::auth::Authenticated;
use super::schema::{
    AffectedRun, Created, Envelope, ErrorEnvelope, FireTimesBeforeAfter, Job, JobDefinition,
    JobListQuery, JobPath, JobsPage, Notes, PauseRequest, UpdateAnswer, UpdatePreview, Updated,
};
use super::{bool_param, page_of, ApiError, ApiResult, AppState};
use sundial_core::job::{JobDocument, PauseEnd};
use sundial_ports::store::{JobFilter, JobOrder, LabelSelector, Store};
use sundial_service::app::{job_filter, parse_job_id, pause_end, AppError};

/// The warnings of a created or updated job, absent when there are none.
fn warnings_of(warnings: Vec<String>) -> Option<Vec<String>> {
    (!warnings.is_empty()).then_some(warnings)
}

/// Creates a job from a docs/api.md job definition.
#[utoipa::path(
    post,
    path = "/jobs/{jobId}",
    tag = "jobs",
    params(JobPath),
    request_body(content = JobDefinition, description = "The job: docs/api.md's fields and the extensions."),
    responses(
        (status = 200, description = "Created; `warnings` when the job is valid but probably not what was meant.", body = Created,
            links(
                ("get_job" = (operation_id = "get_job", parameters(("jobId" = "$request.path.jobId")))),
                ("describe" = (operation_id = "describe", parameters(("jobId" = "$request.path.jobId")))),
                ("pause" = (operation_id = "pause", parameters(("jobId" = "$request.path.jobId")))),
                ("unpause" = (operation_id = "unpause", parameters(("jobId" = "$request.path.jobId")))),
                ("trigger" = (operation_id = "trigger", parameters(("jobId" = "$request.path.jobId")))),
                ("job_executions" = (operation_id = "job_executions", parameters(("jobId" = "$request.path.jobId")))),
                ("update_job" = (operation_id = "update_job", parameters(("jobId" = "$request.path.jobId")))),
                ("backfill" = (operation_id = "backfill", parameters(("jobId" = "$request.path.jobId")))),
                ("delete_job" = (operation_id = "delete_job", parameters(("jobId" = "$request.path.jobId")))),
            )),
        (status = 400, description = "The definition is invalid (the message names the field: types, ranges and unknown fields, and what the schema cannot say: cron strings, durations, templates, URLs, time zones), the body is not JSON, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 409, description = "The job id is taken.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn create_job<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let document = JobDocument::read(&parse_job_id(&job_id)?, &body).map_err(AppError::Invalid)?;
    let job = app.create_job_by(&caller.change(), &document).await?;
    Ok(Json(Created {
        envelope: Envelope::ok(),
        warnings: warnings_of(app.warnings(&job)),
    })
    .into_response())
}

/// Reads a job: the definition as written (secret header values shown as `"***"`) with its state.
#[utoipa::path(
    get,
    path = "/jobs/{jobId}",
    tag = "jobs",
    params(JobPath),
    responses(
        (status = 200, description = "The job.", body = Job,
            links(
                ("describe" = (operation_id = "describe", parameters(("jobId" = "$response.body#/jobId")))),
                ("pause" = (operation_id = "pause", parameters(("jobId" = "$response.body#/jobId")))),
                ("job_executions" = (operation_id = "job_executions", parameters(("jobId" = "$response.body#/jobId")))),
            )),
        (status = 400, description = "`jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn get_job<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
) -> ApiResult {
    let job = app.get_job(&parse_job_id(&job_id)?).await?;
    Ok(Json(job.to_api_json()).into_response())
}

/// docs/api.md's pause (`?active=0`) and resume (`?active=1`).
#[utoipa::path(
    put,
    path = "/jobs/{jobId}",
    tag = "jobs",
    params(
        JobPath,
        ("active" = String, Query, description = "`0` (or `false`) pauses, `1` (or `true`) resumes.", pattern = "^(0|1|true|false)$"),
    ),
    responses(
        (status = 200, description = "Done.", body = Envelope),
        (status = 400, description = "`active` is missing or not 0 or 1, a parameter is unknown or given twice, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 409, description = "The job is busy; retry.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn set_active<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
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
    app.set_active_by(&caller.change(), &job_id, active, None)
        .await?;
    Ok(Json(Envelope::ok()).into_response())
}

/// Deletes a job and its schedule; its executions stay readable until retention removes them.
#[utoipa::path(
    delete,
    path = "/jobs/{jobId}",
    tag = "jobs",
    params(JobPath),
    responses(
        (status = 200, description = "Deleted.", body = Envelope,
            links(("get_job" = (operation_id = "get_job", parameters(("jobId" = "$request.path.jobId")))))),
        (status = 400, description = "`jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn delete_job<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
    PathParams(job_id): PathParams<String>,
) -> ApiResult {
    app.delete_job_by(&caller.change(), &parse_job_id(&job_id)?)
        .await?;
    Ok(Json(Envelope::ok()).into_response())
}

/// docs/api.md's delete (`DELETE /job/{jobId}`), the same as `DELETE /jobs/{jobId}`.
#[utoipa::path(
    delete,
    path = "/job/{jobId}",
    tag = "job-centre",
    params(JobPath),
    responses(
        (status = 200, description = "Deleted.", body = Envelope),
        (status = 400, description = "`jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn delete_job_centre<S: Store>(
    state: AppState<S>,
    caller: Authenticated,
    job_id: PathParams<String>,
) -> ApiResult {
    delete_job(state, caller, job_id).await
}

/// Replaces a job's definition, keeping its state, counters and history, then runs it once now
/// (docs/api.md's "update and run"). With `?dryRun=true` it writes nothing and runs nothing, and
/// answers what the change would do: the next fire times before and after, and the runs not yet
/// started it would affect.
#[utoipa::path(
    post,
    path = "/jobs/{jobId}/update",
    tag = "jobs",
    params(
        JobPath,
        ("dryRun" = Option<String>, Query, description = "`true`/`false`/`1`/`0`, or bare for true (default false): only preview the change; nothing is written and nothing runs.", pattern = "^(|true|false|1|0)$"),
    ),
    request_body(content = JobDefinition, description = "The whole job, as for create. A secret header sent back as `\"***\"` keeps its stored value."),
    responses(
        (status = 200, description = "Updated, and the run it started; with `dryRun`, what the change would do.", body = UpdateAnswer,
            links(("get_execution" = (operation_id = "get_execution", parameters(("id" = "$response.body#/executionId")))))),
        (status = 400, description = "The definition is invalid (the message names the field), `dryRun` is not a boolean, a parameter is unknown or given twice, the body is not JSON, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 409, description = "The job is busy; retry.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn update_job<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
    PathParams(job_id): PathParams<String>,
    params: Params,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let Params(params) = params.only(&["dryRun"])?;
    let document = JobDocument::read(&job_id, &body).map_err(AppError::Invalid)?;
    if bool_param(&params, "dryRun", false)? {
        let preview = app.preview_update(&document).await?;
        return Ok(Json(UpdatePreview {
            envelope: Envelope::ok(),
            dry_run: true,
            next_fire_times: FireTimesBeforeAfter {
                before: preview.before,
                after: preview.after,
            },
            affected_runs: preview
                .affected
                .into_iter()
                .map(|affected| AffectedRun {
                    execution_id: affected.run.execution_id,
                    place: affected.run.place.name(),
                    state: affected.run.state,
                    scheduled_time: affected
                        .run
                        .scheduled_time
                        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
                    changes: affected.changes,
                })
                .collect(),
            warnings: warnings_of(preview.warnings),
        })
        .into_response());
    }
    let (job, execution) = app.update_and_run_by(&caller.change(), &document).await?;
    Ok(Json(Updated {
        envelope: Envelope::ok(),
        execution_id: execution.execution_id,
        warnings: warnings_of(app.warnings(&job)),
    })
    .into_response())
}

/// The notes of a pause or unpause body: `{"notes": "…"}`, or no body.
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

/// The end of a pause body's pause: its `until`, if given.
pub(crate) fn pause_end_of(body: &Value) -> Result<Option<PauseEnd>, ApiError> {
    match body.get("until") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(until)) => Ok(Some(pause_end(until)?)),
        Some(_) => Err(ApiError::invalid(
            "until",
            "expected an RFC 3339 instant or a duration such as \"2h\"",
        )),
    }
}

/// Pauses a job; the schedule is kept and `notes` say why; with `until`, until then.
#[utoipa::path(
    post,
    path = "/jobs/{jobId}/pause",
    tag = "jobs",
    params(JobPath),
    request_body(content = Option<PauseRequest>, description = "Optional; without notes the pause records `\"paused\"`; with `until` the pause ends by itself."),
    responses(
        (status = 200, description = "Paused.", body = Envelope,
            links(
                ("unpause" = (operation_id = "unpause", parameters(("jobId" = "$request.path.jobId")))),
                ("get_job" = (operation_id = "get_job", parameters(("jobId" = "$request.path.jobId")))),
            )),
        (status = 400, description = "`notes` is not a string of at most 4096 bytes, `until` is neither an RFC 3339 instant nor a duration or is not later than now, the body is not JSON, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 409, description = "The job is busy; retry.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn pause<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let notes = notes_of(&body)?.or_else(|| Some("paused".to_string()));
    let until = pause_end_of(&body)?;
    app.pause_by(&caller.change(), &job_id, notes, until)
        .await?;
    Ok(Json(Envelope::ok()).into_response())
}

/// Resumes a job; `notes` replace the pause note (without, it is cleared).
#[utoipa::path(
    post,
    path = "/jobs/{jobId}/unpause",
    tag = "jobs",
    params(JobPath),
    request_body(content = Option<Notes>, description = "Optional."),
    responses(
        (status = 200, description = "Resumed.", body = Envelope,
            links(
                ("trigger" = (operation_id = "trigger", parameters(("jobId" = "$request.path.jobId")))),
                ("describe" = (operation_id = "describe", parameters(("jobId" = "$request.path.jobId")))),
            )),
        (status = 400, description = "`notes` is not a string of at most 4096 bytes, the body is not JSON, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 409, description = "The job is busy; retry.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn unpause<S: Store>(
    State(app): AppState<S>,
    Authenticated(caller): Authenticated,
    PathParams(job_id): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let job_id = parse_job_id(&job_id)?;
    let notes = notes_of(&body)?;
    app.set_active_by(&caller.change(), &job_id, true, notes)
        .await?;
    Ok(Json(Envelope::ok()).into_response())
}

/// Lists jobs, filtered, a page at a time: by id, by next fire or by last run (`sort`).
#[utoipa::path(
    get,
    path = "/jobs",
    tag = "jobs",
    params(JobListQuery),
    responses(
        (status = 200, description = "A page of jobs.", body = JobsPage),
        (status = 400, description = "A parameter is invalid (a `label` not `key:value`, an `idPrefix` with characters no id has), unknown or given twice (all but `label`; the message names it), `cursor` was not made by the server for this `sort`, or the store cannot list in that order (DynamoDB: `sort: lastRun is not available here …`).", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn list_jobs<S: Store>(
    State(app): AppState<S>,
    params: LabelledParams,
) -> ApiResult {
    let LabelledParams(params, labels) = params;
    let Params(params) = params.only(&[
        "state",
        "creator",
        "parentJob",
        "service",
        "idPrefix",
        "sort",
        "limit",
        "cursor",
    ])?;
    let filter = list_filter(&params, &labels)?;
    let order = match params.get("sort") {
        None => JobOrder::Id,
        Some(name) => JobOrder::parse(name).ok_or_else(|| {
            ApiError::invalid(
                "sort",
                format!("expected id, nextFire or lastRun, got {name:?}"),
            )
        })?,
    };
    let page = app.list_jobs(&filter, order, &page_of(&params)?).await?;
    Ok(Json(JobsPage {
        jobs: page.items.iter().map(|j| j.to_api_json()).collect(),
        next_cursor: page.next_cursor,
    })
    .into_response())
}

/// The filters of `GET /jobs`, checked: a 400 names `state`, `idPrefix` or `label`.
fn list_filter(
    params: &std::collections::HashMap<String, String>,
    labels: &[String],
) -> Result<JobFilter, ApiError> {
    let labels = labels
        .iter()
        .map(|text| LabelSelector::parse("label", text))
        .collect::<Result<Vec<_>, _>>()
        .map_err(AppError::from)?;
    let param = |name: &str| params.get(name).cloned();
    Ok(job_filter(
        param("state"),
        param("creator"),
        param("parentJob"),
        param("service"),
        param("idPrefix"),
        labels,
    )?)
}
