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
    let mut files = Vec::new();
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
        files.push((file, module));
    }
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|(_, module)| module.first().cloned())
        .collect();
    for (file, module) in files {
        let Some(top) = module.first().cloned() else {
            continue; // the crate root names every module
        };
        let syntax = syn::parse_file(&fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut names = ModuleNames {
            module: module.clone(),
            modules: &modules,
            found: BTreeSet::new(),
        };
        names.visit_file(&syntax);
        let edges = graph.entry(top.clone()).or_default();
        edges.extend(names.found.into_iter().filter(|m| *m != top));
    }
    graph
}

/// Collects the top-level modules a file's code names: in `use` trees and paths, and in what
/// `syn` leaves as tokens — macro bodies (`job_schema! { … crate::simulate::X … }`) and attribute
/// arguments (`#[command(after_help = crate::serve::ENVIRONMENT)]`, and the paths inside their
/// strings, `#[serde(with = "crate::job::time_serde::rfc3339")]`). Doc comments are prose: a
/// link in one is not a dependency.
struct ModuleNames<'m> {
    /// The file's module path below the crate root.
    module: Vec<String>,
    /// The crate's top-level modules: a one-segment path below the root (`use crate::{view, …}`)
    /// is a dependency when it names one of them.
    modules: &'m BTreeSet<String>,
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

impl ModuleNames<'_> {
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
        if resolved.len() >= 2 || resolved.first().is_some_and(|m| self.modules.contains(m)) {
            self.found.insert(resolved[0].clone());
        }
    }

    /// The `crate::…` and `super::…` paths in tokens `syn` does not parse: a macro's body or an
    /// attribute's arguments; with `strings`, also those written inside string literals.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream, strings: bool) {
        use proc_macro2::TokenTree;
        let mut path: Vec<String> = Vec::new();
        // Whether the last token was the first `:` of a `::` continuing `path`.
        let mut colons = 0;
        for tree in tokens {
            match tree {
                TokenTree::Ident(ident) => {
                    let word = ident.to_string();
                    if !path.is_empty() && colons == 2 {
                        path.push(word);
                    } else {
                        self.end_path(&mut path);
                        if word == "crate" || word == "super" {
                            path.push(word);
                        }
                    }
                    colons = 0;
                }
                TokenTree::Punct(punct) if punct.as_char() == ':' && !path.is_empty() => {
                    colons += 1;
                }
                TokenTree::Group(group) => {
                    self.end_path(&mut path);
                    colons = 0;
                    self.tokens(group.stream(), strings);
                }
                TokenTree::Literal(literal) => {
                    self.end_path(&mut path);
                    colons = 0;
                    if strings {
                        if let Ok(text) =
                            syn::parse2::<syn::LitStr>(TokenTree::Literal(literal).into())
                        {
                            self.string(&text.value());
                        }
                    }
                }
                TokenTree::Punct(_) => {
                    self.end_path(&mut path);
                    colons = 0;
                }
            }
        }
        self.end_path(&mut path);
    }

    fn end_path(&mut self, path: &mut Vec<String>) {
        if path.len() > 1 {
            self.note(path);
        }
        path.clear();
    }

    /// The paths written in a string (`"crate::job::time_serde::rfc3339"`).
    fn string(&mut self, text: &str) {
        for (start, _) in text
            .match_indices("crate::")
            .chain(text.match_indices("super::"))
        {
            let path: String = text[start..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            self.note(&segments);
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

impl<'ast> Visit<'ast> for ModuleNames<'_> {
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

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone(), false);
        visit::visit_macro(self, mac);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if attr.path().is_ident("doc") {
            return;
        }
        if let syn::Meta::List(list) = &attr.meta {
            self.tokens(list.tokens.clone(), true);
        }
        visit::visit_attribute(self, attr);
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

/// The ways a dependency hid from the check before (issue 24's closing count found four such
/// cycles): a module imported by its name in a group, a path in a macro's body, in an attribute's
/// arguments, and inside an attribute's string. A doc comment's link is not one.
#[test]
fn a_dependency_in_a_group_a_macro_or_an_attribute_is_caught() {
    let dir = std::env::temp_dir().join(format!("sundial-arch-hidden-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("lib.rs"),
        "pub mod a; pub mod b; pub mod c; pub mod d; pub mod e; pub mod f;",
    )
    .unwrap();
    fs::write(dir.join("a.rs"), "use crate::{b, Root};\nfn f() { b::g() }").unwrap();
    fs::write(dir.join("b.rs"), "schema! { struct X { y: crate::c::Y } }").unwrap();
    fs::write(
        dir.join("c.rs"),
        "#[command(after_help = crate::d::HELP)]\nstruct Args;",
    )
    .unwrap();
    fs::write(
        dir.join("d.rs"),
        "#[derive(Deserialize)]\nstruct R { #[serde(with = \"crate::e::rfc3339\")] at: T }",
    )
    .unwrap();
    fs::write(
        dir.join("e.rs"),
        "/// See [`crate::f::Thing`].\npub fn rfc3339() {}",
    )
    .unwrap();
    fs::write(dir.join("f.rs"), "").unwrap();
    let graph = module_graph(&dir);
    fs::remove_dir_all(&dir).unwrap();
    let edge = |from: &str| graph.get(from).cloned().unwrap_or_default();
    assert_eq!(edge("a"), BTreeSet::from(["b".to_string()]));
    assert_eq!(edge("b"), BTreeSet::from(["c".to_string()]));
    assert_eq!(edge("c"), BTreeSet::from(["d".to_string()]));
    assert_eq!(edge("d"), BTreeSet::from(["e".to_string()]));
    assert_eq!(edge("e"), BTreeSet::new());
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
