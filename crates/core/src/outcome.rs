//! What came of an attempt, and which notifications it triggers.
//!
//! An attempt ends in one of four ways: a synchronous call answers with an HTTP status, an async
//! job reports a status (polled from `checkUrl` or posted to the feedback route), the attempt times
//! out, or the call never reaches the service. docs/api.md gives each a code — the status as text
//! (`"500"`), the async report's `error`, `timeout` — and uses those codes twice: retry rules match
//! them (`errorEquals`) and notification rules match them (`stateEquals`). This module turns each
//! ending into an [`Outcome`], says whether it succeeded, failed for a retry or failed for good
//! ([`Outcome::verdict`]), which `stateEquals` values it matches ([`Outcome::match_keys`]), and
//! builds docs/api.md's `schedulingNotifyBody` ([`notify_body`]). Parsing the async report lives here
//! too ([`AsyncReport::parse`]), so the poller and the feedback route read it the same way.
//!
//! ```
//! use sundial_core::outcome::{AsyncReport, Outcome, Verdict};
//! let report = AsyncReport::parse(&serde_json::json!({"status": "failed", "error": "error1"})).unwrap();
//! let outcome = Outcome::from_report(&report);
//! assert_eq!(outcome.verdict(), Verdict::Failed { code: "error1".into(), retryable: true });
//! assert!(outcome.matches(Some("error1")));
//! assert!(!outcome.matches(Some("succeed")));
//! ```

use std::fmt;

use serde_json::{json, Value};

use crate::job::{FieldError, NotificationRule};

/// The error code of an attempt that timed out (docs/api.md's `timeout`).
pub const TIMEOUT: &str = "timeout";
/// Seed 002's code for a sync job's timeout (it has no `timeout`): a sync job's timeouts also
/// match `retry` rules and `stateEquals` notifications for `"500"` (docs/engine.md).
pub const SYNC_TIMEOUT_CODE: &str = "500";
/// The error code of a call that never got an HTTP answer: connection refused, DNS failure, TLS
/// error, reset.
pub const CONNECTION: &str = "connection";
/// The error code of a call the outbound address policy refused (a private, link-local or other
/// special-purpose address that is not allowed): it can never succeed as written, so it is final,
/// not retried, and kept apart from [`CONNECTION`].
pub const ADDRESS_REFUSED: &str = "address-refused";
/// The error code of an async `failed` report that gives no `error`.
pub const FAILED: &str = "failed";
/// The key an async report without a status (still running) matches, besides an empty
/// `stateEquals`.
pub const RUNNING: &str = "running";
/// The longest `error` an async report may give, in bytes (the same bound as `errorEquals`).
pub const MAX_ERROR_BYTES: usize = 256;

/// An async job's status, as its service reports it (docs/api.md's `status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AsyncStatus {
    /// Empty or missing: still running.
    #[default]
    Running,
    /// `succeed`: this attempt succeeded.
    Succeeded,
    /// `failed`: this attempt failed; retry rules apply to its `error`.
    Failed,
    /// `finalSucceed`: succeeded for good.
    FinalSucceeded,
    /// `finalFailed`: failed for good; no retry.
    FinalFailed,
}

impl AsyncStatus {
    /// Every status.
    pub const ALL: [AsyncStatus; 5] = [
        AsyncStatus::Running,
        AsyncStatus::Succeeded,
        AsyncStatus::Failed,
        AsyncStatus::FinalSucceeded,
        AsyncStatus::FinalFailed,
    ];

