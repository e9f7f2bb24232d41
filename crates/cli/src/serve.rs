//! `sundial serve`: the whole of Sundial in one process on the embedded store.
//!
//! The API runs on the same router as the API Lambda. A bearer token (`SUNDIAL_API_TOKEN`, or the
//! named tokens of `SUNDIAL_API_TOKENS`) is required whenever the address is not loopback, and the
//! server refuses to start on such an address without one: a scheduler that calls URLs on request
//! is not something to expose openly.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sundial_console::{ConsoleAuth, ConsoleConfig};
use sundial_embedded::{SqliteQueue, SqliteStore};

use crate::aws_targets::LocalPublisher;
use crate::cli::ServeArgs;
use crate::http_server;
use sundial_ports::cause::chain;
use sundial_ports::clock::Clock;
use sundial_ports::clock::SystemClock;
use sundial_ports::events::EventPublisher;
use sundial_service::adapters::http::{AddressPolicy, ReqwestClient};
use sundial_service::app::{ApiAuth, ApiToken};
use sundial_service::engine::runner::{self, RunnerOptions};
use sundial_service::engine::{Engine, EngineConfig, QueueKind, LOCAL_ADMIT_AHEAD};
use sundial_service::settings;
use sundial_service::{App, AppConfig};

/// What `serve` was asked to do.
#[derive(Debug, PartialEq)]
pub(crate) struct ServeOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Where the SQLite database lives.
    pub data: PathBuf,
    /// docs/api.md debug mode.
    pub debug_mode: bool,
    /// Serve the API without running the engine.
    pub api_only: bool,
    /// `SUNDIAL_API_TOKENS` and `SUNDIAL_API_TOKEN` (checked by [`settings::api_tokens`]); none:
    /// an open API.
    pub tokens: Vec<ApiToken>,
    /// Send jobs' `sqs` and `eventbridge` targets to AWS (`--aws-targets`, `SUNDIAL_AWS_TARGETS`);
    /// without it such jobs are refused.
    pub aws_targets: bool,
    /// `SUNDIAL_SIGNING_SECRET` (checked by [`settings::signing_secret`]); without it, a random
    /// one kept in the data directory.
    pub signing_secret: Option<Vec<u8>>,
    /// How long a console login lasts (`SUNDIAL_CONSOLE_SESSION_SECONDS`).
    pub console_session: std::time::Duration,
}

/// Checks the flags of `serve` (parsed by clap, see [`ServeArgs`]) and its environment; `env`
/// looks up environment variables (injected for tests). Messages name the flag or variable.
pub(crate) fn options(
    args: &ServeArgs,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ServeOptions, String> {
    let addr: SocketAddr = args.addr.parse().map_err(|_| {
        format!(
            "--addr: expected HOST:PORT like 127.0.0.1:8080, got {:?}",
            args.addr
        )
    })?;
    let data = args.data.clone();
    let debug_mode = args.debug_mode || settings::flag(env("SUNDIAL_DEBUG_MODE").as_deref());
    let api_only = args.api_only;
    let tokens = settings::api_tokens(
        env("SUNDIAL_API_TOKENS")
            .filter(|t| !t.is_empty())
            .as_deref(),
        env("SUNDIAL_API_TOKEN")
            .filter(|t| !t.is_empty())
            .as_deref(),
    )?;
    let aws_targets = args.aws_targets || settings::flag(env("SUNDIAL_AWS_TARGETS").as_deref());
    if let Some(why) = aws_targets
        .then(crate::aws_targets::unavailable_in_this_build)
        .flatten()
    {
        return Err(why.to_string());
    }
    let signing_secret = env("SUNDIAL_SIGNING_SECRET")
        .filter(|s| !s.is_empty())
        .map(|s| settings::signing_secret(&s))
        .transpose()?;
    let console_session = match env("SUNDIAL_CONSOLE_SESSION_SECONDS").filter(|s| !s.is_empty()) {
        None => ConsoleConfig::DEFAULT_SESSION_LIFETIME,
        Some(text) => text
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=7 * 86_400).contains(n))
            .map(std::time::Duration::from_secs)
            .ok_or_else(|| {
                format!(
                    "SUNDIAL_CONSOLE_SESSION_SECONDS: expected 1 to 604800 seconds, got {text:?}"
                )
            })?,
    };
    if !addr.ip().is_loopback() && tokens.is_empty() {
        return Err(format!(
            "--addr: {addr} is reachable from other machines; set SUNDIAL_API_TOKEN (or SUNDIAL_API_TOKENS) to require a bearer token"
        ));
    }
    Ok(ServeOptions {
        addr,
        data,
        debug_mode,
        api_only,
        tokens,
        aws_targets,
        signing_secret,
        console_session,
    })
}

