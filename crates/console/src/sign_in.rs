//! Sign-in at an identity provider (OpenID Connect's authorization-code flow with PKCE): the
//! console's port to it, [`IdentityProvider`], which the AWS adapter implements for the stack's
//! JWT issuer (`sundial_aws::oidc`). The console keeps what a login in flight needs ([`PendingLogin`]:
//! `state`, `nonce` and the PKCE verifier) in a signed, short-lived cookie of its own, sends the
//! browser to [`IdentityProvider::authorization_url`], and on the way back hands the code to
//! [`IdentityProvider::finish`], which returns who signed in and what they may do.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use sundial_service::app::auth::Scope;

/// What a login in flight must check when the browser comes back: random, made by the console
/// for each login.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingLogin {
    /// OAuth 2.0's `state`: the callback must carry it back (cross-site request forgery).
    pub state: String,
    /// OpenID Connect's `nonce`: the ID token must carry it (a replayed token fails).
    pub nonce: String,
    /// PKCE's `code_verifier` (RFC 7636); the provider sees only its S256 challenge until the
    /// code is redeemed, so an intercepted code is worth nothing.
    pub verifier: String,
}

/// Who signed in: the actor of their changes (the ID token's `sub`) and their scope, `None` when
/// their claims grant neither (the console then refuses the session).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The actor the history records.
    pub actor: String,
    /// What the session may do.
    pub scope: Option<Scope>,
}

/// Why a sign-in failed, as the login page says it (never a token or a secret).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SignInError(pub String);

/// A future of the provider.
pub type ProviderFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SignInError>> + Send + 'a>>;

/// An identity provider the console sends people to.
pub trait IdentityProvider: Send + Sync + 'static {
    /// Where the browser goes to sign in for `pending` (the provider's authorization endpoint
    /// with this client, the callback, `state`, `nonce` and the S256 challenge of the verifier).
    fn authorization_url<'a>(&'a self, pending: &'a PendingLogin) -> ProviderFuture<'a, String>;

    /// Redeems `code` for `pending`'s login and checks the ID token it brings (signature by the
    /// issuer's keys, issuer, audience, expiry, `nonce`): who signed in.
    fn finish<'a>(
        &'a self,
        pending: &'a PendingLogin,
        code: &'a str,
    ) -> ProviderFuture<'a, Identity>;

    /// The provider's name on the login page ("Sign in with …").
    fn name(&self) -> String;
}

/// An [`IdentityProvider`] held by the console's settings.
#[derive(Clone)]
pub struct Provider(pub Arc<dyn IdentityProvider>);

impl PartialEq for Provider {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Provider {}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Provider").field(&self.0.name()).finish()
    }
}
