//! The create-job page (`/ui/jobs/new`): a form for the fields most jobs set and a JSON editor
//! for the rest of the definition, created through [`App::create_job`], the use case of
//! `POST /jobs/{jobId}`.
//!
//! The form only translates. Its controls become a docs/api.md job definition (a schedule kind
//! picks `schedule.cron`, `schedule.intervals`, `schedule.calendars`, a seed-002 `timer`, or
//! nothing, leaving the JSON editor to say), merged into the JSON editor's object. Every rule is
//! the use case's: its error names a field (`schedule.cron[0]: …`, `request[0].url: …`), and
//! [`Control::for_path`] finds the control that field came from, so the message is shown there;
//! what no control holds is shown at the JSON editor when it set that field, and in the summary
//! at the top in any case. Without JavaScript the form posts and comes back with its values and
//! errors, and a "Preview fire times" button asks the server for the next fires; with it, the
//! console's script previews them as the schedule is typed, through `POST /ui/specs/preview`
//! (the API's own preview handler; see [`crate::router`]).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::{html, Markup, Render};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sundial_core::job::{JobDocument, OverlapPolicy};
use sundial_core::timer::PreviewRequest;
use sundial_ports::store::Store;
use sundial_service::app::parse_job_id;
use sundial_service::AppError;

use crate::form::{described_by, error_summary, field, invalid, Problem, Spot};
use crate::guided::{self, non_empty, GuidedFields};
use crate::session::Session;
use crate::view::{job_url, layout};
use crate::{ConsoleState, PageError};

/// Fire times the preview shows.
const PREVIEW_COUNT: u64 = 5;

/// The form as posted: every control's text, as typed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct JobForm {
    csrf: String,
    /// `create` (the default), `preview` or `simulate`: which submit button was pressed.
    action: String,
    job_id: String,
    job_name: String,
    creator: String,
    creator_name: String,
    /// The schedule kind: one of [`KINDS`]' values.
    when: String,
    cron: String,
    interval: String,
    calendars: String,
    time_zone: String,
    due_time: String,
    period: String,
    ttl: String,
    url: String,
    method: String,
    headers: String,
    body: String,
    overlap: String,
    timeout_seconds: String,
    /// Retries, timeouts, the first notification rule, async polling.
    #[serde(flatten)]
    guided: GuidedFields,
    /// The rest of the definition: a JSON object.
    extra: String,
    /// The "Simulate" panel's controls.
    #[serde(flatten)]
    simulation: crate::simulate::SimulateFields,
}

impl JobForm {
    /// A new form: a cron schedule in UTC, a GET request, nothing else.
    fn blank() -> Self {
        JobForm {
            when: "cron".into(),
            time_zone: "UTC".into(),
            method: "GET".into(),
            extra: "{}".into(),
            ..JobForm::default()
        }
    }
}

/// The schedule kinds: the radio's value and its label.
const KINDS: [(&str, &str); 6] = [
    ("cron", "Cron"),
    ("interval", "Interval"),
    ("calendars", "Calendars (JSON)"),
    ("timer", "Timer (seed 002)"),
    ("triggered", "Only when triggered"),
    ("json", "As the JSON below says (nothing there: once, now)"),
];

/// A control of the form, where an error is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    JobId,
    JobName,
    Creator,
    CreatorName,
    When,
    Cron,
    Interval,
    Calendars,
    TimeZone,
    DueTime,
    Period,
    Ttl,
    Url,
    Method,
    Headers,
    Body,
    Overlap,
    Timeout,
    MaxRetries,
    RetryInitial,
    RetryBackoff,
    RetryMaxInterval,
    RetryMaxAttempts,
    ScheduleToStart,
    ScheduleToClose,
    Heartbeat,
    NotifyUrl,
    NotifyState,
    Async,
    CheckUrl,
    CheckRate,
    CancelUrl,
    Extra,
}

