//! Issue 15 item 10, end to end: the real `sundial serve --aws-targets` sends jobs' `sqs` and
//! `eventbridge` targets through the AWS SDK to moto server on 127.0.0.1 (`AWS_ENDPOINT_URL`), and a
//! send that fails is a failed attempt, retried, with AWS's error in the execution's log.
//!
//! Moto is started through `infra/moto.py` by `sundial_testkit::moto` (as for the AWS adapters'
//! tests) and stops when this process exits; the queues and the bus rule are made, and the messages read, with boto3 in a
//! short Python script, so this crate needs no AWS SDK of its own. Without Python's `moto[server]`
//! the tests say so and skip; under CI (`CI` set) or with `SUNDIAL_REQUIRE_MOTO=1` they fail.
//!
//! Built only with the cargo feature (`cargo test -p sundial-cli --features aws-targets`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{json, Value};
use sundial_testkit::moto::{moto_or_skip, MotoServer};
use sundial_testkit::TempDir;

use common::{refused_start, start, wait_final, Server};

/// Moto server for this test binary, and the AWS settings that reach it.
struct Moto {
    /// The AWS client settings only (`AWS_ENDPOINT_URL`, `AWS_REGION`, test credentials).
    env: BTreeMap<String, String>,
    _server: MotoServer,
}

fn moto() -> Option<&'static Moto> {
    static MOTO: OnceLock<Option<Moto>> = OnceLock::new();
    MOTO.get_or_init(|| {
        moto_or_skip("sundial-cli-test").map(|server| Moto {
            env: server
                .env
                .iter()
                .filter(|(k, _)| k.starts_with("AWS_"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            _server: server,
        })
    })
    .as_ref()
}

/// What the boto3 script can do: make a queue (prints its URL), make a bus whose rule for
/// `source: my.app` forwards to a new queue (prints that queue's URL), and read a queue (prints
/// the bodies as a JSON list).
const BOTO: &str = r#"
import json, sys, boto3
op, name = sys.argv[1], sys.argv[2]
sqs = boto3.client("sqs")
if op == "queue":
    print(json.dumps(sqs.create_queue(QueueName=name)["QueueUrl"]))
elif op == "bus":
    events = boto3.client("events")
    events.create_event_bus(Name=name)
    url = sqs.create_queue(QueueName=name + "-out")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name=name + "-rule", EventBusName=name, EventPattern=json.dumps({"source": ["my.app"]}))
    events.put_targets(Rule=name + "-rule", EventBusName=name, Targets=[{"Id": "q", "Arn": arn}])
    print(json.dumps(url))
