//! Wiring: the settings a Lambda function reads from its environment, and the engine built from
//! them once per cold start.

use std::sync::Arc;
use std::time::Duration;

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::SharedHttpClient;
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
use sundial_ports::clock::Clock;
use sundial_ports::clock::SystemClock;
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::Queue;
use sundial_ports::store::Store;
use sundial_service::adapters::http::{AddressPolicy, ReqwestClient};
use sundial_service::engine::{Engine, EngineConfig, StateChangeEvents, AWS_STOP_CHECK_EVERY};
use sundial_service::{settings, App, AppConfig};

use crate::dynamo::{DynamoStore, DEFAULT_WAKEUP_SHARDS};
use crate::jwt_scopes::JwtScopes;
use crate::metrics::Metrics;
use crate::publisher::AwsPublisher;
use crate::sqs::SqsQueue;

/// The engine on AWS.
pub type AwsEngine = Engine<DynamoStore, SqsQueue, ReqwestClient, AwsPublisher>;

/// Why the function cannot start: a setting is missing or malformed. The message names it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

impl ConfigError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError(message.into())
    }
}

/// Everything a function reads from its environment (template.yaml sets all of it).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `SUNDIAL_TABLE`.
    pub table: String,
    /// `SUNDIAL_DISPATCH_QUEUE_URL`.
    pub dispatch_queue_url: String,
    /// `SUNDIAL_NOTIFY_QUEUE_URL`.
    pub notify_queue_url: String,
    /// `SUNDIAL_DISPATCH_DLQ_URL`, `SUNDIAL_NOTIFY_DLQ_URL`: where the dispatch and notify
    /// functions send poison messages at once, and where dead letters are read. Optional: without
    /// one, a poison message is retried until SQS's redrive moves it.
    pub dead_letter_urls: (Option<String>, Option<String>),
    /// `SUNDIAL_EVENT_BUS`: where state changes are published; none if unset.
    pub event_bus: Option<String>,
    /// `SUNDIAL_STATE_CHANGE_EVENTS`: `none`, `final` or `all` (`false` and `true` are `none` and
    /// `all`). Unset: `all` when `SUNDIAL_EVENT_BUS` is set (what a bus alone meant before the
    /// setting), else `none`. The template sets it from `StateChangeEvents` (default `none`).
    pub state_change_events: StateChangeEvents,
    /// `SUNDIAL_PUBLIC_URL`: the API's base URL, for feedback URLs.
    pub public_url: String,
    /// `SUNDIAL_SIGNING_SECRET`: at least 32 bytes.
    pub signing_secret: Vec<u8>,
    /// `SUNDIAL_TIMER_SHARDS` (default 16).
    pub wakeup_shards: u32,
    /// `SUNDIAL_EXECUTION_RETENTION_DAYS` (default 30; 0 keeps executions forever).
    pub retention_days: u64,
    /// `SUNDIAL_DEBUG_MODE`.
    pub debug_mode: bool,
    /// `SUNDIAL_SERVICES`.
    pub services: std::collections::BTreeMap<String, String>,
    /// `SUNDIAL_OUTBOUND_ALLOW`.
    pub outbound_allow: Option<String>,
    /// `SUNDIAL_VAR_*`.
    pub template_env: std::collections::BTreeMap<String, String>,
    /// `SUNDIAL_CONSOLE_TOKENS_SECRET`: the ARN of the Secrets Manager secret holding the
    /// console's login tokens (the API function's only; set when the stack turns the console
    /// on). Unset: the API function serves no page.
    pub console_tokens_secret: Option<String>,
    /// `SUNDIAL_JWT_SCOPE_CLAIM`, `SUNDIAL_JWT_WRITE_SCOPE`, `SUNDIAL_JWT_READ_SCOPE` (defaults
    /// `scope`, `sundial/write`, `sundial/read`): what a JWT's claims must hold for each scope
    /// under `AuthMode=JWT` (the API function's; template parameters `JwtScopeClaim`,
    /// `JwtWriteScope`, `JwtReadScope`).
    pub jwt_scopes: JwtScopes,
    /// `SUNDIAL_JWT_ISSUER`: the stack's JWT issuer (`JwtIssuer`), where the console signs
    /// people in under `AuthMode=JWT`.
    pub jwt_issuer: Option<String>,
    /// `SUNDIAL_CONSOLE_CLIENT_ID`: the console's client at the issuer (`ConsoleClientId`). Set
    /// (with the console on under `AuthMode=JWT`), the console's login is a sign-in there.
    pub console_client_id: Option<String>,
    /// `SUNDIAL_CONSOLE_CLIENT_SECRET`: the ARN of the Secrets Manager secret holding that
    /// client's secret, for providers that give the client one (`ConsoleClientSecretArn`).
    pub console_client_secret: Option<String>,
}

