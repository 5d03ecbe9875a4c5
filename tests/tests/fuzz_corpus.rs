//! Replays every checked-in fuzz input through the same harness functions the `cargo fuzz`
//! targets call: the minimized corpus (`fuzz/corpus/<target>/`), the hand-made seeds
//! (`fuzz/seeds/<target>/`) and every crash or timeout input ever found
//! (`fuzz/artifacts/<target>/`, kept as regression files).

use std::path::PathBuf;

use hsa_tests::fuzz_targets::TARGETS;

fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn replay(kind: &str, target: &str, run: fn(&[u8])) -> usize {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut n = 0;
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    files.sort();
    for path in files {
        if !path.is_file() {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| run(&data));
        assert!(r.is_ok(), "{} panicked", path.display());
        n += 1;
    }
    n
}

#[test]
fn corpus_seeds_and_artifacts_replay_cleanly() {
    for &(target, run) in TARGETS {
        let corpus = replay("corpus", target, run);
        let seeds = replay("seeds", target, run);
        let artifacts = replay("artifacts", target, run);
        println!("{target}: {corpus} corpus, {seeds} seeds, {artifacts} artifacts");
        // Every target has a checked-in corpus or seeds: a replay of nothing tests nothing.
        assert!(
            corpus + seeds > 0,
            "no corpus or seeds for fuzz target {target}"
        );
    }
}

#[test]
fn every_target_has_a_fuzz_binary() {
    for &(target, _) in TARGETS {
        let src = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        let text = std::fs::read_to_string(&src).unwrap();
        assert!(
            text.contains(&format!("hsa_tests::fuzz_targets::{target}(")),
            "{} does not call its harness",
            src.display()
        );
    }
}