elif op == "receive":
    out = sqs.receive_message(QueueUrl=name, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    print(json.dumps([m["Body"] for m in out.get("Messages", [])]))
"#;

impl Moto {
    fn boto(&self, op: &str, name: &str) -> Value {
        let python = sundial_testkit::python::python().expect("moto's python started this server");
        let output = Command::new(python)
            .args(["-c", BOTO, op, name])
            .envs(&self.env)
            .output()
            .expect("running python3");
        assert!(
            output.status.success(),
            "boto3 {op} {name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("the script prints JSON")
    }

    /// The bodies waiting in the queue at `url`, as JSON.
    fn receive(&self, url: &str) -> Vec<Value> {
        let bodies = self.boto("receive", url);
        bodies
            .as_array()
            .expect("a list")
            .iter()
            .map(|b| serde_json::from_str(b.as_str().expect("a body")).expect("a JSON body"))
            .collect()
    }

    /// `serve`'s environment: moto's endpoint, region and dummy credentials.
    fn env(&self) -> Vec<(&str, &str)> {
        self.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

/// A triggered-only job with `target`.
fn target_job(target: Value) -> Value {
    json!({"jobName": "targets", "creator": "001", "creatorName": "tests",
           "timer": {"period": "external"}, "target": target})
}

/// Triggers `job_id` with `arguments` and waits for the run's end.
fn run(server: &Server, job_id: &str, arguments: &Value) -> Value {
    let reply = server.call("POST", &format!("/jobs/{job_id}/trigger"), Some(arguments));
    let execution_id = reply.ok_envelope()["executionId"]
        .as_str()
        .expect("executionId")
        .to_owned();
    wait_final(server, &execution_id)
}

/// An `sqs` target's run puts one message in the moto queue and succeeds; an `eventbridge`
/// target's run puts one event on the bus, which a rule forwards to a queue; a queue that does
/// not exist fails the attempt with AWS's error in the log, and the job's retry policy tries
/// again before the run ends `Terminated`.
#[test]
fn targets_are_delivered_to_moto_and_failures_are_retried() {
    let Some(moto) = moto() else { return };
    let tag = std::process::id();
    let queue = moto.boto("queue", &format!("jobs-{tag}"));
    let queue = queue.as_str().unwrap();
    let bus = format!("bus-{tag}");
    let bus_out = moto.boto("bus", &bus);
    let bus_out = bus_out.as_str().unwrap();

    let dir = TempDir::new("aws-targets");
    let mut env = moto.env();
    env.push(("SUNDIAL_AWS_TARGETS", "1"));
    let server = start(&dir, &[], &env);
    assert!(
        server.log_text().contains("sent to AWS"),
        "{}",
        server.log_text()
    );

    server
        .call(
            "POST",
            "/jobs/to-queue",
            Some(&target_job(json!({"sqs": {"queueUrl": queue}}))),
        )
        .ok_envelope();
    let execution = run(&server, "to-queue", &json!({"n": 7}));
    assert_eq!(execution["state"], "Succeeded", "{execution:#}");
    let messages = moto.receive(queue);
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["jobId"], "to-queue");
    assert_eq!(messages[0]["executionId"], execution["executionId"]);
    assert_eq!(messages[0]["arguments"], json!({"n": 7}));

    let to_bus = target_job(
        json!({"eventbridge": {"busName": bus, "source": "my.app", "detailType": "Tick"}}),
    );
    server
        .call("POST", "/jobs/to-bus", Some(&to_bus))
        .ok_envelope();
    let execution = run(&server, "to-bus", &json!({}));
    assert_eq!(execution["state"], "Succeeded", "{execution:#}");
    let events = moto.receive(bus_out);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["source"], "my.app");
    assert_eq!(events[0]["detail-type"], "Tick");
    assert_eq!(events[0]["detail"]["jobId"], "to-bus");

    let missing = queue.replace(&format!("jobs-{tag}"), &format!("missing-{tag}"));
    let mut nowhere = target_job(json!({"sqs": {"queueUrl": missing}}));
    nowhere["retryPolicy"] = json!({"initialInterval": "1s", "maximumAttempts": 2});
    server
        .call("POST", "/jobs/to-nowhere", Some(&nowhere))
        .ok_envelope();
    let execution = run(&server, "to-nowhere", &json!({}));
    assert_eq!(execution["state"], "Terminated", "{execution:#}");
    assert_eq!(execution["attempts"], 2, "{execution:#}");
    let logs = &execution["events"];
    let text = logs.to_string();
    let failures = text.matches("target: rejected: SendMessage").count();
    assert_eq!(failures, 2, "each attempt logs the send's failure: {text}");
    assert!(
        text.contains("NonExistentQueue") || text.contains("QueueDoesNotExist"),
        "AWS's own error is in the log: {text}"
    );
}

/// `--aws-targets` with no region anywhere, then with a region but no credentials (the instance
/// metadata endpoint switched off: it is not on loopback), stops the start with a message naming
/// the flag and what to set.
#[test]
fn a_start_without_a_region_or_credentials_is_refused() {
    let dir = TempDir::new("no-region");
    let nothing = [
        ("AWS_DEFAULT_REGION", ""),
        ("AWS_PROFILE", ""),
        ("AWS_ACCESS_KEY_ID", ""),
        ("AWS_SECRET_ACCESS_KEY", ""),
        ("AWS_SESSION_TOKEN", ""),
        ("AWS_CONFIG_FILE", "/nonexistent/sundial-test"),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/sundial-test"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ];
    for (region, expected, names) in [
        ("", "error: --aws-targets: no AWS region", "AWS_REGION"),
        (
            "us-east-1",
            "error: --aws-targets: no AWS credentials",
            "AWS_ACCESS_KEY_ID",
        ),
    ] {
        let mut env = nothing.to_vec();
        env.push(("AWS_REGION", region));
        let (code, stdout, stderr) = refused_start(&dir, &["--aws-targets"], &env);
        assert_eq!(code, Some(1), "stderr: {stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(stderr.contains(names), "{stderr}");
        assert_eq!(stdout, "", "it never listened");
    }
}