/// A tick once a minute, planned 80 s ahead: a tick that EventBridge delivers up to 20 s late still
/// finds every fire of the minute before it enqueued, and a fire planned twice is one execution.
pub const TICK_HORIZON: Duration = Duration::from_secs(80);

/// The dispatch function's `Timeout` in template.yaml (a test keeps the two equal).
pub const DISPATCH_FUNCTION_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest one dispatch invocation holds a running attempt: its timeout less 20 s for the
/// attempt's final write, notifications and the batch response. A run whose invocation died is
/// taken over when its lease ends, this + 30 s after the attempt started; so the dispatch queue's
/// visibility timeout must bring its message back by then (template.yaml: 150 s, checked by a
/// test). Synchronous jobs with a longer `timeoutSeconds` are refused at creation.
pub const DISPATCH_MAX_HOLD: Duration = Duration::from_secs(100);

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Settings::from_vars(vars)
    }

    /// Reads the settings from `vars` (name, value pairs).
    pub fn from_vars(vars: Vec<(String, String)>) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            vars.iter()
                .find(|(k, v)| k == name && !v.is_empty())
                .map(|(_, v)| v.clone())
        };
        let required =
            |name: &str| get(name).ok_or_else(|| ConfigError(format!("{name} is not set")));
        let number = |name: &str, default: u64| -> Result<u64, ConfigError> {
            get(name).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| ConfigError(format!("{name}: expected a whole number, got {v:?}")))
            })
        };
        let signing_secret =
            settings::signing_secret(&required("SUNDIAL_SIGNING_SECRET")?).map_err(ConfigError)?;
        let wakeup_shards = number("SUNDIAL_TIMER_SHARDS", u64::from(DEFAULT_WAKEUP_SHARDS))?;
        let wakeup_shards = u32::try_from(wakeup_shards)
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| ConfigError("SUNDIAL_TIMER_SHARDS: expected 1 to 1000".into()))?;
        let event_bus = get("SUNDIAL_EVENT_BUS");
        let state_change_events = match get("SUNDIAL_STATE_CHANGE_EVENTS") {
            None if event_bus.is_some() => StateChangeEvents::All,
            None => StateChangeEvents::None,
            Some(text) => StateChangeEvents::parse(&text).ok_or_else(|| {
                ConfigError(format!(
                    "SUNDIAL_STATE_CHANGE_EVENTS: expected none, final or all (or false, true), got {text:?}"
                ))
            })?,
        };
        if state_change_events != StateChangeEvents::None && event_bus.is_none() {
            return Err(ConfigError(
                "SUNDIAL_STATE_CHANGE_EVENTS: publishing state changes needs SUNDIAL_EVENT_BUS"
                    .into(),
            ));
        }
        Ok(Settings {
            table: required("SUNDIAL_TABLE")?,
            dispatch_queue_url: required("SUNDIAL_DISPATCH_QUEUE_URL")?,
            notify_queue_url: required("SUNDIAL_NOTIFY_QUEUE_URL")?,
            dead_letter_urls: (
                get("SUNDIAL_DISPATCH_DLQ_URL"),
                get("SUNDIAL_NOTIFY_DLQ_URL"),
            ),
            event_bus,
            state_change_events,
            public_url: get("SUNDIAL_PUBLIC_URL").unwrap_or_else(|| "http://localhost".into()),
            signing_secret,
            wakeup_shards,
            retention_days: number("SUNDIAL_EXECUTION_RETENTION_DAYS", 30)?,
            debug_mode: settings::flag(get("SUNDIAL_DEBUG_MODE").as_deref()),
            services: settings::parse_services(&get("SUNDIAL_SERVICES").unwrap_or_default())
                .map_err(ConfigError)?,
            outbound_allow: get("SUNDIAL_OUTBOUND_ALLOW"),
            template_env: settings::template_env(vars.iter().cloned()),
            console_tokens_secret: get("SUNDIAL_CONSOLE_TOKENS_SECRET"),
            jwt_scopes: jwt_scopes(&get)?,
            jwt_issuer: get("SUNDIAL_JWT_ISSUER"),
            console_client_id: get("SUNDIAL_CONSOLE_CLIENT_ID"),
            console_client_secret: get("SUNDIAL_CONSOLE_CLIENT_SECRET"),
        })
    }
}

