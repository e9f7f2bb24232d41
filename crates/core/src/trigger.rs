//! What one manual trigger may change about its run (docs/api.md, "Trigger a run"): the nominal
//! time it reports (Temporal's trigger-immediately with a scheduled time), its overlap policy, and
//! a delay before it starts (seed 004's delayed trigger). The trigger's body stays the map of
//! arguments it always was, so the overrides are query parameters: a caller that sends none gets
//! the run it always got.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::duration::Duration;
use crate::execution::{Execution, ExecutionState, TransitionError};
use crate::job::{quote, FieldError, Job, OverlapPolicy};
use crate::source::RunSource;

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

/// What a manual run is asked with: who asked, its idempotency id, its arguments and its
/// overrides.
#[derive(Clone, Debug)]
pub struct ManualRun<'a> {
    /// Who asked ([`RunSource::ProgramTrigger`], [`RunSource::ConsoleTrigger`] or
    /// [`RunSource::Update`]): the first part of the run's `scheduledById`.
    pub source: RunSource,
    /// The idempotency id (`Idempotency-Key`, or one made up): the rest of `scheduledById`.
    pub trigger_id: &'a str,
    /// The trigger's arguments, if any.
    pub arguments: Option<serde_json::Value>,
    /// Its delay, time and overlap overrides.
    pub options: &'a TriggerOptions,
}

/// Plans the manual run `execution_id` of `job` at `now`: takes the job's next execute number,
/// puts the run in line for admission behind every run of the job due before it, and builds the
/// execution (`Scheduled` when it waits for a later time, else `Enqueued`) with its overrides
/// recorded and its parent copied from the definition. Pure: the caller writes the job as
/// changed here and the execution in one atomic batch, so numbers never skip.
pub fn plan_manual_run(
    job: &mut Job,
    execution_id: String,
    run: ManualRun<'_>,
    now: DateTime<Utc>,
) -> Result<Execution, TransitionError> {
    let due = run.options.due(now);
    let initial = if due > now {
        ExecutionState::Scheduled
    } else {
        ExecutionState::Enqueued
    };
    let number = job.state.next_execute_number;
    job.state.next_execute_number += 1;
    job.state.wait_in_line(&execution_id, due);
    job.updated_at = now;
    let definition = &job.definition;
    let mut execution = Execution::new(
        execution_id,
        definition.job_id().clone(),
        number,
        initial,
        run.options.scheduled_time(now),
        format!(
            "{}:{}",
            run.source.prefix().unwrap_or("trigger"),
            run.trigger_id
        ),
        now,
    )?;
    if let Some(overrides) = run.options.describe(now) {
        execution.record(now, overrides);
    }
    execution.arguments = run.arguments;
    execution.parent_job = definition.parent_job().cloned();
    execution.parent_job_execution = definition.parent_job_execution();
    execution.run.due = Some(due);
    execution.run.overlap = run.options.overlap;
    Ok(execution)
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

    fn triggered_job(now: DateTime<Utc>) -> Job {
        let id = crate::job::JobId::parse("report").unwrap();
        let body = serde_json::json!({
            "jobName": "r", "creator": "c", "creatorName": "n", "parentJob": "daily",
            "parentJobExecution": 4,
            "request": [{"url": "http://127.0.0.1:9/"}], "timer": {"period": "external"}
        });
        Job::new(crate::job::JobDefinition::parse(&id, &body, now).unwrap())
    }

    #[test]
    fn a_manual_run_takes_the_next_number_and_its_place_in_line() {
        let now = at("2024-06-01T12:00:00Z");
        let mut job = triggered_job(now);
        let first_number = job.state.next_execute_number;
        let now_run = TriggerOptions::default();
        let run = ManualRun {
            source: RunSource::ProgramTrigger,
            trigger_id: "abc",
            arguments: Some(serde_json::json!({"region": "emea"})),
            options: &now_run,
        };
        let later = now + chrono::Duration::seconds(5);
        let execution = plan_manual_run(&mut job, "report~t~abc".into(), run, later).unwrap();
        assert_eq!(execution.execute_number, first_number);
        assert_eq!(job.state.next_execute_number, first_number + 1);
        assert_eq!(execution.state(), ExecutionState::Enqueued);
        assert_eq!(execution.scheduled_by_id, "trigger:abc");
        assert_eq!(execution.run.due, Some(later));
        assert_eq!(
            execution.parent_job.as_ref().map(|p| p.as_str()),
            Some("daily")
        );
        assert_eq!(execution.parent_job_execution, Some(4));
        assert_eq!(job.updated_at, later);

        // Delayed: it waits Scheduled, due at its time, and says why in its log.
        let delayed = TriggerOptions::parse(None, Some("bufferall"), Some("5m")).unwrap();
        let run = ManualRun {
            source: RunSource::Update,
            trigger_id: "def",
            arguments: None,
            options: &delayed,
        };
        let execution = plan_manual_run(&mut job, "report~t~def".into(), run, now).unwrap();
        assert_eq!(execution.execute_number, first_number + 1);
        assert_eq!(execution.scheduled_by_id, "update:def");
        assert_eq!(execution.state(), ExecutionState::Scheduled);
        assert_eq!(execution.run.due, Some(at("2024-06-01T12:05:00Z")));
        assert_eq!(execution.run.overlap, Some(OverlapPolicy::BufferAll));
        assert!(execution.events().len() >= 2, "{:?}", execution.events());

        // From the console: its own prefix, which the debug mode's `triggers` lets run.
        let run = ManualRun {
            source: RunSource::ConsoleTrigger,
            trigger_id: "ghi",
            arguments: None,
            options: &now_run,
        };
        let execution = plan_manual_run(&mut job, "report~t~ghi".into(), run, now).unwrap();
        assert_eq!(execution.scheduled_by_id, "console:ghi");
        assert_eq!(RunSource::of(&execution), RunSource::ConsoleTrigger);
    }
}
