//! `sundial spec preview`: show when a schedule spec would fire (docs/cli.md).
//!
//! The command is a pure function, [`run_preview`], from the arguments of `spec preview` (parsed by
//! clap; their values are checked here, so errors name the flag) and the current time to the line
//! it prints (or the error it reports). `main` only supplies `Utc::now()`,
//! prints, and picks the exit code. Keeping the clock and the process out of this module means the
//! argument parsing and the output format can be unit-tested without spawning the binary, and that
//! `--from` defaulting to "now" is tested with a fixed "now".
//!
//! Output is exactly one line of JSON, `{"times": [...], "schedule": canonical}`, the same shape as
//! `POST /specs/preview`. A `{"timer": {"period": "external"}}` never fires on its own, so it prints
//! `{"times": [], "schedule": null, "triggeredOnly": true}`.

use std::fmt;

use chrono::{DateTime, Utc};
use sundial_core::spec::SpecError;

use crate::cli::PreviewArgs;

const DEFAULT_COUNT: usize = 10;
const MAX_COUNT: usize = 10_000;

/// Why the command failed. `Display` is the message `main` prints after `error: `; it names the
/// offending flag or spec field, e.g. `--count: ...` or `cron[0]: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    pub message: String,
}

impl CliError {
    fn new(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<SpecError> for CliError {
    fn from(e: SpecError) -> Self {
        CliError::new(e.to_string())
    }
}

/// The parsed command line of `spec preview`.
#[derive(Debug, PartialEq)]
struct Options {
    from: DateTime<Utc>,
    count: usize,
    job_id: Option<String>,
    spec: String,
}

/// Runs `spec preview` on its arguments (parsed by clap, see [`PreviewArgs`]) and returns the
/// JSON line to print, without a trailing newline. `now` is the default for `--from`.
pub(crate) fn run_preview(args: &PreviewArgs, now: DateTime<Utc>) -> Result<String, CliError> {
    let opts = options(args, now)?;
    let value: serde_json::Value =
        serde_json::from_str(&opts.spec).map_err(|e| CliError::new(format!("SPEC_JSON: {e}")))?;
    let preview =
        sundial_core::timer::preview(&value, opts.from, opts.count, opts.job_id.as_deref())?;
    let times = serde_json::Value::from(preview.times);
    // As `POST /specs/preview`: a spec that never fires is no error, but says why.
    let warnings = if preview.warnings.is_empty() {
        String::new()
    } else {
        format!(
            r#","warnings":{}"#,
            serde_json::Value::from(preview.warnings)
        )
    };
    // Written by hand so "times" comes first whatever serde_json's map ordering is.
    Ok(match preview.schedule {
        None => format!(r#"{{"times":{times},"schedule":null,"triggeredOnly":true}}"#),
        Some(schedule) => format!(r#"{{"times":{times},"schedule":{schedule}{warnings}}}"#),
    })
}

/// Checks the values of the flags; messages name the flag.
fn options(args: &PreviewArgs, now: DateTime<Utc>) -> Result<Options, CliError> {
    let from = match &args.from {
        None => now,
        Some(s) => DateTime::parse_from_rfc3339(s)
            .map_err(|_| CliError::new(format!("--from: expected an RFC 3339 time, got {s:?}")))?
            .with_timezone(&Utc),
    };
    let count = match &args.count {
        None => DEFAULT_COUNT,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=MAX_COUNT).contains(&n) => n,
            _ => {
                return Err(CliError::new(format!(
                    "--count: expected an integer from 1 to {MAX_COUNT}, got {s:?}"
                )))
            }
        },
    };
    if args.job_id.as_deref() == Some("") {
        return Err(CliError::new("--job-id: must not be empty"));
    }
    let Some(spec) = args.spec.clone() else {
        return Err(CliError::new(
            "SPEC_JSON: missing; see `sundial spec preview --help`",
        ));
    };
    Ok(Options {
        from,
        count,
        job_id: args.job_id.clone(),
        spec,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// `sundial spec preview LIST` through clap; a clap error's message as a `CliError`.
    fn args(list: &[&str]) -> Result<PreviewArgs, CliError> {
        use crate::cli::{Cli, Command, SpecCommand};
        use clap::Parser;
        let argv = ["sundial", "spec", "preview"].iter().chain(list);
        match Cli::try_parse_from(argv) {
            Ok(Cli {
                command: Command::Spec(SpecCommand::Preview(args)),
                ..
            }) => Ok(args),
            Ok(other) => panic!("not spec preview: {other:?}"),
            Err(e) => Err(CliError::new(e.to_string())),
        }
    }

    fn parse_args(
        list: Result<PreviewArgs, CliError>,
        now: DateTime<Utc>,
    ) -> Result<Options, CliError> {
        options(&list?, now)
    }

    fn run(list: &[&str], now: DateTime<Utc>) -> Result<String, CliError> {
        run_preview(&args(list)?, now)
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-01-05T13:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn err(list: &[&str]) -> String {
        run(list, now()).unwrap_err().to_string()
    }

    #[test]
    fn defaults() {
        let opts = parse_args(args(&["{}"]), now()).unwrap();
        assert_eq!(
            opts,
            Options {
                from: now(),
                count: 10,
                job_id: None,
                spec: "{}".into()
            }
        );
    }

    #[test]
    fn flags_with_space_or_equals() {
        let a = parse_args(
            args(&[
                "--from",
                "2024-01-01T01:00:00+01:00",
                "--count",
                "3",
                "--job-id",
                "j",
                "{}",
            ]),
            now(),
        );
        let b = parse_args(
            args(&[
                "{}",
                "--from=2024-01-01T00:00:00Z",
                "--count=3",
                "--job-id=j",
            ]),
            now(),
        );
        assert_eq!(a.unwrap(), b.unwrap());
    }

    #[test]
    fn flag_errors_name_the_flag() {
        assert_eq!(
            err(&["--from", "x", "{}"]),
            r#"--from: expected an RFC 3339 time, got "x""#
        );
        assert!(err(&["--count", "0", "{}"]).starts_with("--count: "));
        assert!(err(&["--count", "10001", "{}"]).starts_with("--count: "));
        assert!(err(&["--count", "-1", "{}"]).starts_with("--count: "));
        assert!(err(&["--count", "ten", "{}"]).starts_with("--count: "));
        assert!(err(&["{}", "--count"]).contains("--count"));
        assert!(err(&["--count", "1", "--count", "2", "{}"]).contains("--count"));
        assert!(err(&["--job-id=", "{}"]).starts_with("--job-id: "));
        assert!(err(&["--bogus", "{}"]).contains("--bogus"));
        assert!(err(&[]).starts_with("SPEC_JSON: missing"));
        assert!(err(&["{}", "{}"]).contains("unexpected argument"));
    }

    #[test]
    fn malformed_json_is_reported_as_spec_json() {
        assert!(err(&[r#"{"cron":"#]).starts_with("SPEC_JSON: "));
    }

    #[test]
    fn prints_times_then_schedule() {
        let out = run(&["--count", "2", r#"{"cron":["0 12 * * MON-FRI"]}"#], now()).unwrap();
        assert!(
            out.starts_with(
                r#"{"times":["2024-01-08T12:00:00+00:00","2024-01-09T12:00:00+00:00"],"schedule":{"#
            ),
            "{out}"
        );
        assert!(!out.contains('\n'));
        assert!(!out.contains("warnings"), "{out}");
    }

    #[test]
    fn a_spec_that_never_fires_says_why() {
        let out = run(
            &[r#"{"cron":["* * * * *"],"endTime":"2020-01-01T00:00:00Z"}"#],
            now(),
        )
        .unwrap();
        assert!(
            out.starts_with(r#"{"times":[],"schedule":{"#)
                && out.ends_with(
                    r#","warnings":["schedule: it never fires again: it ended at 2020-01-01T00:00:00+00:00"]}"#
                ),
            "{out}"
        );
    }
}
