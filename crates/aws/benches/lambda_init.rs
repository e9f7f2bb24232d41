//! Lambda binary size and cold-start time: how long each function takes from process start to its
//! first poll of the Lambda runtime API, measured against a local stand-in for that API.
//!
//! ```text
//! cargo build --release -p sundial-fn-api -p sundial-fn-tick -p sundial-fn-dispatch -p sundial-fn-notify
//! cargo bench -p sundial-aws --bench lambda_init
//! ```
//!
//! For each binary in target/release it prints the file size, then starts it `RUNS` times with the
//! environment template.yaml gives it (dummy AWS credentials, no network: building the clients makes
//! no request), accepts its `GET /2018-06-01/runtime/invocation/next`, and records the time from
//! spawn to that request and the process's peak RSS (VmHWM) at that point. Medians and maxima.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 25;
const FUNCTIONS: [&str; 4] = ["api", "tick", "dispatch", "notify"];

fn main() {
    let release = target_dir().join("release");
    println!("function  size_bytes  size_MiB  init_p50_ms  init_max_ms  rss_p50_MiB");
    for name in FUNCTIONS {
        let binary = release.join(name);
        let Ok(meta) = std::fs::metadata(&binary) else {
            println!(
                "{name}: {} missing — build it first (see the header of this file)",
                binary.display()
            );
            continue;
        };
        let mut inits = Vec::new();
        let mut rss = Vec::new();
        for _ in 0..RUNS {
            match cold_start(&binary) {
                Ok((init, hwm_kb)) => {
                    inits.push(init.as_secs_f64() * 1000.0);
                    rss.push(hwm_kb as f64 / 1024.0);
                }
                Err(e) => {
                    println!("{name}: {e}");
                    break;
                }
            }
        }
        if inits.is_empty() {
            continue;
        }
        println!(
            "{name:<9} {:>10}  {:>7.2}  {:>11.2}  {:>11.2}  {:>10.1}",
            meta.len(),
            meta.len() as f64 / 1_048_576.0,
            median(&mut inits),
            inits.iter().cloned().fold(0.0, f64::max),
            median(&mut rss),
        );
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Starts the binary against a fresh runtime-API listener and waits for its first poll.
fn cold_start(binary: &PathBuf) -> Result<(Duration, u64), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let api = listener.local_addr().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut child = Command::new(binary)
        .env_clear()
        .envs(lambda_environment(&api.to_string()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawning: {e}"))?;
    listener.set_nonblocking(false).map_err(|e| e.to_string())?;
    let (stream, _) = listener.accept().map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let init = started.elapsed();
    let hwm = peak_rss_kb(child.id()).unwrap_or(0);
    let _ = child.kill();
    let _ = child.wait();
    if !line.starts_with("GET /2018-06-01/runtime/invocation/next") {
        return Err(format!("unexpected first request: {line:?}"));
    }
    Ok((init, hwm))
}

fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn lambda_environment(runtime_api: &str) -> Vec<(String, String)> {
    [
        ("AWS_LAMBDA_RUNTIME_API", runtime_api),
        ("AWS_LAMBDA_FUNCTION_NAME", "sundial-bench"),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/sundial-bench"),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "bench"),
        ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_SESSION_TOKEN", "test"),
        ("SUNDIAL_TABLE", "sundial"),
        (
            "SUNDIAL_DISPATCH_QUEUE_URL",
            "https://sqs.us-east-1.amazonaws.com/123456789012/dispatch",
        ),
        (
            "SUNDIAL_NOTIFY_QUEUE_URL",
            "https://sqs.us-east-1.amazonaws.com/123456789012/notify",
        ),
        ("SUNDIAL_EVENT_BUS", "sundial-events"),
        ("SUNDIAL_PUBLIC_URL", "https://api.example.test"),
        (
            "SUNDIAL_SIGNING_SECRET",
            "bench-secret-of-at-least-thirty-two-bytes",
        ),
        ("RUST_LOG", "info"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}
