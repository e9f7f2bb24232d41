//! The session a console request is read under: who reads, with what scope, and the CSRF token
//! its forms carry. Made and checked by the `auth` module; every page reads it.

use axum::http::StatusCode;
use sundial_service::app::auth::{constant_time_eq, Scope};
use sundial_service::{Actor, ChangeBy};

use crate::PageError;

/// The session of the request, put in the request's extensions by `auth::require_session`.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// The CSRF token forms must carry.
    pub csrf: String,
    /// Whether the reader logged in (token mode), so the page offers to log out.
    pub signed_in: bool,
    /// The name of the token the reader logged in with (`anonymous` in open mode): the actor of
    /// the session's changes.
    pub actor: Actor,
    /// What the token may do.
    pub scope: Scope,
    /// The debug mode in force when the request came (the banner of every page).
    pub debug_mode: sundial_core::debug_mode::DebugMode,
    /// The cookie's nonce: what a logout stores as signed out.
    pub nonce: String,
    /// When the cookie expires (Unix seconds).
    pub expiry: i64,
}

impl Session {
    /// A change by this session's reader.
    pub(crate) fn change(&self) -> ChangeBy {
        ChangeBy::new(self.actor.clone())
    }

    /// Refuses a form whose CSRF token is not this session's.
    pub(crate) fn check_csrf(&self, token: &str) -> Result<(), PageError> {
        if constant_time_eq(token.as_bytes(), self.csrf.as_bytes()) {
            Ok(())
        } else {
            Err(PageError::new(
                StatusCode::FORBIDDEN,
                "The form's CSRF token is missing or not this session's: reload the page and try again.",
            ))
        }
    }
}
