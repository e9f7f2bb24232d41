//! Bulk actions by query, with a reason (`POST /bulk/jobs/pause`, `/unpause`, …): pause, unpause, trigger,
//! delete or backfill every job a filter (or an explicit id list) selects.
//!
//! Each job's action is the single-job use case (`set_active`, `trigger`, `delete_job`,
//! `backfill`), so it is atomic per job and no rule exists twice; a job that fails (gone, in a
//! state the action refuses, busy) is an outcome of the answer, not a failure of the request. A
//! request acts on at most [`MAX_BULK_JOBS`] jobs, read from the store in pages of
//! [`READ_PAGE`] by id; when more match, the answer carries the store's cursor after the last job
//! acted on, which the client passes back as `cursor` to go on. Selecting by labels reads the
//! label index (see [`sundial_ports::store::labels`]), never a scan.
//!
//! Every change carries who asked (`actor`) and why (`reason`) down to each job's action: the
//! audit trail records them as `bulk:{action}`.

use serde_json::{Map, Value};
use sundial_core::backfill::BackfillRequest;
use sundial_core::job::{JobId, LabelSelector, PauseEnd};
use sundial_core::trigger::TriggerOptions;

use super::{field_error, job_filter, Actor, App, AppError, BackfillReport, ChangeBy};
use sundial_ports::store::{JobFilter, JobOrder, PageRequest, Store};

/// The most jobs one bulk request acts on; beyond, the answer's cursor goes on.
pub const MAX_BULK_JOBS: usize = 1000;

/// How many jobs are read from the store at a time.
const READ_PAGE: usize = 100;

/// How many jobs are acted on at once. Different jobs never conflict; the store's own limits
/// (DynamoDB capacity, SQLite's one writer) bound the gain.
const CONCURRENCY: usize = 16;

/// Longest `reason`, in bytes.
const MAX_REASON_BYTES: usize = 4096;

/// What a bulk request does to each job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BulkAction {
    /// `POST /jobs/{jobId}/pause`.
    Pause,
    /// `POST /jobs/{jobId}/unpause`.
    Unpause,
    /// `POST /jobs/{jobId}/trigger`.
    Trigger,
    /// `DELETE /jobs/{jobId}`.
    Delete,
    /// `POST /jobs/{jobId}/backfill`.
    Backfill,
}

impl BulkAction {
    /// Every action, as the path names them.
    pub const ALL: [BulkAction; 5] = [
        BulkAction::Pause,
        BulkAction::Unpause,
        BulkAction::Trigger,
        BulkAction::Delete,
        BulkAction::Backfill,
    ];

    /// The path segment (`pause`).
    pub fn name(self) -> &'static str {
        match self {
            BulkAction::Pause => "pause",
            BulkAction::Unpause => "unpause",
            BulkAction::Trigger => "trigger",
            BulkAction::Delete => "delete",
            BulkAction::Backfill => "backfill",
        }
    }

    /// The action named `name`.
    pub fn parse(name: &str) -> Option<BulkAction> {
        BulkAction::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The audit trail's action: `bulk:pause`.
    pub fn audit_name(self) -> String {
        format!("bulk:{}", self.name())
    }

    /// The body fields of this action's parameters.
    fn parameters(self) -> &'static [&'static str] {
        match self {
            BulkAction::Pause => &["notes", "until"],
            BulkAction::Unpause => &["notes"],
            BulkAction::Trigger => &["arguments", "idempotencyKey"],
            BulkAction::Delete => &[],
            BulkAction::Backfill => &["backfill"],
        }
    }
}

/// Which jobs a bulk request acts on.
#[derive(Clone, Debug, PartialEq)]
pub enum BulkSelection {
    /// The jobs the list filters select, by id, from `cursor` on.
    Filter {
        /// The filters, as `GET /jobs` takes them.
        filter: JobFilter,
        /// Where the previous request of the same bulk action stopped.
        cursor: Option<String>,
    },
    /// These jobs, in this order (duplicates dropped).
    Ids(Vec<JobId>),
}

