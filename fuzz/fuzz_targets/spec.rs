//! Schedule specs (`schedule` objects: cron strings in four dialects, calendars, intervals,
//! exclusions, bounds, zones, DST policies, jitter) as JSON text, through `Schedule::from_json_str`:
//! no panic, and whatever parses previews, fires, formats and round-trips (`check_schedule`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sundial_core::spec::Schedule;
use sundial_fuzz::{check_schedule, instant_for, rfc};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(schedule) = Schedule::from_json_str(text) {
        let from = instant_for(data);
        check_schedule(&schedule, from, false, &|| {
            format!("from {}, spec {text}", rfc(from))
        });
    }
});
