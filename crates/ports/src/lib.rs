//! Sundial's ports: what the use cases need from the world, as traits, with what every adapter
//! shares (docs/architecture.md).
//!
//! Each port is the shape of its production service, so that no adapter can promise more than
//! production keeps: [`store`] (jobs, executions, the wake-up index: DynamoDB or SQLite),
//! [`queue`] (delayed, at-least-once messages: SQS or SQLite), [`clock`] (now, and the system
//! clock), [`http`] (the calls of a job's request chain and its notifications) and [`events`] (a
//! bus and the queue targets of jobs: EventBridge and SQS).
//!
//! Beside them: [`cause`], the library error an adapter keeps below its own; [`memory`], every
//! port in memory for tests and simulations; and `conformance` (feature `conformance`), the
//! ports' contracts as suites every adapter runs. The SQLite adapters (`sundial-embedded`) and
//! the AWS ones (`sundial-aws`) depend on this crate and on `sundial-core` alone; the use cases
//! (`sundial-service`) are written over these traits.

pub mod cause;
pub mod clock;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod events;
pub mod http;
pub mod memory;
pub mod queue;
pub mod store;
