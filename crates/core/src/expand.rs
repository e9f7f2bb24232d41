//! Filling in docs/api.md's `${…}` templates at fire time.
//!
//! [`crate::template`] checks templates when a job is created; this module turns them into the text
//! and JSON that are actually sent, from the values an execution has gathered so far: system
//! variables, the trigger's arguments, earlier responses (by `respEnvName` or by JSONPath) and the
//! `SUNDIAL_VAR_` environment variables the caller chose to expose. It stays pure: the caller hands
//! everything in as [`Variables`], so the process environment can never leak into a request by
//! accident and expansion is reproducible in tests. An expression that resolves to nothing is an
//! error rather than an empty string, because a request quietly sent with a blank token or id is far
//! harder to diagnose than a failed step. Responses can be large and templates can repeat them, so
//! output is measured while it is written and abandoned as soon as it passes
//! [`MAX_EXPANDED_BYTES`], instead of being built in full and checked afterwards. Substituted values
//! are never expanded again: a response that contains `${…}` cannot reach other variables.
//!
//! ```
//! use serde_json::json;
//! use sundial_core::expand::{expand_body, expand_text, Variables};
//! let mut vars = Variables::default();
//! vars.system.insert("jobId".into(), json!("j-1"));
//! vars.responses.push(json!({"student": {"name": "Ann"}}));
//! assert_eq!(expand_text("job=${jobId}&n=${$.student.name}", &vars).unwrap(), "job=j-1&n=Ann");
//! let body = expand_body(&json!({"school": "${$.student}|json"}), &vars).unwrap();
//! assert_eq!(body, json!({"school": {"name": "Ann"}}));
//! ```

use std::collections::BTreeMap;
use std::io;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Map, Value};

use crate::execution::Execution;
use crate::job::JobState;
use crate::json_path::{describe, is_json_path, parse_path, quote, BadPath, Step};
use crate::signing;
use crate::template::{Part, Template};

/// The most bytes one expanded string, or one expanded body serialised as compact JSON, may hold.
pub const MAX_EXPANDED_BYTES: usize = 256 * 1024;

/// Only environment variables with this prefix are visible to templates, so that a job cannot read
/// the service's own configuration or secrets.
pub const ENV_PREFIX: &str = "SUNDIAL_VAR_";

/// The key under which the JSONPath root lists every earlier response body.
const RESPONSES: &str = "responses";

/// Why a template could not be expanded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExpandError {
    /// A plain name that is not a system variable, response name, trigger argument or
    /// `SUNDIAL_VAR_` variable.
    #[error("unknown placeholder \"${{{expr}}}\": not a system variable, response name, trigger argument or {ENV_PREFIX} variable")]
    Unknown {
        /// The expression as written between `${` and `}`.
        expr: String,
    },
    /// A JSONPath that is malformed, uses unsupported syntax or selects nothing.
    #[error("JSONPath \"{expr}\": {reason}")]
    BadPath {
        /// The expression as written.
        expr: String,
        /// What went wrong, and where.
        reason: String,
    },
    /// The expanded string or body would exceed `limit` bytes.
    #[error("expanded template exceeds {limit} bytes")]
    TooLarge {
        /// The limit that was hit: [`MAX_EXPANDED_BYTES`].
        limit: usize,
    },
    /// A string is not a valid template (bodies are checked at job creation, so this means the
    /// stored job was changed behind the parser's back).
    #[error("invalid template: {0}")]
    Parse(String),
}

impl From<BadPath> for ExpandError {
    fn from(bad: BadPath) -> Self {
        ExpandError::BadPath {
            expr: bad.expr,
            reason: bad.reason,
        }
    }
}

fn too_large() -> ExpandError {
    ExpandError::TooLarge {
        limit: MAX_EXPANDED_BYTES,
    }
}

/// Everything placeholders of one execution can read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Variables {
    /// System variables: `schedulingFeedbackUrl`, `schedulingJobId`, `schedulingExecuteNumber`,
    /// `schedulingRequestCounts`, `schedulingNotifyBody`, `jobId`, `executeNumber`,
    /// `scheduledTime` and whatever else the caller provides. They win over every other source.
    pub system: BTreeMap<String, Value>,
    /// The trigger's arguments: `${argName}` reads a top-level key.
    pub arguments: Map<String, Value>,
    /// Bodies of the earlier responses of this execution, oldest first; JSONPath reads these.
    pub responses: Vec<Value>,
    /// Earlier response bodies by their request's `respEnvName`.
    pub named: BTreeMap<String, Value>,
    /// Environment variables, already filtered by the caller. Only names starting with
    /// [`ENV_PREFIX`] are ever read, whatever else the map holds.
    pub env: BTreeMap<String, String>,
}

