//! The page shell and the small pieces every page uses: times in the job's zone and UTC, state
//! chips, links with encoded path segments.

use axum::response::Html;
use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use maud::{html, Markup, DOCTYPE};

use serde_json::Value;
use sundial_core::job::{Job, When};

use crate::session::Session;
use sundial_ports::store::JobFilter;

/// The page around `content`: header with navigation and, when signed in, the logout button.
pub(crate) fn layout(title: &str, session: Option<&Session>, content: Markup) -> Html<String> {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · Sundial" }
                link rel="stylesheet" href="/ui/assets/console.css";
                script src="/ui/assets/console.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/" { "Sundial" }
                    nav aria-label="Main" {
                        a href="/" { "Jobs" }
                        a href="/ui/executions" { "Executions" }
                        a href="/ui/upcoming" { "Upcoming" }
                        a href="/ui/dashboard" { "Dashboard" }
                        a href="/ui/calendars" { "Calendars" }
                    }
                    @if let Some(session) = session {
                        @if session.signed_in {
                            form.logout method="post" action="/ui/logout" {
                                input type="hidden" name="csrf" value=(session.csrf);
                                button type="submit" { "Log out" }
                            }
                        }
                    }
                }
                @if let Some(text) = session.and_then(|s| s.debug_mode.describe()) {
                    p.banner role="alert" data-debug-mode=(session.map_or("off", |s| s.debug_mode.name())) {
                        strong { "Debug mode is on. " } (text)
                    }
                }
                main id="main" tabindex="-1" { (content) }
            }
        }
    };
    Html(page.into_string())
}

/// A path segment with everything but unreserved characters percent-encoded.
pub(crate) fn seg(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A job page's path. The id `new` is written `%6Eew`: `/ui/jobs/new` is the create page, and the
/// router matches routes on the path as sent but decodes the id it captures, so the encoded form
/// still reaches that job's page (and its forms' `/ui/jobs/%6Eew/…`).
pub(crate) fn job_url(job_id: &str) -> String {
    if job_id == "new" {
        "/ui/jobs/%6Eew".to_string()
    } else {
        format!("/ui/jobs/{}", seg(job_id))
    }
}

/// A state chip: `Succeeded`, `Failed`, `paused`…, styled by its name.
pub(crate) fn chip(state: &str) -> Markup {
    let class = format!("chip chip-{}", state.to_ascii_lowercase());
    html! { span class=(class) { (state) } }
}

/// `in 3 days`, `5 min ago`, `now`.
pub(crate) fn relative(time: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (time - now).num_seconds();
    let magnitude = secs.unsigned_abs();
    let amount = match magnitude {
        0..=9 => return "now".to_string(),
        10..=89 => format!("{magnitude} s"),
        90..=5_399 => format!("{} min", (magnitude + 30) / 60),
        5_400..=129_599 => format!("{} h", (magnitude + 1_800) / 3_600),
        _ => format!("{} days", (magnitude + 43_200) / 86_400),
    };
    if secs > 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A time in `zone` with its abbreviation, the same instant in UTC and how far from now; the
/// script adds the viewer's own zone as a tooltip.
pub(crate) fn when(time: DateTime<Utc>, zone: Tz, now: DateTime<Utc>) -> Markup {
    let local = zone.from_utc_datetime(&time.naive_utc());
    let utc = time.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    html! {
        time datetime=(time.to_rfc3339()) {
            (local.format("%Y-%m-%d %H:%M:%S %Z"))
        }
        @if zone != Tz::UTC {
            " " span.muted { "(" (utc) ")" }
        }
        " " span.muted.relative { (relative(time, now)) }
    }
}

/// The creator, service and parent-job fields of a filter form (the jobs list's, the upcoming
/// page's), their ids prefixed with `prefix` so two forms never share one.
pub(crate) fn filter_fields(prefix: &str, filter: &JobFilter) -> Markup {
    html! {
        @for (name, label, value) in [
            ("creator", "Creator", filter.creator.as_deref()),
            ("service", "Service", filter.service.as_deref()),
            ("parent", "Parent job", filter.parent_job.as_deref()),
        ] {
            (text_field(&format!("{prefix}-{name}"), name, label, value))
        }
    }
}

/// The id-prefix and label fields of the jobs list's filter form, beside [`filter_fields`]: one
/// `label` field per label the filter has (every one must match), or one empty.
pub(crate) fn label_fields(prefix: &str, filter: &JobFilter) -> Markup {
    let mut labels: Vec<String> = filter
        .labels
        .iter()
        .map(|l| format!("{}:{}", l.key, l.value))
        .collect();
    if labels.is_empty() {
        labels.push(String::new());
    }
    html! {
        (text_field(&format!("{prefix}-idPrefix"), "idPrefix", "Id starts with", filter.id_prefix.as_deref()))
        @for (i, label) in labels.iter().enumerate() {
            @let id = if i == 0 { format!("{prefix}-label") } else { format!("{prefix}-label-{}", i + 1) };
            (text_field(&id, "label", "Label (key:value)", Some(label.as_str()).filter(|l| !l.is_empty())))
        }
    }
}

/// A labelled text field of a filter form.
fn text_field(id: &str, name: &str, label: &str, value: Option<&str>) -> Markup {
    html! {
        div.field {
            label for=(id) { (label) }
            input id=(id) name=(name) type="text" value=[value];
        }
    }
}

/// What a job's page says when a form sent the reader back to it: `?backfilled=N` after a
/// backfill was recorded, `?updated=1` after an edit was saved. Only these words are shown,
/// never text from the URL.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct JobNotice {
    #[serde(default)]
    backfilled: Option<String>,
    #[serde(default)]
    updated: Option<String>,
}

impl JobNotice {
    pub(crate) fn render(&self) -> Markup {
        let backfilled = self
            .backfilled
            .as_deref()
            .and_then(|n| n.parse::<u64>().ok());
        html! {
            @if let Some(count) = backfilled {
                p.notice role="status" {
                    "Backfill recorded: " (count) @if count == 1 { " run starts" } @else { " runs start" } " now."
                }
            }
            @if self.updated.is_some() {
                p.notice role="status" { "Saved: the job's definition is changed." }
            }
        }
    }
}

/// `?k=v&…` of `pairs`, each value percent-encoded; empty without pairs.
pub(crate) fn query_string(pairs: &[(&str, String)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", seg(v)))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

pub(crate) fn capitalized(words: &str) -> String {
    let mut chars = words.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The zone a job's times are shown in: its schedule's, UTC for a triggered-only job.
pub(crate) fn zone_of(job: &Job) -> Tz {
    match job.definition.when() {
        When::Scheduled(schedule) => schedule.time_zone(),
        When::TriggeredOnly => Tz::UTC,
    }
}

/// The job's schedule in words.
pub(crate) fn schedule_words(job: &Job) -> String {
    match job.definition.when() {
        When::Scheduled(schedule) => schedule.in_words(),
        When::TriggeredOnly => "Triggered only".to_string(),
    }
}

/// JSON as the pages show it.
pub(crate) fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}
