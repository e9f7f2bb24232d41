//! What AWS would refuse, or what would break only when deployed, checked on the resolved
//! template before anything runs: the local stack refuses to start on any of it, so the
//! end-to-end run in CI fails on the template, not on a mystery.
//!
//! - An SQS event source mapping needs the queue's visibility timeout at least the function's
//!   timeout (Lambda refuses to create it otherwise), and a batching window for a batch over 10.
//! - A queue whose messages a function reports back (`ReportBatchItemFailures`) needs a redrive
//!   policy, or a message that always fails comes back for the whole retention period.
//! - API Gateway integrations are `AWS_PROXY`, payload format 2.0 (what `lambda_http` with
//!   `apigw_http` parses in the api binary), with a timeout of at most 30 s and longer than the
//!   function's, so that the function's own timeout answers first.
//! - Every variable the function binaries read (`SUNDIAL_*`, found by [`read_variables`] in
//!   `crates/aws/src/runtime.rs`) is set by the template for every function, and every `SUNDIAL_*`
//!   variable the template sets is read by them.
//! - Every function's `Policies` are explicit `Statement`s ([`policies`]): SAM's policy templates
//!   grant more than a function needs (`DynamoDBCrudPolicy` grants `Scan`), and only explicit
//!   statements can be compared with the calls each binary really makes ([`unauthorized`], over
//!   what [`crate::calls`] recorded in a run).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::stack::Stack;

