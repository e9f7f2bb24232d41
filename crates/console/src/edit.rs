//! A job's edit page (`/ui/jobs/{jobId}/edit`): the job's definition as JSON, a preview of what
//! the change would do, and only then a save.
//!
//! The definition is the API's own (`GET /jobs/{jobId}`, secret header values as `"***"`, which
//! an update keeps), without the fields that are the job's state rather than its definition.
//! "Preview changes" (`/ui/jobs/{jobId}/edit/preview`, a dry run a read token may ask, as it may
//! ask `POST /jobs/{jobId}/update?dryRun=true`) shows what
//! [`App::preview_update`](sundial_service::App::preview_update) answers: the next fire times
//! before and after side by side, the runs not yet started the change affects and how, and the
//! warnings. The "Save" button under it posts exactly the previewed text with `confirm`, for
//! [`App::update_job_by`](sundial_service::App::update_job_by) as the session's reader; a post
//! without `confirm` only previews. Errors are the use case's, naming the field.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use chrono::DateTime;
use maud::html;
use serde::Deserialize;
use serde_json::Value;
use sundial_ports::store::Store;
use sundial_service::app::Scope;
use sundial_service::app::{parse_job_id, UpdatePreview};
use sundial_service::AppError;

use crate::auth::Session;
use crate::form::{described_by, error_summary, field, invalid, Problem, Spot};
use crate::guided::{self, GuidedFields};
use crate::view::{chip, job_url, layout, seg};
use crate::{ConsoleState, PageError};

const DEFINITION: Spot = Spot {
    id: "e-definition",
    label: "Definition (JSON)",
};

/// The form as posted.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EditForm {
    csrf: String,
    /// The whole definition, as JSON.
    definition: String,
    /// `yes` from the Save button under a preview; anything else only previews.
    confirm: String,
    /// The definition the preview was made against (`UpdatePreview::definition_tag`), which
    /// Save posts so that a change made since is not overwritten.
    previewed: String,
    /// The guided controls as posted.
    #[serde(flatten)]
    guided: GuidedFields,
    /// The guided controls as the page showed them (JSON of [`GuidedFields`]): only the controls
    /// changed since are applied to the definition.
    #[serde(rename = "guidedShown")]
    guided_shown: String,
    /// `simulate` from the "Simulate" button; anything else previews.
    action: String,
    /// The "Simulate" panel's controls.
    #[serde(flatten)]
    simulation: crate::simulate::SimulateFields,
}

impl EditForm {
    /// The form showing `definition` (pretty JSON) with the guided controls filled from it.
    fn showing(definition: &Value) -> EditForm {
        let guided = GuidedFields::of_definition(definition);
        EditForm {
            definition: serde_json::to_string_pretty(definition).unwrap_or_default(),
            guided_shown: serde_json::to_string(&guided).unwrap_or_default(),
            guided,
            ..EditForm::default()
        }
    }
}

/// The posted definition as JSON with the guided controls the person changed applied to it, or
/// the problem with it.
fn body(form: &EditForm) -> Result<Value, Problem> {
    let mut definition: Value = serde_json::from_str(&form.definition)
        .map_err(|e| Problem::at(DEFINITION, format!("invalid JSON: {e}")))?;
    // Absent (the Save form posts the previewed text alone): nothing to apply.
    if let Ok(shown) = serde_json::from_str::<GuidedFields>(&form.guided_shown) {
        if let Value::Object(map) = &mut definition {
            form.guided.apply_changes(&shown, map);
        }
    }
    Ok(definition)
}

/// The use case's refusal of the definition as a problem at the editor; other errors are the
/// error page's.
fn refusal(error: AppError) -> Result<Problem, PageError> {
    match error {
        AppError::Invalid(e) => Ok(Problem::at(DEFINITION, e.to_string())),
        AppError::Conflict(message) => Ok(Problem::at(DEFINITION, message)),
        other => Err(other.into()),
    }
}

/// `GET /ui/jobs/{jobId}/edit`.
pub(crate) async fn page<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
) -> Result<Response, PageError> {
    let job = console.app.get_job(&parse_job_id(&job_id)?).await?;
    let form = EditForm::showing(&job.to_editable_json());
    Ok(render(&session, &job_id, &form, &[], None, None).into_response())
}

