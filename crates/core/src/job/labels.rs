//! Labels: `labels: {key: value}` on a job (Temporal's memo and search attributes), for finding
//! and acting on jobs by what they are rather than by id (`GET /jobs?label=team:payments`, bulk
//! actions).
//!
//! Keys and values are short and plain because stores index them: a key is 1–63 characters of
//! `A–Z a–z 0–9 _ . - /` (no `:` and no `=`, so `team:payments` and the DynamoDB index key
//! `team=payments` split in one place only), a value 1–256 bytes without control characters, and a
//! job has at most [`MAX_LABELS`] of them, each an index entry a write of the job may touch.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fields::{describe, join, quote};
use super::FieldError;

/// Most labels on one job.
pub const MAX_LABELS: usize = 16;
/// Longest label key, in characters.
pub const MAX_LABEL_KEY: usize = 63;
/// Longest label value, in bytes.
pub const MAX_LABEL_VALUE_BYTES: usize = 256;

/// A job's labels, keys in byte order. A value that exists is valid.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels(BTreeMap<String, String>);

impl Labels {
    /// Reads `labels` (the field at `path`): an object of string values. Errors name
    /// `labels.<key>` (or `labels` for the object as a whole).
    pub fn parse(path: &str, value: &Value) -> Result<Labels, FieldError> {
        let map = value.as_object().ok_or_else(|| {
            FieldError::new(
                path,
                format!(
                    "expected an object of key: value strings, got {}",
                    describe(value)
                ),
            )
        })?;
        if map.len() > MAX_LABELS {
            return Err(FieldError::new(
                path,
                format!("{} labels; at most {MAX_LABELS}", map.len()),
            ));
        }
        let mut labels = BTreeMap::new();
        for (key, value) in map {
            let at = join(path, key);
            check_key(key).map_err(|message| FieldError::new(&at, message))?;
            let Value::String(value) = value else {
                return Err(FieldError::new(
                    at,
                    format!("expected a string, got {}", describe(value)),
                ));
            };
            check_value(value).map_err(|message| FieldError::new(&at, message))?;
            labels.insert(key.clone(), value.clone());
        }
        Ok(Labels(labels))
    }

    /// Reads the labels of a stored definition (`{"labels": {…}}` as written), leniently: a
    /// definition is checked when written, so what is not a string map here is no label.
    pub fn of_written(definition: &Value) -> BTreeMap<String, String> {
        definition
            .get("labels")
            .and_then(Value::as_object)
            .map(|map| {
                map.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The labels, by key.
    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One `label=key:value` filter: jobs whose label `key` is `value`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelSelector {
    /// The label key.
    pub key: String,
    /// The value it must have.
    pub value: String,
}

impl LabelSelector {
    /// Parses `key:value` (split at the first `:`, which no key holds); errors name `path`.
    ///
    /// ```
    /// use sundial_core::job::LabelSelector;
    /// let s = LabelSelector::parse("label", "team:payments").unwrap();
    /// assert_eq!((s.key.as_str(), s.value.as_str()), ("team", "payments"));
    /// assert_eq!(LabelSelector::parse("label", "team").unwrap_err().path, "label");
    /// ```
    pub fn parse(path: &str, text: &str) -> Result<LabelSelector, FieldError> {
        let (key, value) = text.split_once(':').ok_or_else(|| {
            FieldError::new(
                path,
                format!(
                    "expected key:value (e.g. team:payments), got {}",
                    quote(text)
                ),
            )
        })?;
        let bad = |message: String| FieldError::new(path, format!("{}: {message}", quote(text)));
        check_key(key).map_err(bad)?;
        check_value(value).map_err(bad)?;
        Ok(LabelSelector {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }
}

fn check_key(key: &str) -> Result<(), String> {
    let plain = key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/'));
    if key.is_empty() || key.len() > MAX_LABEL_KEY || !plain {
        return Err(format!(
            "a label key is 1-{MAX_LABEL_KEY} characters of A-Z, a-z, 0-9, \"_\", \".\", \"-\", \"/\", got {}",
            quote(key)
        ));
    }
    Ok(())
}

fn check_value(value: &str) -> Result<(), String> {
    if value.is_empty() || value.len() > MAX_LABEL_VALUE_BYTES {
        return Err(format!(
            "a label value is 1-{MAX_LABEL_VALUE_BYTES} bytes, got {}",
            value.len()
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(format!(
            "a label value contains the control character {c:?}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn labels_parse_and_name_the_bad_key() {
        let labels = Labels::parse("labels", &json!({"team": "payments", "tier": "1"})).unwrap();
        assert_eq!(labels.as_map().len(), 2);
        for (body, path) in [
            (json!({"team": 1}), "labels.team"),
            (json!({"team": ""}), "labels.team"),
            (json!({"team": "a\nb"}), "labels.team"),
            (json!({"te am": "x"}), "labels[\"te am\"]"),
            (json!({"a:b": "x"}), "labels[\"a:b\"]"),
            (json!({"a=b": "x"}), "labels[\"a=b\"]"),
            (json!(["x"]), "labels"),
        ] {
            assert_eq!(
                Labels::parse("labels", &body).unwrap_err().path,
                path,
                "{body}"
            );
        }
        let long = json!({"k": "x".repeat(MAX_LABEL_VALUE_BYTES + 1)});
        assert_eq!(Labels::parse("labels", &long).unwrap_err().path, "labels.k");
        let many: serde_json::Map<String, Value> = (0..=MAX_LABELS)
            .map(|i| (format!("k{i}"), json!("v")))
            .collect();
        assert_eq!(
            Labels::parse("labels", &Value::Object(many))
                .unwrap_err()
                .path,
            "labels"
        );
    }

    #[test]
    fn selectors_split_at_the_first_colon() {
        let s = LabelSelector::parse("label", "url:https://x").unwrap();
        assert_eq!((s.key.as_str(), s.value.as_str()), ("url", "https://x"));
        for bad in ["team", ":x", "team:", "a b:c"] {
            assert_eq!(
                LabelSelector::parse("label", bad).unwrap_err().path,
                "label"
            );
        }
    }
}
