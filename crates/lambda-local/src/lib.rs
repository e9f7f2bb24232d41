//! Sundial's AWS stack run for real on one machine: the four Lambda binaries (`functions/`),
//! unmodified, under a Lambda Runtime API of our own, with the event sources template.yaml
//! declares for them emulated on loopback, over moto (`infra/moto.py`).
//!
//! What is read from the template (through `infra/moto.py up --describe`, which resolves its
//! intrinsic functions once for moto and for this): each function's binary, `Timeout`,
//! `MemorySize`, environment (Globals merged with the function's own), logging format and
//! events; the HTTP API's routes, integrations (payload format, timeout) and authorizers; the
//! queues and their redrive policies. What Lambda adds to a process's environment is added here
//! too ([`runtime::reserved_environment`]); the one addition of ours is `AWS_ENDPOINT_URL`,
//! which points the SDK at moto through a recorder of the function's own ([`calls`]), so that
//! every AWS call a binary makes can be checked against its policy in the template, and through
//! the capacity meter (`sundial-meter`), which bills each call as AWS would
//! ([`LocalStack::meter`]).
//!
//! Differences from AWS, on purpose or not (docs/deploy.md lists them for users):
//! - the binaries are built for this machine (x86_64 here), not arm64;
//! - `AWS_IAM` routes are not authorized: requests pass without an identity (`JWT` routes are,
//!   against the template's issuer: [`jwt`]);
//! - the schedule starts when the stack does, not on second 0 of each minute, and
//!   `POST /_local/tick` invokes the tick at once (synchronously, answering its result);
//! - moto checks no IAM policy and never expires TTL items; memory limits are not enforced;
//! - an invocation's timeout starts when the event is handed to the instance (a cold start's
//!   init counts against it).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

pub mod calls;
pub mod checks;
pub mod gateway;
pub mod jwt;
pub mod runtime;
pub mod sources;
pub mod stack;

use runtime::{Function, FunctionConfig};
use stack::{MotoLine, Stack};

/// Why the local stack cannot start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// `infra/moto.py` did not start or printed something else than its line.
    #[error("infra/moto.py: {0}")]
    Moto(String),
    /// The template declares something the emulator cannot run.
    #[error("template.yaml: {0}")]
    Template(String),
    /// A function's binary is not built.
    #[error("{path} is missing: build the functions with `{command}`")]
    MissingBinary {
        /// Where it was looked for.
        path: PathBuf,
        /// The command that builds it.
        command: String,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// The cargo command that builds the four functions as the local stack runs them.
pub const BUILD_COMMAND: &str = "cargo build --profile lambda-local -p sundial-fn-api -p sundial-fn-tick -p sundial-fn-dispatch -p sundial-fn-notify";

/// Where the processes' output and the emulator's own lines go: one line each, labelled with
/// the instance (`DispatchFunction#2`) or the event source (`sqs:DispatchQueue`).
#[derive(Clone)]
pub struct Log {
    sink: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Log")
    }
}

impl Log {
    /// To standard error.
    pub fn stderr() -> Log {
        Log {
            sink: Arc::new(Mutex::new(Box::new(std::io::stderr()))),
        }
    }

    /// To a file, created or truncated.
    pub fn file(path: &Path) -> Result<Log, Error> {
        let file = std::fs::File::create(path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(Log {
            sink: Arc::new(Mutex::new(Box::new(file))),
        })
    }

    /// Writes one line (best effort: a full disk does not stop the stack).
    pub fn line(&self, label: &str, text: &str) {
        let now = chrono::Utc::now().format("%H:%M:%S%.3f");
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(sink, "{now} {label:>20} | {text}");
        let _ = sink.flush();
    }
}

/// How to start the local stack.
#[derive(Clone, Debug)]
pub struct Options {
    /// The repository: `template.yaml` and `infra/moto.py` are read from here.
    pub repo: PathBuf,
    /// Where the functions' binaries are (`target/lambda-local`).
    pub bin_dir: PathBuf,
    /// The API's loopback port (0: a free one).
    pub api_port: u16,
    /// Resource name prefix on moto.
    pub prefix: String,
    /// Template parameters instead of their defaults (`OutboundAllow=127.0.0.1`, …).
    pub parameters: Vec<(String, String)>,
    /// Whether the `Schedule` events fire by themselves (else only `POST /_local/tick`).
    pub schedules: bool,
    /// The concurrency of a function no event source mapping limits (the account's limit on
    /// AWS).
    pub default_concurrency: usize,
    /// Where output goes.
    pub log: Log,
    /// The Python that runs `infra/moto.py`, with moto and boto3 (`SUNDIAL_PYTHON`, else
    /// `python3`; the tests use the pinned environment `sundial_testkit::python` provisions).
    pub python: PathBuf,
}

impl Options {
    /// Defaults for the repository at `repo`: binaries in `repo/target/lambda-local` (or under
    /// `CARGO_TARGET_DIR`), a free port, the template's defaults, schedules on, output to stderr.
    pub fn new(repo: PathBuf) -> Options {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo.join("target"));
        Options {
            bin_dir: target.join("lambda-local"),
            repo,
            api_port: 0,
            prefix: "sundial".into(),
            parameters: Vec::new(),
            schedules: true,
            default_concurrency: 10,
            log: Log::stderr(),
            python: std::env::var_os("SUNDIAL_PYTHON")
                .filter(|v| !v.is_empty())
                .map_or_else(|| PathBuf::from("python3"), PathBuf::from),
        }
    }
}

