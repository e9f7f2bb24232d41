//! What the client commands print: the API's JSON as JSON or YAML (`--output json|yaml`, for
//! scripts), or tables and summaries for people (`--output table`, the default).
//!
//! Every view is a function from the API's JSON (and a fixed "now") to text, so the snapshot tests
//! in `views` check exactly what a user sees. Colour is used only when stdout is a terminal and
//! `NO_COLOR` is not set (no-color.org).

use std::io::IsTerminal;

use clap::ValueEnum;
use serde_json::Value;

use crate::error::{Class, CliError};

pub(crate) mod table;
pub(crate) mod time;
pub(crate) mod views;

/// `--output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned tables and summaries, times in the job's zone.
    Table,
    /// The API's JSON, pretty-printed.
    Json,
    /// The API's JSON as YAML.
    Yaml,
}

/// Whether to colour, decided once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Style {
    pub color: bool,
}

pub(crate) const BOLD: &str = "1";
pub(crate) const GREEN: &str = "32";
pub(crate) const RED: &str = "31";
pub(crate) const YELLOW: &str = "33";
pub(crate) const CYAN: &str = "36";
pub(crate) const DIM: &str = "2";

impl Style {
    /// No colour: pipes, files, `NO_COLOR`, tests.
    #[cfg(test)]
    pub(crate) fn plain() -> Style {
        Style { color: false }
    }

    /// Colour when stdout is a terminal, `NO_COLOR` is unset or empty and `TERM` is not `dumb`.
    pub(crate) fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Style {
            color: std::io::stdout().is_terminal() && !no_color && !dumb,
        }
    }

    /// `text` in the SGR colour `code`, or as is without colour.
    pub(crate) fn paint(&self, code: Option<&str>, text: &str) -> String {
        match code {
            Some(code) if self.color && !text.is_empty() => {
                format!("\u{1b}[{code}m{text}\u{1b}[0m")
            }
            _ => text.to_string(),
        }
    }
}

/// The colour of an execution or job state.
pub(crate) fn state_color(state: &str) -> Option<&'static str> {
    match state {
        "Succeeded" | "active" | "ok" => Some(GREEN),
        "Failed" | "Terminated" | "stalled" => Some(RED),
        "Cancelled" | "Skipped" | "paused" => Some(YELLOW),
        "Enqueued" | "Processing" => Some(CYAN),
        _ => None,
    }
}

/// `value` as JSON (pretty, with a final newline) or YAML.
pub(crate) fn data(format: Format, value: &Value) -> Result<String, CliError> {
    match format {
        Format::Yaml => serde_yaml_ng::to_string(value)
            .map_err(|e| CliError::new(Class::Server, format!("writing YAML: {e}"))),
        Format::Json | Format::Table => serde_json::to_string_pretty(value)
            .map(|text| text + "\n")
            .map_err(|e| CliError::new(Class::Server, format!("writing JSON: {e}"))),
    }
}

/// The `warnings` of a create, update or preview answer, each to print on stderr.
pub(crate) fn warnings(answer: &Value) -> Vec<String> {
    answer
        .get("warnings")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