/// Runs the server until SIGINT or SIGTERM.
pub(crate) fn run(options: ServeOptions) -> Result<(), String> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    runtime.block_on(serve(options))
}

async fn serve(options: ServeOptions) -> Result<(), String> {
    let open_files = http_server::raise_open_file_limit();
    create_private_dir(&options.data)
        .map_err(|e| format!("--data: creating {}: {e}", options.data.display()))?;
    // Held until the process ends: two engines on one store would each take the other's live
    // runs for a dead process's.
    let _engine_lock = if options.api_only {
        None
    } else {
        Some(lock_engine(&options.data)?)
    };
    let db = options.data.join("sundial.db");
    if let Some(mode) = shared_mode(&db) {
        tracing::warn!(
            path = %db.display(),
            mode = format!("{mode:o}"),
            "the database is readable by other users of this machine; run `chmod 600 {}`",
            db.display()
        );
    }
    let store = SqliteStore::open(&db)
        .map_err(|e| format!("--data: opening {}: {}", db.display(), chain(&e)))?;
    let publisher = LocalPublisher::start(options.aws_targets).await?;
    let config = AppConfig {
        debug_mode: sundial_core::debug_mode::DebugMode::from_flag(options.debug_mode),
        signing_secret: match &options.signing_secret {
            Some(secret) => secret.clone(),
            None => stored_signing_secret(&options.data)?,
        },
        // A local worker holds an attempt to its end, however long.
        max_sync_attempt: None,
        // Without --aws-targets, jobs with a target are refused, naming the field and the flag.
        targets: publisher.target_support(),
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let app = Arc::new(App::new(store.clone(), Arc::clone(&clock), config));
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| format!("--addr: binding {}: {e}", options.addr))?;
    let local = listener.local_addr().map_err(|e| format!("--addr: {e}"))?;
    let engine = build_engine(&app, &store, &clock, publisher, local, !options.api_only)?;
    let runner = if options.api_only {
        None
    } else {
        // What the previous process received and never finished comes back now, not after the
        // queues' visibility timeout: the lock says that process is gone.
        for queue in QueueKind::ALL.map(|kind| engine.queue(kind)) {
            match queue.release_received().await {
                Ok(0) => {}
                Ok(count) => {
                    tracing::info!(
                        queue = queue.name(),
                        count,
                        "resuming the messages an earlier process left unfinished"
                    );
                }
                Err(e) => {
                    tracing::warn!(queue = queue.name(), error = %chain(&e), "could not resume unfinished messages now; they come back after their visibility timeout")
                }
            }
        }
        Some(tokio::spawn(runner::run(
            Arc::clone(&engine),
            RunnerOptions::default(),
            shutdown_signal()?,
        )))
    };
    // The console beside the API: its own routes (`/`, `/ui/…`) and its own login; the same
    // token opens both (docs/deploy.md, "Operator console").
    let auth = ApiAuth::tokens(options.tokens.clone());
    let console = ConsoleConfig {
        auth: if auth.is_open() {
            ConsoleAuth::Open
        } else {
            ConsoleAuth::Tokens(auth.clone())
        },
        session_lifetime: options.console_session,
        secure_cookie: false,
    };
    let router =
        sundial_api::router(Arc::clone(&app), auth).merge(sundial_console::router(app, console));
    let limits = http_server::Limits::from_open_files(open_files);
    tracing::info!(addr = %local, data = %options.data.display(), debug_mode = options.debug_mode, tokens = options.tokens.len(), open_files, max_connections = limits.max_connections, "sundial listening");
    let shutdown = shutdown_signal()?;
    let signal_for_grace = shutdown_signal()?;
    // Tests and scripts read this line to learn the port when --addr ends in :0.
    println!("sundial listening on http://{local}");
    let server = http_server::serve(listener, router, limits, async {
        shutdown.await;
        tracing::info!("shutting down");
    });
    // Graceful shutdown waits for every open connection, and a client that sent half a request
    // (or half a body) would hold the process forever: after the signal, in-flight requests get
    // SHUTDOWN_GRACE, then the rest are dropped. Every write is a committed SQLite transaction, so
    // a dropped connection loses at most its own unanswered request.
    let grace_expired = async {
        signal_for_grace.await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        () = server => {}
        () = grace_expired => tracing::warn!(
            grace = ?SHUTDOWN_GRACE,
            "connections still open after the shutdown grace period; closing them"
        ),
    }
    // Let running steps finish their writes; whatever does not is delivered again next start.
    let Some(runner) = runner else {
        tracing::info!("sundial stopped");
        return Ok(());
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, runner).await.is_err() {
        tracing::warn!("engine still busy after the shutdown grace period; unfinished steps resume on the next start");
    }
    tracing::info!("sundial stopped");
    Ok(())
}

