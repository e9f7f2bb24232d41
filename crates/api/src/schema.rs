//! The JSON of the API as types: what each route takes and answers, for the OpenAPI document.
//!
//! Answers are built from these types, so the document describes what is on the wire rather than
//! what someone remembered to write down. Request bodies are read field by field by the domain
//! (`sundial_core::job::JobDefinition::parse` and friends), whose errors name the offending field;
//! the request types here describe exactly what that reader accepts (every optional field may be
//! `null`, which counts as absent; unknown fields are refused where the reader refuses them), and
//! are never deserialised.
//!
//! Only five schemas are free-form JSON, each because the value belongs to the user, not to
//! Sundial: [`TriggerArguments`], [`RunResult`], [`ReportedProgress`], [`HttpBody`] and
//! [`DefinitionValue`]. A test walks the document and refuses any other.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use sundial_core::vocabulary::Vocabulary;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{IntoParams, PartialSchema, ToSchema};

/// A job id, service name or trigger id: `A–Z a–z 0–9 _ . -`, never `.` or `..` (they are path
/// segments). Written without look-ahead so that every generator of test data can read it.
pub const ID_PATTERN: &str =
    r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$";

/// An HTTP header name (an RFC 9110 token).
pub const HEADER_NAME_PATTERN: &str = r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$";

/// The schemes a job's URL may start with (any case); the rest is checked by the job reader.
const URL_PATTERN: &str = r"^(?:[Hh][Tt][Tt][Pp][Ss]?://|[Ss][Ee][Rr][Vv][Ii][Cc][Ee]:).+$";

// ------------------------------------------------------------------------------------------------
// Free-form values: what the user's own services send and receive.

/// Declares a schema that accepts any JSON object (`additionalProperties: true`) under its own
/// name, with the description that says whose data it is.
macro_rules! free_form_object {
    ($(#[doc = $doc:literal])* $name:ident) => {
        $(#[doc = $doc])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .additional_properties(Some(AdditionalProperties::FreeForm(true)))
                    .description(Some(concat!($($doc, "\n"),*).trim()))
                    .into()
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    };
}

/// Declares a schema that accepts any JSON value, under its own name and description.
macro_rules! any_json {
    ($(#[doc = $doc:literal])* $name:ident) => {
        $(#[doc = $doc])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(SchemaType::AnyValue)
                    .description(Some(concat!($($doc, "\n"),*).trim()))
                    .into()
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    };
}

/// Declares a named schema built by an expression, which may refer to the schemas in `refs`
/// (registered with it, so the document holds them).
macro_rules! built_schema {
    ($(#[doc = $doc:literal])* $name:ident, refs: [$($dep:ty),* $(,)?], $build:expr) => {
        $(#[doc = $doc])*
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ($build)(concat!($($doc, "\n"),*).trim())
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }

            fn schemas(_schemas: &mut Vec<(String, RefOr<Schema>)>) {
                $(
                    _schemas.push((<$dep as ToSchema>::name().into_owned(), <$dep as PartialSchema>::schema()));
                    <$dep as ToSchema>::schemas(_schemas);
                )*
            }
        }
    };
}

/// A string schema with an optional pattern and length limit.
fn text(pattern: Option<&str>, max_length: Option<usize>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(pattern)
        .max_length(max_length)
        .into()
}

/// A string enum of a core vocabulary's names ([`Vocabulary`]), described: the list is core's, so
/// no value can be served without being documented.
fn names_of<V: Vocabulary>(description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(V::wire_names()))
        .description(Some(description))
        .into()
}

/// A reference to a named schema.
fn reference<T: ToSchema>() -> RefOr<Schema> {
    RefOr::Ref(Ref::from_schema_name(T::name()))
}

/// Exactly one of `items`, described.
fn one_of(description: &str, items: Vec<RefOr<Schema>>) -> RefOr<Schema> {
    items
        .into_iter()
        .fold(OneOfBuilder::new(), OneOfBuilder::item)
        .description(Some(description))
        .into()
}

/// An integer schema within `minimum..=maximum`.
fn integer(minimum: u64, maximum: Option<u64>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(minimum))
        .maximum(maximum)
        .into()
}

free_form_object! {
    /// docs/api.md's map of trigger arguments: any JSON object, handed to the request templates as
    /// `${name}`. It belongs to the caller; Sundial stores it as given.
    TriggerArguments
}

any_json! {
    /// What a run produced, as the job's service gave it: the last response body of the request
    /// chain, or the `data` of an async job's report. Any JSON value.
    RunResult
}

any_json! {
    /// The progress an async job reported, as given (`"30%"`, `"20/60"`, a number…).
    ReportedProgress
}

any_json! {
    /// The body of a call a job makes: any JSON, with `${…}` templates inside its strings (at
    /// most 64 KiB and 32 levels deep).
    HttpBody
}

any_json! {
    /// A value of a job's definition as its owner wrote it (a secret header value as `"***"`):
    /// what an update's change in `GET /jobs/{jobId}/history` shows before and after.
    DefinitionValue
}

// ------------------------------------------------------------------------------------------------
// Small shared schemas.

/// A duration: Go style with days (`45m`, `1d2h0m2s`, `5400s`) or ISO 8601 (`PT2H30M`,
/// `P1DT1H20M10S`); at most 36500 days.
#[derive(ToSchema)]
#[schema(example = "5m")]
pub struct Duration(#[allow(dead_code)] String);

built_schema! {
    /// What happens when a fire comes while an earlier run of the job is still going (docs/engine.md). The
    /// names are read ignoring case.
    OverlapPolicy, refs: [], names_of::<sundial_core::job::OverlapPolicy>
}

built_schema! {
    /// Where an execution is in its life (docs/api.md).
    ExecutionState, refs: [], names_of::<sundial_core::execution::ExecutionState>
}

built_schema! {
    /// What a row of a simulation is about: `attempt` (an attempt's call: start `at`, `end`,
    /// `outcome`, and a retry's time), `skipped` (by overlap policy `Skip`), `buffered` (waits in
    /// the overlap buffer), `dropped` (from a full overlap buffer), `missed` (fire times missed by
    /// catch-up, from `scheduledTime` to `lastTime`, `count` of them), `cancelled` / `terminated`
    /// (by a newer run: `CancelOther`, `TerminateOther`), `notStarted` (the job was paused),
    /// `paused` (the job paused itself: `pauseOnFailure`). The names are core's
    /// (`sundial_core::simulate::RowKind`).
    SimulationRowKind, refs: [], names_of::<sundial_core::simulate::RowKind>
}

built_schema! {
    /// An HTTP method a job may use (any case).
    HttpMethod, refs: [], names_of::<sundial_core::job::HttpMethod>
}

/// Header values by header name (at most 50; hop-by-hop, framing and Sundial's own headers are
/// refused). A read shows the value of every sensitive header as `"***"`.
#[derive(ToSchema)]
#[schema(example = json!({"Accept": "application/json", "Authorization": "***"}))]
pub struct Headers(#[allow(dead_code)] BTreeMap<String, String>);

// ------------------------------------------------------------------------------------------------
// The job definition (docs/api.md's create body and the extensions of docs/api.md).

/// One call of docs/api.md's `request` chain.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct RequestStep {
    /// The method (default `GET`).
    method: Option<HttpMethod>,
    /// `http://…`, `https://…`, `service://name/path` (the configured service map) or
    /// `service:/path`; may hold `${…}` templates after the scheme.
    #[schema(
        pattern = r"^(?:[Hh][Tt][Tt][Pp][Ss]?://|[Ss][Ee][Rr][Vv][Ii][Cc][Ee]:).+$",
        max_length = 8192,
        example = "service://reports/main/build?run=${executeNumber}"
    )]
    url: String,
    /// The body to send.
    #[schema(value_type = HttpBody, required = false)]
    body: Option<Value>,
    /// Headers to send.
    headers: Option<Headers>,
    /// Name under which later templates read this call's response: letters, digits and `_`, not
    /// starting with a digit (surrounding blanks are trimmed; blank means none).
    #[schema(pattern = r"^\s*([A-Za-z_][A-Za-z0-9_]*)?\s*$", max_length = 128)]
    resp_env_name: Option<String>,
    /// docs/api.md's `serviceName` of the call (an id).
    #[schema(max_length = 128)]
    service_name: Option<String>,
}

/// One of docs/api.md's notification rules: a call made when a run ends with a matching outcome.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct NotificationRule {
    /// The method (default `POST`).
    method: Option<HttpMethod>,
    /// The outcome it matches: an HTTP status (`"500"`), an async status or error, or `timeout`;
    /// empty or absent matches every outcome.
    #[schema(max_length = 256)]
    state_equals: Option<String>,
    /// The URL, as in `request`.
    #[schema(
        pattern = r"^(?:[Hh][Tt][Tt][Pp][Ss]?://|[Ss][Ee][Rr][Vv][Ii][Cc][Ee]:).+$",
        max_length = 8192
    )]
    url: String,
    /// The body; `${schedulingNotifyBody}` is `{httpStatus, response}`.
    #[schema(value_type = HttpBody, required = false)]
    body: Option<Value>,
    /// Headers to send.
    headers: Option<Headers>,
}

