//! Helpers shared by the end-to-end tests of `sundial serve` (`serve.rs`, `crash.rs`, `shield.rs`):
//! the real binary started on a free loopback port with its files in a [`TempDir`], and a
//! hand-written HTTP/1.1 client. The temp dir and the job service on loopback the engine calls
//! (`Target`) are `sundial-testkit`'s.
//!
//! The client is a few lines on purpose: cli tests have no HTTP client crate, and a hand-written one
//! also shows exactly what goes over the wire (`Connection: close`, one request per connection, the
//! body read by its `Content-Length`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sundial_testkit::TempDir;

/// Where a server's files live, in a [`TempDir`]: `data/` for `--data` and one `*.log` per start
/// for its stderr.
pub(crate) trait ServerFiles {
    /// The data directory given to `--data`.
    fn data(&self) -> PathBuf;
    /// Every server log written in this directory (one per start), oldest first.
    fn logs(&self) -> String;
}

impl ServerFiles for TempDir {
    fn data(&self) -> PathBuf {
        self.join("data")
    }

    fn logs(&self) -> String {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.path())
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "log"))
                    .collect()
            })
            .unwrap_or_default();
        paths.sort();
        paths
            .iter()
            .map(|p| {
                format!(
                    "==== {}\n{}",
                    p.display(),
                    std::fs::read_to_string(p).unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A running `sundial serve`. Dropping it kills the process (SIGKILL) and reaps it, so a failing
/// test never leaks one.
pub(crate) struct Server {
    pub child: Option<Child>,
    pub addr: String,
    pub log: PathBuf,
}

/// Starts `sundial serve --addr 127.0.0.1:0 --data DIR/data` with `extra` flags and `env`, and
/// waits for the line that names the port.
pub(crate) fn start(dir: &TempDir, extra: &[&str], env: &[(&str, &str)]) -> Server {
    start_command(dir, Command::new(env!("CARGO_BIN_EXE_sundial")), extra, env)
}

/// [`start`] with at most `nofile` open files (`RLIMIT_NOFILE`, set by the shell's `ulimit -n`
/// before it execs the server, so the process is still the server itself).
pub(crate) fn start_with_open_files(
    dir: &TempDir,
    nofile: u32,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Server {
    let mut command = Command::new("sh");
    command.args([
        "-c",
        &format!("ulimit -n {nofile} && exec \"$0\" \"$@\""),
        env!("CARGO_BIN_EXE_sundial"),
    ]);
    start_command(dir, command, extra, env)
}

/// Runs `sundial serve --addr 127.0.0.1:0 --data DIR/data` with `extra` flags and `env` until it
/// exits (at most 10 s): its exit code, stdout and stderr. For starts that must be refused.
pub(crate) fn refused_start(
    dir: &TempDir,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sundial"));
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(dir.data())
        .args(extra)
        .env_remove("SUNDIAL_API_TOKEN")
        .env_remove("SUNDIAL_API_TOKENS")
        .env_remove("SUNDIAL_SIGNING_SECRET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("start sundial serve");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sundial serve {extra:?} kept running");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    let _ = child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout);
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr);
    (status.code(), stdout, stderr)
}

fn start_command(
    dir: &TempDir,
    mut command: Command,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Server {
    let log = dir.join(format!(
        "server-{}.log",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let stderr = std::fs::File::create(&log).expect("create the server log");
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(dir.data())
        .args(extra)
        .env_remove("SUNDIAL_API_TOKEN")
        .env_remove("SUNDIAL_API_TOKENS")
        .env_remove("SUNDIAL_DEBUG_MODE")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("start sundial serve");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut server = Server {
        child: Some(child),
        addr: String::new(),
        log,
    };
    // Read the first line on a thread so a server that never prints fails the test instead of
    // hanging it; the thread then drains stdout until the server exits.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line);
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("no listening line in 30 s; log:\n{}", server.log_text()));
    let addr = line
        .trim_end()
        .strip_prefix("sundial listening on http://")
        .unwrap_or_else(|| {
            panic!(
                "unexpected first line {line:?}; log:\n{}",
                server.log_text()
            )
        });
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_ne!(addr, "127.0.0.1:0", "the real port is printed");
    server.addr = addr.to_string();
    server
}

impl Server {
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends SIGTERM (through `kill`, as libc is not a dependency) and waits up to 5 s for the exit.
    pub(crate) fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
        let mut child = self.child.take().expect("running");
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = child.try_wait().expect("wait for the server") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the server did not exit within 5 s of SIGTERM; log:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A crash: SIGKILL (`Child::kill` on Unix), no chance to finish a write or a request, then
    /// reaps the process. Returns its exit status, which names the signal.
    pub(crate) fn kill(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        child.kill().expect("SIGKILL the server");
        child.wait().expect("reap the server")
    }

    /// `method path` with a JSON body (or none), no extra headers.
    pub(crate) fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let bytes = body.map(|b| serde_json::to_vec(b).expect("encode JSON"));
        self.send(method, path, &[], bytes.as_deref())
    }

    /// One request over a fresh connection: `Connection: close`, the body's `Content-Length`, and
    /// `headers`. Reads the status line, the headers and exactly `Content-Length` bytes of body.
    pub(crate) fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Reply {
        request(&self.addr, method, path, headers, body).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Every execution of `job_id`, following `nextCursor`, newest first.
    pub(crate) fn executions(&self, job_id: &str) -> Vec<Value> {
        let mut all = Vec::new();
        let mut path = format!("/jobs/{job_id}/executions?limit=1000");
        loop {
            let page = self.call("GET", &path, None);
            assert_eq!(page.status, 200, "{:?}", page.body);
            all.extend(
                page.body["executions"]
                    .as_array()
                    .expect("executions")
                    .iter()
                    .cloned(),
            );
            match page.body["nextCursor"].as_str() {
                Some(cursor) => {
                    path = format!("/jobs/{job_id}/executions?limit=1000&cursor={cursor}")
                }
                None => return all,
            }
        }
    }
}

/// One request to `addr` over a fresh connection (see [`Server::send`]). `Err` when the connection
/// fails or the answer is cut short, as when the server dies: a client that retries on errors is
/// built on this.
pub(crate) fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Reply, String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{method} {path}: {what}: {e}");
    let mut stream = TcpStream::connect(addr).map_err(|e| fail("connecting", &e))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    stream
        .set_write_timeout(Some(Duration::from_secs(30)))
        .expect("write timeout");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body.unwrap_or_default());
    // A server may answer (413) and close before reading a large body; the answer is still
    // readable, so a failed write is not an error here.
    let _ = stream.write_all(&request);
    let _ = stream.flush();

    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    let n = reader
        .read_line(&mut status_line)
        .map_err(|e| fail("reading the status line", &e))?;
    if n == 0 {
        return Err(fail("reading the status line", &"connection closed"));
    }
    let mut parts = status_line.split_whitespace();
    assert_eq!(
        parts.next(),
        Some("HTTP/1.1"),
        "status line {status_line:?}"
    );
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let mut response_headers = HashMap::new();
    loop {
        let mut line = String::new();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| fail("reading a header line", &e))?;
        if n == 0 {
            return Err(fail("reading a header line", &"connection closed"));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("malformed header {line:?}"));
        response_headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    assert!(
        !response_headers.contains_key("transfer-encoding"),
        "{method} {path}: JSON answers carry a Content-Length, not chunks"
    );
    let length: usize = response_headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{method} {path}: no Content-Length in {response_headers:?}"));
    let mut bytes = vec![0; length];
    reader
        .read_exact(&mut bytes)
        .map_err(|e| fail(&format!("reading {length} body bytes"), &e))?;
    let text = String::from_utf8(bytes).expect("UTF-8 body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{method} {path}: body is not JSON ({e}): {text}"))
    };
    Ok(Reply {
        status,
        headers: response_headers,
        body,
    })
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A response: status, headers (lower-case names) and the JSON body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Reply {
    /// Asserts the docs/api.md success envelope, `{"resp_code": 200, "resp_msg": null}`, possibly
    /// with more fields beside it.
    pub(crate) fn ok_envelope(&self) -> &Value {
        assert_eq!(self.status, 200, "{:?}", self.body);
        assert_eq!(self.body["resp_code"], 200, "{:?}", self.body);
        assert_eq!(self.body["resp_msg"], Value::Null, "{:?}", self.body);
        &self.body
    }

    /// Asserts an error envelope with `status` as both HTTP status and `resp_code`; returns the
    /// message.
    pub(crate) fn error(&self, status: u16) -> &str {
        assert_eq!(self.status, status, "{:?}", self.body);
        assert_eq!(self.body["resp_code"], status, "{:?}", self.body);
        assert_eq!(
            self.body.as_object().map(|o| o.len()),
            Some(2),
            "an error is only the envelope: {:?}",
            self.body
        );
        self.body["resp_msg"]
            .as_str()
            .unwrap_or_else(|| panic!("resp_msg is a message: {:?}", self.body))
    }
}

/// The final execution states.
pub(crate) const FINAL_STATES: [&str; 4] = ["Succeeded", "Terminated", "Cancelled", "Skipped"];

/// Whether an execution (as JSON) is in a final state.
pub(crate) fn is_final(execution: &Value) -> bool {
    FINAL_STATES.contains(&execution["state"].as_str().unwrap_or(""))
}

/// Polls an execution until it reaches a final state (at most 20 s).
pub(crate) fn wait_final(server: &Server, execution_id: &str) -> Value {
    wait_final_within(server, execution_id, Duration::from_secs(20))
}

/// Polls an execution until it reaches a final state (at most `limit`).
pub(crate) fn wait_final_within(server: &Server, execution_id: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let execution = server
            .call("GET", &format!("/executions/{execution_id}"), None)
            .body;
        if is_final(&execution) || Instant::now() > deadline {
            return execution;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
