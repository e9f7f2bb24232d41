//! Dispatch: take one execution one step along its state machine.
//!
//! A dispatch message names an execution, nothing more: what to do is read from the execution
//! itself, so a message that arrives twice, late, or after a crash does the right thing. Scheduled
//! runs wait for their due time; enqueued runs pass the concurrency gate; running ones run the
//! request chain, then wait for an async job's status; failed ones wait for their retry. Each step
//! ends with a conditional write, and a write lost to another worker (a user's cancel, an async
//! job's feedback) makes the step read the execution again and decide afresh.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::expand::{self, Variables};
use sundial_core::job::{Action, HttpTemplate, OverlapPolicy, Target, IDEMPOTENCY_KEY_HEADER};
use sundial_core::outcome::{AsyncReport, Outcome, Verdict};
use sundial_core::plan::{self, Admission};
use sundial_core::retry::{self, RetryDecision};
use sundial_core::signing;

use std::collections::HashMap;

use super::{Engine, EngineError, Loaded, Released, Run, Written, MAX_STEP_RETRIES};
use crate::app::AppError;
use crate::ports::events::{BusEvent, EventPublisher};
use crate::ports::http::{HttpClient, HttpError, HttpRequest, DEFAULT_CALL_TIMEOUT};
use crate::ports::queue::Queue;
use crate::ports::store::{JobFilter, PageRequest, Store, StoreError, Write, WriteAllError};
use crate::records::{decode_job, encode_job, job_wakeup_key, json_time, StoredJob};

/// How long past its attempt deadline a worker's lease on a running chain lasts; after it another
/// worker presumes the first one dead and runs the attempt again.
const LEASE_MARGIN: chrono::Duration = chrono::Duration::seconds(30);

/// How soon a run waiting behind an earlier run of its job looks again, should nothing send it
/// sooner (see [`Engine::send_next_in_line`]).
const ORDER_RECHECK: chrono::Duration = chrono::Duration::seconds(1);

/// How long before its fire time a run admitted ahead checks that it was not stopped meanwhile:
/// long enough for a burst's checks to be read before the burst, short enough that a stop later
/// than this is no different from one that meets the call in flight.
const HELD_RECHECK: chrono::Duration = chrono::Duration::milliseconds(100);

/// The most bytes of one response body kept in the execution for later templates and the result.
const MAX_KEPT_RESPONSE_BYTES: usize = 64 * 1024;

/// Whether a step finished or must read the execution again.
pub(super) enum Step {
    Done,
    Again,
}