/// `POST /ui/jobs/{jobId}/edit/preview`: what the change would do; nothing is written.
pub(crate) async fn preview<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<EditForm>,
) -> Result<Response, PageError> {
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    if form.action == "simulate" {
        let page = match body(&form) {
            Ok(mut body) => {
                if let Value::Object(map) = &mut body {
                    map.insert("jobId".into(), Value::String(id.to_string()));
                }
                let shown = crate::simulate::run(&console.app, &body, &form.simulation).await?;
                render(&session, &job_id, &form, &[], None, Some(&shown))
            }
            Err(problem) => render(&session, &job_id, &form, &[problem], None, None),
        };
        return Ok(page.into_response());
    }
    let answer = match body(&form) {
        Ok(body) => console
            .app
            .preview_update(&id, &body)
            .await
            .map(|preview| (preview, body))
            .map_err(refusal),
        Err(problem) => Err(Ok(problem)),
    };
    match answer {
        Ok((preview, body)) => {
            // The previewed definition, guided changes in it, is what Save posts.
            let shown = EditForm {
                csrf: form.csrf,
                ..EditForm::showing(&body)
            };
            Ok(render(&session, &job_id, &shown, &[], Some(&preview), None).into_response())
        }
        Err(problem) => {
            let page = render(&session, &job_id, &form, &[problem?], None, None);
            Ok((StatusCode::BAD_REQUEST, page).into_response())
        }
    }
}

/// `POST /ui/jobs/{jobId}/edit`: with `confirm`, replaces the definition and goes back to the
/// job's page; without, only previews.
pub(crate) async fn save<S: Store>(
    console: ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<EditForm>,
) -> Result<Response, PageError> {
    if form.confirm != "yes" {
        return preview(console, Extension(session), Path(job_id), Form(form)).await;
    }
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    let mut status = StatusCode::BAD_REQUEST;
    let problem = match body(&form) {
        Ok(body) => match console
            .app
            .update_job_if_by(
                &session.change(),
                &id,
                &body,
                Some(form.previewed.as_str()).filter(|tag| !tag.is_empty()),
            )
            .await
        {
            Ok(_) => {
                let to = format!("{}?updated=1", job_url(&job_id));
                return Ok(Redirect::to(&to).into_response());
            }
            Err(e) => {
                if matches!(e, AppError::Conflict(_)) {
                    status = StatusCode::CONFLICT;
                }
                refusal(e)?
            }
        },
        Err(problem) => problem,
    };
    let page = render(&session, &job_id, &form, &[problem], None, None);
    Ok((status, page).into_response())
}

/// A time of the preview (RFC 3339 with its schedule's offset), as written there.
fn fire_time(text: &str) -> maud::Markup {
    let shown = DateTime::parse_from_rfc3339(text).map_or_else(
        |_| text.to_string(),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC%:z").to_string(),
    );
    html! { time datetime=(text) { (shown) } }
}

