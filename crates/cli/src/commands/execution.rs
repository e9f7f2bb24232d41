//! `sundial execution …`, and the watch loop `job trigger --watch` shares.

use std::time::Duration;

use chrono::Utc;
use chrono_tz::Tz;
use serde_json::json;

use super::{out, pages, with_more_note, Context};
use crate::cli::{ExecutionCommand, ExecutionListArgs};
use crate::client::Request;
use crate::error::{Class, CliError};
use crate::output::time::job_zone;
use crate::output::{views, Format};

/// The states an execution never leaves (docs/api.md; `Failed` waits for a retry).
pub(super) const FINAL_STATES: [&str; 4] = ["Succeeded", "Terminated", "Cancelled", "Skipped"];

/// How many failed polls in a row `watch` rides out (a restarting server) before it gives up.
const POLL_FAILURES_TOLERATED: u32 = 10;

pub(super) async fn run(command: ExecutionCommand, context: &Context) -> Result<(), CliError> {
    let client = &context.client;
    match command {
        ExecutionCommand::List(args) => {
            let Some(job_id) = args.job_id.clone().filter(|_| !is_search(&args)) else {
                return search(context, &args).await;
            };
            let query = vec![("limit", args.limit.to_string())];
            let answer = pages(
                context,
                &["jobs", &job_id, "executions"],
                query,
                "executions",
                args.all,
            )
            .await?;
            let zone = if context.format == Format::Table {
                zone_of(context, &job_id).await
            } else {
                Tz::UTC
            };
            context.show(&answer, || {
                let runs = answer["executions"].as_array().cloned().unwrap_or_default();
                let text = views::execution_list(&runs, zone, Utc::now(), context.style);
                with_more_note(text, &answer, "executions")
            })
        }
        ExecutionCommand::Get(args) => {
            let run = client
                .call(Request::get(&["executions", &args.execution_id]))
                .await?;
            let zone = if context.format == Format::Table {
                zone_of(context, run["jobId"].as_str().unwrap_or_default()).await
            } else {
                Tz::UTC
            };
            context.show(&run, || {
                views::execution(&run, zone, Utc::now(), context.style)
            })
        }
        ExecutionCommand::Cancel(args) => {
            end(context, &args.execution_id, "cancel", args.reason).await
        }
        ExecutionCommand::Terminate(args) => {
            end(context, &args.execution_id, "terminate", args.reason).await
        }
        ExecutionCommand::Watch(args) => {
            let poll = poll_interval(&args.poll)?;
            watch(context, &args.execution_id, poll).await
        }
    }
}

/// Whether `execution list` searches across jobs (`GET /executions`): any filter given.
fn is_search(args: &ExecutionListArgs) -> bool {
    args.job.is_some()
        || !args.states.is_empty()
        || !args.labels.is_empty()
        || args.creator.is_some()
        || args.source.is_some()
        || args.since.is_some()
        || args.until.is_some()
        || args.ended_since.is_some()
        || args.ended_until.is_some()
        || args.job_id.is_none()
}

/// The query of `GET /executions` for `args`: states joined by commas, `KEY=VALUE` labels as
/// `KEY:VALUE` (no label key holds `=` or `:`).
fn search_query(args: &ExecutionListArgs) -> Vec<(&'static str, String)> {
    let mut query = vec![("limit", args.limit.to_string())];
    if !args.states.is_empty() {
        query.push(("state", args.states.join(",")));
    }
    let job = args.job.as_ref().or(args.job_id.as_ref());
    let single = [
        ("jobId", job),
        ("creator", args.creator.as_ref()),
        ("source", args.source.as_ref()),
        ("since", args.since.as_ref()),
        ("until", args.until.as_ref()),
        ("endedSince", args.ended_since.as_ref()),
        ("endedUntil", args.ended_until.as_ref()),
    ];
    for (name, value) in single {
        if let Some(value) = value {
            query.push((name, value.clone()));
        }
    }
    for label in &args.labels {
        let label = match (label.find('='), label.find(':')) {
            (Some(eq), colon) if colon.is_none_or(|c| eq < c) => label.replacen('=', ":", 1),
            _ => label.clone(),
        };
        query.push(("label", label));
    }
    query
}

