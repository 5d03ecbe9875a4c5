//! `Status` (the codes of `hsa_status_t`) and `Error` (a status plus a message naming the
//! offending value).
//!
//! Ref: HSA Runtime Programmer's Reference Manual 1.2, §2.2.1 "Runtime notifications"
//! (`hsa_status_t` in `hsa.h`); AMD additions in `hsa_ext_amd.h`.

use core::fmt;

/// Capacity, in bytes, of an [`Error`]'s detail message. A longer message keeps its first
/// [`DETAIL_HEAD_BYTES`] and its last bytes with [`ELISION`] between them (see [`Error::fmt`]).
pub const DETAIL_CAPACITY: usize = 256;

/// Bytes kept from the start of a message longer than [`DETAIL_CAPACITY`] (fewer when that
/// would split a character): the operation or context, which comes first.
pub const DETAIL_HEAD_BYTES: usize = 96;

/// What stands for the elided middle of a message longer than [`DETAIL_CAPACITY`]: `…`
/// (U+2026, 3 bytes).
pub const ELISION: &str = "\u{2026}";

/// Bytes kept from the end of a message longer than [`DETAIL_CAPACITY`] (fewer when that
/// would split a character): the cause, which comes last.
const DETAIL_TAIL_BYTES: usize = DETAIL_CAPACITY - DETAIL_HEAD_BYTES - ELISION.len();