impl Control {
    /// The control's element id (and its name, after `c-`).
    fn id(self) -> &'static str {
        match self {
            Control::JobId => "c-jobId",
            Control::JobName => "c-jobName",
            Control::Creator => "c-creator",
            Control::CreatorName => "c-creatorName",
            Control::When => "c-when",
            Control::Cron => "c-cron",
            Control::Interval => "c-interval",
            Control::Calendars => "c-calendars",
            Control::TimeZone => "c-timeZone",
            Control::DueTime => "c-dueTime",
            Control::Period => "c-period",
            Control::Ttl => "c-ttl",
            Control::Url => "c-url",
            Control::Method => "c-method",
            Control::Headers => "c-headers",
            Control::Body => "c-body",
            Control::Overlap => "c-overlap",
            Control::Timeout => "c-timeoutSeconds",
            Control::MaxRetries => "c-maxRetries",
            Control::RetryInitial => "c-retryInitialInterval",
            Control::RetryBackoff => "c-retryBackoffCoefficient",
            Control::RetryMaxInterval => "c-retryMaximumInterval",
            Control::RetryMaxAttempts => "c-retryMaximumAttempts",
            Control::ScheduleToStart => "c-scheduleToStart",
            Control::ScheduleToClose => "c-scheduleToClose",
            Control::Heartbeat => "c-heartbeat",
            Control::NotifyUrl => "c-notifyUrl",
            Control::NotifyState => "c-notifyState",
            Control::Async => "c-async",
            Control::CheckUrl => "c-checkUrl",
            Control::CheckRate => "c-checkRateSeconds",
            Control::CancelUrl => "c-cancelUrl",
            Control::Extra => "c-extra",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Control::JobId => "Job id",
            Control::JobName => "Name",
            Control::Creator => "Creator",
            Control::CreatorName => "Creator name",
            Control::When => "When it runs",
            Control::Cron => "Cron expressions",
            Control::Interval => "Interval",
            Control::Calendars => "Calendars",
            Control::TimeZone => "Time zone",
            Control::DueTime => "Due time",
            Control::Period => "Period",
            Control::Ttl => "Time to live",
            Control::Url => "URL",
            Control::Method => "Method",
            Control::Headers => "Headers",
            Control::Body => "Body",
            Control::Overlap => "Overlap",
            Control::Timeout => "Timeout (seconds)",
            Control::Extra => "Other fields",
            guided => guided.guided().map_or("", |g| g.label),
        }
    }

    /// Where the form shows this control's problems.
    fn spot(self) -> Spot {
        Spot {
            id: self.id(),
            label: self.label(),
        }
    }

    /// The control a definition field came from, given the form that made the definition: the
    /// field's own control when the form set it (or must: the required fields), else the JSON
    /// editor when its object has the field's top-level key. `None`: only the summary.
    fn for_path(path: &str, form: &JobForm, extra: &Map<String, Value>) -> Option<Control> {
        let starts = |prefix: &str| {
            path == prefix
                || path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        };
        let by_kind = |kind: &str, control: Control| (form.when == kind).then_some(control);
        let own = if starts("jobId") {
            Some(Control::JobId)
        } else if starts("jobName") {
            Some(Control::JobName)
        } else if starts("creatorName") {
            Some(Control::CreatorName)
        } else if starts("creator") {
            Some(Control::Creator)
        } else if starts("schedule.cron") {
            by_kind("cron", Control::Cron)
        } else if starts("schedule.intervals") {
            by_kind("interval", Control::Interval)
        } else if starts("schedule.calendars") {
            by_kind("calendars", Control::Calendars)
        } else if starts("schedule.timeZone") {
            ["cron", "interval", "calendars"]
                .contains(&form.when.as_str())
                .then_some(Control::TimeZone)
        } else if starts("timer.dueTime") {
            by_kind("timer", Control::DueTime)
        } else if starts("timer.period") {
            by_kind("timer", Control::Period)
        } else if starts("timer.ttl") {
            by_kind("timer", Control::Ttl)
        } else if starts("request[0].url") || (path == "request" && !form.url.is_empty()) {
            Some(Control::Url)
        } else if starts("request[0].method") {
            Some(Control::Method)
        } else if starts("request[0].headers") {
            Some(Control::Headers)
        } else if starts("request[0].body") {
            Some(Control::Body)
        } else if starts("overlap") {
            (!form.overlap.is_empty()).then_some(Control::Overlap)
        } else if starts("timeoutSeconds") {
            (!form.timeout_seconds.is_empty()).then_some(Control::Timeout)
        } else if let Some(control) = guided::CONTROLS
            .iter()
            .find(|c| starts(c.path) && !c.text(&form.guided).trim().is_empty())
            .and_then(|c| guided_control(c.path))
        {
            Some(control)
        } else if path == "notification" && !form.guided.notify_url.trim().is_empty() {
            Some(Control::NotifyUrl)
        } else if path == "schedule" || path == "timer" {
            (form.when != "json").then_some(Control::When)
        } else {
            None
        };
        let top = path.split(['.', '[']).next().unwrap_or(path);
        own.or_else(|| extra.contains_key(top).then_some(Control::Extra))
            .or_else(|| (path == "request").then_some(Control::Url))
    }
}

impl Control {
    /// The definition field a guided control sets (its row of [`guided::CONTROLS`]).
    fn guided_path(self) -> Option<&'static str> {
        Some(match self {
            Control::MaxRetries => "maxRetries",
            Control::RetryInitial => "retryPolicy.initialInterval",
            Control::RetryBackoff => "retryPolicy.backoffCoefficient",
            Control::RetryMaxInterval => "retryPolicy.maximumInterval",
            Control::RetryMaxAttempts => "retryPolicy.maximumAttempts",
            Control::ScheduleToStart => "timeouts.scheduleToStart",
            Control::ScheduleToClose => "timeouts.scheduleToClose",
            Control::Heartbeat => "timeouts.heartbeat",
            Control::NotifyUrl => "notification[0].url",
            Control::NotifyState => "notification[0].stateEquals",
            Control::Async => "async",
            Control::CheckUrl => "checkUrl",
            Control::CheckRate => "checkRateSeconds",
            Control::CancelUrl => "cancelUrl",
            _ => return None,
        })
    }

    /// Its row of [`guided::CONTROLS`]: label, hint, form name.
    fn guided(self) -> Option<&'static guided::GuidedControl> {
        guided::control(self.guided_path()?)
    }

    /// The hint of a guided control.
    fn guided_hint(self) -> Option<&'static str> {
        self.guided().map(guided::GuidedControl::hint)
    }
}

