//! An execution's page (`/ui/executions/{executionId}`) as a view model: [`ExecutionPage::load`]
//! reads the execution and its job and keeps what the page shows, typed; its [`Render`] impl
//! draws it from one component per section. The handler only loads, renders and answers.
//!
//! Public so that tests can assert on what the page shows rather than on its HTML.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use maud::{html, Markup, Render};
use serde_json::Value;
use sundial_core::execution::{Execution, ExecutionEvent, ExecutionId};
use sundial_ports::store::{PageRequest, Store};
use sundial_service::{App, AppError};

use crate::executions_page::Runs;
use crate::job_page::{header_items, ShownRequest};
use crate::view::{chip, job_url, seg, when};
use crate::view::{pretty, zone_of};

/// How much of a result or response body an execution page shows.
pub const BODY_LIMIT: usize = 2_000;

/// Runs of the job's children started by this run, listed on its page.
pub const CHILD_RUNS: usize = 50;

/// Everything an execution's page shows, read once.
#[derive(Debug)]
pub struct ExecutionPage {
    /// The execution: its state, times, attempts, retries, event log, bodies.
    pub execution: Execution,
    /// When the page was read, by the control plane's clock.
    pub now: DateTime<Utc>,
    /// The zone of its job's schedule (UTC when the job is triggered only or gone).
    pub zone: Tz,
    /// Its job's `request` chain as the job defines it now, secrets hidden (none when the job is
    /// gone).
    pub requests: Vec<ShownRequest>,
    /// The runs of its job's children that name this run as their parent execution
    /// (`parentJobExecution`), newest first, at most [`CHILD_RUNS`]: seed 002's child job logs.
    pub children: Vec<Execution>,
    /// Whether more children's runs than [`CHILD_RUNS`] exist.
    pub more_children: bool,
    /// The session's CSRF token, carried by the action forms.
    csrf: String,
}

impl ExecutionPage {
    /// Reads execution `execution_id`, then its job (the execution names it, so the reads are in
    /// turn); a job deleted since is no error.
    pub async fn load<S: Store>(
        app: &App<S>,
        execution_id: &ExecutionId,
    ) -> Result<ExecutionPage, AppError> {
        let execution = app.get_execution(execution_id).await?;
        let first = PageRequest::first(CHILD_RUNS);
        let (job, children) = tokio::join!(
            app.get_job(&execution.job_id),
            app.child_executions(&execution.job_id, Some(execution.execute_number), &first),
        );
        let job = job.ok();
        let children = children?;
        Ok(ExecutionPage {
            now: app.now(),
            zone: job.as_ref().map_or(Tz::UTC, zone_of),
            requests: job.as_ref().map(ShownRequest::all).unwrap_or_default(),
            more_children: children.next_cursor.is_some(),
            children: children.items,
            execution,
            csrf: String::new(),
        })
    }

    /// The page for a session: its forms carry `csrf`.
    pub(crate) fn for_session(self, csrf: &str) -> ExecutionPage {
        ExecutionPage {
            csrf: csrf.to_string(),
            ..self
        }
    }

    /// The page's title.
    pub(crate) fn title(&self) -> String {
        format!("Execution #{}", self.execution.execute_number)
    }

    fn when(&self, time: DateTime<Utc>) -> Markup {
        when(time, self.zone, self.now)
    }
}

fn truncated(text: String) -> String {
    if text.len() <= BODY_LIMIT {
        return text;
    }
    let mut end = BODY_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

/// A JSON body, pretty and cut at [`BODY_LIMIT`].
struct Body<'a>(&'a Value);

impl Render for Body<'_> {
    fn render(&self) -> Markup {
        html! { pre.json { (truncated(pretty(self.0))) } }
    }
}

/// The summary table: id, times, attempts, retries, error and bodies.
struct Summary<'a>(&'a ExecutionPage);

impl Render for Summary<'_> {
    fn render(&self) -> Markup {
        let (page, e) = (self.0, &self.0.execution);
        let retries = &e.run.retries;
        let by_code = retries.retries_by_code.iter().enumerate();
        let bodies = [
            ("Arguments", &e.arguments),
            ("Progress", &e.progress),
            ("Result", &e.result),
        ];
        html! {
            dl.definition {
                dt { "Execution id" } dd { code { (e.execution_id) } }
                dt { "Scheduled" } dd { (page.when(e.scheduled_time)) }
                dt { "Scheduled by" } dd { (e.scheduled_by_id) }
                @if let Some(t) = e.started_at() { dt { "Started" } dd { (page.when(t)) } }
                @if let Some(t) = e.finished_at() { dt { "Finished" } dd { (page.when(t)) } }
                dt { "Attempts" } dd { (e.attempts()) }
                @if retries.retries > 0 {
                    dt { "Retries" }
                    dd { (retries.retries) " (" @for (i, (code, n)) in by_code { @if i > 0 { ", " } (n) " after " (code) } ")" }
                }
                @if let Some(t) = e.run.retry_at { dt { "Next attempt" } dd { (page.when(t)) } }
                @if let Some(error) = &e.error { dt { "Error" } dd.error { (error) } }
                @for (label, body) in bodies { @if let Some(body) = body { dt { (label) } dd { (Body(body)) } } }
            }
        }
    }
}

