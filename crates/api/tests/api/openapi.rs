//! The OpenAPI document: served without a token, complete (every `$ref` resolves), true to the
//! router in both directions, typed (no free-form object but the user's own data), and true to
//! the examples of docs/api.md.

use std::collections::{BTreeMap, BTreeSet};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::support::Api;

/// The schemas that may accept any JSON object: the user's own data, which Sundial stores and
/// hands on as given (trigger arguments, what a run produced, an async job's progress, the body
/// of a call a job makes). Everything else the API takes or answers has a declared shape.
const FREE_FORM: [&str; 5] = [
    "TriggerArguments",
    "RunResult",
    "ReportedProgress",
    "HttpBody",
    "DefinitionValue",
];

async fn document() -> Value {
    let (status, body) = Api::new().get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// A raw answer of the router: status, headers, body bytes (asked as a browser asks: gzip
/// accepted).
async fn raw(
    router: &axum::Router,
    method: Method,
    uri: &str,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::ACCEPT_ENCODING, "gzip, deflate, br")
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, bytes.to_vec())
}

#[tokio::test]
async fn the_document_and_the_page_are_public_even_with_a_token() {
    let api = Api::with_token(Some("a-token-of-sixteen-chars"));
    let (status, _, bytes) = raw(&api.router, Method::GET, "/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let document: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(document["openapi"], "3.1.0");

    let (status, headers, _) = raw(&api.router, Method::GET, "/docs").await;
    assert_eq!(status, StatusCode::PERMANENT_REDIRECT);
    assert_eq!(headers[header::LOCATION], "docs/index.html");
    let (status, _, index) = raw(&api.router, Method::GET, "/docs/index.html").await;
    assert_eq!(status, StatusCode::OK);

    let (status, headers, page) = raw(&api.router, Method::GET, "/docs/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    // Compressed in the binary, and said so; gzip's magic number starts the body.
    assert_eq!(headers[header::CONTENT_ENCODING], "gzip");
    assert_eq!(page.get(..2), Some(&[0x1f, 0x8b][..]));
    assert_eq!(page, index);
    // A client that does not take gzip is told why.
    let answer = api.get("/docs/index.html").await;
    crate::support::assert_error(
        &answer,
        406,
        "docs: \"index.html\" is served gzip-compressed",
    );

    // The page's own files come from the binary, and it reads the document next to it.
    let (status, headers, _) = raw(&api.router, Method::GET, "/docs/swagger-ui-bundle.js").await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .contains("javascript"));
    let (status, _, bytes) = raw(&api.router, Method::GET, "/docs/swagger-initializer.js").await;
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8(bytes)
        .unwrap()
        .contains("../openapi.json"));

    let answer = api.get("/docs/no-such-file.js").await;
    crate::support::assert_error(&answer, 404, "docs: no file");
    // The rest of the API still wants the token.
    crate::support::assert_error(
        &api.get("/stats").await,
        401,
        "missing or wrong bearer token",
    );
}

/// Every `"$ref"` in `value`.
fn references(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                found.insert(target.clone());
            }
            map.values().for_each(|v| references(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, found)),
        _ => {}
    }
}

#[tokio::test]
async fn every_reference_resolves_and_every_operation_answers_json_errors() {
    let document = document().await;
    let mut found = BTreeSet::new();
    references(&document, &mut found);
    assert!(found.len() > 40, "{found:?}");
    for target in &found {
        let pointer = target.strip_prefix('#').unwrap_or(target);
        assert!(
            document.pointer(pointer).is_some(),
            "{target} does not resolve"
        );
    }
    for (path, method, operation) in operations(&document) {
        let responses = operation["responses"].as_object().unwrap();
        assert!(
            responses
                .keys()
                .any(|s| s.starts_with('2') || s.starts_with('3')),
            "{method} {path} documents no success"
        );
        for (status, response) in responses {
            // `/health` answers 503 with its report, so that a supervisor reads why.
            let is_health = path == "/health";
            if (status.starts_with('4') || status.starts_with('5')) && !is_health {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/ErrorEnvelope",
                    "{method} {path} {status}"
                );
            }
        }
        let protected = operation.get("security") != Some(&json!([{}]));
        assert!(
            !protected || responses.contains_key("401"),
            "{method} {path}: a protected route documents 401"
        );
    }
}

