//! Peer conformance: evaluates the vectors in `tests/fixtures/peer-vectors.jsonl` (mined from the test
//! suites and docs of Temporal, robfig/cron, Quartz, croner, croniter and cronie) with Sundial's spec
//! engine, mapped exactly as `/work/shared/conformance/README.md` ("How Sundial reads these vectors")
//! says. See `tests/fixtures/README.md`.
//!
//! Run with `cargo test -p sundial-core --test conformance -- --nocapture` to see every disagreement.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration as StdDuration;

use chrono::{DateTime, FixedOffset, TimeDelta, Timelike, Utc};
use serde_json::{json, Map, Value};
use sundial_core::spec::Schedule;

/// Minimum share of agreeing vectors per `dialect` group, in percent.
const MIN_AGREEMENT_PCT: f64 = 98.0;
/// A single evaluation that takes longer than this is reported as a disagreement (engine hang).
const EVAL_TIMEOUT: StdDuration = StdDuration::from_secs(30);
/// How many times to show when a spec that should be rejected parses fine.
const ERROR_PREVIEW_COUNT: usize = 3;

/// What a vector expects.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    /// `len` successive fire times strictly after `from` (as instants).
    Times(Vec<DateTime<Utc>>),
    /// The peer rejects the spec.
    Error,
    /// `kind: "match"`: whether the spec matches `time`.
    Match { time: DateTime<Utc>, matches: bool },
}

#[derive(Debug, Clone)]
struct Vector {
    id: String,
    dialect: String,
    peer: String,
    flags: Vec<String>,
    /// The peer's spec exactly as stored (string or Temporal ScheduleSpec object).
    raw_spec: Value,
    time_zone: String,
    /// `from` as written (for printing); `None` for match vectors.
    from_text: Option<String>,
    /// `from` floored to the second.
    from: Option<DateTime<Utc>>,
    expected: Expected,
    /// `expected` as written (for printing).
    expected_text: String,
    /// The Sundial schedule spec this vector maps to.
    sundial: Value,
}

/// Result of evaluating one Sundial spec.
#[derive(Debug)]
enum Outcome {
    /// Parsed; the preview (instants) and the same times formatted in the schedule's zone.
    Times(Vec<DateTime<Utc>>, Vec<String>),
    /// `Schedule::from_json` rejected the spec.
    Rejected(String),
    /// The engine panicked.
    Panicked,
    /// The engine did not answer within `EVAL_TIMEOUT`.
    TimedOut,
}

impl Outcome {
    fn describe(&self) -> String {
        match self {
            Outcome::Times(_, shown) => format!("{shown:?}"),
            Outcome::Rejected(msg) => format!("error: {msg}"),
            Outcome::Panicked => "PANIC in the engine (see stderr)".to_string(),
            Outcome::TimedOut => format!("TIMEOUT (no answer within {}s)", EVAL_TIMEOUT.as_secs()),
        }
    }
}

fn parse_instant(s: &str) -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("fixture: bad RFC 3339 {s:?}: {e}"))
}

/// All peers work at 1-second resolution: a fractional `from` behaves like its floor.
fn floor_to_second(t: DateTime<FixedOffset>) -> DateTime<Utc> {
    t.with_timezone(&Utc)
        .with_nanosecond(0)
        .expect("nanosecond 0 is always valid")
}

