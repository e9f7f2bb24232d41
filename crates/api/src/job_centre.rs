//! The job-scheduling centre's own routes (docs/api.md): retention, executions of a job, child job logs, destroy by parent.

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;

use super::executions::{execution_logs_page, executions_page};
use super::extract::Params;
use super::schema::{
    Cleaned, Destroyed, Envelope, ErrorEnvelope, ExecutionLogsPage, ExecutionsPage, PageQuery,
};
use super::{bool_param, count_param, page_of, required_param, ApiError, ApiResult, AppState};
use sundial_ports::store::Store;
use sundial_service::app::{parse_execution_id, parse_job_id};

/// docs/api.md's clean-up: removes the executions of deleted jobs and all but the newest
/// `retainExecutionCount` executions of every job, whatever their state.
#[utoipa::path(
    delete,
    path = "/main/schedule/clean",
    tag = "job-centre",
    params(
        ("cleanDestroyJob" = Option<String>, Query, description = "`true`/`false`/`1`/`0`, or bare for true (default true): remove all executions of deleted jobs.", pattern = "^(|true|false|1|0)$"),
        ("retainExecutionCount" = Option<u64>, Query, description = "Newest executions kept per job (default 10)."),
    ),
    responses(
        (status = 200, description = "Cleaned: what was removed.", body = Cleaned,
            example = json!({"resp_code": 200, "resp_msg": null, "executionsDeleted": 2, "destroyedJobsCleaned": 2, "auditEntriesDeleted": 3})),
        (status = 400, description = "A parameter is invalid or given twice.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn clean<S: Store>(State(app): AppState<S>, Params(params): Params) -> ApiResult {
    let purge = bool_param(&params, "cleanDestroyJob", true)?;
    let retain = match params.get("retainExecutionCount") {
        None => 10,
        Some(text) => {
            usize::try_from(count_param(text, "retainExecutionCount")?).unwrap_or(usize::MAX)
        }
    };
    let (report, audit) = app.clean(purge, retain).await?;
    Ok(Json(Cleaned {
        envelope: Envelope::ok(),
        executions_deleted: report.executions_deleted,
        destroyed_jobs_cleaned: report.destroyed_jobs_cleaned,
        audit_entries_deleted: audit.entries_deleted,
    })
    .into_response())
}

/// docs/api.md's executions of a job, newest first, without their logs. As with
/// `GET /jobs/{jobId}/executions`, a deleted job's executions stay until retention.
#[utoipa::path(
    get,
    path = "/main/execution",
    tag = "job-centre",
    params(
        ("jobId" = String, Query, description = "The job.", pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of executions.", body = ExecutionsPage),
        (status = 400, description = "`jobId` is missing or malformed, or `limit` or `cursor` is invalid.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn main_execution<S: Store>(
    State(app): AppState<S>,
    Params(params): Params,
) -> ApiResult {
    let job_id = parse_job_id(required_param(&params, "jobId")?).map_err(ApiError::from)?;
    let page = app.list_executions(&job_id, &page_of(&params)?).await?;
    Ok(Json(executions_page(page)).into_response())
}

/// The executions of the children of one parent run, with their logs.
#[utoipa::path(
    get,
    path = "/main/getChildJobLogs",
    tag = "job-centre",
    params(
        ("parentJobId" = String, Query, description = "The parent job.", pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128),
        ("execution" = u64, Query, description = "The parent run's execute number."),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of executions with their logs.", body = ExecutionLogsPage),
        (status = 400, description = "A parameter is missing or malformed.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn child_logs<S: Store>(
    State(app): AppState<S>,
    Params(params): Params,
) -> ApiResult {
    let parent = parse_job_id(required_param(&params, "parentJobId")?)?;
    let execution = count_param(required_param(&params, "execution")?, "execution")?;
    let page = app
        .child_executions(&parent, Some(execution), &page_of(&params)?)
        .await?;
    Ok(Json(execution_logs_page(page)).into_response())
}

/// The executions of the children of one parent run, named by the parent execution's id.
#[utoipa::path(
    get,
    path = "/main/getChildJobLogsByExecutionId",
    tag = "job-centre",
    params(
        ("executionId" = String, Query, description = "The parent execution."),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of executions with their logs.", body = ExecutionLogsPage),
        (status = 400, description = "`executionId` is missing, or `limit` or `cursor` is invalid.", body = ErrorEnvelope),
        (status = 404, description = "No such parent execution.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn child_logs_by_execution<S: Store>(
    State(app): AppState<S>,
    Params(params): Params,
) -> ApiResult {
    let execution_id = required_param(&params, "executionId")?;
    let parent = app
        .get_execution(&parse_execution_id(execution_id)?)
        .await?;
    let page = app
        .child_executions(
            &parent.job_id,
            Some(parent.execute_number),
            &page_of(&params)?,
        )
        .await?;
    Ok(Json(execution_logs_page(page)).into_response())
}

/// Deletes a parent's children, their descendants and the parent itself.
#[utoipa::path(
    delete,
    path = "/main/destroyByParentJob",
    tag = "job-centre",
    params(
        ("parentJobId" = String, Query, description = "The parent job.", pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128),
    ),
    responses(
        (status = 200, description = "The jobs deleted.", body = Destroyed,
            example = json!({"resp_code": 200, "resp_msg": null, "deleted": ["monthly-close", "monthly-close-emea"]})),
        (status = 400, description = "`parentJobId` is missing or malformed.", body = ErrorEnvelope),
        (status = 404, description = "Neither the parent nor any child exists.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn destroy_by_parent<S: Store>(
    State(app): AppState<S>,
    super::auth::Authenticated(caller): super::auth::Authenticated,
    Params(params): Params,
) -> ApiResult {
    let parent = parse_job_id(required_param(&params, "parentJobId")?)?;
    let deleted = app.destroy_by_parent_by(&caller.change(), &parent).await?;
    Ok(Json(Destroyed {
        envelope: Envelope::ok(),
        deleted,
    })
    .into_response())
}
