//! What a job runs and whom it tells: templated HTTP calls and queue/bus targets.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::fields::{self, check_body, describe, err, join, quote, Obj, STRING};
use super::limits::MAX_HEADERS;
use super::FieldError;
use crate::template::{Part, Template};

/// An HTTP method a job may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    /// `GET`
    Get,
    /// `HEAD`
    Head,
    /// `POST`
    Post,
    /// `PUT`
    Put,
    /// `PATCH`
    Patch,
    /// `DELETE`
    Delete,
    /// `OPTIONS`
    Options,
}

impl HttpMethod {
    const ALL: [HttpMethod; 7] = [
        HttpMethod::Get,
        HttpMethod::Head,
        HttpMethod::Post,
        HttpMethod::Put,
        HttpMethod::Patch,
        HttpMethod::Delete,
        HttpMethod::Options,
    ];

    /// The method's name, upper case.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Head => "HEAD",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Options => "OPTIONS",
        }
    }

    /// Reads a method name, ignoring case.
    pub fn parse(text: &str) -> Option<HttpMethod> {
        HttpMethod::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for HttpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A templated HTTP call: the shape shared by `request` entries, `notification` rules and `checkUrl`.
///
/// The URL is `http://…`, `https://…`, `service://name/path` (a service of the configured service
/// map) or `service:/path` (the job's own service); every string may hold `${…}` placeholders.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpTemplate {
    /// The method.
    pub method: HttpMethod,
    /// The URL template.
    pub url: Template,
    /// Header templates by header name as written.
    pub headers: BTreeMap<String, Template>,
    /// The body as written: any JSON, with templates inside its strings.
    pub body: Option<Value>,
}

/// One entry of seed 002's `request` chain.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestStep {
    /// The call to make.
    pub http: HttpTemplate,
    /// Name under which later templates can read this call's response (`respEnvName`).
    pub resp_env_name: Option<String>,
    /// Seed 002's `serviceName` of the call, as written.
    pub service_name: Option<String>,
}

/// One of seed 002's `notification` rules.
#[derive(Clone, Debug, PartialEq)]
pub struct NotificationRule {
    /// The outcome it matches: an HTTP status (`"500"`), an async status or error, or `timeout`.
    /// `None` matches every outcome.
    pub state_equals: Option<String>,
    /// The call to make.
    pub http: HttpTemplate,
}

/// A queue or bus a job sends to instead of calling HTTP endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `{"sqs": {"queueUrl": …}}`: one message per run.
    Sqs {
        /// The queue's URL.
        queue_url: String,
    },
    /// `{"eventbridge": {"busName", "source", "detailType"}}`: one event per run.
    EventBridge {
        /// The event bus name or ARN (default `default`).
        bus_name: String,
        /// The events' `source`.
        source: String,
        /// The events' `detail-type`.
        detail_type: String,
    },
}

/// What a job runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Seed 002's `request` chain, in order.
    Requests(Vec<RequestStep>),
    /// A queue or bus target.
    Target(Target),
}

/// Which kind of call is being read; decides the fields and defaults.
#[derive(Clone, Copy)]
pub(super) enum CallKind {
    Request,
    Notification,
    Check,
}

impl CallKind {
    fn known(self) -> &'static [&'static str] {
        match self {
            CallKind::Request => &[
                "method",
                "url",
                "body",
                "headers",
                "respEnvName",
                "serviceName",
            ],
            CallKind::Notification => &["method", "stateEquals", "url", "body", "headers"],
            CallKind::Check => &["method", "url", "headers"],
        }
    }

    fn default_method(self) -> HttpMethod {
        match self {
            CallKind::Request | CallKind::Check => HttpMethod::Get,
            CallKind::Notification => HttpMethod::Post,
        }
    }
}

