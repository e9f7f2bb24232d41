//! "Why didn't it run?" and "Who changed it?": a job's non-run ledger
//! (`/ui/jobs/{jobId}/occurrences`, the figures of [`App::occurrences`], the use case of
//! `GET /jobs/{jobId}/occurrences`) and its audit trail (`/ui/jobs/{jobId}/history`,
//! [`App::audit_entries`], as `GET /jobs/{jobId}/history`).
//!
//! The ledger's range is picked in the job's own zone (`datetime-local` fields); each nominal time
//! is shown with what became of it and a link to what explains it: its execution, the runs that
//! held the slot, or the history entry of the pause or the creation. Long ranges fold runs of
//! consecutive times with the same fate into one row, so a day of an every-second job stays a
//! page. The history lists each change with its actor, reason and, for an update, the fields
//! that changed; `?at=` opens it at the entry of a time, which the ledger's links use.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, Duration, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;
use sundial_core::ledger::{Fate, RangeReason};
use sundial_ports::store::{AuditQuery, PageRequest, Store};
use sundial_service::app::parse_job_id;
use sundial_service::AppError;

use crate::session::Session;
use crate::view::zone_of;
use crate::view::{chip, job_url, layout, seg, when};
use crate::{ConsoleState, PageError};

/// Up to this many times the ledger shows every time on its own row; past it, consecutive
/// times with the same fate share one.
pub(crate) const EACH_ON_ITS_OWN: usize = 200;
/// The most rows the ledger shows; past it, it says how many more and asks for a narrower range.
pub(crate) const MAX_ROWS: usize = 500;
/// History entries per page.
const HISTORY_PAGE: usize = 50;
/// History entries on a job's page.
pub(crate) const RECENT_CHANGES: usize = 5;

/// The value of a `datetime-local` field for `time` in `zone`, to the second (so a range read
/// back from its fields is the range shown).
pub(crate) fn local_input(time: DateTime<Utc>, zone: Tz) -> String {
    zone.from_utc_datetime(&time.naive_utc())
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string()
}

/// A `datetime-local` value (`2026-03-08T02:30`, seconds optional) read in `zone`: the earlier
/// instant of a wall time the clocks repeat; an error in words for one they skip or a malformed
/// value.
pub(crate) fn parse_local(text: &str, zone: Tz) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S"))
        .map_err(|_| format!("{text:?} is not a date and time (YYYY-MM-DDTHH:MM)"))?;
    zone.from_local_datetime(&naive)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| format!("{text} does not exist in {zone}: the clocks skip it"))
}

/// One row of the ledger: a time, or a run of consecutive times with the same fate.
pub(crate) struct Row<'a> {
    pub(crate) first: DateTime<Utc>,
    pub(crate) last: DateTime<Utc>,
    pub(crate) count: usize,
    pub(crate) fate: &'a Fate,
    /// The last time's fate when the row holds several (its execution, for a run of `ran`).
    last_fate: &'a Fate,
}

/// Whether two fates read the same in a folded row: the same status and explanation, whatever
/// their executions.
fn same_reason(a: &Fate, b: &Fate) -> bool {
    match (a, b) {
        (Fate::Ran { state: x, .. }, Fate::Ran { state: y, .. }) => x == y,
        (Fate::Skipped { .. }, Fate::Skipped { .. })
        | (Fate::Missed { .. }, Fate::Missed { .. })
        | (Fate::Dropped { .. }, Fate::Dropped { .. }) => true,
        (Fate::DstGap(_), _) | (_, Fate::DstGap(_)) => false,
        _ => a == b,
    }
}

/// The rows of `entries`: each on its own up to [`EACH_ON_ITS_OWN`], else folded by reason.
pub(crate) fn rows(entries: &[(DateTime<Utc>, Fate)]) -> Vec<Row<'_>> {
    let fold = entries.len() > EACH_ON_ITS_OWN;
    let mut rows: Vec<Row<'_>> = Vec::new();
    for (time, fate) in entries {
        if let Some(row) = rows
            .last_mut()
            .filter(|r| fold && same_reason(r.fate, fate))
        {
            row.last = *time;
            row.count += 1;
            row.last_fate = fate;
            continue;
        }
        rows.push(Row {
            first: *time,
            last: *time,
            count: 1,
            fate,
            last_fate: fate,
        });
    }
    rows
}

/// How a status reads on the page.
fn status_words(fate: &Fate) -> &'static str {
    match fate {
        Fate::NotYetCreated => "before created",
        Fate::Ended => "ended",
        Fate::Ran { .. } => "ran",
        Fate::Skipped { .. } => "skipped (overlap)",
        Fate::Missed { .. } => "missed",
        Fate::Dropped { .. } => "dropped (buffer full)",
        Fate::Paused { .. } => "paused",
        Fate::DebugMode => "debug mode",
        Fate::DstGap(_) => "DST gap",
        Fate::Calendar { .. } => "calendar",
        Fate::Ahead => "not yet",
        Fate::NoRecord => "no record",
    }
}

