//! `scripts/aws-smoke` without an AWS account: its JSON helpers on fixtures (`--self-test`), and
//! whole runs against stand-ins for `aws`, `sam` and `sundial` that log their arguments and answer
//! as the real ones do. They check the order (build, deploy, checks, figures), that the stack it
//! deploys is the one it deletes, and that everything it made is deleted when a check fails too.
//! What only AWS can show (the deploy itself, the real runs) is what the script is for.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sundial_testkit::TempDir;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/aws-smoke")
}

/// Stand-ins: each logs `name args…` to `calls.log` and answers the call it gets.
const AWS: &str = r#"#!/bin/sh
echo "aws $*" >> "$STUB_LOG"
case "$*" in
  *"sqs create-queue"*) echo "https://sqs.eu-west-1.amazonaws.com/123456789012/target" ;;
  *"sqs get-queue-attributes"*) echo "arn:aws:sqs:eu-west-1:123456789012:target" ;;
  *"cloudformation describe-stacks"*)
    echo '{"Stacks": [{"Outputs": [{"OutputKey": "ApiUrl", "OutputValue": "https://api.example"}, {"OutputKey": "TableName", "OutputValue": "smoke-table"}]}]}' ;;
  *"sqs receive-message"*)
    printf '{"Messages": ['
    for n in 1 2 3 4 5 6 7 8 9 10 11; do
      [ "$n" = 1 ] || printf ','
      printf '{"Body": "{\\"jobId\\": \\"smoke-every10\\", \\"executeNumber\\": %s, \\"scheduledTime\\": \\"2030-01-01T00:00:%02dZ\\"}", "Attributes": {"SentTimestamp": "%s"}}' \
        "$n" "$n" "$((1893456000000 + n * 1000 + 50))"
    done
    printf ']}\n' ;;
  *"cloudwatch get-metric-statistics"*) echo '{"Datapoints": [{"Sum": 280}]}' ;;
esac
"#;

const SAM: &str = "#!/bin/sh\necho \"sam $*\" >> \"$STUB_LOG\"\n";

const SUNDIAL: &str = r#"#!/bin/sh
echo "sundial $*" >> "$STUB_LOG"
case "$*" in
  *"job create"*) [ -n "$STUB_FAIL_CREATE" ] && { echo "refused" >&2; exit 4; }; echo '{}' ;;
  *"job trigger smoke-once"*) echo '{"executionId": "smoke-once~t~1"}' ;;
  *"execution list smoke-once"*) echo '{"executions": [{"state": "Succeeded"}]}' ;;
  *"execution list smoke-failing"*) echo '{"executions": [{"state": "Terminated", "attempts": 3}]}' ;;
  *) echo '{}' ;;
esac
"#;

fn stubs(dir: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    for (name, text) in [("aws", AWS), ("sam", SAM), ("sundial", SUNDIAL)] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn run(dir: &Path, fail_create: bool) -> (Output, Vec<String>) {
    let log = dir.join("calls.log");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .arg(script())
        .args(["--region", "eu-west-1", "--no-build"])
        .env("PATH", path)
        .env("STUB_LOG", &log)
        .env("SUNDIAL_CLI", dir.join("sundial"))
        .env("SMOKE_WAIT_SECONDS", "0")
        .env("TMPDIR", dir);
    if fail_create {
        command.env("STUB_FAIL_CREATE", "1");
    }
    let output = command.output().unwrap();
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    (output, calls)
}

fn position(calls: &[String], prefix: &str) -> usize {
    calls
        .iter()
        .position(|c| c.starts_with(prefix))
        .unwrap_or_else(|| panic!("no call `{prefix}…` in {calls:#?}"))
}

fn stack_of(call: &str) -> &str {
    call.split_whitespace()
        .skip_while(|w| *w != "--stack-name")
        .nth(1)
        .unwrap_or_default()
}

#[test]
fn the_json_helpers_pass_their_self_test() {
    let output = Command::new("bash")
        .arg(script())
        .arg("--self-test")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

#[test]
fn a_run_deploys_checks_prints_its_figures_and_deletes_what_it_made() {
    let dir = TempDir::new("aws-smoke");
    stubs(dir.path());
    let (output, calls) = run(dir.path(), false);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}\n{calls:#?}");
    let deploy = &calls[position(&calls, "sam deploy")];
    let delete = &calls[position(&calls, "sam delete")];
    assert!(stack_of(deploy).starts_with("sundial-smoke-"), "{deploy}");
    assert_eq!(
        stack_of(deploy),
        stack_of(delete),
        "the stack deployed is the one deleted"
    );
    assert!(
        deploy.contains("TargetQueueArns=arn:aws:sqs:eu-west-1:123456789012:target"),
        "{deploy}"
    );
    assert!(position(&calls, "aws sqs create-queue") < position(&calls, "sam deploy"));
    assert!(
        position(
            &calls,
            "sundial --region eu-west-1 --output json job create smoke-every10"
        ) > position(&calls, "sam deploy")
    );
    // Cleaned up last: the stack, its retained table, the target queue.
    assert!(position(&calls, "sam delete") > position(&calls, "aws cloudwatch"));
    assert!(calls
        .iter()
        .any(|c| c.contains("dynamodb delete-table") && c.contains("smoke-table")));
    assert!(calls.iter().any(|c| c.contains("sqs delete-queue")));
    // The figures: 11 distinct runs, each 50 ms after its second.
    assert!(stdout.contains("runs: 11 delivered"), "{stdout}");
    assert!(stdout.contains("p50 50 ms, max 50 ms"), "{stdout}");
    assert!(stdout.contains("280 WRU"), "{stdout}");
    // The same trigger twice, with one key.
    let triggers: Vec<_> = calls
        .iter()
        .filter(|c| c.ends_with("job trigger smoke-once --idempotency-key smoke-key"))
        .collect();
    assert_eq!(triggers.len(), 2, "{calls:#?}");
}

#[test]
fn a_failed_check_still_deletes_everything_and_fails_the_run() {
    let dir = TempDir::new("aws-smoke-fail");
    stubs(dir.path());
    let (output, calls) = run(dir.path(), true);
    assert!(!output.status.success(), "{calls:#?}");
    let deploy = &calls[position(&calls, "sam deploy")];
    let delete = &calls[position(&calls, "sam delete")];
    assert_eq!(stack_of(deploy), stack_of(delete));
    assert!(calls.iter().any(|c| c.contains("dynamodb delete-table")));
    assert!(calls.iter().any(|c| c.contains("sqs delete-queue")));
}
