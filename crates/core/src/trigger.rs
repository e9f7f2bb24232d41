//! What one manual trigger may change about its run (docs/api.md, "Trigger a run"): the nominal
//! time it reports (Temporal's trigger-immediately with a scheduled time), its overlap policy, and
//! a delay before it starts (seed 004's delayed trigger). The trigger's body stays the map of
//! arguments it always was, so the overrides are query parameters: a caller that sends none gets
//! the run it always got.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::duration::Duration;
use crate::job::{quote, FieldError, OverlapPolicy};

/// The overrides of one trigger: `?scheduledTime=&overlap=&delay=`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TriggerOptions {
    /// The nominal time the run reports (`scheduledTime`, `${scheduledTime}`); default: when it
    /// is due.
    pub scheduled_time: Option<DateTime<Utc>>,
    /// The overlap policy of this run instead of the job's.
    pub overlap: Option<OverlapPolicy>,
    /// How much later than now the run starts; it is `Scheduled` until then.
    pub delay: Option<Duration>,
}

impl TriggerOptions {
    /// Reads the overrides as the query parameters give them; errors name the parameter.
    pub fn parse(
        scheduled_time: Option<&str>,
        overlap: Option<&str>,
        delay: Option<&str>,
    ) -> Result<TriggerOptions, FieldError> {
        let scheduled_time = scheduled_time
            .map(|text| {
                DateTime::parse_from_rfc3339(text.trim())
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| {
                        FieldError::new(
                            "scheduledTime",
                            format!(
                                "expected an RFC 3339 time like \"2024-06-01T06:00:00Z\", got {}",
                                quote(text)
                            ),
                        )
                    })
            })
            .transpose()?;
        let overlap = overlap
            .map(|text| {
                OverlapPolicy::parse(text).ok_or_else(|| {
                    FieldError::new(
                        "overlap",
                        format!(
                            "expected Skip, BufferOne, BufferAll, CancelOther, TerminateOther or AllowAll, got {}",
                            quote(text)
                        ),
                    )
                })
            })
            .transpose()?;
        let delay = delay
            .map(|text| Duration::parse(text).map_err(|e| FieldError::new("delay", e.to_string())))
            .transpose()?;
        Ok(TriggerOptions {
            scheduled_time,
            overlap,
            delay,
        })
    }

    /// When the run is due: `now`, or `delay` later.
    pub fn due(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let millis = self.delay.map_or(0, Duration::as_millis);
        now + chrono::Duration::milliseconds(i64::try_from(millis).unwrap_or(i64::MAX / 2))
    }

    /// The nominal time the run reports: the override, or when it is due.
    pub fn scheduled_time(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.scheduled_time.unwrap_or_else(|| self.due(now))
    }

    /// The line of the run's event log that records the overrides, when there are any.
    pub fn describe(&self, now: DateTime<Utc>) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(time) = self.scheduled_time {
            parts.push(format!(
                "scheduledTime {}",
                time.to_rfc3339_opts(SecondsFormat::AutoSi, true)
            ));
        }
        if let Some(overlap) = self.overlap {
            parts.push(format!("overlap {overlap}"));
        }
        if let Some(delay) = self.delay {
            parts.push(format!(
                "delay {delay} (due {})",
                self.due(now).to_rfc3339_opts(SecondsFormat::Millis, true)
            ));
        }
        (!parts.is_empty()).then(|| format!("trigger overrides: {}", parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn overrides_read_from_their_parameters() {
        let now = at("2024-06-01T12:00:00Z");
        let none = TriggerOptions::parse(None, None, None).unwrap();
        assert_eq!(none, TriggerOptions::default());
        assert_eq!((none.due(now), none.scheduled_time(now)), (now, now));
        assert_eq!(none.describe(now), None);

        let all = TriggerOptions::parse(
            Some("2024-06-01T08:00:00+02:00"),
            Some("bufferall"),
            Some("5m"),
        )
        .unwrap();
        assert_eq!(all.overlap, Some(OverlapPolicy::BufferAll));
        assert_eq!(all.due(now), at("2024-06-01T12:05:00Z"));
        assert_eq!(all.scheduled_time(now), at("2024-06-01T06:00:00Z"));
        assert_eq!(
            all.describe(now).unwrap(),
            "trigger overrides: scheduledTime 2024-06-01T06:00:00Z, overlap BufferAll, delay 5m (due 2024-06-01T12:05:00.000Z)"
        );
        // A delayed run reports its due time unless told otherwise.
        let delayed = TriggerOptions::parse(None, None, Some("PT1H")).unwrap();
        assert_eq!(delayed.scheduled_time(now), at("2024-06-01T13:00:00Z"));

        for (scheduled, overlap, delay, path) in [
            (Some("yesterday"), None, None, "scheduledTime"),
            (None, Some("Never"), None, "overlap"),
            (None, None, Some("soon"), "delay"),
            (None, None, Some("36501d"), "delay"),
            (None, None, Some("-5m"), "delay"),
        ] {
            let e = TriggerOptions::parse(scheduled, overlap, delay).unwrap_err();
            assert_eq!(e.path, path, "{e}");
        }
    }
}
