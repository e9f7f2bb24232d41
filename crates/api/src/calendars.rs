//! `/calendars`: named business calendars (docs/spec.md §16, docs/api.md "Calendars"). Each
//! handler translates to a use case of [`sundial_service::app`]'s calendars module.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};

use super::extract::{JsonBody, Params, PathParams};
use super::schema::{ErrorEnvelope, PageQuery};
use super::{page_of, ApiResult, AppState};
use sundial_ports::store::Store;
use sundial_service::app::read_calendar;

/// The calendar's name in the path.
#[derive(IntoParams)]
#[into_params(names("name"), parameter_in = Path)]
#[allow(dead_code)]
pub(super) struct CalendarPath(
    /// 1–64 letters, digits, `-`, `_`, `.` (not `.` or `..`).
    #[param(
        pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$",
        max_length = 64,
        example = "london"
    )]
    String,
);

/// An inclusive span of days.
#[derive(ToSchema, Serialize)]
#[allow(dead_code)]
pub(super) struct DateRange {
    /// The first day (`2024-12-24`).
    #[schema(format = Date)]
    start: String,
    /// The last day.
    #[schema(format = Date)]
    end: String,
}

/// A yearly day: `{"month", "day", "observed"}`, `{"month", "weekday", "nth"}` or
/// `{"easter": n}`, each with an optional `comment` (docs/spec.md §16.1).
#[derive(ToSchema, Serialize)]
#[allow(dead_code)]
pub(super) struct YearlyRule {
    /// 1–12.
    month: Option<i64>,
    /// 1–31, with `month`.
    day: Option<i64>,
    /// What a fixed day on a weekend becomes: `none`, `nextWeekday`, `nearestWeekday`.
    observed: Option<String>,
    /// A weekday (`MON`), with `month` and `nth`.
    weekday: Option<String>,
    /// 1–5, or -1 for the last.
    nth: Option<i64>,
    /// Days from Western Easter Sunday (-2 Good Friday, 1 Easter Monday).
    easter: Option<i64>,
    /// Free text.
    comment: Option<String>,
}

/// A calendar as written (docs/spec.md §16.1): every field optional but its days; `name`, when
/// given, must be the path's.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(super) struct CalendarBody {
    /// The path's name.
    name: Option<String>,
    /// Free text, at most 1024 bytes.
    description: Option<String>,
    /// The zone its dates are meant in (IANA name; default `UTC`).
    time_zone: Option<String>,
    /// Weekdays that are never business days, as in cron (`SAT,SUN` by default; `""` for none).
    weekend: Option<String>,
    /// Single days (`2024-12-24`), at most 10000.
    dates: Option<Vec<String>>,
    /// Inclusive spans, at most 10000.
    ranges: Option<Vec<DateRange>>,
    /// Yearly days, at most 10000.
    rules: Option<Vec<YearlyRule>>,
    /// The text of an iCalendar (`.ics`) file: its all-day events are added as dates (ranges
    /// when they span days), its simple yearly `RRULE`s (`FREQ=YEARLY`, with `BYMONTH` and
    /// `BYMONTHDAY` or one `BYDAY` like `1MO`) as rules; `X-WR-TIMEZONE` and `X-WR-CALNAME` fill
    /// `timeZone` and `description` when they are not given. Other events are refused, named.
    ics: Option<String>,
}

/// A stored calendar.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(super) struct Calendar {
    /// Its name.
    name: String,
    /// Free text.
    description: Option<String>,
    /// Its zone.
    time_zone: String,
    /// Its weekend (`SAT,SUN`).
    weekend: String,
    /// Single days.
    dates: Vec<String>,
    /// Inclusive spans.
    ranges: Vec<DateRange>,
    /// Yearly days.
    rules: Vec<YearlyRule>,
    /// 1 when created, +1 on every change.
    version: u64,
    /// When it was last changed (RFC 3339, UTC).
    #[schema(format = DateTime)]
    updated_at: String,
    /// Who last changed it.
    updated_by: String,
    /// `GET /calendars/{name}` only: the jobs whose schedule names it, in id order.
    jobs: Option<Vec<String>>,
}

/// What a put did.
#[derive(ToSchema, Serialize)]
#[allow(dead_code)]
pub(super) struct CalendarPutAnswer {
    /// The calendar as stored.
    #[schema(value_type = Calendar)]
    calendar: Value,
    /// Whether it was created (201) rather than replaced (200).
    created: bool,
    /// How many jobs were queued for re-planning with it (those listed as using it): on AWS
    /// re-planned asynchronously after the answer, by the notify function; in `sundial serve`
    /// in the request, before it.
    queued: u64,
    /// How many jobs were re-planned with it before the answer (their next fire times
    /// recomputed): in `sundial serve` those of `queued` that still use it and held another
    /// version of it (a put of the same calendar re-plans none); 0 on AWS.
    replanned: u64,
}

/// Every calendar.
#[derive(ToSchema, Serialize)]
#[allow(dead_code)]
pub(super) struct CalendarList {
    /// In name order.
    #[schema(value_type = Vec<Calendar>)]
    calendars: Vec<Value>,
}

