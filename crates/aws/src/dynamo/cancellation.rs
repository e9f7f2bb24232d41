//! What a cancelled `TransactWriteItems` means for the write that failed: DynamoDB gives a
//! reason per item, in order, and the first that is not `None` names the write whose condition
//! failed (or whose item another transaction held). Pure, so each case is tested with a canned
//! reason instead of a server.

use sundial_ports::store::{StoreError, Write};

use super::keys::Item;
use super::{conflict_or_missing, version_of};

/// What one item's cancellation reason says about its write.
#[derive(Debug, PartialEq)]
pub(crate) enum Cancellation {
    /// This item did not fail (reason `None`, or a code that belongs to no write): look on.
    NotThis,
    /// A job update at the version read whose stored labels differ: write it again as one
    /// transaction with the label index changes, from the stored item returned.
    Relabel(Item),
    /// The write failed with this error.
    Failed(StoreError),
}

/// The meaning of the reason `code` (with the stored item `old` DynamoDB returned, if any) for
/// the item of `write`; `relabelled` says whether this write was already made again with its
/// label changes (then a second failure is a plain conflict).
pub(crate) fn classify(
    write: &Write<'_>,
    code: Option<&str>,
    old: Option<&Item>,
    relabelled: bool,
) -> Cancellation {
    match code {
        Some("ConditionalCheckFailed") => condition_failed(write, old, relabelled),
        // Another transaction held the item: as good as a lost race; re-read and retry.
        Some("TransactionConflict") => Cancellation::Failed(held(write)),
        _ => Cancellation::NotThis,
    }
}

/// A write whose condition failed.
fn condition_failed(write: &Write<'_>, old: Option<&Item>, relabelled: bool) -> Cancellation {
    let error = match write {
        Write::CreateExecution(e) => StoreError::AlreadyExists(e.execution_id.clone()),
        Write::UpdateJob(job) => match old {
            // At the version read, with other labels: again, relabelling it.
            Some(old) if version_of(old) == Some(job.version) && !relabelled => {
                return Cancellation::Relabel(old.clone())
            }
            old => conflict_or_missing(&job.job_id, job.version, old.cloned()),
        },
        Write::UpdateExecution(e) => conflict_or_missing(&e.execution_id, e.version, old.cloned()),
        Write::SetWakeup(key, _) => {
            StoreError::unavailable(format!("unexpected condition on wakeup {key}"))
        }
        Write::AddRollup(rollup) => {
            StoreError::unavailable(format!("unexpected condition on {}", rollup.key()))
        }
        Write::CreateJob(job) => StoreError::AlreadyExists(job.job_id.clone()),
        Write::DeleteJob(job_id, version) => conflict_or_missing(job_id, *version, old.cloned()),
        Write::AppendAudit(_) => StoreError::AlreadyExists(write.key()),
        Write::RequireCalendarUser(..) => StoreError::NotFound(write.key()),
    };
    Cancellation::Failed(error)
}