/// One entry of the event log.
struct Event<'a>(&'a ExecutionPage, &'a ExecutionEvent);

impl Render for Event<'_> {
    fn render(&self) -> Markup {
        let event = self.1;
        html! {
            li {
                (self.0.when(event.at)) " "
                @if let Some(from) = event.from { (chip(&from.to_string())) " → " }
                (chip(&event.to.to_string()))
                @if !event.message.is_empty() { " " span.message { (event.message) } }
            }
        }
    }
}

/// The event log section.
struct EventLog<'a>(&'a ExecutionPage);

impl Render for EventLog<'_> {
    fn render(&self) -> Markup {
        let (page, e) = (self.0, &self.0.execution);
        html! {
            section aria-labelledby="log" {
                h2 id="log" { "Event log" }
                @if e.dropped_events() > 0 { p.muted { (e.dropped_events()) " older events dropped (the log is capped)." } }
                ol.timeline { @for event in e.events() { (Event(page, event)) } }
            }
        }
    }
}

/// The requests section: each call as the job defines it, with the key of its last attempt and
/// its response.
struct Requests<'a>(&'a ExecutionPage);

impl Render for Requests<'_> {
    fn render(&self) -> Markup {
        let e = &self.0.execution;
        let key = |i: usize| format!("{}:{}:{i}", e.execution_id, e.attempts().max(1));
        html! {
            section aria-labelledby="req" {
                h2 id="req" { "Requests" }
                p.hint { "As the job defines them; sensitive header values are shown as ***. Each attempt's call carries Idempotency-Key EXECUTION:ATTEMPT:STEP." }
                @for (i, request) in self.0.requests.iter().enumerate() {
                    div.card {
                        p { (request) }
                        ul.headers { (header_items(&request.headers)) li { code { "Idempotency-Key: " (key(i)) } } }
                        @if let Some(response) = e.run.responses.get(i) { p { "Response:" } (Body(response)) }
                    }
                }
            }
        }
    }
}

/// The actions of a run not finished: cancel, terminate.
struct Actions<'a> {
    base: &'a str,
    csrf: &'a str,
}

impl Render for Actions<'_> {
    fn render(&self) -> Markup {
        let (base, csrf) = (self.base, self.csrf);
        html! {
            section.actions aria-labelledby="act" {
                h2 id="act" { "Actions" }
                form.card method="post" action={ (base) "/cancel" } {
                    input type="hidden" name="csrf" value=(csrf);
                    label for="cancel-reason" { "Reason" }
                    input id="cancel-reason" name="reason" type="text" placeholder="cancelled by a user";
                    button type="submit" { "Cancel" }
                }
                form.card.danger method="post" action={ (base) "/terminate" } data-confirm="Terminate this execution?" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="reason" value="terminated by a user";
                    button type="submit" { "Terminate" }
                }
            }
        }
    }
}

impl Render for ExecutionPage {
    fn render(&self) -> Markup {
        let e = &self.execution;
        let (finished, job_id) = (e.is_finished(), e.job_id.as_str());
        let base = format!("/ui/executions/{}", seg(&e.execution_id));
        html! {
            @if !finished { meta http-equiv="refresh" content="2"; }
            p.crumbs { a href="/" { "Jobs" } " / " a href=(job_url(job_id)) { (job_id) } " / #" (e.execute_number) }
            h1 { "Execution #" (e.execute_number) " " (chip(&e.state().to_string())) }
            @if !finished { p.live role="status" { "Running: this page refreshes every 2 seconds." } }
            (Summary(self))
            (EventLog(self))
            @if !self.requests.is_empty() { (Requests(self)) }
            @if !self.children.is_empty() {
                section aria-labelledby="children-runs" {
                    h2 id="children-runs" { "Children's runs" }
                    (Runs { runs: &self.children, now: self.now, with_job: true })
                    @if self.more_children {
                        p.hint { "The newest " (CHILD_RUNS) " are shown; "
                            code { "GET /main/getChildJobLogs" } " lists them all." }
                    }
                }
            }
            @if !finished { (Actions { base: &base, csrf: &self.csrf }) }
        }
    }
}