/// The guided control that sets `path`.
fn guided_control(path: &str) -> Option<Control> {
    GUIDED_CONTROLS
        .into_iter()
        .find(|c| c.guided_path() == Some(path))
}

/// The create form's guided controls.
const GUIDED_CONTROLS: [Control; 14] = [
    Control::MaxRetries,
    Control::RetryInitial,
    Control::RetryBackoff,
    Control::RetryMaxInterval,
    Control::RetryMaxAttempts,
    Control::ScheduleToStart,
    Control::ScheduleToClose,
    Control::Heartbeat,
    Control::NotifyUrl,
    Control::NotifyState,
    Control::Async,
    Control::CheckUrl,
    Control::CheckRate,
    Control::CancelUrl,
];

/// The definition the form says, and the JSON editor's own object (for [`Control::for_path`]);
/// or what keeps the form from being one.
fn definition(form: &JobForm) -> Result<(Value, Map<String, Value>), Vec<Problem>> {
    let mut problems = Vec::new();
    let extra = match form.extra.trim() {
        "" => Map::new(),
        text => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                problems.push(Problem::at(
                    Control::Extra.spot(),
                    "expected a JSON object, {…}",
                ));
                Map::new()
            }
            Err(e) => {
                problems.push(Problem::at(
                    Control::Extra.spot(),
                    format!("invalid JSON: {e}"),
                ));
                Map::new()
            }
        },
    };
    let mut own = Map::new();
    let mut text = |key: &str, value: &str| {
        if !value.trim().is_empty() {
            own.insert(key.to_string(), json!(value.trim()));
        }
    };
    text("jobName", &form.job_name);
    text("creator", &form.creator);
    text("creatorName", &form.creator_name);
    match when(form) {
        Ok(Some((key, value))) => {
            own.insert(key.to_string(), value);
        }
        Ok(None) => {}
        Err(problem) => problems.push(problem),
    }
    match request(form) {
        Ok(Some(request)) => {
            own.insert("request".into(), json!([request]));
        }
        Ok(None) => {}
        Err(problem) => problems.push(problem),
    }
    if !form.overlap.is_empty() {
        own.insert("overlap".into(), json!(form.overlap));
    }
    if let Some(timeout) = non_empty(&form.timeout_seconds) {
        // A number when it reads as one; else the text, for the use case to name what is wrong.
        let value = timeout
            .parse::<u64>()
            .map_or_else(|_| json!(timeout), |n| json!(n));
        own.insert("timeoutSeconds".into(), value);
    }
    form.guided.apply_to_new(&mut own);
    let mut merged = Value::Object(extra.clone());
    merge(&mut merged, Value::Object(own), "", &mut problems);
    if problems.is_empty() {
        Ok((merged, extra))
    } else {
        Err(problems)
    }
}

/// What the core's field table says a top-level field means, for a control's hint.
fn described_field(name: &str) -> &'static str {
    sundial_core::job::document::job_field(name).map_or("", |f| f.description)
}

