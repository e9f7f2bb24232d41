//! Declared timers (`PUT /services/{service}/timers`): what one declaration of a job does to the
//! stored job, decided by a three-way merge.
//!
//! A service declares its jobs on every start (seed 002's check-timers). The code's declaration is
//! not the only author of a job: an operator may pause it, note why, label it or edit a field in
//! the console, and seed 004 has the stored, edited configuration win over the code's on later
//! starts. So a declaration applies only what *the code* changed: each field of the new
//! declaration is compared with the same field of the declaration before it (kept with the job),
//! and only the fields that differ are written to the stored job. A field the code did not change
//! keeps its stored value, an operator's edit included.
//!
//! | previous declaration | new declaration | stored job | result |
//! |---|---|---|---|
//! | `timeoutSeconds: 60` | `timeoutSeconds: 60` | `timeoutSeconds: 300` (operator) | 300 stays: unchanged |
//! | `timeoutSeconds: 60` | `timeoutSeconds: 90` | `timeoutSeconds: 300` (operator) | 90: updated (`timeoutSeconds`) |
//! | `timer: {period: 5m}` | `timer: {period: 1m}` | paused, notes "incident 42" | `timer` changes, still paused with its notes |
//! | — (job declared before declarations were kept) | anything | the stored job | fields that differ from the stored job, as before |
//!
//! `active` (the pause state; pause notes live in the job's state, not its definition) and
//! `labels` are never written by a declaration after the job's creation ([`NEVER_DECLARED`]):
//! they are the operator's.

use serde_json::{Map, Value};

/// Fields of a job a declaration sets only when it creates the job: the pause state and the
/// labels belong to the operator afterwards. (`jobId` is the job's identity: the same in all.)
pub const NEVER_DECLARED: [&str; 3] = ["active", "labels", "jobId"];

/// What a declaration does to one job ([`plan_reconcile`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Reconcile {
    /// No stored job: create it from the declaration.
    Create,
    /// The code changed none of the fields a declaration writes: the stored job stays as it is.
    /// `record` says whether the declaration kept with the job differs from this one (a change of
    /// `labels` or `active` in the code, or a first declaration of a job declared before
    /// declarations were kept): then it is written, and nothing else.
    Unchanged {
        /// Whether the kept declaration is to be replaced by this one.
        record: bool,
    },
    /// Apply the code's changes: the stored definition with the `fields` the code changed set
    /// (or removed) as declared; every other field as stored.
    Update {
        /// The fields the code changed, in name order.
        fields: Vec<String>,
        /// The definition to store.
        definition: Value,
    },
}

