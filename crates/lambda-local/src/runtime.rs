//! The Lambda Runtime API, and the instances of a function behind it.
//!
//! Every instance is one process of the function's binary, started unmodified with the
//! environment Lambda gives it (the template's variables and Lambda's reserved ones, nothing of
//! ours) and `AWS_LAMBDA_RUNTIME_API` pointing at a loopback server of its own: the runtime
//! client polls `GET /2018-06-01/runtime/invocation/next` there and answers on
//! `…/{requestId}/response` or `…/{requestId}/error`, as in a Lambda sandbox. One server per
//! instance keeps "one event per instance at a time" true by construction.
//!
//! A function holds at most its concurrency limit of busy instances; an invocation waits for a
//! free one, or starts one (a cold start). An invocation that outlives the function's `Timeout`
//! gets its process killed with SIGKILL, as Lambda does, and fails; the next invocation starts a
//! fresh process. A process that dies in the middle of an invocation (a crash, `kill -9` from
//! outside) fails that invocation the same way.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tokio::task::JoinHandle;

use crate::Error;

/// Where the instances' Runtime APIs listen: not 127.0.0.1, because the functions' HTTP client
/// refuses every address of `AWS_LAMBDA_RUNTIME_API`'s host (on Lambda, 127.0.0.1:9001), and
/// jobs of the local stack call services on 127.0.0.1. Linux routes all of 127.0.0.0/8 to the
/// loopback interface.
pub const RUNTIME_API_HOST: &str = "127.0.0.2";

/// How a function is run.
#[derive(Clone, Debug)]
pub struct FunctionConfig {
    /// The template's logical id (`DispatchFunction`).
    pub logical_id: String,
    /// Its name (`sundial-dispatch-function`).
    pub name: String,
    /// The binary to run.
    pub binary: PathBuf,
    /// `Timeout`.
    pub timeout: Duration,
    /// `MemorySize`, in MB: passed on as Lambda does, not enforced.
    pub memory_mb: u64,
    /// At most this many instances at once.
    pub concurrency: usize,
    /// The whole environment of the process.
    pub environment: BTreeMap<String, String>,
    /// The region, for the function's ARN.
    pub region: String,
}

/// Why an invocation failed.
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    /// The function answered on `/error`: its handler returned an error.
    #[error("the function reported an error: {0}")]
    Function(String),
    /// The invocation outlived the function's timeout; its process was killed.
    #[error("task timed out after {0:?}; the process was killed (SIGKILL)")]
    Timeout(Duration),
    /// The process exited (or was killed) before answering.
    #[error("the process exited before answering: {0}")]
    Exited(String),
    /// The process could not be started.
    #[error("starting the process: {0}")]
    Start(String),
}

/// What an instance is doing, for `GET /_local/instances` (tests kill a busy one).
#[derive(Clone, Debug, serde::Serialize)]
pub struct InstanceInfo {
    /// The function's logical id.
    pub function: String,
    /// The instance's number, from 1.
    pub instance: u32,
    /// The process id.
    pub pid: Option<u32>,
    /// Whether it is running an invocation.
    pub busy: bool,
    /// The invocations it has answered.
    pub invocations: u64,
}

