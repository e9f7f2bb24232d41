//! What a job runs and whom it tells: templated HTTP calls and queue/bus targets.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::fields::{self, check_body, describe, err, join, quote, Obj, STRING};
use super::limits::MAX_HEADERS;
use super::{FieldError, ServiceName};
use crate::template::{Part, Template};

/// The header Sundial sets on every request of a run so that a retried call can be recognised; a
/// job cannot set it.
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";

/// Headers a job's `headers` may not set, compared ignoring case. They are the hop-by-hop headers
/// of RFC 9110 §7.6.1 and RFC 9112 (and the older ones proxies still honour, RFC 2616 §13.5.1), the
/// headers that frame the message (RFC 9112 §6: `Content-Length`, `Transfer-Encoding`; `Host`,
/// RFC 9110 §7.2; `Expect`, RFC 9110 §10.1.1), which the HTTP client derives from the request and
/// which, if a job could set them, would cut or run bodies together on a shared connection, and
/// the headers Sundial owns. Any `Proxy-` header is refused too ([`is_reserved_header`]).
pub const RESERVED_HEADERS: &[&str] = &[
    "Connection",
    "Keep-Alive",
    "Proxy-Connection",
    "TE",
    "Trailer",
    "Transfer-Encoding",
    "Upgrade",
    "Content-Length",
    "Host",
    "Expect",
    IDEMPOTENCY_KEY_HEADER,
    crate::signing::SIGNATURE_HEADER,
];

/// True when a job may not set the header `name` (see [`RESERVED_HEADERS`]); ignores case.
pub fn is_reserved_header(name: &str) -> bool {
    RESERVED_HEADERS
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
        || name
            .get(..6)
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case("proxy-"))
}

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

/// One entry of docs/api.md's `request` chain.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestStep {
    /// The call to make.
    pub http: HttpTemplate,
    /// Name under which later templates can read this call's response (`respEnvName`).
    pub resp_env_name: Option<String>,
    /// docs/api.md's `serviceName` of the call, as written.
    pub service_name: Option<String>,
}

/// One of docs/api.md's `notification` rules.
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
    /// docs/api.md's `request` chain, in order.
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
    Cancel,
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
            CallKind::Cancel => &["method", "url", "headers", "body"],
        }
    }

    fn default_method(self) -> HttpMethod {
        match self {
            CallKind::Request | CallKind::Check => HttpMethod::Get,
            CallKind::Notification | CallKind::Cancel => HttpMethod::Post,
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
        Some(name) => Some(
            ServiceName::parse(name)
                .map_err(|e| err(obj.path("serviceName"), e.message))?
                .to_string(),
        ),
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
    // docs/api.md writes the outcome as a string (`"500"`, `"timeout"`); a number is refused rather
    // than guessed at, since the outcome it matches is text.
    let state_equals = obj
        .string("stateEquals", 256)?
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let http = parse_http(&obj, CallKind::Notification)?;
    Ok(NotificationRule { state_equals, http })
}

/// Reads `checkUrl`: the object of docs/api.md's template, or a bare URL string (the create table
/// types the field as a string).
pub(super) fn parse_check_url(path: &str, value: &Value) -> Result<HttpTemplate, FieldError> {
    parse_url_or_call(path, value, CallKind::Check)
}

/// Reads `cancelUrl`, as `checkUrl` is read: a bare URL string (a `POST` with no body) or a call
/// object of any method (default `POST`), with headers and a body.
pub(super) fn parse_cancel_url(path: &str, value: &Value) -> Result<HttpTemplate, FieldError> {
    parse_url_or_call(path, value, CallKind::Cancel)
}

fn parse_url_or_call(
    path: &str,
    value: &Value,
    kind: CallKind,
) -> Result<HttpTemplate, FieldError> {
    if let Value::String(url) = value {
        if url.len() > STRING {
            return Err(err(
                path,
                format!("is {} bytes long; the limit is {STRING}", url.len()),
            ));
        }
        return Ok(HttpTemplate {
            method: kind.default_method(),
            url: parse_url(path, url)?,
            headers: BTreeMap::new(),
            body: None,
        });
    }
    let obj = Obj::new(value, path, kind.known())?;
    parse_http(&obj, kind)
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
    let web = ["https://", "http://"]
        .into_iter()
        .find(|scheme| starts_with_ignore_case(text, scheme));
    if let Some(scheme) = web {
        let rest = &text[scheme.len()..];
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        // An authority that comes from a placeholder is checked when the URL is expanded.
        if !authority.contains("${") {
            check_authority(authority)
                .map_err(|why| err(path, format!("URL {}: {why}", quote(text))))?;
        }
    }
    Ok(template)
}

/// Checks the `[userinfo@]host[:port]` of an http(s) URL: a port from 1 to 65535, and an IPv6
/// literal without a zone id (`[fe80::1%25eth0]`), which names an interface of the machine Sundial
/// runs on and means nothing to anyone else.
fn check_authority(authority: &str) -> Result<(), String> {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let (literal, after) = bracketed
            .split_once(']')
            .ok_or("unclosed \"[\" in the host")?;
        if literal.contains('%') {
            return Err(format!(
                "IPv6 zone ids are not allowed (\"{}\")",
                &literal[literal.find('%').unwrap_or(0)..]
            ));
        }
        if literal.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("[{literal}] is not an IPv6 address"));
        }
        match after {
            "" => (literal, None),
            _ => match after.strip_prefix(':') {
                Some(port) => (literal, Some(port)),
                None => return Err(format!("unexpected {after:?} after the IPv6 address")),
            },
        }
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    match port {
        // `http://example.com:/` is the default port (RFC 3986 §3.2.3).
        None | Some("") => Ok(()),
        Some(port) => match port.parse::<u16>() {
            Ok(n) if n > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
            _ => Err(format!("port {port:?} is not a number from 1 to 65535")),
        },
    }
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
        if is_reserved_header(name) {
            return Err(err(
                item_path,
                format!(
                    "{} cannot be set by a job: hop-by-hop and framing headers are the HTTP \
                     client's, and Idempotency-Key and Sundial-Signature are Sundial's",
                    quote(name)
                ),
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
pub(super) fn is_header_name(name: &str) -> bool {
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
