//! WAL checkpoints on a thread of their own.
//!
//! SQLite's automatic checkpoint runs in the commit that crosses its threshold, on the writer
//! thread: every batch waiting behind that commit waits for the copy of the log into the database
//! file and its syncs. Under load that was about a fifth of the writer's time. Here a third
//! connection copies the log in the background (`PASSIVE`: it never blocks the writer or a
//! reader), and the writer keeps an automatic checkpoint only as a backstop, at
//! [`WRITER_CHECKPOINT_PAGES`]. By the time the log reaches it, the background has already copied
//! nearly all of it, so that checkpoint is short; it is what lets the log start over from its
//! beginning, which SQLite does only after a checkpoint has caught up with the last commit.

use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;

/// How often the background thread copies the log into the database file.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// The log size, in pages, at which the writer checkpoints itself (SQLite's default is 1,000):
/// at 4 KiB a page, the log stays under about 40 MiB.
pub(crate) const WRITER_CHECKPOINT_PAGES: i64 = 10_000;

/// Keeps the checkpoint thread running; it stops once every clone is dropped.
#[derive(Clone, Debug)]
pub(crate) struct Checkpoints {
    _alive: mpsc::Sender<()>,
}

/// Starts checkpointing the database `conn` (a read-write connection of its own) every
/// [`INTERVAL`].
pub(crate) fn start(conn: Connection) -> std::io::Result<Checkpoints> {
    let (alive, stopped) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("sundial-sqlite-checkpoint".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                // (busy, frames in the log, frames copied); a busy or failed pass is simply
                // retried on the next tick, and the writer's own checkpoint bounds the log.
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                    tracing::debug!(error = %e, "background WAL checkpoint failed");
                }
            }
        })?;
    Ok(Checkpoints { _alive: alive })
}
