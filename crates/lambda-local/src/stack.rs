//! The stack as `infra/moto.py up --describe` resolves it from template.yaml: the functions with
//! their binaries, timeouts, environments and event sources, the HTTP API's routes, the queues.
//! Nothing here is written down a second time: a change to the template changes the local run.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::Error;

/// The line `infra/moto.py up --describe` prints.
#[derive(Clone, Debug, Deserialize)]
pub struct MotoLine {
    /// moto's URL.
    pub endpoint: String,
    /// The region the resources were created in.
    pub region: String,
    /// The AWS client settings (endpoint, region, test credentials) and the globals' environment.
    pub env: BTreeMap<String, String>,
    /// The resolved template.
    pub stack: Stack,
}

/// The resolved template.
#[derive(Clone, Debug, Deserialize)]
pub struct Stack {
    /// Every parameter's value (defaults, or what `--parameter` gave).
    pub parameters: BTreeMap<String, String>,
    /// `AWS::Serverless::Function` resources by logical id.
    pub functions: BTreeMap<String, FunctionSpec>,
    /// `AWS::ApiGatewayV2::Route` properties.
    pub routes: Vec<Route>,
    /// `AWS::ApiGatewayV2::Integration` properties by logical id.
    pub integrations: BTreeMap<String, Integration>,
    /// `AWS::ApiGatewayV2::Authorizer` properties by logical id (those whose condition holds).
    pub authorizers: BTreeMap<String, Value>,
    /// `AWS::SQS::Queue` resources by logical id.
    pub queues: BTreeMap<String, QueueSpec>,
}

/// One function as the template declares it, Globals merged in.
#[derive(Clone, Debug, Deserialize)]
pub struct FunctionSpec {
    /// Its local name (`sundial-dispatch-function`).
    pub name: String,
    /// `Metadata.BuildProperties.Binary`: the cargo binary.
    pub binary: Option<String>,
    /// `Runtime`.
    pub runtime: Option<String>,
    /// `Architectures` (the local run is on this machine's, whatever they say).
    #[serde(default)]
    pub architectures: Vec<String>,
    /// `MemorySize` in MB (not enforced locally).
    pub memory: Option<u64>,
    /// `Timeout` in seconds: enforced, by killing the process.
    pub timeout: Option<u64>,
    /// `Environment.Variables`, Globals' and the function's, resolved.
    pub environment: BTreeMap<String, String>,
    /// Variables that could not be resolved locally, with why.
    #[serde(default)]
    pub unresolved: BTreeMap<String, String>,
    /// `Events` by name.
    #[serde(default)]
    pub events: BTreeMap<String, EventSpec>,
    /// `EventInvokeConfig` (asynchronous invokes).
    #[serde(default, rename = "eventInvokeConfig")]
    pub event_invoke_config: Value,
    /// `Policies`, resolved where they can be (see [`crate::checks::policies`]).
    #[serde(default)]
    pub policies: Value,
    /// `LoggingConfig` (its `LogFormat` becomes `AWS_LAMBDA_LOG_FORMAT`, as on Lambda).
    #[serde(default, rename = "loggingConfig")]
    pub logging_config: Value,
}

/// One of a function's `Events`.
#[derive(Clone, Debug, Deserialize)]
pub struct EventSpec {
    /// `SQS`, `Schedule`, …
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Its `Properties`, resolved (`null` where only AWS knows the value).
    pub properties: Value,
}

/// An HTTP API route.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Route {
    /// `METHOD /path/{param}/{proxy+}`, `ANY` for every method.
    pub route_key: String,
    /// `NONE`, `AWS_IAM` or `JWT`.
    pub authorization_type: Option<String>,
    /// The authorizer's logical id, for JWT.
    pub authorizer_id: Option<String>,
    /// `integrations/<logical id>`.
    pub target: Option<String>,
}

/// An HTTP API integration.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Integration {
    /// The function it invokes (logical id).
    pub function: Option<String>,
    /// `AWS_PROXY`.
    pub integration_type: Option<String>,
    /// `2.0` (or `1.0`, which the emulator refuses).
    pub payload_format_version: Option<String>,
    /// How long API Gateway waits for the function (30 000 at most).
    pub timeout_in_millis: Option<u64>,
}

/// A queue, as created on moto.
#[derive(Clone, Debug, Deserialize)]
pub struct QueueSpec {
    /// Its URL on moto.
    pub url: String,
    /// Its ARN.
    pub arn: Option<String>,
    /// Its attributes as SQS reports them (`VisibilityTimeout`, `RedrivePolicy`, …).
    pub attributes: BTreeMap<String, String>,
}

/// An SQS event source mapping, with SAM's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct SqsMapping {
    /// The queue's logical id.
    pub queue: String,
    /// `BatchSize` (default 10).
    pub batch_size: u32,
    /// `MaximumBatchingWindowInSeconds` (default 0).
    pub batching_window_seconds: u64,
    /// `ScalingConfig.MaximumConcurrency` (default: unbounded; here 1000).
    pub maximum_concurrency: u32,
    /// `FunctionResponseTypes` holds `ReportBatchItemFailures`.
    pub report_batch_item_failures: bool,
}