/// `checkUrl` as an object: always a `GET`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct CheckCall {
    /// Only `GET`.
    #[schema(pattern = "^\\s*[Gg][Ee][Tt]\\s*$")]
    method: Option<String>,
    /// The URL, as in `request`.
    #[schema(
        pattern = r"^(?:[Hh][Tt][Tt][Pp][Ss]?://|[Ss][Ee][Rr][Vv][Ii][Cc][Ee]:).+$",
        max_length = 8192
    )]
    url: String,
    /// Headers to send.
    headers: Option<Headers>,
}

built_schema! {
    /// `checkUrl`: a URL (docs/api.md's create table types it as a string) or a call object.
    CheckUrl, refs: [CheckCall], |description| one_of(description, vec![
        text(Some(URL_PATTERN), Some(8192)),
        reference::<CheckCall>(),
    ])
}

/// `cancelUrl` as an object: any method (default `POST`), headers and a body.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct CancelCall {
    /// The method (default `POST`).
    method: Option<HttpMethod>,
    /// The URL, as in `request`.
    #[schema(
        pattern = r"^(?:[Hh][Tt][Tt][Pp][Ss]?://|[Ss][Ee][Rr][Vv][Ii][Cc][Ee]:).+$",
        max_length = 8192
    )]
    url: String,
    /// The body to send.
    #[schema(value_type = HttpBody, required = false)]
    body: Option<Value>,
    /// Headers to send.
    headers: Option<Headers>,
}

built_schema! {
    /// `cancelUrl`: a URL (called with `POST`) or a call object.
    CancelUrl, refs: [CancelCall], |description| one_of(description, vec![
        text(Some(URL_PATTERN), Some(8192)),
        reference::<CancelCall>(),
    ])
}

/// docs/api.md's `timer`: none or empty is one run now; `dueTime` + `period` every period from the
/// due time; a cron `period` (Quartz form) that cron; `period: "external"` triggered only; `ttl`
/// ends the schedule that long after creation; `timeZone` is the zone cron periods and fixed due
/// times are read in.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"period": "0 0/5 * * * ?"}))]
#[allow(dead_code)]
pub struct Timer {
    /// A duration from creation, an ISO 8601 duration, or a time like `2023-10-01 09:00:01`.
    due_time: Option<String>,
    /// A duration (`1h`, `PT30M`), a repeating interval (`R4/PT3S`), a cron (`0 0/5 * * * ?`) or
    /// `external`.
    period: Option<String>,
    /// How long after creation the schedule ends (a run at exactly creation + ttl runs).
    ttl: Option<String>,
    /// The IANA zone a cron `period` and a fixed `dueTime` are read in (default `UTC`).
    time_zone: Option<String>,
}

built_schema! {
    /// `timer` as an object, or as JSON text of one (docs/api.md's create table types it as a string).
    TimerField, refs: [Timer], |description| one_of(description, vec![
        text(None, Some(8192)),
        reference::<Timer>(),
    ])
}

/// One range of a calendar field, in the canonical form `describe` and preview answer with:
/// `{start, end, step}` (a single value when `end` is absent), or a month-dependent special:
/// `{lastDay}`, `{nearestWeekday}`, `{lastWeekday}` (day of month), `{weekday, nth}` or
/// `{weekday, last: true}` (day of week).
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct CalendarRange {
    /// First value.
    #[schema(minimum = 0)]
    start: Option<u32>,
    /// Last value (inclusive).
    #[schema(minimum = 0)]
    end: Option<u32>,
    /// Step (at least 1).
    #[schema(minimum = 1)]
    step: Option<u32>,
    /// The last day of the month minus this many days (Quartz `L`, `L-3`).
    #[schema(minimum = 0, maximum = 30)]
    last_day: Option<u32>,
    /// The weekday nearest to this day (Quartz `15W`).
    #[schema(minimum = 1, maximum = 31)]
    nearest_weekday: Option<u32>,
    /// The weekday nearest to the last day minus this many days (`LW`, `L-3W`).
    #[schema(minimum = 0, maximum = 30)]
    last_weekday: Option<u32>,
    /// A weekday, 0 (Sunday) to 6, with `nth` or `last`.
    #[schema(minimum = 0, maximum = 6)]
    weekday: Option<u32>,
    /// The nth (1–5) `weekday` of the month.
    #[schema(minimum = 1, maximum = 5)]
    nth: Option<u32>,
    /// The last `weekday` of the month.
    last: Option<bool>,
}

built_schema! {
    /// A calendar field: text as in docs/engine.md (`"1,15"`, `"11-14"`, `"*/5"`, month and weekday
    /// names), a number, or ranges (1–512).
    CalendarField, refs: [CalendarRange], |description| one_of(description, vec![
        text(None, None),
        integer(0, None),
        ArrayBuilder::new()
            .items(reference::<CalendarRange>())
            .min_items(Some(1))
            .max_items(Some(512))
            .into(),
    ])
}

/// A Temporal calendar: every field must match (day of month AND day of week). Defaults: second,
/// minute and hour `0`, the others `*`. Weekdays are 0–7 (0 and 7 = Sunday), years 2000–2100.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"hour": "9", "dayOfWeek": "MON-FRI", "comment": "weekday mornings"}))]
#[allow(dead_code)]
pub struct Calendar {
    /// Seconds, 0–59.
    second: Option<CalendarField>,
    /// Minutes, 0–59.
    minute: Option<CalendarField>,
    /// Hours, 0–23.
    hour: Option<CalendarField>,
    /// Days of the month, 1–31.
    day_of_month: Option<CalendarField>,
    /// Months, 1–12 or names.
    month: Option<CalendarField>,
    /// Years, 2000–2100.
    year: Option<CalendarField>,
    /// Days of the week, 0–7 or names.
    day_of_week: Option<CalendarField>,
    /// A note, kept in the canonical form.
    #[schema(max_length = 1024)]
    comment: Option<String>,
}

/// An interval aligned to the Unix epoch plus `offset` (0 ≤ offset < every).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct Interval {
    /// The period.
    #[schema(value_type = Duration)]
    every: String,
    /// The offset from the epoch.
    #[schema(value_type = Option<Duration>)]
    offset: Option<String>,
}

built_schema! {
    /// An interval as an object or as `"every/offset"` text (`"6h/5h"`, `"6h"`).
    IntervalField, refs: [Interval], |description| one_of(description, vec![
        text(None, None),
        reference::<Interval>(),
    ])
}

built_schema! {
    /// One cron string, or a list of them (at most 256).
    CronField, refs: [], |description| one_of(description, vec![
        text(None, None),
        ArrayBuilder::new().items(text(None, None)).max_items(Some(256)).into(),
    ])
}

