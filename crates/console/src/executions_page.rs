//! The Executions page (`/ui/executions`): runs of every job, filtered as `GET /executions`
//! filters them (states, job, label, creator, source, scheduled and ended ranges), newest
//! scheduled first, a page at a time. A GET form, so a filtered list is a link; the next page's
//! link keeps the filters. [`ExecutionsPage::load`] reads the page, its [`Render`] impl draws it.
//!
//! Public so that tests can assert on what the page holds rather than on its HTML.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use maud::{html, Markup, Render};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_ports::store::{PageRequest, Store};
use sundial_service::app::{SearchFilters, SourceFilter};
use sundial_service::{App, AppError};

use crate::view::{chip, job_url, query_string, seg, when};

/// Runs per page.
pub const PER_PAGE: usize = 50;

/// The Executions page, read once.
#[derive(Debug)]
pub struct ExecutionsPage {
    /// The filters as given (re-filled into the form).
    pub filters: SearchFilters,
    /// The states ticked.
    pub states: Vec<String>,
    /// The page's runs, newest scheduled first.
    pub executions: Vec<Execution>,
    /// The link to the next page (filters kept), when there is one. A page may be short, even
    /// empty, and still have one (DynamoDB filters what it read).
    pub next: Option<String>,
    /// When the page was read.
    pub now: DateTime<Utc>,
}

/// The first value of `name` in `pairs`, trimmed; `None` when absent or blank.
fn field(pairs: &[(String, String)], name: &str) -> Option<String> {
    crate::filter::field(pairs, name)
}

/// Every non-blank value of `name` in `pairs`.
fn fields(pairs: &[(String, String)], name: &str) -> Vec<String> {
    pairs
        .iter()
        .filter(|(k, v)| k == name && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_owned())
        .collect()
}

impl ExecutionsPage {
    /// Reads the page the query string `pairs` asks for: `state` (repeatable), `jobId`,
    /// `label` (repeatable), `creator`, `source`, `since`, `until`, `endedSince`, `endedUntil`
    /// and `cursor`. A bad filter is the use case's 400 naming it.
    pub async fn load<S: Store>(
        app: &App<S>,
        pairs: &[(String, String)],
    ) -> Result<ExecutionsPage, AppError> {
        let states: Vec<String> = fields(pairs, "state")
            .iter()
            .flat_map(|s| {
                s.split(',')
                    .map(|s| s.trim().to_owned())
                    .collect::<Vec<_>>()
            })
            .filter(|s| !s.is_empty())
            .collect();
        let filters = SearchFilters {
            state: (!states.is_empty()).then(|| states.join(",")),
            job_id: field(pairs, "jobId"),
            labels: fields(pairs, "label"),
            creator: field(pairs, "creator"),
            source: field(pairs, "source"),
            since: field(pairs, "since"),
            until: field(pairs, "until"),
            ended_since: field(pairs, "endedSince"),
            ended_until: field(pairs, "endedUntil"),
        };
        let request = PageRequest {
            limit: PER_PAGE,
            cursor: field(pairs, "cursor"),
        };
        let page = app.search_executions(&filters, &request).await?;
        let next = page.next_cursor.map(|cursor| {
            let mut query = filter_pairs(&filters, &states);
            query.push(("cursor", cursor));
            format!("/ui/executions{}", query_string(&query))
        });
        Ok(ExecutionsPage {
            filters,
            states,
            executions: page.items,
            next,
            now: app.now(),
        })
    }
}

/// `filters` as the query string [`ExecutionsPage::load`] reads back.
fn filter_pairs(filters: &SearchFilters, states: &[String]) -> Vec<(&'static str, String)> {
    let mut pairs: Vec<(&'static str, String)> =
        states.iter().map(|s| ("state", s.clone())).collect();
    for (name, value) in [
        ("jobId", &filters.job_id),
        ("creator", &filters.creator),
        ("source", &filters.source),
        ("since", &filters.since),
        ("until", &filters.until),
        ("endedSince", &filters.ended_since),
        ("endedUntil", &filters.ended_until),
    ] {
        if let Some(value) = value {
            pairs.push((name, value.clone()));
        }
    }
    pairs.extend(filters.labels.iter().map(|l| ("label", l.clone())));
    pairs
}

impl Render for ExecutionsPage {
    fn render(&self) -> Markup {
        html! {
            h1 { "Executions" }
            (Filters(self))
            (Runs { runs: &self.executions, now: self.now, with_job: true })
            @if let Some(next) = &self.next {
                p.pager { a href=(next) rel="next" { "Older executions →" } }
            }
        }
    }
}

/// The filter form.
struct Filters<'a>(&'a ExecutionsPage);

