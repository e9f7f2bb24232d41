//! Extractors whose rejections are docs/api.md envelopes, not axum's plain-text bodies.

use std::collections::HashMap;

use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ApiError, BODY_READ_TIMEOUT, MAX_BODY_BYTES};

/// A JSON body of at most [`MAX_BODY_BYTES`], received within [`BODY_READ_TIMEOUT`] (else 408);
/// an empty body is `Value::Null`. The content type is
/// not checked: curl users often leave it out, and the body is JSON either way.
pub(crate) struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("body: larger than {MAX_BODY_BYTES} bytes"),
            )
        };
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
            return Err(too_large());
        }
        // A body that trickles in (a slowloris client) would hold its connection and its task.
        let bytes = tokio::time::timeout(
            BODY_READ_TIMEOUT,
            axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES),
        )
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "body: not received within {} s",
                    BODY_READ_TIMEOUT.as_secs()
                ),
            )
        })?
        .map_err(|_| too_large())?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(Value::Null));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|e| ApiError::invalid("body", format!("invalid JSON: {e}")))
    }
}

/// Query parameters as a map. A parameter given twice (`?active=1&active=0`) is a 400 naming it:
/// which one wins differs between proxies, caches and servers, so no reading of it is safe.
pub(crate) struct Params(pub HashMap<String, String>);

impl Params {
    /// Refuses any parameter not in `known`, naming it, so that a typo (`?overlp=AllowAll`) is an
    /// error rather than a silently ignored setting.
    pub(crate) fn only(self, known: &[&str]) -> Result<Self, ApiError> {
        let mut unknown: Vec<&String> = self
            .0
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
            .collect();
        unknown.sort();
        match unknown.first() {
            None => Ok(self),
            Some(key) => Err(ApiError::invalid(
                key,
                if known.is_empty() {
                    "unknown query parameter; this route takes none".to_string()
                } else {
                    format!("unknown query parameter; expected {}", known.join(", "))
                },
            )),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Params::from_pairs(query_pairs(parts)?)
    }
}

impl Params {
    fn from_pairs(pairs: Vec<(String, String)>) -> Result<Self, ApiError> {
        let mut map = HashMap::with_capacity(pairs.len());
        for (key, value) in pairs {
            if map.contains_key(&key) {
                return Err(ApiError::invalid(
                    &key,
                    "query parameter given more than once; give it once",
                ));
            }
            map.insert(key, value);
        }
        Ok(Params(map))
    }
}

fn query_pairs(parts: &Parts) -> Result<Vec<(String, String)>, ApiError> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
        .map_err(|e| ApiError::invalid("query", e.body_text()))?;
    Ok(pairs)
}

/// [`Params`] plus every `label` given: the one parameter that may repeat (`?label=team:payments
/// &label=tier:1`, all must match), since a conjunction has no order for a proxy to get wrong.
pub(crate) struct LabelledParams(pub Params, pub Vec<String>);

impl<S: Send + Sync> FromRequestParts<S> for LabelledParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let (labels, rest): (Vec<_>, Vec<_>) = query_pairs(parts)?
            .into_iter()
            .partition(|(key, _)| key == "label");
        Ok(LabelledParams(
            Params::from_pairs(rest)?,
            labels.into_iter().map(|(_, value)| value).collect(),
        ))
    }
}

/// Path parameters; a segment axum cannot decode (invalid UTF-8 after percent-decoding) is an
/// envelope too.
pub(crate) struct PathParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for PathParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| PathParams(value))
            .map_err(|e| ApiError::new(e.status(), format!("path: {}", e.body_text())))
    }
}
