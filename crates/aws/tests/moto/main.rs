//! AWS adapter and Lambda handler tests against moto server on 127.0.0.1 (see `support`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod apply;
mod bulk;
mod calendars;
mod hotkeys;
mod lambda;
mod queue;
mod requests;
mod steady;
mod store;
