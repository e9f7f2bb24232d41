//! Error paths of the AWS adapters with the SDK's mock client (aws-smithy-mocks): what DynamoDB,
//! SQS and EventBridge answer when a condition fails, a transaction is cancelled, or a call is
//! throttled — cases moto cannot be made to produce on demand.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemOutput;
use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
use aws_sdk_dynamodb::operation::put_item::{PutItemError, PutItemOutput};
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::error::{
    ConditionalCheckFailedException, ProvisionedThroughputExceededException,
    TransactionCanceledException, TransactionConflictException,
};
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason};
use aws_sdk_dynamodb::Client as Dynamo;
use aws_smithy_mocks::{mock, mock_client, RuleMode};
use chrono::{TimeZone, Utc};
use serde_json::json;
use sundial_aws::{AwsPublisher, DynamoStore, SqsQueue};
use sundial_ports::events::{BusEvent, EventPublisher, PublishError};
use sundial_ports::queue::{Queue, QueueError};
use sundial_ports::store::{
    ExecutionRecord, ExecutionStore, JobFilter, JobOrder, JobRecord, JobStore, PageRequest, Store,
    StoreError, WakeUpIndex, Write, WriteAllError,
};

fn job(version: u64) -> JobRecord {
    let at = Utc
        .timestamp_millis_opt(1_700_000_000_000)
        .single()
        .unwrap_or_default();
    JobRecord {
        job_id: "report".into(),
        version,
        creator: "001".into(),
        parent_job: None,
        service: None,
        state: "active".into(),
        created_at: at,
        updated_at: at,
        document: json!({"definition": {}, "state": {}}),
    }
}

fn store(client: Dynamo) -> DynamoStore {
    DynamoStore::new(client, "sundial")
}

/// The jobs list by last run would need an index written by every run, or a scan of every job,
/// on DynamoDB: it is refused before any request is made (docs/deploy.md). (By next fire it reads
/// the wake-up index: the store conformance suite runs it on moto.)
#[tokio::test]
async fn the_last_run_order_of_the_jobs_list_is_refused_without_a_request() {
    let client = mock_client!(aws_sdk_dynamodb, []);
    for order in [JobOrder::LastRun] {
        assert_eq!(
            store(client.clone())
                .list_jobs(&JobFilter::default(), order, &PageRequest::first(10))
                .await,
            Err(StoreError::UnsupportedOrder(order))
        );
    }
}

#[tokio::test]
async fn a_lost_update_race_is_a_version_conflict_and_a_missing_item_not_found() {
    let raced = mock!(Dynamo::update_item).then_error(|| {
        let current = [("pk".to_owned(), AttributeValue::S("J#report".into()))].into();
        UpdateItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder()
                .set_item(Some(current))
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, [&raced]);
    assert_eq!(
        store(client).update_job(&job(3)).await,
        Err(StoreError::VersionConflict {
            key: "report".into(),
            expected: 3
        })
    );

    let gone = mock!(Dynamo::update_item).then_error(|| {
        UpdateItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder().build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, [&gone]);
    assert_eq!(
        store(client).update_job(&job(3)).await,
        Err(StoreError::NotFound("report".into()))
    );
}

#[tokio::test]
async fn creates_never_overwrite() {
    let taken = mock!(Dynamo::put_item).then_error(|| {
        PutItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder().build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, [&taken]);
    assert_eq!(
        store(client).create_job(&job(1)).await,
        Err(StoreError::AlreadyExists("report".into()))
    );
}

/// The job's item collection as a `Query` answers it: the job at version 3 and one label item.
fn collection() -> QueryOutput {
    let item = |sk: &str| {
        std::collections::HashMap::from([
            ("pk".to_owned(), AttributeValue::S("J#report".into())),
            ("sk".to_owned(), AttributeValue::S(sk.into())),
            ("version".to_owned(), AttributeValue::N("3".into())),
        ])
    };
    QueryOutput::builder()
        .items(item("J"))
        .items(item("L#team"))
        .build()
}

#[tokio::test]
async fn deleting_a_job_deletes_its_collection_in_one_transaction() {
    let read = mock!(Dynamo::query).then_output(collection);
    let deleted = mock!(Dynamo::transact_write_items)
        .match_requests(|r| r.transact_items().len() == 4)
        .then_output(|| TransactWriteItemsOutput::builder().build());
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&read, &deleted]);
    assert_eq!(store(client).delete_job("report").await, Ok(true));
    assert_eq!(
        deleted.num_calls(),
        1,
        "job, wake-up, label item and the job's tombstone at once"
    );
}

#[tokio::test]
async fn deleting_a_missing_job_answers_false_and_removes_its_wakeup() {
    let read = mock!(Dynamo::query).then_output(|| QueryOutput::builder().build());
    let stray_wakeup =
        mock!(Dynamo::delete_item).then_output(|| DeleteItemOutput::builder().build());
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::MatchAny, [&read, &stray_wakeup]);
    assert_eq!(store(client).delete_job("report").await, Ok(false));
    assert_eq!(
        stray_wakeup.num_calls(),
        1,
        "the job's wake-up is removed all the same"
    );
}

