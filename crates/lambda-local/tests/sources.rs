//! The SQS event source mapping against moto, with a function speaking the Runtime API (Python):
//! only the messages a batch answer names come back, and moto's redrive moves a message that
//! keeps failing to the dead-letter queue after `maxReceiveCount` receives. Needs moto and
//! python3 (skips without them, unless CI or `SUNDIAL_REQUIRE_MOTO` is set).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::QueueAttributeName;
use sundial_lambda_local::runtime::{reserved_environment, Function, FunctionConfig};
use sundial_lambda_local::sources::SqsPoller;
use sundial_lambda_local::stack::SqsMapping;
use sundial_lambda_local::{start_moto, Log, Options};

/// Answers every batch naming its records whose body is `fail` in `batchItemFailures`.
const FUNCTION: &str = r#"
import json, os, urllib.request
api = os.environ["AWS_LAMBDA_RUNTIME_API"]
while True:
    r = urllib.request.urlopen(f"http://{api}/2018-06-01/runtime/invocation/next")
    rid = r.headers["lambda-runtime-aws-request-id"]
    event = json.loads(r.read())
    failed = [{"itemIdentifier": m["messageId"]} for m in event["Records"] if m["body"] == "fail"]
    answer = json.dumps({"batchItemFailures": failed}).encode()
    url = f"http://{api}/2018-06-01/runtime/invocation/{rid}/response"
    urllib.request.urlopen(urllib.request.Request(url, data=answer, method="POST"))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn reported_failures_come_back_and_end_in_the_dead_letter_queue() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("sundial-sources-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut options = Options::new(repo);
    // The pinned moto, provisioned on first use (else python3 as it is, which says why not).
    if let Ok(python) = sundial_testkit::python::python() {
        options.python = python;
    }
    options.prefix = format!("src{}", std::process::id());
    options.log = Log::file(&dir.join("log")).unwrap();
    let (_moto, line) = match start_moto(&options, "http://127.0.0.1:9").await {
        Ok(started) => started,
        Err(e) if sundial_testkit::moto::required() => panic!("moto is required here: {e}"),
        Err(e) => {
            sundial_testkit::skipped(&format!("{}: {e}", module_path!()));
            return;
        }
    };
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    let python = String::from_utf8(python.stdout).unwrap().trim().to_owned();
    std::fs::write(dir.join("function.py"), FUNCTION).unwrap();
    let binary = dir.join("bootstrap");
    std::fs::write(
        &binary,
        format!(
            "#!/bin/sh\nexec {python} {}\n",
            dir.join("function.py").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();

    // A queue of our own, whose visibility timeout of 1 s brings failures back quickly.
    let sqs = sundial_lambda_local::client_for(&line.endpoint, Some(line.region.clone()));
    let dlq = sqs
        .create_queue()
        .queue_name(format!("{}-dlq", options.prefix))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let dlq_arn = sqs
        .get_queue_attributes()
        .queue_url(&dlq)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone();
    let queue = sqs
        .create_queue()
        .queue_name(format!("{}-work", options.prefix))
        .attributes(QueueAttributeName::VisibilityTimeout, "1")
        .attributes(
            QueueAttributeName::RedrivePolicy,
            format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"3"}}"#),
        )
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    for body in ["ok-1", "fail", "ok-2"] {
        sqs.send_message()
            .queue_url(&queue)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }

    let function = Arc::new(Function::new(
        FunctionConfig {
            logical_id: "WorkFunction".into(),
            name: "work".into(),
            binary,
            timeout: Duration::from_secs(10),
            memory_mb: 128,
            concurrency: 2,
            environment: reserved_environment("work", 128, &line.region, None),
            region: line.region.clone(),
        },
        options.log.clone(),
    ));
    let poller = Arc::new(SqsPoller {
        function: Arc::clone(&function),
        mapping: SqsMapping {
            queue: "Work".into(),
            batch_size: 10,
            batching_window_seconds: 0,
            maximum_concurrency: 2,
            report_batch_item_failures: true,
        },
        queue_url: queue.clone(),
        queue_arn: "arn:aws:sqs:us-east-1:123456789012:work".into(),
        region: line.region.clone(),
        sqs: sqs.clone(),
        log: options.log.clone(),
    });
    let polling = tokio::spawn(poller.run());

    let deadline = Instant::now() + Duration::from_secs(30);
    let dead = loop {
        let out = sqs
            .receive_message()
            .queue_url(&dlq)
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
        let bodies: Vec<String> = out
            .messages
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.body)
            .collect();
        if !bodies.is_empty() || Instant::now() > deadline {
            break bodies;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    polling.abort();
    assert_eq!(
        dead,
        ["fail"],
        "only the failing message, after its receives"
    );
    let left = sqs
        .get_queue_attributes()
        .queue_url(&queue)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(
        left[&QueueAttributeName::ApproximateNumberOfMessages],
        "0",
        "{left:?}"
    );
    assert_eq!(
        left[&QueueAttributeName::ApproximateNumberOfMessagesNotVisible],
        "0",
        "the others were deleted: {left:?}"
    );
    let log = std::fs::read_to_string(dir.join("log")).unwrap();
    assert!(
        log.contains("batch of 3: 2 done, 1 reported failed"),
        "{log}"
    );
    function.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}
