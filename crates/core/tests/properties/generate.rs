//! Strategies for valid input: cron fields, durations, intervals, calendars, and whole specs
//! (`Parts`) with zones, DST policies, bounds and a starting instant.

use crate::support::*;
use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};
use chrono_tz::Tz;
use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Map, Value};
use sundial_core::spec::Schedule;

pub(crate) const ZONES: &[&str] = &[
    "UTC",
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "America/Havana",
    "Pacific/Apia",
];
pub(crate) const GAPS: &[&str] = &["skip", "shift", "transition", "auto"];
pub(crate) const OVERLAPS: &[&str] = &["both", "first", "second", "auto"];
pub(crate) const DIALECTS: &[&str] = &["standard", "temporal", "quartz", "eventbridge"];
pub(crate) const MONTHS: &[&str] = &[
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
pub(crate) const DAYS: &[&str] = &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) names: &'static [&'static str],
    pub(crate) name_base: u32,
}

pub(crate) const SECOND: Field = Field {
    min: 0,
    max: 59,
    names: &[],
    name_base: 0,
};
pub(crate) const MINUTE: Field = Field {
    min: 0,
    max: 59,
    names: &[],
    name_base: 0,
};
pub(crate) const HOUR: Field = Field {
    min: 0,
    max: 23,
    names: &[],
    name_base: 0,
};
pub(crate) const DOM: Field = Field {
    min: 1,
    max: 31,
    names: &[],
    name_base: 0,
};
pub(crate) const MONTH: Field = Field {
    min: 1,
    max: 12,
    names: MONTHS,
    name_base: 1,
};
/// Cron day of week: 0-7, 0 and 7 = Sunday.
pub(crate) const DOW: Field = Field {
    min: 0,
    max: 7,
    names: DAYS,
    name_base: 0,
};
/// Calendar day of week: 0-6.
pub(crate) const CAL_DOW: Field = Field {
    min: 0,
    max: 6,
    names: DAYS,
    name_base: 0,
};
pub(crate) const YEAR: Field = Field {
    min: 2000,
    max: 2100,
    names: &[],
    name_base: 0,
};

pub(crate) fn step_max(f: Field) -> u32 {
    (f.max - f.min).max(1)
}

pub(crate) fn name_or_num(f: Field, v: u32, use_name: bool, range_end: bool) -> String {
    if use_name {
        let i = v.wrapping_sub(f.name_base) as usize;
        // "X-SUN" is read as 7 by croner and as 0 by Vixie: never put SUN at a range end.
        let sun_end = range_end && f.names.first() == Some(&"SUN") && v == 0;
        if i < f.names.len() && !sun_end {
            return f.names[i].to_string();
        }
    }
    v.to_string()
}

/// One list item: `v`, `a-b`, `a-b/s` (never `N/s`: croner rejects it, peers disagree on it).
pub(crate) fn item(f: Field, names: bool) -> BoxedStrategy<String> {
    let n = names && !f.names.is_empty();
    let single =
        (f.min..=f.max, any::<bool>()).prop_map(move |(v, nm)| name_or_num(f, v, n && nm, false));
    let range = (f.min..=f.max, f.min..=f.max, any::<bool>(), any::<bool>()).prop_map(
        move |(a, b, na, nb)| {
            let (a, b) = (a.min(b), a.max(b));
            format!(
                "{}-{}",
                name_or_num(f, a, n && na, false),
                name_or_num(f, b, n && nb, true)
            )
        },
    );
    let stepped = (f.min..=f.max, f.min..=f.max, 1..=step_max(f)).prop_map(|(a, b, s)| {
        let (a, b) = (a.min(b), a.max(b));
        format!("{a}-{b}/{s}")
    });
    prop_oneof![3 => single, 2 => range, 1 => stepped].boxed()
}

/// A comma list of 1-3 items (a restricted field).
pub(crate) fn restricted(f: Field, names: bool) -> BoxedStrategy<String> {
    vec(item(f, names), 1..=3).prop_map(|v| v.join(",")).boxed()
}

