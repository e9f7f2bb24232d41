//! Conversions between store records and SQLite rows, and the page cursors.
//!
//! Cursors are the sort key of the last item a page returned, in a versioned, prefixed text form
//! (`j1.` jobs, `e1.` a job's executions, `c1.` child executions) with ids hex-encoded so no id can
//! break the format. A cursor is validated before use: anything this store did not hand out,
//! including a cursor of another listing, is `InvalidCursor`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};
use rusqlite::Row;
use serde_json::Value;
use sundial_ports::cause::Cause;
use sundial_ports::store::{ExecutionRecord, JobOrder, JobRecord, StoreError};

/// A SQLite failure. A row whose column does not convert (a malformed document, a time out of
/// range) is corrupt data, which no retry will read; anything else may be retried, nothing was
/// half-done (each operation is one statement or one transaction).
pub(crate) fn db(err: rusqlite::Error) -> StoreError {
    match err {
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..) => {
            StoreError::corrupt("a stored row does not decode", Some(Cause::new(err)))
        }
        err => StoreError::unavailable_because("sqlite", err),
    }
}

/// A time as stored: integer milliseconds since the Unix epoch.
pub(crate) fn millis(time: &DateTime<Utc>) -> i64 {
    time.timestamp_millis()
}

/// A document as stored: JSON text.
pub(crate) fn json_text(document: &Value) -> Result<String, StoreError> {
    serde_json::to_string(document)
        .map_err(|err| StoreError::unavailable_because("document not serialisable", err))
}

/// A job as the writer binds it: the record's columns, its document already JSON text. Made on
/// the caller's thread, so that serialising the document (and not copying it) is not writer time.
pub(crate) struct JobRow {
    pub(crate) job_id: String,
    pub(crate) version: u64,
    pub(crate) creator: String,
    pub(crate) parent_job: Option<String>,
    pub(crate) service: Option<String>,
    pub(crate) state: String,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) document: String,
    pub(crate) labels: LabelRows,
}

impl JobRow {
    pub(crate) fn new(job: &JobRecord) -> Result<JobRow, StoreError> {
        Ok(JobRow {
            job_id: job.job_id.clone(),
            version: job.version,
            creator: job.creator.clone(),
            parent_job: job.parent_job.clone(),
            service: job.service.clone(),
            state: job.state.clone(),
            created_at: millis(&job.created_at),
            updated_at: millis(&job.updated_at),
            document: json_text(&job.document)?,
            labels: LabelRows::of(job)?,
        })
    }
}

/// An execution as the writer binds it; see [`JobRow`].
pub(crate) struct ExecutionRow {
    pub(crate) execution_id: String,
    pub(crate) job_id: String,
    pub(crate) execute_number: u64,
    pub(crate) state: String,
    pub(crate) parent_job: Option<String>,
    pub(crate) parent_execution: Option<u64>,
    pub(crate) created_at: i64,
    pub(crate) version: u64,
    pub(crate) document: String,
    /// The search columns (schema step 8), read from the document: scheduled time and end in
    /// ms, and what fired the run (`schedule`, `trigger`, `backfill`).
    pub(crate) scheduled_at: Option<i64>,
    pub(crate) ended_at: Option<i64>,
    pub(crate) source: Option<&'static str>,
}

impl ExecutionRow {
    pub(crate) fn new(execution: &ExecutionRecord) -> Result<ExecutionRow, StoreError> {
        Ok(ExecutionRow {
            execution_id: execution.execution_id.clone(),
            job_id: execution.job_id.clone(),
            execute_number: execution.execute_number,
            state: execution.state.clone(),
            parent_job: execution.parent_job.clone(),
            parent_execution: execution.parent_execution,
            created_at: millis(&execution.created_at),
            version: execution.version,
            document: json_text(&execution.document)?,
            scheduled_at: execution.scheduled_at().as_ref().map(millis),
            ended_at: execution.ended_at().as_ref().map(millis),
            source: execution.fired_by().map(|source| source.name()),
        })
    }
}

/// A count, version or execute number as stored: SQLite integers are signed 64-bit.
pub(crate) fn int(value: u64) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::unavailable(format!("{value} does not fit a SQLite integer")))
}

/// Reads a non-negative integer column back into a `u64`.
pub(crate) struct Unsigned(pub(crate) u64);

