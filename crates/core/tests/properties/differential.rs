//! Property 3: differential tests against croner on the cron syntax both engines read the same
//! way, and against oracles built from croner's field matcher (calendars, intervals, excludes).

use std::str::FromStr;

use crate::generate::*;
use crate::support::*;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Map, Value};

/// Within 3 h of an offset change of `tz`.
fn near_transition(tz: Tz, t: DateTime<Utc>) -> bool {
    let s = t.timestamp();
    offset_at(tz, s - 3 * 3600) != offset_at(tz, s + 3 * 3600)
}

/// First instant at or after `t` that is not near a transition.
fn escape_transition(tz: Tz, t: DateTime<Utc>) -> DateTime<Utc> {
    let (mut lo, mut hi) = (t.timestamp(), t.timestamp() + 6 * 3600 + 1);
    // near(lo) holds, near(hi) does not (zones here have no two changes within 6 h).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if near_transition(tz, ts(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    ts(hi)
}

/// Up to 5 successive fire times after `from`, skipping (identically for both engines) every time
/// within 3 h of a transition of `skip_zone`. Returns the times and the horizon up to which the
/// list is complete.
fn walk(
    next: &dyn Fn(DateTime<Utc>) -> Option<DateTime<Utc>>,
    from: DateTime<Utc>,
    skip_zone: Option<Tz>,
) -> (Vec<DateTime<Utc>>, DateTime<Utc>) {
    let limit = year_2101();
    let mut x = from;
    let mut out = Vec::new();
    for _ in 0..40 {
        if out.len() == 5 {
            return (out, x);
        }
        match next(x) {
            None => return (out, limit),
            Some(n) if n >= limit => return (out, limit),
            Some(n) => match skip_zone {
                Some(tz) if near_transition(tz, n) => {
                    x = escape_transition(tz, n) - chrono::Duration::seconds(1)
                }
                _ => {
                    out.push(n);
                    x = n;
                }
            },
        }
    }
    (out, x)
}

fn differential(cron: &str, from_secs: i64, tz: Option<Tz>) -> Result<(), TestCaseError> {
    let spec = match tz {
        None => json!({"cron": [cron]}),
        Some(z) => json!({"cron": [cron], "timeZone": z.name()}),
    };
    differential_spec(&spec, cron, from_secs, tz)
}

/// Sundial's `spec` against croner's reading of `cron` (the same schedule in croner syntax).
fn differential_spec(
    spec: &Value,
    cron: &str,
    from_secs: i64,
    tz: Option<Tz>,
) -> Result<(), TestCaseError> {
    let c = croner::Cron::from_str(cron).map_err(|e| {
        TestCaseError::fail(format!("generator bug: croner rejects {cron:?}: {e:?}"))
    })?;
    let s = parse_valid(spec)?;
    let mut from = ts(from_secs);
    if let Some(z) = tz {
        if near_transition(z, from) {
            from = escape_transition(z, from);
        }
    }
    let sundial_next = |x: DateTime<Utc>| s.next_after(x);
    // croner errors only when its search runs out (year 5000): no further time.
    let croner_next = |x: DateTime<Utc>| -> Option<DateTime<Utc>> {
        match tz {
            None => c.find_next_occurrence(&x, false).ok(),
            Some(z) => c
                .find_next_occurrence(&x.with_timezone(&z), false)
                .ok()
                .map(|d| d.with_timezone(&Utc)),
        }
    };
    let (a, ha) = walk(&sundial_next, from, tz);
    let (b, hb) = walk(&croner_next, from, tz);
    let horizon = ha.min(hb);
    let a: Vec<String> = a.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    let b: Vec<String> = b.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    prop_assert_eq!(
        a,
        b,
        "Sundial (left) vs croner (right) for {} (croner: {:?}) in {} from {} (compared up to {})",
        spec,
        cron,
        tz.map_or("UTC", |z| z.name()),
        rfc(from),
        rfc(horizon)
    );
    Ok(())
}

fn diff_from() -> std::ops::Range<i64> {
    from_min()..ymd(2091, 1, 1)
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_utc(cron in croner_cron(), from in diff_from()) {
        differential(&cron, from, None)?;
    }

    #[test]
    fn differential_croner_new_york_away_from_dst(cron in croner_cron(), from in diff_from()) {
        differential(&cron, from, Some(chrono_tz::America::New_York))?;
    }
}

