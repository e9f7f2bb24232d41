//! A job's backfill page (`/ui/jobs/{jobId}/backfill`): a range of the job's past (or future)
//! fire times, which of them (mode `all`, `missing`, `failed`), in which order and under which
//! overlap policy, previewed before anything runs.
//!
//! The form only translates, into the body of `POST /jobs/{jobId}/backfill`, for the same use
//! case ([`App::backfill_by`](sundial_service::App::backfill_by)). Its two times are
//! `datetime-local` values read in the job's time zone, as the job's page shows its times; a
//! local time the zone skips (clocks going forward) or repeats (going back) names no one instant,
//! so it is refused at its field rather than guessed. "Preview" posts a dry run
//! (`/ui/jobs/{jobId}/backfill/preview`, which a read token may ask, as it may ask the API's)
//! and lists the times it would run; the "Run backfill" button under that list posts exactly the
//! values previewed, so what runs is what was shown. Errors are the use case's, shown at the
//! field they name (`startTime: …`, `mode: …`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use chrono::{DateTime, LocalResult, TimeZone, Utc};
use chrono_tz::Tz;
use maud::{html, Markup, Render};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sundial_core::backfill::BackfillRequest;
use sundial_core::job::{BackfillMode, Job, JobId, OverlapPolicy, When};
use sundial_ports::store::Store;
use sundial_service::app::Scope;
use sundial_service::app::{parse_job_id, BackfillReport};
use sundial_service::AppError;

use crate::form::{described_by, error_summary, field, invalid, Problem, Spot};
use crate::ledger::{local_input, parse_local};
use crate::session::Session;
use crate::view::zone_of;
use crate::view::{job_url, layout};
use crate::{ConsoleState, PageError};

/// Times a preview lists; the rest are counted.
const SHOWN: usize = 200;

const START: Spot = Spot {
    id: "b-start",
    label: "From",
};
const END: Spot = Spot {
    id: "b-end",
    label: "To",
};
const MODE: Spot = Spot {
    id: "b-mode",
    label: "Which times",
};
const ORDER: Spot = Spot {
    id: "b-order",
    label: "Order",
};
const OVERLAP: Spot = Spot {
    id: "b-overlap",
    label: "Overlap",
};

/// The form as posted: every control's text, as typed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct BackfillForm {
    csrf: String,
    /// `datetime-local`: `2026-01-05T09:00` or with seconds, in the job's zone.
    start: String,
    end: String,
    /// `all`, `missing` or `failed`.
    mode: String,
    /// `oldest` (the default) or `newest`: the request's `reverse`.
    order: String,
    /// An overlap policy's name, or empty for the backfill default.
    overlap: String,
    /// The instants the preview read `start` and `end` as (RFC 3339), which the Run button
    /// posts, so that the run's range is the previewed one even if the job's zone changed.
    #[serde(rename = "startTime")]
    start_time: String,
    #[serde(rename = "endTime")]
    end_time: String,
}

/// The spot of a request field the use case names.
fn spot_of(path: &str) -> Option<Spot> {
    match path {
        "startTime" => Some(START),
        "endTime" => Some(END),
        "mode" => Some(MODE),
        "reverse" => Some(ORDER),
        "overlap" => Some(OVERLAP),
        _ => None,
    }
}

/// The instant a `datetime-local` value names in `zone`, or why it names none: read as the
/// ledger reads its range, except that a wall time the clocks repeat is refused rather than taken
/// as its first instant, since a backfill runs what it names.
fn local_time(text: &str, zone: Tz) -> Result<DateTime<Utc>, String> {
    if text.trim().is_empty() {
        return Err("required: a date and time".into());
    }
    let instant = parse_local(text, zone)?;
    let wall = instant.with_timezone(&zone).naive_local();
    match zone.from_local_datetime(&wall) {
        LocalResult::Ambiguous(first, second) => Err(format!(
            "{} happens twice in {zone}, the clocks going back: first at {} then at {}; pick a time outside the repeated hour",
            wall.format("%Y-%m-%d %H:%M:%S"),
            first.with_timezone(&Utc).format("%H:%M:%S UTC"),
            second.with_timezone(&Utc).format("%H:%M:%S UTC"),
        )),
        _ => Ok(instant),
    }
}

