//! Property 4: random bytes, strings, JSON trees, fuzzed specs, cron and calendar fields,
//! durations and timers give `Ok` or `Err`, never a panic or a hang; valid specs queried from any
//! instant chrono can hold.

use crate::generate::*;
use crate::support::*;
use chrono::{DateTime, Datelike, Utc};
use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Map, Value};
use sundial_core::duration::Duration;
use sundial_core::spec::Schedule;
use sundial_core::timer::{compile_preview_request, compile_timer, TimerPlan};

const CRON_TOKENS: &[&str] = &[
    "*",
    "?",
    "L",
    "W",
    "LW",
    "#",
    "-",
    "/",
    ",",
    " ",
    " ",
    " ",
    "0",
    "1",
    "2",
    "5",
    "7",
    "8",
    "12",
    "13",
    "23",
    "24",
    "29",
    "30",
    "31",
    "32",
    "59",
    "60",
    "61",
    "99",
    "1999",
    "2000",
    "2100",
    "2101",
    "65535",
    "65536",
    "4294967296",
    "18446744073709551616",
    "-1",
    "MON",
    "mon",
    "FRI",
    "SUN",
    "SAT",
    "JAN",
    "FEB",
    "DEC",
    "XYZ",
    "L-3",
    "L-31",
    "L-0",
    "5L",
    "5#3",
    "5#6",
    "0#0",
    "15W",
    "32W",
    "0W",
    "*/0",
    "*/1",
    "*/61",
    "0/0",
    "1/1",
    "@yearly",
    "@daily",
    "@hourly",
    "@every",
    "@every 0s",
    "@every 1s/2s",
    "@every 14h/3h",
    "@reboot",
    "CRON_TZ=",
    "TZ=",
    "UTC",
    "America/New_York",
    "Mars/Olympus",
    "+",
    "\t",
    "\n",
    "é",
    "\u{0}",
    "cron(",
    ")",
    "rate(",
    "5 minutes",
    "1 minute",
    "0 days",
    "at(",
    "2030-01-01T00:00:00",
    "1-",
    "-5",
    "5-",
    "7-1",
    "6-1/0",
];
const CAL_TOKENS: &[&str] = &[
    "*",
    "-",
    "/",
    ",",
    " ",
    "0",
    "1",
    "7",
    "12",
    "31",
    "59",
    "60",
    "61",
    "2000",
    "2100",
    "2101",
    "1999",
    "99999999999",
    "-5",
    "MON",
    "Monday",
    "mo",
    "m",
    "JAN",
    "January",
    "Sept",
    "Feb",
    "xyz",
    "*/0",
    "1-0",
    "5-1/2",
    "L",
    "?",
    "é",
    "\u{0}",
    "18446744073709551616",
];
const DUR_TOKENS: &[&str] = &[
    "0",
    "1",
    "5",
    "10",
    "45",
    "90",
    "1.5",
    ".5",
    "5.",
    ".",
    "99999999999999999999",
    "18446744073709551615",
    "9223372036854775807",
    "-",
    "+",
    "d",
    "h",
    "m",
    "s",
    "ms",
    "us",
    "µs",
    "ns",
    "w",
    "y",
    "P",
    "T",
    "Y",
    "M",
    "W",
    "D",
    "H",
    "S",
    "R",
    "R4",
    "R0",
    "R-1",
    "/",
    "PT",
    "P1D",
    "PT2H30M",
    "1d2h0m2s",
    " ",
    ",",
    "e",
    "E5",
    "∞",
    "NaN",
    "inf",
    "0.0000001",
    "1e400",
];
const TIME_TOKENS: &[&str] = &[
    "2023-10-01 09:00:01",
    "2023-02-30 09:00:01",
    "2023-10-01T09:00:01Z",
    "2023-10-01T09:00:01+05:30",
    "9999-12-31 23:59:59",
    "0000-01-01 00:00:00",
    "2101-01-01T00:00:00Z",
    "1999-12-31T23:59:59Z",
    "2024-03-10 02:30:00",
    "2023-10-01",
    "09:00:01",
    "2023-13-01 00:00:00",
    "2023-10-01 24:00:00",
    "-2023-10-01 00:00:00",
    "now",
    "",
];
const ZONE_TOKENS: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Havana",
    "Pacific/Apia",
    "Etc/GMT+12",
    "EST5EDT",
    "utc",
    "Mars/Base",
    "",
    "America/New_York ",
    "../etc/passwd",
];
const SPEC_KEYS: &[&str] = &[
    "cron",
    "calendars",
    "intervals",
    "exclude",
    "startTime",
    "endTime",
    "jitter",
    "timeZone",
    "dialect",
    "dst",
    "gap",
    "overlap",
    "every",
    "offset",
    "second",
    "minute",
    "hour",
    "dayOfMonth",
    "month",
    "year",
    "dayOfWeek",
    "comment",
    "start",
    "end",
    "step",
    "schedule",
    "timer",
    "dueTime",
    "period",
    "ttl",
    "x",
];

