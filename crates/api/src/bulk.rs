//! Bulk routes: `POST /bulk/jobs/{pause|unpause|trigger|delete|backfill}` — act on the jobs a
//! filter or an id list selects, with a reason. Not under `/jobs/`, where `bulk` is a valid job
//! id. One route per action, each with its own body schema. The rules are
//! [`App::bulk`](sundial_service::app::App::bulk)'s; this translates.

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::Authenticated;
use super::extract::JsonBody;
use super::schema::{
    BackfillRequest, Envelope, ErrorEnvelope, JobStateName, Labels, TriggerArguments,
};
use super::{ApiError, ApiResult, AppState};
use sundial_ports::store::Store;
use sundial_service::app::{BulkAction, BulkDone, BulkRequest};

/// The body of each bulk route: the list filters (all given must match) or `jobIds` (not both), a
/// `reason`, and the action's own parameters, which are the only extra fields it accepts. At most
/// 1,000 jobs per request; with filters, `nextCursor` of the answer, passed back as `cursor` with
/// the same body, goes on after the last job acted on. One schema per action (not one body for
/// `/bulk/jobs/{action}`), so that the document says exactly which fields each route takes.
macro_rules! bulk_request {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident: $ty:ty,)* }) => {
        #[derive(ToSchema)]
        $(#[$meta])*
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        #[allow(dead_code)]
        pub(crate) struct $name {
            /// Why: required, recorded with every change (and the pause notes unless `notes` is given).
            #[schema(min_length = 1, max_length = 4096)]
            reason: String,
            /// Only answer which jobs would be acted on; change nothing.
            dry_run: Option<bool>,
            /// Exactly these jobs (1–1,000), in this order; not with filters.
            #[schema(min_items = 1, max_items = 1000)]
            job_ids: Option<Vec<String>>,
            /// Only jobs in this state.
            state: Option<JobStateName>,
            /// Only jobs of this creator.
            creator: Option<String>,
            /// Only children of this job.
            parent_job: Option<String>,
            /// Only jobs a service declared in its timer list.
            service: Option<String>,
            /// Only jobs with all these labels.
            labels: Option<Labels>,
            /// Only jobs whose id starts with this.
            #[schema(pattern = r"^[A-Za-z0-9_.-]{1,128}$")]
            id_prefix: Option<String>,
            /// The `nextCursor` of the previous answer (filters only).
            #[schema(min_length = 1)]
            cursor: Option<String>,
            $($(#[$field_meta])* $field: $ty,)*
        }
    };
}

bulk_request! {
    /// `POST /bulk/jobs/pause`.
    #[schema(example = json!({"labels": {"team": "payments"}, "state": "active", "reason": "payments freeze for the migration", "until": "2h", "dryRun": true}))]
    BulkPauseRequest {
        /// The notes (default: the reason).
        #[schema(max_length = 4096)]
        notes: Option<String>,
        /// When every pause ends by itself, as `POST /jobs/{jobId}/pause` takes it; a duration
        /// counts from the request, so all end at one time.
        #[schema(min_length = 1)]
        until: Option<String>,
    }
}

bulk_request! {
    /// `POST /bulk/jobs/unpause`.
    #[schema(example = json!({"labels": {"team": "payments"}, "state": "paused", "reason": "migration done"}))]
    BulkUnpauseRequest {
        /// The notes (default: the reason).
        #[schema(max_length = 4096)]
        notes: Option<String>,
    }
}

bulk_request! {
    /// `POST /bulk/jobs/trigger`.
    #[schema(example = json!({"idPrefix": "report-", "reason": "rerun after the warehouse outage", "arguments": {"full": true}, "idempotencyKey": "outage-42"}))]
    BulkTriggerRequest {
        /// The arguments of every run (default `{}`).
        arguments: Option<TriggerArguments>,
        /// Each job's run is `{jobId}~t~{key}`, so a retried request finds its runs.
        #[schema(pattern = r"^[A-Za-z0-9_.-]{1,64}$")]
        idempotency_key: Option<String>,
    }
}

bulk_request! {
    /// `POST /bulk/jobs/delete`.
    #[schema(example = json!({"jobIds": ["old-1", "old-2"], "reason": "decommissioned"}))]
    BulkDeleteRequest {}
}

bulk_request! {
    /// `POST /bulk/jobs/backfill`.
    #[schema(example = json!({"labels": {"team": "payments"}, "reason": "replay the outage", "backfill": {"startTime": "2026-11-20T00:00:00Z", "endTime": "2026-11-20T06:00:00Z", "mode": "missing"}}))]
    BulkBackfillRequest {
        /// The body of `POST /jobs/{jobId}/backfill`, without `dryRun` (use the request's).
        backfill: BackfillRequest,
    }
}

/// What became of one job.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BulkStatus {
    /// Acted on.
    Ok,
    /// Not acted on: `error` says why.
    Error,
    /// Dry run: would be acted on.
    Matched,
}

/// Why one job was not acted on: the answer its single-job route would have given.
#[derive(ToSchema, Serialize)]
pub(crate) struct BulkError {
    /// The HTTP status of that answer (404 gone, 409 refused or busy, 503 retry).
    pub(crate) code: u16,
    /// Its message.
    pub(crate) message: String,
}

/// One job's outcome.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BulkResult {
    /// The job.
    pub(crate) job_id: String,
    /// What became of it.
    pub(crate) status: BulkStatus,
    /// `trigger`: the run started.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub(crate) execution_id: Option<String>,
    /// `backfill`: how many runs it makes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub(crate) count: Option<u64>,
    /// With `status: error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub(crate) error: Option<BulkError>,
}