impl Variables {
    /// What templates of `execution` can read: docs/api.md's system variables (the feedback URL,
    /// ids, execute number, request count, scheduled time, and the job's last result and failure
    /// from `job`), the trigger's arguments, the chain's earlier responses, and `env`. The
    /// feedback URL carries the execution's token, signed with `secret`, under
    /// `public_base_url`. docs/api.md, "Templates", lists the names.
    pub fn for_execution(
        execution: &Execution,
        job: &JobState,
        public_base_url: &str,
        secret: &[u8],
        env: &BTreeMap<String, String>,
    ) -> Variables {
        let id = &execution.execution_id;
        let token = signing::feedback_token(secret, id);
        let feedback = format!(
            "{}/jobs/{}/feedback/{}?executionId={id}&token={token}",
            public_base_url.trim_end_matches('/'),
            execution.job_id,
            execution.execute_number,
        );
        let job_id = json!(execution.job_id.as_str());
        let number = json!(execution.execute_number);
        let scheduled = execution
            .scheduled_time
            .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
        let system = [
            ("schedulingFeedbackUrl", json!(feedback)),
            ("schedulingJobId", job_id.clone()),
            ("schedulingExecuteNumber", number.clone()),
            ("schedulingRequestCounts", json!(execution.attempts())),
            ("schedulingExecutionId", json!(id)),
            ("jobId", job_id),
            ("executeNumber", number),
            ("executionId", json!(id)),
            ("scheduledTime", json!(scheduled)),
            // As the run saw them when it started, when it kept them; else the job's now.
            (
                crate::job::LAST_COMPLETION_RESULT,
                match &execution.run.last_results {
                    Some(kept) => kept.last_completion_result.clone(),
                    None => job.last_completion_result.clone(),
                }
                .unwrap_or(Value::Null),
            ),
            (
                crate::job::LAST_FAILURE,
                match &execution.run.last_results {
                    Some(kept) => kept.last_failure.clone(),
                    None => job.last_failure.clone(),
                }
                .unwrap_or(Value::Null),
            ),
        ];
        Variables {
            system: system
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            arguments: match &execution.arguments {
                Some(Value::Object(arguments)) => arguments.clone(),
                _ => Map::new(),
            },
            responses: execution.run.responses.clone(),
            named: execution.run.named.clone(),
            env: env.clone(),
        }
    }

    /// The value of one placeholder expression: a JSONPath when it starts with `$` or `responses[`,
    /// otherwise a name looked up in system variables, named responses, trigger arguments and
    /// `SUNDIAL_VAR_` variables, in that order.
    pub fn lookup(&self, expr: &str) -> Result<Value, ExpandError> {
        Ok(self.resolve(expr)?.to_value())
    }

    /// Like [`Variables::lookup`], but borrowing: nothing is cloned until the caller knows the value
    /// fits.
    fn resolve(&self, expr: &str) -> Result<Found<'_>, ExpandError> {
        if is_json_path(expr) {
            let steps = parse_path(expr)?;
            return select(Node::Root(self), &steps, expr);
        }
        let value = self
            .system
            .get(expr)
            .or_else(|| self.named.get(expr))
            .or_else(|| self.arguments.get(expr));
        if let Some(value) = value {
            return Ok(Found::One(Node::Value(value)));
        }
        if expr.starts_with(ENV_PREFIX) {
            if let Some(text) = self.env.get(expr) {
                return Ok(Found::One(Node::Text(text)));
            }
        }
        Err(ExpandError::Unknown {
            expr: expr.to_string(),
        })
    }

    /// The last response body when it is an object: its keys appear at the JSONPath root.
    fn last_object(&self) -> Option<&Map<String, Value>> {
        self.responses.last().and_then(Value::as_object)
    }
}

/// Expands a parsed template into a string. Strings are inserted as they are, other scalars as their
/// JSON text, null as nothing, objects and arrays as compact JSON; a `|json` placeholder always
/// inserts JSON text (a string gets its quotes). Replacing a whole value by JSON is a body matter:
/// see [`expand_body`].
pub fn expand_str(template: &Template, vars: &Variables) -> Result<String, ExpandError> {
    expand_parts(template.parts(), vars, MAX_EXPANDED_BYTES)
}

/// Parses `text` as a template and expands it with [`expand_str`].
pub fn expand_text(text: &str, vars: &Variables) -> Result<String, ExpandError> {
    let template = Template::parse(text).map_err(ExpandError::Parse)?;
    expand_str(&template, vars)
}

/// Expands every string inside a JSON body; object keys, numbers, booleans and null stay as written.
/// A string that is exactly one `|json` placeholder (`"${schedulingNotifyBody}|json"`) is replaced by
/// the value itself, whatever its type. The result, as compact JSON, is at most
/// [`MAX_EXPANDED_BYTES`].
pub fn expand_body(body: &Value, vars: &Variables) -> Result<Value, ExpandError> {
    let mut budget = Budget {
        left: MAX_EXPANDED_BYTES,
    };
    expand_value(body, vars, &mut budget)
}

/// Evaluates a JSONPath against `root`: `.name`, `['name']`, `["name"]`, `[n]`, `[-n]` (from the end)
/// and `[*]` (the result is then an array of every match). The leading `$` may be left out
/// (`a.b[0]`). Filters, slices, unions and recursive descent are refused.
pub fn json_path(root: &Value, path: &str) -> Result<Value, ExpandError> {
    let steps = parse_path(path)?;
    Ok(select(Node::Value(root), &steps, path)?.to_value())
}

/// What is left of the byte limit of a body being expanded.
struct Budget {
    left: usize,
}