/// `day_of_month` -> `dayOfMonth`.
fn snake_to_camel(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut upper = false;
    for c in s.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A Temporal CalendarSpec / StructuredCalendarSpec with camelCase keys; values (strings or range
/// arrays `[{start, end, step}]`) are kept as they are.
fn map_temporal_calendar(cal: &Value) -> Value {
    let obj = cal
        .as_object()
        .expect("fixture: calendar must be an object");
    let mapped: Map<String, Value> = obj
        .iter()
        .map(|(k, v)| (snake_to_camel(k), v.clone()))
        .collect();
    Value::Object(mapped)
}

/// Temporal ScheduleSpec (proto field names) -> Sundial spec with `"dialect": "temporal"`.
fn map_temporal_spec(spec: &Value) -> Value {
    let obj = spec
        .as_object()
        .expect("fixture: a Temporal spec must be an object");
    let mut calendars = Vec::new();
    let mut exclude = Vec::new();
    let mut out = Map::new();
    for (key, val) in obj {
        let list = || {
            val.as_array()
                .unwrap_or_else(|| panic!("fixture: {key} must be an array"))
        };
        match key.as_str() {
            "calendar" | "structured_calendar" => {
                calendars.extend(list().iter().map(map_temporal_calendar));
            }
            "exclude_calendar" | "exclude_structured_calendar" => {
                exclude.extend(list().iter().map(map_temporal_calendar));
            }
            "cron_string" => {
                out.insert("cron".into(), val.clone());
            }
            "interval" => {
                let intervals: Vec<Value> = list()
                    .iter()
                    .map(|iv| {
                        let iv = iv.as_object().expect("fixture: interval must be an object");
                        let mut m = Map::new();
                        for (k, v) in iv {
                            match k.as_str() {
                                "interval" => m.insert("every".into(), v.clone()),
                                "phase" => m.insert("offset".into(), v.clone()),
                                other => panic!("fixture: unmapped IntervalSpec field {other:?}"),
                            };
                        }
                        Value::Object(m)
                    })
                    .collect();
                out.insert("intervals".into(), Value::Array(intervals));
            }
            "start_time" => {
                out.insert("startTime".into(), val.clone());
            }
            "end_time" => {
                out.insert("endTime".into(), val.clone());
            }
            "timezone_name" => {
                out.insert("timeZone".into(), val.clone());
            }
            "jitter" => {
                out.insert("jitter".into(), val.clone());
            }
            other => panic!("fixture: unmapped Temporal ScheduleSpec field {other:?}"),
        }
    }
    if !calendars.is_empty() {
        out.insert("calendars".into(), Value::Array(calendars));
    }
    if !exclude.is_empty() {
        out.insert("exclude".into(), Value::Array(exclude));
    }
    out.insert("dialect".into(), json!("temporal"));
    Value::Object(out)
}

/// The DST policy that reproduces a cron peer; `None` = the dialect default (no `dst` key).
fn dst_policy_for_peer(peer: &str) -> Option<Value> {
    match peer {
        "robfig" => Some(json!({"gap": "skip", "overlap": "both"})),
        "croner" => Some(json!({"gap": "shift", "overlap": "first"})),
        "croniter" => Some(json!({"gap": "shift", "overlap": "auto"})),
        "croner@11" | "cronie" | "quartz" => None,
        // Vixie cron behaves like cronie (the standard default).
        p if p.starts_with("vixie-cron") => None,
        other => panic!("fixture: no DST mapping for cron peer {other:?}"),
    }
}

/// Does a cron string carry its own zone (`TZ=Zone …` / `CRON_TZ=Zone …`)?
fn has_tz_prefix(cron: &str) -> bool {
    let t = cron.trim_start();
    t.starts_with("TZ=") || t.starts_with("CRON_TZ=")
}

/// The cron expression without any `TZ=`/`CRON_TZ=` prefix.
fn strip_tz_prefix(cron: &str) -> &str {
    let t = cron.trim_start();
    if has_tz_prefix(t) {
        t.split_once(char::is_whitespace)
            .map_or("", |(_, rest)| rest.trim_start())
    } else {
        t
    }
}

/// Maps one vector to its Sundial schedule spec (README "How Sundial reads these vectors").
fn to_sundial_spec(dialect: &str, peer: &str, spec: &Value, time_zone: &str) -> Value {
    match dialect {
        "temporal-calendar" | "temporal-interval" => map_temporal_spec(spec),
        "cron5" | "cron6-seconds-first" | "robfig" | "quartz7" => {
            let cron = spec
                .as_str()
                .expect("fixture: a cron spec must be a string");
            let mut out = Map::new();
            out.insert("cron".into(), json!([cron]));
            let sundial_dialect = if dialect == "quartz7" {
                "quartz"
            } else {
                "standard"
            };
            out.insert("dialect".into(), json!(sundial_dialect));
            if !has_tz_prefix(cron) {
                out.insert("timeZone".into(), json!(time_zone));
            }
            if let Some(dst) = dst_policy_for_peer(peer) {
                out.insert("dst".into(), dst);
            }
            Value::Object(out)
        }
        other => panic!("fixture: unknown dialect {other:?}"),
    }
}

fn str_field<'a>(v: &'a Value, key: &str, id: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("fixture {id}: missing string field {key:?}"))
}

