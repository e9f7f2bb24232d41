//! Signed-out console sessions (`SessionStore`): one row per nonce in `revoked_sessions`, with
//! the expiry (unix milliseconds) of the cookie it signed out.

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use sundial_ports::store::StoreError;

use crate::codec::{db, millis};

pub(crate) fn revoke(
    conn: &mut Connection,
    nonce: &str,
    expires_at: &DateTime<Utc>,
    now: &DateTime<Utc>,
) -> Result<(), StoreError> {
    // The sessions that expired on their own need no record any more.
    conn.prepare_cached("DELETE FROM revoked_sessions WHERE expires_at <= ?1")
        .and_then(|mut delete| delete.execute(params![millis(now)]))
        .map_err(db)?;
    conn.prepare_cached(
        "INSERT INTO revoked_sessions (nonce, expires_at) VALUES (?1, ?2)
         ON CONFLICT (nonce) DO UPDATE SET expires_at = excluded.expires_at",
    )
    .and_then(|mut insert| insert.execute(params![nonce, millis(expires_at)]))
    .map_err(db)?;
    Ok(())
}

pub(crate) fn revoked(
    conn: &mut Connection,
    nonce: &str,
    now: &DateTime<Utc>,
) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT 1 FROM revoked_sessions WHERE nonce = ?1 AND expires_at > ?2")
        .and_then(|mut select| {
            select
                .query_row(params![nonce, millis(now)], |_| Ok(()))
                .optional()
        })
        .map(|found| found.is_some())
        .map_err(db)
}
