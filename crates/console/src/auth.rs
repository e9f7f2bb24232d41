//! Sessions, login and CSRF tokens (docs/deploy.md, "Operator console").
//!
//! A session is a signed cookie, `EXPIRY.NONCE.NAME.SCOPE.SIGNATURE`, with the HMAC of the server's
//! signing secret: nothing is stored but the nonces signed out early (in the store's
//! [`App::sign_out_session`](sundial_service::App::sign_out_session), so a logout holds across restarts and Lambda execution environments), so a
//! restart keeps people signed in and a forged or altered cookie fails the signature. The CSRF token of a session is the HMAC of
//! its cookie under another label: a page embeds it in every form, and a form that does not carry
//! its own session's token is refused. With `SameSite=Strict` a cross-site form post does not even
//! carry the cookie; the token is the second lock, for browsers and proxies that get that wrong.
//! In open mode (loopback, no token) every browser gets a session at its first page, so forms are
//! protected the same way: a page on another site cannot make a local console act.
//!
//! With an identity provider ([`ConsoleAuth::SignIn`]) the login page sends the browser to the
//! provider with a fresh `state`, `nonce` and PKCE verifier, kept meanwhile in a second signed
//! cookie (`sundial_login`: `SameSite=Lax`, since the provider's redirect back is a cross-site
//! navigation, ten minutes, path `/ui/login`); the callback checks `state` against it, has the
//! provider redeem the code and check the ID token, and starts a session for the token's subject
//! with the scope its claims grant. The session cookie is `SameSite=Strict`, which a browser does
//! not send on the rest of a redirect chain that began on another site: so the callback answers
//! with a page that moves on to the console itself.

use std::io::Read;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;
use sundial_core::signing;
use sundial_ports::store::Store;
use sundial_service::app::auth::{constant_time_eq, Caller, Scope};
use sundial_service::Actor;

use crate::session::Session;
use crate::sign_in::PendingLogin;
use crate::{view, Console, ConsoleAuth, ConsoleState, PageError};

const COOKIE: &str = "sundial_session";
const SESSION_LABEL: &str = "sundial-console-session\n";
const CSRF_LABEL: &str = "sundial-console-csrf\n";
/// The cookie of a sign-in in flight at an identity provider.
const LOGIN_COOKIE: &str = "sundial_login";
const LOGIN_LABEL: &str = "sundial-console-login\n";
/// How long a sign-in at the provider may take.
const LOGIN_LIFETIME_SECONDS: i64 = 600;

impl<S: Store> Console<S> {
    fn secret(&self) -> &[u8] {
        self.app.signing_secret()
    }

    /// A new session for `actor` (a token's name, who signed in at the provider, or `anonymous`
    /// in open mode) with `scope` (a token's session reads its scope from the token instead).
    fn new_session(&self, actor: &str, scope: Scope) -> Result<(Session, String), PageError> {
        let nonce = random_hex(16)?;
        let lifetime = i64::try_from(self.config.session_lifetime.as_secs()).unwrap_or(i64::MAX);
        let expiry = self.app.now().timestamp().saturating_add(lifetime);
        // Hex keeps the cookie's dots its own, whatever the actor's name holds.
        let name = hex(actor.as_bytes());
        let payload = format!("{expiry}.{nonce}.{name}.{}", scope.name());
        let signature = signing::sign(
            self.secret(),
            format!("{SESSION_LABEL}{payload}").as_bytes(),
        );
        let cookie = format!("{payload}.{signature}");
        let session = self
            .session_of(&cookie, nonce, expiry, actor, scope)
            .ok_or_else(|| PageError::new(StatusCode::UNAUTHORIZED, "unknown token"))?;
        Ok((session, cookie))
    }

    /// The session of a signed cookie for `actor` with the `signed` scope; `None` once no token
    /// has that name (a server restarted without it), so its sessions end with it. A token's
    /// session has the token's scope now; a provider's keeps the scope it signed in with.
    fn session_of(
        &self,
        cookie: &str,
        nonce: String,
        expiry: i64,
        actor: &str,
        signed: Scope,
    ) -> Option<Session> {
        let (signed_in, scope) = match &self.config.auth {
            ConsoleAuth::Open => (false, Scope::Write),
            ConsoleAuth::Tokens(auth) => (true, auth.named(actor)?.scope),
            ConsoleAuth::SignIn(_) => (true, signed),
        };
        Some(Session {
            csrf: signing::sign(self.secret(), format!("{CSRF_LABEL}{cookie}").as_bytes()),
            signed_in,
            actor: Actor::new(actor),
            scope,
            debug_mode: self.app.cached_debug_mode(),
            nonce,
            expiry,
        })
    }

