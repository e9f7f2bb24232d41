//! Durations as users write them in job definitions.
//!
//! docs/api.md accepts Go-style durations with a day unit (`0h0m2s`, `1d2h0m2s`) and ISO 8601 durations
//! (`PT2H30M`, `P1DT1H20M10S`); Temporal's JSON uses the protobuf form (`5400s`), which is Go style too.
//! One parser serves every field that takes a duration (interval, jitter, timer, timeouts) so they all
//! accept the same spellings and report errors the same way.

use std::fmt;

/// The longest duration any field accepts, in days: 100 years of 365 days. Every duration a user
/// writes (intervals, offsets, jitter, timer due times, periods and ttls, timeouts, retry intervals,
/// EventBridge `rate()`) is held to it, through [`Duration::parse`] or [`Duration::checked_from_secs`].
pub const MAX_DAYS: u64 = 36_500;

/// [`MAX_DAYS`] in milliseconds.
const MAX_MILLIS: u64 = MAX_DAYS * 86_400_000;

/// Why a duration was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Longer than [`MAX_DAYS`] days; holds the duration as written.
    #[error("duration {0:?} exceeds the maximum of {MAX_DAYS}d (100 years)")]
    TooLong(String),
    /// Not a duration in any accepted spelling; says what was expected.
    #[error("{0}")]
    Invalid(String),
}

impl From<DurationError> for String {
    fn from(e: DurationError) -> String {
        e.to_string()
    }
}

/// Units down to the millisecond: finer ones would silently round to zero, so they are refused.
const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// A non-negative span of time with millisecond resolution.
///
/// ```
/// use sundial_core::duration::Duration;
/// assert_eq!(Duration::parse("1d2h0m2s").unwrap().as_secs(), 93_602);
/// assert_eq!(Duration::parse("P1DT1H20M10S").unwrap().to_string(), "1d1h20m10s");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    millis: u64,
}

impl Duration {
    /// The empty duration.
    pub const ZERO: Duration = Duration { millis: 0 };

    /// The longest duration accepted: [`MAX_DAYS`] days.
    pub const MAX: Duration = Duration { millis: MAX_MILLIS };

    /// A duration of whole seconds, saturating at [`Duration::MAX`]; for computed values. User input
    /// goes through [`Duration::parse`] or [`Duration::checked_from_secs`], which refuse instead.
    pub fn from_secs(secs: u64) -> Self {
        Duration {
            millis: secs.saturating_mul(1000).min(MAX_MILLIS),
        }
    }

    /// A duration of whole seconds, or an error naming the maximum when it is longer than
    /// [`MAX_DAYS`] days.
    pub fn checked_from_secs(secs: u64) -> Result<Duration, DurationError> {
        match secs.checked_mul(1000) {
            Some(millis) if millis <= MAX_MILLIS => Ok(Duration { millis }),
            _ => Err(DurationError::TooLong(format!("{secs}s"))),
        }
    }

    /// A duration of milliseconds, saturating at [`Duration::MAX`].
    pub fn from_millis(millis: u64) -> Self {
        Duration {
            millis: millis.min(MAX_MILLIS),
        }
    }

    /// Milliseconds in this duration.
    pub fn as_millis(self) -> u64 {
        self.millis
    }

    /// Whole seconds in this duration (rounded down).
    pub fn as_secs(self) -> u64 {
        self.millis / 1000
    }

    /// True when the duration is a whole number of seconds.
    pub fn is_whole_seconds(self) -> bool {
        self.millis.is_multiple_of(1000)
    }

    /// Parses Go style (`45m`, `1d2h0m2s`, `1.5h`, `5400s`, `0`) or ISO 8601 (`PT2H30M`, `P1W`,
    /// `P1DT1H20M10S`). Years and months are refused: they have no fixed length.
    pub fn parse(text: &str) -> Result<Duration, DurationError> {
        let s = text.trim();
        if s.is_empty() {
            return Err(DurationError::Invalid("empty duration".into()));
        }
        if s.len() > 64 {
            return Err(DurationError::Invalid(format!(
                "duration {:?} is too long",
                truncate(s)
            )));
        }
        let millis = if s.starts_with(['P', 'p']) {
            parse_iso(s)
        } else {
            parse_go(s)
        }
        .map_err(DurationError::Invalid)?;
        if millis > MAX_MILLIS as f64 {
            return Err(DurationError::TooLong(s.to_string()));
        }
        Ok(Duration {
            millis: millis.round() as u64,
        })
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(24).collect::<String>() + "…"
}

fn parse_go(s: &str) -> Result<f64, String> {
    if s == "0" {
        return Ok(0.0);
    }
    let bad = || {
        format!("invalid duration {s:?}: expected Go style like \"1d2h30m\" or ISO 8601 like \"PT2H30M\"")
    };
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total = 0.0f64;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number: f64 = s[start..i].parse().map_err(|_| bad())?;
        let unit_start = i;
        while i < bytes.len() && !(bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let unit = &s[unit_start..i];
        let scale = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, v)| *v)
            .ok_or_else(bad)?;
        total += number * scale as f64;
    }
    Ok(total)
}

