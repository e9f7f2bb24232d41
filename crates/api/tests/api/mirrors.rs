//! The OpenAPI document against the core's own descriptions, so no mirror can drift: every
//! top-level field of the job document (core's `JOB_FIELDS`) is in the schemas of a definition,
//! a declared job and a read job with the bounds the parser enforces, and every enum of the
//! document lists exactly core's names for it (`Vocabulary`).

use serde_json::Value;
use sundial_core::job::document::{field_names, Bound, JOB_FIELDS};
use sundial_core::vocabulary::Vocabulary;

use crate::support::Api;

async fn schemas() -> Value {
    let (_, document) = Api::new().get("/openapi.json").await;
    document["components"]["schemas"].clone()
}

/// The object part of a schema: itself, or the member of its `allOf` that has the properties.
fn object_of(schema: &Value) -> &Value {
    schema["allOf"]
        .as_array()
        .and_then(|parts| parts.iter().find(|part| part["properties"].is_object()))
        .unwrap_or(schema)
}

fn property_names(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = object_of(schema)["properties"]
        .as_object()
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A property's own schema, whether inline, behind `$ref` or in an `Option`'s `oneOf`/`anyOf`.
fn resolved<'a>(schemas: &'a Value, schema: &'a Value) -> &'a Value {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or_default();
        return resolved(schemas, &schemas[name]);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema[key].as_array() {
            if let Some(option) = options.iter().find(|o| o["type"] != "null") {
                if options.len() == 2 {
                    return resolved(schemas, option);
                }
            }
        }
    }
    schema
}

#[tokio::test]
async fn the_definition_schemas_have_every_field_of_the_core_table_and_no_other() {
    let schemas = schemas().await;
    let mut all: Vec<String> = field_names().map(str::to_string).collect();
    all.sort();
    assert_eq!(property_names(&schemas["JobDefinition"]), all);
    assert_eq!(property_names(&schemas["DeclaredJob"]), all);
    let read = property_names(&schemas["Job"]);
    for name in &all {
        assert!(read.contains(name), "Job lacks {name}");
    }
}

#[tokio::test]
async fn each_field_has_the_bound_the_parser_enforces() {
    let schemas = schemas().await;
    for field in JOB_FIELDS {
        let property = &object_of(&schemas["DeclaredJob"])["properties"][field.name];
        let schema = resolved(&schemas, property);
        let items = |key: &str| {
            schema[key]
                .as_u64()
                .or_else(|| property[key].as_u64())
                .or_else(|| schema["items"][key].as_u64())
        };
        match field.bound {
            Bound::None => {}
            Bound::Range { min, max } => {
                assert_eq!(items("minimum"), Some(min), "{}.minimum", field.name);
                // int64's greatest value is the type's own bound, not stated again.
                if max != i64::MAX as u64 {
                    assert_eq!(items("maximum"), Some(max), "{}.maximum", field.name);
                }
            }
            Bound::MaxLength(length) => {
                assert_eq!(
                    items("maxLength"),
                    Some(length as u64),
                    "{}.maxLength",
                    field.name
                );
            }
            Bound::MaxItems(count) => {
                let stated = items("maxItems").or_else(|| items("maxProperties"));
                assert_eq!(stated, Some(count as u64), "{}.maxItems", field.name);
            }
        }
    }
}

fn enum_names(schemas: &Value, name: &str) -> Vec<String> {
    schemas[name]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{name} is not an enum: {}", schemas[name]))
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect()
}

fn core_names<V: Vocabulary>() -> Vec<String> {
    V::wire_names().into_iter().map(str::to_string).collect()
}

#[tokio::test]
async fn every_enum_of_the_document_lists_the_cores_names() {
    use sundial_core::change::RunPlace;
    use sundial_core::execution::ExecutionState;
    use sundial_core::job::{
        BackfillMode, CatchupPolicy, HttpMethod, JobStatus, OverlapPolicy, ParentClosePolicy,
    };
    use sundial_core::spec::{Dialect, DstGap, DstOverlap};
    let schemas = schemas().await;
    let pairs = [
        ("OverlapPolicy", core_names::<OverlapPolicy>()),
        ("ExecutionState", core_names::<ExecutionState>()),
        ("HttpMethod", core_names::<HttpMethod>()),
        ("Dialect", core_names::<Dialect>()),
        ("DstGap", core_names::<DstGap>()),
        ("DstOverlap", core_names::<DstOverlap>()),
        ("CatchupPolicy", core_names::<CatchupPolicy>()),
        ("ParentClosePolicy", core_names::<ParentClosePolicy>()),
        ("BackfillMode", core_names::<BackfillMode>()),
        ("RunPlace", core_names::<RunPlace>()),
        ("JobStateName", core_names::<JobStatus>()),
    ];
    for (schema, names) in pairs {
        assert_eq!(enum_names(&schemas, schema), names, "{schema}");
    }
}