/// A bulk request, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct BulkRequest {
    /// What to do.
    pub action: BulkAction,
    /// To which jobs.
    pub selection: BulkSelection,
    /// Why: required, recorded with every change.
    pub reason: String,
    /// Who asked, recorded with every change.
    pub actor: Actor,
    /// Only list what would be acted on.
    pub dry_run: bool,
    /// Pause and unpause notes (default: the reason).
    pub notes: Option<String>,
    /// When a bulk pause ends by itself ([`App::pause_by`]); a duration counts from the request,
    /// so every job's pause ends at the same time.
    pub until: Option<PauseEnd>,
    /// Trigger arguments (default `{}`).
    pub arguments: Value,
    /// Trigger idempotency key: each job's run is `{jobId}~t~{key}`, so a retried bulk trigger
    /// finds the runs it made.
    pub idempotency_key: Option<String>,
    /// The backfill request, as `POST /jobs/{jobId}/backfill` takes it (`backfill` only).
    pub backfill: Option<BackfillRequest>,
}

const FILTERS: [&str; 6] = [
    "state",
    "creator",
    "parentJob",
    "service",
    "labels",
    "idPrefix",
];
const COMMON: [&str; 4] = ["jobIds", "reason", "dryRun", "cursor"];

impl BulkRequest {
    /// Reads a bulk body for `action` on behalf of `actor`. Errors name the field: an unknown one,
    /// filters and `jobIds` both (or neither), a missing `reason`, a malformed parameter.
    pub fn parse(action: BulkAction, body: &Value, actor: Actor) -> Result<BulkRequest, AppError> {
        let Value::Object(obj) = body else {
            return Err(field_error("body", "expected a JSON object"));
        };
        let parameters = action.parameters();
        if let Some(key) = obj.keys().find(|k| {
            let k = k.as_str();
            !(FILTERS.contains(&k) || COMMON.contains(&k) || parameters.contains(&k))
        }) {
            let mut known: Vec<&str> = FILTERS.to_vec();
            known.extend(COMMON);
            known.extend(parameters);
            return Err(field_error(
                key,
                format!(
                    "unknown field for a bulk {}; expected {}",
                    action.name(),
                    known.join(", ")
                ),
            ));
        }
        let get = |key: &str| obj.get(key).filter(|v| !v.is_null());
        let text = |key: &str, max: usize| -> Result<Option<String>, AppError> {
            match get(key) {
                None => Ok(None),
                Some(Value::String(s)) if s.len() <= max => Ok(Some(s.clone())),
                Some(_) => Err(field_error(
                    key,
                    format!("expected a string of at most {max} bytes"),
                )),
            }
        };
        let reason = text("reason", MAX_REASON_BYTES)?
            .filter(|r| !r.trim().is_empty())
            .ok_or_else(|| {
                field_error(
                    "reason",
                    "is required: say why, it is recorded with every change",
                )
            })?;
        if reason.chars().any(char::is_control) {
            return Err(field_error("reason", "must not contain control characters"));
        }
        let dry_run = match get("dryRun") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(field_error("dryRun", "expected true or false")),
        };
        let filtered = FILTERS.iter().any(|k| get(k).is_some());
        let selection = match (get("jobIds"), filtered) {
            (Some(_), true) => {
                return Err(field_error("jobIds", "give either jobIds or filters, not both"))
            }
            (None, false) => {
                return Err(field_error(
                    "jobIds",
                    "give jobIds or at least one filter (state, creator, parentJob, service, labels, idPrefix)",
                ))
            }
            (Some(ids), false) => {
                if get("cursor").is_some() {
                    return Err(field_error("cursor", "only with filters; jobIds are acted on in one request"));
                }
                BulkSelection::Ids(parse_ids(ids)?)
            }
            (None, true) => BulkSelection::Filter {
                filter: parse_filter(&get)?,
                cursor: text("cursor", 4096)?,
            },
        };
        let notes = text("notes", 4096)?;
        let until = match get("until") {
            None => None,
            Some(Value::String(until)) => Some(super::pause_end(until)?),
            Some(_) => {
                return Err(field_error(
                    "until",
                    "expected an RFC 3339 instant or a duration such as \"2h\"",
                ))
            }
        };
        let arguments = match get("arguments") {
            None => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return Err(field_error(
                    "arguments",
                    "expected a JSON object of arguments",
                ))
            }
        };
        let idempotency_key = text("idempotencyKey", 64)?;
        if let Some(key) = &idempotency_key {
            sundial_core::execution::validate_trigger_id(key)
                .map_err(|e| field_error("idempotencyKey", e.message))?;
        }
        let backfill = match (action, get("backfill")) {
            (BulkAction::Backfill, None) => {
                return Err(field_error(
                    "backfill",
                    "is required: {\"startTime\", \"endTime\", …} as for one job",
                ))
            }
            (BulkAction::Backfill, Some(body)) => {
                let request = BackfillRequest::parse(body).map_err(|e| e.under("backfill"))?;
                if request.dry_run {
                    return Err(field_error(
                        "backfill.dryRun",
                        "use the bulk request's dryRun",
                    ));
                }
                Some(request)
            }
            _ => None,
        };
        Ok(BulkRequest {
            action,
            selection,
            reason,
            actor,
            dry_run,
            notes,
            until,
            arguments,
            idempotency_key,
            backfill,
        })
    }
}

