//! `Status` (the codes of `hsa_status_t`) and `Error` (a status plus a detail naming the
//! offending value, formatted only when it is displayed).
//!
//! Ref: HSA Runtime Programmer's Reference Manual 1.2, §2.2.1 "Runtime notifications"
//! (`hsa_status_t` in `hsa.h`); AMD additions in `hsa_ext_amd.h`.

use core::fmt::{self, Write as _};

/// Bytes of formatted text an [`Error`] holds in place, without the heap.
///
/// With the `alloc` feature a longer formatted message goes to the heap whole. Without it,
/// a longer message keeps its first [`INLINE_HEAD_BYTES`] and its last bytes with [`ELISION`]
/// between them (see [`Error::fmt`]): no-alloc builds keep a shorter message. Static and
/// typed details ([`Error::new`], [`Error::lazy`]) are not text until displayed, so they are
/// never cut.
pub const INLINE_CAPACITY: usize = 54;

/// Bytes kept from the start of a formatted message longer than [`INLINE_CAPACITY`] in a
/// build without `alloc` (fewer when that would split a character): the start of the
/// operation or context, which comes first.
pub const INLINE_HEAD_BYTES: usize = 12;

/// What stands for the elided middle of a formatted message longer than
/// [`INLINE_CAPACITY`] in a build without `alloc`: `…` (U+2026, 3 bytes).
pub const ELISION: &str = "\u{2026}";

/// Bytes kept from the end of a message longer than [`INLINE_CAPACITY`] (fewer when that
/// would split a character): the cause, which comes last.
const INLINE_TAIL_BYTES: usize = INLINE_CAPACITY - INLINE_HEAD_BYTES - ELISION.len();

/// Most integers an [`Error::lazy`] detail holds.
pub const LAZY_VALUES: usize = 5;

/// Displays an [`Error::lazy`] detail from its integers (unused trailing ones are 0).
pub type ShowValues = fn(&[u64; LAZY_VALUES], &mut fmt::Formatter<'_>) -> fmt::Result;

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
    /// The image format is not supported (`hsa_ext_image.h`).
    ImageFormatUnsupported = 0x3000, "HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED", "the image format is not supported";
    /// The image size is not supported (`hsa_ext_image.h`).
    ImageSizeUnsupported = 0x3001, "HSA_EXT_STATUS_ERROR_IMAGE_SIZE_UNSUPPORTED", "the image size is not supported";
    /// The image pitch is not supported or invalid (`hsa_ext_image.h`).
    ImagePitchUnsupported = 0x3002, "HSA_EXT_STATUS_ERROR_IMAGE_PITCH_UNSUPPORTED", "the image pitch is not supported or invalid";
    /// The sampler descriptor is not supported or invalid (`hsa_ext_image.h`).
    SamplerDescriptorUnsupported = 0x3003, "HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED", "the sampler descriptor is not supported or invalid";
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

/// A reason a value (a packet field, most often) is bad, without formatting: the field's
/// name, the value found, and the rule it breaks. Displayed as
/// `"workgroup_size_y is 0; must be >= 1"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) field: &'static str,
    pub(crate) value: u64,
    pub(crate) rule: Rule,
}

/// The rule a [`Violation`] breaks. The bounds are small (counts, sizes, enum values), so
/// `u32` keeps a [`Violation`] within an [`Error`]'s 64 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// `>= n`.
    AtLeast(u32),
    /// `<= n`.
    AtMost(u32),
    /// In `lo..=hi`.
    InRange(u32, u32),
    /// Exactly 1 because the grid has fewer dimensions.
    OneWhenUnused { dimensions: u8 },
    /// `>= other` (named field with its value).
    NotBelow {
        other: &'static str,
        other_value: u32,
    },
    /// Non-zero address or handle.
    NonNull,
    /// Multiple of n bytes.
    Aligned(u32),
}

impl Violation {
    pub(crate) const fn new(field: &'static str, value: u64, rule: Rule) -> Violation {
        Violation { field, value, rule }
    }

