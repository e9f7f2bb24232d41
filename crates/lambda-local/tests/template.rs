//! The deployment details a real run depends on, checked on the template as `infra/moto.py`
//! resolves it (moto is needed to resolve it: without it the test skips, unless CI or
//! `SUNDIAL_REQUIRE_MOTO` is set).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use sundial_lambda_local::{checks, start_moto, Log, Options};

#[tokio::test(flavor = "multi_thread")]
async fn the_template_gives_the_binaries_what_they_read_and_aws_accepts() {
    let mut options = Options::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    // The pinned moto, provisioned on first use (else python3 as it is, which says why not).
    if let Ok(python) = sundial_testkit::python::python() {
        options.python = python;
    }
    options.prefix = format!("tpl{}", std::process::id());
    options.log = Log::file(
        &std::env::temp_dir().join(format!("sundial-template-{}.log", std::process::id())),
    )
    .unwrap();
    let (_moto, line) = match start_moto(&options, "http://127.0.0.1:9").await {
        Ok(started) => started,
        Err(e) if sundial_testkit::moto::required() => panic!("moto is required here: {e}"),
        Err(e) => {
            sundial_testkit::skipped(&format!("{}: {e}", module_path!()));
            return;
        }
    };
    assert_eq!(checks::template(&line.stack), Vec::<String>::new());

    // What the binaries read (crates/aws/src/runtime.rs, Settings::from_vars) is what every
    // function is given; each worker gets its own dead-letter queue's URL.
    let read = checks::read_variables(include_str!("../../aws/src/runtime.rs"));
    assert!(
        read.contains("SUNDIAL_TABLE") && read.contains("SUNDIAL_DISPATCH_DLQ_URL"),
        "{read:?}"
    );
    // The console's secret (empty unless Console is true) and the JWT scope mapping are the API
    // function's only.
    let optional = [
        "SUNDIAL_DISPATCH_DLQ_URL",
        "SUNDIAL_NOTIFY_DLQ_URL",
        "SUNDIAL_CONSOLE_TOKENS_SECRET",
        "SUNDIAL_JWT_SCOPE_CLAIM",
        "SUNDIAL_JWT_WRITE_SCOPE",
        "SUNDIAL_JWT_READ_SCOPE",
        "SUNDIAL_JWT_ISSUER",
        "SUNDIAL_CONSOLE_CLIENT_ID",
        "SUNDIAL_CONSOLE_CLIENT_SECRET",
    ];
    assert_eq!(
        checks::environment(&line.stack, &read, &optional),
        Vec::<String>::new()
    );
    let functions = &line.stack.functions;
    assert!(functions["DispatchFunction"]
        .environment
        .contains_key("SUNDIAL_DISPATCH_DLQ_URL"));
    assert!(functions["NotifyFunction"]
        .environment
        .contains_key("SUNDIAL_NOTIFY_DLQ_URL"));
    for name in [
        "SUNDIAL_CONSOLE_TOKENS_SECRET",
        "SUNDIAL_JWT_SCOPE_CLAIM",
        "SUNDIAL_JWT_WRITE_SCOPE",
        "SUNDIAL_JWT_READ_SCOPE",
    ] {
        assert!(
            functions["ApiFunction"].environment.contains_key(name),
            "{name}"
        );
    }

    // Each function's environment, as the template resolves it, is one its binary starts with.
    for (id, function) in functions {
        let vars: Vec<(String, String)> = function.environment.clone().into_iter().collect();
        let settings = sundial_aws::Settings::from_vars(vars);
        assert!(
            settings.is_ok(),
            "{id}: {:?}",
            settings.err().map(|e| e.to_string())
        );
        assert!(
            function.unresolved.is_empty(),
            "{id}: {:?}",
            function.unresolved
        );
    }
    let public = &functions["ApiFunction"].environment["SUNDIAL_PUBLIC_URL"];
    assert_eq!(
        public, "http://127.0.0.1:9",
        "the feedback URLs lead to the API"
    );

    // Every function's policy is explicit statements (checks::template refuses templates), and
    // allows exactly the DynamoDB operations the store adapter's code calls. No code scans the
    // table (issue 31: retention reads each job's keys, `GET /stats` the jobs and statistics),
    // and no function may.
    let operations = dynamo_operations();
    assert!(operations.contains("dynamodb:Query"), "{operations:?}");
    assert!(!operations.contains("dynamodb:Scan"), "{operations:?}");
    for (id, function) in functions {
        let allowed = checks::allowed_actions(id, &function.policies).unwrap();
        let allows = |action: &str| allowed.iter().any(|p| checks::action_matches(p, action));
        for action in &operations {
            assert!(allows(action), "{id}: {action} allowed? {allowed:?}");
        }
        assert!(!allows("dynamodb:Scan"), "{id}: nothing scans the table");
        assert!(
            !allows("dynamodb:DescribeTable"),
            "{id}: nothing describes the table"
        );
        assert!(
            allows("events:PutEvents"),
            "{id}: every function publishes events"
        );
    }
}

/// The IAM actions of the DynamoDB calls in the store adapter's source (`.put_item()` →
/// `dynamodb:PutItem`; a transaction → the actions of the items it can hold).
fn dynamo_operations() -> std::collections::BTreeSet<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../aws/src/dynamo");
    let mut actions = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for (operation, action) in [
            (".get_item()", "GetItem"),
            (".batch_get_item()", "BatchGetItem"),
            (".query()", "Query"),
            (".scan()", "Scan"),
            (".put_item()", "PutItem"),
            (".update_item()", "UpdateItem"),
            (".delete_item()", "DeleteItem"),
            (".batch_write_item()", "BatchWriteItem"),
            (".describe_table()", "DescribeTable"),
        ] {
            if source.contains(operation) {
                actions.insert(format!("dynamodb:{action}"));
            }
        }
        if source.contains(".transact_write_items()") {
            for action in ["PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"] {
                actions.insert(format!("dynamodb:{action}"));
            }
        }
    }
    actions
}
