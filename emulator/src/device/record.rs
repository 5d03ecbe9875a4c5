//! A record of every call the emulated device answers: the ioctls and mmaps of `/dev/kfd` and
//! the render nodes, with their arguments as the caller passed them and as it got them back.
//!
//! Whoever drives the device passes through here — hsa-rt's Linux backend in-process (it
//! makes raw system calls, so nothing at the libc level sees it) and Debian's ROCR under
//! `kfd-emu` (through the preloaded library) — so one record format serves to compare how
//! the two use amdkfd (`docs/kfd-vs-rocr.md`, `kfd-emu/tests/kfd_vs_rocr.rs`).
//!
//! Recording is off unless asked for: [`EmulatedKfd::start_recording`](super::EmulatedKfd::start_recording)
//! keeps the calls in memory ([`EmulatedKfd::recording`](super::EmulatedKfd::recording)), and
//! the environment variable [`RECORD_ENV`] (`HSA_RT_KFD_RECORD=FILE`) makes every emulated
//! device the process opens append one line per call to FILE, in [`KfdCall`]'s text form
//! ([`KfdCall::parse`] reads it back). Nothing of it is in the `KfdDriver` interface: the
//! device records what it answers.

use std::fmt;
use std::io::Write;
use std::sync::{Mutex, PoisonError};

use hsa_core::{error, Error, Status};
use rustix::io::Errno;

/// `HSA_RT_KFD_RECORD`: a file every emulated device of the process appends its calls to,
/// one line each (empty or unset: no file).
pub const RECORD_ENV: &str = "HSA_RT_KFD_RECORD";

/// Which device file a call was on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallTarget {
    /// `/dev/kfd`.
    Kfd,
    /// The render node of the GPU with this `gpu_id`.
    Render(u32),
    /// A dma-buf with this file descriptor (an imported buffer object).
    DmaBuf(i32),
}

/// One call the device answered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KfdCall {
    /// An ioctl: the request (`_IOC` encoded: type, number, size, direction), the argument's
    /// bytes before and after, and the result.
    Ioctl {
        /// `/dev/kfd` or a render node.
        target: CallTarget,
        /// The request number.
        request: u32,
        /// The argument as the caller passed it.
        before: Vec<u8>,
        /// The argument as the device left it.
        after: Vec<u8>,
        /// `Ok` or the errno.
        result: Result<(), Errno>,
    },
    /// An mmap of a device file.
    Mmap {
        /// `/dev/kfd` or a render node.
        target: CallTarget,
        /// The mmap offset, bytes (KFD's typed offsets, a buffer object's `mmap_offset`).
        offset: u64,
        /// The length, bytes.
        len: u64,
        /// The address asked for (`MAP_FIXED`), if any.
        fixed: Option<u64>,
        /// The address mapped, or the errno.
        result: Result<u64, Errno>,
    },
}

impl KfdCall {
    /// Reads a line of the text form (what `Display` writes).
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the line and what in it is malformed.
    pub fn parse(line: &str) -> Result<KfdCall, Error> {
        let bad = |what: &str| error!(Status::InvalidArgument, "record line {line:?}: {what}");
        let f: Vec<&str> = line.split(' ').collect();
        let target = |s: &str| -> Result<CallTarget, Error> {
            if s == "kfd" {
                return Ok(CallTarget::Kfd);
            }
            if let Some(fd) = s.strip_prefix("dmabuf:") {
                return fd
                    .parse::<i32>()
                    .map(CallTarget::DmaBuf)
                    .map_err(|_| bad("dmabuf target is not dmabuf:<fd>"));
            }
            s.strip_prefix("render:")
                .and_then(|g| hex_u64(g).ok())
                .and_then(|g| u32::try_from(g).ok())
                .map(CallTarget::Render)
                .ok_or_else(|| bad("target is neither kfd, render:0x<gpu_id> nor dmabuf:<fd>"))
        };
        let errno = |s: &str| -> Result<Errno, Error> {
            s.strip_prefix('E')
                .and_then(|n| n.parse::<i32>().ok())
                .map(Errno::from_raw_os_error)
                .ok_or_else(|| bad("result is neither 0, 0x<address> nor E<errno>"))
        };
        match f.as_slice() {
            ["ioctl", t, req, res, before, after] => Ok(KfdCall::Ioctl {
                target: target(t)?,
                request: hex_u64(req)
                    .ok()
                    .and_then(|r| u32::try_from(r).ok())
                    .ok_or_else(|| bad("request is not 0x<u32>"))?,
                before: unhex(before).ok_or_else(|| bad("argument before is not hex"))?,
                after: unhex(after).ok_or_else(|| bad("argument after is not hex"))?,
                result: if *res == "0" { Ok(()) } else { Err(errno(res)?) },
            }),
            ["mmap", t, off, len, fixed, res] => Ok(KfdCall::Mmap {
                target: target(t)?,
                offset: hex_u64(off).map_err(|_| bad("offset is not 0x<u64>"))?,
                len: hex_u64(len).map_err(|_| bad("length is not 0x<u64>"))?,
                fixed: match *fixed {
                    "-" => None,
                    a => Some(hex_u64(a).map_err(|_| bad("fixed address is not 0x<u64>"))?),
                },
                result: match hex_u64(res) {
                    Ok(a) => Ok(a),
                    Err(()) => Err(errno(res)?),
                },
            }),
            _ => Err(bad("not `ioctl TARGET REQUEST RESULT BEFORE AFTER` or `mmap TARGET OFFSET LEN FIXED RESULT`")),
        }
    }
}

