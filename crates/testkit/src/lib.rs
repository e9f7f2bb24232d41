//! Helpers shared by Sundial's test suites. Only ever a dev-dependency.
//!
//! * [`proptest_config`]: reproducible property tests (below).
//! * [`TempDir`]: a fresh directory removed on drop, for tests on real files.
//! * [`Target`]: a job service on loopback that records what the engine sends it.
//! * [`moto`]: moto server on loopback for the tests of AWS adapters and targets.
//! * [`python`]: the Python interpreter with the pinned moto, provisioned on first use.
//! * [`skipped`]: the line a test that cannot run here prints where the run's reader sees it.
//!
//! [`proptest_config`] makes every property test reproducible: a random seed must never turn CI
//! red. Each run draws its cases from one fixed seed unless `SUNDIAL_PROPTEST_SEED` names another,
//! prints that seed with any failure, and replays the cases kept in a regression file before new
//! ones. Fresh seeds are explored by `scripts/explore-properties`, which cannot fail CI; a case it
//! finds is kept by adding its regression line (proptest writes it) to the file in the repository.

use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};

pub mod browser;
pub mod moto;
pub mod python;
mod target;
mod temp;

pub use target::{read_request, Delay, Received, Target};
pub use temp::TempDir;

/// The seed every property test uses unless `SUNDIAL_PROPTEST_SEED` says otherwise.
pub const DEFAULT_SEED: u64 = 0x05EE_D0F5_D1A1;

/// The environment variable that picks another seed (a decimal `u64`).
pub const SEED_VARIABLE: &str = "SUNDIAL_PROPTEST_SEED";

/// The seed of this run: `SUNDIAL_PROPTEST_SEED` when set, else [`DEFAULT_SEED`].
///
/// # Panics
/// When the variable is set but is not a decimal `u64`: a typo must not silently test another seed.
#[allow(clippy::panic)]
pub fn seed() -> u64 {
    match std::env::var(SEED_VARIABLE) {
        Ok(text) => match text.trim().parse() {
            Ok(seed) => seed,
            Err(_) => panic!("{SEED_VARIABLE}={text:?} is not a decimal u64"),
        },
        Err(_) => DEFAULT_SEED,
    }
}

/// A proptest configuration with `cases` cases drawn from [`seed`], whose failures are kept in
/// `regressions` (an absolute path: build it with `concat!(env!("CARGO_MANIFEST_DIR"), …)`) and
/// replayed first on every later run.
///
/// The seed is printed to the test's captured output, so a failing test shows how to reproduce it.
pub fn proptest_config(cases: u32, regressions: &'static str) -> Config {
    let seed = seed();
    eprintln!("proptest seed {seed} (reproduce with {SEED_VARIABLE}={seed}); regressions in {regressions}");
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(regressions))),
        ..Config::default()
    }
}

/// Says that a test did not run, and what would make it run, on a line the test harness does not
/// capture: `SKIPPED: <what>`, written straight to the process's standard error (libtest captures
/// only what `print!` and `eprint!` write), so a `cargo test` run that skipped anything never
/// looks like one that skipped nothing. Each skipping test calls it once.
pub fn skipped(what: &str) {
    uncaptured(&format!("SKIPPED: {what}"));
}

/// Says something the run's reader should see while it happens (a download on first use, say),
/// on a line the test harness does not capture, as [`skipped`] does.
pub fn notice(what: &str) {
    uncaptured(&format!("NOTE: {what}"));
}

fn uncaptured(line: &str) {
    use std::io::Write as _;
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}
