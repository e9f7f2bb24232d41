//! The jobs list (`/` and `/ui/jobs`) as a view model: [`JobsPage::load`] reads one page of jobs
//! in the store's order, then each row's last run and the page's 24-hour success together; its
//! [`Render`] impl draws the filter form, the sortable table ([`JobRow`]s), the bulk form and the
//! pager. The handler only parses the query, loads, renders and answers.
//!
//! Public so that tests can assert on what the list shows rather than on its HTML.

use chrono::{DateTime, Utc};
use maud::{html, Markup, Render};
use sundial_core::execution::Execution;
use sundial_core::job::Job;
use sundial_ports::store::{JobFilter, JobOrder, PageRequest, Store};
use sundial_service::app::{upcoming_fires, DaySuccess};
use sundial_service::{App, AppError};

use crate::bulk::bulk_form;
use crate::filter::filter_pairs;
use crate::view::{
    capitalized, chip, filter_fields, job_url, label_fields, query_string, relative,
    schedule_words, seg, when, zone_of,
};

/// Jobs per page of the list.
pub const JOBS_PER_PAGE: usize = 50;

/// One page of the jobs list, read once.
#[derive(Debug)]
pub struct JobsPage {
    /// The filter the list shows (`state`, `creator`, `service`, `parent`, `idPrefix`, labels).
    pub filter: JobFilter,
    /// The order (the store's keyset order).
    pub order: JobOrder,
    /// The cursor this page starts after; `None` on the first page.
    pub cursor: Option<String>,
    /// The cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
    /// The rows, in `order`.
    pub rows: Vec<JobRow>,
    /// When the page was read, by the control plane's clock.
    pub now: DateTime<Utc>,
    /// The session's CSRF token, carried by the bulk form.
    csrf: String,
}

/// A row of the jobs list.
#[derive(Debug)]
pub struct JobRow {
    /// The job.
    pub job: Job,
    /// Its next fire time, if it has one.
    pub next_fire: Option<DateTime<Utc>>,
    /// Its newest run, if it ever ran.
    pub last: Option<Execution>,
    /// Its runs' success over the last 24 hours.
    pub success: DaySuccess,
    /// `now`, for relative times.
    now: DateTime<Utc>,
}

impl JobsPage {
    /// Reads the page of jobs `filter` selects in `order` after `cursor`; then, at once, each
    /// row's newest run and the page's 24-hour success.
    pub async fn load<S: Store>(
        app: &App<S>,
        filter: JobFilter,
        order: JobOrder,
        cursor: Option<String>,
        csrf: &str,
    ) -> Result<JobsPage, AppError> {
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
        let (success, last_runs) =
            tokio::try_join!(app.day_success(&ids), app.newest_executions(&ids))?;
        let rows = page
            .items
            .into_iter()
            .zip(last_runs)
            .zip(success)
            .map(|((job, last), success)| JobRow {
                next_fire: upcoming_fires(&job, now, 1)
                    .first()
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.with_timezone(&Utc)),
                job,
                last,
                success,
                now,
            })
            .collect();
        Ok(JobsPage {
            filter,
            order,
            cursor,
            next_cursor: page.next_cursor,
            rows,
            now,
            csrf: csrf.to_owned(),
        })
    }

    /// The list's URL in `order` from its first page (`None`) or after `cursor`: filters kept.
    fn url(&self, order: JobOrder, cursor: Option<&String>) -> String {
        let mut pairs = filter_pairs(&self.filter);
        if order != JobOrder::Id {
            pairs.push(("sort", order.name().to_string()));
        }
        if let Some(cursor) = cursor {
            pairs.push(("cursor", cursor.clone()));
        }
        format!("/{}", query_string(&pairs))
    }

    /// A column header that sorts the list by its column: a link to the first page in that
    /// order, marked with `aria-sort` when it is the current one.
    fn sort_header(&self, (label, by, direction): (&str, JobOrder, &str)) -> Markup {
        let sorted = by == self.order;
        html! {
            th scope="col" aria-sort=[sorted.then_some(direction)] {
                a.sort href=(self.url(by, None)) aria-current=[sorted.then_some("true")] {
                    (label)
                    @if sorted {
                        span aria-hidden="true" { @if direction == "ascending" { " ▲" } @else { " ▼" } }
                    }
                    span.visually-hidden { ", sort by " (sort_words(by)) }
                }
            }
        }
    }

    fn filters(&self) -> Markup {
        let state = self.filter.state.as_deref();
        html! {
            form.filters method="get" action="/" role="search" aria-label="Filter and sort jobs" {
                div.field {
                    label for="f-state" { "State" }
                    select id="f-state" name="state" {
                        option value="" selected[state.is_none()] { "Any" }
                        option value="active" selected[state == Some("active")] { "Active" }
                        option value="paused" selected[state == Some("paused")] { "Paused" }
                    }
                }
                (filter_fields("f", &self.filter))
                (label_fields("f", &self.filter))
                div.field {
                    label for="f-sort" { "Sort by" }
                    select id="f-sort" name="sort" {
                        @for by in JobOrder::ALL {
                            option value=(by.name()) selected[self.order == by] { (capitalized(sort_words(by))) }
                        }
                    }
                }
                div.actions {
                    button type="submit" { "Apply" }
                    a href="/" { "Clear" }
                }
            }
        }
    }
}

