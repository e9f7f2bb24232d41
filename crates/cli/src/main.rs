//! The `sundial` command line (docs/cli.md), parsed by clap ([`cli`]).
//!
//! `serve` and `spec preview` run here; every other command is a client of the HTTP API
//! ([`commands`] over [`client`], printed by [`output`]), so it works the same against a local
//! `sundial serve` and the API on AWS. Exit codes are per class of failure ([`error::Class`]).

use std::process::ExitCode;

use chrono::Utc;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

mod aws_targets;
mod cli;
mod client;
mod commands;
mod error;
mod http_server;
mod output;
mod preview;
mod serve;

use cli::{Cli, Command, SpecCommand};
use error::CliError;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit code for a bad command line or an invalid spec.
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    // clap prints help and version on stdout (exit 0) and usage errors on stderr (exit 2).
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if matches!(cli.command, Command::Serve(_) | Command::Spec(_)) {
        if let Some(flag) = client_flag_given(&matches) {
            // `serve --token …` would otherwise be accepted and ignored: the server reads
            // SUNDIAL_API_TOKEN.
            eprintln!(
                "error: --{flag} is an option of the client commands; `serve` and `spec` do not take it (see --help)"
            );
            return ExitCode::from(USAGE_ERROR);
        }
    }
    match cli.command {
        Command::Serve(args) => {
            let options = match serve::options(&args, |key| std::env::var(key).ok()) {
                Ok(options) => options,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(USAGE_ERROR);
                }
            };
            match serve::run(options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Spec(SpecCommand::Preview(args)) => {
            match preview::run_preview(&args, Utc::now()) {
                Ok(line) => {
                    commands::out(&format!("{line}\n"));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(USAGE_ERROR)
                }
            }
        }
        Command::Completions { shell } => {
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "sundial", &mut text);
            commands::out(&String::from_utf8_lossy(&text));
            ExitCode::SUCCESS
        }
        command => match client_command(cli.client, command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                e.exit_code()
            }
        },
    }
}

/// The first client option given on the command line (not from the environment), if any.
fn client_flag_given(matches: &ArgMatches) -> Option<&'static str> {
    let given = |m: &ArgMatches, id: &str| m.value_source(id) == Some(ValueSource::CommandLine);
    ["server", "token", "auth", "region", "output"]
        .into_iter()
        .find(|id| {
            given(matches, id)
                || matches.subcommand().is_some_and(|(_, sub)| {
                    given(sub, id) || sub.subcommand().is_some_and(|(_, leaf)| given(leaf, id))
                })
        })
}

/// Runs a client command on a single-threaded runtime: one request at a time needs no more.
fn client_command(args: cli::ClientArgs, command: Command) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(error::Class::Server, format!("starting the runtime: {e}")))?;
    runtime.block_on(async {
        let context = commands::Context {
            client: commands::client(&args).await?,
            format: args.output,
            style: output::Style::detect(),
        };
        commands::run(command, &context).await
    })
}
