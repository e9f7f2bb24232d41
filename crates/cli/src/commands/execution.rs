//! `sundial execution …`, and the watch loop `job trigger --watch` shares.

use std::time::Duration;

use chrono::Utc;
use chrono_tz::Tz;
use serde_json::json;

use super::{out, pages, Context};
use crate::cli::ExecutionCommand;
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
            let query = vec![("limit", args.limit.to_string())];
            let answer = pages(
                context,
                &["jobs", &args.job_id, "executions"],
                query,
                "executions",
                args.all,
            )
            .await?;
            let zone = if context.format == Format::Table {
                zone_of(context, &args.job_id).await
            } else {
                Tz::UTC
            };
            context.show(&answer, || {
                let runs = answer["executions"].as_array().cloned().unwrap_or_default();
                let mut text = views::execution_list(&runs, zone, Utc::now(), context.style);
                if answer["nextCursor"].is_string() {
                    text.push_str("More executions: --all lists every page.\n");
                }
                text
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
