//! Jobs' `sqs` and `eventbridge` targets under `sundial serve`: sent to AWS (or to LocalStack or
//! moto through `AWS_ENDPOINT_URL`) when the operator asks for it, refused at creation otherwise.
//!
//! The rule for "configured" is explicit: `--aws-targets` (or `SUNDIAL_AWS_TARGETS=1`). Only then
//! does `serve` load the AWS SDK's configuration (the standard chain: `AWS_REGION`, `AWS_PROFILE`,
//! `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, …) and check at start that a
//! region and credentials resolve, so a mistake stops the start instead of failing every run.
//! Guessing from the environment instead would let a shell that happens to hold `AWS_REGION` change
//! what a job does, and would have the quick start probe the credential chain (the instance
//! metadata endpoint among it) for users who never asked for AWS.
//!
//! The messages go through the Lambda functions' own publisher (`sundial_aws::AwsPublisher`);
//! without the cargo feature `aws-targets` (off by default: the AWS SDK would lengthen the quick
//! start's build far beyond its 10 % budget, docs/performance.md) targets are always refused.

use sundial_ports::events::{BusEvent, EventPublisher, PublishError, TargetSupport};
use sundial_ports::memory::RecordingPublisher;

/// What a refused target job is told to do, in a build with the feature.
#[cfg(feature = "aws-targets")]
const HOW: &str = "start `sundial serve` with --aws-targets (or SUNDIAL_AWS_TARGETS=1) and an AWS region and credentials in its environment (AWS_REGION, and AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; AWS_ENDPOINT_URL for LocalStack or moto)";

/// What a refused target job is told to do, in a build without the feature.
#[cfg(not(feature = "aws-targets"))]
const HOW: &str = "this sundial was built without the aws-targets feature: build it with `cargo build --release --features aws-targets --bin sundial`, then start `sundial serve` with --aws-targets (or SUNDIAL_AWS_TARGETS=1) and an AWS region and credentials in its environment";

/// Why `--aws-targets` cannot be honoured by this build, if it cannot.
pub(crate) fn unavailable_in_this_build() -> Option<&'static str> {
    if cfg!(feature = "aws-targets") {
        None
    } else {
        Some("--aws-targets: this sundial was built without the aws-targets feature; build it with `cargo build --release --features aws-targets --bin sundial`")
    }
}

/// The publisher of `sundial serve`: state-change events logged, and targets either refused or
/// sent to AWS.
pub(crate) enum LocalPublisher {
    /// No AWS: events are logged, targets refused.
    Logging(RecordingPublisher),
    /// `--aws-targets`: the Lambda functions' publisher.
    #[cfg(feature = "aws-targets")]
    Aws(sundial_aws::AwsPublisher),
}

impl LocalPublisher {
    /// The publisher `serve` runs with: on AWS when `aws_targets`, else logging only. With AWS,
    /// fails (naming the setting) when no region or no credentials resolve within 10 s.
    pub(crate) async fn start(aws_targets: bool) -> Result<Self, String> {
        if !aws_targets {
            return Ok(LocalPublisher::Logging(
                RecordingPublisher::logging_only().without_targets(HOW),
            ));
        }
        #[cfg(feature = "aws-targets")]
        {
            aws().await
        }
        #[cfg(not(feature = "aws-targets"))]
        {
            Err(unavailable_in_this_build()
                .unwrap_or("--aws-targets: not available")
                .to_string())
        }
    }

    /// The bus the engine publishes state changes on. Locally they are only logged; with AWS they
    /// are not published at all (the default bus is not ours to fill, and each execution's log and
    /// the API already hold them).
    pub(crate) fn state_change_bus(&self) -> Option<String> {
        match self {
            LocalPublisher::Logging(_) => Some("sundial".into()),
            #[cfg(feature = "aws-targets")]
            LocalPublisher::Aws(_) => None,
        }
    }
}

/// The AWS publisher on the SDK's standard configuration, once a region and credentials are
/// known to resolve.
#[cfg(feature = "aws-targets")]
async fn aws() -> Result<LocalPublisher, String> {
    use aws_credential_types::provider::ProvideCredentials;
    use sundial_ports::cause::chain;

    let sdk = sundial_aws::sdk_config().await;
    let region = sdk.region().filter(|r| !r.as_ref().is_empty()).ok_or(
        "--aws-targets: no AWS region is configured; set AWS_REGION (or a region in the AWS_PROFILE's profile)",
    )?;
    let credentials = sdk.credentials_provider().ok_or(
        "--aws-targets: no AWS credential provider; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE",
    )?;
    let resolved =
        tokio::time::timeout(CREDENTIALS_TIMEOUT, credentials.provide_credentials()).await;
    match resolved {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            return Err(format!(
                "--aws-targets: no AWS credentials ({}); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE",
                chain(&e)
            ))
        }
        Err(_) => {
            return Err(format!(
                "--aws-targets: AWS credentials did not resolve within {} s; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or AWS_PROFILE",
                CREDENTIALS_TIMEOUT.as_secs()
            ))
        }
    }
    tracing::info!(
        region = %region,
        endpoint = sdk.endpoint_url().unwrap_or("AWS"),
        "sqs and eventbridge targets are sent to AWS"
    );
    // Not batched: a job's event *is* its run, and state changes are not published here.
    Ok(LocalPublisher::Aws(sundial_aws::AwsPublisher::from_config(
        &sdk, "default",
    )))
}

/// How long `serve` waits at start for the credential chain (SSO, a container or instance role
/// can take a network round trip or two).
#[cfg(feature = "aws-targets")]
const CREDENTIALS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl EventPublisher for LocalPublisher {
    fn target_support(&self) -> TargetSupport {
        match self {
            LocalPublisher::Logging(p) => p.target_support(),
            #[cfg(feature = "aws-targets")]
            LocalPublisher::Aws(p) => p.target_support(),
        }
    }

    async fn publish(&self, event: &BusEvent) -> Result<(), PublishError> {
        match self {
            LocalPublisher::Logging(p) => p.publish(event).await,
            #[cfg(feature = "aws-targets")]
            LocalPublisher::Aws(p) => p.publish(event).await,
        }
    }

    async fn send_to_queue(&self, queue_url: &str, body: &str) -> Result<(), PublishError> {
        match self {
            LocalPublisher::Logging(p) => p.send_to_queue(queue_url, body).await,
            #[cfg(feature = "aws-targets")]
            LocalPublisher::Aws(p) => p.send_to_queue(queue_url, body).await,
        }
    }
}
