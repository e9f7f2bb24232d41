//! The label index (schema step 4): `job_labels` holds one row per job label, keyed by
//! `(key, value, job_id)` so that a `label=key:value` filter reads only the jobs it selects, in
//! id order. The column `jobs.labels` holds the job's labels as canonical JSON (`NULL` for none):
//! an update whose labels are unchanged (every engine write) matches it and leaves the index
//! alone; one that changes them rewrites the job's rows in the same savepoint as the job.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection};
use sundial_ports::store::{id_prefix_end, JobFilter, StoreError};

use crate::codec::{db, LabelRows};

/// Replaces the index rows of `job_id` by `labels`.
pub(crate) fn write(conn: &Connection, job_id: &str, labels: &LabelRows) -> Result<(), StoreError> {
    remove(conn, job_id)?;
    let mut insert = conn
        .prepare_cached("INSERT INTO job_labels (job_id, key, value) VALUES (?1, ?2, ?3)")
        .map_err(db)?;
    for (key, value) in &labels.rows {
        insert.execute(params![job_id, key, value]).map_err(db)?;
    }
    Ok(())
}

/// Removes the index rows of `job_id`.
pub(crate) fn remove(conn: &Connection, job_id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM job_labels WHERE job_id = ?1")
        .and_then(|mut delete| delete.execute([job_id]))
        .map_err(db)?;
    Ok(())
}

/// The conditions of `filter`'s labels and id prefix on `jobs j`, with their values.
pub(crate) fn conditions(filter: &JobFilter, sql: &mut String, values: &mut Vec<SqlValue>) {
    for selector in &filter.labels {
        sql.push_str(
            " AND j.job_id IN (SELECT job_id FROM job_labels WHERE key = ? AND value = ?)",
        );
        values.push(SqlValue::Text(selector.key.clone()));
        values.push(SqlValue::Text(selector.value.clone()));
    }
    if let Some(prefix) = &filter.id_prefix {
        sql.push_str(" AND j.job_id >= ? AND j.job_id < ?");
        values.push(SqlValue::Text(prefix.clone()));
        values.push(SqlValue::Text(id_prefix_end(prefix)));
    }
}