/// The schedule kind's field: `("schedule", {…})`, `("timer", {…})`, or nothing.
fn when(form: &JobForm) -> Result<Option<(&'static str, Value)>, Problem> {
    let zone = |mut schedule: Map<String, Value>| {
        if let Some(zone) = non_empty(&form.time_zone) {
            schedule.insert("timeZone".into(), json!(zone));
        }
        Value::Object(schedule)
    };
    Ok(match form.when.as_str() {
        "cron" => {
            let lines: Vec<&str> = form.cron.lines().filter_map(non_empty).collect();
            if lines.is_empty() {
                return Err(Problem::at(
                    Control::Cron.spot(),
                    "enter a cron expression (one per line), or choose another kind",
                ));
            }
            let mut schedule = Map::new();
            schedule.insert("cron".into(), json!(lines));
            Some(("schedule", zone(schedule)))
        }
        "interval" => {
            let Some(every) = non_empty(&form.interval) else {
                return Err(Problem::at(
                    Control::Interval.spot(),
                    "enter an interval such as 6h or 6h/5h, or choose another kind",
                ));
            };
            let mut schedule = Map::new();
            schedule.insert("intervals".into(), json!([every]));
            Some(("schedule", zone(schedule)))
        }
        "calendars" => {
            if form.calendars.trim().is_empty() {
                return Err(Problem::at(
                    Control::Calendars.spot(),
                    "enter a calendar such as {\"hour\": \"9\"}, or choose another kind",
                ));
            }
            let calendars = match serde_json::from_str::<Value>(form.calendars.trim()) {
                Ok(Value::Array(list)) => Value::Array(list),
                Ok(Value::Object(one)) => json!([one]),
                Ok(_) => {
                    return Err(Problem::at(
                        Control::Calendars.spot(),
                        "expected a calendar object or a list of them",
                    ))
                }
                Err(e) => {
                    return Err(Problem::at(
                        Control::Calendars.spot(),
                        format!("invalid JSON: {e}"),
                    ))
                }
            };
            let mut schedule = Map::new();
            schedule.insert("calendars".into(), calendars);
            Some(("schedule", zone(schedule)))
        }
        "timer" => {
            let mut timer = Map::new();
            for (key, value) in [
                ("dueTime", &form.due_time),
                ("period", &form.period),
                ("ttl", &form.ttl),
            ] {
                if let Some(value) = non_empty(value) {
                    timer.insert(key.into(), json!(value));
                }
            }
            Some(("timer", Value::Object(timer)))
        }
        "triggered" => Some(("timer", json!({"period": "external"}))),
        "json" => None,
        other => {
            return Err(Problem::at(
                Control::When.spot(),
                format!("unknown kind {other:?}"),
            ))
        }
    })
}

/// The request the form's request fields say, if the URL or anything beside it is filled in.
fn request(form: &JobForm) -> Result<Option<Value>, Problem> {
    let headers = non_empty(&form.headers);
    let body = non_empty(&form.body);
    let Some(url) = non_empty(&form.url) else {
        if headers.is_some() || body.is_some() {
            return Err(Problem::at(
                Control::Url.spot(),
                "a request needs a URL (or clear its headers and body and give the request below)",
            ));
        }
        return Ok(None);
    };
    let mut request = Map::new();
    request.insert("url".into(), json!(url));
    if let Some(method) = non_empty(&form.method) {
        request.insert("method".into(), json!(method));
    }
    if let Some(headers) = headers {
        let mut map = Map::new();
        for (n, line) in headers.lines().enumerate() {
            let Some(line) = non_empty(line) else {
                continue;
            };
            let Some((name, value)) = line.split_once(':') else {
                return Err(Problem::at(
                    Control::Headers.spot(),
                    format!("line {}: expected Name: value", n + 1),
                ));
            };
            map.insert(name.trim().to_string(), json!(value.trim()));
        }
        request.insert("headers".into(), Value::Object(map));
    }
    if let Some(body) = body {
        let value = serde_json::from_str::<Value>(body).map_err(|e| {
            Problem::at(
                Control::Body.spot(),
                format!("invalid JSON ({e}); write text in double quotes"),
            )
        })?;
        request.insert("body".into(), value);
    }
    Ok(Some(Value::Object(request)))
}

/// Lays the form's fields over the JSON editor's: objects merge, a list's items merge by
/// position, and a field given in both is a problem at the JSON editor.
fn merge(base: &mut Value, over: Value, path: &str, problems: &mut Vec<Problem>) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                let here = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value, &here, problems),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (Value::Array(base), Value::Array(over)) => {
            for (i, value) in over.into_iter().enumerate() {
                match base.get_mut(i) {
                    Some(existing) => merge(existing, value, &format!("{path}[{i}]"), problems),
                    None => base.push(value),
                }
            }
        }
        _ => problems.push(Problem::at(
            Control::Extra.spot(),
            format!("{path}: given both in the form above and here; keep one"),
        )),
    }
}

/// What the preview shows: the next fire times, or why there are none.
enum PreviewShown {
    Times(Vec<String>),
    Note(String),
    Problem(String),
}

/// `GET /ui/jobs/new`.
pub(crate) async fn new_job(Extension(session): Extension<Session>) -> Response {
    page(&session, &JobForm::blank(), &[], None, None).into_response()
}