/// The body of `POST /jobs/{jobId}/backfill` the form says (without `dryRun`), or what keeps the
/// form from being one.
fn request(form: &BackfillForm, zone: Tz) -> Result<Value, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut body = Map::new();
    for (spot, key, text, instant) in [
        (START, "startTime", &form.start, &form.start_time),
        (END, "endTime", &form.end, &form.end_time),
    ] {
        if !instant.is_empty() {
            // The previewed instant, as the preview resolved it; the use case checks it.
            body.insert(key.into(), json!(instant));
            continue;
        }
        match local_time(text, zone) {
            Ok(t) => {
                body.insert(key.into(), json!(t.to_rfc3339()));
            }
            Err(message) => problems.push(Problem::at(spot, format!("{key}: {message}"))),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if !form.mode.is_empty() {
        body.insert("mode".into(), json!(form.mode));
    }
    body.insert("reverse".into(), json!(form.order == "newest"));
    if !form.overlap.is_empty() {
        body.insert("overlap".into(), json!(form.overlap));
    }
    Ok(Value::Object(body))
}

/// The use case's refusal as a problem at its field, with the page's status; other errors are
/// the error page's.
fn refusal(error: AppError) -> Result<(StatusCode, Problem), PageError> {
    match error {
        AppError::Invalid(e) => Ok((
            StatusCode::BAD_REQUEST,
            Problem {
                at: spot_of(&e.path),
                message: e.to_string(),
            },
        )),
        AppError::Conflict(message) => Ok((StatusCode::CONFLICT, Problem { at: None, message })),
        other => Err(other.into()),
    }
}

/// `GET /ui/jobs/{jobId}/backfill`: the form, over the last day.
pub(crate) async fn page<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
) -> Result<Response, PageError> {
    let job = console.app.get_job(&parse_job_id(&job_id)?).await?;
    let zone = zone_of(&job);
    let now = console.app.now();
    let form = BackfillForm {
        start: local_input(now - chrono::Duration::days(1), zone),
        end: local_input(now, zone),
        mode: BackfillMode::All.name().into(),
        order: "oldest".into(),
        ..BackfillForm::default()
    };
    Ok(render(&session, &job, &form, &[], None).into_response())
}

/// `POST /ui/jobs/{jobId}/backfill/preview`: the dry run's times, or the problems at their
/// fields; nothing is recorded.
pub(crate) async fn preview<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<BackfillForm>,
) -> Result<Response, PageError> {
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    let job = console.app.get_job(&id).await?;
    let mut body = match request(&form, zone_of(&job)) {
        Ok(body) => body,
        Err(problems) => {
            let page = render(&session, &job, &form, &problems, None);
            return Ok((StatusCode::BAD_REQUEST, page).into_response());
        }
    };
    body["dryRun"] = json!(true);
    match backfill(&console.app, &session, &id, &body).await {
        Ok(report) => Ok(render(&session, &job, &form, &[], Some(&report)).into_response()),
        Err(e) => {
            let (status, problem) = refusal(e)?;
            Ok((status, render(&session, &job, &form, &[problem], None)).into_response())
        }
    }
}

/// `POST /ui/jobs/{jobId}/backfill`: records the backfill and goes back to the job's page,
/// which says how many runs it makes; or the form again with the problems.
pub(crate) async fn run<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Form(form): Form<BackfillForm>,
) -> Result<Response, PageError> {
    session.check_csrf(&form.csrf)?;
    let id = parse_job_id(&job_id)?;
    let job = console.app.get_job(&id).await?;
    let refused = |status: StatusCode, problems: &[Problem]| {
        Ok((status, render(&session, &job, &form, problems, None)).into_response())
    };
    let body = match request(&form, zone_of(&job)) {
        Ok(body) => body,
        Err(problems) => return refused(StatusCode::BAD_REQUEST, &problems),
    };
    match backfill(&console.app, &session, &id, &body).await {
        Ok(report) => {
            let to = format!("{}?backfilled={}", job_url(&job_id), report.count);
            Ok(Redirect::to(&to).into_response())
        }
        Err(e) => {
            let (status, problem) = refusal(e)?;
            refused(status, &[problem])
        }
    }
}

/// Records the backfill `body` of the form (with `dryRun`, only counts it) as the session: read
/// as the API's route reads its body, then the use case.
async fn backfill<S: Store>(
    app: &sundial_service::App<S>,
    session: &Session,
    job_id: &JobId,
    body: &Value,
) -> Result<BackfillReport, AppError> {
    let request = BackfillRequest::parse(body).map_err(AppError::Invalid)?;
    app.backfill_by(&session.change(), job_id, &request).await
}

