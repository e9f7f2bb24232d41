//! `sundial job …`.

use chrono::Utc;
use reqwest::Method;
use serde_json::{json, Map, Value};

use super::definition::{self, READ_ONLY_FIELDS};
use super::{execution, pages, with_more_note, Context};
use crate::cli::{
    BackfillArgs, CreateArgs, HistoryArgs, JobCommand, ListArgs, PauseArgs, TriggerArgs, UpdateArgs,
};
use crate::client::Request;
use crate::error::CliError;
use crate::output::views;

pub(super) async fn run(command: JobCommand, context: &Context) -> Result<(), CliError> {
    let client = &context.client;
    match command {
        JobCommand::Create(args) => create(args, context).await,
        JobCommand::Update(args) => update(args, context).await,
        JobCommand::Get(args) => {
            let job = client.call(Request::get(&["jobs", &args.job_id])).await?;
            context.show(&job, || views::job(&job, Utc::now(), context.style))
        }
        JobCommand::Stats(args) => {
            let answer = context
                .client
                .call(
                    Request::get(&["jobs", &args.job_id, "stats"])
                        .query("window", args.window.window),
                )
                .await?;
            context.show(&answer, || views::window_figures(&answer, context.style))
        }
        JobCommand::Occurrences(args) => {
            let answer = context
                .client
                .call(
                    Request::get(&["jobs", &args.job_id, "occurrences"])
                        .query("from", Some(args.from))
                        .query("to", Some(args.to)),
                )
                .await?;
            context.show(&answer, || views::occurrences(&answer, context.style))
        }
        JobCommand::Simulate(args) => super::simulate::run(args, context).await,
        JobCommand::Describe(args) => {
            let answer = client
                .call(Request::get(&["jobs", &args.job_id, "describe"]))
                .await?;
            context.show(&answer, || {
                views::describe(&answer, Utc::now(), context.style)
            })
        }
        JobCommand::List(args) => list(args, context).await,
        JobCommand::Delete(args) => {
            let answer = client
                .call(Request::new(Method::DELETE, &["jobs", &args.job_id]))
                .await?;
            context.show(&answer, || format!("Deleted job {}.\n", args.job_id))
        }
        JobCommand::Pause(args) => pause(args, context).await,
        JobCommand::Unpause(args) => {
            let body = args.notes.map(|notes| json!({ "notes": notes }));
            let answer = client
                .call(Request::post(
                    &["jobs", &args.job_id, "unpause"],
                    body.as_ref(),
                ))
                .await?;
            context.show(&answer, || format!("Resumed job {}.\n", args.job_id))
        }
        JobCommand::Trigger(args) => trigger(args, context).await,
        JobCommand::History(args) => history(args, context).await,
        JobCommand::Backfill(args) => backfill(args, context).await,
    }
}

/// Creates a job: `sundial job create`.
async fn create(args: CreateArgs, context: &Context) -> Result<(), CliError> {
    let client = &context.client;
    let mut body = match &args.definition.file {
        Some(path) => definition::read_definition(path)?,
        None => Map::new(),
    };
    definition::apply(&mut body, &args.definition)?;
    let job_id = match (&args.job_id, body.get("jobId").and_then(Value::as_str)) {
        (Some(id), _) => id.clone(),
        (None, Some(id)) => id.to_string(),
        (None, None) => {
            return Err(CliError::usage(
                "JOB_ID: missing; give it as an argument or as jobId in the file",
            ))
        }
    };
    definition::fill_create_defaults(&mut body, &job_id);
    let body = Value::Object(body);
    let answer = client
        .call(Request::post(&["jobs", &job_id], Some(&body)))
        .await?;
    context.warn(&answer);
    context.show(&answer, || format!("Created job {job_id}.\n"))
}