/// Every calendar, in name order.
#[utoipa::path(
    get,
    path = "/calendars",
    tag = "calendars",
    responses(
        (status = 200, description = "The calendars.", body = CalendarList),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn list_calendars<S: Store>(State(app): AppState<S>) -> ApiResult {
    let calendars = app
        .list_calendars()
        .await?
        .iter()
        .map(|c| c.to_json())
        .collect();
    Ok(Json(CalendarList { calendars }).into_response())
}

/// A calendar, with the jobs that use it.
#[utoipa::path(
    get,
    path = "/calendars/{name}",
    tag = "calendars",
    params(CalendarPath),
    responses(
        (status = 200, description = "The calendar.", body = Calendar),
        (status = 404, description = "No such calendar.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn get_calendar<S: Store>(
    State(app): AppState<S>,
    PathParams(name): PathParams<String>,
) -> ApiResult {
    let calendar = app.get_calendar(&name).await?;
    let jobs = app.calendar_jobs(&name).await?;
    let mut shown = calendar.to_json();
    shown["jobs"] = json!(jobs);
    Ok(Json(shown).into_response())
}

/// Creates or replaces a calendar, then re-plans every job that uses it: answers how many were
/// queued for re-planning (`queued`; on AWS they are re-planned asynchronously) and how many
/// were re-planned before the answer (`replanned`). Recorded in the calendar's history and in the
/// trail of each job re-planned (`calendar:update`).
#[utoipa::path(
    put,
    path = "/calendars/{name}",
    tag = "calendars",
    params(CalendarPath),
    request_body(content = CalendarBody),
    responses(
        (status = 200, description = "Replaced; the jobs using it queued for re-planning (`queued`), re-planned in the request on `sundial serve` (`replanned`).", body = CalendarPutAnswer),
        (status = 201, description = "Created.", body = CalendarPutAnswer),
        (status = 400, description = "The calendar is invalid: the message names the field (`rules[3]: nth: …`, `dates[0]: …`, `weekend: …`, `ics: event 2 (\"Meeting\"): …`, `name` when it differs from the path), or the body is not JSON.", body = ErrorEnvelope),
        (status = 409, description = "Changed concurrently too many times, or the store holds the most calendars it keeps (1000).", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn put_calendar<S: Store>(
    State(app): AppState<S>,
    super::auth::Authenticated(caller): super::auth::Authenticated,
    PathParams(name): PathParams<String>,
    JsonBody(body): JsonBody,
) -> ApiResult {
    let calendar = read_calendar(&name, &body)?;
    let put = app.save_calendar_by(&caller.change(), calendar).await?;
    let status = if put.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(CalendarPutAnswer {
            calendar: put.calendar.to_json(),
            created: put.created,
            queued: put.queued as u64,
            replanned: put.replanned as u64,
        }),
    )
        .into_response())
}

/// Deletes a calendar; refused while jobs use it (the answer names them).
#[utoipa::path(
    delete,
    path = "/calendars/{name}",
    tag = "calendars",
    params(CalendarPath),
    responses(
        (status = 200, description = "Deleted.", body = super::schema::Envelope),
        (status = 404, description = "No such calendar.", body = ErrorEnvelope),
        (status = 409, description = "Jobs use it (named in the message), or it changed meanwhile.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn delete_calendar<S: Store>(
    State(app): AppState<S>,
    super::auth::Authenticated(caller): super::auth::Authenticated,
    PathParams(name): PathParams<String>,
) -> ApiResult {
    app.delete_calendar_by(&caller.change(), &name).await?;
    Ok(Json(super::schema::Envelope::ok()).into_response())
}

/// A calendar's history, newest first: each creation, change and deletion, by whom, with the
/// calendar it put in force and how many jobs it queued for re-planning. It outlives the calendar.
#[utoipa::path(
    get,
    path = "/calendars/{name}/history",
    tag = "calendars",
    params(CalendarPath, PageQuery),
    responses(
        (status = 200, description = "A page of the calendar's history (`jobId` is `calendar:{name}`).", body = CalendarHistoryPage),
        (status = 400, description = "`limit` or `cursor` is invalid, or a parameter is unknown or given twice.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn calendar_history<S: Store>(
    State(app): AppState<S>,
    PathParams(name): PathParams<String>,
    params: Params,
) -> ApiResult {
    let Params(params) = params.only(&["limit", "cursor"])?;
    let page = app.calendar_history(&name, &page_of(&params)?).await?;
    Ok(Json(CalendarHistoryPage {
        entries: page.items,
        next_cursor: page.next_cursor,
    })
    .into_response())
}

/// One change of a calendar.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(super) struct CalendarChange {
    /// When (RFC 3339, UTC).
    #[schema(format = DateTime)]
    at: String,
    /// The calendar.
    calendar: String,
    /// Who.
    actor: String,
    /// `calendar:create`, `calendar:update` or `calendar:delete`.
    action: String,
    /// The reason given.
    reason: Option<String>,
    /// The calendar's version after the change (a deletion: the version it removed, plus one).
    version: u64,
    /// The calendar a creation or change put in force.
    #[schema(value_type = Option<CalendarBody>)]
    definition: Option<Value>,
    /// How many jobs a creation or change queued for re-planning: those listed as using the
    /// calendar as it changed.
    queued: Option<u64>,
}

/// A page of a calendar's history, newest first.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(super) struct CalendarHistoryPage {
    /// The entries.
    #[schema(value_type = Vec<CalendarChange>)]
    entries: Vec<Value>,
    /// Pass back as `cursor` for the next page; null on the last.
    next_cursor: Option<String>,
}