impl Budget {
    fn charge(&mut self, bytes: usize) -> Result<(), ExpandError> {
        self.left = self.left.checked_sub(bytes).ok_or_else(too_large)?;
        Ok(())
    }
}

fn expand_value(
    value: &Value,
    vars: &Variables,
    budget: &mut Budget,
) -> Result<Value, ExpandError> {
    match value {
        Value::String(text) => expand_body_string(text, vars, budget),
        Value::Array(items) => {
            budget.charge(2 + items.len().saturating_sub(1))?;
            items
                .iter()
                .map(|item| expand_value(item, vars, budget))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
        Value::Object(entries) => {
            budget.charge(2 + entries.len().saturating_sub(1))?;
            let mut out = Map::new();
            for (key, item) in entries {
                budget.charge(json_len(key.as_str(), budget.left)? + 1)?;
                out.insert(key.clone(), expand_value(item, vars, budget)?);
            }
            Ok(Value::Object(out))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            budget.charge(json_len(value, budget.left)?)?;
            Ok(value.clone())
        }
    }
}

fn expand_body_string(
    text: &str,
    vars: &Variables,
    budget: &mut Budget,
) -> Result<Value, ExpandError> {
    let template = Template::parse(text).map_err(ExpandError::Parse)?;
    if let [Part::Placeholder { expr, json: true }] = template.parts() {
        let found = vars.resolve(expr)?;
        // Measure before cloning: a response of megabytes must not be copied only to be refused.
        budget.charge(json_len(&found, budget.left)?)?;
        return Ok(found.to_value());
    }
    let out = expand_parts(template.parts(), vars, MAX_EXPANDED_BYTES.min(budget.left))?;
    budget.charge(json_len(out.as_str(), budget.left)?)?;
    Ok(Value::String(out))
}

fn expand_parts(parts: &[Part], vars: &Variables, limit: usize) -> Result<String, ExpandError> {
    let mut out = Capped {
        buf: Vec::new(),
        limit,
    };
    for part in parts {
        match part {
            Part::Literal(text) => out.push(text.as_bytes())?,
            Part::Placeholder { expr, json } => {
                let found = vars.resolve(expr)?;
                match (*json, found.as_text()) {
                    (false, Some(text)) => out.push(text.as_bytes())?,
                    (false, None) if found.is_null() => {}
                    // The only error serialising a JSON value can produce is the writer's refusal.
                    _ => serde_json::to_writer(&mut out, &found).map_err(|_| too_large())?,
                }
            }
        }
    }
    // Every piece written is UTF-8 (literals are `&str`, serde_json writes UTF-8), so the lossy
    // branch is never taken; it only spares an error path that cannot happen.
    Ok(String::from_utf8(out.buf)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The length of `value` as compact JSON, or [`ExpandError::TooLarge`] once it passes `limit`,
/// without building the text.
fn json_len<T: Serialize + ?Sized>(value: &T, limit: usize) -> Result<usize, ExpandError> {
    let mut counter = Counter { bytes: 0, limit };
    serde_json::to_writer(&mut counter, value).map_err(|_| too_large())?;
    Ok(counter.bytes)
}

/// A writer that only counts, and fails once past its limit.
struct Counter {
    bytes: usize,
    limit: usize,
}

impl io::Write for Counter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.bytes = self.bytes.saturating_add(data.len());
        if self.bytes > self.limit {
            return Err(io::Error::other("too large"));
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A buffer that fails once past its limit, so oversized output stops growing at the limit.
struct Capped {
    buf: Vec<u8>,
    limit: usize,
}

impl Capped {
    fn push(&mut self, data: &[u8]) -> Result<(), ExpandError> {
        if self.buf.len().saturating_add(data.len()) > self.limit {
            return Err(too_large());
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }
}

impl io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.push(data).map_err(|_| io::Error::other("too large"))?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One value a placeholder can reach, borrowed. The JSONPath root and its `responses` array exist
/// only as views over [`Variables`], so reading `$.responses[0].x` copies nothing.
#[derive(Clone, Copy)]
enum Node<'a> {
    Value(&'a Value),
    Text(&'a str),
    Responses(&'a [Value]),
    Root(&'a Variables),
}

impl<'a> Node<'a> {
    fn to_value(self) -> Value {
        match self {
            Node::Value(value) => value.clone(),
            Node::Text(text) => Value::String(text.to_string()),
            Node::Responses(items) => Value::Array(items.to_vec()),
            Node::Root(vars) => {
                let mut map = vars.last_object().cloned().unwrap_or_default();
                map.insert(RESPONSES.to_string(), Value::Array(vars.responses.clone()));
                Value::Object(map)
            }
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Node::Value(Value::Null) => "null",
            Node::Value(Value::Bool(_)) => "a boolean",
            Node::Value(Value::Number(_)) => "a number",
            Node::Value(Value::String(_)) | Node::Text(_) => "a string",
            Node::Value(Value::Array(_)) | Node::Responses(_) => "an array",
            Node::Value(Value::Object(_)) | Node::Root(_) => "an object",
        }
    }

    fn key(self, key: &str) -> Result<Node<'a>, String> {
        let found = match self {
            Node::Root(vars) if key == RESPONSES => return Ok(Node::Responses(&vars.responses)),
            Node::Root(vars) => vars.last_object().and_then(|m| m.get(key)),
            Node::Value(Value::Object(map)) => map.get(key),
            other => {
                return Err(format!(
                    "cannot read key {} of {}",
                    quote(key),
                    other.kind()
                ))
            }
        };
        found
            .map(Node::Value)
            .ok_or_else(|| format!("no key {}", quote(key)))
    }

    fn index(self, index: i64) -> Result<Node<'a>, String> {
        let items = match self {
            Node::Responses(items) => items,
            Node::Value(Value::Array(items)) => items.as_slice(),
            other => return Err(format!("cannot index {} with [{index}]", other.kind())),
        };
        let position = if index < 0 {
            usize::try_from(index.unsigned_abs())
                .ok()
                .and_then(|back| items.len().checked_sub(back))
        } else {
            usize::try_from(index).ok()
        };
        position
            .and_then(|i| items.get(i))
            .map(Node::Value)
            .ok_or_else(|| format!("index [{index}] is out of range ({} items)", items.len()))
    }

    fn children(self, out: &mut Vec<Node<'a>>) {
        match self {
            Node::Responses(items) => out.extend(items.iter().map(Node::Value)),
            Node::Value(Value::Array(items)) => out.extend(items.iter().map(Node::Value)),
            Node::Value(Value::Object(map)) => out.extend(map.values().map(Node::Value)),
            Node::Root(vars) => {
                let root = RootView(vars);
                root.for_each(|_, node| out.push(node));
            }
            Node::Value(_) | Node::Text(_) => {}
        }
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Node::Value(value) => value.serialize(serializer),
            Node::Text(text) => serializer.serialize_str(text),
            Node::Responses(items) => items.serialize(serializer),
            Node::Root(vars) => {
                let mut map = serializer.serialize_map(None)?;
                let mut result = Ok(());
                RootView(vars).for_each(|key, node| {
                    if result.is_ok() {
                        result = map.serialize_entry(key, &node);
                    }
                });
                result?;
                map.end()
            }
        }
    }
}

/// The entries of the JSONPath root in key order, as a `Map` holding them would list them: the last
/// response's keys with `responses` put in its place.
struct RootView<'a>(&'a Variables);

impl<'a> RootView<'a> {
    fn for_each(&self, mut visit: impl FnMut(&'a str, Node<'a>)) {
        let vars = self.0;
        let responses = Node::Responses(&vars.responses);
        let mut pending = true;
        for (key, value) in vars.last_object().into_iter().flatten() {
            if key == RESPONSES {
                continue;
            }
            if pending && key.as_str() > RESPONSES {
                visit(RESPONSES, responses);
                pending = false;
            }
            visit(key, Node::Value(value));
        }
        if pending {
            visit(RESPONSES, responses);
        }
    }
}

/// What an expression selected: one value, or every match of a path with `[*]` in it.
enum Found<'a> {
    One(Node<'a>),
    Many(Vec<Node<'a>>),
}

impl Found<'_> {
    fn to_value(&self) -> Value {
        match self {
            Found::One(node) => node.to_value(),
            Found::Many(nodes) => Value::Array(nodes.iter().map(|n| n.to_value()).collect()),
        }
    }

    /// The text to insert as is, when the value is a string.
    fn as_text(&self) -> Option<&str> {
        match self {
            Found::One(Node::Value(Value::String(text))) => Some(text),
            Found::One(Node::Text(text)) => Some(text),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self, Found::One(Node::Value(Value::Null)))
    }
}

impl Serialize for Found<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Found::One(node) => node.serialize(serializer),
            Found::Many(nodes) => {
                let mut seq = serializer.serialize_seq(Some(nodes.len()))?;
                for node in nodes {
                    seq.serialize_element(node)?;
                }
                seq.end()
            }
        }
    }
}

/// Follows `steps` from `start`. Without a wildcard every step must succeed and the error says which
/// failed; after one, the path selects a set, and steps that match nothing simply drop out of it, as
/// in any JSONPath.
fn select<'a>(start: Node<'a>, steps: &[Step], expr: &str) -> Result<Found<'a>, ExpandError> {
    let mut current = start;
    for (i, step) in steps.iter().enumerate() {
        current = match step {
            Step::Key(key) => current.key(key),
            Step::Index(index) => current.index(*index),
            Step::Wildcard => return Ok(Found::Many(select_many(current, &steps[i..]))),
        }
        .map_err(|reason| ExpandError::BadPath {
            expr: expr.to_string(),
            reason: format!("{reason} at {}", describe(&steps[..i])),
        })?;
    }
    Ok(Found::One(current))
}

