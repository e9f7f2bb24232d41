//! `/ui/upcoming`: the next 24 hours of fires across all jobs or a filtered set, daylight-saving
//! changes marked, as a view model: [`UpcomingPage::load`] asks [`App::upcoming`] (what is read
//! and how far the timeline goes is its decision), keeps the first [`LISTED`] fires one by one and
//! counts the rest per minute; its [`Render`] draws them and says when the timeline stops early
//! and why.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use chrono::{DateTime, DurationRound, Utc};
use chrono_tz::Tz;
use maud::{html, Markup, Render};
use serde::Deserialize;
use sundial_core::upcoming::TimelineFire;
use sundial_ports::store::{JobFilter, Store};
use sundial_service::app::{App, AppError, UpcomingCut, UPCOMING_FIRES, UPCOMING_JOBS};

use crate::pages::non_empty;
use crate::session::Session;
use crate::view::zone_of;
use crate::view::{filter_fields, job_url, layout, when};
use crate::{ConsoleState, PageError};

/// How far the page looks ahead.
pub const SPAN_HOURS: i64 = 24;

/// Fires listed one by one; the rest are counted per minute.
pub const LISTED: usize = 100;

/// The page's query: which active jobs.
#[derive(Debug, Default, Deserialize)]
pub struct UpcomingQuery {
    /// Jobs of this creator.
    pub creator: Option<String>,
    /// Jobs a service declared.
    pub service: Option<String>,
    /// Children of this job.
    pub parent: Option<String>,
}

impl UpcomingQuery {
    /// The active jobs the query names (blank fields name nothing).
    pub fn filter(&self) -> JobFilter {
        JobFilter {
            state: Some("active".to_string()),
            creator: non_empty(&self.creator),
            parent_job: non_empty(&self.parent),
            service: non_empty(&self.service),
            ..JobFilter::default()
        }
    }
}

/// The upcoming page, as read.
#[derive(Debug)]
pub struct UpcomingPage {
    /// The jobs asked for.
    pub filter: JobFilter,
    /// When it was read.
    pub now: DateTime<Utc>,
    /// Why the timeline stops before the span ends, if it does.
    pub cut: Option<UpcomingCut>,
    /// Until when the timeline holds every fire.
    pub complete_until: DateTime<Utc>,
    /// How many fires the timeline holds.
    pub fire_count: usize,
    /// The first [`LISTED`] fires, soonest first.
    pub listed: Vec<ListedFire>,
    /// The rest, counted per minute (UTC), in order.
    pub minutes: Vec<MinuteCount>,
}

/// One fire listed on its own.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedFire {
    /// When it fires.
    pub due: DateTime<Utc>,
    /// Its job.
    pub job_id: String,
    /// The job's zone, to show the time in.
    pub zone: Tz,
    /// The clocks' change just before it, in words, when there is one.
    pub clock_change: Option<String>,
}

/// The fires of one minute past the listed ones.
#[derive(Debug, Clone, PartialEq)]
pub struct MinuteCount {
    /// The minute (UTC).
    pub minute: DateTime<Utc>,
    /// Its fires.
    pub fires: usize,
    /// How many jobs they belong to.
    pub jobs: usize,
    /// The jobs whose fire in it follows a change of their clocks.
    pub clock_changes: Vec<String>,
}

