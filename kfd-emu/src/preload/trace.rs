//! `--trace FILE`: one line per call on the device files, appended to `$KFD_EMU_TRACE`.
//!
//! Lines (fields separated by one space, the process id first):
//! - `<pid> open <path> = <fd>`
//! - `<pid> ioctl <path> <REQUEST> <in> -> <result> <out>`: the request by its name in
//!   `kfd_ioctl.h` / `drm.h` / `amdgpu_drm.h` (`AMDKFD_IOC_CREATE_QUEUE`), or
//!   `K:0x<nr>`/`d:0x<nr>` for a number without one; `<in>` the argument as the program
//!   passed it (for `_IOW`/`_IOWR` requests) and `<out>` as it got it back (for
//!   `_IOR`/`_IOWR`), each decoded field by field (`CreateQueueArgs { gpu_id: 4660, .. }`),
//!   or `-` when the direction has none; `<result>` is `0` or the errno's name (`EINVAL`).
//! - `<pid> mmap <path> offset=0x<offset> (<what>) len=0x<len> prot=<R|W|X|NONE>
//!   flags=<SHARED|FIXED|..> addr=0x<hint> -> 0x<address>|<errno>`, where `<what>` decodes
//!   the offset (`DOORBELL gpu_id_hash=0x1234`, `EVENTS`, `MMIO gpu_id_hash=..`, `BO`).
//! - `<pid> munmap 0x<address> len=0x<len>` for ranges of the device files' mappings.
//! - `<pid> close <path> fd=<fd>`.
//! - `<pid> stats interpreted_dispatches=<n> host_dispatches=<n> pm4_packets=<n>
//!   sdma_packets=<n>` once, when the process exits normally (the library's `.fini_array`
//!   entry), if it opened the device: what the emulated device ran
//!   ([`hsa_emu::device::ExecutionStats`]), e.g. that ROCR's copies went through its SDMA
//!   queues.
//!
//! Writing is best effort: a trace file that cannot be opened is said once on stderr and the
//! program runs untraced.

use std::fmt::Debug;
use std::io::Write;
use std::sync::Mutex;

use hsa_emu::device::drm::{
    DrmAmdgpuInfo, DrmClient, DrmVersion, DRM_IOCTL_AMDGPU_INFO, DRM_IOCTL_GET_CLIENT,
    DRM_IOCTL_VERSION,
};
use hsa_linux::kfd::abi::*;
use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, KnownLayout};

/// The trace file.
pub(crate) struct Tracer {
    file: Mutex<std::fs::File>,
    pid: u32,
}

impl Tracer {
    /// The tracer `$KFD_EMU_TRACE` asks for; `None` when unset or empty, or (said on stderr)
    /// when the file cannot be opened for appending.
    pub(crate) fn from_env() -> Option<Tracer> {
        let path = std::env::var_os("KFD_EMU_TRACE").filter(|v| !v.is_empty())?;
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(file) => Some(Tracer {
                file: Mutex::new(file),
                pid: std::process::id(),
            }),
            Err(e) => {
                eprintln!("kfd-emu: trace file {}: {e}", path.to_string_lossy());
                None
            }
        }
    }

    /// Appends `text` as one line.
    pub(crate) fn line(&self, text: &str) {
        let mut f = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = writeln!(f, "{} {text}", self.pid);
    }
}

