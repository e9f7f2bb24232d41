//! The human views of the API's answers (`--output table`). Each takes the JSON the API returned
//! and a fixed "now", so snapshot tests pin them down.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde_json::Value;

use super::table::{fields, Cell, Table};
use super::time::{self, dst_notes, job_zone, parse, relative, wall, wall_and_relative};
use super::{state_color, Style, DIM};

/// A field as text: strings as they are, numbers and booleans printed, null and absent empty.
fn text(value: &Value, key: &str) -> String {
    match value.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn or_dash(text: String) -> String {
    if text.is_empty() {
        "—".into()
    } else {
        text
    }
}

/// A time field in `zone` with its distance from `now`, or `—`.
fn when(value: &Value, key: &str, zone: Tz, now: DateTime<Utc>) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .and_then(parse)
        .map_or_else(|| "—".into(), |t| wall_and_relative(t, zone, now))
}

fn list(value: &Value, key: &str) -> Vec<Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// When a job runs, in a few words: `cron 0 12 * * MON-FRI (Europe/London)`, `every 1h from 10m`,
/// `triggered only`.
pub(crate) fn schedule_summary(job: &Value) -> String {
    if let Some(schedule) = job.get("schedule").filter(|s| s.is_object()) {
        let mut parts = Vec::new();
        let strings = |key: &str| -> Vec<String> {
            list(schedule, key)
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .collect()
        };
        let cron = strings("cron");
        if !cron.is_empty() {
            parts.push(format!("cron {}", cron.join(" | ")));
        }
        let calendars = list(schedule, "calendars");
        if !calendars.is_empty() {
            let comments: Vec<String> = calendars
                .iter()
                .map(|c| text(c, "comment"))
                .filter(|c| !c.is_empty())
                .collect();
            parts.push(if comments.len() == calendars.len() {
                format!("calendar {}", comments.join(" | "))
            } else {
                format!(
                    "{} calendar{}",
                    calendars.len(),
                    if calendars.len() == 1 { "" } else { "s" }
                )
            });
        }
        let intervals: Vec<String> = list(schedule, "intervals")
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => {
                    let offset = text(other, "offset");
                    if offset.is_empty() {
                        text(other, "every")
                    } else {
                        format!("{}/{offset}", text(other, "every"))
                    }
                }
            })
            .collect();
        if !intervals.is_empty() {
            parts.push(format!("every {}", intervals.join(" | ")));
        }
        if parts.is_empty() {
            parts.push("schedule".into());
        }
        let zone = text(schedule, "timeZone");
        if !zone.is_empty() {
            parts.push(format!("({zone})"));
        }
        return parts.join(" ");
    }
    let timer = job.get("timer").cloned().unwrap_or(Value::Null);
    let period = text(&timer, "period");
    let due = text(&timer, "dueTime");
    let ttl = text(&timer, "ttl");
    let mut summary = match (period.as_str(), due.as_str()) {
        ("external", _) => return "triggered only".into(),
        ("", "") => "once, at creation".into(),
        ("", due) => format!("once, at {due}"),
        (period, _) if period.contains(' ') => format!("cron {period}"),
        (period, "") => format!("every {period}"),
        (period, due) => format!("every {period} from {due}"),
    };
    if !ttl.is_empty() {
        summary.push_str(&format!(", for {ttl}"));
    }
    let zone = text(&timer, "timeZone");
    if !zone.is_empty() {
        summary.push_str(&format!(" ({zone})"));
    }
    summary
}

/// What a job calls: `POST http://… (+1 more)`, `sqs https://…`, `eventbridge bus`.
pub(crate) fn action_summary(job: &Value) -> String {
    if let Some(target) = job.get("target").filter(|t| t.is_object()) {
        if let Some(sqs) = target.get("sqs") {
            return format!("sqs {}", text(sqs, "queueUrl"));
        }
        if let Some(bus) = target.get("eventbridge") {
            return format!(
                "eventbridge {} ({} / {})",
                text(bus, "busName"),
                text(bus, "source"),
                text(bus, "detailType")
            );
        }
    }
    let requests = list(job, "request");
    match requests.first() {
        None => "—".into(),
        Some(first) => {
            let method = or_dash(text(first, "method"));
            let method = if method == "—" {
                "GET".into()
            } else {
                method
            };
            let more = match requests.len() {
                1 => String::new(),
                n => format!(" (+{} more)", n - 1),
            };
            format!("{method} {}{more}", text(first, "url"))
        }
    }
}

