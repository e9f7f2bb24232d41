//! `/ui/calendars` and `/ui/calendars/{name}`: the named business calendars, and one calendar
//! with its days off in the coming year and the jobs that use it (docs/console.md). What a
//! calendar's days are is the service's ([`StoredCalendar::days_off`]).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::Datelike;
use maud::html;
use serde_json::Value;
use sundial_ports::store::Store;

use crate::session::Session;
use crate::view::{job_url, layout, seg};
use crate::{ConsoleState, PageError};

/// How many days ahead the calendar's page lists its days off.
const AHEAD_DAYS: u32 = 366;

fn text<'a>(calendar: &'a Value, key: &str) -> &'a str {
    calendar[key].as_str().unwrap_or("")
}

fn count(calendar: &Value, key: &str) -> usize {
    calendar[key].as_array().map_or(0, Vec::len)
}

/// `/ui/calendars`.
pub(crate) async fn calendars<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
) -> Result<Response, PageError> {
    let calendars = console.app.list_calendars().await?;
    let content = html! {
        h1 { "Calendars" }
        p.muted {
            "Named business calendars: days off and a weekend that schedules name in "
            code { "onlyOn" } ", " code { "exclude" } " and business-day rules. "
            "Change one with " code { "PUT /calendars/{name}" } " or " code { "sundial calendar put" }
            "; the jobs that use it are re-planned."
        }
        @if calendars.is_empty() {
            p.empty { "No calendars yet." }
        } @else {
            div.table-wrap {
                table.calendars data-calendars=(calendars.len()) {
                    caption.visually-hidden { "Calendars" }
                    thead { tr {
                        th scope="col" { "Name" }
                        th scope="col" { "Description" }
                        th scope="col" { "Zone" }
                        th scope="col" { "Weekend" }
                        th scope="col" { "Dates, ranges, rules" }
                        th scope="col" { "Version" }
                        th scope="col" { "Changed by" }
                    } }
                    tbody {
                        @for c in &calendars {
                            @let name = text(&c.calendar, "name");
                            tr {
                                td { a href={ "/ui/calendars/" (seg(name)) } { (name) } }
                                td { (text(&c.calendar, "description")) }
                                td { (text(&c.calendar, "timeZone")) }
                                td { (text(&c.calendar, "weekend")) }
                                td { (count(&c.calendar, "dates")) ", " (count(&c.calendar, "ranges")) ", " (count(&c.calendar, "rules")) }
                                td { (c.version) }
                                td { (c.updated_by) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Calendars", Some(&session), content).into_response())
}

/// `/ui/calendars/{name}`.
pub(crate) async fn calendar<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Path(name): Path<String>,
) -> Result<Response, PageError> {
    let stored = console.app.get_calendar(&name).await?;
    let jobs = console.app.calendar_jobs(&name).await?;
    let zone: chrono_tz::Tz = text(&stored.calendar, "timeZone")
        .parse()
        .unwrap_or(chrono_tz::Tz::UTC);
    let today = console.app.now().with_timezone(&zone).date_naive();
    let days = stored.days_off(today, AHEAD_DAYS)?;
    let rules = stored.rules_in_words()?;
    let c = &stored.calendar;
    let content = html! {
        p.crumbs { a href="/ui/calendars" { "Calendars" } " / " (name) }
        h1 { (name) }
        @if !text(c, "description").is_empty() { p { (text(c, "description")) } }
        dl.facts {
            dt { "Zone" } dd { (zone.name()) }
            dt { "Weekend" } dd { (text(c, "weekend")) }
            dt { "Version" } dd { (stored.version) " · changed by " (stored.updated_by) }
        }
        h2 id="days-off" { "Days off in the coming year" }
        p.muted { "From " (today) ", weekends aside: its dates, ranges and yearly rules." }
        @if days.is_empty() {
            p.empty { "No days off in the coming year." }
        } @else {
            ul.days-off aria-labelledby="days-off" data-days=(days.len()) {
                @for day in &days {
                    li { time datetime=(day) { (day.format("%a %-d %b %Y")) } }
                }
            }
        }
        h2 id="jobs" { "Jobs using it" }
        @if jobs.is_empty() {
            p.empty { "No job names this calendar." }
        } @else {
            ul.calendar-jobs aria-labelledby="jobs" data-jobs=(jobs.len()) {
                @for id in &jobs { li { a href=(job_url(id)) { (id) } } }
            }
        }
        @if !rules.is_empty() {
            h2 { "Yearly rules" }
            ul.rules {
                @for rule in &rules { li { (rule) } }
            }
        }
        p.muted { "Year " (today.year()) "–" (today.year() + 1) "." }
    };
    Ok(layout(&format!("Calendar {name}"), Some(&session), content).into_response())
}
