//! The HTTP client of the client commands: one request to the API, authenticated, and its answer
//! turned into JSON or a [`CliError`] of the right class.
//!
//! It knows the API's conventions (docs/api.md) and nothing about commands: every error is the
//! `{"resp_code", "resp_msg"}` envelope, whose message names the offending field; API Gateway's
//! own refusals (`{"message": "Forbidden"}`) are read too, so a missing IAM permission reads as
//! such. Commands build paths from segments, so an id is always one path segment.

use std::time::Duration;

use reqwest::{Method, Url};
use serde_json::Value;

use crate::error::{Class, CliError};

#[cfg(feature = "aws-auth")]
pub(crate) mod sigv4;

/// How requests are authenticated.
pub(crate) enum Auth {
    /// No credentials: a local `sundial serve` on loopback without `SUNDIAL_API_TOKEN`.
    None,
    /// `Authorization: Bearer <token>`: `SUNDIAL_API_TOKEN` of `sundial serve`, or a JWT for the
    /// API on AWS with `AuthMode=JWT`.
    Bearer(String),
    /// SigV4 with the standard AWS credential chain, for the API on AWS with `AuthMode=IAM`.
    #[cfg(feature = "aws-auth")]
    SigV4(sigv4::Signer),
}

/// An answer of the API: its status and JSON body (`Null` when empty).
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: u16,
    pub body: Value,
}

/// A connection to one Sundial API.
pub(crate) struct Client {
    base: Url,
    http: reqwest::Client,
    auth: Auth,
}

/// One request: method, path segments, query, JSON body and extra headers.
pub(crate) struct Request<'a> {
    pub method: Method,
    pub path: &'a [&'a str],
    pub query: Vec<(&'a str, String)>,
    pub body: Option<&'a Value>,
    pub headers: Vec<(&'a str, String)>,
}

impl<'a> Request<'a> {
    pub(crate) fn new(method: Method, path: &'a [&'a str]) -> Request<'a> {
        Request {
            method,
            path,
            query: Vec::new(),
            body: None,
            headers: Vec::new(),
        }
    }

    pub(crate) fn get(path: &'a [&'a str]) -> Request<'a> {
        Request::new(Method::GET, path)
    }

    pub(crate) fn post(path: &'a [&'a str], body: Option<&'a Value>) -> Request<'a> {
        Request {
            body,
            ..Request::new(Method::POST, path)
        }
    }

    /// Adds `name=value` to the query when `value` is given.
    pub(crate) fn query(mut self, name: &'a str, value: Option<impl ToString>) -> Request<'a> {
        if let Some(value) = value {
            self.query.push((name, value.to_string()));
        }
        self
    }

    pub(crate) fn header(mut self, name: &'a str, value: Option<String>) -> Request<'a> {
        if let Some(value) = value {
            self.headers.push((name, value));
        }
        self
    }
}

/// How long one request may take, connecting included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

impl Client {
    /// A client for the API at `server` (`http(s)://host[:port][/base/path]`).
    pub(crate) fn new(server: &str, auth: Auth) -> Result<Client, CliError> {
        let base = parse_server(server)?;
        let mut builder = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("sundial-cli/", env!("CARGO_PKG_VERSION")));
        // A proxy from the environment must not catch calls to a server on this machine.
        if is_local(&base) {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| CliError::new(Class::Server, format!("starting the HTTP client: {e}")))?;
        Ok(Client { base, http, auth })
    }

    /// The URL of `path` (each element one segment, percent-encoded) with `query`.
    pub(crate) fn url(&self, path: &[&str], query: &[(&str, String)]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(path);
        }
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// Sends `request`; a 2xx answer is its JSON body, anything else a [`CliError`] with the
    /// server's message.
    pub(crate) async fn call(&self, request: Request<'_>) -> Result<Value, CliError> {
        let what = format!("{} {}", request.method, request.path.join("/"));
        let reply = self.send(request).await?;
        if (200..300).contains(&reply.status) {
            Ok(reply.body)
        } else {
            Err(api_error(&what, &reply))
        }
    }

    /// Sends `request` and returns the answer whatever its status (for `/health`, whose 503 still
    /// carries the engine's state).
    pub(crate) async fn send(&self, request: Request<'_>) -> Result<Reply, CliError> {
        let url = self.url(request.path, &request.query);
        let body = match request.body {
            Some(value) => serde_json::to_vec(value)
                .map_err(|e| CliError::usage(format!("encoding the request body: {e}")))?,
            None => Vec::new(),
        };
        let mut builder = self
            .http
            .request(request.method.clone(), url.clone())
            .header("Accept", "application/json");
        if request.body.is_some() {
            builder = builder
                .header("Content-Type", "application/json")
                .body(body.clone());
        }
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        match &self.auth {
            Auth::None => {}
            Auth::Bearer(token) => builder = builder.bearer_auth(token),
            #[cfg(feature = "aws-auth")]
            Auth::SigV4(signer) => {
                for (name, value) in signer
                    .sign(request.method.as_str(), url.as_str(), &body)
                    .await?
                {
                    builder = builder.header(name, value);
                }
            }
        }
        let response = builder.send().await.map_err(|e| {
            let hint = if e.is_connect() {
                "; is the server running there? (--server or SUNDIAL_SERVER says where)"
            } else {
                ""
            };
            CliError::new(
                Class::Server,
                format!("cannot reach {}: {}{hint}", self.base, error_chain(&e)),
            )
        })?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|e| {
            CliError::new(
                Class::Server,
                format!("reading the answer of {}: {}", self.base, error_chain(&e)),
            )
        })?;
        let body = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            match serde_json::from_slice(&bytes) {
                Ok(body) => body,
                Err(_) if !(200..300).contains(&status) => {
                    // A proxy's or gateway's HTML or text error page: show its start.
                    let text = String::from_utf8_lossy(&bytes);
                    Value::String(text.chars().take(200).collect())
                }
                Err(e) => {
                    return Err(CliError::new(
                        Class::Server,
                        format!("{} answered HTTP {status} with a body that is not JSON: {e}; is it a Sundial API?", self.base),
                    ))
                }
            }
        };
        Ok(Reply { status, body })
    }
}