    /// The payload of a cookie `PAYLOAD.SIGNATURE` signed under `label`, if its signature holds.
    fn signed_payload<'c>(&self, label: &str, cookie: &'c str) -> Option<&'c str> {
        let (payload, signature) = cookie.rsplit_once('.')?;
        let signed = format!("{label}{payload}");
        signing::verify(self.secret(), signed.as_bytes(), signature).then_some(payload)
    }

    /// The session a cookie value names, if its signature holds and it has not expired or been
    /// signed out.
    fn verify(&self, cookie: &str) -> Option<Session> {
        let payload = self.signed_payload(SESSION_LABEL, cookie)?;
        let mut parts = payload.splitn(4, '.');
        let (expiry, nonce, name) = (parts.next()?, parts.next()?, parts.next()?);
        let scope = Scope::parse(parts.next()?)?;
        let expiry: i64 = expiry.parse().ok()?;
        if expiry <= self.app.now().timestamp() {
            return None;
        }
        let actor = unhex(name)?;
        self.session_of(cookie, nonce.to_string(), expiry, &actor, scope)
    }

    /// [`Console::verify`], then whether the session was signed out (one read of the store). A
    /// store that cannot answer refuses the session: a logout is never ignored.
    async fn verify_live(&self, cookie: &str) -> Option<Session> {
        let session = self.verify(cookie)?;
        match self.app.session_signed_out(&session.nonce).await {
            Ok(false) => Some(session),
            Ok(true) => None,
            Err(e) => {
                tracing::warn!(error = %e, "console: cannot read the signed-out sessions");
                None
            }
        }
    }

    /// Records the session as signed out until its cookie expires, for every process that reads
    /// the store.
    async fn revoke(&self, session: &Session) -> Result<(), PageError> {
        let expiry =
            chrono::DateTime::from_timestamp(session.expiry, 0).unwrap_or_else(|| self.app.now());
        self.app
            .sign_out_session(&session.nonce, expiry)
            .await
            .map_err(|e| {
                PageError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("cannot log out now ({e}): try again."),
                )
            })
    }

    /// The cookies' `Secure` attribute, when they are (on AWS).
    fn secure(&self) -> &'static str {
        if self.config.secure_cookie {
            "; Secure"
        } else {
            ""
        }
    }

    fn set_cookie(&self, cookie: &str) -> HeaderValue {
        let max_age = self.config.session_lifetime.as_secs();
        let secure = self.secure();
        HeaderValue::from_str(&format!(
            "{COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("sundial_session=; Path=/; Max-Age=0"))
    }

    /// The cookie of a sign-in in flight: `EXPIRY.STATE.NONCE.VERIFIER.SIGNATURE`, each part
    /// hex, signed like a session under its own label.
    fn login_cookie(&self, pending: &PendingLogin) -> HeaderValue {
        let expiry = self
            .app
            .now()
            .timestamp()
            .saturating_add(LOGIN_LIFETIME_SECONDS);
        let payload = format!(
            "{expiry}.{}.{}.{}",
            pending.state, pending.nonce, pending.verifier
        );
        let signature = signing::sign(self.secret(), format!("{LOGIN_LABEL}{payload}").as_bytes());
        let secure = self.secure();
        HeaderValue::from_str(&format!(
            "{LOGIN_COOKIE}={payload}.{signature}; Path=/ui/login; HttpOnly; SameSite=Lax; Max-Age={LOGIN_LIFETIME_SECONDS}{secure}"
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("sundial_login=; Path=/ui/login; Max-Age=0"))
    }

    /// The sign-in in flight a login cookie names, if its signature holds and it has not expired.
    fn pending_login(&self, cookie: &str) -> Option<PendingLogin> {
        let payload = self.signed_payload(LOGIN_LABEL, cookie)?;
        let mut parts = payload.split('.');
        let expiry: i64 = parts.next()?.parse().ok()?;
        let (state, nonce, verifier) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || expiry <= self.app.now().timestamp() {
            return None;
        }
        Some(PendingLogin {
            state: state.to_owned(),
            nonce: nonce.to_owned(),
            verifier: verifier.to_owned(),
        })
    }

    fn clear_login_cookie(&self) -> HeaderValue {
        HeaderValue::from_static(
            "sundial_login=; Path=/ui/login; HttpOnly; SameSite=Lax; Max-Age=0",
        )
    }

    fn clear_cookie(&self) -> HeaderValue {
        if self.config.secure_cookie {
            HeaderValue::from_static(
                "sundial_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure",
            )
        } else {
            HeaderValue::from_static(
                "sundial_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
            )
        }
    }
}

/// `bytes` random bytes from the system, as lower-case hex.
fn random_hex(bytes: usize) -> Result<String, PageError> {
    let mut random = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut random))
        .map_err(|e| {
            PageError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("cannot start a session: {e}"),
            )
        })?;
    Ok(hex(&random))
}

