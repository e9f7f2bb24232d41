//! Why a command failed, and the exit code each kind of failure gets.
//!
//! Scripts branch on the exit code, so it names the class of the failure, not its details (those
//! are in the message on stderr): a command line to fix (2), a resource that is not there (3), a
//! request the server refused (4), or a server that failed or could not be reached, where a retry
//! may help (5). docs/cli.md lists them.

use std::fmt;
use std::process::ExitCode;

/// The classes of failure, each with its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// What a command reports as failed without any error: `execution watch` of a run that ended
    /// other than `Succeeded`.
    Failed,
    /// A bad command line or local input (a definition file, `--arg`): exit 2, as clap's own errors.
    Usage,
    /// The job, execution or route does not exist (HTTP 404).
    NotFound,
    /// The server refused the request: invalid (400, naming the field), unauthenticated (401/403),
    /// in conflict with the current state (409), too large (413), or another 4xx.
    Refused,
    /// The server failed (5xx, e.g. 503 when the store failed or the tick stalled), answered
    /// something that is not the API, or could not be reached.
    Server,
}

impl Class {
    /// The process exit code of this class.
    pub(crate) fn code(self) -> u8 {
        match self {
            Class::Failed => 1,
            Class::Usage => 2,
            Class::NotFound => 3,
            Class::Refused => 4,
            Class::Server => 5,
        }
    }

    /// The class of an HTTP error status.
    pub(crate) fn of_status(status: u16) -> Class {
        match status {
            404 => Class::NotFound,
            400..=499 => Class::Refused,
            _ => Class::Server,
        }
    }
}

/// A failed command: its class and the message printed after `error: `.
#[derive(Debug)]
pub(crate) struct CliError {
    pub class: Class,
    pub message: String,
}

impl CliError {
    pub(crate) fn new(class: Class, message: impl Into<String>) -> CliError {
        CliError {
            class,
            message: message.into(),
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError::new(Class::Usage, message)
    }

    pub(crate) fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.class.code())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_classes() {
        assert_eq!(Class::of_status(404), Class::NotFound);
        for status in [400, 401, 403, 405, 408, 409, 413] {
            assert_eq!(Class::of_status(status), Class::Refused, "{status}");
        }
        for status in [500, 502, 503] {
            assert_eq!(Class::of_status(status), Class::Server, "{status}");
        }
        let codes: Vec<u8> = [
            Class::Failed,
            Class::Usage,
            Class::NotFound,
            Class::Refused,
            Class::Server,
        ]
        .iter()
        .map(|c| c.code())
        .collect();
        assert_eq!(codes, [1, 2, 3, 4, 5]);
    }
}
