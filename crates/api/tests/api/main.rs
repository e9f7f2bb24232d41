//! The HTTP API through the router, route by route: an `App` over the in-memory store and a manual
//! clock, requests sent with `oneshot`, answers checked against the envelope and routes of docs/api.md.
//!
//! One module per area of the API; `support` holds the router and the helpers they share.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod apply;
mod arbitrary_json;
mod bulk;
mod calendars;
mod errors;
mod executions;
mod history;
mod jobs;
mod ledger;
mod listings;
mod main_routes;
mod mirrors;
mod openapi;
mod policies;
mod preview;
mod refusals;
mod search;
mod secrets;
mod simulate;
mod stats;
mod support;
mod timers;
mod triggers;