/// Every operation of the document: (path, method, operation).
fn operations(document: &Value) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            found.push((path.clone(), method.to_uppercase(), operation.clone()));
        }
    }
    found
}

/// The paths the router serves, read from its `Debug` form: axum prints the route table of its
/// path router as `RouteId(n): "/path"`. This reads the real router rather than a list kept beside
/// it, so a route added with `.route(…)` outside the table is seen. (The `Debug` form is axum's,
/// pinned by Cargo.lock; if it changes, the count check below fails loudly rather than passing.)
fn served_paths(router: &axum::Router) -> BTreeSet<String> {
    let debug = format!("{router:?}");
    let table = debug
        .split("fallback_router")
        .next()
        .unwrap_or_default()
        .to_string();
    let mut paths = BTreeSet::new();
    for piece in table.split("RouteId(").skip(1) {
        if let Some(rest) = piece.split_once("): \"").map(|(_, rest)| rest) {
            if let Some(path) = rest.split('"').next() {
                paths.insert(path.to_string());
            }
        }
    }
    paths
}

/// A concrete URI for a documented path.
fn concrete(path: &str) -> String {
    path.replace("{jobId}", "probe-job")
        .replace("{id}", "probe-job~t~probe")
        .replace("{requestCounts}", "1")
        .replace("{serviceName}", "probe-service")
        .replace("{file}", "index.css")
}

#[tokio::test]
async fn the_router_serves_exactly_the_documented_routes() {
    let api = Api::new();
    let document = document().await;
    let documented: BTreeSet<String> = document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let served = served_paths(&api.router);
    assert!(
        served.len() >= 25,
        "could not read the router's routes: {served:?}"
    );
    assert_eq!(
        served, documented,
        "paths served but not documented, or documented but not served"
    );

    // Each documented method reaches its handler (not the fallbacks); every other method is a
    // 405, so no method is served without its operation in the document.
    let mut by_path: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, method, _) in operations(&document) {
        by_path.entry(path).or_default().insert(method);
    }
    for (path, methods) in &by_path {
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            let uri = concrete(path);
            let (status, _, bytes) = raw(
                &api.router,
                Method::from_bytes(method.as_bytes()).unwrap(),
                &uri,
            )
            .await;
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let answer = (status, body);
            let fallback = answer.1["resp_msg"] == "no such route"
                || answer.0 == StatusCode::METHOD_NOT_ALLOWED;
            if methods.contains(method) {
                assert!(
                    !fallback,
                    "{method} {path} is documented but not served: {answer:?}"
                );
            } else {
                assert_eq!(
                    answer.0,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} is served but not documented"
                );
            }
        }
    }
}

/// Whether a schema accepts any object: an object type (or no type at all) with no properties, no
/// schema for additional properties and no composition that would constrain it.
fn is_free_form(schema: &Map) -> bool {
    let object_or_untyped = match schema.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    let constrained = [
        "properties",
        "patternProperties",
        "required",
        "$ref",
        "oneOf",
        "anyOf",
        "allOf",
        "enum",
        "const",
        "items",
        "prefixItems",
    ]
    .iter()
    .any(|k| schema.contains_key(*k))
        || matches!(
            schema.get("additionalProperties"),
            Some(Value::Object(_)) | Some(Value::Bool(false))
        );
    object_or_untyped && !constrained
}

type Map = serde_json::Map<String, Value>;

