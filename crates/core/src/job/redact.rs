//! Secret header values: which headers of a job are secrets, how every view of a job hides their
//! values, and how a viewed job sent back to `update` keeps the values it could not see.
//!
//! A job's `headers` (of `request[*]`, `notification[*]`, `checkUrl` and `cancelUrl`) are sent to
//! the target as written, but nothing Sundial shows — API answers, logs, events — carries the value of a sensitive
//! header: [`redact_job_body`] replaces it with [`REDACTED`]. A header is sensitive by the default
//! rule ([`is_sensitive_header`]) or because the job lists it in `sensitiveHeaders`.
//!
//! A client that reads a job and posts it back to `update` sends the marker where the secret was;
//! [`keep_redacted`] puts the stored value back, but only where the read showed the marker: the same
//! header, of the same call (`request[1]`, `notification[0]`, `checkUrl`), whose `url` is unchanged
//! (a changed URL would send the stored secret somewhere new, so it must be given again).

use serde_json::{Map, Value};

use super::fields::{err, index, join, quote};
use super::FieldError;

/// What a sensitive header's value is shown as.
pub const REDACTED: &str = "***";

/// Headers that are always sensitive (compared ignoring case). [`SENSITIVE_NAME_PARTS`] extends
/// the list to every name containing a telling word.
pub const SENSITIVE_HEADERS: &[&str] = &[
    "Authorization",
    "Proxy-Authorization",
    "Cookie",
    "Set-Cookie",
    "X-Api-Key",
    "X-Auth-Token",
];

/// A header whose lower-case name contains one of these is sensitive; so is one whose name ends in
/// `-key` or `_key` (`X-Functions-Key`, `Ocp-Apim-Subscription-Key`).
pub const SENSITIVE_NAME_PARTS: &[&str] = &[
    "auth",
    "cookie",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "session",
    "apikey",
    "api-key",
    "api_key",
];

/// True when the value of header `name` must not be shown: it is in [`SENSITIVE_HEADERS`], its
/// name contains one of [`SENSITIVE_NAME_PARTS`] or ends in `-key`/`_key`, or it is in `listed`
/// (the job's `sensitiveHeaders`). Names are compared ignoring case.
pub fn is_sensitive_header<S: AsRef<str>>(name: &str, listed: &[S]) -> bool {
    let lower = name.to_ascii_lowercase();
    SENSITIVE_HEADERS
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
        || SENSITIVE_NAME_PARTS.iter().any(|part| lower.contains(part))
        || lower.ends_with("-key")
        || lower.ends_with("_key")
        || listed.iter().any(|h| h.as_ref().eq_ignore_ascii_case(name))
}

/// The job body `body` (as written) with the value of every sensitive header replaced by
/// [`REDACTED`]: the one view of a job's definition that leaves Sundial.
pub fn redact_job_body(body: &Value) -> Value {
    let listed = listed_sensitive_headers(body);
    let mut out = body.clone();
    for (_, call) in calls_mut(&mut out) {
        if let Some(Value::Object(headers)) = call.get_mut("headers") {
            for (name, value) in headers.iter_mut() {
                if is_sensitive_header(name, &listed) {
                    *value = Value::String(REDACTED.into());
                }
            }
        }
    }
    out
}