/// A function: its instances, its limit and where its output goes.
pub struct Function {
    /// How it runs.
    pub config: FunctionConfig,
    idle: Mutex<Vec<Instance>>,
    limit: Arc<Semaphore>,
    instances: AtomicU32,
    requests: AtomicU64,
    live: Arc<Mutex<BTreeMap<u32, InstanceInfo>>>,
    log: crate::Log,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Function {
    /// A function with no instance yet.
    pub fn new(config: FunctionConfig, log: crate::Log) -> Function {
        let limit = Arc::new(Semaphore::new(config.concurrency.max(1)));
        Function {
            config,
            idle: Mutex::new(Vec::new()),
            limit,
            instances: AtomicU32::new(0),
            requests: AtomicU64::new(0),
            live: Arc::new(Mutex::new(BTreeMap::new())),
            log,
        }
    }

    /// The instances alive now.
    pub fn instances(&self) -> Vec<InstanceInfo> {
        lock(&self.live).values().cloned().collect()
    }

    /// Invokes the function with `payload` and waits for its answer: a free instance takes it
    /// (or a new one, within the concurrency limit), under the function's timeout.
    pub async fn invoke(&self, payload: Vec<u8>) -> Result<Bytes, InvokeError> {
        let _permit = Arc::clone(&self.limit)
            .acquire_owned()
            .await
            .map_err(|e| InvokeError::Start(e.to_string()))?;
        let reused = {
            let mut idle = lock(&self.idle);
            let mut found = None;
            while let Some(instance) = idle.pop() {
                if instance.alive() {
                    found = Some(instance);
                    break;
                }
            }
            found
        };
        let mut instance = match reused {
            Some(instance) => instance,
            None => self
                .start()
                .map_err(|e| InvokeError::Start(e.to_string()))?,
        };
        let number = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let request_id = format!("{:08x}-0000-4000-8000-{:012x}", std::process::id(), number);
        let timeout = self.config.timeout;
        let deadline_ms = chrono::Utc::now().timestamp_millis()
            + i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX / 2);
        let (reply, answer) = oneshot::channel();
        self.set_busy(instance.number, true);
        let sent = instance
            .invocations
            .send(Invocation {
                request_id: request_id.clone(),
                payload,
                deadline_ms,
                reply,
            })
            .await;
        let outcome = if sent.is_err() {
            Err(InvokeError::Exited("its runtime API is gone".into()))
        } else {
            let mut exited = instance.exited.clone();
            tokio::select! {
                answer = answer => match answer {
                    Ok(Reply::Response(body)) => Ok(body),
                    Ok(Reply::Error(body)) => Err(InvokeError::Function(String::from_utf8_lossy(&body).into_owned())),
                    Err(_) => Err(InvokeError::Exited("the runtime API dropped the invocation".into())),
                },
                () = tokio::time::sleep(timeout) => {
                    instance.kill().await;
                    Err(InvokeError::Timeout(timeout))
                },
                status = wait_exit(&mut exited) => Err(InvokeError::Exited(status)),
            }
        };
        self.log.line(
            &format!("{}#{}", self.config.logical_id, instance.number),
            &match &outcome {
                Ok(_) => format!("invocation {request_id}: answered"),
                Err(e) => format!("invocation {request_id}: {e}"),
            },
        );
        match &outcome {
            Ok(_) | Err(InvokeError::Function(_)) if instance.alive() => {
                instance.invocations_done += 1;
                if let Some(info) = lock(&self.live).get_mut(&instance.number) {
                    info.busy = false;
                    info.invocations = instance.invocations_done;
                }
                lock(&self.idle).push(instance);
            }
            _ => {
                instance.kill().await;
                lock(&self.live).remove(&instance.number);
            }
        }
        outcome
    }

    /// Kills every instance (at shutdown).
    pub async fn stop(&self) {
        let idle: Vec<Instance> = std::mem::take(&mut *lock(&self.idle));
        for instance in idle {
            instance.kill().await;
        }
        lock(&self.live).clear();
    }

    fn set_busy(&self, number: u32, busy: bool) {
        if let Some(info) = lock(&self.live).get_mut(&number) {
            info.busy = busy;
        }
    }

