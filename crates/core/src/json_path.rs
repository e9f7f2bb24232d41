//! The supported JSONPath subset, parsed: `.name`, `['name']`, `["name"]`, `[n]`, `[-n]` and
//! `[*]`, with or without a leading `$`. Template parsing ([`crate::template`]) checks a
//! placeholder's path with it when a job is created, and expansion ([`crate::expand`]) follows the
//! steps it returns, so both read a path the same way.

use serde_json::Value;

/// A JSONPath that is malformed or uses unsupported syntax.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("JSONPath \"{expr}\": {reason}")]
pub(crate) struct BadPath {
    /// The expression as written.
    pub(crate) expr: String,
    /// What went wrong, and where.
    pub(crate) reason: String,
}

/// True when a placeholder expression is read as a JSONPath rather than as a name.
pub(crate) fn is_json_path(expr: &str) -> bool {
    expr.starts_with('$') || expr.starts_with("responses[")
}

/// Checks a placeholder expression without evaluating it, with the parser expansion ([`crate::expand`]) uses: a
/// JSONPath must be well-formed and inside the supported subset. [`crate::template::Template::parse`]
/// calls this, so a path that could never work is refused when the job is created.
pub(crate) fn check_expression(expr: &str) -> Result<(), BadPath> {
    if is_json_path(expr) {
        parse_path(expr)?;
    }
    Ok(())
}

/// One step of a JSONPath.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    Key(String),
    Index(i64),
    Wildcard,
}

/// The path so far, in canonical form, for error messages.
pub(crate) fn describe(steps: &[Step]) -> String {
    let mut out = String::from("$");
    for step in steps {
        match step {
            Step::Key(key) if is_plain_key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Step::Key(key) => {
                out.push('[');
                out.push_str(&quote(key));
                out.push(']');
            }
            Step::Index(index) => out.push_str(&format!("[{index}]")),
            Step::Wildcard => out.push_str("[*]"),
        }
    }
    out
}

pub(crate) fn quote(text: &str) -> String {
    Value::from(text).to_string()
}

/// Characters a `.name` step may not contain: they belong to bracket notation or to JSONPath
/// features that are not supported, so a key holding them has to be written as `['…']`.
fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key != "*"
        && !key
            .chars()
            .any(|c| c.is_whitespace() || ".[]'\"()?@,:*$".contains(c))
}

/// Parses the supported JSONPath subset. A leading `$` is optional; without it the path starts with a
/// bare name (`responses[0].x`) or a bracket.
pub(crate) fn parse_path(expr: &str) -> Result<Vec<Step>, BadPath> {
    let bad = |reason: String| BadPath {
        expr: expr.to_string(),
        reason,
    };
    let mut steps = Vec::new();
    let mut rest = match expr.strip_prefix('$') {
        Some(rest) => rest,
        None if expr.is_empty() => return Err(bad("empty path".into())),
        None if expr.starts_with('[') || expr.starts_with('.') => expr,
        None => {
            let end = expr.find(['.', '[']).unwrap_or(expr.len());
            steps.push(Step::Key(dot_name(&expr[..end]).map_err(&bad)?));
            &expr[end..]
        }
    };
    while !rest.is_empty() {
        let at = expr.len() - rest.len();
        if let Some(after) = rest.strip_prefix('.') {
            if after.starts_with('.') {
                return Err(bad(format!(
                    "recursive descent \"..\" at byte {at} is not supported"
                )));
            }
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            steps.push(if name == "*" {
                Step::Wildcard
            } else {
                Step::Key(dot_name(name).map_err(&bad)?)
            });
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let (step, tail) =
                bracket(after).map_err(|reason| bad(format!("{reason} at byte {at}")))?;
            steps.push(step);
            rest = tail;
        } else {
            return Err(bad(format!(
                "expected \".\" or \"[\" at byte {at}, found {}",
                quote(&rest[..rest.chars().next().map_or(0, char::len_utf8)])
            )));
        }
    }
    Ok(steps)
}

fn dot_name(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err("empty name after \".\"".into());
    }
    if !is_plain_key(name) {
        return Err(format!(
            "unsupported name {}: write keys with special characters as ['…']",
            quote(name)
        ));
    }
    Ok(name.to_string())
}

/// Parses what follows a `[`, up to and including its `]`.
fn bracket(text: &str) -> Result<(Step, &str), String> {
    let inner = text.trim_start();
    if let Some(quote_char) = inner.chars().next().filter(|c| *c == '\'' || *c == '"') {
        let mut key = String::new();
        let mut chars = inner[1..].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, escaped)) => key.push(escaped),
                    None => break,
                },
                c if c == quote_char => {
                    let tail = inner[1 + i + 1..].trim_start();
                    return match tail.strip_prefix(']') {
                        Some(tail) => Ok((Step::Key(key), tail)),
                        None => Err(
                            "expected \"]\" after a quoted key (unions are not supported)".into(),
                        ),
                    };
                }
                c => key.push(c),
            }
        }
        return Err(format!("unclosed {quote_char} in brackets"));
    }
    let end = inner.find(']').ok_or("unclosed \"[\"")?;
    let content = inner[..end].trim();
    let tail = &inner[end + 1..];
    if content == "*" {
        return Ok((Step::Wildcard, tail));
    }
    if content.starts_with('?') {
        return Err("filters \"[?…]\" are not supported".into());
    }
    let digits = content.strip_prefix('-').unwrap_or(content);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return content
            .parse::<i64>()
            .map(|index| (Step::Index(index), tail))
            .map_err(|_| format!("index {content} is too large"));
    }
    Err(format!(
        "unsupported selector [{content}]: expected ['name'], [n], [-n] or [*]"
    ))
}
