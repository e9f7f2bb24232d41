//! The notify function: SQS delivers batches from the notify queue; failed messages are reported
//! back as partial batch failures (the event source needs `ReportBatchItemFailures`), poison ones
//! sent to `SUNDIAL_NOTIFY_DLQ_URL`.

use std::sync::Arc;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use sundial_aws::handlers::{self, QueueKind};
use sundial_aws::Sundial;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    sundial_aws::logging::init();
    let sundial = Arc::new(Sundial::from_env().await?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let sundial = Arc::clone(&sundial);
        async move {
            Ok::<SqsBatchResponse, Error>(
                handlers::batch(&sundial, QueueKind::Notify, event.payload).await,
            )
        }
    }))
    .await
}
