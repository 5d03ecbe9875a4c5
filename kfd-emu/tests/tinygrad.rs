//! tinygrad 0.14.0's own AMD driver (`DEV=KFD+AMD:LLVM`: its Python KFD driver, PM4 or AQL
//! compute queues, SDMA copies, kernels compiled by Debian's `libLLVM-19.so`) on the emulated
//! gfx942 under kfd-emu: the proof, `(Tensor([1,2,3])+1).tolist()` prints `[2, 3, 4]`,
//! in both queue modes. tinygrad maps the doorbells and its buffer objects with the mmap
//! system call (through `ctypes.CDLL('libc.so.6')`), which the preloaded library serves at
//! the system-call level (`kfd-emu/src/preload/syscall_mmap.rs`); its AQL ring has zero
//! headers past its packets (`hsa-emu`'s CP stops at the write index).
//!
//! Needs `$TINYGRAD_PYTHON`: a Python with tinygrad 0.14.0, and for test_tiny
//! `$TINYGRAD_TEST_TINY` (the sdist's `test/test_tiny.py`) and `clang-19` (`.ci/run` makes a
//! venv from PyPI, extracts the file and installs `libllvm19` and `clang-19`); each test says
//! skipped without what it needs.

mod common;

use std::path::PathBuf;
use std::process::Command;

/// `$TINYGRAD_PYTHON` when it imports tinygrad 0.14.0; `None` (said) otherwise.
fn tinygrad_python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("TINYGRAD_PYTHON").filter(|v| !v.is_empty()) else {
        println!("skipped: TINYGRAD_PYTHON is not set (a Python with tinygrad 0.14.0)");
        return None;
    };
    let out = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('tinygrad'))",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() && o.stdout == b"0.14.0\n" => Some(python.into()),
        Ok(o) => {
            println!(
                "skipped: {python:?} has no tinygrad 0.14.0 ({}{})",
                String::from_utf8_lossy(&o.stdout).trim(),
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            println!("skipped: {python:?}: {e}");
            None
        }
    }
}

/// The proof command on the gfx942 profile, in PM4 mode and with `AMD_AQL=1`.
#[test]
fn tensor_plus_one_on_the_emulated_gfx942_in_both_queue_modes() {
    let Some(python) = tinygrad_python() else {
        return;
    };
    for aql in ["0", "1"] {
        let options = ["--profile".to_owned(), "gfx942".to_owned()];
        let envs = [
            ("DEV", "KFD+AMD:LLVM".to_owned()),
            ("AMD_AQL", aql.to_owned()),
        ];
        let Some(out) = common::kfd_emu_with(
            &options,
            &envs,
            &python,
            &[
                "-c",
                "from tinygrad import Tensor; print((Tensor([1,2,3])+1).tolist())",
            ],
        ) else {
            return;
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout == "[2, 3, 4]\n",
            "AMD_AQL={aql}: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A directory whose `clang` is Debian's `clang-19`, for tinygrad's CPU device (test_tiny's
/// `test_const` and `test_eye` copy through it; it runs `clang` by that name); `None` (said)
/// when neither `clang` nor `clang-19` is on `PATH`.
fn clang_dir() -> Option<PathBuf> {
    let on_path = |name: &str| {
        Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let dir = std::env::temp_dir().join(format!("kfd-emu-tinygrad-clang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if on_path("clang") {
        return Some(dir);
    }
    if !on_path("clang-19") {
        println!("skipped: neither clang nor clang-19 on PATH (apt install clang-19)");
        return None;
    }
    let link = dir.join("clang");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("/usr/bin/clang-19", &link).unwrap();
    Some(dir)
}

/// tinygrad 0.14.0's `test/test_tiny.py` (from its sdist, at `$TINYGRAD_TEST_TINY`; `.ci/run`
/// extracts it) under kfd-emu on gfx942, in PM4 mode and with `AMD_AQL=1`: all 21 tests run,
/// 19 pass and the two that tinygrad itself skips off OpenCL (`test_image`,
/// `test_beam_image`: "image only supported on CL") are skipped.
#[test]
fn test_tiny_passes_on_the_emulated_gfx942_in_both_queue_modes() {
    let Some(python) = tinygrad_python() else {
        return;
    };
    let Some(test_tiny) = std::env::var_os("TINYGRAD_TEST_TINY").filter(|v| !v.is_empty()) else {
        println!("skipped: TINYGRAD_TEST_TINY is not set (test/test_tiny.py of the 0.14.0 sdist)");
        return;
    };
    let Some(clang) = clang_dir() else {
        return;
    };
    let path = std::env::join_paths(std::iter::once(clang).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap()
    .into_string()
    .unwrap();
    let test_tiny = test_tiny.to_string_lossy().into_owned();
    for aql in ["0", "1"] {
        let options = ["--profile".to_owned(), "gfx942".to_owned()];
        let envs = [
            ("DEV", "KFD+AMD:LLVM".to_owned()),
            ("AMD_AQL", aql.to_owned()),
            ("PATH", path.clone()),
        ];
        let Some(out) = common::kfd_emu_with(&options, &envs, &python, &[&test_tiny, "-v"]) else {
            return;
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        let not_ok: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(" ... ") && !l.ends_with(" ... ok"))
            .collect();
        assert!(
            out.status.success()
                && stderr.contains("\nRan 21 tests in ")
                && stderr.contains("\nOK (skipped=2)")
                && not_ok
                    == [
                        "test_beam_image (__main__.TestTiny.test_beam_image) ... skipped 'image only supported on CL'",
                        "test_image (__main__.TestTiny.test_image) ... skipped 'image only supported on CL'",
                    ],
            "AMD_AQL={aql}: {:?}\n{stderr}",
            out.status
        );
    }
}