built_schema! {
    /// How a spec reads cron strings, so specs can be pasted verbatim from its peers.
    Dialect, refs: [], names_of::<sundial_core::spec::Dialect>
}

built_schema! {
    /// What a wall-clock time that does not exist (spring forward) means.
    DstGap, refs: [], names_of::<sundial_core::spec::DstGap>
}

built_schema! {
    /// What a wall-clock time that occurs twice (fall back) means.
    DstOverlap, refs: [], names_of::<sundial_core::spec::DstOverlap>
}

/// The DST policy of a spec; defaults by dialect.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct Dst {
    /// Missing times.
    gap: Option<DstGap>,
    /// Repeated times.
    overlap: Option<DstOverlap>,
}

/// A schedule spec (docs/spec.md): the union of its cron strings, calendars, rules and intervals, minus
/// `exclude`, within `startTime`–`endTime` (inclusive), jittered, in a zone.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"}))]
#[allow(dead_code)]
pub struct Schedule {
    /// Cron strings: 5 fields, 6 (seconds first) or 7 (and a year); `@yearly`…, `@every 14h/3h`,
    /// `CRON_TZ=`/`TZ=` prefixes.
    cron: Option<CronField>,
    /// Temporal calendars.
    #[schema(max_items = 256)]
    calendars: Option<Vec<Calendar>>,
    /// RFC 5545 recurrence rules (`FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1`); `DTSTART` is
    /// `startTime` in `timeZone`, which they need.
    #[schema(max_items = 256)]
    rrule: Option<Vec<String>>,
    /// Epoch-aligned intervals.
    #[schema(max_items = 256)]
    intervals: Option<Vec<IntervalField>>,
    /// Calendars whose matches are removed.
    #[schema(max_items = 256)]
    exclude: Option<Vec<Calendar>>,
    /// No fire before (RFC 3339).
    #[schema(format = DateTime)]
    start_time: Option<String>,
    /// No fire after (RFC 3339).
    #[schema(format = DateTime)]
    end_time: Option<String>,
    /// Deterministic jitter: at most this much later.
    #[schema(value_type = Option<Duration>)]
    jitter: Option<String>,
    /// IANA zone name (default `UTC`).
    #[schema(example = "America/New_York")]
    time_zone: Option<String>,
    /// How cron strings are read (names in any case).
    dialect: Option<Dialect>,
    /// DST policy.
    dst: Option<Dst>,
}

/// A docs/api.md retry rule, matched by error code.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct RetryRule {
    /// The error code it matches: an HTTP status, an async `error`, or `timeout`.
    #[schema(value_type = ErrorCode)]
    error_equals: Value,
    /// Seconds before the first retry (default 1).
    #[schema(minimum = 0, maximum = 86400)]
    interval_seconds: Option<u32>,
    /// Retries by this rule (default 2).
    #[schema(minimum = 0, maximum = 100)]
    max_attempts: Option<u32>,
    /// Multiplier of the interval per retry (default 2.0).
    #[schema(minimum = 1.0, maximum = 100.0)]
    backoff_rate: Option<f64>,
}

built_schema! {
    /// An error code: text (at most 256 bytes), or a number written for one (`500`).
    ErrorCode, refs: [], |description| one_of(description, vec![
        text(None, Some(256)),
        ObjectBuilder::new().schema_type(Type::Number).into(),
    ])
}

/// Temporal's retry policy, used when no docs/api.md rule matches.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct RetryPolicy {
    /// The first retry's delay (default `1s`).
    #[schema(value_type = Option<Duration>)]
    initial_interval: Option<String>,
    /// Multiplier per retry (default 2.0).
    #[schema(minimum = 1.0, maximum = 100.0)]
    backoff_coefficient: Option<f64>,
    /// The longest delay (default 100 × initialInterval).
    #[schema(value_type = Option<Duration>)]
    maximum_interval: Option<String>,
    /// Attempts in all; 0 is unlimited (the default).
    #[schema(minimum = 0, maximum = 10000)]
    maximum_attempts: Option<u32>,
    /// Error codes never retried.
    #[schema(max_items = 50)]
    non_retryable_errors: Option<Vec<ErrorCode>>,
}

/// Timeouts beyond `timeoutSeconds` (docs/engine.md).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct Timeouts {
    /// From the scheduled time to the start of the first attempt.
    #[schema(value_type = Option<Duration>)]
    schedule_to_start: Option<String>,
    /// From the scheduled time to the end of the last attempt.
    #[schema(value_type = Option<Duration>)]
    schedule_to_close: Option<String>,
    /// The longest gap between an async job's progress reports.
    #[schema(value_type = Option<Duration>)]
    heartbeat: Option<String>,
}

/// An SQS queue a job sends one message per run to.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct SqsTarget {
    /// The queue URL (`https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`).
    #[schema(max_length = 2048)]
    queue_url: String,
}

/// An EventBridge bus a job puts one event per run on.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct EventBridgeTarget {
    /// The bus name or ARN (default `default`).
    #[schema(max_length = 1600)]
    bus_name: Option<String>,
    /// The events' `source`.
    #[schema(max_length = 256)]
    source: String,
    /// The events' `detail-type`.
    #[schema(max_length = 128)]
    detail_type: String,
}

/// A queue or bus a job sends to instead of calling a `request` chain: exactly one of `sqs` and
/// `eventbridge`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct Target {
    /// `{"queueUrl"}`.
    sqs: Option<SqsTarget>,
    /// `{"busName", "source", "detailType"}`.
    eventbridge: Option<EventBridgeTarget>,
}

built_schema! {
    /// Which of the fires an engine reaches late still run (docs/engine.md, "Catch-up"); read
    /// ignoring case.
    CatchupPolicy, refs: [], names_of::<sundial_core::job::CatchupPolicy>
}

/// How a job catches up on fires its engine reached late (after an outage): which run, how late
/// at most, how many at once.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"policy": "latest", "window": "1h"}))]
#[allow(dead_code)]
pub struct Catchup {
    /// Which late fires run (default `all`).
    policy: Option<CatchupPolicy>,
    /// Fires older than this when reached never run (default 1m, at least 10s). Also
    /// `catchupWindow`; both may be given only when they agree.
    #[schema(value_type = Option<Duration>)]
    window: Option<String>,
    /// With policy `all` only: at most this many of the fires due at once run, the newest.
    #[schema(minimum = 1, maximum = 1000)]
    max_runs: Option<u32>,
}

built_schema! {
    /// What a parent's close does to a child's runs.
    ParentClosePolicy, refs: [], names_of::<sundial_core::job::ParentClosePolicy>
}

built_schema! {
    /// docs/api.md's `active`: 1 (scheduled) or 0 (paused); `true`/`false` are read the same way.
    ActiveFlag, refs: [], |description| one_of(description, vec![
        integer(0, Some(1)),
        ObjectBuilder::new().schema_type(Type::Boolean).into(),
    ])
}

