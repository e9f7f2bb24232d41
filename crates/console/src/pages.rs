//! The pages and their forms. Each handler calls the [`App`](sundial_service::App) use case the
//! API route of the same action calls, and renders or redirects; no rule lives here.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::Render;
use serde::Deserialize;
use serde_json::{json, Value};
use sundial_core::source::RunSource;
use sundial_core::trigger::TriggerOptions;
use sundial_ports::store::{JobOrder, Store};
use sundial_service::app::{parse_execution_id, parse_job_id, pause_end};
use sundial_service::AppError;

use crate::execution_page::ExecutionPage;
use crate::filter::{field, filter_of};
use crate::job_page::JobPage;
use crate::jobs_page::JobsPage;
use crate::session::Session;
use crate::stats::WindowQuery;
use crate::view::{job_url, layout, seg, JobNotice};
use crate::{ConsoleState, PageError};

type PageResult = Result<Response, PageError>;

pub(crate) fn non_empty(value: &Option<String>) -> Option<String> {
    value.as_ref().filter(|v| !v.trim().is_empty()).cloned()
}

/// `/` and `/ui/jobs`: the jobs list ([`JobsPage`]).
pub(crate) async fn jobs<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Query(query): Query<Vec<(String, String)>>,
) -> PageResult {
    let filter = filter_of(&query)?;
    let order = field(&query, "sort")
        .as_deref()
        .and_then(JobOrder::parse)
        .unwrap_or_default();
    let cursor = field(&query, "cursor");
    let page = JobsPage::load(&console.app, filter, order, cursor, &session.csrf).await?;
    Ok(layout("Jobs", Some(&session), page.render()).into_response())
}

/// `/ui/jobs/{jobId}`: the definition, coming fires, executions, counters, children and actions
/// ([`JobPage`]).
pub(crate) async fn job<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Query(window): Query<WindowQuery>,
    Query(notice): Query<JobNotice>,
    Query(runs): Query<crate::job_page::RunsQuery>,
) -> PageResult {
    let job_id = parse_job_id(&job_id)?;
    let page = JobPage::load_runs(&console.app, &job_id, window.window()?, runs).await?;
    let page = page.for_session(&session.csrf, notice.render());
    Ok(layout(job_id.as_str(), Some(&session), page.render()).into_response())
}

/// `/ui/executions`: runs of every job, filtered and paged ([`ExecutionsPage`]).
pub(crate) async fn executions<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Query(query): Query<Vec<(String, String)>>,
) -> PageResult {
    let page = crate::executions_page::ExecutionsPage::load(&console.app, &query).await?;
    Ok(layout("Executions", Some(&session), page.render()).into_response())
}

/// `/ui/executions/{executionId}`: the event log, attempts, retries, progress; cancel and
/// terminate ([`ExecutionPage`]). It reloads itself every 2 s while the run is not finished (no
/// script needed).
pub(crate) async fn execution<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(execution_id): Path<String>,
) -> PageResult {
    let page = ExecutionPage::load(&console.app, &parse_execution_id(&execution_id)?).await?;
    let page = page.for_session(&session.csrf);
    Ok(layout(&page.title(), Some(&session), page.render()).into_response())
}

/// The notes forms.
#[derive(Deserialize)]
pub(crate) struct NotesForm {
    csrf: String,
    #[serde(default)]
    notes: String,
}

fn job_page(job_id: &str) -> Redirect {
    Redirect::to(&job_url(job_id))
}

/// The pause form: notes and, optionally, when the pause ends by itself.
#[derive(Deserialize)]
pub(crate) struct PauseForm {
    csrf: String,
    #[serde(default)]
    notes: String,
    #[serde(default)]
    until: String,
}

/// `POST /ui/jobs/{jobId}/pause`.
pub(crate) async fn pause<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<PauseForm>,
) -> PageResult {
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    let notes = Some(form.notes.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "paused".to_string());
    let until = match form.until.trim() {
        "" => None,
        until => Some(pause_end(until)?),
    };
    console
        .app
        .pause_by(&session.change(), &id, Some(notes), until)
        .await?;
    Ok(job_page(&job_id).into_response())
}

