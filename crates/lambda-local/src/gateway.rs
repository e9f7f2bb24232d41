//! API Gateway HTTP API in front of the `api` function: the template's route table, each
//! request turned into a payload format 2.0 event, the function's answer turned back into the
//! response, the integration's timeout (503) and a function error (500) answered as API Gateway
//! answers them.
//!
//! Authorization: a route with `NONE` passes. A `JWT` route's token is verified as API Gateway
//! verifies it ([`crate::jwt`]) against the template's issuer (a loopback one locally), and its
//! claims reach the function. `AWS_IAM` routes are not verified locally: the request passes
//! without an identity in the request context (the API then records the actor `anonymous`), and
//! the start-up line says so. The gateway listens on loopback only.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::jwt::JwtAuthorizer;
use crate::runtime::{Function, InvokeError};
use crate::stack::{Route, Stack};
use crate::Error;

/// API Gateway's payload limit.
const MAX_BODY: usize = 10 * 1024 * 1024;

/// One route: its key parsed, and what it needs.
#[derive(Clone, Debug)]
pub struct RouteEntry {
    /// `ANY` or a method.
    pub method: String,
    /// The path's segments: literals, `{name}` or `{name+}`.
    pub segments: Vec<String>,
    /// The route key as written.
    pub key: String,
    /// `NONE`, `AWS_IAM`, `JWT`.
    pub authorization: String,
    /// A `JWT` route's authorizer.
    pub jwt: Option<Arc<JwtAuthorizer>>,
    /// The integration's function (logical id).
    pub function: String,
    /// The integration's timeout.
    pub timeout: Duration,
}

/// The route table.
#[derive(Clone, Debug)]
pub struct Routes(pub Vec<RouteEntry>);

impl Routes {
    /// The routes of the template, with their integrations: only `AWS_PROXY` integrations with
    /// payload format 2.0 (what the `api` binary parses) are accepted.
    pub fn from_stack(stack: &Stack) -> Result<Routes, Error> {
        let authorizers: BTreeMap<String, Arc<JwtAuthorizer>> = stack
            .authorizers
            .iter()
            .filter_map(|(id, properties)| {
                JwtAuthorizer::from_properties(properties).map(|a| (id.clone(), Arc::new(a)))
            })
            .collect();
        let mut out = Vec::new();
        for route in &stack.routes {
            let mut entry = entry(stack, route)?;
            if entry.authorization == "JWT" {
                // By its AuthorizerId, or the template's only JWT authorizer (the id is a `Ref`
                // only AWS resolves).
                let named = route
                    .authorizer_id
                    .as_ref()
                    .and_then(|id| authorizers.get(id));
                let only = (authorizers.len() == 1)
                    .then(|| authorizers.values().next())
                    .flatten();
                let authorizer = named.or(only).ok_or_else(|| {
                    Error::Template(format!(
                        "route {}: JWT without a JWT authorizer with an issuer",
                        route.route_key
                    ))
                })?;
                entry.jwt = Some(Arc::clone(authorizer));
            }
            out.push(entry);
        }
        Ok(Routes(out))
    }

    /// The route API Gateway picks for `method` and `path`, and the path parameters: the most
    /// specific match (no greedy segment before greedy, more literal segments first, a method
    /// before `ANY`).
    pub fn find(&self, method: &str, path: &str) -> Option<(&RouteEntry, Map<String, Value>)> {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let mut best: Option<(Rank, &RouteEntry, Map<String, Value>)> = None;
        for route in &self.0 {
            if route.method != "ANY" && !route.method.eq_ignore_ascii_case(method) {
                continue;
            }
            let Some(params) = matches(&route.segments, &parts) else {
                continue;
            };
            let greedy = route.segments.iter().any(|s| s.ends_with("+}"));
            let literals = route
                .segments
                .iter()
                .filter(|s| !s.starts_with('{'))
                .count();
            let rank = (!greedy, literals, route.method != "ANY");
            if best.as_ref().is_none_or(|(r, _, _)| rank > *r) {
                best = Some((rank, route, params));
            }
        }
        best.map(|(_, route, params)| (route, params))
    }
}

