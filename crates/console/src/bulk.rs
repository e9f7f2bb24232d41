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
use maud::{html, Markup, Render};
use serde_json::{json, Map, Value};
use sundial_ports::store::{JobFilter, Store};
use sundial_service::app::Scope as TokenScope;
use sundial_service::app::{BulkAction, BulkDone, BulkReport, BulkRequest, MAX_BULK_JOBS};

use crate::filter::{field, filter_of, filter_pairs};
use crate::session::Session;
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
    let page = BulkPage::new(&form, &report, confirmed, session.scope);
    let content = BulkView {
        page: &page,
        session: &session,
    }
    .render();
    Ok(layout(&page.title, Some(&session), content).into_response())
}

/// What a bulk page shows, read from the form, the use case's report and the session: no HTML, so
/// tests read it. A dry run's page (`confirmed` false) asks to confirm; a run's page reports.
pub(crate) struct BulkPage<'a> {
    form: &'a BulkForm,
    report: &'a BulkReport,
    /// The page's title: the question or the tally.
    title: String,
    /// Whether this is the run's page (else the dry run's).
    confirmed: bool,
    /// Jobs the dry run matched, or the run acted on.
    done: usize,
    /// The confirm button, when the dry run matched jobs and the session may act on them.
    confirm: Option<Confirm>,
    /// Whether jobs matched but the session's token is of scope read.
    read_only: bool,
    /// One row per job.
    rows: Vec<OutcomeRow<'a>>,
}

/// How the confirm button posts the selection again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Confirm {
    /// Every match fits in one request: exactly the jobs listed, by id, so a job that matches
    /// only by the time the button is pressed is left alone.
    Exactly,
    /// More match than one request acts on: the same selection, from the form's cursor.
    Selection,
}

/// A job's row: its id, whether it links to the job's page, and what became of it.
#[derive(Debug, PartialEq)]
struct OutcomeRow<'a> {
    job_id: &'a str,
    /// A deleted job's page is gone.
    linked: bool,
    outcome: Outcome<'a>,
}

/// What became of one job.
#[derive(Debug, PartialEq)]
enum Outcome<'a> {
    Matched,
    Triggered(&'a str),
    Backfilled(usize),
    Done,
    Failed(String),
}

impl Outcome<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Outcome::Matched => "matched",
            Outcome::Failed(_) => "failed",
            _ => "done",
        }
    }
}

impl<'a> BulkPage<'a> {
    /// The page of `form`'s dry run (`confirmed` false) or run, which gave `report`, for a
    /// session of `scope`.
    fn new(form: &'a BulkForm, report: &'a BulkReport, confirmed: bool, scope: TokenScope) -> Self {
        let failed = report.outcomes.iter().filter(|o| o.result.is_err()).count();
        let done = report.outcomes.len() - failed;
        let verb = verb(form.action);
        let title = if confirmed {
            format!("{verb}: {done} done, {failed} failed")
        } else {
            format!("{verb} {}?", jobs(done))
        };
        let may_act = !confirmed && done > 0 && scope == TokenScope::Write;
        let confirm = may_act.then_some(match report.next_cursor {
            None => Confirm::Exactly,
            Some(_) => Confirm::Selection,
        });
        let rows = report
            .outcomes
            .iter()
            .map(|outcome| {
                let outcome_of = match &outcome.result {
                    Ok(BulkDone::Matched) => Outcome::Matched,
                    Ok(BulkDone::Triggered(run)) => Outcome::Triggered(run),
                    Ok(BulkDone::Backfilled(n)) => Outcome::Backfilled(*n),
                    Ok(BulkDone::Done) => Outcome::Done,
                    Err(e) => Outcome::Failed(e.to_string()),
                };
                OutcomeRow {
                    job_id: &outcome.job_id,
                    linked: !(form.action == BulkAction::Delete && outcome_of == Outcome::Done),
                    outcome: outcome_of,
                }
            })
            .collect();
        BulkPage {
            form,
            report,
            title,
            confirmed,
            done,
            confirm,
            read_only: !confirmed && done > 0 && scope != TokenScope::Write,
            rows,
        }
    }
}

/// The page's content for `session` (whose form token and selection the buttons post).
struct BulkView<'p, 'a> {
    page: &'p BulkPage<'a>,
    session: &'p Session,
}

impl Render for BulkView<'_, '_> {
    fn render(&self) -> Markup {
        let (page, form, session) = (self.page, self.page.form, self.session);
        let more = page.report.next_cursor.as_ref();
        html! {
            p.crumbs { a href="/" { "Jobs" } " / Act on several jobs" }
            h1 { (page.title) }
            @if page.confirmed {
                (form.summary())
                (OutcomeTable { page, caption: "Each job's outcome" })
                @if let Some(cursor) = more {
                    form.card method="post" action="/ui/bulk/jobs/preview" {
                        p { "More jobs match than one request acts on (" (thousands(MAX_BULK_JOBS)) ")." }
                        (form.hidden(session, Some(cursor)))
                        button type="submit" { "Continue with the next jobs" }
                    }
                }
                p { a href=(form.list_url()) { "Back to the jobs" } }
            } @else {
                p.count role="status" data-matched=(page.done) {
                    strong { (jobs(page.done)) } " match " (form.selection_words()) "."
                    @if more.is_some() {
                        " More than " (thousands(MAX_BULK_JOBS)) " match: this acts on the first "
                        (thousands(MAX_BULK_JOBS)) ", and its results page goes on with the next."
                    }
                }
                (form.summary())
                @if page.read_only {
                    p.muted { "Your token is of scope read: it may see which jobs match, not act on them." }
                }
                @if let Some(confirm) = page.confirm {
                    form.card.confirm.danger[form.action == BulkAction::Delete] method="post" action="/ui/bulk/jobs" {
                        @match confirm {
                            Confirm::Exactly => (form.exactly(session, page.report)),
                            Confirm::Selection => (form.hidden(session, form.cursor.as_deref())),
                        }
                        input type="hidden" name="confirm" value="1";
                        button type="submit" { (verb(form.action)) " " (jobs(page.done)) }
                        a href=(form.list_url()) { "Cancel" }
                    }
                }
                (OutcomeTable { page, caption: "Jobs that match" })
            }
        }
    }
}