fn parse_vector(line: &str) -> Vector {
    let v: Value = serde_json::from_str(line).expect("fixture: every line is a JSON object");
    let id = str_field(&v, "id", "?").to_string();
    let dialect = str_field(&v, "dialect", &id).to_string();
    let peer = str_field(&v, "peer", &id).to_string();
    let time_zone = str_field(&v, "time_zone", &id).to_string();
    let raw_spec = v
        .get("spec")
        .cloned()
        .unwrap_or_else(|| panic!("fixture {id}: no spec"));
    let flags: Vec<String> = v
        .get("flags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let from_text = v.get("from").and_then(Value::as_str).map(String::from);
    let from = from_text
        .as_deref()
        .map(|s| floor_to_second(parse_instant(s)));
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("next");
    let (expected, expected_text) = match kind {
        "match" => {
            let time = str_field(&v, "time", &id);
            let matches = v
                .get("expected_match")
                .and_then(Value::as_bool)
                .unwrap_or_else(|| panic!("fixture {id}: match vector without expected_match"));
            let e = Expected::Match {
                time: parse_instant(time).with_timezone(&Utc),
                matches,
            };
            (e, format!("matches({time}) == {matches}"))
        }
        "next" => {
            let exp = v
                .get("expected")
                .unwrap_or_else(|| panic!("fixture {id}: no expected"));
            assert!(from.is_some(), "fixture {id}: next vector without from");
            match exp {
                Value::String(s) if s == "error" => (Expected::Error, "error".to_string()),
                Value::Array(items) => {
                    let texts: Vec<&str> = items
                        .iter()
                        .map(|t| {
                            t.as_str()
                                .unwrap_or_else(|| panic!("fixture {id}: bad time"))
                        })
                        .collect();
                    let times = texts
                        .iter()
                        .map(|t| parse_instant(t).with_timezone(&Utc))
                        .collect();
                    (Expected::Times(times), format!("{texts:?}"))
                }
                other => panic!("fixture {id}: unexpected `expected` {other}"),
            }
        }
        other => panic!("fixture {id}: unknown kind {other:?}"),
    };
    let sundial = to_sundial_spec(&dialect, &peer, &raw_spec, &time_zone);
    Vector {
        id,
        dialect,
        peer,
        flags,
        raw_spec,
        time_zone,
        from_text,
        from,
        expected,
        expected_text,
        sundial,
    }
}

/// The shared vectors (a verbatim copy) and the ones Sundial added from the peers' own test suites
/// (`peer-vectors-added.jsonl`, same format; see `tests/fixtures/README.md`).
const VECTOR_FILES: [&str; 2] = [
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/peer-vectors.jsonl"
    ),
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/peer-vectors-added.jsonl"
    ),
];

fn load_vectors() -> Vec<Vector> {
    let mut vectors: Vec<Vector> = Vec::new();
    for path in VECTOR_FILES {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
        vectors.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(parse_vector),
        );
    }
    let mut ids: Vec<&str> = vectors.iter().map(|v| v.id.as_str()).collect();
    ids.sort_unstable();
    let before = ids.len();
    ids.dedup();
    assert_eq!(before, ids.len(), "fixture: vector ids must be unique");
    vectors
}

/// Deliberate deviations (fixtures/deviations.json): vectors whose peer contradicts other peers in
/// the same data. Each must name vectors that require the opposite behaviour, and those must pass,
/// so a deviation can only excuse a real contradiction, never a plain failure.
fn load_deviations(vectors: &[Vector]) -> BTreeMap<String, String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/deviations.json"
    );
    let text = std::fs::read_to_string(path).expect("read deviations.json");
    let entries: Vec<Value> = serde_json::from_str(&text).expect("parse deviations.json");
    let mut out = BTreeMap::new();
    for entry in entries {
        let id = entry["id"].as_str().expect("deviation id").to_string();
        let reason = entry["reason"]
            .as_str()
            .expect("deviation reason")
            .to_string();
        let others: Vec<&str> = entry["contradictedBy"]
            .as_array()
            .expect("contradictedBy")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !others.is_empty(),
            "deviation {id} names no contradicting vector"
        );
        for other in others {
            let v = vectors
                .iter()
                .find(|v| v.id == other)
                .unwrap_or_else(|| panic!("deviation {id}: no vector {other}"));
            assert!(
                check(v).is_ok(),
                "deviation {id}: contradicting vector {other} must pass"
            );
        }
        out.insert(id, reason);
    }
    out
}

/// Why a vector is not comparable at all, if it is not.
fn skip_reason(v: &Vector) -> Option<String> {
    let quirk: Vec<&str> = v
        .flags
        .iter()
        .map(String::as_str)
        .filter(|f| matches!(*f, "peer-quirk" | "non-monotonic"))
        .collect();
    if !quirk.is_empty() {
        return Some(format!("flagged {}", quirk.join(", ")));
    }
    if v.peer == "robfig" {
        if let Some(spec) = v.raw_spec.as_str() {
            if strip_tz_prefix(spec).starts_with("@every") {
                return Some(
                    "robfig @every counts from the query time, not a persistent schedule".into(),
                );
            }
        }
    }
    None
}