/// Cron strings with croner's day extensions: `L`, `nW` in day-of-month, `nL`, `n#k` in
/// day-of-week (never both restricted with one of these, where OR/AND readings of `L` differ).
fn croner_cron_lw() -> BoxedStrategy<String> {
    // croner 3 has no `LW`.
    let special_dom = prop_oneof![
        Just("L".to_string()),
        (1..=31u32).prop_map(|d| format!("{d}W"))
    ];
    let special_dow = prop_oneof![
        (0..=6u32, any::<bool>()).prop_map(|(d, nm)| if nm {
            format!("{}L", DAYS[d as usize])
        } else {
            format!("{d}L")
        }),
        (0..=6u32, 1..=5u32, any::<bool>()).prop_map(|(d, k, nm)| if nm {
            format!("{}#{k}", DAYS[d as usize])
        } else {
            format!("{d}#{k}")
        }),
    ];
    let days = prop_oneof![
        special_dom.clone().prop_map(|d| (d, "*".to_string())),
        special_dow.clone().prop_map(|w| ("*".to_string(), w)),
        (special_dom, restricted(DOW, true)),
        (restricted(DOM, false), special_dow),
    ];
    (
        field(MINUTE, false, true),
        field(HOUR, false, true),
        days,
        field(MONTH, true, true),
    )
        .prop_map(|(m, h, (d, w), mo)| format!("{m} {h} {d} {mo} {w}"))
        .boxed()
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_utc_last_weekday_nth(cron in croner_cron_lw(), from in diff_from()) {
        differential(&cron, from, None)?;
    }
}

/// Day-of-month AND day-of-week: the `temporal` dialect, and a `+` prefix on day-of-week in the
/// standard dialect, against croner's `+` (AND) reading. Both day fields restricted.
fn and_cron() -> BoxedStrategy<(String, String)> {
    let dom = prop_oneof![3 => restricted(DOM, false), 1 => star_step(DOM)];
    let dow = prop_oneof![3 => restricted(DOW, true), 1 => star_step(DOW)];
    (
        field(MINUTE, false, true),
        field(HOUR, false, true),
        dom,
        field(MONTH, true, true),
        dow,
    )
        .prop_map(|(m, h, d, mo, w)| (format!("{m} {h} {d} {mo}"), w))
        .boxed()
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_dom_and_dow(
        (head, dow) in and_cron(),
        temporal in any::<bool>(),
        from in diff_from(),
    ) {
        let plus = format!("{head} +{dow}");
        let spec = if temporal {
            json!({"cron": [format!("{head} {dow}")], "dialect": "temporal"})
        } else {
            json!({"cron": [plus.clone()]})
        };
        differential_spec(&spec, &plus, from, None)?;
    }
}

/// A calendar as a croner 7-field pattern (`sec min hour dom month +dow year`, `+` = AND), with
/// the calendar defaults (second, minute, hour 0; the rest `*`).
fn calendar_as_croner(cal: &Value) -> String {
    let get = |k: &str, default: &str| match cal.get(k) {
        None => default.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(ranges)) => ranges
            .iter()
            .map(|r| format!("{}-{}/{}", r["start"], r["end"], r["step"]))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => panic!("generator wrote {other} for {k}"),
    };
    format!(
        "{} {} {} {} {} +{} {}",
        get("second", "0"),
        get("minute", "0"),
        get("hour", "0"),
        get("dayOfMonth", "*"),
        get("month", "*"),
        get("dayOfWeek", "*"),
        // A year step counts from 2000, the first year of Sundial's range (croner: from year 1).
        get("year", "*").replace("*/", "2000-2100/")
    )
}

#[derive(Debug, Clone)]
struct UnionCase {
    calendar: Option<Value>,
    interval: Option<(u64, u64, u8)>,
    exclude: Option<Value>,
    start: Option<i64>,
    end: Option<i64>,
    from: i64,
}

fn union_case() -> BoxedStrategy<UnionCase> {
    (
        weighted(0.8, calendar()),
        weighted(0.5, (every_offset(), any::<u8>())),
        weighted(0.4, calendar()),
        weighted(0.25, -40 * 86400i64..=40 * 86400),
        weighted(0.25, 0i64..=400 * 86400),
        diff_from(),
    )
        .prop_filter("needs a calendar or an interval", |c| {
            c.0.is_some() || c.1.is_some()
        })
        .prop_map(
            |(calendar, interval, exclude, start, span, from)| UnionCase {
                calendar,
                interval: interval.map(|((e, o), style)| (e, o, style)),
                exclude,
                start,
                end: span.map(|sp| start.unwrap_or(-10 * 86400) + sp),
                from,
            },
        )
        .boxed()
}

