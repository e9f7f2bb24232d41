//! docs/architecture.md cannot go stale silently: every function, type and file its tables name
//! must exist. A row is `| … | \`name\` | \`path\` |`: the path must exist in the workspace and
//! define `name` (its last `::` segment) as a function, type, trait, constant or module.

// Test helpers outside #[test] functions: a failed read is a failed test.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The (name, path) pairs of every table row whose last two cells are backticked.
fn named_rows(page: &str) -> Vec<(String, String)> {
    page.lines()
        .filter(|line| line.starts_with('|'))
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let [.., name, path] = cells.as_slice() else {
                return None;
            };
            let unquote = |cell: &str| {
                cell.strip_prefix('`')
                    .and_then(|c| c.strip_suffix('`'))
                    .map(str::to_string)
            };
            Some((unquote(name)?, unquote(path)?))
        })
        .filter(|(_, path)| path.ends_with(".rs"))
        .collect()
}

fn defines(source: &str, name: &str) -> bool {
    ["fn", "struct", "enum", "trait", "type", "const", "mod"]
        .iter()
        .any(|kind| {
            source.contains(&format!("{kind} {name}("))
                || source.contains(&format!("{kind} {name} "))
                || source.contains(&format!("{kind} {name}<"))
                || source.contains(&format!("{kind} {name}:"))
                || source.contains(&format!("{kind} {name};"))
        })
}

#[test]
fn every_function_type_and_file_the_architecture_page_names_exists() {
    let page = fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let rows = named_rows(&page);
    assert!(
        rows.len() >= 30,
        "the life-of-a-job and glossary tables should name at least 30 places, found {}",
        rows.len()
    );
    let mut missing = Vec::new();
    for (name, path) in &rows {
        let Ok(source) = fs::read_to_string(workspace().join(path)) else {
            missing.push(format!("{path} does not exist (named for `{name}`)"));
            continue;
        };
        let last = name.rsplit("::").next().unwrap_or(name);
        if !defines(&source, last) {
            missing.push(format!("{path} does not define `{name}`"));
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md is stale:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_renamed_function_is_caught() {
    let source = "impl Engine {\n    pub async fn tick(&self) {}\n}";
    assert!(defines(source, "tick"));
    assert!(!defines(source, "tock"));
    let rows = named_rows("| 6 | ticks | `Engine::tock` | `crates/service/src/engine/tick.rs` |");
    assert_eq!(
        rows,
        [(
            "Engine::tock".to_string(),
            "crates/service/src/engine/tick.rs".to_string()
        )]
    );
}

/// The Rust files below `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_engine_depends_on_the_control_plane_never_the_reverse() {
    let src = workspace().join("crates/service/src");
    let mut offending = Vec::new();
    for part in ["app", "ports", "adapters", "records.rs"] {
        let path = src.join(part);
        let files = if path.is_dir() {
            rust_files(&path)
        } else {
            vec![path]
        };
        for file in files {
            let text = fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if !code.starts_with("//") && code.contains("crate::engine") {
                    offending.push(format!("{}:{}: {code}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        offending.is_empty(),
        "the control plane, ports and adapters must not use the engine (docs/architecture.md):\n{}",
        offending.join("\n")
    );
}
