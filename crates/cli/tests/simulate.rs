//! `sundial job simulate` end to end: the real `sundial` binary against a real `sundial serve` on a
//! loopback port, which simulates the job (`POST /jobs/simulate`) without storing or calling
//! anything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};

use serde_json::Value;

use common::{start, Server};
use sundial_testkit::TempDir;

/// Runs `sundial --server URL ARGS` against `server`: exit code, stdout, stderr.
fn cli(server: &Server, args: &[&str]) -> (i32, String, String) {
    let url = format!("http://{}", server.addr);
    let out = Command::new(env!("CARGO_BIN_EXE_sundial"))
        .arg("--server")
        .arg(&url)
        .args(args)
        .env_remove("SUNDIAL_SERVER")
        .env_remove("SUNDIAL_API_TOKEN")
        .env_remove("SUNDIAL_AUTH")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run sundial");
    (
        out.status.code().expect("an exit code"),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

const JOB: &str = "\
jobId: sync
jobName: sync
creator: u-1
creatorName: U
request:
  - method: POST
    url: http://127.0.0.1:9/never-called
schedule:
  cron: ['* * * * *']
overlap: Skip
timeoutSeconds: 300
retryPolicy:
  initialInterval: 10s
  backoffCoefficient: 2
  maximumAttempts: 3
";

#[test]
fn job_simulate_answers_time_by_time_with_totals() {
    let dir = TempDir::new("cli-simulate");
    let server = start(&dir, &[], &[]);
    let file = dir.join("job.yaml");
    std::fs::write(&file, JOB).unwrap();
    let file = file.display().to_string();
    let range = [
        "job",
        "simulate",
        "-f",
        &file,
        "--from",
        "2026-12-24T00:00",
        "--to",
        "2026-12-24T01:00",
        "--target-duration",
        "p50=90s,p99=90s",
    ];

    // Skip with 90 s calls: every other minute runs.
    let mut json_args = range.to_vec();
    json_args.extend_from_slice(&["-o", "json"]);
    let (code, stdout, stderr) = cli(&server, &json_args);
    assert_eq!(code, 0, "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["totals"]["fires"], 60, "{answer}");
    assert_eq!(answer["totals"]["runs"], 30, "{answer}");
    assert_eq!(answer["totals"]["skipped"], 30, "{answer}");
    assert_eq!(answer["rows"][0]["kind"], "attempt");
    assert_eq!(answer["rows"][0]["end"], "2026-12-24T00:01:30Z");
    assert_eq!(answer["rows"][1]["kind"], "skipped");

    // An outage of the target: its calls fail and are retried by the policy, 10 s then 20 s on.
    let mut outage = range.to_vec();
    outage.extend_from_slice(&[
        "--failure-rate",
        "0.05",
        "--outage",
        "2026-12-24T00:10/20m",
        "--down",
        "2026-12-24T00:40/5m",
        "-o",
        "json",
    ]);
    let (code, stdout, stderr) = cli(&server, &outage);
    assert_eq!(code, 0, "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let rows = answer["rows"].as_array().unwrap();
    let at_10: Vec<&Value> = rows
        .iter()
        .filter(|r| r["kind"] == "attempt" && r["scheduledTime"] == "2026-12-24T00:10:00Z")
        .collect();
    assert_eq!(at_10.len(), 3, "{answer}");
    assert_eq!(at_10[0]["outcome"], "connection");
    assert_eq!(at_10[0]["retryAt"], "2026-12-24T00:10:10Z");
    assert_eq!(at_10[1]["at"], "2026-12-24T00:10:10Z");
    assert_eq!(at_10[2]["at"], "2026-12-24T00:10:30Z");
    assert!(answer["totals"]["failed"].as_u64().unwrap() > 0, "{answer}");
    // Sundial down 00:40–00:45: back at 00:45, older fires than the 1 minute window are missed.
    assert!(
        rows.iter()
            .any(|r| r["kind"] == "missed" && r["at"] == "2026-12-24T00:45:00Z"),
        "{answer}"
    );

    // The table.
    let (code, stdout, stderr) = cli(&server, &range);
    assert_eq!(code, 0, "{stderr}");
    for needle in [
        "AT",
        "KIND",
        "attempt",
        "skipped",
        "Totals: fires 60, runs 30",
    ] {
        assert!(stdout.contains(needle), "{needle} in {stdout}");
    }

    // Bad input names the flag or the field.
    let mut bad = range.to_vec();
    bad.extend_from_slice(&["--outage", "2026-12-24T10:00"]);
    let (code, _, stderr) = cli(&server, &bad);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--outage"), "{stderr}");
    let mut bad = range.to_vec();
    bad.extend_from_slice(&["--failure-rate", "2"]);
    let (code, _, stderr) = cli(&server, &bad);
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("simulatedTarget.failureRate"), "{stderr}");
}