/// Oracle for a UTC union of one calendar (croner) and one epoch-aligned interval, minus one
/// exclude calendar (croner's matcher), within inclusive bounds, before 2101.
enum OracleStep {
    Found(DateTime<Utc>),
    End,
    GaveUp(DateTime<Utc>),
}

fn differential_union(case: &UnionCase) -> Result<(), TestCaseError> {
    let from = ts(case.from);
    let start = case.start.map(|o| ts(case.from + o));
    let end = case.end.map(|o| ts(case.from + o));
    let mut m = Map::new();
    let mut cal_cron = None;
    if let Some(cal) = &case.calendar {
        m.insert("calendars".into(), json!([cal]));
        let text = calendar_as_croner(cal);
        let c = croner::Cron::from_str(&text).map_err(|e| {
            TestCaseError::fail(format!("generator bug: croner rejects {text:?}: {e:?}"))
        })?;
        cal_cron = Some(c);
    }
    if let Some((e, o, style)) = case.interval {
        m.insert(
            "intervals".into(),
            json!([{"every": fmt_dur(e, style), "offset": fmt_dur(o, style / 3)}]),
        );
    }
    let mut excl_cron = None;
    if let Some(x) = &case.exclude {
        m.insert("exclude".into(), json!([x]));
        let text = calendar_as_croner(x);
        let c = croner::Cron::from_str(&text).map_err(|e| {
            TestCaseError::fail(format!("generator bug: croner rejects {text:?}: {e:?}"))
        })?;
        excl_cron = Some(c);
    }
    if let Some(t) = start {
        m.insert("startTime".into(), json!(rfc(t)));
    }
    if let Some(t) = end {
        m.insert("endTime".into(), json!(rfc(t)));
    }
    let spec = Value::Object(m);
    let s = parse_valid(&spec)?;
    let limit = year_2101();
    let one = chrono::Duration::seconds(1);
    let oracle_next = |after: DateTime<Utc>| -> OracleStep {
        let mut x = after;
        if let Some(st) = start {
            if x < st - one {
                x = st - one;
            }
        }
        for _ in 0..300 {
            let a = cal_cron
                .as_ref()
                .and_then(|c| c.find_next_occurrence(&x, false).ok());
            let b = case.interval.map(|(e, o, _)| {
                let (e, o) = (e as i64, o as i64);
                ts(((x.timestamp() - o).div_euclid(e) + 1) * e + o)
            });
            let t = match (a, b) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return OracleStep::End,
                },
            };
            if t >= limit || end.is_some_and(|e| t > e) {
                return OracleStep::End;
            }
            if excl_cron
                .as_ref()
                .is_some_and(|c| c.is_time_matching(&t).unwrap_or(false))
            {
                x = t;
                continue;
            }
            return OracleStep::Found(t);
        }
        OracleStep::GaveUp(x)
    };
    let mut want = Vec::new();
    let mut horizon = limit;
    let mut x = from;
    while want.len() < 5 {
        match oracle_next(x) {
            OracleStep::Found(t) => {
                want.push(t);
                x = t;
            }
            OracleStep::End => break,
            OracleStep::GaveUp(at) => {
                horizon = at;
                break;
            }
        }
    }
    let got = s.preview(from, 5);
    if got.len() == 5 {
        horizon = horizon.min(got[4]);
    }
    if want.len() == 5 {
        horizon = horizon.min(want[4]);
    }
    let got: Vec<String> = got.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    let want: Vec<String> = want
        .into_iter()
        .filter(|t| *t <= horizon)
        .map(rfc)
        .collect();
    prop_assert_eq!(
        got,
        want,
        "Sundial (left) vs oracle (right)\nspec: {}\nfrom: {} (compared up to {})",
        spec,
        rfc(from),
        rfc(horizon)
    );
    Ok(())
}

