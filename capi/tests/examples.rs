//! The C and HIP examples, built and run exactly as their header comments say (`c/vector_copy.c`,
//! `hip/vector_add.hip`): every command line of the header runs in `sh` from the repository's
//! root, except the first, `cargo build --release -p hsa-capi`, which the test's own build of
//! the library stands in for; `target/` becomes a temporary directory holding that library as
//! `release/libhsa_runtime64.so`, so nothing is written to the checkout.
//!
//! Skips (`skipped: ...`) without gcc and Debian's `hsa/hsa.h` (the C example) or without
//! hipcc (the HIP example).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The command lines of the header comment of `file`: in its leading comment block, the lines
/// indented by three spaces after the comment marker (` *` in C, `//` in HIP).
fn header_commands(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).expect("read the example");
    let mut commands = Vec::new();
    for line in text.lines() {
        let body = if let Some(rest) = line.strip_prefix("//") {
            rest
        } else if let Some(rest) = line.strip_prefix(" *") {
            rest
        } else if let Some(rest) = line.strip_prefix("/*") {
            rest
        } else {
            break;
        };
        if let Some(command) = body.strip_prefix("   ") {
            commands.push(command.trim_end_matches("*/").trim().to_string());
        }
    }
    commands
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the header's commands of `example` (relative to the crate) and returns the last
/// one's stdout, asserting each succeeded.
fn run_header(name: &str, example: &str) -> String {
    let file = common::crate_dir().join(example);
    let commands = header_commands(&file);
    assert!(
        commands.len() >= 3,
        "{example}: header commands {commands:?}"
    );
    assert_eq!(
        commands[0], "cargo build --release -p hsa-capi",
        "{example}"
    );
    let root = common::crate_dir().join("..");
    let target = common::temp_dir(name);
    let release = target.join("release");
    std::fs::create_dir_all(&release).expect("create release dir");
    std::os::unix::fs::symlink(common::built_library(), release.join("libhsa_runtime64.so"))
        .expect("symlink the library");
    let mut stdout = String::new();
    for command in &commands[1..] {
        let command = command.replace("target/", &format!("{}/", target.display()));
        let out = Command::new("sh")
            .args(["-c", &command])
            .current_dir(&root)
            .env_remove("HSA_RT_SYSFS")
            .env_remove("HSA_RT_EMULATION")
            .output()
            .expect("run sh");
        stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{example}: `{command}` failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    stdout
}

#[test]
fn c_example_builds_and_runs_as_its_header_says() {
    if !(Path::new("/usr/include/hsa/hsa.h").exists() && have("gcc")) {
        println!(
            "skipped: /usr/include/hsa/hsa.h or gcc missing (install libhsa-runtime-dev, gcc)"
        );
        return;
    }
    let stdout = run_header("example-c", "c/vector_copy.c");
    assert_eq!(
        stdout.lines().last(),
        Some("vector_copy: verified 65536 elements"),
        "{stdout}"
    );
}

#[test]
fn hip_example_builds_and_runs_as_its_header_says() {
    if !have("hipcc") {
        println!("skipped: hipcc not found (install hipcc, libamdhip64-dev, rocm-device-libs)");
        return;
    }
    let stdout = run_header("example-hip", "hip/vector_add.hip");
    assert_eq!(
        stdout,
        "vector_add: verified 65536 elements on gfx90a:sramecc+:xnack-\n"
    );
}

/// The header parser finds exactly the command lines.
#[test]
fn header_commands_are_the_indented_lines() {
    let dir: PathBuf = common::crate_dir();
    let c = header_commands(&dir.join("c/vector_copy.c"));
    assert_eq!(c.len(), 5, "{c:?}");
    assert!(c[3].starts_with("gcc "), "{c:?}");
    let hip = header_commands(&dir.join("hip/vector_add.hip"));
    assert_eq!(hip.len(), 4, "{hip:?}");
    assert!(
        hip[2].starts_with("hipcc --offload-arch=gfx90a "),
        "{hip:?}"
    );
}
