//! The console has no second path to the store: its sources reach data only through `App` use
//! cases (the ones the API's handlers call), never through `App::store` or a `Store` method, so
//! every rule the use cases enforce (validation, redaction, state checks) holds in the browser too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

#[test]
fn console_reaches_the_store_only_through_app_use_cases() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for forbidden in [
            ".store()",
            "Store::",
            "sundial_embedded",
            "rusqlite",
            "records::",
        ] {
            assert!(
                !text.contains(forbidden),
                "{} uses {forbidden}: the console must call App use cases only",
                path.display()
            );
        }
        // `Store` appears only as the bound of the generic `App<S>`, and the store module only
        // for that bound and the use cases' request types.
        const ALLOWED: [&str; 5] = [
            "AuditQuery",
            "JobFilter",
            "JobOrder",
            "PageRequest",
            "Store",
        ];
        for line in text.lines().filter(|l| l.contains("ports::store")) {
            let names = line
                .trim()
                .strip_prefix("use sundial_ports::store::")
                .and_then(|rest| rest.strip_suffix(';'))
                .map(|rest| rest.trim_start_matches('{').trim_end_matches('}'));
            let allowed = names
                .is_some_and(|names| names.split(',').all(|name| ALLOWED.contains(&name.trim())));
            assert!(allowed, "{}: {line}", path.display());
        }
        checked += 1;
    }
    assert!(checked >= 3, "read the console's sources");
}
