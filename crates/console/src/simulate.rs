//! The "Simulate" panel of the create and edit pages: the job as the form defines it, run by
//! [`App::simulate_job`](sundial_service::App::simulate_job) (`POST /jobs/simulate`'s use case)
//! over a range against a synthetic target, and the totals and first rows of its answer. The
//! page only collects the scenario and shows the answer; the simulation is the use case's.

use chrono::{DurationRound, TimeDelta};
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::{json, Value};
use sundial_core::simulate::{Report, Row};
use sundial_ports::store::Store;
use sundial_service::app::MAX_API_FIRES;
use sundial_service::{App, AppError};

use crate::PageError;

/// How many rows the panel lists.
const ROWS: u64 = 20;

/// The panel's controls as posted (empty: the default).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct SimulateFields {
    /// The range's start (default: the next whole hour).
    sim_from: String,
    /// The range's end (default: a day after the start).
    sim_to: String,
    /// The median call duration (default 1s).
    sim_p50: String,
    /// The 99th percentile call duration (default the median).
    sim_p99: String,
    /// The share of calls that fail, 0 to 1 (default 0).
    sim_failure_rate: String,
}

/// What the panel shows after "Simulate".
pub(crate) enum Simulated {
    /// The answer.
    Report(Box<Report>),
    /// Why there is none: the use case's refusal, naming the field.
    Problem(String),
}

