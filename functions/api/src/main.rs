//! The API function: API Gateway (HTTP API, payload v2) in front of the same router `sundial serve`
//! runs.

use lambda_http::Error;
use sundial_aws::{handlers, Sundial};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    sundial_aws::logging::init();
    let sundial = Sundial::from_env().await?.unbatched();
    lambda_http::run(handlers::api_router(&sundial)).await
}
