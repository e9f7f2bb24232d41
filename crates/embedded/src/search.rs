//! Searching executions across jobs (schema step 8): the columns `scheduled_at`, `ended_at` and
//! `source` beside each run, read in the order of `executions_by_scheduled` (or, with a state
//! filter, `executions_by_state_scheduled`), newest scheduled time first, then id. A scheduled
//! range is a range of that index; every other filter is a condition on the rows it reads (labels
//! and creator through the label index and the jobs table), so a page reads rows in page order
//! and stops at its limit.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection};
use sundial_ports::store::{
    cursor, ExecutionQuery, ExecutionRecord, Page, PageRequest, SourceFilter, StoreError,
    TimeRange, MAX_PAGE,
};

use crate::codec::{db, execution_from_row, millis, EXECUTION_COLUMNS};

/// The statement of a search page and its values; `after` is the cursor's `(ms, id)`.
pub(crate) fn search_sql(
    query: &ExecutionQuery,
    after: Option<(i64, String)>,
    fetch: i64,
) -> (String, Vec<SqlValue>) {
    let mut sql = format!("SELECT {EXECUTION_COLUMNS} FROM executions WHERE 1 = 1");
    let mut values = Vec::new();
    if !query.states.is_empty() {
        let marks = vec!["?"; query.states.len()].join(", ");
        sql.push_str(&format!(" AND state IN ({marks})"));
        values.extend(query.states.iter().cloned().map(SqlValue::Text));
    }
    if let Some(job_id) = &query.job_id {
        sql.push_str(" AND job_id = ?");
        values.push(SqlValue::Text(job_id.clone()));
    }
    match query.source {
        None => {}
        Some(SourceFilter::Parent) => sql.push_str(" AND parent_job IS NOT NULL"),
        Some(fired) => {
            sql.push_str(" AND source = ?");
            values.push(SqlValue::Text(fired.name().to_owned()));
        }
    }
    range(&mut sql, &mut values, "scheduled_at", &query.scheduled);
    range(&mut sql, &mut values, "ended_at", &query.ended);
    if let Some(creator) = &query.creator {
        sql.push_str(" AND job_id IN (SELECT job_id FROM jobs WHERE creator = ?)");
        values.push(SqlValue::Text(creator.clone()));
    }
    for selector in &query.labels {
        sql.push_str(" AND job_id IN (SELECT job_id FROM job_labels WHERE key = ? AND value = ?)");
        values.push(SqlValue::Text(selector.key.clone()));
        values.push(SqlValue::Text(selector.value.clone()));
    }
    if let Some((ms, id)) = after {
        sql.push_str(" AND (scheduled_at, execution_id) < (?, ?)");
        values.extend([SqlValue::Integer(ms), SqlValue::Text(id)]);
    }
    sql.push_str(" ORDER BY scheduled_at DESC, execution_id DESC LIMIT ?");
    values.push(SqlValue::Integer(fetch));
    (sql, values)
}

fn range(sql: &mut String, values: &mut Vec<SqlValue>, column: &str, range: &TimeRange) {
    if let Some(since) = &range.since {
        sql.push_str(&format!(" AND {column} >= ?"));
        values.push(SqlValue::Integer(millis(since)));
    }
    if let Some(until) = &range.until {
        sql.push_str(&format!(" AND {column} < ?"));
        values.push(SqlValue::Integer(millis(until)));
    }
}

/// One page of [`ExecutionQuery`]'s runs.
pub(crate) fn search_executions(
    conn: &mut Connection,
    query: &ExecutionQuery,
    page: &PageRequest,
) -> Result<Page<ExecutionRecord>, StoreError> {
    let after = page
        .cursor
        .as_deref()
        .map(cursor::parse_search)
        .transpose()?;
    let limit = page.limit.clamp(1, MAX_PAGE);
    let fetch = i64::try_from(limit + 1).unwrap_or(i64::MAX);
    let (sql, values) = search_sql(query, after, fetch);
    let mut items: Vec<ExecutionRecord> = conn
        .prepare_cached(&sql)
        .and_then(|mut select| {
            select
                .query_map(params_from_iter(values), execution_from_row)?
                .collect()
        })
        .map_err(db)?;
    let more = items.len() > limit;
    items.truncate(limit);
    let next_cursor = if more {
        items.last().map(|e| {
            let (ms, id) = e.search_key();
            cursor::search(ms, id)
        })
    } else {
        None
    };
    Ok(Page { items, next_cursor })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use chrono::DateTime;
    use sundial_ports::store::LabelSelector;

    fn plan(query: &ExecutionQuery, after: Option<(i64, String)>) -> String {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        let (sql, values) = search_sql(query, after, 51);
        let mut select = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let steps: Vec<String> = select
            .query_map(params_from_iter(values), |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        steps.join("; ")
    }

    fn day() -> TimeRange {
        TimeRange {
            since: DateTime::from_timestamp_millis(1_700_000_000_000),
            until: DateTime::from_timestamp_millis(1_700_086_400_000),
        }
    }

    /// A time range is a range of the scheduled index, read in page order: no scan of every
    /// run, no sort.
    #[test]
    fn a_time_range_is_an_index_range() {
        let query = ExecutionQuery {
            scheduled: day(),
            ..ExecutionQuery::default()
        };
        let plan = plan(&query, Some((1_700_000_500_000, "a".into())));
        assert!(
            plan.contains("SEARCH executions USING INDEX executions_by_scheduled"),
            "{plan}"
        );
        assert!(!plan.contains("SCAN executions"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "sorts: {plan}");
    }

    /// A state filter reads that state's runs in page order.
    #[test]
    fn a_state_is_an_index_range() {
        let query = ExecutionQuery {
            states: vec!["Failed".into()],
            scheduled: day(),
            ..ExecutionQuery::default()
        };
        let plan = plan(&query, None);
        assert!(
            plan.contains("SEARCH executions USING INDEX executions_by_state_scheduled"),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "sorts: {plan}");
    }

    /// Labels and creator narrow the rows read through their own indexes.
    #[test]
    fn labels_and_creator_read_their_indexes() {
        let query = ExecutionQuery {
            labels: vec![LabelSelector {
                key: "team".into(),
                value: "x".into(),
            }],
            creator: Some("alice".into()),
            scheduled: day(),
            ..ExecutionQuery::default()
        };
        let plan = plan(&query, None);
        assert!(plan.contains("job_labels"), "{plan}");
        assert!(!plan.contains("SCAN executions"), "{plan}");
    }
}
