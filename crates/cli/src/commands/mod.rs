//! The client commands: each turns its arguments into API calls ([`crate::client`]) and the
//! answers into output ([`crate::output`]). No scheduling happens here: fire times, states and
//! validation are the server's.

use std::io::Write;

use chrono::Utc;
use serde_json::Value;

use crate::cli::{ClientArgs, Command};
use crate::client::{Client, Request};
use crate::error::{Class, CliError};
use crate::output::{self, views, Format, Style};

mod bulk;
pub(crate) mod calendar;
pub(crate) mod definition;
mod execution;
mod files;
mod job;
pub(crate) mod simulate;

/// What every client command works with.
pub(crate) struct Context {
    pub client: Client,
    pub format: Format,
    pub style: Style,
}

impl Context {
    /// Prints `value` as JSON or YAML, or `table` (built lazily) for `--output table`.
    pub(crate) fn show(
        &self,
        value: &Value,
        table: impl FnOnce() -> String,
    ) -> Result<(), CliError> {
        let text = match self.format {
            Format::Table => table(),
            format => output::data(format, value)?,
        };
        out(&text);
        Ok(())
    }

    /// Prints the warnings of an answer on stderr.
    pub(crate) fn warn(&self, answer: &Value) {
        for warning in output::warnings(answer) {
            eprintln!("warning: {warning}");
        }
    }
}

/// Writes to stdout; a closed pipe (`sundial job list | head -1`) is not an error.
pub(crate) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Runs a client command.
pub(crate) async fn run(command: Command, context: &Context) -> Result<(), CliError> {
    match command {
        Command::Job(command) => job::run(command, context).await,
        Command::Bulk(args) => bulk::run(args, context).await,
        Command::Export(args) => files::export(args, context).await,
        Command::Apply(args) => files::apply(args, context).await,
        Command::Diff(args) => files::diff(args, context).await,
        Command::Calendar(command) => calendar::run(command, context).await,
        Command::Execution(command) => execution::run(command, context).await,
        Command::Timers(crate::cli::TimersCommand::Sync { service, file }) => {
            let list = definition::read_document(&file)?;
            let answer = context
                .client
                .call(Request {
                    body: Some(&list),
                    ..Request::new(reqwest::Method::PUT, &["services", &service, "timers"])
                })
                .await?;
            context.show(&answer, || {
                views::timers_sync(&service, &answer, context.style)
            })
        }
        Command::Settings(crate::cli::SettingsCommand::DebugMode { mode, reason }) => {
            let answer = match mode {
                None => {
                    context
                        .client
                        .call(Request::get(&["settings", "debugMode"]))
                        .await?
                }
                Some(mode) => {
                    let mut body = serde_json::json!({"mode": mode.name()});
                    if let Some(reason) = reason {
                        body["reason"] = Value::from(reason);
                    }
                    context
                        .client
                        .call(Request {
                            body: Some(&body),
                            ..Request::new(reqwest::Method::PUT, &["settings", "debugMode"])
                        })
                        .await?
                }
            };
            context.show(&answer, || views::debug_mode(&answer, context.style))
        }
        Command::Stats(args) => {
            let answer = context
                .client
                .call(Request::get(&["stats"]).query("window", args.window))
                .await?;
            context.show(&answer, || views::stats(&answer, context.style))
        }
        Command::Health => {
            let reply = context.client.send(Request::get(&["health"])).await?;
            context.show(&reply.body, || {
                views::health(&reply.body, Utc::now(), context.style)
            })?;
            if reply.status == 200 {
                Ok(())
            } else {
                let mut error = crate::client::api_error("GET health", &reply);
                if let Some(status) = reply.body.get("status").and_then(Value::as_str) {
                    error.message = format!("the server is {status} (HTTP {})", reply.status);
                }
                Err(error)
            }
        }
        Command::Serve(_) | Command::Spec(_) | Command::Completions { .. } => {
            Err(CliError::new(Class::Usage, "not a client command"))
        }
    }
}

/// The client for `args`: its server and credentials.
pub(crate) async fn client(args: &ClientArgs) -> Result<Client, CliError> {
    use crate::cli::AuthMode;
    use crate::client::Auth;
    let base = crate::client::parse_server(&args.server)?;
    let host = base.host_str().unwrap_or_default().to_string();
    let token = args.token.clone().filter(|t| !t.is_empty());
    let iam_host = host.contains(".execute-api.") && host.ends_with(".amazonaws.com");
    let auth = match (args.auth, token) {
        (AuthMode::None, _) => Auth::None,
        (AuthMode::Bearer | AuthMode::Auto, Some(token)) => Auth::Bearer(token),
        (AuthMode::Bearer, None) => {
            return Err(CliError::usage(
                "--auth bearer: give --token or set SUNDIAL_API_TOKEN",
            ))
        }
        (AuthMode::Auto, None) if !iam_host => Auth::None,
        (AuthMode::Auto | AuthMode::Iam, _) => iam(args.region.clone(), &host).await?,
    };
    Client::new(&args.server, auth)
}

#[cfg(feature = "aws-auth")]
async fn iam(region: Option<String>, host: &str) -> Result<crate::client::Auth, CliError> {
    Ok(crate::client::Auth::SigV4(
        crate::client::sigv4::Signer::from_environment(region, host).await?,
    ))
}

#[cfg(not(feature = "aws-auth"))]
async fn iam(_region: Option<String>, _host: &str) -> Result<crate::client::Auth, CliError> {
    Err(CliError::usage(
        "--auth iam: this sundial was built without the aws-auth feature (cargo build --features aws-auth)",
    ))
}

/// A listing's text, with a line saying more `what` are left when `answer` is a page that has a
/// next one.
fn with_more_note(mut text: String, answer: &Value, what: &str) -> String {
    if answer["nextCursor"].is_string() {
        text.push_str(&format!("More {what}: --all lists every page.\n"));
    }
    text
}

/// Every item of a paginated list (`key`), following `nextCursor` while `all`, as one answer
/// `{key: [...], "nextCursor": …}`.
async fn pages(
    context: &Context,
    path: &[&str],
    query: Vec<(&str, String)>,
    key: &str,
    all: bool,
) -> Result<Value, CliError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut request = Request::get(path);
        request.query = query.clone();
        let page = context
            .client
            .call(request.query("cursor", cursor.clone()))
            .await?;
        if let Some(list) = page.get(key).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if !all || cursor.is_none() {
            let mut answer = serde_json::Map::new();
            answer.insert(key.to_string(), Value::Array(items));
            answer.insert("nextCursor".into(), cursor.map_or(Value::Null, Value::from));
            return Ok(Value::Object(answer));
        }
    }
}
