//! Job ids.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::fields::quote;
use super::FieldError;

/// The longest job id.
const MAX_LEN: usize = 128;

/// A job's id: 1–128 characters of `A–Z a–z 0–9 _ . -`.
///
/// `~` is excluded because execution ids use it to separate the job id from the fire
/// (`{jobId}~20240101T120000Z`), and `/` because the id is a URL path segment.
///
/// ```
/// use sundial_core::job::JobId;
/// assert_eq!(JobId::parse("20220125").unwrap().as_str(), "20220125");
/// assert_eq!(JobId::parse("a~b").unwrap_err().path, "jobId");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(String);

impl JobId {
    /// Parses a job id; errors have the path `jobId`.
    pub fn parse(text: &str) -> Result<JobId, FieldError> {
        if is_valid(text) {
            Ok(JobId(text.to_string()))
        } else {
            Err(FieldError::new(
                "jobId",
                format!(
                    "expected 1-{MAX_LEN} characters of A-Z, a-z, 0-9, \"_\", \".\", \"-\", got {}",
                    quote(text)
                ),
            ))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// True for 1–`max` characters of `A–Z a–z 0–9 _ . -`; shared with trigger ids.
pub(crate) fn is_id_text(text: &str, max: usize) -> bool {
    !text.is_empty()
        && text.len() <= max
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

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