/// Does this vector mark itself as the dialect quirk (flag like `vixie-star-quirk`, or a peer such as
/// `vixie-cron (croniter implement_cron_bug=True)`)?
fn marked_as_quirk(v: &Vector) -> bool {
    let peer = v.peer.to_ascii_lowercase();
    v.flags
        .iter()
        .any(|f| f.contains("quirk") || f == "non-monotonic")
        || peer.contains("quirk")
        || peer.contains("bug")
}

/// Two expectations for the same query that cannot both hold.
fn contradicts(a: &Expected, b: &Expected) -> bool {
    match (a, b) {
        (Expected::Error, Expected::Error) => false,
        (Expected::Error, _) | (_, Expected::Error) => true,
        (Expected::Times(x), Expected::Times(y)) => {
            // A shorter list that is a prefix of the longer one is consistent; an empty list means
            // "never again" and contradicts any non-empty one.
            if x.is_empty() != y.is_empty() {
                return true;
            }
            x.iter().zip(y.iter()).any(|(p, q)| p != q)
        }
        _ => false,
    }
}

/// Finds vectors with identical dialect, spec, time zone and `from` whose expected values contradict
/// each other. Returns the ids to drop from the denominator, with the reason, and prints every pair.
fn find_conflicts(vectors: &[&Vector]) -> BTreeMap<String, String> {
    let mut excluded = BTreeMap::new();
    println!("== Contradicting vectors (same dialect, spec, time zone and from) ==");
    let mut any = false;
    for (i, a) in vectors.iter().enumerate() {
        for b in &vectors[i + 1..] {
            let same_query = a.dialect == b.dialect
                && a.raw_spec == b.raw_spec
                && a.time_zone == b.time_zone
                && a.from.is_some()
                && a.from == b.from;
            if !same_query || !contradicts(&a.expected, &b.expected) {
                continue;
            }
            any = true;
            println!(
                "  {} (peer {}) vs {} (peer {}): spec {} in {} from {}",
                a.id,
                a.peer,
                b.id,
                b.peer,
                a.raw_spec,
                a.time_zone,
                a.from_text.as_deref().unwrap_or("-")
            );
            println!("      {}: {}", a.id, a.expected_text);
            println!("      {}: {}", b.id, b.expected_text);
            match (marked_as_quirk(a), marked_as_quirk(b)) {
                (true, false) => {
                    println!("      -> excluded {} (marked as the quirk)", a.id);
                    excluded.insert(a.id.clone(), format!("contradicts {}; marked as quirk", b.id));
                }
                (false, true) => {
                    println!("      -> excluded {} (marked as the quirk)", b.id);
                    excluded.insert(b.id.clone(), format!("contradicts {}; marked as quirk", a.id));
                }
                _ if a.sundial != b.sundial => println!(
                    "      -> neither or both marked as a quirk; they map to different Sundial specs \
                     ({} vs {}), so both stay in the denominator",
                    a.sundial, b.sundial
                ),
                _ => println!(
                    "      -> neither or both marked as a quirk and the Sundial specs are identical: \
                     both stay in the denominator (at most one can agree)"
                ),
            }
        }
    }
    if !any {
        println!("  (none)");
    }
    excluded
}

/// Parses and previews a Sundial spec on a worker thread, so a panic or a hang in the engine shows
/// up as one disagreement instead of aborting the whole run.
fn evaluate(spec: &Value, after: DateTime<Utc>, count: usize) -> Outcome {
    let spec = spec.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = match Schedule::from_json(&spec) {
            Err(e) => Outcome::Rejected(e.to_string()),
            Ok(schedule) => {
                let times = schedule.preview(after, count);
                let shown = times.iter().map(|t| schedule.format_time(*t)).collect();
                Outcome::Times(times, shown)
            }
        };
        let _ = tx.send(outcome);
    });
    match rx.recv_timeout(EVAL_TIMEOUT) {
        Ok(outcome) => outcome,
        Err(mpsc::RecvTimeoutError::Disconnected) => Outcome::Panicked,
        Err(mpsc::RecvTimeoutError::Timeout) => Outcome::TimedOut,
    }
}