/// The running stack. Dropping it stops everything (the processes are killed, moto sees its
/// standard input close); [`LocalStack::stop`] does it and waits.
pub struct LocalStack {
    /// The emulated API Gateway: `http://127.0.0.1:PORT`.
    pub api_url: String,
    /// moto's URL.
    pub moto_endpoint: String,
    /// The AWS client settings for moto and the globals' environment, as `infra/moto.py` printed.
    pub env: BTreeMap<String, String>,
    /// The resolved template.
    pub stack: Stack,
    /// The functions by logical id.
    pub functions: BTreeMap<String, Arc<Function>>,
    tasks: Vec<JoinHandle<()>>,
    moto: Child,
    aws_calls: Arc<calls::AwsCalls>,
    meter: Arc<sundial_meter::Meter>,
}

impl std::fmt::Debug for LocalStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStack")
            .field("api_url", &self.api_url)
            .field("moto_endpoint", &self.moto_endpoint)
            .finish_non_exhaustive()
    }
}

/// What the control routes and the gateway share.
struct Control {
    gateway: Arc<gateway::Gateway>,
    scheduled: Vec<(Arc<Function>, String)>,
    region: String,
    ticks: std::sync::atomic::AtomicU64,
}

impl LocalStack {
    /// Starts moto with the template's resources, the API Gateway emulator, the event sources
    /// and (lazily, at their first event) the functions' processes.
    pub async fn start(options: Options) -> Result<LocalStack, Error> {
        let log = options.log.clone();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.api_port))
            .await
            .map_err(|e| Error::io(format!("binding 127.0.0.1:{}", options.api_port), e))?;
        let address = listener
            .local_addr()
            .map_err(|e| Error::io("reading the API's address", e))?;
        let api_url = format!("http://{address}");

        let (moto, line) = start_moto(&options, &api_url).await?;
        let problems = checks::template(&line.stack);
        if !problems.is_empty() {
            return Err(Error::Template(problems.join("; ")));
        }
        let region = line.region.clone();
        let sqs = sqs_client(&line);

        let mut tasks = Vec::new();
        let aws_calls = Arc::new(calls::AwsCalls::default());
        // Every call goes function → its recorder → the capacity meter → moto.
        let meter = Arc::new(sundial_meter::Meter::new());
        let (metered, meter_task) = sundial_meter::proxy::start(&line.endpoint, Arc::clone(&meter))
            .await
            .map_err(|e| Error::io("starting the capacity meter", e))?;
        tasks.push(meter_task);
        let mut functions = BTreeMap::new();
        for (logical_id, spec) in &line.stack.functions {
            let Some(binary) = &spec.binary else {
                continue;
            };
            let path = options.bin_dir.join(binary);
            if !path.is_file() {
                return Err(Error::MissingBinary {
                    path,
                    command: BUILD_COMMAND.into(),
                });
            }
            for (name, why) in &spec.unresolved {
                log.line(
                    logical_id,
                    &format!("{name} is not set: only AWS can resolve it ({why})"),
                );
            }
            let log_format = spec
                .logging_config
                .get("LogFormat")
                .and_then(serde_json::Value::as_str);
            let memory = spec.memory.unwrap_or(128);
            let mut environment =
                runtime::reserved_environment(&spec.name, memory, &region, log_format);
            environment.extend(spec.environment.clone());
            for key in [
                "AWS_ENDPOINT_URL",
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
            ] {
                if let Some(value) = line.env.get(key) {
                    environment.insert(key.into(), value.clone());
                }
            }
            // What `LoggingConfig.ApplicationLogLevel` sets on AWS, from the host's environment
            // here: `SUNDIAL_LAMBDA_LOG_LEVEL=debug` shows each dispatch step in the stack's log.
            if let Ok(level) = std::env::var("SUNDIAL_LAMBDA_LOG_LEVEL") {
                environment.insert("AWS_LAMBDA_LOG_LEVEL".into(), level.to_uppercase());
            }
            let (recorder, task) =
                calls::start(logical_id, &metered, Arc::clone(&aws_calls)).await?;
            environment.insert("AWS_ENDPOINT_URL".into(), recorder);
            tasks.push(task);
            let mappings = spec.sqs_mappings(&line.stack)?;
            let concurrency = mappings
                .iter()
                .map(|m| usize::try_from(m.maximum_concurrency).unwrap_or(1000))
                .max()
                .unwrap_or(options.default_concurrency);
            let config = FunctionConfig {
                logical_id: logical_id.clone(),
                name: spec.name.clone(),
                binary: path,
                timeout: Duration::from_secs(spec.timeout.unwrap_or(3)),
                memory_mb: memory,
                concurrency,
                environment,
                region: region.clone(),
            };
            functions.insert(
                logical_id.clone(),
                Arc::new(Function::new(config, log.clone())),
            );
        }

        let mut scheduled = Vec::new();
        for (logical_id, spec) in &line.stack.functions {
            let Some(function) = functions.get(logical_id) else {
                continue;
            };
            for mapping in spec.sqs_mappings(&line.stack)? {
                let Some(queue) = line.stack.queues.get(&mapping.queue) else {
                    continue;
                };
                let poller = Arc::new(sources::SqsPoller {
                    function: Arc::clone(function),
                    queue_url: queue.url.clone(),
                    queue_arn: queue.arn.clone().unwrap_or_default(),
                    region: region.clone(),
                    sqs: sqs.clone(),
                    log: log.clone(),
                    mapping,
                });
                tasks.push(tokio::spawn(poller.run()));
            }
            for schedule in spec.schedules()? {
                let rule_arn = format!(
                    "arn:aws:events:{region}:123456789012:rule/{}-{}",
                    options.prefix, schedule.name
                );
                scheduled.push((Arc::clone(function), rule_arn.clone()));
                if options.schedules {
                    tasks.push(tokio::spawn(sources::schedule(
                        Arc::clone(function),
                        schedule.every,
                        rule_arn,
                        region.clone(),
                        spec.async_retries(),
                        log.clone(),
                    )));
                }
            }
        }

        let gateway = Arc::new(gateway::Gateway {
            routes: gateway::Routes::from_stack(&line.stack)?,
            functions: functions.clone(),
            domain: address.ip().to_string(),
            requests: std::sync::atomic::AtomicU64::new(0),
        });
        let control = Arc::new(Control {
            gateway: Arc::clone(&gateway),
            scheduled,
            region: region.clone(),
            ticks: std::sync::atomic::AtomicU64::new(0),
        });
        let app = Router::new()
            .route("/_local/tick", post(tick))
            .route("/_local/instances", get(instances))
            .with_state(Arc::clone(&control))
            .fallback_service(Router::new().fallback(gateway::handle).with_state(gateway));
        tasks.push(tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        }));
        log.line(
            "lambda-local",
            &format!(
                "API Gateway on {api_url}; moto on {}; functions {:?}, built for {} (the template says {:?})",
                line.endpoint,
                functions.keys().collect::<Vec<_>>(),
                std::env::consts::ARCH,
                line.stack
                    .functions
                    .values()
                    .flat_map(|f| f.architectures.iter())
                    .collect::<std::collections::BTreeSet<_>>(),
            ),
        );
        Ok(LocalStack {
            api_url,
            moto_endpoint: line.endpoint.clone(),
            env: line.env.clone(),
            stack: line.stack.clone(),
            functions,
            tasks,
            moto,
            aws_calls,
            meter,
        })
    }

    /// What the functions' AWS calls cost so far, as AWS bills them (`sundial-meter`).
    pub fn meter(&self) -> &sundial_meter::Meter {
        &self.meter
    }

    /// The AWS calls each function made so far, as IAM actions: function (logical id) → action →
    /// requests. Compare them with the template by [`checks::unauthorized`].
    pub fn aws_calls(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.aws_calls.snapshot()
    }

    /// An SQS client on moto, for tests and tools.
    pub fn sqs(&self) -> aws_sdk_sqs::Client {
        client_for(&self.moto_endpoint, self.env.get("AWS_REGION").cloned())
    }

    /// Stops the event sources, kills every process and stops moto.
    pub async fn stop(mut self) {
        for task in &self.tasks {
            task.abort();
        }
        for function in self.functions.values() {
            function.stop().await;
        }
        self.moto.stdin.take();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.moto.wait()).await;
        let _ = self.moto.start_kill();
    }
}

