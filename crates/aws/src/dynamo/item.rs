//! Records to items and back.
//!
//! The document is stored as JSON text, not as a DynamoDB map: a job's request bodies and
//! templates are arbitrary JSON, and a map would impose DynamoDB's nesting depth and
//! number-precision rules on them. The fields the store indexes or filters on sit beside it as
//! plain attributes.
//!
//! A document of [`DEFLATE_FROM`] bytes or more is stored deflated (`docz`, a binary attribute);
//! a smaller one as text (`doc`, a string). DynamoDB bills a write per started KB of the whole
//! item, so a run's job and execution items (JSON of 0.8–2 KB, more with response bodies, which an
//! execution holds more than once) each cost one write unit less or more; a small document gains
//! nothing from deflate's framing. Readers take either attribute (layout 3, see `layout.rs`).

use std::io::{Read, Write};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use sundial_ports::cause::Cause;
use sundial_ports::store::{ExecutionRecord, JobRecord, StoreError};

use super::keys::{child_sort, execution_sort, run_sort, Item, Keys};

/// The JSON length from which a document is stored deflated (`docz`) rather than as text (`doc`).
pub const DEFLATE_FROM: usize = 256;

/// The most bytes a stored deflated document may inflate to: an item is at most 400 KB, and JSON
/// deflates at most about 1:1000, so anything larger is not an item this adapter wrote.
const MAX_INFLATED: u64 = 64 * 1024 * 1024;

/// `kind` values, so a scan can tell records apart.
pub const KIND_JOB: &str = "job";
/// Executions.
pub const KIND_EXECUTION: &str = "execution";
/// Wake-ups.
pub const KIND_WAKEUP: &str = "wakeup";

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A job's item.
pub fn job_item(keys: &Keys, job: &JobRecord, version: u64) -> Result<Item, StoreError> {
    let mut item = keys.job(&job.job_id);
    item.insert("kind".into(), s(KIND_JOB));
    item.insert("jobId".into(), s(&job.job_id));
    item.insert("version".into(), n(version));
    item.insert("creator".into(), s(&job.creator));
    item.insert("state".into(), s(&job.state));
    item.insert("createdAt".into(), n(job.created_at.timestamp_millis()));
    item.insert("updatedAt".into(), n(job.updated_at.timestamp_millis()));
    insert_document(&mut item, &job.document)?;
    item.insert("gsi1pk".into(), s(keys.all_jobs()));
    item.insert("gsi1sk".into(), s(&job.job_id));
    if let Some(parent) = &job.parent_job {
        item.insert("parentJob".into(), s(parent));
        item.insert("gsi2pk".into(), s(keys.child_jobs(parent)));
        item.insert("gsi2sk".into(), s(&job.job_id));
    }
    if let Some(service) = &job.service {
        item.insert("service".into(), s(service));
    }
    if let Some(labels) = super::labels::labels_text(job)? {
        item.insert(super::labels::LABELS.into(), s(labels));
    }
    Ok(item)
}

/// Reads a job's item.
pub fn job_record(item: &Item) -> Result<JobRecord, StoreError> {
    Ok(JobRecord {
        job_id: string(item, "jobId")?,
        version: number(item, "version")?,
        creator: string(item, "creator")?,
        parent_job: optional_string(item, "parentJob"),
        service: optional_string(item, "service"),
        state: string(item, "state")?,
        created_at: millis(item, "createdAt")?,
        updated_at: millis(item, "updatedAt")?,
        document: decode(item)?,
    })
}

/// An execution's item; `expires_at` (epoch seconds) is the TTL, set once it is over.
pub fn execution_item(
    keys: &Keys,
    execution: &ExecutionRecord,
    version: u64,
    expires_at: Option<i64>,
) -> Result<Item, StoreError> {
    let created_ms = execution.created_at.timestamp_millis();
    let mut item = keys.execution(&execution.execution_id);
    item.insert("kind".into(), s(KIND_EXECUTION));
    item.insert("executionId".into(), s(&execution.execution_id));
    item.insert("jobId".into(), s(&execution.job_id));
    item.insert("executeNumber".into(), n(execution.execute_number));
    item.insert("state".into(), s(&execution.state));
    item.insert("createdAt".into(), n(created_ms));
    item.insert("version".into(), n(version));
    insert_document(&mut item, &execution.document)?;
    item.insert("gsi1pk".into(), s(keys.job_executions(&execution.job_id)));
    item.insert(
        "gsi1sk".into(),
        s(execution_sort(
            execution.execute_number,
            &execution.execution_id,
        )),
    );
    if let Some(parent) = &execution.parent_job {
        item.insert("parentJob".into(), s(parent));
        item.insert("gsi2pk".into(), s(keys.child_executions(parent)));
        item.insert(
            "gsi2sk".into(),
            s(child_sort(created_ms, &execution.execution_id)),
        );
    }
    if let Some(parent_execution) = execution.parent_execution {
        item.insert("parentExecution".into(), n(parent_execution));
    }
    // The runs index: the same values on every write of the run (its scheduled time never
    // changes), so only its creation writes the index.
    if let Some(scheduled) = execution.scheduled_at() {
        item.insert("rshard".into(), s(keys.run_shard(&execution.execution_id)));
        item.insert(
            "rtime".into(),
            s(run_sort(
                scheduled.timestamp_millis(),
                &execution.execution_id,
            )),
        );
    }
    if let Some(at) = expires_at {
        item.insert("expiresAt".into(), n(at));
    }
    Ok(item)
}