    /// The error for this violation with `status`: the violation itself, formatted only when
    /// displayed.
    pub(crate) const fn into_error(self, status: Status) -> Error {
        Error {
            status,
            detail: Detail(Repr::Violation(self)),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (field, v) = (self.field, self.value);
        match self.rule {
            Rule::AtLeast(n) => write!(f, "{field} is {v}; must be >= {n}"),
            Rule::AtMost(n) => write!(f, "{field} is {v}; must be <= {n}"),
            Rule::InRange(lo, hi) => write!(f, "{field} is {v}; must be in {lo}..={hi}"),
            Rule::OneWhenUnused { dimensions } => {
                write!(
                    f,
                    "{field} is {v}; must be 1 when dimensions is {dimensions}"
                )
            }
            Rule::NotBelow { other, other_value } => {
                write!(f, "{field} is {v}; must be >= {other} ({other_value})")
            }
            Rule::NonNull => write!(f, "{field} is null ({v:#x}); must be non-null"),
            Rule::Aligned(n) => write!(f, "{field} is {v:#x}; must be {n}-byte aligned"),
        }
    }
}

/// An error: a [`Status`] for callers that branch on it, plus a [`Detail`] that names what
/// was wrong and the offending value (e.g. `"workgroup_size_y is 0; must be >= 1"`).
///
/// At most 64 bytes, so a `Result` on a hot path or an interrupt stack stays small. The
/// detail is kept typed — a static message, a field with its value and rule, a few integers
/// with the function that shows them — and formatted only when displayed; only a message
/// built from [`error!`](crate::error!) with arguments is formatted when the error is made
/// (in place up to [`INLINE_CAPACITY`] bytes, on the heap beyond that with `alloc`).
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    detail: Detail,
}

// An error fits a cache line, whatever the build (checked in no_std builds too).
const _: () = assert!(core::mem::size_of::<Error>() <= 64);
const _: () = assert!(core::mem::size_of::<Result<(), Error>>() <= 64);

impl Error {
    /// An error with a fixed message: two words are copied, nothing is formatted.
    pub const fn new(status: Status, detail: &'static str) -> Error {
        Error {
            status,
            detail: Detail(Repr::Static(detail)),
        }
    }

    /// An error whose message is formatted. Prefer the [`error!`](crate::error!) macro.
    ///
    /// A message without arguments (`error!(s, "pool is full")`) is kept as the static
    /// string: no formatting. Otherwise the message is formatted now: one of at most
    /// [`INLINE_CAPACITY`] bytes stays in place; a longer one goes to the heap whole with the
    /// `alloc` feature. Without `alloc`, a longer one keeps its start (at most
    /// [`INLINE_HEAD_BYTES`]) and its end (the rest of the capacity), joined by [`ELISION`],
    /// each cut at a character boundary: messages name the operation first and the cause
    /// last (`"<file>: not an ELF file"`, and [`Error::context`] prepends), so a long value
    /// in the middle, such as a path, is what gets elided. On hot paths use [`Error::new`]
    /// or [`Error::lazy`], which do not format.
    pub fn fmt(status: Status, args: fmt::Arguments<'_>) -> Error {
        if let Some(text) = args.as_str() {
            return Error::new(status, text);
        }
        let mut sink = Sink::default();
        let _ = fmt::write(&mut sink, args);
        Error {
            status,
            detail: Detail(sink.finish()),
        }
    }

    /// An error whose message is `show` applied to up to [`LAZY_VALUES`] integers, called
    /// only when the error is displayed: making it copies the integers and a function
    /// pointer, nothing is formatted or allocated. For hot and interrupt paths:
    ///
    /// ```
    /// use hsa_core::{Error, Status};
    /// let (count, size) = (9u64, 8u64);
    /// let e = Error::lazy(Status::InvalidArgument, [count, size], |&[count, size, ..], f| {
    ///     write!(f, "reserve count {count} must be between 1 and the queue size {size}")
    /// });
    /// assert_eq!(e.detail(), "reserve count 9 must be between 1 and the queue size 8");
    /// ```
    ///
    /// `show` cannot capture (it is a function pointer): everything it shows is in `values`
    /// (as `u64`; unused trailing ones are 0) or static. More than [`LAZY_VALUES`] values do
    /// not compile.
    pub const fn lazy<const N: usize>(status: Status, values: [u64; N], show: ShowValues) -> Error {
        const {
            assert!(
                N <= LAZY_VALUES,
                "Error::lazy holds at most LAZY_VALUES values"
            )
        };
        let mut all = [0u64; LAZY_VALUES];
        let mut i = 0;
        while i < N {
            all[i] = values[i];
            i += 1;
        }
        Error {
            status,
            detail: Detail(Repr::Values { values: all, show }),
        }
    }

