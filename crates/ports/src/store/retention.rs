//! The retention rule of `clean` (docs/api.md, "Retention"), once for every adapter that applies it
//! in code and for both kinds it applies to (executions, audit entries): per job id, the newest
//! `retain` items stay, whether or not the job still exists; when purging, a deleted job keeps none.

use std::collections::BTreeMap;

/// What the rule removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastRetention<T> {
    /// The items removed, with their job id.
    pub removed: Vec<(String, T)>,
    /// Deleted jobs that had items removed by the purge.
    pub purged_jobs: u64,
}

/// The items of `by_job` past retention. Items order newest last (`T`'s order: an execute
/// number, an entry id); `exists` says whether a job still exists.
pub fn past_retention<T: Ord>(
    by_job: BTreeMap<String, Vec<T>>,
    exists: impl Fn(&str) -> bool,
    retain: usize,
    purge_deleted_jobs: bool,
) -> PastRetention<T> {
    let mut past = PastRetention {
        removed: Vec::new(),
        purged_jobs: 0,
    };
    for (job_id, mut items) in by_job {
        let purged = purge_deleted_jobs && !exists(&job_id);
        items.sort_by(|a, b| b.cmp(a));
        let removed: Vec<T> = items
            .into_iter()
            .skip(if purged { 0 } else { retain })
            .collect();
        if purged && !removed.is_empty() {
            past.purged_jobs += 1;
        }
        past.removed
            .extend(removed.into_iter().map(|item| (job_id.clone(), item)));
    }
    past
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_stay_and_a_purged_job_keeps_none() {
        let by_job = BTreeMap::from([
            ("live".to_owned(), vec![1, 3, 2]),
            ("gone".to_owned(), vec![5, 4]),
        ]);
        let past = past_retention(by_job.clone(), |id| id == "live", 1, false);
        assert_eq!(
            past.removed,
            [
                ("gone".to_owned(), 4),
                ("live".to_owned(), 2),
                ("live".to_owned(), 1)
            ]
        );
        assert_eq!(past.purged_jobs, 0);
        let past = past_retention(by_job, |id| id == "live", 2, true);
        assert_eq!(
            past.removed,
            [
                ("gone".to_owned(), 5),
                ("gone".to_owned(), 4),
                ("live".to_owned(), 1)
            ]
        );
        assert_eq!(past.purged_jobs, 1);
    }
}