/// A fate's chip, styled by its status (`chip-ran`, `chip-paused`, …), in words.
pub(crate) fn status_chip(fate: &Fate) -> Markup {
    let class = format!("chip chip-{}", fate.status().to_ascii_lowercase());
    html! { span class=(class) { (status_words(fate)) } }
}

fn execution_link(execution_id: &str, text: Markup) -> Markup {
    html! { a href={ "/ui/executions/" (seg(execution_id)) } { (text) } }
}

/// The history page opened at the change in force at `at` (the latest made at or before it).
fn history_at(job_id: &str, at: DateTime<Utc>) -> String {
    format!(
        "{}/history?at={}",
        job_url(job_id),
        seg(&at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    )
}

/// How many times of each status `entries` hold, in the order the statuses first appear.
pub(crate) fn counts(entries: &[(DateTime<Utc>, Fate)]) -> Vec<(&Fate, usize)> {
    let mut counts: Vec<(&Fate, usize)> = Vec::new();
    for (_, fate) in entries {
        match counts.iter_mut().find(|(f, _)| f.status() == fate.status()) {
            Some(count) => count.1 += 1,
            None => counts.push((fate, 1)),
        }
    }
    counts
}

/// What explains a fate, with its links.
pub(crate) fn explanation(
    job_id: &str,
    row: &Row<'_>,
    zone: Tz,
    created_at: Option<DateTime<Utc>>,
) -> Markup {
    let folded = row.count > 1;
    html! {
        @match row.fate {
            Fate::Ran { execution_id, state } => {
                (chip(state)) " "
                @if folded {
                    (execution_link(execution_id, html! { "first" }))
                    @if let Fate::Ran { execution_id: last, .. } = row.last_fate {
                        " … " (execution_link(last, html! { "last" }))
                    }
                } @else {
                    (execution_link(execution_id, html! { code { (execution_id) } }))
                }
            }
            Fate::Skipped { execution_id, held_by } => {
                "another run held the slot"
                @if let Some(held) = held_by {
                    ": "
                    @for (i, id) in held.split(',').map(str::trim).filter(|id| !id.is_empty()).enumerate() {
                        @if i > 0 { ", " }
                        (execution_link(id, html! { code { (id) } }))
                    }
                }
                @if !folded { " · " (execution_link(execution_id, html! { "the skipped run" })) }
            }
            Fate::Missed { execution_id } => {
                "older than the catch-up window when the engine reached it, or left out by the catch-up policy"
                @if let (false, Some(id)) = (folded, execution_id) { " · " (execution_link(id, html! { "its run" })) }
            }
            Fate::Dropped { execution_id } => {
                "dropped from a full buffer"
                @if let (false, Some(id)) = (folded, execution_id) { " · " (execution_link(id, html! { "its run" })) }
            }
            Fate::Paused { notes, since } => {
                "paused"
                @if let Some(notes) = notes { ": " span.notes { (notes) } }
                " · " a href=(history_at(job_id, *since)) { "the pause in the history" }
            }
            Fate::DebugMode => { "debug mode was on: fires due meanwhile do not run" }
            Fate::DstGap(gap) => {
                (gap.wall_time.format("%Y-%m-%d %H:%M"))
                @if gap.count > 1 { " (and " (gap.count - 1) " more)" }
                " did not exist in " (zone) ": "
                @match gap.moved_to {
                    Some(moved) => { "moved to " (zone.from_utc_datetime(&moved.naive_utc()).format("%H:%M %Z")) }
                    None => { "not run" }
                }
                " (dst.gap " code { (gap.policy) } ")"
            }
            Fate::Calendar { calendar, rule } => {
                "removed by calendar "
                a href={ "/ui/calendars/" (seg(calendar)) } { (calendar) }
                @if *rule == "onlyOn" { " (not one of its " code { "onlyOn" } " days)" } @else { " (" code { "exclude" } ")" }
            }
            Fate::NotYetCreated => {
                "the job did not exist yet"
                @if let Some(created) = created_at { " · " a href=(history_at(job_id, created)) { "its creation" } }
            }
            Fate::Ended => { "the job was deleted or its remaining actions were spent" }
            Fate::Ahead => { "not due yet, or not planned yet" }
            Fate::NoRecord => { "nothing is stored about it: its run was removed by retention" }
        }
    }
}

pub(crate) fn range_kind(reason: RangeReason) -> &'static str {
    match reason {
        RangeReason::Missed => "missed",
        RangeReason::Dropped => "dropped",
        RangeReason::DebugMode => "debug mode",
        RangeReason::Paused => "paused",
    }
}

/// `?at=` (RFC 3339) and `?cursor=` of the history page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct HistoryQuery {
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

