//! The job definition: docs/api.md's create body plus the extension fields, parsed.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::fields::{err, index, quote, Obj, ROOT, STRING};
use super::http::{
    is_header_name, parse_cancel_url, parse_check_url, parse_notification, parse_request,
    parse_target,
};
use super::limits::{
    MAX_CREATOR_BYTES, MAX_DEFINITION_BYTES, MAX_JOB_NAME_BYTES, MAX_NON_RETRYABLE_ERRORS,
    MAX_NOTIFICATIONS, MAX_REQUESTS, MAX_RETRY_RULES, MAX_SENSITIVE_HEADERS,
};
use super::policy::{
    Catchup, CatchupPolicy, OverlapPolicy, ParentClosePolicy, Qos, RetryPolicy, RetryRule,
    Timeouts, MAX_CATCHUP_RUNS,
};
use super::{
    Action, FieldError, HttpTemplate, JobId, Labels, NotificationRule, RequestStep, Target,
};
use crate::duration::Duration;
use crate::spec::{CalendarSet, Schedule};
use crate::timer::{compile_timer, TimerPlan};

/// Default `checkRateSeconds`.
const DEFAULT_CHECK_RATE_SECONDS: u32 = 1;
/// Default `timeoutSeconds`.
const DEFAULT_TIMEOUT_SECONDS: u32 = 60;
/// Default `maxRetries` of the retries `retry` rules grant, when the job gives none.
pub const DEFAULT_MAX_RETRIES: u32 = 5;
/// The most retries a `retryPolicy` grants when nothing else bounds it: no `maxRetries`,
/// `maximumAttempts` 0 (unlimited) and no `timeouts.scheduleToClose` (docs/engine.md).
pub const POLICY_RETRY_CAP: u32 = 1000;
/// Default `catchupWindow` in seconds (Temporal's default).
const DEFAULT_CATCHUP_WINDOW_SECS: u64 = 60;
/// Shortest `catchupWindow` in seconds (Temporal's minimum).
const MIN_CATCHUP_WINDOW_SECS: u64 = 10;

/// When a job runs by itself.
#[derive(Clone, Debug, PartialEq)]
pub enum When {
    /// By this schedule: the compiled `timer` or `schedule`, or — with neither — one run at creation
    /// (docs/api.md's `one_time`).
    Scheduled(Schedule),
    /// Never by itself, only by triggers and backfills (`timer.period: "external"`).
    TriggeredOnly,
}

/// A parsed job definition. Construct it with [`JobDefinition::parse`]; a value that exists is valid.
/// The body it came from is kept as written ([`JobDefinition::as_written`]).
///
/// It is made of parts, one per [`FieldPart`](super::document::FieldPart) of the job document's
/// table, each parsing its own fields and naming them in its errors.
#[derive(Clone, Debug, PartialEq)]
pub struct JobDefinition {
    job_id: JobId,
    identity: Identity,
    timing: Timing,
    action: ActionSpec,
    retries: RetrySpec,
    notifications: NotificationSpec,
    policies: Policies,
    lineage: Lineage,
    created_at: DateTime<Utc>,
    written: Value,
    /// What of its job's last results anything written in it names (see [`LastResultsNamed`]).
    last_results_named: LastResultsNamed,
}

/// The template variable of a job's last successful run's result.
pub const LAST_COMPLETION_RESULT: &str = "lastCompletionResult";

/// The template variable of a job's last failed run.
pub const LAST_FAILURE: &str = "lastFailure";

/// Which of a job's last results its definition names, anywhere it is written (a request,
/// a check, a notification): what a run keeps of them, and what the job keeps of a success,
/// so that a job that does not use them stores nothing more per run. Read from the definition
/// once, when it is parsed, rather than by every run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LastResultsNamed {
    /// `${lastCompletionResult}`.
    pub completion_result: bool,
    /// `${lastFailure}`.
    pub failure: bool,
}

/// Who the job is: its names, its owner and its labels.
#[derive(Clone, Debug, PartialEq)]
struct Identity {
    job_name: String,
    job_description: Option<String>,
    creator: String,
    creator_name: String,
    labels: Labels,
}

/// When it runs by itself: `active`, and the `timer` or `schedule`.
#[derive(Clone, Debug, PartialEq)]
struct Timing {
    active: bool,
    when: When,
}