/// Every schema object under `value`, with where it is.
fn schemas<'a>(value: &'a Value, at: String, found: &mut Vec<(String, &'a Map)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = format!("{at}/{key}");
                let is_schema_slot = matches!(
                    key.as_str(),
                    "schema" | "items" | "additionalProperties" | "propertyNames"
                );
                if let (true, Value::Object(schema)) = (is_schema_slot, child) {
                    found.push((here.clone(), schema));
                }
                if matches!(key.as_str(), "properties" | "schemas") {
                    for (name, schema) in child.as_object().into_iter().flatten() {
                        if let Value::Object(schema) = schema {
                            found.push((format!("{here}/{name}"), schema));
                        }
                    }
                }
                if matches!(key.as_str(), "oneOf" | "anyOf" | "allOf") {
                    for (i, schema) in child.as_array().into_iter().flatten().enumerate() {
                        if let Value::Object(schema) = schema {
                            found.push((format!("{here}/{i}"), schema));
                        }
                    }
                }
                if key != "example" && key != "examples" {
                    schemas(child, here, found);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                schemas(item, format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn no_schema_is_free_form_but_the_users_own_data() {
    let document = document().await;
    let mut found = Vec::new();
    schemas(&document, String::new(), &mut found);
    assert!(found.len() > 200, "walked only {} schemas", found.len());
    let allowed: BTreeSet<String> = FREE_FORM
        .iter()
        .map(|name| format!("/components/schemas/{name}"))
        .collect();
    let free: Vec<&String> = found
        .iter()
        .filter(|(at, schema)| is_free_form(schema) && !allowed.contains(at))
        .map(|(at, _)| at)
        .collect();
    assert!(free.is_empty(), "free-form object schemas: {free:#?}");
    for name in FREE_FORM {
        let schema = document["components"]["schemas"][name].as_object().unwrap();
        assert!(
            is_free_form(schema),
            "{name} is declared free-form: {schema:?}"
        );
        assert!(
            schema.get("description").is_some(),
            "{name} says why it is free-form"
        );
    }
}

#[tokio::test]
async fn the_walker_finds_a_free_form_object() {
    let document = json!({"paths": {"/x": {"get": {"responses": {"200": {"content": {"application/json": {"schema": {"type": "object", "properties": {"a": {"type": "object"}}}}}}}}}}});
    let mut found = Vec::new();
    schemas(&document, String::new(), &mut found);
    let free: Vec<&String> = found
        .iter()
        .filter(|(_, s)| is_free_form(s))
        .map(|(at, _)| at)
        .collect();
    assert_eq!(
        free,
        ["/paths//x/get/responses/200/content/application/json/schema/properties/a"]
    );
}

// ---------------------------------------------------------------------------------------------
// docs/api.md's examples against the document.

/// One `$ curl …` example of docs/api.md and the answer printed under it.
#[derive(Debug, Clone)]
struct Example {
    line: usize,
    method: String,
    path: String,
    body: Option<String>,
    body_file: Option<String>,
    status: Option<u16>,
    answer: String,
}

/// Splits a shell command line into words: single quotes, double quotes (with `\` escapes) and
/// adjacent pieces joined, as `sh` does; `#` starts a comment between words.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

fn examples(markdown: &str) -> Vec<Example> {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut found = Vec::new();
    let mut previous: Option<Example> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let command = line.strip_prefix("$ ");
        i += 1;
        let Some(command) = command else { continue };
        // The printed answer: every line up to the next command or the end of the block.
        let start = i;
        while i < lines.len() && !lines[i].starts_with("$ ") && !lines[i].starts_with("```") {
            i += 1;
        }
        let answer = lines[start..i].join("\n");
        let mut example = if command.starts_with('#') {
            // `$ # the same list again`: the previous command, answered anew.
            match previous.clone() {
                Some(example) => example,
                None => continue,
            }
        } else {
            let words = shell_words(command);
            if words.first().map(String::as_str) != Some("curl") {
                continue;
            }
            let mut method = None;
            let mut url = None;
            let mut body = None;
            let mut body_file = None;
            let mut words = words.into_iter().skip(1);
            while let Some(word) = words.next() {
                match word.as_str() {
                    "-X" => method = words.next(),
                    "-H" => {
                        words.next();
                    }
                    "-d" | "--data-binary" => {
                        let data = words.next().unwrap_or_default();
                        match data.strip_prefix('@') {
                            Some(file) => body_file = Some(file.to_string()),
                            None => body = Some(data),
                        }
                    }
                    w if w.starts_with("http://") => url = Some(w.to_string()),
                    _ => {}
                }
            }
            let url = url.unwrap_or_else(|| panic!("docs/api.md:{start}: no URL in {command}"));
            let path = url
                .splitn(4, '/')
                .nth(3)
                .map(|p| format!("/{p}"))
                .unwrap_or_default();
            let has_body = body.is_some() || body_file.is_some();
            Example {
                line: start,
                method: method.unwrap_or_else(|| if has_body { "POST" } else { "GET" }.into()),
                path: path.split('?').next().unwrap_or_default().to_string(),
                body,
                body_file,
                status: None,
                answer: String::new(),
            }
        };
        example.answer = answer.clone();
        // `curl -i`: the status line, then headers up to a blank line or the body.
        example.status = answer
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("HTTP/1.1 "))
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok());
        if example.status.is_some() {
            example.answer = answer
                .lines()
                .skip_while(|l| !l.starts_with('{'))
                .collect::<Vec<_>>()
                .join("\n");
        }
        previous = Some(example.clone());
        found.push(example);
    }
    found
}

