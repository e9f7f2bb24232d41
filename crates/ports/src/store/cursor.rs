//! Page cursors in plain text, for adapters whose ids need no escaping (memory, DynamoDB): the last
//! item of a page, versioned by a prefix so a cursor from another listing, or from an older format,
//! is refused as [`StoreError::InvalidCursor`] instead of misread. (The SQLite store hex-encodes ids
//! in its own `j1.`/`e1.`/`c1.` cursors.)

use super::{JobOrder, StoreError};

/// The cursor after job `job_id` in a job listing.
pub fn job(job_id: &str) -> String {
    format!("j1.{job_id}")
}

/// The job id a job-listing cursor continues after.
pub fn parse_job(cursor: &str) -> Result<&str, StoreError> {
    cursor
        .strip_prefix("j1.")
        .filter(|id| !id.is_empty())
        .ok_or(StoreError::InvalidCursor)
}

/// The cursor after job `job_id`, whose sort key is `key`, in a job listing by a time `order`
/// (a listing by id uses [`job`]). The key is the adapter's own number for the job's place.
pub fn ordered_job(order: JobOrder, key: i64, job_id: &str) -> String {
    format!("{}{key}.{job_id}", order_prefix(order))
}

/// `(sort key, job id)` of a cursor [`ordered_job`] made for the same `order`.
pub fn parse_ordered_job(order: JobOrder, cursor: &str) -> Result<(i64, String), StoreError> {
    numbered(cursor, order_prefix(order))
}

fn order_prefix(order: JobOrder) -> &'static str {
    match order {
        JobOrder::Id => "j1.",
        JobOrder::NextFire => "n1.",
        JobOrder::LastRun => "l1.",
    }
}

/// The cursor after an execution in a job's executions (newest first by execute number).
pub fn execution(execute_number: u64, execution_id: &str) -> String {
    format!("e1.{execute_number}.{execution_id}")
}

/// `(execute number, execution id)` of an executions cursor.
pub fn parse_execution(cursor: &str) -> Result<(u64, String), StoreError> {
    numbered(cursor, "e1.")
}

/// The cursor after an execution in a parent's child executions (newest first by creation).
pub fn child(created_ms: i64, execution_id: &str) -> String {
    format!("c1.{created_ms}.{execution_id}")
}

/// `(created at in ms, execution id)` of a child-executions cursor.
pub fn parse_child(cursor: &str) -> Result<(i64, String), StoreError> {
    numbered(cursor, "c1.")
}

/// The cursor after an execution in a search across jobs (newest first by scheduled time, in
/// ms, then id): every store's, so a cursor stays valid whichever adapter answers.
pub fn search(scheduled_ms: i64, execution_id: &str) -> String {
    format!("x1.{scheduled_ms}.{execution_id}")
}

/// `(scheduled time in ms, execution id)` of a search cursor.
pub fn parse_search(cursor: &str) -> Result<(i64, String), StoreError> {
    numbered(cursor, "x1.")
}

/// The cursor after an audit entry in a job's history.
pub fn audit(entry_id: &str) -> String {
    format!("h1.{entry_id}")
}

/// The entry id an audit cursor continues after.
pub fn parse_audit(cursor: &str) -> Result<&str, StoreError> {
    cursor
        .strip_prefix("h1.")
        .filter(|id| !id.is_empty())
        .ok_or(StoreError::InvalidCursor)
}

fn numbered<N: std::str::FromStr + ToString>(
    cursor: &str,
    prefix: &str,
) -> Result<(N, String), StoreError> {
    let (number, id) = cursor
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_once('.'))
        .ok_or(StoreError::InvalidCursor)?;
    // The number must be written as it prints (no `+`, no leading zeros): one cursor per position.
    match number.parse::<N>() {
        Ok(n) if n.to_string() == number && !id.is_empty() => Ok((n, id.to_owned())),
        _ => Err(StoreError::InvalidCursor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        assert_eq!(parse_job(&job("a.b")), Ok("a.b"));
        assert_eq!(
            parse_execution(&execution(7, "x.y")),
            Ok((7, "x.y".to_owned()))
        );
        assert_eq!(parse_child(&child(-5, "c")), Ok((-5, "c".to_owned())));
        for bad in [
            "", "j1.", "e1.07.x", "e1.+7.x", "e1.7.", "c1.x.y", "zz", "j1.x",
        ] {
            assert!(parse_execution(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_job(""), Err(StoreError::InvalidCursor));
        assert_eq!(
            parse_search(&search(-2, "j~t~a.b")),
            Ok((-2, "j~t~a.b".to_owned()))
        );
        assert_eq!(parse_search("e1.1.x"), Err(StoreError::InvalidCursor));
        let next = ordered_job(JobOrder::NextFire, -3, "a.b");
        assert_eq!(
            parse_ordered_job(JobOrder::NextFire, &next),
            Ok((-3, "a.b".to_owned()))
        );
        assert_eq!(
            parse_ordered_job(JobOrder::LastRun, &next),
            Err(StoreError::InvalidCursor),
            "a cursor of one order is refused by another"
        );
        assert_eq!(parse_job("e1.1.x"), Err(StoreError::InvalidCursor));
    }
}
