//! The API's OpenAPI 3.1 document (`GET /openapi.json`) and its reference page (`GET /docs`).
//!
//! The document is generated: the operations come from the handlers' `#[utoipa::path]`
//! attributes (the route table of the `api` module), the schemas from the types of
//! [`super::schema`], and what every route shares (the envelope of errors, the auth schemes, the answers a body or a
//! token can cause) is added here by rules, not by hand per route. Both `sundial serve` and the
//! API Lambda serve it from the same router, without authentication: it is the public contract
//! and holds no data (on AWS the template routes `/openapi.json` and `/docs` around the
//! authorizer, as it does `/health`).
//!
//! `/docs` is Swagger UI, whose files are compiled into the binary from the `utoipa-swagger-ui`
//! crate (its `vendored` feature: nothing is fetched at build or run time), gzip-compressed.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::MethodFilter;
use sundial_core::job::document::{Bound, FieldKind, JobField, JOB_FIELDS, MAX_COUNT};
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder};
use utoipa::{Modify, OpenApi as _, ToSchema};

use super::extract::PathParams;
use super::schema::{ErrorEnvelope, JobSortName};
use super::{ApiError, Operations};

/// The document's frame: what the API is, its tags, and the rules that complete every operation.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Sundial",
        description = "Sundial's HTTP API: docs/api.md's job-scheduling API (paths, field names, defaults and the `{\"resp_code\", \"resp_msg\"}` envelope) plus the extensions of Temporal Schedules and MoJobScheduler. One router serves `sundial serve` and the API Lambda.\n\nRequests that change something answer with the envelope `{\"resp_code\": 200, \"resp_msg\": null}` (and fields beside it); reads answer with the resource. Every error, on every route, is the envelope with `resp_code` equal to the HTTP status; a 400 names the field. Bodies are JSON of at most 256 KiB (413 beyond), and must arrive within 30 s (408). Unknown routes answer 404 and known routes with another method 405, both as the envelope.\n\nAuthentication: `sundial serve` on loopback without `SUNDIAL_API_TOKEN` is open; with the token (required beyond loopback) every route but `/health`, the feedback route and these documents needs `Authorization: Bearer <token>`. On AWS, API Gateway authenticates instead: IAM (SigV4) or JWT, a template parameter. Prose and examples: docs/api.md.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    tags(
        (name = "jobs", description = "Jobs: create, read, pause and resume, update and run, delete, list, declarative timers."),
        (name = "executions", description = "Executions: trigger, backfill, describe, list, read, cancel, terminate, async feedback."),
        (name = "job-centre", description = "The job-scheduling centre's own routes (docs/api.md): `/main/…` and `DELETE /job/{jobId}`."),
        (name = "operations", description = "Health, stats, spec preview."),
        (name = "calendars", description = "Named business calendars that schedules refer to (`onlyOn`, `exclude`, business-day rules); changing one re-plans the jobs that use it."),
        (name = "documents", description = "This document and its reference page."),
    ),
    components(schemas(ErrorEnvelope, JobSortName)),
    modifiers(&Conventions),
)]
struct Frame;

/// The security schemes' names in the document.
const BEARER: &str = "bearer";
const SIGV4: &str = "sigv4";
const JWT: &str = "jwt";

/// Completes every operation by rule: the auth schemes and the 401 of every protected route, the
/// 408 and 413 of every route that reads a body, and `operationId`s for the links.
struct Conventions;

impl Modify for Conventions {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(BEARER, bearer_scheme());
        components.add_security_scheme(SIGV4, sigv4_scheme());
        components.add_security_scheme(JWT, jwt_scheme());
        // Alternatives: any one of them. Which one applies depends on where the API runs.
        openapi.security = Some(vec![
            SecurityRequirement::new(BEARER, Vec::<String>::new()),
            SecurityRequirement::new(SIGV4, Vec::<String>::new()),
            SecurityRequirement::new(JWT, Vec::<String>::new()),
        ]);
    }
}

fn bearer_scheme() -> SecurityScheme {
    let mut http = Http::new(HttpAuthScheme::Bearer);
    http.description = Some(
        "`sundial serve`: the token of `SUNDIAL_API_TOKEN` (at least 16 visible ASCII characters), \
         required whenever it is set, and it must be set beyond loopback. The scheme name is read \
         in any case."
            .into(),
    );
    SecurityScheme::Http(http)
}

