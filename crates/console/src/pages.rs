//! The pages and their forms. Each handler calls the [`App`](sundial_service::App) use case the
//! API route of the same action calls, and renders or redirects; no rule lives here.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use chrono::{DateTime, Utc};
use maud::{html, Markup, Render};
use serde::Deserialize;
use serde_json::{json, Value};
use sundial_core::execution::Execution;
use sundial_core::job::Job;
use sundial_core::source::RunSource;
use sundial_core::trigger::TriggerOptions;
use sundial_ports::store::{JobOrder, PageRequest, Store};
use sundial_service::app::{parse_job_id, upcoming_fires, DaySuccess};
use sundial_service::AppError;

use crate::auth::Session;
use crate::bulk::bulk_form;
use crate::execution_page::ExecutionPage;
use crate::filter::{field, filter_of, filter_pairs};
use crate::job_page::JobPage;
use crate::stats::WindowQuery;
use crate::view::{
    capitalized, chip, filter_fields, job_url, label_fields, layout, query_string, relative,
    schedule_words, seg, when, zone_of, JobNotice,
};
use crate::{ConsoleState, PageError};

type PageResult = Result<Response, PageError>;

/// Jobs per page of the list.
const JOBS_PER_PAGE: usize = 50;

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

pub(crate) fn non_empty(value: &Option<String>) -> Option<String> {
    value.as_ref().filter(|v| !v.trim().is_empty()).cloned()
}

/// The column headers that sort the list, with the order each one sorts by and its direction
/// for `aria-sort`.
const SORTABLE: [(&str, JobOrder, &str); 3] = [
    ("Job", JobOrder::Id, "ascending"),
    ("Next fire", JobOrder::NextFire, "ascending"),
    ("Last run", JobOrder::LastRun, "descending"),
];

/// `/` and `/ui/jobs`: the filterable, sortable, paginated jobs list, each row with its runs'
/// success over the last 24 hours and a box that selects it for the bulk form under the list.
/// The order is the store's ([`JobOrder`]), so every page of every order is one keyset query;
/// an unknown `sort` reads as the id order. The filters are [`filter_of`]'s (`label` repeats).
pub(crate) async fn jobs<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Query(query): Query<Vec<(String, String)>>,
) -> PageResult {
    let app = &console.app;
    let filter = filter_of(&query)?;
    let order = field(&query, "sort")
        .as_deref()
        .and_then(JobOrder::parse)
        .unwrap_or_default();
    let cursor = field(&query, "cursor");
    let page = app
        .list_jobs(
            &filter,
            order,
            &PageRequest {
                limit: JOBS_PER_PAGE,
                cursor: cursor.clone(),
            },
        )
        .await?;
    let now = app.now();
    let ids: Vec<_> = page.items.iter().map(|j| j.definition.job_id()).collect();
    let success = app.day_success(&ids).await?;
    let mut rows = Vec::with_capacity(page.items.len());
    for (job, success) in page.items.iter().zip(success) {
        let last = app
            .list_executions(job.definition.job_id(), &PageRequest::first(1))
            .await?
            .items
            .into_iter()
            .next();
        rows.push((job, last, success));
    }
    let state = filter.state.clone();
    // The list's URL in `order` from its first page (`None`) or after `cursor`: filters kept.
    let list_url = |order: JobOrder, cursor: Option<&String>| {
        let mut pairs = filter_pairs(&filter);
        if order != JobOrder::Id {
            pairs.push(("sort", order.name().to_string()));
        }
        if let Some(cursor) = cursor {
            pairs.push(("cursor", cursor.clone()));
        }
        format!("/{}", query_string(&pairs))
    };
    let next = page.next_cursor.as_ref().map(|c| list_url(order, Some(c)));
    let content = html! {
        div.heading {
            h1 { "Jobs" }
            a.button href="/ui/jobs/new" { "New job" }
        }
        form.filters method="get" action="/" role="search" aria-label="Filter and sort jobs" {
            div.field {
                label for="f-state" { "State" }
                select id="f-state" name="state" {
                    option value="" selected[state.is_none()] { "Any" }
                    option value="active" selected[state.as_deref() == Some("active")] { "Active" }
                    option value="paused" selected[state.as_deref() == Some("paused")] { "Paused" }
                }
            }
            (filter_fields("f", &filter))
            (label_fields("f", &filter))
            div.field {
                label for="f-sort" { "Sort by" }
                select id="f-sort" name="sort" {
                    @for by in JobOrder::ALL {
                        option value=(by.name()) selected[order == by] { (capitalized(sort_words(by))) }
                    }
                }
            }
            div.actions {
                button type="submit" { "Apply" }
                a href="/" { "Clear" }
            }
        }
        @if rows.is_empty() {
            p.empty { "No jobs match." }
        } @else {
            div.table-wrap {
                table.jobs {
                    caption.visually-hidden { "Jobs, sorted by " (sort_words(order)) }
                    thead { tr {
                        th scope="col" {
                            span.visually-hidden { "Select" }
                            // Without the script it would do nothing: the script shows it.
                            input type="checkbox" id="select-all" aria-label="Select every job on this page" hidden;
                        }
                        (sort_header(SORTABLE[0], order, &list_url))
                        th scope="col" { "State" }
                        th scope="col" { "Schedule" }
                        (sort_header(SORTABLE[1], order, &list_url))
                        (sort_header(SORTABLE[2], order, &list_url))
                        th.success scope="col" { "Success, 24 h" }
                    } }
                    tbody {
                        @for (job, last, success) in &rows {
                            (job_row(job, last.as_ref(), *success, now))
                        }
                    }
                }
            }
            (bulk_form(&session, &filter))
        }
        @if next.is_some() || cursor.is_some() {
            nav.pager aria-label="Pages" {
                @if cursor.is_some() { a href=(list_url(order, None)) { "← First page" } " " }
                @if let Some(next) = next { a href=(next) rel="next" { "Next page →" } }
            }
        }
    };
    Ok(layout("Jobs", Some(&session), content).into_response())
}

