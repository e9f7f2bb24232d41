//! Next-fire-time benchmark: Sundial's spec engine against croner 3.0.1 (docs/performance.md).
//!
//! * `shared/{sundial,croner}/<spec>_<zone>`: one next-fire computation for the same cron string in
//!   both engines, in UTC and America/New_York. Parsing happens once, outside the timed loop. Each
//!   iteration queries from the next of 64 fixed instants spread over 2024–2030, so neither engine
//!   profits from repeating one query.
//! * `sundial_only/<spec>`: calendar, interval, union-with-exclude and RFC 5545 `rrule` specs croner
//!   cannot express.
//! * `never/<spec>`: specs that never fire (again); the target is < 50 µs per query.
//!
//! Before timing, every shared spec is checked: both engines must give the same next fire time from
//! every instant, in both zones. A disagreement prints a warning (it is not a benchmark failure).
//!
//! Run: `cargo bench -p sundial-core --bench next_fire`. Figures: docs/performance.md.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use criterion::{criterion_group, criterion_main, Criterion};
use croner::Cron;
use serde_json::{json, Value};
use sundial_core::spec::Schedule;

/// The shared corpus: (name, cron string). Both engines read these the same way (5 fields, DOM/DOW
/// combined with OR when both are restricted, croner's L / nL / W / n#k extensions).
const SHARED: &[(&str, &str)] = &[
    // frequent
    ("every_minute", "* * * * *"),
    ("every_5_minutes", "*/5 * * * *"),
    ("hourly", "0 * * * *"),
    // daily / weekly
    ("weekdays_0930", "30 9 * * MON-FRI"),
    ("sunday_midnight", "0 0 * * 0"),
    // rare
    ("new_year", "0 0 1 1 *"),
    ("dom13_or_friday", "0 12 13 * 5"),
    // specials
    ("last_day_of_month", "0 0 L * *"),
    ("last_friday", "0 0 * * 5L"),
    ("weekday_nearest_15th", "0 0 15W * *"),
    ("third_tuesday", "0 0 * * 2#3"),
];

const ZONES: &[(&str, Tz)] = &[("utc", Tz::UTC), ("ny", chrono_tz::America::New_York)];

const INSTANTS: usize = 64;

/// 64 instants spread over `[from_year, to_year)`, each at an irregular second of its day.
fn instants(from_year: i32, to_year: i32) -> Vec<DateTime<Utc>> {
    let start = Utc
        .with_ymd_and_hms(from_year, 1, 1, 0, 0, 0)
        .unwrap()
        .timestamp();
    let end = Utc
        .with_ymd_and_hms(to_year, 1, 1, 0, 0, 0)
        .unwrap()
        .timestamp();
    let step = (end - start) / INSTANTS as i64;
    (0..INSTANTS as i64)
        .map(|i| {
            // An irregular second of day (7919 is prime), plus an odd day shift within the step.
            let second_of_day = (i * 7919 * 37) % 86_400;
            let day_shift = ((i * 13) % 5) * 86_400;
            DateTime::from_timestamp(start + i * step + day_shift + second_of_day, 0).unwrap()
        })
        .collect()
}

fn sundial(spec: Value) -> Schedule {
    Schedule::from_json(&spec).unwrap_or_else(|e| panic!("invalid bench spec {spec}: {e}"))
}

fn sundial_cron(cron: &str, zone: Tz) -> Schedule {
    sundial(json!({ "cron": [cron], "timeZone": zone.name() }))
}

fn croner_next(cron: &Cron, from: &DateTime<Tz>) -> Option<DateTime<Utc>> {
    cron.find_next_occurrence(from, false)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Parses every shared spec with croner; `None` where croner 3.0.1 rejects the syntax. Then checks
/// that both engines agree from every instant in every zone, printing a warning per disagreement.
fn validate(instants: &[DateTime<Utc>]) -> Vec<Option<Cron>> {
    let mut crons = Vec::new();
    let mut disagreements = 0usize;
    for (name, text) in SHARED {
        let cron = match Cron::from_str(text) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("note: croner 3.0.1 rejects {text:?} ({name}): {e}; Sundial side only");
                None
            }
        };
        for (zone_name, zone) in ZONES {
            let schedule = sundial_cron(text, *zone);
            let Some(cron) = &cron else {
                assert!(
                    schedule.next_after(instants[0]).is_some(),
                    "{name}: Sundial finds no fire time"
                );
                continue;
            };
            let mut spec_disagreements = 0usize;
            for (i, from) in instants.iter().enumerate() {
                let ours = schedule.next_after(*from);
                let theirs = croner_next(cron, &from.with_timezone(zone));
                if ours != theirs {
                    spec_disagreements += 1;
                    if spec_disagreements <= 3 {
                        eprintln!(
                            "WARNING: {name} ({text:?}) in {zone_name}, from {from} (instant {i}): \
                             sundial {ours:?} != croner {theirs:?}"
                        );
                    }
                }
            }
            if spec_disagreements > 0 {
                eprintln!(
                    "WARNING: {name} in {zone_name}: {spec_disagreements}/{} instants disagree",
                    instants.len()
                );
            }
            disagreements += spec_disagreements;
        }
        crons.push(cron);
    }
    if disagreements == 0 {
        eprintln!(
            "validation: Sundial and croner agree on all {} shared specs x {} zones x {} instants",
            SHARED.len(),
            ZONES.len(),
            instants.len()
        );
    }
    crons
}