    /// The name on the wire: `""`, `succeed`, `failed`, `finalSucceed`, `finalFailed`.
    pub fn name(self) -> &'static str {
        match self {
            AsyncStatus::Running => "",
            AsyncStatus::Succeeded => "succeed",
            AsyncStatus::Failed => "failed",
            AsyncStatus::FinalSucceeded => "finalSucceed",
            AsyncStatus::FinalFailed => "finalFailed",
        }
    }

    /// Reads a status name, ignoring case and surrounding blanks; blank is [`AsyncStatus::Running`].
    pub fn parse(text: &str) -> Option<AsyncStatus> {
        let text = text.trim();
        AsyncStatus::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(text))
    }

    /// True when the attempt has ended (any status but running).
    pub fn is_done(self) -> bool {
        self != AsyncStatus::Running
    }

    /// True for `succeed` and `finalSucceed`.
    pub fn is_success(self) -> bool {
        matches!(self, AsyncStatus::Succeeded | AsyncStatus::FinalSucceeded)
    }
}

impl fmt::Display for AsyncStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An async job's status report, from a `checkUrl` poll or the feedback route:
/// `{status, message, error, progress, datetime, data}`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AsyncReport {
    /// `status`.
    pub status: AsyncStatus,
    /// `message`: a note for people.
    pub message: Option<String>,
    /// `error`: the user-defined error code of a `failed` report (a number reads as its text).
    pub error: Option<String>,
    /// `progress`, as given (`"30%"`, `"20/60"`, a number…).
    pub progress: Option<Value>,
    /// `datetime`, as given (docs/api.md writes `"2022-10-26 10:23:13"`).
    pub datetime: Option<String>,
    /// `data`: the business data, as given.
    pub data: Option<Value>,
}

impl AsyncReport {
    /// Reads a report. Every field is optional and `null` counts as absent; unknown fields are
    /// ignored (the report belongs to the job's service). A field of the wrong type is an error
    /// whose path is the field's name (`status`, `error`); a body that is not an object is an error
    /// at `$`.
    pub fn parse(value: &Value) -> Result<AsyncReport, FieldError> {
        let Value::Object(map) = value else {
            return Err(FieldError::new(
                "$",
                format!(
                    "expected a status report object like {{\"status\": \"succeed\"}}, got {}",
                    describe(value)
                ),
            ));
        };
        let get = |key: &str| map.get(key).filter(|v| !v.is_null());
        let text = |key: &str| -> Result<Option<String>, FieldError> {
            match get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(FieldError::new(
                    key,
                    format!("expected a string, got {}", describe(other)),
                )),
            }
        };

        let status = match get("status") {
            None => AsyncStatus::Running,
            Some(Value::String(s)) => AsyncStatus::parse(s).ok_or_else(|| {
                FieldError::new(
                    "status",
                    format!(
                        "expected \"failed\", \"succeed\", \"finalFailed\", \"finalSucceed\" or \"\" (running), got {}",
                        crate::job::quote(s)
                    ),
                )
            })?,
            Some(other) => {
                return Err(FieldError::new(
                    "status",
                    format!("expected a string, got {}", describe(other)),
                ))
            }
        };
        let error = match get("error") {
            None => None,
            Some(Value::String(s)) => Some(s.trim().to_string()),
            Some(Value::Number(n)) => Some(number_text(n)),
            Some(other) => {
                return Err(FieldError::new(
                    "error",
                    format!("expected an error code string, got {}", describe(other)),
                ))
            }
        }
        .filter(|e| !e.is_empty());
        if let Some(e) = &error {
            if e.len() > MAX_ERROR_BYTES {
                return Err(FieldError::new(
                    "error",
                    format!("is {} bytes long; the limit is {MAX_ERROR_BYTES}", e.len()),
                ));
            }
        }
        Ok(AsyncReport {
            status,
            message: text("message")?,
            error,
            progress: get("progress").cloned(),
            datetime: text("datetime")?,
            data: get("data").cloned(),
        })
    }
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A synchronous call answered with this HTTP status.
    Http {
        /// The status code.
        status: u16,
    },
    /// An async job reported this status (and, when failed, this error code).
    Async {
        /// The reported status.
        status: AsyncStatus,
        /// The reported `error`, if any.
        error: Option<String>,
    },
    /// The attempt ran past `timeoutSeconds` (or another timeout).
    Timeout,
    /// The call got no HTTP answer; the text says why, for the log.
    Transport(String),
    /// The call was not made: the outbound address policy refuses its address. Final: a retry
    /// would be refused the same way.
    Refused(String),
}