proptest! {
    #![proptest_config(cfg(2048))]

    /// Calendars (AND of all fields), epoch-aligned intervals, excludes and inclusive bounds in
    /// UTC against croner's field matcher plus interval arithmetic.
    #[test]
    fn differential_calendars_intervals_exclude_utc(case in union_case()) {
        differential_union(&case)?;
    }
}

/// Quartz-numbered day of week (1-7, 1 = SUN): numbers, names, ranges and stepped ranges, `nL`,
/// `n#k`. No `*/n` (croner's Quartz mode cannot read it) and no SUN name at a range end.
fn quartz_dow() -> BoxedStrategy<String> {
    let name = |v: u32, nm: bool, end: bool| {
        if nm && !(end && v == 1) {
            DAYS[(v - 1) as usize].to_string()
        } else {
            v.to_string()
        }
    };
    let item = prop_oneof![
        3 => (1..=7u32, any::<bool>()).prop_map(move |(v, nm)| name(v, nm, false)),
        2 => (1..=7u32, 1..=7u32, any::<bool>(), any::<bool>()).prop_map(move |(a, b, na, nb)| {
            let (a, b) = (a.min(b), a.max(b));
            format!("{}-{}", name(a, na, false), name(b, nb, true))
        }),
        1 => (1..=7u32, 1..=7u32, 1..=6u32).prop_map(|(a, b, st)| format!("{}-{}/{st}", a.min(b), a.max(b))),
    ];
    prop_oneof![
        4 => vec(item, 1..=3).prop_map(|v| v.join(",")),
        1 => (1..=7u32).prop_map(|d| format!("{d}L")),
        1 => (1..=7u32, 1..=5u32).prop_map(|(d, k)| format!("{d}#{k}")),
    ]
    .boxed()
}

/// (Sundial spec, croner pattern) pairs in the quartz and eventbridge dialects: exactly one of
/// day-of-month / day-of-week is `?`.
fn quartz_like() -> BoxedStrategy<(Value, String)> {
    let dom = prop_oneof![
        4 => field(DOM, false, true),
        1 => Just("L".to_string()),
        1 => (1..=31u32).prop_map(|d| format!("{d}W")),
    ];
    let days = prop_oneof![
        dom.prop_map(|d| (d, "?".to_string())),
        quartz_dow().prop_map(|w| ("?".to_string(), w)),
    ];
    (
        field(SECOND, false, true),
        field(MINUTE, false, true),
        field(HOUR, false, true),
        days,
        field(MONTH, true, true),
        any::<bool>(),
    )
        .prop_map(|(sec, m, h, (d, w), mo, eventbridge)| {
            let croner = format!(
                "{} {m} {h} {d} {mo} {w} *",
                if eventbridge { "0" } else { &sec }
            );
            let spec = if eventbridge {
                json!({"cron": [format!("{m} {h} {d} {mo} {w} *")], "dialect": "eventbridge"})
            } else {
                json!({"cron": [format!("{sec} {m} {h} {d} {mo} {w}")], "dialect": "quartz"})
            };
            (spec, croner)
        })
        .boxed()
}

fn differential_quartz(spec: &Value, cron: &str, from_secs: i64) -> Result<(), TestCaseError> {
    use croner::parser::{CronParser, Seconds};
    let c = CronParser::builder()
        .seconds(Seconds::Required)
        .alternative_weekdays(true)
        .build()
        .parse(cron)
        .map_err(|e| {
            TestCaseError::fail(format!("generator bug: croner rejects {cron:?}: {e:?}"))
        })?;
    let s = parse_valid(spec)?;
    let from = ts(from_secs);
    let sundial_next = |x: DateTime<Utc>| s.next_after(x);
    let croner_next = |x: DateTime<Utc>| c.find_next_occurrence(&x, false).ok();
    let (a, ha) = walk(&sundial_next, from, None);
    let (b, hb) = walk(&croner_next, from, None);
    let horizon = ha.min(hb);
    let a: Vec<String> = a.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    let b: Vec<String> = b.into_iter().filter(|t| *t <= horizon).map(rfc).collect();
    prop_assert_eq!(
        a,
        b,
        "Sundial (left) vs croner Quartz mode (right) for {} (croner: {:?}) from {}",
        spec,
        cron,
        rfc(from)
    );
    Ok(())
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn differential_croner_quartz_eventbridge_utc((spec, cron) in quartz_like(), from in diff_from()) {
        differential_quartz(&spec, &cron, from)?;
    }
}
