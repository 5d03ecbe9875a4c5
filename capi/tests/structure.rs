//! The shape of the library's sources, checked on the files themselves (issue 35):
//!
//! - `src/ffi` is the outer layer: nothing outside it imports from it (no `crate::ffi`,
//!   `super::ffi` or `ffi::` path in another module), so there is no import cycle through it;
//! - the crate's top-level modules (`abi`, `backend`, `ffi`, `state`, ...) import each other
//!   without a cycle;
//! - every C type (a `#[repr(C)]` struct or union, an `extern "C" fn` type) is defined in
//!   `src/abi`, and no C type is defined twice: no two definitions share a Rust name or the C
//!   name their doc opens with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The source without `//` comments (doc comments included), so that prose naming a module
/// does not count as an import.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines of `text` (outside `src/ffi`) that reach into the ffi module.
fn ffi_imports(text: &str) -> Vec<String> {
    code_of(text)
        .lines()
        .filter(|l| {
            // `core::ffi`, `std::ffi` and `alloc::ffi` are the standard library's.
            let l = l
                .replace("core::ffi", "")
                .replace("std::ffi", "")
                .replace("alloc::ffi", "");
            l.contains("crate::ffi") || l.contains("super::ffi") || l.contains("ffi::")
        })
        .map(str::to_string)
        .collect()
}

/// The C type definitions in `text`: (Rust name, the C name its doc opens with, if any).
fn c_types(text: &str) -> Vec<(String, Option<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let name = if t.starts_with("#[repr(C") {
            // The struct or union the attribute belongs to (after other attributes).
            lines[i + 1..].iter().find_map(|l| {
                let l = l.trim_start();
                [
                    "pub struct ",
                    "pub(crate) struct ",
                    "struct ",
                    "pub union ",
                    "union ",
                ]
                .iter()
                .find_map(|k| l.strip_prefix(k))
                .map(ident)
            })
        } else if let Some(rest) = ["pub type ", "pub(crate) type ", "type "]
            .iter()
            .find_map(|k| t.strip_prefix(k))
        {
            // A type alias of an `extern "C" fn` (on this line or the next few).
            let def: String = lines[i..(i + 4).min(lines.len())].join(" ");
            def.split_once('=')
                .filter(|(_, rhs)| rhs.contains("extern \"C\" fn"))
                .map(|_| ident(rest))
        } else {
            None
        };
        let Some(name) = name else { continue };
        // The doc's first C name: the first `...` span of the doc lines above.
        let mut j = i;
        while j > 0 && lines[j - 1].trim_start().starts_with("#[") {
            j -= 1;
        }
        let mut doc_start = j;
        while doc_start > 0 && lines[doc_start - 1].trim_start().starts_with("///") {
            doc_start -= 1;
        }
        let doc = lines[doc_start..j].join(" ");
        let c_name = doc
            .split('`')
            .nth(1)
            .filter(|n| n.ends_with("_t") && !n.contains(' '))
            .map(str::to_string);
        out.push((name, c_name));
    }
    out
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

#[test]
fn nothing_outside_ffi_imports_from_it() {
    let root = src();
    let mut offenders = Vec::new();
    for f in rust_files(&root) {
        if f.starts_with(root.join("ffi")) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for l in ffi_imports(&text) {
            offenders.push(format!("{}: {}", f.display(), l.trim()));
        }
    }
    assert!(
        offenders.is_empty(),
        "imports from ffi:\n{}",
        offenders.join("\n")
    );
}

/// The top-level module a source file belongs to (`src/state.rs` → `state`,
/// `src/ffi/copy.rs` → `ffi`); `None` for the crate root.
fn module_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_string())
}

/// The top-level modules `text` names with a `crate::` path.
fn crate_paths(text: &str) -> Vec<String> {
    code_of(text)
        .split("crate::")
        .skip(1)
        .map(ident)
        .filter(|m| !m.is_empty())
        .collect()
}

/// A cycle of `graph` (module → the modules it imports), if it has one.
fn cycle(graph: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        graph: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut c = path[i..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.iter().any(|d| d == m) {
            return None;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(m.to_string());
        None
    }
    let mut done = Vec::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    let root = src();
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in rust_files(&root) {
        let Some(m) = module_of(&root, &f) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        let edges = graph.entry(m.clone()).or_default();
        for to in crate_paths(&text) {
            if to != m && !edges.contains(&to) {
                edges.push(to);
            }
        }
    }
    for m in ["abi", "backend", "ffi", "state"] {
        assert!(graph.contains_key(m), "module {m} not found: {graph:?}");
    }
    assert_eq!(cycle(&graph), None, "import graph: {graph:?}");
}

#[test]
fn every_c_type_is_in_abi_once() {
    let root = src();
    let mut outside = Vec::new();
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut by_c_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut count = 0;
    for f in rust_files(&root) {
        let text = std::fs::read_to_string(&f).unwrap();
        for (name, c_name) in c_types(&text) {
            count += 1;
            let at = format!("{} ({name})", f.display());
            if !f.starts_with(root.join("abi")) {
                outside.push(at.clone());
            }
            by_name.entry(name).or_default().push(at.clone());
            if let Some(c) = c_name {
                by_c_name.entry(c).or_default().push(at);
            }
        }
    }
    assert!(count > 40, "only {count} C types found: the scan is broken");
    assert!(
        outside.is_empty(),
        "C types outside src/abi:\n{}",
        outside.join("\n")
    );
    let twice: Vec<String> = by_name
        .iter()
        .chain(by_c_name.iter())
        .filter(|(_, at)| at.len() > 1)
        .map(|(n, at)| format!("{n}: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "C types defined twice:\n{}",
        twice.join("\n")
    );
}

/// The scanners see what they look for (so that the two tests above cannot pass by seeing
/// nothing): an import, comments ignored; a struct, an fn type, a duplicate C name.
#[test]
fn the_scanners_find_what_they_look_for() {
    let text = "use crate::ffi::signal::dead_signal;\n// crate::ffi in a comment\n\
                use core::ffi::c_void;\n";
    assert_eq!(ffi_imports(text), ["use crate::ffi::signal::dead_signal;"]);
    let types = "/// `hsa_dim3_t`.\n#[repr(C)]\n#[derive(Clone, Copy)]\npub struct Dim3 {\n}\n\
                 /// A callback.\npub type Cb =\n    unsafe extern \"C\" fn(u64) -> u32;\n\
                 /// Not C.\npub type Alias = u32;\n";
    assert_eq!(
        c_types(types),
        [
            ("Dim3".to_string(), Some("hsa_dim3_t".to_string())),
            ("Cb".to_string(), None)
        ]
    );
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().push(b.to_string());
        }
        g
    };
    assert_eq!(
        cycle(&g(&[("state", "ffi"), ("ffi", "state"), ("ffi", "abi")])),
        Some(vec![
            "ffi".to_string(),
            "state".to_string(),
            "ffi".to_string()
        ])
    );
    assert_eq!(cycle(&g(&[("ffi", "state"), ("state", "abi")])), None);
    assert_eq!(
        crate_paths("use crate::state::{self, lock};\nx = crate::abi::Dim3; // crate::ffi"),
        ["state", "abi"]
    );
}