    /// A new instance: its runtime API on a loopback port, its process.
    fn start(&self) -> Result<Instance, Error> {
        let number = self.instances.fetch_add(1, Ordering::Relaxed) + 1;
        let config = &self.config;
        let listener = std::net::TcpListener::bind((RUNTIME_API_HOST, 0))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| Error::io("binding a runtime API port", e))?;
        let address = listener
            .local_addr()
            .map_err(|e| Error::io("reading the runtime API's address", e))?;
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| Error::io("serving the runtime API", e))?;
        let (invocations, queue) = mpsc::channel(1);
        let api = Arc::new(RuntimeApi {
            queue: tokio::sync::Mutex::new(queue),
            pending: Mutex::new(HashMap::new()),
            function_arn: format!(
                "arn:aws:lambda:{}:123456789012:function:{}",
                config.region, config.name
            ),
            label: format!("{}#{number}", config.logical_id),
            log: self.log.clone(),
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router(api)).await;
        });
        let label = format!("{}#{number}", config.logical_id);
        let mut command = Command::new(&config.binary);
        command
            .env_clear()
            .envs(&config.environment)
            .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
            .env(
                "AWS_LAMBDA_LOG_STREAM_NAME",
                format!("2026/01/01/[$LATEST]local{number:04}"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            server.abort();
            Error::io(format!("starting {}", config.binary.display()), e)
        })?;
        let pid = child.id();
        if let Some(out) = child.stdout.take() {
            forward(out, label.clone(), self.log.clone());
        }
        if let Some(err) = child.stderr.take() {
            forward(err, label.clone(), self.log.clone());
        }
        let (kill, mut killed) = mpsc::channel::<()>(1);
        let (exit_tx, exited) = watch::channel(None);
        let log = self.log.clone();
        let live = Arc::clone(&self.live);
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                _ = killed.recv() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let text = match status {
                Ok(status) => status.to_string(),
                Err(e) => format!("waiting for it: {e}"),
            };
            log.line(&label, &format!("process {pid:?} ended: {text}"));
            lock(&live).remove(&number);
            let _ = exit_tx.send(Some(text));
        });
        self.log.line(
            &format!("{}#{number}", config.logical_id),
            &format!(
                "cold start: {} (pid {pid:?}), runtime API {address}",
                config.binary.display()
            ),
        );
        lock(&self.live).insert(
            number,
            InstanceInfo {
                function: config.logical_id.clone(),
                instance: number,
                pid,
                busy: false,
                invocations: 0,
            },
        );
        Ok(Instance {
            number,
            invocations,
            kill,
            exited,
            server,
            invocations_done: 0,
        })
    }
}

/// Waits until the process has exited; its status.
async fn wait_exit(exited: &mut watch::Receiver<Option<String>>) -> String {
    match exited.wait_for(Option::is_some).await {
        Ok(status) => status.clone().unwrap_or_default(),
        Err(_) => "unknown".into(),
    }
}

/// One process and its runtime API.
struct Instance {
    number: u32,
    invocations: mpsc::Sender<Invocation>,
    kill: mpsc::Sender<()>,
    exited: watch::Receiver<Option<String>>,
    server: JoinHandle<()>,
    invocations_done: u64,
}

impl Instance {
    fn alive(&self) -> bool {
        self.exited.borrow().is_none()
    }

    /// SIGKILL, and wait until it is gone.
    async fn kill(&self) {
        let _ = self.kill.try_send(());
        let mut exited = self.exited.clone();
        let _ = tokio::time::timeout(Duration::from_secs(10), wait_exit(&mut exited)).await;
        self.server.abort();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.kill.try_send(());
        self.server.abort();
    }
}

struct Invocation {
    request_id: String,
    payload: Vec<u8>,
    deadline_ms: i64,
    reply: oneshot::Sender<Reply>,
}

enum Reply {
    Response(Bytes),
    Error(Bytes),
}

/// The Runtime API one instance talks to.
struct RuntimeApi {
    queue: tokio::sync::Mutex<mpsc::Receiver<Invocation>>,
    pending: Mutex<HashMap<String, oneshot::Sender<Reply>>>,
    function_arn: String,
    label: String,
    log: crate::Log,
}

fn router(api: Arc<RuntimeApi>) -> Router {
    Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(response),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
        .route("/2018-06-01/runtime/init/error", post(init_error))
        .layer(axum::extract::DefaultBodyLimit::max(6 * 1024 * 1024))
        .with_state(api)
}

