//! The ports' contracts, executable: every adapter's tests run these suites, so the in-memory,
//! SQLite and AWS adapters are held to the same behaviour. Built with the `conformance` feature
//! (adapter crates enable it for their tests) and in this crate's own tests.
//!
//! This is test code shipped in the library so that adapter crates can run it: it reports
//! contract violations by panicking, exactly as assertions in a `#[test]` do.

pub mod audit;
pub mod queue;
pub mod store;
