//! `GET /jobs/{jobId}/occurrences?from&to`: the non-run ledger, every nominal time of a job's
//! schedule in a range with what became of it ([`sundial_service::app::Occurrences`]). This module only
//! reads the range and shapes the answer.

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use sundial_core::ledger::{Fate, FireRange, RangeReason};
use utoipa::{IntoParams, ToSchema};

use super::extract::{Params, PathParams};
use super::schema::{ErrorEnvelope, JobPath};
use super::{ApiError, ApiResult, AppState};
use sundial_ports::store::Store;
use sundial_service::app::parse_job_id;

/// The range of `GET /jobs/{jobId}/occurrences`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub(super) struct RangeQuery {
    /// The range's start, inclusive (RFC 3339).
    #[param(example = "2026-11-21T00:00:00Z", format = DateTime)]
    from: String,
    /// The range's end, exclusive (RFC 3339): after `from`, and the range may hold at most
    /// 10,000 nominal times.
    #[param(example = "2026-11-21T01:00:00Z", format = DateTime)]
    to: String,
}

/// One nominal time and what became of it.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Occurrence {
    /// The nominal time (before jitter).
    #[schema(format = DateTime)]
    pub time: String,
    /// `ran` (a run of it exists: `executionId`, `state`), `skipped` by the overlap policy
    /// (`heldBy`: the runs that held the slot), `dropped` from a full buffer, `missed` the
    /// catch-up window or left out by the catch-up policy, `paused` (`notes` of the pause in
    /// force), `debugMode` (due while debug mode stopped automatic runs), `dstGap` (at a DST
    /// gap's transition: `wallTime`s of the schedule that did not exist, and what `policy` did
    /// with them), `calendar` (a named calendar removed the time: `calendar`, and `rule`
    /// `exclude` or `onlyOn`), `beforeCreated`,
    /// `ended` (remainingActions spent, or the job deleted), `notYet` (after now, or not planned
    /// yet), `noRecord` (nothing stored: its run was removed by retention).
    #[schema(
        pattern = "^(ran|skipped|dropped|missed|paused|debugMode|dstGap|calendar|beforeCreated|ended|notYet|noRecord)$"
    )]
    pub status: &'static str,
    /// The run of this time (`ran`, `skipped`; `dropped` and `missed` when it reached the gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
    /// The run's state now (`ran`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The runs that held the slot (`skipped`), comma-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
    /// The notes of the pause in force (`paused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// When that pause began (`paused`): the time of its entry in the job's history.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub paused_at: Option<String>,
    /// The first wall-clock time of the schedule the gap took, in the job's zone (`dstGap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "2026-03-08T02:30:00")]
    pub wall_time: Option<String>,
    /// How many of the schedule's wall-clock times the gap took (`dstGap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// The `dst.gap` policy that decided (`dstGap`): `skip` (they did not fire), `shift`
    /// (moved by the gap's length), `transition` (moved to the gap's end).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(skip|shift|transition)$")]
    pub policy: Option<&'static str>,
    /// Where the first of them fired instead (`dstGap` under `shift` or `transition`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub moved_to: Option<String>,
    /// The calendar that removed the time (`calendar`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calendar: Option<String>,
    /// How it removed it (`calendar`): `exclude` or `onlyOn`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^(exclude|onlyOn)$")]
    pub rule: Option<&'static str>,
}

/// A range of consecutive nominal times that did not run for one reason.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NonRunRange {
    /// `missed`, `dropped` or `debugMode` (due while debug mode stopped automatic runs).
    #[schema(pattern = "^(missed|dropped|debugMode)$")]
    pub kind: &'static str,
    /// The first time.
    #[schema(format = DateTime)]
    pub from: String,
    /// The last time.
    #[schema(format = DateTime)]
    pub to: String,
    /// How many times it holds.
    pub count: u64,
}

/// `GET /jobs/{jobId}/occurrences`.
#[derive(ToSchema, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct OccurrencesBody {
    /// The job.
    pub job_id: String,
    /// The range's start.
    #[schema(format = DateTime)]
    pub from: String,
    /// The range's end (exclusive).
    #[schema(format = DateTime)]
    pub to: String,
    /// How many nominal times the range holds.
    pub count: usize,
    /// Every nominal time of the range, oldest first.
    pub occurrences: Vec<Occurrence>,
    /// The missed, dropped and debug-mode ranges the job keeps (its newest 100) that meet the
    /// range.
    pub ranges: Vec<NonRunRange>,
}

fn json_time(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn time_param(params: &Params, name: &str) -> Result<DateTime<Utc>, ApiError> {
    let text = params
        .0
        .get(name)
        .ok_or_else(|| ApiError::invalid(name, "is required (an RFC 3339 time)"))?;
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| ApiError::invalid(name, format!("{text:?} is not an RFC 3339 time: {e}")))
}