/// The next event, when there is one (the runtime client long-polls here between events).
async fn next(State(api): State<Arc<RuntimeApi>>) -> Response {
    let invocation = api.queue.lock().await.recv().await;
    let Some(invocation) = invocation else {
        return StatusCode::GONE.into_response();
    };
    lock(&api.pending).insert(invocation.request_id.clone(), invocation.reply);
    let mut headers = HeaderMap::new();
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    };
    set("lambda-runtime-aws-request-id", invocation.request_id);
    set(
        "lambda-runtime-deadline-ms",
        invocation.deadline_ms.to_string(),
    );
    set(
        "lambda-runtime-invoked-function-arn",
        api.function_arn.clone(),
    );
    set(
        "lambda-runtime-trace-id",
        "Root=1-00000000-000000000000000000000000;Sampled=0".into(),
    );
    set("content-type", "application/json".into());
    (StatusCode::OK, headers, invocation.payload).into_response()
}

async fn response(
    State(api): State<Arc<RuntimeApi>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    answer(&api, &id, Reply::Response(body))
}

async fn error(
    State(api): State<Arc<RuntimeApi>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    answer(&api, &id, Reply::Error(body))
}

async fn init_error(State(api): State<Arc<RuntimeApi>>, body: Bytes) -> Response {
    api.log.line(
        &api.label,
        &format!("init error: {}", String::from_utf8_lossy(&body)),
    );
    (StatusCode::ACCEPTED, r#"{"status":"OK"}"#).into_response()
}

fn answer(api: &RuntimeApi, id: &str, reply: Reply) -> Response {
    match lock(&api.pending).remove(id) {
        Some(waiting) => {
            let _ = waiting.send(reply);
            (StatusCode::ACCEPTED, r#"{"status":"OK"}"#).into_response()
        }
        None => (
            StatusCode::BAD_REQUEST,
            r#"{"errorMessage":"Invalid request ID","errorType":"InvalidRequestID"}"#,
        )
            .into_response(),
    }
}

/// Copies a process's output to the log, line by line, under its instance's label.
fn forward<R: AsyncRead + Unpin + Send + 'static>(stream: R, label: String, log: crate::Log) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            log.line(&label, &line);
        }
    });
}

