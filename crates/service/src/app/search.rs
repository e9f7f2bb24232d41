//! Searching executions across jobs (`GET /executions`, `sundial execution list`, the console's
//! Executions page): the filters as given, checked into an [`ExecutionQuery`], and the search.
//!
//! Every inbound adapter hands the filters over as text, so one function checks them and a bad
//! one is a 400 naming it: `state` (comma-separated execution states), `jobId`, `label`
//! (`key:value`, repeatable, all must match), `creator`, `source` (`schedule`, `trigger`,
//! `backfill`, `parent`), and the time ranges `since`/`until` (scheduled time) and
//! `endedSince`/`endedUntil` (end), each an RFC 3339 time or a duration back from now (`24h`,
//! `P7D`); `since` is inclusive, `until` exclusive.

use chrono::{DateTime, Utc};
use sundial_core::duration::Duration;
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::job::{JobId, LabelSelector};
use sundial_ports::store::{ExecutionQuery, Page, PageRequest, SourceFilter, Store, TimeRange};

use super::executions::decode_page;
use super::{field_error, App, AppError};

/// The filters of a search as given, before they are checked: see the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchFilters {
    /// `state`: execution states, comma-separated (`Failed,Terminated`).
    pub state: Option<String>,
    /// `jobId`.
    pub job_id: Option<String>,
    /// Every `label`, as `key:value`.
    pub labels: Vec<String>,
    /// `creator`.
    pub creator: Option<String>,
    /// `source`.
    pub source: Option<String>,
    /// `since`: scheduled at or after.
    pub since: Option<String>,
    /// `until`: scheduled before.
    pub until: Option<String>,
    /// `endedSince`: ended at or after.
    pub ended_since: Option<String>,
    /// `endedUntil`: ended before.
    pub ended_until: Option<String>,
}

impl SearchFilters {
    /// The checked query, relative times counted back from `now`; an error names the field.
    pub fn query(&self, now: DateTime<Utc>) -> Result<ExecutionQuery, AppError> {
        fn given(value: &Option<String>) -> Option<&str> {
            value.as_deref().filter(|v| !v.is_empty())
        }
        let mut states = Vec::new();
        if let Some(text) = given(&self.state) {
            for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let state = ExecutionState::parse(name).ok_or_else(|| {
                    let all: Vec<&str> = ExecutionState::ALL.iter().map(|s| s.name()).collect();
                    field_error(
                        "state",
                        format!("expected one of {}, got {name:?}", all.join(", ")),
                    )
                })?;
                if !states.iter().any(|s: &String| s == state.name()) {
                    states.push(state.name().to_owned());
                }
            }
        }
        let job_id = given(&self.job_id)
            .map(|id| {
                JobId::parse(id)
                    .map(|id| id.as_str().to_owned())
                    .map_err(|e| field_error("jobId", e.message))
            })
            .transpose()?;
        let labels = self
            .labels
            .iter()
            .filter(|l| !l.is_empty())
            .map(|text| LabelSelector::parse("label", text).map_err(AppError::from))
            .collect::<Result<Vec<_>, _>>()?;
        let source = given(&self.source)
            .map(|name| {
                SourceFilter::parse(name).ok_or_else(|| {
                    field_error(
                        "source",
                        format!("expected schedule, trigger, backfill or parent, got {name:?}"),
                    )
                })
            })
            .transpose()?;
        let time = |value: &Option<String>, field: &str| {
            given(value)
                .map(|text| time_param(text, now, field))
                .transpose()
        };
        let scheduled = range(
            time(&self.since, "since")?,
            time(&self.until, "until")?,
            "until",
        )?;
        let ended = range(
            time(&self.ended_since, "endedSince")?,
            time(&self.ended_until, "endedUntil")?,
            "endedUntil",
        )?;
        Ok(ExecutionQuery {
            states,
            job_id,
            labels,
            creator: given(&self.creator).map(str::to_owned),
            source,
            scheduled,
            ended,
        })
    }
}