    /// The status code.
    pub const fn status(&self) -> Status {
        self.status
    }

    /// What was wrong: displays as the message (`e.detail().to_string()` for a `String`),
    /// and compares equal to a `&str` or `String` holding the same text.
    pub fn detail(&self) -> &Detail {
        &self.detail
    }

    /// The same detail under another status (e.g. a target-id error reported as an invalid
    /// code object): nothing is formatted.
    pub fn with_status(self, status: Status) -> Error {
        Error { status, ..self }
    }

    /// Puts `context` (e.g. the name of the call or file) in front of the message:
    /// `"<context>: <message>"`, formatted now like [`Error::fmt`] (the cause comes last, so
    /// a build without `alloc` that must cut keeps it). The status is kept.
    pub fn context(self, context: &str) -> Error {
        Error::fmt(self.status, format_args!("{context}: {}", self.detail))
    }
}

impl From<Status> for Error {
    /// The error whose message is the status's [`description`](Status::description).
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
        write!(f, "Error({}: {:?})", self.status.c_name(), self.detail)
    }
}

impl core::error::Error for Error {}

/// What an [`Error`] says beyond its status, e.g. `"workgroup_size_y is 0; must be >= 1"`.
///
/// Displays as that text (its `Debug` is the text quoted, as a `&str`'s), and compares by
/// text: equal to a `&str`, a `String` or another `Detail` that reads the same, however each
/// is stored. Typed details are formatted each time they are displayed or compared.
#[derive(Clone)]
pub struct Detail(Repr);

/// How a [`Detail`] is stored: at most 56 bytes, so that an [`Error`] is at most 64.
#[derive(Clone)]
enum Repr {
    /// A fixed message (or a status's description).
    Static(&'static str),
    /// A field, its value and the rule it breaks.
    Violation(Violation),
    /// Integers and the function that shows them ([`Error::lazy`]).
    Values {
        values: [u64; LAZY_VALUES],
        show: ShowValues,
    },
    /// A formatted message of at most [`INLINE_CAPACITY`] bytes (whole, or, without
    /// `alloc`, elided).
    Inline(Inline),
    /// A formatted message longer than [`INLINE_CAPACITY`] bytes, whole.
    #[cfg(feature = "alloc")]
    Heap(alloc::boxed::Box<str>),
}

/// Formatted text held in place: `bytes[..len]`, valid UTF-8.
#[derive(Clone)]
struct Inline {
    len: u8,
    bytes: [u8; INLINE_CAPACITY],
}

const _: () = assert!(INLINE_CAPACITY <= u8::MAX as usize);
const _: () = assert!(core::mem::size_of::<Repr>() <= 56);

impl Inline {
    fn as_str(&self) -> &str {
        // Only `HeadTail::finish` fills it, with whole characters.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl Detail {
    /// The message when it is stored as text; `None` for a typed detail.
    fn as_text(&self) -> Option<&str> {
        match &self.0 {
            Repr::Static(s) => Some(s),
            Repr::Inline(i) => Some(i.as_str()),
            #[cfg(feature = "alloc")]
            Repr::Heap(s) => Some(s),
            Repr::Violation(_) | Repr::Values { .. } => None,
        }
    }

    /// Whether the displayed text contains `needle` (formats a typed detail first).
    #[cfg(feature = "alloc")]
    pub fn contains(&self, needle: &str) -> bool {
        self.with_text(|t| t.contains(needle))
    }

    /// Whether the displayed text starts with `prefix` (formats a typed detail first).
    #[cfg(feature = "alloc")]
    pub fn starts_with(&self, prefix: &str) -> bool {
        self.with_text(|t| t.starts_with(prefix))
    }

    /// Whether the displayed text ends with `suffix` (formats a typed detail first).
    #[cfg(feature = "alloc")]
    pub fn ends_with(&self, suffix: &str) -> bool {
        self.with_text(|t| t.ends_with(suffix))
    }

    /// Runs `f` on the displayed text, formatting only a typed detail.
    #[cfg(feature = "alloc")]
    fn with_text<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        match self.as_text() {
            Some(t) => f(t),
            None => f(&alloc::string::ToString::to_string(self)),
        }
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Violation(v) => fmt::Display::fmt(v, f),
            Repr::Values { values, show } => show(values, f),
            _ => f.write_str(self.as_text().unwrap_or("")),
        }
    }
}

