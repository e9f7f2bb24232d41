//! Sundial's application layer: the ports (traits) the domain needs from the world, the use cases
//! written once over them, and the HTTP API router that both the API Lambda and `sundial serve` run.
//!
//! Nothing here knows which database or queue is behind a port; adapters live in `sundial-embedded`
//! and `sundial-aws`.
// Allowed until the hexagon layout lands (this crate's modules are being reorganised); then
// `unreachable_pub` holds here as in every other crate.
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