#[tokio::test]
async fn a_delete_that_loses_a_race_reads_the_job_again() {
    // The job is written between the read and the transaction: the version condition cancels
    // it, and the second round finds the job gone.
    let first = mock!(Dynamo::query).then_output(collection);
    let cancelled = mock!(Dynamo::transact_write_items).then_error(|| {
        TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .cancellation_reasons(
                    CancellationReason::builder()
                        .code("ConditionalCheckFailed")
                        .build(),
                )
                .build(),
        )
    });
    let second = mock!(Dynamo::query).then_output(|| QueryOutput::builder().build());
    let stray_wakeup =
        mock!(Dynamo::delete_item).then_output(|| DeleteItemOutput::builder().build());
    let client = mock_client!(
        aws_sdk_dynamodb,
        RuleMode::Sequential,
        [&first, &cancelled, &second, &stray_wakeup]
    );
    assert_eq!(store(client).delete_job("report").await, Ok(false));
    assert_eq!(cancelled.num_calls(), 1);
    assert_eq!(second.num_calls(), 1);
}

/// A run's wake-up (layout 4) is looked for on the run's own item first, then as an item of its
/// own (older layouts, or one set before its run existed); moved in both, it is not cleared.
#[tokio::test]
async fn a_changed_wakeup_is_not_cleared() {
    let not_on_the_run = mock!(Dynamo::update_item).then_error(|| {
        UpdateItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder().build(),
        )
    });
    let moved = mock!(Dynamo::delete_item).then_error(|| {
        DeleteItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder().build(),
        )
    });
    let client = mock_client!(
        aws_sdk_dynamodb,
        RuleMode::Sequential,
        [&not_on_the_run, &moved]
    );
    let due = Utc
        .timestamp_millis_opt(1_700_000_000_000)
        .single()
        .unwrap_or_default();
    assert_eq!(
        store(client).clear_wakeup_if("exec:a", due).await,
        Ok(false)
    );
    assert_eq!((not_on_the_run.num_calls(), moved.num_calls()), (1, 1));

    // On the run's item and still due then: removed there, with no second request.
    let on_the_run = mock!(Dynamo::update_item).then_output(|| UpdateItemOutput::builder().build());
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&on_the_run]);
    assert_eq!(store(client).clear_wakeup_if("exec:a", due).await, Ok(true));
    assert_eq!(on_the_run.num_calls(), 1);
}

fn throttled() -> PutItemError {
    PutItemError::ProvisionedThroughputExceededException(
        ProvisionedThroughputExceededException::builder()
            .message("slow down")
            .meta(
                aws_sdk_dynamodb::error::ErrorMetadata::builder()
                    .code("ProvisionedThroughputExceededException")
                    .message("slow down")
                    .build(),
            )
            .build(),
    )
}