impl fmt::Debug for Detail {
    /// The text quoted and escaped exactly as `<str as Debug>` does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = self.as_text() {
            return fmt::Debug::fmt(text, f);
        }
        /// Escapes what passes through it character by character, as `str`'s `Debug` does
        /// (which, unlike `char::escape_debug`, leaves `'` alone).
        struct Escape<'a, 'b>(&'a mut fmt::Formatter<'b>);
        impl fmt::Write for Escape<'_, '_> {
            fn write_str(&mut self, part: &str) -> fmt::Result {
                for c in part.chars() {
                    if c == '\'' {
                        self.0.write_char(c)?;
                    } else {
                        write!(self.0, "{}", c.escape_debug())?;
                    }
                }
                Ok(())
            }
        }
        f.write_char('"')?;
        fmt::write(&mut Escape(f), format_args!("{self}"))?;
        f.write_char('"')
    }
}

/// Whether `shown` displays exactly `text`: compared as it is written, with no buffer.
fn displays_as(shown: &dyn fmt::Display, text: &str) -> bool {
    struct Expect<'a>(&'a [u8]);
    impl fmt::Write for Expect<'_> {
        fn write_str(&mut self, part: &str) -> fmt::Result {
            let rest = self.0.strip_prefix(part.as_bytes()).ok_or(fmt::Error)?;
            self.0 = rest;
            Ok(())
        }
    }
    let mut expect = Expect(text.as_bytes());
    fmt::write(&mut expect, format_args!("{shown}")).is_ok() && expect.0.is_empty()
}

/// Bytes of two typed details compared per pass of [`PartialEq for Detail`].
const WINDOW: usize = 64;

/// Bytes `skip..skip + WINDOW` of a displayed value, and its total length.
struct Window {
    skip: usize,
    bytes: [u8; WINDOW],
    len: usize,
    total: usize,
}

impl Window {
    fn of(shown: &dyn fmt::Display, skip: usize) -> Window {
        let mut w = Window {
            skip,
            bytes: [0; WINDOW],
            len: 0,
            total: 0,
        };
        let _ = fmt::write(&mut w, format_args!("{shown}"));
        w
    }
}

impl fmt::Write for Window {
    fn write_str(&mut self, part: &str) -> fmt::Result {
        for &b in part.as_bytes() {
            if self.total >= self.skip && self.len < WINDOW {
                self.bytes[self.len] = b;
                self.len += 1;
            }
            self.total += 1;
        }
        Ok(())
    }
}

impl PartialEq for Detail {
    /// Same text, however each side is stored. Without allocating: a side stored as text is
    /// compared as the other is displayed; two typed details are compared 64 bytes
    /// per pass.
    fn eq(&self, other: &Detail) -> bool {
        if let Some(text) = self.as_text() {
            return displays_as(other, text);
        }
        if let Some(text) = other.as_text() {
            return displays_as(self, text);
        }
        let mut skip = 0;
        loop {
            let (a, b) = (Window::of(self, skip), Window::of(other, skip));
            if a.total != b.total || a.bytes[..a.len] != b.bytes[..b.len] {
                return false;
            }
            skip += WINDOW;
            if skip >= a.total {
                return true;
            }
        }
    }
}

