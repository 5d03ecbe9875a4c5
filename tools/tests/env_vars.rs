//! The environment variables as a user meets them, through `hsainfo` (which opens the default
//! platform, as every tool and the C library do): an empty value means unset in every one, and
//! an unknown value is an error naming the variable and the accepted values.

use std::process::{Command, Output};

/// Every variable the runtime reads.
const VARIABLES: [&str; 5] = [
    "HSA_RT_DEVICE",
    "HSA_RT_SYSFS",
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
