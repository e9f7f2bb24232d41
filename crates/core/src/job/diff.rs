//! What an update changed in a job's definition: the fields that differ between two bodies as
//! written, each named by its JSON pointer (RFC 6901) with its old and new value, for the audit
//! trail (`GET /jobs/{jobId}/history`).
//!
//! Values are shown as a reader of the job sees them ([`super::redact_job_body`]): a sensitive
//! header that changed is listed, with [`super::REDACTED`] on both sides, so the trail says that
//! a secret changed without keeping it.

use serde_json::Value;

use super::{redact_job_body, REDACTED};

/// One changed field of a definition.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldChange {
    /// The field's JSON pointer from the body's root (`/timer/period`, `/request/0/url`).
    pub path: String,
    /// The value before, `None` when the field was added.
    pub old: Option<Value>,
    /// The value after, `None` when the field was removed.
    pub new: Option<Value>,
}

/// The fields that differ between the bodies `before` and `after` (as written), in pointer
/// order, with values redacted as reads show them. Objects are compared field by field; arrays
/// of the same length element by element; anything else (arrays of different lengths included)
/// is one change of the whole value.
pub fn definition_changes(before: &Value, after: &Value) -> Vec<FieldChange> {
    let mut paths = Vec::new();
    changed_paths(before, after, String::new(), &mut paths);
    let (shown_before, shown_after) = (redact_job_body(before), redact_job_body(after));
    let shown = |tree: &Value, raw: &Value, path: &str| {
        raw.pointer(path).map(|_| {
            tree.pointer(path)
                .cloned()
                .unwrap_or_else(|| Value::String(REDACTED.into()))
        })
    };
    paths
        .into_iter()
        .map(|path| FieldChange {
            old: shown(&shown_before, before, &path),
            new: shown(&shown_after, after, &path),
            path,
        })
        .collect()
}

fn changed_paths(before: &Value, after: &Value, at: String, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let path = format!("{at}/{}", escape(key));
                match (a.get(key.as_str()), b.get(key.as_str())) {
                    (Some(x), Some(y)) => changed_paths(x, y, path, out),
                    _ => out.push(path),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                changed_paths(x, y, format!("{at}/{i}"), out);
            }
        }
        _ if before == after => {}
        _ => out.push(at),
    }
}

/// RFC 6901: `~` is `~0` and `/` is `~1` inside a reference token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_are_pointers_with_old_and_new_values() {
        let before = json!({"jobName": "a", "timer": {"period": "1m"}, "tags": [1, 2], "x/y": 1,
            "request": [{"url": "http://a", "headers": {"Authorization": "old-secret"}}]});
        let after = json!({"jobName": "a", "timer": {"period": "5m"}, "tags": [1, 2, 3], "x/y": 2,
            "request": [{"url": "http://a", "headers": {"Authorization": "new-secret"}}],
            "jobDescription": "d"});
        let changes = definition_changes(&before, &after);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/jobDescription",
                "/request/0/headers/Authorization",
                "/tags",
                "/timer/period",
                "/x~1y"
            ]
        );
        assert_eq!(changes[0].old, None);
        assert_eq!(changes[0].new, Some(json!("d")));
        assert_eq!(
            changes[1].old,
            Some(json!(REDACTED)),
            "a secret is never shown"
        );
        assert_eq!(changes[1].new, Some(json!(REDACTED)));
        assert_eq!(changes[3].old, Some(json!("1m")));
        assert_eq!(changes[3].new, Some(json!("5m")));
        assert!(definition_changes(&after, &after).is_empty());
    }
}