/// `/ui/jobs/{jobId}/history`: every change of the job, newest first, from `?at=` when given
/// (that time's entry marked).
pub(crate) async fn history<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(job_id): Path<String>,
    Query(query): Query<HistoryQuery>,
) -> Result<Response, PageError> {
    let app = &console.app;
    let id = parse_job_id(&job_id)?;
    // A deleted job keeps its history, shown in UTC.
    let zone = match app.get_job(&id).await {
        Ok(job) => zone_of(&job),
        Err(AppError::NotFound(_)) => Tz::UTC,
        Err(e) => return Err(e.into()),
    };
    let at = match query.at.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(text) => Some(
            DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    PageError::new(
                        StatusCode::BAD_REQUEST,
                        format!("at: {text:?} is not an RFC 3339 time: {e}"),
                    )
                })?,
        ),
    };
    let cursor = query.cursor.clone().filter(|c| !c.is_empty());
    let page = app
        .audit_entries(
            &id,
            &AuditQuery {
                from: None,
                to: at.map(|t| t + Duration::milliseconds(1)),
                oldest_first: false,
            },
            &PageRequest {
                limit: HISTORY_PAGE,
                cursor: cursor.clone(),
            },
        )
        .await?;
    let now = app.now();
    // The first entry is the change in force at `at`.
    let marked = at.is_some() && cursor.is_none();
    let base = job_url(&job_id);
    let next = page.next_cursor.as_ref().map(|c| {
        let mut url = format!("{base}/history?cursor={}", seg(c));
        if let Some(at) = at {
            url.push_str(&format!("&at={}", seg(&at.to_rfc3339())));
        }
        url
    });
    let content = html! {
        p.crumbs { a href="/" { "Jobs" } " / " a href=(base) { (job_id) } " / history" }
        h1 { "History " span.muted { (job_id) } }
        p.hint {
            "Every change to the job, newest first: who made it, why, and what it changed. "
            a href={ (base) "/occurrences" } { "Why didn't it run?" }
        }
        @if at.is_some() { p { "From " (when(at.unwrap_or(now), zone, now)) " back. " a href={ (base) "/history" } { "From the newest" } } }
        (entries(&page.items, zone, now, marked))
        @if let Some(next) = next { nav.pager aria-label="Pages" { a href=(next) rel="next" { "Older changes →" } } }
    };
    Ok(layout(&format!("{job_id}: history"), Some(&session), content).into_response())
}

fn text<'a>(entry: &'a Value, key: &str) -> &'a str {
    entry.get(key).and_then(Value::as_str).unwrap_or("")
}

fn shown(value: Option<&Value>) -> String {
    match value {
        None => "—".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// History entries as a list: when, who, what, why, the state after, and an update's changes.
/// With `mark_first` (the history page's `?at=`), the first entry is highlighted.
pub(crate) fn entries(items: &[Value], zone: Tz, now: DateTime<Utc>, mark_first: bool) -> Markup {
    html! {
        @if items.is_empty() {
            p.muted { "No changes recorded." }
        } @else {
            ol.history {
                @for (i, entry) in items.iter().enumerate() {
                    @let at = DateTime::parse_from_rfc3339(text(entry, "at")).ok().map(|t| t.with_timezone(&Utc));
                    @let is_marked = mark_first && i == 0;
                    li.entry.marked[is_marked] id=[at.map(|a| format!("entry-{}", a.timestamp_millis()))]
                        data-action=(text(entry, "action")) aria-current=[is_marked.then_some("true")] {
                        p.head {
                            @if let Some(at) = at { (when(at, zone, now)) " " }
                            strong { (text(entry, "actor")) } " "
                            (chip(text(entry, "action")))
                            @if !text(entry, "state").is_empty() { " → " (chip(text(entry, "state"))) }
                            " " span.muted { "version " (shown(entry.get("version"))) }
                        }
                        @if !text(entry, "reason").is_empty() { p.reason { "Why: " span.notes { (text(entry, "reason")) } } }
                        @if !text(entry, "executionId").is_empty() {
                            p { "Run: " (execution_link(text(entry, "executionId"), html! { code { (text(entry, "executionId")) } })) }
                        }
                        @if let Some(count) = entry.get("count") { p { "Times selected: " (count) } }
                        @if let Some(changes) = entry.get("changes").and_then(Value::as_array) {
                            table.diff {
                                caption.visually-hidden { "Fields changed" }
                                thead { tr { th scope="col" { "Field" } th scope="col" { "Before" } th scope="col" { "After" } } }
                                tbody {
                                    @for change in changes {
                                        tr {
                                            td { code { (text(change, "path")) } }
                                            td.old { code { (shown(change.get("old"))) } }
                                            td.new { code { (shown(change.get("new"))) } }
                                        }
                                    }
                                }
                            }
                            @if entry.get("changesTruncated") == Some(&Value::Bool(true)) {
                                p.hint { "The values were too large to keep: only the fields' paths are shown; the definition after is below." }
                            }
                        }
                        @if let Some(definition) = entry.get("definition") {
                            details { summary { "Definition in force after it" } pre.json { (serde_json::to_string_pretty(definition).unwrap_or_default()) } }
                        }
                    }
                }
            }
        }
    }
}