impl FromSql for Unsigned {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let n = i64::column_result(value)?;
        u64::try_from(n)
            .map(Unsigned)
            .map_err(|_| FromSqlError::OutOfRange(n))
    }
}

/// Reads a millisecond column back into a time.
pub(crate) struct Millis(pub(crate) DateTime<Utc>);

impl FromSql for Millis {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let ms = i64::column_result(value)?;
        DateTime::from_timestamp_millis(ms)
            .map(Millis)
            .ok_or(FromSqlError::OutOfRange(ms))
    }
}

/// Reads a JSON text column back into a document.
pub(crate) struct Json(pub(crate) Value);

impl FromSql for Json {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let text = value.as_str()?;
        serde_json::from_str(text)
            .map(Json)
            .map_err(FromSqlError::other)
    }
}

/// The job columns, in the order [`job_from_row`] reads them.
pub(crate) const JOB_COLUMNS: &str =
    "job_id, version, creator, parent_job, service, state, created_at, updated_at, document";

pub(crate) fn job_from_row(row: &Row<'_>) -> rusqlite::Result<JobRecord> {
    Ok(JobRecord {
        job_id: row.get(0)?,
        version: row.get::<_, Unsigned>(1)?.0,
        creator: row.get(2)?,
        parent_job: row.get(3)?,
        service: row.get(4)?,
        state: row.get(5)?,
        created_at: row.get::<_, Millis>(6)?.0,
        updated_at: row.get::<_, Millis>(7)?.0,
        document: row.get::<_, Json>(8)?.0,
    })
}

/// The execution columns, in the order [`execution_from_row`] reads them.
pub(crate) const EXECUTION_COLUMNS: &str =
    "execution_id, job_id, execute_number, state, parent_job, parent_execution, created_at, version, document";

pub(crate) fn execution_from_row(row: &Row<'_>) -> rusqlite::Result<ExecutionRecord> {
    Ok(ExecutionRecord {
        execution_id: row.get(0)?,
        job_id: row.get(1)?,
        execute_number: row.get::<_, Unsigned>(2)?.0,
        state: row.get(3)?,
        parent_job: row.get(4)?,
        parent_execution: row.get::<_, Option<Unsigned>>(5)?.map(|n| n.0),
        created_at: row.get::<_, Millis>(6)?.0,
        version: row.get::<_, Unsigned>(7)?.0,
        document: row.get::<_, Json>(8)?.0,
    })
}

pub(crate) fn time_from_millis(ms: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| StoreError::corrupt(format!("stored time {ms} ms is out of range"), None))
}

// ---------------------------------------------------------------------------------------------
// Cursors

/// Where a job listing stopped: the last job id returned.
pub(crate) fn job_cursor(job_id: &str) -> String {
    format!("j1.{}", hex(job_id))
}

pub(crate) fn parse_job_cursor(cursor: &str) -> Result<String, StoreError> {
    cursor
        .strip_prefix("j1.")
        .and_then(unhex)
        .ok_or(StoreError::InvalidCursor)
}

/// Where a job listing by a time order stopped: the last job's sort key (its `job_orders.next_fire` or
/// `last_run` column) and id.
pub(crate) fn ordered_job_cursor(order: JobOrder, key: i64, job_id: &str) -> String {
    format!("{}{key}.{}", order_prefix(order), hex(job_id))
}

pub(crate) fn parse_ordered_job_cursor(
    order: JobOrder,
    cursor: &str,
) -> Result<(i64, String), StoreError> {
    let (key, id) = cursor
        .strip_prefix(order_prefix(order))
        .and_then(|rest| rest.split_once('.'))
        .ok_or(StoreError::InvalidCursor)?;
    let key = parse_decimal::<i64>(key).ok_or(StoreError::InvalidCursor)?;
    let id = unhex(id).ok_or(StoreError::InvalidCursor)?;
    Ok((key, id))
}

fn order_prefix(order: JobOrder) -> &'static str {
    match order {
        JobOrder::Id => "j1.",
        JobOrder::NextFire => "n1.",
        JobOrder::LastRun => "l1.",
    }
}

/// Where a job's execution listing stopped: (execute number, execution id) of the last one.
pub(crate) fn execution_cursor(execution: &ExecutionRecord) -> String {
    format!(
        "e1.{}.{}",
        execution.execute_number,
        hex(&execution.execution_id)
    )
}