fn sigv4_scheme() -> SecurityScheme {
    let mut key = ApiKeyValue::new("Authorization");
    key.description = Some(
        "On AWS with `AuthMode=IAM`: requests signed with AWS Signature Version 4 (service \
         `execute-api`), authorized by IAM policy. `sundial --server` signs them from the AWS \
         credential chain (cargo feature `aws-auth`)."
            .into(),
    );
    key.extensions = Some(
        ExtensionsBuilder::new()
            .add("x-amazon-apigateway-authtype", "awsSigv4")
            .build(),
    );
    SecurityScheme::ApiKey(ApiKey::Header(key))
}

fn jwt_scheme() -> SecurityScheme {
    let mut http = Http::new(HttpAuthScheme::Bearer);
    http.bearer_format = Some("JWT".into());
    http.description = Some(
        "On AWS with `AuthMode=JWT`: a JWT from the template's `JwtIssuer`, for one of its \
         `JwtAudience`s, checked by API Gateway's JWT authorizer."
            .into(),
    );
    SecurityScheme::Http(http)
}

/// Adds the answers shared by rule to one operation: 401 when it is protected (its own security
/// is not the anonymous `[{}]`), 403 when it is protected and changes something
/// ([`super::auth::needs_write`]), 408 and 413 when it reads a body.
fn add_shared_answers(path: &str, method: &Method, operation: &mut Operation) {
    let public = operation
        .security
        .as_ref()
        .is_some_and(|alternatives| alternatives.iter().any(is_anonymous));
    let error = |description: &str| {
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(RefOr::Ref(Ref::from_schema_name(
                        ErrorEnvelope::name(),
                    ))))
                    .build(),
            )
            .build()
    };
    let responses = &mut operation.responses.responses;
    if !public {
        responses.entry("401".into()).or_insert_with(|| {
            RefOr::T(error(
                "A bearer token is configured and the request has none, or the wrong one (on AWS, API Gateway answers for IAM and JWT).",
            ))
        });
    }
    if !public && super::auth::needs_write(method, path) {
        responses.entry("403".into()).or_insert_with(|| {
            RefOr::T(error(
                "The bearer token has scope read (`SUNDIAL_API_TOKENS`; on AWS with `AuthMode=JWT`, a JWT that grants only `JwtReadScope`, or neither scope); this route changes something and needs scope write.",
            ))
        });
    }
    if operation.request_body.is_some() {
        responses
            .entry("408".into())
            .or_insert_with(|| RefOr::T(error("The body did not arrive within 30 s.")));
        responses
            .entry("413".into())
            .or_insert_with(|| RefOr::T(error("The body is larger than 256 KiB (262,144 bytes).")));
    }
}

/// `{}`: a security requirement that asks for nothing (the route is open).
fn is_anonymous(requirement: &SecurityRequirement) -> bool {
    serde_json::to_value(requirement)
        .ok()
        .and_then(|v| v.as_object().map(serde_json::Map::is_empty))
        .unwrap_or(false)
}

/// The operations of a path item, with the method filter each is served at.
pub(crate) fn operations_of(item: &PathItem) -> Vec<(MethodFilter, &Operation)> {
    [
        (MethodFilter::GET, item.get.as_ref()),
        (MethodFilter::PUT, item.put.as_ref()),
        (MethodFilter::POST, item.post.as_ref()),
        (MethodFilter::DELETE, item.delete.as_ref()),
        (MethodFilter::PATCH, item.patch.as_ref()),
        (MethodFilter::HEAD, item.head.as_ref()),
        (MethodFilter::OPTIONS, item.options.as_ref()),
        (MethodFilter::TRACE, item.trace.as_ref()),
    ]
    .into_iter()
    .filter_map(|(filter, operation)| operation.map(|o| (filter, o)))
    .collect()
}

fn operations_of_mut(item: &mut PathItem) -> impl Iterator<Item = (Method, &mut Operation)> {
    [
        (Method::GET, item.get.as_mut()),
        (Method::PUT, item.put.as_mut()),
        (Method::POST, item.post.as_mut()),
        (Method::DELETE, item.delete.as_mut()),
        (Method::PATCH, item.patch.as_mut()),
        (Method::HEAD, item.head.as_mut()),
        (Method::OPTIONS, item.options.as_mut()),
        (Method::TRACE, item.trace.as_mut()),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.map(|o| (method, o)))
}