/// The names a job body lists in `sensitiveHeaders`; anything that is not a string is ignored
/// (the definition parser refuses it).
pub fn listed_sensitive_headers(body: &Value) -> Vec<String> {
    body.get("sensitiveHeaders")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Puts stored secrets back where a submitted job body (`body`) holds [`REDACTED`] as a header
/// value. `stored` is the job's stored body for an update, `None` for a create.
///
/// Returns `Ok(None)` when nothing needed restoring, `Ok(Some(body))` with the values put back, and
/// an error naming the header when a marker cannot be honoured: on create, where the header is not
/// stored at the same call, where that call's `url` changed, or where the header was sensitive but
/// is not any more (its value would be shown). A marker on a header that is not sensitive and was
/// not sensitive before is an ordinary value.
pub fn keep_redacted(body: &Value, stored: Option<&Value>) -> Result<Option<Value>, FieldError> {
    let listed = listed_sensitive_headers(body);
    let stored_listed = stored.map(listed_sensitive_headers).unwrap_or_default();
    let mut out = body.clone();
    let mut changed = false;
    for (place, call) in calls_mut(&mut out) {
        let url = call.get("url").cloned();
        let Some(Value::Object(headers)) = call.get_mut("headers") else {
            continue;
        };
        for (name, value) in headers.iter_mut() {
            if value.as_str() != Some(REDACTED) {
                continue;
            }
            let path = join(&join(&place.path(), "headers"), name);
            let sensitive = is_sensitive_header(name, &listed);
            let stored_call = stored.and_then(|s| place.find(s));
            let stored_value = stored_call.and_then(|c| {
                c.get("headers")
                    .and_then(Value::as_object)?
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .filter(|(n, _)| is_sensitive_header(n, &stored_listed))
                    .map(|(_, v)| v.clone())
            });
            let Some(stored_value) = stored_value else {
                if !sensitive {
                    continue;
                }
                let why = match stored_call {
                    None if stored.is_none() => {
                        "only an update can send it back, to keep the stored value".to_string()
                    }
                    None => format!("the stored job has no {} to keep it from", place.path()),
                    Some(_) => format!(
                        "the stored {} has no redacted {} to keep",
                        place.path(),
                        quote(name)
                    ),
                };
                return Err(marker_error(path, &why));
            };
            if !sensitive {
                return Err(marker_error(
                    path,
                    "the header is no longer sensitive, so the stored value would be shown; \
                     list it in sensitiveHeaders or give the value",
                ));
            }
            if stored_call.and_then(|c| c.get("url")) != url.as_ref() {
                return Err(marker_error(
                    path,
                    &format!(
                        "{}.url changed, and the stored value is only kept for the same url",
                        place.path()
                    ),
                ));
            }
            *value = stored_value;
            changed = true;
        }
    }
    Ok(changed.then_some(out))
}

fn marker_error(path: String, why: &str) -> FieldError {
    err(
        path,
        format!(
            "{} is the redaction marker: {why}; give the real value",
            quote(REDACTED)
        ),
    )
}

/// A call of a job body that may carry headers.
#[derive(Clone, Copy)]
enum Place {
    Request(usize),
    Notification(usize),
    Check,
    Cancel,
}

impl Place {
    fn path(self) -> String {
        match self {
            Place::Request(i) => index("request", i),
            Place::Notification(i) => index("notification", i),
            Place::Check => "checkUrl".into(),
            Place::Cancel => "cancelUrl".into(),
        }
    }

    /// The call at this place in `body`, if it is an object.
    fn find(self, body: &Value) -> Option<&Map<String, Value>> {
        match self {
            Place::Request(i) => body.get("request")?.get(i),
            Place::Notification(i) => body.get("notification")?.get(i),
            Place::Check => body.get("checkUrl"),
            Place::Cancel => body.get("cancelUrl"),
        }?
        .as_object()
    }
}

/// Every call of a job body that is an object: `request[*]`, `notification[*]`, `checkUrl`,
/// `cancelUrl`.
fn calls_mut(body: &mut Value) -> Vec<(Place, &mut Map<String, Value>)> {
    let mut calls = Vec::new();
    let Value::Object(map) = body else {
        return calls;
    };
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("request", Value::Array(items)) => calls.extend(
                items
                    .iter_mut()
                    .enumerate()
                    .filter_map(|(i, v)| Some((Place::Request(i), v.as_object_mut()?))),
            ),
            ("notification", Value::Array(items)) => calls.extend(
                items
                    .iter_mut()
                    .enumerate()
                    .filter_map(|(i, v)| Some((Place::Notification(i), v.as_object_mut()?))),
            ),
            ("checkUrl", Value::Object(call)) => calls.push((Place::Check, call)),
            ("cancelUrl", Value::Object(call)) => calls.push((Place::Cancel, call)),
            _ => {}
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NONE: &[&str] = &[];

    #[test]
    fn default_list_and_name_parts_are_sensitive_ignoring_case() {
        for name in [
            "Authorization",
            "authorization",
            "PROXY-AUTHORIZATION",
            "Cookie",
            "set-cookie",
            "X-Api-Key",
            "x-auth-token",
            "X-Access-Token",
            "X-Client-Secret",
            "DB-Password",
            "X-Passwd",
            "X-Credentials",
            "X-Session-Id",
            "X-ApiKey",
            "Api_Key",
            "X-Functions-Key",
            "Ocp-Apim-Subscription-Key",
            "X-Auth-Key",
        ] {
            assert!(
                is_sensitive_header(name, NONE),
                "{name} should be sensitive"
            );
        }
        for name in [
            "Content-Type",
            "Accept",
            "X-Request-Id",
            "User-Agent",
            "X-Trace",
            "Keyboard",
        ] {
            assert!(!is_sensitive_header(name, NONE), "{name} should be shown");
        }
    }

    #[test]
    fn listed_headers_are_sensitive_ignoring_case() {
        assert!(!is_sensitive_header("X-My-Key-Id", NONE));
        assert!(is_sensitive_header("x-my-key-id", &["X-My-Key-Id"]));
        assert!(!is_sensitive_header("X-Other", &["X-My-Key-Id"]));
    }

    fn job() -> Value {
        json!({
            "jobName": "j",
            "sensitiveHeaders": ["X-Custom"],
            "request": [
                {"url": "https://a.example/run", "headers": {
                    "Authorization": "Bearer s3cret", "x-custom": "c", "Accept": "text/plain"}},
                {"url": "https://b.example/run", "headers": {"Cookie": "sid=1"}}
            ],
            "notification": [{"url": "https://n.example/", "headers": {"X-Api-Key": "k1"}}],
            "checkUrl": {"url": "https://c.example/", "headers": {"X-Auth-Token": "t1"}},
            "cancelUrl": {"url": "https://c.example/stop", "headers": {"Authorization": "t2"}}
        })
    }

    #[test]
    fn redaction_hides_sensitive_values_everywhere_and_nothing_else() {
        let shown = redact_job_body(&job());
        assert_eq!(
            shown["request"][0]["headers"],
            json!({"Authorization": "***", "x-custom": "***", "Accept": "text/plain"})
        );
        assert_eq!(shown["request"][1]["headers"]["Cookie"], "***");
        assert_eq!(shown["notification"][0]["headers"]["X-Api-Key"], "***");
        assert_eq!(shown["checkUrl"]["headers"]["X-Auth-Token"], "***");
        assert_eq!(shown["cancelUrl"]["headers"]["Authorization"], "***");
        assert_eq!(shown["sensitiveHeaders"], json!(["X-Custom"]));
        assert_eq!(shown["request"][0]["url"], "https://a.example/run");
        let text = shown.to_string();
        for secret in ["s3cret", "sid=1", "k1", "t1", "\"c\""] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }

    #[test]
    fn redaction_of_odd_bodies_does_not_panic() {
        for body in [
            json!(null),
            json!([1]),
            json!({"request": 5, "checkUrl": "https://x/"}),
            json!({"request": [1, {"headers": 3}], "notification": [{"headers": {"Cookie": 1}}]}),
        ] {
            let shown = redact_job_body(&body);
            assert!(!shown.to_string().contains("\"Cookie\":1"));
        }
    }

    #[test]
    fn a_read_job_sent_back_keeps_every_stored_secret() {
        let stored = job();
        let read = redact_job_body(&stored);
        let kept = keep_redacted(&read, Some(&stored)).unwrap().unwrap();
        assert_eq!(kept, stored);
    }

    #[test]
    fn a_body_without_markers_is_left_alone() {
        assert_eq!(keep_redacted(&job(), Some(&job())).unwrap(), None);
        assert_eq!(keep_redacted(&job(), None).unwrap(), None);
    }

    #[test]
    fn a_marker_on_create_is_refused_naming_the_header() {
        let read = redact_job_body(&job());
        let e = keep_redacted(&read, None).unwrap_err();
        assert_eq!(e.path, "request[0].headers.Authorization");
        assert!(e.message.contains("redaction marker"), "{}", e.message);
    }

    #[test]
    fn a_marker_is_kept_only_at_the_same_call_with_the_same_url() {
        let stored = job();
        let mut moved = redact_job_body(&stored);
        moved["request"][0]["url"] = json!("https://evil.example/");
        let e = keep_redacted(&moved, Some(&stored)).unwrap_err();
        assert_eq!(e.path, "request[0].headers.Authorization");
        assert!(e.message.contains("url changed"), "{}", e.message);

        let mut added = redact_job_body(&stored);
        added["request"][1]["headers"]["Authorization"] = json!("***");
        let e = keep_redacted(&added, Some(&stored)).unwrap_err();
        assert_eq!(e.path, "request[1].headers.Authorization");

        let mut extra = redact_job_body(&stored);
        extra["request"]
            .as_array_mut()
            .unwrap()
            .push(json!({"url": "https://a.example/run", "headers": {"Cookie": "***"}}));
        let e = keep_redacted(&extra, Some(&stored)).unwrap_err();
        assert_eq!(e.path, "request[2].headers.Cookie");
    }

    #[test]
    fn a_header_taken_off_the_list_cannot_keep_a_marker() {
        let stored = job();
        let mut read = redact_job_body(&stored);
        read["sensitiveHeaders"] = json!([]);
        let e = keep_redacted(&read, Some(&stored)).unwrap_err();
        assert_eq!(e.path, "request[0].headers.x-custom");
        assert!(e.message.contains("no longer sensitive"), "{}", e.message);
    }

    #[test]
    fn a_marker_on_a_header_never_sensitive_is_a_value() {
        let body = json!({"request": [{"url": "https://a/", "headers": {"Accept": "***"}}]});
        assert_eq!(keep_redacted(&body, None).unwrap(), None);
        assert_eq!(keep_redacted(&body, Some(&body)).unwrap(), None);
    }

    #[test]
    fn header_names_match_ignoring_case_when_kept() {
        let stored =
            json!({"request": [{"url": "https://a/", "headers": {"authorization": "Basic x"}}]});
        let sent = json!({"request": [{"url": "https://a/", "headers": {"Authorization": "***"}}]});
        let kept = keep_redacted(&sent, Some(&stored)).unwrap().unwrap();
        assert_eq!(kept["request"][0]["headers"]["Authorization"], "Basic x");
    }
}
