//! What the control plane asks of the engine, as an object-safe trait: the engine depends on the
//! control plane, never the other way round; [`crate::engine::Engine`] implements this and
//! [`Engine::new`](crate::engine::Engine::new) connects the two.

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use sundial_core::job::JobId;

use super::{AppError, ReplanOrder};

/// What the control plane asks of the engine: start a run it just created, and take an async
/// job's feedback. Object-safe so that [`App`](super::App) need not know the engine's port types.
pub trait EngineHooks: Send + Sync {
    /// Sends the execution to dispatch now.
    fn kick(&self, execution_id: String) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;

    /// Plans a job that was just created, changed or resumed, whose next fire is `next`, as the
    /// tick would, when that fire is due before the next tick: its first fire then goes out on
    /// its second. Failures are logged; the tick plans the job anyway.
    fn plan(
        &self,
        job_id: JobId,
        next: DateTime<Utc>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;

    /// An execution was just cancelled or terminated (the write is done): its call, if this
    /// process is making one, is closed at once.
    fn stopped(&self, execution_id: &str);

    /// A job was just paused (the write is done, the answer not yet given): runs of this
    /// process about to make their first call look at their job once more, so that none calls
    /// after the pause's answer.
    fn paused(&self, job_id: &JobId);

    /// Whether a calendar's change re-plans its jobs through the queue
    /// ([`EngineHooks::queue_replans`]) rather than in the request: on AWS, where a calendar
    /// that thousands of jobs use would otherwise make a request of minutes.
    fn replans_by_queue(&self) -> bool;

    /// Queues the re-plan of `order`'s jobs, a message per
    /// [`REPLAN_BATCH`](super::REPLAN_BATCH) jobs, each taken by
    /// [`App::replan_queued`](super::App::replan_queued) when it arrives.
    fn queue_replans(
        &self,
        order: ReplanOrder,
    ) -> Pin<Box<dyn Future<Output = Result<(), AppError>> + Send + '_>>;

    /// Applies an async job's feedback report to its execution.
    fn feedback(
        &self,
        execution_id: String,
        report: serde_json::Value,
    ) -> Pin<Box<dyn Future<Output = Result<(), AppError>> + Send + '_>>;
}
