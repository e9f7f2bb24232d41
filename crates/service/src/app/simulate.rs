//! Simulating a job before it goes live (`POST /jobs/simulate`, `sundial job simulate`): the
//! request parsed and run by [`sundial_core::simulate`], off the async workers.

use sundial_core::simulate::{Report, Request};
use sundial_ports::store::Store;

use super::{App, AppError};

/// The most fires one simulation through the API plans. A laptop simulates a year of an
/// every-minute job (525,600 fires) in well under a second (docs/performance.md); a 128 MB
/// Lambda is about ten times slower, so 100,000 fires answer within a second or two there, far
/// inside API Gateway's 29 s, and leave the function free for the next request. Past it the
/// report says it was cut short (`truncated`, `plannedThrough`): simulate a longer range in parts.
pub const MAX_API_FIRES: usize = 100_000;

impl<S: Store> App<S> {
    /// Simulates the job a request defines over the scenario it carries (docs/api.md,
    /// "Simulating a job"): nothing is read or written. An adapter reads the request with
    /// [`Request::parse`] and at most [`MAX_API_FIRES`] fires.
    pub async fn simulate_job(&self, request: Request) -> Result<Report, AppError> {
        // Up to a second of CPU on a laptop: kept off the workers that serve other requests.
        tokio::task::spawn_blocking(move || request.run())
            .await
            .map_err(|e| AppError::unavailable(format!("the simulation stopped: {e}")))
    }
}
