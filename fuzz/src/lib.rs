//! Helpers the fuzz targets share: where an input's "now" comes from, and the checks every
//! schedule that parsed must pass (the same ones `crates/core/tests/properties.rs` makes).
//!
//! A failed check panics; libFuzzer reports the panic as a crash and saves the input. Unbounded
//! work is caught by libFuzzer's `-timeout` (scripts/fuzz sets it), not here: a wall-clock limit
//! inside a target would turn a busy machine into false crashes.

use chrono::{DateTime, SecondsFormat, Utc};
use sundial_core::spec::Schedule;

/// 2000-01-01T00:00:00Z and 2099-12-31T23:59:59Z: the years Sundial evaluates.
const FROM_MIN: i64 = 946_684_800;
const FROM_MAX: i64 = 4_102_444_799;

/// An instant for this input: a hash of its bytes picks a second in 2000–2099, or (one input in
/// eight) one of the extreme instants chrono can hold, as the property tests do. The input's text is
/// left whole, so corpus files stay plain JSON or text that a person can read and edit.
pub fn instant_for(data: &[u8]) -> DateTime<Utc> {
    DateTime::from_timestamp(seconds_for(data), 0).unwrap_or(DateTime::UNIX_EPOCH)
}

/// A creation time for this input: a second in 2000–2099, as for `robust_timers`. Jobs are created
/// "now", so the extreme instants [`instant_for`] picks would test nothing a user can reach.
pub fn created_for(data: &[u8]) -> DateTime<Utc> {
    let secs = FROM_MIN + seconds_for(data).rem_euclid(FROM_MAX - FROM_MIN + 1);
    DateTime::from_timestamp(secs, 0).unwrap_or(DateTime::UNIX_EPOCH)
}

fn seconds_for(data: &[u8]) -> i64 {
    // FNV-1a: stable across runs and platforms, so a saved crash reproduces.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    match h % 8 {
        0 => match (h >> 3) % 4 {
            0 => DateTime::<Utc>::MIN_UTC.timestamp() + (h >> 5) as i64 % 3600,
            1 => DateTime::<Utc>::MAX_UTC.timestamp() - (h >> 5) as i64 % 3600,
            2 => (h >> 5) as i64 % FROM_MIN,
            _ => FROM_MAX + 1 + (h >> 5) as i64 % (3_000 * 365 * 86_400),
        },
        _ => FROM_MIN + ((h >> 3) % (FROM_MAX - FROM_MIN + 1) as u64) as i64,
    }
}

/// The span fire times lie in: 2000-01-01 to 2101-01-01 local time, in any zone (offsets are at
/// most 14 hours either way).
const FIRE_MIN: i64 = FROM_MIN - 14 * 3600;
const FIRE_MAX: i64 = 4_133_980_800 + 14 * 3600;

