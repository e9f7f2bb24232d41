//! Sundial's application layer, laid out as a hexagon (docs/architecture.md):
//!
//! - [`ports`]: the traits the use cases need from the world (store, queue, clock, HTTP, events);
//! - [`app`]: the control plane's use cases over the ports (jobs, executions, views, health);
//! - [`engine`]: the execution engine's use cases (tick, dispatch, notify) and the in-process
//!   runner `sundial serve` uses;
//! - [`api`]: the HTTP router both the API Lambda and `sundial serve` run, translating only;
//! - [`adapters`]: the adapters that belong to no platform (in memory, the real HTTP client);
//! - [`records`]: how jobs and executions are stored, shared by `app` and `engine`;
//! - [`cause`]: the library error an adapter keeps below its own, and how logs print the chain;
//! - `conformance` (feature `conformance`): the ports' contracts as executable suites.
//!
//! The SQLite adapters live in `sundial-embedded`, the AWS ones in `sundial-aws`; the domain
//! (specs, policies, planner, retry, templating) in `sundial-core`.

pub mod adapters;
pub mod api;
pub mod app;
pub mod cause;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod engine;
pub mod ports;
pub mod records;
pub mod settings;

pub use app::{Actor, App, AppConfig, AppError, ChangeBy};
