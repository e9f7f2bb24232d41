//! Paces a backfill by this process's dispatch tasks still working on its job.
//!
//! The backfill window ([`plan::BACKFILL_WINDOW`]) counts runs that have not ended, as the job
//! records them. A run leaves the window with the write of its end, but its dispatch task goes on
//! a while after that: its follow-up, notifications and acknowledgement queue behind the store's
//! writer like everything else. Were the window refilled at once, those finished-but-not-done
//! tasks would pile up to the runner's concurrency limit (a thousand of them, 140 MB in the
//! 100,000-run backfill of docs/performance.md) rather than to the window. So a planning of a
//! job's backfill that finds more than [`LOW_WATER`] of the job's tasks still alive here is owed
//! instead of done, and done by whichever of those tasks ends last enough to bring them down to
//! it. The tick's planning is not paced: it adds at most a window a second, which is what keeps a
//! backfill going if the task owing its planning dies.
//!
//! Counts are per process: across Lambda invocations each has its own, and the window still
//! bounds what is planned.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use sundial_core::plan;

/// How many of a job's dispatch tasks may still be alive in this process for its backfill to be
/// planned further: half a window, so that with a window's runs planned on top the tasks stay
/// under one and a half windows.
pub(super) const LOW_WATER: usize = plan::BACKFILL_WINDOW / 2;

/// Dispatch tasks alive per job, and whether a planning of the job's backfill waits for them.
#[derive(Default)]
pub(super) struct JobTasks {
    jobs: Mutex<HashMap<String, Alive>>,
}

#[derive(Default)]
struct Alive {
    tasks: usize,
    planning_owed: bool,
}

/// One dispatch task of a job, counted from [`JobTasks::start`] until [`TaskCount::end`] or drop
/// (a task cut short by shutdown still stops counting).
pub(super) struct TaskCount<'a> {
    tasks: &'a JobTasks,
    job_id: String,
    counted: bool,
}

/// A plain lock whose holder cannot panic mid-update, so a poisoned one is still consistent.
fn lock<V>(mutex: &Mutex<V>) -> MutexGuard<'_, V> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl JobTasks {
    /// Counts a dispatch task of `job_id` until the returned count ends.
    pub(super) fn start(&self, job_id: &str) -> TaskCount<'_> {
        lock(&self.jobs)
            .entry(job_id.to_string())
            .or_default()
            .tasks += 1;
        TaskCount {
            tasks: self,
            job_id: job_id.to_string(),
            counted: true,
        }
    }

    /// Whether a planning of `job_id`'s backfill may run now; when not, it is owed to the last
    /// of the job's tasks that brings them down to [`LOW_WATER`].
    pub(super) fn may_plan_now(&self, job_id: &str) -> bool {
        let mut jobs = lock(&self.jobs);
        match jobs.get_mut(job_id) {
            Some(alive) if alive.tasks > LOW_WATER => {
                alive.planning_owed = true;
                false
            }
            _ => true,
        }
    }

    fn stop_counting(&self, job_id: &str) -> bool {
        let mut jobs = lock(&self.jobs);
        let Some(alive) = jobs.get_mut(job_id) else {
            return false;
        };
        alive.tasks = alive.tasks.saturating_sub(1);
        let owed = alive.planning_owed && alive.tasks <= LOW_WATER;
        if owed {
            alive.planning_owed = false;
        }
        if alive.tasks == 0 && !alive.planning_owed {
            jobs.remove(job_id);
        }
        owed
    }
}

impl TaskCount<'_> {
    /// Stops counting this task; answers whether the job's backfill planning is now owed by it.
    pub(super) fn end(mut self) -> bool {
        self.counted = false;
        self.tasks.stop_counting(&self.job_id)
    }
}

impl Drop for TaskCount<'_> {
    fn drop(&mut self) {
        if self.counted {
            // Whoever ends next pays what this one owed, or the tick does.
            let owed = self.tasks.stop_counting(&self.job_id);
            if owed {
                lock(&self.tasks.jobs)
                    .entry(self.job_id.clone())
                    .or_default()
                    .planning_owed = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planning_waits_for_the_tasks_above_the_low_water_mark() {
        let tasks = JobTasks::default();
        let counts: Vec<_> = (0..LOW_WATER + 2).map(|_| tasks.start("j")).collect();
        assert!(!tasks.may_plan_now("j"), "too many tasks alive: owed");
        assert!(tasks.may_plan_now("other"), "another job is not held up");
        let mut owed_by = Vec::new();
        for (i, count) in counts.into_iter().enumerate() {
            if count.end() {
                owed_by.push(i);
            }
        }
        assert_eq!(
            owed_by,
            vec![1],
            "the task that brings them to the mark plans, once"
        );
        assert!(tasks.may_plan_now("j"));
        assert!(lock(&tasks.jobs).is_empty(), "nothing left behind");
    }

    #[test]
    fn a_task_cut_short_leaves_its_planning_owed() {
        let tasks = JobTasks::default();
        let counts: Vec<_> = (0..=LOW_WATER).map(|_| tasks.start("j")).collect();
        let last = tasks.start("j");
        assert!(!tasks.may_plan_now("j"));
        drop(last);
        drop(counts);
        assert!(
            lock(&tasks.jobs)["j"].planning_owed,
            "kept for the next task"
        );
        assert!(tasks.start("j").end(), "the next task to end plans");
    }
}
