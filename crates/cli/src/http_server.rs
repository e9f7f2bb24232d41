//! The HTTP server of `sundial serve`: hyper's HTTP/1 connection loop with the limits a server
//! that hostile or careless clients can reach needs, which `axum::serve` does not expose.
//!
//! * **Header-read timeout** ([`HEADER_READ_TIMEOUT`]): hyper closes a connection that has not
//!   sent a whole request head within it. The clock starts whenever the connection waits for a
//!   request, so the same limit closes idle keep-alive connections, connections that never send a
//!   byte, and slowloris clients that send a header line now and then. (A body that trickles in
//!   is bounded by the API's own body-read timeout.)
//! * **A cap on open connections** ([`Limits::from_open_files`]), derived from `RLIMIT_NOFILE`, so
//!   that however many sockets clients open, the engine's outbound calls, the database and the
//!   runtime keep file descriptors: without it, idle sockets used up the limit, the API stopped
//!   answering and scheduled runs failed with `Too many open files`. At the cap, a new connection
//!   closes the oldest *idle* one (no request in progress), so a flood of idle or slow sockets
//!   cannot keep real clients out; when every connection is busy, the new one waits (in the
//!   kernel's backlog) until one finishes. One warning a minute says that the cap bites.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Notify};
use tower::ServiceExt;

/// How long a connection may take to send a request head, counted from when it starts waiting
/// for one: also the longest an idle keep-alive connection is kept.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// File descriptors kept out of the budget for everything but sockets: stdio, the database and
/// its `-wal` and `-shm` files for each of its connections, the runtime's poll, signal and wake
/// descriptors, the listener, and name lookups.
pub(crate) const RESERVED_FILES: u64 = 64;

/// The fewest connections the cap allows, however low the open-file limit.
pub(crate) const MIN_CONNECTIONS: usize = 8;

/// The most connections the cap allows, however high the open-file limit.
pub(crate) const MAX_CONNECTIONS: usize = 10_000;

/// How often, at most, the server warns that the connection cap bites.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The server's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The most connections open at once.
    pub max_connections: usize,
    /// See [`HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
}

impl Limits {
    /// The limits for a process allowed `open_files` descriptors: of what is left after
    /// [`RESERVED_FILES`], half for API connections and half for the engine's outbound calls,
    /// within [`MIN_CONNECTIONS`] and [`MAX_CONNECTIONS`].
    pub(crate) fn from_open_files(open_files: u64) -> Limits {
        let sockets = open_files.saturating_sub(RESERVED_FILES) / 2;
        let max_connections = usize::try_from(sockets)
            .unwrap_or(MAX_CONNECTIONS)
            .clamp(MIN_CONNECTIONS, MAX_CONNECTIONS);
        Limits {
            max_connections,
            header_read_timeout: HEADER_READ_TIMEOUT,
        }
    }
}

/// Raises the soft open-file limit to the hard one (as a server should: the soft default of
/// 1,024, or 256 on macOS, is for interactive shells) and returns the limit in force.
pub(crate) fn raise_open_file_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_some() && limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!(error = %e, "could not raise the open-file limit");
        }
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// Serves `router` on `listener` within `limits` until `shutdown` resolves; then stops accepting,
/// lets requests in progress finish and closes idle connections, and returns once all are closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let connections = Arc::new(Connections::new(limits.max_connections));
    let (stop, stopped) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    'accept: loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(&connections, &e).await;
                    continue;
                }
            },
        };
        // Room for it first: by closing the oldest idle connection, or by waiting for one.
        loop {
            let changed = connections.changed.notified();
            if connections.make_room() {
                break;
            }
            tokio::select! {
                () = changed => {}
                () = &mut shutdown => break 'accept,
            }
        }
        let (id, requests, evict) = connections.open();
        tokio::spawn(serve_connection(
            stream,
            router.clone(),
            limits.header_read_timeout,
            Arc::clone(&connections),
            Connection {
                id,
                requests,
                evict,
                stop: stopped.clone(),
            },
        ));
    }
    drop(listener);
    let _ = stop.send(true);
    loop {
        let changed = connections.changed.notified();
        if connections.is_empty() {
            return;
        }
        changed.await;
    }
}

/// What a connection's task is told.
struct Connection {
    id: u64,
    /// Requests in progress on it (read by the accept loop to find idle connections).
    requests: Arc<AtomicUsize>,
    /// Fires when the accept loop needs its slot.
    evict: oneshot::Receiver<()>,
    /// Becomes true on shutdown.
    stop: watch::Receiver<bool>,
}

async fn serve_connection(
    stream: TcpStream,
    router: Router,
    header_read_timeout: Duration,
    connections: Arc<Connections>,
    connection: Connection,
) {
    let Connection {
        id,
        requests,
        mut evict,
        mut stop,
    } = connection;
    let counter = Arc::clone(&requests);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let in_progress = InProgress::start(&counter);
        let router = router.clone();
        async move {
            let response = router.oneshot(request.map(axum::body::Body::new)).await;
            drop(in_progress);
            response
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let mut conn = pin!(builder.serve_connection(TokioIo::new(stream), service));
    let (mut evicting, mut stopping) = (false, false);
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection closed");
                }
                break;
            }
            _ = &mut evict, if !evicting => {
                evicting = true;
                // This task polls the connection, so no request can start while it is here: an
                // idle connection is closed now; a busy one finishes its request first.
                if requests.load(Ordering::SeqCst) == 0 {
                    break;
                }
                conn.as_mut().graceful_shutdown();
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
    connections.close(id);
}

