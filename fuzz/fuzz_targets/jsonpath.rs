//! JSONPath expressions (`${$.responses[0].x}`, `a.b[-1]`, `['k'][*]`), through
//! `expand::json_path` and `Variables::lookup`. The input's first line is the path; the rest, when
//! it is JSON, is the document (otherwise a fixed one). No panic, and a path that evaluates at fire
//! time is accepted in a template at job creation (both use one parser).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use sundial_core::expand::json_path;
use sundial_core::template::Template;
use sundial_fuzz::variables_with;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, rest) = text.split_once('\n').unwrap_or((text, ""));
    let doc = serde_json::from_str::<Value>(rest).ok();
    let vars = variables_with(
        doc.unwrap_or_else(|| serde_json::json!({"student": {"name": "Ann"}, "items": [{"n": 1}]})),
    );
    let root = &vars.responses[1];
    let direct = json_path(root, path);
    let _ = vars.lookup(path);
    if direct.is_ok()
        && path.starts_with('$')
        && path.trim() == path
        && path.len() <= 512
        && !path.contains(['{', '}'])
    {
        let template = format!("${{{path}}}");
        assert!(
            Template::parse(&template).is_ok(),
            "{path:?} evaluates, but the template {template:?} is refused: {:?}",
            Template::parse(&template)
        );
    }
});