/// Runs one vector; `Ok(())` when Sundial agrees, else `Err(what Sundial did)`.
fn check(v: &Vector) -> Result<(), String> {
    match &v.expected {
        Expected::Error => {
            let from = v.from.expect("next vectors have a from");
            match evaluate(&v.sundial, from, ERROR_PREVIEW_COUNT) {
                Outcome::Rejected(_) => Ok(()),
                Outcome::Times(_, shown) => Err(format!("accepted; first times {shown:?}")),
                other => Err(other.describe()),
            }
        }
        Expected::Times(want) => {
            let from = v.from.expect("next vectors have a from");
            match evaluate(&v.sundial, from, want.len()) {
                Outcome::Times(got, _) if &got == want => Ok(()),
                other => Err(other.describe()),
            }
        }
        Expected::Match { time, matches } => {
            let after = *time - TimeDelta::seconds(1);
            match evaluate(&v.sundial, after, 1) {
                Outcome::Times(got, shown) => {
                    let got_match = got.first() == Some(time);
                    if got_match == *matches {
                        Ok(())
                    } else {
                        Err(format!(
                            "matches = {got_match} (next after {} is {shown:?})",
                            after.to_rfc3339()
                        ))
                    }
                }
                other => Err(other.describe()),
            }
        }
    }
}

/// `from` as written, or for a match vector the instant the preview starts from.
fn from_display(v: &Vector) -> String {
    match (&v.from_text, &v.expected) {
        (Some(from), _) => from.clone(),
        (None, Expected::Match { time, .. }) => {
            format!(
                "{} (match: time - 1s)",
                (*time - TimeDelta::seconds(1)).to_rfc3339()
            )
        }
        (None, _) => "-".to_string(),
    }
}

#[derive(Default)]
struct GroupReport {
    comparable: usize,
    agreed: usize,
    skipped: Vec<(String, String)>,
    disagreements: Vec<String>,
}

#[test]
fn peer_conformance() {
    let vectors = load_vectors();
    println!("Loaded {} peer vectors", vectors.len());

    let mut groups: BTreeMap<String, GroupReport> = BTreeMap::new();
    let mut comparable: Vec<&Vector> = Vec::new();
    for v in &vectors {
        let group = groups.entry(v.dialect.clone()).or_default();
        match skip_reason(v) {
            Some(reason) => group.skipped.push((v.id.clone(), reason)),
            None => comparable.push(v),
        }
    }

    let conflicts = find_conflicts(&comparable);
    let deviations = load_deviations(&vectors);

    for v in comparable {
        let group = groups.get_mut(&v.dialect).expect("group created above");
        if let Some(reason) = conflicts.get(&v.id) {
            group.skipped.push((v.id.clone(), reason.clone()));
            continue;
        }
        if let Some(reason) = deviations.get(&v.id) {
            assert!(
                check(v).is_err(),
                "deviation {} is stale: Sundial now agrees with it",
                v.id
            );
            group
                .skipped
                .push((v.id.clone(), format!("deliberate deviation: {reason}")));
            continue;
        }
        group.comparable += 1;
        match check(v) {
            Ok(()) => group.agreed += 1,
            Err(got) => group.disagreements.push(format!(
                "    id:       {} (peer {})\n    spec:     {}  [zone {}]\n    sundial:  {}\n    from:     {}\n    expected: {}\n    got:      {}",
                v.id,
                v.peer,
                v.raw_spec,
                v.time_zone,
                v.sundial,
                from_display(v),
                v.expected_text,
                got
            )),
        }
    }

    let mut failing = Vec::new();
    println!();
    for (dialect, g) in &groups {
        let pct = if g.comparable == 0 {
            100.0
        } else {
            100.0 * g.agreed as f64 / g.comparable as f64
        };
        println!(
            "== {dialect}: {}/{} agreed ({pct:.1}%), {} skipped ==",
            g.agreed,
            g.comparable,
            g.skipped.len()
        );
        for (id, reason) in &g.skipped {
            println!("  skipped {id}: {reason}");
        }
        for d in &g.disagreements {
            println!("  DISAGREEMENT\n{d}");
        }
        if pct < MIN_AGREEMENT_PCT {
            failing.push(format!(
                "{dialect}: {pct:.1}% ({}/{})",
                g.agreed, g.comparable
            ));
        }
    }

    println!("\n== Summary ==");
    for (dialect, g) in &groups {
        println!(
            "  {dialect:<22} comparable {:>3}  agreed {:>3}  skipped {:>2}",
            g.comparable,
            g.agreed,
            g.skipped.len()
        );
    }
    assert!(
        failing.is_empty(),
        "groups below {MIN_AGREEMENT_PCT}% agreement with their peers: {}",
        failing.join("; ")
    );
}