pub(crate) fn parse_execution_cursor(cursor: &str) -> Result<(u64, String), StoreError> {
    let (number, id) = cursor
        .strip_prefix("e1.")
        .and_then(|rest| rest.split_once('.'))
        .ok_or(StoreError::InvalidCursor)?;
    let number = parse_decimal::<u64>(number).ok_or(StoreError::InvalidCursor)?;
    let id = unhex(id).ok_or(StoreError::InvalidCursor)?;
    Ok((number, id))
}

/// Where a child-execution listing stopped: (created at in ms, execution id) of the last one.
pub(crate) fn child_cursor(execution: &ExecutionRecord) -> String {
    format!(
        "c1.{}.{}",
        millis(&execution.created_at),
        hex(&execution.execution_id)
    )
}

pub(crate) fn parse_child_cursor(cursor: &str) -> Result<(i64, String), StoreError> {
    let (created, id) = cursor
        .strip_prefix("c1.")
        .and_then(|rest| rest.split_once('.'))
        .ok_or(StoreError::InvalidCursor)?;
    let created = parse_decimal::<i64>(created).ok_or(StoreError::InvalidCursor)?;
    let id = unhex(id).ok_or(StoreError::InvalidCursor)?;
    Ok((created, id))
}

/// Only the canonical decimal form this module writes (no `+`, no leading zeros).
fn parse_decimal<T: std::str::FromStr + ToString>(text: &str) -> Option<T> {
    let value = text.parse::<T>().ok()?;
    (value.to_string() == text).then_some(value)
}

fn hex(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for byte in text.bytes() {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Lower-case hex of UTF-8 text, as [`hex`] writes it; `None` for anything else. Ids are never
/// empty, so neither is a valid encoding.
fn unhex(text: &str) -> Option<String> {
    if text.is_empty() || !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let bytes = text
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

/// The labels of a job as the writer binds them.
pub(crate) struct LabelRows {
    /// `(key, value)`, by key.
    pub(crate) rows: Vec<(String, String)>,
    /// The canonical JSON of the map, `None` when there are none: the `jobs.labels` column.
    pub(crate) text: Option<String>,
}

impl LabelRows {
    pub(crate) fn of(job: &JobRecord) -> Result<LabelRows, StoreError> {
        let labels: BTreeMap<String, String> = job.labels();
        let text = if labels.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&labels)
                    .map_err(|e| StoreError::unavailable_because("labels not serialisable", e))?,
            )
        };
        Ok(LabelRows {
            rows: labels.into_iter().collect(),
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        for id in ["a", "job-1", "ü ✓ / . %", "with.dot"] {
            assert_eq!(parse_job_cursor(&job_cursor(id)), Ok(id.to_owned()));
        }
        assert_eq!(
            parse_execution_cursor("e1.42.6869"),
            Ok((42, "hi".to_owned()))
        );
        assert_eq!(parse_child_cursor("c1.-5.6869"), Ok((-5, "hi".to_owned())));
        for key in [i64::MIN, -1, 0, i64::MAX] {
            let cursor = ordered_job_cursor(JobOrder::LastRun, key, "a.b");
            assert_eq!(
                parse_ordered_job_cursor(JobOrder::LastRun, &cursor),
                Ok((key, "a.b".to_owned()))
            );
            assert_eq!(
                parse_ordered_job_cursor(JobOrder::NextFire, &cursor),
                Err(StoreError::InvalidCursor)
            );
        }
    }

    #[test]
    fn foreign_cursors_are_invalid() {
        let bad = [
            "",
            "j1.",
            "j1.6",
            "j1.zz",
            "j1.4A",
            "j1.ff",
            "x1.6869",
            "e1.6869",
            "e1.01.6869",
            "e1.+1.6869",
            "e1.-1.6869",
            "e1.1.",
            "c1..6869",
            "c1.1.6g",
            "j1.6869", // wrong listing for the parsers below
        ];
        for cursor in bad {
            assert_eq!(
                parse_execution_cursor(cursor),
                Err(StoreError::InvalidCursor),
                "{cursor:?}"
            );
            assert_eq!(
                parse_child_cursor(cursor),
                Err(StoreError::InvalidCursor),
                "{cursor:?}"
            );
        }
        for cursor in &bad[..14] {
            assert_eq!(
                parse_job_cursor(cursor),
                Err(StoreError::InvalidCursor),
                "{cursor:?}"
            );
        }
    }
}
