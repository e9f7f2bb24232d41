//! `sundial calendar put|get|list|delete`: named business calendars (docs/cli.md "Calendars").

use serde_json::Value;

use super::{definition, Context};
use crate::cli::CalendarCommand;
use crate::client::Request;
use crate::error::CliError;

pub(crate) async fn run(command: CalendarCommand, context: &Context) -> Result<(), CliError> {
    match command {
        CalendarCommand::Put { name, file } => {
            let is_ics = file
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.eq_ignore_ascii_case("ics"));
            let body = if is_ics {
                // The server reads the iCalendar file (the body's `ics` field).
                let text = std::fs::read_to_string(&file).map_err(|e| {
                    CliError::usage(format!("{}: cannot read: {e}", file.display()))
                })?;
                serde_json::json!({ "ics": text })
            } else {
                definition::read_document(&file)?
            };
            let answer = context
                .client
                .call(Request {
                    body: Some(&body),
                    ..Request::new(reqwest::Method::PUT, &["calendars", &name])
                })
                .await?;
            context.show(&answer, || {
                let verb = if answer["created"] == Value::Bool(true) {
                    "created"
                } else {
                    "replaced"
                };
                format!(
                    "calendar {name} {verb} (version {}); {} job(s) queued for re-planning, {} re-planned\n",
                    answer["calendar"]["version"], answer["queued"], answer["replanned"]
                )
            })
        }
        CalendarCommand::Get { name } => {
            let answer = context
                .client
                .call(Request::get(&["calendars", &name]))
                .await?;
            context.show(&answer, || table(std::slice::from_ref(&answer), true))
        }
        CalendarCommand::List => {
            let answer = context.client.call(Request::get(&["calendars"])).await?;
            let calendars = answer["calendars"].as_array().cloned().unwrap_or_default();
            context.show(&answer, || table(&calendars, false))
        }
        CalendarCommand::Delete { name } => {
            context
                .client
                .call(Request::new(reqwest::Method::DELETE, &["calendars", &name]))
                .await?;
            context.show(&serde_json::json!({"deleted": name}), || {
                format!("calendar {name} deleted\n")
            })
        }
    }
}

fn count(calendar: &Value, key: &str) -> usize {
    calendar[key].as_array().map_or(0, Vec::len)
}

/// NAME, ZONE, WEEKEND, DATES, RANGES, RULES, VERSION, UPDATED BY (and JOBS for one calendar).
fn table(calendars: &[Value], with_jobs: bool) -> String {
    let mut rows = vec![vec![
        "NAME".to_owned(),
        "ZONE".to_owned(),
        "WEEKEND".to_owned(),
        "DATES".to_owned(),
        "RANGES".to_owned(),
        "RULES".to_owned(),
        "VERSION".to_owned(),
        "UPDATED BY".to_owned(),
    ]];
    if with_jobs {
        rows[0].push("JOBS".to_owned());
    }
    for c in calendars {
        let text = |key: &str| c[key].as_str().unwrap_or("").to_owned();
        let mut row = vec![
            text("name"),
            text("timeZone"),
            text("weekend"),
            count(c, "dates").to_string(),
            count(c, "ranges").to_string(),
            count(c, "rules").to_string(),
            c["version"].to_string(),
            text("updatedBy"),
        ];
        if with_jobs {
            let jobs: Vec<&str> = c["jobs"]
                .as_array()
                .map(|j| j.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            row.push(if jobs.is_empty() {
                "-".to_owned()
            } else {
                jobs.join(",")
            });
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}
