//! A job's "Why didn't it run?" page (`/ui/jobs/{jobId}/occurrences?from=&to=`) as a view model:
//! [`LedgerPage::load`] reads the range asked for in the job's zone (or the default one) and
//! [`App::occurrences`] over it; its [`Render`] impl draws the range form, the counts, the ledger
//! and the kept ranges, each a component. The handler only loads, renders and answers.
//!
//! Public so that tests can assert on what the page shows rather than on its HTML.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, DurationRound, Utc};
use chrono_tz::Tz;
use maud::{html, Markup, Render};
use serde::Deserialize;
use sundial_core::job::{Job, JobId};
use sundial_core::ledger::{Fate, FireRange};
use sundial_ports::store::Store;
use sundial_service::app::{parse_job_id, Occurrences};
use sundial_service::{App, AppError};

use crate::ledger::{
    counts, explanation, local_input, parse_local, range_kind, rows, status_chip, EACH_ON_ITS_OWN,
    MAX_ROWS,
};
use crate::session::Session;
use crate::view::{job_url, layout, when, zone_of};
use crate::{ConsoleState, PageError};

/// The ledger's range as the form sends it: local times in the job's zone, both empty for the
/// default range.
#[derive(Debug, Default, Deserialize)]
pub struct RangeQuery {
    /// `from`, a `datetime-local` value.
    #[serde(default)]
    pub from: Option<String>,
    /// `to` (exclusive), a `datetime-local` value.
    #[serde(default)]
    pub to: Option<String>,
}

/// A range field's error, shown at the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeError {
    /// `from` or `to`.
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

/// The ledger of a range that could be read.
#[derive(Debug)]
pub struct ShownLedger {
    /// The range's start.
    pub from: DateTime<Utc>,
    /// The range's end (exclusive).
    pub to: DateTime<Utc>,
    /// Each nominal time's fate and the ranges kept on the job.
    pub ledger: Occurrences,
}

/// Everything the page shows, read once.
#[derive(Debug)]
pub struct LedgerPage {
    /// The job's id.
    pub job_id: JobId,
    /// The job; `None` when it was deleted (its ledger is then read from its history).
    pub job: Option<Job>,
    /// The zone of the job's schedule (UTC for a deleted or triggered-only job).
    pub zone: Tz,
    /// When the page was read, by the control plane's clock.
    pub now: DateTime<Utc>,
    /// The ledger, unless the range asked for is wrong.
    pub shown: Option<ShownLedger>,
    /// What is wrong with the range asked for.
    pub error: Option<RangeError>,
    /// The range fields' values: the range shown, else what was sent.
    pub inputs: [String; 2],
}

/// The range asked for, or the default: the day before now (the hour before now when a day holds
/// more times than one ledger lists, as an every-second job's does).
enum Range {
    Asked(DateTime<Utc>, DateTime<Utc>),
    Default,
}

fn asked_range(query: &RangeQuery, zone: Tz) -> Result<Range, RangeError> {
    let read = |field: &'static str, text: &Option<String>| {
        text.as_deref()
            .filter(|t| !t.trim().is_empty())
            .map(|t| parse_local(t, zone).map_err(|message| RangeError { field, message }))
            .transpose()
    };
    let required = |field, message: &str| RangeError {
        field,
        message: message.into(),
    };
    match (read("from", &query.from)?, read("to", &query.to)?) {
        (None, None) => Ok(Range::Default),
        (Some(from), Some(to)) => Ok(Range::Asked(from, to)),
        (None, Some(_)) => Err(required("from", "is required with to")),
        (Some(_), None) => Err(required("to", "is required with from")),
    }
}

type Read = Result<Result<ShownLedger, RangeError>, AppError>;

/// The ledger of `from..to`; the use case's refusal of the range as the field it names.
async fn read<S: Store>(app: &App<S>, id: &JobId, from: DateTime<Utc>, to: DateTime<Utc>) -> Read {
    match app.occurrences(id, from, to).await {
        Ok(ledger) => Ok(Ok(ShownLedger { from, to, ledger })),
        Err(AppError::Invalid(e)) => Ok(Err(RangeError {
            field: if e.path == "from" { "from" } else { "to" },
            message: e.message,
        })),
        Err(e) => Err(e),
    }
}

