//! Human-readable reports printed by `hsainfo`, each built as a `String` so tests can check
//! it: rocminfo's `Label: value` style, one item per line ([`agents`], [`code_object`]), and
//! llvm-objdump's disassembly text ([`disassembly`]).

pub mod agents;
pub mod code_object;
pub mod disassembly;

use std::io::Write;
use std::process::ExitCode;

/// What writing a tool's output came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputStatus {
    /// All of it was written and flushed.
    Written,
    /// The reader went away (`EPIPE`, e.g. `hsainfo | head -2`): not an error for a report
    /// tool, which exits quietly with success as rocminfo-like tools do.
    BrokenPipe,
    /// Another write error (e.g. `ENOSPC` for `> /dev/full`); the message was written to
    /// `err`.
    Failed,
}

/// Writes `text` to `out` and flushes it; on an error other than a broken pipe writes
/// `<program>: cannot write output: <error>` to `err` (ignoring a failure there: there is
/// nowhere left to report it). Never panics, unlike `print!` on a closed or full stdout.
pub fn write_output(
    out: &mut dyn Write,
    err: &mut dyn Write,
    program: &str,
    text: &str,
) -> OutputStatus {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => OutputStatus::Written,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => OutputStatus::BrokenPipe,
        Err(e) => {
            let _ = writeln!(err, "{program}: cannot write output: {e}");
            OutputStatus::Failed
        }
    }
}

/// [`write_output`] to stdout and stderr, as the exit code of a tool: success when written or
/// when the pipe was closed, failure (1) for another write error.
pub fn print(program: &str, text: &str) -> ExitCode {
    match write_output(
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
        program,
        text,
    ) {
        OutputStatus::Written | OutputStatus::BrokenPipe => ExitCode::SUCCESS,
        OutputStatus::Failed => ExitCode::FAILURE,
    }
}

/// Writes `<program>: <message>` to stderr, ignoring a failure to write it (`eprintln!` would
/// panic), and returns the failure exit code (1).
pub fn fail(program: &str, message: impl std::fmt::Display) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "{program}: {message}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer failing with `kind` after accepting `room` bytes.
    struct Failing {
        kind: std::io::ErrorKind,
        room: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(self.kind.into());
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_are_reported_not_panics() {
        let mut err = Vec::new();
        let mut out = Vec::new();
        assert_eq!(
            write_output(&mut out, &mut err, "hsainfo", "a\nb\n"),
            OutputStatus::Written
        );
        assert_eq!(out, b"a\nb\n");
        let mut pipe = Failing {
            kind: std::io::ErrorKind::BrokenPipe,
            room: 2,
        };
        assert_eq!(
            write_output(&mut pipe, &mut err, "hsainfo", "a\nb\n"),
            OutputStatus::BrokenPipe
        );
        assert!(err.is_empty());
        let mut full = Failing {
            kind: std::io::ErrorKind::StorageFull,
            room: 0,
        };
        assert_eq!(
            write_output(&mut full, &mut err, "hsainfo", "a\n"),
            OutputStatus::Failed
        );
        let msg = String::from_utf8(err).unwrap();
        assert!(msg.starts_with("hsainfo: cannot write output: "), "{msg}");
    }
}