fn parse_http(obj: &Obj<'_>, kind: CallKind) -> Result<HttpTemplate, FieldError> {
    let method = match obj.string("method", 32)? {
        None => kind.default_method(),
        Some(text) => HttpMethod::parse(text).ok_or_else(|| {
            err(
                obj.path("method"),
                format!(
                    "expected GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS, got {}",
                    quote(text)
                ),
            )
        })?,
    };
    if matches!(kind, CallKind::Check) && method != HttpMethod::Get {
        return Err(err(
            obj.path("method"),
            format!("checkUrl only supports GET, got {}", quote(method.as_str())),
        ));
    }
    let url = parse_url(&obj.path("url"), obj.required_string("url", STRING)?)?;
    let headers = match obj.get("headers") {
        None => BTreeMap::new(),
        Some(value) => parse_headers(&obj.path("headers"), value)?,
    };
    let body = match obj.get("body") {
        None => None,
        Some(body) => {
            check_body(&obj.path("body"), body)?;
            Some(body.clone())
        }
    };
    Ok(HttpTemplate {
        method,
        url,
        headers,
        body,
    })
}

/// Reads a `request` entry at `path` (`request[0]`).
pub(super) fn parse_request(path: &str, value: &Value) -> Result<RequestStep, FieldError> {
    let obj = Obj::new(value, path, CallKind::Request.known())?;
    let http = parse_http(&obj, CallKind::Request)?;
    let resp_env_name = match obj.string("respEnvName", 128)?.map(str::trim) {
        None | Some("") => None,
        Some(name) if is_identifier(name) => Some(name.to_string()),
        Some(name) => {
            return Err(err(
                obj.path("respEnvName"),
                format!(
                "expected a name of letters, digits and \"_\" not starting with a digit, got {}",
                quote(name)
            ),
            ))
        }
    };
    let service_name = match obj.string("serviceName", 128)?.map(str::trim) {
        None | Some("") => None,
        Some(name) if super::id::is_id_text(name, 128) => Some(name.to_string()),
        Some(name) => {
            return Err(err(
                obj.path("serviceName"),
                format!(
                    "expected a service name of A-Z, a-z, 0-9, \"_\", \".\", \"-\", got {}",
                    quote(name)
                ),
            ))
        }
    };
    Ok(RequestStep {
        http,
        resp_env_name,
        service_name,
    })
}

/// Reads a `notification` rule at `path` (`notification[0]`).
pub(super) fn parse_notification(
    path: &str,
    value: &Value,
) -> Result<NotificationRule, FieldError> {
    let obj = Obj::new(value, path, CallKind::Notification.known())?;
    let state_equals = obj.code("stateEquals", 256)?;
    let http = parse_http(&obj, CallKind::Notification)?;
    Ok(NotificationRule { state_equals, http })
}

/// Reads `checkUrl`: the object of seed 002's template, or a bare URL string (the create table
/// types the field as a string).
pub(super) fn parse_check_url(path: &str, value: &Value) -> Result<HttpTemplate, FieldError> {
    if let Value::String(url) = value {
        if url.len() > STRING {
            return Err(err(
                path,
                format!("is {} bytes long; the limit is {STRING}", url.len()),
            ));
        }
        return Ok(HttpTemplate {
            method: HttpMethod::Get,
            url: parse_url(path, url)?,
            headers: BTreeMap::new(),
            body: None,
        });
    }
    let obj = Obj::new(value, path, CallKind::Check.known())?;
    parse_http(&obj, CallKind::Check)
}