/// The default range: it ends at the next whole minute, so "now" is in it, and spans a day, or an
/// hour when a day holds too many times.
async fn default_range<S: Store>(app: &App<S>, id: &JobId, now: DateTime<Utc>) -> Read {
    let end = now.duration_trunc(Duration::minutes(1)).unwrap_or(now) + Duration::minutes(1);
    let day = read(app, id, end - Duration::days(1), end).await?;
    match day {
        Ok(shown) => Ok(Ok(shown)),
        Err(_) => Ok(read(app, id, end - Duration::hours(1), end)
            .await?
            .map_err(|e| RangeError { field: "to", ..e })),
    }
}

impl LedgerPage {
    /// Reads job `job_id` (a deleted one keeps its ledger) and its ledger over `range`.
    pub async fn load<S: Store>(
        app: &App<S>,
        job_id: &JobId,
        range: &RangeQuery,
    ) -> Result<LedgerPage, AppError> {
        let job = match app.get_job(job_id).await {
            Ok(job) => Some(job),
            Err(AppError::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        let zone = job.as_ref().map_or(Tz::UTC, zone_of);
        let now = app.now();
        let outcome = match asked_range(range, zone) {
            Err(e) => Err(e),
            Ok(Range::Asked(from, to)) => read(app, job_id, from, to).await?,
            Ok(Range::Default) => default_range(app, job_id, now).await?,
        };
        let (shown, error) = match outcome {
            Ok(shown) => (Some(shown), None),
            Err(error) => (None, Some(error)),
        };
        let inputs = match &shown {
            Some(s) => [local_input(s.from, zone), local_input(s.to, zone)],
            None => [range.from.clone(), range.to.clone()].map(Option::unwrap_or_default),
        };
        Ok(LedgerPage {
            job_id: job_id.clone(),
            job,
            zone,
            now,
            shown,
            error,
            inputs,
        })
    }

    /// 400 when the range asked for is wrong, else 200.
    pub fn status(&self) -> StatusCode {
        match self.error {
            Some(_) => StatusCode::BAD_REQUEST,
            None => StatusCode::OK,
        }
    }

    fn when(&self, time: DateTime<Utc>) -> Markup {
        when(time, self.zone, self.now)
    }
}

/// The range form, each field with its error.
struct RangeForm<'a>(&'a LedgerPage);

impl Render for RangeForm<'_> {
    fn render(&self) -> Markup {
        let page = self.0;
        let base = job_url(page.job_id.as_str());
        let fields = [("from", "From"), ("to", "To (exclusive)")]
            .into_iter()
            .zip(&page.inputs);
        html! {
            form.filters method="get" action={ (base) "/occurrences" } aria-label="Range of the ledger" {
                @for ((field, label), value) in fields { (RangeField { page, field, label, value }) }
                div.actions { button type="submit" { "Show" } a href={ (base) "/history" } { "History" } }
            }
        }
    }
}

struct RangeField<'a> {
    page: &'a LedgerPage,
    field: &'static str,
    label: &'static str,
    value: &'a str,
}

impl Render for RangeField<'_> {
    fn render(&self) -> Markup {
        let field = self.field;
        let error = self.page.error.as_ref().filter(|e| e.field == field);
        html! {
            div.field {
                label for={ "l-" (field) } { (self.label) " (" (self.page.zone) ")" }
                input id={ "l-" (field) } name=(field) type="datetime-local" step="1" value=(self.value)
                    aria-invalid=[error.map(|_| "true")]
                    aria-describedby=[error.map(|_| format!("l-{field}-error"))];
                @if let Some(e) = error { span.error id={ "l-" (field) "-error" } role="alert" { (field) ": " (e.message) } }
            }
        }
    }
}

/// How many nominal times the range holds, and how many of each status.
struct Counts<'a>(&'a LedgerPage, &'a ShownLedger);

