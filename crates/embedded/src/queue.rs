//! The [`Queue`] port on SQLite, in the same database file and over the same connection as the
//! store, so `sundial serve` needs neither a second file nor a broker.
//!
//! **Why a queue in the database.** A message sent is a committed row: it survives a crash of the
//! process like the store's writes do (WAL, `synchronous=NORMAL`), and a message received but never
//! acknowledged — its receiver died — is still a row, hidden only until its visibility timeout ends,
//! when the next `receive` delivers it again. That is the at-least-once delivery of SQS, the
//! production queue, and no more: the engine is idempotent because SQS forces it to be, and this
//! queue does not hide that by being kinder.
//!
//! **Named queues, one table.** `dispatch` and `notify` are rows of `queue_messages` told apart by
//! their `queue` column; every statement filters by it, so queues never see each other's messages,
//! receipts or dead letters.
//!
//! **Receipts change per delivery.** A receipt is `"{message id}:{receive count}"` and is stored
//! with the message; ack and postpone match (id, queue, receipt). A receiver whose visibility timeout
//! expired and whose message went to another receiver therefore holds a stale receipt and cannot
//! delete work it no longer owns. Message ids are `AUTOINCREMENT`, never reused, so neither are
//! receipts.
//!
//! **Atomic receive.** Receiving selects visible rows and hides them (new visibility, count and
//! receipt) in one `IMMEDIATE` transaction, so two receivers — in this process, serialised by the
//! connection mutex anyway, or in another process opening the same file — never take the same
//! delivery. The same transaction first moves messages that were delivered
//! [`Queue::max_receives`] times and are visible again to `queue_dead_letters`, where
//! [`Queue::dead_letter`] also moves a poison message at once.
//!
//! Times come from the injected [`Clock`], as integer milliseconds, like every time in the store;
//! sub-millisecond delays round up so a message is never visible early.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{params, Connection};
use sundial_ports::clock::Clock;
use sundial_ports::queue::{Delivery, Queue, QueueError, DEFAULT_MAX_RECEIVES, MAX_DELAY};

use crate::writer::Db;

/// A named [`Queue`] in a SQLite database, made by [`SqliteStore::queue`](crate::SqliteStore::queue).
///
/// Cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct SqliteQueue {
    db: Db,
    name: Arc<str>,
    clock: Arc<dyn Clock>,
    max_receives: u32,
}

impl fmt::Debug for SqliteQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteQueue")
            .field("name", &self.name)
            .field("max_receives", &self.max_receives)
            .finish_non_exhaustive()
    }
}

impl SqliteQueue {
    pub(crate) fn new(db: Db, name: &str, clock: Arc<dyn Clock>) -> Self {
        SqliteQueue {
            db,
            name: Arc::from(name),
            clock,
            max_receives: DEFAULT_MAX_RECEIVES,
        }
    }

    /// The same queue with messages dead-lettered after `max_receives` deliveries (0 is read as 1).
    pub fn with_max_receives(mut self, max_receives: u32) -> Self {
        self.max_receives = max_receives.max(1);
        self
    }

    /// Makes every message that was received and never acknowledged visible at once; returns how
    /// many. For the one engine process that holds the data directory's lock, at its start: no
    /// other receiver is alive then, so what an earlier process received died with it, and
    /// waiting out its visibility timeout would only delay recovery. A message brought back
    /// early is at worst delivered once more, which every consumer tolerates.
    pub async fn release_received(&self) -> Result<usize, QueueError> {
        let now = self.now_ms();
        self.run(move |conn, queue| {
            conn.execute(
                "UPDATE queue_messages SET visible_at = ?1
                 WHERE queue = ?2 AND receipt IS NOT NULL AND visible_at > ?1",
                params![now, queue],
            )
            .map_err(db)
        })
        .await
    }

    /// The queue's name, as given to [`SqliteStore::queue`](crate::SqliteStore::queue).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }

    /// Runs `op` with this queue's name on the connection, on tokio's blocking pool.
    async fn run<T, F>(&self, op: F) -> Result<T, QueueError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &str) -> Result<T, QueueError> + Send + 'static,
    {
        let name = Arc::clone(&self.name);
        self.db
            .run(QueueError::unavailable, move |conn| op(conn, &name))
            .await
    }
}