/// Defines a job schema: the fields of the job document whose shape the core cannot describe,
/// plus `$extra` fields. The fields of kind boolean and integer in core's table
/// (`sundial_core::job::document::JOB_FIELDS`) are added to each from the table itself
/// ([`crate::openapi`]); `tests/api/mirrors.rs` checks that every field of the table is in each
/// schema with the table's bounds. One list, so the create body, a declared timer and a read job
/// cannot drift apart.
macro_rules! job_schema {
    (
        $(#[$meta:meta])*
        $name:ident { $($extra:tt)* }
    ) => {
        $(#[$meta])*
        #[allow(dead_code)]
        pub struct $name {
            $($extra)*
            /// docs/api.md's name of the job (at most 256 bytes, not blank, no control characters).
            #[schema(min_length = 1, max_length = 256, pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$")]
            job_name: String,
            /// What it is for (no control characters but tab and line breaks).
            #[schema(max_length = 8192, pattern = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$")]
            job_description: Option<String>,
            /// The owner's id (at most 256 bytes, not blank, no control characters);
            /// `GET /jobs?creator=` filters by it.
            #[schema(min_length = 1, max_length = 256, pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$")]
            creator: String,
            /// The owner's name (not blank, no control characters).
            #[schema(min_length = 1, max_length = 8192, pattern = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$")]
            creator_name: String,
            /// Notification rules (at most 20).
            #[schema(max_items = 20)]
            notification: Option<Vec<NotificationRule>>,
            /// docs/api.md's request chain, called in order (1–20 calls). Required unless `target`
            /// is given; never with it.
            #[schema(min_items = 1, max_items = 20)]
            request: Option<Vec<RequestStep>>,
            /// When the job runs (docs/api.md); not with `schedule`.
            timer: Option<TimerField>,
            /// When the job runs (docs/spec.md); not with `timer`.
            schedule: Option<Schedule>,
            /// Polled every `checkRateSeconds` until the async job reports an end.
            check_url: Option<CheckUrl>,
            /// Called (default `POST`) when a run of the async job is cancelled or terminated
            /// after its request was sent.
            cancel_url: Option<CancelUrl>,
            /// docs/api.md retry rules (at most 20).
            #[schema(max_items = 20)]
            retry: Option<Vec<RetryRule>>,
            /// The parent job's id (docs/api.md).
            #[schema(pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128)]
            parent_job: Option<String>,
            /// Overlap policy (default `Skip`).
            overlap: Option<OverlapPolicy>,
            /// Fires older than this after downtime are counted as missed (default 1m, at least 10s).
            /// The same as `catchup.window`.
            #[schema(value_type = Option<Duration>)]
            catchup_window: Option<String>,
            /// How late fires are caught up: `{policy, window, maxRuns}`.
            catchup: Option<Catchup>,
            /// Temporal retry policy.
            retry_policy: Option<RetryPolicy>,
            /// Timeouts beyond `timeoutSeconds`.
            timeouts: Option<Timeouts>,
            /// What the end of a parent run does to this job's runs (default `abandon`).
            parent_close_policy: Option<ParentClosePolicy>,
            /// A queue or bus instead of `request`.
            target: Option<Target>,
            /// Header names, beyond the built-in rule, whose values are never shown (at most 100).
            #[schema(max_items = 100)]
            sensitive_headers: Option<Vec<HeaderName>>,
            /// What the job is, for `GET /jobs?label=key:value` and bulk actions.
            labels: Option<Labels>,
        }
    };
}

built_schema! {
    /// Labels: at most 16 `key: value` pairs; a key is 1–63 characters of `A–Z a–z 0–9 _ . - /`,
    /// a value 1–256 bytes without control characters. A 400 names `labels.<key>`.
    Labels, refs: [], |description: &str| {
        let key = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(LABEL_KEY_PATTERN))
            .min_length(Some(1))
            .max_length(Some(sundial_core::job::MAX_LABEL_KEY));
        let value = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(LABEL_VALUE_PATTERN))
            .min_length(Some(1))
            .max_length(Some(sundial_core::job::MAX_LABEL_VALUE_BYTES));
        let schema = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property_names(Some(key.build()))
            .additional_properties(Some(Schema::Object(value.build())))
            .max_properties(Some(sundial_core::job::MAX_LABELS))
            .description(Some(description));
        RefOr::T(Schema::Object(schema.build()))
    }
}

/// A label key.
pub const LABEL_KEY_PATTERN: &str = r"^[A-Za-z0-9_./-]+$";
/// A label value: no control characters.
pub const LABEL_VALUE_PATTERN: &str = r"^[^\x00-\x1f\x7f-\x9f]+$";
/// A `label` filter: `key:value`.
pub const LABEL_SELECTOR_PATTERN: &str = r"^[A-Za-z0-9_./-]{1,63}:[^\x00-\x1f\x7f-\x9f]+$";

built_schema! {
    /// A header name (an RFC 9110 token).
    HeaderName, refs: [], |description: &str| {
        let schema = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(HEADER_NAME_PATTERN))
            .description(Some(description));
        RefOr::T(Schema::Object(schema.build()))
    }
}

job_schema! {
    /// A job definition: the body of create and update. Unknown fields are refused, naming them;
    /// beyond what this schema says, the cron strings, durations, templates, URLs and time zones
    /// are checked when the job is created or updated, and a 400 names the field.
    #[derive(ToSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[schema(example = json!({
        "jobName": "daily report", "creator": "u-1001", "creatorName": "Ana", "qos": 0,
        "request": [{"method": "POST", "url": "service://reports/main/build?run=${executeNumber}", "body": {"format": "pdf"}}],
        "timer": {"period": "0 0 6 * * ?", "ttl": "30d"}
    }))]
    JobDefinition {
        /// Optional; when given, equal to the path's `jobId`.
        #[schema(pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128)]
        job_id: Option<String>,
        /// 1 (scheduled, the default) or 0 (paused).
        active: Option<ActiveFlag>,
    }
}

job_schema! {
    /// A job of a service's timer list: a job definition with its `jobId`.
    #[derive(ToSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    DeclaredJob {
        /// The job's id.
        #[schema(pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128)]
        job_id: String,
        /// 1 (scheduled, the default) or 0 (paused).
        active: Option<ActiveFlag>,
    }
}

job_schema! {
    /// `POST /jobs/simulate`'s body: a job definition as for create (`jobId` optional, default
    /// `simulated`), plus the scenario: the range `[from, to)` (at most 366 days), the synthetic
    /// `simulatedTarget`, its `outages`, Sundial's own `downtime`, and how many `rows` to list.
    #[derive(ToSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[schema(example = json!({
        "jobName": "sync", "creator": "u-1001", "creatorName": "Ana",
        "request": [{"method": "POST", "url": "https://sync.example.com/run"}],
        "schedule": {"cron": ["* * * * *"]}, "overlap": "Skip",
        "from": "2026-12-24T00:00:00Z", "to": "2026-12-25T00:00:00Z",
        "simulatedTarget": {"p50": "2s", "p99": "30s", "failureRate": 0.05, "seed": 1},
        "outages": [{"start": "2026-12-24T10:00:00Z", "length": "2h"}]
    }))]
    SimulationRequest {
        /// The job's id, for its execution ids and jitter (default `simulated`).
        #[schema(pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128)]
        job_id: Option<String>,
        /// 1 (scheduled, the default) or 0 (paused: nothing fires).
        active: Option<ActiveFlag>,
        /// The first fire time considered: RFC 3339, or UTC without a zone (`2026-12-24T10:00`).
        from: String,
        /// Fires at or after it are not planned (runs started before it are followed to their
        /// end); at most 366 days after `from`.
        to: String,
        /// How the calls behave (default: 1 s, never failing). Named so beside the job's own
        /// `target` (an SQS queue or EventBridge bus), which a simulation takes as it is.
        simulated_target: Option<SimulationTarget>,
        /// When the target is down (at most 100 windows).
        #[schema(max_items = 100)]
        outages: Option<Vec<SimulationOutage>>,
        /// When Sundial itself is down (at most 100 windows).
        #[schema(max_items = 100)]
        downtime: Option<Vec<SimulationWindow>>,
        /// How many rows to list (default 200, at most 10000).
        #[schema(minimum = 0, maximum = 10000)]
        rows: Option<u32>,
    }
}

job_schema! {
    /// A job as `GET /jobs/{jobId}` shows it: the definition as written (the value of every
    /// secret header shown as `"***"`), with `active` set to the current state, plus `state`,
    /// `pausedNotes`, `pausedUntil` (when set), `createdAt` and `updatedAt`. Leave those out to post
    /// it back to update.
    #[derive(ToSchema)]
    #[serde(rename_all = "camelCase")]
    Job {
        /// The job's id.
        #[schema(pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$", max_length = 128)]
        job_id: String,
        /// 1 when scheduled runs happen, 0 when paused.
        #[schema(minimum = 0, maximum = 1)]
        active: u8,
        /// `active` or `paused`.
        state: JobStateName,
        /// Why the job was paused or resumed.
        paused_notes: Option<String>,
        /// When a paused job resumes by itself (present only for a pause given `until`).
        #[schema(format = DateTime)]
        paused_until: Option<String>,
        /// When the job was created (UTC, milliseconds).
        #[schema(format = DateTime)]
        created_at: String,
        /// When the job last changed.
        #[schema(format = DateTime)]
        updated_at: String,
    }
}

