//! Bulk actions from the jobs list: pause, unpause, trigger or delete the rows selected, or every
//! job matching the list's filter (labels included), with a required reason.
//!
//! Two steps, each a plain form post: `POST /ui/bulk/jobs/preview` asks
//! [`App::bulk`](sundial_service::App::bulk) for a dry run and shows how many jobs match and
//! which (a read session may ask it, as the API's `dryRun`), with a button that posts to
//! `POST /ui/bulk/jobs` with `confirm=1` the jobs listed (by id, when they all fit in one
//! request, so a job that matches only later is left alone) or, past 1,000, the same selection;
//! there the same use case acts and the page shows each job's outcome. Both are the API's
//! `POST /bulk/jobs/{action}`: the body is built here from the form and read by
//! [`BulkRequest::parse`], so the reason's rules, the 1,000-job bound and the cursor that goes on
//! past it are the use case's. Each change is recorded in the job's audit trail as
//! `bulk:{action}` by the session's actor, for the reason given.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{html, Markup};
use serde_json::{json, Map, Value};
use sundial_ports::store::{JobFilter, Store};
use sundial_service::app::Scope as TokenScope;
use sundial_service::app::{BulkAction, BulkDone, BulkReport, BulkRequest, MAX_BULK_JOBS};

use crate::auth::Session;
use crate::filter::{field, filter_of, filter_pairs};
use crate::view::{capitalized, query_string};
use crate::view::{chip, job_url, layout, seg};
use crate::{ConsoleState, PageError};

/// The actions the list offers (a backfill needs a range: the API has it).
const ACTIONS: [BulkAction; 4] = [
    BulkAction::Pause,
    BulkAction::Unpause,
    BulkAction::Trigger,
    BulkAction::Delete,
];

/// Which jobs the form names: the boxes ticked, or the filter's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Selected,
    Filter,
}

/// A bulk form, read: what the dry run and the run are asked, and what the next step's hidden
/// fields carry again.
struct BulkForm {
    action: BulkAction,
    reason: String,
    /// A pause's end, as typed (an instant or a duration); only a pause takes it.
    until: Option<String>,
    scope: Scope,
    job_ids: Vec<String>,
    filter: JobFilter,
    cursor: Option<String>,
}

impl BulkForm {
    fn read(pairs: &[(String, String)]) -> Result<BulkForm, PageError> {
        let action = field(pairs, "action")
            .as_deref()
            .and_then(BulkAction::parse)
            .filter(|a| ACTIONS.contains(a))
            .ok_or_else(|| {
                PageError::new(
                    StatusCode::BAD_REQUEST,
                    "action: expected pause, unpause, trigger or delete",
                )
            })?;
        let scope = match field(pairs, "scope").as_deref() {
            Some("filter") => Scope::Filter,
            _ => Scope::Selected,
        };
        let filter = filter_of(pairs)?;
        // A bulk body selects one value per label key (`labels` is an object): a key given twice
        // would act on the last value's jobs while the list shows those matching both.
        if scope == Scope::Filter {
            for (i, label) in filter.labels.iter().enumerate() {
                if filter.labels[..i].iter().any(|l| l.key == label.key) {
                    return Err(PageError::new(
                        StatusCode::BAD_REQUEST,
                        format!(
                            "label: the key {:?} is given twice; a bulk action selects one value per label key",
                            label.key
                        ),
                    ));
                }
            }
        }
        Ok(BulkForm {
            action,
            reason: field(pairs, "reason").unwrap_or_default(),
            until: field(pairs, "until")
                .map(|u| u.trim().to_string())
                .filter(|u| !u.is_empty() && action == BulkAction::Pause),
            scope,
            job_ids: pairs
                .iter()
                .filter(|(k, _)| k == "jobIds")
                .map(|(_, v)| v.clone())
                .collect(),
            filter,
            cursor: field(pairs, "cursor"),
        })
    }