impl Drop for LocalStack {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let _ = self.moto.start_kill();
    }
}

/// Starts `infra/moto.py up --describe` and reads its line: moto runs until the returned process
/// is dropped or its standard input closed.
pub async fn start_moto(options: &Options, api_url: &str) -> Result<(Child, MotoLine), Error> {
    let script = options.repo.join("infra/moto.py");
    let mut command = Command::new(&options.python);
    command
        .arg(&script)
        .args(["up", "--describe", "--prefix", &options.prefix])
        .args(["--api-endpoint", api_url])
        .arg("--template")
        .arg(options.repo.join("template.yaml"));
    for (name, value) in &options.parameters {
        command.arg("--parameter").arg(format!("{name}={value}"));
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            Error::io(
                format!("running {} {}", options.python.display(), script.display()),
                e,
            )
        })?;
    if let Some(stderr) = child.stderr.take() {
        let log = options.log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                log.line("moto", &line);
            }
        });
    }
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::Moto("no standard output".into()))?;
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .await
        .map_err(|e| Error::io("reading infra/moto.py's line", e))?;
    let line: MotoLine = serde_json::from_str(&first).map_err(|e| {
        Error::Moto(format!(
            "it did not print its line ({e}); is moto installed? pip install 'moto[server]==5.2.1' 'boto3==1.43.11' (its own messages are in the log)"
        ))
    })?;
    Ok((child, line))
}