fn state_cell(state: String) -> Cell {
    let color = state_color(&state);
    Cell::colored(state, color)
}

/// `sundial job list`.
pub(crate) fn job_list(page: &Value, now: DateTime<Utc>, style: Style) -> String {
    let jobs = list(page, "jobs");
    if jobs.is_empty() {
        return "No jobs.\n".into();
    }
    let mut table = Table::new(&["JOB ID", "NAME", "STATE", "SCHEDULE", "CREATOR", "UPDATED"])
        .limit(1, 32)
        .limit(3, 48);
    for job in &jobs {
        let updated = job
            .get("updatedAt")
            .and_then(Value::as_str)
            .and_then(parse)
            .map_or_else(String::new, |t| relative(t, now));
        table.row(vec![
            text(job, "jobId").into(),
            text(job, "jobName").into(),
            state_cell(text(job, "state")),
            schedule_summary(job).into(),
            text(job, "creatorName").into(),
            updated.into(),
        ]);
    }
    table.render(style)
}

/// `sundial job history`: a job's changes, newest first; an update lists the fields it changed.
pub(crate) fn history(page: &Value, now: DateTime<Utc>, style: Style) -> String {
    let entries = list(page, "entries");
    if entries.is_empty() {
        return "No changes recorded.\n".into();
    }
    let mut table = Table::new(&["WHEN", "ACTOR", "ACTION", "VERSION", "STATE", "DETAILS"])
        .limit(1, 40)
        .limit(5, 72);
    for entry in &entries {
        let at = entry
            .get("at")
            .and_then(Value::as_str)
            .and_then(parse)
            .map_or_else(String::new, |t| relative(t, now));
        let changed: Vec<String> = list(entry, "changes")
            .iter()
            .map(|c| text(c, "path"))
            .collect();
        let details = [
            text(entry, "reason"),
            if changed.is_empty() {
                String::new()
            } else {
                format!("changed {}", changed.join(", "))
            },
            text(entry, "executionId"),
        ]
        .into_iter()
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
        table.row(vec![
            at.into(),
            text(entry, "actor").into(),
            text(entry, "action").into(),
            text(entry, "version").into(),
            state_cell(text(entry, "state")),
            details.into(),
        ]);
    }
    table.render(style)
}

/// What a `dstGap` entry says in words: the wall time that did not exist and what its policy did.
fn dst_gap_words(entry: &Value) -> String {
    let wall = text(entry, "wallTime");
    if wall.is_empty() {
        return wall;
    }
    let count = text(entry, "count");
    let times = if count == "1" {
        String::new()
    } else {
        format!(
            " (and {} more)",
            count.parse::<u64>().unwrap_or(1).saturating_sub(1)
        )
    };
    match text(entry, "movedTo") {
        moved if moved.is_empty() => {
            format!(
                "{wall}{times} did not exist: not run (dst.gap {})",
                text(entry, "policy")
            )
        }
        moved => format!(
            "{wall}{times} did not exist: moved to {moved} (dst.gap {})",
            text(entry, "policy")
        ),
    }
}

/// `job occurrences`: each nominal time with its status and what explains it, then the job's
/// missed, dropped and debug-mode ranges.
pub(crate) fn occurrences(answer: &Value, style: Style) -> String {
    let entries = list(answer, "occurrences");
    if entries.is_empty() {
        return "No nominal times in the range.\n".into();
    }
    let mut table = Table::new(&["TIME", "STATUS", "EXECUTION", "DETAILS"]).limit(3, 72);
    for entry in &entries {
        let details = [
            text(entry, "state"),
            match text(entry, "heldBy") {
                held if held.is_empty() => held,
                held => format!("slot held by {held}"),
            },
            text(entry, "notes"),
            match text(entry, "pausedAt") {
                since if since.is_empty() => since,
                since => format!("paused since {since}"),
            },
            dst_gap_words(entry),
        ]
        .into_iter()
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
        table.row(vec![
            text(entry, "time").into(),
            text(entry, "status").into(),
            text(entry, "executionId").into(),
            details.into(),
        ]);
    }
    let mut out = table.render(style);
    for range in &list(answer, "ranges") {
        out.push_str(&format!(
            "{} {} … {} ({} times)\n",
            text(range, "kind"),
            text(range, "from"),
            text(range, "to"),
            text(range, "count")
        ));
    }
    out
}