/// Changes a job: `sundial job update`, from a file or from flags over the stored definition.
async fn update(args: UpdateArgs, context: &Context) -> Result<(), CliError> {
    let client = &context.client;
    let job_id = args.job_id;
    let mut body = match &args.definition.file {
        // A file is the whole new definition, as the API's update takes it.
        Some(path) => definition::read_definition(path)?,
        // Flags change the stored definition: read it, drop what is not a definition
        // field; secret headers come back as "***", which keeps them (docs/api.md).
        None => {
            let current = client.call(Request::get(&["jobs", &job_id])).await?;
            let mut map = match current {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            for key in READ_ONLY_FIELDS {
                map.remove(key);
            }
            map
        }
    };
    if args.definition.file.is_none() && !definition::has_flags(&args.definition) {
        return Err(CliError::usage(
            "nothing to change: give -f FILE or flags for the fields to change (see --help)",
        ));
    }
    definition::apply(&mut body, &args.definition)?;
    let body = Value::Object(body);
    let path = ["jobs", job_id.as_str(), "update"];
    let request = Request::post(&path, Some(&body)).query("dryRun", args.dry_run.then_some("true"));
    let answer = client.call(request).await?;
    context.warn(&answer);
    if args.dry_run {
        return context.show(&answer, || {
            views::update_preview(&job_id, &answer, context.style)
        });
    }
    context.show(&answer, || {
        match answer.get("executionId").and_then(Value::as_str) {
            Some(id) => format!("Updated job {job_id}; it runs now as execution {id}.\n"),
            None => format!("Updated job {job_id}.\n"),
        }
    })
}

/// Lists jobs: `sundial job list`.
async fn list(args: ListArgs, context: &Context) -> Result<(), CliError> {
    let query = vec![
        ("state", args.filter.state),
        ("creator", args.filter.creator),
        ("parentJob", args.filter.parent),
        ("service", args.filter.service),
        ("idPrefix", args.filter.id_prefix),
        ("sort", args.sort),
        ("limit", Some(args.limit.to_string())),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .chain(args.filter.labels.into_iter().map(|l| ("label", l)))
    .collect();
    let answer = pages(context, &["jobs"], query, "jobs", args.all).await?;
    context.show(&answer, || {
        let text = views::job_list(&answer, Utc::now(), context.style);
        with_more_note(text, &answer, "jobs")
    })
}

/// Pauses a job: `sundial job pause`.
async fn pause(args: PauseArgs, context: &Context) -> Result<(), CliError> {
    let client = &context.client;
    let mut body = serde_json::Map::new();
    if let Some(notes) = args.notes {
        body.insert("notes".into(), json!(notes));
    }
    if let Some(until) = args.until {
        body.insert("until".into(), json!(until));
    }
    let answer = client
        .call(Request::post(
            &["jobs", &args.job_id, "pause"],
            Some(&Value::Object(body)),
        ))
        .await?;
    context.show(&answer, || format!("Paused job {}.\n", args.job_id))
}

/// Runs a job now or later: `sundial job trigger`.
async fn trigger(args: TriggerArgs, context: &Context) -> Result<(), CliError> {
    let client = &context.client;
    let poll = execution::poll_interval(&args.poll)?;
    let arguments = definition::trigger_arguments(args.args_json.as_deref(), &args.args)?;
    let path = ["jobs", args.job_id.as_str(), "trigger"];
    let request = Request::post(&path, arguments.as_ref())
        .query("overlap", args.overlap.map(|o| o.name()))
        .query("scheduledTime", args.scheduled_time.as_deref())
        .query("delay", args.delay.as_deref())
        .header("Idempotency-Key", args.idempotency_key);
    let answer = client.call(request).await?;
    let execution_id = answer
        .get("executionId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if args.watch {
        if context.format == crate::output::Format::Table {
            super::out(&format!(
                "Triggered {}: execution {execution_id} (run #{}).\n",
                args.job_id,
                answer.get("executeNumber").unwrap_or(&Value::Null)
            ));
        }
        return execution::watch(context, &execution_id, poll).await;
    }
    context.show(&answer, || {
        let due = args
            .delay
            .as_deref()
            .map(|delay| format!("; it starts in {delay}"))
            .unwrap_or_default();
        format!(
            "Triggered {}: execution {execution_id} (run #{}){due}.\n",
            args.job_id,
            answer.get("executeNumber").unwrap_or(&Value::Null)
        )
    })
}

/// A job's audit trail: `sundial job history`.
async fn history(args: HistoryArgs, context: &Context) -> Result<(), CliError> {
    let query = vec![("limit", args.limit.to_string())];
    let answer = pages(
        context,
        &["jobs", &args.job_id, "history"],
        query,
        "entries",
        args.all,
    )
    .await?;
    context.show(&answer, || {
        let text = views::history(&answer, Utc::now(), context.style);
        with_more_note(text, &answer, "entries")
    })
}

/// Runs a job's missed fire times: `sundial job backfill`.
async fn backfill(args: BackfillArgs, context: &Context) -> Result<(), CliError> {
    let client = &context.client;
    let mut body = json!({"startTime": args.from, "endTime": args.to});
    if let Some(map) = body.as_object_mut() {
        if let Some(overlap) = args.overlap {
            map.insert("overlap".into(), Value::from(overlap.name()));
        }
        if let Some(mode) = args.mode {
            map.insert("mode".into(), Value::from(mode.name()));
        }
        if args.reverse {
            map.insert("reverse".into(), Value::Bool(true));
        }
        if args.dry_run {
            map.insert("dryRun".into(), Value::Bool(true));
        }
    }
    let answer = client
        .call(Request::post(
            &["jobs", &args.job_id, "backfill"],
            Some(&body),
        ))
        .await?;
    context.show(&answer, || {
        if args.dry_run {
            return views::backfill_preview(&args.job_id, &answer, context.style);
        }
        format!(
            "Backfill of {}: {} fire times from {} to {} will run.\n",
            args.job_id,
            answer.get("count").unwrap_or(&Value::Null),
            args.from,
            args.to
        )
    })
}