fn hex_u64(s: &str) -> Result<u64, ()> {
    s.strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .ok_or(())
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s == "-" {
        return Some(Vec::new());
    }
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".to_owned();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl fmt::Display for CallTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallTarget::Kfd => write!(f, "kfd"),
            CallTarget::Render(g) => write!(f, "render:{g:#x}"),
            CallTarget::DmaBuf(fd) => write!(f, "dmabuf:{fd}"),
        }
    }
}

/// The text form, one line without its newline: `ioctl TARGET 0xREQUEST RESULT BEFORE AFTER`
/// (RESULT `0` or `E<errno>`, the arguments in hex, `-` when empty) or
/// `mmap TARGET 0xOFFSET 0xLEN FIXED RESULT` (FIXED `0x<address>` or `-`, RESULT
/// `0x<address>` or `E<errno>`).
impl fmt::Display for KfdCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KfdCall::Ioctl {
                target,
                request,
                before,
                after,
                result,
            } => {
                let r = match result {
                    Ok(()) => "0".to_owned(),
                    Err(e) => format!("E{}", e.raw_os_error()),
                };
                write!(
                    f,
                    "ioctl {target} {request:#x} {r} {} {}",
                    hex(before),
                    hex(after)
                )
            }
            KfdCall::Mmap {
                target,
                offset,
                len,
                fixed,
                result,
            } => {
                let fixed = fixed.map_or_else(|| "-".to_owned(), |a| format!("{a:#x}"));
                let r = match result {
                    Ok(a) => format!("{a:#x}"),
                    Err(e) => format!("E{}", e.raw_os_error()),
                };
                write!(f, "mmap {target} {offset:#x} {len:#x} {fixed} {r}")
            }
        }
    }
}

/// The device's recorder: in memory once started, and to the [`RECORD_ENV`] file when set.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    memory: Mutex<Option<Vec<KfdCall>>>,
    file: Option<Mutex<std::fs::File>>,
}

impl Recorder {
    /// The recorder [`RECORD_ENV`] asks for.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming the variable, the file and why when the file cannot
    /// be opened for appending.
    pub(crate) fn from_env() -> Result<Recorder, Error> {
        let Some(path) = std::env::var_os(RECORD_ENV).filter(|v| !v.is_empty()) else {
            return Ok(Recorder::default());
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| {
                error!(
                    Status::InvalidArgument,
                    "{RECORD_ENV}={}: cannot open the file for appending: {e}",
                    path.to_string_lossy()
                )
            })?;
        Ok(Recorder {
            memory: Mutex::new(None),
            file: Some(Mutex::new(file)),
        })
    }

    /// Whether anything records.
    pub(crate) fn on(&self) -> bool {
        self.file.is_some()
            || self
                .memory
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some()
    }

    /// Starts (or restarts, empty) the in-memory record.
    pub(crate) fn start(&self) {
        *self.memory.lock().unwrap_or_else(PoisonError::into_inner) = Some(Vec::new());
    }

    /// The in-memory record so far (empty when not started).
    pub(crate) fn calls(&self) -> Vec<KfdCall> {
        self.memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_default()
    }

