//! Property 3b: every DST gap and overlap policy against a wall-clock oracle near real offset
//! changes.

use std::str::FromStr;

use crate::generate::*;
use crate::support::*;
use chrono::{Datelike, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::json;

/// 5-field cron strings for the small hours, in the syntax croner shares.
fn dst_cron5() -> BoxedStrategy<String> {
    let m = select(vec![
        "0", "30", "15,45", "*/15", "*/30", "*", "0-59/20", "59", "1", "7,8", "10-12",
    ]);
    let h = select(vec![
        "*", "0", "1", "2", "3", "0-3", "1,2", "2-3", "*/2", "23", "0,12", "22-23", "1-2", "12",
    ]);
    let w = select(vec!["*", "*", "*", "SUN", "0,6"]);
    (m, h, w)
        .prop_map(|(m, h, w)| format!("{m} {h} * * {w}"))
        .boxed()
}

/// The instants a wall-clock time `n` stands for under docs/spec.md's DST policies, with
/// `Auto` resolved by `fixed`.
fn oracle_instants(
    tz: Tz,
    n: chrono::NaiveDateTime,
    gap: &str,
    overlap: &str,
    fixed: bool,
) -> Vec<i64> {
    use chrono::LocalResult;
    match tz.from_local_datetime(&n) {
        LocalResult::Single(t) => vec![t.timestamp()],
        LocalResult::Ambiguous(a, b) => match (overlap, fixed) {
            ("both", _) | ("auto", false) => vec![a.timestamp(), b.timestamp()],
            ("first", _) | ("auto", true) => vec![a.timestamp()],
            _ => vec![b.timestamp()],
        },
        LocalResult::None => {
            let wall = n.and_utc().timestamp();
            // The change whose gap holds `n`: T + before <= n < T + after.
            let mut found = None;
            for y in [n.year() - 1, n.year(), n.year() + 1] {
                for t in transitions_in_year(tz, y) {
                    let (before, after) = (offset_at(tz, t - 1) as i64, offset_at(tz, t) as i64);
                    if after > before && t + before <= wall && wall < t + after {
                        found = Some((t, before));
                    }
                }
            }
            let Some((t, before)) = found else {
                return vec![];
            };
            match (gap, fixed) {
                ("shift", _) => vec![wall - before],
                ("transition", _) | ("auto", true) => vec![t],
                _ => vec![],
            }
        }
    }
}

fn dst_oracle(
    cron: &str,
    zone_name: &str,
    gap: &str,
    overlap: &str,
    from_choice: &FromChoice,
) -> Result<(), TestCaseError> {
    let tz = zone(zone_name);
    let c = croner::Cron::from_str(cron).map_err(|e| {
        TestCaseError::fail(format!("generator bug: croner rejects {cron:?}: {e:?}"))
    })?;
    let count = |f: &dyn Fn(u32) -> bool, n: u32| (0..n).filter(|v| f(*v)).count();
    let fixed = count(&|v| c.pattern.second_match(v).unwrap_or(false), 60) == 1
        && count(&|v| c.pattern.minute_match(v).unwrap_or(false), 60) == 1
        && count(&|v| c.pattern.hour_match(v).unwrap_or(false), 24) == 1;
    let spec =
        json!({"cron": [cron], "timeZone": zone_name, "dst": {"gap": gap, "overlap": overlap}});
    let s = parse_valid(&spec)?;
    let from = ts(resolve_from(from_choice, tz).timestamp());
    let got = s.preview(from, 5);
    let mut horizon = from.timestamp() + 86400;
    if got.len() == 5 {
        horizon = horizon.min(got[4].timestamp());
    }
    // Every wall-clock minute that could map into (from, horizon].
    let local_from =
        from.naive_utc() + chrono::Duration::seconds(offset_at(tz, from.timestamp()) as i64);
    let start = local_from.with_second(0).unwrap() - chrono::Duration::hours(26);
    let mut want = Vec::new();
    let mut n = start;
    let end = local_from + chrono::Duration::hours(50);
    while n <= end {
        let as_utc = Utc.from_utc_datetime(&n);
        if c.is_time_matching(&as_utc).unwrap_or(false) {
            want.extend(oracle_instants(tz, n, gap, overlap, fixed));
        }
        n += chrono::Duration::minutes(1);
    }
    want.sort_unstable();
    want.dedup();
    let want: Vec<String> = want
        .into_iter()
        .filter(|t| *t > from.timestamp() && *t <= horizon)
        .map(|t| {
            format!(
                "{} ({})",
                rfc(ts(t)),
                ts(t).with_timezone(&tz).format("%F %T %:z")
            )
        })
        .collect();
    let got: Vec<String> = got
        .into_iter()
        .filter(|t| t.timestamp() <= horizon)
        .map(|t| format!("{} ({})", rfc(t), t.with_timezone(&tz).format("%F %T %:z")))
        .collect();
    prop_assert_eq!(
        got,
        want,
        "Sundial (left) vs wall-clock oracle (right)\nspec: {}\nfrom: {} ({}), fixed-time: {}, compared up to {}",
        spec,
        rfc(from),
        from.with_timezone(&tz).format("%F %T %:z"),
        fixed,
        rfc(ts(horizon))
    );
    Ok(())
}

proptest! {
    #![proptest_config(cfg(1024))]

    /// Sundial's fire times near offset changes equal docs/spec.md's DST rules applied to plain
    /// wall-clock matching (croner's field matcher, no croner DST logic), for every gap/overlap
    /// policy pair.
    #[test]
    fn dst_policies_match_wall_clock_oracle(
        cron in prop_oneof![3 => dst_cron5(), 1 => croner_cron().prop_filter("5 fields", |c| c.split(' ').count() == 5)],
        zone_name in select(DST_ZONES),
        gap in select(GAPS),
        overlap in select(OVERLAPS),
        from in (from_choice(), 2009i32..=2022).prop_map(|(mut f, y)| {
            f.near_dst = true;
            f.year = y;
            f.millis = None;
            f.delta = f.delta.clamp(-6 * 3600, 2 * 3600);
            f
        }),
    ) {
        dst_oracle(&cron, zone_name, gap, overlap, &from)?;
    }
}
