//! `sundial job simulate`: what a job would do over a range of time against a synthetic target
//! (`POST /jobs/simulate`, docs/cli.md). The server simulates; this turns flags into the body and
//! the answer into a table.

use serde_json::{json, Map, Value};

use super::{definition, Context};
use crate::cli::SimulateArgs;
use crate::client::Request;
use crate::error::CliError;
use crate::output::table::{Cell, Table};
use crate::output::Style;

/// Runs `sundial job simulate`.
pub(super) async fn run(args: SimulateArgs, context: &Context) -> Result<(), CliError> {
    let body = body(&args)?;
    let answer = context
        .client
        .call(Request::post(&["jobs", "simulate"], Some(&body)))
        .await?;
    context.show(&answer, || view(&answer, context.style))
}

/// The request body: the definition (`-f` and flags, with create's defaults) and the scenario.
fn body(args: &SimulateArgs) -> Result<Value, CliError> {
    let mut body = match &args.definition.file {
        Some(path) => definition::read_definition(path)?,
        None => Map::new(),
    };
    definition::apply(&mut body, &args.definition)?;
    let job_id = body
        .get("jobId")
        .and_then(Value::as_str)
        .unwrap_or("simulated")
        .to_string();
    definition::fill_create_defaults(&mut body, &job_id);
    body.insert("from".into(), json!(args.from));
    body.insert("to".into(), json!(args.to));
    let mut target = Map::new();
    if let Some(text) = &args.target_duration {
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some((key @ ("p50" | "p99"), value)) => {
                    target.insert(key.into(), json!(value.trim()));
                }
                _ => {
                    return Err(CliError::usage(format!(
                        "--target-duration: expected p50=DURATION,p99=DURATION, got {part:?}"
                    )))
                }
            }
        }
    }
    if let Some(rate) = args.failure_rate {
        target.insert("failureRate".into(), json!(rate));
    }
    if let Some(seed) = args.seed {
        target.insert("seed".into(), json!(seed));
    }
    if !target.is_empty() {
        body.insert("simulatedTarget".into(), Value::Object(target));
    }
    let outages = args
        .outages
        .iter()
        .map(|text| {
            let (window, mode) = match text.rsplit_once('/') {
                Some((window, mode @ ("timeout" | "error"))) => (window, Some(mode)),
                _ => (text.as_str(), None),
            };
            let mut outage = window_of("--outage", window)?;
            if let (Some(mode), Value::Object(map)) = (mode, &mut outage) {
                map.insert("mode".into(), json!(mode));
            }
            Ok(outage)
        })
        .collect::<Result<Vec<Value>, CliError>>()?;
    if !outages.is_empty() {
        body.insert("outages".into(), Value::Array(outages));
    }
    let downtime = args
        .downtime
        .iter()
        .map(|text| window_of("--down", text))
        .collect::<Result<Vec<Value>, CliError>>()?;
    if !downtime.is_empty() {
        body.insert("downtime".into(), Value::Array(downtime));
    }
    if let Some(rows) = args.rows {
        body.insert("rows".into(), json!(rows));
    }
    Ok(Value::Object(body))
}

/// `START/LENGTH` as the API's `{start, length}`, checked here so that the error names the flag.
fn window_of(flag: &str, text: &str) -> Result<Value, CliError> {
    sundial_core::simulate::parse_window_text(flag, text)
        .map_err(|e| CliError::usage(format!("{flag}: {}", e.message)))?;
    let (start, length) = text.rsplit_once('/').unwrap_or((text, ""));
    Ok(json!({"start": start, "length": length}))
}

fn text(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The answer as a table of rows and the totals.
pub(crate) fn view(answer: &Value, style: Style) -> String {
    let mut out = String::new();
    let rows = answer
        .get("rows")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !rows.is_empty() {
        let mut table = Table::new(&[
            "AT",
            "KIND",
            "SCHEDULED",
            "ATTEMPT",
            "END",
            "OUTCOME",
            "RETRY AT",
            "DETAIL",
        ])
        .limit(7, 72);
        for row in &rows {
            let kind = text(row, "kind");
            let count = row.get("count").and_then(Value::as_u64).unwrap_or(1);
            let end = match kind.as_str() {
                "missed" => text(row, "lastTime"),
                _ => text(row, "end"),
            };
            let kind_cell = if count > 1 {
                format!("{kind} ×{count}")
            } else {
                kind
            };
            table.row(vec![
                text(row, "at").into(),
                kind_cell.into(),
                text(row, "scheduledTime").into(),
                text(row, "attempt").into(),
                end.into(),
                Cell::from(text(row, "outcome")),
                text(row, "retryAt").into(),
                text(row, "detail").into(),
            ]);
        }
        out.push_str(&table.render(style));
    }
    let left = answer
        .get("rowsLeftOff")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if left > 0 {
        out.push_str(&format!("… {left} more rows (--rows N lists more)\n"));
    }
    let totals = answer.get("totals").cloned().unwrap_or(Value::Null);
    let names = [
        ("fires", "fires"),
        ("runs", "runs"),
        ("attempts", "attempts"),
        ("succeeded", "succeeded"),
        ("failed", "failed"),
        ("retries", "retries"),
        ("timeouts", "timeouts"),
        ("skipped", "skipped"),
        ("buffered", "buffered"),
        ("dropped", "dropped"),
        ("missed", "missed"),
        ("cancelled", "cancelled"),
        ("terminated", "terminated"),
        ("notStarted", "not started"),
    ];
    let figures: Vec<String> = names
        .iter()
        .map(|(key, name)| format!("{name} {}", text(&totals, key)))
        .collect();
    out.push_str(&format!("Totals: {}\n", figures.join(", ")));
    if answer.get("truncated").and_then(Value::as_bool) == Some(true) {
        out.push_str(&format!(
            "Cut short at the fire cap: planned through {}\n",
            text(answer, "plannedThrough")
        ));
    }
    let paused = text(answer, "pausedAt");
    if !paused.is_empty() {
        out.push_str(&format!(
            "The job paused itself at {paused} (pauseOnFailure)\n"
        ));
    }
    out
}
