//! The code's layout as rules that fail when broken: no two files of the library import each
//! other (directly or around a loop), no layer imports one above it, and no file grows past
//! about 500 lines before its tests (the files that are longer today may only shrink; a
//! module of tests, `tests.rs`, may be long).
//!
//! Imports are read from the source: `use` items and `crate::` / `super::` / `self::` paths,
//! each resolved to the file that defines the longest prefix of it. A folder's `mod.rs`
//! re-exporting its children is its face, not an import, and is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first: a file may import its own layer and those below.
const LAYERS: &[&[&str]] = &[
    &["byte_sizes", "error"],
    &["model"],
    &["exec"],
    &["cpu", "gpu"],
    &["engine"],
    &["tasks"],
    &["web", "fuzz"],
];

/// Pairs of the same layer that must not import each other: the executors.
const APART: &[(&str, &str)] = &[("cpu", "gpu"), ("gpu", "cpu")];

/// Longest a file may be before its tests.
const MAX_LINES: usize = 500;

/// Files longer than that, with the length they may not exceed (none today); split them and
/// lower or drop their line here.
const LONG_FILES: &[(&str, usize)] = &[];

type Module = Vec<String>;

struct Source {
    /// Relative to `src/`.
    path: String,
    /// The code before its `#[cfg(test)]` module, comments removed.
    code: String,
    lines: usize,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn without_tests_and_comments(text: &str) -> (String, usize) {
    let end = text.find("#[cfg(test)]\nmod ").unwrap_or(text.len());
    let head = &text[..end];
    let code: String = head
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    (code, head.lines().count())
}

fn sources() -> BTreeMap<Module, Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    let mut out = BTreeMap::new();
    for p in paths {
        let rel = p
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "build.rs" {
            continue; // Cargo's build script (the sources' fingerprint), not the library
        }
        let mut module: Module = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(String::from)
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        let (code, lines) = without_tests_and_comments(&fs::read_to_string(&p).unwrap());
        out.insert(
            module,
            Source {
                path: rel,
                code,
                lines,
            },
        );
    }
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap().trim();
        return vec![path.to_string()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap()];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let join = |rest: String| match prefix.is_empty() {
        true => rest,
        false => format!("{prefix}::{rest}"),
    };
    (parts.into_iter().filter(|p| !p.trim().is_empty()))
        .flat_map(|p| expand(p).into_iter().map(join))
        .collect()
}

/// Every path the code names: `use` trees expanded, and `crate::…` / `super::…` in the text.
fn named_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for item in code.split(';') {
        let item = item.trim_start();
        let item = item.strip_prefix("pub ").unwrap_or(item);
        let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
        let item = item.strip_prefix("pub(super) ").unwrap_or(item);
        if let Some(tree) = item.strip_prefix("use ") {
            out.extend(expand(tree));
        }
    }
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let len = code[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - at);
            out.push(code[at..at + len].trim_end_matches(':').to_string());
        }
    }
    out
}

/// The file `path` (as written in `from`) lands in, if it is one of the crate's.
fn resolve(path: &str, from: &Module, files: &BTreeMap<Module, Source>) -> Option<Module> {
    let mut parts = path.split("::").filter(|s| !s.is_empty()).peekable();
    let mut at: Module = match parts.peek().copied() {
        Some("crate") => {
            parts.next();
            Vec::new()
        }
        Some("super" | "self") => from.clone(),
        _ => return None,
    };
    while let Some(&p) = parts.peek() {
        match p {
            "super" => {
                at.pop();
            }
            "self" => {}
            _ => break,
        }
        parts.next();
    }
    at.extend(parts.map(String::from));
    (0..=at.len())
        .rev()
        .map(|n| at[..n].to_vec())
        .find(|m| files.contains_key(m))
        .filter(|m| !m.is_empty() && m != from)
}

fn imports(files: &BTreeMap<Module, Source>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, src) in files {
        // The crate root and the CLI sit above every layer.
        if module.first().is_none_or(|m| m == "bin") {
            continue;
        }
        let set = edges.entry(module.clone()).or_default();
        for path in named_paths(&src.code) {
            if let Some(to) = resolve(&path, module, files) {
                set.insert(to);
            }
        }
        // A folder's face re-exports its children: not imports.
        let own = module.clone();
        set.retain(|to| !(to.len() > own.len() && to.starts_with(&own)));
    }
    edges
}

/// The groups of files that import each other around a loop (Tarjan's components).
fn loops(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if s.stack.contains(&w) {
                let iw = s.index[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                group.push(w.clone());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn layer(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

#[test]
fn no_two_files_import_each_other() {
    let files = sources();
    let edges = imports(&files);
    let found: Vec<String> = loops(&edges)
        .iter()
        .map(|group| {
            let names: BTreeSet<String> = group.iter().map(|m| m.join("/")).collect();
            let detail: Vec<String> = group
                .iter()
                .map(|m| {
                    let inside: Vec<String> = (edges[m].iter())
                        .filter(|t| group.contains(t))
                        .map(|t| t.join("/"))
                        .collect();
                    format!("  {} → {}", m.join("/"), inside.join(", "))
                })
                .collect();
            format!("{names:?}\n{}", detail.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "files that import each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_layer_imports_one_above_it() {
    let files = sources();
    let mut wrong = Vec::new();
    for (from, tos) in imports(&files) {
        let from_top = from[0].as_str();
        let Some(from_layer) = layer(from_top) else {
            wrong.push(format!("{}: not in LAYERS", files[&from].path));
            continue;
        };
        for to in tos {
            let to_top = to[0].as_str();
            let above = layer(to_top).is_none_or(|l| l > from_layer);
            if above || APART.contains(&(from_top, to_top)) {
                wrong.push(format!("{} imports {}", files[&from].path, files[&to].path));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn files_stay_short() {
    let files = sources();
    let mut wrong = Vec::new();
    for src in files.values().filter(|s| !s.path.ends_with("tests.rs")) {
        let limit = LONG_FILES
            .iter()
            .find(|(p, _)| *p == src.path)
            .map_or(MAX_LINES, |&(_, n)| n);
        if src.lines > limit {
            wrong.push(format!(
                "{}: {} lines before its tests (at most {limit})",
                src.path, src.lines
            ));
        }
    }
    for (path, _) in LONG_FILES {
        let listed = files.values().find(|s| s.path == *path);
        if listed.is_none_or(|s| s.lines <= MAX_LINES) {
            wrong.push(format!(
                "{path}: no longer long (or gone): take it off LONG_FILES"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_reader_finds_imports() {
    // The rules above are only as good as this reading of the source.
    let paths = named_paths(
        "use super::{a::{B, c::D}, e as F};\npub use crate::x::Y;\nlet z = super::super::w::f();",
    );
    for want in [
        "super::a::B",
        "super::a::c::D",
        "super::e",
        "crate::x::Y",
        "super::super::w::f",
    ] {
        assert!(paths.iter().any(|p| p == want), "{want} not in {paths:?}");
    }
    let files = sources();
    let edges = imports(&files);
    let engine = edges
        .get(&vec!["engine".to_string(), "load".to_string()])
        .expect("src/engine/load.rs read");
    assert!(engine.iter().any(|m| m[0] == "cpu") && engine.iter().any(|m| m[0] == "model"));
    let mut fake = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        fake.entry(vec![a.to_string()])
            .or_insert_with(BTreeSet::new)
            .insert(vec![b.to_string()]);
    }
    fake.insert(vec!["d".to_string()], BTreeSet::new());
    assert_eq!(loops(&fake).len(), 1);
    assert_eq!(loops(&fake)[0].len(), 3);
}