/// A time of the report (RFC 3339 with the schedule's offset) as the page shows it: in the
/// job's zone, with its abbreviation.
fn shown_time(text: &str, zone: Tz) -> String {
    DateTime::parse_from_rfc3339(text).map_or_else(
        |_| text.to_string(),
        |t| {
            t.with_timezone(&zone)
                .format("%Y-%m-%d %H:%M:%S %Z")
                .to_string()
        },
    )
}

/// The page: the form with `form`'s values, `problems` at their fields and in a summary, and
/// the dry run's report when one was asked.
fn render(
    session: &Session,
    job: &Job,
    form: &BackfillForm,
    problems: &[Problem],
    report: Option<&BackfillReport>,
) -> axum::response::Html<String> {
    let page = BackfillPage::new(job, form, problems, report, &session.csrf, session.scope);
    layout(
        &format!("Backfill {}", page.job_id),
        Some(session),
        page.render(),
    )
}

/// What the backfill page shows, read from the job, the form and the dry run: no HTML, so tests
/// read it directly.
pub(crate) struct BackfillPage<'a> {
    /// The job backfilled.
    job_id: &'a str,
    /// The job's zone: the form's times are read and shown in it.
    zone: Tz,
    /// Whether the job has fire times (a triggered-only job has none to backfill).
    scheduled: bool,
    /// The form as posted (or its defaults).
    form: &'a BackfillForm,
    /// What keeps the form from being a backfill, at its fields.
    problems: &'a [Problem],
    /// The session's form token.
    csrf: &'a str,
    /// The dry run's answer, when one was asked.
    preview: Option<BackfillPreview>,
}

/// A dry run as the page lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BackfillPreview {
    /// How many runs the backfill makes.
    count: usize,
    /// The first [`SHOWN`] times: (RFC 3339, as shown in the job's zone).
    shown: Vec<(String, String)>,
    /// How many more there are past those, and the last of them as shown.
    more: Option<(usize, String)>,
    /// The instants the form's range was read as (`startTime`, `endTime`), which the run button
    /// posts, so that what runs is what was previewed.
    resolved: Vec<(&'static str, String)>,
    /// Whether the session may run it (scope write) or only preview it.
    can_run: bool,
}

impl<'a> BackfillPage<'a> {
    /// The page of `job`'s backfill with `form`, its `problems` and the dry run's `report`, for a
    /// session of `scope` holding the token `csrf`.
    pub(crate) fn new(
        job: &'a Job,
        form: &'a BackfillForm,
        problems: &'a [Problem],
        report: Option<&BackfillReport>,
        csrf: &'a str,
        scope: Scope,
    ) -> Self {
        let zone = zone_of(job);
        let preview = report.map(|report| {
            let resolved = match request(form, zone) {
                Ok(Value::Object(body)) => ["startTime", "endTime"]
                    .into_iter()
                    .filter_map(|key| {
                        body.get(key)
                            .and_then(Value::as_str)
                            .map(|instant| (key, instant.to_owned()))
                    })
                    .collect(),
                _ => Vec::new(),
            };
            BackfillPreview {
                count: report.count,
                shown: report
                    .times
                    .iter()
                    .take(SHOWN)
                    .map(|t| (t.clone(), shown_time(t, zone)))
                    .collect(),
                more: (report.times.len() > SHOWN).then(|| {
                    (
                        report.times.len() - SHOWN,
                        report
                            .times
                            .last()
                            .map(|t| shown_time(t, zone))
                            .unwrap_or_default(),
                    )
                }),
                resolved,
                can_run: scope == Scope::Write,
            }
        });
        BackfillPage {
            job_id: job.definition.job_id().as_str(),
            zone,
            scheduled: matches!(job.definition.when(), When::Scheduled(_)),
            form,
            problems,
            csrf,
            preview,
        }
    }
}

impl Render for BackfillPage<'_> {
    fn render(&self) -> Markup {
        let (id, base) = (self.job_id, job_url(self.job_id));
        html! {
            p.crumbs { a href="/" { "Jobs" } " / " a href=(base) { (id) } " / Backfill" }
            h1 { "Backfill " (id) }
            (error_summary("The backfill was not recorded", self.problems))
            @if !self.scheduled {
                p { "This job runs only when triggered: it has no fire times to backfill." }
            } @else {
                p { "Runs the job's fire times in a range now, exempt from the catch-up window. Times are read and shown in "
                    strong { (self.zone) } ", the job's time zone. Preview first: nothing runs until you press Run backfill." }
                (RangeForm(self))
                @if let Some(preview) = &self.preview { (PreviewSection { page: self, preview }) }
            }
        }
    }
}