/// Counts a request in progress until dropped.
struct InProgress(Arc<AtomicUsize>);

impl InProgress {
    fn start(counter: &Arc<AtomicUsize>) -> InProgress {
        counter.fetch_add(1, Ordering::SeqCst);
        InProgress(Arc::clone(counter))
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections, oldest first.
struct Connections {
    limit: usize,
    state: Mutex<State>,
    /// Wakes the accept loop when a connection closes.
    changed: Notify,
}

impl State {
    /// True, and noted, if nothing was logged in the last [`WARN_EVERY`]: the one rate limit of
    /// this module's warnings.
    fn may_warn(&mut self) -> bool {
        let now = Instant::now();
        if self
            .warned_at
            .is_some_and(|at| now.duration_since(at) < WARN_EVERY)
        {
            return false;
        }
        self.warned_at = Some(now);
        true
    }
}

#[derive(Default)]
struct State {
    next_id: u64,
    open: BTreeMap<u64, Slot>,
    /// When the cap last made the server warn, and what it did since.
    warned_at: Option<Instant>,
    closed_idle: u64,
    waited: u64,
}

struct Slot {
    requests: Arc<AtomicUsize>,
    /// `None` once asked to close.
    evict: Option<oneshot::Sender<()>>,
}

impl Connections {
    fn new(limit: usize) -> Connections {
        Connections {
            limit,
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True if a connection may open now. Otherwise asks the oldest idle connection to close
    /// (unless one is closing already) and the caller waits for [`Connections::changed`].
    fn make_room(&self) -> bool {
        let mut state = self.lock();
        if state.open.len() < self.limit {
            return true;
        }
        let closing = state.open.values().any(|slot| slot.evict.is_none());
        if !closing {
            let idle = state
                .open
                .values_mut()
                .find(|slot| slot.requests.load(Ordering::SeqCst) == 0);
            match idle.and_then(|slot| slot.evict.take()) {
                Some(evict) => {
                    let _ = evict.send(());
                    state.closed_idle += 1;
                }
                None => state.waited += 1,
            }
        }
        self.warn(&mut state);
        false
    }

    /// Logs, at most once per [`WARN_EVERY`], that the cap bites and what it did.
    fn warn(&self, state: &mut State) {
        if !state.may_warn() {
            return;
        }
        tracing::warn!(
            limit = self.limit,
            closed_idle = state.closed_idle,
            waited_for_busy = state.waited,
            "connection limit reached: idle connections are closed to admit new ones, and new ones wait while all are busy; the limit is half the open-file limit (ulimit -n) beyond 64, so raise that to allow more"
        );
        state.closed_idle = 0;
        state.waited = 0;
    }

    fn open(&self) -> (u64, Arc<AtomicUsize>, oneshot::Receiver<()>) {
        let mut state = self.lock();
        let id = state.next_id;
        state.next_id += 1;
        let requests = Arc::new(AtomicUsize::new(0));
        let (evict, evicted) = oneshot::channel();
        state.open.insert(
            id,
            Slot {
                requests: Arc::clone(&requests),
                evict: Some(evict),
            },
        );
        (id, requests, evicted)
    }

    fn close(&self, id: u64) {
        self.lock().open.remove(&id);
        self.changed.notify_one();
    }

    fn is_empty(&self) -> bool {
        self.lock().open.is_empty()
    }
}

/// An `accept` that failed: a connection that went away before it was accepted is nothing; out of
/// file descriptors (the engine's calls took them) or anything else is logged (at most once a
/// minute) and retried shortly.
async fn accept_failed(connections: &Connections, error: &std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    if connections.lock().may_warn() {
        tracing::error!(error = %error, "accepting a connection failed; retrying");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_half_the_spare_descriptors_to_the_engine() {
        let cases = [
            (0, MIN_CONNECTIONS),
            (64, MIN_CONNECTIONS),
            (128, 32),
            (256, 96),
            (1024, 480),
            (65_536, 10_000),
            (u64::MAX, MAX_CONNECTIONS),
        ];
        for (open_files, connections) in cases {
            let limits = Limits::from_open_files(open_files);
            assert_eq!(limits.max_connections, connections, "{open_files}");
            assert_eq!(limits.header_read_timeout, HEADER_READ_TIMEOUT);
        }
    }

    #[test]
    fn at_the_cap_the_oldest_idle_connection_is_asked_to_close() {
        let connections = Connections::new(2);
        assert!(connections.make_room());
        let (first, first_requests, mut first_evict) = connections.open();
        let (_, second_requests, mut second_evict) = connections.open();
        first_requests.fetch_add(1, Ordering::SeqCst);
        // Full: the first is busy, so the second (idle) is asked to close.
        assert!(!connections.make_room());
        assert!(second_evict.try_recv().is_ok());
        assert!(first_evict.try_recv().is_err());
        // While it closes, nobody else is asked.
        assert!(!connections.make_room());
        second_requests.fetch_add(1, Ordering::SeqCst);
        connections.close(first);
        assert!(
            connections.make_room(),
            "a closed connection frees its slot"
        );
        drop(second_requests);
    }
}
