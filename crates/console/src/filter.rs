//! The jobs list's filters under one set of names: read from the list's query string and from
//! the bulk form, written back into the list's links and into the bulk pages' hidden fields, so
//! that the list, its next page and "all jobs matching this filter" select the same jobs.
//!
//! A filter is checked by [`job_filter`], the use case `GET /jobs` checks its own with: a label
//! that is not `key:value` or an `idPrefix` no id could start with is a 400 naming the field.

use sundial_core::job::LabelSelector;
use sundial_ports::store::JobFilter;
use sundial_service::app::job_filter;
use sundial_service::AppError;

use crate::PageError;

/// The value of the first field `name` of a form or query, trimmed; `None` when absent or blank.
pub(crate) fn field(pairs: &[(String, String)], name: &str) -> Option<String> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The filter of a query or form: `state`, `creator`, `service`, `parent`, `idPrefix`, and
/// `label` (`key:value`, repeatable: every one must match). An unknown state reads as any (a
/// shared link from an older console still opens).
pub(crate) fn filter_of(pairs: &[(String, String)]) -> Result<JobFilter, PageError> {
    let labels = pairs
        .iter()
        .filter(|(k, v)| k == "label" && !v.trim().is_empty())
        .map(|(_, v)| LabelSelector::parse("label", v.trim()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(AppError::from)?;
    let state = field(pairs, "state").filter(|s| s == "active" || s == "paused");
    Ok(job_filter(
        state,
        field(pairs, "creator"),
        field(pairs, "parent"),
        field(pairs, "service"),
        field(pairs, "idPrefix"),
        labels,
    )?)
}

/// `filter` as the pairs [`filter_of`] reads back.
pub(crate) fn filter_pairs(filter: &JobFilter) -> Vec<(&'static str, String)> {
    let mut pairs: Vec<(&'static str, String)> = [
        ("state", &filter.state),
        ("creator", &filter.creator),
        ("service", &filter.service),
        ("parent", &filter.parent_job),
        ("idPrefix", &filter.id_prefix),
    ]
    .into_iter()
    .filter_map(|(name, value)| Some((name, value.clone()?)))
    .collect();
    pairs.extend(
        filter
            .labels
            .iter()
            .map(|l| ("label", format!("{}:{}", l.key, l.value))),
    );
    pairs
}
