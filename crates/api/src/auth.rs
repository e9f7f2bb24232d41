//! Who calls the API and what they may do: named tokens with a scope locally, the identity API
//! Gateway authorized on AWS, carried to handlers as one extension, [`Caller`].
//!
//! `sundial serve` checks `Authorization: Bearer <secret>` against its tokens (each compared in
//! constant time, all of them every time, so timing tells nothing about which exists) and puts
//! the matching token's name and scope on the request. A token of scope [`Scope::Read`] reads
//! everything; every route that changes something ([`needs_write`]) answers it 403 with the
//! error envelope naming the missing scope. On AWS, API Gateway has authorized the request (IAM
//! or JWT) before the Lambda runs; the API function's layer (in `sundial-aws`) puts the principal
//! on the request as a [`Caller`] through [`admit`]: scope write for IAM, the scope the JWT's
//! claims grant under a JWT authorizer. Without either (loopback, no tokens) the caller is
//! [`Actor::ANONYMOUS`] with scope write.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub use sundial_service::app::auth::{ApiAuth, ApiToken, Caller, Scope};
use sundial_service::app::Actor;

use super::ApiError;

/// The request's [`Caller`], as a handler's extractor: what the auth layer (or the API Lambda's
/// layer) put on the request, or [`Actor::ANONYMOUS`] with scope write on an open API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated(pub Caller);

/// A 403 naming the missing scope unless `caller` may change something.
pub fn require_write(caller: &Caller) -> Result<(), ApiError> {
    if caller.may_write() {
        Ok(())
    } else {
        Err(forbidden(&caller.actor))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Authenticated(
            parts
                .extensions
                .get::<Caller>()
                .cloned()
                .unwrap_or_else(|| Caller::writer(Actor::anonymous())),
        ))
    }
}

/// The 403 of a change asked with a read token.
fn forbidden(actor: &Actor) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!("scope: this route needs scope write; token {actor} has scope read"),
    )
}

/// Whether the route at `path` with `method` changes something, and so needs scope write: every
/// method but GET, HEAD and OPTIONS, except `POST /specs/preview`, which computes fire times and
/// stores nothing. A dry run of such a route (`POST /jobs/{jobId}/update?dryRun=true`, and
/// `"dryRun": true` to `POST /jobs/{jobId}/backfill` or `POST /bulk/jobs/{action}`) changes
/// nothing either and is let through for a read token.
pub fn needs_write(method: &Method, path: &str) -> bool {
    let reads = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    !reads && path != "/specs/preview"
}

/// The layer of an API with tokens: public paths pass; any other request needs one of the
/// tokens, and a change needs scope write.
pub(super) async fn require_token(
    State(auth): State<Arc<ApiAuth>>,
    request: Request,
    next: Next,
) -> Response {
    if super::is_public_path(request.uri().path()) {
        return next.run(request).await;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(super::bearer_credentials);
    let Some(token) = presented.and_then(|presented| auth.find(presented)) else {
        return ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")
            .into_response();
    };
    let caller = Caller {
        actor: Actor::new(token.name.clone()),
        scope: token.scope,
    };
    match admit(caller, request).await {
        Ok(admitted) => next.run(admitted).await,
        Err(refused) => refused.into_response(),
    }
}

/// `request` with `caller` on it, or the 403 naming the missing scope when the caller may not
/// change what it asks to: a route that [`needs_write`] is refused to a read caller unless it is
/// a dry run. What every layer that knows the caller does (the token layer here, the API
/// function's identity layer on AWS).
pub async fn admit(caller: Caller, request: Request) -> Result<Request, ApiError> {
    let mut request = request;
    if needs_write(request.method(), request.uri().path()) {
        if let Err(refused) = require_write(&caller) {
            // A dry run changes nothing: a read caller may ask it.
            let (is_dry_run, checked) = dry_run(request).await;
            request = checked;
            if !is_dry_run {
                return Err(refused);
            }
        }
    }
    request.extensions_mut().insert(caller);
    Ok(request)
}

/// Where a route that changes something says it is only a dry run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DryRunFlag {
    /// `?dryRun=true` (or `1`, or bare): `POST /jobs/{jobId}/update`.
    InQuery,
    /// `"dryRun": true` in the JSON body: `POST /jobs/{jobId}/backfill`, `POST /bulk/jobs/{action}`.
    InBody,
}

/// The routes that take a dry run, and where they read it.
fn dry_run_flag(method: &Method, path: &str) -> Option<DryRunFlag> {
    if *method != Method::POST {
        return None;
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["jobs", _, "update"] => Some(DryRunFlag::InQuery),
        ["jobs", _, "backfill"] | ["bulk", "jobs", _] => Some(DryRunFlag::InBody),
        _ => None,
    }
}

/// Whether `request` is a dry run of a route that takes one, and the request to pass on (its
/// body read into memory when it had to be looked at; at most [`super::MAX_BODY_BYTES`], past
/// which it is no dry run and the caller's refusal stands).
async fn dry_run(request: Request) -> (bool, Request) {
    match dry_run_flag(request.method(), request.uri().path()) {
        None => (false, request),
        Some(DryRunFlag::InQuery) => {
            let asked = request.uri().query().unwrap_or("").split('&').any(|pair| {
                let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                name == "dryRun" && matches!(value, "" | "true" | "1")
            });
            (asked, request)
        }
        Some(DryRunFlag::InBody) => {
            let (parts, body) = request.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, super::MAX_BODY_BYTES).await else {
                return (false, Request::from_parts(parts, axum::body::Body::empty()));
            };
            let asked = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|body| body.get("dryRun")?.as_bool())
                .unwrap_or(false);
            (
                asked,
                Request::from_parts(parts, axum::body::Body::from(bytes)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reads_and_the_preview_need_no_write_scope() {
        assert!(!needs_write(&Method::GET, "/jobs"));
        assert!(!needs_write(&Method::POST, "/specs/preview"));
        assert!(needs_write(&Method::POST, "/jobs/a"));
        assert!(needs_write(&Method::DELETE, "/main/schedule/clean"));
        assert_eq!(
            dry_run_flag(&Method::POST, "/jobs/a/update"),
            Some(DryRunFlag::InQuery)
        );
        for path in [
            "/jobs/bulk/backfill",
            "/bulk/jobs/pause",
            "/bulk/jobs/delete",
        ] {
            assert_eq!(
                dry_run_flag(&Method::POST, path),
                Some(DryRunFlag::InBody),
                "{path}"
            );
        }
        for (method, path) in [
            (Method::POST, "/jobs/a"),
            (Method::POST, "/jobs/a/trigger"),
            (Method::DELETE, "/jobs/a/update"),
            (Method::POST, "/bulk/jobs"),
            (Method::POST, "/jobs/a/update/x"),
        ] {
            assert_eq!(dry_run_flag(&method, path), None, "{method} {path}");
        }
    }
}
