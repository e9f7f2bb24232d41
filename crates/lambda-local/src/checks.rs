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

use std::collections::BTreeSet;

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