/// The engine on the embedded store: SQLite queues in the same file, outbound HTTP that may call
/// loopback (a laptop's own services) but not private or link-local addresses unless allowed,
/// and `publisher` for state-change events (logged) and jobs' targets (AWS, or refused).
/// `sole_engine`: this process holds the data directory's engine lock.
fn build_engine(
    app: &Arc<App<SqliteStore>>,
    store: &SqliteStore,
    clock: &Arc<dyn Clock>,
    publisher: LocalPublisher,
    local: SocketAddr,
    sole_engine: bool,
) -> Result<Arc<LocalEngine>, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let policy = settings::allow_outbound(
        AddressPolicy::local(),
        env("SUNDIAL_OUTBOUND_ALLOW").as_deref(),
    );
    let http = ReqwestClient::new(policy).map_err(|e| format!("SUNDIAL_OUTBOUND_ALLOW: {e}"))?;
    let services = settings::parse_services(&env("SUNDIAL_SERVICES").unwrap_or_default())?;
    let config = EngineConfig {
        tick_horizon: std::time::Duration::from_secs(2),
        public_base_url: env("SUNDIAL_PUBLIC_URL").unwrap_or_else(|| format!("http://{local}")),
        services,
        template_env: settings::template_env(std::env::vars()),
        state_change_bus: publisher.state_change_bus(),
        admit_ahead: LOCAL_ADMIT_AHEAD,
        incarnation: incarnation(),
        sole_engine,
        ..EngineConfig::default()
    };
    Ok(Engine::new(
        Arc::clone(app),
        store.queue(QueueKind::Dispatch.name(), Arc::clone(clock)),
        store.queue(QueueKind::Notify.name(), Arc::clone(clock)),
        http,
        publisher,
        config,
    ))
}

type LocalEngine = Engine<SqliteStore, SqliteQueue, ReqwestClient, LocalPublisher>;

/// This process's name in the leases it takes: its pid and start time, unique across restarts.
fn incarnation() -> String {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("serve-{}-{}", std::process::id(), started.as_nanos())
}

/// Takes the exclusive lock on `DATA/engine.lock` that makes this the only engine on the data
/// directory (`--api-only` processes take none). The operating system releases it when the
/// process ends, however it ends.
fn lock_engine(data: &std::path::Path) -> Result<std::fs::File, String> {
    let path = data.join("engine.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("--data: opening {}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "--data: another `sundial serve` runs the engine on {} (it holds {}); stop it first, or start this one with --api-only",
            data.display(),
            path.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(format!("--data: locking {}: {e}", path.display()))
        }
    }
}

/// The secret for feedback tokens and webhook signatures when `SUNDIAL_SIGNING_SECRET` is not set:
/// a random one kept in the data directory (0600) so that feedback URLs stay valid across
/// restarts. A kept file that other users can read is refused: with it they could forge feedback
/// tokens and webhook signatures.
fn stored_signing_secret(data: &Path) -> Result<Vec<u8>, String> {
    let path = data.join("signing-secret");
    if let Some(mode) = shared_mode(&path) {
        return Err(format!(
            "{} can be read by other users of this machine (mode {mode:o}), who could forge feedback tokens and webhook signatures with it; run `chmod 600 {}` and start again (or set SUNDIAL_SIGNING_SECRET)",
            path.display(),
            path.display()
        ));
    }
    if let Ok(secret) = std::fs::read(&path) {
        if secret.len() >= settings::MIN_SIGNING_SECRET_BYTES {
            return Ok(secret);
        }
    }
    let mut secret = vec![0u8; settings::MIN_SIGNING_SECRET_BYTES];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| std::io::Read::read_exact(&mut random, &mut secret))
        .map_err(|e| format!("generating a signing secret (or set SUNDIAL_SIGNING_SECRET): {e}"))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(&path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, &secret))
        .map_err(|e| format!("--data: writing {}: {e}", path.display()))?;
    Ok(secret)
}

