//! Console sessions signed out before they expired (docs/deploy.md, "The operator console").
//!
//! A console session is a signed cookie that nothing stores; logging out records the session's
//! nonce here until the cookie would have expired, so the cookie is refused from then on by every
//! process that reads the same store: a restart of `sundial serve`, another Lambda execution
//! environment, a cold start. After `expires_at` the record may be forgotten (DynamoDB's TTL
//! deletes it), as the cookie is refused for its expiry then anyway.

use std::future::Future;

use chrono::{DateTime, Utc};

use super::StoreError;

/// The store of signed-out console sessions.
///
/// Implementations must be safe to call concurrently and must make each method atomic.
pub trait SessionStore: Send + Sync + 'static {
    /// Records the session `nonce` as signed out until `expires_at` (idempotent: a second
    /// revocation of the same nonce is no error).
    fn revoke_session(
        &self,
        nonce: &str,
        expires_at: DateTime<Utc>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Whether the session `nonce` was signed out and `now` is before the expiry it was recorded
    /// with.
    fn session_revoked(
        &self,
        nonce: &str,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}
