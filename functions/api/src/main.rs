//! The API function: API Gateway (HTTP API, payload v2) in front of the same router `sundial serve`
//! runs, with the operator console when the stack turns it on.

use lambda_http::Error;
use sundial_aws::Sundial;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    sundial_aws::logging::init();
    // `_sundial` (not `_`) lives as long as the router: the use cases reach the engine through it.
    let (_sundial, router) = Sundial::api_from_env().await?;
    lambda_http::run(router).await
}