/// The fields of a job that matter at a glance, for `get` and `describe`.
fn job_fields(job: &Value, zone: Tz, now: DateTime<Utc>) -> Vec<(&'static str, Cell)> {
    let mut rows: Vec<(&'static str, Cell)> = vec![
        ("Job", text(job, "jobId").into()),
        ("Name", text(job, "jobName").into()),
    ];
    let description = text(job, "jobDescription");
    if !description.is_empty() {
        rows.push(("Description", description.into()));
    }
    rows.push((
        "Creator",
        format!("{} ({})", text(job, "creatorName"), text(job, "creator")).into(),
    ));
    let state = text(job, "state");
    let notes = text(job, "pausedNotes");
    let color = state_color(&state);
    rows.push((
        "State",
        Cell::colored(
            if notes.is_empty() {
                state
            } else {
                format!("{state}: {notes}")
            },
            color,
        ),
    ));
    if job.get("pausedUntil").is_some_and(|v| !v.is_null()) {
        rows.push(("Resumes", when(job, "pausedUntil", zone, now).into()));
    }
    rows.push(("Schedule", schedule_summary(job).into()));
    rows.push(("Action", action_summary(job).into()));
    let parent = text(job, "parentJob");
    if !parent.is_empty() {
        rows.push(("Parent", parent.into()));
    }
    let policies: Vec<String> = [
        ("overlap", "overlap"),
        ("maxConcurrency", "max concurrency"),
        ("catchupWindow", "catch-up window"),
        ("pauseOnFailure", "pause on failure"),
        ("remainingActions", "remaining actions"),
        ("timeoutSeconds", "timeout (s)"),
        ("maxRetries", "max retries"),
        ("parentClosePolicy", "parent close"),
    ]
    .iter()
    .filter_map(|(key, label)| {
        let value = text(job, key);
        (!value.is_empty()).then(|| format!("{label} {value}"))
    })
    .collect();
    if !policies.is_empty() {
        rows.push(("Policies", policies.join(" · ").into()));
    }
    rows.push(("Created", when(job, "createdAt", zone, now).into()));
    rows.push(("Updated", when(job, "updatedAt", zone, now).into()));
    rows
}

/// `sundial job get`.
pub(crate) fn job(job: &Value, now: DateTime<Utc>, style: Style) -> String {
    fields(&job_fields(job, job_zone(job), now), style)
}