/// What an [`Outcome`] means for the execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// An async job is still running: keep waiting.
    Running,
    /// The attempt succeeded.
    Succeeded,
    /// The attempt failed with `code`; when `retryable`, [`crate::retry::decide`] decides whether
    /// to retry, otherwise the execution has failed for good (`finalFailed`, [`ADDRESS_REFUSED`]).
    Failed {
        /// The error code: HTTP status text, async `error`, [`TIMEOUT`], [`CONNECTION`],
        /// [`ADDRESS_REFUSED`], or [`FAILED`] / `finalFailed` for a report without an error.
        code: String,
        /// False only for `finalFailed`.
        retryable: bool,
    },
}

impl Outcome {
    /// The outcome an async report stands for.
    pub fn from_report(report: &AsyncReport) -> Outcome {
        Outcome::Async {
            status: report.status,
            error: report.error.clone(),
        }
    }

    /// Whether the attempt succeeded (a 2xx status, `succeed`, `finalSucceed`), is still running,
    /// or failed — with the error code retry rules match.
    pub fn verdict(&self) -> Verdict {
        let failed = |code: String, retryable| Verdict::Failed { code, retryable };
        match self {
            Outcome::Http { status } if (200..300).contains(status) => Verdict::Succeeded,
            Outcome::Http { status } => failed(status.to_string(), true),
            Outcome::Async { status, error } => match status {
                AsyncStatus::Running => Verdict::Running,
                AsyncStatus::Succeeded | AsyncStatus::FinalSucceeded => Verdict::Succeeded,
                AsyncStatus::Failed => failed(error.clone().unwrap_or_else(|| FAILED.into()), true),
                AsyncStatus::FinalFailed => failed(
                    error
                        .clone()
                        .unwrap_or_else(|| AsyncStatus::FinalFailed.name().into()),
                    false,
                ),
            },
            Outcome::Timeout => failed(TIMEOUT.into(), true),
            Outcome::Transport(_) => failed(CONNECTION.into(), true),
            Outcome::Refused(_) => failed(ADDRESS_REFUSED.into(), false),
        }
    }

    /// The code to pass to [`crate::retry::decide`]: `Some` only for a failure that may be retried.
    pub fn retry_code(&self) -> Option<String> {
        match self.verdict() {
            Verdict::Failed {
                code,
                retryable: true,
            } => Some(code),
            _ => None,
        }
    }

    /// The `stateEquals` values this outcome matches (an empty `stateEquals` matches every outcome
    /// besides these):
    ///
    /// - a sync answer: its status, `"200"`, `"500"`, `"404"`;
    /// - an async `failed` report: its `error` (`"error1"`, `"inprogress"`), and `"failed"`;
    /// - other async reports: the status name, `"succeed"`, `"finalSucceed"`, `"finalFailed"`,
    ///   and `"running"` for a report without a status;
    /// - a timeout: `"timeout"`; a transport failure: `"connection"`; a call the address policy
    ///   refused: `"address-refused"`.
    pub fn match_keys(&self) -> Vec<String> {
        match self {
            Outcome::Http { status } => vec![status.to_string()],
            Outcome::Async {
                status: AsyncStatus::Failed,
                error,
            } => match error {
                Some(e) if e != FAILED => vec![e.clone(), FAILED.into()],
                _ => vec![FAILED.into()],
            },
            Outcome::Async {
                status: AsyncStatus::Running,
                ..
            } => vec![RUNNING.into()],
            Outcome::Async { status, .. } => vec![status.name().into()],
            Outcome::Timeout => vec![TIMEOUT.into()],
            Outcome::Transport(_) => vec![CONNECTION.into()],
            Outcome::Refused(_) => vec![ADDRESS_REFUSED.into()],
        }
    }