/// Says in the schemas of job definitions what derives cannot: a job has a `request` chain or a
/// `target` (giving both is a 400 the schema leaves to the reader, as null counts as absent).
fn require_request_or_target(openapi: &mut OpenApi) {
    let Some(components) = openapi.components.as_mut() else {
        return;
    };
    for name in ["JobDefinition", "DeclaredJob", "SimulationRequest"] {
        let Some(RefOr::T(schema)) = components.schemas.remove(name) else {
            continue;
        };
        let present = |field: &str| {
            ObjectBuilder::new()
                .schema_type(SchemaType::AnyValue)
                .required(field)
        };
        let either = AnyOfBuilder::new()
            .item(present("request"))
            .item(present("target"));
        let description = match &schema {
            Schema::Object(object) => object.description.clone(),
            _ => None,
        };
        let combined = AllOfBuilder::new()
            .item(schema)
            .item(either)
            .description(description);
        components
            .schemas
            .insert(name.to_string(), RefOr::T(Schema::AllOf(combined.build())));
    }
}

/// Adds to the schemas of a job the fields of core's table of the job document whose JSON type
/// is plain (boolean, integer), described and bounded by the table alone: such a field is added
/// to the core and the docs, never here. Fields of other kinds have their shape in
/// `schema.rs`'s `job_schema!` (`tests/api/mirrors.rs` checks that none is missing).
fn add_table_fields(openapi: &mut OpenApi) {
    let Some(components) = openapi.components.as_mut() else {
        return;
    };
    for name in ["JobDefinition", "DeclaredJob", "Job", "SimulationRequest"] {
        let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(name) else {
            continue;
        };
        for field in JOB_FIELDS {
            if object.properties.contains_key(field.name) {
                continue;
            }
            if let Some(schema) = plain_field(field) {
                object.properties.insert(field.name.to_string(), schema);
            }
        }
    }
}

/// The schema of a field of plain type, as nullable as every optional field: `None` for a
/// field whose shape `schema.rs` describes.
fn plain_field(field: &JobField) -> Option<RefOr<Schema>> {
    let of = |kind: Type| SchemaType::from_iter([kind, Type::Null]);
    let schema = match (field.kind, field.bound) {
        (FieldKind::Boolean, _) => ObjectBuilder::new().schema_type(of(Type::Boolean)),
        (FieldKind::Integer, Bound::Range { min, max }) => {
            let wide = max > u64::from(u32::MAX);
            ObjectBuilder::new()
                .schema_type(of(Type::Integer))
                .format(Some(SchemaFormat::KnownFormat(if wide {
                    KnownFormat::Int64
                } else {
                    KnownFormat::Int32
                })))
                .minimum(Some(min))
                // The greatest int64 is the format's own bound, not stated again.
                .maximum((max < MAX_COUNT).then_some(max))
        }
        _ => return None,
    };
    Some(schema.description(Some(field.description)).into())
}

/// Builds the document: the frame, the route table's operations and their schemas, and the
/// shared answers.
fn build() -> OpenApi {
    let mut document = Frame::openapi().merge_from(Operations::openapi());
    for (path, item) in document.paths.paths.iter_mut() {
        for (method, operation) in operations_of_mut(item) {
            add_shared_answers(path, &method, operation);
        }
    }
    add_table_fields(&mut document);
    require_request_or_target(&mut document);
    document
}

/// The OpenAPI document, built once.
pub fn document() -> &'static OpenApi {
    static DOCUMENT: OnceLock<OpenApi> = OnceLock::new();
    DOCUMENT.get_or_init(build)
}

/// The document as JSON, rendered once.
fn document_json() -> Result<&'static str, ApiError> {
    static JSON: OnceLock<Result<String, String>> = OnceLock::new();
    JSON.get_or_init(|| document().to_pretty_json().map_err(|e| e.to_string()))
        .as_deref()
        .map_err(|e| {
            tracing::error!(error = %e, "the OpenAPI document does not serialise");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the OpenAPI document is unavailable",
            )
        })
}

/// This document: the API's contract, generated from the router and its types.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "documents",
    security(()),
    responses(
        (status = 200, description = "The OpenAPI 3.1 document.", content_type = "application/json"),
    )
)]
pub(super) async fn openapi_json() -> Result<Response, ApiError> {
    let json = document_json()?;
    Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response())
}