fn soup(tokens: &'static [&'static str], max: usize) -> BoxedStrategy<String> {
    prop_oneof![
        4 => vec(select(tokens), 0..=max).prop_map(|v| v.concat()),
        1 => "\\PC{0,40}",
        1 => ".{0,20}",
    ]
    .boxed()
}

/// A cron-shaped string: 1-8 space-separated fields of token soup.
fn cron_fields_soup() -> BoxedStrategy<String> {
    let no_space: Vec<&'static str> = CRON_TOKENS
        .iter()
        .copied()
        .filter(|t| !t.contains(char::is_whitespace))
        .collect();
    let no_space: &'static [&'static str] = Box::leak(no_space.into_boxed_slice());
    vec(vec(select(no_space), 1..=4).prop_map(|v| v.concat()), 1..=8)
        .prop_map(|v| v.join(" "))
        .boxed()
}

fn any_cron_string() -> BoxedStrategy<String> {
    prop_oneof![soup(CRON_TOKENS, 24), cron_fields_soup()].boxed()
}

fn arb_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(Value::from),
        select(SPEC_KEYS).prop_map(|s| json!(s)),
        any_cron_string().prop_map(Value::String),
        soup(DUR_TOKENS, 8).prop_map(Value::String),
        select(TIME_TOKENS).prop_map(|s| json!(s)),
        select(ZONE_TOKENS).prop_map(|s| json!(s)),
        select(GAPS).prop_map(|s| json!(s)),
    ]
    .boxed()
}