/// The problems of `stack`, one sentence each; empty when none.
pub fn template(stack: &Stack) -> Vec<String> {
    let mut problems = Vec::new();
    for (logical_id, function) in &stack.functions {
        let timeout = function.timeout.unwrap_or(3);
        let mappings = match function.sqs_mappings(stack) {
            Ok(mappings) => mappings,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        for mapping in mappings {
            let Some(queue) = stack.queues.get(&mapping.queue) else {
                continue;
            };
            let visibility: u64 = queue
                .attributes
                .get("VisibilityTimeout")
                .and_then(|v| v.parse().ok())
                .unwrap_or(30);
            if visibility < timeout {
                problems.push(format!(
                    "{}: VisibilityTimeout {visibility} s is shorter than {logical_id}'s Timeout {timeout} s (Lambda refuses the event source mapping)",
                    mapping.queue
                ));
            }
            if mapping.report_batch_item_failures && !queue.attributes.contains_key("RedrivePolicy")
            {
                problems.push(format!(
                    "{}: {logical_id} reports failed messages but the queue has no RedrivePolicy",
                    mapping.queue
                ));
            }
        }
        if let Err(e) = function.schedules() {
            problems.push(e.to_string());
        }
    }
    for (id, integration) in &stack.integrations {
        if integration.integration_type.as_deref() != Some("AWS_PROXY")
            || integration.payload_format_version.as_deref() != Some("2.0")
        {
            problems.push(format!(
                "{id}: the api binary parses AWS_PROXY payload format 2.0, not {:?} {:?}",
                integration.integration_type, integration.payload_format_version
            ));
        }
        let millis = integration.timeout_in_millis.unwrap_or(30_000);
        if millis > 30_000 {
            problems.push(format!(
                "{id}: TimeoutInMillis {millis} is over HTTP APIs' 30 000"
            ));
        }
        if let Some(function) = integration
            .function
            .as_ref()
            .and_then(|f| stack.functions.get(f))
        {
            let timeout = function.timeout.unwrap_or(3).saturating_mul(1000);
            if timeout >= millis {
                problems.push(format!(
                    "{id}: {}'s Timeout ({timeout} ms) is not shorter than the integration's {millis} ms: API Gateway answers 503 before the function can",
                    function.name
                ));
            }
        }
    }
    problems
}

/// The actions a function's policy allows: every `Allow` statement's `Action`s (patterns, `*`
/// as in IAM), or a problem for each policy that is not an explicit statement.
pub fn allowed_actions(function: &str, policies: &Value) -> Result<Vec<String>, Vec<String>> {
    let mut actions = Vec::new();
    let mut problems = Vec::new();
    for policy in policies.as_array().map(Vec::as_slice).unwrap_or_default() {
        let Some(statements) = policy.get("Statement") else {
            problems.push(format!(
                "{function}: policy {policy} is not an explicit Statement (SAM's templates grant more than the function needs, and cannot be checked against its calls)"
            ));
            continue;
        };
        let statements = match statements {
            Value::Array(list) => list.clone(),
            one => vec![one.clone()],
        };
        for statement in statements {
            if statement.get("Effect").and_then(Value::as_str) != Some("Allow") {
                continue;
            }
            match statement.get("Action") {
                Some(Value::String(one)) => actions.push(one.clone()),
                Some(Value::Array(list)) => {
                    actions.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                _ => {}
            }
        }
    }
    if problems.is_empty() {
        Ok(actions)
    } else {
        Err(problems)
    }
}

/// Problems with the functions' policies: each must be explicit statements.
pub fn policies(stack: &Stack) -> Vec<String> {
    stack
        .functions
        .iter()
        .filter_map(|(id, f)| allowed_actions(id, &f.policies).err())
        .flatten()
        .collect()
}

/// Whether IAM action `action` matches `pattern` (`*` any run of characters, case-insensitive
/// as IAM compares actions).
pub fn action_matches(pattern: &str, action: &str) -> bool {
    let (pattern, action) = (pattern.to_ascii_lowercase(), action.to_ascii_lowercase());
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = action.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The calls a run made (function → IAM action → requests, from [`crate::calls::AwsCalls`]) that
/// the function's policy in `stack` does not allow, one sentence each.
pub fn unauthorized(stack: &Stack, calls: &BTreeMap<String, BTreeMap<String, u64>>) -> Vec<String> {
    let mut problems = Vec::new();
    for (logical_id, actions) in calls {
        let Some(function) = stack.functions.get(logical_id) else {
            continue;
        };
        let allowed = match allowed_actions(logical_id, &function.policies) {
            Ok(allowed) => allowed,
            Err(mut why) => {
                problems.append(&mut why);
                continue;
            }
        };
        for (action, count) in actions {
            if !allowed
                .iter()
                .any(|pattern| action_matches(pattern, action))
            {
                problems.push(format!(
                    "{logical_id} called {action} ({count} requests) but its policy does not allow it"
                ));
            }
        }
    }
    problems.extend(policies(stack));
    problems
}

/// The `SUNDIAL_*` names in `source` (Rust text), outside its `#[cfg(test)]` module.
pub fn read_variables(source: &str) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let mut names = BTreeSet::new();
    for (start, _) in code.match_indices("\"SUNDIAL_") {
        let rest = &code[start + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if rest[name.len()..].starts_with('"') && !name.ends_with('_') {
            names.insert(name);
        }
    }
    names
}

/// Problems between what the binaries read (`read`) and what each function of `stack` is given.
/// `optional` names variables a function may lack (the dead-letter queue of the other queue).
pub fn environment(stack: &Stack, read: &BTreeSet<String>, optional: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut set_anywhere = BTreeSet::new();
    for (logical_id, function) in &stack.functions {
        let given: BTreeSet<String> = function
            .environment
            .keys()
            .chain(function.unresolved.keys())
            .cloned()
            .collect();
        for name in read {
            if !given.contains(name) && !optional.contains(&name.as_str()) {
                problems.push(format!(
                    "{logical_id}: {name} is read but the template does not set it"
                ));
            }
        }
        set_anywhere.extend(given.into_iter().filter(|n| n.starts_with("SUNDIAL_")));
    }
    for name in set_anywhere.difference(read) {
        problems.push(format!(
            "{name} is set by the template but no binary reads it"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_match_iam_patterns() {
        assert!(action_matches("dynamodb:Query", "dynamodb:Query"));
        assert!(action_matches("dynamodb:query", "dynamodb:Query"));
        assert!(action_matches("sqs:SendMessage*", "sqs:SendMessage"));
        assert!(action_matches("sqs:*", "sqs:SendMessage"));
        assert!(!action_matches("dynamodb:Query", "dynamodb:Scan"));
        assert!(!action_matches("sqs:Send*Batch", "sqs:SendMessage"));
        assert!(action_matches("*", "events:PutEvents"));
    }

    #[test]
    fn a_policy_template_is_a_problem_and_a_statement_lists_its_actions() {
        let policies = serde_json::json!([
            {"Statement": [{"Effect": "Allow", "Action": ["dynamodb:Query", "dynamodb:GetItem"]}]},
            {"Statement": {"Effect": "Allow", "Action": "events:PutEvents"}},
        ]);
        assert_eq!(
            allowed_actions("Api", &policies).unwrap(),
            ["dynamodb:Query", "dynamodb:GetItem", "events:PutEvents"]
        );
        let crud = serde_json::json!([{"DynamoDBCrudPolicy": {"TableName": "t"}}]);
        assert!(allowed_actions("Api", &crud).is_err());
    }

    #[test]
    fn variable_names_are_read_from_string_literals_outside_tests() {
        let source = r#"
            let a = get("SUNDIAL_TABLE");
            /// `SUNDIAL_VAR_*`
            let b = prefix("SUNDIAL_VAR_");
            #[cfg(test)]
            mod tests { const X: &str = "SUNDIAL_TEST_ONLY"; }
        "#;
        let names: Vec<_> = read_variables(source).into_iter().collect();
        assert_eq!(names, ["SUNDIAL_TABLE"]);
    }
}
