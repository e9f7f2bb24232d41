//! docs/api.md's `${…}` templates, parsed.
//!
//! Request URLs, headers and bodies, notification rules and the `checkUrl` of a job may contain
//! placeholders: `${schedulingFeedbackUrl}`, `${ENV_VALUE}`, `${$.responses[0].x}`. A placeholder
//! followed directly by `|json` substitutes JSON rather than a string (`"${schedulingNotifyBody}|json"`).
//! Templates are parsed when a job is created, so a typo such as an unclosed `${` is reported then,
//! with the field it is in, instead of surfacing as a strange request at fire time. Expansion lives
//! elsewhere and works on the parsed [`Part`]s.
//!
//! ```
//! use sundial_core::template::Template;
//! let t = Template::parse("service://main/x?cb=${schedulingFeedbackUrl}").unwrap();
//! assert_eq!(t.placeholders().collect::<Vec<_>>(), vec![("schedulingFeedbackUrl", false)]);
//! assert!(Template::parse("${oops").is_err());
//! ```

use std::fmt;

/// The longest expression one placeholder may hold.
const MAX_EXPR_BYTES: usize = 512;

/// The suffix that makes a placeholder substitute JSON instead of a string.
const JSON_SUFFIX: &str = "|json";

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Text copied as is.
    Literal(String),
    /// A `${expr}` placeholder; `json` when `|json` follows the closing brace.
    Placeholder {
        /// What is between `${` and `}`, trimmed: a variable name or a JSONPath like `$.responses[0].x`.
        expr: String,
        /// Substitute the value as JSON rather than as a string.
        json: bool,
    },
}

/// A parsed template: literal text and placeholders. The source text is kept for display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    source: String,
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text`. Errors name the byte offset of the problem: an unclosed or nested `${`, an empty
    /// `${}`, a JSONPath (`${$.…}`) outside the supported subset (`$..s`, filters, slices), or more
    /// than one `|json` placeholder in one value (docs/api.md forbids that).
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        let mut json_placeholders = 0usize;
        while let Some(start) = rest.find("${") {
            let offset = text.len() - rest.len() + start;
            literal.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| format!("unclosed \"${{\" at byte {offset}: expected \"}}\""))?;
            let expr = &after[..end];
            if expr.contains('{') {
                return Err(format!(
                    "unbalanced \"${{\" at byte {offset}: placeholders cannot contain \"{{\""
                ));
            }
            let expr = expr.trim();
            if expr.is_empty() {
                return Err(format!("empty placeholder \"${{}}\" at byte {offset}"));
            }
            if expr.len() > MAX_EXPR_BYTES {
                return Err(format!(
                    "placeholder at byte {offset} is longer than {MAX_EXPR_BYTES} bytes"
                ));
            }
            crate::json_path::check_expression(expr)
                .map_err(|e| format!("placeholder at byte {offset}: {e}"))?;
            let mut next = &after[end + 1..];
            let json = match next.strip_prefix(JSON_SUFFIX) {
                Some(tail) => {
                    next = tail;
                    json_placeholders += 1;
                    true
                }
                None => false,
            };
            if json_placeholders > 1 {
                return Err(format!(
                    "a second \"|json\" placeholder at byte {offset}: one value may hold at most one"
                ));
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(Part::Placeholder {
                expr: expr.to_string(),
                json,
            });
            rest = next;
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Template {
            source: text.to_string(),
            parts,
        })
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Literal text and placeholders, in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Each placeholder's expression and whether it substitutes JSON, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = (&str, bool)> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Placeholder { expr, json } => Some((expr.as_str(), *json)),
            Part::Literal(_) => None,
        })
    }

    /// True when the template has no placeholders.
    pub fn is_literal(&self) -> bool {
        self.placeholders().next().is_none()
    }

    /// The literal text pieces, in order.
    pub fn literals(&self) -> impl Iterator<Item = &str> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Literal(text) => Some(text.as_str()),
            Part::Placeholder { .. } => None,
        })
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Part {
        Part::Literal(s.into())
    }

    fn ph(expr: &str, json: bool) -> Part {
        Part::Placeholder {
            expr: expr.into(),
            json,
        }
    }

    #[test]
    fn parses_literals_and_placeholders() {
        let cases: Vec<(&str, Vec<Part>)> = vec![
            ("", vec![]),
            ("plain text", vec![lit("plain text")]),
            ("${name}", vec![ph("name", false)]),
            ("${ name }", vec![ph("name", false)]),
            ("${$.responses[0].x}", vec![ph("$.responses[0].x", false)]),
            ("${schedulingNotifyBody}|json", vec![ph("schedulingNotifyBody", true)]),
            ("${a}|jsonx", vec![ph("a", true), lit("x")]),
            ("${a}|JSON", vec![ph("a", false), lit("|JSON")]),
            (
                "service://main/request1?aaa=${$.aaa}&bbb=${$.bbb}&callback=${schedulingFeedbackUrl}",
                vec![
                    lit("service://main/request1?aaa="),
                    ph("$.aaa", false),
                    lit("&bbb="),
                    ph("$.bbb", false),
                    lit("&callback="),
                    ph("schedulingFeedbackUrl", false),
                ],
            ),
            ("$ {x} } $", vec![lit("$ {x} } $")]),
            ("a${b}c${d}", vec![lit("a"), ph("b", false), lit("c"), ph("d", false)]),
            ("日本${名}語", vec![lit("日本"), ph("名", false), lit("語")]),
        ];
        for (text, parts) in cases {
            let t = Template::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(t.parts(), parts.as_slice(), "{text:?}");
            assert_eq!(t.as_str(), text);
            assert_eq!(t.to_string(), text);
        }
    }

    #[test]
    fn rejects_malformed_placeholders() {
        let cases = [
            ("${", "unclosed"),
            ("abc ${name", "unclosed \"${\" at byte 4"),
            ("${}", "empty placeholder"),
            ("x${  }", "empty placeholder \"${}\" at byte 1"),
            ("${a${b}}", "unbalanced"),
            ("${a{b}", "unbalanced"),
            ("${a}|json ${b}|json", "second \"|json\""),
            ("${$..s}", "recursive descent"),
            ("x ${$.a[?(@.b)]}", "placeholder at byte 2: JSONPath"),
            ("${responses[0:2]}", "unsupported selector"),
            ("${$.a b}", "unsupported name"),
        ];
        for (text, expected) in cases {
            match Template::parse(text) {
                Ok(t) => panic!("{text:?} parsed as {t:?}"),
                Err(e) => assert!(e.contains(expected), "{text:?}: {e}"),
            }
        }
        let long = format!("${{{}}}", "x".repeat(MAX_EXPR_BYTES + 1));
        assert!(Template::parse(&long).is_err());
    }

    #[test]
    fn placeholders_iterates_in_order() {
        let t = Template::parse("${a}-${b}|json-${c}").unwrap();
        assert_eq!(
            t.placeholders().collect::<Vec<_>>(),
            vec![("a", false), ("b", true), ("c", false)]
        );
        assert_eq!(t.literals().collect::<Vec<_>>(), vec!["-", "-"]);
        assert!(!t.is_literal());
        assert!(Template::parse("no placeholders").unwrap().is_literal());
    }
}
