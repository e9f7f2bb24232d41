//! A job definition from `-f FILE` (JSON or YAML) and the flags for its common fields.
//!
//! The definition stays the API's JSON throughout: flags set fields by their API names, and
//! everything is checked by the server, whose message names the field. Only what the command line
//! itself can get wrong (a file that does not parse, `--set` without `=`) is a usage error here.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use crate::cli::DefinitionArgs;
use crate::error::CliError;

/// The fields of a read job that are not part of its definition (docs/api.md, Read a job): they
/// are left out when a read job is sent back to update.
pub(crate) const READ_ONLY_FIELDS: [&str; 5] = [
    "state",
    "pausedNotes",
    "pausedUntil",
    "createdAt",
    "updatedAt",
];

/// Reads `path` (`-` for stdin) as JSON, or YAML for `.yaml`/`.yml` and for text that is not JSON.
pub(crate) fn read_document(path: &Path) -> Result<Value, CliError> {
    let name = path.display().to_string();
    let text = if name == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::usage(format!("reading stdin: {e}")))?;
        text
    } else {
        std::fs::read_to_string(path)
            .map_err(|e| CliError::usage(format!("{name}: cannot read: {e}")))?
    };
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let yaml = |text: &str| {
        serde_yaml_ng::from_str::<Value>(text)
            .map_err(|e| CliError::usage(format!("{name}: invalid YAML: {e}")))
    };
    let json = |text: &str| {
        serde_json::from_str::<Value>(text)
            .map_err(|e| CliError::usage(format!("{name}: invalid JSON: {e}")))
    };
    match extension.as_deref() {
        Some("yaml" | "yml") => yaml(&text),
        Some("json") => json(&text),
        _ if text.trim_start().starts_with(['{', '[']) => json(&text),
        _ => yaml(&text),
    }
}