impl Eq for Detail {}

impl PartialEq<str> for Detail {
    fn eq(&self, other: &str) -> bool {
        displays_as(self, other)
    }
}

impl PartialEq<&str> for Detail {
    fn eq(&self, other: &&str) -> bool {
        displays_as(self, other)
    }
}

impl PartialEq<Detail> for str {
    fn eq(&self, other: &Detail) -> bool {
        displays_as(other, self)
    }
}

impl PartialEq<Detail> for &str {
    fn eq(&self, other: &Detail) -> bool {
        displays_as(other, self)
    }
}

#[cfg(feature = "alloc")]
impl PartialEq<alloc::string::String> for Detail {
    fn eq(&self, other: &alloc::string::String) -> bool {
        displays_as(self, other)
    }
}

#[cfg(feature = "alloc")]
impl PartialEq<alloc::string::String> for &Detail {
    fn eq(&self, other: &alloc::string::String) -> bool {
        displays_as(*self, other)
    }
}

/// Where [`Error::fmt`] formats: in place while the message fits [`INLINE_CAPACITY`]; past
/// that, with `alloc`, a heap string with the whole message, and without it [`HeadTail`]'s
/// ring.
#[derive(Default)]
struct Sink {
    inline: HeadTail,
    #[cfg(feature = "alloc")]
    heap: Option<alloc::string::String>,
}

impl fmt::Write for Sink {
    fn write_str(&mut self, part: &str) -> fmt::Result {
        #[cfg(feature = "alloc")]
        {
            if let Some(heap) = &mut self.heap {
                heap.push_str(part);
                return Ok(());
            }
            let so_far = self.inline.written;
            if so_far + part.len() > INLINE_CAPACITY {
                // Nothing was cut yet: `buf[..so_far]` is the message so far, in order.
                let mut heap = alloc::string::String::with_capacity(2 * (so_far + part.len()));
                heap.push_str(core::str::from_utf8(&self.inline.buf[..so_far]).unwrap_or(""));
                heap.push_str(part);
                self.heap = Some(heap);
                return Ok(());
            }
        }
        self.inline.write_str(part)
    }
}

impl Sink {
    fn finish(self) -> Repr {
        #[cfg(feature = "alloc")]
        if let Some(heap) = self.heap {
            return Repr::Heap(heap.into_boxed_str());
        }
        Repr::Inline(self.inline.finish())
    }
}

/// The in-place writer behind [`Error::fmt`]: the first [`INLINE_CAPACITY`] bytes of the
/// message stream go to `buf` in order; after that `buf[..INLINE_HEAD_BYTES]` keeps the
/// start and `buf[INLINE_HEAD_BYTES..]` is a ring holding the latest bytes: stream byte `n >=
/// INLINE_HEAD_BYTES` lives at `INLINE_HEAD_BYTES + (n - INLINE_HEAD_BYTES) % RING`.
struct HeadTail {
    buf: [u8; INLINE_CAPACITY],
    /// Bytes of the message written so far.
    written: usize,
}

impl Default for HeadTail {
    fn default() -> HeadTail {
        HeadTail {
            buf: [0; INLINE_CAPACITY],
            written: 0,
        }
    }
}

/// Size of [`HeadTail`]'s ring, bytes (at least [`INLINE_TAIL_BYTES`]).
const RING: usize = INLINE_CAPACITY - INLINE_HEAD_BYTES;

impl fmt::Write for HeadTail {
    fn write_str(&mut self, part: &str) -> fmt::Result {
        for &b in part.as_bytes() {
            let n = self.written;
            let at = if n < INLINE_HEAD_BYTES {
                n
            } else {
                INLINE_HEAD_BYTES + (n - INLINE_HEAD_BYTES) % RING
            };
            self.buf[at] = b;
            self.written = n.saturating_add(1);
        }
        Ok(())
    }
}

