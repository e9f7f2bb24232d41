//! The tick function: EventBridge's `rate(1 minute)` schedule calls it; it enqueues what is due.

use std::sync::Arc;

use lambda_runtime::{service_fn, Error, LambdaEvent};
use serde_json::Value;
use sundial_aws::{handlers, Sundial};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    sundial_aws::logging::init();
    let sundial = Arc::new(Sundial::from_env().await?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| {
        let sundial = Arc::clone(&sundial);
        async move {
            handlers::tick(&sundial, &event.payload)
                .await
                .map_err(Error::from)
        }
    }))
    .await
}