/// A definition file as an object.
pub(crate) fn read_definition(path: &Path) -> Result<Map<String, Value>, CliError> {
    match read_document(path)? {
        Value::Object(map) => Ok(map),
        other => Err(CliError::usage(format!(
            "{}: expected a job definition (an object), got {}",
            path.display(),
            kind(&other)
        ))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A flag's value as JSON when it parses as JSON, else as a string (`--body`, `--set`).
fn json_or_string(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Whether any flag of the definition is given (besides `-f`).
pub(crate) fn has_flags(flags: &DefinitionArgs) -> bool {
    let mut bare = Map::new();
    // Applying to an empty object changes it exactly when a flag is given; the errors only come
    // from given flags too.
    apply(&mut bare, flags).is_err() || !bare.is_empty()
}

/// Sets the fields `flags` name in `definition`.
pub(crate) fn apply(
    definition: &mut Map<String, Value>,
    flags: &DefinitionArgs,
) -> Result<(), CliError> {
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            definition.insert(key.to_string(), value);
        }
    };
    set("jobName", flags.name.clone().map(Value::from));
    set("jobDescription", flags.description.clone().map(Value::from));
    set("creator", flags.creator.clone().map(Value::from));
    set("creatorName", flags.creator_name.clone().map(Value::from));
    set("overlap", flags.overlap.map(|o| Value::from(o.name())));
    set("maxConcurrency", flags.max_concurrency.map(Value::from));
    set(
        "catchupWindow",
        flags.catchup_window.clone().map(Value::from),
    );
    set("pauseOnFailure", flags.pause_on_failure.map(Value::from));
    set("remainingActions", flags.remaining_actions.map(Value::from));
    set("timeoutSeconds", flags.timeout_seconds.map(Value::from));
    set("maxRetries", flags.max_retries.map(Value::from));
    if flags.paused {
        set("active", Some(Value::from(0)));
    }
    apply_labels(definition, &flags.labels)?;
    apply_action(definition, flags)?;
    apply_schedule(definition, flags)?;
    for assignment in &flags.set {
        let (path, value) = assignment.split_once('=').ok_or_else(|| {
            CliError::usage(format!(
                "--set: expected FIELD=JSON like qos=1, got {assignment:?}"
            ))
        })?;
        set_path(definition, path, json_or_string(value))?;
    }
    Ok(())
}

/// `--label KEY=VALUE`, repeatable: each sets one key of the job's `labels`, keeping the others
/// (on update, the stored ones). The key and the value are checked by the server (docs/api.md's
/// label rule); only a pair that is not one is a usage error here.
fn apply_labels(definition: &mut Map<String, Value>, pairs: &[String]) -> Result<(), CliError> {
    if pairs.is_empty() {
        return Ok(());
    }
    let mut parsed = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let (key, value) = pair.split_once('=').ok_or_else(|| {
            CliError::usage(format!(
                "--label: expected KEY=VALUE like team=payments, got {pair:?}"
            ))
        })?;
        let key = key.trim();
        if key.is_empty() {
            return Err(CliError::usage(format!(
                "--label: expected KEY=VALUE like team=payments, got {pair:?} (the key is empty)"
            )));
        }
        if value.is_empty() {
            return Err(CliError::usage(format!(
                "--label: expected KEY=VALUE like team=payments, got {pair:?} (the value is empty)"
            )));
        }
        parsed.push((key.to_string(), Value::from(value)));
    }
    with_object(definition, "labels", |labels| {
        for (key, value) in parsed {
            labels.insert(key, value);
        }
    });
    Ok(())
}

fn apply_action(
    definition: &mut Map<String, Value>,
    flags: &DefinitionArgs,
) -> Result<(), CliError> {
    let mut headers = Map::new();
    for header in &flags.headers {
        let (name, value) = header.split_once(':').ok_or_else(|| {
            CliError::usage(format!(
                "--header: expected NAME:VALUE like \"X-Team: ops\", got {header:?}"
            ))
        })?;
        headers.insert(name.trim().to_string(), Value::from(value.trim()));
    }
    let body = flags.body.as_deref().map(json_or_string);
    let shape = |call: &mut Map<String, Value>| {
        if let Some(method) = &flags.method {
            call.insert("method".into(), Value::from(method.to_ascii_uppercase()));
        }
        if !headers.is_empty() {
            call.insert("headers".into(), Value::Object(headers.clone()));
        }
        if let Some(body) = &body {
            call.insert("body".into(), body.clone());
        }
    };
    if !flags.urls.is_empty() {
        let chain = flags
            .urls
            .iter()
            .map(|url| {
                let mut call = Map::new();
                call.insert("url".into(), Value::from(url.as_str()));
                shape(&mut call);
                Value::Object(call)
            })
            .collect();
        definition.remove("target");
        definition.insert("request".into(), Value::Array(chain));
    } else if flags.method.is_some() || !headers.is_empty() || body.is_some() {
        // On update: change the calls of the stored chain.
        let Some(Value::Array(chain)) = definition.get_mut("request") else {
            return Err(CliError::usage(
                "--method, --header and --body shape the --url requests: give --url",
            ));
        };
        for call in chain.iter_mut() {
            if let Value::Object(call) = call {
                shape(call);
            }
        }
    }
    Ok(())
}

fn apply_schedule(
    definition: &mut Map<String, Value>,
    flags: &DefinitionArgs,
) -> Result<(), CliError> {
    let mut calendars = Vec::new();
    for calendar in &flags.calendars {
        calendars.push(serde_json::from_str::<Value>(calendar).map_err(|e| {
            CliError::usage(format!(
                "--calendar: expected a JSON object like '{{\"hour\": \"9\", \"dayOfWeek\": \"MON-FRI\"}}': {e}"
            ))
        })?);
    }
    let spec_fields: [(&str, Option<Value>); 7] = [
        (
            "cron",
            (!flags.cron.is_empty()).then(|| Value::from(flags.cron.clone())),
        ),
        (
            "calendars",
            (!calendars.is_empty()).then(|| Value::Array(calendars)),
        ),
        (
            "intervals",
            (!flags.intervals.is_empty()).then(|| Value::from(flags.intervals.clone())),
        ),
        ("dialect", flags.dialect.clone().map(Value::from)),
        ("jitter", flags.jitter.clone().map(Value::from)),
        ("startTime", flags.start.clone().map(Value::from)),
        ("endTime", flags.end.clone().map(Value::from)),
    ];
    let timer = match &flags.timer {
        None => None,
        Some(text) if text.trim_start().starts_with('{') => Some(
            serde_json::from_str::<Value>(text)
                .map_err(|e| CliError::usage(format!("--timer: invalid JSON: {e}")))?,
        ),
        Some(period) => Some(serde_json::json!({ "period": period })),
    };
    let timer_fields: [(&str, Option<Value>); 2] = [
        ("dueTime", flags.due_time.clone().map(Value::from)),
        ("ttl", flags.ttl.clone().map(Value::from)),
    ];
    let mut spec_given = spec_fields.iter().any(|(_, v)| v.is_some());
    let mut timer_given = timer.is_some() || timer_fields.iter().any(|(_, v)| v.is_some());
    if spec_given && timer_given {
        return Err(CliError::usage(
            "a job has a schedule (--cron, --calendar, --interval, …) or a timer (--timer, --due-time, --ttl), not both",
        ));
    }
    // `--tz` is the time zone of whichever the job has: the schedule's `timeZone`, or the
    // timer's (its cron period and wall-clock `dueTime`). Alone on an update, the stored
    // definition says which.
    let zone_of = if timer_given || (!spec_given && definition.contains_key("timer")) {
        timer_given |= flags.tz.is_some();
        "timer"
    } else {
        spec_given |= flags.tz.is_some();
        "schedule"
    };
    if spec_given {
        // A schedule replaces a timer: the API takes one or the other.
        definition.remove("timer");
        with_object(definition, "schedule", |schedule| {
            for (key, value) in spec_fields {
                if let Some(value) = value {
                    schedule.insert(key.into(), value);
                }
            }
        });
    }
    if timer_given {
        definition.remove("schedule");
        if let Some(timer) = timer {
            definition.insert("timer".into(), timer);
        }
        with_object(definition, "timer", |target| {
            for (key, value) in timer_fields {
                if let Some(value) = value {
                    target.insert(key.into(), value);
                }
            }
        });
    }
    if let Some(zone) = &flags.tz {
        with_object(definition, zone_of, |target| {
            target.insert("timeZone".into(), Value::from(zone.clone()))
        });
    }
    Ok(())
}

/// Runs `change` on the object at `key`, which is made an empty object first when it is absent or
/// not an object.
fn with_object<R>(
    map: &mut Map<String, Value>,
    key: &str,
    change: impl FnOnce(&mut Map<String, Value>) -> R,
) -> R {
    let mut inner = match map.remove(key) {
        Some(Value::Object(inner)) => inner,
        _ => Map::new(),
    };
    let result = change(&mut inner);
    map.insert(key.to_string(), Value::Object(inner));
    result
}

/// Sets `a.b.c` in `map`, creating objects on the way.
fn set_path(map: &mut Map<String, Value>, path: &str, value: Value) -> Result<(), CliError> {
    if path.split('.').any(str::is_empty) {
        return Err(CliError::usage(format!(
            "--set: expected a field name like qos or timeouts.heartbeat, got {path:?}"
        )));
    }
    fn set(map: &mut Map<String, Value>, path: &str, value: Value) {
        match path.split_once('.') {
            None => {
                map.insert(path.to_string(), value);
            }
            Some((head, rest)) => with_object(map, head, |inner| set(inner, rest, value)),
        }
    }
    set(map, path, value);
    Ok(())
}

/// Fills what a create needs and flags rarely give: `jobName` (the id), `creator` (`$USER`) and
/// `creatorName` (the creator).
pub(crate) fn fill_create_defaults(definition: &mut Map<String, Value>, job_id: &str) {
    let missing = |d: &Map<String, Value>, key: &str| d.get(key).is_none_or(Value::is_null);
    if missing(definition, "jobName") {
        definition.insert("jobName".into(), Value::from(job_id));
    }
    if missing(definition, "creator") {
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| "sundial-cli".into());
        definition.insert("creator".into(), Value::from(user));
    }
    if missing(definition, "creatorName") {
        let creator = definition.get("creator").cloned().unwrap_or(Value::Null);
        definition.insert("creatorName".into(), creator);
    }
}