/// Any SQLite failure: the operation may be retried, nothing was half-done (each operation is one
/// statement or one transaction).
fn db(err: rusqlite::Error) -> QueueError {
    QueueError::unavailable_because("sqlite", err)
}

/// A duration in whole milliseconds, rounded up so nothing becomes visible early, saturating.
fn ceil_ms(duration: Duration) -> i64 {
    let ms = duration.as_nanos().div_ceil(1_000_000);
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// The receipt of a message's `receive_count`-th delivery.
fn receipt(id: i64, receive_count: u32) -> String {
    format!("{id}:{receive_count}")
}

/// The message id a receipt names; `None` for text this queue never hands out.
fn receipt_id(receipt: &str) -> Option<i64> {
    receipt.split_once(':')?.0.parse().ok()
}

impl Queue for SqliteQueue {
    async fn send(&self, body: &str, delay: Duration) -> Result<(), QueueError> {
        if delay > MAX_DELAY {
            return Err(QueueError::DelayTooLong(delay));
        }
        let body = body.to_owned();
        let now = self.now_ms();
        let visible_at = now.saturating_add(ceil_ms(delay));
        self.run(move |conn, queue| {
            conn.prepare_cached(
                "INSERT INTO queue_messages (queue, body, visible_at, receive_count, receipt, sent_at)
                 VALUES (?1, ?2, ?3, 0, NULL, ?4)",
            )
            .and_then(|mut insert| insert.execute(params![queue, body, visible_at, now]))
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn receive(&self, max: usize, visibility: Duration) -> Result<Vec<Delivery>, QueueError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let now = self.now_ms();
        let hidden_until = now.saturating_add(ceil_ms(visibility));
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let max_receives = self.max_receives;
        self.run(move |conn, queue| receive(conn, queue, now, hidden_until, limit, max_receives))
            .await
    }

    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        let id = receipt_id(receipt).ok_or(QueueError::StaleReceipt)?;
        let receipt = receipt.to_owned();
        self.run(move |conn, queue| {
            let deleted = conn
                .prepare_cached(
                    "DELETE FROM queue_messages WHERE id = ?1 AND queue = ?2 AND receipt = ?3",
                )
                .and_then(|mut delete| delete.execute(params![id, queue, receipt]))
                .map_err(db)?;
            if deleted == 0 {
                return Err(QueueError::StaleReceipt);
            }
            Ok(())
        })
        .await
    }

    async fn postpone(&self, receipt: &str, delay: Duration) -> Result<(), QueueError> {
        let id = receipt_id(receipt).ok_or(QueueError::StaleReceipt)?;
        let receipt = receipt.to_owned();
        let visible_at = self.now_ms().saturating_add(ceil_ms(delay));
        self.run(move |conn, queue| {
            let updated = conn
                .prepare_cached(
                    "UPDATE queue_messages SET visible_at = ?1
                     WHERE id = ?2 AND queue = ?3 AND receipt = ?4",
                )
                .and_then(|mut update| update.execute(params![visible_at, id, queue, receipt]))
                .map_err(db)?;
            if updated == 0 {
                return Err(QueueError::StaleReceipt);
            }
            Ok(())
        })
        .await
    }

    async fn next_visible_in(&self) -> Result<Option<Duration>, QueueError> {
        let earliest: Option<i64> = self
            .run(|conn, queue| {
                conn.prepare_cached("SELECT MIN(visible_at) FROM queue_messages WHERE queue = ?1")
                    .and_then(|mut select| select.query_row([queue], |row| row.get(0)))
                    .map_err(db)
            })
            .await?;
        // Read the clock after the query: the answer is never later than the truth.
        let now = self.now_ms();
        Ok(earliest
            .map(|at| Duration::from_millis(u64::try_from(at.saturating_sub(now)).unwrap_or(0))))
    }

    /// Moves the row to `queue_dead_letters` in one transaction. The reason is not stored (the
    /// caller logs it): the table keeps what a redrive needs, the body.
    async fn dead_letter(&self, delivery: &Delivery, _reason: &str) -> Result<(), QueueError> {
        let id = receipt_id(&delivery.receipt).ok_or(QueueError::StaleReceipt)?;
        let receipt = delivery.receipt.clone();
        let now = self.now_ms();
        self.run(move |conn, queue| {
            let tx = conn.savepoint().map_err(db)?;
            let moved = tx
                .prepare_cached(
                    "INSERT INTO queue_dead_letters
                         (queue, message_id, body, receive_count, sent_at, dead_at)
                     SELECT queue, id, body, receive_count, sent_at, ?4 FROM queue_messages
                     WHERE id = ?1 AND queue = ?2 AND receipt = ?3",
                )
                .and_then(|mut insert| insert.execute(params![id, queue, receipt, now]))
                .map_err(db)?;
            if moved == 0 {
                return Err(QueueError::StaleReceipt);
            }
            tx.prepare_cached("DELETE FROM queue_messages WHERE id = ?1 AND queue = ?2")
                .and_then(|mut delete| delete.execute(params![id, queue]))
                .map_err(db)?;
            tx.commit().map_err(db)
        })
        .await
    }

    async fn dead_letters(&self, max: usize) -> Result<Vec<String>, QueueError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        self.run(move |conn, queue| {
            conn.prepare_cached(
                "SELECT body FROM queue_dead_letters WHERE queue = ?1 ORDER BY id LIMIT ?2",
            )
            .and_then(|mut select| {
                select
                    .query_map(params![queue, limit], |row| row.get(0))?
                    .collect()
            })
            .map_err(db)
        })
        .await
    }

    fn max_receives(&self) -> u32 {
        self.max_receives
    }
}

/// Dead-letters the visible messages delivered `max_receives` times, then takes up to `limit` of
/// the remaining visible ones, hiding each until `hidden_until` — all in one `IMMEDIATE`
/// transaction.
fn receive(
    conn: &mut Connection,
    queue: &str,
    now: i64,
    hidden_until: i64,
    limit: i64,
    max_receives: u32,
) -> Result<Vec<Delivery>, QueueError> {
    let tx = conn.savepoint().map_err(db)?;
    tx.prepare_cached(
        "INSERT INTO queue_dead_letters (queue, message_id, body, receive_count, sent_at, dead_at)
         SELECT queue, id, body, receive_count, sent_at, ?2 FROM queue_messages
         WHERE queue = ?1 AND visible_at <= ?2 AND receive_count >= ?3
         ORDER BY visible_at, id",
    )
    .and_then(|mut insert| insert.execute(params![queue, now, max_receives]))
    .map_err(db)?;
    tx.prepare_cached(
        "DELETE FROM queue_messages WHERE queue = ?1 AND visible_at <= ?2 AND receive_count >= ?3",
    )
    .and_then(|mut delete| delete.execute(params![queue, now, max_receives]))
    .map_err(db)?;

    let visible: Vec<(i64, String, u32)> = tx
        .prepare_cached(
            "SELECT id, body, receive_count FROM queue_messages
             WHERE queue = ?1 AND visible_at <= ?2
             ORDER BY visible_at, id LIMIT ?3",
        )
        .and_then(|mut select| {
            select
                .query_map(params![queue, now, limit], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?
                .collect()
        })
        .map_err(db)?;

    let mut deliveries = Vec::with_capacity(visible.len());
    {
        let mut hide = tx
            .prepare_cached(
                "UPDATE queue_messages SET visible_at = ?1, receive_count = ?2, receipt = ?3
                 WHERE id = ?4",
            )
            .map_err(db)?;
        for (id, body, count) in visible {
            let receive_count = count.saturating_add(1);
            let handle = receipt(id, receive_count);
            hide.execute(params![hidden_until, receive_count, handle, id])
                .map_err(db)?;
            deliveries.push(Delivery {
                body,
                receipt: handle,
                receive_count,
            });
        }
    }
    tx.commit().map_err(db)?;
    Ok(deliveries)
}