#[tokio::test]
async fn throttling_is_retried_by_the_sdk_then_reported_as_unavailable() {
    // Throttled twice, then accepted: the SDK's standard retries absorb it.
    let recovers = mock!(Dynamo::put_item)
        .sequence()
        .error(throttled)
        .times(2)
        .output(|| PutItemOutput::builder().build())
        .build();
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&recovers], |c| c
        .retry_config(
            aws_sdk_dynamodb::config::retry::RetryConfig::standard()
                .with_initial_backoff(Duration::from_millis(1))
        ));
    assert_eq!(store(client).create_job(&job(1)).await, Ok(()));
    assert_eq!(recovers.num_calls(), 3);

    // Throttled on every attempt: the store says so, and the engine retries the message later.
    let stuck = mock!(Dynamo::put_item)
        .sequence()
        .error(throttled)
        .times(3)
        .build();
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&stuck], |c| c
        .retry_config(
            aws_sdk_dynamodb::config::retry::RetryConfig::standard()
                .with_initial_backoff(Duration::from_millis(1))
        ));
    match store(client).create_job(&job(1)).await {
        Err(error @ StoreError::Unavailable { .. }) => {
            // The operation in the message, DynamoDB's own error kept as the source.
            let logged = sundial_ports::cause::chain(&error).to_string();
            assert!(
                logged.starts_with("store unavailable: PutItem: "),
                "{logged}"
            );
            assert!(logged.contains("ProvisionedThroughputExceeded"), "{logged}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert_eq!(stuck.num_calls(), 3);
}

#[tokio::test]
async fn expired_items_read_as_absent() {
    let expired = mock!(Dynamo::get_item).then_output(|| {
        GetItemOutput::builder()
            .set_item(Some(
                [
                    ("pk".to_owned(), AttributeValue::S("E#x".into())),
                    ("expiresAt".to_owned(), AttributeValue::N("1".into())),
                ]
                .into(),
            ))
            .build()
    });
    let client = mock_client!(aws_sdk_dynamodb, [&expired]);
    assert_eq!(store(client).get_execution("x").await, Ok(None));
}

#[tokio::test]
async fn sqs_receipts_it_does_not_know_are_stale() {
    use aws_sdk_sqs::operation::delete_message::DeleteMessageError;
    use aws_sdk_sqs::types::error::ReceiptHandleIsInvalid;
    let invalid = mock!(aws_sdk_sqs::Client::delete_message).then_error(|| {
        DeleteMessageError::ReceiptHandleIsInvalid(ReceiptHandleIsInvalid::builder().build())
    });
    let client = mock_client!(aws_sdk_sqs, [&invalid]);
    let queue = SqsQueue::new(client, "https://sqs.us-east-1.amazonaws.com/1/q");
    assert_eq!(queue.ack("old").await, Err(QueueError::StaleReceipt));
}

#[tokio::test]
async fn eventbridge_entry_failures_are_classified() {
    use aws_sdk_eventbridge::operation::put_events::PutEventsOutput;
    use aws_sdk_eventbridge::types::PutEventsResultEntry;
    let event = BusEvent {
        bus: Some("jobs".into()),
        source: "sundial".into(),
        detail_type: "Execution State Change".into(),
        detail: json!({"state": "Succeeded"}),
    };
    let answer = |code: &'static str| {
        mock!(aws_sdk_eventbridge::Client::put_events).then_output(move || {
            PutEventsOutput::builder()
                .failed_entry_count(1)
                .entries(
                    PutEventsResultEntry::builder()
                        .error_code(code)
                        .error_message("no")
                        .build(),
                )
                .build()
        })
    };
    let sqs = mock_client!(aws_sdk_sqs, []);
    let throttled = answer("ThrottlingException");
    let publisher = AwsPublisher::new(
        mock_client!(aws_sdk_eventbridge, [&throttled]),
        sqs.clone(),
        "default",
    );
    assert!(matches!(
        publisher.publish(&event).await,
        Err(PublishError::Unavailable { .. })
    ));
    let malformed = answer("MalformedDetail");
    let publisher = AwsPublisher::new(
        mock_client!(aws_sdk_eventbridge, [&malformed]),
        sqs,
        "default",
    );
    assert!(matches!(
        publisher.publish(&event).await,
        Err(PublishError::Rejected { .. })
    ));
}

fn execution(version: u64) -> ExecutionRecord {
    let at = Utc
        .timestamp_millis_opt(1_700_000_000_000)
        .single()
        .unwrap_or_default();
    ExecutionRecord {
        execution_id: "report~1".into(),
        job_id: "report".into(),
        execute_number: 1,
        state: "Processing".into(),
        parent_job: None,
        parent_execution: None,
        created_at: at,
        version,
        document: json!({}),
    }
}

/// A cancelled transaction names the write whose condition failed, with what that write's own
/// call would have answered; a concurrent transaction on an item is a lost race on it.
#[tokio::test]
async fn a_cancelled_batch_names_the_write_that_failed() {
    let cancelled = |reasons: Vec<CancellationReason>| {
        mock!(Dynamo::transact_write_items).then_error(move || {
            TransactWriteItemsError::TransactionCanceledException(
                TransactionCanceledException::builder()
                    .set_cancellation_reasons(Some(reasons.clone()))
                    .build(),
            )
        })
    };
    let none = || CancellationReason::builder().code("None").build();
    let (run, slot) = (execution(2), job(5));
    let writes = [Write::UpdateExecution(&run), Write::UpdateJob(&slot)];

    let current = [("pk".to_owned(), AttributeValue::S("J#report".into()))].into();
    let raced = cancelled(vec![
        none(),
        CancellationReason::builder()
            .code("ConditionalCheckFailed")
            .set_item(Some(current))
            .build(),
    ]);
    let client = mock_client!(aws_sdk_dynamodb, [&raced]);
    assert_eq!(
        store(client).write_all(&writes).await,
        Err(WriteAllError::at(
            1,
            StoreError::VersionConflict {
                key: "report".into(),
                expected: 5
            }
        ))
    );

    let busy = cancelled(vec![
        CancellationReason::builder()
            .code("TransactionConflict")
            .build(),
        none(),
    ]);
    let client = mock_client!(aws_sdk_dynamodb, [&busy]);
    assert_eq!(
        store(client).write_all(&writes).await,
        Err(WriteAllError::at(
            0,
            StoreError::VersionConflict {
                key: "report~1".into(),
                expected: 2
            }
        ))
    );

    let fresh = execution(1);
    let taken = cancelled(vec![
        none(),
        CancellationReason::builder()
            .code("ConditionalCheckFailed")
            .build(),
    ]);
    let client = mock_client!(aws_sdk_dynamodb, [&taken]);
    assert_eq!(
        store(client)
            .write_all(&[Write::UpdateJob(&slot), Write::CreateExecution(&fresh)])
            .await,
        Err(WriteAllError::at(
            1,
            StoreError::AlreadyExists("report~1".into())
        ))
    );
}

/// A plain update that meets a transaction on its item is a lost race, not an outage.
#[tokio::test]
async fn an_update_that_meets_a_transaction_is_a_version_conflict() {
    let held = mock!(Dynamo::update_item).then_error(|| {
        UpdateItemError::TransactionConflictException(
            TransactionConflictException::builder().build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, [&held]);
    assert_eq!(
        store(client).update_job(&job(3)).await,
        Err(StoreError::VersionConflict {
            key: "report".into(),
            expected: 3
        })
    );
}