built_schema! {
    /// Whether scheduled runs happen: `active` or `paused`.
    JobStateName, refs: [], names_of::<sundial_core::job::JobStatus>
}

/// The order of `GET /jobs` ([`JobOrder`](sundial_ports::store::JobOrder)).
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub enum JobSortName {
    /// By job id (the default).
    Id,
    /// Soonest next fire first; jobs that will not fire (paused, triggered only, finished) last.
    NextFire,
    /// Latest run first (by when each job's newest execution was created); jobs never run last.
    LastRun,
}

// ------------------------------------------------------------------------------------------------
// Other request bodies.

/// Why a job is paused or resumed.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Notes {
    /// At most 4096 bytes; a pause without notes records `"paused"`.
    #[schema(max_length = 4096, example = "waiting for the new warehouse")]
    notes: Option<String>,
}

/// Why a job is paused, and until when.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct PauseRequest {
    /// At most 4096 bytes; a pause without notes records `"paused"`.
    #[schema(max_length = 4096, example = "waiting for the new warehouse")]
    notes: Option<String>,
    /// When the pause ends by itself: an RFC 3339 instant or a duration from now (`"2h"`,
    /// `"PT30M"`), later than now. The tick then resumes the job as the system, and its schedule
    /// goes on from that time. Without it, the job stays paused until resumed.
    #[schema(min_length = 1, example = "2h")]
    until: Option<String>,
}

/// Why an execution is cancelled or terminated; goes into its event log.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Reason {
    /// At most 4096 bytes.
    #[schema(max_length = 4096, example = "duplicate request")]
    reason: Option<String>,
}

built_schema! {
    /// Which fire times of a backfill's ranges run (read ignoring case).
    BackfillMode, refs: [], names_of::<sundial_core::job::BackfillMode>
}

/// One range of a backfill: its fire times from `startTime` to `endTime`, inclusive.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct BackfillRange {
    /// First time of the range (RFC 3339).
    #[schema(format = DateTime)]
    start_time: String,
    /// Last time of the range (inclusive), not before `startTime`.
    #[schema(format = DateTime)]
    end_time: String,
}

/// A backfill request: the fire times of the job's schedule in `[startTime, endTime]`, or in each
/// of `ranges` (not both), run now. At most 10,000 times in all.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"startTime": "2024-06-01T00:00:00Z", "endTime": "2024-06-07T23:59:59Z", "overlap": "BufferAll"}))]
#[allow(dead_code)]
pub struct BackfillRequest {
    /// First time of the range (RFC 3339); required unless `ranges` is given.
    #[schema(format = DateTime)]
    start_time: Option<String>,
    /// Last time of the range (inclusive), not before `startTime`; required unless `ranges`.
    #[schema(format = DateTime)]
    end_time: Option<String>,
    /// Several ranges instead of `startTime` and `endTime` (1–100, not overlapping).
    #[schema(min_items = 1, max_items = 100)]
    ranges: Option<Vec<BackfillRange>>,
    /// Overrides the job's overlap policy for these runs (default `AllowAll`).
    overlap: Option<OverlapPolicy>,
    /// Which times run (default `all`).
    mode: Option<BackfillMode>,
    /// Newest first (default false): meaningful under `BufferAll`, which runs them in order.
    reverse: Option<bool>,
    /// Only answer which times would run; record nothing.
    dry_run: Option<bool>,
}

/// A spec preview request: `schedule` or `timer` (one of them), from when, how many.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"schedule": {"cron": ["0 12 * * MON-FRI"], "timeZone": "America/New_York"}, "from": "2024-06-01T00:00:00Z", "count": 3}))]
#[allow(dead_code)]
pub struct PreviewRequest {
    /// A schedule spec.
    schedule: Option<Schedule>,
    /// A `timer` (docs/api.md), read as if created at `from`.
    timer: Option<TimerField>,
    /// Times strictly after this (RFC 3339; default now).
    #[schema(format = DateTime)]
    from: Option<String>,
    /// How many times (1–1000, default 10).
    #[schema(minimum = 1, maximum = 1000)]
    count: Option<u32>,
    /// Apply this job's deterministic jitter.
    job_id: Option<String>,
}

/// docs/api.md's feedback report from an async job. Every field is optional; unknown fields are
/// ignored (the report belongs to the job's service).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"status": "succeed", "progress": "100%", "data": {"rows": 120}}))]
#[allow(dead_code)]
pub struct FeedbackReport {
    /// `failed`, `succeed`, `finalFailed`, `finalSucceed`, or empty for still running (any case).
    status: Option<String>,
    /// A note for people.
    message: Option<String>,
    /// The error code of a failed report.
    #[schema(value_type = Option<ErrorCode>)]
    error: Option<Value>,
    /// Progress, as the service likes to write it.
    #[schema(value_type = ReportedProgress, required = false)]
    progress: Option<Value>,
    /// When the service wrote the report (`2022-10-26 10:23:13`).
    datetime: Option<String>,
    /// The business data: becomes the execution's `result`.
    #[schema(value_type = RunResult, required = false)]
    data: Option<Value>,
}

/// A service's timer list, the whole of it: `{"timer": [job, …]}`, `{"timers": [job, …]}` or a
/// bare array. Each job carries its `jobId`.
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum TimerList {
    /// `{"timer": […]}` (docs/api.md).
    Timer(TimerListObject),
    /// `{"timers": […]}`.
    Timers(TimersListObject),
    /// A bare array.
    Bare(Vec<DeclaredJob>),
}

/// `{"timer": [job, …]}`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct TimerListObject {
    /// The declared jobs.
    timer: Vec<DeclaredJob>,
}

/// `{"timers": [job, …]}`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct TimersListObject {
    /// The declared jobs.
    timers: Vec<DeclaredJob>,
}

built_schema! {
    /// The labels that select the jobs a prune may remove: 1–16 `key: value` pairs, as `labels`.
    PruneLabels, refs: [], |description: &str| {
        let RefOr::T(Schema::Object(mut schema)) = <Labels as PartialSchema>::schema() else {
            unreachable!("Labels is an object schema");
        };
        schema.min_properties = Some(1);
        schema.description = Some(description.to_string());
        RefOr::T(Schema::Object(schema))
    }
}

/// What an apply may remove: the jobs an earlier apply wrote that match these labels and that
/// `jobs` no longer lists.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub struct Prune {
    /// Every one of these must match.
    labels: PruneLabels,
}

/// `POST /apply`'s body: the jobs of a set of files, merged into the stored ones as declared
/// timers are, and what to prune.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(example = json!({"jobs": [{"jobId": "nightly-report", "schedule": {"cron": ["0 2 * * *"]}, "request": [{"url": "https://reports.example.com/run"}], "labels": {"team": "payments"}}], "prune": {"labels": {"team": "payments"}}, "dryRun": true, "changeId": "git:3f2c1a9"}))]
#[allow(dead_code)]
pub struct ApplyBody {
    /// The declared jobs, each a job definition with its `jobId` (at most 1,000, no id twice).
    #[schema(max_items = 1000)]
    jobs: Vec<DeclaredJob>,
    /// Also delete the jobs an earlier apply wrote that match these labels and `jobs` no longer
    /// lists. Without it nothing is deleted.
    prune: Option<Prune>,
    /// Only answer what would change; write nothing.
    dry_run: Option<bool>,
    /// The change's id in the audit trail (a commit, say); made from the time when not given.
    #[schema(pattern = r"^[A-Za-z0-9_.:/-]{1,128}$")]
    change_id: Option<String>,
}

