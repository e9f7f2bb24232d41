//! The ports: what the use cases need from the world, as traits.
//!
//! Each port is the shape of its production service, so that no adapter can promise more than
//! production keeps: [`store`] (jobs, executions, the wake-up index: DynamoDB or SQLite),
//! [`queue`] (delayed, at-least-once messages: SQS or SQLite), [`clock`] (now), [`http`] (the
//! calls of a job's request chain and its notifications) and [`events`] (a bus and the queue
//! targets of jobs: EventBridge and SQS). Adapters live in [`crate::adapters`] (in memory, the
//! real HTTP client), `sundial-embedded` (SQLite) and `sundial-aws`.

pub mod clock;
pub mod events;
pub mod http;
pub mod queue;
pub mod store;
