//! A job's page (`/ui/jobs/{jobId}`) as a view model: [`JobPage::load`] makes the page's reads
//! at once and keeps what they found, typed; its [`Render`] impl draws it from small components,
//! one per section. The handler only loads, renders and answers.
//!
//! Public so that tests can assert on what the page shows (its fires, executions, definition rows)
//! rather than on its HTML; nothing else outside this crate has a use for it.

use chrono::{DateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use maud::{html, Markup, Render};
use serde_json::Value;
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::{
    is_sensitive_header, HttpMethod, Job, JobId, JobState, OverlapPolicy, RequestStep, REDACTED,
};
use sundial_core::stats::StatsWindow;
use sundial_ports::store::{JobFilter, JobOrder, PageRequest, Store};
use sundial_service::app::{upcoming_fires, JobStats, SearchFilters};
use sundial_service::{App, AppError};

use crate::ledger;
use crate::stats::job_section;
use crate::view::{chip, job_url, query_string, seg, when};
use crate::view::{pretty, schedule_words, zone_of};

/// Coming fire times on a job's page.
pub const UPCOMING: usize = 20;
/// Executions on a job's page.
pub const RECENT: usize = 20;
/// Children listed on a job's page.
pub const CHILDREN: usize = 100;

/// Everything a job's page shows, read once.
#[derive(Debug)]
pub struct JobPage {
    /// The job, its definition and state (counters, pause notes).
    pub job: Job,
    /// When the page was read, by the control plane's clock.
    pub now: DateTime<Utc>,
    /// The zone the job's times are shown in: its schedule's (UTC for a triggered-only job).
    pub zone: Tz,
    /// The definition's rows.
    pub definition: Definition,
    /// The statistics section's figures over the window asked for.
    pub stats: JobStats,
    /// The next [`UPCOMING`] fire times.
    pub fires: Vec<NextFire>,
    /// A page of [`RECENT`] executions, newest first: the latest, or those [`RunsQuery`] asks for.
    pub executions: Vec<Execution>,
    /// Which runs are listed: the state filter and the page.
    pub runs: RunsQuery,
    /// The link to the next page of runs (filter kept), when there is one.
    pub runs_next: Option<String>,
    /// The jobs whose parent this job is.
    pub children: Vec<JobId>,
    /// The last audit entries, as the API returns them.
    pub changes: Vec<Value>,
    /// The session's CSRF token, carried by the action forms.
    csrf: String,
    /// A notice after a backfill or a save.
    notice: Markup,
}

/// The definition as the page's table shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// `jobName`.
    pub name: String,
    /// `jobDescription`.
    pub description: Option<String>,
    /// `creator`, unless empty.
    pub creator: Option<String>,
    /// `creatorName`, unless empty.
    pub creator_name: Option<String>,
    /// `parentJob`.
    pub parent_job: Option<JobId>,
    /// `overlap`.
    pub overlap: OverlapPolicy,
    /// The schedule in words, or "Triggered only".
    pub schedule: String,
    /// The `request` chain, secrets hidden.
    pub requests: Vec<ShownRequest>,
    /// The job as the API returns it (secrets hidden), for the "As JSON" block.
    pub as_json: Value,
}

/// One call of a job's `request` chain as a reader may see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownRequest {
    /// The method.
    pub method: HttpMethod,
    /// The URL as written.
    pub url: String,
    /// Each header's name and value as written, a sensitive header's value [`REDACTED`].
    pub headers: Vec<(String, String)>,
}

/// A coming fire time.
#[derive(Debug, Clone, PartialEq)]
pub struct NextFire {
    /// The time.
    pub at: DateTime<Utc>,
    /// "clocks change before this: UTC+01:00 → UTC+02:00" when the zone's offset differs from
    /// the previous fire's.
    pub clock_change: Option<String>,
}

/// The runs a job's page lists (`?runState=Failed&runCursor=…`): without a state, the job's
/// executions by execute number (`GET /jobs/{id}/executions`); with one, the job's runs in that
/// state, newest scheduled first (`GET /executions?jobId=…&state=…`). A page of [`RECENT`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct RunsQuery {
    /// Only runs in this state.
    #[serde(rename = "runState", default)]
    pub state: Option<String>,
    /// The page after this cursor.
    #[serde(rename = "runCursor", default)]
    pub cursor: Option<String>,
}