impl HeadTail {
    /// The message, or its head, [`ELISION`] and its tail when it did not fit.
    fn finish(&self) -> Inline {
        let mut out = Inline {
            len: 0,
            bytes: [0; INLINE_CAPACITY],
        };
        let mut push = |s: &str| {
            let at = usize::from(out.len);
            out.bytes[at..at + s.len()].copy_from_slice(s.as_bytes());
            out.len += s.len() as u8; // at most INLINE_CAPACITY <= u8::MAX in all
        };
        if self.written <= INLINE_CAPACITY {
            // Whole `&str`s were written in order: valid UTF-8.
            push(core::str::from_utf8(&self.buf[..self.written]).unwrap_or(""));
            return out;
        }
        // The head ends before an incomplete last character (the stream is valid UTF-8, so
        // that is the only way the prefix can be invalid).
        let head = &self.buf[..INLINE_HEAD_BYTES];
        let head = match core::str::from_utf8(head) {
            Ok(h) => h,
            Err(e) => core::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        };
        // The last INLINE_TAIL_BYTES of the stream, in order, from the ring.
        let mut tail = [0u8; INLINE_TAIL_BYTES];
        let first = self.written - INLINE_TAIL_BYTES;
        for (i, slot) in tail.iter_mut().enumerate() {
            *slot = self.buf[INLINE_HEAD_BYTES + (first + i - INLINE_HEAD_BYTES) % RING];
        }
        // Skip the continuation bytes (0b10xx_xxxx) of a character cut at its start.
        let start = tail
            .iter()
            .position(|&b| b & 0xc0 != 0x80)
            .unwrap_or(tail.len());
        let tail = core::str::from_utf8(&tail[start..]).unwrap_or("");
        push(head);
        push(ELISION);
        push(tail);
        out
    }
}

/// Shows a host pointer's address (0 for none) as `{:?}` shows an `Option<NonNull<u8>>`:
/// `None` or `Some(0x…)`. For [`Error::lazy`] messages, which hold the address as an integer.
pub(crate) fn show_host_ptr(address: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if address == 0 {
        f.write_str("None")
    } else {
        write!(f, "Some({address:#x})")
    }
}