/// How one attempt's action ended.
pub(super) enum AttemptEnd {
    /// Finished well; `result` becomes the execution's result.
    Succeeded {
        outcome: Outcome,
        result: Option<Value>,
        response: Value,
    },
    /// The chain is done; the async job reports later.
    AwaitAsync,
    /// Failed: retry rules decide what follows.
    Failed {
        outcome: Outcome,
        response: Value,
        detail: String,
    },
}

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Takes an execution one step further: what a dispatch message asks. Idempotent.
    pub async fn dispatch(&self, execution_id: &str) -> Result<(), EngineError> {
        self.dispatch_from(execution_id, None).await
    }

    /// What a batch of dispatch messages reads first, in one store read: each execution with its
    /// job, for [`Engine::dispatch_from`]. Empty when the read fails (each step then reads for
    /// itself).
    pub async fn prefetch(&self, execution_ids: &[String]) -> HashMap<String, Option<Run>> {
        match self.read_runs(execution_ids).await {
            Ok(runs) => runs,
            Err(e) => {
                tracing::debug!(error = %e, "batch read failed; reading one by one");
                HashMap::new()
            }
        }
    }

    /// [`Engine::dispatch`] starting from what [`Engine::prefetch`] read, when it read it
    /// (`Some(None)`: the execution does not exist).
    pub async fn dispatch_from(
        &self,
        execution_id: &str,
        mut read: Option<Option<Run>>,
    ) -> Result<(), EngineError> {
        for _ in 0..MAX_STEP_RETRIES {
            let run = match read.take() {
                Some(run) => run,
                None => self.read_run(execution_id).await?,
            };
            let Some(Run { mut loaded, job }) = run else {
                return Ok(());
            };
            if let Step::Done = self.step(&mut loaded, job).await? {
                return Ok(());
            }
        }
        Err(EngineError::Contended(format!("execution {execution_id}")))
    }

    /// A message that came before `at`: waits the rest out here when it is short (SQS delays are
    /// whole seconds, so a fire's message arrives up to a second early), else sends a new message
    /// for `at`.
    async fn wait_for(&self, execution_id: &str, at: DateTime<Utc>) -> Result<Step, EngineError> {
        let wait = (at - self.now()).to_std().unwrap_or_default();
        if !wait.is_zero() && wait <= self.config.max_inline_wait {
            self.app.sleep_until(at).await;
            return Ok(Step::Again);
        }
        self.wake_at(execution_id, at).await?;
        Ok(Step::Done)
    }

    async fn step(&self, loaded: &mut Loaded, job: Option<StoredJob>) -> Result<Step, EngineError> {
        let now = self.now();
        let state = loaded.execution.state();
        if state.is_final() {
            self.after_final(&loaded.execution, job.as_ref()).await?;
            return Ok(Step::Done);
        }
        let Some(mut job) = job else {
            loaded.clear_net = !state.is_final();
            return self
                .finish(
                    loaded,
                    None,
                    ExecutionState::Cancelled,
                    "its job was deleted",
                )
                .await;
        };
        let id = loaded.execution.execution_id.clone();
        if matches!(state, ExecutionState::Scheduled | ExecutionState::Enqueued)
            && self.missed_catchup(&loaded.execution, &job)
        {
            return self.skip_missed(loaded, job).await;
        }
        match state {
            ExecutionState::Scheduled => {
                let due = loaded
                    .execution
                    .run
                    .due
                    .unwrap_or(loaded.execution.scheduled_time);
                if due > now {
                    if (due - now).to_std().unwrap_or_default() <= self.config.admit_ahead {
                        return self.admit_ahead(loaded, job, due).await;
                    }
                    return self.wait_for(&id, due).await;
                }
                // Enqueued only in memory: the write that follows admission (Processing, Skipped,
                // or Enqueued when it must wait in the buffer) records both transitions, saving a
                // write and a re-read per run. A worker lost before that write leaves it Scheduled,
                // and the redelivered message admits it again (admission is idempotent).
                loaded
                    .execution
                    .transition(ExecutionState::Enqueued, now, "due")
                    .map_err(transition_error)?;
                self.admit(loaded, job).await
            }
            ExecutionState::Enqueued => self.admit(loaded, job).await,
            ExecutionState::Failed => {
                let at = loaded.execution.run.retry_at.unwrap_or(now);
                if at > now {
                    return self.wait_for(&id, at).await;
                }
                let number = loaded.execution.attempts() + 1;
                self.start_attempt(loaded, &mut job, &format!("retry: attempt {number}"), now)
                    .await
            }
            ExecutionState::Processing if loaded.execution.run.awaiting_async => {
                self.async_step(loaded, &mut job).await
            }
            ExecutionState::Processing => match loaded.execution.run.lease_until {
                Some(lease) if lease > now && !self.holder_is_dead(&loaded.execution) => {
                    // Another worker runs the chain; look again when its lease ends.
                    self.wake_at(&id, lease).await?;
                    Ok(Step::Done)
                }
                _ => {
                    loaded.execution.record(
                        now,
                        "the worker running this attempt was lost; running the attempt again",
                    );
                    // A run admitted ahead of its fire time still calls at that time.
                    let at = loaded.execution.run.due.filter(|due| *due > now);
                    self.run_attempt(loaded, &mut job, at.unwrap_or(now)).await
                }
            },
            _ => Ok(Step::Done),
        }
    }

    /// The concurrency gate for an enqueued run. The slot it takes is written with the run's
    /// next write (Processing, Skipped, or Enqueued in the buffer), which also removes the run's
    /// safety-net entry.
    async fn admit(&self, loaded: &mut Loaded, job: StoredJob) -> Result<Step, EngineError> {
        let id = loaded.execution.execution_id.clone();
        let policy = self.policy_of(&loaded.execution, &job);
        let (mut after, admission) = self.gate(loaded, &job, policy);
        match admission {
            Admission::Start => {
                let now = self.now();
                self.start_attempt(loaded, &mut after, "started", now).await
            }
            Admission::StartAfterStopping { stop, terminate } => {
                let (to, verb) = if terminate {
                    (ExecutionState::Terminated, "terminated")
                } else {
                    (ExecutionState::Cancelled, "cancelled")
                };
                for other in stop {
                    let reason = format!("{verb} by overlap policy {policy}: {id} started");
                    self.stop_execution(&other, to, &reason).await?;
                }
                let now = self.now();
                self.start_attempt(loaded, &mut after, "started", now).await
            }
            Admission::Skip | Admission::Drop => {
                let running = after.job.state.running.join(", ");
                let reason = if admission == Admission::Skip {
                    format!("skipped by overlap policy {policy}: {running} still running")
                } else {
                    format!(
                        "dropped: the buffer of overlap policy {policy} is full ({} waiting)",
                        after.job.state.buffered.len()
                    )
                };
                self.finish(loaded, Some(&mut after), ExecutionState::Skipped, &reason)
                    .await
            }
            // Waits in the job's buffer; the run that frees a slot sends it. Written when it came
            // straight from Scheduled (to store that it is enqueued) or joined the buffer now.
            Admission::Buffer
                if loaded.job_changed || loaded.record.state != ExecutionState::Enqueued.name() =>
            {
                match self.write_step(loaded, Some(&mut after), &[]).await? {
                    Written::Yes => Ok(Step::Done),
                    Written::ExecutionMoved | Written::JobMoved => Ok(Step::Again),
                }
            }
            Admission::Buffer => Ok(Step::Done),
            Admission::Wait { behind } => self.wait_behind(loaded, &job, &behind).await,
        }
    }

    /// A run that must let `behind`, due before it, through the gate first (runs are admitted in
    /// order per job). When `behind` no longer waits (admitted, over or gone: a line entry a
    /// crash left behind), it leaves the line and the step goes again. Otherwise the run looks
    /// again in [`ORDER_RECHECK`]; `behind`'s admission usually sends it sooner.
    async fn wait_behind(
        &self,
        loaded: &Loaded,
        job: &StoredJob,
        behind: &str,
    ) -> Result<Step, EngineError> {
        let state = &job.job.state;
        let still_waiting = match self.store().get_execution(behind).await? {
            Some(record) => {
                matches!(
                    ExecutionState::parse(&record.state),
                    Some(ExecutionState::Scheduled | ExecutionState::Enqueued)
                ) && !state.buffered.iter().any(|id| id == behind)
            }
            None => state.pending_fires.iter().any(|f| f.execution_id == behind),
        };
        if !still_waiting {
            let mut fixed = job.clone();
            fixed.job.state.waiting.retain(|w| w.execution_id != behind);
            fixed.job.updated_at = self.now();
            return match self.app.save_job_only(&fixed).await {
                Ok(_) | Err(AppError::Conflict(_)) => Ok(Step::Again),
                Err(e) => Err(e.into()),
            };
        }
        let id = &loaded.execution.execution_id;
        self.wake_at(id, self.now() + ORDER_RECHECK).await?;
        Ok(Step::Done)
    }

    /// After a run passed the gate: sends the next run in its job's line when that one is due
    /// already, so a line of due runs (a backfill, triggers) moves at the speed of its writes
    /// rather than of [`ORDER_RECHECK`]. A duplicate message is harmless.
    pub(super) async fn send_next_in_line(&self, job: &StoredJob) -> Result<(), EngineError> {
        let Some(next) = job.job.state.waiting.first() else {
            return Ok(());
        };
        if next.due <= self.now() {
            self.send_dispatch(&next.execution_id, StdDuration::ZERO)
                .await?;
        }
        Ok(())
    }

    /// Whether a scheduled fire reached dispatch too late to run: its nominal time is older than
    /// the job's catch-up window. Triggers and backfills are exempt, and so is a run that already
    /// holds a slot or waits in the buffer (it was admitted in time).
    fn missed_catchup(&self, execution: &Execution, job: &StoredJob) -> bool {
        let state = &job.job.state;
        let id = &execution.execution_id;
        let scheduled = execution.scheduled_by_id == job.job.job_id().as_str();
        if !scheduled || state.running.contains(id) || state.buffered.contains(id) {
            return false;
        }
        execution.scheduled_time < plan::oldest_runnable(&job.job, self.now())
    }

    /// Ends a fire that [missed its catch-up window](Engine::missed_catchup) as `Skipped`,
    /// counted in the job's `missedCatchupWindow` in the same write.
    async fn skip_missed(&self, loaded: &mut Loaded, job: StoredJob) -> Result<Step, EngineError> {
        let now = self.now();
        let mut after = job;
        let state = &mut after.job.state;
        state.missed_catchup_window += 1;
        state
            .waiting
            .retain(|w| w.execution_id != loaded.execution.execution_id);
        after.job.updated_at = now;
        loaded.job_changed = true;
        loaded.clear_net = true;
        let late = now - loaded.execution.scheduled_time;
        let window = now - plan::oldest_runnable(&after.job, now);
        let reason = format!(
            "missed the catch-up window: due {}, reached dispatch {} s later (window {} s)",
            loaded.execution.scheduled_time.to_rfc3339(),
            late.num_seconds(),
            window.num_seconds()
        );
        self.finish(loaded, Some(&mut after), ExecutionState::Skipped, &reason)
            .await
    }

    /// Admits a scheduled run before its fire time `due` (within
    /// [`EngineConfig::admit_ahead`](super::EngineConfig::admit_ahead)): takes its slot and
    /// writes `Processing` now, then holds it and calls at `due`. Only when admission cannot
    /// depend on what happens until then: the run starts without skipping, buffering or stopping
    /// another, and no later run may stop it (not `CancelOther` or `TerminateOther`). Otherwise
    /// it waits for its time and is admitted then, as without this.
    async fn admit_ahead(
        &self,
        loaded: &mut Loaded,
        job: StoredJob,
        due: DateTime<Utc>,
    ) -> Result<Step, EngineError> {
        let id = loaded.execution.execution_id.clone();
        let policy = self.policy_of(&loaded.execution, &job);
        let stoppable = matches!(
            policy,
            OverlapPolicy::CancelOther | OverlapPolicy::TerminateOther
        );
        // A run whose scheduleToStart ends before its fire time times out at that time, not
        // ahead of it.
        let start_by = retry::schedule_to_start_deadline(
            loaded.execution.scheduled_time,
            job.job.definition.timeouts(),
        );
        if stoppable || start_by.is_some_and(|by| due > by) {
            return self.wait_for(&id, due).await;
        }
        // When the gate does not simply start it, nothing is written: `loaded` is dropped.
        let (mut after, admission) = self.gate(loaded, &job, policy);
        if admission != Admission::Start {
            return self.wait_for(&id, due).await;
        }
        loaded
            .execution
            .transition(
                ExecutionState::Enqueued,
                self.now(),
                "admitted ahead of its fire time",
            )
            .map_err(transition_error)?;
        self.start_attempt(loaded, &mut after, "started", due).await
    }

    /// The concurrency gate, on a copy of `job`: its decision, and the job as it leaves it.
    /// Marks `loaded` so that its next write also writes that job (when the gate changed it) and
    /// removes the run's safety-net entry.
    fn gate(
        &self,
        loaded: &mut Loaded,
        job: &StoredJob,
        policy: OverlapPolicy,
    ) -> (StoredJob, Admission) {
        let mut after = job.clone();
        let admission = plan::admit(&mut after.job, &loaded.execution.execution_id, policy);
        loaded.job_changed = after.job != job.job;
        if loaded.job_changed {
            after.job.updated_at = self.now();
        }
        loaded.clear_net = true;
        (after, admission)
    }

    /// Whether a run held for its fire time is as its admission left it: no cancel, terminate,
    /// stopping overlap policy or parent close policy wrote it since, and its job still exists.
    /// Reads the records without decoding them: only their presence and version matter.
    async fn still_admitted(&self, loaded: &Loaded) -> Result<bool, EngineError> {
        let read = self
            .store()
            .read_many(
                std::slice::from_ref(&loaded.record.execution_id),
                std::slice::from_ref(&loaded.record.job_id),
            )
            .await?;
        let unchanged = read
            .executions
            .first()
            .and_then(Option::as_ref)
            .is_some_and(|record| record.version == loaded.record.version);
        let job_exists = read.jobs.first().is_some_and(Option::is_some);
        Ok(unchanged && job_exists)
    }

    /// Whether the lease on a running attempt belongs to a process known to be dead: this
    /// engine is the only one alive on its store (see
    /// [`EngineConfig::sole_engine`](super::EngineConfig::sole_engine)) and the lease is not its own.
    fn holder_is_dead(&self, execution: &Execution) -> bool {
        self.config.sole_engine
            && execution.run.lease_holder.as_deref() != Some(self.config.incarnation.as_str())
    }

    fn policy_of(&self, execution: &Execution, job: &StoredJob) -> OverlapPolicy {
        execution
            .run
            .overlap
            .unwrap_or_else(|| job.job.definition.overlap())
    }

    /// Enters Processing for a new attempt (the first or a retry) starting at `now` (the present,
    /// or a fire time just ahead) and runs it.
    async fn start_attempt(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<Step, EngineError> {
        let definition = &job.job.definition;
        let first = loaded.execution.attempts() == 0;
        loaded
            .execution
            .transition(ExecutionState::Processing, now, message)
            .map_err(transition_error)?;
        if first {
            let deadline = retry::schedule_to_start_deadline(
                loaded.execution.scheduled_time,
                definition.timeouts(),
            );
            if deadline.is_some_and(|d| now > d) {
                return self
                    .settle(
                        loaded,
                        job,
                        AttemptEnd::Failed {
                            outcome: Outcome::Timeout,
                            response: Value::Null,
                            detail: "scheduleToStart passed before the first attempt".into(),
                        },
                        true,
                    )
                    .await;
            }
        }
        self.run_attempt(loaded, job, now).await
    }

    /// Leases the attempt starting at `now`, writes it, waits for `now` if it is still ahead,
    /// runs the action and settles the outcome.
    async fn run_attempt(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
        now: DateTime<Utc>,
    ) -> Result<Step, EngineError> {
        let definition = &job.job.definition;
        let deadline = retry::attempt_deadline(now, definition.timeout_seconds())
            .unwrap_or(now + chrono::Duration::seconds(60));
        // The worker's own bound (one Lambda invocation): its calls end by it, and its lease
        // with it, so a dead invocation's run is taken over soon.
        let held_until = self
            .config
            .max_hold
            .and_then(|hold| chrono::Duration::from_std(hold).ok())
            .map_or(deadline, |hold| deadline.min(now + hold));
        let run = &mut loaded.execution.run;
        run.attempt_deadline = Some(deadline);
        run.lease_until = Some(held_until + LEASE_MARGIN);
        run.lease_holder = Some(self.config.incarnation.clone());
        run.retry_at = None;
        run.awaiting_async = false;
        run.next_check = None;
        run.last_report_at = Some(now);
        run.responses.clear();
        run.named.clear();
        match self.write_step(loaded, Some(job), &[]).await? {
            Written::Yes => {}
            Written::ExecutionMoved | Written::JobMoved => return Ok(Step::Again),
        }
        // Admitted ahead: the call itself waits for the fire time, and is not made if the run
        // was stopped meanwhile.
        let ahead = now > self.now();
        if ahead {
            self.app.sleep_until(now - HELD_RECHECK).await;
            if !self.still_admitted(loaded).await? {
                return Ok(Step::Again);
            }
        }
        self.app.sleep_until(now).await;
        let end = self.run_action(loaded, job, held_until).await;
        if ahead {
            // Runs admitted ahead wake together at their fire time. One whose answer is back lets
            // those still to call go first: recording an outcome can wait a moment, a call
            // cannot.
            tokio::task::yield_now().await;
        }
        self.settle(loaded, job, end, false).await
    }

    /// Runs the job's action: the request chain, or a queue or bus target.
    async fn run_action(
        &self,
        loaded: &mut Loaded,
        job: &StoredJob,
        deadline: DateTime<Utc>,
    ) -> AttemptEnd {
        let definition = &job.job.definition;
        match definition.action() {
            Action::Target(target) => self.send_target(&loaded.execution, target).await,
            Action::Requests(steps) => {
                let mut last = Value::Null;
                let mut last_status = 200;
                for (index, step) in steps.iter().enumerate() {
                    let vars = self.variables(job, &loaded.execution);
                    let key = format!(
                        "{}:{}:{index}",
                        loaded.execution.execution_id,
                        loaded.execution.attempts()
                    );
                    let response = match self.call(&step.http, &vars, job, deadline, &key).await {
                        Ok(response) => response,
                        Err(end) => return end,
                    };
                    let body = keep(response_value(&response.body));
                    let run = &mut loaded.execution.run;
                    run.responses.push(body.clone());
                    if let Some(name) = &step.resp_env_name {
                        run.named.insert(name.clone(), body.clone());
                    }
                    let outcome = Outcome::Http {
                        status: response.status,
                    };
                    if !response.is_success() {
                        return AttemptEnd::Failed {
                            outcome,
                            response: body,
                            detail: format!(
                                "request[{index}] {} answered {}",
                                step.http.method, response.status
                            ),
                        };
                    }
                    last = body;
                    last_status = response.status;
                }
                if definition.is_async() {
                    return AttemptEnd::AwaitAsync;
                }
                AttemptEnd::Succeeded {
                    outcome: Outcome::Http {
                        status: last_status,
                    },
                    result: Some(last.clone()),
                    response: last,
                }
            }
        }
    }

    /// Expands and sends one templated call. `Err` carries the attempt's end when there was no
    /// answer (or the template could not be expanded).
    async fn call(
        &self,
        http: &HttpTemplate,
        vars: &Variables,
        job: &StoredJob,
        deadline: DateTime<Utc>,
        idempotency_key: &str,
    ) -> Result<crate::ports::http::HttpResponse, AttemptEnd> {
        let request = self
            .build_request(http, vars, job, deadline)
            .map_err(|detail| AttemptEnd::Failed {
                outcome: Outcome::Transport(detail.clone()),
                response: Value::Null,
                detail,
            })?;
        let mut request = request;
        request
            .headers
            .push((IDEMPOTENCY_KEY_HEADER.into(), idempotency_key.to_string()));
        let url = request.url.clone();
        self.http
            .send(request)
            .await
            .map_err(|e| http_failure(&url, e))
    }

    /// Expands a templated call into a request, resolving `service://` URLs.
    pub(super) fn build_request(
        &self,
        http: &HttpTemplate,
        vars: &Variables,
        job: &StoredJob,
        deadline: DateTime<Utc>,
    ) -> Result<HttpRequest, String> {
        let url = expand::expand_str(&http.url, vars).map_err(|e| format!("url: {e}"))?;
        let url = self.resolve_service(&url, job.service.as_deref())?;
        let mut headers = Vec::with_capacity(http.headers.len() + 2);
        for (name, value) in &http.headers {
            let value =
                expand::expand_str(value, vars).map_err(|e| format!("headers.{name}: {e}"))?;
            headers.push((name.clone(), value));
        }
        let body = match &http.body {
            None => None,
            Some(body) => {
                let expanded = expand::expand_body(body, vars).map_err(|e| format!("body: {e}"))?;
                Some(match expanded {
                    Value::String(text) => text.into_bytes(),
                    other => {
                        if !headers
                            .iter()
                            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                        {
                            headers.push(("Content-Type".into(), "application/json".into()));
                        }
                        serde_json::to_vec(&other).map_err(|e| format!("body: {e}"))?
                    }
                })
            }
        };
        let left = (deadline - self.now()).to_std().unwrap_or_default();
        Ok(HttpRequest {
            method: http.method.as_str().to_string(),
            url,
            headers,
            body,
            timeout: left
                .min(DEFAULT_CALL_TIMEOUT)
                .max(StdDuration::from_millis(1)),
        })
    }

    /// `service://name/path` → the configured base URL of `name` + `/path`; `service:/path` → the
    /// job's own service (the one that declared it). Other URLs pass through.
    fn resolve_service(&self, url: &str, own_service: Option<&str>) -> Result<String, String> {
        let (name, path) = if let Some(rest) = url.strip_prefix("service://") {
            match rest.split_once('/') {
                Some((name, path)) => (name.to_string(), path.to_string()),
                None => (rest.to_string(), String::new()),
            }
        } else if let Some(path) = url.strip_prefix("service:/") {
            let own = own_service.ok_or_else(|| {
                format!("{url}: service:/ needs the job's own service, and no service declared this job")
            })?;
            (own.to_string(), path.to_string())
        } else {
            return Ok(url.to_string());
        };
        let base = self.config.services.get(&name).ok_or_else(|| {
            format!("{url}: service {name:?} is not in the service map (SUNDIAL_SERVICES)")
        })?;
        Ok(format!("{}/{}", base.trim_end_matches('/'), path))
    }

    /// Sends a run of a queue or bus target job.
    async fn send_target(&self, execution: &Execution, target: &Target) -> AttemptEnd {
        let detail = json!({
            "jobId": execution.job_id.as_str(),
            "executionId": execution.execution_id,
            "executeNumber": execution.execute_number,
            "scheduledTime": json_time(execution.scheduled_time),
            "arguments": execution.arguments,
        });
        let sent = match target {
            Target::Sqs { queue_url } => {
                self.publisher
                    .send_to_queue(queue_url, &detail.to_string())
                    .await
            }
            Target::EventBridge {
                bus_name,
                source,
                detail_type,
            } => {
                self.publisher
                    .publish(&BusEvent {
                        bus: Some(bus_name.clone()),
                        source: source.clone(),
                        detail_type: detail_type.clone(),
                        detail: detail.clone(),
                    })
                    .await
            }
        };
        match sent {
            Ok(()) => AttemptEnd::Succeeded {
                outcome: Outcome::Http { status: 200 },
                result: None,
                response: Value::Null,
            },
            Err(e) => AttemptEnd::Failed {
                outcome: Outcome::Transport(e.to_string()),
                response: Value::Null,
                detail: format!("target: {e}"),
            },
        }
    }

    /// One step of a run waiting for an async job: time out, poll `checkUrl`, or wait.
    async fn async_step(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        let definition = &job.job.definition;
        let run = &loaded.execution.run;
        let deadline = run.attempt_deadline.unwrap_or(now);
        let heartbeat =
            retry::heartbeat_deadline(run.last_report_at.unwrap_or(now), definition.timeouts());
        if deadline <= now || heartbeat.is_some_and(|h| h <= now) {
            let detail = if deadline <= now {
                format!(
                    "no final status within timeoutSeconds ({} s)",
                    definition.timeout_seconds()
                )
            } else {
                "no progress report within the heartbeat timeout".to_string()
            };
            let end = AttemptEnd::Failed {
                outcome: Outcome::Timeout,
                response: Value::Null,
                detail,
            };
            return self.settle(loaded, job, end, false).await;
        }
        let next_wake = |next_check: Option<DateTime<Utc>>| {
            [Some(deadline), heartbeat, next_check]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(deadline)
        };
        let Some(check) = definition.check_url() else {
            // Feedback only: wake at the deadline to time out if no feedback came.
            self.wake_at(&loaded.execution.execution_id, next_wake(None))
                .await?;
            return Ok(Step::Done);
        };
        let next_check = run.next_check.unwrap_or(now);
        if next_check > now {
            self.wake_at(&loaded.execution.execution_id, next_wake(Some(next_check)))
                .await?;
            return Ok(Step::Done);
        }
        let vars = self.variables(job, &loaded.execution);
        let key = format!(
            "{}:{}:check",
            loaded.execution.execution_id,
            loaded.execution.attempts()
        );
        let polled = self.call(check, &vars, job, deadline, &key).await;
        let report = match polled {
            Ok(response) if response.is_success() => {
                let body = response_value(&response.body);
                match AsyncReport::parse(&body) {
                    Ok(report) => Ok((report, body)),
                    Err(e) => Err(format!("checkUrl answered an unreadable status: {e}")),
                }
            }
            Ok(response) => Err(format!("checkUrl answered {}", response.status)),
            Err(AttemptEnd::Failed { detail, .. }) => Err(format!("checkUrl: {detail}")),
            Err(_) => Err("checkUrl failed".to_string()),
        };
        match report {
            Ok((report, body)) => {
                self.apply_report(loaded, job, report, body, "checkUrl")
                    .await
            }
            Err(problem) => {
                // A failed poll is not a failed job: poll again until the attempt times out.
                let next = self.now() + check_rate(job);
                loaded.execution.record(now, problem);
                loaded.execution.run.next_check = Some(next);
                if !self.write_execution(loaded).await? {
                    return Ok(Step::Again);
                }
                self.wake_at(&loaded.execution.execution_id, next_wake(Some(next)))
                    .await?;
                Ok(Step::Done)
            }
        }
    }

    /// Applies an async status report (from a poll or the feedback route) to a running execution.
    async fn apply_report(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
        report: AsyncReport,
        body: Value,
        from: &str,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        let outcome = Outcome::from_report(&report);
        let mut line = format!("{from}: status {}", report.status);
        if let Some(progress) = &report.progress {
            line.push_str(&format!(", progress {progress}"));
        }
        if let Some(message) = &report.message {
            line.push_str(&format!(": {message}"));
        }
        let progressed = loaded.execution.progress != report.progress;
        let execution = &mut loaded.execution;
        execution.record(now, line);
        if report.progress.is_some() {
            execution.progress = report.progress.clone();
        }
        execution.run.last_report_at = Some(now);
        match outcome.verdict() {
            Verdict::Running => {
                if job.job.definition.check_url().is_some() && execution.run.awaiting_async {
                    execution.run.next_check = Some(now + check_rate(job));
                }
                if !self.write_execution(loaded).await? {
                    return Ok(Step::Again);
                }
                if progressed {
                    self.send_notifications(job, &loaded.execution, &outcome, &body)
                        .await?;
                }
                if loaded.execution.run.awaiting_async {
                    // A feedback-only job is looked at again when its heartbeat would run out:
                    // nothing else wakes it before the attempt deadline.
                    let heartbeat = retry::heartbeat_deadline(now, job.job.definition.timeouts());
                    let next = loaded
                        .execution
                        .run
                        .next_check
                        .into_iter()
                        .chain(loaded.execution.run.attempt_deadline)
                        .chain(heartbeat)
                        .min()
                        .unwrap_or(now);
                    self.wake_at(&loaded.execution.execution_id, next).await?;
                }
                Ok(Step::Done)
            }
            Verdict::Succeeded => {
                let end = AttemptEnd::Succeeded {
                    outcome,
                    result: report.data.clone(),
                    response: body,
                };
                self.settle(loaded, job, end, false).await
            }
            Verdict::Failed { code, .. } => {
                let detail = format!("{from} reported {} with error {code}", report.status);
                let end = AttemptEnd::Failed {
                    outcome,
                    response: body,
                    detail,
                };
                self.settle(loaded, job, end, false).await
            }
        }
    }

    /// Records how an attempt ended: success, waiting for an async job, a retry, or the end.
    /// `timed_out_before_start` ends the run without retries (scheduleToStart).
    async fn settle(
        &self,
        loaded: &mut Loaded,
        job: &mut StoredJob,
        end: AttemptEnd,
        timed_out_before_start: bool,
    ) -> Result<Step, EngineError> {
        // Runs of a job that overlap (an `AllowAll` job, a backfill) would race each other for
        // the job's write when they end together: each writes its end alone, and frees its slot
        // in a write shared with the others ([`Engine::after_final`]). A run alone on its job
        // ends and frees its slot in one write. (An admission not yet written rides on this
        // write, so it cannot go alone.)
        let mut separate = !loaded.job_changed && job.job.state.running.len() > 1;
        let mut job_races = 0;
        for _ in 0..MAX_STEP_RETRIES {
            // What this round changes is applied to the execution as it is now; a write lost to
            // a concurrent job writer applies it again from here.
            let unsettled = loaded.execution.clone();
            let definition = &job.job.definition;
            let now = self.now();
            let execution = &mut loaded.execution;
            if execution.is_finished() {
                // A user or a policy ended it while the attempt ran.
                self.after_final(execution, Some(job)).await?;
                return Ok(Step::Done);
            }
            let mut wake = None;
            let mut notify = None;
            match &end {
                AttemptEnd::AwaitAsync => {
                    let waiting_for = if definition.check_url().is_some() {
                        "checkUrl polls"
                    } else {
                        "feedback"
                    };
                    execution.record(
                        now,
                        format!("request chain done; waiting for {waiting_for}"),
                    );
                    let run = &mut execution.run;
                    run.awaiting_async = true;
                    run.lease_until = None;
                    run.next_check = definition.check_url().map(|_| now + check_rate(job));
                    // The heartbeat counts from the attempt's start until the first report.
                    let heartbeat = retry::heartbeat_deadline(
                        run.last_report_at.unwrap_or(now),
                        definition.timeouts(),
                    );
                    wake = [run.next_check, run.attempt_deadline, heartbeat]
                        .into_iter()
                        .flatten()
                        .min();
                }
                AttemptEnd::Succeeded {
                    outcome,
                    result,
                    response,
                } => {
                    execution
                        .transition(ExecutionState::Succeeded, now, "succeeded")
                        .map_err(transition_error)?;
                    if result.is_some() {
                        execution.result = result.clone();
                    }
                    execution.error = None;
                    execution.run.lease_until = None;
                    notify = Some((outcome, response));
                }
                AttemptEnd::Failed {
                    outcome,
                    response,
                    detail,
                } => {
                    let (code, retryable) = match outcome.verdict() {
                        Verdict::Failed { code, retryable } => (code, retryable),
                        _ => ("failed".to_string(), true),
                    };
                    let decision = if retryable && !timed_out_before_start {
                        retry::decide(
                            definition,
                            &code,
                            &execution.run.retries,
                            execution.scheduled_time,
                            now,
                        )
                    } else {
                        RetryDecision::GiveUp {
                            reason: retry::GiveUpReason::NoRetryRule,
                            detail: format!("{code} is final"),
                        }
                    };
                    execution.error = Some(code.clone());
                    execution.run.lease_until = None;
                    execution.run.awaiting_async = false;
                    match decision {
                        RetryDecision::RetryAfter {
                            at, rule, number, ..
                        } => {
                            execution.run.retries.record_retry(&code);
                            execution.run.retry_at = Some(at);
                            let message = format!(
                                "{detail}; retry {number} by {rule} at {}",
                                at.to_rfc3339()
                            );
                            execution
                                .transition(ExecutionState::Failed, now, message)
                                .map_err(transition_error)?;
                            wake = Some(at);
                        }
                        RetryDecision::GiveUp { detail: why, .. } => {
                            execution
                                .transition(
                                    ExecutionState::Terminated,
                                    now,
                                    format!("{detail}; not retried: {why}"),
                                )
                                .map_err(transition_error)?;
                        }
                    }
                    notify = Some((outcome, response));
                }
            }
            // A run that ended frees its slot and leaves its result on the job in the same
            // write as its final state. A run its slot goes to (from the buffer) gets a safety net
            // in that write too, so a crash before its message is sent does not strand it. After
            // losing the job twice to other writers (or finding it gone) the execution is written
            // alone and the job's side is left to `after_final`, which retries on its own: the
            // attempt's outcome must not wait on a busy job, or its call would be made again.
            let ride = loaded.job_changed;
            let before = job.job.clone();
            let finished = loaded.execution.is_finished();
            let started = if finished && !separate {
                let started = self.apply_final(job, &loaded.execution);
                if job.job != before {
                    job.job.updated_at = now;
                    loaded.job_changed = true;
                }
                started
            } else {
                Vec::new()
            };
            let nets = self.start_nets(&started);
            let also: Vec<Write<'_>> = nets
                .iter()
                .map(|(key, due)| Write::SetWakeup(key, Some(*due)))
                .collect();
            let target = if separate { None } else { Some(&mut *job) };
            match self.write_step(loaded, target, &also).await? {
                Written::Yes => {}
                // An admission not yet written starts over.
                Written::ExecutionMoved | Written::JobMoved if ride => return Ok(Step::Again),
                // Someone else wrote the execution meanwhile: apply the end to what they wrote.
                Written::ExecutionMoved => {
                    job.job = before;
                    let id = loaded.execution.execution_id.clone();
                    match self.read_execution(&id).await? {
                        Some(fresh) => *loaded = fresh,
                        None => return Ok(Step::Done),
                    }
                    continue;
                }
                // The job moved: apply the end to the job as it is now.
                Written::JobMoved => {
                    loaded.execution = unsettled;
                    loaded.job_changed = false;
                    job_races += 1;
                    match self.app.load(&loaded.execution.job_id).await {
                        Ok(fresh) => *job = fresh,
                        Err(AppError::NotFound(_)) => separate = true,
                        Err(e) => return Err(e.into()),
                    }
                    separate |= job_races >= 2;
                    continue;
                }
            }
            if finished {
                if separate {
                    self.after_final(&loaded.execution, None).await?;
                } else {
                    self.plan_backfill_if_room(job).await;
                    self.follow_up(&loaded.execution, started, job.job.state.has_children)
                        .await?;
                }
            }
            if let Some((outcome, response)) = notify {
                self.send_notifications(job, &loaded.execution, outcome, response)
                    .await?;
            }
            if let Some(at) = wake {
                self.wake_at(&loaded.execution.execution_id, at).await?;
            }
            return Ok(Step::Done);
        }
        Err(EngineError::Contended(format!(
            "execution {}",
            loaded.execution.execution_id
        )))
    }

    /// Ends an execution that has not started (or whose job is gone) in `to`; `job` is the job
    /// when the step changed it (the write stores both).
    async fn finish(
        &self,
        loaded: &mut Loaded,
        mut job: Option<&mut StoredJob>,
        to: ExecutionState,
        reason: &str,
    ) -> Result<Step, EngineError> {
        let now = self.now();
        loaded
            .execution
            .transition(to, now, reason)
            .map_err(transition_error)?;
        loaded.execution.run.lease_until = None;
        match self.write_step(loaded, job.as_deref_mut(), &[]).await? {
            Written::Yes => {}
            Written::ExecutionMoved | Written::JobMoved => return Ok(Step::Again),
        }
        self.after_final(&loaded.execution, job.as_deref()).await?;
        Ok(Step::Done)
    }

    /// Cancels or terminates another execution (overlap policies, parent close policies).
    /// Already finished executions are left as they are. Its follow-up (freeing its slot, its own
    /// children) runs in a dispatch of its own, which also keeps this step from recursing.
    pub(super) async fn stop_execution(
        &self,
        execution_id: &str,
        to: ExecutionState,
        reason: &str,
    ) -> Result<(), EngineError> {
        for _ in 0..MAX_STEP_RETRIES {
            let Some(mut loaded) = self.read_execution(execution_id).await? else {
                return Ok(());
            };
            if loaded.execution.is_finished() {
                return Ok(());
            }
            // Only running or failed runs can be terminated; anything earlier is cancelled.
            let to = if sundial_core::execution::can_transition(loaded.execution.state(), to) {
                to
            } else {
                ExecutionState::Cancelled
            };
            loaded
                .execution
                .transition(to, self.now(), reason)
                .map_err(transition_error)?;
            loaded.execution.run.lease_until = None;
            if self.write_execution(&mut loaded).await? {
                return self.send_dispatch(execution_id, StdDuration::ZERO).await;
            }
        }
        Err(EngineError::Contended(format!("execution {execution_id}")))
    }

    /// What a finished execution changes on its job: its slot freed (returning the buffered runs
    /// that start in it), the last result or failure, and a pause on failure. Idempotent.
    fn apply_final(&self, stored: &mut StoredJob, execution: &Execution) -> Vec<String> {
        let id = &execution.execution_id;
        let policy = self.policy_of(execution, stored);
        let started = plan::release(&mut stored.job, id, policy);
        let job_state = &mut stored.job.state;
        match execution.state() {
            ExecutionState::Succeeded => {
                job_state.last_completion_result =
                    Some(execution.result.clone().unwrap_or(Value::Null));
                // Seed 000: a success clears the last failure.
                job_state.last_failure = None;
            }
            // A run ended for good by its own failure; not one a user or a policy stopped.
            state @ ExecutionState::Terminated if execution.error.is_some() => {
                job_state.last_failure = Some(json!({
                    "executionId": id,
                    "error": execution.error,
                    "finishedAt": execution.finished_at().map(json_time),
                }));
                if stored.job.definition.pause_on_failure() && stored.job.definition.active() {
                    let note = format!(
                        "paused on failure: execution {id} ended {} ({})",
                        state,
                        execution.error.as_deref().unwrap_or("no error code")
                    );
                    stored.job.pause(Some(note), self.now());
                }
            }
            _ => {}
        }
        started
    }

    /// The follow-up of a finished execution, done on every delivery until acknowledged: its
    /// job's side ([`Engine::apply_final`]) written unless already there, then [`Engine::follow_up`].
    ///
    /// `job` is a recent read of the execution's job, if the caller has one: it saves a read when
    /// nobody wrote the job since, and the write when the job already shows the run as over.
    ///
    /// Finished runs of one job are settled on it together ([`Engine::release_on_job`]): a
    /// window of backfill runs finishing at once costs a write or two of the job, not a race of
    /// hundreds. A run whose batch could not be written settles alone, below.
    pub(super) async fn after_final(
        &self,
        execution: &Execution,
        job: Option<&StoredJob>,
    ) -> Result<(), EngineError> {
        let batched = self
            .finals
            .run(
                execution.job_id.as_str(),
                execution.clone(),
                |executions| async move {
                    // A batch that fails leaves each of its runs to settle alone and meet the error.
                    self.release_on_job(&executions, job).await.ok()
                },
            )
            .await;
        let released = match batched {
            Some(released) => Some(released),
            None => self
                .release_on_job(std::slice::from_ref(execution), job)
                .await?
                .pop(),
        };
        // One answer per run: `None` cannot happen; if it did, freeing nothing and looking for
        // children is the safe reading.
        let released = released.unwrap_or(Released {
            started: Vec::new(),
            has_children: true,
        });
        self.follow_up(execution, released.started, released.has_children)
            .await
    }

    /// [`Engine::apply_final`] for finished runs of one job, in order, with one read and one write
    /// of the job (`known` saves the read when nobody wrote the job since). Answers, per run, the
    /// buffered runs its slot went to (with their safety nets written) and whether the job has
    /// children; a deleted job frees nothing and may have children.
    async fn release_on_job(
        &self,
        executions: &[Execution],
        known: Option<&StoredJob>,
    ) -> Result<Vec<Released>, EngineError> {
        let Some(job_id) = executions.first().map(|e| e.job_id.clone()) else {
            return Ok(Vec::new());
        };
        let mut known = known.cloned();
        for _ in 0..MAX_STEP_RETRIES {
            let mut stored = match known.take() {
                Some(stored) => stored,
                None => match self.app.load(&job_id).await {
                    Ok(stored) => stored,
                    // A deleted job's children may still be there.
                    Err(AppError::NotFound(_)) => {
                        let gone = Released {
                            started: Vec::new(),
                            has_children: true,
                        };
                        return Ok(vec![gone; executions.len()]);
                    }
                    Err(e) => return Err(e.into()),
                },
            };
            let before = stored.job.clone();
            let started: Vec<Vec<String>> = executions
                .iter()
                .map(|execution| self.apply_final(&mut stored, execution))
                .collect();
            let released = |stored: &StoredJob| {
                started
                    .iter()
                    .map(|started| Released {
                        started: started.clone(),
                        has_children: stored.job.state.has_children,
                    })
                    .collect()
            };
            if stored.job == before {
                return Ok(released(&stored));
            }
            stored.job.updated_at = self.now();
            let record = encode_job(&stored.job, stored.version, stored.service.clone());
            let nets = self.start_nets(&started.concat());
            let job_key = job_wakeup_key(stored.job.job_id());
            let mut writes = vec![Write::UpdateJob(&record)];
            writes.extend(
                nets.iter()
                    .map(|(key, due)| Write::SetWakeup(key, Some(*due))),
            );
            let next = stored.job.next_fire();
            if next != before.next_fire() {
                writes.push(Write::SetWakeup(&job_key, next));
            }
            match self.store().write_all(&writes).await {
                Ok(()) => {
                    self.plan_backfill_if_room(&stored).await;
                    return Ok(released(&stored));
                }
                Err(WriteAllError {
                    index: Some(0),
                    error: StoreError::VersionConflict { .. } | StoreError::NotFound(_),
                }) => continue,
                Err(e) => return Err(StoreError::from(e).into()),
            }
        }
        Err(EngineError::Contended(format!("job {job_id}")))
    }

    /// Plans the job's waiting backfill at once when its window has room for a planning's worth
    /// of fires again, rather than at the next tick: a backfill then drains at the speed of its
    /// runs. A failure is only logged: the tick plans it anyway.
    async fn plan_backfill_if_room(&self, stored: &StoredJob) {
        if !plan::backfill_has_room(&stored.job, super::tick::BACKFILL_FIRES_PER_PLAN) {
            return;
        }
        if let Err(e) = self.plan_job_now(stored.job.job_id(), self.now()).await {
            tracing::warn!(job_id = %stored.job.job_id(), error = %e, "planning a backfill's next fires; the tick will");
        }
    }

    /// Safety nets for runs a freed slot starts: written with the release, removed by each run's
    /// admitting write.
    fn start_nets(&self, started: &[String]) -> Vec<(String, DateTime<Utc>)> {
        let due = self.now() + crate::records::SAFETY_NET_GRACE;
        started
            .iter()
            .map(|id| (crate::records::execution_wakeup_key(id), due))
            .collect()
    }

    /// What follows a finished execution once its job shows it as over: start the buffered runs
    /// its slot went to and apply its children's parent close policies.
    async fn follow_up(
        &self,
        execution: &Execution,
        started: Vec<String>,
        has_children: bool,
    ) -> Result<(), EngineError> {
        for next in started {
            self.send_dispatch(&next, StdDuration::ZERO).await?;
        }
        if has_children {
            self.close_children(execution).await?;
        }
        Ok(())
    }

    /// Applies the parent close policy of every child job of this execution's job.
    async fn close_children(&self, execution: &Execution) -> Result<(), EngineError> {
        let filter = JobFilter {
            parent_job: Some(execution.job_id.to_string()),
            ..JobFilter::default()
        };
        let mut page = PageRequest::first(100);
        loop {
            let children = self.store().list_jobs(&filter, &page).await?;
            for record in &children.items {
                let child = decode_job(record)?;
                let definition = &child.job.definition;
                let to = match definition.parent_close_policy() {
                    sundial_core::job::ParentClosePolicy::Abandon => continue,
                    sundial_core::job::ParentClosePolicy::Cancel => ExecutionState::Cancelled,
                    sundial_core::job::ParentClosePolicy::Terminate => ExecutionState::Terminated,
                };
                if definition
                    .parent_job_execution()
                    .is_some_and(|n| n != execution.execute_number)
                {
                    continue;
                }
                let reason = format!(
                    "parent execution {} ended {}; parent close policy {}",
                    execution.execution_id,
                    execution.state(),
                    definition.parent_close_policy()
                );
                for running in child
                    .job
                    .state
                    .running
                    .iter()
                    .chain(&child.job.state.buffered)
                {
                    self.stop_execution(running, to, &reason).await?;
                }
            }
            match children.next_cursor {
                Some(cursor) => page.cursor = Some(cursor),
                None => return Ok(()),
            }
        }
    }

    /// Applies an async job's report from the feedback route.
    pub(super) async fn apply_feedback(
        &self,
        execution_id: &str,
        body: &Value,
    ) -> Result<(), EngineError> {
        let report = AsyncReport::parse(body).map_err(|e| AppError::Invalid(e.under("body")))?;
        for _ in 0..MAX_STEP_RETRIES {
            let Some(mut loaded) = self.read_execution(execution_id).await? else {
                return Err(AppError::NotFound(format!("execution {execution_id}")).into());
            };
            if loaded.execution.state() != ExecutionState::Processing {
                return Err(AppError::Conflict(format!(
                    "execution {execution_id} is {} and not waiting for feedback",
                    loaded.execution.state()
                ))
                .into());
            }
            let mut job = self.app.load(&loaded.execution.job_id).await?;
            if job.job.state.incarnation
                != sundial_core::execution::incarnation_of_execution(execution_id)
            {
                return Err(
                    AppError::NotFound(format!("the job of execution {execution_id}")).into(),
                );
            }
            if let Step::Done = self
                .apply_report(
                    &mut loaded,
                    &mut job,
                    report.clone(),
                    body.clone(),
                    "feedback",
                )
                .await?
            {
                return Ok(());
            }
        }
        Err(EngineError::Contended(format!("execution {execution_id}")))
    }

    /// What templates of this execution can read.
    pub(super) fn variables(&self, job: &StoredJob, execution: &Execution) -> Variables {
        let mut vars = Variables::default();
        let id = &execution.execution_id;
        let token = signing::feedback_token(self.app.signing_secret(), id);
        let feedback = format!(
            "{}/jobs/{}/feedback/{}?executionId={id}&token={token}",
            self.config.public_base_url.trim_end_matches('/'),
            execution.job_id,
            execution.execute_number,
        );
        let job_id = json!(execution.job_id.as_str());
        let number = json!(execution.execute_number);
        let system = [
            ("schedulingFeedbackUrl", json!(feedback)),
            ("schedulingJobId", job_id.clone()),
            ("schedulingExecuteNumber", number.clone()),
            ("schedulingRequestCounts", json!(execution.attempts())),
            ("schedulingExecutionId", json!(id)),
            ("jobId", job_id),
            ("executeNumber", number),
            ("executionId", json!(id)),
            ("scheduledTime", json_time(execution.scheduled_time)),
            (
                "lastCompletionResult",
                job.job
                    .state
                    .last_completion_result
                    .clone()
                    .unwrap_or(Value::Null),
            ),
            (
                "lastFailure",
                job.job.state.last_failure.clone().unwrap_or(Value::Null),
            ),
        ];
        vars.system = system
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        if let Some(Value::Object(arguments)) = &execution.arguments {
            vars.arguments = arguments.clone();
        }
        vars.responses = execution.run.responses.clone();
        vars.named = execution.run.named.clone();
        vars.env = self.config.template_env.clone();
        vars
    }
}

fn check_rate(job: &StoredJob) -> chrono::Duration {
    chrono::Duration::seconds(i64::from(job.job.definition.check_rate_seconds().max(1)))
}

/// A response body as JSON when it parses, else as text.
fn response_value(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// Keeps a response small enough to store with the execution (a DynamoDB item is at most 400 KB).
fn keep(value: Value) -> Value {
    let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
    if size <= MAX_KEPT_RESPONSE_BYTES {
        return value;
    }
    json!({ "truncated": true, "bytes": size })
}

fn http_failure(url: &str, error: HttpError) -> AttemptEnd {
    AttemptEnd::Failed {
        outcome: error.outcome(),
        response: Value::Null,
        detail: format!("{url}: {error}"),
    }
}

fn transition_error(e: sundial_core::execution::TransitionError) -> EngineError {
    EngineError::App(AppError::Unavailable(e.to_string()))
}