impl RunsQuery {
    fn state(&self) -> Option<&str> {
        self.state.as_deref().filter(|s| !s.is_empty())
    }
}

impl JobPage {
    /// Reads job `job_id`, its figures over `window`, its latest executions and its recent
    /// changes at once, then its children when it has any.
    pub async fn load<S: Store>(
        app: &App<S>,
        job_id: &JobId,
        window: StatsWindow,
    ) -> Result<JobPage, AppError> {
        JobPage::load_runs(app, job_id, window, RunsQuery::default()).await
    }

    /// [`JobPage::load`] listing the runs `runs` asks for.
    pub async fn load_runs<S: Store>(
        app: &App<S>,
        job_id: &JobId,
        window: StatsWindow,
        runs: RunsQuery,
    ) -> Result<JobPage, AppError> {
        let (recent, last_changes) = (
            PageRequest {
                limit: RECENT,
                cursor: runs.cursor.clone().filter(|c| !c.is_empty()),
            },
            PageRequest::first(ledger::RECENT_CHANGES),
        );
        let listing = async {
            match runs.state() {
                None => app.list_executions(job_id, &recent).await,
                Some(state) => {
                    let filters = SearchFilters {
                        job_id: Some(job_id.as_str().to_owned()),
                        state: Some(state.to_owned()),
                        ..SearchFilters::default()
                    };
                    app.search_executions(&filters, &recent).await
                }
            }
        };
        let (job, stats, executions, changes) = tokio::try_join!(
            app.get_job(job_id),
            app.job_stats(job_id, window),
            listing,
            app.history(job_id, &last_changes),
        )?;
        let runs_next = executions.next_cursor.as_ref().map(|cursor| {
            let mut pairs = Vec::new();
            if let Some(state) = runs.state() {
                pairs.push(("runState", state.to_owned()));
            }
            pairs.push(("runCursor", cursor.clone()));
            format!("{}{}#runs", job_url(job_id.as_str()), query_string(&pairs))
        });
        let children = if job.state.has_children {
            let filter = JobFilter {
                parent_job: Some(job_id.as_str().to_string()),
                ..JobFilter::default()
            };
            let first = PageRequest::first(CHILDREN);
            let page = app.list_jobs(&filter, JobOrder::Id, &first).await?;
            page.items.iter().map(|c| c.job_id().clone()).collect()
        } else {
            Vec::new()
        };
        let now = app.now();
        let zone = zone_of(&job);
        Ok(JobPage {
            definition: Definition::of(&job),
            fires: next_fires(&job, zone, now),
            now,
            zone,
            stats,
            executions: executions.items,
            runs,
            runs_next,
            children,
            changes: changes.items,
            job,
            csrf: String::new(),
            notice: Markup::default(),
        })
    }

    /// The page for a session: its forms carry `csrf`, and `notice` shows under the title.
    pub(crate) fn for_session(self, csrf: &str, notice: Markup) -> JobPage {
        JobPage {
            csrf: csrf.to_string(),
            notice,
            ..self
        }
    }

    fn base(&self) -> String {
        job_url(self.job.job_id().as_str())
    }
}

fn next_fires(job: &Job, zone: Tz, now: DateTime<Utc>) -> Vec<NextFire> {
    let times: Vec<DateTime<Utc>> = upcoming_fires(job, now, UPCOMING)
        .iter()
        .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .collect();
    let previous = std::iter::once(None).chain(times.iter().copied().map(Some));
    times
        .iter()
        .zip(previous)
        .map(|(&at, before)| NextFire {
            at,
            clock_change: before.and_then(|b| clock_change(zone, b, at)),
        })
        .collect()
}

/// A note under a fire time when the zone's offset differs from the previous fire's.
fn clock_change(zone: Tz, previous: DateTime<Utc>, time: DateTime<Utc>) -> Option<String> {
    let offset = |t: DateTime<Utc>| zone.offset_from_utc_datetime(&t.naive_utc()).fix();
    let (before, after) = (offset(previous), offset(time));
    (before != after).then(|| format!("clocks change before this: UTC{before} → UTC{after}"))
}

