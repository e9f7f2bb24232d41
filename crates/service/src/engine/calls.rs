//! The calls in flight in this process, by execution: how a stop reaches a call at once.
//!
//! A run's attempt registers its call here while it is made ([`InFlight::enter`]). A stop made in
//! this process (a user's cancel or terminate through the API of `sundial serve`, another run's
//! `CancelOther` or `TerminateOther`, a parent close policy) signals the call
//! ([`InFlight::stop`]), whose dispatch task then drops the call's future: the HTTP client closes
//! the connection, and the target sees its request end. The stop can wait for that
//! ([`Ended::wait`]) before a new run's call starts. A stop made in another process (on AWS) is
//! seen by the call's own reads instead (docs/engine.md, "Stopping a call").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// The in-flight calls of one engine.
#[derive(Default)]
pub(super) struct InFlight {
    calls: Arc<Mutex<HashMap<String, Entry>>>,
    serial: std::sync::atomic::AtomicU64,
}

struct Entry {
    serial: u64,
    stop: watch::Sender<bool>,
    ended: watch::Receiver<()>,
}

/// A call registered in [`InFlight`]: signalled by a stop, unregistered when dropped (after the
/// call's future was dropped or finished).
pub(super) struct CallGuard {
    calls: Arc<Mutex<HashMap<String, Entry>>>,
    execution_id: String,
    serial: u64,
    stop: watch::Receiver<bool>,
    /// Dropped with the guard: what [`Ended::wait`] waits for.
    _ended: watch::Sender<()>,
}

/// The end of a call a stop signalled.
pub(super) struct Ended(watch::Receiver<()>);

impl Ended {
    /// Waits until the call's future is gone (its connection closed).
    pub(super) async fn wait(mut self) {
        // The sender never sends: `changed` returns when it is dropped.
        while self.0.changed().await.is_ok() {}
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers the call of `execution_id`'s attempt.
    pub(super) fn enter(&self, execution_id: &str) -> CallGuard {
        let serial = self
            .serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (stop_tx, stop_rx) = watch::channel(false);
        let (ended_tx, ended_rx) = watch::channel(());
        self.lock().insert(
            execution_id.to_string(),
            Entry {
                serial,
                stop: stop_tx,
                ended: ended_rx,
            },
        );
        CallGuard {
            calls: Arc::clone(&self.calls),
            execution_id: execution_id.to_string(),
            serial,
            stop: stop_rx,
            _ended: ended_tx,
        }
    }

    /// Signals the call of `execution_id` to stop, when this process is making one: its end.
    pub(super) fn stop(&self, execution_id: &str) -> Option<Ended> {
        let calls = self.lock();
        let entry = calls.get(execution_id)?;
        entry.stop.send_replace(true);
        Some(Ended(entry.ended.clone()))
    }

    /// Whether this process is making a call of `execution_id`.
    pub(super) fn contains(&self, execution_id: &str) -> bool {
        self.lock().contains_key(execution_id)
    }
}

impl CallGuard {
    /// Resolves when a stop signalled this call; never otherwise.
    pub(super) async fn stopped(&mut self) {
        if self.stop.wait_for(|stopped| *stopped).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        if calls
            .get(&self.execution_id)
            .is_some_and(|entry| entry.serial == self.serial)
        {
            calls.remove(&self.execution_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stop_signals_the_call_and_its_end_is_awaited() {
        let calls = InFlight::default();
        let mut guard = calls.enter("a");
        assert!(calls.contains("a"));
        assert!(calls.stop("b").is_none());
        let ended = calls.stop("a").expect("in flight");
        guard.stopped().await;
        drop(guard);
        ended.wait().await;
        assert!(!calls.contains("a"));
    }
}
