//! `/ui/dashboard` and the "Statistics" section of a job's page: the figures of
//! [`App::fleet_stats`](sundial_service::App::fleet_stats) and
//! [`App::job_stats`](sundial_service::App::job_stats) as they are (the rollups' counts,
//! percentiles and time series), drawn with the console's `chart` module. The window is a query parameter
//! (`?window=1h|24h|7d`, 24 hours by default), so every view is a link.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use maud::{html, Markup, Render};
use serde::Deserialize;
use sundial_core::stats::{Figures, StatsWindow};
use sundial_ports::store::Store;
use sundial_service::app::{FleetStats, JobStats};
use sundial_service::{App, AppError};

use crate::chart::{self, millis, percent, Bucket};
use crate::session::Session;
use crate::view::{job_url, layout};
use crate::{ConsoleState, PageError};

/// The windows the pages offer (the API also has 30 days).
const OFFERED: [StatsWindow; 3] = [StatsWindow::Hour, StatsWindow::Day, StatsWindow::Week];

/// `?window=`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WindowQuery {
    window: Option<String>,
}

impl WindowQuery {
    /// The window asked for (24 hours when none); a name the API does not know is a 400 naming
    /// the field `window`.
    pub(crate) fn window(&self) -> Result<StatsWindow, PageError> {
        match self.window.as_deref().filter(|w| !w.is_empty()) {
            None => Ok(StatsWindow::Day),
            Some(text) => Ok(StatsWindow::parse(text).map_err(AppError::from)?),
        }
    }
}

fn window_words(window: StatsWindow) -> &'static str {
    match window {
        StatsWindow::Hour => "Last hour",
        StatsWindow::Day => "Last day",
        StatsWindow::Week => "Last week",
        StatsWindow::Month => "Last 30 days",
    }
}

fn step_words(window: StatsWindow) -> &'static str {
    match window {
        StatsWindow::Hour => "minute",
        StatsWindow::Day | StatsWindow::Week => "hour",
        StatsWindow::Month => "day",
    }
}

/// Links to the same view over each offered window, the current one marked.
fn window_switch(current: StatsWindow, url: &dyn Fn(StatsWindow) -> String) -> Markup {
    html! {
        nav.windows aria-label="Window" {
            @for w in OFFERED {
                a href=(url(w)) aria-current=[(w == current).then_some("page")] data-window=(w.name()) { (window_words(w)) }
            }
        }
    }
}

/// The series as chart buckets, labelled in UTC by the window's step.
fn buckets(stats: &JobStats) -> Vec<Bucket> {
    let format = match stats.window {
        StatsWindow::Hour | StatsWindow::Day => "%H:%M",
        StatsWindow::Week => "%a %d %b %H:%M",
        StatsWindow::Month => "%b %d",
    };
    stats
        .series
        .iter()
        .map(|p| Bucket {
            label: p.at.format(format).to_string(),
            at: p.at.to_rfc3339(),
            runs: p.runs,
            failed: p.failed,
        })
        .collect()
}

fn quantile_bars(q: &sundial_core::stats::Quantiles, with_p95: bool) -> Vec<chart::Value> {
    let mut named = vec![("p50", q.p50)];
    if with_p95 {
        named.push(("p95", q.p95));
    }
    named.push(("p99", q.p99));
    named
        .into_iter()
        .map(|(name, value)| chart::Value {
            name: name.to_string(),
            value,
            shown: millis(value),
        })
        .collect()
}

/// The headline figures of a window: runs, rates, percentiles, fires that did not run.
fn figures_list(f: &Figures) -> Markup {
    let failure_rate = f.success_rate.map(|r| 1.0 - r);
    html! {
        dl.figures {
            div { dt { "Runs ended" } dd data-figure="runs" { (f.runs) } }
            div { dt { "Success rate" } dd data-figure="success-rate" { (percent(f.success_rate)) } }
            div { dt { "Failure rate" } dd data-figure="failure-rate" { (percent(failure_rate)) } }
            div { dt { "Fire lag p50" } dd data-figure="lag-p50" { (millis(f.lag.p50)) } }
            div { dt { "Fire lag p99" } dd data-figure="lag-p99" { (millis(f.lag.p99)) } }
            div { dt { "Duration p50" } dd data-figure="duration-p50" { (millis(f.duration.p50)) } }
            div { dt { "Duration p95" } dd data-figure="duration-p95" { (millis(f.duration.p95)) } }
            div { dt { "Retries" } dd data-figure="retries" { (f.retries) } }
            div { dt { "Missed (catch-up window)" } dd data-figure="missed" { (f.missed) } }
            div { dt { "Skipped (overlap)" } dd data-figure="skipped" { (f.skipped) } }
            div { dt { "Dropped (buffer full)" } dd data-figure="dropped" { (f.dropped) } }
        }
    }
}

