//! What every form page shows of its problems, the same way: each control with its label, hint
//! and error (the control described by both, marked invalid), and a summary at the top linking
//! to each control that has one. The create page, the backfill page and the edit page use these.

use maud::{html, Markup};

/// A form control, as its problems are shown: its element id and its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spot {
    pub id: &'static str,
    pub label: &'static str,
}

/// A problem to show: at a control, or only in the summary.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub at: Option<Spot>,
    pub message: String,
}

impl Problem {
    pub(crate) fn at(spot: Spot, message: impl Into<String>) -> Self {
        Problem {
            at: Some(spot),
            message: message.into(),
        }
    }

    /// The message of the first of `problems` at `spot`.
    pub(crate) fn message_at(problems: &[Problem], spot: Spot) -> Option<&str> {
        problems
            .iter()
            .find(|p| p.at == Some(spot))
            .map(|p| p.message.as_str())
    }
}

/// A control's `aria-describedby`: its hint and its error, when it has them.
pub(crate) fn described_by(id: &str, hint: bool, error: bool) -> Option<String> {
    let mut ids = Vec::new();
    if hint {
        ids.push(format!("{id}-hint"));
    }
    if error {
        ids.push(format!("{id}-error"));
    }
    (!ids.is_empty()).then(|| ids.join(" "))
}

/// `aria-invalid` of a control that has an error.
pub(crate) fn invalid(error: Option<&str>) -> Option<&'static str> {
    error.map(|_| "true")
}

/// A control (`input`, made by the caller with [`described_by`] and [`invalid`]) with its
/// label, hint and error.
pub(crate) fn field(spot: Spot, hint: Option<&str>, error: Option<&str>, input: Markup) -> Markup {
    html! {
        div.field.wide {
            label for=(spot.id) { (spot.label) }
            @if let Some(hint) = hint { p.hint id={ (spot.id) "-hint" } { (hint) } }
            (input)
            @if let Some(error) = error {
                p.field-error id={ (spot.id) "-error" } { (error) }
            }
        }
    }
}

/// The summary at the top of a form that came back with `problems` (nothing without any):
/// `title`, then each problem, linked to its control.
pub(crate) fn error_summary(title: &str, problems: &[Problem]) -> Markup {
    html! {
        @if !problems.is_empty() {
            div.error-summary id="problems" role="alert" tabindex="-1" aria-labelledby="problems-title" {
                h2 id="problems-title" { (title) }
                ul {
                    @for problem in problems {
                        li {
                            @match problem.at {
                                Some(spot) => a href={ "#" (spot.id) } { (spot.label) ": " (problem.message) },
                                None => (problem.message),
                            }
                        }
                    }
                }
            }
        }
    }
}
