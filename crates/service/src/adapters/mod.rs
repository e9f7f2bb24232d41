//! The outbound adapter that belongs to no platform: the real HTTP client with its outbound
//! address policy ([`http`]). The in-memory ports and the system clock are in `sundial-ports`,
//! the SQLite adapters in `sundial-embedded`, the AWS ones in `sundial-aws`.

pub mod http;