/// `sundial job describe`: the job, its counters, the next fire times in its zone with how soon
/// and their DST notes, the recent and the running executions.
pub(crate) fn describe(answer: &Value, now: DateTime<Utc>, style: Style) -> String {
    let job = answer.get("job").cloned().unwrap_or(Value::Null);
    let info = answer.get("info").cloned().unwrap_or(Value::Null);
    let zone = job_zone(&job);
    let mut rows = job_fields(&job, zone, now);
    // The spec in the canonical form (docs/spec.md §1), as Temporal's describe shows it: what the
    // written schedule (or timer) means, defaults filled in.
    if let Some(schedule) = answer.get("schedule").filter(|s| s.is_object()) {
        rows.push(("Normalized", schedule.to_string().into()));
    }
    let counter = |key: &str| or_dash(text(&info, key));
    rows.push((
        "Counters",
        format!(
            "actions {} · overlap skipped {} · missed catch-up {} · buffer dropped {} · buffered {}",
            counter("actionCount"),
            counter("overlapSkipped"),
            counter("missedCatchupWindow"),
            counter("bufferDropped"),
            counter("bufferSize"),
        )
        .into(),
    ));
    let remaining = text(&info, "remainingActions");
    if !remaining.is_empty() {
        rows.push(("Remaining", format!("{remaining} scheduled runs").into()));
    }
    let backfills = text(&info, "pendingBackfills");
    if !backfills.is_empty() && backfills != "0" {
        rows.push(("Backfills", format!("{backfills} waiting").into()));
    }
    let mut out = fields(&rows, style);

    out.push('\n');
    out.push_str(&style.paint(Some(super::BOLD), &format!("Next fire times ({zone})")));
    out.push('\n');
    let times: Vec<DateTime<Utc>> = list(&info, "futureActionTimes")
        .iter()
        .filter_map(|t| t.as_str().and_then(parse))
        .collect();
    if times.is_empty() {
        let why = if text(&job, "state") == "paused" {
            "none: the job is paused"
        } else if schedule_summary(&job) == "triggered only" {
            "none: the job runs only when triggered"
        } else {
            "none"
        };
        out.push_str(&format!("  {why}\n"));
    } else {
        let notes = dst_notes(&times, zone, now);
        // The DST column only when a change falls among these times.
        let mut table = if notes.iter().any(Option::is_some) {
            Table::new(&["  TIME", "IN", "DST"])
        } else {
            Table::new(&["  TIME", "IN"])
        };
        for (time, note) in times.iter().zip(notes) {
            table.row(vec![
                format!("  {}", time::wall_with_weekday(*time, zone)).into(),
                relative(*time, now).into(),
                Cell::colored(note.unwrap_or_default(), Some(super::YELLOW)),
            ]);
        }
        out.push_str(&table.render(style));
    }

    let recent = list(&info, "recentActions");
    out.push('\n');
    out.push_str(&style.paint(Some(super::BOLD), "Recent executions"));
    out.push('\n');
    if recent.is_empty() {
        out.push_str("  none\n");
    } else {
        let mut table = Table::new(&["  EXECUTION ID", "STATE", "SCHEDULED", "STARTED"]);
        for run in &recent {
            table.row(vec![
                format!("  {}", text(run, "executionId")).into(),
                state_cell(text(run, "state")),
                when(run, "scheduledTime", zone, now).into(),
                when(run, "actualTime", zone, now).into(),
            ]);
        }
        out.push_str(&table.render(style));
    }

    let running = list(&info, "runningExecutions");
    if !running.is_empty() {
        out.push('\n');
        out.push_str(&style.paint(Some(super::BOLD), "Running"));
        out.push('\n');
        let mut table = Table::new(&["  EXECUTION ID", "STATE", "STARTED"]);
        for run in &running {
            table.row(vec![
                format!("  {}", text(run, "executionId")).into(),
                state_cell(text(run, "state")),
                when(run, "startedAt", zone, now).into(),
            ]);
        }
        out.push_str(&table.render(style));
    }
    out
}

/// How long an execution took, or `—` while it runs.
fn duration_of(run: &Value) -> String {
    let start = run.get("startedAt").and_then(Value::as_str).and_then(parse);
    let end = run
        .get("finishedAt")
        .and_then(Value::as_str)
        .and_then(parse);
    match (start, end) {
        (Some(start), Some(end)) => time::took(start, end),
        _ => "—".into(),
    }
}

/// `sundial execution list`: newest first, times in the job's `zone`.
pub(crate) fn execution_list(
    executions: &[Value],
    zone: Tz,
    now: DateTime<Utc>,
    style: Style,
) -> String {
    executions_table(executions, zone, now, style, false)
}

/// Executions of several jobs (`execution list` with filters): as [`execution_list`] with the
/// job first, times in UTC (the jobs' zones may differ).
pub(crate) fn execution_search_list(
    executions: &[Value],
    now: DateTime<Utc>,
    style: Style,
) -> String {
    executions_table(executions, Tz::UTC, now, style, true)
}