/// The form of the range, mode, order and overlap, posted as a dry run.
struct RangeForm<'p, 'a>(&'p BackfillPage<'a>);

impl Render for RangeForm<'_, '_> {
    fn render(&self) -> Markup {
        let page = self.0;
        let (form, zone, base) = (page.form, page.zone, job_url(page.job_id));
        let error = |spot: Spot| Problem::message_at(page.problems, spot);
        let time_input = |spot: Spot, name: &str, value: &str| {
            let hint = format!("A date and time in {zone}, the job's time zone; inclusive.");
            field(
                spot,
                Some(&hint),
                error(spot),
                html! {
                    input id=(spot.id) name=(name) type="datetime-local" step="1" value=(value)
                        aria-describedby=[described_by(spot.id, true, error(spot).is_some())]
                        aria-invalid=[invalid(error(spot))];
                },
            )
        };
        // A group of radio buttons, its error under its legend.
        let radios = |spot: Spot, name: &str, current: &str, choices: &[(&str, &str)]| {
            html! {
                fieldset id=(spot.id) aria-describedby=[error(spot).map(|_| format!("{}-error", spot.id))] {
                    legend { (spot.label) }
                    div.kinds {
                        @for (value, label) in choices {
                            label.kind {
                                input type="radio" name=(name) value=(value) checked[current == *value];
                                " " (label)
                            }
                        }
                    }
                    @if let Some(message) = error(spot) { p.field-error id={ (spot.id) "-error" } { (message) } }
                }
            }
        };
        let modes: Vec<(&str, &str)> = BackfillMode::ALL
            .iter()
            .map(|mode| {
                let words = match mode {
                    BackfillMode::All => "All: every fire time in the range",
                    BackfillMode::Missing => "Missing: only times with no run at all",
                    BackfillMode::Failed => "Failed: only times whose latest run failed for good",
                };
                (mode.name(), words)
            })
            .collect();
        html! {
            form.previewed method="post" action={ (base) "/backfill/preview" } novalidate {
                input type="hidden" name="csrf" value=(page.csrf);
                fieldset {
                    legend { "Range" }
                    (time_input(START, "start", &form.start))
                    (time_input(END, "end", &form.end))
                }
                (radios(MODE, "mode", &form.mode, &modes))
                (radios(ORDER, "order", &form.order, &[("oldest", "Oldest first"), ("newest", "Newest first")]))
                (field(OVERLAP, Some("How the runs overlap one another: by default all at once (AllowAll); BufferAll runs them one after another, in order."), error(OVERLAP), html! {
                    select id=(OVERLAP.id) name="overlap" aria-invalid=[invalid(error(OVERLAP))]
                        aria-describedby=[described_by(OVERLAP.id, true, error(OVERLAP).is_some())] {
                        option value="" selected[form.overlap.is_empty()] { "Default (AllowAll)" }
                        @for policy in OverlapPolicy::ALL {
                            option value=(policy.name()) selected[form.overlap == policy.name()] { (policy.name()) }
                        }
                    }
                }))
                div.actions {
                    button type="submit" { "Preview" }
                    a href=(base) { "Cancel" }
                }
            }
        }
    }
}

/// The dry run's times, and the button that runs exactly them.
struct PreviewSection<'p, 'a> {
    page: &'p BackfillPage<'a>,
    preview: &'p BackfillPreview,
}

