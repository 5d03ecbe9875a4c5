//! The stderr logger of the C library and the tools: a `log` backend printing each record as
//! one line, `hsa-rt: <message>`, at the level `HSA_RT_LOG` asks for
//! ([`crate::env::LOG_ENV`]). A Rust program embedding the runtime may install any other `log`
//! backend instead; the runtime's crates log through the `log` facade only.

use std::io::Write as _;

use hsa_core::Error;
use log::{LevelFilter, Log, Metadata, Record};

/// Prints records on stderr, one line each: `hsa-rt: <message>`. Enabled up to
/// `log::max_level()`, which [`install_stderr_logger`] sets.
#[derive(Debug)]
pub struct StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            // One write per line, so that lines of several threads do not mix; a failed
            // write is dropped (there is nowhere else to say it).
            let line = format!("hsa-rt: {}\n", record.args());
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// The logger [`install_stderr_logger`] installs.
static LOGGER: StderrLogger = StderrLogger;

/// Makes [`StderrLogger`] the process's `log` backend at the level of `HSA_RT_LOG`
/// ([`crate::env::log_level`]), unless the process has a backend already (then its level is
/// left as its owner set it). Returns whether this call installed it. Calling it again does
/// nothing.
///
/// # Errors
/// [`hsa_core::Status::InvalidArgument`] naming `HSA_RT_LOG`, the value and the accepted
/// values when the variable holds something else; the logger is then installed at `info`
/// (so that the caller's report of this error, and any other, is printed).
pub fn install_stderr_logger() -> Result<bool, Error> {
    let level = crate::env::log_level();
    let installed = log::set_logger(&LOGGER).is_ok();
    if installed {
        log::set_max_level(level.as_ref().copied().unwrap_or(LevelFilter::Info));
    }
    level.map(|_| installed)
}