/// What a run does: the request chain or target, async completion, the headers kept secret.
#[derive(Clone, Debug, PartialEq)]
struct ActionSpec {
    action: Action,
    is_async: bool,
    check_url: Option<HttpTemplate>,
    cancel_url: Option<HttpTemplate>,
    check_rate_seconds: u32,
    sensitive_headers: Vec<String>,
}

/// How a failed or slow attempt is retried and timed out.
#[derive(Clone, Debug, PartialEq)]
struct RetrySpec {
    timeout_seconds: u32,
    retry: Vec<RetryRule>,
    max_retries: Option<u32>,
    retry_policy: Option<RetryPolicy>,
    timeouts: Timeouts,
}

/// Who is told how a run ended, and how insistently.
#[derive(Clone, Debug, PartialEq)]
struct NotificationSpec {
    rules: Vec<NotificationRule>,
    qos: Qos,
}

/// How fires and runs are admitted.
#[derive(Clone, Debug, PartialEq)]
struct Policies {
    overlap: OverlapPolicy,
    max_concurrency: Option<u32>,
    catchup: Catchup,
    pause_on_failure: bool,
    remaining_actions: Option<u64>,
    parent_close_policy: ParentClosePolicy,
}

/// The parent job this one was started by.
#[derive(Clone, Debug, PartialEq)]
struct Lineage {
    parent_job: Option<JobId>,
    parent_job_execution: Option<u64>,
}

/// A job's document as a caller submits it (a create, an update, a declared timer, a job file),
/// read as far as it can be without the store: an object of the job document's fields whose
/// `jobId`, when written, is the job's. The use case finishes the parse
/// ([`JobDefinition::parse_submitted_with`]) once it has read what it needs: the calendars the
/// schedule names ([`JobDocument::calendar_names`]) and, for an update, the stored definition
/// whose secret header values a `***` keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct JobDocument {
    job_id: JobId,
    body: Value,
}

impl JobDocument {
    /// Reads `body` as the document of job `job_id`; errors name the field (an unknown one, or
    /// `jobId` when the body names another job).
    pub fn read(job_id: &JobId, body: &Value) -> Result<JobDocument, FieldError> {
        document_object(job_id, body)?;
        Ok(JobDocument {
            job_id: job_id.clone(),
            body: body.clone(),
        })
    }

    /// The job it defines.
    pub fn job_id(&self) -> &JobId {
        &self.job_id
    }

    /// The document as submitted.
    pub fn body(&self) -> &Value {
        &self.body
    }

    /// The named calendars its schedule refers to (`onlyOn`, `exclude`, business-day rules).
    pub fn calendar_names(&self) -> std::collections::BTreeSet<String> {
        self.body
            .get("schedule")
            .map(crate::spec::calendar_names)
            .unwrap_or_default()
    }
}

/// `body` as the object of a job document of `job_id`: only the document's fields, and the
/// job's own id if it writes one.
fn document_object<'a>(job_id: &JobId, body: &'a Value) -> Result<Obj<'a>, FieldError> {
    let obj = Obj::new(body, "", &super::document::FIELD_NAMES)?;
    if let Some(written_id) = obj.get("jobId") {
        if written_id.as_str() != Some(job_id.as_str()) {
            return Err(err(
                "jobId",
                format!(
                    "the body says {} but the path says {}",
                    super::fields::describe(written_id),
                    quote(job_id.as_str())
                ),
            ));
        }
    }
    Ok(obj)
}

impl JobDefinition {
    /// Parses a create body for the job `job_id`, created at `created_at` (which anchors relative
    /// timer due times and `ttl`). Errors name the field in JSON path form.
    pub fn parse(
        job_id: &JobId,
        body: &Value,
        created_at: DateTime<Utc>,
    ) -> Result<JobDefinition, FieldError> {
        JobDefinition::parse_with(job_id, body, created_at, &CalendarSet::new())
    }

