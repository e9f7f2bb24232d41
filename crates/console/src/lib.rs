//! The operator console: server-rendered HTML pages for people, beside the JSON API for programs.
//!
//! `sundial serve` mounts [`router`] next to the API router: the jobs list at `/`, every other page
//! under `/ui/…`. Pages are HTML written by maud templates (checked when this crate compiles), read
//! without JavaScript, with a stylesheet and a small script embedded in the binary; nothing is
//! fetched from anywhere else. Handlers only translate: every page reads and every form writes
//! through the same [`App`] use cases as the API (`tests/single_path.rs` holds them to it), so a
//! rule is never enforced twice or skipped here.
//!
//! A page is a view model and its rendering: [`job_page::JobPage`], [`execution_page::ExecutionPage`],
//! [`ledger_page::LedgerPage`], [`upcoming::UpcomingPage`] and [`stats::DashboardPage`] each `load` what the page shows (reads that do not depend on
//! each other made at once), typed, and implement [`maud::Render`] from one small component per
//! section; their handlers load, render and answer. Those modules are public so that tests assert
//! on what a page shows, leaving a few HTML checks for its structure.
//!
//! The jobs list sorts by id, next fire or last run (the job orders of the store port, each
//! keyset-paged), filters as `GET /jobs` does (labels and id prefix included, the `filter`
//! module), and shows each job's success over the last 24 hours ([`App::day_success`], from the
//! hourly rollups). Under it, the bulk form (the `bulk` module, `POST /ui/bulk/jobs/preview`, then
//! `POST /ui/bulk/jobs`) acts on the
//! rows ticked or on every job the filter selects through [`App::bulk`], the use case of
//! `POST /bulk/jobs/{action}`: a dry run's count and ids first, then, confirmed, each job's
//! outcome, every change recorded in its audit trail with the reason given. The create page
//! (`/ui/jobs/new`) turns a form and a JSON editor into a job definition for the same use case
//! as `POST /jobs/{jobId}`, showing each of the use case's errors at the control its field came
//! from.
//!
//! A job's backfill page (`/ui/jobs/{jobId}/backfill`) and edit page (`/ui/jobs/{jobId}/edit`)
//! show what they would do before they do it: a dry run of [`App::backfill_by`] lists the times
//! a range would run, and [`App::preview_update`] the next fire times before and after a change
//! and the runs waiting to start that it affects; a second button posts exactly what was
//! previewed. The previews store nothing, so a read token's session may ask them (as the API lets
//! it ask dry runs) while Run and Save are refused it.
//!
//! The dashboard (`/ui/dashboard`) and a job page's "Statistics" section show the figures of
//! [`App::fleet_stats`] and [`App::job_stats`] (the same use cases as `GET /stats` and
//! `GET /jobs/{jobId}/stats`) over the window in `?window=`, as charts drawn on the server by the
//! `chart` module: inline SVG, pure functions of the figures, each bar's numbers in `data-*`
//! attributes and a `<title>`, each chart an image with a summary in words for screen readers.
//!
//! A job's "Why didn't it run?" page (`/ui/jobs/{jobId}/occurrences`) shows [`App::occurrences`]
//! (the use case of `GET /jobs/{jobId}/occurrences`) over a range picked in the job's zone, each
//! nominal time linked to its execution or to the history entry that explains it; its history
//! page (`/ui/jobs/{jobId}/history`) lists [`App::audit_entries`] with actors, reasons and diffs.
//!
//! Access (docs/deploy.md, "Operator console"): with no token configured the console is open, which
//! `serve` allows on loopback only; with a token, a login page exchanges it for a session cookie
//! (`HttpOnly`, `SameSite=Strict`, expiring). Either way every form that changes something carries
//! a CSRF token bound to the session. A logout is stored ([`App::sign_out_session`]),
//! so it holds across restarts and, on AWS, across the API function's execution environments:
//! there the API function mounts the console beside the API when the stack turns it on, with
//! `Secure` cookies and the tokens of the stack's secret, or, with `AuthMode=JWT`, a sign-in at
//! the stack's OpenID Connect issuer ([`sign_in`]; docs/deploy.md).

mod auth;
mod backfill;
mod bulk;
mod calendars_page;
mod chart;
mod create;
mod edit;
pub mod execution_page;
pub mod executions_page;
mod filter;
mod form;
mod guided;
pub mod job_page;
pub mod jobs_page;
mod ledger;
pub mod ledger_page;
mod pages;
mod session;
pub mod sign_in;
mod simulate;
pub mod stats;
pub mod upcoming;
mod view;

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use sundial_ports::store::Store;
use sundial_service::app::ApiAuth;
use sundial_service::{App, AppError};

/// How people sign in to the console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsoleAuth {
    /// No sign-in: for `serve` on a loopback address with no `SUNDIAL_API_TOKEN`; the actor of
    /// every change is `anonymous`.
    Open,
    /// The login page asks for one of the API's tokens and sets a session cookie naming it: the
    /// session's changes are recorded as the token's name, and a token of scope read sees every
    /// page while every form is refused (403).
    Tokens(ApiAuth),
    /// The login page sends people to an identity provider (OpenID Connect on AWS with
    /// `AuthMode=JWT`); the session's actor is who signed in there and its scope what their
    /// claims grant, as for a token.
    SignIn(sign_in::Provider),
}