/// Reads `target`: exactly one of `sqs` and `eventbridge`.
pub(super) fn parse_target(path: &str, value: &Value) -> Result<Target, FieldError> {
    let obj = Obj::new(value, path, &["sqs", "eventbridge"])?;
    match (obj.get("sqs"), obj.get("eventbridge")) {
        (Some(sqs), None) => {
            let sqs = Obj::new(sqs, &obj.path("sqs"), &["queueUrl"])?;
            let queue_url = sqs.required_string("queueUrl", 2048)?.trim();
            if !(starts_with_ignore_case(queue_url, "https://")
                || starts_with_ignore_case(queue_url, "http://"))
                || queue_url.contains(char::is_whitespace)
            {
                return Err(err(
                    sqs.path("queueUrl"),
                    format!(
                        "expected a queue URL like \"https://sqs.us-east-1.amazonaws.com/123456789012/jobs\", got {}",
                        quote(queue_url)
                    ),
                ));
            }
            Ok(Target::Sqs {
                queue_url: queue_url.to_string(),
            })
        }
        (None, Some(bus)) => {
            let bus = Obj::new(bus, &obj.path("eventbridge"), &["busName", "source", "detailType"])?;
            let bus_name = match bus.string("busName", 1600)?.map(str::trim) {
                None | Some("") => "default".to_string(),
                Some(name) => name.to_string(),
            };
            let source = bus.required_string("source", 256)?.trim().to_string();
            let detail_type = bus.required_string("detailType", 128)?.trim().to_string();
            Ok(Target::EventBridge {
                bus_name,
                source,
                detail_type,
            })
        }
        (Some(_), Some(_)) => Err(err(
            path,
            "give exactly one of sqs and eventbridge, not both",
        )),
        (None, None) => Err(err(
            path,
            "expected {\"sqs\": {\"queueUrl\": …}} or {\"eventbridge\": {\"busName\", \"source\", \"detailType\"}}",
        )),
    }
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.len() >= prefix.len()
        && text.is_char_boundary(prefix.len())
        && text[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Parses a URL template. The scheme must be written literally, so that a template can never turn
/// a job's call into another kind of call; the rest may come from placeholders.
fn parse_url(path: &str, text: &str) -> Result<Template, FieldError> {
    let template = fields::template(path, text)?;
    let bad = || {
        err(
            path,
            format!(
                "expected a URL starting with http://, https://, service://name/ or service:/, got {}",
                quote(text)
            ),
        )
    };
    let rest = ["https://", "http://", "service://"]
        .into_iter()
        .find(|scheme| starts_with_ignore_case(text, scheme))
        .map(|scheme| &text[scheme.len()..]);
    match rest {
        // Host or service name: must not be empty.
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '?', '#']) => return Err(bad()),
        Some(_) => {}
        None => {
            let own = starts_with_ignore_case(text, "service:").then(|| &text["service:".len()..]);
            match own {
                Some(path_part) if path_part.starts_with('/') && path_part.len() > 1 => {}
                _ => return Err(bad()),
            }
        }
    }
    if let Some(c) = template
        .literals()
        .flat_map(str::chars)
        .find(|c| c.is_whitespace() || c.is_control())
    {
        return Err(err(
            path,
            format!("URL {} contains {c:?}; encode it", quote(text)),
        ));
    }
    Ok(template)
}

/// Parses a `headers` map: names are HTTP tokens, values string templates without line breaks.
fn parse_headers(path: &str, value: &Value) -> Result<BTreeMap<String, Template>, FieldError> {
    let Value::Object(map) = value else {
        return Err(err(
            path,
            format!(
                "expected an object of header names to values, got {}",
                describe(value)
            ),
        ));
    };
    if map.len() > MAX_HEADERS {
        return Err(err(
            path,
            format!("has {} headers; the limit is {MAX_HEADERS}", map.len()),
        ));
    }
    let mut headers: BTreeMap<String, Template> = BTreeMap::new();
    for (name, value) in map {
        let item_path = join(path, name);
        if !is_header_name(name) {
            return Err(err(
                item_path,
                format!("{} is not a valid header name", quote(name)),
            ));
        }
        if headers.keys().any(|k| k.eq_ignore_ascii_case(name)) {
            return Err(err(
                item_path,
                format!("header {} is given twice (names ignore case)", quote(name)),
            ));
        }
        let Value::String(text) = value else {
            return Err(err(
                item_path,
                format!("expected a string, got {}", describe(value)),
            ));
        };
        if text.len() > STRING {
            return Err(err(
                item_path,
                format!("is {} bytes long; the limit is {STRING}", text.len()),
            ));
        }
        let template = fields::template(&item_path, text)?;
        let broken = template.parts().iter().any(|p| match p {
            Part::Literal(t) => t.contains(['\r', '\n', '\0']),
            Part::Placeholder { .. } => false,
        });
        if broken {
            return Err(err(item_path, "header values cannot contain line breaks"));
        }
        headers.insert(name.clone(), template);
    }
    Ok(headers)
}

/// RFC 9110 token characters.
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}