    /// [`JobDefinition::parse`], resolving the calendar names of `schedule` (`onlyOn`, `exclude`,
    /// business-day rules) in `calendars`; a name it does not hold is an error naming the field
    /// and the calendar. The definition keeps the calendars it names ([`JobDefinition::calendars`]).
    pub fn parse_with(
        job_id: &JobId,
        body: &Value,
        created_at: DateTime<Utc>,
        calendars: &CalendarSet,
    ) -> Result<JobDefinition, FieldError> {
        let obj = document_object(job_id, body)?;
        let identity = Identity::parse(&obj)?;
        let notifications = NotificationSpec::parse(&obj)?;
        let timing = Timing::parse(&obj, created_at, calendars)?;
        let action = ActionSpec::parse(&obj)?;
        let retries = RetrySpec::parse(&obj)?;
        let lineage = Lineage::parse(&obj, job_id)?;
        let policies = Policies::parse(&obj)?;

        // Every value has been read with bounded depth, so serialising it is safe; the bound keeps a
        // job, with its state, inside one DynamoDB item.
        let text = serde_json::to_string(body).unwrap_or_default();
        let bytes = if text.is_empty() {
            usize::MAX
        } else {
            text.len()
        };
        let last_results_named = LastResultsNamed {
            completion_result: text.contains(LAST_COMPLETION_RESULT),
            failure: text.contains(LAST_FAILURE),
        };
        if bytes > MAX_DEFINITION_BYTES {
            return Err(err(
                ROOT,
                format!("the job is {bytes} bytes of JSON; the limit is {MAX_DEFINITION_BYTES}"),
            ));
        }

        Ok(JobDefinition {
            job_id: job_id.clone(),
            identity,
            timing,
            action,
            retries,
            notifications,
            policies,
            lineage,
            created_at,
            written: body.clone(),
            last_results_named,
        })
    }

    /// Parses a definition a client submitted: [`JobDefinition::parse`], and then, where a header
    /// value is the redaction marker ([`super::REDACTED`]) a read of the job showed, the value
    /// stored in `stored` (the job's current definition on update, `None` on create) is kept (see
    /// [`super::keep_redacted`]). A marker that cannot be honoured is an error naming the header.
    pub fn parse_submitted(
        job_id: &JobId,
        body: &Value,
        created_at: DateTime<Utc>,
        stored: Option<&JobDefinition>,
    ) -> Result<JobDefinition, FieldError> {
        JobDefinition::parse_submitted_with(job_id, body, created_at, stored, &CalendarSet::new())
    }

    /// [`JobDefinition::parse_submitted`] with the calendars its schedule may name (see
    /// [`JobDefinition::parse_with`]).
    pub fn parse_submitted_with(
        job_id: &JobId,
        body: &Value,
        created_at: DateTime<Utc>,
        stored: Option<&JobDefinition>,
        calendars: &CalendarSet,
    ) -> Result<JobDefinition, FieldError> {
        let parsed = JobDefinition::parse_with(job_id, body, created_at, calendars)?;
        match super::keep_redacted(body, stored.map(JobDefinition::as_written))? {
            None => Ok(parsed),
            Some(kept) => JobDefinition::parse_with(job_id, &kept, created_at, calendars),
        }
    }

    /// The named business calendars its schedule refers to, as they were when it was parsed
    /// (docs/spec.md §16; empty for most jobs): the job's document keeps a copy, so a fire never
    /// reads a calendar. Taken from the schedule, which holds them, so a definition is no larger
    /// for them.
    pub fn calendars(&self) -> CalendarSet {
        match &self.timing.when {
            When::Scheduled(schedule) => schedule.business_calendars(),
            When::TriggeredOnly => CalendarSet::new(),
        }
    }

    /// The job's id.
    pub fn job_id(&self) -> &JobId {
        &self.job_id
    }

    /// `jobName`.
    pub fn job_name(&self) -> &str {
        &self.identity.job_name
    }

    /// `jobDescription`.
    pub fn job_description(&self) -> Option<&str> {
        self.identity.job_description.as_deref()
    }

    /// `creator`: the caller's id.
    pub fn creator(&self) -> &str {
        &self.identity.creator
    }

    /// `labels`: what the job is, for filters and bulk actions.
    pub fn labels(&self) -> &Labels {
        &self.identity.labels
    }

    /// `creatorName`.
    pub fn creator_name(&self) -> &str {
        &self.identity.creator_name
    }

    /// `notification` rules, in order.
    pub fn notifications(&self) -> &[NotificationRule] {
        &self.notifications.rules
    }

    /// `active`: true when scheduled runs happen, false when paused.
    pub fn active(&self) -> bool {
        self.timing.active
    }

    /// Pauses (`false`) or resumes (`true`) the job; the written body's `active` follows (1 or 0).
    pub fn set_active(&mut self, active: bool) {
        self.timing.active = active;
        if let Value::Object(map) = &mut self.written {
            map.insert("active".into(), json!(u8::from(active)));
        }
    }

    /// When the job runs by itself.
    pub fn when(&self) -> &When {
        &self.timing.when
    }

