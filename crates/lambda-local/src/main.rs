//! `sundial-lambda-local`: the AWS stack on this machine (docs/deploy.md, "The real stack
//! locally").
//!
//! ```text
//! sundial-lambda-local [--port N] [--parameter NAME=VALUE]... [--no-build] [--no-schedule]
//!                      [--bin-dir DIR] [--repo DIR] [--prefix NAME] [--log FILE]
//! ```
//!
//! Builds the four functions (`cargo build --profile lambda-local …`, unless `--no-build`),
//! starts moto with the template's resources, serves the HTTP API on 127.0.0.1:PORT, and prints
//! one JSON line (`{"api": …, "moto": …, "arch": …}`); then runs until Ctrl-C or SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;

use sundial_lambda_local::{LocalStack, Log, Options, BUILD_COMMAND};

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Stack(#[from] sundial_lambda_local::Error),
    #[error("{0}")]
    Build(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

const USAGE: &str = "usage: sundial-lambda-local [--port N] [--parameter NAME=VALUE]... [--no-build] [--no-schedule] [--bin-dir DIR] [--repo DIR] [--prefix NAME] [--log FILE]";

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: starting tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(text)) => {
            eprintln!("error: {text}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Failure> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut options = Options::new(repo);
    let mut build = true;
    let mut bin_dir = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| Failure::Usage(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--port" => {
                let text = value("--port")?;
                options.api_port = text
                    .parse()
                    .map_err(|_| Failure::Usage(format!("--port {text}: expected 0-65535")))?;
            }
            "--parameter" => {
                let text = value("--parameter")?;
                let (name, v) = text.split_once('=').ok_or_else(|| {
                    Failure::Usage(format!("--parameter {text}: expected NAME=VALUE"))
                })?;
                options.parameters.push((name.into(), v.into()));
            }
            "--no-build" => build = false,
            "--no-schedule" => options.schedules = false,
            "--bin-dir" => bin_dir = Some(PathBuf::from(value("--bin-dir")?)),
            "--repo" => options.repo = PathBuf::from(value("--repo")?),
            "--prefix" => options.prefix = value("--prefix")?,
            "--log" => options.log = Log::file(&PathBuf::from(value("--log")?))?,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(Failure::Usage(format!("unknown argument {other:?}"))),
        }
    }
    if let Some(dir) = bin_dir {
        options.bin_dir = dir;
    }
    eprintln!(
        "sundial-lambda-local: the functions run on this machine ({}), not on arm64 as deployed",
        std::env::consts::ARCH
    );
    if build {
        eprintln!("sundial-lambda-local: {BUILD_COMMAND}");
        let mut words = BUILD_COMMAND.split_whitespace();
        let program = words.next().unwrap_or("cargo");
        let status = tokio::process::Command::new(program)
            .args(words)
            .current_dir(&options.repo)
            .status()
            .await
            .map_err(|source| Failure::Io {
                context: "running cargo".into(),
                source,
            })?;
        if !status.success() {
            return Err(Failure::Build(format!("the build failed ({status})")));
        }
    }
    let stack = LocalStack::start(options).await?;
    println!(
        "{}",
        serde_json::json!({
            "api": stack.api_url,
            "moto": stack.moto_endpoint,
            "arch": std::env::consts::ARCH,
            "tick": format!("{}/_local/tick", stack.api_url),
            "instances": format!("{}/_local/instances", stack.api_url),
            "notes": [
                "IAM and JWT routes are not authorized locally",
                "the schedule runs every period from start, not on second 0; POST /_local/tick runs it now",
            ],
        })
    );
    wait_for_signal().await;
    eprintln!("sundial-lambda-local: stopping");
    stack.stop().await;
    Ok(())
}

async fn wait_for_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
