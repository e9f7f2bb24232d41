//! Reading JSON objects field by field, with the JSON path of each field for errors.

use serde_json::{Map, Value};

use super::limits::{MAX_BODY_BYTES, MAX_BODY_DEPTH, MAX_STRING_BYTES};
use super::FieldError;
use crate::duration::Duration;
use crate::template::Template;

/// The path of the whole document, for errors about it as a whole.
pub(super) const ROOT: &str = "$";

/// `parent.key`, or `parent["odd key"]` when the key is not a plain name.
pub(super) fn join(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'$'));
    match (parent.is_empty() || parent == ROOT, plain) {
        (true, true) => key.to_string(),
        (true, false) => format!("[{}]", quote(key)),
        (false, true) => format!("{parent}.{key}"),
        (false, false) => format!("{parent}[{}]", quote(key)),
    }
}

/// `parent[i]`.
pub(super) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// A string quoted for a message, cut short when long so that errors stay readable.
pub(crate) fn quote(text: &str) -> String {
    const SHOW: usize = 64;
    if text.chars().count() <= SHOW {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(SHOW).collect();
        format!("{:?}…", head)
    }
}

/// A JSON value described for a message: strings and numbers quoted, containers named.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

pub(super) fn err(path: impl Into<String>, message: impl Into<String>) -> FieldError {
    FieldError::new(path, message)
}

/// A JSON object being read, with unknown keys already refused.
pub(super) struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

impl<'a> Obj<'a> {
    /// Reads `value` as an object whose keys are all in `known`.
    pub(super) fn new(value: &'a Value, path: &str, known: &[&str]) -> Result<Obj<'a>, FieldError> {
        let map = value.as_object().ok_or_else(|| {
            err(
                if path.is_empty() { ROOT } else { path },
                format!("expected an object, got {}", describe(value)),
            )
        })?;
        if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(unknown_field(path, key, known));
        }
        Ok(Obj {
            map,
            path: path.to_string(),
        })
    }

    /// The path of a field of this object.
    pub(super) fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// A field's value; `null` counts as absent.
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// An optional string of at most `max` bytes.
    pub(super) fn string(&self, key: &str, max: usize) -> Result<Option<&'a str>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => {
                if s.len() > max {
                    Err(err(
                        self.path(key),
                        format!("is {} bytes long; the limit is {max}", s.len()),
                    ))
                } else {
                    Ok(Some(s))
                }
            }
            Some(other) => Err(err(
                self.path(key),
                format!("expected a string, got {}", describe(other)),
            )),
        }
    }

    /// A required, non-blank string of at most `max` bytes.
    pub(super) fn required_string(&self, key: &str, max: usize) -> Result<&'a str, FieldError> {
        match self.string(key, max)? {
            None => Err(err(self.path(key), "is required")),
            Some(s) if s.trim().is_empty() => Err(err(self.path(key), "must not be empty")),
            Some(s) => Ok(s),
        }
    }

    /// A required name (`jobName`, `creator`, …): a non-blank string of at most `max` bytes without
    /// control characters, which would break the logs, consoles and files it is shown in.
    pub(super) fn name(&self, key: &str, max: usize) -> Result<&'a str, FieldError> {
        let text = self.required_string(key, max)?;
        self.no_control(key, text, false)?;
        Ok(text)
    }

    /// Refuses control characters in `text`, the value of `key`; with `lines`, tab, line feed and
    /// carriage return are allowed (free text such as a description).
    pub(super) fn no_control(&self, key: &str, text: &str, lines: bool) -> Result<(), FieldError> {
        let allowed = |c: char| lines && matches!(c, '\t' | '\n' | '\r');
        match text.chars().find(|&c| c.is_control() && !allowed(c)) {
            None => Ok(()),
            Some(c) => Err(err(
                self.path(key),
                format!("contains the control character {c:?}"),
            )),
        }
    }

    /// An error code: a string, or a number written for one (`500` → `"500"`). Blank is `None`.
    pub(super) fn code(&self, key: &str, max: usize) -> Result<Option<String>, FieldError> {
        match self.get(key) {
            Some(Value::Number(n)) => Ok(Some(number_text(n))),
            _ => Ok(self
                .string(key, max)?
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)),
        }
    }

    /// An optional whole number in `min..=max`; `4.0` counts as 4.
    pub(super) fn uint(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, FieldError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let n = value.as_u64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= 9.0e15)
                .map(|f| f as u64)
        });
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(err(
                self.path(key),
                format!(
                    "expected a whole number from {min} to {max}, got {}",
                    describe(value)
                ),
            )),
        }
    }

    /// [`Obj::uint`] for a top-level field of the job document, in the range its row of
    /// [`super::document::JOB_FIELDS`] gives.
    pub(super) fn field_uint(&self, key: &'static str) -> Result<Option<u64>, FieldError> {
        let (min, max) = super::document::range_of(key);
        self.uint(key, min, max)
    }

    /// [`Obj::field_uint`] for fields whose range fits a `u32`.
    pub(super) fn field_uint32(&self, key: &'static str) -> Result<Option<u32>, FieldError> {
        Ok(self
            .field_uint(key)?
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
    }

    /// [`Obj::uint`] for fields that fit a `u32` (`max` must).
    pub(super) fn uint32(&self, key: &str, min: u32, max: u32) -> Result<Option<u32>, FieldError> {
        Ok(self
            .uint(key, u64::from(min), u64::from(max))?
            .map(|n| u32::try_from(n).unwrap_or(max)))
    }

    /// An optional finite number in `min..=max`.
    pub(super) fn float(&self, key: &str, min: f64, max: f64) -> Result<Option<f64>, FieldError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        match value.as_f64() {
            Some(f) if f.is_finite() && f >= min && f <= max => Ok(Some(f)),
            _ => Err(err(
                self.path(key),
                format!(
                    "expected a number from {min:?} to {max:?}, got {}",
                    describe(value)
                ),
            )),
        }
    }

    /// An optional boolean.
    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(err(
                self.path(key),
                format!("expected true or false, got {}", describe(other)),
            )),
        }
    }

    /// An optional duration (`"1m"`, `"PT30S"`) of at least `min`.
    pub(super) fn duration(
        &self,
        key: &str,
        min: Duration,
    ) -> Result<Option<Duration>, FieldError> {
        let Some(text) = self.string(key, 64)? else {
            return Ok(None);
        };
        let d = Duration::parse(text).map_err(|m| err(self.path(key), m))?;
        if d < min {
            return Err(err(
                self.path(key),
                format!("{} is shorter than the minimum of {min}", quote(text)),
            ));
        }
        Ok(Some(d))
    }

    /// An optional array of at most `max` entries.
    pub(super) fn array(&self, key: &str, max: usize) -> Result<Option<&'a [Value]>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) if items.len() > max => Err(err(
                self.path(key),
                format!("has {} entries; the limit is {max}", items.len()),
            )),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(err(
                self.path(key),
                format!("expected an array, got {}", describe(other)),
            )),
        }
    }
}