    /// [`Outcome::match_keys`] of an outcome of a job that is async (`is_async`) or sync: a sync
    /// job's timeout also matches [`SYNC_TIMEOUT_CODE`] (`"500"`), seed 002's code for it, so
    /// rules written for seed 002 keep matching; the execution's `error` stays `timeout`.
    pub fn match_keys_of_job(&self, is_async: bool) -> Vec<String> {
        let mut keys = self.match_keys();
        if matches!(self, Outcome::Timeout) && !is_async {
            keys.push(SYNC_TIMEOUT_CODE.into());
        }
        keys
    }

    /// Whether a notification rule's `stateEquals` matches an outcome of a job that is async or
    /// not ([`Outcome::match_keys_of_job`]); `None` or blank matches every outcome.
    pub fn matches_job(&self, state_equals: Option<&str>, is_async: bool) -> bool {
        match state_equals.map(str::trim) {
            None | Some("") => true,
            Some(wanted) => self.match_keys_of_job(is_async).iter().any(|k| k == wanted),
        }
    }

    /// Whether a notification rule's `stateEquals` matches: `None` or blank matches every
    /// outcome, anything else must equal one of [`Outcome::match_keys`] exactly (after trimming).
    pub fn matches(&self, state_equals: Option<&str>) -> bool {
        match state_equals.map(str::trim) {
            None | Some("") => true,
            Some(wanted) => self.match_keys().iter().any(|k| k == wanted),
        }
    }

    /// The notification rules of `rules` this outcome triggers, in order.
    pub fn matching<'r>(&self, rules: &'r [NotificationRule]) -> Vec<&'r NotificationRule> {
        rules
            .iter()
            .filter(|rule| self.matches(rule.state_equals.as_deref()))
            .collect()
    }

    /// The `httpStatus` of the notify body: the status of a sync answer; `"200"` for an async
    /// report (it arrived in a successful poll or feedback call); `"timeout"`, `"connection"` and
    /// `"address-refused"` when there was no answer.
    pub fn http_status_text(&self) -> String {
        match self {
            Outcome::Http { status } => status.to_string(),
            Outcome::Async { .. } => "200".into(),
            Outcome::Timeout => TIMEOUT.into(),
            Outcome::Transport(_) => CONNECTION.into(),
            Outcome::Refused(_) => ADDRESS_REFUSED.into(),
        }
    }

    /// docs/api.md's `schedulingNotifyBody` for this outcome: [`notify_body`] with
    /// [`Outcome::http_status_text`].
    pub fn notify_body(&self, response: &Value) -> Value {
        notify_body(&self.http_status_text(), response)
    }
}

/// docs/api.md's `schedulingNotifyBody`: `{"httpStatus": "200", "response": {…}}`, where `response`
/// is what the job's service answered or reported (the async report as received) and
/// `httpStatus` is text, as in the seed.
pub fn notify_body(http_status: &str, response: &Value) -> Value {
    json!({
        "httpStatus": http_status,
        "response": response,
    })
}