impl Definition {
    fn of(job: &Job) -> Definition {
        let d = &job.definition;
        let present = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
        Definition {
            name: d.job_name().to_string(),
            description: d.job_description().map(str::to_string),
            creator: present(d.creator()),
            creator_name: present(d.creator_name()),
            parent_job: d.parent_job().cloned(),
            overlap: d.overlap(),
            schedule: schedule_words(job),
            requests: ShownRequest::all(job),
            as_json: job.to_api_json(),
        }
    }

    /// The optional rows, each with its label, in the table's order.
    fn optional_rows(&self) -> Vec<(&'static str, String)> {
        [
            ("Description", self.description.clone()),
            ("Creator", self.creator.clone()),
            ("Creator name", self.creator_name.clone()),
            (
                "Parent job",
                self.parent_job.as_ref().map(|p| p.as_str().to_string()),
            ),
            ("Overlap", Some(self.overlap.to_string())),
        ]
        .into_iter()
        .filter_map(|(label, value)| Some((label, value?)))
        .collect()
    }
}

impl ShownRequest {
    /// Job `job`'s `request` chain, each sensitive header's value hidden.
    pub fn all(job: &Job) -> Vec<ShownRequest> {
        let listed = job.definition.sensitive_headers();
        let shown = |step: &RequestStep| ShownRequest {
            method: step.http.method,
            url: step.http.url.as_str().to_string(),
            headers: (step.http.headers.iter())
                .map(|(name, value)| match is_sensitive_header(name, listed) {
                    true => (name.clone(), REDACTED.to_string()),
                    false => (name.clone(), value.as_str().to_string()),
                })
                .collect(),
        };
        job.definition.requests().iter().map(shown).collect()
    }
}

impl Render for ShownRequest {
    fn render(&self) -> Markup {
        html! { code { (self.method) " " (self.url) } }
    }
}

/// A request's headers as list items.
pub(crate) fn header_items(headers: &[(String, String)]) -> Markup {
    html! { @for (name, value) in headers { li { code { (name) ": " (value) } } } }
}

impl Render for Definition {
    fn render(&self) -> Markup {
        let requests = self.requests.iter().enumerate();
        html! {
            dl.definition {
                dt { "Name" } dd { (self.name) }
                @for (label, value) in self.optional_rows() { dt { (label) } dd { (value) } }
                dt { "Schedule" } dd.schedule { (self.schedule) }
                @for (i, request) in requests {
                    dt { "Request " (i + 1) }
                    dd { (request) @if !request.headers.is_empty() { ul.headers { (header_items(&request.headers)) } } }
                }
            }
            details { summary { "As JSON" } pre.json { (pretty(&self.as_json)) } }
        }
    }
}

/// The counters section.
struct Counters<'a>(&'a JobState);

impl Render for Counters<'_> {
    fn render(&self) -> Markup {
        let s = self.0;
        html! {
            dl.counters {
                dt { "Actions" } dd { (s.action_count) }
                dt { "Skipped (overlap)" } dd { (s.overlap_skipped) }
                dt { "Missed catch-up window" } dd { (s.missed_catchup_window) }
                dt { "Buffer dropped" } dd { (s.buffer_dropped) }
                @if let Some(remaining) = s.remaining_actions { dt { "Remaining actions" } dd { (remaining) } }
            }
        }
    }
}

/// The coming fires section's list.
struct Fires<'a>(&'a JobPage);

impl Render for Fires<'_> {
    fn render(&self) -> Markup {
        let page = self.0;
        let time = |at| when(at, page.zone, page.now);
        html! {
            @if page.fires.is_empty() {
                p.muted { @if page.job.definition.active() { "No fire times coming." } @else { "Paused: nothing fires until it is unpaused." } }
            } @else {
                ol.fires { @for fire in &page.fires { li { (time(fire.at)) @if let Some(note) = &fire.clock_change { " " span.dst { (note) } } } } }
            }
        }
    }
}

/// The recent executions table.
struct Executions<'a>(&'a JobPage);

