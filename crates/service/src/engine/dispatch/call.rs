//! The call: one attempt's action — the templated request chain, or a message to a queue or bus
//! target — made under the run's lease, and its outcome read.

use std::time::Duration as StdDuration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sundial_core::execution::{Execution, ExecutionState};
use sundial_core::expand::{self, Variables};
use sundial_core::job::{Action, HttpTemplate, Target, IDEMPOTENCY_KEY_HEADER};
use sundial_core::outcome::Outcome;
use sundial_core::retry;

use super::admit::{Held, HELD_RECHECK};
use super::{Step, LEASE_MARGIN};
use crate::engine::{Engine, EngineError, Loaded, Written};
use crate::records::{json_time, StoredJob};
use sundial_core::settle::AttemptEnd;
use sundial_ports::cause::chain;
use sundial_ports::events::{BusEvent, EventPublisher, TargetSupport};
use sundial_ports::http::{HttpClient, HttpError, HttpRequest, DEFAULT_CALL_TIMEOUT};
use sundial_ports::queue::Queue;
use sundial_ports::store::Store;

/// The most bytes of one response body kept in the execution for later templates and the result.
pub(super) const MAX_KEPT_RESPONSE_BYTES: usize = 64 * 1024;

impl<S: Store, Q: Queue, H: HttpClient, P: EventPublisher> Engine<S, Q, H, P> {
    /// Leases the attempt starting at `now`, writes it, waits for `now` if it is still ahead,
    /// runs the action and settles the outcome.
    pub(super) async fn run_attempt(
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
        // was stopped or its job paused meanwhile.
        let ahead = now > self.now();
        if ahead {
            self.app.sleep_until(now - HELD_RECHECK).await;
            loaded.pauses_seen = self.pauses();
            if let Some(step) = self.recheck(loaded).await? {
                return Ok(step);
            }
        }
        self.app.sleep_until(now).await;
        // A pause this process answered since the run was last read: one more look before the
        // first call, so that no call follows the pause's answer.
        if loaded.execution.attempts() == 1 && self.pauses() != loaded.pauses_seen {
            if let Some(step) = self.recheck(loaded).await? {
                return Ok(step);
            }
        }
        if loaded.execution.attempts() == 1 {
            // Kept with the attempt's end; a retaken first attempt calls (and counts) again.
            loaded.execution.run.first_call_at = Some(self.now());
        }
        // Boxed, as every deep step is (see `step`): inline they overflow a 2 MiB worker stack
        // in a debug build.
        let Some(end) = Box::pin(self.guarded_action(loaded, job, held_until)).await else {
            return Box::pin(self.after_stopped_call(loaded, job)).await;
        };
        if ahead {
            // Runs admitted ahead wake together at their fire time. One whose answer is back lets
            // those still to call go first: recording an outcome can wait a moment, a call
            // cannot.
            tokio::task::yield_now().await;
        }
        Box::pin(self.settle(loaded, job, end, false)).await
    }

    /// [`Engine::held_check`] of a run about to make its first call: `None` to call, else the
    /// step's end (read again, or skipped: its job was paused).
    async fn recheck(&self, loaded: &mut Loaded) -> Result<Option<Step>, EngineError> {
        match self.held_check(loaded).await? {
            Held::Admitted => Ok(None),
            Held::Moved => Ok(Some(Step::Again)),
            Held::Stopped(why, notes) => {
                let reason = why.reason(notes.as_deref());
                loaded
                    .execution
                    .skip_unstarted(self.now(), &reason)
                    .map_err(super::transition_error)?;
                loaded.execution.run.lease_until = None;
                match self.write_step(loaded, None, &[]).await? {
                    Written::Yes => {}
                    Written::ExecutionMoved | Written::JobMoved => return Ok(Some(Step::Again)),
                }
                tracing::info!(execution_id = %loaded.execution.execution_id, reason, "run not started");
                // Its slot: freed on the job as read now (the pause moved it on).
                self.after_final(&loaded.execution, None).await?;
                Ok(Some(Step::Done))
            }
        }
    }

    /// [`Engine::run_action`] under the rules of a stop (docs/engine.md, "Stopping a call"): the
    /// action's future is dropped, closing its connection, when a stop made in this process
    /// signals it, when its own read of the execution ([`EngineConfig::stop_check_every`], on
    /// AWS) finds the run ended by someone else, or at `deadline`, the attempt's end (a timeout).
    /// `None` when it was stopped.
    ///
    /// [`EngineConfig::stop_check_every`]: crate::engine::EngineConfig::stop_check_every
    async fn guarded_action(
        &self,
        loaded: &mut Loaded,
        job: &StoredJob,
        deadline: DateTime<Utc>,
    ) -> Option<AttemptEnd> {
        let id = loaded.execution.execution_id.clone();
        let version = loaded.record.version;
        let mut guard = self.in_flight.enter(&id);
        let end = {
            // The action first, and outside `tokio::select!`: an action that answers at once
            // never polls the stop branches (`select!` would yield when the task's cooperative
            // budget, shared by a batch of steps joined in one task, runs out).
            let action = Box::pin(self.run_action(loaded, job, deadline));
            let stop = Box::pin(async {
                tokio::select! {
                    () = guard.stopped() => None,
                    () = self.read_for_stop(&id, version) => None,
                    () = self.app.sleep_until(deadline) => Some(AttemptEnd::Failed {
                        outcome: Outcome::Timeout,
                        response: Value::Null,
                        detail: "timed out: the attempt's deadline passed during its call, which \
                                 was closed"
                            .into(),
                    }),
                }
            });
            match futures_util::future::select(action, stop).await {
                futures_util::future::Either::Left((end, _)) => Some(end),
                futures_util::future::Either::Right((end, _)) => end,
            }
        };
        // The action's future is gone: its connection is closed. Only now may a stop waiting
        // for it ([`InFlight::stop`](crate::engine::calls::InFlight::stop)) go on.
        drop(guard);
        end
    }