/// The name of an errno for the trace (`EINVAL`), or its number.
pub fn errno_name(e: Errno) -> String {
    let names = [
        (Errno::PERM, "EPERM"),
        (Errno::NOENT, "ENOENT"),
        (Errno::IO, "EIO"),
        (Errno::NOMEM, "ENOMEM"),
        (Errno::FAULT, "EFAULT"),
        (Errno::BUSY, "EBUSY"),
        (Errno::INVAL, "EINVAL"),
        (Errno::NOSPC, "ENOSPC"),
        (Errno::NOTTY, "ENOTTY"),
        (Errno::NODEV, "ENODEV"),
        (Errno::NOSYS, "ENOSYS"),
        (Errno::AGAIN, "EAGAIN"),
        (Errno::ACCESS, "EACCES"),
        (Errno::OPNOTSUPP, "EOPNOTSUPP"),
        (Errno::SRCH, "ESRCH"),
        (Errno::ADDRINUSE, "EADDRINUSE"),
        (Errno::BADF, "EBADF"),
        (Errno::EXIST, "EEXIST"),
        (Errno::TIME, "ETIME"),
        (Errno::RANGE, "ERANGE"),
        (Errno::TOOBIG, "E2BIG"),
        (Errno::NXIO, "ENXIO"),
        (Errno::MFILE, "EMFILE"),
    ];
    names.iter().find(|(n, _)| *n == e).map_or_else(
        || format!("errno {}", e.raw_os_error()),
        |(_, s)| (*s).to_owned(),
    )
}

/// The name of a KFD ioctl number (`kfd_ioctl.h`: upstream numbers 0x01..0x26, and the
/// ROCm 5.x kernels' own range from 0x80), `None` for a number without one.
pub fn kfd_request_name(nr: u8) -> Option<&'static str> {
    Some(match nr {
        0x01 => "AMDKFD_IOC_GET_VERSION",
        0x02 => "AMDKFD_IOC_CREATE_QUEUE",
        0x03 => "AMDKFD_IOC_DESTROY_QUEUE",
        0x04 => "AMDKFD_IOC_SET_MEMORY_POLICY",
        0x05 => "AMDKFD_IOC_GET_CLOCK_COUNTERS",
        0x06 => "AMDKFD_IOC_GET_PROCESS_APERTURES",
        0x07 => "AMDKFD_IOC_UPDATE_QUEUE",
        0x08 => "AMDKFD_IOC_CREATE_EVENT",
        0x09 => "AMDKFD_IOC_DESTROY_EVENT",
        0x0A => "AMDKFD_IOC_SET_EVENT",
        0x0B => "AMDKFD_IOC_RESET_EVENT",
        0x0C => "AMDKFD_IOC_WAIT_EVENTS",
        0x0D => "AMDKFD_IOC_DBG_REGISTER",
        0x0E => "AMDKFD_IOC_DBG_UNREGISTER",
        0x0F => "AMDKFD_IOC_DBG_ADDRESS_WATCH",
        0x10 => "AMDKFD_IOC_DBG_WAVE_CONTROL",
        0x11 => "AMDKFD_IOC_SET_SCRATCH_BACKING_VA",
        0x12 => "AMDKFD_IOC_GET_TILE_CONFIG",
        0x13 => "AMDKFD_IOC_SET_TRAP_HANDLER",
        0x14 => "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW",
        0x15 => "AMDKFD_IOC_ACQUIRE_VM",
        0x16 => "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
        0x17 => "AMDKFD_IOC_FREE_MEMORY_OF_GPU",
        0x18 => "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
        0x19 => "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU",
        0x1A => "AMDKFD_IOC_SET_CU_MASK",
        0x1B => "AMDKFD_IOC_GET_QUEUE_WAVE_STATE",
        0x1C => "AMDKFD_IOC_GET_DMABUF_INFO",
        0x1D => "AMDKFD_IOC_IMPORT_DMABUF",
        0x1E => "AMDKFD_IOC_ALLOC_QUEUE_GWS",
        0x1F => "AMDKFD_IOC_SMI_EVENTS",
        0x20 => "AMDKFD_IOC_SVM",
        0x21 => "AMDKFD_IOC_SET_XNACK_MODE",
        0x22 => "AMDKFD_IOC_CRIU_OP",
        0x23 => "AMDKFD_IOC_AVAILABLE_MEMORY",
        0x24 => "AMDKFD_IOC_EXPORT_DMABUF",
        0x25 => "AMDKFD_IOC_RUNTIME_ENABLE",
        0x26 => "AMDKFD_IOC_DBG_TRAP",
        0x80 => "AMDKFD_IOC_IPC_IMPORT_HANDLE",
        0x81 => "AMDKFD_IOC_IPC_EXPORT_HANDLE",
        0x82 => "AMDKFD_IOC_DBG_TRAP (ROCm 5.x)",
        0x83 => "AMDKFD_IOC_CROSS_MEMORY_COPY",
        0x84 => "AMDKFD_IOC_RLC_SPM",
        _ => return None,
    })
}

