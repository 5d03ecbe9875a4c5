//! `HSA_RT_LOG`, a log level: `1` (or `info`) prints each failing call's error on stderr,
//! naming its status once, and the device `hsa_init` opened; unset, empty, `warn`, `error`,
//! `0` and `off` print neither (nothing here is a warning or an error); another value makes
//! `hsa_init` fail naming the variable. Each case runs this test binary again as a child with
//! the variable set (the library reads the process environment), running only [`child`].

use std::process::Command;

use hsa_runtime64::ffi::system::{hsa_init, hsa_shut_down};

/// Set in the child's environment: [`child`] does nothing without it.
const CHILD_ENV: &str = "HSA_RT_LOG_TEST_CHILD";

/// In the child: `hsa_init`, then `hsa_shut_down` twice (the second fails with
/// NOT_INITIALIZED), printing the statuses.
#[test]
fn child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let init = hsa_init();
    let first = hsa_shut_down();
    let second = hsa_shut_down();
    println!("statuses {init:#x} {first:#x} {second:#x}");
}

/// The child's stdout and stderr with `HSA_RT_LOG` set to `value` (`None`: unset).
fn run(value: Option<&str>) -> (String, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .env("HSA_RT_DEVICE", "emulated")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_RT_EMULATION")
        .env_remove("HSA_XNACK");
    match value {
        Some(v) => cmd.env("HSA_RT_LOG", v),
        None => cmd.env_remove("HSA_RT_LOG"),
    };
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hsa_rt_log_is_a_level() {
    for value in ["1", "info", " 1\n", "debug"] {
        let (stdout, stderr) = run(Some(value));
        assert!(stdout.contains("statuses 0x0 0x0 0x100b"), "{stdout}");
        assert_eq!(
            stderr,
            "hsa-rt: hsa_init: running on the emulated device\n\
             hsa-rt: hsa_shut_down: hsa_shut_down called more often than hsa_init \
             (HSA_STATUS_ERROR_NOT_INITIALIZED)\n",
            "{value:?}"
        );
    }
    // trace: also each ioctl the emulated device answers (AMDKFD_IOC_GET_VERSION first).
    let (_, stderr) = run(Some("trace"));
    assert!(
        stderr.starts_with("hsa-rt: /dev/kfd ioctl 0x80084b01 answered: Ok(())\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hsa-rt: hsa_init: running on the emulated device\n"),
        "{stderr}"
    );
    for value in [
        None,
        Some(""),
        Some("0"),
        Some("off"),
        Some("error"),
        Some("warn"),
    ] {
        let (stdout, stderr) = run(value);
        assert!(
            stdout.contains("statuses 0x0 0x0 0x100b"),
            "{value:?}: {stdout}"
        );
        assert_eq!(stderr, "", "{value:?}");
    }
    // An unknown value: hsa_init fails with INVALID_ARGUMENT, and the message is printed
    // (the variable was set, so its user wants to hear about errors).
    let (stdout, stderr) = run(Some("yes"));
    assert!(stdout.contains("statuses 0x1001 0x100b 0x100b"), "{stdout}");
    assert!(
        stderr.starts_with(
            "hsa-rt: hsa_init: HSA_RT_LOG value 'yes': expected '0' or 'off', 'error', 'warn', \
             '1' or 'info', 'debug', 'trace' (empty or unset: 'warn') \
             (HSA_STATUS_ERROR_INVALID_ARGUMENT)\n"
        ),
        "{stderr}"
    );
}