/// The reference page lives in a folder, so that its relative links resolve: `/docs` sends to
/// `/docs/index.html`. The location is relative, so a base path in front of the API (a custom
/// domain's mapping) is kept; and it is a file of the folder rather than the folder itself, which
/// API Gateway's `GET /docs/{proxy+}` route (open, like this one) matches.
#[utoipa::path(
    get,
    path = "/docs",
    tag = "documents",
    security(()),
    responses(
        (status = 308, description = "To the page.", headers(("location" = String, description = "`docs/index.html`, relative to `/docs`"))),
    )
)]
pub(super) async fn docs_page() -> Response {
    Redirect::permanent("docs/index.html").into_response()
}

/// The reference page, Swagger UI over `/openapi.json` (also at `/docs/index.html`).
#[utoipa::path(
    get,
    path = "/docs/",
    tag = "documents",
    security(()),
    responses(
        (status = 200, description = "The page (`Content-Encoding: gzip`).", content_type = "text/html"),
        (status = 406, description = "The request does not accept gzip (`Accept-Encoding`).", body = ErrorEnvelope),
    )
)]
pub(super) async fn docs_index(headers: HeaderMap) -> Response {
    swagger_file("index.html", &headers)
}

/// A file of the reference page (scripts, styles, icons), compiled into the binary.
#[utoipa::path(
    get,
    path = "/docs/{file}",
    tag = "documents",
    security(()),
    params(("file" = String, Path, description = "A file of Swagger UI's distribution, e.g. `swagger-ui.css`.")),
    responses(
        (status = 200, description = "The file, with its content type (gzip-compressed, but for `swagger-initializer.js`).", content_type = "application/octet-stream"),
        (status = 404, description = "No such file.", body = ErrorEnvelope),
        (status = 406, description = "The file is compressed and the request does not accept gzip (`Accept-Encoding`).", body = ErrorEnvelope),
    )
)]
pub(super) async fn docs_asset(
    PathParams(file): PathParams<String>,
    headers: HeaderMap,
) -> Response {
    swagger_file(&file, &headers)
}

/// Swagger UI's settings: the document is read relative to the page, so a base path in front of
/// the API (a custom domain's mapping) keeps working.
fn swagger_config() -> Arc<utoipa_swagger_ui::Config<'static>> {
    static CONFIG: OnceLock<Arc<utoipa_swagger_ui::Config<'static>>> = OnceLock::new();
    Arc::clone(CONFIG.get_or_init(|| Arc::new(utoipa_swagger_ui::Config::new(["../openapi.json"]))))
}

/// Whether the request accepts a gzip-compressed answer (`Accept-Encoding: gzip`, or `*`).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next()?.trim();
            // `gzip;q=0` refuses it.
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q == 0.0))
            });
            (!refused).then_some(name)
        })
        .any(|name| name.eq_ignore_ascii_case("gzip") || name == "*")
}

/// Serves a file of Swagger UI. The files are stored gzip-compressed in the binary (about a
/// quarter of their size: they are in every binary that serves the router, the API Lambda's
/// too), so they go out with `Content-Encoding: gzip`, which every browser accepts; a client that
/// does not gets a 406 saying so.
fn swagger_file(name: &str, headers: &HeaderMap) -> Response {
    match utoipa_swagger_ui::serve(name, swagger_config()) {
        Ok(Some(file)) => {
            if file.gzpipped && !accepts_gzip(headers) {
                return ApiError::new(
                    StatusCode::NOT_ACCEPTABLE,
                    format!("docs: {name:?} is served gzip-compressed; send Accept-Encoding: gzip"),
                )
                .into_response();
            }
            let bytes = match file.bytes {
                Cow::Borrowed(bytes) => axum::body::Bytes::from_static(bytes),
                Cow::Owned(bytes) => axum::body::Bytes::from(bytes),
            };
            let mut response = ([(header::CONTENT_TYPE, file.content_type)], bytes).into_response();
            if file.gzpipped {
                response.headers_mut().insert(
                    header::CONTENT_ENCODING,
                    axum::http::HeaderValue::from_static("gzip"),
                );
            }
            response
        }
        Ok(None) => {
            ApiError::new(StatusCode::NOT_FOUND, format!("docs: no file {name:?}")).into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, file = name, "Swagger UI file could not be prepared");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "docs: the page is unavailable",
            )
            .into_response()
        }
    }
}
