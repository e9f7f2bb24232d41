//! Who calls the API on AWS, and what they may do: API Gateway has authorized the request before
//! the Lambda runs (IAM with Signature Version 4, or a JWT authorizer), and hands the identity it
//! checked to the function in the request context. This layer reads it and puts it on the
//! request as the router's [`Caller`], so the audit trail records the IAM principal's ARN or the
//! JWT's subject, and a read caller's changes are refused as `sundial serve` refuses a read
//! token's ([`sundial_api::auth::admit`]).
//!
//! An IAM principal has scope write: the deployment's IAM policy decides who may call at all. A
//! JWT has the scope its claims grant ([`JwtScopes`]): the issuer's audience only says the token
//! is meant for Sundial, not what its holder may change.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lambda_http::request::RequestContext;
use sundial_api::ApiError;
use sundial_service::app::Caller;
use sundial_service::Actor;

pub use crate::jwt_scopes::JwtScopes;

/// The actor of an API Gateway request context: the JWT's `sub` claim (JWT authorizer), else the
/// IAM principal (`userArn`, else `callerId`, else `userId`); `None` when API Gateway authorized
/// nothing (the router then records `anonymous`).
pub fn actor_of(context: &RequestContext) -> Option<Actor> {
    let RequestContext::ApiGatewayV2(context) = context else {
        return None;
    };
    let authorizer = context.authorizer.as_ref()?;
    let subject = authorizer
        .jwt
        .as_ref()
        .and_then(|jwt| jwt.claims.get("sub"))
        .filter(|sub| !sub.is_empty());
    let principal = authorizer.iam.as_ref().and_then(|iam| {
        [&iam.user_arn, &iam.caller_id, &iam.user_id]
            .into_iter()
            .flatten()
            .find(|name| !name.is_empty())
    });
    subject.or(principal).map(|name| Actor::new(name.clone()))
}

/// The caller of a request context, or the refusal of a JWT that grants no scope; `None` when
/// API Gateway authorized nothing (a route without an authorizer: the feedback route, the
/// console's own pages).
fn caller_of(context: &RequestContext, scopes: &JwtScopes) -> Option<Result<Caller, ApiError>> {
    let actor = actor_of(context)?;
    let jwt = match context {
        RequestContext::ApiGatewayV2(context) => context
            .authorizer
            .as_ref()
            .and_then(|authorizer| authorizer.jwt.as_ref()),
        _ => None,
    };
    Some(match jwt {
        None => Ok(Caller::writer(actor)),
        Some(jwt) => match scopes.scope_of(jwt) {
            Some(scope) => Ok(Caller { actor, scope }),
            None => Err(scopes.refusal(&actor)),
        },
    })
}

/// The layer of the API function: the request context's identity as the request's [`Caller`],
/// with the scope an IAM principal (write) or a JWT's claims (`scopes`) give it; a change asked
/// by a read caller, or anything asked with a JWT that grants no scope, answers 403.
pub async fn caller_from_context(
    State(scopes): State<Arc<JwtScopes>>,
    request: Request,
    next: Next,
) -> Response {
    let caller = request
        .extensions()
        .get::<RequestContext>()
        .and_then(|context| caller_of(context, &scopes));
    match caller {
        None => next.run(request).await,
        Some(Err(refused)) => refused.into_response(),
        Some(Ok(caller)) => match sundial_api::auth::admit(caller, request).await {
            Ok(admitted) => next.run(admitted).await,
            Err(refused) => refused.into_response(),
        },
    }
}