fn kind(reason: RangeReason) -> &'static str {
    match reason {
        RangeReason::Missed => "missed",
        RangeReason::Dropped => "dropped",
        RangeReason::DebugMode => "debugMode",
        RangeReason::Paused => "paused",
    }
}

fn occurrence(time: DateTime<Utc>, fate: Fate) -> Occurrence {
    let mut o = Occurrence {
        time: json_time(time),
        status: fate.status(),
        execution_id: None,
        state: None,
        held_by: None,
        notes: None,
        paused_at: None,
        wall_time: None,
        count: None,
        policy: None,
        moved_to: None,
        calendar: None,
        rule: None,
    };
    match fate {
        Fate::Ran {
            execution_id,
            state,
        } => {
            o.execution_id = Some(execution_id);
            o.state = Some(state);
        }
        Fate::Skipped {
            execution_id,
            held_by,
        } => {
            o.execution_id = Some(execution_id);
            o.held_by = held_by;
        }
        Fate::Missed { execution_id } | Fate::Dropped { execution_id } => {
            o.execution_id = execution_id;
        }
        Fate::Paused { notes, since } => {
            o.notes = notes;
            o.paused_at = Some(json_time(since));
        }
        Fate::DstGap(gap) => {
            o.wall_time = Some(gap.wall_time.format("%Y-%m-%dT%H:%M:%S").to_string());
            o.count = Some(gap.count);
            o.policy = Some(gap.policy);
            o.moved_to = gap.moved_to.map(json_time);
        }
        Fate::Calendar { calendar, rule } => {
            o.calendar = Some(calendar);
            o.rule = Some(rule);
        }
        Fate::NotYetCreated | Fate::Ended | Fate::DebugMode | Fate::Ahead | Fate::NoRecord => {}
    }
    o
}

fn range(r: &FireRange) -> NonRunRange {
    NonRunRange {
        kind: kind(r.reason),
        from: json_time(r.first),
        to: json_time(r.last),
        count: r.count,
    }
}

/// Every nominal time of the job's schedule in `[from, to)` with what became of it: computed
/// from the definition and pauses in force at each time (the job's audit trail), its runs read
/// by id, and the missed and dropped ranges kept on the job.
#[utoipa::path(
    get,
    path = "/jobs/{jobId}/occurrences",
    tag = "executions",
    params(JobPath, RangeQuery),
    responses(
        (status = 200, description = "What became of each nominal time of the range.", body = OccurrencesBody,
            example = json!({"jobId": "daily-report", "from": "2026-11-21T00:00:00Z", "to": "2026-11-21T00:05:00Z", "count": 5,
                "occurrences": [
                    {"time": "2026-11-21T00:00:00Z", "status": "beforeCreated"},
                    {"time": "2026-11-21T00:01:00Z", "status": "ran", "executionId": "daily-report~20261121T000100Z", "state": "Succeeded"},
                    {"time": "2026-11-21T00:02:00Z", "status": "skipped", "executionId": "daily-report~20261121T000200Z", "heldBy": "daily-report~20261121T000100Z"},
                    {"time": "2026-11-21T00:03:00Z", "status": "paused", "notes": "deploy"},
                    {"time": "2026-11-21T00:04:00Z", "status": "missed"}],
                "ranges": [{"kind": "missed", "from": "2026-11-21T00:04:00Z", "to": "2026-11-21T00:04:00Z", "count": 1}]})),
        (status = 400, description = "`from` or `to` is missing or malformed, `to` is not after `from`, or the range holds more than 10,000 nominal times (the message says how many).", body = ErrorEnvelope),
        (status = 404, description = "No such job.", body = ErrorEnvelope),
        (status = 503, description = "The store failed; retry.", body = ErrorEnvelope),
    )
)]
pub(super) async fn job_occurrences<S: Store>(
    State(app): AppState<S>,
    PathParams(job_id): PathParams<String>,
    params: Params,
) -> ApiResult {
    let params = params.only(&["from", "to"])?;
    let from = time_param(&params, "from")?;
    let to = time_param(&params, "to")?;
    let job_id = parse_job_id(&job_id)?;
    let ledger = app.occurrences(&job_id, from, to).await?;
    Ok(Json(OccurrencesBody {
        job_id: job_id.to_string(),
        from: json_time(from),
        to: json_time(to),
        count: ledger
            .entries
            .iter()
            .filter(|(_, fate)| !matches!(fate, Fate::DstGap(_) | Fate::Calendar { .. }))
            .count(),
        occurrences: ledger
            .entries
            .into_iter()
            .map(|(time, fate)| occurrence(time, fate))
            .collect(),
        ranges: ledger.ranges.iter().map(range).collect(),
    })
    .into_response())
}