/// The executions table of both lists; `with_job` puts a JOB column first.
fn executions_table(
    executions: &[Value],
    zone: Tz,
    now: DateTime<Utc>,
    style: Style,
    with_job: bool,
) -> String {
    if executions.is_empty() {
        return "No executions.\n".into();
    }
    let columns = [
        "JOB",
        "EXECUTION ID",
        "#",
        "STATE",
        "SCHEDULED",
        "ATTEMPTS",
        "TOOK",
        "ERROR",
    ];
    let first = usize::from(!with_job);
    let mut table = Table::new(&columns[first..]).limit(columns.len() - first - 1, 60);
    for run in executions {
        let mut row = Vec::with_capacity(columns.len());
        if with_job {
            row.push(text(run, "jobId").into());
        }
        row.extend([
            text(run, "executionId").into(),
            text(run, "executeNumber").into(),
            state_cell(text(run, "state")),
            when(run, "scheduledTime", zone, now).into(),
            text(run, "attempts").into(),
            duration_of(run).into(),
            Cell::colored(text(run, "error"), Some(super::RED)),
        ]);
        table.row(row);
    }
    table.render(style)
}

/// One event of an execution's log: `19:13:03 GMT  Enqueued → Processing  attempt 1`.
pub(crate) fn event_line(event: &Value, zone: Tz, style: Style) -> String {
    let at = event
        .get("at")
        .and_then(Value::as_str)
        .and_then(parse)
        .map_or_else(String::new, |t| wall(t, zone));
    let from = text(event, "from");
    let to = text(event, "to");
    let change = match (from.as_str(), to.as_str()) {
        ("", to) => style.paint(state_color(to), to),
        (from, to) if from == to => style.paint(Some(DIM), to),
        (from, to) => format!("{from} → {}", style.paint(state_color(to), to)),
    };
    format!("{at}  {change}  {}", text(event, "message"))
        .trim_end()
        .to_string()
}

/// `sundial execution get`: the execution and its event log.
pub(crate) fn execution(run: &Value, zone: Tz, now: DateTime<Utc>, style: Style) -> String {
    let mut rows: Vec<(&str, Cell)> = vec![
        ("Execution", text(run, "executionId").into()),
        (
            "Job",
            format!(
                "{} (run #{})",
                text(run, "jobId"),
                text(run, "executeNumber")
            )
            .into(),
        ),
        ("State", state_cell(text(run, "state"))),
        ("Created by", text(run, "scheduledById").into()),
        ("Scheduled", when(run, "scheduledTime", zone, now).into()),
        ("Started", when(run, "startedAt", zone, now).into()),
        ("Finished", when(run, "finishedAt", zone, now).into()),
        ("Took", duration_of(run).into()),
        ("Attempts", text(run, "attempts").into()),
    ];
    for (key, label) in [
        ("progress", "Progress"),
        ("arguments", "Arguments"),
        ("result", "Result"),
    ] {
        let value = text(run, key);
        if !value.is_empty() && value != "{}" {
            rows.push((label, value.into()));
        }
    }
    let error = text(run, "error");
    if !error.is_empty() {
        rows.push(("Error", Cell::colored(error, Some(super::RED))));
    }
    let parent = text(run, "parentJob");
    if !parent.is_empty() {
        rows.push((
            "Parent",
            format!("{parent} run #{}", text(run, "parentJobExecution")).into(),
        ));
    }
    let mut out = fields(&rows, style);
    let events = list(run, "events");
    out.push('\n');
    out.push_str(&style.paint(Some(super::BOLD), "Events"));
    out.push('\n');
    let dropped = run
        .get("droppedEvents")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut table = Table::new(&["  AT", "CHANGE", "MESSAGE"]);
    for (i, event) in events.iter().enumerate() {
        if i == 1 && dropped > 0 {
            table.row(vec![
                "  …".into(),
                String::new().into(),
                format!("{dropped} older events not kept").into(),
            ]);
        }
        let at = event
            .get("at")
            .and_then(Value::as_str)
            .and_then(parse)
            .map_or_else(String::new, |t| wall(t, zone));
        let from = text(event, "from");
        let to = text(event, "to");
        let change = if from.is_empty() || from == to {
            to.clone()
        } else {
            format!("{from} → {to}")
        };
        table.row(vec![
            format!("  {at}").into(),
            Cell::colored(change, state_color(&to)),
            text(event, "message").into(),
        ]);
    }
    out.push_str(&table.render(style));
    out
}