impl Render for Executions<'_> {
    fn render(&self) -> Markup {
        let page = self.0;
        let state = page.runs.state();
        let filter = html! {
            form.filters method="get" action={ (page.base()) "#runs" } aria-label="Filter executions" {
                div.field {
                    label for="r-state" { "State" }
                    select id="r-state" name="runState" {
                        option value="" selected[state.is_none()] { "Any" }
                        @for s in ExecutionState::ALL {
                            option value=(s.name()) selected[state == Some(s.name())] { (s.name()) }
                        }
                    }
                }
                div.actions { button type="submit" { "Show" } }
            }
        };
        if page.executions.is_empty() {
            let empty = if state.is_some() || page.runs.cursor.is_some() {
                "No executions match."
            } else {
                "No executions yet."
            };
            return html! { (filter) p.muted { (empty) } };
        }
        let head = ["#", "State", "Scheduled", "By", "Attempts", "Error"];
        html! {
            (filter)
            div.table-wrap { table.executions {
                thead { tr { @for h in head { th scope="col" { (h) } } } }
                tbody { @for e in &page.executions { (ExecutionRow { e, zone: page.zone, now: page.now }) } }
            } }
            @if let Some(next) = &page.runs_next {
                p.pager { a href=(next) rel="next" { "Older executions →" } }
            }
            p { a href={ "/ui/executions?jobId=" (seg(page.job.job_id().as_str())) } { "Search this job's executions" } }
        }
    }
}

struct ExecutionRow<'a> {
    e: &'a Execution,
    zone: Tz,
    now: DateTime<Utc>,
}

impl Render for ExecutionRow<'_> {
    fn render(&self) -> Markup {
        let e = self.e;
        html! {
            tr {
                td { a href={ "/ui/executions/" (seg(&e.execution_id)) } { (e.execute_number) } }
                td { (chip(&e.state().to_string())) }
                td { (when(e.scheduled_time, self.zone, self.now)) }
                td { (e.scheduled_by_id) }
                td { (e.attempts()) }
                td { (e.error.as_deref().unwrap_or("")) }
            }
        }
    }
}

/// The children section, when there are any.
struct Children<'a>(&'a [JobId]);

impl Render for Children<'_> {
    fn render(&self) -> Markup {
        html! {
            @if !self.0.is_empty() {
                section aria-labelledby="children" {
                    h2 id="children" { "Children" }
                    ul { @for child in self.0 { li { a href=(job_url(child.as_str())) { (child.as_str()) } } } }
                }
            }
        }
    }
}

/// The "Why didn't it run?" form: a range of the ledger in the job's zone.
struct WhyForm<'a> {
    base: &'a str,
    zone: Tz,
}

impl Render for WhyForm<'_> {
    fn render(&self) -> Markup {
        let zone = self.zone;
        html! {
            p.hint { "What became of each fire time in a range: ran, skipped, missed, dropped, paused (with the pause's notes), … Leave both times empty for the last day (the last hour when a day holds more than 10,000 times)." }
            form.filters method="get" action={ (self.base) "/occurrences" } aria-label="Range of the ledger" {
                div.field { label for="why-from" { "From (" (zone) ")" } input id="why-from" name="from" type="datetime-local" step="1"; }
                div.field { label for="why-to" { "To (" (zone) ")" } input id="why-to" name="to" type="datetime-local" step="1"; }
                div.actions { button type="submit" { "Show the ledger" } }
            }
        }
    }
}

/// The actions section's forms: pause or unpause, edit and backfill, trigger, delete.
struct Actions<'a> {
    base: &'a str,
    id: &'a str,
    active: bool,
    csrf: &'a str,
}

