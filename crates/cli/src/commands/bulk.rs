//! `sundial bulk ACTION`: `POST /bulk/jobs/ACTION` (one route per action) with the filters, following the answer's
//! cursor with `--all` (the server acts on at most 1,000 jobs per request).

use serde_json::{json, Map, Value};

use super::{definition, Context};
use crate::cli::BulkArgs;
use crate::client::Request;
use crate::error::CliError;

pub(super) async fn run(args: BulkArgs, context: &Context) -> Result<(), CliError> {
    let body = body(&args)?;
    let mut results = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut body = body.clone();
        if let Some(cursor) = cursor.take() {
            body.insert("cursor".into(), Value::from(cursor));
        }
        let body = Value::Object(body);
        let answer = context
            .client
            .call(Request::post(
                &["bulk", "jobs", args.action.as_str()],
                Some(&body),
            ))
            .await?;
        if let Some(list) = answer.get("results").and_then(Value::as_array) {
            results.extend(list.iter().cloned());
        }
        cursor = answer
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if !args.all || cursor.is_none() {
            break;
        }
    }
    let count = |status: &str| results.iter().filter(|r| r["status"] == status).count();
    let answer = json!({
        "action": args.action.as_str(),
        "dryRun": args.dry_run,
        "matched": results.len(),
        "succeeded": count("ok"),
        "failed": count("error"),
        "results": results,
        "nextCursor": cursor,
    });
    context.show(&answer, || table(&args, &answer))?;
    if count("error") > 0 {
        return Err(CliError::new(
            crate::error::Class::Failed,
            format!("{} of {} jobs failed", count("error"), results.len()),
        ));
    }
    Ok(())
}

/// The request body: filters or `--job` ids, the reason, the action's parameters.
fn body(args: &BulkArgs) -> Result<Map<String, Value>, CliError> {
    let mut body = Map::new();
    body.insert("reason".into(), Value::from(args.reason.clone()));
    if args.dry_run {
        body.insert("dryRun".into(), Value::Bool(true));
    }
    if !args.jobs.is_empty() {
        body.insert("jobIds".into(), json!(args.jobs));
    }
    for (key, value) in [
        ("state", &args.filter.state),
        ("creator", &args.filter.creator),
        ("parentJob", &args.filter.parent),
        ("service", &args.filter.service),
        ("idPrefix", &args.filter.id_prefix),
        ("notes", &args.notes),
        ("until", &args.until),
        ("idempotencyKey", &args.idempotency_key),
    ] {
        if let Some(value) = value {
            body.insert(key.into(), Value::from(value.clone()));
        }
    }
    if !args.filter.labels.is_empty() {
        let mut labels = Map::new();
        for label in &args.filter.labels {
            let (key, value) = label.split_once(':').ok_or_else(|| {
                CliError::usage(format!(
                    "--label {label}: expected KEY:VALUE, e.g. team:payments"
                ))
            })?;
            labels.insert(key.into(), Value::from(value));
        }
        body.insert("labels".into(), Value::Object(labels));
    }
    if args.action == "trigger" {
        if let Some(arguments) =
            definition::trigger_arguments(args.args_json.as_deref(), &args.args)?
        {
            body.insert("arguments".into(), arguments);
        }
    }
    if args.action == "backfill" {
        let (Some(from), Some(to)) = (&args.from, &args.to) else {
            return Err(CliError::usage("bulk backfill: give --from and --to"));
        };
        let mut backfill = json!({"startTime": from, "endTime": to});
        if let Some(overlap) = args.overlap {
            backfill["overlap"] = Value::from(overlap.name());
        }
        if let Some(mode) = args.mode {
            backfill["mode"] = Value::from(mode.name());
        }
        body.insert("backfill".into(), backfill);
    }
    Ok(body)
}

fn table(args: &BulkArgs, answer: &Value) -> String {
    let mut text = format!(
        "Bulk {}{}: {} jobs, {} ok, {} failed.\n",
        args.action.as_str(),
        if args.dry_run {
            " (dry run, nothing changed)"
        } else {
            ""
        },
        answer["matched"],
        answer["succeeded"],
        answer["failed"],
    );
    let rows: Vec<[String; 3]> = answer["results"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let detail = match (&r["executionId"], &r["count"], &r["error"]) {
                (Value::String(id), _, _) => id.clone(),
                (_, Value::Number(n), _) => format!("{n} runs"),
                (_, _, Value::Object(e)) => format!(
                    "{} {}",
                    e.get("code").unwrap_or(&Value::Null),
                    e.get("message").and_then(Value::as_str).unwrap_or_default()
                ),
                _ => String::new(),
            };
            [
                r["jobId"].as_str().unwrap_or_default().to_owned(),
                r["status"].as_str().unwrap_or_default().to_owned(),
                detail,
            ]
        })
        .collect();
    let width = |i: usize, head: &str| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([head.len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1) = (width(0, "JOB ID"), width(1, "STATUS"));
    if !rows.is_empty() {
        text.push_str(&format!("{:w0$}  {:w1$}  DETAIL\n", "JOB ID", "STATUS"));
        for [id, status, detail] in rows {
            text.push_str(format!("{id:w0$}  {status:w1$}  {detail}").trim_end());
            text.push('\n');
        }
    }
    if answer["nextCursor"].is_string() {
        text.push_str("More jobs match: --all goes on past 1,000.\n");
    }
    text
}
