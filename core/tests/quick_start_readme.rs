//! One quick start, in three places that cannot drift apart:
//! - `src/lib.rs`'s `## Quick start` doctest (`cargo test -p hsa-core --doc` runs it);
//! - `examples/quick_start.rs` (`cargo run -p hsa-core --example quick_start`): its program is
//!   the doctest's visible lines (rustdoc's hidden `# ` lines left out), line for line;
//! - the README's `## Quick start` block: a run of consecutive lines of that program (an
//!   excerpt, at least [`MIN_EXCERPT_LINES`]), so the README shows code that runs.

use std::path::Path;

/// The shortest excerpt the README may show, lines.
const MIN_EXCERPT_LINES: usize = 10;

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

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// The doctest's visible lines.
fn doctest(lib: &str) -> Vec<String> {
    let doc: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    fenced_block(&doc, "## Quick start", "")
        .into_iter()
        .filter(|l| !hidden(l))
        .map(str::to_owned)
        .collect()
}

/// The example's program: its lines after the leading `//!` header and the blank line after it,
/// without the `#[rustfmt::skip]` (and its comment) that keeps it in the doctest's layout.
fn example_program(example: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = example
        .lines()
        .skip_while(|l| l.starts_with("//!"))
        .skip_while(|l| l.is_empty())
        .collect();
    if let Some(at) = lines.iter().position(|l| *l == "#[rustfmt::skip]") {
        lines.remove(at);
        if at > 0 && lines[at - 1].starts_with("// ") {
            lines.remove(at - 1);
        }
    }
    lines
}

#[test]
fn the_example_is_the_crate_doc_quick_start() {
    let doctest = doctest(&read("src/lib.rs"));
    let example = read("examples/quick_start.rs");
    let program = example_program(&example);
    assert!(
        doctest.len() > 50,
        "the doctest has {} lines",
        doctest.len()
    );
    for (i, (d, e)) in doctest.iter().zip(&program).enumerate() {
        assert_eq!(d, e, "line {} of the quick start differs", i + 1);
    }
    assert_eq!(
        doctest.len(),
        program.len(),
        "lines in lib.rs vs examples/quick_start.rs"
    );
}

#[test]
fn the_readme_shows_an_excerpt_of_the_example() {
    let example = read("examples/quick_start.rs");
    let program = example_program(&example);
    let readme = read("../README.md");
    let shown = fenced_block(&readme, "## Quick start", "rust");
    assert!(
        shown.len() >= MIN_EXCERPT_LINES,
        "the README's excerpt has {} lines",
        shown.len()
    );
    let found = program
        .windows(shown.len())
        .any(|w| w.iter().zip(&shown).all(|(p, s)| p == s));
    assert!(
        found,
        "the README's quick start is not {} consecutive lines of examples/quick_start.rs:\n{}",
        shown.len(),
        shown.join("\n")
    );
}