fn sqs_client(line: &MotoLine) -> aws_sdk_sqs::Client {
    client_for(&line.endpoint, Some(line.region.clone()))
}

/// An SQS client on moto at `endpoint` (test credentials, the functions' HTTPS client).
pub fn client_for(endpoint: &str, region: Option<String>) -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_sdk_sqs::config::Region::new(
            region.unwrap_or_else(|| "us-east-1".into()),
        ))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "moto",
        ))
        .http_client(sundial_aws::runtime::http_client())
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// `POST /_local/tick`: every scheduled function invoked now, synchronously; their answers.
async fn tick(State(control): State<Arc<Control>>) -> Response {
    let mut answers = Vec::new();
    for (function, rule_arn) in &control.scheduled {
        let number = control
            .ticks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1_000_000;
        let event = sources::scheduled_event(rule_arn, &control.region, number);
        // Spawned: a caller that goes away does not cut the invocation short.
        let invoked = Arc::clone(function);
        let invocation =
            tokio::spawn(async move { invoked.invoke(event.to_string().into_bytes()).await });
        let answer = match invocation.await {
            Ok(answer) => answer,
            Err(e) => Err(runtime::InvokeError::Exited(e.to_string())),
        };
        match answer {
            Ok(body) => answers.push(
                serde_json::from_slice(&body)
                    .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(&body).into())),
            ),
            Err(e) => {
                return (
                    StatusCode::BAD_GATEWAY,
                    axum::Json(serde_json::json!({"function": function.config.logical_id, "error": e.to_string()})),
                )
                    .into_response()
            }
        }
    }
    axum::Json(serde_json::json!({ "answers": answers })).into_response()
}

/// `GET /_local/instances`: every function's live instances, with their process ids.
async fn instances(State(control): State<Arc<Control>>) -> Response {
    let all: Vec<runtime::InstanceInfo> = control
        .gateway
        .functions
        .values()
        .flat_map(|f| f.instances())
        .collect();
    axum::Json(all).into_response()
}
