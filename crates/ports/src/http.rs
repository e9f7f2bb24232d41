//! The `HttpClient` port: one outbound HTTP call, with its own time limit.
//!
//! Jobs call URLs that users wrote, so the port is where every call is bounded: a time limit per
//! call, a cap on the response body, and (in the adapter) a policy on which addresses may be
//! reached at all. The engine only sees a response or a typed [`HttpError`] and turns either into
//! an error code (`"500"`, `"timeout"`) that retry and notification rules match on.

use std::future::Future;
use std::time::Duration;

use sundial_core::job::REDACTED;
use sundial_core::outcome::Outcome;

/// The largest response body kept; longer bodies are cut off and the call fails with
/// [`HttpError::BodyTooLarge`].
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// The limit on one outbound call when nothing shorter applies (docs/api.md: "http request timeout is
/// managed by the service, 60 s").
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// An outbound request, fully expanded. Its `Debug` form shows every header value as the
/// redaction marker ([`REDACTED`]) and only the body's length: the request does not know which of
/// its headers the job lists in `sensitiveHeaders`, so a request that ends up in a log line shows
/// none of them.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET`, `POST`, ….
    pub method: String,
    /// An absolute `http://` or `https://` URL.
    pub url: String,
    /// Headers in order; names as written.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
    /// The limit on this call: connect, send and read the whole response.
    pub timeout: Duration,
}

impl std::fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, _)| (name.as_str(), REDACTED))
            .collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body_bytes", &self.body.as_ref().map(Vec::len))
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A response, its body read whole (up to [`MAX_RESPONSE_BYTES`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Why a call produced no response.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The call's time limit passed.
    #[error("timed out")]
    Timeout,
    /// The address is not allowed (private, link-local, metadata, or loopback outside local mode).
    #[error("refused by the outbound address policy: {0}")]
    Refused(String),
    /// The URL cannot be called (bad scheme, no host).
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// The response body is larger than [`MAX_RESPONSE_BYTES`].
    #[error("response body larger than {MAX_RESPONSE_BYTES} bytes")]
    BodyTooLarge,
    /// Connecting, sending or reading failed.
    #[error("{0}")]
    Transport(String),
}

impl HttpError {
    /// How an attempt whose call failed this way ended: a timeout, a refusal by the address policy
    /// (`address-refused`, final), or a transport failure (`connection`, retried by the rules).
    pub fn outcome(&self) -> Outcome {
        match self {
            HttpError::Timeout => Outcome::Timeout,
            HttpError::Refused(_) => Outcome::Refused(self.to_string()),
            other => Outcome::Transport(other.to_string()),
        }
    }

    /// False when trying the same call again cannot help: the address policy refuses it.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, HttpError::Refused(_))
    }
}

/// Makes outbound HTTP calls.
pub trait HttpClient: Send + Sync + 'static {
    /// Sends `request` and reads the whole response within `request.timeout`.
    fn send(
        &self,
        request: HttpRequest,
    ) -> impl Future<Output = Result<HttpResponse, HttpError>> + Send;
}

/// A shared client is a client: the engine and the tests that watch its calls hold one client.
impl<T: HttpClient> HttpClient for std::sync::Arc<T> {
    fn send(
        &self,
        request: HttpRequest,
    ) -> impl Future<Output = Result<HttpResponse, HttpError>> + Send {
        (**self).send(request)
    }
}
