//! tinygrad 0.14.0's own AMD driver (`DEV=KFD+AMD:LLVM`: its Python KFD driver, PM4 or AQL
//! compute queues, SDMA copies, kernels compiled by Debian's `libLLVM-19.so`) on the emulated
//! gfx942 under kfd-emu: the proof, `(Tensor([1,2,3])+1).tolist()` prints `[2, 3, 4]`,
//! in both queue modes. tinygrad maps the doorbells and its buffer objects with the mmap
//! system call (through `ctypes.CDLL('libc.so.6')`), which the preloaded library serves at
//! the system-call level (`kfd-emu/src/preload/syscall_mmap.rs`); its AQL ring has zero
//! headers past its packets (`hsa-emu`'s CP stops at the write index).
//!
//! Needs `$TINYGRAD_PYTHON`: a Python with tinygrad 0.14.0 (`.ci/run` makes a venv with it
//! from PyPI and installs `libllvm19`); says skipped without it.

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