    /// The schedule, unless the job only runs when triggered.
    pub fn schedule(&self) -> Option<&Schedule> {
        match &self.timing.when {
            When::Scheduled(schedule) => Some(schedule),
            When::TriggeredOnly => None,
        }
    }

    /// What the job runs.
    pub fn action(&self) -> &Action {
        &self.action.action
    }

    /// The `request` chain; empty when the job has a target.
    pub fn requests(&self) -> &[RequestStep] {
        match &self.action.action {
            Action::Requests(steps) => steps,
            Action::Target(_) => &[],
        }
    }

    /// The queue or bus target, if the job has one instead of requests.
    pub fn target(&self) -> Option<&Target> {
        match &self.action.action {
            Action::Target(target) => Some(target),
            Action::Requests(_) => None,
        }
    }

    /// `async`: after the chain, wait for feedback or poll `checkUrl`.
    pub fn is_async(&self) -> bool {
        self.action.is_async
    }

    /// `checkUrl`, always a GET.
    pub fn check_url(&self) -> Option<&HttpTemplate> {
        self.action.check_url.as_ref()
    }

    /// `cancelUrl`: called when a run of this async job is cancelled or terminated after its
    /// request was sent (docs/api.md, "Stopping a run in its call").
    pub fn cancel_url(&self) -> Option<&HttpTemplate> {
        self.action.cancel_url.as_ref()
    }

    /// `checkRateSeconds` (default 1).
    pub fn check_rate_seconds(&self) -> u32 {
        self.action.check_rate_seconds
    }

    /// `timeoutSeconds` (default 60): one attempt, async checks included.
    pub fn timeout_seconds(&self) -> u32 {
        self.retries.timeout_seconds
    }

    /// docs/api.md `retry` rules, in order.
    pub fn retry_rules(&self) -> &[RetryRule] {
        &self.retries.retry
    }

    /// `maxRetries` as the `retry` rules read it (default 5): the cap on retries across all
    /// rules.
    pub fn max_retries(&self) -> u32 {
        self.retries.max_retries.unwrap_or(DEFAULT_MAX_RETRIES)
    }

    /// `maxRetries` when the job gives it: then it caps every retry, `retryPolicy`'s too.
    pub fn max_retries_given(&self) -> Option<u32> {
        self.retries.max_retries
    }

    /// Whether nothing bounds the retries of the job's `retryPolicy`: no `maxRetries`,
    /// `maximumAttempts` 0 (unlimited) and no `timeouts.scheduleToClose`. Its retries then stop
    /// at [`POLICY_RETRY_CAP`].
    pub fn policy_retries_unbounded(&self) -> bool {
        self.retries.max_retries.is_none()
            && self.retries.timeouts.schedule_to_close.is_none()
            && self
                .retries
                .retry_policy
                .as_ref()
                .is_some_and(|policy| policy.maximum_attempts == 0)
    }

    /// `qos`.
    pub fn qos(&self) -> Qos {
        self.notifications.qos
    }

    /// `parentJob`.
    pub fn parent_job(&self) -> Option<&JobId> {
        self.lineage.parent_job.as_ref()
    }

    /// `parentJobExecution`: the parent's execute number.
    pub fn parent_job_execution(&self) -> Option<u64> {
        self.lineage.parent_job_execution
    }

    /// `overlap` (default `Skip`).
    pub fn overlap(&self) -> OverlapPolicy {
        self.policies.overlap
    }

    /// `maxConcurrency`: default 1, `None` (unbounded) by default with `AllowAll`.
    pub fn max_concurrency(&self) -> Option<u32> {
        self.policies.max_concurrency
    }

    /// `catchup.window`, or `catchupWindow` (default 1 minute, at least 10 s).
    pub fn catchup_window(&self) -> Duration {
        self.policies.catchup.window
    }

    /// `catchup`: the catch-up policy, window and cap (docs/engine.md, "Catch-up").
    pub fn catchup(&self) -> &Catchup {
        &self.policies.catchup
    }

    /// `pauseOnFailure`.
    pub fn pause_on_failure(&self) -> bool {
        self.policies.pause_on_failure
    }

    /// `remainingActions` as written: the initial limit on scheduled runs.
    pub fn remaining_actions(&self) -> Option<u64> {
        self.policies.remaining_actions
    }

    /// `retryPolicy`.
    pub fn retry_policy(&self) -> Option<&RetryPolicy> {
        self.retries.retry_policy.as_ref()
    }

    /// `timeouts`.
    pub fn timeouts(&self) -> &Timeouts {
        &self.retries.timeouts
    }

