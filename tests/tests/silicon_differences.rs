//! `docs/silicon-differences.md` names a test for each entry as `` `path::function` ``; every
//! one must exist (a function `fn function` in the file `path`, relative to the workspace
//! root), so that the page cannot keep pointing at a test that was renamed or removed.

use std::path::Path;

/// The `` `path.rs::name` `` references of `text`.
fn references(text: &str) -> Vec<(&str, &str)> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|code| code.split_once(".rs::"))
        .collect()
}

/// The references of `text` whose function is not in its file under `root` (as
/// `path.rs::name`).
fn missing(root: &Path, text: &str) -> Vec<String> {
    references(text)
        .into_iter()
        .filter(|(path, name)| {
            let source =
                std::fs::read_to_string(root.join(format!("{path}.rs"))).unwrap_or_default();
            !source.contains(&format!("fn {name}("))
        })
        .map(|(path, name)| format!("{path}.rs::{name}"))
        .collect()
}

#[test]
fn every_test_the_page_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let page = std::fs::read_to_string(root.join("docs/silicon-differences.md")).unwrap();
    // The page names a test for each entry that has one (ten today).
    assert!(references(&page).len() >= 10, "{:?}", references(&page));
    assert_eq!(missing(root, &page), Vec::<String>::new());
    // A renamed test and a moved file are both caught.
    let renamed = "`emulator/tests/emulated_queue.rs::create_queue_checks_its_argument`";
    assert_eq!(
        missing(root, renamed),
        ["emulator/tests/emulated_queue.rs::create_queue_checks_its_argument"]
    );
    let moved = "`emulator/tests/queue.rs::create_queue_checks_its_arguments`";
    assert_eq!(missing(root, moved).len(), 1);
}
