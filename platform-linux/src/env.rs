//! The environment variables hsa-rt reads, and the four kinds of value they take. Every
//! variable is read through one function of its kind, so a spelling means the same in each:
//!
//! | kind | unset | empty | accepted | anything else |
//! |---|---|---|---|---|
//! | switch ([`switch`]) | off | off | `0` off, `1` on | error |
//! | choice ([`choice`]) | the default | the default | the listed names | error |
//! | path ([`path`]) | none | none | any path | — |
//! | log level ([`log_level`], `HSA_RT_LOG` only) | `warn` | `warn` | see [`LOG_ENV`] | error |
//!
//! An empty value is the same as no value (`HSA_RT_LOG= app` logs at the default level, as
//! `HSA_RT_DEVICE= app` picks the device as if unset), so a variable can be switched off on a
//! command line without `env -u`. Switch, choice and log-level values are compared after
//! trimming ASCII whitespace (`$(cat file)` and hand-written values carry stray spaces); a
//! value that is not UTF-8, or not one of the accepted ones, is [`Status::InvalidArgument`]
//! naming the variable, the value and what is accepted — never silently read as the default.

use std::ffi::OsStr;
use std::path::PathBuf;

use hsa_core::{error, Error, Status};

/// `HSA_RT_DEVICE`, a choice: `kfd` (amdkfd through `/dev/kfd`) or `emulated` (the emulated
/// device); unset or empty: `/dev/kfd` when it exists, else the emulated device.
pub const DEVICE_ENV: &str = "HSA_RT_DEVICE";

/// `HSA_RT_SYSFS`, a path: a captured KFD topology (the directory holding `nodes/`) for the
/// emulated device instead of its built-in profile; unset or empty: the built-in profile.
pub const SYSFS_ENV: &str = "HSA_RT_SYSFS";

/// `HSA_RT_PROFILE`, a choice: which of the emulated device's built-in profiles it plays
/// (`builtin`, `gfx900`, `gfx906`, `gfx908`, `gfx90a`, `gfx942`, `gfx1030`, `gfx1100`: hsa-emu's
/// `device::BUILTIN_PROFILES`); unset or empty: `builtin`. Excludes `HSA_RT_SYSFS`.
pub const PROFILE_ENV: &str = "HSA_RT_PROFILE";

/// `HSA_XNACK`, a choice, as ROCR reads it: `1` asks for XNACK on, `0` for off; unset or
/// empty leaves the kernel's mode. Not a switch: unset and `0` mean different things.
pub const XNACK_ENV: &str = "HSA_XNACK";

/// `HSA_RT_EMULATION`, a choice: how the emulated device runs kernels, `interpret` or `host`;
/// unset or empty: the default (see `emulated::ExecutionMode`).
pub const EMULATION_ENV: &str = "HSA_RT_EMULATION";

/// `HSA_RT_LOG`, a log level ([`log_level`]): how much of the runtime's `log` records the
/// stderr logger of the C library and the tools ([`crate::logger`]) prints:
///
/// | value | level | what is printed |
/// |---|---|---|
/// | `0`, `off` | off | nothing (a queue error without a callback is still printed before the abort) |
/// | `error` | error | queue errors with their detail |
/// | unset, empty, `warn` | warn | and warnings: the emulated device chosen, a kernel's host fallback |
/// | `1`, `info` | info | and each failing C API call's error, the device opened |
/// | `debug` | debug | and queues created, code objects loaded, each dispatch the emulated device runs |
/// | `trace` | trace | and each packet processed, each ioctl the emulated device answers |
///
/// A Rust program that installs its own `log` backend chooses the level there; the variable
/// is read only by [`crate::logger::install_stderr_logger`].
pub const LOG_ENV: &str = "HSA_RT_LOG";

/// `HSA_ENABLE_SDMA`, a choice, as ROCR reads it: `0` keeps async copies off the GPUs' SDMA
/// queues (the C library copies on the host), `1` or unset or empty lets them use SDMA
/// ([`sdma_enabled`]).
pub const SDMA_ENV: &str = "HSA_ENABLE_SDMA";

/// Whether async copies may use SDMA queues ([`SDMA_ENV`]): `true` unless it is `0`.
///
/// # Errors
/// [`Status::InvalidArgument`] naming the variable, its value and `'0', '1'` for any other
/// value.
pub fn sdma_enabled() -> Result<bool, Error> {
    Ok(parse_choice(
        SDMA_ENV,
        std::env::var_os(SDMA_ENV).as_deref(),
        &[("0", false), ("1", true)],
    )?
    .unwrap_or(true))
}

/// `HSA_RT_SHARED`, a path, for tests: the `shared` directory holding `testdata/` (captured
/// topologies); unset or empty: `../shared` beside the checkout.
pub const SHARED_ENV: &str = "HSA_RT_SHARED";

