//! What a job listing selects by besides its indexed columns: labels and an id prefix.
//!
//! A job's labels live in its document (`definition.labels`, as written); [`JobRecord::labels`]
//! reads them there, so every adapter indexes the same thing and no record type grows a field.
//! Adapters keep an index from `key=value` to job ids beside the job, written with it (SQLite:
//! table `job_labels`; DynamoDB: one index item per label in the job's item collection), and
//! [`JobFilter::matches`] is the one definition of what a filter selects, which adapters that
//! narrow by an index apply to what the index returned.

use std::collections::BTreeMap;

pub use sundial_core::job::LabelSelector;
use sundial_core::job::Labels;

use super::{JobFilter, JobRecord};

impl JobRecord {
    /// The job's labels, from `document.definition.labels`; none when absent.
    pub fn labels(&self) -> BTreeMap<String, String> {
        self.document
            .get("definition")
            .map(Labels::of_written)
            .unwrap_or_default()
    }
}

impl JobFilter {
    /// Whether `job` matches every filter given.
    pub fn matches(&self, job: &JobRecord) -> bool {
        let same = |want: &Option<String>, have: Option<&String>| {
            want.as_ref().is_none_or(|want| have == Some(want))
        };
        same(&self.state, Some(&job.state))
            && same(&self.creator, Some(&job.creator))
            && same(&self.parent_job, job.parent_job.as_ref())
            && same(&self.service, job.service.as_ref())
            && self
                .id_prefix
                .as_ref()
                .is_none_or(|prefix| job.job_id.starts_with(prefix.as_str()))
            && (self.labels.is_empty() || {
                let labels = job.labels();
                self.labels
                    .iter()
                    .all(|s| labels.get(&s.key) == Some(&s.value))
            })
    }
}

/// The smallest id after every id starting with `prefix` (job ids are ASCII, so a byte past
/// `~` bounds them): `prefix <= id < id_prefix_end(prefix)` is a range on an id index.
pub fn id_prefix_end(prefix: &str) -> String {
    format!("{prefix}\u{7f}")
}
