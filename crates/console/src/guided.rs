//! The guided fields of a job's definition: retries (`maxRetries`, `retryPolicy`), the
//! `timeouts`, the first notification rule and `async` polling, as plain text controls instead of
//! JSON. The new-job page builds them into the definition it creates; the edit page shows them
//! filled from the job and applies to its JSON only the ones the person changed.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The guided controls' text, as typed (field names as the forms post them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct GuidedFields {
    /// `maxRetries`.
    pub max_retries: String,
    /// `retryPolicy`'s fields.
    pub retry_initial_interval: String,
    pub retry_backoff_coefficient: String,
    pub retry_maximum_interval: String,
    pub retry_maximum_attempts: String,
    /// `timeouts`' fields (the fourth timeout is `timeoutSeconds`).
    pub schedule_to_start: String,
    pub schedule_to_close: String,
    pub heartbeat: String,
    /// The first `notification` rule: where to, and on which outcome.
    pub notify_url: String,
    pub notify_state: String,
    /// `async` (a checkbox: `on` when ticked), `checkUrl`, `checkRateSeconds`.
    #[serde(rename = "async")]
    pub is_async: String,
    pub check_url: String,
    pub check_rate_seconds: String,
    /// `cancelUrl`: called when a stopped run's request was already sent (a URL, called with
    /// POST; a call object goes in the JSON).
    pub cancel_url: String,
}

/// How a control's text becomes the field's value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Number,
    Checkbox,
}

type Text = fn(&GuidedFields) -> &str;
type TextMut = fn(&mut GuidedFields) -> &mut String;

/// One guided control: the definition field it sets (a path), its form name, label and hint
/// (`None`: the core's field table's description of the field), how its text is read, and its
/// text in the form.
pub(crate) struct GuidedControl {
    pub path: &'static str,
    pub name: &'static str,
    pub label: &'static str,
    hint: Option<&'static str>,
    kind: Kind,
    text: Text,
    text_mut: TextMut,
}

impl GuidedControl {
    /// The hint shown under the control.
    pub(crate) fn hint(&self) -> &'static str {
        self.hint.unwrap_or_else(|| {
            sundial_core::job::document::job_field(self.path).map_or("", |f| f.description)
        })
    }

    /// Its text in `fields`.
    pub(crate) fn text<'a>(&self, fields: &'a GuidedFields) -> &'a str {
        (self.text)(fields)
    }

    /// Whether it is a checkbox (`on` when ticked).
    pub(crate) fn is_checkbox(&self) -> bool {
        self.kind == Kind::Checkbox
    }
}

macro_rules! control {
    ($path:literal, $name:literal, $label:literal, $hint:expr, $kind:ident, $field:ident) => {
        GuidedControl {
            path: $path,
            name: $name,
            label: $label,
            hint: $hint,
            kind: Kind::$kind,
            text: |f| &f.$field,
            text_mut: |f| &mut f.$field,
        }
    };
}