impl ConsoleAuth {
    /// Sign-in with the one token `secret`, named `default` with scope write (`SUNDIAL_API_TOKEN`).
    pub fn token(secret: impl Into<String>) -> Self {
        ConsoleAuth::Tokens(ApiAuth::from(Some(secret.into())))
    }
}

/// The console's settings.
#[derive(Clone, Debug)]
pub struct ConsoleConfig {
    /// How people sign in.
    pub auth: ConsoleAuth,
    /// How long a session cookie stays valid after login.
    pub session_lifetime: Duration,
    /// Whether the session cookie is `Secure` (sent over HTTPS only): on AWS, where API Gateway
    /// serves HTTPS only; not on `serve`, which speaks plain HTTP.
    pub secure_cookie: bool,
}

impl ConsoleConfig {
    /// The default session lifetime: a working day.
    pub const DEFAULT_SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);
}

/// What every handler reads: the use cases (and through them the store, which keeps the
/// sessions signed out before they expired) and the settings.
struct Console<S> {
    app: Arc<App<S>>,
    config: ConsoleConfig,
}

type ConsoleState<S> = axum::extract::State<Arc<Console<S>>>;

/// The console's routes: `/` and `/ui/…`. It has no fallback, so it merges with the API router
/// (whose fallback answers the API's 404 envelope).
pub fn router<S: Store>(app: Arc<App<S>>, config: ConsoleConfig) -> Router {
    // The create page's live preview: the API's own `POST /specs/preview` handler, here behind
    // the console's session (in token mode the page has a session cookie, never the API token).
    let preview = sundial_api::spec_preview_route(Arc::clone(&app));
    let state = Arc::new(Console { app, config });
    Router::new()
        .route("/", get(pages::jobs::<S>))
        .route("/ui/jobs", get(pages::jobs::<S>))
        .route(
            "/ui/jobs/new",
            get(create::new_job).post(create::create_job::<S>),
        )
        .route("/ui/specs/preview", preview)
        .route("/ui/upcoming", get(upcoming::upcoming::<S>))
        .route("/ui/dashboard", get(stats::dashboard::<S>))
        .route("/ui/calendars", get(calendars_page::calendars::<S>))
        .route("/ui/calendars/{name}", get(calendars_page::calendar::<S>))
        .route("/ui/jobs/{job_id}", get(pages::job::<S>))
        .route(
            "/ui/jobs/{job_id}/occurrences",
            get(ledger_page::occurrences::<S>),
        )
        .route("/ui/jobs/{job_id}/history", get(ledger::history::<S>))
        .route("/ui/jobs/{job_id}/pause", post(pages::pause::<S>))
        .route("/ui/jobs/{job_id}/unpause", post(pages::unpause::<S>))
        .route("/ui/jobs/{job_id}/trigger", post(pages::trigger::<S>))
        .route("/ui/jobs/{job_id}/delete", post(pages::delete::<S>))
        .route("/ui/bulk/jobs", post(bulk::bulk_jobs::<S>))
        .route("/ui/bulk/jobs/preview", post(bulk::preview::<S>))
        .route(
            "/ui/jobs/{job_id}/backfill",
            get(backfill::page::<S>).post(backfill::run::<S>),
        )
        .route(
            "/ui/jobs/{job_id}/backfill/preview",
            post(backfill::preview::<S>),
        )
        .route(
            "/ui/jobs/{job_id}/edit",
            get(edit::page::<S>).post(edit::save::<S>),
        )
        .route("/ui/jobs/{job_id}/edit/preview", post(edit::preview::<S>))
        .route("/ui/executions", get(pages::executions::<S>))
        .route("/ui/executions/{execution_id}", get(pages::execution::<S>))
        .route(
            "/ui/executions/{execution_id}/cancel",
            post(pages::cancel::<S>),
        )
        .route(
            "/ui/executions/{execution_id}/terminate",
            post(pages::terminate::<S>),
        )
        .route(
            "/ui/login",
            get(auth::login_page::<S>).post(auth::login::<S>),
        )
        .route("/ui/login/start", get(auth::sign_in_start::<S>))
        .route("/ui/login/callback", get(auth::sign_in_callback::<S>))
        .route("/ui/logout", post(auth::logout::<S>))
        .route("/ui/assets/console.css", get(stylesheet))
        .route("/ui/assets/console.js", get(script))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::require_session::<S>,
        ))
        .with_state(state)
}

async fn stylesheet() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("assets/console.css"),
    )
}

async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/console.js"),
    )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// A page that could not be shown: the status and what to tell the reader.
#[derive(Debug)]
struct PageError {
    status: StatusCode,
    message: String,
}

impl PageError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        PageError {
            status,
            message: message.into(),
        }
    }
}

impl From<AppError> for PageError {
    fn from(e: AppError) -> Self {
        let status = match &e {
            AppError::Invalid(_) => StatusCode::BAD_REQUEST,
            AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Conflict(_) => StatusCode::CONFLICT,
            AppError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            AppError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Corrupt { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        };
        PageError::new(status, e.to_string())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let title = match self.status.canonical_reason() {
            Some(reason) => format!("{} {reason}", self.status.as_u16()),
            None => self.status.as_u16().to_string(),
        };
        let body = view::layout(
            &title,
            None,
            maud::html! {
                h1 { (title) }
                p.error role="alert" { (self.message) }
                p { a href="/" { "Back to the jobs" } }
            },
        );
        (self.status, body).into_response()
    }
}