/// Creates the data directory (and any missing parent) readable by its owner only (0700). An
/// existing directory keeps its mode.
fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// The permission bits of `path` if it exists and its group or others have any access to it.
fn shared_mode(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// How long in-flight requests may take to finish after SIGINT or SIGTERM.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// A future that resolves on SIGINT or SIGTERM. The handlers are installed here, not when the
/// future is first polled, so a signal sent as soon as the listening line appears is not lost (or
/// fatal). Each call listens on its own, so the graceful shutdown and the grace timer both see it.
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, String> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind: SignalKind| {
            signal(kind).map_err(|e| format!("installing the signal handler: {e}"))
        };
        let mut interrupt = listen(SignalKind::interrupt())?;
        let mut terminate = listen(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {},
                _ = terminate.recv() => {},
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

fn init_logging() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only on a terminal: logs redirected to a file or a collector stay plain text.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// The command line `sundial serve ARGS` through clap, then [`options`].
    fn parse(
        list: &[String],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ServeOptions, String> {
        let argv = ["sundial", "serve"]
            .into_iter()
            .map(String::from)
            .chain(list.iter().cloned());
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Command::Serve(serve) => options(&serve, env),
            other => panic!("not serve: {other:?}"),
        }
    }

    #[test]
    fn defaults_and_flags() {
        let o = parse(&[], |_| None).unwrap();
        assert_eq!(o.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(o.data, PathBuf::from("sundial-data"));
        let o = parse(
            &args(&["--addr=127.0.0.1:0", "--data", "/tmp/x", "--debug-mode"]),
            |_| None,
        )
        .unwrap();
        assert_eq!((o.addr.port(), o.debug_mode), (0, true));
    }

    #[test]
    fn public_address_needs_a_token() {
        let err = parse(&args(&["--addr", "0.0.0.0:8080"]), |_| None).unwrap_err();
        assert!(err.starts_with("--addr:"), "{err}");
        let o = parse(&args(&["--addr", "0.0.0.0:8080"]), |k| {
            (k == "SUNDIAL_API_TOKEN").then(|| "s3cret-token-0123".into())
        })
        .unwrap();
        let names: Vec<_> = o
            .tokens
            .iter()
            .map(|t| (t.name.as_str(), t.secret()))
            .collect();
        assert_eq!(names, [("default", "s3cret-token-0123")]);
        let o = parse(&args(&["--addr", "0.0.0.0:8080"]), |k| {
            (k == "SUNDIAL_API_TOKENS").then(|| "ci:read:s3cret-token-0123".into())
        })
        .unwrap();
        assert_eq!(o.tokens.len(), 1, "named tokens are enough beyond loopback");
    }

    /// Weak credentials stop the start with a message naming the variable, on any address.
    #[test]
    fn weak_credentials_are_refused_at_start() {
        for (addr, key, value) in [
            ("0.0.0.0:8080", "SUNDIAL_API_TOKEN", "                "),
            ("0.0.0.0:8080", "SUNDIAL_API_TOKEN", " s3cret-token-0123 "),
            ("0.0.0.0:8080", "SUNDIAL_API_TOKEN", "x"),
            ("0.0.0.0:8080", "SUNDIAL_API_TOKEN", "ключ-ключ-ключ-ключ"),
            ("127.0.0.1:8080", "SUNDIAL_API_TOKEN", "short"),
            ("127.0.0.1:8080", "SUNDIAL_SIGNING_SECRET", "k"),
            (
                "127.0.0.1:8080",
                "SUNDIAL_SIGNING_SECRET",
                "sample-signing-secret",
            ),
        ] {
            let err = parse(&args(&["--addr", addr]), |k| {
                if k == key {
                    Some(value.into())
                } else if k == "SUNDIAL_API_TOKEN" {
                    Some("s3cret-token-0123".into())
                } else {
                    None
                }
            })
            .unwrap_err();
            assert!(
                err.starts_with(&format!("{key}: ")),
                "{key}={value:?}: {err}"
            );
        }
        let secret = "0123456789abcdef0123456789abcdef";
        let o = parse(&[], |k| {
            (k == "SUNDIAL_SIGNING_SECRET").then(|| secret.into())
        })
        .unwrap();
        assert_eq!(o.signing_secret.as_deref(), Some(secret.as_bytes()));
    }

    #[test]
    fn bad_flags_are_named() {
        assert!(parse(&args(&["--addr", "nope"]), |_| None)
            .unwrap_err()
            .starts_with("--addr:"));
        assert!(parse(&args(&["--port", "1"]), |_| None)
            .unwrap_err()
            .contains("--port"));
        assert!(parse(&args(&["--data"]), |_| None)
            .unwrap_err()
            .contains("--data"));
        // As before clap: the last --addr wins.
        let o = parse(
            &args(&["--addr", "0.0.0.0:1", "--addr", "127.0.0.1:2"]),
            |_| None,
        )
        .unwrap();
        assert_eq!(o.addr.port(), 2);
    }
}