/// The column headers that sort the list, with the order each one sorts by and its direction
/// for `aria-sort`.
const SORTABLE: [(&str, JobOrder, &str); 3] = [
    ("Job", JobOrder::Id, "ascending"),
    ("Next fire", JobOrder::NextFire, "ascending"),
    ("Last run", JobOrder::LastRun, "descending"),
];

fn sort_words(order: JobOrder) -> &'static str {
    match order {
        JobOrder::Id => "job id",
        JobOrder::NextFire => "next fire, soonest first",
        JobOrder::LastRun => "last run, latest first",
    }
}

impl Render for JobsPage {
    fn render(&self) -> Markup {
        let next = self
            .next_cursor
            .as_ref()
            .map(|c| self.url(self.order, Some(c)));
        html! {
            div.heading {
                h1 { "Jobs" }
                a.button href="/ui/jobs/new" { "New job" }
            }
            (self.filters())
            @if self.rows.is_empty() {
                p.empty { "No jobs match." }
            } @else {
                div.table-wrap {
                    table.jobs {
                        caption.visually-hidden { "Jobs, sorted by " (sort_words(self.order)) }
                        thead { tr {
                            th scope="col" {
                                span.visually-hidden { "Select" }
                                // Without the script it would do nothing: the script shows it.
                                input type="checkbox" id="select-all" aria-label="Select every job on this page" hidden;
                            }
                            (self.sort_header(SORTABLE[0]))
                            th scope="col" { "State" }
                            th scope="col" { "Schedule" }
                            (self.sort_header(SORTABLE[1]))
                            (self.sort_header(SORTABLE[2]))
                            th.success scope="col" { "Success, 24 h" }
                        } }
                        tbody {
                            @for row in &self.rows { (row) }
                        }
                    }
                }
                (bulk_form(&self.csrf, &self.filter))
            }
            @if next.is_some() || self.cursor.is_some() {
                nav.pager aria-label="Pages" {
                    @if self.cursor.is_some() { a href=(self.url(self.order, None)) { "← First page" } " " }
                    @if let Some(next) = next { a href=(next) rel="next" { "Next page →" } }
                }
            }
        }
    }
}

impl Render for JobRow {
    fn render(&self) -> Markup {
        let job = &self.job;
        let id = job.definition.job_id().as_str();
        let zone = zone_of(job);
        let now = self.now;
        let success = self.success;
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
                    @if job.definition.active() { (chip("active")) } @else {
                        (chip("paused"))
                        @if let Some(notes) = &job.state.paused_notes {
                            br; span.notes { (notes) }
                        }
                        @if let Some(until) = job.state.paused_until {
                            br; span.resumes { "resumes " (when(until, zone, now)) }
                        }
                    }
                }
                td.schedule { (schedule_words(job)) }
                td {
                    @match self.next_fire {
                        Some(t) => (when(t, zone, now)),
                        None => span.muted { "—" },
                    }
                }
                td {
                    @match &self.last {
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
}

/// A success rate in whole percent, rounded down: "100 %" only when every run succeeded.
fn percent_down(rate: f64) -> String {
    format!("{} %", (rate * 100.0).floor())
}

#[cfg(test)]
mod tests {
    use super::percent_down;

    #[test]
    fn a_success_rate_is_rounded_down_to_whole_percent() {
        assert_eq!(percent_down(0.75), "75 %");
        assert_eq!(percent_down(0.9999), "99 %");
        assert_eq!(percent_down(1.0), "100 %");
        assert_eq!(percent_down(0.0), "0 %");
    }
}