impl Render for Actions<'_> {
    fn render(&self) -> Markup {
        let (base, csrf) = (self.base, self.csrf);
        let (verb, label) = match self.active {
            true => ("pause", "Pause"),
            false => ("unpause", "Unpause"),
        };
        html! {
            form.card method="post" action={ (base) "/" (verb) } {
                input type="hidden" name="csrf" value=(csrf);
                label for={ (verb) "-notes" } { (label) " notes" }
                @if self.active {
                    input id="pause-notes" name="notes" type="text" placeholder="why it is paused";
                    label for="pause-until" { "Until (optional)" }
                    input id="pause-until" name="until" type="text" maxlength="64" placeholder="2h or 2026-12-24T08:00:00Z";
                }
                @else { input id="unpause-notes" name="notes" type="text"; }
                button type="submit" { (label) }
            }
            div.card {
                a href={ (base) "/edit" } { "Edit the definition" } " · " a href={ (base) "/backfill" } { "Backfill" }
                p.hint { "Each shows what it would do before it does it." }
            }
            form.card method="post" action={ (base) "/trigger" } {
                input type="hidden" name="csrf" value=(csrf);
                label for="trigger-args" { "Trigger with arguments (JSON object)" }
                textarea id="trigger-args" name="arguments" rows="3" spellcheck="false" { "{}" }
                details {
                    summary { "Overrides" }
                    div.field {
                        label for="trigger-delay" { "Delay" }
                        input id="trigger-delay" name="delay" type="text" placeholder="10m" aria-describedby="trigger-delay-hint";
                        p.hint id="trigger-delay-hint" { "Start this much later (Scheduled until then): 90s, 10m, PT1H." }
                    }
                    div.field {
                        label for="trigger-time" { "Scheduled time" }
                        input id="trigger-time" name="scheduledTime" type="text" placeholder="2026-01-05T06:00:00Z" aria-describedby="trigger-time-hint";
                        p.hint id="trigger-time-hint" { "The nominal time the run reports (RFC 3339); default: when it starts." }
                    }
                    div.field {
                        label for="trigger-overlap" { "Overlap" }
                        select id="trigger-overlap" name="overlap" {
                            option value="" selected { "The job's" }
                            @for policy in OverlapPolicy::ALL { option value=(policy.name()) { (policy.name()) } }
                        }
                    }
                    div.field {
                        label for="trigger-key" { "Idempotency key" }
                        input id="trigger-key" name="idempotencyKey" type="text" autocomplete="off" aria-describedby="trigger-key-hint";
                        p.hint id="trigger-key-hint" { "The same key again returns the same run instead of starting another." }
                    }
                }
                button type="submit" { "Trigger now" }
            }
            form.card.danger method="post" action={ (base) "/delete" } data-confirm={ "Delete job " (self.id) " and its executions?" } {
                input type="hidden" name="csrf" value=(csrf);
                label for="delete-confirm" { "Type the job id to delete it" }
                input id="delete-confirm" name="confirm" type="text" required autocomplete="off";
                button type="submit" { "Delete" }
            }
        }
    }
}

/// A section with its heading, labelled by it.
fn section(id: &str, class: Option<&str>, heading: Markup, body: Markup) -> Markup {
    html! { section class=[class] aria-labelledby=(id) { h2 id=(id) { (heading) } (body) } }
}

impl Render for JobPage {
    fn render(&self) -> Markup {
        let (job, base) = (&self.job, self.base());
        let id = job.job_id().as_str();
        let active = job.definition.active();
        let changes = ledger::entries(&self.changes, self.zone, self.now, false);
        html! {
            p.crumbs { a href="/" { "Jobs" } " / " (id) }
            h1 { (id) " " (chip(if active { "active" } else { "paused" })) }
            (self.notice)
            @if let Some(notes) = &job.state.paused_notes { p.notes { "Notes: " (notes) } }
            @if let (false, Some(until)) = (active, job.state.paused_until) {
                p.resumes { "Resumes by itself " (when(until, self.zone, self.now)) }
            }
            (section("def", None, html! { "Definition" }, self.definition.render()))
            (section("counters", None, html! { "Counters" }, Counters(&job.state).render()))
            (job_section(&self.stats, &base))
            (section("next", None, html! { "Next " (self.fires.len()) " fires" }, Fires(self).render()))
            (section("runs", None, html! { "Recent executions" }, Executions(self).render()))
            (Children(&self.children))
            (section("why", None, html! { "Why didn't it run?" }, WhyForm { base: &base, zone: self.zone }.render()))
            (section("changes", None, html! { "Recent changes" }, html! { (changes) p { a href={ (base) "/history" } { "Full history" } } }))
            (section("act", Some("actions"), html! { "Actions" }, Actions { base: &base, id, active, csrf: &self.csrf }.render()))
        }
    }
}
