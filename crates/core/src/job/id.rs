//! Job ids.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::fields::quote;
use super::FieldError;

/// The longest job id.
const MAX_LEN: usize = super::document::MAX_JOB_ID_CHARS;

/// A job's id: 1–128 characters of `A–Z a–z 0–9 _ . -`.
///
/// `~` is excluded because execution ids use it to separate the job id from the fire
/// (`{jobId}~20240101T120000Z`), and `/` because the id is a URL path segment.
///
/// ```
/// use sundial_core::job::JobId;
/// assert_eq!(JobId::parse("20220125").unwrap().as_str(), "20220125");
/// assert_eq!(JobId::parse("a~b").unwrap_err().path, "jobId");
/// assert_eq!(JobId::parse("simulate").unwrap_err().path, "jobId");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(String);

impl JobId {
    /// Parses a job id; errors have the path `jobId`.
    pub fn parse(text: &str) -> Result<JobId, FieldError> {
        if RESERVED.contains(&text) {
            return Err(FieldError::new(
                "jobId",
                format!(
                    "{} is reserved: POST /jobs/{text} is a route of its own",
                    quote(text)
                ),
            ));
        }
        if is_valid(text) {
            Ok(JobId(text.to_string()))
        } else {
            Err(FieldError::new(
                "jobId",
                format!("expected 1-{MAX_LEN} {ID_RULE}, got {}", quote(text)),
            ))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// True for 1–`max` characters of `A–Z a–z 0–9 _ . -`, other than `.` and `..`; shared with
/// trigger ids and service names. Ids become URL path segments, file and key names, where `.` and
/// `..` mean "this" and "the parent" (RFC 3986 §5.2.4) and would be rewritten on the way.
pub(crate) fn is_id_text(text: &str, max: usize) -> bool {
    !text.is_empty()
        && text.len() <= max
        && text != "."
        && text != ".."
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Ids that are routes under `/jobs/` (`POST /jobs/simulate`), so no job can be reached by them.
pub(crate) const RESERVED: [&str; 1] = ["simulate"];

/// What [`is_id_text`] accepts, for messages.
const ID_RULE: &str =
    "characters of A-Z, a-z, 0-9, \"_\", \".\", \"-\", other than \".\" and \"..\"";

fn is_valid(text: &str) -> bool {
    is_id_text(text, MAX_LEN)
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for JobId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for JobId {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobId::parse(s)
    }
}

impl Serialize for JobId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for JobId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        JobId::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The longest service name.
const MAX_SERVICE_NAME_LEN: usize = 128;

/// The name of a service: the `{serviceName}` of `PUT /services/{serviceName}/timers` and a request's
/// `serviceName`. The same characters as a job id (it is a path segment and an index key).
///
/// ```
/// use sundial_core::job::ServiceName;
/// assert_eq!(ServiceName::parse("billing").unwrap().as_str(), "billing");
/// assert_eq!(ServiceName::parse("../").unwrap_err().path, "serviceName");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceName(String);

impl ServiceName {
    /// Parses a service name; errors have the path `serviceName`.
    pub fn parse(text: &str) -> Result<ServiceName, FieldError> {
        if is_id_text(text, MAX_SERVICE_NAME_LEN) {
            Ok(ServiceName(text.to_string()))
        } else {
            Err(FieldError::new(
                "serviceName",
                format!(
                    "expected 1-{MAX_SERVICE_NAME_LEN} {ID_RULE}, got {}",
                    quote(text)
                ),
            ))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