    /// The body of `POST /bulk/jobs/{action}` for this form.
    fn body(&self, dry_run: bool) -> Value {
        let mut body = Map::new();
        body.insert("reason".into(), json!(self.reason));
        body.insert("dryRun".into(), json!(dry_run));
        if let Some(until) = &self.until {
            body.insert("until".into(), json!(until));
        }
        match self.scope {
            Scope::Selected => {
                body.insert("jobIds".into(), json!(self.job_ids));
            }
            Scope::Filter => {
                let f = &self.filter;
                for (key, value) in [
                    ("state", &f.state),
                    ("creator", &f.creator),
                    ("parentJob", &f.parent_job),
                    ("service", &f.service),
                    ("idPrefix", &f.id_prefix),
                    ("cursor", &self.cursor),
                ] {
                    if let Some(value) = value {
                        body.insert(key.into(), json!(value));
                    }
                }
                if !f.labels.is_empty() {
                    let labels: Map<String, Value> = f
                        .labels
                        .iter()
                        .map(|l| (l.key.clone(), json!(l.value)))
                        .collect();
                    body.insert("labels".into(), Value::Object(labels));
                }
            }
        }
        Value::Object(body)
    }

    /// The hidden fields that post this selection again, from `cursor` on.
    fn hidden(&self, session: &Session, cursor: Option<&str>) -> Markup {
        html! {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="action" value=(self.action.name());
            input type="hidden" name="reason" value=(self.reason);
            @if let Some(until) = &self.until { input type="hidden" name="until" value=(until); }
            @match self.scope {
                Scope::Selected => {
                    input type="hidden" name="scope" value="selected";
                    @for id in &self.job_ids { input type="hidden" name="jobIds" value=(id); }
                }
                Scope::Filter => {
                    input type="hidden" name="scope" value="filter";
                    @for (name, value) in filter_pairs(&self.filter) {
                        input type="hidden" name=(name) value=(value);
                    }
                    @if let Some(cursor) = cursor { input type="hidden" name="cursor" value=(cursor); }
                }
            }
        }
    }

    /// The hidden fields that post the jobs `report` matched, by id, with this form's action and
    /// reason.
    fn exactly(&self, session: &Session, report: &BulkReport) -> Markup {
        html! {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="action" value=(self.action.name());
            input type="hidden" name="reason" value=(self.reason);
            @if let Some(until) = &self.until { input type="hidden" name="until" value=(until); }
            input type="hidden" name="scope" value="selected";
            @for outcome in report.outcomes.iter().filter(|o| o.result.is_ok()) {
                input type="hidden" name="jobIds" value=(outcome.job_id);
            }
        }
    }

    /// The selection in words: "the selection", "the filter label team:payments".
    fn selection_words(&self) -> String {
        match self.scope {
            Scope::Selected => "the selection".to_string(),
            Scope::Filter => {
                let words: Vec<String> = filter_pairs(&self.filter)
                    .into_iter()
                    .map(|(name, value)| format!("{} {value}", filter_name(name)))
                    .collect();
                format!("the filter {}", words.join(", "))
            }
        }
    }

    /// What both pages state: the action, the reason, which jobs.
    fn summary(&self) -> Markup {
        html! {
            dl.definition {
                dt { "Action" } dd { (self.action.name()) }
                dt { "Reason" } dd.reason { (self.reason) }
                @if let Some(until) = &self.until { dt { "Until" } dd.until { (until) } }
                dt { "Jobs" } dd { (capitalized(&self.selection_words())) }
            }
        }
    }

    /// The jobs list under this form's filter (the whole list for a selection).
    fn list_url(&self) -> String {
        match self.scope {
            Scope::Selected => "/".to_string(),
            Scope::Filter => format!("/{}", query_string(&filter_pairs(&self.filter))),
        }
    }
}

fn filter_name(name: &str) -> &str {
    match name {
        "parent" => "parent job",
        "idPrefix" => "id prefix",
        other => other,
    }
}

