//! Sundial's application layer: the ports (traits) the domain needs from the world, the use cases
//! written once over them, and the HTTP API router that both the API Lambda and `sundial serve` run.
//!
//! Nothing here knows which database or queue is behind a port; adapters live in `sundial-embedded`
//! and `sundial-aws`.
// Until the hexagon layout lands, this crate's modules are reorganised elsewhere: `unreachable_pub`
// is enforced here once they settle.
#![allow(unreachable_pub)]

pub mod api;
pub mod app;
pub mod clock;
pub mod engine;
pub mod events;
pub mod http;
pub mod outbound;
pub mod queue;
pub mod settings;
pub mod store;

pub use app::{App, AppConfig, AppError};