/// The value as text for comparison: trimmed, `None` when unset or empty.
///
/// # Errors
/// [`Status::InvalidArgument`] naming `name`, the bytes and `expected` when it is not UTF-8.
fn text<'v>(
    name: &str,
    value: Option<&'v OsStr>,
    expected: &str,
) -> Result<Option<&'v str>, Error> {
    let Some(value) = value else {
        return Ok(None);
    };
    let Some(s) = value.to_str() else {
        return Err(error!(
            Status::InvalidArgument,
            "{name} value {value:?} is not UTF-8: expected {expected}"
        ));
    };
    let s = s.trim_ascii();
    Ok((!s.is_empty()).then_some(s))
}

/// What a switch accepts, for messages.
const SWITCH_VALUES: &str = "'1' (on), '0' or empty (off)";

/// A switch's value (`value` of variable `name`): `false` when unset, empty or `0`, `true`
/// for `1`.
///
/// # Errors
/// [`Status::InvalidArgument`] `"<name> value '<v>': expected '1' (on), '0' or empty (off)"`
/// for any other value (one that is not UTF-8 too).
pub fn parse_switch(name: &str, value: Option<&OsStr>) -> Result<bool, Error> {
    match text(name, value, SWITCH_VALUES)? {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(error!(
            Status::InvalidArgument,
            "{name} value '{other}': expected {SWITCH_VALUES}"
        )),
    }
}

/// The switch `name` in this process's environment ([`parse_switch`]).
///
/// # Errors
/// As [`parse_switch`].
pub fn switch(name: &str) -> Result<bool, Error> {
    parse_switch(name, std::env::var_os(name).as_deref())
}

/// What [`LOG_ENV`] accepts, for messages.
const LOG_VALUES: &str =
    "'0' or 'off', 'error', 'warn', '1' or 'info', 'debug', 'trace' (empty or unset: 'warn')";

/// A log level's value (`value` of variable `name`, [`LOG_ENV`]'s table): `warn` when unset
/// or empty.
///
/// # Errors
/// [`Status::InvalidArgument`] `"<name> value '<v>': expected '0' or 'off', 'error', ..."`,
/// naming the accepted values, for any other value (one that is not UTF-8 too).
pub fn parse_log_level(name: &str, value: Option<&OsStr>) -> Result<log::LevelFilter, Error> {
    use log::LevelFilter;
    match text(name, value, LOG_VALUES)? {
        None | Some("warn") => Ok(LevelFilter::Warn),
        Some("0" | "off") => Ok(LevelFilter::Off),
        Some("error") => Ok(LevelFilter::Error),
        Some("1" | "info") => Ok(LevelFilter::Info),
        Some("debug") => Ok(LevelFilter::Debug),
        Some("trace") => Ok(LevelFilter::Trace),
        Some(other) => Err(error!(
            Status::InvalidArgument,
            "{name} value '{other}': expected {LOG_VALUES}"
        )),
    }
}

/// The level [`LOG_ENV`] asks for in this process's environment ([`parse_log_level`]).
///
/// # Errors
/// As [`parse_log_level`].
pub fn log_level() -> Result<log::LevelFilter, Error> {
    parse_log_level(LOG_ENV, std::env::var_os(LOG_ENV).as_deref())
}

/// A choice's value (`value` of variable `name`): `None` (the caller's default) when unset
/// or empty, else the item of `choices` whose name it is.
///
/// # Errors
/// [`Status::InvalidArgument`] `"<name> value '<v>': expected 'a' or 'b' (empty or unset:
/// the default)"`, listing the names of `choices`, for any other value (one that is not
/// UTF-8 too).
pub fn parse_choice<T: Copy>(
    name: &str,
    value: Option<&OsStr>,
    choices: &[(&str, T)],
) -> Result<Option<T>, Error> {
    let mut expected = String::new();
    for (i, (n, _)) in choices.iter().enumerate() {
        if i > 0 {
            expected.push_str(if i + 1 == choices.len() { " or " } else { ", " });
        }
        expected.push_str(&format!("'{n}'"));
    }
    expected.push_str(" (empty or unset: the default)");
    match text(name, value, &expected)? {
        None => Ok(None),
        Some(v) => choices
            .iter()
            .find(|(n, _)| *n == v)
            .map(|&(_, item)| Some(item))
            .ok_or_else(|| {
                error!(
                    Status::InvalidArgument,
                    "{name} value '{v}': expected {expected}"
                )
            }),
    }
}

/// The choice `name` in this process's environment ([`parse_choice`]).
///
/// # Errors
/// As [`parse_choice`].
pub fn choice<T: Copy>(name: &str, choices: &[(&str, T)]) -> Result<Option<T>, Error> {
    parse_choice(name, std::env::var_os(name).as_deref(), choices)
}

