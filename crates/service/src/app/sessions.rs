//! Console sessions signed out before they expired: the use cases the console's logout and its
//! session check call (docs/deploy.md, "The operator console"). The store keeps each signed-out
//! session until its cookie would have expired, so a logout holds across restarts and, on AWS,
//! across the API function's execution environments.

use chrono::{DateTime, Utc};
use sundial_ports::store::Store;

use super::{App, AppError};

impl<S: Store> App<S> {
    /// Records the console session `nonce` as signed out until `expires_at`, its cookie's expiry.
    pub async fn sign_out_session(
        &self,
        nonce: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<(), AppError> {
        Ok(self.store.revoke_session(nonce, expires_at).await?)
    }

    /// Whether the console session `nonce` was signed out (and its cookie has not expired yet).
    pub async fn session_signed_out(&self, nonce: &str) -> Result<bool, AppError> {
        Ok(self.store.session_revoked(nonce, self.now()).await?)
    }
}
