//! What the console's router tests and its render bench share: the router as `sundial serve`
//! mounts it with no token, and the session cookie a page sets.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Response};
use axum::Router;
use sundial_console::{ConsoleAuth, ConsoleConfig};
use sundial_service::ports::store::Store;
use sundial_service::App;

/// The console over `app`, open (no token), sessions lasting an hour.
pub(crate) fn open_router<S: Store>(app: Arc<App<S>>) -> Router {
    sundial_console::router(
        app,
        ConsoleConfig {
            auth: ConsoleAuth::Open,
            session_lifetime: Duration::from_secs(3600),
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