/// `POST /ui/jobs/new`: creates the job and goes to its page, or shows the form again with its
/// values and the problems at their controls; the preview button only previews.
pub(crate) async fn create_job<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Form(form): Form<JobForm>,
) -> Result<Response, PageError> {
    session.check_csrf(&form.csrf)?;
    let app = &console.app;
    let translated = definition(&form);
    if form.action == "preview" {
        let (problems, preview) = match &translated {
            Err(problems) => (problems.clone(), None),
            Ok((definition, extra)) => {
                let (problem, shown) = preview(app, &form, definition, extra).await?;
                (problem.into_iter().collect(), Some(shown))
            }
        };
        return Ok(page(&session, &form, &problems, preview, None).into_response());
    }
    if form.action == "simulate" {
        return Ok(match &translated {
            Err(problems) => page(&session, &form, problems, None, None),
            Ok((definition, _)) => {
                let mut definition = definition.clone();
                // The job's id, when it is one, names its runs and seeds its jitter.
                if parse_job_id(form.job_id.trim()).is_ok() {
                    definition["jobId"] = json!(form.job_id.trim());
                }
                let shown = crate::simulate::run(app, &definition, &form.simulation).await?;
                page(&session, &form, &[], None, Some(&shown))
            }
        }
        .into_response());
    }
    let (definition, extra) = match translated {
        Ok(made) => made,
        Err(problems) => {
            return Ok((
                StatusCode::BAD_REQUEST,
                page(&session, &form, &problems, None, None),
            )
                .into_response())
        }
    };
    let refused = |status: StatusCode, problem: Problem| {
        Ok((status, page(&session, &form, &[problem], None, None)).into_response())
    };
    let job_id = match parse_job_id(form.job_id.trim()) {
        Ok(id) => id,
        Err(AppError::Invalid(e)) => {
            return refused(
                StatusCode::BAD_REQUEST,
                Problem::at(Control::JobId.spot(), e.to_string()),
            )
        }
        Err(e) => return Err(e.into()),
    };
    let created = match JobDocument::read(&job_id, &definition) {
        Ok(document) => app.create_job_by(&session.change(), &document).await,
        Err(e) => Err(AppError::Invalid(e)),
    };
    match created {
        Ok(_) => Ok(Redirect::to(&job_url(job_id.as_str())).into_response()),
        Err(AppError::Invalid(e)) => refused(
            StatusCode::BAD_REQUEST,
            Problem {
                at: Control::for_path(&e.path, &form, &extra).map(Control::spot),
                message: e.to_string(),
            },
        ),
        Err(AppError::Conflict(message)) => refused(
            StatusCode::CONFLICT,
            Problem::at(Control::JobId.spot(), format!("jobId: {message}")),
        ),
        Err(e) => Err(e.into()),
    }
}

/// What the preview button shows for `definition`: its next fire times through the preview use
/// case (`POST /specs/preview`'s), or why there are none; an invalid schedule is also a problem
/// at its control.
async fn preview<S: Store>(
    app: &sundial_service::App<S>,
    form: &JobForm,
    definition: &Value,
    extra: &Map<String, Value>,
) -> Result<(Option<Problem>, PreviewShown), PageError> {
    let Some(request) = preview_request(form, definition) else {
        return Ok((None, PreviewShown::Note(no_schedule(definition))));
    };
    let previewed = match PreviewRequest::parse(&request) {
        Ok(request) => app.preview_spec(&request).await,
        Err(e) => Err(AppError::Invalid(e)),
    };
    match previewed {
        Ok(preview) if preview.times.is_empty() => {
            let why = preview.warnings.first().cloned();
            let why = why.unwrap_or_else(|| "Only when triggered: no fire times.".to_string());
            Ok((None, PreviewShown::Note(why)))
        }
        Ok(preview) => Ok((None, PreviewShown::Times(preview.times))),
        Err(AppError::Invalid(e)) => {
            let problem = Problem {
                at: Control::for_path(&e.path, form, extra).map(Control::spot),
                message: e.to_string(),
            };
            let shown = PreviewShown::Problem(problem.message.clone());
            Ok((Some(problem), shown))
        }
        Err(e) => Err(e.into()),
    }
}

/// The body of `POST /specs/preview` for the definition's `schedule` or `timer`; `None` when it
/// has neither.
fn preview_request(form: &JobForm, definition: &Value) -> Option<Value> {
    let (key, spec) = ["schedule", "timer"]
        .into_iter()
        .find_map(|key| Some((key, definition.get(key)?.clone())))?;
    let mut request = json!({ key: spec, "count": PREVIEW_COUNT });
    // A valid id jitters the times as the job's own will be.
    if parse_job_id(form.job_id.trim()).is_ok() {
        request["jobId"] = json!(form.job_id.trim());
    }
    Some(request)
}

fn no_schedule(definition: &Value) -> String {
    if definition.get("request").is_some() || definition.get("target").is_some() {
        "No schedule and no timer: the job runs once, now.".to_string()
    } else {
        "No schedule yet.".to_string()
    }
}

/// The page: the form with `form`'s values, `problems` at their controls and in a summary, and
/// the preview's answer when the preview button asked for one, and the simulation's when the
/// "Simulate" button did.
fn page(
    session: &Session,
    form: &JobForm,
    problems: &[Problem],
    preview: Option<PreviewShown>,
    simulation: Option<&crate::simulate::Simulated>,
) -> axum::response::Html<String> {
    let page = CreatePage::new(form, problems, preview, &session.csrf);
    layout(
        "New job",
        Some(session),
        CreateView {
            page: &page,
            simulation,
        }
        .render(),
    )
}