/// The charts of one window: runs over time, runs by state, duration and fire-lag percentiles.
/// `id` prefixes the headings' ids (one page may hold two sets).
fn charts(stats: &JobStats, id: &str) -> Markup {
    let step = step_words(stats.window);
    let by_state: Vec<chart::Value> = stats
        .figures
        .by_state
        .iter()
        .map(|(state, n)| chart::Value {
            name: state.clone(),
            value: Some(*n as f64),
            shown: n.to_string(),
        })
        .collect();
    html! {
        div.charts {
            figure.chart-card.wide {
                figcaption id={ (id) "-series" } { "Runs per " (step) " (UTC), failed in red" }
                (chart::counts(&format!("Runs per {step}"), &buckets(stats)))
            }
            figure.chart-card {
                figcaption { "Runs by final state" }
                @if by_state.is_empty() {
                    p.muted { "No runs ended in this window." }
                } @else {
                    (chart::values("Runs by final state", &by_state))
                }
            }
            figure.chart-card {
                figcaption { "Duration percentiles" }
                (chart::values("Duration percentiles", &quantile_bars(&stats.figures.duration, true)))
            }
            figure.chart-card {
                figcaption { "Fire-lag percentiles" }
                (chart::values("Fire-lag percentiles", &quantile_bars(&stats.figures.lag, true)))
            }
        }
    }
}

/// A job page's "Statistics" section over `stats.window`, the switch linking to `base?window=…`.
pub(crate) fn job_section(stats: &JobStats, base: &str) -> Markup {
    let url = |w: StatsWindow| format!("{base}?window={}#stats", w.name());
    html! {
        section.stats aria-labelledby="stats" data-window=(stats.window.name()) {
            h2 id="stats" { "Statistics" }
            (window_switch(stats.window, &url))
            p.muted { (window_words(stats.window)) ", from " (stats.from.format("%Y-%m-%d %H:%M UTC")) " (whole hours are read)." }
            (figures_list(&stats.figures))
            (charts(stats, "job"))
        }
    }
}

/// `/ui/dashboard` as a view model: all jobs' figures over a window, the top failing and slowest
/// jobs ([`App::fleet_stats`]'s answer, typed), and the window it shows.
#[derive(Debug, Clone, PartialEq)]
pub struct DashboardPage {
    /// The window shown.
    pub window: StatsWindow,
    /// Its figures.
    pub fleet: FleetStats,
}

impl DashboardPage {
    /// Reads the figures of `window`.
    pub async fn load<S: Store>(app: &App<S>, window: StatsWindow) -> Result<Self, AppError> {
        let fleet = app.fleet_stats(window).await?;
        Ok(DashboardPage { window, fleet })
    }
}

/// `/ui/dashboard` (debug mode, when it is on, is said by the layout).
pub(crate) async fn dashboard<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Query(query): Query<WindowQuery>,
) -> Result<Response, PageError> {
    let page = DashboardPage::load(&console.app, query.window()?).await?;
    Ok(layout("Dashboard", Some(&session), page.render()).into_response())
}

impl Render for DashboardPage {
    fn render(&self) -> Markup {
        let (window, all) = (self.window, &self.fleet.all);
        let url = |w: StatsWindow| format!("/ui/dashboard?window={}", w.name());
        html! {
            h1 { "Dashboard" }
            (window_switch(window, &url))
            p.muted {
                "All jobs, " (window_words(window).to_lowercase()) ": from "
                (all.from.format("%Y-%m-%d %H:%M UTC")) " (whole hours are read)."
            }
            section.stats aria-labelledby="fleet" data-window=(window.name()) {
                h2 id="fleet" { "All jobs" }
                (figures_list(&all.figures))
                (charts(all, "fleet"))
            }
            div.charts {
                (TopFailing(&self.fleet.top_failing))
                (Slowest(&self.fleet.slowest))
            }
        }
    }
}

/// The jobs with the most failed runs.
struct TopFailing<'a>(&'a [(String, Figures)]);

impl Render for TopFailing<'_> {
    fn render(&self) -> Markup {
        html! {
            section aria-labelledby="failing" {
                h2 id="failing" { "Top failing jobs" }
                @if self.0.is_empty() {
                    p.muted { "No job failed in this window." }
                } @else {
                    div.table-wrap { table.top-failing {
                        thead { tr { th scope="col" { "Job" } th scope="col" { "Failed" } th scope="col" { "Runs" } th scope="col" { "Success rate" } } }
                        tbody { @for (id, f) in self.0 {
                            tr data-job=(id) data-failed=(f.failed()) {
                                td { a href=(job_url(id)) { (id) } }
                                td { (f.failed()) }
                                td { (f.runs) }
                                td { (percent(f.success_rate)) }
                            }
                        } }
                    } }
                }
            }
        }
    }
}

/// The jobs with the highest p95 duration.
struct Slowest<'a>(&'a [(String, Figures)]);

impl Render for Slowest<'_> {
    fn render(&self) -> Markup {
        html! {
            section aria-labelledby="slowest" {
                h2 id="slowest" { "Slowest jobs" }
                @if self.0.is_empty() {
                    p.muted { "No run started in this window." }
                } @else {
                    div.table-wrap { table.slowest {
                        thead { tr { th scope="col" { "Job" } th scope="col" { "Duration p95" } th scope="col" { "p50" } th scope="col" { "Runs" } } }
                        tbody { @for (id, f) in self.0 {
                            tr data-job=(id) {
                                td { a href=(job_url(id)) { (id) } }
                                td { (millis(f.duration.p95)) }
                                td { (millis(f.duration.p50)) }
                                td { (f.runs) }
                            }
                        } }
                    } }
                }
            }
        }
    }
}