fn parse_ids(value: &Value) -> Result<Vec<JobId>, AppError> {
    let Value::Array(list) = value else {
        return Err(field_error("jobIds", "expected an array of job ids"));
    };
    if list.is_empty() {
        return Err(field_error("jobIds", "needs at least one job id"));
    }
    if list.len() > MAX_BULK_JOBS {
        return Err(field_error(
            "jobIds",
            format!("{} ids; at most {MAX_BULK_JOBS} per request", list.len()),
        ));
    }
    let mut ids: Vec<JobId> = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        let path = format!("jobIds[{i}]");
        let text = item
            .as_str()
            .ok_or_else(|| field_error(&path, "expected a job id"))?;
        let id = JobId::parse(text).map_err(|e| field_error(&path, e.message))?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// A label selector given as `{key: value, …}` (each field named `labels.{key}` in errors); none
/// when absent.
pub(super) fn label_selectors(labels: Option<&Value>) -> Result<Vec<LabelSelector>, AppError> {
    match labels {
        None => Ok(Vec::new()),
        Some(Value::Object(map)) => {
            let mut selectors = Vec::with_capacity(map.len());
            for (key, value) in map {
                let path = format!("labels.{key}");
                let value = value
                    .as_str()
                    .ok_or_else(|| field_error(&path, "expected a string"))?;
                selectors.push(
                    LabelSelector::parse(&path, &format!("{key}:{value}"))
                        .map_err(AppError::Invalid)?,
                );
            }
            Ok(selectors)
        }
        Some(_) => Err(field_error(
            "labels",
            "expected an object of key: value strings",
        )),
    }
}

fn parse_filter<'a>(get: &impl Fn(&str) -> Option<&'a Value>) -> Result<JobFilter, AppError> {
    let string = |key: &str| -> Result<Option<String>, AppError> {
        match get(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(field_error(key, "expected a non-empty string")),
        }
    };
    let labels = label_selectors(get("labels"))?;
    job_filter(
        string("state")?,
        string("creator")?,
        string("parentJob")?,
        string("service")?,
        string("idPrefix")?,
        labels,
    )
}

/// What became of one job.
#[derive(Debug)]
pub struct BulkOutcome {
    /// The job.
    pub job_id: String,
    /// What the action did, or why it did not: the error the single-job route would answer.
    pub result: Result<BulkDone, AppError>,
}

/// What an action did to a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkDone {
    /// Dry run: the job was selected, nothing was done.
    Matched,
    /// Paused, resumed or deleted.
    Done,
    /// Triggered: the run's id.
    Triggered(String),
    /// Backfilled: how many runs it makes.
    Backfilled(usize),
}

/// What a bulk request did.
#[derive(Debug)]
pub struct BulkReport {
    /// Each job's outcome, in the order acted on (by id for filters).
    pub outcomes: Vec<BulkOutcome>,
    /// When more jobs match than one request acts on: pass it back as `cursor`.
    pub next_cursor: Option<String>,
}