/// `sundial stats`.
pub(crate) fn stats(answer: &Value, style: Style) -> String {
    let mut table = Table::new(&["", "STATE", "COUNT"]);
    for (label, key) in [("jobs", "jobs"), ("executions", "executions")] {
        let counts = answer.get(key).and_then(Value::as_object);
        match counts {
            Some(map) if !map.is_empty() => {
                for (i, (state, count)) in map.iter().enumerate() {
                    table.row(vec![
                        if i == 0 { label } else { "" }.into(),
                        state_cell(state.clone()),
                        count.to_string().into(),
                    ]);
                }
            }
            _ => table.row(vec![label.into(), "—".into(), "0".into()]),
        }
    }
    let mut out = table.render(style);
    let debug = answer.get("debugMode").and_then(Value::as_bool) == Some(true);
    // A server older than the mode's name says only on/off; on meant `schedules` then.
    let named = text(answer, "debugModeSetting");
    let setting = match named.as_str() {
        "" if debug => "schedules",
        "" => "off",
        named => named,
    };
    if setting == "off" {
        out.push_str("Debug mode is off.\n");
    } else {
        out.push_str(&format!(
            "Debug mode is on ({setting}): {}\n",
            debug_mode_words(setting)
        ));
    }
    if answer.get("window").is_some() {
        out.push('\n');
        out.push_str(&window_figures(answer, style));
        for (key, title) in [("topFailing", "Top failing"), ("slowest", "Slowest (p95)")] {
            let jobs = list(answer, key);
            if jobs.is_empty() {
                continue;
            }
            out.push_str(&format!("\n{title}:\n"));
            let mut table = Table::new(&["JOB", "RUNS", "FAILED", "SUCCESS", "P95 MS"]);
            for job in &jobs {
                table.row(vec![
                    text(job, "jobId").into(),
                    text(job, "runs").into(),
                    job.pointer("/byState/Terminated")
                        .map_or_else(|| "0".to_owned(), Value::to_string)
                        .into(),
                    rate(job).into(),
                    or_dash(millis(job, "/durationMs/p95")).into(),
                ]);
            }
            out.push_str(&table.render(style));
        }
    }
    out
}

fn rate(figures: &Value) -> String {
    figures
        .get("successRate")
        .and_then(Value::as_f64)
        .map_or_else(|| "—".to_owned(), |r| format!("{:.1} %", r * 100.0))
}

fn millis(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .map_or_else(String::new, |ms| ms.to_string())
}