    /// `parentClosePolicy` (default `abandon`).
    pub fn parent_close_policy(&self) -> ParentClosePolicy {
        self.policies.parent_close_policy
    }

    /// `sensitiveHeaders`: header names, beyond the default rule ([`super::is_sensitive_header`]),
    /// whose values are never shown.
    pub fn sensitive_headers(&self) -> &[String] {
        &self.action.sensitive_headers
    }

    /// The body as a reader may see it: as written, with the value of every sensitive header
    /// replaced by [`super::REDACTED`] ([`super::redact_job_body`]).
    pub fn as_shown(&self) -> Value {
        super::redact_job_body(&self.written)
    }

    /// The creation time the definition was parsed with.
    pub fn created_at(&self) -> DateTime<Utc> {
        self.created_at
    }

    /// Problems with the definition that do not make it invalid, as messages that start with the
    /// field they are about: today, a `timer` or `schedule` with no fire time at or after `now`
    /// (`"timer: it never fires: it starts at 2150-01-01T00:00:00+00:00, …"`). The API returns
    /// them beside the created or updated job.
    pub fn warnings(&self, now: DateTime<Utc>) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.policy_retries_unbounded() {
            warnings.push(format!(
                "retryPolicy: maximumAttempts 0 (unlimited) with no timeouts.scheduleToClose and no maxRetries: a failing run retries until the server-wide cap of {POLICY_RETRY_CAP} retries"
            ));
        }
        let Some(schedule) = self.schedule() else {
            return warnings;
        };
        let field = if self.written.get("schedule").is_some_and(|v| !v.is_null()) {
            "schedule"
        } else {
            "timer"
        };
        // A timer's run at creation falls on `now` itself, so look from just before it.
        let after = now - chrono::Duration::seconds(1);
        warnings.extend(
            schedule
                .never_fires_after(after)
                .map(|why| format!("{field}: {why}")),
        );
        warnings
    }

    /// The body as written (with `active` updated by [`JobDefinition::set_active`]).
    pub fn as_written(&self) -> &Value {
        &self.written
    }

    /// Which of its job's last results the definition names.
    pub fn last_results_named(&self) -> LastResultsNamed {
        self.last_results_named
    }
}

impl Identity {
    /// `jobName`, `jobDescription`, `creator`, `creatorName`, `labels`.
    fn parse(obj: &Obj<'_>) -> Result<Identity, FieldError> {
        let job_name = obj.name("jobName", MAX_JOB_NAME_BYTES)?.to_string();
        let job_description = obj.string("jobDescription", STRING)?;
        if let Some(text) = job_description {
            obj.no_control("jobDescription", text, true)?;
        }
        let job_description = job_description.map(str::to_string);
        let creator = obj.name("creator", MAX_CREATOR_BYTES)?.to_string();
        let creator_name = obj.name("creatorName", STRING)?.to_string();
        let labels = match obj.get("labels") {
            None => Labels::default(),
            Some(value) => Labels::parse("labels", value)?,
        };
        Ok(Identity {
            job_name,
            job_description,
            creator,
            creator_name,
            labels,
        })
    }
}

impl NotificationSpec {
    /// `notification` and `qos`.
    fn parse(obj: &Obj<'_>) -> Result<NotificationSpec, FieldError> {
        let rules = obj
            .array("notification", MAX_NOTIFICATIONS)?
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, v)| parse_notification(&index("notification", i), v))
            .collect::<Result<Vec<_>, _>>()?;
        let qos = match obj.field_uint("qos")? {
            Some(1) => Qos::Reliable,
            _ => Qos::Normal,
        };
        Ok(NotificationSpec { rules, qos })
    }
}

impl Timing {
    /// `active`, and `timer` or `schedule` (relative times anchored at `created_at`).
    fn parse(
        obj: &Obj<'_>,
        created_at: DateTime<Utc>,
        calendars: &CalendarSet,
    ) -> Result<Timing, FieldError> {
        let active = match obj.get("active") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(v) if v.as_u64() == Some(1) => true,
            Some(v) if v.as_u64() == Some(0) => false,
            Some(v) => {
                return Err(err(
                    "active",
                    format!(
                        "expected 1 (scheduled) or 0 (paused), got {}",
                        super::fields::describe(v)
                    ),
                ))
            }
        };
        let when = parse_when(obj, created_at, calendars)?;
        Ok(Timing { active, when })
    }
}