/// Every guided control, in the forms' order.
pub(crate) const CONTROLS: [GuidedControl; 14] = [
    control!("maxRetries", "maxRetries", "Most retries", None, Number, max_retries),
    control!("retryPolicy.initialInterval", "retryInitialInterval", "First retry after",
        Some("retryPolicy.initialInterval: the wait before the first retry (1s, PT5S); each next wait is multiplied by the coefficient."),
        Text, retry_initial_interval),
    control!("retryPolicy.backoffCoefficient", "retryBackoffCoefficient", "Backoff coefficient",
        Some("retryPolicy.backoffCoefficient: 1 to 100 (default 2)."), Number, retry_backoff_coefficient),
    control!("retryPolicy.maximumInterval", "retryMaximumInterval", "Longest wait between retries",
        Some("retryPolicy.maximumInterval: the longest wait between attempts (default 100 × the first)."),
        Text, retry_maximum_interval),
    control!("retryPolicy.maximumAttempts", "retryMaximumAttempts", "Most attempts",
        Some("retryPolicy.maximumAttempts: attempts in all, the first included (0: no limit but maxRetries)."),
        Number, retry_maximum_attempts),
    control!("timeouts.scheduleToStart", "scheduleToStart", "Schedule to start",
        Some("timeouts.scheduleToStart: the longest a run may wait to start (10m)."), Text, schedule_to_start),
    control!("timeouts.scheduleToClose", "scheduleToClose", "Schedule to close",
        Some("timeouts.scheduleToClose: the longest a run may take from due to end, retries included (1h)."),
        Text, schedule_to_close),
    control!("timeouts.heartbeat", "heartbeat", "Heartbeat",
        Some("timeouts.heartbeat: the longest an async job may go without reporting progress (5m)."),
        Text, heartbeat),
    control!("notification[0].url", "notifyUrl", "Notify URL",
        Some("Called (POST) when a run ends: the first notification rule; add more in the JSON."),
        Text, notify_url),
    control!("notification[0].stateEquals", "notifyState", "Notify on outcome",
        Some("Only on this outcome (an HTTP status like 500, or timeout); blank: every end."),
        Text, notify_state),
    control!("async", "async", "Asynchronous", None, Checkbox, is_async),
    control!("checkUrl", "checkUrl", "Check URL", None, Text, check_url),
    control!("checkRateSeconds", "checkRateSeconds", "Check every (seconds)", None, Number, check_rate_seconds),
    control!("cancelUrl", "cancelUrl", "Cancel URL", None, Text, cancel_url),
];

/// The guided control that sets `path`.
pub(crate) fn control(path: &str) -> Option<&'static GuidedControl> {
    CONTROLS.iter().find(|c| c.path == path)
}

/// A number when `text` reads as one, else the text, for the use case to name what is wrong.
pub(crate) fn number_or_text(text: &str) -> Value {
    text.parse::<u64>()
        .map(|n| json!(n))
        .or_else(|_| text.parse::<f64>().map(|n| json!(n)))
        .unwrap_or_else(|_| json!(text))
}

pub(crate) fn non_empty(text: &str) -> Option<&str> {
    Some(text.trim()).filter(|t| !t.is_empty())
}

impl GuidedFields {
    /// The controls filled from a definition (the edit page's start): each field's value as
    /// text, a ticked box for `async: true`.
    pub(crate) fn of_definition(definition: &Value) -> GuidedFields {
        let mut fields = GuidedFields::default();
        for control in &CONTROLS {
            let Some(value) = at_path(definition, control.path) else {
                continue;
            };
            *(control.text_mut)(&mut fields) = match (control.kind, value) {
                (Kind::Checkbox, Value::Bool(true)) => "on".into(),
                (Kind::Checkbox, _) => String::new(),
                (_, Value::String(s)) => s.clone(),
                (_, Value::Null) => String::new(),
                (_, other) => other.to_string(),
            };
        }
        fields
    }

    /// The guided part of a new job's definition: each control not blank sets its field.
    pub(crate) fn apply_to_new(&self, own: &mut Map<String, Value>) {
        for control in &CONTROLS {
            if let Some(value) = value_of(control.kind, control.text(self)) {
                set_path(own, control.path, value);
            }
        }
        // The first notification rule is a POST unless the JSON says otherwise.
        if let Some(Value::Array(rules)) = own.get_mut("notification") {
            if let Some(Value::Object(rule)) = rules.first_mut() {
                if rule.contains_key("url") {
                    rule.entry("method").or_insert_with(|| json!("POST"));
                }
            }
        }
    }