/// One row per job: matched (a dry run), done, triggered with a link to its run, or the error
/// its single-job action gave.
struct OutcomeTable<'p, 'a> {
    page: &'p BulkPage<'a>,
    caption: &'static str,
}

impl Render for OutcomeTable<'_, '_> {
    fn render(&self) -> Markup {
        let action = self.page.form.action;
        html! {
            @if !self.page.rows.is_empty() {
                div.table-wrap {
                    table.outcomes {
                        caption { (self.caption) }
                        thead { tr { th scope="col" { "Job" } th scope="col" { "Outcome" } } }
                        tbody {
                            @for row in &self.page.rows {
                                tr data-job=(row.job_id) data-outcome=(row.outcome.kind()) {
                                    td {
                                        @if row.linked {
                                            a href=(job_url(row.job_id)) { (row.job_id) }
                                        } @else {
                                            (row.job_id)
                                        }
                                    }
                                    td {
                                        @match &row.outcome {
                                            Outcome::Matched => (chip("matched")),
                                            Outcome::Triggered(run) => {
                                                (chip("done")) " triggered: "
                                                a href={ "/ui/executions/" (seg(run)) } { (run) }
                                            }
                                            Outcome::Backfilled(n) => { (chip("done")) " backfilled: " (n) " runs" }
                                            Outcome::Done => { (chip("done")) " " (past(action)) }
                                            Outcome::Failed(e) => { (chip("failed")) " " span.error { (e) } }
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

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_service::app::{AppError, BulkOutcome};

    fn form(action: BulkAction) -> BulkForm {
        BulkForm {
            action,
            reason: "freeze".into(),
            until: None,
            scope: Scope::Selected,
            job_ids: vec!["a".into(), "b".into()],
            filter: JobFilter::default(),
            cursor: None,
        }
    }

    fn report(results: Vec<(&str, Result<BulkDone, AppError>)>, more: bool) -> BulkReport {
        BulkReport {
            outcomes: results
                .into_iter()
                .map(|(id, result)| BulkOutcome {
                    job_id: id.into(),
                    result,
                })
                .collect(),
            next_cursor: more.then(|| "next".to_string()),
        }
    }

    #[test]
    fn a_dry_run_asks_to_confirm_exactly_the_jobs_it_matched() {
        let form = form(BulkAction::Pause);
        let report = report(
            vec![("a", Ok(BulkDone::Matched)), ("b", Ok(BulkDone::Matched))],
            false,
        );
        let page = BulkPage::new(&form, &report, false, TokenScope::Write);
        assert_eq!(page.title, "Pause 2 jobs?");
        assert_eq!(page.confirm, Some(Confirm::Exactly));
        assert!(!page.read_only);
        assert!(page
            .rows
            .iter()
            .all(|r| r.outcome == Outcome::Matched && r.linked));
        // More than one request's worth: the confirm posts the selection from its cursor.
        let more = super::tests::report(vec![("a", Ok(BulkDone::Matched))], true);
        let page = BulkPage::new(&form, &more, false, TokenScope::Write);
        assert_eq!(page.confirm, Some(Confirm::Selection));
    }

    #[test]
    fn a_read_session_sees_the_matches_and_no_button() {
        let form = form(BulkAction::Delete);
        let report = report(vec![("a", Ok(BulkDone::Matched))], false);
        let page = BulkPage::new(&form, &report, false, TokenScope::Read);
        assert_eq!((page.confirm, page.read_only), (None, true));
        let none = super::tests::report(vec![], false);
        let page = BulkPage::new(&form, &none, false, TokenScope::Write);
        assert_eq!(
            (page.title.as_str(), page.confirm),
            ("Delete 0 jobs?", None)
        );
    }

    #[test]
    fn a_run_tallies_each_outcome_and_unlinks_deleted_jobs() {
        let form = form(BulkAction::Delete);
        let report = report(
            vec![
                ("a", Ok(BulkDone::Done)),
                ("b", Err(AppError::Conflict("job b is busy; retry".into()))),
            ],
            false,
        );
        let page = BulkPage::new(&form, &report, true, TokenScope::Write);
        assert_eq!(page.title, "Delete: 1 done, 1 failed");
        assert_eq!((page.done, page.confirm), (1, None));
        assert_eq!(
            page.rows,
            [
                OutcomeRow {
                    job_id: "a",
                    linked: false,
                    outcome: Outcome::Done
                },
                OutcomeRow {
                    job_id: "b",
                    linked: true,
                    outcome: Outcome::Failed("job b is busy; retry".into())
                },
            ]
        );
        let triggered =
            super::tests::report(vec![("a", Ok(BulkDone::Triggered("a~t~k".into())))], false);
        let trigger = super::tests::form(BulkAction::Trigger);
        let page = BulkPage::new(&trigger, &triggered, true, TokenScope::Write);
        assert_eq!(page.rows[0].outcome, Outcome::Triggered("a~t~k"));
        assert_eq!(page.rows[0].outcome.kind(), "done");
    }
}