impl ActionSpec {
    /// `request` or `target`, `async`, `checkUrl`, `cancelUrl`, `checkRateSeconds`,
    /// `sensitiveHeaders`.
    fn parse(obj: &Obj<'_>) -> Result<ActionSpec, FieldError> {
        let action = match (obj.get("request"), obj.get("target")) {
            (Some(_), Some(_)) => {
                return Err(err("target", "give either request or target, not both"))
            }
            (None, Some(target)) => Action::Target(parse_target("target", target)?),
            (_, None) => {
                let items = obj
                    .array("request", MAX_REQUESTS)?
                    .ok_or_else(|| err("request", "is required (or give a target)"))?;
                if items.is_empty() {
                    return Err(err("request", "needs at least one request"));
                }
                let steps = items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| parse_request(&index("request", i), v))
                    .collect::<Result<Vec<RequestStep>, _>>()?;
                Action::Requests(steps)
            }
        };
        let is_async = obj.bool("async")?.unwrap_or(false);
        let check_url = obj
            .get("checkUrl")
            .map(|v| parse_check_url("checkUrl", v))
            .transpose()?;
        let cancel_url = obj
            .get("cancelUrl")
            .map(|v| parse_cancel_url("cancelUrl", v))
            .transpose()?;
        let check_rate_seconds = obj
            .field_uint32("checkRateSeconds")?
            .unwrap_or(DEFAULT_CHECK_RATE_SECONDS);
        let sensitive_headers = parse_sensitive_headers(obj)?;
        Ok(ActionSpec {
            action,
            is_async,
            check_url,
            cancel_url,
            check_rate_seconds,
            sensitive_headers,
        })
    }
}

impl RetrySpec {
    /// `timeoutSeconds`, `retry`, `maxRetries`, `retryPolicy`, `timeouts`.
    fn parse(obj: &Obj<'_>) -> Result<RetrySpec, FieldError> {
        let timeout_seconds = obj
            .field_uint32("timeoutSeconds")?
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        let retry = obj
            .array("retry", MAX_RETRY_RULES)?
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, v)| parse_retry_rule(&index("retry", i), v))
            .collect::<Result<Vec<_>, _>>()?;
        let max_retries = obj.field_uint32("maxRetries")?;
        let retry_policy = obj
            .get("retryPolicy")
            .map(|v| parse_retry_policy("retryPolicy", v))
            .transpose()?;
        let timeouts = match obj.get("timeouts") {
            None => Timeouts::default(),
            Some(v) => parse_timeouts("timeouts", v)?,
        };
        Ok(RetrySpec {
            timeout_seconds,
            retry,
            max_retries,
            retry_policy,
            timeouts,
        })
    }
}

impl Lineage {
    /// `parentJob` (never the job `job_id` itself) and `parentJobExecution`.
    fn parse(obj: &Obj<'_>, job_id: &JobId) -> Result<Lineage, FieldError> {
        let parent_job = obj
            .string("parentJob", STRING)?
            .map(|text| JobId::parse(text).map_err(|e| err("parentJob", e.message)))
            .transpose()?;
        if parent_job.as_ref() == Some(job_id) {
            return Err(err("parentJob", "a job cannot be its own parent"));
        }
        let parent_job_execution = obj.field_uint("parentJobExecution")?;
        if parent_job_execution.is_some() && parent_job.is_none() {
            return Err(err("parentJobExecution", "is only allowed with parentJob"));
        }
        Ok(Lineage {
            parent_job,
            parent_job_execution,
        })
    }
}

impl Policies {
    /// `overlap`, `maxConcurrency`, `catchupWindow` and `catchup`, `pauseOnFailure`,
    /// `remainingActions`, `parentClosePolicy`.
    fn parse(obj: &Obj<'_>) -> Result<Policies, FieldError> {
        let overlap = match obj.string("overlap", 64)? {
            None => OverlapPolicy::default(),
            Some(text) => OverlapPolicy::parse(text).ok_or_else(|| {
                err(
                    "overlap",
                    format!(
                        "expected Skip, BufferOne, BufferAll, CancelOther, TerminateOther or AllowAll, got {}",
                        quote(text)
                    ),
                )
            })?,
        };
        let max_concurrency = match obj.field_uint32("maxConcurrency")? {
            Some(n) => Some(n),
            None if overlap == OverlapPolicy::AllowAll => None,
            None => Some(1),
        };
        let catchup = parse_catchup(obj)?;
        let pause_on_failure = obj.bool("pauseOnFailure")?.unwrap_or(false);
        let remaining_actions = obj.field_uint("remainingActions")?;
        let parent_close_policy = match obj.string("parentClosePolicy", 64)? {
            None => ParentClosePolicy::default(),
            Some(text) => ParentClosePolicy::parse(text).ok_or_else(|| {
                err(
                    "parentClosePolicy",
                    format!("expected abandon, cancel or terminate, got {}", quote(text)),
                )
            })?,
        };
        Ok(Policies {
            overlap,
            max_concurrency,
            catchup,
            pause_on_failure,
            remaining_actions,
            parent_close_policy,
        })
    }
}