/// `execution list` across jobs: pages of `GET /executions` until `--limit` executions are read
/// (a page may come back short on DynamoDB), or every page with `--all`.
async fn search(context: &Context, args: &ExecutionListArgs) -> Result<(), CliError> {
    let query = search_query(args);
    let want = args.limit as usize;
    let mut runs: Vec<serde_json::Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut request = Request::get(&["executions"]);
        request.query = query.clone();
        if !args.all {
            let left = want.saturating_sub(runs.len()).max(1);
            request.query.retain(|(name, _)| *name != "limit");
            request.query.push(("limit", left.to_string()));
        }
        let page = context
            .client
            .call(request.query("cursor", cursor.clone()))
            .await?;
        runs.extend(page["executions"].as_array().cloned().unwrap_or_default());
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() || (!args.all && runs.len() >= want) {
            break;
        }
    }
    let answer = json!({"executions": runs, "nextCursor": cursor});
    context.show(&answer, || {
        let text = views::execution_search_list(&runs, Utc::now(), context.style);
        with_more_note(text, &answer, "executions")
    })
}

async fn end(
    context: &Context,
    execution_id: &str,
    action: &str,
    reason: Option<String>,
) -> Result<(), CliError> {
    let body = reason.map(|reason| json!({ "reason": reason }));
    let answer = context
        .client
        .call(Request::post(
            &["executions", execution_id, action],
            body.as_ref(),
        ))
        .await?;
    context.show(&answer, || {
        format!(
            "Execution {execution_id} is {}.\n",
            answer["state"].as_str().unwrap_or("changed")
        )
    })
}

/// The zone a job's times are shown in; UTC when the job cannot be read (deleted, say).
async fn zone_of(context: &Context, job_id: &str) -> Tz {
    match context.client.call(Request::get(&["jobs", job_id])).await {
        Ok(job) => job_zone(&job),
        Err(_) => Tz::UTC,
    }
}

/// `--poll` as a duration of at least 100 ms.
pub(super) fn poll_interval(text: &str) -> Result<Duration, CliError> {
    let parsed = sundial_core::duration::Duration::parse(text)
        .map_err(|e| CliError::usage(format!("--poll: {e}")))?;
    Ok(Duration::from_millis(parsed.as_millis().max(100)))
}

/// Follows an execution's event log until it reaches a final state, printing each event once: as
/// a line in the job's zone, or one JSON (or YAML) document per event and the final execution
/// last. `Ok` when it `Succeeded`; a [`Class::Failed`] error when it ended otherwise.
pub(super) async fn watch(
    context: &Context,
    execution_id: &str,
    poll: Duration,
) -> Result<(), CliError> {
    let mut zone: Option<Tz> = None;
    let mut seen: u64 = 0;
    let mut failures = 0;
    loop {
        let run = match context
            .client
            .call(Request::get(&["executions", execution_id]))
            .await
        {
            Ok(run) => {
                failures = 0;
                run
            }
            Err(e) if e.class == Class::Server && failures < POLL_FAILURES_TOLERATED => {
                failures += 1;
                eprintln!("warning: {e}; retrying");
                tokio::time::sleep(poll).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let zone = match zone {
            Some(zone) => zone,
            None => {
                let found = if context.format == Format::Table {
                    zone_of(context, run["jobId"].as_str().unwrap_or_default()).await
                } else {
                    Tz::UTC
                };
                zone = Some(found);
                found
            }
        };
        // The log keeps its first event and the newest ones (`droppedEvents` counts the rest):
        // event i > 0 is number dropped + i of the whole log.
        let dropped = run["droppedEvents"].as_u64().unwrap_or(0);
        let events = run["events"].as_array().cloned().unwrap_or_default();
        for (i, event) in events.iter().enumerate() {
            let number = if i == 0 { 0 } else { dropped + i as u64 };
            if number < seen {
                continue;
            }
            match context.format {
                Format::Table => out(&format!(
                    "{}\n",
                    views::event_line(event, zone, context.style)
                )),
                Format::Json => out(&format!("{event}\n")),
                Format::Yaml => out(&format!(
                    "---\n{}",
                    crate::output::data(Format::Yaml, event)?
                )),
            }
        }
        seen = seen.max(dropped + events.len() as u64);
        let state = run["state"].as_str().unwrap_or_default().to_string();
        if FINAL_STATES.contains(&state.as_str()) {
            match context.format {
                Format::Table => {}
                Format::Json => out(&format!("{run}\n")),
                Format::Yaml => out(&format!(
                    "---\n{}",
                    crate::output::data(Format::Yaml, &run)?
                )),
            }
            if state == "Succeeded" {
                return Ok(());
            }
            let error = run["error"]
                .as_str()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(CliError::new(
                Class::Failed,
                format!("execution {execution_id} ended {state}{error}"),
            ));
        }
        tokio::time::sleep(poll).await;
    }
}
