//! Sundial's pure core: what a job is and when it fires.
//!
//! No I/O, no async runtime, no clock: every function takes the time it needs as an argument, so the
//! whole scheduling logic is deterministic and testable with simulated time. The AWS and embedded
//! adapters, the HTTP API and the Lambda entrypoints all stand on this crate.

pub mod address;
pub mod backfill;
pub mod change;
pub mod debug_mode;
pub mod declaration;
pub mod duration;
pub mod execution;
pub mod expand;
pub mod fleet_hour;
pub mod job;
mod json_path;
pub mod ledger;
pub mod outcome;
pub mod plan;
pub mod retry;
pub mod settle;
pub mod signing;
pub mod simulate;
pub mod source;
pub mod spec;
pub mod stats;
pub mod template;
pub(crate) mod time_serde;
pub mod timer;
pub mod trigger;
pub mod upcoming;
pub mod vocabulary;