/// `timer` or `schedule` (not both); neither is docs/api.md's one run now.
fn parse_when(
    obj: &Obj<'_>,
    created_at: DateTime<Utc>,
    calendars: &CalendarSet,
) -> Result<When, FieldError> {
    let from_plan = |plan: TimerPlan| match plan {
        TimerPlan::Scheduled(schedule) => When::Scheduled(schedule),
        TimerPlan::External => When::TriggeredOnly,
    };
    match (obj.get("timer"), obj.get("schedule")) {
        (Some(_), Some(_)) => Err(err("schedule", "give either timer or schedule, not both")),
        (None, Some(schedule)) => Schedule::from_json_with(schedule, calendars)
            .map(When::Scheduled)
            .map_err(|e| {
                // The spec engine names its own root `schedule`.
                if e.path == "schedule" {
                    e
                } else {
                    e.under("schedule")
                }
            }),
        (Some(Value::String(text)), None) => {
            // The create table types `timer` as a string: a JSON object in a string.
            if text.len() > STRING {
                return Err(err(
                    "timer",
                    format!("is {} bytes long; the limit is {STRING}", text.len()),
                ));
            }
            let timer = if text.trim().is_empty() {
                Value::Null
            } else {
                serde_json::from_str(text).map_err(|e| {
                    err(
                        "timer",
                        format!("expected a timer object or JSON text of one: {e}"),
                    )
                })?
            };
            compile_timer(&timer, created_at).map(from_plan)
        }
        (Some(timer), None) => compile_timer(timer, created_at).map(from_plan),
        (None, None) => compile_timer(&Value::Null, created_at).map(from_plan),
    }
}

/// `catchup` `{policy, window, maxRuns}` beside the older `catchupWindow`, which stays a way to
/// give the window: both may be given only when they agree.
fn parse_catchup(obj: &Obj<'_>) -> Result<Catchup, FieldError> {
    let min = Duration::from_secs(MIN_CATCHUP_WINDOW_SECS);
    let legacy = obj.duration("catchupWindow", min)?;
    let Some(value) = obj.get("catchup") else {
        return Ok(Catchup {
            policy: CatchupPolicy::default(),
            window: legacy.unwrap_or(Duration::from_secs(DEFAULT_CATCHUP_WINDOW_SECS)),
            max_runs: None,
        });
    };
    let path = obj.path("catchup");
    let catchup = Obj::new(value, &path, &["policy", "window", "maxRuns"])?;
    let policy = match catchup.string("policy", 64)? {
        None => CatchupPolicy::default(),
        Some(text) => CatchupPolicy::parse(text).ok_or_else(|| {
            err(
                catchup.path("policy"),
                format!("expected skip, latest or all, got {}", quote(text)),
            )
        })?,
    };
    let window = match (catchup.duration("window", min)?, legacy) {
        (Some(window), Some(legacy)) if window != legacy => {
            return Err(err(
                catchup.path("window"),
                format!(
                    "{window} disagrees with catchupWindow {legacy}; give the window once (catchup.window), or the same value in both"
                ),
            ))
        }
        (Some(window), _) => window,
        (None, legacy) => legacy.unwrap_or(Duration::from_secs(DEFAULT_CATCHUP_WINDOW_SECS)),
    };
    let max_runs = catchup.uint32("maxRuns", 1, MAX_CATCHUP_RUNS)?;
    if max_runs.is_some() && policy != CatchupPolicy::All {
        return Err(err(
            catchup.path("maxRuns"),
            format!(
                "only applies to policy \"all\": policy {} runs {} of the late fires",
                quote(policy.name()),
                if policy == CatchupPolicy::Latest {
                    "the newest"
                } else {
                    "none"
                }
            ),
        ));
    }
    Ok(Catchup {
        policy,
        window,
        max_runs,
    })
}