/// The JWT scope mapping of the environment (see [`Settings::jwt_scopes`]).
fn jwt_scopes(get: &impl Fn(&str) -> Option<String>) -> Result<JwtScopes, ConfigError> {
    let default = JwtScopes::default();
    let value = |name: &str, default: String| -> Result<String, ConfigError> {
        let value = get(name).unwrap_or(default);
        if value
            .chars()
            .any(|c| c.is_whitespace() || c == ',' || c == '[' || c == ']')
        {
            // Claims are matched value by value, split on spaces and commas.
            return Err(ConfigError(format!(
                "{name}: one value without spaces, commas or brackets, got {value:?}"
            )));
        }
        Ok(value)
    };
    let scopes = JwtScopes {
        claim: value("SUNDIAL_JWT_SCOPE_CLAIM", default.claim)?,
        write: value("SUNDIAL_JWT_WRITE_SCOPE", default.write)?,
        read: value("SUNDIAL_JWT_READ_SCOPE", default.read)?,
    };
    if scopes.write == scopes.read {
        return Err(ConfigError(format!(
            "SUNDIAL_JWT_WRITE_SCOPE and SUNDIAL_JWT_READ_SCOPE are both {:?}: each scope needs its own value",
            scopes.write
        )));
    }
    Ok(scopes)
}

/// The SDK configuration: region and credentials from the environment as usual (on Lambda, the
/// execution role's), `AWS_ENDPOINT_URL` honoured (moto in tests), and our HTTPS client — hyper and
/// rustls on ring, the crypto the rest of the binary already carries.
pub async fn sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(http_client())
        .load()
        .await
}

/// The SDK's HTTPS client: hyper with rustls on ring.
pub fn http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::Ring))
        .build_https()
}

/// The engine and what it counts, built once per cold start and shared by every invocation: what
/// the [handlers](crate::handlers) take.
///
/// Generic over the engine's ports so that the handlers run on the in-memory adapters in their
/// tests; the type parameters default to the AWS adapters, which [`Sundial::new`] builds. There,
/// state-change events are batched (see [`AwsPublisher`]) and the handlers flush them; code that
/// drives the engine otherwise must call [`Sundial::unbatched`] first.
pub struct Sundial<S = DynamoStore, Q = SqsQueue, H = ReqwestClient, P = AwsPublisher>
where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    /// The engine (its [`Engine::app`] is the control plane the API serves).
    pub engine: Arc<Engine<S, Q, H, P>>,
    /// Counters the handlers flush as EMF metrics after each invocation.
    pub metrics: Arc<Metrics>,
    /// What a JWT's claims must hold for each scope (the API function's identity layer).
    pub jwt_scopes: Arc<JwtScopes>,
}

/// The adapters a [`Sundial`] runs on: DynamoDB, SQS, the outbound client and EventBridge on AWS
/// ([`Sundial::new`]), the in-memory ones in the handlers' tests.
pub struct Ports<S, Q, H, P> {
    /// Jobs, executions and the timer index.
    pub store: S,
    /// The dispatch queue, with its dead letters.
    pub dispatch_queue: Q,
    /// The notify queue, with its dead letters.
    pub notify_queue: Q,
    /// The client of jobs' request chains and notifications.
    pub http: H,
    /// State-change events and the queue and bus targets of jobs.
    pub publisher: P,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
}

