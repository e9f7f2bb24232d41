//! `GET /jobs/{jobId}/history`: a job's audit trail, newest first.

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::extract::{Params, PathParams};
use super::schema::{
    BackfillRequest, ErrorEnvelope, FieldChange, JobDefinition, JobPath, PageQuery,
};
use super::{page_of, ApiResult, AppState};
use sundial_ports::store::Store;
use sundial_service::app::parse_job_id;

/// One change of a job: who made it, how, why, and what it left.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(super) struct HistoryEntry {
    /// When the change was made (RFC 3339, UTC).
    #[schema(format = DateTime)]
    at: String,
    /// The job.
    job_id: String,
    /// Who: the API token's name (`sundial serve`), the IAM principal's ARN or the JWT's subject
    /// (AWS), `system` for a policy (pause on failure), `anonymous` when the API asks for no
    /// credentials.
    actor: String,
    /// `create`, `update`, `pause`, `unpause`, `trigger`, `backfill`, `delete`; prefixed
    /// `timers:` for `PUT /services/{serviceName}/timers` and replaced by `bulk:<action>` for a
    /// bulk action.
    action: String,
    /// The reason given, or the notes of a pause or unpause.
    reason: Option<String>,
    /// The job's version after the change (a deletion: the version it removed, plus one).
    version: u64,
    /// The job's state after the change.
    #[schema(pattern = "^(active|paused|deleted)$")]
    state: String,
    /// An update's changed fields, by JSON pointer, with the values before and after (secret
    /// header values as `"***"`); a field added has no `old`, a field removed no `new`.
    changes: Option<Vec<FieldChange>>,
    /// Present (true) when the changes' values came to more than 32 KiB: only their paths are
    /// kept; the `definition` holds the values after.
    changes_truncated: Option<bool>,
    /// The definition a creation or update put in force, as `GET /jobs/{jobId}` shows it.
    #[schema(value_type = Option<JobDefinition>)]
    definition: Option<Value>,
    /// A trigger's run.
    execution_id: Option<String>,
    /// A backfill's request body.
    #[schema(value_type = Option<BackfillRequest>)]
    request: Option<Value>,
    /// How many times a backfill selected.
    count: Option<u64>,
}

/// A page of a job's history, newest first.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HistoryPage {
    /// The entries.
    #[schema(value_type = Vec<HistoryEntry>)]
    pub(super) entries: Vec<Value>,
    /// Pass back as `cursor` for the next page; null on the last.
    pub(super) next_cursor: Option<String>,
}

/// A job's audit trail, newest first: every change made to it, by whom and why. The trail
/// outlives the job (a deleted job's history stays until retention removes it, by the rule of
/// executions), so an unknown job has an empty history, not a 404.
#[utoipa::path(
    get,
    path = "/jobs/{jobId}/history",
    tag = "jobs",
    params(JobPath, PageQuery),
    responses(
        (status = 200, description = "A page of the job's history.", body = HistoryPage),
        (status = 400, description = "`limit` or `cursor` is invalid, a parameter is unknown or given twice, or `jobId` is malformed.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn job_history<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    params: Params,
) -> ApiResult {
    let Params(params) = params.only(&["limit", "cursor"])?;
    let page = app
        .history(&parse_job_id(&job_id)?, &page_of(&params)?)
        .await?;
    Ok(Json(HistoryPage {
        entries: page.items,
        next_cursor: page.next_cursor,
    })
    .into_response())
}
