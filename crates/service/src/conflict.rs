//! Read-modify-writes that lose races: the one way a use case or an engine step retries a
//! conditional write another writer got to first.
//!
//! Both the control plane's requests and the engine's steps read a record, change it and write it
//! on the condition that it has not moved. A lost round reads again and retries after a short,
//! spread-out wait, taken through the [`Clock`] port (a test clock does not sleep), so that
//! racing writers do not collide again on the next round.

use sundial_ports::clock::Clock;

/// How many rounds a request (a use case of the control plane) runs. A busy job (a burst of
/// triggers while the engine admits and settles its runs, each a write of the job) loses many in
/// a row; a request that does not conflict with the caller's intent must not fail for that, so
/// the rounds are many and spaced by [`conflict_backoff`] (about 2 s at most in all) before the
/// request gives up with 409.
const REQUEST_ROUNDS: usize = 40;

/// How many rounds one engine step runs before it gives up as contended
/// ([`EngineError::Contended`](crate::engine::EngineError::Contended)); its message is then
/// delivered again (the queue's retry), so the step is not lost, only put off.
const STEP_ROUNDS: usize = 16;

/// How long to wait before round `round` (from 1) of a read-modify-write that lost a race: a
/// pseudo-random time up to 2^min(round, 6) ms, so that racing writers spread out instead of
/// colliding again. The noise comes from the clock's sub-second digits, not a wall clock read.
fn conflict_backoff(clock: &dyn Clock, round: usize) -> std::time::Duration {
    let cap_micros = 1000u64 << round.min(6);
    let noise = u64::from(clock.now().timestamp_subsec_nanos())
        .wrapping_add(round as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(17);
    std::time::Duration::from_micros(noise % cap_micros)
}

/// The rounds of one read-modify-write that may lose races to concurrent writers: at most
/// [`REQUEST_ROUNDS`] for a request, [`STEP_ROUNDS`] for an engine step, spaced by
/// [`conflict_backoff`] through the [`Clock`] (never a wall clock sleep), remembering why the
/// last round was lost for the request's 409 if all are.
///
/// ```text
/// let mut retry = ConflictRetry::new(clock);
/// while retry.next_round().await {
///     read; change; write → return on success, or retry.lost(why) on a version conflict
/// }
/// Err(AppError::Conflict(retry.exhausted(|| "job … is busy; retry".into())))
/// ```
pub(crate) struct ConflictRetry<'c> {
    clock: &'c dyn Clock,
    rounds: usize,
    round: usize,
    /// The round ahead follows one that went on rather than lost: it starts without a wait.
    at_once: bool,
    last: Option<String>,
}

impl<'c> ConflictRetry<'c> {
    /// The first round of a request's read-modify-write timed by `clock`.
    pub(crate) fn new(clock: &'c dyn Clock) -> Self {
        Self::with_rounds(clock, REQUEST_ROUNDS)
    }

    /// The first round of an engine step's read-modify-write timed by `clock`.
    pub(crate) fn for_step(clock: &'c dyn Clock) -> Self {
        Self::with_rounds(clock, STEP_ROUNDS)
    }

    fn with_rounds(clock: &'c dyn Clock, rounds: usize) -> Self {
        ConflictRetry {
            clock,
            rounds,
            round: 0,
            at_once: false,
            last: None,
        }
    }

    /// Whether another round may run: at once the first time, after a back-off later, and
    /// `false` once every round is spent.
    pub(crate) async fn next_round(&mut self) -> bool {
        if self.round >= self.rounds {
            return false;
        }
        if self.round > 0 && !std::mem::take(&mut self.at_once) {
            let wait = conflict_backoff(self.clock, self.round);
            self.clock.back_off(wait).await;
        }
        self.round += 1;
        true
    }

    /// This round did not lose a race but moved its work on (an engine step that waited for its
    /// fire's second): the next round starts at once, still counted.
    pub(crate) fn went_on(&mut self) {
        self.at_once = true;
    }

    /// This round lost to a concurrent writer, for the reason `why`.
    pub(crate) fn lost(&mut self, why: String) {
        self.last = Some(why);
    }

    /// Why the read-modify-write gave up after every round was lost: the last round's reason,
    /// or `busy`'s when no round said one (the request's 409 says it).
    pub(crate) fn exhausted(self, busy: impl FnOnce() -> String) -> String {
        self.last.unwrap_or_else(busy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use sundial_ports::memory::ManualClock;

    fn clock() -> ManualClock {
        let at: DateTime<Utc> = "2026-12-02T10:00:00.123456789Z".parse().expect("instant");
        ManualClock::new(at)
    }

    #[tokio::test]
    async fn a_step_runs_its_rounds_then_stops() {
        let clock = clock();
        let mut retry = ConflictRetry::for_step(&clock);
        let mut rounds = 0;
        while retry.next_round().await {
            rounds += 1;
        }
        assert_eq!(rounds, STEP_ROUNDS);
        let mut retry = ConflictRetry::new(&clock);
        let mut rounds = 0;
        while retry.next_round().await {
            rounds += 1;
        }
        assert_eq!(rounds, REQUEST_ROUNDS);
    }

    #[tokio::test]
    async fn a_round_that_went_on_is_followed_at_once() {
        // A clock whose back-off never ends: a round that waited would hang the test.
        struct Stuck(ManualClock);
        impl Clock for Stuck {
            fn now(&self) -> DateTime<Utc> {
                self.0.now()
            }
            fn back_off(
                &self,
                _wait: std::time::Duration,
            ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
                Box::pin(std::future::pending())
            }
            fn sleep_until(
                &self,
                at: DateTime<Utc>,
            ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
                self.0.sleep_until(at)
            }
        }
        let clock = Stuck(clock());
        let mut retry = ConflictRetry::for_step(&clock);
        assert!(retry.next_round().await, "the first round starts at once");
        retry.went_on();
        assert!(
            retry.next_round().await,
            "a round after one that went on starts at once"
        );
        let waits = tokio::time::timeout(std::time::Duration::from_millis(50), retry.next_round());
        assert!(waits.await.is_err(), "a round after a lost one waits");
    }

    #[test]
    fn back_offs_grow_with_the_round_and_stay_under_their_cap() {
        let clock = clock();
        for round in 1..REQUEST_ROUNDS {
            let cap = std::time::Duration::from_micros(1000u64 << round.min(6));
            assert!(conflict_backoff(&clock, round) < cap, "round {round}");
        }
    }

    #[test]
    fn an_exhausted_retry_says_why_the_last_round_was_lost() {
        let clock = clock();
        let mut retry = ConflictRetry::new(&clock);
        retry.lost("the job changed".into());
        assert_eq!(retry.exhausted(|| "busy".into()), "the job changed");
        let retry = ConflictRetry::new(&clock);
        assert_eq!(retry.exhausted(|| "busy".into()), "busy");
    }
}