    /// The edit page's change: the controls whose text differs from `before` (what the page
    /// showed) set their field in `definition`, or remove it when emptied (an emptied
    /// notification URL removes the first rule). Controls left as shown change nothing, so an
    /// edit of the same field in the JSON is kept. Returns the paths changed.
    pub(crate) fn apply_changes(
        &self,
        before: &GuidedFields,
        definition: &mut Map<String, Value>,
    ) -> Vec<&'static str> {
        let mut changed = Vec::new();
        for control in &CONTROLS {
            let path = control.path;
            let (now, then) = (control.text(self).trim(), control.text(before).trim());
            if now == then {
                continue;
            }
            changed.push(path);
            match value_of(control.kind, now) {
                Some(value) => {
                    let new_rule = path == "notification[0].url"
                        && at_path(&Value::Object(definition.clone()), path).is_none();
                    set_path(definition, path, value);
                    if new_rule {
                        if let Some(Value::Array(rules)) = definition.get_mut("notification") {
                            if let Some(Value::Object(rule)) = rules.first_mut() {
                                rule.entry("method").or_insert_with(|| json!("POST"));
                            }
                        }
                    }
                }
                None if path == "notification[0].url" => {
                    if let Some(Value::Array(rules)) = definition.get_mut("notification") {
                        if !rules.is_empty() {
                            rules.remove(0);
                        }
                        if rules.is_empty() {
                            definition.remove("notification");
                        }
                    }
                }
                None => remove_path(definition, path),
            }
        }
        changed
    }
}

/// The value a control's text sets: `None` when blank (an unticked box).
fn value_of(kind: Kind, text: &str) -> Option<Value> {
    let text = non_empty(text)?;
    Some(match kind {
        Kind::Text => json!(text),
        Kind::Number => number_or_text(text),
        Kind::Checkbox => json!(true),
    })
}

/// A path's parts: `retryPolicy.initialInterval` → `retryPolicy`, `initialInterval`;
/// `notification[0].url` → `notification`, `[0]`, `url`.
fn parts(path: &str) -> Vec<&str> {
    path.split('.')
        .flat_map(|part| match part.split_once('[') {
            Some((name, _)) => vec![name, "[0]"],
            None => vec![part],
        })
        .collect()
}

fn at_path<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    parts(path)
        .into_iter()
        .try_fold(value, |at, part| match part {
            "[0]" => at.as_array()?.first(),
            name => at.as_object()?.get(name),
        })
}

/// Sets `path` in `map`, making the objects (and the first array element) on the way.
fn set_path(map: &mut Map<String, Value>, path: &str, value: Value) {
    let mut root = Value::Object(std::mem::take(map));
    set_in(&mut root, &parts(path), value);
    if let Value::Object(done) = root {
        *map = done;
    }
}

fn set_in(at: &mut Value, parts: &[&str], value: Value) {
    let Some((first, rest)) = parts.split_first() else {
        *at = value;
        return;
    };
    if *first == "[0]" {
        if !at.is_array() {
            *at = json!([]);
        }
        if let Value::Array(items) = at {
            if items.is_empty() {
                items.push(json!({}));
            }
            set_in(&mut items[0], rest, value);
        }
    } else {
        if !at.is_object() {
            *at = json!({});
        }
        if let Value::Object(object) = at {
            set_in(object.entry(*first).or_insert(Value::Null), rest, value);
        }
    }
}

/// Removes `path` from `map`, and an object it leaves empty.
fn remove_path(map: &mut Map<String, Value>, path: &str) {
    let mut root = Value::Object(std::mem::take(map));
    remove_in(&mut root, &parts(path));
    if let Value::Object(done) = root {
        *map = done;
    }
}

