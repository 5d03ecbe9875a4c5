//! The environment variables as a user meets them, through `hsainfo` (which opens the default
//! platform, as every tool and the C library do): an empty value means unset in every one, and
//! an unknown value is an error naming the variable and the accepted values.

use std::process::{Command, Output};

/// Every variable the runtime reads.
const VARIABLES: [&str; 6] = [
    "HSA_RT_DEVICE",
    "HSA_RT_SYSFS",
    "HSA_RT_PROFILE",
    "HSA_RT_EMULATION",
    "HSA_XNACK",
    "HSA_RT_LOG",
];

/// `hsainfo` with none of [`VARIABLES`] set but `vars`.
fn hsainfo(vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hsainfo"));
    for v in VARIABLES {
        cmd.env_remove(v);
    }
    cmd.envs(vars.iter().copied()).output().unwrap()
}

/// All of them empty: the same report as none set (the default device, the built-in profile
/// or the live topology, the default execution mode, the kernel's XNACK mode).
#[test]
fn empty_values_mean_unset() {
    let unset = hsainfo(&[]);
    assert!(
        unset.status.success(),
        "{}",
        String::from_utf8_lossy(&unset.stderr)
    );
    let empty: Vec<(&str, &str)> = VARIABLES.iter().map(|&v| (v, "")).collect();
    let out = hsainfo(&empty);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&unset.stdout)
    );
    // Whitespace around a value is ignored, as in `HSA_RT_DEVICE="emulated "`.
    let out = hsainfo(&[("HSA_RT_DEVICE", "emulated "), ("HSA_XNACK", " 0")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An unknown value of each choice variable fails, naming the variable, the value and what
/// is accepted; nothing is read as the default.
#[test]
fn unknown_values_are_errors_naming_the_variable() {
    for (var, value, message) in [
        (
            "HSA_RT_DEVICE",
            "cuda",
            "hsainfo: HSA_RT_DEVICE value 'cuda': expected 'kfd' or 'emulated' (empty or \
             unset: the default) (HSA_STATUS_ERROR_INVALID_ARGUMENT)\n",
        ),
        (
            "HSA_XNACK",
            "on",
            "hsainfo: HSA_XNACK value 'on': expected '0' or '1' (empty or unset: the default) \
             (HSA_STATUS_ERROR_INVALID_ARGUMENT)\n",
        ),
        (
            "HSA_RT_PROFILE",
            "mi50",
            "hsainfo: HSA_RT_PROFILE value 'mi50': expected 'builtin', 'gfx900', 'gfx906', \
             'gfx908', 'gfx90a', 'gfx942', 'gfx1030' or 'gfx1100' (empty or unset: the \
             default) (HSA_STATUS_ERROR_INVALID_ARGUMENT)\n",
        ),
        (
            "HSA_RT_EMULATION",
            "gpu",
            "hsainfo: HSA_RT_EMULATION value 'gpu': expected 'interpret' or 'host' (empty or \
             unset: the default) (HSA_STATUS_ERROR_INVALID_ARGUMENT)\n",
        ),
    ] {
        // On the emulated device, so that HSA_RT_EMULATION is read even where /dev/kfd exists.
        let device = if var == "HSA_RT_DEVICE" {
            value
        } else {
            "emulated"
        };
        let out = hsainfo(&[("HSA_RT_DEVICE", device), (var, value)]);
        assert_eq!(out.status.code(), Some(1), "{var}={value}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            message,
            "{var}={value}"
        );
    }
}

/// The `HSA_*` environment variables the workspace's Rust and C sources read: a literal name
/// given to `env::var`, `env::var_os`, `getenv` or `hsa_linux::env`'s `switch`/`choice`/
/// `path`, or the value of a `const ..._ENV: &str`.
fn variables_read(dir: &std::path::Path, out: &mut std::collections::BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != ".git" {
                variables_read(&path, out);
            }
            continue;
        }
        if !matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "c")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let mut rest = line;
            while let Some(at) = rest.find("\"HSA_") {
                let before = rest[..at].trim_end();
                let tail = &rest[at + 1..];
                let len = tail
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(tail.len());
                let reader = ["var(", "var_os(", "getenv(", "switch(", "choice(", "path("]
                    .iter()
                    .any(|f| before.ends_with(f));
                let constant = line.trim_start().starts_with("const ")
                    || line.trim_start().starts_with("pub const ");
                if tail[len..].starts_with('"')
                    && (reader || (constant && before.ends_with("_ENV: &str =")))
                {
                    out.insert(tail[..len].to_string());
                }
                rest = &tail[len..];
            }
        }
    }
}

/// `docs/environment.md` names every `HSA_*` variable the workspace reads (so it cannot drift
/// from the code): the runtime's seven, the emulated device's recorder and the tests' own.
#[test]
fn environment_doc_lists_every_variable_read() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut read = std::collections::BTreeSet::new();
    variables_read(&root, &mut read);
    for v in VARIABLES
        .iter()
        .chain(&["HSA_RT_SHARED", "HSA_RT_KFD_RECORD"])
    {
        assert!(read.contains(*v), "the scan missed {v}: {read:?}");
    }
    let doc = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
    let missing: Vec<&String> = read
        .iter()
        .filter(|v| !doc.contains(&format!("`{v}`")))
        .collect();
    assert!(missing.is_empty(), "docs/environment.md lacks {missing:?}");
}

/// `HSA_RT_PROFILE` picks a built-in profile (the MI60 of gfx906: its marketing name and 64
/// compute units), and refuses to be set with `HSA_RT_SYSFS`, naming both.
#[test]
fn hsa_rt_profile_picks_a_builtin_profile() {
    let out = hsainfo(&[("HSA_RT_DEVICE", "emulated"), ("HSA_RT_PROFILE", "gfx906")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("AMD Instinct MI60 / MI50 (emulated)"),
        "{stdout}"
    );
    assert!(stdout.contains("amdgcn-amd-amdhsa--gfx906"), "{stdout}");
    let out = hsainfo(&[
        ("HSA_RT_DEVICE", "emulated"),
        ("HSA_RT_PROFILE", "gfx908"),
        ("HSA_RT_SYSFS", "/nonexistent"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "hsainfo: HSA_RT_SYSFS=\"/nonexistent\" and HSA_RT_PROFILE=gfx908 exclude each other \
         (HSA_STATUS_ERROR_INVALID_ARGUMENT)\n"
    );
}
