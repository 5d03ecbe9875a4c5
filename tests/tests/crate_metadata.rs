//! Every library crate states what crates.io and docs.rs show about it: description,
//! keywords, categories, documentation, readme, license and rust-version, in its own
//! `Cargo.toml` or inherited from the workspace's `[workspace.package]` (which must then hold
//! them), and a `[package.metadata.docs.rs]`; it carries both license files. No manifest
//! names a placeholder repository (`example.invalid`): the repository's address is the
//! owners' to fill in (crates.io does not need one).

use std::path::Path;

/// The library crates: directory and package name.
const LIBRARIES: [(&str, &str); 5] = [
    ("core", "hsa-core"),
    ("platform-linux", "hsa-linux"),
    ("platform-baremetal", "hsa-baremetal"),
    ("emulator", "hsa-emu"),
    ("capi", "hsa-capi"),
];

/// The `key = value` lines of `[section]` in a manifest, value untouched.
fn section(text: &str, name: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == format!("[{name}]");
            continue;
        }
        if let (true, Some((k, v))) = (inside, t.split_once('=')) {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out
}

#[test]
fn library_crates_have_publishing_metadata() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let shared = section(&workspace, "workspace.package");
    assert!(
        !workspace.contains("example.invalid"),
        "Cargo.toml: a placeholder URL"
    );
    assert_eq!(
        shared
            .iter()
            .find(|(k, _)| k == "license")
            .map(|(_, v)| v.as_str()),
        Some("\"MIT OR Apache-2.0\""),
        "the workspace's license"
    );
    for (dir, name) in LIBRARIES {
        let text = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
        let package = section(&text, "package");
        assert!(
            package.contains(&("name".into(), format!("\"{name}\""))),
            "{dir}/Cargo.toml is not {name}"
        );
        for key in [
            "description",
            "keywords",
            "categories",
            "documentation",
            "readme",
            "license",
            "rust-version",
        ] {
            let own = package.iter().find(|(k, _)| k == key);
            let inherited = package
                .iter()
                .any(|(k, v)| *k == format!("{key}.workspace") && v == "true");
            let value = match own {
                Some((_, v)) => v.clone(),
                None if inherited => shared
                    .iter()
                    .find(|(k, _)| k == key)
                    .unwrap_or_else(|| panic!("{name} inherits {key}; the workspace has none"))
                    .1
                    .clone(),
                None => panic!("{name} ({dir}/Cargo.toml) states no {key}"),
            };
            assert!(
                !matches!(value.as_str(), "\"\"" | "[]"),
                "{name}: empty {key}"
            );
        }
        assert!(
            text.contains("\n[package.metadata.docs.rs]\n"),
            "{name} ({dir}/Cargo.toml) has no [package.metadata.docs.rs]"
        );
        assert!(
            !text.contains("example.invalid"),
            "{name}: a placeholder URL"
        );
        for file in ["LICENSE-MIT", "LICENSE-APACHE"] {
            let license = std::fs::read_to_string(root.join(dir).join(file))
                .unwrap_or_else(|e| panic!("{name}: {dir}/{file}: {e}"));
            assert!(
                license.contains(if file == "LICENSE-MIT" {
                    "Permission is hereby granted, free of charge"
                } else {
                    "Apache License\n                           Version 2.0, January 2004"
                }),
                "{name}: {dir}/{file} is not the license's text"
            );
        }
    }
}