    /// Resolves when a read of the execution during its call finds it ended by someone else
    /// (written since `version`, and final): first [`EngineConfig::stop_check_every`] after the
    /// call starts, then as often. Never, when that setting is off. One `GetItem` a read.
    ///
    /// [`EngineConfig::stop_check_every`]: crate::engine::EngineConfig::stop_check_every
    async fn read_for_stop(&self, execution_id: &str, version: u64) {
        let Some(every) = self
            .config
            .stop_check_every
            .and_then(|every| chrono::Duration::from_std(every).ok())
            .filter(|every| *every > chrono::Duration::zero())
        else {
            return std::future::pending().await;
        };
        let mut at = self.now() + every;
        loop {
            self.app.sleep_until(at).await;
            match self.store().get_execution(execution_id).await {
                Ok(None) => return,
                Ok(Some(record))
                    if record.version != version
                        && ExecutionState::parse(&record.state)
                            .is_some_and(ExecutionState::is_final) =>
                {
                    return
                }
                Ok(Some(_)) => {}
                Err(e) => {
                    tracing::debug!(execution_id, error = %chain(&e), "reading for a stop during the call; next time");
                }
            }
            at += every;
        }
    }

    /// After a stop closed the run's call: the run as the stop left it, its lease let go (and an
    /// async job's `cancelUrl` called), then its follow-up.
    async fn after_stopped_call(
        &self,
        loaded: &mut Loaded,
        job: &StoredJob,
    ) -> Result<Step, EngineError> {
        let id = loaded.execution.execution_id.clone();
        tracing::info!(execution_id = %id, "call closed: the run was stopped");
        match self.read_execution(&id).await? {
            Some(fresh) => *loaded = fresh,
            None => return Ok(Step::Done),
        }
        if !loaded.execution.is_finished() {
            return Ok(Step::Again);
        }
        self.finish_stopped(loaded, Some(job), true).await
    }

    /// Runs the job's action: the request chain, or a queue or bus target.
    pub(super) async fn run_action(
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
    pub(super) async fn call(
        &self,
        http: &HttpTemplate,
        vars: &Variables,
        job: &StoredJob,
        deadline: DateTime<Utc>,
        idempotency_key: &str,
    ) -> Result<sundial_ports::http::HttpResponse, AttemptEnd> {
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
    pub(in crate::engine) fn build_request(
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
    pub(super) fn resolve_service(
        &self,
        url: &str,
        own_service: Option<&str>,
    ) -> Result<String, String> {
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
    ///
    /// A deployment that delivers no targets (see [`EventPublisher::target_support`]) fails the
    /// attempt, saying why: the control plane refuses such jobs, but one stored before the
    /// deployment lost its targets must not succeed by delivering nothing. A failed send is a
    /// failed attempt like a failed HTTP call (error code `connection`), retried by the job's
    /// policy, with the backend's own error in the execution's log.
    pub(super) async fn send_target(&self, execution: &Execution, target: &Target) -> AttemptEnd {
        if let TargetSupport::Unavailable { how } = self.publisher.target_support() {
            let detail = format!("target: not delivered, this server sends to no SQS queue or EventBridge bus; {how}");
            return AttemptEnd::Failed {
                outcome: Outcome::Transport(detail.clone()),
                response: Value::Null,
                detail,
            };
        }
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
            Err(e) => {
                let why = chain(&e).to_string();
                AttemptEnd::Failed {
                    detail: format!("target: {why}"),
                    outcome: Outcome::Transport(why),
                    response: Value::Null,
                }
            }
        }
    }

    /// What templates of this execution can read ([`Variables::for_execution`]).
    pub(in crate::engine) fn variables(&self, job: &StoredJob, execution: &Execution) -> Variables {
        Variables::for_execution(
            execution,
            &job.job.state,
            &self.config.public_base_url,
            self.app.signing_secret(),
            &self.config.template_env,
        )
    }
}

/// A response body as JSON when it parses, else as text.
pub(super) fn response_value(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// Keeps a response small enough to store with the execution (a DynamoDB item is at most 400 KB).
pub(super) fn keep(value: Value) -> Value {
    let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
    if size <= MAX_KEPT_RESPONSE_BYTES {
        return value;
    }
    json!({ "truncated": true, "bytes": size })
}

pub(super) fn http_failure(url: &str, error: HttpError) -> AttemptEnd {
    AttemptEnd::Failed {
        outcome: error.outcome(),
        response: Value::Null,
        detail: format!("{url}: {error}"),
    }
}
