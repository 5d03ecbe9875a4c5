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

/// The topology seeds are [`topology_seed`] of the four captured dumps (checked when the
/// shared test data is present; `HSA_RT_WRITE_SEEDS=1` rewrites them), and each builds a tree
/// whose first nodes read back exactly as the dump's own.
#[test]
fn topology_seeds_encode_the_captured_dumps() {
    use hsa_linux::topology::Topology;
    use hsa_tests::fuzz_targets::{topology_seed, topology_tree};
    let shared = hsa_test_support::shared::shared_dir();
    let dir = fuzz_dir().join("seeds/topology");
    let mut n = 0;
    for case in [
        "mi210-8gpu-xgmi-pcie-topology",
        "mi25-gfx900-2018-topology",
        "mi300x-cpx-64part-topology",
        "mi308x-cpx-topology",
    ] {
        let seed_path = dir.join(case);
        let dump = shared
            .join("testdata/kfd-topology")
            .join(case)
            .join("topology");
        if dump.is_dir() {
            let fresh = topology_seed(&dump);
            // A switch (hsa_linux::env): `HSA_RT_WRITE_SEEDS=0` or empty does not write.
            if hsa_linux::env::switch("HSA_RT_WRITE_SEEDS").unwrap() {
                std::fs::write(&seed_path, &fresh).unwrap();
            }
            let seed = std::fs::read(&seed_path).unwrap();
            assert!(
                seed == fresh,
                "{case}: seed is stale (HSA_RT_WRITE_SEEDS=1)"
            );
            let root = std::path::Path::new("/seed");
            let t = Topology::read_from(&topology_tree(root, &seed), root)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            let whole = Topology::read(&dump).unwrap();
            assert_eq!(t.nodes.len(), whole.nodes.len().min(4), "{case}");
            assert_eq!(t.generation_id, whole.generation_id, "{case}");
            assert_eq!(t.system, whole.system, "{case}");
            for (a, b) in t.nodes.iter().zip(&whole.nodes) {
                assert_eq!(a.properties, b.properties, "{case}");
            }
            assert!(t.gpu_count() >= 1, "{case}");
            n += 1;
        }
    }
    assert!(n == 0 || n == 4, "{n} of the four dumps found");
    // The repository's own trees (always present): the MI60 profile's and the GPU-only MI100.
    for case in ["mi60-gfx906", "mi100-gpu-only"] {
        let tree = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/kfd-topology")
            .join(case)
            .join("topology");
        let seed_path = dir.join(case);
        let fresh = topology_seed(&tree);
        if hsa_linux::env::switch("HSA_RT_WRITE_SEEDS").unwrap() {
            std::fs::write(&seed_path, &fresh).unwrap();
        }
        let seed = std::fs::read(&seed_path)
            .unwrap_or_else(|e| panic!("{case}: {e} (HSA_RT_WRITE_SEEDS=1 writes it)"));
        assert!(
            seed == fresh,
            "{case}: seed is stale (HSA_RT_WRITE_SEEDS=1)"
        );
        let root = std::path::Path::new("/seed");
        let t = Topology::read_from(&topology_tree(root, &seed), root)
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(t, Topology::read(&tree).unwrap(), "{case}");
    }
}

/// The seeds of the engine and image targets are what `hsa_tests::fuzz_targets::seeds`
/// builds from the runtime's own packet, MQD, IH and image builders (`HSA_RT_WRITE_SEEDS=1`
/// rewrites them), and each runs through its target.
#[test]
fn engine_and_image_seeds_are_the_builders_output() {
    use hsa_tests::fuzz_targets::seeds::seeds;
    let write = std::env::var_os("HSA_RT_WRITE_SEEDS").is_some_and(|v| v == "1");
    for (target, name, bytes) in seeds() {
        let path = fuzz_dir().join("seeds").join(target).join(name);
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (HSA_RT_WRITE_SEEDS=1 writes it)", path.display()));
        assert!(
            on_disk == bytes,
            "{} differs from its builder",
            path.display()
        );
        let run = TARGETS.iter().find(|(t, _)| *t == target).unwrap().1;
        run(&bytes);
    }
}

/// The checked-in topology corpus mostly reaches past the reader's checks: at least half of
/// its inputs build a tree `Topology::read_from` accepts, so that fuzzing from it exercises
/// the completion and the derived values, not only the refusals. (The reader became stricter
/// after the corpus was minimized: 1 of its 40 inputs still passed.)
#[test]
fn the_topology_corpus_mostly_reaches_an_accepted_topology() {
    use hsa_tests::fuzz_targets::topology_accepts;
    let dir = fuzz_dir().join("corpus/topology");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let accepted = files
        .iter()
        .filter(|p| topology_accepts(&std::fs::read(p).unwrap()))
        .count();
    assert!(
        files.len() >= 20 && accepted * 2 >= files.len(),
        "{accepted} of {} topology corpus inputs are accepted",
        files.len()
    );
}