impl<S: Store> App<S> {
    /// Acts on every job `request` selects, each with its single-job use case, at most
    /// [`MAX_BULK_JOBS`] of them (see the module's doc).
    pub async fn bulk(&self, request: &BulkRequest) -> Result<BulkReport, AppError> {
        // A pause's duration counts from the request: every job's pause ends at one time.
        let resolved;
        let request = match request.until {
            Some(end @ PauseEnd::After(_)) => {
                let at = end.at(self.now()).ok_or_else(|| {
                    field_error("until", "the pause would end past the range of times")
                })?;
                resolved = BulkRequest {
                    until: Some(PauseEnd::At(at)),
                    ..request.clone()
                };
                &resolved
            }
            _ => request,
        };
        let mut outcomes = Vec::new();
        let next_cursor = match &request.selection {
            BulkSelection::Ids(ids) => {
                outcomes.extend(self.bulk_page(request, ids).await);
                None
            }
            BulkSelection::Filter { filter, cursor } => {
                let mut cursor = cursor.clone();
                loop {
                    let left = MAX_BULK_JOBS - outcomes.len();
                    let page = self
                        .store
                        .list_jobs(
                            filter,
                            JobOrder::Id,
                            &PageRequest {
                                limit: left.min(READ_PAGE),
                                cursor: cursor.take(),
                            },
                        )
                        .await?;
                    // Ids the store holds were checked when written.
                    let ids = page
                        .items
                        .iter()
                        .map(|record| {
                            JobId::parse(&record.job_id).map_err(|e| {
                                AppError::corrupt(format!("stored job {}", record.job_id), e)
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    outcomes.extend(self.bulk_page(request, &ids).await);
                    cursor = page.next_cursor;
                    if cursor.is_none() || outcomes.len() >= MAX_BULK_JOBS {
                        break cursor;
                    }
                }
            }
        };
        let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
        tracing::info!(
            action = %request.action.audit_name(),
            actor = %request.actor,
            reason = %request.reason,
            dry_run = request.dry_run,
            jobs = outcomes.len(),
            failed,
            more = next_cursor.is_some(),
            "bulk action"
        );
        Ok(BulkReport {
            outcomes,
            next_cursor,
        })
    }

    /// The actions of a page of jobs, [`CONCURRENCY`] at a time (each is a few store round trips;
    /// one after the other, 1,000 of them could outlast API Gateway's 29 s), outcomes in order.
    async fn bulk_page(&self, request: &BulkRequest, ids: &[JobId]) -> Vec<BulkOutcome> {
        let mut outcomes = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(CONCURRENCY) {
            let actions: Vec<_> = chunk
                .iter()
                .map(|id| Box::pin(self.bulk_one(request, id)))
                .collect();
            outcomes.extend(futures_util::future::join_all(actions).await);
        }
        outcomes
    }

    /// One job's action: the single-job use case, its error kept as the job's outcome.
    async fn bulk_one(&self, request: &BulkRequest, job_id: &JobId) -> BulkOutcome {
        let result = if request.dry_run {
            // Listed ids exist; an explicit id is checked, so a dry run shows what would fail.
            match &request.selection {
                BulkSelection::Ids(_) => self.load(job_id).await.map(|_| BulkDone::Matched),
                BulkSelection::Filter { .. } => Ok(BulkDone::Matched),
            }
        } else {
            self.bulk_act(request, job_id).await
        };
        if let Err(error) = &result {
            tracing::info!(
                action = %request.action.audit_name(),
                job_id = %job_id,
                error = %error,
                "bulk action failed for a job"
            );
        }
        BulkOutcome {
            job_id: job_id.to_string(),
            result,
        }
    }

    /// One job's action through the single-job use case, recorded in the job's audit trail as
    /// `bulk:{action}` by the request's actor for its reason.
    async fn bulk_act(&self, request: &BulkRequest, job_id: &JobId) -> Result<BulkDone, AppError> {
        let by = &ChangeBy::bulk(
            request.actor.clone(),
            request.action.name(),
            request.reason.clone(),
        );
        let notes = || {
            Some(
                request
                    .notes
                    .clone()
                    .unwrap_or_else(|| request.reason.clone()),
            )
        };
        match request.action {
            BulkAction::Pause => self
                .pause_by(by, job_id, notes(), request.until)
                .await
                .map(|_| BulkDone::Done),
            BulkAction::Unpause => self
                .set_active_by(by, job_id, true, notes())
                .await
                .map(|_| BulkDone::Done),
            BulkAction::Trigger => self
                .trigger_by(
                    by,
                    job_id,
                    request.arguments.clone(),
                    request.idempotency_key.as_deref(),
                    TriggerOptions::default(),
                )
                .await
                .map(|execution| BulkDone::Triggered(execution.execution_id)),
            BulkAction::Delete => self
                .delete_job_by(by, job_id)
                .await
                .map(|()| BulkDone::Done),
            BulkAction::Backfill => match &request.backfill {
                Some(backfill) => self
                    .backfill_by(by, job_id, backfill)
                    .await
                    .map(|report: BackfillReport| BulkDone::Backfilled(report.count)),
                None => Err(field_error(
                    "backfill",
                    "is required: {\"startTime\", \"endTime\", …} as for one job",
                )),
            },
        }
    }
}
