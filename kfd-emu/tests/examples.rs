//! The examples of kfd-emu's docs (`src/main.rs`, `## Examples`), run as written: each line of
//! the block in `sh` from the repository's root, except the first, `cargo build -p kfd-emu`,
//! which the test's build stands in for (`target/debug/kfd-emu` becomes the binary cargo built
//! for the test, with its freshly built preload library; other `target/` paths a temporary
//! directory). Skips (`skipped: ...`) without rocminfo, gcc or Debian's ROCR and headers, or
//! where kfd-emu cannot make its namespace.

mod common;

use std::path::Path;
use std::process::Command;

/// The lines of the fenced block under `//! ## Examples` in `src/main.rs`.
fn example_commands() -> Vec<String> {
    let main = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs");
    let text = std::fs::read_to_string(main).expect("read src/main.rs");
    let mut lines = text
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .skip_while(|l| *l != "## Examples");
    let _ = lines.find(|l| l.starts_with("```"));
    lines
        .take_while(|l| !l.starts_with("```"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_documented_examples_run() {
    let commands = example_commands();
    assert_eq!(commands.len(), 4, "{commands:?}");
    assert_eq!(commands[0], "cargo build -p kfd-emu");
    for need in ["/usr/bin/rocminfo", common::LIBHSA, common::HSA_H] {
        if !Path::new(need).exists() {
            println!("skipped: {need} missing (apt install rocminfo libhsa-runtime-dev)");
            return;
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = std::env::temp_dir().join(format!("kfd-emu-examples-{}", std::process::id()));
    std::fs::create_dir_all(&target).expect("create temp dir");
    let kfd_emu = env!("CARGO_BIN_EXE_kfd-emu");
    let preload = common::preload_library();
    for command in &commands[1..] {
        let command = command
            .replace("target/debug/kfd-emu", "@KFD_EMU@")
            .replace("target/", &format!("{}/", target.display()))
            .replace("@KFD_EMU@", kfd_emu);
        let out = Command::new("sh")
            .args(["-c", &command])
            .current_dir(&root)
            .env("KFD_EMU_PRELOAD", &preload)
            .env_remove("HSA_RT_SYSFS")
            .env_remove("HSA_XNACK")
            .env_remove("HSA_RT_EMULATION")
            .env_remove("HSA_RT_KFD_RECORD")
            .output()
            .expect("run sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(1) && stderr.contains("cannot make one") {
            println!("skipped: {}", stderr.trim());
            return;
        }
        assert!(
            out.status.success(),
            "`{command}` failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        if command.contains("rocminfo") {
            assert!(
                stdout.contains("  Name:                    gfx90a"),
                "rocminfo lists no gfx90a agent:\n{stdout}"
            );
        }
        if command.contains("vector_copy_rocr testdata") {
            assert_eq!(
                stdout.lines().last(),
                Some("vector_copy: verified 65536 elements"),
                "{stdout}\n{stderr}"
            );
        }
    }
}
