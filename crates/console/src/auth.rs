//! Sessions, login and CSRF tokens (docs/deploy.md, "Operator console").
//!
//! A session is a signed cookie, `EXPIRY.NONCE.NAME.SIGNATURE`, with the HMAC of the server's
//! signing secret: nothing is stored but the nonces signed out early (in the store's
//! [`App::sign_out_session`](sundial_service::App::sign_out_session), so a logout holds across restarts and Lambda execution environments), so a
//! restart keeps people signed in and a forged or altered cookie fails the signature. The CSRF token of a session is the HMAC of
//! its cookie under another label: a page embeds it in every form, and a form that does not carry
//! its own session's token is refused. With `SameSite=Strict` a cross-site form post does not even
//! carry the cookie; the token is the second lock, for browsers and proxies that get that wrong.
//! In open mode (loopback, no token) every browser gets a session at its first page, so forms are
//! protected the same way: a page on another site cannot make a local console act.

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
use sundial_service::{Actor, ChangeBy};

use crate::{view, Console, ConsoleAuth, ConsoleState, PageError};

const COOKIE: &str = "sundial_session";
const SESSION_LABEL: &str = "sundial-console-session\n";
const CSRF_LABEL: &str = "sundial-console-csrf\n";

/// The session of the request, put in the request's extensions by [`require_session`].
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
    nonce: String,
    expiry: i64,
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

impl<S: Store> Console<S> {
    fn secret(&self) -> &[u8] {
        self.app.signing_secret()
    }

    /// A new session for the token named `actor` (`anonymous` in open mode).
    fn new_session(&self, actor: &str) -> Result<(Session, String), PageError> {
        let mut nonce = [0u8; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut random| random.read_exact(&mut nonce))
            .map_err(|e| {
                PageError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("cannot start a session: {e}"),
                )
            })?;
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let lifetime = i64::try_from(self.config.session_lifetime.as_secs()).unwrap_or(i64::MAX);
        let expiry = self.app.now().timestamp().saturating_add(lifetime);
        // Token names are `A–Z a–z 0–9 _ . @ -`: hex keeps the cookie's dots its own.
        let name: String = actor.bytes().map(|b| format!("{b:02x}")).collect();
        let payload = format!("{expiry}.{nonce}.{name}");
        let signature = signing::sign(
            self.secret(),
            format!("{SESSION_LABEL}{payload}").as_bytes(),
        );
        let cookie = format!("{payload}.{signature}");
        let session = self
            .session_of(&cookie, nonce, expiry, actor)
            .ok_or_else(|| PageError::new(StatusCode::UNAUTHORIZED, "unknown token"))?;
        Ok((session, cookie))
    }

    /// The session of a signed cookie for the token named `actor`; `None` once no token has
    /// that name (a server restarted without it), so its sessions end with it.
    fn session_of(&self, cookie: &str, nonce: String, expiry: i64, actor: &str) -> Option<Session> {
        let (signed_in, scope) = match &self.config.auth {
            ConsoleAuth::Open => (false, Scope::Write),
            ConsoleAuth::Tokens(auth) => (true, auth.named(actor)?.scope),
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

    /// The session a cookie value names, if its signature holds and it has not expired or been
    /// signed out.
    fn verify(&self, cookie: &str) -> Option<Session> {
        let (payload, signature) = cookie.rsplit_once('.')?;
        let mut parts = payload.splitn(3, '.');
        let (expiry, nonce, name) = (parts.next()?, parts.next()?, parts.next()?);
        let expiry: i64 = expiry.parse().ok()?;
        let signed = format!("{SESSION_LABEL}{payload}");
        if !signing::verify(self.secret(), signed.as_bytes(), signature) {
            return None;
        }
        if expiry <= self.app.now().timestamp() {
            return None;
        }
        let actor = unhex(name)?;
        self.session_of(cookie, nonce.to_string(), expiry, &actor)
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

    fn set_cookie(&self, cookie: &str) -> HeaderValue {
        let max_age = self.config.session_lifetime.as_secs();
        let secure = if self.config.secure_cookie {
            "; Secure"
        } else {
            ""
        };
        HeaderValue::from_str(&format!(
            "{COOKIE}={cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("sundial_session=; Path=/; Max-Age=0"))
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
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// Lets the login page and the assets through; every other route needs a session. Open mode
/// starts one at the first page; token mode sends readers without one to the login page.
pub(crate) async fn require_session<S: Store>(
    State(console): State<Arc<Console<S>>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if path == "/ui/login" || path.starts_with("/ui/assets/") {
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
                    "You are logged in with the token {}, of scope read: it shows every page and changes nothing. Log in with a token of scope write to do this.",
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
            let (session, cookie) = match console.new_session(Actor::ANONYMOUS) {
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
        (ConsoleAuth::Tokens(_), _) => {
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
    login_form(StatusCode::OK, message).into_response()
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
    match console.new_session(&token.name) {
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
        ConsoleAuth::Tokens(_) => "/ui/login",
    };
    let mut response = Redirect::to(to).into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, console.clear_cookie());
    Ok(response)
}