impl Render for PreviewSection<'_, '_> {
    fn render(&self) -> Markup {
        let (page, preview) = (self.page, self.preview);
        let (form, base) = (page.form, job_url(page.job_id));
        let hidden =
            |name: &str, value: &str| html! { input type="hidden" name=(name) value=(value); };
        html! {
            section.preview id="backfill-preview" aria-labelledby="preview-title" data-count=(preview.count) {
                h2 id="preview-title" { "What it would run" }
                @if preview.count == 0 {
                    p { "Nothing: no fire time in the range is selected by this mode." }
                } @else {
                    p { strong { (preview.count) } @if preview.count == 1 { " run, at this time:" } @else { " runs, at these times, in this order:" } }
                    ol.fires.backfill-times {
                        @for (instant, shown) in &preview.shown {
                            li { time datetime=(instant) { (shown) } }
                        }
                    }
                    @if let Some((more, last)) = &preview.more {
                        p.muted { "… and " (more) " more, up to " (last) "." }
                    }
                    @if preview.can_run {
                        form method="post" action={ (base) "/backfill" } {
                            input type="hidden" name="csrf" value=(page.csrf);
                            (hidden("start", &form.start))
                            (hidden("end", &form.end))
                            (hidden("mode", &form.mode))
                            (hidden("order", &form.order))
                            (hidden("overlap", &form.overlap))
                            @for (key, instant) in &preview.resolved { (hidden(key, instant)) }
                            p.hint { "Runs the range and mode previewed here: these times, unless runs of them end before you press it. Change the form above and preview again for anything else." }
                            button type="submit" id="run-backfill" { "Run backfill (" (preview.count) ")" }
                        }
                    } @else {
                        p.muted { "Your token is of scope read: it may preview a backfill, not run one." }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_core::job::{JobDefinition, JobId};

    fn job(body: Value) -> Job {
        let mut full = json!({
            "jobName": "report", "creator": "c", "creatorName": "C",
            "request": [{"method": "POST", "url": "http://127.0.0.1:9/run"}],
        });
        for (key, value) in body.as_object().into_iter().flatten() {
            full[key] = value.clone();
        }
        let created = "2026-01-01T00:00:00Z".parse().unwrap_or_default();
        let id = JobId::parse("report").expect("a job id");
        Job::new(JobDefinition::parse(&id, &full, created).expect("a job"))
    }

    fn form() -> BackfillForm {
        BackfillForm {
            start: "2026-01-05T09:00".into(),
            end: "2026-01-05T12:00".into(),
            mode: "all".into(),
            order: "oldest".into(),
            ..BackfillForm::default()
        }
    }

    fn report(count: usize) -> BackfillReport {
        BackfillReport {
            count,
            dry_run: true,
            times: (0..count)
                .map(|i| format!("2026-01-05T{:02}:{:02}:00+01:00", 9 + i / 60, i % 60))
                .collect(),
        }
    }

    #[test]
    fn a_preview_lists_its_first_times_in_the_jobs_zone_and_counts_the_rest() {
        let job = job(json!({"schedule": {"cron": ["* * * * *"], "timeZone": "Europe/Paris"}}));
        let (form, report) = (form(), report(SHOWN + 50));
        let page = BackfillPage::new(&job, &form, &[], Some(&report), "t", Scope::Write);
        assert!(page.scheduled);
        let preview = page.preview.expect("a preview");
        assert_eq!(preview.count, SHOWN + 50);
        assert_eq!(preview.shown.len(), SHOWN);
        assert_eq!(
            preview.shown[0],
            (
                "2026-01-05T09:00:00+01:00".to_owned(),
                "2026-01-05 09:00:00 CET".to_owned()
            )
        );
        assert_eq!(
            preview.more,
            Some((50, "2026-01-05 13:09:00 CET".to_owned()))
        );
        // The run button posts the instants the form's wall times were read as, in Paris.
        assert_eq!(
            preview.resolved,
            [
                ("startTime", "2026-01-05T08:00:00+00:00".to_owned()),
                ("endTime", "2026-01-05T11:00:00+00:00".to_owned())
            ]
        );
        assert!(preview.can_run);
    }

    #[test]
    fn a_read_session_previews_and_a_triggered_only_job_has_nothing_to_backfill() {
        let scheduled = job(json!({"schedule": {"cron": ["0 * * * *"]}}));
        let (form, report) = (form(), report(3));
        let page = BackfillPage::new(&scheduled, &form, &[], Some(&report), "t", Scope::Read);
        let preview = page.preview.expect("a preview");
        assert!(!preview.can_run);
        assert_eq!(preview.more, None);
        let page = BackfillPage::new(&scheduled, &form, &[], None, "t", Scope::Write);
        assert!(page.preview.is_none());
        let triggered = job(json!({"timer": {"period": "external"}}));
        let page = BackfillPage::new(&triggered, &form, &[], None, "t", Scope::Write);
        assert!(!page.scheduled);
        let html = page.render().into_string();
        assert!(html.contains("no fire times to backfill"), "{html}");
    }
}