macro_rules! statuses {
    ($( $(#[$doc:meta])* $name:ident = $value:expr, $c:literal, $text:literal; )*) => {
        /// A status code of `hsa_status_t`, with the exact numeric value of `hsa.h` /
        /// `hsa_ext_amd.h`.
        ///
        /// Ref: HSA Runtime 1.2 §2.2.1 `hsa_status_t`; `hsa_ext_amd.h` enum additions.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        #[repr(u32)]
        pub enum Status {
            $( $(#[$doc])* $name = $value, )*
        }

        impl Status {
            /// Every status, in declaration order.
            pub const ALL: &'static [Status] = &[$(Status::$name,)*];

            /// The C enumerator's name, e.g. `"HSA_STATUS_ERROR_INVALID_ARGUMENT"`.
            pub const fn c_name(self) -> &'static str {
                match self { $( Status::$name => $c, )* }
            }

            /// A one-line description in hsa-rt's own words: what `hsa_status_string` returns.
            pub const fn description(self) -> &'static str {
                match self { $( Status::$name => $text, )* }
            }

            /// Converts a raw `hsa_status_t` value.
            ///
            /// # Errors
            /// [`UnknownStatus`] carrying the raw value when it is not a code of `hsa.h` or
            /// `hsa_ext_amd.h`.
            pub const fn from_raw(raw: u32) -> Result<Status, UnknownStatus> {
                match raw {
                    $( $value => Ok(Status::$name), )*
                    other => Err(UnknownStatus(other)),
                }
            }
        }
    };
}

statuses! {
    /// The function has been executed successfully.
    Success = 0x0, "HSA_STATUS_SUCCESS", "success";
    /// A traversal over a list of elements has been interrupted by the callback.
    InfoBreak = 0x1, "HSA_STATUS_INFO_BREAK", "iteration stopped early by the callback";
    /// A generic error has occurred.
    Error = 0x1000, "HSA_STATUS_ERROR", "generic error";
    /// One of the actual arguments does not meet a precondition.
    InvalidArgument = 0x1001, "HSA_STATUS_ERROR_INVALID_ARGUMENT", "an argument does not meet a precondition";
    /// The requested queue creation is not valid.
    InvalidQueueCreation = 0x1002, "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION", "the queue cannot be created with these parameters";
    /// The requested allocation is not valid.
    InvalidAllocation = 0x1003, "HSA_STATUS_ERROR_INVALID_ALLOCATION", "the allocation request is not valid";
    /// The agent is invalid.
    InvalidAgent = 0x1004, "HSA_STATUS_ERROR_INVALID_AGENT", "the agent handle is not valid";
    /// The memory region is invalid.
    InvalidRegion = 0x1005, "HSA_STATUS_ERROR_INVALID_REGION", "the memory region handle is not valid";
    /// The signal is invalid.
    InvalidSignal = 0x1006, "HSA_STATUS_ERROR_INVALID_SIGNAL", "the signal handle is not valid";
    /// The queue is invalid.
    InvalidQueue = 0x1007, "HSA_STATUS_ERROR_INVALID_QUEUE", "the queue is not valid";
    /// The runtime failed to allocate the necessary resources.
    OutOfResources = 0x1008, "HSA_STATUS_ERROR_OUT_OF_RESOURCES", "out of resources";
    /// The AQL packet is malformed.
    InvalidPacketFormat = 0x1009, "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT", "malformed AQL packet";
    /// An error has been detected while releasing a resource.
    ResourceFree = 0x100A, "HSA_STATUS_ERROR_RESOURCE_FREE", "a resource could not be released";
    /// An API other than `hsa_init` was called while the runtime was not initialized.
    NotInitialized = 0x100B, "HSA_STATUS_ERROR_NOT_INITIALIZED", "the runtime is not initialized";
    /// The maximum reference count for the object has been reached.
    RefcountOverflow = 0x100C, "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW", "reference count overflow";
    /// The arguments passed to a function are not compatible.
    IncompatibleArguments = 0x100D, "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS", "the arguments are not compatible with each other";
    /// The index is invalid.
    InvalidIndex = 0x100E, "HSA_STATUS_ERROR_INVALID_INDEX", "the index is not valid";
    /// The instruction set architecture is invalid.
    InvalidIsa = 0x100F, "HSA_STATUS_ERROR_INVALID_ISA", "the instruction set architecture is not valid";
    /// The code object is invalid.
    InvalidCodeObject = 0x1010, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", "the code object is not valid";
    /// The executable is invalid.
    InvalidExecutable = 0x1011, "HSA_STATUS_ERROR_INVALID_EXECUTABLE", "the executable is not valid";
    /// The executable is frozen.
    FrozenExecutable = 0x1012, "HSA_STATUS_ERROR_FROZEN_EXECUTABLE", "the executable is frozen";
    /// There is no symbol with the given name.
    InvalidSymbolName = 0x1013, "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", "no symbol has that name";
    /// The variable is already defined.
    VariableAlreadyDefined = 0x1014, "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED", "the variable is already defined";
    /// The variable is undefined.
    VariableUndefined = 0x1015, "HSA_STATUS_ERROR_VARIABLE_UNDEFINED", "the variable is undefined";
    /// An HSAIL operation resulted in a hardware exception.
    Exception = 0x1016, "HSA_STATUS_ERROR_EXCEPTION", "a kernel raised a hardware exception";
    /// The ISA name is invalid.
    InvalidIsaName = 0x1017, "HSA_STATUS_ERROR_INVALID_ISA_NAME", "the ISA name is not valid";
    /// The code object symbol is invalid.
    InvalidCodeSymbol = 0x1018, "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL", "the code object symbol is not valid";
    /// The executable symbol is invalid.
    InvalidExecutableSymbol = 0x1019, "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL", "the executable symbol is not valid";
    /// The file descriptor is invalid.
    InvalidFile = 0x1020, "HSA_STATUS_ERROR_INVALID_FILE", "the file is not valid";
    /// The code object reader is invalid.
    InvalidCodeObjectReader = 0x1021, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER", "the code object reader is not valid";
    /// The cache is invalid.
    InvalidCache = 0x1022, "HSA_STATUS_ERROR_INVALID_CACHE", "the cache handle is not valid";
    /// The wavefront is invalid.
    InvalidWavefront = 0x1023, "HSA_STATUS_ERROR_INVALID_WAVEFRONT", "the wavefront handle is not valid";
    /// The signal group is invalid.
    InvalidSignalGroup = 0x1024, "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP", "the signal group is not valid";
    /// The runtime is not in the configured state for the operation.
    InvalidRuntimeState = 0x1025, "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE", "the runtime is not in a state that allows this operation";
    /// The queue received an error that may require process termination.
    Fatal = 0x1026, "HSA_STATUS_ERROR_FATAL", "fatal error";
    /// The memory pool is invalid (`hsa_ext_amd.h`).
    InvalidMemoryPool = 40, "HSA_STATUS_ERROR_INVALID_MEMORY_POOL", "the memory pool is not valid";
    /// An agent accessed memory beyond the maximum legal address (`hsa_ext_amd.h`).
    MemoryApertureViolation = 41, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", "memory aperture violation";
    /// An agent executed an invalid shader instruction (`hsa_ext_amd.h`).
    IllegalInstruction = 42, "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION", "illegal shader instruction";
    /// An agent attempted to access an inaccessible address (`hsa_ext_amd.h`).
    MemoryFault = 43, "HSA_STATUS_ERROR_MEMORY_FAULT", "memory fault: an inaccessible address was accessed";
    /// The CU mask was set, but CUs disabled for the process stay disabled (`hsa_ext_amd.h`).
    CuMaskReduced = 44, "HSA_STATUS_CU_MASK_REDUCED", "the CU mask was reduced to the CUs the process may use";
}

impl Status {
    /// The raw `hsa_status_t` value.
    pub const fn raw(self) -> u32 {
        self as u32
    }

    /// Whether the code is an error (not `SUCCESS`, `INFO_BREAK` or `CU_MASK_REDUCED`).
    pub const fn is_error(self) -> bool {
        !matches!(
            self,
            Status::Success | Status::InfoBreak | Status::CuMaskReduced
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

impl TryFrom<u32> for Status {
    type Error = UnknownStatus;
    fn try_from(raw: u32) -> Result<Self, UnknownStatus> {
        Status::from_raw(raw)
    }
}

impl From<Status> for u32 {
    fn from(s: Status) -> u32 {
        s.raw()
    }
}

/// A raw `hsa_status_t` value that is not a code of `hsa.h` or `hsa_ext_amd.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownStatus(pub u32);

impl fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown hsa_status_t value {:#x}", self.0)
    }
}

/// An error: a [`Status`] for callers that branch on it, plus a message that names what was
/// wrong and the offending value (e.g. `"workgroup_size_y is 0; must be >= 1"`).
///
/// The message lives inline (at most [`DETAIL_CAPACITY`] bytes), so errors need no allocator.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    detail: heapless::String<DETAIL_CAPACITY>,
}

impl Error {
    /// An error with a fixed message.
    pub fn new(status: Status, detail: &str) -> Error {
        Error::fmt(status, format_args!("{detail}"))
    }

    /// An error whose message is formatted. Prefer the [`error!`](crate::error!) macro.
    ///
    /// A message longer than [`DETAIL_CAPACITY`] bytes keeps its start (at most
    /// [`DETAIL_HEAD_BYTES`]) and its end (the rest of the capacity), joined by [`ELISION`],
    /// each cut at a character boundary: messages name the operation first and the cause
    /// last (`"<file>: not an ELF file"`, and [`Error::context`] prepends), so a long value in
    /// the middle, such as a path, is what gets elided. Formatting streams through a fixed
    /// buffer: no allocation, whatever the message's length.
    pub fn fmt(status: Status, args: fmt::Arguments<'_>) -> Error {
        let mut w = HeadTail {
            buf: [0; DETAIL_CAPACITY],
            written: 0,
        };
        let _ = fmt::write(&mut w, args);
        Error {
            status,
            detail: w.finish(),
        }
    }

    /// The status code.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The message naming what was wrong.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// Puts `context` (e.g. the name of the call or file) in front of the message.
    pub fn context(self, context: &str) -> Error {
        crate::error!(self.status, "{context}: {}", self.detail)
    }
}

impl From<Status> for Error {
    fn from(status: Status) -> Error {
        Error::new(status, status.description())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.detail, self.status.c_name())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Error({}: {:?})",
            self.status.c_name(),
            self.detail.as_str()
        )
    }
}

impl core::error::Error for Error {}

/// The writer behind [`Error::fmt`]: the first [`DETAIL_CAPACITY`] bytes of the message
/// stream go to `buf` in order; after that `buf[..DETAIL_HEAD_BYTES]` keeps the start and
/// `buf[DETAIL_HEAD_BYTES..]` is a ring holding the latest bytes: stream byte `n >=
/// DETAIL_HEAD_BYTES` lives at `DETAIL_HEAD_BYTES + (n - DETAIL_HEAD_BYTES) % RING`.
struct HeadTail {
    buf: [u8; DETAIL_CAPACITY],
    /// Bytes of the message written so far.
    written: usize,
}

/// Size of [`HeadTail`]'s ring, bytes (at least [`DETAIL_TAIL_BYTES`]).
const RING: usize = DETAIL_CAPACITY - DETAIL_HEAD_BYTES;

impl fmt::Write for HeadTail {
    fn write_str(&mut self, part: &str) -> fmt::Result {
        for &b in part.as_bytes() {
            let n = self.written;
            let at = if n < DETAIL_HEAD_BYTES {
                n
            } else {
                DETAIL_HEAD_BYTES + (n - DETAIL_HEAD_BYTES) % RING
            };
            self.buf[at] = b;
            self.written = n.saturating_add(1);
        }
        Ok(())
    }
}

impl HeadTail {
    /// The message, or its head, [`ELISION`] and its tail when it did not fit.
    fn finish(&self) -> heapless::String<DETAIL_CAPACITY> {
        let mut out = heapless::String::new();
        if self.written <= DETAIL_CAPACITY {
            // Whole `&str`s were written in order: valid UTF-8.
            let _ = out.push_str(core::str::from_utf8(&self.buf[..self.written]).unwrap_or(""));
            return out;
        }
        // The head ends before an incomplete last character (the stream is valid UTF-8, so
        // that is the only way the prefix can be invalid).
        let head = &self.buf[..DETAIL_HEAD_BYTES];
        let head = match core::str::from_utf8(head) {
            Ok(h) => h,
            Err(e) => core::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        };
        // The last DETAIL_TAIL_BYTES of the stream, in order, from the ring.
        let mut tail = [0u8; DETAIL_TAIL_BYTES];
        let first = self.written - DETAIL_TAIL_BYTES;
        for (i, slot) in tail.iter_mut().enumerate() {
            *slot = self.buf[DETAIL_HEAD_BYTES + (first + i - DETAIL_HEAD_BYTES) % RING];
        }
        // Skip the continuation bytes (0b10xx_xxxx) of a character cut at its start.
        let start = tail
            .iter()
            .position(|&b| b & 0xc0 != 0x80)
            .unwrap_or(tail.len());
        let tail = core::str::from_utf8(&tail[start..]).unwrap_or("");
        let _ = out.push_str(head);
        let _ = out.push_str(ELISION);
        let _ = out.push_str(tail);
        out
    }
}

/// `Result` with hsa-rt's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Builds an [`Error`]: `error!(Status::InvalidArgument, "grid_size_x is {}", x)`.
#[macro_export]
macro_rules! error {
    ($status:expr, $($arg:tt)*) => {
        $crate::Error::fmt($status, ::core::format_args!($($arg)*))
    };
}

/// Returns early with an [`Error`] built like [`error!`].
#[macro_export]
macro_rules! bail {
    ($status:expr, $($arg:tt)*) => {
        return ::core::result::Result::Err($crate::error!($status, $($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn raw_values_match_hsa_h() {
        assert_eq!(Status::Success.raw(), 0);
        assert_eq!(Status::InfoBreak.raw(), 1);
        assert_eq!(Status::InvalidArgument.raw(), 0x1001);
        assert_eq!(Status::InvalidPacketFormat.raw(), 0x1009);
        assert_eq!(Status::InvalidIsaName.raw(), 0x1017);
        assert_eq!(Status::InvalidFile.raw(), 0x1020);
        assert_eq!(Status::Fatal.raw(), 0x1026);
        assert_eq!(Status::InvalidMemoryPool.raw(), 40);
        assert_eq!(Status::MemoryFault.raw(), 43);
    }

    #[test]
    fn every_status_round_trips_and_unknown_is_an_error() {
        for &s in Status::ALL {
            assert_eq!(Status::from_raw(s.raw()), Ok(s));
        }
        // hsa.h: 0, 1, 0x1000..=0x1019, 0x1020..=0x1026; hsa_ext_amd.h: 40..=44.
        assert_eq!(Status::ALL.len(), 40);
        assert_eq!(Status::from_raw(0x1027), Err(UnknownStatus(0x1027)));
        assert_eq!(Status::from_raw(2), Err(UnknownStatus(2)));
    }

    #[test]
    fn error_messages_carry_values_and_are_cut_safely() {
        let e = crate::error!(Status::InvalidArgument, "grid_size_x is {}", 0);
        assert_eq!(e.detail(), "grid_size_x is 0");
        assert_eq!(e.status(), Status::InvalidArgument);
        let long = crate::error!(Status::Error, "{:0>500}", 1);
        assert_eq!(long.detail().len(), DETAIL_CAPACITY);
        assert!(long.detail().ends_with("0001"), "{}", long.detail());
        let c = e.context("hsa_queue_create");
        assert_eq!(c.detail(), "hsa_queue_create: grid_size_x is 0");
    }

    /// A message with a 1000-byte path before its cause keeps its start and its end (the
    /// cause), marking the elided middle with `…`, within [`DETAIL_CAPACITY`] bytes.
    #[test]
    fn a_long_message_keeps_its_cause() {
        let path = format!("/{}", "d".repeat(999));
        let e = crate::error!(
            Status::InvalidFile,
            "code object {path}: No such file or directory (os error 2)"
        );
        let d = e.detail();
        assert!(d.len() <= DETAIL_CAPACITY, "{} bytes", d.len());
        assert!(d.starts_with("code object /ddd"), "{d}");
        assert!(
            d.ends_with("ddd: No such file or directory (os error 2)"),
            "{d}"
        );
        assert_eq!(d.matches('…').count(), 1, "{d}");
        // Nothing past the capacity: exactly full, head and tail around the mark.
        assert_eq!(d.len(), DETAIL_CAPACITY);
    }

    /// The cut never splits a character: multi-byte text on both sides of the elision stays
    /// valid UTF-8 and a message that fits is untouched.
    #[test]
    fn the_cut_respects_character_boundaries() {
        let fits = "é".repeat(DETAIL_CAPACITY / 2);
        assert_eq!(crate::error!(Status::Error, "{fits}").detail(), fits);
        for n in 0..4 {
            let msg = format!("{}{}: the cause", "x".repeat(n), "é€😀".repeat(60));
            let e = crate::error!(Status::Error, "{msg}");
            let d = e.detail();
            assert!(d.len() <= DETAIL_CAPACITY);
            assert!(d.ends_with("😀: the cause"), "{d}");
            assert!(d.contains('…'), "{d}");
            let (head, tail) = d.split_once('…').unwrap();
            assert!(msg.starts_with(head), "{head}");
            assert!(msg.ends_with(tail), "{tail}");
        }
    }
}