/// The three-way merge of a declared job: `previous` is the declaration kept with the job (`None`
/// for a job declared before declarations were kept: the stored definition stands in for it),
/// `declared` the new one, `stored` the stored definition as written (`None`: no such job). All
/// are job definitions as JSON objects; a non-object is read as an empty one. Pure.
pub fn plan_reconcile(
    previous: Option<&Value>,
    declared: &Value,
    stored: Option<&Value>,
) -> Reconcile {
    let Some(stored) = stored else {
        return Reconcile::Create;
    };
    let empty = Map::new();
    let object = |v: &'_ Value| -> Map<String, Value> {
        match v {
            Value::Object(map) => map.clone(),
            _ => empty.clone(),
        }
    };
    let stored = object(stored);
    let declared_map = object(declared);
    let previous_map = previous.map(object).unwrap_or_else(|| stored.clone());
    let mut keys: Vec<&String> = previous_map.keys().chain(declared_map.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut fields = Vec::new();
    let mut merged = stored.clone();
    for key in keys {
        if NEVER_DECLARED.contains(&key.as_str()) {
            continue;
        }
        let (before, after) = (previous_map.get(key), declared_map.get(key));
        if before == after {
            continue;
        }
        // The code changed this field: set it as declared, unless the stored job already has
        // exactly that (an operator made the same change): nothing to write for it.
        if merged.get(key) == after {
            continue;
        }
        match after {
            Some(value) => merged.insert(key.clone(), value.clone()),
            None => merged.remove(key),
        };
        fields.push(key.clone());
    }
    if fields.is_empty() {
        return Reconcile::Unchanged {
            record: previous != Some(declared),
        };
    }
    Reconcile::Update {
        fields,
        definition: Value::Object(merged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(extra: Value) -> Value {
        let mut base = json!({
            "jobId": "svc-a", "jobName": "a", "creator": "billing", "creatorName": "Billing",
            "request": [{"url": "service://billing/main/a"}],
            "timer": {"period": "0 0 2 * * ?"},
        });
        if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
            for (k, v) in extra {
                base.insert(k, v);
            }
        }
        base
    }

    #[test]
    fn no_stored_job_is_a_creation() {
        assert_eq!(
            plan_reconcile(None, &job(json!({})), None),
            Reconcile::Create
        );
    }

    /// Issue 26 item 2: re-declaring an unchanged list undid the operator's pause; now nothing
    /// changes, whatever the stored job became.
    #[test]
    fn the_same_declaration_changes_nothing() {
        let declared = job(json!({}));
        let paused = job(json!({"active": 0, "labels": {"team": "ops"}, "timeoutSeconds": 300}));
        assert_eq!(
            plan_reconcile(Some(&declared), &declared, Some(&paused)),
            Reconcile::Unchanged { record: false }
        );
    }

    #[test]
    fn only_what_the_code_changed_is_applied_and_operator_edits_survive() {
        let previous = job(json!({"timeoutSeconds": 60}));
        let declared =
            job(json!({"timeoutSeconds": 60, "timer": {"period": "0 0 3 * * ?"}, "maxRetries": 2}));
        let stored = job(json!({"timeoutSeconds": 300, "active": 0, "jobDescription": "by hand"}));
        assert_eq!(
            plan_reconcile(Some(&previous), &declared, Some(&stored)),
            Reconcile::Update {
                fields: vec!["maxRetries".into(), "timer".into()],
                definition: job(json!({
                    "timeoutSeconds": 300, "active": 0, "jobDescription": "by hand",
                    "timer": {"period": "0 0 3 * * ?"}, "maxRetries": 2
                })),
            }
        );
    }

    #[test]
    fn a_field_the_code_drops_is_removed_and_one_it_changes_overrides_the_operator() {
        let previous = job(json!({"timeoutSeconds": 60, "qos": 1}));
        let declared = job(json!({"timeoutSeconds": 90}));
        let stored = job(json!({"timeoutSeconds": 300, "qos": 1}));
        assert_eq!(
            plan_reconcile(Some(&previous), &declared, Some(&stored)),
            Reconcile::Update {
                fields: vec!["qos".into(), "timeoutSeconds".into()],
                definition: job(json!({"timeoutSeconds": 90})),
            }
        );
    }

    #[test]
    fn pause_state_and_labels_are_never_declared_after_creation() {
        let previous = job(json!({"labels": {"team": "a"}}));
        let declared = job(json!({"labels": {"team": "b"}, "active": 1}));
        let stored = job(json!({"labels": {"team": "ops"}, "active": 0}));
        assert_eq!(
            plan_reconcile(Some(&previous), &declared, Some(&stored)),
            Reconcile::Unchanged { record: true }
        );
    }

    #[test]
    fn a_change_the_operator_already_made_writes_nothing_but_the_declaration() {
        let previous = job(json!({"timeoutSeconds": 60}));
        let declared = job(json!({"timeoutSeconds": 90}));
        let stored = job(json!({"timeoutSeconds": 90}));
        assert_eq!(
            plan_reconcile(Some(&previous), &declared, Some(&stored)),
            Reconcile::Unchanged { record: true }
        );
    }

    /// A job declared before declarations were kept: the stored definition stands in for the
    /// previous declaration, so what differs from it is applied (the behaviour before), except
    /// the pause state and the labels.
    #[test]
    fn without_a_kept_declaration_the_stored_job_stands_in() {
        let declared = job(json!({"timeoutSeconds": 90}));
        let stored = job(json!({"timeoutSeconds": 60, "active": 0}));
        assert_eq!(
            plan_reconcile(None, &declared, Some(&stored)),
            Reconcile::Update {
                fields: vec!["timeoutSeconds".into()],
                definition: job(json!({"timeoutSeconds": 90, "active": 0})),
            }
        );
        let same = job(json!({"active": 0}));
        assert_eq!(
            plan_reconcile(None, &job(json!({})), Some(&same)),
            Reconcile::Unchanged { record: true }
        );
    }

    /// Key order does not make a change.
    #[test]
    fn key_order_is_no_change() {
        let a: Value =
            serde_json::from_str(r#"{"jobName": "a", "timer": {"period": "5m", "dueTime": "1s"}}"#)
                .unwrap_or_default();
        let b: Value =
            serde_json::from_str(r#"{"timer": {"dueTime": "1s", "period": "5m"}, "jobName": "a"}"#)
                .unwrap_or_default();
        assert_eq!(
            plan_reconcile(Some(&a), &b, Some(&a)),
            Reconcile::Unchanged { record: false }
        );
    }
}