/// `POST /ui/jobs/{jobId}/unpause`.
pub(crate) async fn unpause<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<NotesForm>,
) -> PageResult {
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    let notes = Some(form.notes.trim().to_string()).filter(|n| !n.is_empty());
    console
        .app
        .set_active_by(&session.change(), &id, true, notes)
        .await?;
    Ok(job_page(&job_id).into_response())
}

/// The trigger form: the API's trigger, field for field (`arguments` the body, `delay`,
/// `scheduledTime` and `overlap` its query parameters, `idempotencyKey` its `Idempotency-Key`).
#[derive(Deserialize)]
pub(crate) struct TriggerForm {
    csrf: String,
    #[serde(default)]
    arguments: String,
    #[serde(default)]
    delay: String,
    #[serde(default, rename = "scheduledTime")]
    scheduled_time: String,
    #[serde(default)]
    overlap: String,
    #[serde(default, rename = "idempotencyKey")]
    idempotency_key: String,
}

/// A form field as the API would receive it: `None` when left blank.
fn given(text: &str) -> Option<&str> {
    Some(text.trim()).filter(|t| !t.is_empty())
}

/// `POST /ui/jobs/{jobId}/trigger`: runs the job now and shows the new execution.
pub(crate) async fn trigger<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<TriggerForm>,
) -> PageResult {
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    let text = form.arguments.trim();
    let arguments: Value = if text.is_empty() {
        json!({})
    } else {
        serde_json::from_str(text).map_err(|e| {
            PageError::new(
                axum::http::StatusCode::BAD_REQUEST,
                format!("arguments: invalid JSON: {e}"),
            )
        })?
    };
    let options = TriggerOptions::parse(
        given(&form.scheduled_time),
        given(&form.overlap),
        given(&form.delay),
    )
    .map_err(AppError::from)?;
    let execution = console
        .app
        .trigger_from(
            RunSource::ConsoleTrigger,
            &session.change(),
            &id,
            arguments,
            given(&form.idempotency_key),
            options,
        )
        .await?;
    Ok(Redirect::to(&format!("/ui/executions/{}", seg(&execution.execution_id))).into_response())
}

/// The delete form: the job id typed again.
#[derive(Deserialize)]
pub(crate) struct DeleteForm {
    csrf: String,
    #[serde(default)]
    confirm: String,
}

/// `POST /ui/jobs/{jobId}/delete`.
pub(crate) async fn delete<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<DeleteForm>,
) -> PageResult {
    session.check_csrf(&form.csrf)?;
    if form.confirm.trim() != job_id {
        return Err(PageError::new(
            axum::http::StatusCode::BAD_REQUEST,
            format!("confirm: type the job id {job_id:?} to delete the job"),
        ));
    }
    console
        .app
        .delete_job_by(&session.change(), &parse_job_id(&job_id)?)
        .await?;
    Ok(Redirect::to("/").into_response())
}

/// The cancel and terminate forms.
#[derive(Deserialize)]
pub(crate) struct ReasonForm {
    csrf: String,
    #[serde(default)]
    reason: String,
}

fn reason(form: &ReasonForm, default: &str) -> String {
    let reason = form.reason.trim();
    if reason.is_empty() {
        default.to_string()
    } else {
        reason.chars().take(4096).collect()
    }
}

/// `POST /ui/executions/{executionId}/cancel`.
pub(crate) async fn cancel<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(execution_id): Path<String>,
    Form(form): Form<ReasonForm>,
) -> PageResult {
    session.check_csrf(&form.csrf)?;
    let reason = reason(&form, "cancelled by a user");
    console
        .app
        .cancel_execution(&parse_execution_id(&execution_id)?, &reason)
        .await?;
    Ok(Redirect::to(&format!("/ui/executions/{}", seg(&execution_id))).into_response())
}

/// `POST /ui/executions/{executionId}/terminate`.
pub(crate) async fn terminate<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(execution_id): Path<String>,
    Form(form): Form<ReasonForm>,
) -> PageResult {
    session.check_csrf(&form.csrf)?;
    let reason = reason(&form, "terminated by a user");
    console
        .app
        .terminate_execution(&parse_execution_id(&execution_id)?, &reason)
        .await?;
    Ok(Redirect::to(&format!("/ui/executions/{}", seg(&execution_id))).into_response())
}