/// A path's value: `None` when unset or empty (an empty path names no file), else the path,
/// whatever its bytes (paths need not be UTF-8). Whether it exists is for its user to say.
pub fn parse_path(value: Option<&OsStr>) -> Option<PathBuf> {
    value.filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The path `name` in this process's environment ([`parse_path`]).
pub fn path(name: &str) -> Option<PathBuf> {
    parse_path(std::env::var_os(name).as_deref())
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt as _;

    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    /// Unset, empty and `0` are off; `1` is on; whitespace around is ignored; anything else,
    /// `true` and `yes` included, is an error naming the variable, the value and the accepted
    /// values.
    #[test]
    fn switches() {
        for (value, on) in [
            (None, false),
            (os(""), false),
            (os("0"), false),
            (os(" 0\n"), false),
            (os("1"), true),
            (os("1\n"), true),
        ] {
            assert_eq!(
                parse_switch("HSA_RT_WRITE_SEEDS", value).unwrap(),
                on,
                "{value:?}"
            );
        }
        for bad in ["yes", "true", "2", "on", "00"] {
            let e = parse_switch("HSA_RT_WRITE_SEEDS", os(bad)).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert_eq!(
                e.detail(),
                format!("HSA_RT_WRITE_SEEDS value '{bad}': expected '1' (on), '0' or empty (off)")
            );
        }
        let e = parse_switch("HSA_RT_WRITE_SEEDS", Some(OsStr::from_bytes(b"\xff"))).unwrap_err();
        assert_eq!(
            e.detail(),
            "HSA_RT_WRITE_SEEDS value \"\\xFF\" is not UTF-8: expected '1' (on), '0' or empty (off)"
        );
    }

    /// `HSA_RT_LOG`: unset and empty are `warn`, `0`/`1` the old switch's off and on (`1`:
    /// failing C API calls, logged at info), each level's name that level; anything else is
    /// an error listing the accepted values.
    #[test]
    fn log_levels() {
        use log::LevelFilter::*;
        for (value, level) in [
            (None, Warn),
            (os(""), Warn),
            (os(" warn\n"), Warn),
            (os("0"), Off),
            (os("off"), Off),
            (os("error"), Error),
            (os("1"), Info),
            (os("info"), Info),
            (os("debug"), Debug),
            (os("trace"), Trace),
        ] {
            assert_eq!(
                parse_log_level("HSA_RT_LOG", value).unwrap(),
                level,
                "{value:?}"
            );
        }
        for bad in ["yes", "2", "INFO", "warning"] {
            let e = parse_log_level("HSA_RT_LOG", os(bad)).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert_eq!(
                e.detail(),
                format!(
                    "HSA_RT_LOG value '{bad}': expected '0' or 'off', 'error', 'warn', '1' or \
                     'info', 'debug', 'trace' (empty or unset: 'warn')"
                )
            );
        }
    }

    /// Unset and empty are the default (`None`); each name gives its item; anything else is an
    /// error listing the names.
    #[test]
    fn choices() {
        let modes = [("interpret", 1), ("host", 2)];
        assert_eq!(
            parse_choice("HSA_RT_EMULATION", None, &modes).unwrap(),
            None
        );
        assert_eq!(
            parse_choice("HSA_RT_EMULATION", os(""), &modes).unwrap(),
            None
        );
        assert_eq!(
            parse_choice("HSA_RT_EMULATION", os("  "), &modes).unwrap(),
            None
        );
        assert_eq!(
            parse_choice("HSA_RT_EMULATION", os("interpret"), &modes).unwrap(),
            Some(1)
        );
        assert_eq!(
            parse_choice("HSA_RT_EMULATION", os("host\n"), &modes).unwrap(),
            Some(2)
        );
        let e = parse_choice("HSA_RT_EMULATION", os("Host"), &modes).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert_eq!(
            e.detail(),
            "HSA_RT_EMULATION value 'Host': expected 'interpret' or 'host' (empty or unset: the \
             default)"
        );
        let three = [("a", 'a'), ("b", 'b'), ("c", 'c')];
        let e = parse_choice("X", os("d"), &three).unwrap_err();
        assert_eq!(
            e.detail(),
            "X value 'd': expected 'a', 'b' or 'c' (empty or unset: the default)"
        );
        let e = parse_choice("X", Some(OsStr::from_bytes(b"a\xff")), &three).unwrap_err();
        assert!(
            e.detail()
                .to_string()
                .starts_with("X value \"a\\xFF\" is not UTF-8"),
            "{e}"
        );
    }

    /// Unset and empty are no path; any other value is the path, bytes as given.
    #[test]
    fn paths() {
        assert_eq!(parse_path(None), None);
        assert_eq!(parse_path(os("")), None);
        assert_eq!(parse_path(os(" /a b")), Some(PathBuf::from(" /a b")));
        let raw = OsStr::from_bytes(b"/t\xff");
        assert_eq!(parse_path(Some(raw)), Some(PathBuf::from(raw)));
    }
}