/// The figures of a statistics window (`sundial job stats`, and `sundial stats` below its
/// counts): runs, success rate, percentiles, the non-run counts, and the series' busy points.
pub(crate) fn window_figures(answer: &Value, style: Style) -> String {
    let quantiles = |key: &str| {
        let q = |p: &str| or_dash(millis(answer, &format!("/{key}/{p}")));
        format!("p50 {} · p95 {} · p99 {} ms", q("p50"), q("p95"), q("p99"))
    };
    let states: Vec<String> = answer
        .get("byState")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| format!("{k} {v}")).collect())
        .unwrap_or_default();
    let rows: Vec<(&str, Cell)> = vec![
        (
            "Window",
            format!("{} (from {})", text(answer, "window"), text(answer, "from")).into(),
        ),
        (
            "Runs",
            format!("{} ({})", text(answer, "runs"), or_dash(states.join(", "))).into(),
        ),
        ("Success rate", rate(answer).into()),
        ("Duration", quantiles("durationMs").into()),
        ("Fire lag", quantiles("lagMs").into()),
        ("Retries", text(answer, "retries").into()),
        (
            "Not run",
            format!(
                "skipped {} · missed {} · dropped {}",
                text(answer, "skipped"),
                text(answer, "missed"),
                text(answer, "dropped")
            )
            .into(),
        ),
    ];
    let mut out = fields(&rows, style);
    let busy: Vec<String> = list(answer, "series")
        .iter()
        .filter(|p| p.get("runs").and_then(Value::as_u64).unwrap_or(0) > 0)
        .map(|p| {
            format!(
                "  {}  runs {}  failed {}",
                text(p, "at"),
                text(p, "runs"),
                text(p, "failed")
            )
        })
        .collect();
    if !busy.is_empty() {
        out.push_str("Series (points with runs):\n");
        for line in busy {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// `sundial settings debug-mode`: the mode in force and its switches, newest first.
pub(crate) fn debug_mode(answer: &Value, style: Style) -> String {
    let mode = text(answer, "mode");
    let source = match text(answer, "source").as_str() {
        "startup" => " (the start-up value; never switched)",
        _ => "",
    };
    let mut out = format!("Debug mode: {mode}{source}\n{}\n", debug_mode_words(&mode));
    let history = list(answer, "history");
    if !history.is_empty() {
        let mut table = Table::new(&["AT", "BY", "FROM", "TO", "REASON"]);
        for change in &history {
            table.row(vec![
                text(change, "at").into(),
                text(change, "by").into(),
                text(change, "from").into(),
                text(change, "to").into(),
                or_dash(text(change, "reason")).into(),
            ]);
        }
        out.push('\n');
        out.push_str(&table.render(style));
    }
    out
}

/// What a debug mode stops, in words.
fn debug_mode_words(mode: &str) -> &'static str {
    match mode {
        "schedules" => "Scheduled fires do not run; triggers, console triggers and backfills do.",
        "triggers" => "Runs triggered by programs do not run; schedules, console triggers and backfills do.",
        "both" => "Scheduled fires and runs triggered by programs do not run; console triggers and backfills do.",
        _ => "Every run runs.",
    }
}

/// `sundial health`: the status and, with an engine, how long ago it last ticked and dispatched.
pub(crate) fn health(answer: &Value, now: DateTime<Utc>, style: Style) -> String {
    let status = text(answer, "status");
    let mut rows: Vec<(&str, Cell)> = vec![("Status", state_cell(or_dash(status)))];
    if let Some(engine) = answer.get("engine").filter(|e| e.is_object()) {
        for (key, label) in [("lastTick", "Last tick"), ("lastDispatch", "Last dispatch")] {
            let at = engine
                .get(key)
                .and_then(Value::as_str)
                .and_then(parse)
                .map_or_else(|| "—".into(), |t| relative(t, now));
            rows.push((label, at.into()));
        }
        let late = text(engine, "tickLateAfterSeconds");
        if !late.is_empty() {
            rows.push(("Stalled after", format!("{late} s without a tick").into()));
        }
    } else {
        rows.push(("Engine", "not in this process (API only)".into()));
    }
    let mode = text(answer, "debugMode");
    if !mode.is_empty() {
        rows.push(("Debug mode", mode.into()));
    }
    fields(&rows, style)
}

/// `sundial timers sync`: what the reconcile changed.
pub(crate) fn timers_sync(service: &str, answer: &Value, style: Style) -> String {
    let mut table = Table::new(&["CHANGE", "JOBS"]);
    for key in ["created", "updated", "unchanged", "removed"] {
        let ids: Vec<String> = list(answer, key)
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .map(|id| {
                // An update names the fields the code changed.
                let fields = list(&answer["changedFields"], &id)
                    .iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect::<Vec<_>>();
                if key == "updated" && !fields.is_empty() {
                    format!("{id} ({})", fields.join(", "))
                } else {
                    id
                }
            })
            .collect();
        table.row(vec![
            key.into(),
            if ids.is_empty() {
                "—".into()
            } else {
                ids.join(", ").into()
            },
        ]);
    }
    format!("Timers of {service} reconciled:\n{}", table.render(style))
}

/// `sundial apply` and `sundial diff`: each job created, updated (a row per field changed, by JSON
/// pointer, with its value before and after) or deleted; the unchanged counted.
pub(crate) fn applied(answer: &Value, style: Style) -> String {
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let short = |v: Option<&Value>| match v {
        None => "(none)".to_string(),
        Some(v) => {
            let v = v.to_string();
            if v.chars().count() > 48 {
                format!("{}…", v.chars().take(47).collect::<String>())
            } else {
                v
            }
        }
    };
    let mut table = Table::new(&["CHANGE", "JOB", "FIELD", "BEFORE → AFTER"]);
    for id in list(answer, "created") {
        table.row(vec![
            "create".into(),
            text(&id).into(),
            "".into(),
            "".into(),
        ]);
    }
    if let Some(updated) = answer["updated"].as_object() {
        for (id, changes) in updated {
            let changes = changes.as_array().map(Vec::as_slice).unwrap_or_default();
            for (i, change) in changes.iter().enumerate() {
                table.row(vec![
                    if i == 0 { "update" } else { "" }.into(),
                    if i == 0 { id.clone() } else { String::new() }.into(),
                    text(&change["path"]).into(),
                    format!(
                        "{} → {}",
                        short(change.get("old")),
                        short(change.get("new"))
                    )
                    .into(),
                ]);
            }
        }
    }
    for id in list(answer, "deleted") {
        table.row(vec![
            "delete".into(),
            text(&id).into(),
            "".into(),
            "".into(),
        ]);
    }
    let unchanged = list(answer, "unchanged").len();
    let change = text(&answer["changeId"]);
    let head = if answer["dryRun"] == Value::Bool(true) {
        "Dry run, nothing written".to_string()
    } else {
        format!("Change {change} applied")
    };
    let body = if table.is_empty() {
        "The server matches the files.\n".to_string()
    } else {
        table.render(style)
    };
    format!("{head}; {unchanged} job(s) unchanged.\n{body}")
}

/// `sundial job backfill --dry-run`: the times that would run, in the order they would.
pub(crate) fn backfill_preview(job_id: &str, answer: &Value, style: Style) -> String {
    let times = list(answer, "times");
    if times.is_empty() {
        return format!(
            "Backfill of {job_id} (dry run, nothing recorded): no fire time would run.\n"
        );
    }
    let mut table = Table::new(&["#", "FIRE TIME"]);
    for (i, time) in times.iter().enumerate() {
        table.row(vec![
            (i + 1).to_string().into(),
            or_dash(text_of(time)).into(),
        ]);
    }
    format!(
        "Backfill of {job_id} (dry run, nothing recorded): {} fire times would run, in this order:\n{}",
        times.len(),
        table.render(style)
    )
}

/// `sundial job update --dry-run`: the next fire times before and after, and the runs not yet
/// started the change would affect.
pub(crate) fn update_preview(job_id: &str, answer: &Value, style: Style) -> String {
    let next = answer.get("nextFireTimes").cloned().unwrap_or(Value::Null);
    let (before, after) = (list(&next, "before"), list(&next, "after"));
    let mut out = format!("Dry run: job {job_id} was not changed, and nothing ran.\n\n");
    let mut times = Table::new(&["NEXT FIRE TIMES NOW", "WITH THE CHANGE"]);
    for i in 0..before.len().max(after.len()) {
        let cell = |list: &[Value]| or_dash(list.get(i).map(text_of).unwrap_or_default());
        times.row(vec![cell(&before).into(), cell(&after).into()]);
    }
    if before.is_empty() && after.is_empty() {
        out.push_str("No fire time ahead, now or with the change.\n");
    } else {
        out.push_str(&times.render(style));
    }
    let runs = list(answer, "affectedRuns");
    if runs.is_empty() {
        out.push_str("\nNo run waiting to start is affected.\n");
        return out;
    }
    out.push_str(&format!(
        "\nRuns not yet started that the change affects ({}):\n",
        runs.len()
    ));
    let mut table = Table::new(&["EXECUTION ID", "PLACE", "STATE", "SCHEDULED", "CHANGE"]);
    for run in &runs {
        let state = or_dash(text(run, "state"));
        for (i, change) in list(run, "changes").iter().enumerate() {
            let first = i == 0;
            let cell = |text: String| Cell::from(if first { text } else { String::new() });
            table.row(vec![
                cell(text(run, "executionId")),
                cell(text(run, "place")),
                if first {
                    state_cell(state.clone())
                } else {
                    "".into()
                },
                cell(text(run, "scheduledTime")),
                text_of(change).into(),
            ]);
        }
    }
    out.push_str(&table.render(style));
    out
}

/// A JSON value as text: a string as it is, anything else as JSON.
fn text_of(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_string)
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
