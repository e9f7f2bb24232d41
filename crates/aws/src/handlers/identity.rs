//! Who calls the API on AWS: API Gateway has authorized the request before the Lambda runs (IAM
//! with Signature Version 4, or a JWT authorizer), and hands the identity it checked to the
//! function in the request context. This layer reads it and puts it on the request as the
//! router's [`Caller`], so the audit trail records the IAM principal's ARN or the JWT's subject.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use lambda_http::request::RequestContext;
use sundial_service::app::Caller;
use sundial_service::Actor;

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

/// The layer of the API function: the request context's identity as the request's [`Caller`]
/// (scope write: what API Gateway let through, the deployment's IAM policy or JWT audience
/// allowed).
pub async fn caller_from_context(mut request: Request, next: Next) -> Response {
    if let Some(actor) = request
        .extensions()
        .get::<RequestContext>()
        .and_then(actor_of)
    {
        request.extensions_mut().insert(Caller::writer(actor));
    }
    next.run(request).await
}