// ------------------------------------------------------------------------------------------------
// Answers.

/// docs/api.md's success envelope.
#[derive(ToSchema, Serialize, Clone, Debug)]
pub struct Envelope {
    /// Always 200.
    #[schema(minimum = 200, maximum = 200)]
    pub resp_code: u16,
    /// Always null.
    #[schema(value_type = Option<String>)]
    pub resp_msg: Option<String>,
}

impl Envelope {
    /// `{"resp_code": 200, "resp_msg": null}`.
    pub fn ok() -> Self {
        Envelope {
            resp_code: 200,
            resp_msg: None,
        }
    }
}

/// Every error: docs/api.md's envelope with the HTTP status as `resp_code` and a message. A 400's
/// message starts with the path of the offending field (`creator: …`, `request[1].url: …`).
#[derive(ToSchema, Serialize, Clone, Debug)]
#[schema(example = json!({"resp_code": 400, "resp_msg": "creator: is required"}))]
pub struct ErrorEnvelope {
    /// The HTTP status.
    #[schema(minimum = 400, maximum = 599)]
    pub resp_code: u16,
    /// What went wrong.
    pub resp_msg: String,
}

/// The envelope of create and update: with `warnings` when the job is valid but probably not
/// what was meant (a schedule that never fires).
#[derive(ToSchema, Serialize)]
pub struct Created {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Each starts with the field it is about. Absent when there is nothing to warn about.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub warnings: Option<Vec<String>>,
}

/// The envelope of update and run: the new run's id.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Updated {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The run the update started.
    pub execution_id: String,
    /// As in create.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub warnings: Option<Vec<String>>,
}

built_schema! {
    /// Where a run not yet started is.
    RunPlace, refs: [], names_of::<sundial_core::change::RunPlace>
}

/// A run not yet started that a change would affect.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AffectedRun {
    /// The run.
    pub execution_id: String,
    /// Where it is.
    #[schema(value_type = RunPlace)]
    pub place: &'static str,
    /// Its state; null while only planned.
    #[schema(value_type = Option<ExecutionState>)]
    pub state: Option<sundial_core::execution::ExecutionState>,
    /// The nominal time it reports.
    #[schema(format = DateTime)]
    pub scheduled_time: String,
    /// What changes for it, each starting with the field (`overlap: Skip → BufferAll`).
    pub changes: Vec<String>,
}

/// The next fire times before and after a change (with jitter, the schedule's zone offset; empty
/// when paused or triggered-only).
#[derive(ToSchema, Serialize)]
pub struct FireTimesBeforeAfter {
    /// As the job is.
    #[schema(max_items = 10)]
    pub before: Vec<String>,
    /// With the change.
    #[schema(max_items = 10)]
    pub after: Vec<String>,
}

/// What an update would do (`?dryRun=true`); nothing was written.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePreview {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Always true: nothing was written and nothing runs.
    #[schema(value_type = bool)]
    pub dry_run: bool,
    /// The next 10 fire times before and after.
    pub next_fire_times: FireTimesBeforeAfter,
    /// The runs not yet started (planned, waiting, buffered) the change would affect.
    pub affected_runs: Vec<AffectedRun>,
    /// What the update would warn about, as create does; absent when nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub warnings: Option<Vec<String>>,
}

built_schema! {
    /// The answer of update and run: the run it started, or with `?dryRun=true` what it would do.
    UpdateAnswer, refs: [Updated, UpdatePreview], |description| one_of(description, vec![
        reference::<Updated>(),
        reference::<UpdatePreview>(),
    ])
}

/// The envelope of a trigger: the run's id and number.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"resp_code": 200, "resp_msg": null, "executionId": "daily-report~t~emea-2024-06-01", "executeNumber": 1}))]
pub struct Triggered {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// `{jobId}~t~{Idempotency-Key}`, or with a key Sundial made.
    pub execution_id: String,
    /// 1, 2, 3… per job.
    pub execute_number: u64,
}

/// The envelope of a backfill: how many runs it makes; with `dryRun`, which times.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({"resp_code": 200, "resp_msg": null, "count": 2, "dryRun": true, "times": ["2024-06-01T02:00:00+00:00", "2024-06-01T01:00:00+00:00"]}))]
pub struct BackfillAccepted {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Runs it makes: the fire times its ranges hold (at most 10,000) that its mode selects.
    pub count: u64,
    /// True when nothing was recorded (`dryRun`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub dry_run: Option<bool>,
    /// With `dryRun`: the times that would run, in the order they would, with the schedule's zone
    /// offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub times: Option<Vec<String>>,
}

/// The envelope of cancel and terminate: the execution's new state.
#[derive(ToSchema, Serialize)]
pub struct StateChanged {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// `Cancelled` or `Terminated`.
    #[schema(value_type = ExecutionState)]
    pub state: sundial_core::execution::ExecutionState,
}

/// The envelope of a timer reconcile: what changed.
#[derive(ToSchema, Serialize)]
pub struct TimersReconciled {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Jobs created.
    pub created: Vec<String>,
    /// Jobs whose definition changed: the fields the code changed since the previous declaration
    /// were applied.
    pub updated: Vec<String>,
    /// For each updated job, the fields applied (in name order): `{"svc-a": ["timer"]}`.
    #[serde(rename = "changedFields")]
    pub changed_fields: std::collections::BTreeMap<String, Vec<String>>,
    /// Jobs the code did not change since its previous declaration (an operator's pause, notes,
    /// labels and edits stay).
    pub unchanged: Vec<String>,
    /// Jobs of the service that the list no longer declares.
    pub removed: Vec<String>,
}

/// What `POST /apply` changed, or with `dryRun` would change.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The change's id, as the audit trail records it.
    pub change_id: String,
    /// Nothing was written.
    pub dry_run: bool,
    /// Jobs created.
    pub created: Vec<String>,
    /// Jobs updated, each with the changes of the fields the files changed since the last apply,
    /// by JSON pointer (secret header values as `"***"`), as the job's history shows an update.
    #[schema(value_type = std::collections::BTreeMap<String, Vec<FieldChange>>)]
    pub updated: std::collections::BTreeMap<String, Vec<serde_json::Value>>,
    /// Jobs the files did not change since the last apply (an operator's pause, notes, labels and
    /// edits stay).
    pub unchanged: Vec<String>,
    /// Jobs pruned.
    pub deleted: Vec<String>,
}

/// The envelope of retention: what was removed.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cleaned {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Executions removed.
    pub executions_deleted: u64,
    /// Deleted jobs whose executions were all removed.
    pub destroyed_jobs_cleaned: u64,
    /// Entries of job histories removed by the same rule (`GET /jobs/{jobId}/history`).
    pub audit_entries_deleted: u64,
}

/// The envelope of destroy-by-parent: the jobs deleted.
#[derive(ToSchema, Serialize)]
pub struct Destroyed {
    /// The envelope.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// Ids of the jobs deleted (the parent among them).
    pub deleted: Vec<String>,
}

/// A page of jobs, in id order.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobsPage {
    /// The jobs.
    #[schema(value_type = Vec<Job>)]
    pub jobs: Vec<Value>,
    /// Pass back as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// One entry of an execution's log: a transition, or a note while in a state (`from == to`).
#[derive(ToSchema, Serialize)]
pub struct ExecutionEvent {
    /// When it happened.
    #[schema(format = DateTime)]
    pub at: String,
    /// The state before; null for the creation event.
    #[schema(value_type = Option<ExecutionState>)]
    pub from: Option<sundial_core::execution::ExecutionState>,
    /// The state after.
    #[schema(value_type = ExecutionState)]
    pub to: sundial_core::execution::ExecutionState,
    /// What happened, for people.
    pub message: String,
}