impl UpcomingPage {
    /// Reads the next [`SPAN_HOURS`] hours of fires of the jobs `filter` selects.
    pub async fn load<S: Store>(app: &App<S>, filter: JobFilter) -> Result<Self, AppError> {
        let upcoming = app
            .upcoming(&filter, chrono::Duration::hours(SPAN_HOURS))
            .await?;
        let job_id = |index: usize| {
            upcoming
                .jobs
                .get(index)
                .map_or_else(String::new, |job| job.definition.job_id().to_string())
        };
        let fires = &upcoming.timeline.fires;
        let (listed, counted) = fires.split_at(fires.len().min(LISTED));
        let listed = listed
            .iter()
            .map(|fire| ListedFire {
                due: fire.time.due,
                job_id: job_id(fire.job),
                zone: upcoming.jobs.get(fire.job).map_or(Tz::UTC, zone_of),
                clock_change: clock_change(fire),
            })
            .collect();
        // Per minute: its fires, and the jobs they and their clock changes belong to.
        let mut minutes: BTreeMap<DateTime<Utc>, (usize, BTreeSet<usize>, BTreeSet<usize>)> =
            BTreeMap::new();
        for fire in counted {
            let minute = fire
                .time
                .due
                .duration_trunc(chrono::Duration::minutes(1))
                .unwrap_or(fire.time.due);
            let (count, jobs, changes) = minutes.entry(minute).or_default();
            *count += 1;
            jobs.insert(fire.job);
            if fire.offset_change.is_some() {
                changes.insert(fire.job);
            }
        }
        let minutes = minutes
            .into_iter()
            .map(|(minute, (fires, jobs, changes))| MinuteCount {
                minute,
                fires,
                jobs: jobs.len(),
                clock_changes: changes.into_iter().map(job_id).collect(),
            })
            .collect();
        Ok(UpcomingPage {
            filter,
            now: upcoming.now,
            cut: upcoming.cut,
            complete_until: upcoming.timeline.complete_until,
            fire_count: fires.len(),
            listed,
            minutes,
        })
    }
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
    let page = UpcomingPage::load(&console.app, query.filter()).await?;
    Ok(layout("Upcoming", Some(&session), page.render()).into_response())
}

impl Render for UpcomingPage {
    fn render(&self) -> Markup {
        html! {
            h1 { "Upcoming" }
            p.muted {
                "Fires of active jobs in the next " (SPAN_HOURS) " hours, soonest first; times in each job's zone."
            }
            form.filters method="get" action="/ui/upcoming" role="search" aria-label="Filter jobs" {
                (filter_fields("u", &self.filter))
                div.actions {
                    button type="submit" { "Apply" }
                    a href="/ui/upcoming" { "Clear" }
                }
            }
            @if let Some(cut) = self.cut {
                p.notice role="status" data-cut=(cut_name(cut)) {
                    (cut_words(cut)) " Fires are shown until "
                    (when(self.complete_until, Tz::UTC, self.now)) "."
                }
            }
            @if self.fire_count == 0 {
                p.empty { "Nothing fires in the next " (SPAN_HOURS) " hours." }
            } @else {
                (Listed(self))
                @if !self.minutes.is_empty() {
                    (Minutes(&self.minutes))
                }
            }
        }
    }
}

/// The fires listed one by one.
struct Listed<'a>(&'a UpcomingPage);

impl Render for Listed<'_> {
    fn render(&self) -> Markup {
        let page = self.0;
        html! {
            div.table-wrap {
                table.upcoming data-fires=(page.fire_count) {
                    caption.visually-hidden { "Coming fires" }
                    thead { tr {
                        th scope="col" { "Time" }
                        th scope="col" { "Job" }
                        th scope="col" { "Note" }
                    } }
                    tbody {
                        @for fire in &page.listed {
                            tr {
                                td { (when(fire.due, fire.zone, page.now)) }
                                td { a href=(job_url(&fire.job_id)) { (fire.job_id) } }
                                td { @if let Some(note) = &fire.clock_change { span.dst { (note) } } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The later fires, counted per minute.
struct Minutes<'a>(&'a [MinuteCount]);

impl Render for Minutes<'_> {
    fn render(&self) -> Markup {
        html! {
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
                        @for counts in self.0 {
                            tr {
                                // Plain text: a day holds up to 1,440 of these rows.
                                td { (counts.minute.format("%Y-%m-%d %H:%M")) }
                                td { (counts.fires) }
                                td { (counts.jobs) }
                                td {
                                    @for job in &counts.clock_changes {
                                        span.dst { a href=(job_url(job)) { (job) } } " "
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