/// How specific a matching route is, API Gateway's order: no greedy segment, more literal
/// segments, a method rather than `ANY`.
type Rank = (bool, usize, bool);

fn entry(stack: &Stack, route: &Route) -> Result<RouteEntry, Error> {
    let (method, path) = route.route_key.split_once(' ').ok_or_else(|| {
        Error::Template(format!(
            "route key {:?}: expected METHOD /path",
            route.route_key
        ))
    })?;
    let integration_id = route
        .target
        .as_deref()
        .and_then(|t| t.strip_prefix("integrations/"))
        .ok_or_else(|| {
            Error::Template(format!(
                "route {}: no integrations/<id> target",
                route.route_key
            ))
        })?;
    let integration = stack.integrations.get(integration_id).ok_or_else(|| {
        Error::Template(format!(
            "route {}: no integration {integration_id}",
            route.route_key
        ))
    })?;
    if integration.integration_type.as_deref() != Some("AWS_PROXY")
        || integration.payload_format_version.as_deref() != Some("2.0")
    {
        return Err(Error::Template(format!(
            "integration {integration_id}: the api binary parses AWS_PROXY payload format 2.0 \
             (lambda_http apigw_http); the template says {:?} {:?}",
            integration.integration_type, integration.payload_format_version
        )));
    }
    let function = integration.function.clone().ok_or_else(|| {
        Error::Template(format!(
            "integration {integration_id}: its IntegrationUri is not a function's Arn"
        ))
    })?;
    Ok(RouteEntry {
        method: method.to_owned(),
        segments: path
            .trim_start_matches('/')
            .split('/')
            .map(str::to_owned)
            .collect(),
        key: route.route_key.clone(),
        authorization: route
            .authorization_type
            .clone()
            .unwrap_or_else(|| "NONE".into()),
        jwt: None,
        function,
        timeout: Duration::from_millis(integration.timeout_in_millis.unwrap_or(30_000)),
    })
}

fn matches(segments: &[String], parts: &[&str]) -> Option<Map<String, Value>> {
    let mut params = Map::new();
    for (i, segment) in segments.iter().enumerate() {
        if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix("+}")) {
            let rest = parts.get(i..)?.join("/");
            if rest.is_empty() {
                return None;
            }
            params.insert(name.to_owned(), Value::String(rest));
            return Some(params);
        }
        let part = parts.get(i)?;
        if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            if part.is_empty() {
                return None;
            }
            params.insert(name.to_owned(), Value::String((*part).to_owned()));
        } else if segment != part {
            return None;
        }
    }
    (segments.len() == parts.len()).then_some(params)
}

/// What the gateway serves with.
pub struct Gateway {
    /// The route table.
    pub routes: Routes,
    /// Functions by logical id.
    pub functions: BTreeMap<String, Arc<Function>>,
    /// `requestContext.domainName`.
    pub domain: String,
    /// Requests so far, for request ids.
    pub requests: std::sync::atomic::AtomicU64,
}