/// A number as the string an error code would be: `500` → `"500"`, `500.0` → `"500"`.
pub(super) fn number_text(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1.0e15 => format!("{}", f as i64),
        _ => n.to_string(),
    }
}

fn unknown_field(parent: &str, key: &str, known: &[&str]) -> FieldError {
    let message = match suggestion(key, known) {
        Some(similar) => format!("unknown field {}; did you mean {similar:?}?", quote(key)),
        None => format!(
            "unknown field {}; expected one of: {}",
            quote(key),
            known.join(", ")
        ),
    };
    err(join(parent, key), message)
}

/// The known name closest to a misspelt one: equal ignoring case, or within two edits.
fn suggestion<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    if key.len() > 64 {
        return None;
    }
    if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(key)) {
        return Some(k);
    }
    let lower = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&lower, &k.to_ascii_lowercase()), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// Parses a template field value, with the error at `path`.
pub(super) fn template(path: &str, text: &str) -> Result<Template, FieldError> {
    Template::parse(text).map_err(|m| err(path, m))
}

/// Checks a JSON body: bounded depth and size, and every string in it a valid template.
pub(super) fn check_body(path: &str, body: &Value) -> Result<(), FieldError> {
    walk_body(path, body, 0)?;
    let bytes = serde_json::to_vec(body)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if bytes > MAX_BODY_BYTES {
        return Err(err(
            path,
            format!("is {bytes} bytes of JSON; the limit is {MAX_BODY_BYTES}"),
        ));
    }
    Ok(())
}

fn walk_body(path: &str, value: &Value, depth: usize) -> Result<(), FieldError> {
    match value {
        Value::String(s) => {
            if s.len() > MAX_BODY_BYTES {
                return Err(err(
                    path,
                    format!("is {} bytes long; the limit is {MAX_BODY_BYTES}", s.len()),
                ));
            }
            template(path, s).map(|_| ())
        }
        Value::Array(items) => {
            if depth >= MAX_BODY_DEPTH {
                return Err(err(
                    path,
                    format!("nests deeper than {MAX_BODY_DEPTH} levels"),
                ));
            }
            items
                .iter()
                .enumerate()
                .try_for_each(|(i, item)| walk_body(&index(path, i), item, depth + 1))
        }
        Value::Object(map) => {
            if depth >= MAX_BODY_DEPTH {
                return Err(err(
                    path,
                    format!("nests deeper than {MAX_BODY_DEPTH} levels"),
                ));
            }
            map.iter()
                .try_for_each(|(key, item)| walk_body(&join(path, key), item, depth + 1))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// Bound for strings that are not otherwise limited.
pub(super) const STRING: usize = MAX_STRING_BYTES;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_plain_and_odd_keys() {
        assert_eq!(join("", "jobName"), "jobName");
        assert_eq!(join("request[0]", "body"), "request[0].body");
        assert_eq!(
            join("request[0].headers", "Content-Type"),
            "request[0].headers.Content-Type"
        );
        assert_eq!(join("body", "a b"), "body[\"a b\"]");
        assert_eq!(join("", "a.b"), "[\"a.b\"]");
    }

    #[test]
    fn suggestions_catch_typos() {
        let known = ["jobName", "timeoutSeconds", "checkUrl"];
        assert_eq!(suggestion("jobname", &known), Some("jobName"));
        assert_eq!(suggestion("timeoutSecond", &known), Some("timeoutSeconds"));
        assert_eq!(suggestion("chekUrl", &known), Some("checkUrl"));
        assert_eq!(suggestion("something", &known), None);
    }

    #[test]
    fn numbers_as_codes() {
        let n = |v: Value| match v {
            Value::Number(n) => number_text(&n),
            _ => String::new(),
        };
        assert_eq!(n(serde_json::json!(500)), "500");
        assert_eq!(n(serde_json::json!(500.0)), "500");
        assert_eq!(n(serde_json::json!(-1)), "-1");
        assert_eq!(n(serde_json::json!(1.5)), "1.5");
    }
}