fn as_debug<T: FromBytes + KnownLayout + Immutable + Debug>(bytes: &[u8]) -> String {
    match T::read_from_bytes(bytes) {
        Ok(v) => format!("{v:?}"),
        Err(_) => hex(bytes),
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::from("[");
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 && i % 4 == 0 {
            s.push(' ');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s.push(']');
    s
}

/// A KFD ioctl argument decoded field by field (by the request's number, when its size is
/// the struct's), else its bytes in hex.
pub fn decode_kfd(nr: u8, bytes: &[u8]) -> String {
    match nr {
        0x01 => as_debug::<GetVersionArgs>(bytes),
        // 1.17's 96 bytes (with `sdma_engine_id`), else 1.11's 88.
        0x02 if bytes.len() == size_of::<hsa_emu::device::CreateQueueArgs17>() => {
            as_debug::<hsa_emu::device::CreateQueueArgs17>(bytes)
        }
        0x02 => as_debug::<CreateQueueArgs>(bytes),
        0x03 => as_debug::<DestroyQueueArgs>(bytes),
        0x04 => as_debug::<SetMemoryPolicyArgs>(bytes),
        0x05 => as_debug::<GetClockCountersArgs>(bytes),
        0x07 => as_debug::<UpdateQueueArgs>(bytes),
        0x08 => as_debug::<CreateEventArgs>(bytes),
        0x09 => as_debug::<DestroyEventArgs>(bytes),
        0x0A => as_debug::<SetEventArgs>(bytes),
        0x0B => as_debug::<ResetEventArgs>(bytes),
        0x0C => as_debug::<WaitEventsArgs>(bytes),
        0x11 => as_debug::<SetScratchBackingVaArgs>(bytes),
        0x12 => as_debug::<hsa_emu::device::GetTileConfigArgs>(bytes),
        0x13 => as_debug::<hsa_emu::device::SetTrapHandlerArgs>(bytes),
        0x14 => as_debug::<GetProcessAperturesNewArgs>(bytes),
        0x15 => as_debug::<AcquireVmArgs>(bytes),
        0x16 => as_debug::<AllocMemoryOfGpuArgs>(bytes),
        0x17 => as_debug::<FreeMemoryOfGpuArgs>(bytes),
        0x18 => as_debug::<MapMemoryToGpuArgs>(bytes),
        0x19 => as_debug::<UnmapMemoryFromGpuArgs>(bytes),
        0x1A => as_debug::<SetCuMaskArgs>(bytes),
        0x20 => {
            // The head, then the attributes the request's size carries.
            let n = size_of::<SvmArgs>().min(bytes.len());
            let attrs: Vec<String> = bytes[n..]
                .chunks_exact(size_of::<SvmAttribute>())
                .map(as_debug::<SvmAttribute>)
                .collect();
            format!(
                "{} [{}]",
                as_debug::<SvmArgs>(&bytes[..n]),
                attrs.join(", ")
            )
        }
        0x21 => as_debug::<SetXnackModeArgs>(bytes),
        0x23 => as_debug::<GetAvailableMemoryArgs>(bytes),
        0x25 => as_debug::<RuntimeEnableArgs>(bytes),
        _ => hex(bytes),
    }
}

/// A DRM request's name and its argument decoded.
pub fn decode_drm(request: u32, bytes: &[u8]) -> (String, String) {
    match request {
        DRM_IOCTL_VERSION => ("DRM_IOCTL_VERSION".into(), as_debug::<DrmVersion>(bytes)),
        DRM_IOCTL_GET_CLIENT => ("DRM_IOCTL_GET_CLIENT".into(), as_debug::<DrmClient>(bytes)),
        DRM_IOCTL_AMDGPU_INFO => (
            "DRM_IOCTL_AMDGPU_INFO".into(),
            as_debug::<DrmAmdgpuInfo>(bytes),
        ),
        _ => decode_gem(request, bytes),
    }
}

/// The GEM requests' names and arguments, found by number as amdgpu finds them (libdrm sends
/// `GEM_VA` as `_IOWR`, of 40 or 64 bytes); the first 40 bytes of a `GEM_VA` are decoded.
fn decode_gem(request: u32, bytes: &[u8]) -> (String, String) {
    use hsa_emu::device::gem::{DrmAmdgpuGemVa, DrmGemClose, DrmPrimeHandle};
    let va_head = bytes.get(..size_of::<DrmAmdgpuGemVa>()).unwrap_or(bytes);
    let (name, args) = match request & 0xff {
        0x09 => ("DRM_IOCTL_GEM_CLOSE", as_debug::<DrmGemClose>(bytes)),
        0x2d => (
            "DRM_IOCTL_PRIME_HANDLE_TO_FD",
            as_debug::<DrmPrimeHandle>(bytes),
        ),
        0x2e => (
            "DRM_IOCTL_PRIME_FD_TO_HANDLE",
            as_debug::<DrmPrimeHandle>(bytes),
        ),
        0x41 => ("DRM_IOCTL_AMDGPU_GEM_MMAP", hex(bytes)),
        0x48 => (
            "DRM_IOCTL_AMDGPU_GEM_VA",
            as_debug::<DrmAmdgpuGemVa>(va_head),
        ),
        _ => return (format!("d:0x{:02x}", request & 0xff), hex(bytes)),
    };
    (name.into(), args)
}

/// The ioctl line (without the pid).
pub fn ioctl_line(
    path: &str,
    request: u32,
    before: &[u8],
    after: &[u8],
    result: Result<(), Errno>,
) -> String {
    let ty = ((request >> 8) & 0xff) as u8;
    let nr = (request & 0xff) as u8;
    let dir = request >> 30;
    let (name, in_text, out_text) = if ty == AMDKFD_IOCTL_BASE {
        (
            kfd_request_name(nr).map_or_else(|| format!("K:0x{nr:02x}"), str::to_owned),
            decode_kfd(nr, before),
            decode_kfd(nr, after),
        )
    } else if ty == b'd' {
        let (name, b) = decode_drm(request, before);
        (name, b, decode_drm(request, after).1)
    } else {
        (format!("{request:#x}"), hex(before), hex(after))
    };
    let in_text = if dir & IOC_WRITE != 0 {
        in_text
    } else {
        "-".into()
    };
    let out_text = if dir & IOC_READ != 0 {
        out_text
    } else {
        "-".into()
    };
    let result = match result {
        Ok(()) => "0".to_owned(),
        Err(e) => errno_name(e),
    };
    format!("ioctl {path} {name} {in_text} -> {result} {out_text}")
}

/// What a `/dev/kfd` mmap offset names (`kfd_priv.h` mmap types).
pub fn kfd_offset_kind(offset: u64) -> String {
    let hash = kfd_mmap_get_gpu_id(offset);
    match offset & KFD_MMAP_TYPE_MASK {
        KFD_MMAP_TYPE_DOORBELL => format!("DOORBELL gpu_id_hash={hash:#x}"),
        KFD_MMAP_TYPE_EVENTS => "EVENTS".to_owned(),
        KFD_MMAP_TYPE_RESERVED_MEM => format!("RESERVED_MEM gpu_id_hash={hash:#x}"),
        _ => format!("MMIO gpu_id_hash={hash:#x}"),
    }
}

/// `PROT_*` bits as text.
pub fn prot_text(prot: i32) -> String {
    let mut s = String::new();
    for (bit, c) in [
        (libc::PROT_READ, 'R'),
        (libc::PROT_WRITE, 'W'),
        (libc::PROT_EXEC, 'X'),
    ] {
        if prot & bit != 0 {
            s.push(c);
        }
    }
    if s.is_empty() {
        s.push_str("NONE");
    }
    s
}

/// `MAP_*` flags as text.
pub fn map_flags_text(flags: i32) -> String {
    let mut parts = Vec::new();
    for (bit, name) in [
        (libc::MAP_SHARED, "SHARED"),
        (libc::MAP_PRIVATE, "PRIVATE"),
        (libc::MAP_FIXED, "FIXED"),
        (libc::MAP_FIXED_NOREPLACE, "FIXED_NOREPLACE"),
        (libc::MAP_NORESERVE, "NORESERVE"),
        (libc::MAP_POPULATE, "POPULATE"),
    ] {
        if flags & bit == bit {
            parts.push(name);
        }
    }
    let rest = flags
        & !(libc::MAP_SHARED
            | libc::MAP_PRIVATE
            | libc::MAP_FIXED
            | libc::MAP_FIXED_NOREPLACE
            | libc::MAP_NORESERVE
            | libc::MAP_POPULATE);
    let mut s = parts.join("|");
    if rest != 0 {
        s.push_str(&format!("|{rest:#x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    /// The errnos the emulated device answers with are named (EADDRINUSE, SVM's and
    /// ALLOC_MEMORY_OF_GPU's, was `errno 98`, which the ROCm 7 trace test did not count as a
    /// refusal); one without a name is its number.
    #[test]
    fn errnos_are_named() {
        assert_eq!(errno_name(Errno::ADDRINUSE), "EADDRINUSE");
        assert_eq!(errno_name(Errno::TOOBIG), "E2BIG");
        assert_eq!(errno_name(Errno::from_raw_os_error(135)), "errno 135");
    }

    #[test]
    fn ioctl_lines_name_the_request_and_decode_both_ways() {
        let before = GetVersionArgs::default();
        let after = GetVersionArgs {
            major_version: 1,
            minor_version: 11,
        };
        assert_eq!(
            ioctl_line(
                "/dev/kfd",
                AMDKFD_IOC_GET_VERSION,
                before.as_bytes(),
                after.as_bytes(),
                Ok(())
            ),
            "ioctl /dev/kfd AMDKFD_IOC_GET_VERSION - -> 0 \
             GetVersionArgs { major_version: 1, minor_version: 11 }"
        );
        let d = DestroyEventArgs {
            event_id: 7,
            pad: 0,
        };
        assert_eq!(
            ioctl_line(
                "/dev/kfd",
                AMDKFD_IOC_DESTROY_EVENT,
                d.as_bytes(),
                d.as_bytes(),
                Err(Errno::INVAL)
            ),
            "ioctl /dev/kfd AMDKFD_IOC_DESTROY_EVENT DestroyEventArgs { event_id: 7, pad: 0 } \
             -> EINVAL -"
        );
        let x = [1u8, 2, 3, 4, 5];
        assert_eq!(
            ioctl_line(
                "/dev/kfd",
                ioc(IOC_READ | IOC_WRITE, b'K', 0x82, 5),
                &x,
                &x,
                Err(Errno::INVAL)
            ),
            "ioctl /dev/kfd AMDKFD_IOC_DBG_TRAP (ROCm 5.x) [01020304 05] -> EINVAL [01020304 05]"
        );
    }

    #[test]
    fn offsets_and_flags() {
        assert_eq!(
            kfd_offset_kind(kfd_mmap_doorbell_offset(0x1234)),
            "DOORBELL gpu_id_hash=0x1234"
        );
        assert_eq!(kfd_offset_kind(KFD_MMAP_EVENTS_OFFSET), "EVENTS");
        assert_eq!(prot_text(libc::PROT_READ | libc::PROT_WRITE), "RW");
        assert_eq!(prot_text(0), "NONE");
        assert_eq!(
            map_flags_text(libc::MAP_SHARED | libc::MAP_FIXED),
            "SHARED|FIXED"
        );
    }
}