/// The envelope of a bulk request: each job's outcome. Jobs that failed do not fail the request.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"resp_code": 200, "resp_msg": null, "action": "pause", "dryRun": false, "matched": 2, "succeeded": 1, "failed": 1,
    "results": [{"jobId": "pay-1", "status": "ok"}, {"jobId": "pay-2", "status": "error", "error": {"code": 404, "message": "job pay-2 not found"}}],
    "nextCursor": null}))]
pub(crate) struct BulkAnswer {
    /// The envelope.
    #[serde(flatten)]
    pub(crate) envelope: Envelope,
    /// The action.
    pub(crate) action: String,
    /// Whether nothing was changed.
    pub(crate) dry_run: bool,
    /// Jobs selected by this request (at most 1,000).
    pub(crate) matched: u64,
    /// Jobs acted on.
    pub(crate) succeeded: u64,
    /// Jobs not acted on.
    pub(crate) failed: u64,
    /// Each job's outcome, in the order acted on (by id with filters).
    pub(crate) results: Vec<BulkResult>,
    /// More jobs match: send the same body again with this as `cursor`.
    #[schema(value_type = Option<String>)]
    pub(crate) next_cursor: Option<String>,
}

/// One bulk route per action: the document gives each its own body.
macro_rules! bulk_route {
    ($handler:ident, $action:ident, $path:literal, $body:ty, $what:literal) => {
        #[doc = concat!("`POST ", $path, "`: ", $what, " every job the filters (or `jobIds`) select, ")]
        #[doc = "each as its single-job route does, atomic for that job; one that fails is reported in"]
        #[doc = "`results` and the others go on."]
        #[utoipa::path(
            post,
            path = $path,
            tag = "jobs",
            request_body(content = $body),
            responses(
                (status = 200, description = "Each job's outcome (partial failures included).", body = BulkAnswer),
                (status = 400, description = "`reason` is missing, filters and `jobIds` are both given (or neither), or a filter, `cursor` or a parameter is invalid or unknown (the message names it).", body = ErrorEnvelope),
                (status = 503, description = "The store failed while selecting jobs; retry (jobs already acted on keep their change).", body = ErrorEnvelope),
            )
        )]
        pub(super) async fn $handler<S: Store>(
            State(app): AppState<S>,
            Authenticated(caller): Authenticated,
            JsonBody(body): JsonBody,
        ) -> ApiResult {
            bulk_jobs(&app, caller, BulkAction::$action, body).await
        }
    };
}

bulk_route!(
    bulk_pause,
    Pause,
    "/bulk/jobs/pause",
    BulkPauseRequest,
    "pauses"
);
bulk_route!(
    bulk_unpause,
    Unpause,
    "/bulk/jobs/unpause",
    BulkUnpauseRequest,
    "unpauses"
);
bulk_route!(
    bulk_trigger,
    Trigger,
    "/bulk/jobs/trigger",
    BulkTriggerRequest,
    "triggers"
);
bulk_route!(
    bulk_delete,
    Delete,
    "/bulk/jobs/delete",
    BulkDeleteRequest,
    "deletes"
);
bulk_route!(
    bulk_backfill,
    Backfill,
    "/bulk/jobs/backfill",
    BulkBackfillRequest,
    "backfills"
);

/// What every bulk route does with its action.
async fn bulk_jobs<S: Store>(
    app: &sundial_service::App<S>,
    caller: sundial_service::app::Caller,
    action: BulkAction,
    body: serde_json::Value,
) -> ApiResult {
    let request = BulkRequest::parse(action, &body, caller.actor)?;
    let report = app.bulk(&request).await?;
    let mut results = Vec::with_capacity(report.outcomes.len());
    let (mut succeeded, mut failed) = (0, 0);
    for outcome in report.outcomes {
        let mut result = BulkResult {
            job_id: outcome.job_id,
            status: BulkStatus::Ok,
            execution_id: None,
            count: None,
            error: None,
        };
        match outcome.result {
            Ok(BulkDone::Matched) => result.status = BulkStatus::Matched,
            Ok(BulkDone::Done) => {}
            Ok(BulkDone::Triggered(id)) => result.execution_id = Some(id),
            Ok(BulkDone::Backfilled(count)) => result.count = Some(count as u64),
            Err(error) => {
                let error = ApiError::from(error);
                result.status = BulkStatus::Error;
                result.error = Some(BulkError {
                    code: error.status().as_u16(),
                    message: error.message().to_owned(),
                });
            }
        }
        match result.status {
            BulkStatus::Error => failed += 1,
            BulkStatus::Ok => succeeded += 1,
            BulkStatus::Matched => {}
        }
        results.push(result);
    }
    Ok(Json(BulkAnswer {
        envelope: Envelope::ok(),
        action: action.name().to_owned(),
        dry_run: request.dry_run,
        matched: results.len() as u64,
        succeeded,
        failed,
        results,
        next_cursor: report.next_cursor,
    })
    .into_response())
}
