//! RFC 3339 (de)serialisation of timestamps for serde-derived types. Core's chrono is built without
//! its `serde` feature, and this keeps the wire form explicit: UTC, `Z`, sub-seconds only when present.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// The wire form of a timestamp.
pub(crate) fn format(time: &DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn parse<E: serde::de::Error>(text: &str) -> Result<DateTime<Utc>, E> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| E::custom(format!("invalid RFC 3339 time {text:?}: {e}")))
}

/// `#[serde(with = "rfc3339")]` for `DateTime<Utc>`.
pub(crate) mod rfc3339 {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(time: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(time))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text)
    }
}

/// `#[serde(default, with = "option_rfc3339")]` for `Option<DateTime<Utc>>`.
pub(crate) mod option_rfc3339 {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        time: &Option<DateTime<Utc>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match time {
            Some(time) => s.serialize_str(&format(time)),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => parse(&text).map(Some),
            None => Ok(None),
        }
    }
}