impl<S, Q, H, P> Sundial<S, Q, H, P>
where
    S: Store,
    Q: Queue,
    H: HttpClient,
    P: EventPublisher,
{
    /// The engine on `ports`, configured from `settings` as every function's is (the tick's
    /// horizon, the dispatch hold, …), counting into `metrics`.
    pub fn on(settings: &Settings, ports: Ports<S, Q, H, P>, metrics: Arc<Metrics>) -> Self {
        let app = Arc::new(App::new(
            ports.store,
            ports.clock,
            AppConfig {
                debug_mode: sundial_core::debug_mode::DebugMode::from_flag(settings.debug_mode),
                signing_secret: settings.signing_secret.clone(),
                max_sync_attempt: Some(DISPATCH_MAX_HOLD),
                targets: ports.publisher.target_support(),
            },
        ));
        let config = EngineConfig {
            tick_horizon: TICK_HORIZON,
            public_base_url: settings.public_url.clone(),
            services: settings.services.clone(),
            template_env: settings.template_env.clone(),
            state_change_bus: settings.event_bus.clone(),
            state_change_events: settings.state_change_events,
            max_inline_wait: Duration::from_secs(1),
            max_hold: Some(DISPATCH_MAX_HOLD),
            // A cancel through the API function, or a CancelOther in another invocation, is
            // read by the call's own dispatch: at 5 s and every 5 s after.
            stop_check_every: Some(AWS_STOP_CHECK_EVERY),
            // Each execution environment names the leases it takes, so that a stop can tell a
            // call another environment is making (and waits for it) from one of its own.
            incarnation: instance_name(),
            // A calendar's change answers at once; its jobs are re-planned by the notify
            // function, 25 to a message (docs/engine.md, "Calendars").
            replan_by_queue: true,
            ..EngineConfig::default()
        };
        let engine = Engine::new(
            app,
            ports.dispatch_queue,
            ports.notify_queue,
            ports.http,
            ports.publisher,
            config,
        );
        Sundial {
            engine,
            metrics,
            jwt_scopes: Arc::new(settings.jwt_scopes.clone()),
        }
    }
}

/// A name for this execution environment's engine, the holder of the leases it takes: short
/// (it is stored with every running execution), and different in every environment.
fn instance_name() -> String {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("l{:x}", started ^ u128::from(std::process::id()))
}

impl Sundial {
    /// Builds the store, queues, publisher, outbound client and engine.
    pub fn new(settings: &Settings, sdk: &SdkConfig) -> Result<Self, ConfigError> {
        Sundial::with_clock(settings, sdk, Arc::new(SystemClock))
    }