/// Reads an execution's item.
pub fn execution_record(item: &Item) -> Result<ExecutionRecord, StoreError> {
    Ok(ExecutionRecord {
        execution_id: string(item, "executionId")?,
        job_id: string(item, "jobId")?,
        execute_number: number(item, "executeNumber")?,
        state: string(item, "state")?,
        parent_job: optional_string(item, "parentJob"),
        parent_execution: item
            .contains_key("parentExecution")
            .then(|| number(item, "parentExecution"))
            .transpose()?,
        created_at: millis(item, "createdAt")?,
        version: number(item, "version")?,
        document: decode(item)?,
    })
}

/// A wake-up's item.
pub fn wakeup_item(keys: &Keys, key: &str, due: DateTime<Utc>) -> Item {
    let mut item = keys.wakeup(key);
    item.insert("kind".into(), s(KIND_WAKEUP));
    item.extend(super::own_wakeup::attributes(keys, key, due));
    item
}

/// Whether a TTL'd item has expired: DynamoDB deletes expired items only eventually (within days),
/// so reads must not trust their presence.
pub fn expired(item: &Item, now_secs: i64) -> bool {
    item.get("expiresAt")
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse::<i64>().ok())
        .is_some_and(|at| at <= now_secs)
}

/// Puts a record's document in its item: deflated from [`DEFLATE_FROM`] bytes, else as text.
fn insert_document(item: &mut Item, document: &Value) -> Result<(), StoreError> {
    let text = serde_json::to_vec(document)
        .map_err(|e| StoreError::unavailable_because("encoding a document", e))?;
    if text.len() < DEFLATE_FROM {
        // JSON from serde_json is UTF-8.
        let text = String::from_utf8_lossy(&text).into_owned();
        item.insert("doc".into(), s(text));
        return Ok(());
    }
    let mut encoder =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(&text)
        .map_err(|e| StoreError::unavailable_because("deflating a document", e))?;
    let deflated = encoder
        .finish()
        .map_err(|e| StoreError::unavailable_because("deflating a document", e))?;
    item.insert("docz".into(), AttributeValue::B(Blob::new(deflated)));
    Ok(())
}

/// A record's document, from `docz` (deflated) or `doc` (text).
fn decode(item: &Item) -> Result<Value, StoreError> {
    let bad = |why: String, cause: Option<Cause>| {
        StoreError::corrupt(format!("stored item has a bad document: {why}"), cause)
    };
    if let Some(deflated) = item.get("docz") {
        let deflated = deflated
            .as_b()
            .map_err(|_| bad("`docz` is not binary".into(), None))?;
        let mut text = Vec::new();
        flate2::read::DeflateDecoder::new(deflated.as_ref())
            .take(MAX_INFLATED)
            .read_to_end(&mut text)
            .map_err(|e| bad("`docz` does not inflate".into(), Some(Cause::new(e))))?;
        return serde_json::from_slice(&text)
            .map_err(|e| bad("`docz` is not JSON".into(), Some(Cause::new(e))));
    }
    let text = string(item, "doc")?;
    serde_json::from_str(&text).map_err(|e| bad("`doc` is not JSON".into(), Some(Cause::new(e))))
}

/// An item written by something else than this adapter, or damaged: no retry will read it.
fn corrupt(attribute: &str, why: &str) -> StoreError {
    StoreError::corrupt(format!("stored item has a bad `{attribute}`: {why}"), None)
}

/// A string attribute.
pub fn string(item: &Item, name: &str) -> Result<String, StoreError> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .ok_or_else(|| corrupt(name, "missing or not a string"))
}

fn optional_string(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

/// A number attribute.
pub fn number<N: std::str::FromStr>(item: &Item, name: &str) -> Result<N, StoreError> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse::<N>().ok())
        .ok_or_else(|| corrupt(name, "missing or not a number"))
}

/// A millisecond-timestamp attribute.
pub fn millis(item: &Item, name: &str) -> Result<DateTime<Utc>, StoreError> {
    let ms: i64 = number(item, name)?;
    Utc.timestamp_millis_opt(ms)
        .single()
        .ok_or_else(|| corrupt(name, "out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(document: &Value) -> Item {
        let mut item = Item::new();
        insert_document(&mut item, document).expect("encodes");
        item
    }

    #[test]
    fn a_small_document_is_text_and_a_large_one_deflated_and_both_read_back() {
        let small = json!({"jobId": "a", "n": 1});
        let item = stored(&small);
        assert!(item.contains_key("doc") && !item.contains_key("docz"));
        assert_eq!(decode(&item).expect("reads"), small);

        // An execution's shape: its response is kept more than once, which deflate folds.
        let body =
            json!({"rows": (0..20).map(|i| json!({"id": i, "name": "row"})).collect::<Vec<_>>()});
        let large = json!({"response": body, "result": body, "run": {"responses": [body]}});
        let text = serde_json::to_vec(&large).expect("JSON").len();
        let item = stored(&large);
        assert!(item.contains_key("docz") && !item.contains_key("doc"));
        let deflated = item["docz"].as_b().expect("binary").as_ref().len();
        assert!(deflated * 4 < text, "{deflated} bytes of {text}");
        assert_eq!(decode(&item).expect("reads"), large);
    }

    #[test]
    fn a_document_of_the_layout_before_reads_and_a_damaged_one_is_corrupt() {
        // Layout 2 wrote every document as text, whatever its size.
        let big = json!({"text": "x".repeat(4 * DEFLATE_FROM)});
        let mut item = Item::new();
        item.insert("doc".into(), s(big.to_string()));
        assert_eq!(decode(&item).expect("reads"), big);

        let mut item = Item::new();
        item.insert(
            "docz".into(),
            AttributeValue::B(Blob::new(b"not deflate".to_vec())),
        );
        let error = decode(&item).expect_err("refused").to_string();
        assert!(error.contains("docz"), "{error}");
    }
}
