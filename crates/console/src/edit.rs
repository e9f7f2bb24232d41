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
use maud::{html, Markup, Render};
use serde::Deserialize;
use serde_json::Value;
use sundial_core::job::JobDocument;
use sundial_ports::store::Store;
use sundial_service::app::Scope;
use sundial_service::app::{parse_job_id, UpdatePreview};
use sundial_service::AppError;

use crate::form::{described_by, error_summary, field, invalid, Problem, Spot};
use crate::guided::{self, GuidedFields};
use crate::session::Session;
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
        Ok(body) => match JobDocument::read(&id, &body) {
            Ok(document) => console.app.preview_update(&document).await,
            Err(e) => Err(AppError::Invalid(e)),
        }
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
        Ok(body) => {
            let saved = match JobDocument::read(&id, &body) {
                Ok(document) => {
                    console
                        .app
                        .update_job_if_by(
                            &session.change(),
                            &document,
                            Some(form.previewed.as_str()).filter(|tag| !tag.is_empty()),
                        )
                        .await
                }
                Err(e) => Err(AppError::Invalid(e)),
            };
            match saved {
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
            }
        }
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

/// The page: the definition's form with `form`'s values and `problems`, the dry run's `preview`
/// and the `simulation` when they were asked.
fn render(
    session: &Session,
    job_id: &str,
    form: &EditForm,
    problems: &[Problem],
    preview: Option<&UpdatePreview>,
    simulation: Option<&crate::simulate::Simulated>,
) -> axum::response::Html<String> {
    let page = EditPage::new(
        job_id,
        form,
        problems,
        preview,
        &session.csrf,
        session.scope,
    );
    layout(
        &format!("Edit {job_id}"),
        Some(session),
        EditView {
            page: &page,
            simulation,
        }
        .render(),
    )
}

/// What the edit page shows, read from the form and the dry run: no HTML, so tests read it.
pub(crate) struct EditPage<'a> {
    /// The job edited.
    job_id: &'a str,
    /// The form as posted (or the job as it is).
    form: &'a EditForm,
    /// What keeps the change from being previewed or saved.
    problems: &'a [Problem],
    /// The session's form token.
    csrf: &'a str,
    /// The dry run's answer, when one was asked.
    preview: Option<EditPreview<'a>>,
}

/// A dry run of the change as the page shows it.
pub(crate) struct EditPreview<'a> {
    /// The next fire times now and with the change, side by side.
    fires: Vec<FireChange<'a>>,
    /// The runs not yet started the change affects, and how.
    affected: &'a [sundial_core::change::AffectedRun],
    /// What the change would warn about.
    warnings: &'a [String],
    /// The definition previewed, which the save button posts back.
    definition_tag: &'a str,
    /// Whether the session may save it (scope write) or only preview it.
    can_save: bool,
}

/// The `n`th next fire time before and after the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FireChange<'a> {
    /// 1, 2, 3…
    n: usize,
    /// Now, if there is an `n`th.
    before: Option<&'a str>,
    /// With the change, if there is an `n`th.
    after: Option<&'a str>,
    /// Whether the two differ.
    changed: bool,
}

impl<'a> EditPage<'a> {
    /// The page of `job_id`'s edit with `form`, its `problems` and the dry run's `preview`, for a
    /// session of `scope` holding the token `csrf`.
    pub(crate) fn new(
        job_id: &'a str,
        form: &'a EditForm,
        problems: &'a [Problem],
        preview: Option<&'a UpdatePreview>,
        csrf: &'a str,
        scope: Scope,
    ) -> Self {
        let preview = preview.map(|preview| {
            let rows = preview.before.len().max(preview.after.len());
            EditPreview {
                fires: (0..rows)
                    .map(|i| {
                        let before = preview.before.get(i).map(String::as_str);
                        let after = preview.after.get(i).map(String::as_str);
                        FireChange {
                            n: i + 1,
                            before,
                            after,
                            changed: before != after,
                        }
                    })
                    .collect(),
                affected: &preview.affected,
                warnings: &preview.warnings,
                definition_tag: &preview.definition_tag,
                can_save: scope == Scope::Write,
            }
        });
        EditPage {
            job_id,
            form,
            problems,
            csrf,
            preview,
        }
    }
}

/// The whole page: the form, the simulation panel in it, and the preview.
struct EditView<'p, 'a> {
    page: &'p EditPage<'a>,
    simulation: Option<&'p crate::simulate::Simulated>,
}

