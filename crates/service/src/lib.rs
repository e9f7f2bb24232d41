//! Sundial's use cases, written over the ports of `sundial-ports` (docs/architecture.md):
//!
//! - [`app`]: the control plane's use cases (jobs, executions, views, health, bulk actions), the
//!   audit trail's actors and the auth types the inbound adapters share ([`app::auth`]);
//! - [`engine`]: the execution engine's use cases (tick, dispatch, notify) and the in-process
//!   runner `sundial serve` uses;
//! - [`records`]: how jobs and executions are stored, shared by `app` and `engine`;
//! - `conflict`: the retry of a read-modify-write that lost a race, shared by `app` and `engine`;
//! - [`adapters`]: the real outbound HTTP client with its address policy;
//! - [`settings`]: the environment every entrypoint reads.
//!
//! The inbound adapters are crates of their own: the HTTP API (`sundial-api`) and the console
//! (`sundial-console`). The ports, their in-memory adapters and conformance suites are
//! `sundial-ports`; the SQLite adapters `sundial-embedded`, the AWS ones `sundial-aws`; the domain
//! (specs, policies, planner, retry, templating) `sundial-core`.

pub mod adapters;
pub mod app;
mod conflict;
pub mod engine;
pub mod records;
pub mod settings;

pub use app::{Actor, App, AppConfig, AppError, ChangeBy};