/// One run of a job, as lists show it (without its event log).
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionSummary {
    /// Stable id, derived from the job and the fire or trigger.
    pub execution_id: String,
    /// The job.
    pub job_id: String,
    /// 1, 2, 3… per job.
    pub execute_number: u64,
    /// Where it is.
    #[schema(value_type = ExecutionState)]
    pub state: sundial_core::execution::ExecutionState,
    /// The nominal time, before jitter (the trigger time for triggers).
    #[schema(format = DateTime)]
    pub scheduled_time: String,
    /// What created it: `trigger:<key>`, `update:<id>`, the schedule or a backfill.
    pub scheduled_by_id: String,
    /// When its first attempt started.
    #[schema(format = DateTime)]
    pub started_at: Option<String>,
    /// When it finished.
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
    /// Attempts so far.
    pub attempts: u32,
    /// The last progress an async job reported.
    #[schema(value_type = ReportedProgress)]
    pub progress: Option<Value>,
    /// The error code of the last failure: an HTTP status, an async `error`, `timeout`, …
    pub error: Option<String>,
    /// What the run produced.
    #[schema(value_type = RunResult)]
    pub result: Option<Value>,
    /// Trigger arguments.
    #[schema(value_type = Option<TriggerArguments>)]
    pub arguments: Option<Value>,
    /// The job's parent.
    pub parent_job: Option<String>,
    /// The parent's execute number.
    pub parent_job_execution: Option<u64>,
}

/// One run of a job with its append-only event log.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    /// The run.
    #[serde(flatten)]
    pub summary: ExecutionSummary,
    /// Its log (capped at 200; the oldest after the first are dropped).
    pub events: Vec<ExecutionEvent>,
    /// How many events the cap dropped.
    pub dropped_events: u64,
}

/// A page of executions, newest first, without their logs.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionsPage {
    /// The executions.
    pub executions: Vec<ExecutionSummary>,
    /// Pass back as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// A page of executions with their logs (docs/api.md's child job logs).
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionLogsPage {
    /// The executions.
    pub executions: Vec<Execution>,
    /// Pass back as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

/// One of the 10 most recent runs in `describe`.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentAction {
    /// The nominal time.
    #[schema(format = DateTime)]
    pub scheduled_time: String,
    /// When it started, if it has.
    #[schema(format = DateTime)]
    pub actual_time: Option<String>,
    /// The run.
    pub execution_id: String,
    /// Where it is.
    #[schema(value_type = ExecutionState)]
    pub state: sundial_core::execution::ExecutionState,
}

/// A run not finished yet, in `describe`.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningExecution {
    /// The run.
    pub execution_id: String,
    /// `Enqueued` or `Processing`.
    #[schema(value_type = ExecutionState)]
    pub state: sundial_core::execution::ExecutionState,
    /// When it started, if it has.
    #[schema(format = DateTime)]
    pub started_at: Option<String>,
}

/// What a job will do and has done.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeInfo {
    /// The next 10 fire times (jitter applied, the schedule's zone offset); empty when paused or
    /// triggered-only.
    #[schema(max_items = 10)]
    pub future_action_times: Vec<String>,
    /// The 10 most recent runs, newest first.
    #[schema(max_items = 10)]
    pub recent_actions: Vec<RecentAction>,
    /// Runs not finished yet.
    pub running_executions: Vec<RunningExecution>,
    /// Scheduled runs so far.
    pub action_count: u64,
    /// Fires skipped by the overlap policy.
    pub overlap_skipped: u64,
    /// Fires missed beyond the catch-up window.
    pub missed_catchup_window: u64,
    /// Fires dropped from a full buffer.
    pub buffer_dropped: u64,
    /// Fires waiting in the buffer.
    pub buffer_size: u64,
    /// Scheduled runs left, when limited.
    pub remaining_actions: Option<u64>,
    /// Backfill requests waiting.
    pub pending_backfills: u64,
}

/// `GET /jobs/{jobId}/describe`.
#[derive(ToSchema, Serialize)]
pub struct Described {
    /// The job, as `GET /jobs/{jobId}` shows it: its `timer` or `schedule` as written.
    #[schema(value_type = Job)]
    pub job: Value,
    /// The job's spec normalized: the canonical form of its `schedule`, or of what its `timer`
    /// compiles to (docs/spec.md, "Canonical form"); null for a triggered-only job.
    #[schema(value_type = Option<CanonicalSchedule>)]
    pub schedule: Option<Value>,
    /// Fire times, runs and counters.
    pub info: DescribeInfo,
}

/// The canonical form of a calendar: every field as ranges.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct CanonicalCalendar {
    /// Seconds.
    second: Vec<CalendarRange>,
    /// Minutes.
    minute: Vec<CalendarRange>,
    /// Hours.
    hour: Vec<CalendarRange>,
    /// Days of the month.
    day_of_month: Vec<CalendarRange>,
    /// Months.
    month: Vec<CalendarRange>,
    /// Years.
    year: Vec<CalendarRange>,
    /// Days of the week (0 = Sunday).
    day_of_week: Vec<CalendarRange>,
    /// The note or the cron string it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    comment: Option<String>,
}

/// The canonical form of an interval.
#[derive(ToSchema, Serialize)]
#[allow(dead_code)]
pub struct CanonicalInterval {
    /// The period.
    #[schema(value_type = Duration)]
    every: String,
    /// The offset from the epoch.
    #[schema(value_type = Duration)]
    offset: String,
}

/// The DST policy, resolved.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct CanonicalDst {
    /// Missing times.
    gap: DstGap,
    /// Repeated times.
    overlap: DstOverlap,
}

/// A spec in the one canonical form every input compiles to (what `describe` and the stored job
/// use).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct CanonicalSchedule {
    /// Calendars (cron strings become calendars).
    calendars: Vec<CanonicalCalendar>,
    /// Intervals.
    intervals: Vec<CanonicalInterval>,
    /// Excluded calendars.
    exclude: Vec<CanonicalCalendar>,
    /// No fire before.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    start_time: Option<String>,
    /// No fire after.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    end_time: Option<String>,
    /// Jitter, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Duration>, nullable = false)]
    jitter: Option<String>,
    /// The zone.
    time_zone: String,
    /// The dialect.
    dialect: Dialect,
    /// The DST policy.
    dst: CanonicalDst,
}

/// `POST /specs/preview`.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// Fire times, RFC 3339 with the zone's offset.
    pub times: Vec<String>,
    /// The canonical spec; null for a triggered-only timer.
    #[schema(value_type = Option<CanonicalSchedule>)]
    pub schedule: Option<Value>,
    /// True for a triggered-only timer (`period: "external"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub triggered_only: Option<bool>,
    /// Why no time is ahead, when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub warnings: Option<Vec<String>>,
}

/// Whether the process serves requests and its engine ticks.
#[derive(ToSchema, Serialize)]
pub struct Health {
    /// `ok`, or `stalled` (with 503) when the tick is late.
    pub status: HealthStatus,
    /// The engine's loops, when this process runs them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub engine: Option<EngineHealth>,
    /// The debug mode in force: `off`, `schedules`, `triggers` or `both`
    /// (`GET /settings/debugMode`).
    #[serde(rename = "debugMode")]
    #[schema(example = "off")]
    pub debug_mode: &'static str,
}

/// `PUT /settings/debugMode`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"mode": "schedules", "reason": "load test of the billing service"}))]
#[allow(dead_code)]
pub struct DebugModeRequest {
    /// `off`, `schedules` (scheduled fires do not run), `triggers` (runs programs trigger do not
    /// run) or `both`. Console triggers and backfills always run.
    #[schema(pattern = "^(off|schedules|triggers|both)$")]
    mode: String,
    /// Why, kept with the switch (at most 1024 bytes).
    #[schema(max_length = 1024)]
    reason: Option<String>,
}

/// `GET`/`PUT /settings/debugMode`: the mode and its switches, newest first.
#[derive(ToSchema, Serialize)]
pub struct DebugModeAnswer {
    /// `off`, `schedules`, `triggers` or `both`.
    pub mode: String,
    /// `stored` once switched at run time; `startup` while the start-up value
    /// (`--debug-mode`, the AWS template's parameter) holds.
    pub source: &'static str,
    /// The switches, newest first (at most 50).
    #[schema(value_type = Vec<DebugModeChangeSchema>)]
    pub history: Vec<sundial_service::app::DebugModeChange>,
}