/// `bytes` as lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Text from the lower-case hex [`Console::new_session`] writes.
fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

/// Whether a request to the console changes something: every form but the login and logout,
/// the schedule preview, a bulk action's dry run, and a job's backfill and edit previews (dry
/// runs, which store nothing: a read token may ask them, as it may ask the API's).
fn changes_something(method: &Method, path: &str) -> bool {
    *method == Method::POST
        && !matches!(
            path,
            "/ui/login" | "/ui/logout" | "/ui/specs/preview" | "/ui/bulk/jobs/preview"
        )
        && !is_job_preview(path)
}

/// `/ui/jobs/{jobId}/backfill/preview` or `/ui/jobs/{jobId}/edit/preview` (a job id is one path
/// segment: its slashes come encoded).
fn is_job_preview(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    matches!(
        segments.as_slice(),
        ["", "ui", "jobs", id, "backfill" | "edit", "preview"] if !id.is_empty()
    )
}

fn cookie_of(headers: &HeaderMap) -> Option<&str> {
    named_cookie(headers, COOKIE)
}

fn named_cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(name)?.strip_prefix('='))
}

/// Lets the login page and the assets through; every other route needs a session. Open mode
/// starts one at the first page; token mode sends readers without one to the login page.
pub(crate) async fn require_session<S: Store>(
    State(console): State<Arc<Console<S>>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if matches!(path, "/ui/login" | "/ui/login/start" | "/ui/login/callback")
        || path.starts_with("/ui/assets/")
    {
        return next.run(request).await;
    }
    let cookie = cookie_of(request.headers());
    // Read (at most every few seconds) before the session is made, which shows it.
    console.app.debug_mode_now().await;
    let session = match cookie {
        Some(cookie) => console.verify_live(cookie).await,
        None => None,
    };
    if let Some(session) = session {
        if session.scope == Scope::Read && changes_something(request.method(), path) {
            return PageError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "You are logged in as {}, of scope read: it shows every page and changes nothing. Log in with scope write to do this.",
                    session.actor
                ),
            )
            .into_response();
        }
        // The API's handlers under the console (the schedule preview) see the same caller.
        request.extensions_mut().insert(Caller {
            actor: session.actor.clone(),
            scope: session.scope,
        });
        request.extensions_mut().insert(session);
        return next.run(request).await;
    }
    let had_cookie = cookie.is_some_and(|c| !c.is_empty());
    match (&console.config.auth, request.method() == Method::GET) {
        (ConsoleAuth::Open, true) => {
            let (session, cookie) = match console.new_session(Actor::ANONYMOUS, Scope::Write) {
                Ok(new) => new,
                Err(e) => return e.into_response(),
            };
            request.extensions_mut().insert(session);
            let mut response = next.run(request).await;
            response
                .headers_mut()
                .append(header::SET_COOKIE, console.set_cookie(&cookie));
            response
        }
        (ConsoleAuth::Open, false) => PageError::new(
            StatusCode::FORBIDDEN,
            "This form's session has expired: reload the page and try again.",
        )
        .into_response(),
        (ConsoleAuth::Tokens(_) | ConsoleAuth::SignIn(_), _) => {
            let to = if had_cookie {
                "/ui/login?expired=1"
            } else {
                "/ui/login"
            };
            let mut response = Redirect::to(to).into_response();
            if had_cookie {
                response
                    .headers_mut()
                    .append(header::SET_COOKIE, console.clear_cookie());
            }
            response
        }
    }
}