    /// As [`Sundial::new`], on a given clock.
    pub fn with_clock(
        settings: &Settings,
        sdk: &SdkConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ConfigError> {
        let dynamo = aws_sdk_dynamodb::Client::new(sdk);
        let sqs = aws_sdk_sqs::Client::new(sdk);
        let events = aws_sdk_eventbridge::Client::new(sdk);
        let mut store = DynamoStore::new(dynamo, &settings.table)
            .with_wakeup_shards(settings.wakeup_shards)
            .with_clock(clock.clone());
        if settings.retention_days > 0 {
            store = store.with_execution_retention(Duration::from_secs(
                settings.retention_days.saturating_mul(86_400),
            ));
        }
        let queue = |url: &str, dlq: &Option<String>| {
            let queue = SqsQueue::new(sqs.clone(), url);
            match dlq {
                Some(dlq) => queue.with_dead_letter_queue(dlq),
                None => queue,
            }
        };
        let metrics = Arc::new(Metrics::default());
        let publisher = AwsPublisher::new(
            events,
            sqs.clone(),
            settings
                .event_bus
                .clone()
                .unwrap_or_else(|| "default".into()),
        )
        .with_metrics(Arc::clone(&metrics));
        // The tick, dispatch and notify handlers flush at the end of every invocation; the API
        // function, serving requests one by one, publishes as it goes (see `Sundial::unbatched`).
        publisher.set_batching(true);
        let policy =
            settings::allow_outbound(AddressPolicy::aws(), settings.outbound_allow.as_deref());
        let http = ReqwestClient::new(policy)
            .map_err(|e| ConfigError(format!("SUNDIAL_OUTBOUND_ALLOW: {e}")))?;
        let ports = Ports {
            store,
            dispatch_queue: queue(&settings.dispatch_queue_url, &settings.dead_letter_urls.0),
            notify_queue: queue(&settings.notify_queue_url, &settings.dead_letter_urls.1),
            http,
            publisher,
            clock,
        };
        Ok(Sundial::on(settings, ports, metrics))
    }

    /// Publishes state-change events one by one, as they happen: for the API function, whose
    /// requests (cancel, terminate, feedback) change states outside any handler that flushes.
    pub fn unbatched(self) -> Self {
        self.engine.publisher().set_batching(false);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let base = [
            ("SUNDIAL_TABLE", "t"),
            ("SUNDIAL_DISPATCH_QUEUE_URL", "http://q/d"),
            ("SUNDIAL_NOTIFY_QUEUE_URL", "http://q/n"),
            ("SUNDIAL_SIGNING_SECRET", "0123456789abcdef0123456789abcdef"),
        ];
        base.iter()
            .chain(extra)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults() {
        let settings = Settings::from_vars(vars(&[])).map_err(|e| e.to_string());
        let settings = settings
            .as_ref()
            .map(|s| (s.wakeup_shards, s.retention_days, s.debug_mode));
        assert_eq!(settings, Ok((16, 30, false)));
    }

    #[test]
    fn state_change_events_levels_and_their_old_aliases() {
        let level = |extra: &[(&str, &str)]| {
            Settings::from_vars(vars(extra))
                .map(|s| s.state_change_events)
                .map_err(|e| e.to_string())
        };
        let bus = ("SUNDIAL_EVENT_BUS", "sundial-events");
        let with = |value: &'static str| level(&[bus, ("SUNDIAL_STATE_CHANGE_EVENTS", value)]);
        assert_eq!(level(&[]), Ok(StateChangeEvents::None));
        assert_eq!(level(&[bus]), Ok(StateChangeEvents::All), "a bus alone");
        assert_eq!(with("none"), Ok(StateChangeEvents::None));
        assert_eq!(with("final"), Ok(StateChangeEvents::Final));
        assert_eq!(with("all"), Ok(StateChangeEvents::All));
        assert_eq!(with("true"), Ok(StateChangeEvents::All));
        assert_eq!(with("false"), Ok(StateChangeEvents::None));
    }

    #[test]
    fn jwt_scopes_default_to_a_cognito_resource_server_and_refuse_ambiguity() {
        let scopes = |extra: &[(&str, &str)]| {
            Settings::from_vars(vars(extra))
                .map(|s| s.jwt_scopes)
                .map_err(|e| e.to_string())
        };
        assert_eq!(scopes(&[]), Ok(JwtScopes::default()));
        let groups = scopes(&[
            ("SUNDIAL_JWT_SCOPE_CLAIM", "cognito:groups"),
            ("SUNDIAL_JWT_WRITE_SCOPE", "operators"),
            ("SUNDIAL_JWT_READ_SCOPE", "viewers"),
        ]);
        assert_eq!(
            groups,
            Ok(JwtScopes {
                claim: "cognito:groups".into(),
                write: "operators".into(),
                read: "viewers".into(),
            })
        );
        let same = scopes(&[("SUNDIAL_JWT_READ_SCOPE", "sundial/write")]);
        assert!(
            matches!(&same, Err(e) if e.contains("each scope needs its own value")),
            "{same:?}"
        );
        let spaced = scopes(&[("SUNDIAL_JWT_WRITE_SCOPE", "a b")]);
        assert!(
            matches!(&spaced, Err(e) if e.starts_with("SUNDIAL_JWT_WRITE_SCOPE")),
            "{spaced:?}"
        );
    }

    #[test]
    fn errors_name_the_setting() {
        let error = |extra: &[(&str, &str)]| {
            Settings::from_vars(vars(extra))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(error(&[("SUNDIAL_TIMER_SHARDS", "0")]).starts_with("SUNDIAL_TIMER_SHARDS"));
        assert!(error(&[("SUNDIAL_EXECUTION_RETENTION_DAYS", "x")])
            .starts_with("SUNDIAL_EXECUTION_RETENTION_DAYS"));
        assert!(error(&[("SUNDIAL_SERVICES", "nope")]).starts_with("SUNDIAL_SERVICES"));
        assert!(error(&[("SUNDIAL_STATE_CHANGE_EVENTS", "some")])
            .starts_with("SUNDIAL_STATE_CHANGE_EVENTS"));
        assert!(
            error(&[("SUNDIAL_STATE_CHANGE_EVENTS", "final")]).contains("needs SUNDIAL_EVENT_BUS"),
            "a level without a bus"
        );
        let missing = Settings::from_vars(vec![])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(missing.contains("is not set"), "{missing}");
    }

    /// The dispatch and notify functions can send a poison message to their DLQ at once: the
    /// template gives each its DLQ's URL and `sqs:SendMessage` on it.
    #[test]
    fn the_template_lets_poison_messages_reach_the_dead_letter_queues() {
        let template = include_str!("../../../template.yaml");
        let resource = |name: &str| -> &str {
            let start = template
                .find(&format!("\n  {name}:\n"))
                .unwrap_or_else(|| panic!("{name} in template.yaml"));
            let body = &template[start + name.len() + 5..];
            // The resource ends where the next one (two spaces, a name, a colon) starts.
            let end = body
                .match_indices("\n  ")
                .find(|(i, _)| body[i + 3..].starts_with(|c: char| c.is_ascii_alphabetic()))
                .map_or(body.len(), |(i, _)| i);
            &body[..end]
        };
        for (function, variable, queue) in [
            (
                "DispatchFunction",
                "SUNDIAL_DISPATCH_DLQ_URL",
                "DispatchDeadLetterQueue",
            ),
            (
                "NotifyFunction",
                "SUNDIAL_NOTIFY_DLQ_URL",
                "NotifyDeadLetterQueue",
            ),
        ] {
            let block = resource(function);
            assert!(
                block.contains(&format!("{variable}: !Ref {queue}")),
                "{function} sets {variable}"
            );
            // Its `Queues` statement (sqs:SendMessage) names the dead-letter queue's ARN.
            let sends = block
                .split("- Sid: Queues")
                .nth(1)
                .and_then(|rest| rest.split("- Sid:").next())
                .unwrap_or_default();
            assert!(
                sends.contains("Action: sqs:SendMessage")
                    && sends.contains(&format!("- !GetAtt {queue}.Arn")),
                "{function} may send to {queue}"
            );
        }
    }

    /// The constants the dispatch lease is built on match the template: the function's timeout,
    /// and a visibility timeout that brings a dead invocation's message back by the time its lease
    /// ends (hold + the 30 s lease margin), not minutes later.
    #[test]
    fn dispatch_limits_match_the_template() {
        let template = include_str!("../../../template.yaml");
        let property = |resource: &str, name: &str| -> u64 {
            let start = template
                .find(&format!("\n  {resource}:\n"))
                .unwrap_or_else(|| panic!("{resource} in template.yaml"));
            let rest = &template[start..];
            let at = rest
                .find(&format!("      {name}: "))
                .unwrap_or_else(|| panic!("{resource}.{name} in template.yaml"));
            let line = rest[at..].lines().next().unwrap_or_default();
            let value = line.split(':').nth(1).unwrap_or_default().trim();
            value.parse().unwrap_or_else(|_| panic!("{line:?}"))
        };
        let timeout = property("DispatchFunction", "Timeout");
        assert_eq!(timeout, DISPATCH_FUNCTION_TIMEOUT.as_secs());
        assert!(DISPATCH_MAX_HOLD < DISPATCH_FUNCTION_TIMEOUT);
        let visibility = property("DispatchQueue", "VisibilityTimeout");
        assert!(
            visibility >= timeout,
            "a live invocation keeps its messages hidden"
        );
        assert!(
            visibility <= DISPATCH_MAX_HOLD.as_secs() + 30 + 30,
            "a dead invocation's message comes back soon after its lease ends: {visibility} s"
        );
    }
}