/// A `Schedule` event: its rate.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleSource {
    /// The event's name (`EveryMinute`).
    pub name: String,
    /// The rate, from `rate(N unit)`.
    pub every: std::time::Duration,
}

impl Stack {
    /// The logical id of the queue whose ARN is `arn`.
    pub fn queue_by_arn(&self, arn: &str) -> Option<(&String, &QueueSpec)> {
        self.queues
            .iter()
            .find(|(_, q)| q.arn.as_deref() == Some(arn))
    }
}

impl FunctionSpec {
    /// The function's SQS event source mappings.
    pub fn sqs_mappings(&self, stack: &Stack) -> Result<Vec<SqsMapping>, Error> {
        let mut out = Vec::new();
        for (name, event) in &self.events {
            if event.kind.as_deref() != Some("SQS") {
                continue;
            }
            let p = &event.properties;
            let arn = p["Queue"].as_str().unwrap_or_default();
            let (queue, _) = stack.queue_by_arn(arn).ok_or_else(|| {
                Error::Template(format!(
                    "{}: event {name}: no queue of the template has ARN {arn:?}",
                    self.name
                ))
            })?;
            let number = |value: &Value, default: u64| -> Result<u64, Error> {
                match value {
                    Value::Null => Ok(default),
                    Value::Number(n) => n.as_u64().ok_or_else(|| bad(name, value)),
                    Value::String(s) => s.parse().map_err(|_| bad(name, value)),
                    _ => Err(bad(name, value)),
                }
            };
            let batch_size = number(&p["BatchSize"], 10)?;
            let window = number(&p["MaximumBatchingWindowInSeconds"], 0)?;
            let concurrency = number(&p["ScalingConfig"]["MaximumConcurrency"], 1000)?;
            if batch_size > 10 && window == 0 {
                return Err(Error::Template(format!(
                    "{}: event {name}: a BatchSize over 10 needs MaximumBatchingWindowInSeconds",
                    self.name
                )));
            }
            let report = p["FunctionResponseTypes"]
                .as_array()
                .is_some_and(|types| types.iter().any(|t| t == "ReportBatchItemFailures"));
            out.push(SqsMapping {
                queue: queue.clone(),
                batch_size: u32::try_from(batch_size).unwrap_or(10_000),
                batching_window_seconds: window,
                maximum_concurrency: u32::try_from(concurrency).unwrap_or(1000),
                report_batch_item_failures: report,
            });
        }
        Ok(out)
    }

    /// The function's `Schedule` events (rate expressions only; a cron expression is refused).
    pub fn schedules(&self) -> Result<Vec<ScheduleSource>, Error> {
        let mut out = Vec::new();
        for (name, event) in &self.events {
            if event.kind.as_deref() != Some("Schedule") {
                continue;
            }
            let expression = event.properties["Schedule"].as_str().unwrap_or_default();
            let every = parse_rate(expression).ok_or_else(|| {
                Error::Template(format!(
                    "{}: event {name}: only rate(N unit) schedules are emulated, not {expression:?}",
                    self.name
                ))
            })?;
            out.push(ScheduleSource {
                name: name.clone(),
                every,
            });
        }
        Ok(out)
    }

    /// `EventInvokeConfig.MaximumRetryAttempts` (Lambda's default for asynchronous invokes: 2).
    pub fn async_retries(&self) -> u64 {
        self.event_invoke_config["MaximumRetryAttempts"]
            .as_u64()
            .unwrap_or(2)
    }
}

fn bad(event: &str, value: &Value) -> Error {
    Error::Template(format!(
        "event {event}: expected a whole number, got {value}"
    ))
}

/// `rate(1 minute)`, `rate(5 minutes)`, `rate(2 hours)`, `rate(1 day)`.
pub fn parse_rate(expression: &str) -> Option<std::time::Duration> {
    let inner = expression.trim().strip_prefix("rate(")?.strip_suffix(')')?;
    let (count, unit) = inner.trim().split_once(' ')?;
    let count: u64 = count.parse().ok().filter(|n| *n > 0)?;
    let unit_seconds = match unit.trim() {
        "minute" if count == 1 => 60,
        "minutes" if count > 1 => 60,
        "hour" if count == 1 => 3600,
        "hours" if count > 1 => 3600,
        "day" if count == 1 => 86_400,
        "days" if count > 1 => 86_400,
        _ => return None,
    };
    Some(std::time::Duration::from_secs(
        count.checked_mul(unit_seconds)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_eventbridge_writes_them() {
        assert_eq!(
            parse_rate("rate(1 minute)"),
            Some(std::time::Duration::from_secs(60))
        );
        assert_eq!(
            parse_rate("rate(5 minutes)"),
            Some(std::time::Duration::from_secs(300))
        );
        assert_eq!(
            parse_rate("rate(1 minutes)"),
            None,
            "EventBridge refuses it"
        );
        assert_eq!(parse_rate("rate(2 hour)"), None);
        assert_eq!(parse_rate("cron(0 12 * * ? *)"), None);
    }
}