/// The body of `POST /jobs/simulate` for `definition` and the panel's controls.
fn request(
    definition: &Value,
    fields: &SimulateFields,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    let mut body = match definition {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let start = now
        .duration_trunc(TimeDelta::hours(1))
        .map_or(now, |hour| hour + TimeDelta::hours(1));
    let from = match fields.sim_from.trim() {
        "" => start.to_rfc3339(),
        text => text.to_string(),
    };
    let to = match fields.sim_to.trim() {
        "" => sundial_core::simulate::parse_time("simFrom", &from)
            .map_or_else(|_| String::new(), |t| (t + TimeDelta::days(1)).to_rfc3339()),
        text => text.to_string(),
    };
    let mut target = serde_json::Map::new();
    for (key, text) in [("p50", &fields.sim_p50), ("p99", &fields.sim_p99)] {
        if !text.trim().is_empty() {
            target.insert(key.into(), json!(text.trim()));
        }
    }
    if !fields.sim_failure_rate.trim().is_empty() {
        // A number when it reads as one; else as typed, for the use case to refuse by name.
        let rate = fields.sim_failure_rate.trim();
        target.insert(
            "failureRate".into(),
            rate.parse::<f64>()
                .map_or_else(|_| json!(rate), |r| json!(r)),
        );
    }
    body.insert("from".into(), json!(from));
    body.insert("to".into(), json!(to));
    body.insert("simulatedTarget".into(), Value::Object(target));
    body.insert("rows".into(), json!(ROWS));
    Value::Object(body)
}

/// Runs the simulation of `definition` with the panel's controls.
pub(crate) async fn run<S: Store>(
    app: &App<S>,
    definition: &Value,
    fields: &SimulateFields,
) -> Result<Simulated, PageError> {
    let body = request(definition, fields, app.now());
    let simulated = match sundial_core::simulate::Request::parse(&body, MAX_API_FIRES) {
        Ok(request) => app.simulate_job(request).await,
        Err(e) => Err(AppError::Invalid(e)),
    };
    match simulated {
        Ok(report) => Ok(Simulated::Report(Box::new(report))),
        Err(AppError::Invalid(e)) => Ok(Simulated::Problem(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

fn time(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

fn row(row: &Row) -> Markup {
    html! {
        tr {
            td { (time(&row.at)) }
            td { (row.kind.name()) @if row.count > 1 { " ×" (row.count) } }
            td { @if let Some(t) = &row.nominal { (time(t)) } }
            td { @if let Some(n) = row.attempt { (n) } }
            td { @if let Some(t) = &row.end { (time(t)) } }
            td { @if let Some(o) = &row.outcome { (o) } }
            td { @if let Some(t) = &row.retry_at { (time(t)) } }
            td { (row.detail) }
        }
    }
}

/// The panel: the scenario's controls, the "Simulate" button (a submit of the page's form with
/// `action=simulate`) and, after it, the totals and the first rows.
pub(crate) fn panel(fields: &SimulateFields, shown: Option<&Simulated>) -> Markup {
    let input = |id: &str, name: &str, label: &str, value: &str, hint: &str| {
        html! {
            div.field {
                label for=(id) { (label) }
                p.hint id={ (id) "-hint" } { (hint) }
                input id=(id) name=(name) type="text" value=(value) aria-describedby={ (id) "-hint" };
            }
        }
    };
    html! {
        section.simulate id="simulate" aria-labelledby="simulate-title" {
            h2 id="simulate-title" { "Simulate" }
            p.hint { "What the job would do over a range of time, with the engine's own overlap, retry and catch-up rules, against a target whose calls take the durations below. Nothing is created or called." }
            (input("s-from", "simFrom", "From", &fields.sim_from, "A UTC time (2026-12-24T10:00) or RFC 3339; default the next whole hour."))
            (input("s-to", "simTo", "To", &fields.sim_to, "Default a day after From; at most 366 days."))
            (input("s-p50", "simP50", "Median call", &fields.sim_p50, "How long a call takes: 2s, 500ms (default 1s)."))
            (input("s-p99", "simP99", "99th percentile call", &fields.sim_p99, "Default the median."))
            (input("s-failure", "simFailureRate", "Failure rate", &fields.sim_failure_rate, "The share of calls that answer 500, 0 to 1."))
            button.secondary type="submit" name="action" value="simulate" id="simulate-button" { "Simulate" }
            div id="simulation" aria-live="polite" {
                @match shown {
                    Some(Simulated::Problem(problem)) => p.error { (problem) },
                    Some(Simulated::Report(report)) => {
                        @let t = &report.totals;
                        p.totals {
                            "Fires " strong { (t.fires) } ", runs " strong { (t.runs) } ", attempts " (t.attempts)
                            ", succeeded " (t.succeeded) ", failed " (t.failed) ", retries " (t.retries)
                            ", timeouts " (t.timeouts) ", skipped " (t.skipped) ", buffered " (t.buffered)
                            ", dropped " (t.dropped) ", missed " (t.missed) ", cancelled " (t.cancelled)
                            ", terminated " (t.terminated) ", not started " (t.not_started) "."
                        }
                        @if report.truncated {
                            p.warning { "Cut short at the fire cap: planned through " @if let Some(t) = &report.planned_through { (time(t)) } "." }
                        }
                        @if let Some(t) = &report.paused_at {
                            p.warning { "The job paused itself at " (time(t)) " (pauseOnFailure)." }
                        }
                        @if report.rows.is_empty() {
                            p.muted { "Nothing happens in the range." }
                        } @else {
                            div.table-wrap tabindex="0" role="region" aria-label="What the simulation shows, time by time" { table.simulation {
                                thead { tr {
                                    th scope="col" { "At (UTC)" } th scope="col" { "What" } th scope="col" { "Scheduled" }
                                    th scope="col" { "Attempt" } th scope="col" { "End" } th scope="col" { "Outcome" }
                                    th scope="col" { "Retry at" } th scope="col" { "Detail" }
                                } }
                                tbody { @for r in &report.rows { (row(r)) } }
                            } }
                            @if report.rows_left_off > 0 {
                                p.muted { "The first " (report.rows.len()) " rows; " (report.rows_left_off) " more in the totals (sundial job simulate --rows lists more)." }
                            }
                        }
                    },
                    None => p.muted { "Simulate to see what the job would do." },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_controls_take_the_next_hour_and_a_day() {
        let now = "2026-12-24T10:17:00Z".parse().unwrap();
        let body = request(&json!({"jobName": "j"}), &SimulateFields::default(), now);
        assert_eq!(body["from"], "2026-12-24T11:00:00+00:00");
        assert_eq!(body["to"], "2026-12-25T11:00:00+00:00");
        assert_eq!(body["simulatedTarget"], json!({}));
        assert_eq!(body["jobName"], "j");
        let fields = SimulateFields {
            sim_p50: "2s".into(),
            sim_failure_rate: "0.5".into(),
            ..SimulateFields::default()
        };
        let body = request(&json!({}), &fields, now);
        assert_eq!(
            body["simulatedTarget"],
            json!({"p50": "2s", "failureRate": 0.5})
        );
    }
}
