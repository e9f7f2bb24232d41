//! End-to-end tests of the client commands: each runs the real `sundial` binary against a real
//! `sundial serve` on a free loopback port (the helpers of `common`), parses the JSON it prints
//! with `--output json`, and checks its exit code. The SigV4 test points the client at a loopback
//! server that records the signed headers and verifies them with `aws-sigv4` itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use common::{start, Server};
use sundial_testkit::{Received, Target, TempDir};

/// What one run of `sundial` printed, and its exit code.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts exit 0 and returns stdout parsed as JSON.
    fn json(&self) -> Value {
        assert_eq!(self.code, 0, "{self:?}");
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Asserts the exit code and an `error: ` line on stderr that contains `needle`.
    fn fails(&self, code: i32, needle: &str) -> &Run {
        assert_eq!(self.code, code, "{self:?}");
        assert!(
            self.stderr.starts_with("error: ") && self.stderr.contains(needle),
            "expected {needle:?} in {self:?}"
        );
        self
    }
}

/// Runs `sundial ARGS` with `env`, no colour and none of the caller's client settings.
fn sundial_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sundial"));
    command
        .args(args)
        .env_remove("SUNDIAL_SERVER")
        .env_remove("SUNDIAL_API_TOKEN")
        .env_remove("SUNDIAL_AUTH")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    // The AWS credential chain reads only what a test gives it.
    for key in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ROLE_ARN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    ] {
        command.env_remove(key);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().expect("run sundial");
    Run {
        code: out.status.code().expect("an exit code"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// Runs `sundial --server URL ARGS` against `server`.
fn cli(server: &Server, args: &[&str]) -> Run {
    let url = format!("http://{}", server.addr);
    let mut all = vec!["--server", url.as_str()];
    all.extend_from_slice(args);
    sundial_env(&all, &[])
}

fn write(dir: &TempDir, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a fixture");
    path.display().to_string()
}

#[test]
fn job_commands_end_to_end() {
    let dir = TempDir::new("cli-jobs");
    let server = start(&dir, &[], &[]);
    let target = Target::start();
    let url = format!("http://127.0.0.1:{}/run?n=${{executeNumber}}", target.port);

    // create from flags
    let created = cli(
        &server,
        &[
            "job",
            "create",
            "report",
            "--name",
            "Noon report",
            "--cron",
            "0 12 * * MON-FRI",
            "--tz",
            "Europe/London",
            "--url",
            &url,
            "--method",
            "post",
            "--header",
            "X-Team: ops",
            "--overlap",
            "BufferOne",
            "--set",
            "qos=0",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(created["resp_code"], 200);
    let job = cli(&server, &["job", "get", "report", "-o", "json"]).json();
    assert_eq!(job["jobName"], "Noon report");
    assert_eq!(job["creatorName"], job["creator"], "filled in by create");
    assert_eq!(
        job["schedule"],
        json!({"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"})
    );
    assert_eq!(job["request"][0]["method"], "POST");
    assert_eq!(job["request"][0]["headers"], json!({"X-Team": "ops"}));
    assert_eq!(job["overlap"], "BufferOne");

    // create from a YAML file, its id in the file
    let yaml = write(
        &dir,
        "nightly.yaml",
        &format!(
            "jobId: nightly\njobName: nightly export\ncreator: u-1001\ncreatorName: Ana\n\
             request:\n  - method: GET\n    url: 'http://127.0.0.1:{}/nightly'\n\
             timer:\n  period: '0 0 2 * * ?'\n",
            target.port
        ),
    );
    cli(&server, &["job", "create", "-f", &yaml, "-o", "json"]).json();
    // and a JSON file with flags on top
    let json_file = write(
        &dir,
        "manual.json",
        &json!({"jobName": "manual", "creator": "u", "creatorName": "U",
                "request": [{"url": format!("http://127.0.0.1:{}/manual", target.port)}]})
        .to_string(),
    );
    cli(
        &server,
        &[
            "job", "create", "manual", "-f", &json_file, "--timer", "external", "-o", "json",
        ],
    )
    .json();
    assert_eq!(
        server.call("GET", "/jobs/manual", None).body["timer"],
        json!({"period": "external"})
    );

    // list, filtered and paged
    let list = cli(&server, &["job", "list", "-o", "json"]).json();
    let ids: Vec<&str> = list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["manual", "nightly", "report"]);
    let page = cli(&server, &["job", "list", "--limit", "2", "-o", "json"]).json();
    assert_eq!(page["jobs"].as_array().unwrap().len(), 2);
    assert!(page["nextCursor"].is_string());
    let all = cli(
        &server,
        &["job", "list", "--limit", "2", "--all", "-o", "json"],
    )
    .json();
    assert_eq!(all["jobs"].as_array().unwrap().len(), 3);
    assert_eq!(all["nextCursor"], Value::Null);
    // in another order, paged too: the triggered-only job has no next fire and comes last
    let by_next_fire = cli(
        &server,
        &[
            "job", "list", "--sort", "nextFire", "--limit", "2", "--all", "-o", "json",
        ],
    )
    .json();
    assert_eq!(by_next_fire["jobs"][2]["jobId"], "manual", "{by_next_fire}");

    // pause and unpause with notes
    cli(
        &server,
        &[
            "job",
            "pause",
            "nightly",
            "--notes",
            "maintenance",
            "-o",
            "json",
        ],
    )
    .json();
    let paused = cli(&server, &["job", "list", "--state", "paused", "-o", "json"]).json();
    assert_eq!(paused["jobs"][0]["jobId"], "nightly");
    assert_eq!(paused["jobs"][0]["pausedNotes"], "maintenance");
    let table = cli(&server, &["job", "describe", "nightly"]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table.stdout.contains("none: the job is paused"),
        "{}",
        table.stdout
    );
    cli(&server, &["job", "unpause", "nightly", "-o", "json"]).json();
    assert_eq!(
        server.call("GET", "/jobs/nightly", None).body["state"],
        "active"
    );

    // a pause that ends by itself: --until, shown as when the job resumes
    let before = chrono::Utc::now();
    cli(
        &server,
        &["job", "pause", "nightly", "--until", "2h", "-o", "json"],
    )
    .json();
    let job = cli(&server, &["job", "get", "nightly", "-o", "json"]).json();
    let until: chrono::DateTime<chrono::Utc> = job["pausedUntil"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("pausedUntil of {job}"));
    let ahead = until - before;
    assert!(
        ahead >= chrono::Duration::minutes(119) && ahead <= chrono::Duration::minutes(121),
        "{until} is not 2 h after {before}"
    );
    let table = cli(&server, &["job", "get", "nightly"]);
    assert!(table.stdout.contains("Resumes"), "{}", table.stdout);
    cli(
        &server,
        &["job", "pause", "nightly", "--until", "yesterday"],
    )
    .fails(4, "until");
    cli(&server, &["job", "unpause", "nightly", "-o", "json"]).json();
    assert!(server.call("GET", "/jobs/nightly", None).body["pausedUntil"].is_null());

    // update: flags change the stored definition, which is kept otherwise; it runs once now
    let updated = cli(
        &server,
        &[
            "job",
            "update",
            "report",
            "--timeout-seconds",
            "30",
            "-o",
            "json",
        ],
    )
    .json();
    let update_run = updated["executionId"]
        .as_str()
        .expect("an executionId")
        .to_string();
    let job = cli(&server, &["job", "get", "report", "-o", "yaml"]);
    assert_eq!(job.code, 0, "{job:?}");
    let job: Value = serde_yaml_ng::from_str(&job.stdout).expect("YAML output");
    assert_eq!(job["timeoutSeconds"], 30);
    assert_eq!(job["overlap"], "BufferOne");
    assert_eq!(job["schedule"]["timeZone"], "Europe/London");
    // a file replaces the definition
    let replacement = write(
        &dir,
        "report.json",
        &json!({"jobName": "Noon report v2", "creator": "001", "creatorName": "ops",
                "request": [{"method": "POST", "url": url, "headers": {"X-Team": "ops"}}],
                "schedule": {"cron": ["0 12 * * *"], "timeZone": "Europe/London"}})
        .to_string(),
    );
    cli(
        &server,
        &["job", "update", "report", "-f", &replacement, "-o", "json"],
    )
    .json();
    let job = server.call("GET", "/jobs/report", None).body;
    assert_eq!(job["jobName"], "Noon report v2");
    assert_eq!(job.get("overlap"), None);
    cli(&server, &["job", "update", "report"]).fails(2, "nothing to change");

    // describe
    let described = cli(&server, &["job", "describe", "report", "-o", "json"]).json();
    assert_eq!(
        described["info"]["futureActionTimes"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    let table = cli(&server, &["job", "describe", "report"]);
    assert!(
        table.stdout.contains("Next fire times (Europe/London)"),
        "{}",
        table.stdout
    );
    assert!(!table.stdout.contains('\u{1b}'), "no colour in a pipe");

    // trigger with arguments, then follow it to the end
    let triggered = cli(
        &server,
        &[
            "job",
            "trigger",
            "report",
            "--args",
            r#"{"region": "us", "n": 1}"#,
            "--arg",
            "region=emea",
            "--idempotency-key",
            "emea-1",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(triggered["executionId"], "report~t~emea-1");
    let watched = cli(
        &server,
        &["execution", "watch", "report~t~emea-1", "--poll", "100ms"],
    );
    assert_eq!(watched.code, 0, "{watched:?}");
    assert!(watched.stdout.contains("→ Succeeded"), "{}", watched.stdout);
    let run = cli(
        &server,
        &["execution", "get", "report~t~emea-1", "-o", "json"],
    )
    .json();
    assert_eq!(run["state"], "Succeeded");
    assert_eq!(run["arguments"], json!({"region": "emea", "n": 1}));
    let call = target
        .received("/run")
        .into_iter()
        .find(|r| {
            r.header("idempotency-key")
                .is_some_and(|k| k.contains("emea-1"))
        })
        .expect("the triggered call reached the target");
    assert_eq!(call.header("x-team"), Some("ops"));

    // trigger --watch in JSON: one event per line, the execution last
    let watched = cli(
        &server,
        &[
            "job", "trigger", "manual", "--watch", "--poll", "100ms", "-o", "json",
        ],
    );
    assert_eq!(watched.code, 0, "{watched:?}");
    let lines: Vec<Value> = watched
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    assert_eq!(lines[0]["to"], "Enqueued");
    assert_eq!(lines.last().unwrap()["state"], "Succeeded");

    // executions of a job, newest first
    let runs = cli(&server, &["execution", "list", "report", "-o", "json"]).json();
    let runs = runs["executions"].as_array().unwrap();
    assert_eq!(runs[0]["executionId"], "report~t~emea-1");
    // the trigger, the update with a file, the update with flags: each ran once
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[2]["executionId"], update_run.as_str());
    let table = cli(&server, &["execution", "list", "report"]);
    assert!(table.stdout.starts_with("EXECUTION ID"), "{}", table.stdout);
    assert!(table.stdout.contains("report~t~emea-1"), "{}", table.stdout);

    // backfill a past range: three hourly fire times
    cli(
        &server,
        &[
            "job",
            "update",
            "nightly",
            "--cron",
            "0 * * * *",
            "-o",
            "json",
        ],
    )
    .json();
    let backfill = cli(
        &server,
        &[
            "job",
            "backfill",
            "nightly",
            "--from",
            "2024-06-01T00:00:00Z",
            "--to",
            "2024-06-01T02:59:59Z",
            "--overlap",
            "BufferAll",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(backfill["count"], 3);

    // delete
    cli(&server, &["job", "delete", "manual", "-o", "json"]).json();
    cli(&server, &["job", "get", "manual"]).fails(3, "not found");
}

/// Issue 15: `job backfill --mode --reverse --dry-run`, `job trigger --scheduled-time --overlap
/// --delay` and `job update --dry-run`, against a real server that runs the jobs.
#[test]
fn backfill_modes_trigger_overrides_and_update_previews() {
    let dir = TempDir::new("cli-operations");
    let server = start(&dir, &[], &[]);
    let target = Target::start();
    let url = format!("http://127.0.0.1:{}/run?at=${{scheduledTime}}", target.port);
    cli(
        &server,
        &[
            "job",
            "create",
            "hourly",
            "--cron",
            "0 * * * *",
            "--url",
            &url,
            "-o",
            "json",
        ],
    )
    .json();
    let range = [
        "job",
        "backfill",
        "hourly",
        "--from",
        "2024-06-01T00:00:00Z",
        "--to",
        "2024-06-01T02:59:59Z",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        range.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let run = |args: Vec<String>| {
        cli(
            &server,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    };

    // A dry run lists the times, newest first, and records nothing.
    let dry = run(with(&[
        "--mode",
        "missing",
        "--reverse",
        "--dry-run",
        "-o",
        "json",
    ]))
    .json();
    assert_eq!(dry["count"], 3);
    assert_eq!(dry["dryRun"], true);
    assert_eq!(
        dry["times"],
        json!([
            "2024-06-01T02:00:00+00:00",
            "2024-06-01T01:00:00+00:00",
            "2024-06-01T00:00:00+00:00"
        ])
    );
    let described = server.call("GET", "/jobs/hourly/describe", None).body;
    assert_eq!(described["info"]["pendingBackfills"], 0);
    let table = run(with(&["--mode", "missing", "--reverse", "--dry-run"]));
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table
            .stdout
            .contains("3 fire times would run, in this order"),
        "{}",
        table.stdout
    );
    assert!(target.received("/run").is_empty(), "a dry run runs nothing");

    // For real, newest first and in order.
    let done = run(with(&["--reverse", "--overlap", "BufferAll", "-o", "json"])).json();
    assert_eq!(done["count"], 3);
    let calls: Vec<String> = target
        .wait_for("/run", 3)
        .iter()
        .map(|r| r.path.split("at=").nth(1).unwrap_or_default()[..13].to_string())
        .collect();
    assert_eq!(calls, ["2024-06-01T02", "2024-06-01T01", "2024-06-01T00"]);
    // Their runs are the times' first re-runs; none failed, none is missing any more.
    for mode in ["failed", "missing"] {
        let again = run(with(&["--mode", mode, "--dry-run", "-o", "json"]));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut answer = again.json();
        while mode == "failed" && answer["count"] != 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            answer = run(with(&["--mode", mode, "--dry-run", "-o", "json"])).json();
        }
        assert_eq!(answer["count"], 0, "{mode}: {answer}");
    }
    let first = cli(
        &server,
        &[
            "execution",
            "get",
            "hourly~20240601T020000Z~r1",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(first["scheduledTime"], "2024-06-01T02:00:00Z");

    // A trigger that reports another time, takes its own policy and starts 2 s later.
    let triggered = cli(
        &server,
        &[
            "job",
            "trigger",
            "hourly",
            "--scheduled-time",
            "2024-06-01T05:00:00Z",
            "--overlap",
            "BufferAll",
            "--delay",
            "2s",
            "--idempotency-key",
            "later",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(triggered["executionId"], "hourly~t~later");
    let waiting = cli(
        &server,
        &["execution", "get", "hourly~t~later", "-o", "json"],
    )
    .json();
    assert_eq!(waiting["state"], "Scheduled");
    assert_eq!(waiting["scheduledTime"], "2024-06-01T05:00:00Z");
    let overrides = waiting["events"][1]["message"].as_str().unwrap_or_default();
    assert!(
        overrides.starts_with(
            "trigger overrides: scheduledTime 2024-06-01T05:00:00Z, overlap BufferAll, delay 2s"
        ),
        "{waiting}"
    );
    let watched = cli(
        &server,
        &["execution", "watch", "hourly~t~later", "--poll", "100ms"],
    );
    assert_eq!(watched.code, 0, "{watched:?}");
    let calls = target.wait_for("/run", 4);
    assert!(
        calls[3].path.ends_with("at=2024-06-01T05:00:00Z"),
        "{:?}",
        calls[3].path
    );
    let table = cli(&server, &["job", "trigger", "hourly", "--delay", "1h"]);
    assert!(table.stdout.contains("; it starts in 1h."), "{table:?}");
    cli(&server, &["job", "trigger", "hourly", "--delay", "soon"]).fails(4, "delay:");

    // An update's preview: nothing changes and nothing runs.
    let job = server.call("GET", "/jobs/hourly", None).body;
    let runs = server.call("GET", "/jobs/hourly/executions", None).body;
    let preview = cli(
        &server,
        &[
            "job",
            "update",
            "hourly",
            "--cron",
            "30 9 * * *",
            "--overlap",
            "BufferAll",
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(preview["dryRun"], true);
    let after = preview["nextFireTimes"]["after"][0]
        .as_str()
        .unwrap_or_default();
    assert!(after.ends_with("T09:30:00+00:00"), "{preview}");
    let affected = preview["affectedRuns"].as_array().expect("affectedRuns");
    assert_eq!(
        affected.len(),
        1,
        "the run delayed an hour waits: {preview}"
    );
    assert_eq!(affected[0]["place"], "waiting");
    assert_eq!(affected[0]["changes"], json!(["overlap: Skip → BufferAll"]));
    let table = cli(
        &server,
        &[
            "job",
            "update",
            "hourly",
            "--timeout-seconds",
            "5",
            "--dry-run",
        ],
    );
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table
            .stdout
            .starts_with("Dry run: job hourly was not changed"),
        "{}",
        table.stdout
    );
    assert!(
        table.stdout.contains("timeoutSeconds: changed"),
        "{}",
        table.stdout
    );
    assert_eq!(server.call("GET", "/jobs/hourly", None).body, job);
    assert_eq!(
        server.call("GET", "/jobs/hourly/executions", None).body,
        runs
    );
}

#[test]
fn errors_exit_by_class() {
    let dir = TempDir::new("cli-errors");
    let server = start(&dir, &[], &[]);
    // The server's field error, refused: 4.
    cli(&server, &["job", "create", "bad", "--cron", "0 12 * * *"])
        .fails(4, "request")
        .fails(4, "(HTTP 400)");
    cli(
        &server,
        &[
            "job",
            "create",
            "bad",
            "--cron",
            "0 25 * * *",
            "--url",
            "http://127.0.0.1:9/x",
        ],
    )
    .fails(4, "schedule.cron[0]");
    let ok = [
        "job",
        "create",
        "dup",
        "--timer",
        "external",
        "--url",
        "http://127.0.0.1:9/x",
    ];
    assert_eq!(cli(&server, &ok).code, 0);
    cli(&server, &ok).fails(4, "already exists");
    // Not found: 3.
    cli(&server, &["job", "describe", "nope"]).fails(3, "job nope not found");
    cli(&server, &["execution", "get", "nope~t~x"]).fails(3, "not found");
    // Usage: 2, before any request.
    cli(&server, &["job", "trigger", "dup", "--arg", "novalue"]).fails(2, "--arg");
    cli(&server, &["job", "create"]).fails(2, "JOB_ID");
    cli(&server, &["job", "create", "x", "-f", "/no/such/file.json"]).fails(2, "cannot read");
    cli(&server, &["job", "frobnicate"]).fails(2, "frobnicate");
    sundial_env(&["--server", "localhost:8080", "stats"], &[]).fails(2, "--server");
    // Client options are refused where they would be ignored: the server reads its token from
    // SUNDIAL_API_TOKEN.
    sundial_env(&["serve", "--token", "cli-test-token-0123456789"], &[])
        .fails(2, "--token is an option of the client commands");
    sundial_env(&["spec", "preview", "-o", "yaml", "{}"], &[]).fails(2, "--output");
    // Unreachable: 5.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    sundial_env(
        &["--server", &format!("http://127.0.0.1:{port}"), "stats"],
        &[],
    )
    .fails(5, "cannot reach")
    .fails(5, "is the server running there?");
    // stats and health
    let stats = cli(&server, &["stats", "-o", "json"]).json();
    assert_eq!(stats["jobs"]["active"], 1);
    assert_eq!(stats["debugMode"], false);
    let health = cli(&server, &["health", "-o", "json"]).json();
    assert_eq!(health["status"], "ok");
    let table = cli(&server, &["health"]);
    assert!(table.stdout.starts_with("Status         ok"), "{table:?}");
}

#[test]
fn a_failed_run_makes_watch_exit_1() {
    let dir = TempDir::new("cli-watch-fail");
    let server = start(&dir, &[], &[]);
    // Nothing listens on the port: the call fails with "connection" and is not retried.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/x", closed.local_addr().unwrap().port());
    drop(closed);
    let create = [
        "job",
        "create",
        "broken",
        "--timer",
        "external",
        "--url",
        url.as_str(),
    ];
    assert_eq!(cli(&server, &create).code, 0);
    let run = cli(
        &server,
        &["job", "trigger", "broken", "--watch", "--poll", "100ms"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains("Processing → Terminated"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("ended Terminated: connection"),
        "{}",
        run.stderr
    );
    // The failed run is in the job's statistics and in everyone's.
    let stats = cli(
        &server,
        &["job", "stats", "broken", "--window", "1h", "-o", "json"],
    )
    .json();
    assert_eq!(stats["byState"], json!({"Terminated": 1}), "{stats}");
    let table = cli(&server, &["job", "stats", "broken"]);
    assert!(
        table.stdout.contains("Runs          1 (Terminated 1)"),
        "{table:?}"
    );
    let all = cli(&server, &["stats", "--window", "7d"]);
    assert!(all.stdout.contains("Top failing:"), "{all:?}");
    cli(&server, &["job", "stats", "broken", "--window", "2h"]).fails(4, "window:");
}

#[test]
fn cancel_and_terminate() {
    let dir = TempDir::new("cli-cancel");
    // A target that holds /slow calls, so a run stays Processing.
    let target = Target::with_delay(Arc::new(|r: &Received| {
        r.path
            .starts_with("/slow")
            .then_some(Duration::from_secs(30))
    }));
    let server = start(&dir, &[], &[]);
    let url = format!("http://127.0.0.1:{}/slow", target.port);
    let create = [
        "job",
        "create",
        "slow",
        "--timer",
        "external",
        "--url",
        url.as_str(),
    ];
    assert_eq!(cli(&server, &create).code, 0);
    let first = cli(&server, &["job", "trigger", "slow", "-o", "json"]).json();
    let first = first["executionId"].as_str().unwrap().to_string();
    assert_eq!(
        target.wait_for("/slow", 1).len(),
        1,
        "the call is in flight"
    );
    let ended = cli(
        &server,
        &[
            "execution",
            "terminate",
            &first,
            "--reason",
            "stuck",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(ended["state"], "Terminated");
    let run = cli(&server, &["execution", "get", &first]);
    assert!(run.stdout.contains("stuck"), "{run:?}");
    // A second run of a Skip job waits behind nothing now; cancel a finished one: refused.
    cli(&server, &["execution", "cancel", &first]).fails(4, "(HTTP 409)");

    // An API-only server records runs and leaves them Enqueued: cancel one.
    let api_dir = TempDir::new("cli-cancel-api");
    let api = start(&api_dir, &["--api-only"], &[]);
    assert_eq!(cli(&api, &create).code, 0);
    let queued = cli(&api, &["job", "trigger", "slow", "-o", "json"]).json();
    let queued = queued["executionId"].as_str().unwrap().to_string();
    let out = cli(
        &api,
        &["execution", "cancel", &queued, "--reason", "duplicate"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, format!("Execution {queued} is Cancelled.\n"));
    cli(&api, &["execution", "terminate", &queued]).fails(4, "cannot become Terminated");
}

#[test]
fn timers_sync_reconciles_a_service() {
    let dir = TempDir::new("cli-timers");
    let server = start(&dir, &[], &[]);
    let job = |id: &str| {
        json!({"jobId": id, "jobName": id, "creator": "billing", "creatorName": "Billing",
               "request": [{"method": "POST", "url": "service://billing/main/x"}],
               "timer": {"period": "0 0 2 * * ?"}})
    };
    let file = write(
        &dir,
        "timers.json",
        &json!({"timer": [job("billing-a"), job("billing-b")]}).to_string(),
    );
    let first = cli(&server, &["timers", "sync", "billing", &file, "-o", "json"]).json();
    assert_eq!(first["created"], json!(["billing-a", "billing-b"]));
    let again = cli(&server, &["timers", "sync", "billing", &file, "-o", "json"]).json();
    assert_eq!(again["unchanged"], json!(["billing-a", "billing-b"]));
    // Issue 26 item 2: an operator pauses a declared job; the service's next start declares the
    // same list: the job stays paused with its notes (before, it was `updated` and active again).
    assert_eq!(
        cli(
            &server,
            &["job", "pause", "billing-a", "--notes", "incident 42"]
        )
        .code,
        0
    );
    let again = cli(&server, &["timers", "sync", "billing", &file, "-o", "json"]).json();
    assert_eq!(
        again["unchanged"],
        json!(["billing-a", "billing-b"]),
        "{again}"
    );
    let paused = cli(&server, &["job", "get", "billing-a", "-o", "json"]).json();
    assert_eq!(
        (paused["active"].as_u64(), paused["pausedNotes"].as_str()),
        (Some(0), Some("incident 42"))
    );
    // The code changes billing-b's timer: only that is applied, and the table names it.
    let changed = write(
        &dir,
        "timers-2.json",
        &json!({"timer": [job("billing-a"), {
            "jobId": "billing-b", "jobName": "billing-b", "creator": "billing", "creatorName": "Billing",
            "request": [{"method": "POST", "url": "service://billing/main/x"}],
            "timer": {"period": "0 0 3 * * ?"}}]})
        .to_string(),
    );
    let table = cli(&server, &["timers", "sync", "billing", &changed]);
    assert!(
        table.stdout.contains("updated    billing-b (timer)"),
        "{}",
        table.stdout
    );
    // A bare YAML list without billing-b removes it.
    let yaml = write(
        &dir,
        "timers.yaml",
        "- jobId: billing-a\n  jobName: billing-a\n  creator: billing\n  creatorName: Billing\n  \
         request: [{method: POST, url: 'service://billing/main/x'}]\n  \
         timer: {period: '0 0 2 * * ?'}\n",
    );
    let table = cli(&server, &["timers", "sync", "billing", &yaml]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table.stdout.contains("removed    billing-b"),
        "{}",
        table.stdout
    );
    let listed = cli(
        &server,
        &["job", "list", "--service", "billing", "-o", "json"],
    )
    .json();
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 1);
}

/// Issue 26 item 9: the debug mode switched at run time through a real `sundial serve`: shown by
/// `sundial health`, recorded with who and why, refused with a usage error for an unknown mode.
#[test]
fn debug_mode_switches_at_run_time() {
    let dir = TempDir::new("cli-debug-mode");
    let server = start(&dir, &[], &[]);
    let shown = cli(&server, &["settings", "debug-mode", "-o", "json"]).json();
    assert_eq!(
        (&shown["mode"], &shown["source"]),
        (&json!("off"), &json!("startup"))
    );
    let switched = cli(
        &server,
        &[
            "settings",
            "debug-mode",
            "both",
            "--reason",
            "load test",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(switched["mode"], "both");
    assert_eq!(switched["history"][0]["reason"], "load test");
    let health = cli(&server, &["health"]);
    assert!(health.stdout.contains("Debug mode     both"), "{health:?}");
    let table = cli(&server, &["settings", "debug-mode", "off"]);
    assert!(table.stdout.starts_with("Debug mode: off\n"), "{table:?}");
    cli(&server, &["settings", "debug-mode", "light"]).fails(2, "light");
    cli(&server, &["settings", "debug-mode", "--reason", "x"]).fails(2, "--reason");
}

#[test]
fn labels_and_bulk_actions() {
    let dir = TempDir::new("cli-bulk");
    let server = start(&dir, &[], &[]);
    let job = |id: &str, team: &str| {
        json!({"jobId": id, "jobName": id, "creator": "ops", "creatorName": "Ops",
               "request": [{"method": "POST", "url": "service://ops/main/x"}],
               "timer": {"period": "external"}, "labels": {"team": team}})
    };
    let file = write(
        &dir,
        "timers.json",
        &json!({"timer": [job("pay-a", "payments"), job("pay-b", "payments"), job("rep-a", "reports")]})
            .to_string(),
    );
    cli(&server, &["timers", "sync", "ops", &file, "-o", "json"]).json();
    let ids = |answer: &Value, key: &str| -> Vec<String> {
        answer[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["jobId"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = cli(
        &server,
        &["job", "list", "--label", "team:payments", "-o", "json"],
    )
    .json();
    assert_eq!(ids(&listed, "jobs"), ["pay-a", "pay-b"]);
    let listed = cli(
        &server,
        &["job", "list", "--id-prefix", "rep", "-o", "json"],
    )
    .json();
    assert_eq!(ids(&listed, "jobs"), ["rep-a"]);

    let dry = cli(
        &server,
        &[
            "bulk",
            "pause",
            "--label",
            "team:payments",
            "--reason",
            "freeze",
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(ids(&dry, "results"), ["pay-a", "pay-b"]);
    assert_eq!(dry["results"][0]["status"], "matched");
    let paused = cli(
        &server,
        &[
            "bulk",
            "pause",
            "--label",
            "team:payments",
            "--reason",
            "freeze",
            "--until",
            "2030-01-01T00:00:00Z",
            "--all",
            "-o",
            "json",
        ],
    )
    .json();
    assert_eq!(paused["succeeded"], 2);
    let job = cli(&server, &["job", "get", "pay-a", "-o", "json"]).json();
    assert_eq!(
        (job["active"].as_u64(), job["pausedNotes"].as_str()),
        (Some(0), Some("freeze"))
    );
    assert_eq!(job["pausedUntil"], "2030-01-01T00:00:00Z");

    // A job that fails is listed, and the command exits 1.
    let partial = cli(
        &server,
        &[
            "bulk", "unpause", "--job", "pay-a", "--job", "ghost", "--reason", "thaw",
        ],
    );
    assert_eq!(partial.code, 1, "{partial:?}");
    assert!(
        partial.stdout.contains("ghost") && partial.stdout.contains("404"),
        "{partial:?}"
    );
    assert!(partial.stderr.contains("1 of 2 jobs failed"), "{partial:?}");
    cli(&server, &["bulk", "pause", "--reason", "r"]).fails(4, "jobIds");

    // Issue 26 item 13: `--label KEY=VALUE` on create and update (repeatable; an update keeps the
    // labels it does not name), a malformed pair a usage error, a bad label the server's 400.
    cli(
        &server,
        &[
            "job",
            "create",
            "lab-a",
            "--timer",
            "external",
            "--url",
            "http://127.0.0.1:9/x",
            "--label",
            "team=payments",
            "--label",
            "tier=1",
            "-o",
            "json",
        ],
    )
    .json();
    let listed = cli(
        &server,
        &["job", "list", "--label", "team:payments", "-o", "json"],
    )
    .json();
    assert_eq!(ids(&listed, "jobs"), ["lab-a", "pay-a", "pay-b"]);
    assert_eq!(
        cli(&server, &["job", "update", "lab-a", "--label", "tier=2"]).code,
        0
    );
    let job = cli(&server, &["job", "get", "lab-a", "-o", "json"]).json();
    assert_eq!(job["labels"], json!({"team": "payments", "tier": "2"}));
    cli(&server, &["job", "create", "lab-b", "--label", "team"]).fails(
        2,
        "--label: expected KEY=VALUE like team=payments, got \"team\"",
    );
    cli(
        &server,
        &[
            "job",
            "create",
            "lab-b",
            "--timer",
            "external",
            "--url",
            "http://127.0.0.1:9/x",
            "--label",
            "bad key=x",
        ],
    )
    .fails(4, "labels");
}

#[test]
fn bearer_tokens() {
    let dir = TempDir::new("cli-token");
    let token = "cli-test-token-0123456789";
    let server = start(&dir, &[], &[("SUNDIAL_API_TOKEN", token)]);
    cli(&server, &["stats"]).fails(4, "(HTTP 401)");
    let stats = cli(&server, &["--token", token, "stats", "-o", "json"]).json();
    assert_eq!(stats["debugMode"], false);
    let url = format!("http://{}", server.addr);
    let by_env = sundial_env(
        &["stats", "-o", "json"],
        &[
            ("SUNDIAL_SERVER", url.as_str()),
            ("SUNDIAL_API_TOKEN", token),
        ],
    );
    assert_eq!(by_env.json()["debugMode"], false);
    // /health needs no token.
    assert_eq!(
        cli(&server, &["health", "-o", "json"]).json()["status"],
        "ok"
    );
    cli(&server, &["--auth", "bearer", "stats"]).fails(2, "--token");
}

#[cfg(not(feature = "aws-auth"))]
#[test]
fn iam_needs_the_aws_auth_feature() {
    sundial_env(&["--auth", "iam", "stats"], &[]).fails(2, "aws-auth");
}

/// IAM auth: the client signs with SigV4 from the standard credential chain (here the environment
/// variables), and the loopback server that records the request finds a signature that verifies
/// for what it received.
#[cfg(feature = "aws-auth")]
#[test]
fn sigv4_signed_requests() {
    let target = Target::start();
    let server = format!("http://127.0.0.1:{}", target.port);
    let no_files = std::env::temp_dir().join("sundial-no-aws-files");
    let no_files = no_files.display().to_string();
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ),
        ("AWS_SESSION_TOKEN", "session-token-1"),
        ("AWS_CONFIG_FILE", no_files.as_str()),
        ("AWS_SHARED_CREDENTIALS_FILE", no_files.as_str()),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_REGION", "us-east-1"),
    ];
    let base = ["--server", server.as_str(), "--auth", "iam", "-o", "json"];
    let run = |args: &[&str]| {
        let mut all = base.to_vec();
        all.extend_from_slice(args);
        sundial_env(&all, &env)
    };
    assert_eq!(
        run(&["--region", "eu-west-1", "job", "get", "report"]).json()["ok"],
        true
    );
    assert_eq!(
        run(&["job", "trigger", "report", "--arg", "region=emea"]).json()["ok"],
        true
    );

    let received = target.wait_for("/jobs/report", 2);
    let (get, post) = (&received[0], &received[1]);
    assert_eq!(get.path, "/jobs/report");
    assert_eq!(post.path, "/jobs/report/trigger");
    let expect_signed = |request: &Received, method: &str, region: &str, body: &[u8]| {
        let authorization = request.header("authorization").expect("signed");
        let date = request.header("x-amz-date").expect("x-amz-date");
        assert!(
            authorization.starts_with(&format!(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{}/{region}/execute-api/aws4_request, SignedHeaders=",
                &date[..8]
            )),
            "{authorization}"
        );
        assert_eq!(
            request.header("x-amz-security-token"),
            Some("session-token-1")
        );
        // Sign what the server received, at the time the request names: the same signature.
        let time = chrono::NaiveDateTime::parse_from_str(date, "%Y%m%dT%H%M%SZ")
            .expect("x-amz-date")
            .and_utc();
        let credentials = aws_credential_types::Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("session-token-1".into()),
            None,
            "test",
        );
        let identity = credentials.into();
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("execute-api")
            .time(time.into())
            .settings(aws_sigv4::http_request::SigningSettings::default())
            .build()
            .unwrap()
            .into();
        let url = format!("http://127.0.0.1:{}{}", target.port, request.path);
        let signable = aws_sigv4::http_request::SignableRequest::new(
            method,
            &url,
            std::iter::empty(),
            aws_sigv4::http_request::SignableBody::Bytes(body),
        )
        .unwrap();
        let (instructions, _) = aws_sigv4::http_request::sign(signable, &params)
            .unwrap()
            .into_parts();
        let expected = instructions
            .headers()
            .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
            .map(|(_, value)| value.to_string())
            .unwrap();
        assert_eq!(authorization, expected);
    };
    expect_signed(get, "GET", "eu-west-1", b"");
    // The body as the client sent it: compact JSON, keys in order.
    let body = serde_json::to_vec(&post.body).unwrap();
    assert_eq!(post.body, json!({"region": "emea"}));
    expect_signed(post, "POST", "us-east-1", &body);
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = sundial_env(&["completions", shell], &[]);
        assert_eq!(out.code, 0, "{shell}: {out:?}");
        assert!(
            out.stdout.contains("sundial") && out.stdout.contains("execution"),
            "{shell}: {}",
            &out.stdout[..out.stdout.len().min(500)]
        );
    }
    sundial_env(&["completions", "tcsh"], &[]).fails(2, "tcsh");
}

/// The credential chain's providers that call an endpoint (here the container provider, as on ECS
/// or Lambda-like runtimes) reach it through the client's HTTP stack, and their temporary
/// credentials sign the request.
#[cfg(feature = "aws-auth")]
#[test]
fn sigv4_with_container_credentials() {
    let target = Target::start();
    // A container credentials endpoint on loopback: one JSON document for every request.
    let endpoint = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint_port = endpoint.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{BufRead, BufReader, Write};
        for stream in endpoint.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            let body = r#"{"AccessKeyId": "ASIACONTAINER", "SecretAccessKey": "container-secret", "Token": "container-token", "Expiration": "2100-01-01T00:00:00Z"}"#;
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.get_mut().write_all(reply.as_bytes());
        }
    });
    let no_files = std::env::temp_dir().join("sundial-no-aws-files");
    let no_files = no_files.display().to_string();
    let full_uri = format!("http://127.0.0.1:{endpoint_port}/credentials");
    let server = format!("http://127.0.0.1:{}", target.port);
    let run = sundial_env(
        &["--server", &server, "--auth", "iam", "-o", "json", "stats"],
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri.as_str()),
            ("AWS_CONFIG_FILE", no_files.as_str()),
            ("AWS_SHARED_CREDENTIALS_FILE", no_files.as_str()),
            ("AWS_EC2_METADATA_DISABLED", "true"),
            ("AWS_REGION", "ap-south-1"),
        ],
    );
    assert_eq!(run.json()["ok"], true);
    let request = &target.wait_for("/stats", 1)[0];
    let authorization = request.header("authorization").expect("signed");
    assert!(
        authorization.contains("Credential=ASIACONTAINER/")
            && authorization.contains("/ap-south-1/execute-api/aws4_request"),
        "{authorization}"
    );
    assert_eq!(
        request.header("x-amz-security-token"),
        Some("container-token")
    );
}

/// `sundial job create` of a nightly job whose calls go to a closed port.
const CREATE_NIGHTLY: [&str; 7] = [
    "job",
    "create",
    "nightly",
    "--cron",
    "0 3 * * *",
    "--url",
    "http://127.0.0.1:9/run",
];

/// `sundial serve` with two named tokens: the write token's changes are in the job's history
/// under its name (`sundial job history`), the read token reads it and is refused every change,
/// and a malformed entry stops the start naming it, never its secret.
#[test]
fn named_tokens_are_the_actors_of_the_history() {
    let dir = TempDir::new("cli-named-tokens");
    let (ops, viewer) = ("ops-secret-0123456789", "viewer-secret-0123456");
    let tokens = format!("ops:write:{ops},viewer:read:{viewer}");
    let server = start(&dir, &[], &[("SUNDIAL_API_TOKENS", tokens.as_str())]);
    let create = CREATE_NIGHTLY;
    let as_viewer = |args: &[&str]| {
        let mut all = vec!["--token", viewer];
        all.extend_from_slice(args);
        cli(&server, &all)
    };
    let as_ops = |args: &[&str]| {
        let mut all = vec!["--token", ops];
        all.extend_from_slice(args);
        cli(&server, &all)
    };
    as_viewer(&create).fails(4, "(HTTP 403)");
    let created = as_ops(&create);
    assert_eq!(created.code, 0, "{created:?}");
    as_viewer(&["job", "pause", "nightly", "--notes", "nope"]).fails(4, "scope read");
    let paused = as_ops(&["job", "pause", "nightly", "--notes", "maintenance"]);
    assert_eq!(paused.code, 0, "{paused:?}");

    let history = as_viewer(&["job", "history", "nightly", "-o", "json"]).json();
    let entries: Vec<(&str, &str)> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(entries, [("pause", "ops"), ("create", "ops")]);
    assert_eq!(history["entries"][0]["reason"], "maintenance");
    let table = as_viewer(&["job", "history", "nightly"]);
    assert_eq!(table.code, 0, "{table:?}");
    for needle in ["ACTOR", "ops", "pause", "maintenance", "create"] {
        assert!(table.stdout.contains(needle), "{needle}: {}", table.stdout);
    }
    drop(server);

    let secret = "hidden-secret-0123456";
    let (code, _, stderr) = common::refused_start(
        &TempDir::new("cli-bad-tokens"),
        &[],
        &[("SUNDIAL_API_TOKENS", &format!("ops:admin:{secret}"))],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("SUNDIAL_API_TOKENS: entry 1 (\"ops\"): the scope must be read or write"),
        "{stderr}"
    );
    assert!(!stderr.contains(secret), "{stderr}");
}

/// `sundial job occurrences` against `sundial serve`: the times of a paused job's schedule say
/// paused with the pause's notes, in the table and as JSON; a malformed range is exit status 4
/// naming the field.
#[test]
fn occurrences_say_what_became_of_each_time() {
    let dir = TempDir::new("cli-occurrences");
    let server = start(&dir, &[], &[]);
    let create = CREATE_NIGHTLY;
    assert_eq!(cli(&server, &create).code, 0);
    let paused = cli(
        &server,
        &["job", "pause", "nightly", "--notes", "maintenance"],
    );
    assert_eq!(paused.code, 0, "{paused:?}");
    let from = chrono::Utc::now() + chrono::Duration::days(1);
    let to = from + chrono::Duration::days(3);
    let (from, to) = (from.to_rfc3339(), to.to_rfc3339());
    let range = [
        "job",
        "occurrences",
        "nightly",
        "--from",
        &from,
        "--to",
        &to,
    ];
    let mut json_args = range.to_vec();
    json_args.extend_from_slice(&["-o", "json"]);
    let answer = cli(&server, &json_args).json();
    assert_eq!(answer["count"], 3, "{answer}");
    for occurrence in answer["occurrences"].as_array().unwrap() {
        assert_eq!(occurrence["status"], "paused", "{answer}");
        assert_eq!(occurrence["notes"], "maintenance", "{answer}");
    }
    let table = cli(&server, &range);
    assert_eq!(table.code, 0, "{table:?}");
    for needle in ["TIME", "STATUS", "paused", "maintenance"] {
        assert!(table.stdout.contains(needle), "{needle} in {table:?}");
    }
    cli(
        &server,
        &[
            "job",
            "occurrences",
            "nightly",
            "--from",
            "yesterday",
            "--to",
            &to,
        ],
    )
    .fails(4, "from:");
}

/// `execution list` with filters searches runs across jobs (`GET /executions`) on a real server:
/// a run that ended Terminated and runs that Succeeded against a loopback target, found by state,
/// label (`KEY=VALUE` too), creator, source and time, page by page.
#[test]
fn execution_search_across_jobs() {
    let dir = TempDir::new("cli-execution-search");
    let server = start(&dir, &[], &[]);
    let target = Target::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://127.0.0.1:{}/x", closed.local_addr().unwrap().port());
    drop(closed);
    let job = |id: &str, url: &str, creator: &str| {
        json!({"jobId": id, "jobName": id, "creator": creator, "creatorName": "Tests",
               "request": [{"method": "POST", "url": url}],
               "timer": {"period": "external"}, "labels": {"team": id}})
    };
    let ok_file = write(
        &dir,
        "ok.json",
        &job("good", &format!("{}/run", target.url()), "ana").to_string(),
    );
    let bad_file = write(&dir, "bad.json", &job("broken", &dead, "bo").to_string());
    assert_eq!(
        cli(&server, &["job", "create", "good", "-f", &ok_file]).code,
        0
    );
    assert_eq!(
        cli(&server, &["job", "create", "broken", "-f", &bad_file]).code,
        0
    );
    for _ in 0..2 {
        let run = cli(
            &server,
            &["job", "trigger", "good", "--watch", "--poll", "100ms"],
        );
        assert_eq!(run.code, 0, "{run:?}");
    }
    let run = cli(
        &server,
        &["job", "trigger", "broken", "--watch", "--poll", "100ms"],
    );
    assert_eq!(run.code, 1, "{run:?}");

    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["execution", "list", "-o", "json"];
        all.extend_from_slice(args);
        cli(&server, &all).json()["executions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["jobId"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&["--state", "Terminated", "--since", "1h"]), ["broken"]);
    assert_eq!(ids(&["--state", "Succeeded,Terminated"]).len(), 3);
    assert_eq!(
        ids(&["--state", "Succeeded", "--state", "Failed"]),
        ["good", "good"]
    );
    assert_eq!(ids(&["--label", "team=good"]), ["good", "good"]);
    assert_eq!(
        ids(&["--label", "team:broken", "--source", "trigger"]),
        ["broken"]
    );
    assert_eq!(ids(&["--creator", "bo"]), ["broken"]);
    assert!(ids(&["--source", "schedule"]).is_empty());
    assert!(ids(&["--until", "1h"]).is_empty());
    assert_eq!(ids(&["--ended-since", "1h", "--job", "good"]).len(), 2);
    // One per page, every page.
    assert_eq!(ids(&["--limit", "1", "--all"]).len(), 3);
    let first = cli(
        &server,
        &["execution", "list", "--limit", "1", "-o", "json"],
    )
    .json();
    assert_eq!(first["executions"].as_array().unwrap().len(), 1);
    assert!(first["nextCursor"].is_string(), "{first}");
    // The job alone still lists its runs by execute number.
    let own = cli(&server, &["execution", "list", "good", "-o", "json"]).json();
    assert_eq!(own["executions"][0]["executeNumber"], 2);
    let table = cli(&server, &["execution", "list", "--state", "Terminated"]);
    assert!(
        table.stdout.contains("JOB") && table.stdout.contains("broken"),
        "{table:?}"
    );
    cli(&server, &["execution", "list", "--state", "Broken"]).fails(4, "state:");
    cli(&server, &["execution", "list", "--since", "yesterday"]).fails(4, "since:");
}

/// Issue 30 item 5: schedules kept in git. Jobs exported from one server are applied to another
/// from a directory; `diff` exits 1 while the server differs and 0 once applied; an operator's
/// pause survives a change of the files; `--prune` deletes only what an apply wrote.
#[test]
fn export_apply_and_diff_keep_a_server_in_step_with_files() {
    let dir = TempDir::new("cli-apply");
    let source = start(&dir, &[], &[]);
    let job = |id: &str, cron: &str| {
        json!({"jobId": id, "jobName": id, "creator": "payments", "creatorName": "Payments",
               "request": [{"method": "POST", "url": "http://127.0.0.1:9/run"}],
               "schedule": {"cron": [cron]}, "labels": {"team": "payments"}})
    };
    for (id, cron) in [("pay-a", "0 2 * * *"), ("pay-b", "0 3 * * *")] {
        let file = write(&dir, &format!("{id}.json"), &job(id, cron).to_string());
        assert_eq!(cli(&source, &["job", "create", id, "-f", &file]).code, 0);
    }
    assert_eq!(
        cli(
            &source,
            &["job", "pause", "pay-a", "--notes", "source only"]
        )
        .code,
        0
    );
    let exported = cli(&source, &["export", "--label", "team:payments"]);
    assert_eq!(exported.code, 0, "{exported:?}");
    assert!(exported.stdout.starts_with("---\n"), "{exported:?}");
    assert!(
        !exported.stdout.contains("pausedNotes"),
        "no state: {exported:?}"
    );
    let jobs_dir = dir.join("jobs");
    std::fs::create_dir_all(jobs_dir.join("payments")).unwrap();
    std::fs::write(jobs_dir.join("payments/all.yaml"), &exported.stdout).unwrap();
    let jobs = jobs_dir.display().to_string();

    let target = start(&TempDir::new("cli-apply-target"), &[], &[]);
    let diff = cli(&target, &["diff", "-f", &jobs]);
    assert_eq!(diff.code, 1, "the target lacks the jobs: {diff:?}");
    assert!(diff.stdout.contains("create"), "{diff:?}");
    let applied = cli(
        &target,
        &["apply", "-f", &jobs, "--change-id", "git:1", "-o", "json"],
    )
    .json();
    assert_eq!(applied["created"], json!(["pay-a", "pay-b"]), "{applied}");
    let target_a = cli(&target, &["job", "get", "pay-a", "-o", "json"]).json();
    assert_eq!(
        target_a["state"],
        json!("active"),
        "a pause is not exported"
    );
    assert_eq!(cli(&target, &["diff", "-f", &jobs]).code, 0);

    // An operator pauses pay-a on the target; the files move pay-b: the pause stays.
    assert_eq!(
        cli(&target, &["job", "pause", "pay-a", "--notes", "incident 9"]).code,
        0
    );
    let moved = exported.stdout.replace("0 3 * * *", "30 3 * * *");
    std::fs::write(jobs_dir.join("payments/all.yaml"), &moved).unwrap();
    let diff = cli(&target, &["diff", "-f", &jobs]);
    assert_eq!(diff.code, 1, "{diff:?}");
    assert!(
        diff.stdout.contains("update") && diff.stdout.contains("30 3 * * *"),
        "{diff:?}"
    );
    let applied = cli(&target, &["apply", "-f", &jobs, "-o", "json"]).json();
    assert_eq!(
        applied["updated"]["pay-b"][0]["path"],
        json!("/schedule/cron/0")
    );
    let target_a = cli(&target, &["job", "get", "pay-a", "-o", "json"]).json();
    assert_eq!(target_a["pausedNotes"], json!("incident 9"));

    // pay-b leaves the files: --prune deletes it; a job made by hand with the label stays.
    let by_hand = write(
        &dir,
        "by-hand.json",
        &job("by-hand", "0 4 * * *").to_string(),
    );
    assert_eq!(
        cli(&target, &["job", "create", "by-hand", "-f", &by_hand]).code,
        0
    );
    let only_a: String = moved
        .split("---\n")
        .filter(|doc| doc.contains("jobId: pay-a"))
        .map(|doc| format!("---\n{doc}"))
        .collect();
    std::fs::write(jobs_dir.join("payments/all.yaml"), only_a).unwrap();
    let prune = ["--prune", "--label", "team=payments"];
    let diff = cli(&target, &[&["diff", "-f", &jobs][..], &prune[..]].concat());
    assert_eq!(diff.code, 1, "{diff:?}");
    let applied = cli(
        &target,
        &[&["apply", "-f", &jobs, "-o", "json"][..], &prune[..]].concat(),
    )
    .json();
    assert_eq!(applied["deleted"], json!(["pay-b"]), "{applied}");
    assert_eq!(
        cli(&target, &["job", "get", "by-hand", "-o", "json"]).code,
        0
    );
    let diff = cli(&target, &[&["diff", "-f", &jobs][..], &prune[..]].concat());
    assert_eq!(diff.code, 0, "{diff:?}");
    assert!(
        diff.stdout.contains("The server matches the files."),
        "{diff:?}"
    );

    // A bad file names the field, the job and the file.
    std::fs::write(
        jobs_dir.join("payments/bad.json"),
        json!({"jobId": "pay-c", "timeoutSeconds": "soon"}).to_string(),
    )
    .unwrap();
    cli(&target, &["apply", "-f", &jobs]).fails(4, "job pay-c in ");
    cli(&target, &["apply", "-f", &jobs, "--label", "team:x"]).fails(2, "--prune");
}