/// What the new-job page shows, read from the form, its problems and the preview: no HTML, so
/// tests read it.
struct CreatePage<'a> {
    /// The form as posted (blank on a first visit).
    form: &'a JobForm,
    /// What keeps the job from being created, each at its control when it has one.
    problems: &'a [Problem],
    /// The "Next fire times" panel.
    preview: PreviewPanel,
    /// The schedule kinds, the form's checked.
    kinds: Vec<Choice>,
    /// The HTTP methods, the form's selected.
    methods: Vec<Choice>,
    /// The overlap policies after the default, the form's selected.
    overlaps: Vec<Choice>,
    /// The session's form token.
    csrf: &'a str,
}

/// One option of a radio group or a select.
#[derive(Debug, PartialEq, Eq)]
struct Choice {
    value: &'static str,
    label: &'static str,
    chosen: bool,
}

/// The "Next fire times" panel.
#[derive(Debug, PartialEq, Eq)]
enum PreviewPanel {
    /// Not asked yet.
    NotAsked,
    /// The next fire times: each as RFC 3339 and as shown.
    Times(Vec<(String, String)>),
    /// Why there are none.
    Note(String),
    /// Why the schedule cannot be previewed.
    Problem(String),
}

impl<'a> CreatePage<'a> {
    fn new(
        form: &'a JobForm,
        problems: &'a [Problem],
        preview: Option<PreviewShown>,
        csrf: &'a str,
    ) -> Self {
        let preview = match preview {
            None => PreviewPanel::NotAsked,
            Some(PreviewShown::Times(times)) => PreviewPanel::Times(
                times
                    .into_iter()
                    .map(|t| {
                        let shown = t.replacen('T', " ", 1);
                        (t, shown)
                    })
                    .collect(),
            ),
            Some(PreviewShown::Note(note)) => PreviewPanel::Note(note),
            Some(PreviewShown::Problem(problem)) => PreviewPanel::Problem(problem),
        };
        let choice = |value: &'static str, label: &'static str, given: &str| Choice {
            value,
            label,
            chosen: given == value,
        };
        CreatePage {
            form,
            problems,
            preview,
            kinds: KINDS
                .iter()
                .map(|(value, label)| choice(value, label, &form.when))
                .collect(),
            methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
                .into_iter()
                .map(|method| choice(method, method, &form.method))
                .collect(),
            overlaps: OverlapPolicy::ALL
                .iter()
                .map(|policy| choice(policy.name(), policy.name(), &form.overlap))
                .collect(),
            csrf,
        }
    }

    /// The problem shown at `control`, if any.
    fn problem_at(&self, control: Control) -> Option<&str> {
        Problem::message_at(self.problems, control.spot())
    }
}

/// The whole page: the form, its preview panel and the simulation panel in it.
struct CreateView<'p, 'a> {
    page: &'p CreatePage<'a>,
    simulation: Option<&'p crate::simulate::Simulated>,
}