fn render(
    session: &Session,
    job_id: &str,
    form: &EditForm,
    problems: &[Problem],
    preview: Option<&UpdatePreview>,
    simulation: Option<&crate::simulate::Simulated>,
) -> axum::response::Html<String> {
    let base = job_url(job_id);
    let error = Problem::message_at(problems, DEFINITION);
    let hint = "The whole job, as GET /jobs/{jobId} shows it (docs/api.md). A secret header value shown as \"***\" keeps its stored value.";
    let content = html! {
        p.crumbs { a href="/" { "Jobs" } " / " a href=(base) { (job_id) } " / Edit" }
        h1 { "Edit " (job_id) }
        p { "Preview the change first: nothing is saved until you press Save under the preview." }
        (error_summary("The change was not previewed or saved", problems))
        form.previewed method="post" action={ (base) "/edit/preview" } novalidate {
            input type="hidden" name="csrf" value=(session.csrf);
            (field(DEFINITION, Some(hint), error, html! {
                textarea id=(DEFINITION.id) name="definition" rows="24" spellcheck="false"
                    aria-describedby=[described_by(DEFINITION.id, true, error.is_some())]
                    aria-invalid=[invalid(error)] { (form.definition) }
            }))
            input type="hidden" name="guidedShown" value=(form.guided_shown);
            p.hint { "The fields below are the same definition's retries, timeouts, first notification and async polling: change one here or in the JSON. A field changed here replaces the JSON's; one left as shown leaves the JSON as typed; emptied, the field is removed." }
            @for (legend, controls) in [
                ("Retries and timeouts", &guided::CONTROLS[..8]),
                ("Notifications", &guided::CONTROLS[8..10]),
                ("Asynchronous completion", &guided::CONTROLS[10..]),
            ] {
                fieldset.guided {
                    legend { (legend) }
                    @for control in controls {
                        @let id = format!("e-{}", control.name);
                        div.field {
                            label for=(id) { (control.label) }
                            p.hint id={ (id) "-hint" } { (control.hint()) }
                            @if control.is_checkbox() {
                                input id=(id) name=(control.name) type="checkbox" value="on"
                                    checked[!control.text(&form.guided).trim().is_empty()]
                                    aria-describedby={ (id) "-hint" };
                            } @else {
                                input id=(id) name=(control.name) type="text" value=(control.text(&form.guided))
                                    aria-describedby={ (id) "-hint" };
                            }
                        }
                    }
                }
            }
            div.actions {
                button type="submit" name="action" value="preview" { "Preview changes" }
                a href=(base) { "Cancel" }
            }
            (crate::simulate::panel(&form.simulation, simulation))
        }
        @if let Some(preview) = preview {
            section.preview id="edit-preview" aria-labelledby="preview-title" {
                h2 id="preview-title" { "What the change would do" }
                h3 { "Next fire times" }
                @let rows = preview.before.len().max(preview.after.len());
                @if rows == 0 {
                    p.muted { "No fire times before or after: the job is paused or only triggered." }
                } @else {
                    div.table-wrap { table.fire-changes {
                        thead { tr { th scope="col" { "#" } th scope="col" { "Now" } th scope="col" { "With the change" } th scope="col" { "Changed" } } }
                        tbody {
                            @for i in 0..rows {
                                @let (before, after) = (preview.before.get(i), preview.after.get(i));
                                @let changed = before != after;
                                tr.changed[changed] {
                                    td { (i + 1) }
                                    td.before { @if let Some(t) = before { (fire_time(t)) } @else { "—" } }
                                    td.after { @if let Some(t) = after { (fire_time(t)) } @else { "—" } }
                                    td { @if changed { strong { "changed" } } @else { span.muted { "same" } } }
                                }
                            }
                        }
                    } }
                }
                h3 { "Runs not yet started" }
                @if preview.affected.is_empty() {
                    p.muted { "No run waiting to start is affected." }
                } @else {
                    div.table-wrap { table.affected {
                        thead { tr { th scope="col" { "Run" } th scope="col" { "Where" } th scope="col" { "Scheduled" } th scope="col" { "What changes for it" } } }
                        tbody {
                            @for affected in &preview.affected {
                                @let run = &affected.run;
                                tr {
                                    td {
                                        @if run.state.is_some() {
                                            a href={ "/ui/executions/" (seg(&run.execution_id)) } { (run.execution_id) }
                                        } @else { (run.execution_id) }
                                    }
                                    td { (run.place.name()) @if let Some(state) = run.state { " " (chip(&state.to_string())) } }
                                    td { (fire_time(&run.scheduled_time.to_rfc3339())) }
                                    td { ul { @for change in &affected.changes { li { (change) } } } }
                                }
                            }
                        }
                    } }
                }
                @if !preview.warnings.is_empty() {
                    h3 { "Warnings" }
                    ul.warnings { @for warning in &preview.warnings { li { (warning) } } }
                }
                @if session.scope == Scope::Write {
                    form method="post" action={ (base) "/edit" } {
                        input type="hidden" name="csrf" value=(session.csrf);
                        input type="hidden" name="definition" value=(form.definition);
                        input type="hidden" name="confirm" value="yes";
                        input type="hidden" name="previewed" value=(preview.definition_tag);
                        p.hint { "Saves exactly what is previewed here; change the definition above and preview again for anything else. Saving does not run the job." }
                        button type="submit" id="save-edit" { "Save" }
                    }
                } @else {
                    p.muted { "Your token is of scope read: it may preview a change, not save one." }
                }
            }
        }
    };
    layout(&format!("Edit {job_id}"), Some(session), content)
}