/// The login page's query.
#[derive(Deserialize)]
pub(crate) struct LoginQuery {
    #[serde(default)]
    expired: Option<String>,
}

/// `GET /ui/login`.
pub(crate) async fn login_page<S: Store>(
    State(console): ConsoleState<S>,
    axum::extract::Query(query): axum::extract::Query<LoginQuery>,
) -> Response {
    if console.config.auth == ConsoleAuth::Open {
        return Redirect::to("/").into_response();
    }
    let message = query
        .expired
        .map(|_| "Your session has expired or you logged out: log in again.");
    if let ConsoleAuth::SignIn(provider) = &console.config.auth {
        return sign_in_page(StatusCode::OK, &provider.0.name(), message).into_response();
    }
    login_form(StatusCode::OK, message).into_response()
}

/// The login page with an identity provider: one link to sign in there.
fn sign_in_page(status: StatusCode, provider: &str, message: Option<&str>) -> impl IntoResponse {
    let page = view::layout(
        "Log in",
        None,
        html! {
            h1 { "Log in" }
            @if let Some(message) = message {
                p.error role="alert" { (message) }
            }
            div.card {
                p { "The console signs you in at " (provider) "; what you may do comes from your account there (scope write or read)." }
                p { a.button href="/ui/login/start" { "Sign in with " (provider) } }
            }
        },
    );
    (status, page)
}

/// `GET /ui/login/start`: a new sign-in in flight, and the browser sent to the provider.
pub(crate) async fn sign_in_start<S: Store>(State(console): ConsoleState<S>) -> Response {
    let ConsoleAuth::SignIn(provider) = &console.config.auth else {
        return Redirect::to("/ui/login").into_response();
    };
    let pending = match (random_hex(16), random_hex(16), random_hex(32)) {
        (Ok(state), Ok(nonce), Ok(verifier)) => PendingLogin {
            state,
            nonce,
            verifier,
        },
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e.into_response(),
    };
    match provider.0.authorization_url(&pending).await {
        Ok(url) => {
            let mut response = Redirect::to(&url).into_response();
            response
                .headers_mut()
                .append(header::SET_COOKIE, console.login_cookie(&pending));
            response
        }
        Err(e) => {
            tracing::warn!(error = %e, "console sign-in: the provider cannot be reached");
            let message = format!("The sign-in cannot start: {e}");
            sign_in_page(StatusCode::BAD_GATEWAY, &provider.0.name(), Some(&message))
                .into_response()
        }
    }
}

