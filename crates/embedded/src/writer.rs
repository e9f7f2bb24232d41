//! The connection threads: the writer owns the read-write connection and runs every write of the
//! store and the queues in batches, one transaction per batch (group commit; see the crate docs);
//! a reader owns a read-only connection to the same file and runs reads, each in its own read
//! transaction, beside the writer (WAL lets readers go on while a write commits).

use std::sync::mpsc;

use rusqlite::Connection;

/// The most operations one transaction holds. Large enough to amortise a commit over a burst of
/// fires; small enough that one batch's wait for its commit stays short.
pub(crate) const MAX_BATCH: usize = 128;

/// A handle to the writer thread; cloning shares it. The thread ends when the last handle is
/// dropped, closing the connection.
#[derive(Clone, Debug)]
pub(crate) struct Db {
    sender: mpsc::Sender<Box<dyn Pending>>,
}

/// An operation waiting for the writer, with the channel its result goes back on.
trait Pending: Send {
    /// Runs the operation inside a savepoint of the open batch transaction; returns what answers
    /// the caller once the batch's commit is known (`Some(error)` if it failed).
    /// Without `savepoint` (the reader, whose operations write nothing and read in one statement
    /// or open their own read transaction) the operation runs as it is.
    fn run(
        self: Box<Self>,
        conn: &mut Connection,
        savepoint: bool,
    ) -> Box<dyn FnOnce(Option<String>) + Send>;
    /// Answers the caller without running: the batch transaction could not start.
    fn fail(self: Box<Self>, why: String);
}

struct Operation<T, E, F> {
    op: F,
    unavailable: fn(String) -> E,
    reply: tokio::sync::oneshot::Sender<Result<T, E>>,
}

impl<T, E, F> Pending for Operation<T, E, F>
where
    T: Send + 'static,
    E: Send + 'static,
    F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
{
    fn run(
        self: Box<Self>,
        conn: &mut Connection,
        savepoint: bool,
    ) -> Box<dyn FnOnce(Option<String>) + Send> {
        let Operation {
            op,
            unavailable,
            reply,
        } = *self;
        let result = if savepoint {
            in_savepoint(conn, op, unavailable)
        } else {
            op(conn)
        };
        Box::new(move |commit_error| {
            let result = match commit_error {
                None => result,
                Some(why) => Err(unavailable(why)),
            };
            let _ = reply.send(result);
        })
    }

    fn fail(self: Box<Self>, why: String) {
        let _ = self.reply.send(Err((self.unavailable)(why)));
    }
}

/// Runs `op` inside a savepoint of the open transaction: a failed operation leaves nothing
/// behind, the batch's other operations keep their writes. The savepoint statements are prepared
/// once per connection.
fn in_savepoint<T, E>(
    conn: &mut Connection,
    op: impl FnOnce(&mut Connection) -> Result<T, E>,
    unavailable: fn(String) -> E,
) -> Result<T, E> {
    let run =
        |conn: &Connection, sql: &str| conn.prepare_cached(sql).and_then(|mut s| s.execute([]));
    if let Err(e) = run(conn, "SAVEPOINT operation") {
        return Err(unavailable(format!("SQLite: starting a savepoint: {e}")));
    }
    let result = op(conn);
    let ended = if result.is_ok() {
        run(conn, "RELEASE operation")
    } else {
        run(conn, "ROLLBACK TO operation").and_then(|_| run(conn, "RELEASE operation"))
    };
    match ended {
        Ok(_) => result,
        Err(e) => Err(unavailable(format!("SQLite: ending a savepoint: {e}"))),
    }
}

impl Db {
    /// Starts the writer thread on `conn`.
    pub(crate) fn start(conn: Connection) -> std::io::Result<Db> {
        Db::spawn(conn, "sundial-sqlite-writer", true)
    }

    /// Starts a reader thread on `conn` (opened read-only): no batch transaction, each operation
    /// is its own read transaction.
    pub(crate) fn start_reader(conn: Connection) -> std::io::Result<Db> {
        Db::spawn(conn, "sundial-sqlite-reader", false)
    }

    fn spawn(conn: Connection, name: &str, batched: bool) -> std::io::Result<Db> {
        let (sender, receiver) = mpsc::channel::<Box<dyn Pending>>();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if batched {
                    write_loop(conn, &receiver);
                } else {
                    read_loop(conn, &receiver);
                }
            })?;
        Ok(Db { sender })
    }

    /// Runs `op` in the writer's next batch and returns its result once that batch is committed.
    /// A stopped writer, or a batch that could not commit, is `unavailable(message)`.
    pub(crate) async fn run<T, E, F>(&self, unavailable: fn(String) -> E, op: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let operation = Box::new(Operation {
            op,
            unavailable,
            reply,
        });
        if self.sender.send(operation).is_err() {
            return Err(unavailable("the SQLite writer thread has stopped".into()));
        }
        match answer.await {
            Ok(result) => result,
            Err(_) => {
                tracing::error!("the SQLite writer dropped an operation");
                Err(unavailable(
                    "the SQLite writer stopped before answering".into(),
                ))
            }
        }
    }
}

fn read_loop(mut conn: Connection, receiver: &mpsc::Receiver<Box<dyn Pending>>) {
    while let Ok(operation) = receiver.recv() {
        // Each statement (or the operation's own savepoint) is a read transaction: it sees every
        // batch committed before it started, so a read after an answered write sees that write.
        let answer = operation.run(&mut conn, false);
        answer(None);
    }
}

fn write_loop(mut conn: Connection, receiver: &mpsc::Receiver<Box<dyn Pending>>) {
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            let why = format!("SQLite: starting a transaction: {e}");
            for operation in batch {
                operation.fail(why.clone());
            }
            continue;
        }
        let answers: Vec<_> = batch
            .into_iter()
            .map(|op| op.run(&mut conn, true))
            .collect();
        let outcome = match conn.execute_batch("COMMIT") {
            Ok(()) => None,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                tracing::error!(error = %e, "SQLite commit failed; the batch's operations fail");
                Some(format!("SQLite: commit failed: {e}"))
            }
        };
        for answer in answers {
            answer(outcome.clone());
        }
    }
}