pub(crate) fn star_step(f: Field) -> BoxedStrategy<String> {
    (1..=step_max(f)).prop_map(|s| format!("*/{s}")).boxed()
}

pub(crate) fn field(f: Field, names: bool, allow_star_step: bool) -> BoxedStrategy<String> {
    if allow_star_step {
        prop_oneof![2 => Just("*".to_string()), 1 => star_step(f), 4 => restricted(f, names)]
            .boxed()
    } else {
        prop_oneof![2 => Just("*".to_string()), 4 => restricted(f, names)].boxed()
    }
}

pub(crate) fn go_dur(secs: u64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (v, u) in [(d, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if v > 0 {
            out.push_str(&format!("{v}{u}"));
        }
    }
    out
}

pub(crate) fn iso_dur(secs: u64) -> String {
    if secs == 0 {
        return "PT0S".into();
    }
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let mut out = "P".to_string();
    if d > 0 {
        out.push_str(&format!("{d}D"));
    }
    if h + m + s > 0 {
        out.push('T');
        for (v, u) in [(h, "H"), (m, "M"), (s, "S")] {
            if v > 0 {
                out.push_str(&format!("{v}{u}"));
            }
        }
    }
    out
}

pub(crate) fn fmt_dur(secs: u64, style: u8) -> String {
    match style % 3 {
        0 => go_dur(secs),
        1 => format!("{secs}s"),
        _ => iso_dur(secs),
    }
}

pub(crate) fn every_secs() -> BoxedStrategy<u64> {
    prop_oneof![
        1u64..=300,
        (1u64..=1440).prop_map(|m| m * 60),
        (1u64..=72).prop_map(|h| h * 3600),
        (1u64..=40).prop_map(|d| d * 86400),
        1u64..=5_000_000,
    ]
    .boxed()
}

/// (every, offset) with 0 <= offset < every.
pub(crate) fn every_offset() -> BoxedStrategy<(u64, u64)> {
    (every_secs(), any::<u64>(), any::<bool>())
        .prop_map(|(e, r, zero)| (e, if zero { 0 } else { r % e }))
        .boxed()
}

pub(crate) fn interval() -> BoxedStrategy<Value> {
    (every_offset(), any::<u8>(), any::<u8>(), 0u8..4)
        .prop_map(|((e, o), se, so, form)| {
            let (es, os) = (fmt_dur(e, se), fmt_dur(o, so));
            match form {
                0 => json!({"every": es, "offset": os}),
                1 if o == 0 => json!({"every": es}),
                1 => json!({"every": es, "offset": os}),
                2 => json!(format!("{es}/{os}")),
                _ if o == 0 => json!(es),
                _ => json!(format!("{es}/{os}")),
            }
        })
        .boxed()
}

/// A standard-dialect cron string: 5/6/7 fields, names, lists, ranges, steps, sometimes
/// `L`/`W`/`LW`/`L-n`/`nL`/`n#k`/`?`, or a macro.
pub(crate) fn std_cron() -> BoxedStrategy<String> {
    let dom = prop_oneof![
        10 => field(DOM, false, true),
        1 => Just("L".to_string()),
        1 => Just("LW".to_string()),
        1 => (1..=31u32).prop_map(|d| format!("{d}W")),
        1 => (1..=15u32).prop_map(|n| format!("L-{n}")),
        1 => Just("?".to_string()),
    ];
    let dow = prop_oneof![
        10 => field(DOW, true, true),
        1 => (0..=6u32).prop_map(|d| format!("{d}L")),
        1 => (0..=6u32, 1..=5u32, any::<bool>())
            .prop_map(|(d, k, nm)| if nm { format!("{}#{k}", DAYS[d as usize]) } else { format!("{d}#{k}") }),
        1 => Just("?".to_string()),
    ];
    let five = (
        field(MINUTE, false, true),
        field(HOUR, false, true),
        dom,
        field(MONTH, true, true),
        dow,
    )
        .prop_map(|(m, h, d, mo, w)| {
            // Both day fields "?" is a Quartz error and means nothing useful: keep one.
            let w = if d == "?" && w == "?" {
                "*".to_string()
            } else {
                w
            };
            format!("{m} {h} {d} {mo} {w}")
        })
        .boxed();
    let six = (field(SECOND, false, true), five.clone()).prop_map(|(s, f)| format!("{s} {f}"));
    let seven = (
        field(SECOND, false, true),
        five.clone(),
        field(YEAR, false, false),
    )
        .prop_map(|(s, f, y)| format!("{s} {f} {y}"));
    let macros = select(vec![
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@hourly",
    ])
    .prop_map(str::to_string);
    let every = every_offset().prop_map(|(e, o)| {
        if o == 0 {
            format!("@every {}", go_dur(e))
        } else {
            format!("@every {}/{}", go_dur(e), go_dur(o))
        }
    });
    prop_oneof![8 => five, 3 => six, 1 => seven, 1 => macros, 1 => every].boxed()
}

/// Cron strings that fire in and around the small hours, where DST gaps and overlaps live.
pub(crate) fn dst_cron() -> BoxedStrategy<String> {
    let s = select(vec!["", "", "0 ", "30 ", "*/20 "]);
    let m = select(vec![
        "0", "30", "15,45", "*/15", "*/30", "*", "0-59/20", "59", "1",
    ]);
    let h = select(vec![
        "*", "0", "1", "2", "3", "0-3", "1,2", "2-3", "*/2", "23", "0,12", "22-23", "1-2",
    ]);
    let w = select(vec!["*", "*", "*", "SUN", "0,6"]);
    (s, m, h, w)
        .prop_map(|(s, m, h, w)| format!("{s}{m} {h} * * {w}"))
        .boxed()
}

pub(crate) fn range_obj(f: Field) -> BoxedStrategy<Value> {
    (f.min..=f.max, f.min..=f.max, 1..=step_max(f))
        .prop_map(|(a, b, s)| json!({"start": a.min(b), "end": a.max(b), "step": s}))
        .boxed()
}

pub(crate) fn cal_value(f: Field, names: bool) -> BoxedStrategy<Value> {
    prop_oneof![
        4 => field(f, names, true).prop_map(Value::String),
        1 => vec(range_obj(f), 1..=3).prop_map(Value::Array),
    ]
    .boxed()
}

pub(crate) fn calendar() -> BoxedStrategy<Value> {
    let general = (
        weighted(0.3, cal_value(SECOND, false)),
        weighted(0.5, cal_value(MINUTE, false)),
        weighted(0.5, cal_value(HOUR, false)),
        weighted(0.4, cal_value(DOM, false)),
        weighted(0.4, cal_value(MONTH, true)),
        weighted(0.2, cal_value(YEAR, false)),
        weighted(0.4, cal_value(CAL_DOW, true)),
        weighted(0.2, "[a-z ]{0,12}"),
    )
        .prop_map(|(s, mi, h, d, mo, y, w, c)| {
            let mut m = Map::new();
            for (k, v) in [
                ("second", s),
                ("minute", mi),
                ("hour", h),
                ("dayOfMonth", d),
                ("month", mo),
                ("year", y),
                ("dayOfWeek", w),
                ("comment", c.map(Value::String)),
            ] {
                if let Some(v) = v {
                    m.insert(k.to_string(), v);
                }
            }
            Value::Object(m)
        });
    let small_hours = (
        select(vec!["0", "1", "2", "3", "1-3", "*", "0,2"]),
        select(vec!["0", "30", "*/15", "45"]),
    )
        .prop_map(|(h, m)| json!({"hour": h, "minute": m}));
    prop_oneof![4 => general, 1 => small_hours].boxed()
}

#[derive(Debug, Clone)]
pub(crate) struct FromChoice {
    pub(crate) uniform: i64,
    pub(crate) millis: Option<u32>,
    pub(crate) near_dst: bool,
    pub(crate) year: i32,
    pub(crate) pick: usize,
    pub(crate) delta: i64,
}

pub(crate) fn from_choice() -> BoxedStrategy<FromChoice> {
    (
        from_min()..=from_max(),
        weighted(0.2, 1u32..1000),
        any::<bool>(),
        prop_oneof![2000i32..=2099, 2009i32..=2022],
        any::<usize>(),
        -6 * 3600i64..=6 * 3600,
    )
        .prop_map(
            |(uniform, millis, near_dst, year, pick, delta)| FromChoice {
                uniform,
                millis,
                near_dst,
                year,
                pick,
                delta,
            },
        )
        .boxed()
}

/// Half of the time, a `from` within 6 h of one of the zone's offset changes.
pub(crate) fn resolve_from(fc: &FromChoice, tz: Tz) -> DateTime<Utc> {
    let mut secs = fc.uniform;
    if fc.near_dst {
        let tr = transitions_in_year(tz, fc.year);
        if !tr.is_empty() {
            secs = (tr[fc.pick % tr.len()] + fc.delta).clamp(from_min(), from_max());
        }
    }
    DateTime::from_timestamp(secs, fc.millis.unwrap_or(0) * 1_000_000).expect("in range")
}

#[derive(Debug, Clone)]
pub(crate) struct Parts {
    pub(crate) crons: Vec<String>,
    pub(crate) cron_single_string: bool,
    /// (use "CRON_TZ=" rather than "TZ=", zone); applied only to a lone cron without timeZone.
    pub(crate) cron_tz: Option<(bool, &'static str)>,
    pub(crate) calendars: Vec<Value>,
    pub(crate) intervals: Vec<Value>,
    pub(crate) exclude: Vec<Value>,
    /// startTime / endTime as offsets in seconds from `from`.
    pub(crate) start: Option<i64>,
    pub(crate) end: Option<i64>,
    pub(crate) bound_style: u8,
    pub(crate) jitter: Option<&'static str>,
    pub(crate) zone: Option<&'static str>,
    pub(crate) dialect: Option<&'static str>,
    pub(crate) dst: Option<(Option<&'static str>, Option<&'static str>)>,
    pub(crate) from: FromChoice,
}

/// Zones with offset changes in 2000-2099 (Apia only 2010-2021, including the 2011 date-line jump).
pub(crate) const DST_ZONES: &[&str] = &[
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "America/Havana",
    "Pacific/Apia",
];

/// Mixes rich specs (unions of several sources) with single-source specs in a DST zone whose
/// `from` lies near an offset change, where policies make a difference.
pub(crate) fn parts() -> BoxedStrategy<Parts> {
    prop_oneof![3 => rich_parts(), 2 => focused_parts()].boxed()
}

pub(crate) fn focused_parts() -> BoxedStrategy<Parts> {
    let source = prop_oneof![
        3 => dst_cron().prop_map(|c| (vec![c], Vec::new())),
        1 => calendar().prop_map(|k| (Vec::new(), vec![k])),
        1 => std_cron().prop_map(|c| (vec![c], Vec::new())),
    ];
    let from = (from_choice(), 2009i32..=2022).prop_map(|(mut f, y)| {
        f.near_dst = true;
        f.year = y;
        f.delta = f.delta.clamp(-6 * 3600, 2 * 3600);
        f
    });
    (
        source,
        select(DST_ZONES),
        weighted(
            0.85,
            (weighted(0.9, select(GAPS)), weighted(0.9, select(OVERLAPS))),
        ),
        weighted(0.2, select(DIALECTS)),
        weighted(0.15, (-2 * 86400i64..=2 * 86400, 0i64..=3 * 86400)),
        from,
    )
        .prop_map(
            |((crons, calendars), zone, dst, dialect, bounds, from)| Parts {
                crons,
                cron_single_string: false,
                cron_tz: None,
                calendars,
                intervals: Vec::new(),
                exclude: Vec::new(),
                start: bounds.map(|b| b.0),
                end: bounds.map(|b| b.0 + b.1),
                bound_style: 0,
                jitter: None,
                zone: Some(zone),
                dialect,
                dst,
                from,
            },
        )
        .boxed()
}

pub(crate) fn rich_parts() -> BoxedStrategy<Parts> {
    let cron_any = prop_oneof![3 => std_cron(), 1 => dst_cron()];
    let sources = (
        vec(cron_any, 0..=2),
        vec(calendar(), 0..=2),
        vec(interval(), 0..=1),
    )
        .prop_filter(
            "a spec needs a cron, a calendar or an interval",
            |(c, k, i)| !(c.is_empty() && k.is_empty() && i.is_empty()),
        );
    let bounds = (
        weighted(0.25, -40 * 86400i64..=40 * 86400),
        weighted(0.25, 0i64..=400 * 86400),
        any::<u8>(),
    )
        .prop_map(|(start, span, style)| match (start, span) {
            (Some(s), Some(sp)) => (Some(s), Some(s + sp), style),
            (None, Some(sp)) => (None, Some(sp - 10 * 86400), style),
            (s, None) => (s, None, style),
        });
    let extras = (
        any::<bool>(),
        weighted(0.15, (any::<bool>(), select(ZONES))),
        prop_oneof![3 => Just(Vec::new()), 1 => vec(calendar(), 1..=2)],
        bounds,
        weighted(0.2, select(vec!["30s", "1m", "0s", "PT10S", "2h"])),
        weighted(0.8, select(ZONES)),
        weighted(0.3, select(DIALECTS)),
        weighted(
            0.6,
            (weighted(0.8, select(GAPS)), weighted(0.8, select(OVERLAPS))),
        ),
    );
    (sources, extras, from_choice())
        .prop_map(
            |(
                (crons, calendars, intervals),
                (single, cron_tz, exclude, bounds, jitter, zone, dialect, dst),
                from,
            )| {
                Parts {
                    crons,
                    cron_single_string: single,
                    cron_tz,
                    calendars,
                    intervals,
                    exclude,
                    start: bounds.0,
                    end: bounds.1,
                    bound_style: bounds.2,
                    jitter,
                    zone,
                    dialect,
                    dst,
                    from,
                }
            },
        )
        .boxed()
}

impl Parts {
    pub(crate) fn prefix_applies(&self) -> bool {
        self.cron_tz.is_some() && self.crons.len() == 1 && self.zone.is_none()
    }

    pub(crate) fn effective_zone(&self) -> Tz {
        match (self.zone, self.cron_tz) {
            (Some(z), _) => zone(z),
            (None, Some((_, z))) if self.prefix_applies() => zone(z),
            _ => chrono_tz::UTC,
        }
    }

    pub(crate) fn from(&self) -> DateTime<Utc> {
        resolve_from(&self.from, self.effective_zone())
    }

    pub(crate) fn fmt_bound(&self, t: DateTime<Utc>) -> String {
        match self.bound_style % 4 {
            0 => t.to_rfc3339_opts(SecondsFormat::Secs, true),
            1 => t.to_rfc3339(),
            2 => t
                .with_timezone(&FixedOffset::east_opt(5 * 3600 + 1800).unwrap())
                .to_rfc3339(),
            _ => t.with_timezone(&self.effective_zone()).to_rfc3339(),
        }
    }

    /// The spec JSON plus its inclusive bounds.
    pub(crate) fn build(
        &self,
        from: DateTime<Utc>,
    ) -> (Value, Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
        let base = from.timestamp();
        let start = self
            .start
            .map(|o| ts((base + o).clamp(from_min(), from_max())));
        let end = self
            .end
            .map(|o| ts((base + o).clamp(from_min(), from_max())));
        let mut m = Map::new();
        if !self.crons.is_empty() {
            let crons: Vec<String> = if self.prefix_applies() {
                let (long, z) = self.cron_tz.unwrap();
                let p = if long { "CRON_TZ" } else { "TZ" };
                vec![format!("{p}={z} {}", self.crons[0])]
            } else {
                self.crons.clone()
            };
            if crons.len() == 1 && self.cron_single_string {
                m.insert("cron".into(), json!(crons[0]));
            } else {
                m.insert("cron".into(), json!(crons));
            }
        }
        if !self.calendars.is_empty() {
            m.insert("calendars".into(), json!(self.calendars));
        }
        if !self.intervals.is_empty() {
            m.insert("intervals".into(), json!(self.intervals));
        }
        if !self.exclude.is_empty() {
            m.insert("exclude".into(), json!(self.exclude));
        }
        if let Some(s) = start {
            m.insert("startTime".into(), json!(self.fmt_bound(s)));
        }
        if let Some(e) = end {
            m.insert("endTime".into(), json!(self.fmt_bound(e)));
        }
        if let Some(j) = self.jitter {
            m.insert("jitter".into(), json!(j));
        }
        if let Some(z) = self.zone {
            m.insert("timeZone".into(), json!(z));
        }
        // Other dialects read cron strings differently; this generator writes standard ones.
        // The engine also reads calendar dayOfWeek numbers in the quartz/eventbridge numbering
        // (1 = Sunday), so those dialects are only combined with calendars without dayOfWeek.
        let has_dow = self
            .calendars
            .iter()
            .chain(&self.exclude)
            .any(|c| c.get("dayOfWeek").is_some());
        match self.dialect {
            Some("quartz" | "eventbridge") if has_dow => {}
            Some(d) if self.crons.is_empty() || d == "standard" => {
                m.insert("dialect".into(), json!(d));
            }
            _ => {}
        }
        if let Some((gap, overlap)) = self.dst {
            let mut d = Map::new();
            if let Some(g) = gap {
                d.insert("gap".into(), json!(g));
            }
            if let Some(o) = overlap {
                d.insert("overlap".into(), json!(o));
            }
            m.insert("dst".into(), Value::Object(d));
        }
        (Value::Object(m), start, end)
    }
}

pub(crate) fn parse_valid(spec: &Value) -> Result<Schedule, TestCaseError> {
    Schedule::from_json(spec)
        .map_err(|e| TestCaseError::fail(format!("valid spec rejected: {e}\nspec: {spec}")))
}

/// 5-field (sometimes 6 with seconds first) cron strings that croner and Sundial's standard dialect
/// read the same way: no `L W # ?`, no `N/step`, no wrap-around ranges; DOM/DOW both restricted
/// (OR in both engines); `*/n` in a day field only when the other day field is `*` (Vixie counts
/// `*/n` as unrestricted, croner as restricted — the two agree only then).
pub(crate) fn croner_cron() -> BoxedStrategy<String> {
    let days = prop_oneof![
        2 => Just(("*".to_string(), "*".to_string())),
        2 => restricted(DOW, true).prop_map(|w| ("*".to_string(), w)),
        2 => restricted(DOM, false).prop_map(|d| (d, "*".to_string())),
        3 => (restricted(DOM, false), restricted(DOW, true)),
        1 => star_step(DOM).prop_map(|d| (d, "*".to_string())),
        1 => star_step(DOW).prop_map(|w| ("*".to_string(), w)),
    ];
    (
        weighted(0.25, field(SECOND, false, true)),
        field(MINUTE, false, true),
        field(HOUR, false, true),
        days,
        field(MONTH, true, true),
    )
        .prop_map(|(s, m, h, (d, w), mo)| match s {
            Some(s) => format!("{s} {m} {h} {d} {mo} {w}"),
            None => format!("{m} {h} {d} {mo} {w}"),
        })
        .boxed()
}