/// Trigger arguments from `--args JSON` and `--arg KEY=VALUE` (added to it; values are strings).
pub(crate) fn trigger_arguments(
    json: Option<&str>,
    pairs: &[String],
) -> Result<Option<Value>, CliError> {
    let mut arguments = match json {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(CliError::usage(format!(
                    "--args: expected a JSON object like '{{\"region\": \"emea\"}}', got {}",
                    kind(&other)
                )))
            }
            Err(e) => return Err(CliError::usage(format!("--args: invalid JSON: {e}"))),
        },
    };
    for pair in pairs {
        let (key, value) = pair.split_once('=').ok_or_else(|| {
            CliError::usage(format!(
                "--arg: expected KEY=VALUE like region=emea, got {pair:?}"
            ))
        })?;
        if key.is_empty() {
            return Err(CliError::usage(format!("--arg: empty key in {pair:?}")));
        }
        arguments.insert(key.to_string(), Value::from(value));
    }
    Ok((json.is_some() || !pairs.is_empty()).then_some(Value::Object(arguments)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::cli::Overlap;
    use serde_json::json;

    fn applied(start: Value, flags: DefinitionArgs) -> Value {
        let Value::Object(mut map) = start else {
            panic!("an object")
        };
        apply(&mut map, &flags).unwrap();
        Value::Object(map)
    }

    #[test]
    fn flags_set_api_fields() {
        let flags = DefinitionArgs {
            name: Some("Noon report".into()),
            urls: vec!["http://127.0.0.1:9000/run".into()],
            method: Some("post".into()),
            headers: vec!["X-Team: ops".into()],
            body: Some(r#"{"format": "pdf"}"#.into()),
            cron: vec!["0 12 * * MON-FRI".into()],
            tz: Some("Europe/London".into()),
            overlap: Some(Overlap::BufferOne),
            paused: true,
            set: vec!["qos=1".into(), "timeouts.heartbeat=30s".into()],
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(json!({"timer": {"period": "1h"}}), flags),
            json!({
                "jobName": "Noon report",
                "overlap": "BufferOne",
                "active": 0,
                "request": [{"url": "http://127.0.0.1:9000/run", "method": "POST",
                             "headers": {"X-Team": "ops"}, "body": {"format": "pdf"}}],
                "schedule": {"cron": ["0 12 * * MON-FRI"], "timeZone": "Europe/London"},
                "qos": 1,
                "timeouts": {"heartbeat": "30s"}
            })
        );
    }

    #[test]
    fn a_timer_replaces_a_schedule_and_keeps_its_own_fields() {
        let flags = DefinitionArgs {
            timer: Some("external".into()),
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(json!({"schedule": {"cron": ["* * * * *"]}}), flags),
            json!({"timer": {"period": "external"}})
        );
        let flags = DefinitionArgs {
            due_time: Some("10m".into()),
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(json!({"timer": {"period": "1h"}}), flags),
            json!({"timer": {"period": "1h", "dueTime": "10m"}})
        );
        let both = DefinitionArgs {
            cron: vec!["* * * * *".into()],
            ttl: Some("1d".into()),
            ..DefinitionArgs::default()
        };
        let mut map = Map::new();
        assert!(apply(&mut map, &both)
            .unwrap_err()
            .message
            .contains("not both"));
    }

    /// `--tz` is the time zone of whichever the job has: with `--timer` (or alone on a job that
    /// has a timer) the timer's `timeZone`, else the schedule's. It used to be the schedule's
    /// only, so `--timer '0 0 9 * * ?' --tz Asia/Shanghai` was refused as "not both".
    #[test]
    fn tz_sets_the_zone_of_the_timer_or_of_the_schedule() {
        let with_timer = DefinitionArgs {
            timer: Some("0 0 9 * * ?".into()),
            tz: Some("Asia/Shanghai".into()),
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(json!({}), with_timer),
            json!({"timer": {"period": "0 0 9 * * ?", "timeZone": "Asia/Shanghai"}})
        );
        let alone = DefinitionArgs {
            tz: Some("Europe/London".into()),
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(json!({"timer": {"period": "1h"}}), alone.clone()),
            json!({"timer": {"period": "1h", "timeZone": "Europe/London"}})
        );
        assert_eq!(
            applied(json!({"schedule": {"cron": ["0 9 * * *"]}}), alone.clone()),
            json!({"schedule": {"cron": ["0 9 * * *"], "timeZone": "Europe/London"}})
        );
        assert_eq!(
            applied(json!({}), alone),
            json!({"schedule": {"timeZone": "Europe/London"}})
        );
        let with_cron = DefinitionArgs {
            cron: vec!["0 9 * * *".into()],
            tz: Some("Europe/London".into()),
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(json!({"timer": {"period": "1h"}}), with_cron),
            json!({"schedule": {"cron": ["0 9 * * *"], "timeZone": "Europe/London"}})
        );
    }

    /// Issue 26 item 13: `--label team=payments` was refused by clap; it now sets one label,
    /// keeping the stored others, and a pair that is not KEY=VALUE is a usage error naming it.
    #[test]
    fn labels_are_set_one_key_at_a_time() {
        let flags = DefinitionArgs {
            labels: vec!["team=payments".into(), "tier=1".into(), "url=a=b".into()],
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(json!({"labels": {"team": "ops", "env": "prod"}}), flags),
            json!({"labels": {"team": "payments", "env": "prod", "tier": "1", "url": "a=b"}})
        );
        for bad in ["team", "=payments", "team="] {
            let flags = DefinitionArgs {
                labels: vec![bad.into()],
                ..DefinitionArgs::default()
            };
            let message = apply(&mut Map::new(), &flags).unwrap_err().message;
            assert!(
                message.starts_with("--label: expected KEY=VALUE like team=payments, got"),
                "{bad}: {message}"
            );
            assert!(has_flags(&flags));
        }
    }

    #[test]
    fn method_alone_changes_the_stored_chain() {
        let flags = DefinitionArgs {
            method: Some("GET".into()),
            ..DefinitionArgs::default()
        };
        assert_eq!(
            applied(
                json!({"request": [{"url": "a"}, {"url": "b", "method": "POST"}]}),
                flags
            ),
            json!({"request": [{"url": "a", "method": "GET"}, {"url": "b", "method": "GET"}]})
        );
        let flags = DefinitionArgs {
            method: Some("GET".into()),
            ..DefinitionArgs::default()
        };
        assert!(apply(&mut Map::new(), &flags).is_err());
    }

    #[test]
    fn has_flags_sees_any_flag() {
        assert!(!has_flags(&DefinitionArgs::default()));
        assert!(has_flags(&DefinitionArgs {
            paused: true,
            ..DefinitionArgs::default()
        }));
        assert!(has_flags(&DefinitionArgs {
            method: Some("GET".into()),
            ..DefinitionArgs::default()
        }));
    }

    #[test]
    fn create_defaults_fill_only_what_is_missing() {
        let mut map = json!({"creator": "001"}).as_object().cloned().unwrap();
        fill_create_defaults(&mut map, "report");
        assert_eq!(
            Value::Object(map),
            json!({"creator": "001", "jobName": "report", "creatorName": "001"})
        );
    }

    #[test]
    fn trigger_arguments_merge() {
        assert_eq!(trigger_arguments(None, &[]).unwrap(), None);
        assert_eq!(
            trigger_arguments(Some(r#"{"n": 1, "region": "us"}"#), &["region=emea".into()])
                .unwrap(),
            Some(json!({"n": 1, "region": "emea"}))
        );
        assert!(trigger_arguments(Some("[1]"), &[]).is_err());
        assert!(trigger_arguments(None, &["novalue".into()]).is_err());
    }

    #[test]
    fn definitions_read_as_json_or_yaml() {
        let dir = std::env::temp_dir().join(format!("sundial-def-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let yaml = dir.join("job.yaml");
        std::fs::write(&yaml, "jobName: x\nschedule:\n  cron: ['0 12 * * *']\n").unwrap();
        assert_eq!(
            Value::Object(read_definition(&yaml).unwrap()),
            json!({"jobName": "x", "schedule": {"cron": ["0 12 * * *"]}})
        );
        let json_file = dir.join("job.txt");
        std::fs::write(&json_file, r#"{"jobName": "y"}"#).unwrap();
        assert_eq!(read_definition(&json_file).unwrap()["jobName"], "y");
        std::fs::write(&json_file, "[1, 2]").unwrap();
        assert!(read_definition(&json_file)
            .unwrap_err()
            .message
            .contains("expected a job definition"));
        std::fs::write(&json_file, "{broken").unwrap();
        assert!(read_definition(&json_file)
            .unwrap_err()
            .message
            .contains("invalid JSON"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
