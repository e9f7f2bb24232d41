//! docs/architecture.md cannot go stale silently: every function, type and file its tables name
//! must exist. A row is `| … | \`name\` | \`path\` |`: the path must exist in the workspace and
//! define `name` (its last `::` segment) as a function, type, trait, constant or module.

// Test helpers outside #[test] functions: a failed read is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

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

/// A crate's top-level modules (`crate::x` for `src/x.rs` or `src/x/mod.rs`) and, for each, the
/// other top-level modules its code names (`use crate::y…`, `crate::y::…` in paths, `super::…`
/// out of a nested module), read with `syn`. Code under `#[cfg(test)]` and `tests` modules is left
/// out: a test may reach any module it checks.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).unwrap();
        let mut module: Vec<String> = relative
            .iter()
            .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        if module.iter().any(|part| part == "tests") {
            continue;
        }
        let Some(top) = module.first().cloned() else {
            continue; // the crate root names every module
        };
        let syntax = syn::parse_file(&fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut names = ModuleNames {
            module: module.clone(),
            found: BTreeSet::new(),
        };
        names.visit_file(&syntax);
        let edges = graph.entry(top.clone()).or_default();
        edges.extend(names.found.into_iter().filter(|m| *m != top));
    }
    graph
}

/// Collects the top-level modules a file's code names.
struct ModuleNames {
    /// The file's module path below the crate root.
    module: Vec<String>,
    found: BTreeSet<String>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

impl ModuleNames {
    /// The top-level module a path starting with `segments` names, if it leaves the file's own.
    fn note(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        let resolved: Vec<String> = match first.as_str() {
            "crate" => segments[1..].to_vec(),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                if ups > self.module.len() {
                    return;
                }
                let mut base = self.module[..self.module.len() - ups].to_vec();
                base.extend(segments[ups..].iter().cloned());
                base
            }
            _ => return,
        };
        // A path of one segment below the root names the root's own item (`crate::AppError`),
        // which may live in any module: counted only when it is a module.
        if resolved.len() >= 2 {
            self.found.insert(resolved[0].clone());
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                prefix.push(name.ident.to_string());
                self.note(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Rename(rename) => {
                prefix.push(rename.ident.to_string());
                self.note(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(_) => {
                prefix.push("*".to_string());
                self.note(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for ModuleNames {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            _ => return visit::visit_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // An inline module's own paths are relative to it; `super` inside it is this file.
        if item.ident == "tests" {
            return;
        }
        self.module.push(item.ident.to_string());
        visit::visit_item_mod(self, item);
        self.module.pop();
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.note(&segments);
        visit::visit_path(self, path);
    }
}

/// Every cycle of `graph`, each as the modules along it (found from each module in turn, so a
/// cycle may be listed once per module on it; the message dedups by sorting).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        found: &mut BTreeSet<Vec<String>>,
    ) {
        let Some(last) = path.last().cloned() else {
            return;
        };
        for next in graph.get(&last).into_iter().flatten() {
            if let Some(start) = path.iter().position(|m| m == next) {
                let mut cycle = path[start..].to_vec();
                // One rotation per cycle: start at its smallest module.
                let min = cycle
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, m)| m.as_str())
                    .map_or(0, |(i, _)| i);
                cycle.rotate_left(min);
                found.insert(cycle);
            } else if path.len() < 12 {
                path.push(next.clone());
                walk(graph, path, found);
                path.pop();
            }
        }
    }
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        walk(graph, &mut vec![start.clone()], &mut found);
    }
    found
}

#[test]
fn no_crate_has_a_cycle_between_its_modules() {
    let mut offending = Vec::new();
    let crates = fs::read_dir(workspace().join("crates")).unwrap();
    for entry in crates {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        for cycle in cycles(&module_graph(&src)) {
            offending.push(format!("{}: {}", src.display(), cycle.join(" -> ")));
        }
    }
    assert!(
        offending.is_empty(),
        "modules that depend on each other (docs/architecture.md, \"The map\"):\n{}",
        offending.join("\n")
    );
}

#[test]
fn a_module_cycle_is_caught() {
    let dir = std::env::temp_dir().join(format!("sundial-arch-{}", std::process::id()));
    fs::create_dir_all(dir.join("job")).unwrap();
    fs::write(dir.join("lib.rs"), "pub mod job; pub mod plan;").unwrap();
    fs::write(dir.join("job/mod.rs"), "use crate::plan::admit;").unwrap();
    fs::write(
        dir.join("plan.rs"),
        "fn f() -> super::job::Job { todo!() }\n#[cfg(test)]\nmod tests { use crate::x::Y; }",
    )
    .unwrap();
    let graph = module_graph(&dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(graph["job"], BTreeSet::from(["plan".to_string()]));
    assert_eq!(graph["plan"], BTreeSet::from(["job".to_string()]));
    assert_eq!(
        cycles(&graph),
        BTreeSet::from([vec!["job".to_string(), "plan".to_string()]])
    );
}

/// The crates of adapters reach the use cases only through the ports: `sundial-embedded` by its
/// manifest (it depends on `sundial-ports` and `sundial-core` alone), the AWS crate's store,
/// queue and publisher by their code (the crate also holds the Lambda handlers, which run the
/// use cases).
#[test]
fn adapters_use_the_ports_never_the_use_cases() {
    let manifest = fs::read_to_string(workspace().join("crates/embedded/Cargo.toml")).unwrap();
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .unwrap();
    assert!(
        !dependencies.contains("sundial-service") && !dependencies.contains("sundial-api"),
        "crates/embedded/Cargo.toml: the SQLite adapters depend on sundial-ports, not the use cases"
    );
    let aws = workspace().join("crates/aws/src");
    let mut files = rust_files(&aws.join("dynamo"));
    files.extend(["sqs.rs", "publisher.rs"].map(|f| aws.join(f)));
    let mut offending = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//")
                && (code.contains("sundial_service") || code.contains("sundial_api"))
            {
                offending.push(format!("{}:{}: {code}", file.display(), n + 1));
            }
        }
    }
    assert!(
        offending.is_empty(),
        "the AWS adapters must use the ports only:\n{}",
        offending.join("\n")
    );
}

#[test]
fn the_engine_depends_on_the_control_plane_never_the_reverse() {
    let src = workspace().join("crates/service/src");
    let mut offending = Vec::new();
    for part in ["app", "adapters", "records.rs"] {
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