impl Render for Counts<'_> {
    fn render(&self) -> Markup {
        let (page, shown) = (self.0, self.1);
        let entries = &shown.ledger.entries;
        let times = entries
            .iter()
            .filter(|(_, f)| !matches!(f, Fate::DstGap(_) | Fate::Calendar { .. }))
            .count();
        html! {
            p { (times) " nominal times from " (page.when(shown.from)) " to " (page.when(shown.to)) }
            ul.summary aria-label="Counts by status" {
                @for (fate, n) in counts(entries) { li data-status=(fate.status()) { (status_chip(fate)) " " (n) } }
            }
        }
    }
}

/// The ledger's table, consecutive times folded past [`EACH_ON_ITS_OWN`], cut at [`MAX_ROWS`].
struct Table<'a>(&'a LedgerPage, &'a Occurrences);

impl Render for Table<'_> {
    fn render(&self) -> Markup {
        let (page, entries) = (self.0, &self.1.entries);
        if entries.is_empty() {
            return html! { p.empty { "No nominal times in this range." } };
        }
        let (job_id, rows) = (page.job_id.as_str(), rows(entries));
        let created_at = page.job.as_ref().map(|j| j.created_at);
        html! {
            @if rows.len() < entries.len() { p.hint { "Consecutive times with the same fate share a row (more than " (EACH_ON_ITS_OWN) " times)." } }
            div.table-wrap { table.ledger {
                caption.visually-hidden { "Each nominal time and what became of it" }
                thead { tr { th scope="col" { "Time" } th scope="col" { "Status" } th scope="col" { "Why" } } }
                tbody {
                    @for row in rows.iter().take(MAX_ROWS) {
                        tr data-status=(row.fate.status()) data-time=(row.first.to_rfc3339()) {
                            td { (page.when(row.first)) @if row.count > 1 { br; "… " (page.when(row.last)) br; span.muted { (row.count) " times" } } }
                            td { (status_chip(row.fate)) }
                            td { (explanation(job_id, row, page.zone, created_at)) }
                        }
                    }
                }
            } }
            @if rows.len() > MAX_ROWS { p.notes { (rows.len() - MAX_ROWS) " more rows not shown: narrow the range." } }
        }
    }
}

/// The missed, dropped and debug-mode ranges kept on the job.
struct KeptRanges<'a>(&'a LedgerPage, &'a [FireRange]);

impl Render for KeptRanges<'_> {
    fn render(&self) -> Markup {
        let page = self.0;
        if self.1.is_empty() {
            return Markup::default();
        }
        html! {
            h2 { "Ranges kept on the job" }
            p.hint { "Missed, dropped and debug-mode fires are kept as ranges of consecutive times, however long." }
            ul {
                @for FireRange { reason, first, last, count } in self.1 {
                    li { (range_kind(*reason)) ": " (page.when(*first)) " … " (page.when(*last)) " (" (count) " times)" }
                }
            }
        }
    }
}

impl Render for LedgerPage {
    fn render(&self) -> Markup {
        let job_id = self.job_id.as_str();
        html! {
            p.crumbs { a href="/" { "Jobs" } " / " a href=(job_url(job_id)) { (job_id) } " / occurrences" }
            h1 { "Why didn't it run? " span.muted { (job_id) } }
            @if self.job.is_none() { p.notes { "This job was deleted: its last life is read from its history." } }
            (RangeForm(self))
            @if let Some(shown) = &self.shown {
                (Counts(self, shown))
                (Table(self, &shown.ledger))
                (KeptRanges(self, &shown.ledger.ranges))
            }
        }
    }
}

/// `/ui/jobs/{jobId}/occurrences?from=&to=`: the ledger over a range in the job's zone
/// ([`LedgerPage`]).
pub(crate) async fn occurrences<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Query(range): Query<RangeQuery>,
) -> Result<Response, PageError> {
    let id = parse_job_id(&job_id)?;
    let page = LedgerPage::load(&console.app, &id, &range).await?;
    let title = format!("{job_id}: occurrences");
    Ok((page.status(), layout(&title, Some(&session), page.render())).into_response())
}