/// `Result` with hsa-rt's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Builds an [`Error`]: `error!(Status::InvalidArgument, "grid_size_x is {}", x)`.
///
/// A message without arguments is kept static; one with arguments is formatted now (see
/// [`Error::fmt`]). On hot paths prefer [`Error::lazy`], which formats only when displayed.
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
    use alloc::borrow::ToOwned;
    use alloc::format;
    use alloc::string::{String, ToString};

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
        // hsa.h: 0, 1, 0x1000..=0x1019, 0x1020..=0x1026; hsa_ext_amd.h: 40..=44;
        // hsa_ext_image.h: 0x3000..=0x3003.
        assert_eq!(Status::ALL.len(), 44);
        assert_eq!(Status::from_raw(0x1027), Err(UnknownStatus(0x1027)));
        assert_eq!(Status::from_raw(2), Err(UnknownStatus(2)));
    }

    /// What a build without `alloc` keeps of a formatted message: the in-place writer alone.
    fn inline_only(args: fmt::Arguments<'_>) -> String {
        let mut w = HeadTail::default();
        let _ = fmt::write(&mut w, args);
        w.finish().as_str().to_owned()
    }

    #[test]
    fn error_messages_carry_values_and_are_cut_safely() {
        let e = crate::error!(Status::InvalidArgument, "grid_size_x is {}", 0);
        assert_eq!(e.detail(), "grid_size_x is 0");
        assert_eq!(e.status(), Status::InvalidArgument);
        // With alloc a long message is kept whole; without, it fills the inline capacity
        // and keeps its end.
        let long = crate::error!(Status::Error, "{:0>500}", 1);
        assert_eq!(long.detail(), format!("{:0>500}", 1));
        let cut = inline_only(format_args!("{:0>500}", 1));
        assert_eq!(cut.len(), INLINE_CAPACITY);
        assert!(cut.ends_with("0001"), "{cut}");
        let c = e.context("hsa_queue_create");
        assert_eq!(c.detail(), "hsa_queue_create: grid_size_x is 0");
        assert_eq!(c.status(), Status::InvalidArgument);
    }

    /// A message with a 1000-byte path before its cause is kept whole with `alloc`; without,
    /// it keeps its start and its end (the cause), marking the elided middle with `…`, within
    /// [`INLINE_CAPACITY`] bytes.
    #[test]
    fn a_long_message_keeps_its_cause() {
        let path = format!("/{}", "d".repeat(999));
        let e = crate::error!(
            Status::InvalidFile,
            "code object {path}: No such file or directory (os error 2)"
        );
        let whole = format!("code object {path}: No such file or directory (os error 2)");
        assert_eq!(e.detail(), whole);
        assert_eq!(
            e.to_string(),
            format!("{whole} (HSA_STATUS_ERROR_INVALID_FILE)")
        );
        // Context in front of a long message keeps both, whole.
        let c = e.context("hsa_code_object_reader_create_from_file");
        assert_eq!(
            c.detail(),
            format!("hsa_code_object_reader_create_from_file: {whole}")
        );

        let d = inline_only(format_args!(
            "code object {path}: No such file or directory (os error 2)"
        ));
        assert!(d.len() <= INLINE_CAPACITY, "{} bytes", d.len());
        assert!(d.starts_with("code object "), "{d}");
        assert!(d.ends_with("No such file or directory (os error 2)"), "{d}");
        assert_eq!(d.matches('…').count(), 1, "{d}");
        // Nothing past the capacity: exactly full, head and tail around the mark.
        assert_eq!(d.len(), INLINE_CAPACITY);
    }

    /// The cut never splits a character: multi-byte text on both sides of the elision stays
    /// valid UTF-8 and a message that fits is untouched (and kept in place).
    #[test]
    fn the_cut_respects_character_boundaries() {
        let fits = "é".repeat(INLINE_CAPACITY / 2);
        let e = crate::error!(Status::Error, "{fits}");
        assert_eq!(e.detail(), fits);
        assert!(matches!(e.detail().0, Repr::Inline(_)));
        for n in 0..4 {
            let msg = format!("{}{}: the cause", "x".repeat(n), "é€😀".repeat(60));
            assert_eq!(crate::error!(Status::Error, "{msg}").detail(), msg);
            let d = inline_only(format_args!("{msg}"));
            assert!(d.len() <= INLINE_CAPACITY);
            assert!(d.ends_with("😀: the cause"), "{d}");
            assert!(d.contains('…'), "{d}");
            let (head, tail) = d.split_once('…').unwrap();
            assert!(msg.starts_with(head), "{head}");
            assert!(msg.ends_with(tail), "{tail}");
        }
    }

    /// Issue 18: an `Error` (and a `Result` carrying one) fits 64 bytes. It was 272.
    #[test]
    fn an_error_is_at_most_64_bytes() {
        let (e, r) = (
            core::mem::size_of::<Error>(),
            core::mem::size_of::<Result<(), Error>>(),
        );
        assert!(e <= 64, "Error is {e} bytes");
        assert!(r <= 64, "Result<(), Error> is {r} bytes");
    }

    /// Static, typed and lazy details are stored as such (not formatted when made) and read
    /// as today's messages; only a message with arguments is formatted.
    #[test]
    fn details_are_formatted_only_when_they_must_be() {
        let e = crate::error!(Status::OutOfResources, "signal pool is full");
        assert!(matches!(e.detail().0, Repr::Static("signal pool is full")));
        let e = Error::from(Status::InvalidQueue);
        assert!(matches!(e.detail().0, Repr::Static(_)));
        assert_eq!(e.detail(), "the queue is not valid");

        let v = Violation::new("workgroup_size_y", 0, Rule::AtLeast(1));
        let e = v.into_error(Status::InvalidPacketFormat);
        assert!(matches!(e.detail().0, Repr::Violation(_)));
        assert_eq!(e.detail(), "workgroup_size_y is 0; must be >= 1");
        assert_eq!(
            e.to_string(),
            "workgroup_size_y is 0; must be >= 1 (HSA_STATUS_ERROR_INVALID_PACKET_FORMAT)"
        );

        let e = Error::lazy(Status::InvalidQueue, [7, 3], |&[id, n, ..], f| {
            write!(f, "queue {id:#x} has {n} packets")
        });
        assert!(matches!(e.detail().0, Repr::Values { .. }));
        assert_eq!(e.detail(), "queue 0x7 has 3 packets");

        let id = core::hint::black_box(7);
        let short = crate::error!(Status::Error, "queue {id}");
        assert!(matches!(short.detail().0, Repr::Inline(_)));
        let long = crate::error!(Status::Error, "{}", "x".repeat(INLINE_CAPACITY + 1));
        assert!(matches!(long.detail().0, Repr::Heap(_)));
    }

    /// Errors compare by status and text, whatever the detail's storage; typed details longer
    /// than a comparison window are compared over their whole length.
    #[test]
    fn details_compare_by_text() {
        let s = Status::InvalidArgument;
        let id = core::hint::black_box(7);
        assert_eq!(Error::new(s, "queue 7"), crate::error!(s, "queue {id}"));
        assert_ne!(Error::new(s, "queue 7"), crate::error!(s, "queue {id}0"));
        assert_ne!(
            Error::new(s, "queue 7"),
            crate::error!(Status::Error, "queue {id}")
        );
        let v = Violation::new("grid_size_x", 0, Rule::AtLeast(1)).into_error(s);
        let lazy = Error::lazy(s, [0], |&[v, ..], f| {
            write!(f, "grid_size_x is {v}; must be >= 1")
        });
        assert_eq!(v, lazy);
        assert_eq!(v.detail(), lazy.detail());

        let show: ShowValues = |&[a, b, ..], f| write!(f, "{:0>70}{b}", a);
        let a = Error::lazy(s, [1, 2], show);
        assert_eq!(a, Error::lazy(s, [1, 2], show));
        // Same first 64 bytes, different 71st.
        assert_ne!(a, Error::lazy(s, [1, 3], show));
        // One is a prefix of the other.
        assert_ne!(a, Error::lazy(s, [1, 22], show));
        assert_ne!(a.detail(), "0");
        assert_eq!(a.detail(), format!("{:0>70}2", 1));
        assert!(format!("{:0>70}2", 1).as_str() == *a.detail());
    }

    /// `Debug` shows the text quoted and escaped exactly as a `&str`'s, typed or not.
    #[test]
    fn debug_quotes_like_a_str() {
        let text = "it's \"q\" \\ tab\t nl\n e\u{301} \u{7f} ok";
        let show: ShowValues = |_, f| f.write_str("it's \"q\" \\ tab\t nl\n e\u{301} \u{7f} ok");
        let lazy = Error::lazy(Status::Error, [], show);
        assert_eq!(format!("{:?}", lazy.detail()), format!("{text:?}"));
        let formatted = crate::error!(Status::Error, "{text}");
        assert_eq!(format!("{:?}", formatted.detail()), format!("{text:?}"));
        assert_eq!(
            format!("{lazy:?}"),
            format!("Error(HSA_STATUS_ERROR: {text:?})")
        );
    }

    /// A host pointer shown from its address reads as the pointer's `Debug`.
    #[test]
    fn host_pointers_show_as_their_debug() {
        struct Show(u64);
        impl fmt::Display for Show {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                show_host_ptr(self.0, f)
            }
        }
        let p = core::ptr::NonNull::new(core::ptr::without_provenance_mut::<u8>(0x7f00_1040));
        assert_eq!(Show(0x7f00_1040).to_string(), format!("{p:?}"));
        let none: Option<core::ptr::NonNull<u8>> = None;
        assert_eq!(Show(0).to_string(), format!("{none:?}"));
    }

    /// Context goes in front of a typed detail, which it keeps, and the status stays.
    #[test]
    fn context_keeps_a_typed_cause() {
        let e = Violation::new("kernarg_address", 0x18, Rule::Aligned(16))
            .into_error(Status::InvalidPacketFormat)
            .context("packet 3");
        assert_eq!(e.status(), Status::InvalidPacketFormat);
        assert_eq!(
            e.detail(),
            "packet 3: kernarg_address is 0x18; must be 16-byte aligned"
        );
    }
}
