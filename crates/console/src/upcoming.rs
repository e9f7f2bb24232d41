//! `/ui/upcoming`: the next 24 hours of fires across all jobs or a filtered set, daylight-saving
//! changes marked. What is read and how far the timeline goes is [`App::upcoming`]'s; this page
//! shows the first [`LISTED`] fires one by one and counts the rest per minute, and says when the
//! timeline stops early and why.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, DurationRound, Utc};
use maud::{html, Markup};
use serde::Deserialize;
use sundial_core::upcoming::TimelineFire;
use sundial_ports::store::{JobFilter, Store};
use sundial_service::app::{UpcomingCut, UPCOMING_FIRES, UPCOMING_JOBS};

use crate::auth::Session;
use crate::pages::non_empty;
use crate::view::zone_of;
use crate::view::{filter_fields, job_url, layout, when};
use crate::{ConsoleState, PageError};

/// How far the page looks ahead.
const SPAN_HOURS: i64 = 24;

/// Fires listed one by one; the rest are counted per minute.
pub(crate) const LISTED: usize = 100;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct UpcomingQuery {
    creator: Option<String>,
    service: Option<String>,
    parent: Option<String>,
}

/// The fires of one minute past the listed ones.
#[derive(Default)]
struct Minute {
    fires: usize,
    jobs: BTreeSet<usize>,
    clock_changes: BTreeSet<usize>,
}

fn clock_change(fire: &TimelineFire) -> Option<String> {
    fire.offset_change
        .map(|(before, after)| format!("clocks change before this: UTC{before} → UTC{after}"))
}

/// `/ui/upcoming`.
pub(crate) async fn upcoming<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Query(query): Query<UpcomingQuery>,
) -> Result<Response, PageError> {
    let filter = JobFilter {
        state: Some("active".to_string()),
        creator: non_empty(&query.creator),
        parent_job: non_empty(&query.parent),
        service: non_empty(&query.service),
        ..JobFilter::default()
    };
    let upcoming = console
        .app
        .upcoming(&filter, chrono::Duration::hours(SPAN_HOURS))
        .await?;
    let now = upcoming.now;
    let fires = &upcoming.timeline.fires;
    let (listed, counted) = fires.split_at(fires.len().min(LISTED));
    let mut minutes: BTreeMap<DateTime<Utc>, Minute> = BTreeMap::new();
    for fire in counted {
        let minute = fire
            .time
            .due
            .duration_trunc(chrono::Duration::minutes(1))
            .unwrap_or(fire.time.due);
        let entry = minutes.entry(minute).or_default();
        entry.fires += 1;
        entry.jobs.insert(fire.job);
        if fire.offset_change.is_some() {
            entry.clock_changes.insert(fire.job);
        }
    }
    let job_id = |index: usize| {
        upcoming
            .jobs
            .get(index)
            .map_or("", |job| job.definition.job_id().as_str())
    };
    let complete_until = upcoming.timeline.complete_until;
    let content = html! {
        h1 { "Upcoming" }
        p.muted {
            "Fires of active jobs in the next " (SPAN_HOURS) " hours, soonest first; times in each job's zone."
        }
        form.filters method="get" action="/ui/upcoming" role="search" aria-label="Filter jobs" {
            (filter_fields("u", &filter))
            div.actions {
                button type="submit" { "Apply" }
                a href="/ui/upcoming" { "Clear" }
            }
        }
        @if let Some(cut) = upcoming.cut {
            p.notice role="status" data-cut=(cut_name(cut)) {
                (cut_words(cut)) " Fires are shown until "
                (when(complete_until, chrono_tz::Tz::UTC, now)) "."
            }
        }
        @if fires.is_empty() {
            p.empty { "Nothing fires in the next " (SPAN_HOURS) " hours." }
        } @else {
            div.table-wrap {
                table.upcoming data-fires=(fires.len()) {
                    caption.visually-hidden { "Coming fires" }
                    thead { tr {
                        th scope="col" { "Time" }
                        th scope="col" { "Job" }
                        th scope="col" { "Note" }
                    } }
                    tbody {
                        @for fire in listed {
                            @let id = job_id(fire.job);
                            @let zone = upcoming.jobs.get(fire.job).map_or(chrono_tz::Tz::UTC, zone_of);
                            tr {
                                td { (when(fire.time.due, zone, now)) }
                                td { a href=(job_url(id)) { (id) } }
                                td { @if let Some(note) = clock_change(fire) { span.dst { (note) } } }
                            }
                        }
                    }
                }
            }
            @if !minutes.is_empty() {
                h2 id="per-minute" { "Later fires, per minute" }
                p.muted {
                    "Past the first " (LISTED) " fires, the timeline is counted per minute (UTC)."
                }
                div.table-wrap {
                    table.minutes aria-labelledby="per-minute" {
                        thead { tr {
                            th scope="col" { "Minute (UTC)" }
                            th scope="col" { "Fires" }
                            th scope="col" { "Jobs" }
                            th scope="col" { "Clock changes" }
                        } }
                        tbody {
                            @for (minute, counts) in &minutes {
                                tr {
                                    // Plain text: a day holds up to 1,440 of these rows.
                                    td { (minute.format("%Y-%m-%d %H:%M")) }
                                    td { (counts.fires) }
                                    td { (counts.jobs.len()) }
                                    td {
                                        @for job in &counts.clock_changes {
                                            span.dst { a href=(job_url(job_id(*job))) { (job_id(*job)) } } " "
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Upcoming", Some(&session), content).into_response())
}

fn cut_name(cut: UpcomingCut) -> &'static str {
    match cut {
        UpcomingCut::Jobs => "jobs",
        UpcomingCut::Fires => "fires",
        UpcomingCut::JobsById => "jobs-by-id",
    }
}

fn cut_words(cut: UpcomingCut) -> Markup {
    match cut {
        UpcomingCut::Jobs => html! {
            "More than " (UPCOMING_JOBS) " jobs match: the " (UPCOMING_JOBS)
            " firing soonest are read, and the timeline stops where the first job left out fires."
        },
        UpcomingCut::Fires => html! {
            "These jobs fire more than " (UPCOMING_FIRES) " times in the next " (SPAN_HOURS)
            " hours: only the first " (UPCOMING_FIRES) " are computed."
        },
        UpcomingCut::JobsById => html! {
            "More than " (UPCOMING_JOBS) " jobs match and this store lists them by id only: the timeline holds the first "
            (UPCOMING_JOBS) " by id. Narrow the filter to see the rest."
        },
    }
}