fn arb_json() -> BoxedStrategy<Value> {
    arb_leaf()
        .prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                vec((prop_oneof![4 => select(SPEC_KEYS).prop_map(str::to_string), 1 => "\\PC{0,8}"], inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

fn fuzz_calendar_value() -> BoxedStrategy<Value> {
    let range = (
        any::<i64>(),
        any::<i64>(),
        any::<i64>(),
        -5i64..2200,
        -5i64..2200,
        -2i64..40,
        0u8..4,
    )
        .prop_map(|(a, b, c, x, y, z, mode)| match mode {
            0 => json!({"start": a, "end": b, "step": c}),
            1 => json!({"start": x}),
            2 => json!({"start": x, "end": y}),
            _ => json!({"start": x, "end": y, "step": z}),
        });
    prop_oneof![
        5 => soup(CAL_TOKENS, 10).prop_map(Value::String),
        2 => vec(range, 0..4).prop_map(Value::Array),
        1 => arb_leaf(),
    ]
    .boxed()
}

fn fuzz_calendar() -> BoxedStrategy<Value> {
    let keys = vec![
        "second",
        "minute",
        "hour",
        "dayOfMonth",
        "month",
        "year",
        "dayOfWeek",
        "comment",
        "x",
    ];
    prop_oneof![
        6 => vec((select(keys), fuzz_calendar_value()), 0..5)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        1 => arb_json(),
    ]
    .boxed()
}

fn fuzz_interval() -> BoxedStrategy<Value> {
    prop_oneof![
        (soup(DUR_TOKENS, 6), soup(DUR_TOKENS, 6)).prop_map(|(a, b)| json!(format!("{a}/{b}"))),
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        (soup(DUR_TOKENS, 6), weighted(0.6, soup(DUR_TOKENS, 6))).prop_map(|(e, o)| match o {
            Some(o) => json!({"every": e, "offset": o}),
            None => json!({"every": e}),
        }),
        arb_leaf(),
    ]
    .boxed()
}

/// A schedule object whose keys are the real ones and whose values are fuzzed.
fn fuzz_spec() -> BoxedStrategy<Value> {
    (
        (
            weighted(0.6, prop_oneof![
                any_cron_string().prop_map(Value::String),
                vec(any_cron_string(), 0..3).prop_map(|v| json!(v)),
                arb_leaf(),
            ]),
            weighted(0.4, prop_oneof![4 => vec(fuzz_calendar(), 0..3).prop_map(Value::Array), 1 => arb_leaf()]),
            weighted(0.4, prop_oneof![4 => vec(fuzz_interval(), 0..3).prop_map(Value::Array), 1 => arb_leaf()]),
            weighted(0.3, prop_oneof![4 => vec(fuzz_calendar(), 0..3).prop_map(Value::Array), 1 => arb_leaf()]),
        ),
        (
            weighted(0.3, select(TIME_TOKENS)),
            weighted(0.3, select(TIME_TOKENS)),
            weighted(0.3, soup(DUR_TOKENS, 6)),
            weighted(0.5, select(ZONE_TOKENS)),
            weighted(0.4, select(vec!["standard", "temporal", "quartz", "eventbridge", "Standard", "vixie", ""])),
            weighted(0.4, (weighted(0.8, select(vec!["skip", "shift", "transition", "auto", "both", "x"])),
                           weighted(0.8, select(vec!["both", "first", "second", "auto", "skip", "x"])))),
            weighted(0.1, arb_json()),
        ),
    )
        .prop_map(|((cron, cals, ints, excl), (st, en, jit, tz, dia, dst, extra))| {
            let mut m = Map::new();
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            };
            put("cron", cron);
            put("calendars", cals);
            put("intervals", ints);
            put("exclude", excl);
            put("startTime", st.map(|s| json!(s)));
            put("endTime", en.map(|s| json!(s)));
            put("jitter", jit.map(Value::String));
            put("timeZone", tz.map(|s| json!(s)));
            put("dialect", dia.map(|s| json!(s)));
            put(
                "dst",
                dst.map(|(g, o)| {
                    let mut d = Map::new();
                    if let Some(g) = g {
                        d.insert("gap".into(), json!(g));
                    }
                    if let Some(o) = o {
                        d.insert("overlap".into(), json!(o));
                    }
                    Value::Object(d)
                }),
            );
            put("unknownKey", extra);
            Value::Object(m)
        })
        .boxed()
}

fn fuzz_timer() -> BoxedStrategy<Value> {
    let due = prop_oneof![
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        select(TIME_TOKENS).prop_map(|s| json!(s)),
        arb_leaf(),
    ];
    let period = prop_oneof![
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        (
            prop_oneof![
                Just(String::new()),
                any::<i64>().prop_map(|n| n.to_string()),
                any::<u64>().prop_map(|n| n.to_string()),
                (0u32..6).prop_map(|n| n.to_string()),
                select(vec![
                    "9223372036854775807",
                    "9223372036854775808",
                    "18446744073709551615",
                    "4294967296",
                    "1024819114823848",
                ])
                .prop_map(str::to_string),
            ],
            soup(DUR_TOKENS, 6)
        )
            .prop_map(|(n, d)| json!(format!("R{n}/{d}"))),
        any_cron_string().prop_map(Value::String),
        select(vec![
            "external",
            "EXTERNAL",
            "0 0/5 * * * ?",
            "0 0 12 ? * MON-FRI",
            "R4/PT3S",
            "R/PT1H",
            "PT0S",
            "0s",
            ""
        ])
        .prop_map(|s| json!(s)),
        arb_leaf(),
    ];
    let ttl = prop_oneof![
        soup(DUR_TOKENS, 6).prop_map(Value::String),
        select(TIME_TOKENS).prop_map(|s| json!(s)),
        arb_leaf(),
    ];
    prop_oneof![
        8 => (weighted(0.7, due), weighted(0.7, period), weighted(0.4, ttl)).prop_map(|(d, p, t)| {
            let mut m = Map::new();
            if let Some(d) = d { m.insert("dueTime".into(), d); }
            if let Some(p) = p { m.insert("period".into(), p); }
            if let Some(t) = t { m.insert("ttl".into(), t); }
            Value::Object(m)
        }),
        1 => arb_json(),
    ]
    .boxed()
}

fn instant() -> BoxedStrategy<DateTime<Utc>> {
    (from_min()..=from_max()).prop_map(ts).boxed()
}

/// Parse with `Schedule::from_json`, and check a successful parse previews quickly.
fn robust_spec(v: Value, from: DateTime<Utc>) -> Result<(), TestCaseError> {
    guarded(move || {
        if let Ok(s) = Schedule::from_json(&v) {
            check_fast_preview(&s, from, &format!("input: {v}"))?;
            let _ = s.to_canonical_json();
            let _ = s.fire_after(from, "job");
        }
        Ok(())
    })
}

fn robust_plan(
    plan: Result<TimerPlan, sundial_core::spec::SpecError>,
    from: DateTime<Utc>,
    what: String,
) -> Result<(), String> {
    if let Ok(TimerPlan::Scheduled(s)) = plan {
        check_fast_preview(&s, from, &what)?;
        let _ = s.to_canonical_json();
    }
    Ok(())
}

proptest! {
    #![proptest_config(cfg(2048))]

    #[test]
    fn robust_random_bytes_as_json(bytes in vec(any::<u8>(), 0..256), from in instant()) {
        guarded(move || {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if let Ok(s) = Schedule::from_json_str(&text) {
                check_fast_preview(&s, from, &format!("input: {text:?}"))?;
            }
            Ok(())
        })?;
    }

    #[test]
    fn robust_random_strings_as_json(
        text in prop_oneof![
            "\\PC{0,200}",
            "[{}\\[\\]\":,0-9a-zA-Z *\\-/@#?]{0,120}",
            fuzz_spec().prop_map(|v| v.to_string()),
            (fuzz_spec(), any::<usize>(), any::<usize>()).prop_map(|(v, a, b)| {
                // a truncated or spliced document
                let s = v.to_string();
                let mut cut: String = s.chars().take(a % (s.chars().count() + 1)).collect();
                cut.extend(s.chars().skip(b % (s.chars().count() + 1)));
                cut
            }),
        ],
        from in instant(),
    ) {
        guarded(move || {
            if let Ok(s) = Schedule::from_json_str(&text) {
                check_fast_preview(&s, from, &format!("input: {text:?}"))?;
            }
            Ok(())
        })?;
    }

    #[test]
    fn robust_random_json_trees(v in prop_oneof![
        arb_json(),
        vec((select(SPEC_KEYS), arb_json()), 0..8)
            .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
    ], from in instant()) {
        robust_spec(v, from)?;
    }

    #[test]
    fn robust_fuzzed_specs(v in fuzz_spec(), from in instant()) {
        robust_spec(v, from)?;
    }

    #[test]
    fn robust_cron_strings(
        cron in any_cron_string(),
        dialect in weighted(0.6, select(DIALECTS)),
        tz in weighted(0.3, select(ZONES)),
        from in instant(),
    ) {
        let mut m = Map::new();
        m.insert("cron".into(), json!([cron]));
        if let Some(d) = dialect { m.insert("dialect".into(), json!(d)); }
        if let Some(z) = tz { m.insert("timeZone".into(), json!(z)); }
        robust_spec(Value::Object(m), from)?;
    }

    #[test]
    fn robust_calendar_fields(
        fields in vec((select(vec!["second", "minute", "hour", "dayOfMonth", "month", "year", "dayOfWeek", "comment"]),
                       fuzz_calendar_value()), 1..4),
        as_exclude in any::<bool>(),
        tz in weighted(0.3, select(ZONES)),
        from in instant(),
    ) {
        let cal = Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let mut m = Map::new();
        if as_exclude {
            m.insert("cron".into(), json!(["* * * * *"]));
            m.insert("exclude".into(), json!([cal]));
        } else {
            m.insert("calendars".into(), json!([cal]));
        }
        if let Some(z) = tz { m.insert("timeZone".into(), json!(z)); }
        robust_spec(Value::Object(m), from)?;
    }

    #[test]
    fn robust_durations(text in soup(DUR_TOKENS, 10)) {
        guarded(move || {
            if let Ok(d) = Duration::parse(&text) {
                let shown = d.to_string();
                match Duration::parse(&shown) {
                    Ok(d2) if d2 == d => {}
                    other => return Err(format!("{text:?} parsed to {d} ({} ms) but its Display {shown:?} parses to {other:?}", d.as_millis())),
                }
                if Duration::from_millis(d.as_millis()) != d || d.as_secs() != d.as_millis() / 1000 {
                    return Err(format!("{text:?}: millis/secs accessors disagree"));
                }
            }
            Ok(())
        })?;
    }

    #[test]
    fn robust_timers(timer in fuzz_timer(), created in instant()) {
        guarded(move || {
            let plan = compile_timer(&timer, created);
            robust_plan(plan, created, format!("timer: {timer}"))
        })?;
    }

    #[test]
    fn robust_preview_requests(which in 0u8..3, timer in fuzz_timer(), spec in fuzz_spec(), created in instant()) {
        let req = match which {
            0 => json!({"timer": timer}),
            1 => json!({"schedule": spec}),
            _ => spec,
        };
        guarded(move || {
            let plan = compile_preview_request(&req, created);
            robust_plan(plan, created, format!("request: {req}"))
        })?;
    }
}

fn extreme_instant() -> BoxedStrategy<DateTime<Utc>> {
    let min = DateTime::<Utc>::MIN_UTC.timestamp();
    let max = DateTime::<Utc>::MAX_UTC.timestamp();
    prop_oneof![
        (min..=max).prop_map(ts),
        (0i64..=3600).prop_map(move |d| ts(min + d)),
        (0i64..=3600).prop_map(move |d| ts(max - d)),
        (0i64..=from_min()).prop_map(ts),
        (ymd(2099, 6, 1)..=ymd(2102, 1, 1)).prop_map(ts),
        (ymd(2102, 1, 1)..=ymd(3000, 1, 1)).prop_map(ts),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(cfg(2048))]

    /// Valid specs queried from any instant chrono can hold (year -262143 to 262142): no panic,
    /// bounded work, and the usual ordering.
    #[test]
    fn robust_valid_specs_from_extreme_instants(p in parts(), from in extreme_instant()) {
        let (spec, _, _) = p.build(ts(ymd(2030, 1, 1)));
        guarded(move || {
            let s = Schedule::from_json(&spec)
                .map_err(|e| format!("valid spec rejected: {e}; {spec}"))?;
            check_fast_preview(&s, from, &format!("spec: {spec}"))?;
            if let Some(f) = s.fire_after(from, "job") {
                if f.nominal <= from {
                    return Err(format!(
                        "fire_after({}) gave {}; spec: {spec}",
                        rfc(from),
                        rfc(f.nominal)
                    ));
                }
            }
            Ok(())
        })?;
    }

    /// `format_time` of any time a schedule returns, from any starting instant.
    #[test]
    fn robust_format_time_of_returned_times(p in parts(), from in extreme_instant()) {
        let (spec, _, _) = p.build(ts(ymd(2030, 1, 1)));
        guarded(move || {
            let s = Schedule::from_json(&spec)
                .map_err(|e| format!("valid spec rejected: {e}; {spec}"))?;
            for t in s.preview(from, 2) {
                let text = s.format_time(t);
                if DateTime::parse_from_rfc3339(&text).is_err() && (2000..=2100).contains(&t.year()) {
                    return Err(format!("format_time({}) = {text:?} is not RFC 3339", rfc(t)));
                }
            }
            Ok(())
        })?;
    }
}