fn sort_words(order: JobOrder) -> &'static str {
    match order {
        JobOrder::Id => "job id",
        JobOrder::NextFire => "next fire, soonest first",
        JobOrder::LastRun => "last run, latest first",
    }
}

/// A column header that sorts the list by its column: a link to the first page in that order,
/// marked with `aria-sort` when it is the current one.
fn sort_header(
    (label, by, direction): (&str, JobOrder, &str),
    current: JobOrder,
    list_url: &impl Fn(JobOrder, Option<&String>) -> String,
) -> Markup {
    let sorted = by == current;
    html! {
        th scope="col" aria-sort=[sorted.then_some(direction)] {
            a.sort href=(list_url(by, None)) aria-current=[sorted.then_some("true")] {
                (label)
                @if sorted {
                    span aria-hidden="true" { @if direction == "ascending" { " ▲" } @else { " ▼" } }
                }
                span.visually-hidden { ", sort by " (sort_words(by)) }
            }
        }
    }
}

fn job_row(job: &Job, last: Option<&Execution>, success: DaySuccess, now: DateTime<Utc>) -> Markup {
    let id = job.definition.job_id().as_str();
    let zone = zone_of(job);
    let next = upcoming_fires(job, now, 1)
        .first()
        .and_then(|t| parse_time(t));
    let active = job.definition.active();
    html! {
        tr data-job=(id) {
            td {
                input type="checkbox" name="jobIds" value=(id) form="bulk" aria-label={ "Select " (id) };
            }
            td {
                a href=(job_url(id)) { (id) }
                @let name = job.definition.job_name();
                @if !name.is_empty() { br; span.muted { (name) } }
            }
            td {
                @if active { (chip("active")) } @else {
                    (chip("paused"))
                    @if let Some(notes) = &job.state.paused_notes {
                        br; span.notes { (notes) }
                    }
                }
            }
            td.schedule { (schedule_words(job)) }
            td {
                @match next {
                    Some(t) => (when(t, zone, now)),
                    None => span.muted { "—" },
                }
            }
            td {
                @match last {
                    Some(e) => {
                        a href={ "/ui/executions/" (seg(&e.execution_id)) } { (chip(&e.state().to_string())) }
                        " " span.muted { (relative(e.finished_at().or(e.started_at()).unwrap_or(e.scheduled_time), now)) }
                    }
                    None => span.muted { "never" },
                }
            }
            td.success data-ended=(success.ended) data-succeeded=(success.succeeded) {
                @match success.rate() {
                    Some(rate) => { (percent_down(rate)) " " span.muted { "of " (success.ended) } }
                    None => span.muted { "—" },
                }
            }
        }
    }
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
    let page = ExecutionPage::load(&console.app, &execution_id).await?;
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

/// `POST /ui/jobs/{jobId}/pause`.
pub(crate) async fn pause<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<NotesForm>,
) -> PageResult {
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    let notes = Some(form.notes.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "paused".to_string());
    console
        .app
        .set_active_by(&session.change(), &id, false, Some(notes))
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
    console.app.cancel_execution(&execution_id, &reason).await?;
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
        .terminate_execution(&execution_id, &reason)
        .await?;
    Ok(Redirect::to(&format!("/ui/executions/{}", seg(&execution_id))).into_response())
}

/// A success rate in whole percent, rounded down: "100 %" only when every run succeeded.
fn percent_down(rate: f64) -> String {
    format!("{} %", (rate * 100.0).floor())
}
