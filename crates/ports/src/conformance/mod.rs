//! The ports' contracts, executable: every adapter's tests run these suites, so the in-memory,
//! SQLite and AWS adapters are held to the same behaviour. Built with the `conformance` feature
//! (adapter crates enable it for their tests) and in this crate's own tests.
//!
//! This is test code shipped in the library so that adapter crates can run it: it reports
//! contract violations by panicking, exactly as assertions in a `#[test]` do.

/// Runs each named case (an `async fn(store)`) on a fresh store from `$make`, on a task of its
/// own, adding what fails to `$failures`: how every store suite runs its cases.
macro_rules! run_cases {
    ($make:expr, $failures:expr, $($case:ident),* $(,)?) => {
        $( $crate::conformance::store::run_case(stringify!($case), $case($make()), &mut $failures).await; )*
    };
}

/// Panics listing `failures`, if there are any: the end of a suite.
#[allow(clippy::panic)]
pub(crate) fn report(suite: &str, failures: &[String]) {
    if !failures.is_empty() {
        panic!(
            "{suite} conformance: {} case(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
}

pub mod audit;
pub mod labels;
pub mod queue;
pub mod rollups;
pub mod search;
pub mod store;