fn verb(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Pause => "Pause",
        BulkAction::Unpause => "Unpause",
        BulkAction::Trigger => "Trigger",
        BulkAction::Delete => "Delete",
        BulkAction::Backfill => "Backfill",
    }
}

fn jobs(n: usize) -> String {
    if n == 1 {
        "1 job".to_string()
    } else {
        format!("{n} jobs")
    }
}

/// The bulk form under the jobs list: the rows' boxes belong to it (`form="bulk"`), and it
/// carries the list's filter for "all jobs matching this filter".
pub(crate) fn bulk_form(csrf: &str, filter: &JobFilter) -> Markup {
    html! {
        form.card.bulk id="bulk" method="post" action="/ui/bulk/jobs/preview" aria-labelledby="bulk-title" {
            h2 id="bulk-title" { "Act on several jobs" }
            input type="hidden" name="csrf" value=(csrf);
            @for (name, value) in filter_pairs(filter) {
                input type="hidden" name=(name) value=(value);
            }
            fieldset.scope {
                legend { "Which jobs" }
                label { input type="radio" name="scope" value="selected" checked; " The jobs selected above" }
                label { input type="radio" name="scope" value="filter"; " All jobs matching this filter (every page)" }
            }
            div.field {
                label for="bulk-action" { "Action" }
                select id="bulk-action" name="action" {
                    @for action in ACTIONS { option value=(action.name()) { (verb(action)) } }
                }
            }
            div.field {
                label for="bulk-reason" { "Reason" }
                p.hint id="bulk-reason-hint" { "Required: recorded in each job's history." }
                input id="bulk-reason" name="reason" type="text" required maxlength="4096" aria-describedby="bulk-reason-hint";
            }
            div.field {
                label for="bulk-until" { "Pause until" }
                p.hint id="bulk-until-hint" { "Pause only, optional: the pauses end by themselves at this time (2026-12-24T08:00:00Z) or after this long (2h)." }
                input id="bulk-until" name="until" type="text" maxlength="64" aria-describedby="bulk-until-hint";
            }
            div.actions {
                button type="submit" { "Review the jobs" }
                span.muted { "Nothing changes before you confirm." }
            }
        }
    }
}

/// `POST /ui/bulk/jobs/preview`: the dry run and its confirmation page. It changes nothing, so a
/// session of scope read may ask it (as the API's `dryRun`), and sees no confirm button.
pub(crate) async fn preview<S: Store>(
    console: ConsoleState<S>,
    session: Extension<Session>,
    Form(mut pairs): Form<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    pairs.retain(|(name, _)| name != "confirm");
    bulk_jobs(console, session, Form(pairs)).await
}

/// `POST /ui/bulk/jobs`: with `confirm=1` the action and each job's outcome, else the dry run
/// and its confirmation page (see the module's doc).
pub(crate) async fn bulk_jobs<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, PageError> {
    session.check_csrf(&field(&pairs, "csrf").unwrap_or_default())?;
    let form = BulkForm::read(&pairs)?;
    let confirmed = field(&pairs, "confirm").as_deref() == Some("1");
    let request = BulkRequest::parse(form.action, &form.body(!confirmed), session.actor.clone())?;
    let report = console.app.bulk(&request).await?;
    let (title, content) = if confirmed {
        results(&session, &form, &report)
    } else {
        confirmation(&session, &form, &report)
    };
    Ok(layout(&title, Some(&session), content).into_response())
}

