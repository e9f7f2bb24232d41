//! `${…}` templates (URLs, headers, bodies, notification rules, `checkUrl`), through
//! `Template::parse` and then the expander (`expand_str`, `expand_text`, `expand_body`) against
//! every kind of variable: no panic; a template that parses expands without a parse error, and no
//! expansion ever passes `MAX_EXPANDED_BYTES` (a body is measured as compact JSON).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use sundial_core::expand::{expand_body, expand_str, expand_text, ExpandError, MAX_EXPANDED_BYTES};
use sundial_core::template::Template;
use sundial_fuzz::variables;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let vars = variables();
    let parsed = Template::parse(text);
    let by_text = expand_text(text, vars);
    let body = expand_body(&json!({"a": [text, {"b": text}], "c": text}), vars);
    let Ok(template) = parsed else {
        assert!(
            matches!(by_text, Err(ExpandError::Parse(_))),
            "{text:?} does not parse but expands: {by_text:?}"
        );
        return;
    };
    assert_eq!(template.as_str(), text);
    assert_eq!(Template::parse(template.as_str()).as_ref(), Ok(&template));
    let expanded = expand_str(&template, vars);
    assert_eq!(
        expanded, by_text,
        "expand_str and expand_text disagree on {text:?}"
    );
    match &expanded {
        Ok(out) => assert!(
            out.len() <= MAX_EXPANDED_BYTES,
            "{text:?} expanded to {} bytes",
            out.len()
        ),
        Err(ExpandError::Parse(e)) => {
            panic!("{text:?} parsed, then failed to parse at expansion: {e}")
        }
        Err(_) => {}
    }
    match body {
        Ok(out) => {
            let len = out.to_string().len();
            assert!(
                len <= MAX_EXPANDED_BYTES,
                "a body of {text:?} expanded to {len} bytes"
            );
        }
        Err(ExpandError::Parse(e)) => {
            panic!("{text:?} parsed, then failed to parse in a body: {e}")
        }
        Err(_) => {}
    }
});
