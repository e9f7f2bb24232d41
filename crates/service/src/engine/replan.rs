//! Re-planning the jobs of a changed calendar through the queue (docs/engine.md, "Calendars").
//!
//! Where [`EngineConfig::replan_by_queue`](super::EngineConfig::replan_by_queue) is on (AWS), a
//! calendar's change does not re-plan its jobs in the request: the control plane hands the list
//! to [`EngineHooks::queue_replans`](crate::app::EngineHooks::queue_replans), which sends one
//! [`ReplanMessage`] per [`REPLAN_BATCH`] jobs on the notify queue (a queue the API function
//! already sends to; the message is told from a notification by its `replanCalendar` field).
//! Its receiver re-plans each job with the calendar as stored then
//! ([`App::replan_queued`](crate::app::App::replan_queued)): idempotent, so a message delivered
//! twice writes nothing the second time; a job whose re-plan fails makes the message come back
//! after the queue's backoff, the jobs already re-planned being left alone.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Engine, EngineError};
use crate::app::{AppError, ReplanOrder, REPLAN_BATCH};
use sundial_ports::events::EventPublisher;
use sundial_ports::http::HttpClient;
use sundial_ports::queue::Queue;
use sundial_ports::store::Store;

/// A notify-queue message: re-plan `jobs` with the calendar `replanCalendar` as stored when the
/// message is taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplanMessage {
    /// The calendar that changed.
    pub replan_calendar: String,
    /// Who changed it.
    pub actor: String,
    /// The reason the change gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The jobs to re-plan (at most [`REPLAN_BATCH`]).
    pub jobs: Vec<String>,
}

impl ReplanMessage {
    /// The message in `body`, if it is one (a notification is not: it has no `replanCalendar`).
    pub fn from_body(body: &str) -> Option<ReplanMessage> {
        serde_json::from_str(body).ok()
    }

    /// The messages of `order`: one per [`REPLAN_BATCH`] jobs.
    pub fn of_order(order: &ReplanOrder) -> Vec<ReplanMessage> {
        order
            .jobs
            .chunks(REPLAN_BATCH)
            .map(|jobs| ReplanMessage {
                replan_calendar: order.calendar.clone(),
                actor: order.actor.clone(),
                reason: order.reason.clone(),
                jobs: jobs.to_vec(),
            })
            .collect()
    }

    fn order(&self) -> ReplanOrder {
        ReplanOrder {
            calendar: self.replan_calendar.clone(),
            actor: self.actor.clone(),
            reason: self.reason.clone(),
            jobs: self.jobs.clone(),
        }
    }
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Sends the re-plan messages of `order` on the notify queue.
    pub(super) async fn send_replans(&self, order: &ReplanOrder) -> Result<(), AppError> {
        let messages = ReplanMessage::of_order(order)
            .iter()
            .map(|message| {
                serde_json::to_string(message)
                    .map(|body| (body, Duration::ZERO))
                    .map_err(|e| AppError::Unavailable(format!("encoding a re-plan message: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.notify_queue
            .send_batch(&messages)
            .await
            .map_err(|e| AppError::Unavailable(format!("queueing the re-plans: {e}")))?;
        self.sent.notify_waiters();
        Ok(())
    }

    /// Takes one re-plan message (a body [`ReplanMessage::from_body`] reads).
    pub(super) async fn replan(&self, body: &str) -> Result<(), EngineError> {
        let message: ReplanMessage = serde_json::from_str(body)
            .map_err(|e| AppError::corrupt("the body is not a re-plan message", e))?;
        let replanned = self.app.replan_queued(&message.order()).await?;
        tracing::info!(
            calendar = %message.replan_calendar,
            jobs = message.jobs.len(),
            replanned,
            "re-plan message taken"
        );
        Ok(())
    }
}