/// A poisoned lock still holds consistent data here: every critical section is a plain update.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The environment Lambda gives every process of a function besides the template's variables
/// (`AWS_LAMBDA_RUNTIME_API` and the log stream are per instance).
pub fn reserved_environment(
    config_name: &str,
    memory_mb: u64,
    region: &str,
    log_format: Option<&str>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let mut set = |k: &str, v: String| {
        env.insert(k.to_owned(), v);
    };
    set("AWS_LAMBDA_FUNCTION_NAME", config_name.to_owned());
    set("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into());
    set("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", memory_mb.to_string());
    set(
        "AWS_LAMBDA_LOG_GROUP_NAME",
        format!("/aws/lambda/{config_name}"),
    );
    set("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".into());
    set("AWS_REGION", region.to_owned());
    set("AWS_DEFAULT_REGION", region.to_owned());
    set("_HANDLER", "bootstrap".into());
    set("LAMBDA_TASK_ROOT", "/var/task".into());
    set("LAMBDA_RUNTIME_DIR", "/var/runtime".into());
    set("TZ", ":UTC".into());
    set("LANG", "en_US.UTF-8".into());
    set("PATH", "/usr/local/bin:/usr/bin/:/bin:/opt/bin".to_owned());
    if let Some(format) = log_format {
        set("AWS_LAMBDA_LOG_FORMAT", format.to_owned());
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function in Python speaking the Runtime API: echoes its event, sleeps 0.5 s first for
    /// `"slow"`, never answers `"hang"`.
    const FUNCTION: &str = r#"
import os, time, urllib.request
api = os.environ["AWS_LAMBDA_RUNTIME_API"]
while True:
    r = urllib.request.urlopen(f"http://{api}/2018-06-01/runtime/invocation/next")
    rid = r.headers["lambda-runtime-aws-request-id"]
    body = r.read()
    if body == b'"hang"':
        time.sleep(1000)
    if body == b'"slow"':
        time.sleep(0.5)
    if body == b'"fail"':
        url = f"http://{api}/2018-06-01/runtime/invocation/{rid}/error"
    else:
        url = f"http://{api}/2018-06-01/runtime/invocation/{rid}/response"
    urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"))
"#;

    fn function(dir: &std::path::Path, timeout: Duration, concurrency: usize) -> Option<Function> {
        let python = std::process::Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()?;
        let python = String::from_utf8(python.stdout).ok()?.trim().to_owned();
        let script = dir.join("function.py");
        std::fs::write(&script, FUNCTION).ok()?;
        let binary = dir.join("bootstrap");
        let launcher = format!("#!/bin/sh\nexec {python} {}\n", script.display());
        std::fs::write(&binary, launcher).ok()?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).ok()?;
        let config = FunctionConfig {
            logical_id: "EchoFunction".into(),
            name: "echo".into(),
            binary,
            timeout,
            memory_mb: 128,
            concurrency,
            environment: reserved_environment("echo", 128, "us-east-1", None),
            region: "us-east-1".into(),
        };
        let log = crate::Log::file(&dir.join("log")).ok()?;
        Some(Function::new(config, log))
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("sundial-runtime-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_instance_takes_one_event_after_another_and_is_killed_at_its_timeout() {
        let dir = temp_dir("timeout");
        let Some(echo) = function(&dir, Duration::from_secs(2), 4) else {
            assert!(
                !sundial_testkit::moto::required(),
                "python3 is required here (CI)"
            );
            sundial_testkit::skipped("a lambda-local runtime test: no python3");
            return;
        };
        let answer = echo.invoke(br#""hi""#.to_vec()).await.unwrap();
        assert_eq!(&answer[..], br#""hi""#);
        let answer = echo.invoke(br#""again""#.to_vec()).await.unwrap();
        assert_eq!(&answer[..], br#""again""#);
        let instances = echo.instances();
        assert_eq!(
            instances.len(),
            1,
            "a warm instance is reused: {instances:?}"
        );
        assert_eq!(instances[0].invocations, 2);
        let pid = instances[0].pid;

        let error = echo.invoke(br#""fail""#.to_vec()).await.unwrap_err();
        assert!(matches!(error, InvokeError::Function(_)), "{error}");
        assert_eq!(echo.instances()[0].pid, pid, "an error keeps the instance");

        let started = std::time::Instant::now();
        let error = echo.invoke(br#""hang""#.to_vec()).await.unwrap_err();
        assert!(matches!(error, InvokeError::Timeout(_)), "{error}");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(2) && waited < Duration::from_secs(5),
            "{waited:?}"
        );
        assert!(
            echo.instances().is_empty(),
            "the process is gone: {:?}",
            echo.instances()
        );

        let answer = echo.invoke(br#""after""#.to_vec()).await.unwrap();
        assert_eq!(&answer[..], br#""after""#);
        let instances = echo.instances();
        assert_eq!(instances.len(), 1);
        assert_ne!(instances[0].pid, pid, "a new process after the kill");
        echo.stop().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_concurrency_limit_queues_events() {
        let dir = temp_dir("concurrency");
        let Some(slow) = function(&dir, Duration::from_secs(10), 1) else {
            assert!(
                !sundial_testkit::moto::required(),
                "python3 is required here (CI)"
            );
            sundial_testkit::skipped("a lambda-local runtime test: no python3");
            return;
        };
        let slow = Arc::new(slow);
        let started = std::time::Instant::now();
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..3 {
            let slow = Arc::clone(&slow);
            calls.spawn(async move { slow.invoke(br#""slow""#.to_vec()).await });
        }
        while let Some(answer) = calls.join_next().await {
            assert!(answer.unwrap().is_ok());
        }
        assert!(
            started.elapsed() >= Duration::from_millis(1500),
            "one at a time: {:?}",
            started.elapsed()
        );
        assert_eq!(slow.instances().len(), 1, "one instance at most");
        slow.stop().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
