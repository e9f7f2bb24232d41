//! `sundial calendar put|get|list|delete` against a real `sundial serve` on a loopback port: a
//! calendar from a YAML file, a job that names it, its change re-planning the job, and its
//! deletion refused while the job uses it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use common::{start, Server};
use sundial_testkit::TempDir;

#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `sundial --server URL ARGS` against `server`, with no colour and none of the caller's
/// client settings.
fn cli(server: &Server, args: &[&str]) -> Run {
    let url = format!("http://{}", server.addr);
    let out = Command::new(env!("CARGO_BIN_EXE_sundial"))
        .args(["--server", url.as_str()])
        .args(args)
        .env_remove("SUNDIAL_SERVER")
        .env_remove("SUNDIAL_API_TOKEN")
        .env_remove("SUNDIAL_AUTH")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run sundial");
    Run {
        code: out.status.code().expect("an exit code"),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

fn json_of(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {run:?}"))
}

const LONDON: &str = "\
description: England and Wales bank holidays
timeZone: Europe/London
weekend: SAT,SUN
rules:
  - {month: 1, day: 1, observed: nextWeekday, comment: New Year's Day}
  - {easter: -2, comment: Good Friday}
  - {easter: 1, comment: Easter Monday}
  - {month: 5, weekday: MON, nth: 1, comment: Early May bank holiday}
  - {month: 5, weekday: MON, nth: -1, comment: Spring bank holiday}
  - {month: 8, weekday: MON, nth: -1, comment: Summer bank holiday}
  - {month: 12, day: 25, observed: nextWeekday, comment: Christmas Day}
  - {month: 12, day: 26, observed: nextWeekday, comment: Boxing Day}
";

#[test]
fn calendar_commands_end_to_end() {
    let dir = TempDir::new("cli-calendars");
    let server = start(&dir, &[], &[]);
    let file = dir.join("london.yaml");
    std::fs::write(&file, LONDON).unwrap();
    let file = file.display().to_string();

    let put = cli(&server, &["calendar", "put", "london", "-f", &file]);
    assert_eq!(put.code, 0, "{put:?}");
    assert_eq!(
        put.stdout,
        "calendar london created (version 1); 0 job(s) queued for re-planning, 0 re-planned\n"
    );

    // Payroll on the last business day of each month in London.
    let job = json!({
        "jobName": "payroll", "creator": "finance", "creatorName": "Finance",
        "schedule": {"calendars": [{"businessDay": -1, "calendar": "london", "hour": "18"}],
                     "timeZone": "Europe/London"},
        "request": [{"method": "POST", "url": "http://127.0.0.1:9/pay"}]
    });
    let created = server.call("POST", "/jobs/payroll", Some(&job));
    assert_eq!(created.status, 200, "{:?}", created.body);

    let again = json_of(&cli(
        &server,
        &["calendar", "put", "london", "-f", &file, "-o", "json"],
    ));
    // The same calendar again: the job is queued, and left as it is (its copy is already this).
    assert_eq!(again["queued"], json!(1));
    assert_eq!(again["replanned"], json!(0));
    assert_eq!(again["calendar"]["version"], json!(2));

    let table = cli(&server, &["calendar", "get", "london"]);
    assert_eq!(table.code, 0, "{table:?}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME    ZONE"), "{table:?}");
    assert!(lines[0].ends_with("JOBS"), "{table:?}");
    assert!(
        lines[1].starts_with("london  Europe/London  SAT,SUN"),
        "{table:?}"
    );
    assert!(lines[1].ends_with("payroll"), "{table:?}");

    let listed = json_of(&cli(&server, &["calendar", "list", "-o", "json"]));
    assert_eq!(listed["calendars"][0]["name"], json!("london"));
    assert_eq!(listed["calendars"].as_array().unwrap().len(), 1);

    let refused = cli(&server, &["calendar", "delete", "london"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("calendar london is used by 1 job(s): payroll"),
        "{refused:?}"
    );

    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"rules": [{"month": 5, "weekday": "MON", "nth": 6}]}"#,
    )
    .unwrap();
    let invalid = cli(
        &server,
        &["calendar", "put", "paris", "-f", &bad.display().to_string()],
    );
    assert_ne!(invalid.code, 0, "{invalid:?}");
    assert!(invalid.stderr.contains("rules[0]: nth: 6"), "{invalid:?}");

    assert_eq!(server.call("DELETE", "/jobs/payroll", None).status, 200);
    let deleted = cli(&server, &["calendar", "delete", "london"]);
    assert_eq!(deleted.code, 0, "{deleted:?}");
    assert_eq!(deleted.stdout, "calendar london deleted\n");
    let gone = cli(&server, &["calendar", "get", "london"]);
    assert_eq!(gone.code, 3, "not found: {gone:?}");
}