/// One switch of the debug mode.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct DebugModeChangeSchema {
    /// When (RFC 3339).
    at: String,
    /// Who: the caller's token name.
    by: String,
    /// The mode before.
    from: String,
    /// The mode after.
    to: String,
    /// Why, when the request said.
    reason: Option<String>,
}

/// The answer's verdict.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Serving, and the tick is on time.
    Ok,
    /// The tick is late beyond `tickLateAfterSeconds`.
    Stalled,
}

/// When the engine's loops last ran.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineHealth {
    /// The last tick that finished (or the engine's start, before the first).
    #[schema(format = DateTime)]
    pub last_tick: String,
    /// The last pass of the dispatch poller, if any yet.
    #[schema(format = DateTime)]
    pub last_dispatch: Option<String>,
    /// How late the tick may be before the process reports `stalled`.
    pub tick_late_after_seconds: i64,
}

// ------------------------------------------------------------------------------------------------
// Parameters.

/// The job in the path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path, names("jobId"))]
#[allow(dead_code)]
pub struct JobPath(
    /// The job's id: 1–128 characters of `A–Z a–z 0–9 _ . -`, not `.` or `..`.
    #[param(
        pattern = r"^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.\.[A-Za-z0-9_.-]+)$",
        max_length = 128,
        example = "daily-report"
    )]
    String,
);

/// The execution in the path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path, names("id"))]
#[allow(dead_code)]
pub struct ExecutionPath(
    /// The execution's id, as a trigger or a list returned it.
    #[param(
        min_length = 1,
        max_length = 512,
        example = "daily-report~t~emea-2024-06-01"
    )]
    String,
);

/// `limit` and `cursor` of a paginated list.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PageQuery {
    /// Page size, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `nextCursor` of the previous page, passed back unchanged. Opaque (its form differs
    /// between stores); a cursor the server did not make is a 400.
    #[param(min_length = 1)]
    cursor: Option<String>,
}

/// The filters of `GET /executions`; all given must match, any other parameter is a 400 naming it.
#[derive(IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ExecutionSearchQuery {
    /// Only runs in one of these states, comma-separated (`Failed,Terminated`).
    #[param(pattern = r"^[A-Za-z, ]+$", example = "Failed,Terminated")]
    state: Option<String>,
    /// Only runs of this job.
    #[param(pattern = r"^[A-Za-z0-9_.-]{1,128}$")]
    job_id: Option<String>,
    /// Only runs of jobs with this label, as `key:value`; repeat it for several, all of which must
    /// match. A run whose job is deleted has no labels.
    #[param(pattern = r"^[A-Za-z0-9_./-]{1,63}:[^\x00-\x1f\x7f-\x9f]+$")]
    label: Option<Vec<String>>,
    /// Only runs of jobs of this creator. A run whose job is deleted has no creator.
    creator: Option<String>,
    /// Only runs started so: `schedule` (the job's schedule), `trigger` (a manual trigger or an
    /// update-and-run), `backfill`, or `parent` (runs of a child job, whatever started them).
    #[param(pattern = "^(schedule|trigger|backfill|parent)$")]
    source: Option<String>,
    /// Only runs scheduled at or after this: an RFC 3339 time, or a duration back from now
    /// (`24h`, `P7D`).
    #[param(example = "24h")]
    since: Option<String>,
    /// Only runs scheduled before this (RFC 3339 or a duration back from now).
    until: Option<String>,
    /// Only runs that ended at or after this (RFC 3339 or a duration back from now).
    ended_since: Option<String>,
    /// Only runs that ended before this (RFC 3339 or a duration back from now).
    ended_until: Option<String>,
    /// Page size, 1–1000 (default 100). A page may hold fewer runs, even none, and still have a
    /// `nextCursor` (DynamoDB filters what it read); only a null `nextCursor` ends the list.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `nextCursor` of the previous page, passed back unchanged. Opaque; a cursor the server
    /// did not make is a 400 naming `cursor`.
    #[param(min_length = 1)]
    cursor: Option<String>,
}

/// The filters of `GET /jobs`; any other parameter is a 400.
#[derive(IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
#[allow(dead_code)]
pub struct JobListQuery {
    /// Only jobs in this state.
    state: Option<JobStateName>,
    /// Only jobs of this creator.
    creator: Option<String>,
    /// Only children of this job.
    parent_job: Option<String>,
    /// Only jobs a service declared in its timer list.
    service: Option<String>,
    /// Only jobs with this label, as `key:value` (`team:payments`); repeat it for several, all of
    /// which must match.
    #[param(pattern = r"^[A-Za-z0-9_./-]{1,63}:[^\x00-\x1f\x7f-\x9f]+$")]
    label: Option<Vec<String>>,
    /// Only jobs whose id starts with this (1–128 characters of `A–Z a–z 0–9 _ . -`).
    #[param(pattern = r"^[A-Za-z0-9_.-]{1,128}$")]
    id_prefix: Option<String>,
    /// The order (default `id`), ties broken by job id. `lastRun` is not available on AWS (the
    /// DynamoDB store keeps no index of each job's last run): there it is a 400 naming `sort`.
    sort: Option<JobSortName>,
    /// Page size, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `nextCursor` of the previous page, passed back unchanged. Opaque (its form differs
    /// between stores); a cursor the server did not make is a 400.
    #[param(min_length = 1)]
    cursor: Option<String>,
}

/// The synthetic target of a simulation.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct SimulationTarget {
    /// The median call duration (default 1s).
    #[schema(value_type = Option<Duration>)]
    p50: Option<String>,
    /// The 99th percentile call duration, at least `p50` (default `p50`); calls follow a
    /// log-normal distribution through both. At most 1d.
    #[schema(value_type = Option<Duration>)]
    p99: Option<String>,
    /// The share of calls that answer HTTP 500 (0 to 1, default 0).
    #[schema(minimum = 0, maximum = 1)]
    failure_rate: Option<f64>,
    /// The seed of the draws (default 1): the same seed gives the same answer.
    #[schema(minimum = 0)]
    seed: Option<u64>,
}

/// What the target's calls do during an outage.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) enum OutageMode {
    /// Fail at once with a connection error (the default).
    Error,
    /// Hang until the attempt's `timeoutSeconds`.
    Timeout,
}

/// A window when the target is down: `[start, start + length)`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct SimulationOutage {
    /// RFC 3339, or UTC without a zone (`2026-12-24T10:00`).
    start: String,
    /// How long.
    #[schema(value_type = Duration)]
    length: String,
    /// What calls starting in it do (default `error`).
    mode: Option<OutageMode>,
}

/// A window when Sundial itself is down: nothing happens in it, and what fell due happens when
/// it ends (late fires meet the catch-up rules).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
pub(crate) struct SimulationWindow {
    /// RFC 3339, or UTC without a zone (`2026-12-24T10:00`).
    start: String,
    /// How long.
    #[schema(value_type = Duration)]
    length: String,
}

/// One changed field of an update (in a history entry, or in an apply's answer).
#[derive(ToSchema, Serialize)]
pub(crate) struct FieldChange {
    /// The field's JSON pointer (`/timer/period`).
    path: String,
    /// The value before; absent when the field was added. Any JSON, `null` included (a field
    /// written as `null`), so not a nullable schema: `null` would match both of its branches.
    #[schema(value_type = DefinitionValue, required = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    old: Option<Value>,
    /// The value after; absent when the field was removed. Any JSON, `null` included.
    #[schema(value_type = DefinitionValue, required = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    new: Option<Value>,
}

impl From<sundial_core::job::FieldChange> for FieldChange {
    fn from(change: sundial_core::job::FieldChange) -> Self {
        FieldChange {
            path: change.path,
            old: change.old,
            new: change.new,
        }
    }
}
