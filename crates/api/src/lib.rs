//! The HTTP API: the routes and envelope of docs/api.md.
//!
//! One router serves `sundial serve` and the API Lambda. Handlers only translate HTTP to a use case
//! of [`App`] and its result back; every rule lives in the use case. Errors always come back as
//! docs/api.md's envelope, `{"resp_code": <status>, "resp_msg": "<field>: <problem>"}`, with the same
//! HTTP status, including for malformed JSON, oversized bodies and unknown routes, so a client never
//! has to parse a plain-text error.
//!
//! The router and its OpenAPI document (`GET /openapi.json`) come from one table, `api_routes!`:
//! each handler carries its `#[utoipa::path]` (method, path, parameters, bodies, answers), the
//! document is generated from those, and the router mounts each handler at the path and methods
//! its own documentation names. A route cannot be served without being documented, nor documented
//! without being served.

pub mod auth;
mod bulk;
mod calendars;
mod error;
mod executions;
mod extract;
mod history;
mod job_centre;
mod jobs;
mod ledger;
pub mod openapi;
mod ops;
pub mod schema;
mod simulate;
pub mod stats;

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::Response;
use axum::routing::{MethodFilter, MethodRouter};
use axum::Router;

pub use auth::{ApiAuth, ApiToken, Authenticated, Caller, Scope};
pub use error::ApiError;
use sundial_ports::cause::chain;
use sundial_ports::store::{PageRequest, Store, MAX_PAGE};
use sundial_service::app::{App, AppError};

/// The largest request body accepted.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// How long a request body may take to arrive once its handler reads it.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

type AppState<S> = State<Arc<App<S>>>;
type ApiResult = Result<Response, ApiError>;

/// Declares the route table: the handlers over the store (`stored`) and the ones that need no
/// state (`stateless`). It makes [`openapi::Operations`], whose document holds each handler's
/// operation, and the function that mounts each handler where that operation says.
macro_rules! api_routes {
    (
        stored: [$($stored_mod:ident :: $stored:ident),+ $(,)?],
        stateless: [$($stateless_mod:ident :: $stateless:ident),+ $(,)?] $(,)?
    ) => {
        /// The operations of the route table, as `utoipa` generates them from the handlers.
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($stored_mod::$stored,)+ $($stateless_mod::$stateless,)+))]
        pub(crate) struct Operations;

        /// Mounts every handler of the table where its operation in `document` says. A handler's
        /// operation id is its function name.
        fn mount<S: Store>(
            document: &utoipa::openapi::OpenApi,
            router: Router<Arc<App<S>>>,
        ) -> Router<Arc<App<S>>> {
            let mut router = router;
            $(
                router = mount_one(document, router, stringify!($stored), |filter| {
                    axum::routing::on(filter, $stored_mod::$stored::<S>)
                });
            )+
            $(
                router = mount_one(document, router, stringify!($stateless), |filter| {
                    axum::routing::on(filter, $stateless_mod::$stateless)
                });
            )+
            router
        }
    };
}

api_routes! {
    stored: [
        ops::health,
        ops::stats,
        jobs::list_jobs,
        simulate::simulate_job,
        jobs::create_job,
        jobs::get_job,
        jobs::set_active,
        jobs::delete_job,
        jobs::delete_job_centre,
        jobs::update_job,
        jobs::pause,
        jobs::unpause,
        history::job_history,
        bulk::bulk_pause,
        bulk::bulk_unpause,
        bulk::bulk_trigger,
        bulk::bulk_delete,
        bulk::bulk_backfill,
        executions::trigger,
        executions::feedback,
        executions::backfill,
        executions::describe,
        stats::job_stats,
        ledger::job_occurrences,
        executions::job_executions,
        executions::search_executions,
        executions::get_execution,
        executions::cancel,
        executions::terminate,
        ops::preview,
        ops::reconcile_declared_jobs,
        ops::apply,
        ops::get_debug_mode,
        ops::put_debug_mode,
        job_centre::clean,
        job_centre::main_execution,
        job_centre::child_logs,
        job_centre::child_logs_by_execution,
        job_centre::destroy_by_parent,
        calendars::list_calendars,
        calendars::get_calendar,
        calendars::put_calendar,
        calendars::delete_calendar,
        calendars::calendar_history,
    ],
    stateless: [
        openapi::openapi_json,
        openapi::docs_page,
        openapi::docs_index,
        openapi::docs_asset,
    ],
}