/// The document's operation for `method path`, matching `{param}` segments.
fn operation_for<'a>(document: &'a Value, method: &str, path: &str) -> Option<&'a Value> {
    let segments: Vec<&str> = path.split('/').collect();
    // A literal segment wins over a parameter, as the router's does: `/jobs/simulate` is its own
    // route, not `/jobs/{jobId}`.
    document["paths"]
        .as_object()?
        .iter()
        .filter_map(|(template, item)| {
            let parts: Vec<&str> = template.split('/').collect();
            let matches = parts.len() == segments.len()
                && parts.iter().zip(&segments).all(|(p, s)| {
                    p == s || (p.starts_with('{') && p.ends_with('}') && !s.is_empty())
                });
            let literal = parts.iter().zip(&segments).filter(|(p, s)| p == s).count();
            matches
                .then(|| item.get(method.to_lowercase()))
                .flatten()
                .map(|operation| (literal, operation))
        })
        .max_by_key(|(literal, _)| *literal)
        .map(|(_, operation)| operation)
}

/// A validator for a schema of the document (`$ref`s resolve against the whole document).
fn validator(document: &Value, schema: &Value) -> jsonschema::Validator {
    let mut root = document.clone();
    root["x-under-test"] = schema.clone();
    root["$ref"] = json!("#/x-under-test");
    root["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    jsonschema::draft202012::new(&root).unwrap_or_else(|e| panic!("schema {schema}: {e}"))
}

fn check(document: &Value, schema: &Value, instance: &Value, what: &str) {
    let validator = validator(document, schema);
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {instance}\n{errors:#?}");
}

#[tokio::test]
async fn the_examples_of_docs_api_md_validate_against_the_document() {
    let document = document().await;
    let markdown = include_str!("../../../../docs/api.md");
    let examples = examples(markdown);
    assert!(
        examples.len() >= 60,
        "found only {} examples",
        examples.len()
    );
    let (mut requests, mut answers, mut elided) = (0, 0, Vec::new());
    for example in &examples {
        let where_ = format!(
            "docs/api.md:{} {} {}",
            example.line, example.method, example.path
        );
        let answer: Option<Value> = serde_json::from_str(&example.answer).ok();
        if example.path == "/no/such/route" {
            // The fallback: not an operation, the error envelope all the same.
            let answer = answer.unwrap_or_else(|| panic!("{where_}: answer is not JSON"));
            check(
                &document,
                &json!({"$ref": "#/components/schemas/ErrorEnvelope"}),
                &answer,
                &where_,
            );
            answers += 1;
            continue;
        }
        let operation = operation_for(&document, &example.method, &example.path);
        let status = example.status.or_else(|| {
            answer
                .as_ref()
                .and_then(|a| a.get("resp_code"))
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
        });
        if status == Some(405) {
            assert!(
                operation.is_none(),
                "{where_}: 405, but the method is documented"
            );
            answers += 1;
            continue;
        }
        let operation =
            operation.unwrap_or_else(|| panic!("{where_}: no such operation in the document"));
        let status = status.unwrap_or(200);
        // The request, when the example shows it succeed (error examples send bad requests).
        if (200..300).contains(&status) {
            let body = match (&example.body, &example.body_file) {
                (Some(text), _) => Some(
                    serde_json::from_str::<Value>(text)
                        .unwrap_or_else(|e| panic!("{where_}: body: {e}")),
                ),
                (None, Some(file)) if file == "seed002-job.json" => {
                    Some(crate::support::seed_job())
                }
                _ => None,
            };
            if let Some(body) = body {
                let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
                assert!(
                    !schema.is_null(),
                    "{where_}: a body, but the operation takes none"
                );
                check(&document, schema, &body, &format!("{where_} request"));
                requests += 1;
            }
        }
        let response = &operation["responses"][status.to_string()];
        assert!(
            !response.is_null(),
            "{where_}: status {status} is not documented"
        );
        match answer {
            Some(answer) => {
                let schema = &response["content"]["application/json"]["schema"];
                assert!(!schema.is_null(), "{where_}: {status} has no schema");
                check(&document, schema, &answer, &format!("{where_} answer"));
                answers += 1;
            }
            // Shortened with `…` (or nothing printed): nothing to validate whole.
            None => elided.push(where_),
        }
    }
    println!("docs/api.md: {requests} request bodies and {answers} answers validated; elided: {elided:#?}");
    assert!(requests >= 10, "validated only {requests} request bodies");
    assert!(answers >= 35, "validated only {answers} answers");
}

#[test]
fn shell_words_reads_quotes_as_sh_does() {
    assert_eq!(
        shell_words(r#"curl -s -X POST http://h/x -d '{"a": "it'"'"'s"}' -H 'K: v' # note"#),
        [
            "curl",
            "-s",
            "-X",
            "POST",
            "http://h/x",
            "-d",
            r#"{"a": "it's"}"#,
            "-H",
            "K: v"
        ]
    );
}

/// The cursors the server makes match the patterns the document gives them (so that clients and
/// schemathesis, which generate cursors from those patterns, send ones the server can read).
#[tokio::test(flavor = "multi_thread")]
async fn the_cursors_the_server_makes_match_the_document() {
    let api = Api::new();
    let document = document().await;
    api.create("parent", &crate::support::triggered_job("001"))
        .await;
    api.create("parent-b", &crate::support::triggered_job("001"))
        .await;
    api.create("child", &crate::support::child_job("parent", Some(1)))
        .await;
    for _ in 0..2 {
        api.trigger("parent", &json!({})).await;
        api.trigger("child", &json!({})).await;
    }
    for (list, path) in [
        ("/jobs?limit=1", "/jobs"),
        (
            "/jobs/parent/executions?limit=1",
            "/jobs/{jobId}/executions",
        ),
        ("/main/execution?jobId=parent&limit=1", "/main/execution"),
        ("/executions?limit=1", "/executions"),
        (
            "/main/getChildJobLogs?parentJobId=parent&execution=1&limit=1",
            "/main/getChildJobLogs",
        ),
    ] {
        let (status, page) = api.get(list).await;
        assert_eq!(status, StatusCode::OK, "{list}: {page}");
        let cursor = page["nextCursor"].clone();
        assert!(cursor.is_string(), "{list} has a next page: {page}");
        let parameters = document["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap();
        let schema = &parameters.iter().find(|p| p["name"] == "cursor").unwrap()["schema"];
        check(&document, schema, &cursor, list);
        // And the server reads it back.
        let next = api
            .get(&format!("{list}&cursor={}", cursor.as_str().unwrap()))
            .await;
        assert_eq!(next.0, StatusCode::OK, "{next:?}");
    }
}

/// Schemathesis found it: a change whose value is `null` (a field written as `null`) answered a
/// history entry its schema refused, `old` and `new` having been `oneOf` any JSON and `null`,
/// which `null` matches twice. An added field has no `old`, a removed one no `new`.
#[tokio::test]
async fn a_history_change_of_a_null_value_validates() {
    let document = document().await;
    let schema = json!({"$ref": "#/components/schemas/FieldChange"});
    for change in [
        json!({"path": "/jobDescription", "old": null, "new": "nightly"}),
        json!({"path": "/jobDescription", "old": "nightly", "new": null}),
        json!({"path": "/labels", "new": {"team": "ops"}}),
        json!({"path": "/labels", "old": {"team": "ops"}}),
    ] {
        check(&document, &schema, &change, "a field change");
    }
}