/// Serves one request through the route table and the function.
pub async fn handle(State(gateway): State<Arc<Gateway>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let Some((route, params)) = gateway.routes.find(parts.method.as_str(), &path) else {
        return message(StatusCode::NOT_FOUND, "Not Found");
    };
    let Some(function) = gateway.functions.get(&route.function) else {
        return message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    };
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return message(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large");
    };
    let number = gateway
        .requests
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let authorizer = match &route.jwt {
        Some(jwt) => {
            let header = parts
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok());
            match jwt.authorize(header).await {
                Ok(context) => Some(context),
                Err(_why) => return message(StatusCode::UNAUTHORIZED, "Unauthorized"),
            }
        }
        None => None,
    };
    let mut event = event(
        route,
        params,
        &parts.method,
        &path,
        parts.uri.query().unwrap_or(""),
        &parts.headers,
        &body,
        &gateway.domain,
        number,
    );
    if let Some(context) = authorizer {
        event["requestContext"]["authorizer"] = context;
    }
    let payload = event.to_string().into_bytes();
    // The invocation goes on when API Gateway stops waiting (or the client goes away), as on
    // AWS: only the function's own timeout ends it.
    let function = Arc::clone(function);
    let invocation = tokio::spawn(async move { function.invoke(payload).await });
    match tokio::time::timeout(route.timeout, invocation).await {
        Err(_) | Ok(Ok(Err(InvokeError::Timeout(_)))) => {
            message(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable")
        }
        Ok(Err(_)) | Ok(Ok(Err(_))) => {
            message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
        Ok(Ok(Ok(answer))) => response(&answer),
    }
}

/// API Gateway's own answers: `{"message": "…"}`.
fn message(status: StatusCode, text: &str) -> Response {
    (
        status,
        [("content-type", "application/json")],
        json!({ "message": text }).to_string(),
    )
        .into_response()
}

/// The payload format 2.0 event of a request.
#[allow(clippy::too_many_arguments)]
fn event(
    route: &RouteEntry,
    params: Map<String, Value>,
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    body: &Bytes,
    domain: &str,
    number: u64,
) -> Value {
    let mut header_map: BTreeMap<String, String> = BTreeMap::new();
    let mut cookies = Vec::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name == "cookie" {
            cookies.extend(value.split(';').map(|c| c.trim().to_owned()));
            continue;
        }
        header_map
            .entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push(',');
                v.push_str(&value);
            })
            .or_insert(value);
    }
    let mut query_map: BTreeMap<String, String> = BTreeMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (decode(k), decode(v));
        query_map
            .entry(k)
            .and_modify(|old| {
                old.push(',');
                old.push_str(&v);
            })
            .or_insert(v);
    }
    let now = chrono::Utc::now();
    let text = header_map.get("content-type").is_none_or(|t| is_text(t));
    let mut event = json!({
        "version": "2.0",
        "routeKey": route.key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": header_map,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": domain,
            "domainPrefix": domain.split('.').next().unwrap_or(domain),
            "http": {
                "method": method.as_str(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": header_map.get("user-agent").cloned().unwrap_or_default(),
            },
            "requestId": format!("local{number:010}"),
            "routeKey": route.key,
            "stage": "$default",
            "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
            "timeEpoch": now.timestamp_millis(),
        },
        "isBase64Encoded": false,
    });
    if !cookies.is_empty() {
        event["cookies"] = json!(cookies);
    }
    if !query_map.is_empty() {
        event["queryStringParameters"] = json!(query_map);
    }
    if !params.is_empty() {
        event["pathParameters"] = Value::Object(params);
    }
    if !body.is_empty() {
        match std::str::from_utf8(body) {
            Ok(utf8) if text => event["body"] = json!(utf8),
            _ => {
                event["body"] = json!(base64::engine::general_purpose::STANDARD.encode(body));
                event["isBase64Encoded"] = json!(true);
            }
        }
    }
    event
}

fn is_text(content_type: &str) -> bool {
    let t = content_type.to_ascii_lowercase();
    t.starts_with("text/")
        || t.contains("json")
        || t.contains("xml")
        || t.contains("javascript")
        || t.starts_with("application/x-www-form-urlencoded")
}