/// The dry run's page: how many jobs match and which, and the button that acts on them.
fn confirmation(session: &Session, form: &BulkForm, report: &BulkReport) -> (String, Markup) {
    let matched = report.outcomes.iter().filter(|o| o.result.is_ok()).count();
    let verb = verb(form.action);
    let title = format!("{verb} {}?", jobs(matched));
    let content = html! {
        p.crumbs { a href="/" { "Jobs" } " / Act on several jobs" }
        h1 { (title) }
        p.count role="status" data-matched=(matched) {
            strong { (jobs(matched)) } " match " (form.selection_words()) "."
            @if report.next_cursor.is_some() {
                " More than " (thousands(MAX_BULK_JOBS)) " match: this acts on the first "
                (thousands(MAX_BULK_JOBS)) ", and its results page goes on with the next."
            }
        }
        (form.summary())
        @if matched > 0 && session.scope != TokenScope::Write {
            p.muted { "Your token is of scope read: it may see which jobs match, not act on them." }
        } @else if matched > 0 {
            form.card.confirm.danger[form.action == BulkAction::Delete] method="post" action="/ui/bulk/jobs" {
                @if report.next_cursor.is_none() {
                    // Every match fits in one request: confirm acts on exactly the jobs listed,
                    // not on what the filter selects by the time the button is pressed.
                    (form.exactly(session, report))
                } @else {
                    (form.hidden(session, form.cursor.as_deref()))
                }
                input type="hidden" name="confirm" value="1";
                button type="submit" { (verb) " " (jobs(matched)) }
                a href=(form.list_url()) { "Cancel" }
            }
        }
        (outcome_table(form.action, report, "Jobs that match"))
    };
    (title, content)
}

/// The run's page: each job's outcome, and the way on when more jobs match.
fn results(session: &Session, form: &BulkForm, report: &BulkReport) -> (String, Markup) {
    let failed = report.outcomes.iter().filter(|o| o.result.is_err()).count();
    let done = report.outcomes.len() - failed;
    let title = format!("{}: {done} done, {failed} failed", verb(form.action));
    let content = html! {
        p.crumbs { a href="/" { "Jobs" } " / Act on several jobs" }
        h1 { (title) }
        (form.summary())
        (outcome_table(form.action, report, "Each job's outcome"))
        @if let Some(cursor) = &report.next_cursor {
            form.card method="post" action="/ui/bulk/jobs/preview" {
                p { "More jobs match than one request acts on (" (thousands(MAX_BULK_JOBS)) ")." }
                (form.hidden(session, Some(cursor)))
                button type="submit" { "Continue with the next jobs" }
            }
        }
        p { a href=(form.list_url()) { "Back to the jobs" } }
    };
    (title, content)
}

/// One row per job: matched (a dry run), done, triggered with a link to its run, or the error
/// its single-job action gave.
fn outcome_table(action: BulkAction, report: &BulkReport, caption: &str) -> Markup {
    html! {
        @if !report.outcomes.is_empty() {
            div.table-wrap {
                table.outcomes {
                    caption { (caption) }
                    thead { tr { th scope="col" { "Job" } th scope="col" { "Outcome" } } }
                    tbody {
                        @for outcome in &report.outcomes {
                            tr data-job=(outcome.job_id) data-outcome=(match &outcome.result { Ok(BulkDone::Matched) => "matched", Ok(_) => "done", Err(_) => "failed" }) {
                                td {
                                    // A deleted job's page is gone.
                                    @if action == BulkAction::Delete && matches!(outcome.result, Ok(BulkDone::Done)) {
                                        (outcome.job_id)
                                    } @else {
                                        a href=(job_url(&outcome.job_id)) { (outcome.job_id) }
                                    }
                                }
                                td {
                                    @match &outcome.result {
                                        Ok(BulkDone::Matched) => (chip("matched")),
                                        Ok(BulkDone::Triggered(run)) => {
                                            (chip("done")) " triggered: "
                                            a href={ "/ui/executions/" (seg(run)) } { (run) }
                                        }
                                        Ok(BulkDone::Backfilled(n)) => { (chip("done")) " backfilled: " (n) " runs" }
                                        Ok(BulkDone::Done) => { (chip("done")) " " (past(action)) }
                                        Err(e) => { (chip("failed")) " " span.error { (e) } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn past(action: BulkAction) -> &'static str {
    match action {
        BulkAction::Pause => "paused",
        BulkAction::Unpause => "unpaused",
        BulkAction::Trigger => "triggered",
        BulkAction::Delete => "deleted",
        BulkAction::Backfill => "backfilled",
    }
}

/// `1,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