impl Render for Filters<'_> {
    fn render(&self) -> Markup {
        let (f, states) = (&self.0.filters, &self.0.states);
        let text = |id: &str, name: &str, label: &str, value: &Option<String>, hint: &str| {
            html! {
                div.field {
                    label for=(id) { (label) }
                    input id=(id) name=(name) type="text" value=[value.as_deref()] placeholder=(hint);
                }
            }
        };
        let labels: Vec<Option<String>> = if f.labels.is_empty() {
            vec![None]
        } else {
            f.labels.iter().cloned().map(Some).collect()
        };
        html! {
            form.filters method="get" action="/ui/executions" role="search" aria-label="Filter executions" {
                fieldset.field {
                    legend { "State" }
                    @for state in ExecutionState::ALL {
                        label.check {
                            input type="checkbox" name="state" value=(state.name())
                                checked[states.iter().any(|s| s == state.name())];
                            " " (state.name())
                        }
                    }
                }
                (text("x-job", "jobId", "Job", &f.job_id, "job id"))
                @for (i, label) in labels.iter().enumerate() {
                    (text(&format!("x-label-{i}"), "label", "Label", label, "key:value"))
                }
                (text("x-creator", "creator", "Creator", &f.creator, ""))
                div.field {
                    label for="x-source" { "Started by" }
                    select id="x-source" name="source" {
                        option value="" selected[f.source.is_none()] { "Any" }
                        @for source in SourceFilter::ALL {
                            option value=(source.name()) selected[f.source.as_deref() == Some(source.name())] { (source.name()) }
                        }
                    }
                }
                (text("x-since", "since", "Scheduled since", &f.since, "24h or 2026-01-05T00:00:00Z"))
                (text("x-until", "until", "Scheduled before", &f.until, "RFC 3339 or 1h"))
                (text("x-ended-since", "endedSince", "Ended since", &f.ended_since, "RFC 3339 or 24h"))
                (text("x-ended-until", "endedUntil", "Ended before", &f.ended_until, "RFC 3339 or 1h"))
                div.actions {
                    button type="submit" { "Apply" }
                    a href="/ui/executions" { "Clear" }
                }
            }
        }
    }
}

/// A table of runs: with a job column across jobs, times in UTC (the Executions page), or in a
/// job's zone without it (a job's page).
pub(crate) struct Runs<'a> {
    pub(crate) runs: &'a [Execution],
    pub(crate) now: DateTime<Utc>,
    pub(crate) with_job: bool,
}

impl Render for Runs<'_> {
    fn render(&self) -> Markup {
        if self.runs.is_empty() {
            return html! { p.empty { "No executions match." } };
        }
        html! {
            div.table-wrap { table.executions {
                thead { tr {
                    @if self.with_job { th scope="col" { "Job" } }
                    @for h in ["#", "State", "Scheduled", "By", "Attempts", "Ended", "Error"] { th scope="col" { (h) } }
                } }
                tbody { @for e in self.runs {
                    tr data-execution=(e.execution_id) {
                        @if self.with_job { td { a href=(job_url(e.job_id.as_str())) { (e.job_id.as_str()) } } }
                        td { a href={ "/ui/executions/" (seg(&e.execution_id)) } { (e.execute_number) } }
                        td { (chip(e.state().name())) }
                        td { (when(e.scheduled_time, Tz::UTC, self.now)) }
                        td { (e.scheduled_by_id) }
                        td { (e.attempts()) }
                        td { @if let Some(at) = e.finished_at() { (when(at, Tz::UTC, self.now)) } }
                        td { (e.error.as_deref().unwrap_or("")) }
                    }
                } }
            } }
        }
    }
}