fn shared(c: &mut Criterion) {
    let instants = instants(2024, 2031);
    let crons = validate(&instants);
    let mut group = c.benchmark_group("shared");
    for ((name, text), cron) in SHARED.iter().zip(&crons) {
        for (zone_name, zone) in ZONES {
            let id = format!("{name}_{zone_name}");
            let schedule = sundial_cron(text, *zone);
            let mut i = 0usize;
            group.bench_function(format!("sundial/{id}"), |b| {
                b.iter(|| {
                    let from = instants[i % INSTANTS];
                    i += 1;
                    schedule.next_after(black_box(from))
                })
            });
            if let Some(cron) = cron {
                let zoned: Vec<DateTime<Tz>> =
                    instants.iter().map(|t| t.with_timezone(zone)).collect();
                let mut i = 0usize;
                group.bench_function(format!("croner/{id}"), |b| {
                    b.iter(|| {
                        let from = &zoned[i % INSTANTS];
                        i += 1;
                        cron.find_next_occurrence(black_box(from), false)
                    })
                });
            }
        }
    }
    group.finish();
}

fn bench_specs(c: &mut Criterion, group_name: &str, specs: Vec<(&str, Value, Vec<DateTime<Utc>>)>) {
    let mut group = c.benchmark_group(group_name);
    for (name, spec, instants) in specs {
        let schedule = sundial(spec);
        let mut i = 0usize;
        group.bench_function(name, |b| {
            b.iter(|| {
                let from = instants[i % INSTANTS];
                i += 1;
                schedule.next_after(black_box(from))
            })
        });
    }
    group.finish();
}

fn sundial_only(c: &mut Criterion) {
    let instants = instants(2024, 2031);
    let union = json!({
        "calendars": [
            {"minute": "30", "hour": "9", "dayOfWeek": "MON-FRI", "comment": "weekday mornings"},
            {"hour": "0", "dayOfMonth": "1", "comment": "monthly"},
            {"minute": "*/15", "hour": "12-13", "month": "JAN,JUL", "comment": "twice-yearly window"}
        ],
        "intervals": [{"every": "6h", "offset": "5h"}],
        "exclude": [{"second": "*", "minute": "*", "hour": "*", "dayOfMonth": "25", "month": "DEC"}],
        "timeZone": "America/New_York"
    });
    let specs = vec![
        (
            "calendar_weekdays_0930_ny",
            json!({"calendars": [{"minute": "30", "hour": "9", "dayOfWeek": "MON-FRI"}],
                   "timeZone": "America/New_York"}),
            instants.clone(),
        ),
        (
            "interval_6h_offset_5h",
            json!({"intervals": [{"every": "6h", "offset": "5h"}]}),
            instants.clone(),
        ),
        ("union_3cal_1interval_exclude_ny", union, instants.clone()),
        (
            "rrule_last_weekday_of_month_ny",
            json!({"rrule": ["FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1"],
                   "startTime": "2024-01-01T17:00:00-05:00", "timeZone": "America/New_York"}),
            instants.clone(),
        ),
        (
            "rrule_every_other_week_tu_th_0930_ny",
            json!({"rrule": ["FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH;BYHOUR=9;BYMINUTE=30;BYSECOND=0"],
                   "startTime": "2024-01-01T00:00:00-05:00", "timeZone": "America/New_York"}),
            instants.clone(),
        ),
    ];
    for (name, spec, from) in &specs {
        let schedule = sundial(spec.clone());
        assert!(schedule.next_after(from[0]).is_some(), "{name} must fire");
    }
    bench_specs(c, "sundial_only", specs);
}

fn never(c: &mut Criterion) {
    let instants_2024 = instants(2024, 2031);
    let instants_2020 = instants(2020, 2021);
    let specs = vec![
        (
            "feb_30",
            json!({"cron": ["0 0 30 2 *"]}),
            instants_2024.clone(),
        ),
        (
            "feb_30_ny",
            json!({"cron": ["0 0 30 2 *"], "timeZone": "America/New_York"}),
            instants_2024.clone(),
        ),
        (
            "calendar_year_2001_from_2020",
            json!({"calendars": [{"year": "2001"}]}),
            instants_2020,
        ),
        (
            "exclude_all_wildcard",
            json!({"cron": ["* * * * *"],
                   "exclude": [{"second": "*", "minute": "*", "hour": "*"}]}),
            instants_2024.clone(),
        ),
        (
            "exclude_every_fire_daily",
            json!({"cron": ["0 0 * * *"], "exclude": [{"hour": "0"}]}),
            instants_2024.clone(),
        ),
        (
            "exclude_every_fire_minutely_ny",
            json!({"cron": ["* * * * *"],
                   "exclude": [{"minute": "*", "hour": "*"}],
                   "timeZone": "America/New_York"}),
            instants_2024.clone(),
        ),
        (
            "end_time_passed",
            json!({"cron": ["* * * * *"], "endTime": "2020-01-01T00:00:00Z"}),
            instants_2024,
        ),
    ];
    for (name, spec, from) in &specs {
        let schedule = sundial(spec.clone());
        for t in from {
            if let Some(next) = schedule.next_after(*t) {
                eprintln!("WARNING: never-matching spec {name} fires at {next} (from {t})");
                break;
            }
        }
    }
    bench_specs(c, "never", specs);
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = shared, sundial_only, never
}
criterion_main!(benches);