/// What the provider sends back to `GET /ui/login/callback`.
#[derive(Deserialize)]
pub(crate) struct CallbackQuery {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// `GET /ui/login/callback`: the code for a session, once `state` matches the sign-in in flight
/// and the provider has checked the ID token it brings.
pub(crate) async fn sign_in_callback<S: Store>(
    State(console): ConsoleState<S>,
    headers: HeaderMap,
    axum::extract::Query(query): axum::extract::Query<CallbackQuery>,
) -> Response {
    let ConsoleAuth::SignIn(provider) = &console.config.auth else {
        return Redirect::to("/ui/login").into_response();
    };
    let name = provider.0.name();
    let refuse = |status: StatusCode, message: &str| {
        let mut response = sign_in_page(status, &name, Some(message)).into_response();
        response
            .headers_mut()
            .append(header::SET_COOKIE, console.clear_login_cookie());
        response
    };
    if let Some(error) = &query.error {
        let detail = query.error_description.as_deref().unwrap_or_default();
        tracing::warn!(error, detail, "console sign-in refused by the provider");
        return refuse(
            StatusCode::UNAUTHORIZED,
            &format!(
                "The provider did not sign you in ({error}{}{detail}).",
                if detail.is_empty() { "" } else { ": " }
            ),
        );
    }
    let Some(pending) = named_cookie(&headers, LOGIN_COOKIE).and_then(|c| console.pending_login(c))
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "This sign-in has expired or was not started here: sign in again.",
        );
    };
    let state_matches = query
        .state
        .as_deref()
        .is_some_and(|state| constant_time_eq(state.as_bytes(), pending.state.as_bytes()));
    let Some(code) = query.code.as_deref().filter(|_| state_matches) else {
        tracing::warn!("console sign-in refused: state or code missing or wrong");
        return refuse(
            StatusCode::BAD_REQUEST,
            "This sign-in's answer does not match the one started here: sign in again.",
        );
    };
    let identity = match provider.0.finish(&pending, code).await {
        Ok(identity) => identity,
        Err(e) => {
            tracing::warn!(error = %e, "console sign-in refused");
            return refuse(StatusCode::UNAUTHORIZED, &format!("Sign-in refused: {e}"));
        }
    };
    let Some(scope) = identity.scope else {
        tracing::warn!(actor = identity.actor, "console sign-in refused: no scope");
        return refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "You signed in as {}, but your account grants neither scope write nor scope read here: ask for one.",
                identity.actor
            ),
        );
    };
    tracing::info!(
        actor = identity.actor,
        scope = scope.name(),
        "console login"
    );
    match console.new_session(&identity.actor, scope) {
        Ok((_, cookie)) => {
            // A page that moves on by itself: the browser sends the new `SameSite=Strict` cookie
            // on a navigation this site starts, not on the provider's redirect chain.
            let page = view::layout(
                "Signed in",
                None,
                html! {
                    meta http-equiv="refresh" content="0; url=/";
                    h1 { "Signed in" }
                    p { "You are signed in as " (identity.actor) ". " a href="/" { "Go to the jobs" } }
                },
            );
            let mut response = (StatusCode::OK, page).into_response();
            let headers = response.headers_mut();
            headers.append(header::SET_COOKIE, console.set_cookie(&cookie));
            headers.append(header::SET_COOKIE, console.clear_login_cookie());
            response
        }
        Err(e) => e.into_response(),
    }
}

fn login_form(status: StatusCode, message: Option<&str>) -> impl IntoResponse {
    let page = view::layout(
        "Log in",
        None,
        html! {
            h1 { "Log in" }
            @if let Some(message) = message {
                p.error role="alert" { (message) }
            }
            form.card method="post" action="/ui/login" {
                label for="token" { "Access token" }
                p.hint id="token-hint" { "One of the server's API tokens (SUNDIAL_API_TOKENS or SUNDIAL_API_TOKEN). A token of scope read shows every page and changes nothing." }
                input id="token" name="token" type="password" autocomplete="current-password"
                    aria-describedby="token-hint" required autofocus;
                button type="submit" { "Log in" }
            }
        },
    );
    (status, page)
}

/// The login form.
#[derive(Deserialize)]
pub(crate) struct LoginForm {
    token: String,
}

/// `POST /ui/login`: the token for a session cookie.
pub(crate) async fn login<S: Store>(
    State(console): ConsoleState<S>,
    Form(form): Form<LoginForm>,
) -> Response {
    let ConsoleAuth::Tokens(auth) = &console.config.auth else {
        return Redirect::to("/").into_response();
    };
    // Every token compared in constant time, as the API does.
    let Some(token) = auth.find(&form.token) else {
        tracing::warn!("console login refused: wrong token");
        return login_form(StatusCode::UNAUTHORIZED, Some("Wrong token.")).into_response();
    };
    tracing::info!(actor = %token.name, "console login");
    match console.new_session(&token.name, token.scope) {
        Ok((_, cookie)) => {
            let mut response = Redirect::to("/").into_response();
            response
                .headers_mut()
                .append(header::SET_COOKIE, console.set_cookie(&cookie));
            response
        }
        Err(e) => e.into_response(),
    }
}

/// A form with only its CSRF token.
#[derive(Deserialize)]
pub(crate) struct CsrfForm {
    csrf: String,
}

/// `POST /ui/logout`: signs the session out for good and clears the cookie.
pub(crate) async fn logout<S: Store>(
    State(console): ConsoleState<S>,
    Extension(session): Extension<Session>,
    Form(form): Form<CsrfForm>,
) -> Result<Response, PageError> {
    session.check_csrf(&form.csrf)?;
    console.revoke(&session).await?;
    let to = match console.config.auth {
        ConsoleAuth::Open => "/",
        ConsoleAuth::Tokens(_) | ConsoleAuth::SignIn(_) => "/ui/login",
    };
    let mut response = Redirect::to(to).into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, console.clear_cookie());
    Ok(response)
}
