//! `timer`s (docs/api.md) (`dueTime`, `period` as a duration, `R<n>/…` or a cron, `ttl`) and preview
//! requests (`{"timer": …}`, `{"schedule": …}` or a bare schedule), as JSON text, through
//! `compile_timer`, `compile_preview_request` and `timer::preview` (what `POST /specs/preview`
//! answers): no panic, and whatever compiles previews within bounds (`check_schedule`).
#![no_main]

use chrono::DateTime;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use sundial_core::timer::{compile_preview_request, compile_timer, preview, TimerPlan};
use sundial_fuzz::{check_schedule, created_for, rfc};

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let created = created_for(data);
    let what = || format!("created {}, input {value}", rfc(created));
    // The input as a timer, and as a preview request; a timer is checked from its creation, where
    // its "run now" falls (one second earlier, so that a run at `created` itself counts).
    let just_before = DateTime::from_timestamp(created.timestamp() - 1, 0).unwrap_or(created);
    for plan in [
        compile_timer(&value, created),
        compile_preview_request(&value, created),
    ] {
        if let Ok(TimerPlan::Scheduled(schedule)) = plan {
            check_schedule(&schedule, just_before, true, &what);
        }
    }
    let count = usize::from(data.first().copied().unwrap_or(3) % 8);
    for job_id in [None, Some("fuzz-job")] {
        if let Ok(p) = preview(&value, created, count, job_id) {
            assert!(p.times.len() <= count, "more times than asked; {}", what());
            let mut last = None;
            for text in &p.times {
                // Times past 2100 or before 2000 never come back; all others are RFC 3339.
                let t = DateTime::parse_from_rfc3339(text)
                    .unwrap_or_else(|e| panic!("preview time {text:?}: {e}; {}", what()));
                assert!(
                    last < Some(t),
                    "preview times not increasing: {:?}; {}",
                    p.times,
                    what()
                );
                last = Some(t);
            }
        }
    }
});
