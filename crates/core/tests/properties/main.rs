//! Property tests for the schedule spec engine (docs/spec.md).
//!
//! * Invariants of `preview`/`next_after` on random valid specs (cron, calendars, intervals,
//!   excludes, bounds, zones with odd DST rules, every DST policy), the canonical JSON round trip,
//!   `fire_after` jitter bounds and `format_time`.
//! * Differential tests against croner (the reference engine docs/spec.md names) on the cron
//!   syntax both engines read the same way: standard 5/6 fields in UTC and New York (away from
//!   offset changes), `L`/`W`/`#`, DOM-AND-DOW (`temporal` dialect, `+`), quartz and eventbridge.
//! * Oracles built from croner's field matcher: calendars ∪ intervals − excludes within bounds
//!   (UTC), and every DST gap/overlap policy near real offset changes (wall-clock oracle).
//! * Robustness: random bytes, strings, JSON trees, fuzzed specs, cron and calendar fields,
//!   durations and timers give `Ok` or `Err`, never a panic or a hang, and whatever parses
//!   previews within 50 ms; valid specs queried from any instant chrono can hold.
//! * Never-firing specs yield no times, quickly.
//! * Business calendars: the nth business day is a business day and increasing in n, rolls land on
//!   business days (the modified ones inside the month), offsets count business days.
//! * `rrule` entries: restarting a rule at the aligned period of a query equals iterating it from
//!   DTSTART.
//!
//! Every run is reproducible (`sundial_testkit::proptest_config`): one fixed seed unless
//! `SUNDIAL_PROPTEST_SEED` names another, printed with any failure, and the seeds of cases found
//! earlier kept in `proptest-regressions/properties.txt` and replayed first. When a property finds
//! an engine bug, the shrunk input is also added as a plain `#[test]` regression in `regressions.rs`,
//! so it keeps testing the bug after the strategies change.
//!
//! One module per area; `support` and `generate` hold what they share.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod business;
mod differential;
mod dst;
mod generate;
mod never_firing;
mod preview;
mod regressions;
mod robustness;
mod rollups;
mod rrule;
mod support;
mod timers;