/// A JSON value described for a message.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => crate::job::quote(s),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A number as an error code: `500` → `"500"`, `500.0` → `"500"`.
fn number_text(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1.0e15 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::*;
    use crate::job::{JobDefinition, JobId};

    fn parse(value: Value) -> Result<AsyncReport, FieldError> {
        AsyncReport::parse(&value)
    }

    fn field_of(value: Value) -> String {
        match parse(value) {
            Err(e) => e.path,
            Ok(report) => panic!("accepted: {report:?}"),
        }
    }

    fn failed(error: &str) -> Outcome {
        Outcome::Async {
            status: AsyncStatus::Failed,
            error: Some(error.into()),
        }
    }

    fn status(status: AsyncStatus) -> Outcome {
        Outcome::Async {
            status,
            error: None,
        }
    }

    #[test]
    fn parses_the_seed_report() {
        let report = parse(json!({
            "status": "failed",
            "message": "执行MySQL...",
            "error": "error1",
            "progress": "30%",
            "datetime": "2022-10-26 10:23:13",
            "data": {}
        }))
        .unwrap();
        assert_eq!(
            report,
            AsyncReport {
                status: AsyncStatus::Failed,
                message: Some("执行MySQL...".into()),
                error: Some("error1".into()),
                progress: Some(json!("30%")),
                datetime: Some("2022-10-26 10:23:13".into()),
                data: Some(json!({})),
            }
        );
    }

    #[test]
    fn parses_every_status() {
        for (text, expected) in [
            ("failed", AsyncStatus::Failed),
            ("succeed", AsyncStatus::Succeeded),
            ("finalFailed", AsyncStatus::FinalFailed),
            ("finalSucceed", AsyncStatus::FinalSucceeded),
            ("", AsyncStatus::Running),
            ("  ", AsyncStatus::Running),
            ("FINALSUCCEED", AsyncStatus::FinalSucceeded),
            (" Succeed ", AsyncStatus::Succeeded),
        ] {
            assert_eq!(
                parse(json!({"status": text})).map(|r| r.status),
                Ok(expected),
                "{text:?}"
            );
        }
        assert_eq!(parse(json!({})), Ok(AsyncReport::default()));
        assert_eq!(
            parse(
                json!({"status": null, "error": null, "message": null, "progress": null, "data": null})
            ),
            Ok(AsyncReport::default())
        );
        for status in AsyncStatus::ALL {
            assert_eq!(AsyncStatus::parse(status.name()), Some(status));
            assert_eq!(status.to_string(), status.name());
        }
    }

    #[test]
    fn keeps_progress_and_data_as_given_and_ignores_unknown_keys() {
        let report = parse(json!({
            "progress": 20, "data": [1, {"a": true}], "resp_code": 200, "extra": {"x": 1}
        }))
        .unwrap();
        assert_eq!(report.progress, Some(json!(20)));
        assert_eq!(report.data, Some(json!([1, {"a": true}])));
        assert_eq!(report.status, AsyncStatus::Running);
        let report = parse(json!({"progress": "20/60", "data": "text"})).unwrap();
        assert_eq!(report.progress, Some(json!("20/60")));
        assert_eq!(report.data, Some(json!("text")));
    }

    #[test]
    fn error_codes_are_trimmed_and_numbers_read_as_text() {
        assert_eq!(
            parse(json!({"status": "failed", "error": 500}))
                .unwrap()
                .error,
            Some("500".into())
        );
        assert_eq!(
            parse(json!({"status": "failed", "error": 500.0}))
                .unwrap()
                .error,
            Some("500".into())
        );
        assert_eq!(
            parse(json!({"status": "failed", "error": " error2 "}))
                .unwrap()
                .error,
            Some("error2".into())
        );
        assert_eq!(
            parse(json!({"status": "failed", "error": "  "}))
                .unwrap()
                .error,
            None
        );
        let long = "e".repeat(MAX_ERROR_BYTES);
        assert!(parse(json!({"error": long})).is_ok());
        assert_eq!(
            field_of(json!({"error": "e".repeat(MAX_ERROR_BYTES + 1)})),
            "error"
        );
    }

    #[test]
    fn wrong_types_name_the_field() {
        assert_eq!(field_of(json!({"status": 1})), "status");
        assert_eq!(field_of(json!({"status": true})), "status");
        assert_eq!(field_of(json!({"status": "done"})), "status");
        assert_eq!(field_of(json!({"status": "success"})), "status");
        assert_eq!(field_of(json!({"message": 5})), "message");
        assert_eq!(field_of(json!({"message": {"a": 1}})), "message");
        assert_eq!(field_of(json!({"error": ["error1"]})), "error");
        assert_eq!(field_of(json!({"error": false})), "error");
        assert_eq!(field_of(json!({"datetime": 1666750993})), "datetime");
        assert_eq!(field_of(json!("succeed")), "$");
        assert_eq!(field_of(json!(null)), "$");
        assert_eq!(field_of(json!([{"status": "succeed"}])), "$");
        let err = parse(json!({"status": "done"})).unwrap_err();
        assert!(err.message.contains("\"done\""), "{}", err.message);
    }

    #[test]
    fn verdicts() {
        let code = |c: &str, retryable| Verdict::Failed {
            code: c.into(),
            retryable,
        };
        assert_eq!(Outcome::Http { status: 200 }.verdict(), Verdict::Succeeded);
        assert_eq!(Outcome::Http { status: 204 }.verdict(), Verdict::Succeeded);
        assert_eq!(Outcome::Http { status: 500 }.verdict(), code("500", true));
        assert_eq!(Outcome::Http { status: 404 }.verdict(), code("404", true));
        assert_eq!(Outcome::Http { status: 302 }.verdict(), code("302", true));
        assert_eq!(Outcome::Timeout.verdict(), code("timeout", true));
        assert_eq!(
            Outcome::Transport("connection refused".into()).verdict(),
            code("connection", true)
        );
        // A refused address can never succeed as written: final, no retry rule consulted.
        let refused = Outcome::Refused("169.254.169.254 is link-local".into());
        assert_eq!(refused.verdict(), code("address-refused", false));
        assert_eq!(refused.retry_code(), None);
        assert!(refused.matches(Some("address-refused")));
        assert!(!refused.matches(Some("connection")));
        assert_eq!(refused.http_status_text(), "address-refused");
        assert_eq!(status(AsyncStatus::Running).verdict(), Verdict::Running);
        assert_eq!(status(AsyncStatus::Succeeded).verdict(), Verdict::Succeeded);
        assert_eq!(
            status(AsyncStatus::FinalSucceeded).verdict(),
            Verdict::Succeeded
        );
        assert_eq!(failed("error1").verdict(), code("error1", true));
        assert_eq!(status(AsyncStatus::Failed).verdict(), code("failed", true));
        assert_eq!(
            status(AsyncStatus::FinalFailed).verdict(),
            code("finalFailed", false)
        );
        assert_eq!(
            Outcome::Async {
                status: AsyncStatus::FinalFailed,
                error: Some("error9".into())
            }
            .verdict(),
            code("error9", false)
        );

        assert_eq!(failed("error1").retry_code(), Some("error1".into()));
        assert_eq!(Outcome::Timeout.retry_code(), Some(TIMEOUT.into()));
        assert_eq!(status(AsyncStatus::FinalFailed).retry_code(), None);
        assert_eq!(status(AsyncStatus::Running).retry_code(), None);
        assert_eq!(Outcome::Http { status: 200 }.retry_code(), None);
    }

    #[test]
    fn reports_become_outcomes() {
        let report = parse(json!({"status": "failed", "error": "error2"})).unwrap();
        assert_eq!(Outcome::from_report(&report), failed("error2"));
        let report = parse(json!({"status": "succeed", "data": {"n": 1}})).unwrap();
        assert_eq!(
            Outcome::from_report(&report),
            status(AsyncStatus::Succeeded)
        );
    }

    /// Every example of docs/api.md's `stateEquals` comment.
    #[test]
    fn notification_matching_per_seed_002() {
        // "当 stateEquals 为空时,全匹配" — empty matches everything.
        let all = [
            Outcome::Http { status: 200 },
            Outcome::Http { status: 500 },
            Outcome::Http { status: 404 },
            failed("inprogress"),
            failed("error1"),
            failed("error2"),
            status(AsyncStatus::Succeeded),
            status(AsyncStatus::FinalSucceeded),
            status(AsyncStatus::FinalFailed),
            status(AsyncStatus::Failed),
            status(AsyncStatus::Running),
            Outcome::Timeout,
            Outcome::Transport("refused".into()),
        ];
        for outcome in &all {
            assert!(outcome.matches(None), "{outcome:?}");
            assert!(outcome.matches(Some("")), "{outcome:?}");
            assert!(outcome.matches(Some("  ")), "{outcome:?}");
        }

        // 1. Async: the error of a failed report — inprogress, error1, error2 …
        for e in ["inprogress", "error1", "error2"] {
            let matching: Vec<&Outcome> = all.iter().filter(|o| o.matches(Some(e))).collect();
            assert_eq!(matching, vec![&failed(e)], "{e}");
        }
        // … succeed matches succeed; finalSucceed and finalFailed match themselves.
        for (key, only) in [
            ("succeed", AsyncStatus::Succeeded),
            ("finalSucceed", AsyncStatus::FinalSucceeded),
            ("finalFailed", AsyncStatus::FinalFailed),
            ("running", AsyncStatus::Running),
        ] {
            let matching: Vec<&Outcome> = all.iter().filter(|o| o.matches(Some(key))).collect();
            assert_eq!(matching, vec![&status(only)], "{key}");
        }
        // "failed" matches every failed report, with or without an error.
        assert_eq!(all.iter().filter(|o| o.matches(Some("failed"))).count(), 4);

        // 2. Sync: the HTTP status 200, 500, 404.
        for code in [200u16, 500, 404] {
            let key = code.to_string();
            let matching: Vec<&Outcome> = all.iter().filter(|o| o.matches(Some(&key))).collect();
            assert_eq!(matching, vec![&Outcome::Http { status: code }], "{code}");
        }

        // 3. Timeouts match timeout.
        let matching: Vec<&Outcome> = all.iter().filter(|o| o.matches(Some("timeout"))).collect();
        assert_eq!(matching, vec![&Outcome::Timeout]);
        let matching: Vec<&Outcome> = all
            .iter()
            .filter(|o| o.matches(Some("connection")))
            .collect();
        assert_eq!(matching, vec![&Outcome::Transport("refused".into())]);

        // Matching is exact.
        assert!(!failed("error1").matches(Some("Error1")));
        assert!(!failed("error1").matches(Some("error")));
        assert!(failed("error1").matches(Some(" error1 ")));
        assert!(!Outcome::Http { status: 500 }.matches(Some("50")));
    }

    /// Issue 26 item 7: a sync job's timeout matches `stateEquals` "timeout" and seed 002's
    /// "500"; an async job's only "timeout".
    #[test]
    fn a_sync_timeout_matches_500_too() {
        assert_eq!(
            Outcome::Timeout.match_keys_of_job(false),
            ["timeout", "500"]
        );
        assert_eq!(Outcome::Timeout.match_keys_of_job(true), ["timeout"]);
        assert!(Outcome::Timeout.matches_job(Some("500"), false));
        assert!(Outcome::Timeout.matches_job(Some("timeout"), false));
        assert!(!Outcome::Timeout.matches_job(Some("500"), true));
        assert!(!Outcome::Transport("x".into()).matches_job(Some("500"), false));
        assert_eq!(
            Outcome::Http { status: 404 }.match_keys_of_job(false),
            ["404"]
        );
    }

    #[test]
    fn match_keys() {
        assert_eq!(Outcome::Http { status: 500 }.match_keys(), ["500"]);
        assert_eq!(failed("error1").match_keys(), ["error1", "failed"]);
        assert_eq!(failed("failed").match_keys(), ["failed"]);
        assert_eq!(status(AsyncStatus::Failed).match_keys(), ["failed"]);
        assert_eq!(status(AsyncStatus::Succeeded).match_keys(), ["succeed"]);
        assert_eq!(
            Outcome::Async {
                status: AsyncStatus::FinalFailed,
                error: Some("error1".into())
            }
            .match_keys(),
            ["finalFailed"]
        );
        assert_eq!(Outcome::Timeout.match_keys(), ["timeout"]);
        assert_eq!(Outcome::Transport("x".into()).match_keys(), ["connection"]);
    }

    /// docs/api.md's notification list: `500`, then three `timeout` rules; and its example job's one
    /// rule without `stateEquals`.
    #[test]
    fn seed_002_notification_rules_select() {
        let created: DateTime<Utc> = "2024-01-01T00:00:00Z".parse().unwrap();
        let rule = |state: Option<&str>, url: &str| {
            let mut r =
                json!({"method": "GET", "url": url, "body": "${schedulingNotifyBody}|json"});
            if let (Some(s), Value::Object(map)) = (state, &mut r) {
                map.insert("stateEquals".into(), json!(s));
            }
            r
        };
        let body = json!({
            "jobName": "job", "creator": "001", "creatorName": "client",
            "request": [{"url": "http://example.com/run"}],
            "notification": [
                rule(Some("500"), "http://example.com/notifier1"),
                rule(Some("timeout"), "http://example.com/notifier3"),
                rule(Some("timeout"), "service://serviceName/notifier3"),
                rule(Some("timeout"), "service://main/notifier3"),
                rule(None, "service://jobsclient/main/notifierClient/${schedulingJobId}"),
            ]
        });
        let def = JobDefinition::parse(&JobId::parse("j").unwrap(), &body, created).unwrap();
        let rules = def.notifications();
        let picked = |o: &Outcome| -> Vec<usize> {
            o.matching(rules)
                .into_iter()
                .filter_map(|r| rules.iter().position(|x| std::ptr::eq(x, r)))
                .collect()
        };
        assert_eq!(picked(&Outcome::Http { status: 500 }), [0, 4]);
        assert_eq!(picked(&Outcome::Timeout), [1, 2, 3, 4]);
        assert_eq!(picked(&Outcome::Http { status: 200 }), [4]);
        assert_eq!(picked(&failed("error1")), [4]);

        // A status written as text matches the status.
        let body = json!({
            "jobName": "job", "creator": "001", "creatorName": "client",
            "request": [{"url": "http://example.com/run"}],
            "notification": [{"stateEquals": "404", "url": "http://example.com/n"}]
        });
        let def = JobDefinition::parse(&JobId::parse("j").unwrap(), &body, created).unwrap();
        assert_eq!(
            Outcome::Http { status: 404 }
                .matching(def.notifications())
                .len(),
            1
        );
        assert!(Outcome::Http { status: 500 }
            .matching(def.notifications())
            .is_empty());
    }

    #[test]
    fn notify_body_matches_the_seed() {
        let response = json!({
            "status": "failed", "message": "执行MySQL...", "error": "error1",
            "progress": "30%", "datetime": "2022-10-26 10:23:13", "data": {}
        });
        assert_eq!(
            notify_body("200", &response),
            json!({"httpStatus": "200", "response": response})
        );
        assert_eq!(
            failed("error1").notify_body(&response),
            json!({"httpStatus": "200", "response": response})
        );
        assert_eq!(
            Outcome::Http { status: 500 }.notify_body(&json!("oops")),
            json!({"httpStatus": "500", "response": "oops"})
        );
        assert_eq!(
            Outcome::Timeout.notify_body(&Value::Null),
            json!({"httpStatus": "timeout", "response": null})
        );
        assert_eq!(
            Outcome::Transport("refused".into()).http_status_text(),
            "connection"
        );
    }

    #[test]
    fn async_status_helpers() {
        assert!(!AsyncStatus::Running.is_done());
        assert!(AsyncStatus::Failed.is_done());
        assert!(AsyncStatus::Succeeded.is_success());
        assert!(AsyncStatus::FinalSucceeded.is_success());
        assert!(!AsyncStatus::FinalFailed.is_success());
        assert_eq!(AsyncStatus::parse("nope"), None);
    }
}