/// The error for a non-2xx `reply`: the server's own message (which names the field) and the
/// status.
pub(crate) fn api_error(what: &str, reply: &Reply) -> CliError {
    let message = match &reply.body {
        Value::Object(map) => map
            .get("resp_msg")
            .or_else(|| map.get("message"))
            .or_else(|| map.get("Message"))
            .and_then(Value::as_str)
            .map(str::to_string),
        Value::String(text) if !text.trim().is_empty() => Some(text.trim().to_string()),
        _ => None,
    };
    let message = match message {
        Some(message) => format!("{message} (HTTP {})", reply.status),
        None => format!("{what}: HTTP {}", reply.status),
    };
    CliError::new(Class::of_status(reply.status), message)
}

/// `--server` as a base URL, or a usage error naming it.
pub(crate) fn parse_server(server: &str) -> Result<Url, CliError> {
    let url = Url::parse(server).map_err(|e| {
        CliError::usage(format!(
            "--server: expected a URL like http://127.0.0.1:8080, got {server:?}: {e}"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(CliError::usage(format!(
            "--server: expected an http or https URL like http://127.0.0.1:8080, got {server:?}"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(CliError::usage(format!(
            "--server: the URL takes no query or fragment, got {server:?}"
        )));
    }
    Ok(url)
}

fn is_local(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An error with its causes, which reqwest keeps apart (`error sending request` alone says little).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_segments_under_the_base() {
        let client = Client::new("http://127.0.0.1:8080", Auth::None).unwrap();
        assert_eq!(
            client
                .url(&["executions", "a~t~b/c", "cancel"], &[])
                .as_str(),
            "http://127.0.0.1:8080/executions/a~t~b%2Fc/cancel"
        );
        let client = Client::new("https://api.example.com/prod/", Auth::None).unwrap();
        assert_eq!(
            client
                .url(
                    &["jobs"],
                    &[("state", "paused".into()), ("cursor", "a&b".into())]
                )
                .as_str(),
            "https://api.example.com/prod/jobs?state=paused&cursor=a%26b"
        );
    }

    #[test]
    fn bad_servers_are_usage_errors() {
        for server in ["localhost:8080", "ftp://x", "http://x/?a=1", ""] {
            let err = parse_server(server).unwrap_err();
            assert_eq!(err.class, Class::Usage, "{server}");
            assert!(err.message.starts_with("--server: "), "{}", err.message);
        }
    }

    #[test]
    fn errors_carry_the_servers_message_and_class() {
        let reply = Reply {
            status: 400,
            body: json!({"resp_code": 400, "resp_msg": "creator: is required"}),
        };
        let err = api_error("POST jobs/x", &reply);
        assert_eq!(err.class, Class::Refused);
        assert_eq!(err.message, "creator: is required (HTTP 400)");
        let reply = Reply {
            status: 403,
            body: json!({"message": "Forbidden"}),
        };
        assert_eq!(
            api_error("GET jobs", &reply).message,
            "Forbidden (HTTP 403)"
        );
        let reply = Reply {
            status: 502,
            body: Value::Null,
        };
        let err = api_error("GET jobs", &reply);
        assert_eq!(
            (err.class, err.message.as_str()),
            (Class::Server, "GET jobs: HTTP 502")
        );
    }
}