/// An RFC 3339 time, or a duration (`24h`, `P7D`) meaning that long before `now`.
fn time_param(text: &str, now: DateTime<Utc>, field: &str) -> Result<DateTime<Utc>, AppError> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let ago = Duration::parse(text).map_err(|_| {
        field_error(
            field,
            format!(
                "expected an RFC 3339 time or a duration back from now (24h, P7D), got {text:?}"
            ),
        )
    })?;
    let millis = i64::try_from(ago.as_millis()).unwrap_or(i64::MAX);
    now.checked_sub_signed(chrono::Duration::milliseconds(millis))
        .ok_or_else(|| field_error(field, format!("{text:?} reaches before any time")))
}

fn range(
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    field: &str,
) -> Result<TimeRange, AppError> {
    if let (Some(since), Some(until)) = (since, until) {
        if until <= since {
            return Err(field_error(field, "must be after the range's start"));
        }
    }
    Ok(TimeRange { since, until })
}

impl<S: Store> App<S> {
    /// Executions of every job matching `filters`, newest scheduled first (`GET /executions`).
    /// A page may be short, even empty, and still have a cursor (DynamoDB filters what it read).
    pub async fn search_executions(
        &self,
        filters: &SearchFilters,
        page: &PageRequest,
    ) -> Result<Page<Execution>, AppError> {
        let query = filters.query(self.now())?;
        let records = self.store.search_executions(&query, page).await?;
        decode_page(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2024-06-02T00:00:00Z".parse().unwrap()
    }

    fn field_of(filters: SearchFilters) -> String {
        match filters.query(now()) {
            Err(AppError::Invalid(e)) => e.path,
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn filters_become_a_query() {
        let query = SearchFilters {
            state: Some("Failed, Terminated,Failed".into()),
            job_id: Some("nightly".into()),
            labels: vec!["team:payments".into()],
            source: Some("backfill".into()),
            since: Some("24h".into()),
            until: Some("2024-06-01T12:00:00+02:00".into()),
            ended_since: Some("P7D".into()),
            ..SearchFilters::default()
        }
        .query(now())
        .unwrap();
        assert_eq!(query.states, ["Failed", "Terminated"]);
        assert_eq!(query.job_id.as_deref(), Some("nightly"));
        assert_eq!(query.labels[0].value, "payments");
        assert_eq!(query.source, Some(SourceFilter::Backfill));
        assert_eq!(
            query.scheduled.since,
            Some("2024-06-01T00:00:00Z".parse().unwrap())
        );
        assert_eq!(
            query.scheduled.until,
            Some("2024-06-01T10:00:00Z".parse().unwrap())
        );
        assert_eq!(
            query.ended.since,
            Some("2024-05-26T00:00:00Z".parse().unwrap())
        );
        assert_eq!(
            SearchFilters::default().query(now()).unwrap(),
            ExecutionQuery::default()
        );
    }

    #[test]
    fn a_bad_filter_names_its_field() {
        let f = SearchFilters::default;
        assert_eq!(
            field_of(SearchFilters {
                state: Some("Broken".into()),
                ..f()
            }),
            "state"
        );
        assert_eq!(
            field_of(SearchFilters {
                job_id: Some("a b".into()),
                ..f()
            }),
            "jobId"
        );
        assert_eq!(
            field_of(SearchFilters {
                labels: vec!["nocolon".into()],
                ..f()
            }),
            "label"
        );
        assert_eq!(
            field_of(SearchFilters {
                source: Some("cron".into()),
                ..f()
            }),
            "source"
        );
        assert_eq!(
            field_of(SearchFilters {
                since: Some("yesterday".into()),
                ..f()
            }),
            "since"
        );
        assert_eq!(
            field_of(SearchFilters {
                ended_until: Some("x".into()),
                ..f()
            }),
            "endedUntil"
        );
        assert_eq!(
            field_of(SearchFilters {
                since: Some("1h".into()),
                until: Some("2h".into()),
                ..f()
            }),
            "until"
        );
    }
}
