//! What the console's router tests and its render bench share: the router as `sundial serve`
//! mounts it with no token, the session cookie and CSRF token a page gives, and form encoding.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Response};
use axum::Router;
use sundial_console::{ConsoleAuth, ConsoleConfig};
use sundial_ports::store::Store;
use sundial_service::App;

/// The console over `app`, open (no token), sessions lasting an hour.
pub(crate) fn open_router<S: Store>(app: Arc<App<S>>) -> Router {
    sundial_console::router(
        app,
        ConsoleConfig {
            auth: ConsoleAuth::Open,
            session_lifetime: Duration::from_secs(3600),
            secure_cookie: false,
        },
    )
}

/// `name=value` of the cookie `response` sets, as a browser sends it back.
pub(crate) fn session_cookie(response: &Response<Body>) -> String {
    response.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

/// The CSRF token a page's forms carry.
pub(crate) fn csrf_of(html: &str) -> String {
    html.split(r#"name="csrf" value=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned()
}

/// `text` form-encoded (every byte but the unreserved ones as `%XX`).
pub(crate) fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