fn parse_iso(s: &str) -> Result<f64, String> {
    let bad = |why: &str| format!("invalid ISO 8601 duration {s:?}: {why}");
    let body = &s[1..];
    if body.is_empty() {
        return Err(bad("nothing after P"));
    }
    let (date, time) = match body.find(['T', 't']) {
        Some(pos) => (&body[..pos], Some(&body[pos + 1..])),
        None => (body, None),
    };
    let mut total = 0.0;
    total += iso_part(date, &[('W', 604_800_000.0), ('D', 86_400_000.0)], &bad)?;
    if let Some(time) = time {
        if time.is_empty() {
            return Err(bad("nothing after T"));
        }
        total += iso_part(
            time,
            &[('H', 3_600_000.0), ('M', 60_000.0), ('S', 1_000.0)],
            &bad,
        )?;
    }
    Ok(total)
}

fn iso_part(
    part: &str,
    units: &[(char, f64)],
    bad: &dyn Fn(&str) -> String,
) -> Result<f64, String> {
    let mut total = 0.0;
    let mut number = String::new();
    let mut next_unit = 0;
    for c in part.chars() {
        if c.is_ascii_digit() || c == '.' || c == ',' {
            number.push(if c == ',' { '.' } else { c });
            continue;
        }
        let upper = c.to_ascii_uppercase();
        if (upper == 'Y' || upper == 'M') && units[0].0 == 'W' {
            return Err(bad(
                "years and months have no fixed length; use weeks or days",
            ));
        }
        let pos = units[next_unit..]
            .iter()
            .position(|(u, _)| *u == upper)
            .ok_or_else(|| bad(&format!("unexpected {c:?}")))?;
        let value: f64 = number
            .parse()
            .map_err(|_| bad(&format!("missing number before {c:?}")))?;
        total += value * units[next_unit + pos].1;
        next_unit += pos + 1;
        number.clear();
    }
    if !number.is_empty() {
        return Err(bad("number without a unit"));
    }
    Ok(total)
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.millis == 0 {
            return f.write_str("0s");
        }
        let mut rest = self.millis;
        for (name, scale) in UNITS.iter() {
            let n = rest / scale;
            if n > 0 {
                write!(f, "{n}{name}")?;
                rest -= n * scale;
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for Duration {
    type Err = DurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Duration::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: &str) -> u64 {
        Duration::parse(s)
            .map(Duration::as_secs)
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn go_style_with_days() {
        assert_eq!(secs("0h0m2s"), 2);
        assert_eq!(secs("2s"), 2);
        assert_eq!(secs("3m"), 180);
        assert_eq!(secs("2h30m"), 9000);
        assert_eq!(secs("1d2h0m2s"), 93_602);
        assert_eq!(secs("5400s"), 5400);
        assert_eq!(secs("1.5h"), 5400);
        assert_eq!(secs("0"), 0);
        assert_eq!(Duration::parse("250ms").map(|d| d.as_millis()), Ok(250));
    }

    #[test]
    fn iso_8601() {
        assert_eq!(secs("PT2H30M"), 9000);
        assert_eq!(secs("P1DT1H20M10S"), 91_210);
        assert_eq!(secs("PT3S"), 3);
        assert_eq!(secs("P1W"), 604_800);
        assert_eq!(secs("PT0.5S"), 0);
        assert!(Duration::parse("P1M").is_err());
        assert!(Duration::parse("P1Y").is_err());
        assert!(Duration::parse("PT").is_err());
        assert!(Duration::parse("P").is_err());
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "5",
            "h",
            "1x",
            "-5s",
            "1..5s",
            "s5",
            "1d 2h",
            "99999999999999999999d",
        ] {
            assert!(Duration::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn the_maximum_is_max_days_in_every_spelling() {
        for ok in ["36500d", "876000h", "P36500D", "PT876000H", "P5214W2D"] {
            assert_eq!(Duration::parse(ok), Ok(Duration::MAX), "{ok:?}");
        }
        for bad in ["36501d", "876001h", "P36501D", "36500d1ms", "P5215W"] {
            let err = Duration::parse(bad).map_err(|e| e.to_string());
            assert!(
                matches!(Duration::parse(bad), Err(DurationError::TooLong(_))),
                "{bad:?}: {err:?}"
            );
            assert!(err.is_err_and(|e| e.contains("exceeds the maximum of 36500d")));
        }
        assert_eq!(
            Duration::checked_from_secs(MAX_DAYS * 86_400),
            Ok(Duration::MAX)
        );
        assert!(Duration::checked_from_secs(MAX_DAYS * 86_400 + 1).is_err());
        assert!(Duration::checked_from_secs(u64::MAX).is_err());
    }

    #[test]
    fn canonical_display_round_trips() {
        for text in ["0s", "1d2h", "90ms", "1h30m", "6h", "1d1h1m1s500ms"] {
            let d = Duration::parse(text).unwrap_or_default();
            assert_eq!(d.to_string(), text);
            assert_eq!(Duration::parse(&d.to_string()), Ok(d));
        }
    }
}
