//! Adapters that belong to no platform: the in-memory ports for tests and simulations
//! ([`memory`]), the real HTTP client with its outbound address policy ([`http`]) and the
//! system clock ([`clock`]). The SQLite adapters are in `sundial-embedded`, the AWS ones in
//! `sundial-aws`.

pub mod clock;
pub mod http;
pub mod memory;