/// `%XX` and `+` decoded, as API Gateway decodes `queryStringParameters`.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The function's payload format 2.0 answer as an HTTP response. An answer without
/// `statusCode` is, as API Gateway reads it, a 200 with the answer as its JSON body.
fn response(answer: &[u8]) -> Response {
    let Ok(value) = serde_json::from_slice::<Value>(answer) else {
        return message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    };
    let Some(status) = value.get("statusCode").and_then(Value::as_u64) else {
        return (
            StatusCode::OK,
            [("content-type", "application/json")],
            answer.to_vec(),
        )
            .into_response();
    };
    let Some(status) = u16::try_from(status)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
    else {
        return message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    };
    let body = match value.get("body").and_then(Value::as_str) {
        None => Vec::new(),
        Some(text) if value["isBase64Encoded"] == true => {
            match base64::engine::general_purpose::STANDARD.decode(text) {
                Ok(bytes) => bytes,
                Err(_) => {
                    return message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
                }
            }
        }
        Some(text) => text.as_bytes().to_vec(),
    };
    let mut builder = Response::builder().status(status);
    if let Some(headers) = value.get("headers").and_then(Value::as_object) {
        for (name, v) in headers {
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            if let (Ok(name), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&text),
            ) {
                builder = builder.header(name, v);
            }
        }
    }
    if let Some(headers) = value.get("multiValueHeaders").and_then(Value::as_object) {
        for (name, values) in headers {
            for v in values.as_array().into_iter().flatten() {
                if let (Ok(name), Some(Ok(v))) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    v.as_str().map(HeaderValue::from_str),
                ) {
                    builder = builder.header(name, v);
                }
            }
        }
    }
    for cookie in value
        .get("cookies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(Ok(v)) = cookie.as_str().map(HeaderValue::from_str) {
            builder = builder.header("set-cookie", v);
        }
    }
    builder
        .body(Body::from(body))
        .unwrap_or_else(|_| message(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes() -> Routes {
        let entry = |key: &str| {
            let (method, path) = key.split_once(' ').unwrap();
            RouteEntry {
                method: method.into(),
                segments: path
                    .trim_start_matches('/')
                    .split('/')
                    .map(str::to_owned)
                    .collect(),
                key: key.into(),
                authorization: "NONE".into(),
                jwt: None,
                function: "ApiFunction".into(),
                timeout: Duration::from_secs(30),
            }
        };
        Routes(vec![
            entry("ANY /{proxy+}"),
            entry("POST /jobs/{jobId}/feedback/{requestCounts}"),
            entry("GET /health"),
            entry("GET /docs"),
            entry("GET /docs/{proxy+}"),
        ])
    }

    #[test]
    fn the_most_specific_route_wins() {
        let routes = routes();
        let key = |m: &str, p: &str| routes.find(m, p).map(|(r, _)| r.key.clone());
        assert_eq!(key("GET", "/health").as_deref(), Some("GET /health"));
        assert_eq!(key("POST", "/health").as_deref(), Some("ANY /{proxy+}"));
        assert_eq!(
            key("POST", "/jobs/a/feedback/1").as_deref(),
            Some("POST /jobs/{jobId}/feedback/{requestCounts}")
        );
        assert_eq!(
            key("GET", "/jobs/a/feedback/1").as_deref(),
            Some("ANY /{proxy+}")
        );
        assert_eq!(
            key("GET", "/docs/x/y").as_deref(),
            Some("GET /docs/{proxy+}")
        );
        assert_eq!(key("GET", "/"), None, "{{proxy+}} needs a segment");
        let (_, params) = routes.find("POST", "/jobs/a/feedback/1").unwrap();
        assert_eq!(params["jobId"], "a");
        let (_, params) = routes.find("GET", "/jobs/a/b").unwrap();
        assert_eq!(params["proxy"], "jobs/a/b");
    }

    #[test]
    fn queries_decode_as_api_gateway_decodes_them() {
        assert_eq!(decode("a%20b+c"), "a b c");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
    }

    #[test]
    fn answers_without_status_code_are_200_json() {
        let r = response(br#"{"a":1}"#);
        assert_eq!(r.status(), StatusCode::OK);
        let r = response(
            br#"{"statusCode":201,"headers":{"x":"y"},"body":"aGk=","isBase64Encoded":true}"#,
        );
        assert_eq!(r.status(), StatusCode::CREATED);
        assert_eq!(r.headers()["x"], "y");
    }
}