/// The lost race of a write whose item another transaction held.
fn held(write: &Write<'_>) -> StoreError {
    let (key, expected) = match write {
        Write::UpdateJob(job) | Write::CreateJob(job) => (job.job_id.clone(), job.version),
        Write::UpdateExecution(e) | Write::CreateExecution(e) => {
            (e.execution_id.clone(), e.version)
        }
        Write::SetWakeup(key, _) => ((*key).to_owned(), 0),
        Write::AddRollup(rollup) => (rollup.key(), 0),
        Write::DeleteJob(job_id, version) => ((*job_id).to_owned(), *version),
        Write::AppendAudit(_) | Write::RequireCalendarUser(..) => (write.key(), 0),
    };
    StoreError::VersionConflict { key, expected }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::types::AttributeValue;
    use chrono::{TimeZone, Utc};
    use serde_json::json;
    use sundial_ports::store::{ExecutionRecord, JobRecord};

    use super::*;

    fn job(version: u64) -> JobRecord {
        let at = Utc
            .timestamp_opt(1_700_000_000, 0)
            .single()
            .unwrap_or_default();
        JobRecord {
            job_id: "report".into(),
            version,
            creator: "ops".into(),
            parent_job: None,
            service: None,
            state: "active".into(),
            created_at: at,
            updated_at: at,
            document: json!({}),
        }
    }

    fn execution(version: u64) -> ExecutionRecord {
        let at = Utc
            .timestamp_opt(1_700_000_000, 0)
            .single()
            .unwrap_or_default();
        ExecutionRecord {
            execution_id: "report~1".into(),
            job_id: "report".into(),
            execute_number: 1,
            state: "Enqueued".into(),
            parent_job: None,
            parent_execution: None,
            created_at: at,
            version,
            document: json!({}),
        }
    }

    fn stored(version: u64) -> Item {
        Item::from([(
            "version".to_string(),
            AttributeValue::N(version.to_string()),
        )])
    }

    #[test]
    fn a_reason_of_none_names_no_write() {
        let job = job(3);
        assert_eq!(
            classify(&Write::UpdateJob(&job), None, None, false),
            Cancellation::NotThis
        );
        assert_eq!(
            classify(&Write::UpdateJob(&job), Some("None"), None, false),
            Cancellation::NotThis
        );
    }

    #[test]
    fn a_job_update_at_the_version_read_is_relabelled_once() {
        let job = job(3);
        let old = stored(3);
        assert_eq!(
            classify(
                &Write::UpdateJob(&job),
                Some("ConditionalCheckFailed"),
                Some(&old),
                false
            ),
            Cancellation::Relabel(old.clone())
        );
        // Relabelled already: a conflict, not a loop.
        assert_eq!(
            classify(
                &Write::UpdateJob(&job),
                Some("ConditionalCheckFailed"),
                Some(&old),
                true
            ),
            Cancellation::Failed(StoreError::VersionConflict {
                key: "report".into(),
                expected: 3
            })
        );
    }

    #[test]
    fn a_failed_condition_is_a_conflict_a_missing_item_or_a_duplicate() {
        let job = job(3);
        assert_eq!(
            classify(
                &Write::UpdateJob(&job),
                Some("ConditionalCheckFailed"),
                Some(&stored(4)),
                false
            ),
            Cancellation::Failed(StoreError::VersionConflict {
                key: "report".into(),
                expected: 3
            })
        );
        assert_eq!(
            classify(
                &Write::UpdateJob(&job),
                Some("ConditionalCheckFailed"),
                None,
                false
            ),
            Cancellation::Failed(StoreError::NotFound("report".into()))
        );
        assert_eq!(
            classify(
                &Write::CreateJob(&job),
                Some("ConditionalCheckFailed"),
                None,
                false
            ),
            Cancellation::Failed(StoreError::AlreadyExists("report".into()))
        );
        let run = execution(1);
        assert_eq!(
            classify(
                &Write::CreateExecution(&run),
                Some("ConditionalCheckFailed"),
                None,
                false
            ),
            Cancellation::Failed(StoreError::AlreadyExists("report~1".into()))
        );
        assert_eq!(
            classify(
                &Write::DeleteJob("report", 7),
                Some("ConditionalCheckFailed"),
                None,
                false
            ),
            Cancellation::Failed(StoreError::NotFound("report".into()))
        );
    }

    #[test]
    fn an_item_held_by_another_transaction_is_a_lost_race() {
        let run = execution(2);
        assert_eq!(
            classify(
                &Write::UpdateExecution(&run),
                Some("TransactionConflict"),
                None,
                false
            ),
            Cancellation::Failed(StoreError::VersionConflict {
                key: "report~1".into(),
                expected: 2
            })
        );
        assert_eq!(
            classify(
                &Write::SetWakeup("job:report", None),
                Some("TransactionConflict"),
                None,
                false
            ),
            Cancellation::Failed(StoreError::VersionConflict {
                key: "job:report".into(),
                expected: 0
            })
        );
    }
}