/// `sensitiveHeaders`: a list of header names (RFC 9110 tokens).
fn parse_sensitive_headers(obj: &Obj<'_>) -> Result<Vec<String>, FieldError> {
    let Some(names) = obj.get("sensitiveHeaders") else {
        return Ok(Vec::new());
    };
    let Value::Array(names) = names else {
        return Err(err(
            "sensitiveHeaders",
            format!(
                "expected a list of header names like [\"X-My-Key\"], got {}",
                super::fields::describe(names)
            ),
        ));
    };
    if names.len() > MAX_SENSITIVE_HEADERS {
        return Err(err(
            "sensitiveHeaders",
            format!(
                "has {} names; the limit is {MAX_SENSITIVE_HEADERS}",
                names.len()
            ),
        ));
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| match name {
            Value::String(text) if is_header_name(text) => Ok(text.clone()),
            other => Err(err(
                index("sensitiveHeaders", i),
                format!(
                    "expected a header name (letters, digits and !#$%&'*+-.^_`|~), got {}",
                    super::fields::describe(other)
                ),
            )),
        })
        .collect()
}

fn parse_retry_rule(path: &str, value: &Value) -> Result<RetryRule, FieldError> {
    let obj = Obj::new(
        value,
        path,
        &[
            "errorEquals",
            "intervalSeconds",
            "maxAttempts",
            "backoffRate",
        ],
    )?;
    let error_equals = obj
        .code("errorEquals", 256)?
        .ok_or_else(|| err(obj.path("errorEquals"), "is required"))?;
    Ok(RetryRule {
        error_equals,
        interval_seconds: obj
            .uint32("intervalSeconds", 0, 86_400)?
            .unwrap_or(RetryRule::DEFAULT_INTERVAL_SECONDS),
        max_attempts: obj
            .uint32("maxAttempts", 0, 100)?
            .unwrap_or(RetryRule::DEFAULT_MAX_ATTEMPTS),
        backoff_rate: obj
            .float("backoffRate", 1.0, 100.0)?
            .unwrap_or(RetryRule::DEFAULT_BACKOFF_RATE),
    })
}

fn parse_retry_policy(path: &str, value: &Value) -> Result<RetryPolicy, FieldError> {
    let obj = Obj::new(
        value,
        path,
        &[
            "initialInterval",
            "backoffCoefficient",
            "maximumInterval",
            "maximumAttempts",
            "nonRetryableErrors",
        ],
    )?;
    let one_ms = Duration::from_millis(1);
    let initial_interval = obj
        .duration("initialInterval", one_ms)?
        .unwrap_or(Duration::from_secs(1));
    let backoff_coefficient = obj.float("backoffCoefficient", 1.0, 100.0)?.unwrap_or(2.0);
    let maximum_interval = match obj.duration("maximumInterval", one_ms)? {
        Some(max) if max < initial_interval => {
            return Err(err(
                obj.path("maximumInterval"),
                format!("{max} is shorter than initialInterval {initial_interval}"),
            ))
        }
        Some(max) => max,
        None => Duration::from_millis(initial_interval.as_millis().saturating_mul(100)),
    };
    let maximum_attempts = obj.uint32("maximumAttempts", 0, 10_000)?.unwrap_or(0);
    let list_path = obj.path("nonRetryableErrors");
    let non_retryable_errors = obj
        .array("nonRetryableErrors", MAX_NON_RETRYABLE_ERRORS)?
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let item = index(&list_path, i);
            match v {
                Value::String(s) if !s.trim().is_empty() && s.len() <= 256 => {
                    Ok(s.trim().to_string())
                }
                Value::Number(n) => Ok(super::fields::number_text(n)),
                other => Err(err(
                    item,
                    format!(
                        "expected a non-empty error code of at most 256 bytes, got {}",
                        super::fields::describe(other)
                    ),
                )),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RetryPolicy {
        initial_interval,
        backoff_coefficient,
        maximum_interval,
        maximum_attempts,
        non_retryable_errors,
    })
}

fn parse_timeouts(path: &str, value: &Value) -> Result<Timeouts, FieldError> {
    let obj = Obj::new(
        value,
        path,
        &["scheduleToStart", "scheduleToClose", "heartbeat"],
    )?;
    let one_second = Duration::from_secs(1);
    Ok(Timeouts {
        schedule_to_start: obj.duration("scheduleToStart", one_second)?,
        schedule_to_close: obj.duration("scheduleToClose", one_second)?,
        heartbeat: obj.duration("heartbeat", one_second)?,
    })
}
