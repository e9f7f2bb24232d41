//! Rollups ([`RollupStore`](sundial_ports::store::RollupStore)) on SQLite: one row per
//! job and hour holding its counters as a JSON list of `[name, count]` pairs.
//!
//! One row per bucket rather than one per counter: a 30-day window of a job is 720 rows however
//! many counters its histograms fill, which is what keeps `GET /jobs/{jobId}/stats` within its
//! 50 ms on a job with a million runs (docs/performance.md). Adding reads the row and writes it
//! back; that is safe because every write runs on the one writer thread, inside the savepoint of
//! the batch it belongs to, so no other add can come between the read and the write.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use sundial_ports::store::{FleetHourRecord, RollupRecord, StoreError};

use crate::codec::{db, millis, time_from_millis};

/// A bucket's counters as stored: a JSON array of `[name, count]` pairs in name order. Not an
/// object: read back as a list already in order, the map is built in one pass, where an object is
/// inserted key by key, which was most of a 30-day read's time (docs/performance.md).
fn encode(counters: &BTreeMap<String, u64>) -> Result<String, StoreError> {
    let pairs: Vec<(&String, &u64)> = counters.iter().collect();
    serde_json::to_string(&pairs)
        .map_err(|e| StoreError::unavailable_because("encoding rollup counters", e))
}

fn decode(job_id: &str, hour: i64, text: &str) -> Result<BTreeMap<String, u64>, StoreError> {
    let pairs: Vec<(String, u64)> = serde_json::from_str(text).map_err(|e| {
        StoreError::corrupt(
            format!("rollup {job_id}@{hour} is unreadable"),
            Some(sundial_ports::cause::Cause::new(e)),
        )
    })?;
    Ok(pairs.into_iter().collect())
}

/// Adds `rollup`'s counters to its bucket, creating it if absent.
pub(crate) fn add(conn: &mut Connection, rollup: &RollupRecord) -> Result<(), StoreError> {
    let hour = millis(&rollup.hour);
    let stored: Option<String> = conn
        .prepare_cached("SELECT counters FROM rollups WHERE job_id = ?1 AND hour = ?2")
        .and_then(|mut select| {
            select
                .query_row(params![rollup.job_id, hour], |row| row.get(0))
                .optional()
        })
        .map_err(db)?;
    let mut counters = match stored {
        Some(text) => decode(&rollup.job_id, hour, &text)?,
        None => BTreeMap::new(),
    };
    for (name, n) in &rollup.counters {
        let at = counters.entry(name.clone()).or_insert(0);
        *at = at.saturating_add(*n);
    }
    let text = encode(&counters)?;
    conn.prepare_cached(
        "INSERT INTO rollups (job_id, hour, counters) VALUES (?1, ?2, ?3)
         ON CONFLICT (job_id, hour) DO UPDATE SET counters = excluded.counters",
    )
    .and_then(|mut upsert| upsert.execute(params![rollup.job_id, hour, text]))
    .map(drop)
    .map_err(db)
}

fn collect(rows: Vec<(String, i64, String)>) -> Result<Vec<RollupRecord>, StoreError> {
    rows.into_iter()
        .map(|(job_id, hour, text)| {
            let counters = decode(&job_id, hour, &text)?;
            Ok(RollupRecord {
                hour: time_from_millis(hour)?,
                job_id,
                counters,
            })
        })
        .collect()
}

/// `job_id`'s buckets with an hour in `from..=to`, earliest first: a range of the primary key.
pub(crate) fn job_rollups(
    conn: &mut Connection,
    job_id: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<RollupRecord>, StoreError> {
    let rows = conn
        .prepare_cached(
            "SELECT job_id, hour, counters FROM rollups
             WHERE job_id = ?1 AND hour BETWEEN ?2 AND ?3 ORDER BY hour",
        )
        .and_then(|mut select| {
            select
                .query_map(params![job_id, millis(&from), millis(&to)], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(db)?;
    collect(rows)
}

/// Every bucket with an hour in `from..=to`: a range of the by-hour index.
pub(crate) fn all_rollups(
    conn: &mut Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<RollupRecord>, StoreError> {
    let rows = conn
        .prepare_cached(
            "SELECT job_id, hour, counters FROM rollups INDEXED BY rollups_by_hour
             WHERE hour BETWEEN ?1 AND ?2",
        )
        .and_then(|mut select| {
            select
                .query_map(params![millis(&from), millis(&to)], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(db)?;
    collect(rows)
}

/// Every part of the fleet summaries of hours in `from..=to`: a range of the primary key.
pub(crate) fn fleet_hours(
    conn: &mut Connection,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<FleetHourRecord>, StoreError> {
    let rows = conn
        .prepare_cached("SELECT hour, part, body FROM fleet_hours WHERE hour BETWEEN ?1 AND ?2")
        .and_then(|mut select| {
            select
                .query_map(params![millis(&from), millis(&to)], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, u32>(1)?, row.get(2)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(db)?;
    rows.into_iter()
        .map(|(hour, part, body)| {
            Ok(FleetHourRecord {
                hour: time_from_millis(hour)?,
                part,
                body,
            })
        })
        .collect()
}

/// Stores summary parts, each replacing the one of its hour and number (all or none: the writer
/// runs it in a savepoint of its batch).
pub(crate) fn put_fleet_hours(
    conn: &mut Connection,
    parts: &[FleetHourRecord],
) -> Result<(), StoreError> {
    for part in parts {
        conn.prepare_cached(
            "INSERT INTO fleet_hours (hour, part, body) VALUES (?1, ?2, ?3)
             ON CONFLICT (hour, part) DO UPDATE SET body = excluded.body",
        )
        .and_then(|mut upsert| upsert.execute(params![millis(&part.hour), part.part, part.body]))
        .map_err(db)?;
    }
    Ok(())
}

/// Removes the buckets and fleet summaries of hours before `before`; counts the buckets.
pub(crate) fn clean(conn: &mut Connection, before: DateTime<Utc>) -> Result<u64, StoreError> {
    conn.prepare_cached("DELETE FROM fleet_hours WHERE hour < ?1")
        .and_then(|mut delete| delete.execute([millis(&before)]))
        .map_err(db)?;
    conn.prepare_cached("DELETE FROM rollups WHERE hour < ?1")
        .and_then(|mut delete| delete.execute([millis(&before)]))
        .map(|n| n as u64)
        .map_err(db)
}
