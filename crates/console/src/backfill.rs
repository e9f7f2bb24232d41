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
use maud::html;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sundial_core::job::{BackfillMode, Job, OverlapPolicy, When};
use sundial_ports::store::Store;
use sundial_service::app::Scope;
use sundial_service::app::{parse_job_id, BackfillReport};
use sundial_service::AppError;

use crate::auth::Session;
use crate::form::{described_by, error_summary, field, invalid, Problem, Spot};
use crate::ledger::{local_input, parse_local};
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
    match console.app.backfill_by(&session.change(), &id, &body).await {
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
    match console.app.backfill_by(&session.change(), &id, &body).await {
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
    let id = job.definition.job_id().as_str();
    let base = job_url(id);
    let zone = zone_of(job);
    let error = |spot: Spot| Problem::message_at(problems, spot);
    let scheduled = matches!(job.definition.when(), When::Scheduled(_));
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
    let hidden = |name: &str, value: &str| html! { input type="hidden" name=(name) value=(value); };
    let content = html! {
        p.crumbs { a href="/" { "Jobs" } " / " a href=(base) { (id) } " / Backfill" }
        h1 { "Backfill " (id) }
        (error_summary("The backfill was not recorded", problems))
        @if !scheduled {
            p { "This job runs only when triggered: it has no fire times to backfill." }
        } @else {
            p { "Runs the job's fire times in a range now, exempt from the catch-up window. Times are read and shown in "
                strong { (zone) } ", the job's time zone. Preview first: nothing runs until you press Run backfill." }
            form.previewed method="post" action={ (base) "/backfill/preview" } novalidate {
                input type="hidden" name="csrf" value=(session.csrf);
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
            @if let Some(report) = report {
                section.preview id="backfill-preview" aria-labelledby="preview-title" data-count=(report.count) {
                    h2 id="preview-title" { "What it would run" }
                    @if report.count == 0 {
                        p { "Nothing: no fire time in the range is selected by this mode." }
                    } @else {
                        p { strong { (report.count) } @if report.count == 1 { " run, at this time:" } @else { " runs, at these times, in this order:" } }
                        ol.fires.backfill-times {
                            @for t in report.times.iter().take(SHOWN) {
                                li { time datetime=(t) { (shown_time(t, zone)) } }
                            }
                        }
                        @if report.times.len() > SHOWN {
                            p.muted { "… and " (report.times.len() - SHOWN) " more, up to "
                                (report.times.last().map(|t| shown_time(t, zone)).unwrap_or_default()) "." }
                        }
                        @if session.scope == Scope::Write {
                            form method="post" action={ (base) "/backfill" } {
                                input type="hidden" name="csrf" value=(session.csrf);
                                (hidden("start", &form.start))
                                (hidden("end", &form.end))
                                (hidden("mode", &form.mode))
                                (hidden("order", &form.order))
                                (hidden("overlap", &form.overlap))
                                @if let Ok(Value::Object(resolved)) = request(form, zone) {
                                    @for key in ["startTime", "endTime"] {
                                        @if let Some(instant) = resolved.get(key).and_then(Value::as_str) { (hidden(key, instant)) }
                                    }
                                }
                                p.hint { "Runs the range and mode previewed here: these times, unless runs of them end before you press it. Change the form above and preview again for anything else." }
                                button type="submit" id="run-backfill" { "Run backfill (" (report.count) ")" }
                            }
                        } @else {
                            p.muted { "Your token is of scope read: it may preview a backfill, not run one." }
                        }
                    }
                }
            }
        }
    };
    layout(&format!("Backfill {id}"), Some(session), content)
}