fn select_many<'a>(start: Node<'a>, steps: &[Step]) -> Vec<Node<'a>> {
    let mut current = vec![start];
    for step in steps {
        let mut next = Vec::new();
        for node in current {
            match step {
                Step::Key(key) => next.extend(node.key(key).ok()),
                Step::Index(index) => next.extend(node.index(*index).ok()),
                Step::Wildcard => node.children(&mut next),
            }
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_executions_variables_are_seed_002s_system_names_and_its_run() {
        use crate::execution::ExecutionState;
        use crate::job::JobId;
        let at = "2024-01-01T08:00:00Z".parse().unwrap();
        let mut execution = Execution::new(
            "report~1".into(),
            JobId::parse("report").unwrap(),
            4,
            ExecutionState::Enqueued,
            at,
            "report".into(),
            at,
        )
        .unwrap();
        execution.arguments = Some(json!({"region": "eu"}));
        execution.run.responses.push(json!({"rows": 3}));
        let job = JobState {
            last_completion_result: Some(json!({"rows": 2})),
            ..JobState::default()
        };
        let env = BTreeMap::from([("SUNDIAL_VAR_A".to_string(), "1".to_string())]);
        let vars = Variables::for_execution(&execution, &job, "http://h:8080/", b"secret", &env);
        let token = signing::feedback_token(b"secret", "report~1");
        assert_eq!(
            Value::Object(vars.system.clone().into_iter().collect()),
            json!({
                "schedulingFeedbackUrl":
                    format!("http://h:8080/jobs/report/feedback/4?executionId=report~1&token={token}"),
                "schedulingJobId": "report",
                "schedulingExecuteNumber": 4,
                "schedulingRequestCounts": 0,
                "schedulingExecutionId": "report~1",
                "jobId": "report",
                "executeNumber": 4,
                "executionId": "report~1",
                "scheduledTime": "2024-01-01T08:00:00Z",
                "lastCompletionResult": {"rows": 2},
                "lastFailure": null,
            })
        );
        assert_eq!(
            Value::Object(vars.arguments.clone()),
            json!({"region": "eu"})
        );
        assert_eq!(vars.responses, vec![json!({"rows": 3})]);
        assert_eq!(vars.env, env);
    }

    fn vars() -> Variables {
        let mut v = Variables::default();
        for (k, val) in [
            (
                "schedulingFeedbackUrl",
                json!("service://sundial/feedback/abc"),
            ),
            ("schedulingJobId", json!("job-1")),
            ("schedulingExecuteNumber", json!(7)),
            ("schedulingRequestCounts", json!(2)),
            ("schedulingNotifyBody", json!({"status": "ok", "n": [1, 2]})),
            ("jobId", json!("job-1")),
            ("executeNumber", json!(7)),
            ("scheduledTime", json!("2024-01-02T03:04:05Z")),
            ("nothing", Value::Null),
            ("flag", json!(true)),
        ] {
            v.system.insert(k.into(), val);
        }
        v.arguments =
            json!({"argName": "hello", "count": 3, "jobId": "from-args", "obj": {"k": "v"}})
                .as_object()
                .cloned()
                .unwrap();
        v.responses = vec![
            json!({"a": {"b": "first"}, "list": [10, 20, 30]}),
            json!({"x": 1.5, "id": "r2"}),
            json!({"aaa": "A", "bbb": 2, "student": {"name": "Ann", "age": 9}, "arr": [1, 2, 3], "key with space": "spaced", "it's": "quoted"}),
        ];
        v.named.insert("ENV_VALUE".into(), v.responses[0].clone());
        v.named.insert("argName".into(), json!("from-named"));
        v.env.insert("SUNDIAL_VAR_TOKEN".into(), "s3cret".into());
        v.env.insert("HOME".into(), "/root".into());
        v
    }

    #[test]
    fn seed_002_url_example() {
        let got = expand_text(
            "service://main/request1?aaa=${$.aaa}&bbb=${$.bbb}&callback=${schedulingFeedbackUrl}",
            &vars(),
        )
        .unwrap();
        assert_eq!(
            got,
            "service://main/request1?aaa=A&bbb=2&callback=service://sundial/feedback/abc"
        );
    }

    #[test]
    fn seed_002_body_examples() {
        let v = vars();
        assert_eq!(
            expand_body(&json!({"data": "${ENV_VALUE}|json"}), &v).unwrap(),
            json!({"data": {"a": {"b": "first"}, "list": [10, 20, 30]}})
        );
        assert_eq!(
            expand_body(&json!({"school": "${$.student}|json"}), &v).unwrap(),
            json!({"school": {"name": "Ann", "age": 9}})
        );
        assert_eq!(
            expand_body(&json!("${schedulingNotifyBody}|json"), &v).unwrap(),
            json!({"status": "ok", "n": [1, 2]})
        );
        assert_eq!(
            expand_body(&json!({"all": "${$.responses}|json"}), &v).unwrap(),
            json!({"all": v.responses})
        );
    }

    #[test]
    fn system_variables_and_string_rendering() {
        let v = vars();
        let cases = [
            ("${jobId}/${executeNumber}", "job-1/7"),
            (
                "${schedulingJobId}#${schedulingExecuteNumber}#${schedulingRequestCounts}",
                "job-1#7#2",
            ),
            ("at ${scheduledTime}", "at 2024-01-02T03:04:05Z"),
            ("[${nothing}]", "[]"),
            ("${flag}", "true"),
            ("${$.responses[1].x}", "1.5"),
            // Objects keep their keys in document order.
            ("${schedulingNotifyBody}", r#"{"status":"ok","n":[1,2]}"#),
            ("${$.arr}", "[1,2,3]"),
            ("no placeholders", "no placeholders"),
            ("", ""),
        ];
        for (text, expected) in cases {
            assert_eq!(expand_text(text, &v).unwrap(), expected, "{text:?}");
        }
    }

    #[test]
    fn json_placeholder_inside_text_inserts_json_text() {
        let v = vars();
        assert_eq!(
            expand_text("x=${argName}|json", &v).unwrap(),
            r#"x="from-named""#
        );
        assert_eq!(expand_text("${nothing}|json!", &v).unwrap(), "null!");
        assert_eq!(
            expand_body(&json!({"s": "body: ${$.student}|json"}), &v).unwrap(),
            json!({"s": r#"body: {"name":"Ann","age":9}"#})
        );
        // A lone `|json` placeholder outside a body still yields text.
        assert_eq!(
            expand_text("${schedulingExecuteNumber}|json", &v).unwrap(),
            "7"
        );
        // Only an exact, lone `|json` placeholder replaces the value; whitespace counts as text.
        assert_eq!(
            expand_body(&json!(" ${executeNumber}|json"), &v).unwrap(),
            json!(" 7")
        );
        assert_eq!(
            expand_body(&json!("${executeNumber}|json"), &v).unwrap(),
            json!(7)
        );
        assert_eq!(
            expand_body(&json!("${nothing}|json"), &v).unwrap(),
            Value::Null
        );
        assert_eq!(
            expand_body(&json!("${jobId}|json"), &v).unwrap(),
            json!("job-1")
        );
    }

    #[test]
    fn plain_string_placeholder_in_body_stays_a_string() {
        let v = vars();
        assert_eq!(
            expand_body(&json!("${executeNumber}"), &v).unwrap(),
            json!("7")
        );
        assert_eq!(
            expand_body(&json!({"obj": "${obj}"}), &v).unwrap(),
            json!({"obj": r#"{"k":"v"}"#})
        );
    }

    #[test]
    fn body_walk_keeps_keys_and_non_strings() {
        let v = vars();
        let body = json!({
            "${jobId}": "${jobId}",
            "n": 1, "f": 2.5, "b": false, "z": null,
            "nested": [{"deep": ["${argName}", 3]}],
        });
        assert_eq!(
            expand_body(&body, &v).unwrap(),
            json!({
                "${jobId}": "job-1",
                "n": 1, "f": 2.5, "b": false, "z": null,
                "nested": [{"deep": ["from-named", 3]}],
            })
        );
    }

    #[test]
    fn resolution_order() {
        let mut v = vars();
        // System beats arguments; named responses beat arguments.
        assert_eq!(v.lookup("jobId").unwrap(), json!("job-1"));
        assert_eq!(v.lookup("argName").unwrap(), json!("from-named"));
        assert_eq!(v.lookup("count").unwrap(), json!(3));
        v.system.insert("ENV_VALUE".into(), json!("system"));
        assert_eq!(v.lookup("ENV_VALUE").unwrap(), json!("system"));
        // Arguments beat the environment.
        v.arguments.insert("SUNDIAL_VAR_TOKEN".into(), json!("arg"));
        assert_eq!(v.lookup("SUNDIAL_VAR_TOKEN").unwrap(), json!("arg"));
        v.arguments.remove("SUNDIAL_VAR_TOKEN");
        assert_eq!(v.lookup("SUNDIAL_VAR_TOKEN").unwrap(), json!("s3cret"));
        assert_eq!(
            expand_text("Bearer ${SUNDIAL_VAR_TOKEN}", &v).unwrap(),
            "Bearer s3cret"
        );
    }

    #[test]
    fn environment_is_limited_to_the_prefix() {
        let v = vars();
        assert_eq!(
            v.lookup("HOME"),
            Err(ExpandError::Unknown {
                expr: "HOME".into()
            })
        );
        assert!(matches!(
            v.lookup("SUNDIAL_VAR_MISSING"),
            Err(ExpandError::Unknown { .. })
        ));
    }

    #[test]
    fn unknown_names_are_errors() {
        let v = vars();
        let err = expand_text("a=${nope}", &v).unwrap_err();
        assert_eq!(
            err,
            ExpandError::Unknown {
                expr: "nope".into()
            }
        );
        assert!(err.to_string().contains("${nope}"), "{err}");
        assert!(matches!(
            expand_body(&json!({"k": ["${nope}|json"]}), &v),
            Err(ExpandError::Unknown { .. })
        ));
        // `responses` alone is a name, not a path.
        assert!(matches!(
            v.lookup("responses"),
            Err(ExpandError::Unknown { .. })
        ));
    }

    #[test]
    fn json_path_over_responses() {
        let v = vars();
        let cases = [
            ("$.responses[0].a.b", json!("first")),
            ("responses[1].x", json!(1.5)),
            ("responses[0].list[-1]", json!(30)),
            ("$.student", json!({"name": "Ann", "age": 9})),
            ("$.student.name", json!("Ann")),
            ("$['key with space']", json!("spaced")),
            ("$[\"key with space\"]", json!("spaced")),
            ("$['it\\'s']", json!("quoted")),
            ("$[ 'student' ][\"age\"]", json!(9)),
            ("$.arr[-1]", json!(3)),
            ("$.arr[-3]", json!(1)),
            ("$.arr[ 0 ]", json!(1)),
            ("$.responses[-1].aaa", json!("A")),
            ("$.responses[*].id", json!(["r2"])),
            ("$.responses[*].list[*]", json!([10, 20, 30])),
            ("$.arr[*]", json!([1, 2, 3])),
            ("$.arr.*", json!([1, 2, 3])),
            ("$.student[*]", json!(["Ann", 9])),
            ("$.responses[*].nope", json!([])),
        ];
        for (path, expected) in cases {
            assert_eq!(v.lookup(path).unwrap(), expected, "{path}");
        }
    }

    #[test]
    fn json_path_root_is_last_response_plus_responses() {
        let mut v = vars();
        let mut root = v.responses[2].clone();
        root["responses"] = Value::Array(v.responses.clone());
        assert_eq!(v.lookup("$").unwrap(), root);
        let text = expand_text("${$}", &v).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), root);
        assert_eq!(v.lookup("$.responses").unwrap(), json!(v.responses));
        assert_eq!(v.lookup("$[*]").unwrap().as_array().map(Vec::len), Some(7));

        // The extra `responses` key hides one of the last response's own.
        v.responses.push(json!({"responses": "mine", "zzz": 1}));
        assert_eq!(v.lookup("$.responses").unwrap(), json!(v.responses));
        let root = v.lookup("$").unwrap();
        let text = expand_text("${$}", &v).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), root);

        // A last response that is not an object contributes nothing but `responses`.
        v.responses.push(json!([1, 2]));
        assert_eq!(v.lookup("$").unwrap(), json!({"responses": v.responses}));
        assert!(matches!(v.lookup("$.x"), Err(ExpandError::BadPath { .. })));
        assert_eq!(v.lookup("responses[-1][1]").unwrap(), json!(2));

        let empty = Variables::default();
        assert_eq!(empty.lookup("$").unwrap(), json!({"responses": []}));
        assert_eq!(expand_text("${$.responses}", &empty).unwrap(), "[]");
    }

    #[test]
    fn json_path_function_on_plain_values() {
        let doc = json!({"a": [{"b": 1}, {"b": 2}], "c d": true});
        assert_eq!(json_path(&doc, "$.a[1].b").unwrap(), json!(2));
        assert_eq!(json_path(&doc, "a[0].b").unwrap(), json!(1));
        assert_eq!(json_path(&doc, "['c d']").unwrap(), json!(true));
        assert_eq!(json_path(&doc, ".a[-1]").unwrap(), json!({"b": 2}));
        assert_eq!(json_path(&doc, "$").unwrap(), doc);
        assert_eq!(json_path(&doc, "$.a[*].b").unwrap(), json!([1, 2]));
        assert_eq!(json_path(&doc, "$.responses").ok(), None);
    }

    #[test]
    fn json_path_errors_name_the_expression() {
        let v = vars();
        let cases = [
            ("$..a", "recursive descent"),
            ("$.a[?(@.b)]", "filters"),
            ("$.arr[0:2]", "unsupported selector"),
            ("$.arr[0,1]", "unsupported selector"),
            ("$['a','b']", "unions"),
            ("$.arr[5]", "index [5] is out of range (3 items) at $.arr"),
            ("$.arr[-4]", "out of range"),
            ("$.student.nope", "no key \"nope\" at $.student"),
            ("$.aaa.b", "cannot read key \"b\" of a string at $.aaa"),
            ("$.student[0]", "cannot index an object"),
            ("$.responses[9]", "out of range (3 items) at $.responses"),
            ("$.", "empty name"),
            ("$.a b", "unsupported name"),
            ("$x", "expected \".\" or \"[\""),
            ("$[", "unclosed \"[\""),
            ("$['abc", "unclosed '"),
            ("$[99999999999999999999]", "too large"),
            ("$[abc]", "unsupported selector"),
        ];
        for (expr, expected) in cases {
            match v.lookup(expr) {
                Err(ExpandError::BadPath { expr: e, reason }) => {
                    assert_eq!(e, expr);
                    assert!(reason.contains(expected), "{expr}: {reason}");
                    let shown = ExpandError::BadPath { expr: e, reason }.to_string();
                    assert!(shown.contains(expr), "{shown}");
                }
                other => panic!("{expr}: {other:?}"),
            }
        }
        assert!(matches!(
            json_path(&json!({}), ""),
            Err(ExpandError::BadPath { .. })
        ));
    }

    #[test]
    fn parse_errors_are_reported() {
        let v = vars();
        assert!(matches!(
            expand_text("${oops", &v),
            Err(ExpandError::Parse(_))
        ));
        assert!(matches!(
            expand_body(&json!({"a": ["${}"]}), &v),
            Err(ExpandError::Parse(_))
        ));
    }

    #[test]
    fn substituted_values_are_not_expanded_again() {
        let mut v = vars();
        v.arguments
            .insert("evil".into(), json!("${SUNDIAL_VAR_TOKEN}"));
        v.responses.push(json!({"evil": "${SUNDIAL_VAR_TOKEN}"}));
        assert_eq!(expand_text("${evil}", &v).unwrap(), "${SUNDIAL_VAR_TOKEN}");
        assert_eq!(
            expand_body(&json!({"x": "${$}|json"}), &v).unwrap()["x"]["evil"],
            json!("${SUNDIAL_VAR_TOKEN}")
        );
    }

    #[test]
    fn strings_over_the_limit_are_refused() {
        let mut v = Variables::default();
        v.arguments
            .insert("big".into(), json!("x".repeat(MAX_EXPANDED_BYTES)));
        let fits = expand_text("${big}", &v).unwrap();
        assert_eq!(fits.len(), MAX_EXPANDED_BYTES);
        let too_large = Err(ExpandError::TooLarge {
            limit: MAX_EXPANDED_BYTES,
        });
        assert_eq!(expand_text("!${big}", &v), too_large);
        assert_eq!(expand_text("${big}|json", &v), too_large); // the quotes push it over
        assert_eq!(
            expand_text(&"y".repeat(MAX_EXPANDED_BYTES + 1), &v),
            too_large
        );

        v.arguments
            .insert("half".into(), json!("x".repeat(MAX_EXPANDED_BYTES / 2)));
        assert_eq!(
            expand_text("${half}${half}", &v).map(|s| s.len()),
            Ok(MAX_EXPANDED_BYTES)
        );
        assert_eq!(expand_text("${half}${half}${half}", &v), too_large);
        let err = super::too_large();
        assert!(
            err.to_string().contains(&MAX_EXPANDED_BYTES.to_string()),
            "{err}"
        );
    }

    #[test]
    fn bodies_over_the_limit_are_refused() {
        let too_large = Err(ExpandError::TooLarge {
            limit: MAX_EXPANDED_BYTES,
        });
        let mut v = Variables::default();
        // `{"k":"…"}` is 8 bytes of framing around the string.
        v.arguments
            .insert("s".into(), json!("x".repeat(MAX_EXPANDED_BYTES - 8)));
        let body = expand_body(&json!({"k": "${s}"}), &v).unwrap();
        assert_eq!(body.to_string().len(), MAX_EXPANDED_BYTES);
        assert_eq!(expand_body(&json!({"kk": "${s}"}), &v), too_large);
        assert_eq!(
            expand_body(&json!({"k": "${s}|json"}), &v).map(|b| b.to_string().len()),
            Ok(MAX_EXPANDED_BYTES)
        );
        assert_eq!(
            expand_body(&json!({"k": "${s}|json", "n": 1}), &v),
            too_large
        );

        // Many small pieces add up: each fits, together they do not.
        v.responses
            .push(json!({"blob": "z".repeat(MAX_EXPANDED_BYTES / 4)}));
        let copies = vec![json!("${$.responses}|json"); 8];
        assert_eq!(expand_body(&Value::Array(copies), &v), too_large);
        let copies = vec![json!("${$.blob}"); 8];
        assert_eq!(expand_body(&Value::Array(copies), &v), too_large);

        // Escaping counts: a string of quotes doubles in size as JSON.
        v.arguments
            .insert("q".into(), json!("\"".repeat(MAX_EXPANDED_BYTES / 2)));
        assert_eq!(expand_body(&json!("${q}"), &v), too_large);
        assert!(expand_text("${q}", &v).is_ok());
    }

    #[test]
    fn body_accounting_matches_serialised_length() {
        let v = vars();
        let body = json!({
            "a": ["${jobId}", 1, 2.5, null, true, {"": "${$.student}|json"}],
            "é\"": "${schedulingNotifyBody}", "x": {}, "y": [],
        });
        let out = expand_body(&body, &v).unwrap();
        let mut budget = Budget {
            left: MAX_EXPANDED_BYTES,
        };
        expand_value(&body, &v, &mut budget).unwrap();
        assert_eq!(MAX_EXPANDED_BYTES - budget.left, out.to_string().len());
    }

    proptest! {
        #![proptest_config(sundial_testkit::proptest_config(512, concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/expand.txt")))]

        #[test]
        fn expansion_never_panics(
            text in "(\\$\\{|\\}|\\|json|\\$|\\.|\\[|\\]|\\*|'|-?[0-9]|responses|student|arr|jobId|SUNDIAL_VAR_TOKEN|nope|.){0,24}",
            leaf in ".{0,16}",
            keys in prop::collection::vec("[a-z]{0,3}", 0..4),
            response in any::<Option<i64>>(),
        ) {
            let mut v = vars();
            if let Some(n) = response {
                v.responses.push(json!(n));
            }
            let _ = expand_text(&text, &v);
            let _ = v.lookup(&text);
            let _ = json_path(&v.responses[0], &text);
            let mut body = json!([text.clone(), leaf.clone(), {"k": [text.clone()]}]);
            for key in keys {
                body = json!({key: [body, text.clone(), format!("${{{text}}}|json")]});
            }
            if let Ok(out) = expand_body(&body, &v) {
                prop_assert!(out.to_string().len() <= MAX_EXPANDED_BYTES);
            }
        }
    }
}