/// RFC 3339 in UTC, for messages.
pub fn rfc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// What every schedule that parsed must do from `from`: preview strictly increasing times after
/// `from`; agree with `next_after` and `fire_after` (jitter never goes backwards nor past the next
/// fire); format every time it returns as RFC 3339 naming the same instant; and give a canonical JSON
/// that parses back to the same schedule with the same times. `what` describes the input for the
/// panic message.
///
/// `from_timer`: the schedule was compiled from a timer, whose canonical JSON is only required to
/// round-trip when it fires at all: a timer may end before it starts (a `ttl` shorter than a far
/// `dueTime`), which a timer accepts with a warning and a `schedule` object refuses.
pub fn check_schedule(
    s: &Schedule,
    from: DateTime<Utc>,
    from_timer: bool,
    what: &dyn Fn() -> String,
) {
    let times = s.preview(from, 3);
    if let Some(first) = times.first() {
        assert!(
            *first > from,
            "preview from {} returned {} first; {}",
            rfc(from),
            rfc(*first),
            what()
        );
    }
    for w in times.windows(2) {
        assert!(w[0] < w[1], "preview not increasing: {times:?}; {}", what());
    }
    assert_eq!(
        s.next_after(from),
        times.first().copied(),
        "next_after disagrees with preview from {}; {}",
        rfc(from),
        what()
    );
    match s.fire_after(from, "fuzz-job") {
        Some(f) => {
            assert_eq!(
                Some(f.nominal),
                times.first().copied(),
                "fire_after nominal; {}",
                what()
            );
            assert!(f.due >= f.nominal, "jitter went backwards; {}", what());
            let jitter = s.jitter().as_millis() as i64;
            let delay = (f.due - f.nominal).num_milliseconds();
            assert!(
                delay == 0 || delay < jitter,
                "jitter {delay} ms not below the bound {jitter} ms; {}",
                what()
            );
            if let Some(next) = times.get(1) {
                assert!(
                    delay == 0 || f.due < *next,
                    "jittered {} passes the next fire {}; {}",
                    rfc(f.due),
                    rfc(*next),
                    what()
                );
            }
        }
        None => assert!(
            times.is_empty(),
            "fire_after found nothing but preview did; {}",
            what()
        ),
    }
    if times.is_empty() {
        assert!(
            s.never_fires_after(from).is_some(),
            "no fire time but no reason why; {}",
            what()
        );
    }
    for &t in &times {
        assert!(
            (FIRE_MIN..=FIRE_MAX).contains(&t.timestamp()),
            "fire time {} outside the years Sundial evaluates; {}",
            rfc(t),
            what()
        );
        let text = s.format_time(t);
        let back = DateTime::parse_from_rfc3339(&text)
            .unwrap_or_else(|e| panic!("format_time gave {text:?}: {e}; {}", what()));
        assert_eq!(
            back.with_timezone(&Utc),
            t,
            "format_time({}) = {text} is another instant; {}",
            rfc(t),
            what()
        );
    }
    let canonical = s.to_canonical_json();
    if from_timer && times.is_empty() {
        return;
    }
    let again = Schedule::from_json(&canonical)
        .unwrap_or_else(|e| panic!("canonical JSON {canonical} rejected: {e}; {}", what()));
    assert!(
        again == *s,
        "from_json(to_canonical_json()) differs: {canonical}; {}",
        what()
    );
    assert_eq!(
        again.to_canonical_json(),
        canonical,
        "canonical JSON is not a fixed point; {}",
        what()
    );
}

/// The values templates are expanded against: every kind of source a placeholder can read (system
/// variables, trigger arguments, earlier responses by position and by `respEnvName`,
/// `SUNDIAL_VAR_` variables), and one response large enough that repeating it passes
/// [`sundial_core::expand::MAX_EXPANDED_BYTES`]. Built once: the blob is costly to copy each run.
pub fn variables() -> &'static sundial_core::expand::Variables {
    static VARS: std::sync::OnceLock<sundial_core::expand::Variables> = std::sync::OnceLock::new();
    VARS.get_or_init(|| {
        let mut v = variables_with(serde_json::json!({"ok": true, "items": [{"n": 1}]}));
        v.responses[1]["big"] = serde_json::json!("b".repeat(100_000));
        v
    })
}

/// The same sources without the blob, `response` as the last (JSONPath root) response.
pub fn variables_with(response: serde_json::Value) -> sundial_core::expand::Variables {
    use serde_json::json;
    let mut v = sundial_core::expand::Variables::default();
    v.system.insert("jobId".into(), json!("fuzz-job"));
    v.system.insert("executeNumber".into(), json!(7));
    v.system.insert(
        "schedulingNotifyBody".into(),
        json!({"jobId": "fuzz-job", "state": "Succeeded", "data": [1, 2.5, null, "x"]}),
    );
    v.arguments
        .insert("user".into(), json!({"id": 1, "tags": ["a", "b"]}));
    v.arguments.insert("quote".into(), json!("\"\\\u{1}é"));
    let first = json!({
        "student": {"name": "Ann", "marks": [90, 85], "school": {"city": "Oslo"}},
        "list": [{"id": 1}, {"id": 2}, {"id": 3}],
        "": {"weird key": [[], {}]},
    });
    v.named.insert("FIRST".into(), first.clone());
    v.responses.push(first);
    v.responses.push(response);
    v.env.insert("SUNDIAL_VAR_TOKEN".into(), "s3cr3t".into());
    v.env.insert("HOME".into(), "/never/read".into());
    v
}