fn remove_in(at: &mut Value, parts: &[&str]) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    match at {
        Value::Object(object) if rest.is_empty() => {
            object.remove(*first);
        }
        Value::Object(object) => {
            if let Some(child) = object.get_mut(*first) {
                remove_in(child, rest);
                if child.as_object().is_some_and(Map::is_empty) {
                    object.remove(*first);
                }
            }
        }
        Value::Array(items) if *first == "[0]" => {
            if let Some(child) = items.first_mut() {
                remove_in(child, rest);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition() -> Value {
        json!({
            "maxRetries": 3,
            "retryPolicy": {"initialInterval": "5s", "backoffCoefficient": 2},
            "timeouts": {"heartbeat": "30s"},
            "notification": [{"url": "http://127.0.0.1:9/n", "method": "PUT", "stateEquals": "500"}, {"url": "http://127.0.0.1:9/m"}],
            "async": true,
            "checkRateSeconds": 10,
        })
    }

    #[test]
    fn the_controls_are_filled_from_a_definition() {
        let fields = GuidedFields::of_definition(&definition());
        assert_eq!(fields.max_retries, "3");
        assert_eq!(fields.retry_initial_interval, "5s");
        assert_eq!(fields.retry_backoff_coefficient, "2");
        assert_eq!(fields.retry_maximum_interval, "");
        assert_eq!(fields.heartbeat, "30s");
        assert_eq!(fields.notify_url, "http://127.0.0.1:9/n");
        assert_eq!(fields.notify_state, "500");
        assert_eq!(fields.is_async, "on");
        assert_eq!(fields.check_url, "");
        assert_eq!(fields.check_rate_seconds, "10");
    }

    /// Unchanged controls change nothing (not even a field the JSON changed meanwhile); changed
    /// ones set their field, emptied ones remove it.
    #[test]
    fn only_the_changed_controls_change_the_definition() {
        let before = GuidedFields::of_definition(&definition());
        let mut json = definition().as_object().cloned().unwrap_or_default();
        // Changed in the JSON only: kept.
        json.insert("maxRetries".into(), json!(7));
        assert!(before.apply_changes(&before, &mut json).is_empty());
        assert_eq!(json["maxRetries"], 7);

        let mut after = before.clone();
        after.retry_maximum_attempts = "4".into();
        after.heartbeat = String::new();
        after.notify_state = String::new();
        after.is_async = String::new();
        after.check_url = "http://127.0.0.1:9/status".into();
        let changed = after.apply_changes(&before, &mut json);
        assert_eq!(
            changed,
            [
                "retryPolicy.maximumAttempts",
                "timeouts.heartbeat",
                "notification[0].stateEquals",
                "async",
                "checkUrl"
            ]
        );
        assert_eq!(
            Value::Object(json),
            json!({
                "maxRetries": 7,
                "retryPolicy": {"initialInterval": "5s", "backoffCoefficient": 2, "maximumAttempts": 4},
                "notification": [{"url": "http://127.0.0.1:9/n", "method": "PUT"}, {"url": "http://127.0.0.1:9/m"}],
                "checkUrl": "http://127.0.0.1:9/status",
                "checkRateSeconds": 10,
            })
        );
    }

    #[test]
    fn a_notification_url_adds_or_removes_the_first_rule() {
        let before = GuidedFields::default();
        let mut json = Map::new();
        let after = GuidedFields {
            notify_url: "http://127.0.0.1:9/n".into(),
            ..GuidedFields::default()
        };
        after.apply_changes(&before, &mut json);
        assert_eq!(
            Value::Object(json.clone()),
            json!({"notification": [{"url": "http://127.0.0.1:9/n", "method": "POST"}]})
        );
        let emptied = GuidedFields::default();
        emptied.apply_changes(&after, &mut json);
        assert_eq!(Value::Object(json), json!({}));
    }

    #[test]
    fn a_new_job_gets_every_control_not_blank() {
        let fields = GuidedFields {
            max_retries: "2".into(),
            retry_backoff_coefficient: "1.5".into(),
            schedule_to_close: "1h".into(),
            notify_url: "http://127.0.0.1:9/n".into(),
            notify_state: "timeout".into(),
            is_async: "on".into(),
            check_rate_seconds: "soon".into(),
            ..GuidedFields::default()
        };
        let mut own = Map::new();
        fields.apply_to_new(&mut own);
        assert_eq!(
            Value::Object(own),
            json!({
                "maxRetries": 2,
                "retryPolicy": {"backoffCoefficient": 1.5},
                "timeouts": {"scheduleToClose": "1h"},
                "notification": [{"url": "http://127.0.0.1:9/n", "stateEquals": "timeout", "method": "POST"}],
                "async": true,
                "checkRateSeconds": "soon",
            })
        );
    }
}