/// Mounts one handler at every path and method whose operation id in `document` is
/// `operation_id`. A handler the document does not know is not mounted (and logged): the route
/// tests then find it missing.
fn mount_one<S: Store>(
    document: &utoipa::openapi::OpenApi,
    mut router: Router<Arc<App<S>>>,
    operation_id: &str,
    handler: impl Fn(MethodFilter) -> MethodRouter<Arc<App<S>>>,
) -> Router<Arc<App<S>>> {
    let mut mounted = false;
    for (path, item) in &document.paths.paths {
        for (filter, operation) in openapi::operations_of(item) {
            if operation.operation_id.as_deref() == Some(operation_id) {
                router = router.route(path, handler(filter));
                mounted = true;
            }
        }
    }
    if !mounted {
        tracing::error!(
            operation_id,
            "handler has no operation in the OpenAPI document; not mounted"
        );
    }
    router
}

/// The API router over `app`. With tokens (`Some(token)`, `SUNDIAL_API_TOKEN`, is one token named
/// `default` with scope write; see [`ApiAuth`]), every route but `/health`, the feedback route and
/// the public documents (`/openapi.json`, `/docs`) requires `Authorization: Bearer <secret>` of
/// one of them, and a token of scope read is refused every change (403).
pub fn router<S: Store>(app: Arc<App<S>>, auth: impl Into<ApiAuth>) -> Router {
    let auth = auth.into();
    let routes = mount(openapi::document(), Router::new())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(app);
    if auth.is_open() {
        return routes;
    }
    routes.layer(middleware::from_fn_with_state(
        Arc::new(auth),
        auth::require_token,
    ))
}

/// `POST /specs/preview`'s own handler over `app`, to mount elsewhere: the operator console's
/// script previews a schedule as it is typed through this route's code, behind the console's
/// session, since a browser page must never hold the API's bearer token. Same body, answers and
/// errors as the API route; it reads and writes no stored data.
pub fn spec_preview_route<S: Store, T: Clone + Send + Sync + 'static>(
    app: Arc<App<S>>,
) -> MethodRouter<T> {
    axum::routing::post(ops::preview::<S>).with_state(app)
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

/// A count in a query or path (`retainExecutionCount`, `execution`, `requestCounts`): a
/// non-negative integer of at most `i64::MAX`, the document's `int64`, as counts in bodies are.
fn count_param(text: &str, field: &str) -> Result<u64, ApiError> {
    text.parse::<i64>()
        .ok()
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| {
            ApiError::invalid(
                field,
                format!("expected an integer from 0 to {}, got {text:?}", i64::MAX),
            )
        })
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

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed on this route",
    )
}

/// Whether a path is open without the bearer token: `/health` (supervisors and load balancers),
/// the feedback route (job services hold the execution's HMAC token in the URL Sundial gave them,
/// not the API's bearer token), and the API's own description (`/openapi.json`, `/docs`), which
/// is a public contract and holds no data.
pub fn is_public_path(path: &str) -> bool {
    let is_feedback = path.starts_with("/jobs/") && path.split('/').nth(3) == Some("feedback");
    path == "/health"
        || is_feedback
        || path == "/openapi.json"
        || path == "/docs"
        || path.starts_with("/docs/")
}

/// The credentials of an `Authorization: Bearer <token>` value. The scheme is case-insensitive
/// (RFC 7235 §2.1: `bearer`, `BEARER`) and separated from the token by one or more spaces.
pub fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_start_matches(' '))
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
