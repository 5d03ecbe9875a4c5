//! The README's quick start is the crate docs' quick start: the Rust block under the README's
//! `## Quick start: the Rust API` equals the visible lines of the doctest under `## Quick
//! start` in `src/lib.rs` (rustdoc's hidden `# ` lines left out), so the README shows a
//! program `cargo test -p hsa-core --doc` runs.

use std::path::Path;

/// The lines of the first ```` ``` ```` fenced block after the line `heading` in `text`, the
/// fence's info string checked to be `info`.
fn fenced_block<'a>(text: &'a str, heading: &str, info: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| l.trim_end() != heading);
    assert!(lines.next().is_some(), "no line {heading:?}");
    let open = lines
        .find(|l| l.starts_with("```"))
        .unwrap_or_else(|| panic!("no code block after {heading:?}"));
    assert_eq!(
        open,
        format!("```{info}"),
        "the block's fence after {heading:?}"
    );
    lines.take_while(|l| !l.starts_with("```")).collect()
}

/// Whether rustdoc hides a doctest line (`# ` or a lone `#`, after leading whitespace).
fn hidden(line: &str) -> bool {
    let t = line.trim_start();
    t == "#" || t.starts_with("# ")
}

#[test]
fn readme_quick_start_is_the_crate_doc_quick_start() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs");
    let readme = std::fs::read_to_string(root.join("../README.md")).expect("read README.md");
    let doc: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let doctest: Vec<&str> = fenced_block(&doc, "## Quick start", "")
        .into_iter()
        .filter(|l| !hidden(l))
        .collect();
    let shown = fenced_block(&readme, "## Quick start: the Rust API", "rust");
    assert!(
        doctest.len() > 50,
        "the doctest has {} lines",
        doctest.len()
    );
    for (i, (d, r)) in doctest.iter().zip(&shown).enumerate() {
        assert_eq!(d, r, "line {} of the quick start differs", i + 1);
    }
    assert_eq!(doctest.len(), shown.len(), "lines in lib.rs vs README.md");
}