impl Render for EditView<'_, '_> {
    fn render(&self) -> Markup {
        let (page, simulation) = (self.page, self.simulation);
        let (job_id, form, problems) = (page.job_id, page.form, page.problems);
        let base = job_url(job_id);
        let error = Problem::message_at(problems, DEFINITION);
        let hint = "The whole job, as GET /jobs/{jobId} shows it (docs/api.md). A secret header value shown as \"***\" keeps its stored value.";
        html! {
            p.crumbs { a href="/" { "Jobs" } " / " a href=(base) { (job_id) } " / Edit" }
            h1 { "Edit " (job_id) }
            p { "Preview the change first: nothing is saved until you press Save under the preview." }
            (error_summary("The change was not previewed or saved", problems))
            form.previewed method="post" action={ (base) "/edit/preview" } novalidate {
                input type="hidden" name="csrf" value=(page.csrf);
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
            @if let Some(preview) = &page.preview { (ChangePreview { page, preview }) }
        }
    }
}

/// The dry run's fire times and affected runs, and the button that saves exactly them.
struct ChangePreview<'p, 'a> {
    page: &'p EditPage<'a>,
    preview: &'p EditPreview<'a>,
}

impl Render for ChangePreview<'_, '_> {
    fn render(&self) -> Markup {
        let (page, preview) = (self.page, self.preview);
        let base = job_url(page.job_id);
        html! {
            section.preview id="edit-preview" aria-labelledby="preview-title" {
                h2 id="preview-title" { "What the change would do" }
                h3 { "Next fire times" }
                @if preview.fires.is_empty() {
                    p.muted { "No fire times before or after: the job is paused or only triggered." }
                } @else {
                    div.table-wrap { table.fire-changes {
                        thead { tr { th scope="col" { "#" } th scope="col" { "Now" } th scope="col" { "With the change" } th scope="col" { "Changed" } } }
                        tbody {
                            @for fire in &preview.fires {
                                tr.changed[fire.changed] {
                                    td { (fire.n) }
                                    td.before { @if let Some(t) = fire.before { (fire_time(t)) } @else { "—" } }
                                    td.after { @if let Some(t) = fire.after { (fire_time(t)) } @else { "—" } }
                                    td { @if fire.changed { strong { "changed" } } @else { span.muted { "same" } } }
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
                            @for affected in preview.affected {
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
                    ul.warnings { @for warning in preview.warnings { li { (warning) } } }
                }
                @if preview.can_save {
                    form method="post" action={ (base) "/edit" } {
                        input type="hidden" name="csrf" value=(page.csrf);
                        input type="hidden" name="definition" value=(page.form.definition);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preview(before: &[&str], after: &[&str]) -> UpdatePreview {
        let texts = |v: &[&str]| v.iter().map(|t| (*t).to_owned()).collect();
        UpdatePreview {
            before: texts(before),
            after: texts(after),
            affected: Vec::new(),
            warnings: vec!["a warning".into()],
            definition_tag: "tag".into(),
        }
    }

    #[test]
    fn the_preview_pairs_the_fire_times_and_marks_the_changed_ones() {
        let form = EditForm::default();
        let dry = preview(
            &["2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z"],
            &[
                "2026-01-05T09:00:00Z",
                "2026-01-06T10:00:00Z",
                "2026-01-07T10:00:00Z",
            ],
        );
        let page = EditPage::new("report", &form, &[], Some(&dry), "t", Scope::Write);
        let preview = page.preview.as_ref().expect("a preview");
        let rows: Vec<(usize, bool)> = preview.fires.iter().map(|f| (f.n, f.changed)).collect();
        assert_eq!(rows, [(1, false), (2, true), (3, true)]);
        assert_eq!(preview.fires[2].before, None);
        assert_eq!(preview.fires[2].after, Some("2026-01-07T10:00:00Z"));
        assert_eq!(preview.definition_tag, "tag");
        assert!(preview.can_save);
    }

    #[test]
    fn a_read_session_previews_but_may_not_save() {
        let form = EditForm::default();
        let dry = preview(&[], &[]);
        let page = EditPage::new("report", &form, &[], Some(&dry), "t", Scope::Read);
        let preview = page.preview.as_ref().expect("a preview");
        assert!(preview.fires.is_empty());
        assert!(!preview.can_save);
        let html = ChangePreview {
            page: &page,
            preview,
        }
        .render()
        .into_string();
        assert!(
            html.contains("may preview a change, not save one"),
            "{html}"
        );
        assert!(!html.contains("save-edit"), "{html}");
    }
}
