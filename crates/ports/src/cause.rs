//! The cause below an error: what an adapter keeps of the library error (`rusqlite::Error`, an
//! AWS SDK error, a serde error) that made an operation fail, and [`chain`], how a log line
//! prints an error with every cause below it.
//!
//! The errors of the layers ([`StoreError`](crate::store::StoreError),
//! [`QueueError`](crate::queue::QueueError), `AppError` (in `sundial-service`), …) say *what*
//! failed in their message and keep *why* as their [`source`](std::error::Error::source), so the
//! message does not repeat the cause. A log line that shows only the message would lose the why:
//! log `error = %chain(&e)` instead.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// A library error kept as the source of one of ours. Shared rather than owned so that the port
/// errors stay `Clone` (a failed batch answers every operation in it with the same error).
///
/// Two causes are equal when they read the same: tests compare errors by what they say.
#[derive(Clone)]
pub struct Cause(Arc<dyn Error + Send + Sync + 'static>);

impl Cause {
    /// Keeps `error` as a cause.
    pub fn new(error: impl Error + Send + Sync + 'static) -> Self {
        Cause(Arc::new(error))
    }
}

impl From<Box<dyn Error + Send + Sync + 'static>> for Cause {
    fn from(error: Box<dyn Error + Send + Sync + 'static>) -> Self {
        Cause(Arc::from(error))
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

/// Transparent: the cause's own source is the next link of the chain.
impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

/// An error and every cause below it, displayed as `outer: inner: root`: what a log line shows.
#[derive(Clone, Copy)]
pub struct Chain<'a>(&'a (dyn Error + 'static));

/// Displays `error` followed by its causes (see [`Chain`]).
///
/// ```
/// use sundial_ports::cause::chain;
/// use sundial_ports::store::StoreError;
///
/// let io = std::io::Error::other("disk full");
/// let error = StoreError::unavailable_because("sqlite", io);
/// assert_eq!(error.to_string(), "store unavailable: sqlite");
/// assert_eq!(chain(&error).to_string(), "store unavailable: sqlite: disk full");
/// ```
pub fn chain<'a>(error: &'a (dyn Error + 'static)) -> Chain<'a> {
    Chain(error)
}

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            write!(f, ": {cause}")?;
            next = cause.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