    /// Records `call`. Writing the file is best effort: a failed write is logged (warn) once
    /// per call, and the call itself is answered as if nothing were recorded.
    pub(crate) fn record(&self, call: KfdCall) {
        if let Some(file) = &self.file {
            let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(e) = writeln!(file, "{call}") {
                log::warn!("{RECORD_ENV}: writing the record: {e}");
            }
        }
        if let Some(calls) = self
            .memory
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            calls.push(call);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        let calls = [
            KfdCall::Ioctl {
                target: CallTarget::Kfd,
                request: 0xc008_4b01,
                before: vec![0; 8],
                after: vec![1, 0, 0, 0, 11, 0, 0, 0],
                result: Ok(()),
            },
            KfdCall::Ioctl {
                target: CallTarget::Render(0x1234),
                request: 0x4020_6440,
                before: vec![0xab],
                after: vec![],
                result: Err(Errno::INVAL),
            },
            KfdCall::Mmap {
                target: CallTarget::Kfd,
                offset: 0xc48d_0000_0000_0000,
                len: 0x2000,
                fixed: Some(0x7f00_0000_0000),
                result: Ok(0x7f00_0000_0000),
            },
            KfdCall::Mmap {
                target: CallTarget::Render(1),
                offset: 0x1000,
                len: 0x1000,
                fixed: None,
                result: Err(Errno::NOMEM),
            },
            KfdCall::Mmap {
                target: CallTarget::DmaBuf(7),
                offset: 0,
                len: 0x1000,
                fixed: Some(0x7f00_0020_0000),
                result: Ok(0x7f00_0020_0000),
            },
        ];
        let text: Vec<String> = calls.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            text,
            [
                "ioctl kfd 0xc0084b01 0 0000000000000000 010000000b000000",
                "ioctl render:0x1234 0x40206440 E22 ab -",
                "mmap kfd 0xc48d000000000000 0x2000 0x7f0000000000 0x7f0000000000",
                "mmap render:0x1 0x1000 0x1000 - E12",
                "mmap dmabuf:7 0x0 0x1000 0x7f0000200000 0x7f0000200000",
            ]
        );
        for (c, t) in calls.iter().zip(&text) {
            assert_eq!(&KfdCall::parse(t).unwrap(), c);
        }
    }

    /// The device records what it answers, once started: the ioctl with its argument before
    /// and after, a failed mmap with its errno; nothing before `start_recording`.
    #[test]
    fn the_device_records_its_calls_once_started() {
        use hsa_linux::kfd::abi::{GetVersionArgs, AMDKFD_IOC_GET_VERSION};
        use hsa_linux::kfd::calls::{self, plain_ioctl};
        use hsa_linux::kfd::driver::MapTarget;
        let d = super::super::EmulatedKfd::new(super::super::builtin_topology()).unwrap();
        plain_ioctl(&*d, &mut GetVersionArgs::default()).unwrap();
        assert!(d.recording().is_empty());
        d.start_recording();
        plain_ioctl(&*d, &mut GetVersionArgs::default()).unwrap();
        calls::mmap(&*d, MapTarget::Kfd, 0, 0).unwrap_err();
        assert_eq!(
            d.recording(),
            [
                KfdCall::Ioctl {
                    target: CallTarget::Kfd,
                    request: AMDKFD_IOC_GET_VERSION,
                    before: vec![0; 8],
                    after: vec![1, 0, 0, 0, 17, 0, 0, 0],
                    result: Ok(()),
                },
                KfdCall::Mmap {
                    target: CallTarget::Kfd,
                    offset: 0,
                    len: 0,
                    fixed: None,
                    result: Err(Errno::INVAL),
                },
            ]
        );
    }

    #[test]
    fn malformed_lines_are_named() {
        for (line, why) in [
            ("ioctl kfd 0x1 0 zz -", "argument before is not hex"),
            (
                "ioctl gpu 0x1 0 - -",
                "target is neither kfd, render:0x<gpu_id> nor dmabuf:<fd>",
            ),
            (
                "mmap dmabuf:x 0x0 0x1000 - 0x7000",
                "dmabuf target is not dmabuf:<fd>",
            ),
            (
                "mmap kfd 0x0 0x1000 - bogus",
                "result is neither 0, 0x<address> nor E<errno>",
            ),
            ("munmap 0x1000", "not `ioctl"),
        ] {
            let e = KfdCall::parse(line).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert!(e.detail().contains(why), "{line}: {e}");
            assert!(e.detail().contains(line), "{e}");
        }
    }
}
