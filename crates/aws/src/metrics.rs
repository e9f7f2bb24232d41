//! Metrics as CloudWatch Embedded Metric Format: JSON log lines that CloudWatch turns into metrics
//! with no API call (and so no extra request per execution).
//!
//! The handlers count as they go and print one EMF document per invocation (plus one per execution
//! state seen, with a `State` dimension). Execution states, start lag and retries are counted from
//! every state change the engine records, which it tells the [`crate::publisher::AwsPublisher`]
//! (`observe_state_change`) whether or not `StateChangeEvents` publishes it as an event.

use std::collections::BTreeMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "Sundial";

/// Counters since the last flush.
#[derive(Debug, Default)]
pub struct Metrics {
    counts: Mutex<Counts>,
}

#[derive(Debug, Default, Clone, PartialEq)]
struct Counts {
    values: BTreeMap<&'static str, f64>,
    lag_ms: Vec<f64>,
    states: BTreeMap<String, u64>,
}

impl Metrics {
    /// Adds `n` to the counter `name` (`Fires`, `Missed`, `Notifications`…).
    pub fn add(&self, name: &'static str, n: f64) {
        if let Ok(mut counts) = self.counts.lock() {
            *counts.values.entry(name).or_insert(0.0) += n;
        }
    }

    /// Counts an execution state change (the `detail` of an "Execution State Change" event):
    /// its state, and on the first start its lag behind the scheduled time; a later start is a retry.
    pub fn state_change(&self, detail: &Value, now: DateTime<Utc>) {
        let Ok(mut counts) = self.counts.lock() else {
            return;
        };
        let Some(state) = detail.get("state").and_then(Value::as_str) else {
            return;
        };
        *counts.states.entry(state.to_owned()).or_insert(0) += 1;
        if state != "Processing" {
            return;
        }
        match detail.get("attempts").and_then(Value::as_u64) {
            Some(0 | 1) => {
                let scheduled = detail
                    .get("scheduledTime")
                    .and_then(Value::as_str)
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
                if let Some(scheduled) = scheduled {
                    let lag = (now - scheduled.with_timezone(&Utc)).num_milliseconds();
                    counts.lag_ms.push(lag.max(0) as f64);
                }
            }
            Some(_) => *counts.values.entry("Retries").or_insert(0.0) += 1.0,
            None => {}
        }
    }

    /// The EMF documents for everything counted since the last flush, which it resets. Nothing
    /// when nothing was counted.
    pub fn flush(&self, function: &str, now: DateTime<Utc>) -> Vec<String> {
        let counts = match self.counts.lock() {
            Ok(mut counts) => std::mem::take(&mut *counts),
            Err(_) => return Vec::new(),
        };
        let mut documents = Vec::new();
        let mut root = Map::new();
        let mut names = Vec::new();
        for (name, value) in &counts.values {
            root.insert((*name).to_owned(), json!(value));
            names.push(json!({"Name": name, "Unit": "Count"}));
        }
        if !counts.lag_ms.is_empty() {
            // EMF takes a list of values for one metric: CloudWatch computes the percentiles.
            root.insert("FireLagMs".into(), json!(counts.lag_ms));
            names.push(json!({"Name": "FireLagMs", "Unit": "Milliseconds"}));
        }
        if !names.is_empty() {
            documents.push(emf(function, now, root, names, &[]));
        }
        for (state, n) in counts.states {
            let mut root = Map::new();
            root.insert("State".into(), json!(state));
            root.insert("Executions".into(), json!(n));
            let names = vec![json!({"Name": "Executions", "Unit": "Count"})];
            documents.push(emf(function, now, root, names, &["State"]));
        }
        documents
    }
}

fn emf(
    function: &str,
    now: DateTime<Utc>,
    mut root: Map<String, Value>,
    metrics: Vec<Value>,
    extra_dimensions: &[&str],
) -> String {
    let mut dimensions = vec!["Function"];
    dimensions.extend_from_slice(extra_dimensions);
    root.insert("Function".into(), json!(function));
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": now.timestamp_millis(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [dimensions],
                "Metrics": metrics,
            }],
        }),
    );
    Value::Object(root).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn counts_states_lag_and_retries_then_resets() {
        let metrics = Metrics::default();
        let now = at("2026-01-01T00:00:01.250Z");
        metrics.add("Fires", 2.0);
        let change = |state: &str, attempts: u64| json!({"state": state, "attempts": attempts, "scheduledTime": "2026-01-01T00:00:01Z"});
        metrics.state_change(&change("Processing", 1), now);
        metrics.state_change(&change("Processing", 2), now);
        metrics.state_change(&change("Succeeded", 2), now);
        let docs: Vec<Value> = metrics
            .flush("dispatch", now)
            .iter()
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect();
        assert_eq!(docs.len(), 3, "{docs:?}");
        assert_eq!(docs[0]["Fires"], json!(2.0));
        assert_eq!(docs[0]["Retries"], json!(1.0));
        assert_eq!(docs[0]["FireLagMs"], json!([250.0]));
        assert_eq!(docs[0]["Function"], json!("dispatch"));
        assert_eq!(
            docs[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"],
            json!("Sundial")
        );
        assert_eq!(docs[1]["State"], json!("Processing"));
        assert_eq!(docs[1]["Executions"], json!(2));
        assert_eq!(
            docs[1]["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Function", "State"]])
        );
        assert!(metrics.flush("dispatch", now).is_empty());
    }
}