impl CreatePage<'_> {
    /// A control with its label, hint and error, described by both.
    fn control(&self, control: Control, hint: Option<&str>, input: Markup) -> Markup {
        field(control.spot(), hint, self.problem_at(control), input)
    }

    /// The `aria-describedby` of `control`: its hint and its error, those it has.
    fn described(&self, control: Control, hint: bool) -> Option<String> {
        described_by(control.id(), hint, self.problem_at(control).is_some())
    }

    /// The `aria-invalid` of `control`.
    fn invalid(&self, control: Control) -> Option<&'static str> {
        invalid(self.problem_at(control))
    }

    /// A text input with its label, hint and error.
    fn text_input(&self, control: Control, name: &str, value: &str, hint: Option<&str>) -> Markup {
        self.control(
            control,
            hint,
            html! {
                input id=(control.id()) name=(name) type="text" value=(value)
                    aria-describedby=[self.described(control, hint.is_some())]
                    aria-invalid=[self.invalid(control)];
            },
        )
    }

    /// A textarea with its label, hint and error.
    fn textarea(
        &self,
        control: Control,
        name: &str,
        value: &str,
        rows: u8,
        hint: Option<&str>,
    ) -> Markup {
        self.control(
            control,
            hint,
            html! {
                textarea id=(control.id()) name=(name) rows=(rows) spellcheck="false"
                    aria-describedby=[self.described(control, hint.is_some())]
                    aria-invalid=[self.invalid(control)] { (value) }
            },
        )
    }

    /// A text input of the guided fields, with the hint that field's guide gives.
    fn guided_input(&self, control: Control, name: &str, value: &str) -> Markup {
        self.text_input(control, name, value, control.guided_hint())
    }

    /// Who the job is.
    fn job_fields(&self) -> Markup {
        let form = self.form;
        html! {
            fieldset {
                legend { "The job" }
                (self.text_input(Control::JobId, "jobId", &form.job_id, Some("1–128 letters, digits, _ . - : the job's address, /jobs/{jobId}.")))
                (self.text_input(Control::JobName, "jobName", &form.job_name, None))
                (self.text_input(Control::Creator, "creator", &form.creator, None))
                (self.text_input(Control::CreatorName, "creatorName", &form.creator_name, None))
            }
        }
    }

    /// When it runs: the kind of schedule, each kind's fields, and the preview of its fires.
    fn when_fields(&self) -> Markup {
        let form = self.form;
        let when_error = self.problem_at(Control::When);
        html! {
            fieldset id=(Control::When.id()) aria-describedby=[when_error.map(|_| "c-when-error")] {
                legend { (Control::When.label()) }
                div.kinds {
                    @for kind in &self.kinds {
                        label.kind {
                            input type="radio" name="when" value=(kind.value) checked[kind.chosen];
                            " " (kind.label)
                        }
                    }
                }
                @if let Some(error) = when_error { p.field-error id="c-when-error" { (error) } }
                div.when data-when="cron" {
                    (self.textarea(Control::Cron, "cron", &form.cron, 2, Some("One per line: 5 fields (m h dom mon dow), 6 with seconds first; @daily, CRON_TZ=… (docs/spec.md).")))
                }
                div.when data-when="interval" {
                    (self.text_input(Control::Interval, "interval", &form.interval, Some("Every so long from the Unix epoch, with an offset: 6h, 6h/5h, PT30M.")))
                }
                div.when data-when="calendars" {
                    (self.textarea(Control::Calendars, "calendars", &form.calendars, 4, Some(r#"A calendar or a list: [{"hour": "9", "dayOfWeek": "MON-FRI"}]; unset fields: second, minute, hour 0, the rest any."#)))
                }
                div.when data-when="cron interval calendars" {
                    (self.text_input(Control::TimeZone, "timeZone", &form.time_zone, Some("An IANA zone: Europe/London, America/New_York.")))
                }
                div.when data-when="timer" {
                    (self.text_input(Control::DueTime, "dueTime", &form.due_time, Some("From creation (10m, PT1H) or a time (2026-10-01 09:00:01).")))
                    (self.text_input(Control::Period, "period", &form.period, Some("1h, R4/PT3S, a Quartz cron (0 0/5 * * * ?), or external.")))
                    (self.text_input(Control::Ttl, "ttl", &form.ttl, Some("The schedule ends this long after creation.")))
                }
                (self.preview_panel())
            }
        }
    }

    /// The next fire times of the schedule as written, once asked for.
    fn preview_panel(&self) -> Markup {
        html! {
            section.preview aria-labelledby="preview-title" {
                h2 id="preview-title" { "Next fire times" }
                div id="preview" aria-live="polite" {
                    @match &self.preview {
                        PreviewPanel::Times(times) => ol.fires {
                            @for (t, shown) in times { li { time datetime=(t) { (shown) } } }
                        },
                        PreviewPanel::Note(note) => p.muted { (note) },
                        PreviewPanel::Problem(problem) => p.error { (problem) },
                        PreviewPanel::NotAsked => p.muted { "Preview the schedule to see when it fires." },
                    }
                }
                button.secondary type="submit" name="action" value="preview" { "Preview fire times" }
            }
        }
    }

    /// What it calls.
    fn call_fields(&self) -> Markup {
        let form = self.form;
        html! {
            fieldset {
                legend { "What it calls" }
                (self.text_input(Control::Url, "url", &form.url, Some("http(s)://… or service://name/path; ${…} templates allowed (docs/api.md).")))
                (self.control(Control::Method, None, html! {
                    select id=(Control::Method.id()) name="method" aria-invalid=[self.invalid(Control::Method)]
                        aria-describedby=[self.described(Control::Method, false)] {
                        @for method in &self.methods {
                            option value=(method.value) selected[method.chosen] { (method.label) }
                        }
                    }
                }))
                (self.textarea(Control::Headers, "headers", &form.headers, 2, Some("One per line: Name: value.")))
                (self.textarea(Control::Body, "body", &form.body, 3, Some(r#"JSON: {"key": "value"}, or text in double quotes."#)))
            }
        }
    }

    /// The overlap policy and the call's timeout.
    fn policy_fields(&self) -> Markup {
        let form = self.form;
        html! {
            fieldset {
                legend { "Policies" }
                (self.control(Control::Overlap, Some("When a fire comes while the last run is still going."), html! {
                    select id=(Control::Overlap.id()) name="overlap" aria-invalid=[self.invalid(Control::Overlap)]
                        aria-describedby=[self.described(Control::Overlap, true)] {
                        option value="" selected[form.overlap.is_empty()] { "Default (Skip)" }
                        @for policy in &self.overlaps {
                            option value=(policy.value) selected[policy.chosen] { (policy.label) }
                        }
                    }
                }))
                (self.text_input(Control::Timeout, "timeoutSeconds", &form.timeout_seconds, Some(described_field("timeoutSeconds"))))
            }
        }
    }

    /// The guided retry and timeout fields.
    fn retry_fields(&self) -> Markup {
        let guided = &self.form.guided;
        html! {
            fieldset {
                legend { "Retries and timeouts" }
                (self.guided_input(Control::MaxRetries, "maxRetries", &guided.max_retries))
                (self.guided_input(Control::RetryInitial, "retryInitialInterval", &guided.retry_initial_interval))
                (self.guided_input(Control::RetryBackoff, "retryBackoffCoefficient", &guided.retry_backoff_coefficient))
                (self.guided_input(Control::RetryMaxInterval, "retryMaximumInterval", &guided.retry_maximum_interval))
                (self.guided_input(Control::RetryMaxAttempts, "retryMaximumAttempts", &guided.retry_maximum_attempts))
                (self.guided_input(Control::ScheduleToStart, "scheduleToStart", &guided.schedule_to_start))
                (self.guided_input(Control::ScheduleToClose, "scheduleToClose", &guided.schedule_to_close))
                (self.guided_input(Control::Heartbeat, "heartbeat", &guided.heartbeat))
                p.hint { "Retry rules by outcome (" code { "retry" } "), non-retryable errors: in Other fields below." }
            }
        }
    }

    /// The guided notification and asynchronous completion fields.
    fn notification_and_async_fields(&self) -> Markup {
        let guided = &self.form.guided;
        html! {
            fieldset {
                legend { "Notifications" }
                (self.guided_input(Control::NotifyUrl, "notifyUrl", &guided.notify_url))
                (self.guided_input(Control::NotifyState, "notifyState", &guided.notify_state))
            }
            fieldset {
                legend { "Asynchronous completion" }
                (self.control(Control::Async, Control::Async.guided_hint(), html! {
                    input id=(Control::Async.id()) name="async" type="checkbox" value="on" checked[!guided.is_async.trim().is_empty()]
                        aria-describedby=[self.described(Control::Async, true)] aria-invalid=[self.invalid(Control::Async)];
                }))
                (self.guided_input(Control::CheckUrl, "checkUrl", &guided.check_url))
                (self.guided_input(Control::CheckRate, "checkRateSeconds", &guided.check_rate_seconds))
                (self.guided_input(Control::CancelUrl, "cancelUrl", &guided.cancel_url))
            }
        }
    }
}

impl Render for CreateView<'_, '_> {
    fn render(&self) -> Markup {
        let page = self.page;
        html! {
            p.crumbs { a href="/" { "Jobs" } " / New job" }
            h1 { "New job" }
            (error_summary("The job was not created", page.problems))
            form.create method="post" action="/ui/jobs/new" novalidate {
                input type="hidden" name="csrf" value=(page.csrf);
                (page.job_fields())
                (page.when_fields())
                (page.call_fields())
                (page.policy_fields())
                (page.retry_fields())
                (page.notification_and_async_fields())
                (page.textarea(Control::Extra, "extra", &page.form.extra, 6, Some(r#"The rest of the definition as a JSON object: retry rules, more notification rules, a target instead of request, jitter under schedule, … Fields set above are added to it."#)))
                (crate::simulate::panel(&page.form.simulation, self.simulation))
                div.actions {
                    button type="submit" name="action" value="create" { "Create job" }
                    a href="/" { "Cancel" }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_visit_offers_cron_get_and_the_default_overlap() {
        let form = JobForm::blank();
        let page = CreatePage::new(&form, &[], None, "token");
        let chosen = |choices: &[Choice]| -> Vec<&str> {
            choices
                .iter()
                .filter(|c| c.chosen)
                .map(|c| c.value)
                .collect()
        };
        assert_eq!(chosen(&page.kinds), ["cron"]);
        assert_eq!(chosen(&page.methods), ["GET"]);
        assert!(
            chosen(&page.overlaps).is_empty(),
            "the default option, Skip, is chosen"
        );
        assert_eq!(page.preview, PreviewPanel::NotAsked);
        assert_eq!(page.problem_at(Control::Cron), None);
    }

    #[test]
    fn the_form_as_posted_is_chosen_again_with_its_problems_and_preview() {
        let form = JobForm {
            when: "timer".into(),
            method: "POST".into(),
            overlap: "BufferAll".into(),
            ..JobForm::blank()
        };
        let problems = [Problem::at(
            Control::Period.spot(),
            "period: not a duration",
        )];
        let preview = PreviewShown::Times(vec!["2026-12-02T09:00:00Z".into()]);
        let page = CreatePage::new(&form, &problems, Some(preview), "token");
        assert!(page.kinds.iter().any(|k| k.value == "timer" && k.chosen));
        assert!(page.methods.iter().any(|m| m.value == "POST" && m.chosen));
        assert!(page
            .overlaps
            .iter()
            .any(|o| o.value == "BufferAll" && o.chosen));
        assert_eq!(
            page.problem_at(Control::Period),
            Some("period: not a duration")
        );
        assert_eq!(page.problem_at(Control::Cron), None);
        assert_eq!(
            page.preview,
            PreviewPanel::Times(vec![(
                "2026-12-02T09:00:00Z".into(),
                "2026-12-02 09:00:00Z".into()
            )])
        );
    }
}
