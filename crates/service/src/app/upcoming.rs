//! The upcoming timeline: the coming fires of many jobs in time order (the console's Upcoming
//! page). The merge itself is pure ([`sundial_core::upcoming::timeline`]); this reads the jobs.
//!
//! Bounded for large fleets in two ways, each reported so a page can say what it leaves out:
//! at most [`UPCOMING_JOBS`] jobs are read, those firing soonest (the store's `nextFire` order),
//! and the timeline then stops at the next fire of the first job not read, so what it lists is
//! still every fire before that time; and at most [`UPCOMING_FIRES`] fires are computed.

use chrono::{DateTime, Utc};
use sundial_core::job::Job;
use sundial_core::upcoming::{self, Timeline};

use super::{App, AppError};
use crate::records::job_wakeup_key;
use sundial_ports::store::{JobFilter, JobOrder, PageRequest, Store};

/// The most jobs one timeline reads.
pub const UPCOMING_JOBS: usize = 250;

/// The most fires one timeline computes.
pub const UPCOMING_FIRES: usize = 20_000;

/// The coming fires of the jobs matching a filter ([`App::upcoming`]).
#[derive(Clone, Debug)]
pub struct Upcoming {
    /// When the timeline was computed.
    pub now: DateTime<Utc>,
    /// The end of the span asked for.
    pub until: DateTime<Utc>,
    /// The jobs read; [`Timeline`] fires name them by index.
    pub jobs: Vec<Job>,
    /// Their fires, soonest first, complete until `timeline.complete_until`.
    pub timeline: Timeline,
    /// Why the timeline stops before `until`, if it does.
    pub cut: Option<UpcomingCut>,
}

/// Why an [`Upcoming`] timeline stops before the end of its span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpcomingCut {
    /// More jobs match than [`UPCOMING_JOBS`]: those firing soonest were read, and the timeline
    /// stops where the first job left out fires.
    Jobs,
    /// The jobs fire more than [`UPCOMING_FIRES`] times in the span.
    Fires,
    /// More jobs match than [`UPCOMING_JOBS`] and the store cannot list them by next fire
    /// without a scan: the timeline holds only the first jobs by id.
    JobsById,
}

impl<S: Store> App<S> {
    /// The fires of the jobs matching `filter` from now until `span` later, soonest first.
    pub async fn upcoming(
        &self,
        filter: &JobFilter,
        span: chrono::Duration,
    ) -> Result<Upcoming, AppError> {
        let now = self.now();
        let mut until = now + span;
        let first = PageRequest::first(UPCOMING_JOBS);
        let (page, by_next_fire) = match self.list_jobs(filter, JobOrder::NextFire, &first).await {
            Ok(page) => (page, true),
            // The store refuses the order (DynamoDB): the first jobs by id, and say so.
            Err(AppError::Invalid(refused)) if refused.path == "sort" => {
                (self.list_jobs(filter, JobOrder::Id, &first).await?, false)
            }
            Err(e) => return Err(e),
        };
        let mut cut = None;
        if let Some(cursor) = page.next_cursor.clone() {
            if by_next_fire {
                let next = PageRequest {
                    limit: 1,
                    cursor: Some(cursor),
                };
                // The order is by wake-up, which is due at or before a job's next fire: every
                // job left out fires no sooner than the first one's wake-up.
                let left_out = self.list_jobs(filter, JobOrder::NextFire, &next).await?;
                if let Some(job) = left_out.items.first() {
                    let key = job_wakeup_key(job.definition.job_id());
                    if let Some(due) = self.store.get_wakeup(&key).await? {
                        let bound = due.max(now);
                        if bound < until {
                            until = bound;
                            cut = Some(UpcomingCut::Jobs);
                        }
                    }
                }
            } else {
                cut = Some(UpcomingCut::JobsById);
            }
        }
        let timeline = upcoming::timeline(&page.items, now, until, UPCOMING_FIRES);
        if timeline.cut_by_budget {
            cut = Some(UpcomingCut::Fires);
        }
        Ok(Upcoming {
            now,
            until: now + span,
            jobs: page.items,
            timeline,
            cut,
        })
    }
}
