//! The emulated `/dev/kfd` character device: its ioctl table and `kfd_ioctl`'s checks, and its
//! mmap (Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`: `amdkfd_ioctls[]`,
//! `kfd_ioctl`, `kfd_mmap`).
//!
//! [`AMDKFD_IOCTLS`] is amdkfd's table: indexed by the ioctl number (`_IOC_NR` of the command),
//! each row the command (type `'K'`, the argument's size and direction), the handler, the
//! command's name and amdkfd's flags. A handler takes the device and the argument as its
//! `kfd_ioctl.h` struct ([`hsa_linux::kfd::abi`]) and lives in the module of the object it
//! acts on: [`process`](super::process) (version, apertures, memory policy, scratch, trap
//! handler, tile config, XNACK, runtime enable), [`debug`](super::debug) (the debug trap),
//! [`clock`](super::clock), [`events`](super::events),
//! [`memory`](super::memory), [`dmabuf`](super::dmabuf), [`queue_manager`](super::queue_manager)
//! (compute queues, CU masks, queue wave state, GWS), [`sdma`](super::sdma) (SDMA queues),
//! [`smi`](super::smi) (system-management event readers) and [`svm`](super::svm) (SVM
//! ranges; its argument is the request's whole buffer, head and attributes). Every number of
//! amdkfd's table has a row. Adding an ioctl is one row here and one handler there.
//!
//! [`ioctl`] answers a request as `kfd_ioctl` does:
//! - `arg.len()` must equal `_IOC_SIZE(request)` (the `KfdDriver` contract), else `EINVAL`;
//! - a number outside [`AMDKFD_COMMAND_START`]..[`AMDKFD_COMMAND_END`] is `EINVAL` (among them
//!   the ROCm 5.x kernels' own 0x80 range), a number inside it without a row `ENOTTY` (none
//!   is left);
//! - a row flagged [`KFD_IOC_FLAG_CHECKPOINT_RESTORE`] is `EACCES` before its argument is
//!   read (a process without `CAP_CHECKPOINT_RESTORE` or `CAP_SYS_ADMIN`);
//! - then only the number counts: the command is the row's — type byte and direction
//!   included, whatever the caller's —, the argument is zero-extended or truncated to the
//!   row's struct (all zero for a command that only reads), and it is copied back when the
//!   row's command reads (also after an error).

use std::ptr::NonNull;
use std::sync::Arc;

use rustix::io::Errno;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use hsa_linux::kfd::abi::*;

use super::process::AMDKFD_IOC_DBG_TRAP;
use super::queue_manager::AMDKFD_IOC_CREATE_QUEUE_17;

use super::{clock, debug, dmabuf, events, lock, memory, process, queue_manager, smi, svm, Device};
use super::{EVENT_PAGE_BYTES, PAGE_BYTES};
use crate::device::DOORBELL_PAGE_BYTES;

/// `AMDKFD_COMMAND_START`: the first KFD ioctl number (`kfd_ioctl.h`).
pub const AMDKFD_COMMAND_START: u8 = 0x01;
/// `AMDKFD_COMMAND_END` of the interface this device models (KFD 1.11..1.17, up to
/// `AMDKFD_IOC_DBG_TRAP` 0x26): numbers from here on are past amdkfd's table (`EINVAL`).
pub const AMDKFD_COMMAND_END: u8 = 0x27;

/// `KFD_IOC_FLAG_CHECKPOINT_RESTORE` (`kfd_priv.h`): a command only a process with
/// `CAP_CHECKPOINT_RESTORE` may issue (amdkfd's `AMDKFD_IOC_CRIU_OP`).
pub const KFD_IOC_FLAG_CHECKPOINT_RESTORE: u32 = 1 << 0;

/// A row's handler: runs the command `cmd` (the row's) on the argument's bytes.
pub type IoctlHandler = fn(&Arc<Device>, u32, &mut [u8]) -> Result<(), Errno>;

/// One row of [`AMDKFD_IOCTLS`] (amdkfd's `struct amdkfd_ioctl_desc`).
#[derive(Clone, Copy)]
pub struct AmdkfdIoctlDesc {
    /// The command: `_IOC(direction, 'K', number, size of the argument struct)`.
    pub cmd: u32,
    /// The handler.
    pub(crate) func: IoctlHandler,
    /// The command's name, `AMDKFD_IOC_*`.
    pub name: &'static str,
    /// amdkfd's flags ([`KFD_IOC_FLAG_CHECKPOINT_RESTORE`]).
    pub flags: u32,
}

impl std::fmt::Debug for AmdkfdIoctlDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmdkfdIoctlDesc")
            .field("cmd", &format_args!("{:#x}", self.cmd))
            .field("name", &self.name)
            .field("flags", &self.flags)
            .finish()
    }
}

/// `_IOC_NR(cmd)`.
const fn ioc_nr(cmd: u32) -> usize {
    (cmd & 0xff) as usize
}

/// A row of the table (amdkfd's `AMDKFD_IOCTL_DEF`): the handler `$func(&Arc<Device>, &mut
/// Args)` for command `$cmd`, whose argument struct the handler's type names.
macro_rules! amdkfd_ioctl_def {
    ($cmd:ident, $func:path, $flags:expr) => {
        AmdkfdIoctlDesc {
            cmd: $cmd,
            func: |device, cmd, arg| with_args(cmd, arg, |a| $func(device, a)),
            name: stringify!($cmd),
            flags: $flags,
        }
    };
}

/// The table from its rows, each at the index of its command's number (a row past the end,
/// or two rows at one number, is a compile error).
macro_rules! amdkfd_ioctl_table {
    ($($row:expr),* $(,)?) => {{
        let mut table = [None; AMDKFD_COMMAND_END as usize];
        $(
            let row: AmdkfdIoctlDesc = $row;
            assert!(table[ioc_nr(row.cmd)].is_none(), "two rows at one ioctl number");
            table[ioc_nr(row.cmd)] = Some(row);
        )*
        table
    }};
}

/// amdkfd's ioctl table as this device emulates it, indexed by ioctl number (module docs).
#[rustfmt::skip] // One row a line, as amdkfd's table.
pub static AMDKFD_IOCTLS: [Option<AmdkfdIoctlDesc>; AMDKFD_COMMAND_END as usize] = amdkfd_ioctl_table![
    amdkfd_ioctl_def!(AMDKFD_IOC_GET_VERSION, process::get_version, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_CREATE_QUEUE_17, queue_manager::create_queue_ioctl, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_DESTROY_QUEUE, queue_manager::destroy_queue_ioctl, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_SET_MEMORY_POLICY, process::set_memory_policy, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_GET_CLOCK_COUNTERS, clock::get_clock_counters, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_GET_PROCESS_APERTURES, process::get_process_apertures, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_UPDATE_QUEUE, queue_manager::update_queue, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_CREATE_EVENT, events::create_event, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_DESTROY_EVENT, events::destroy_event, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_SET_EVENT, events::set_event, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_RESET_EVENT, events::reset_event, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_WAIT_EVENTS, events::wait_events, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_DBG_REGISTER_DEPRECATED, process::dbg_deprecated::<DbgRegisterArgs>, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, process::dbg_deprecated::<DbgRegisterArgs>, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, process::dbg_deprecated::<DbgContentArgs>, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, process::dbg_deprecated::<DbgContentArgs>, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_SET_SCRATCH_BACKING_VA, process::set_scratch_backing_va, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_GET_TILE_CONFIG, process::get_tile_config, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_SET_TRAP_HANDLER, process::set_trap_handler, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, process::get_process_apertures_new, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_ACQUIRE_VM, process::acquire_vm, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, memory::alloc_memory_of_gpu, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_FREE_MEMORY_OF_GPU, memory::free_memory_of_gpu, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_MAP_MEMORY_TO_GPU, memory::map_memory_to_gpu, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, memory::unmap_memory_from_gpu, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_SET_CU_MASK, queue_manager::set_cu_mask, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_manager::get_queue_wave_state, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_GET_DMABUF_INFO, dmabuf::get_dmabuf_info, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_IMPORT_DMABUF, dmabuf::import_dmabuf, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_ALLOC_QUEUE_GWS, queue_manager::alloc_queue_gws, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_SMI_EVENTS, smi::smi_events, 0),
    // The argument's size is the request's (head and attributes): no fixed struct.
    AmdkfdIoctlDesc { cmd: AMDKFD_IOC_SVM, func: |device, _, arg| svm::svm_ioctl(device, arg), name: "AMDKFD_IOC_SVM", flags: 0 },
    amdkfd_ioctl_def!(AMDKFD_IOC_SET_XNACK_MODE, process::set_xnack_mode, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_CRIU_OP, process::criu_op, KFD_IOC_FLAG_CHECKPOINT_RESTORE),
    amdkfd_ioctl_def!(AMDKFD_IOC_AVAILABLE_MEMORY, memory::available_memory, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_EXPORT_DMABUF, dmabuf::export_dmabuf, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_RUNTIME_ENABLE, process::runtime_enable, 0),
    amdkfd_ioctl_def!(AMDKFD_IOC_DBG_TRAP, debug::dbg_trap, 0),
];

/// The row of ioctl number `nr` in [`AMDKFD_IOCTLS`]; `None` for a number this device does not
/// emulate.
pub fn amdkfd_ioctl(nr: u8) -> Option<&'static AmdkfdIoctlDesc> {
    AMDKFD_IOCTLS.get(usize::from(nr))?.as_ref()
}

/// The command of amdkfd's ioctl table (`amdkfd_ioctls[nr].cmd`: type `'K'`, the argument's
/// size, its direction) for ioctl number `nr`, when this device emulates it; `None` for other
/// numbers. amdkfd answers a request by its number alone and copies the argument in and out
/// as this command's direction says (`kfd_ioctl`), so a caller copying for it (kfd-emu's
/// preloaded library) uses this direction, not the request's.
pub fn amdkfd_table_command(nr: u8) -> Option<u32> {
    amdkfd_ioctl(nr).map(|row| row.cmd)
}

/// Runs `f` on the argument as `T`: zero-extended/truncated copy in when the command `cmd`
/// has `_IOC_WRITE` (a read-only command's argument starts all zero, as `kfd_ioctl` clears
/// it), copy back out when it has `_IOC_READ` (also after an error, as `kfd_ioctl` does).
fn with_args<T, F>(cmd: u32, arg: &mut [u8], f: F) -> Result<(), Errno>
where
    T: FromBytes + IntoBytes + Immutable + KnownLayout,
    F: FnOnce(&mut T) -> Result<(), Errno>,
{
    let mut t = T::new_zeroed();
    let n = arg.len().min(size_of::<T>());
    if (cmd >> 30) & IOC_WRITE != 0 {
        t.as_mut_bytes()[..n].copy_from_slice(&arg[..n]);
    }
    let r = f(&mut t);
    if (cmd >> 30) & IOC_READ != 0 {
        arg[..n].copy_from_slice(&t.as_bytes()[..n]);
    }
    r
}

/// Answers the ioctl `request` on `/dev/kfd` as `kfd_ioctl` does (module docs).
pub(crate) fn ioctl(device: &Arc<Device>, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
    let size = ((request >> 16) & 0x3fff) as usize;
    if size != arg.len() {
        return Err(Errno::INVAL);
    }
    let nr = (request & 0xff) as u8;
    // kfd_ioctl: a number outside AMDKFD_COMMAND_START..AMDKFD_CORE_IOCTL_COUNT is the
    // -EINVAL it starts with (linux before 6.18) — among them the ROCm 5.x kernels' own
    // range from 0x80 (IPC, the 5.x DBG_TRAP, CROSS_MEMORY_COPY, RLC_SPM), which an
    // upstream kernel does not have.
    if !(AMDKFD_COMMAND_START..AMDKFD_COMMAND_END).contains(&nr) {
        return Err(Errno::INVAL);
    }
    let Some(row) = amdkfd_ioctl(nr) else {
        return Err(Errno::NOTTY);
    };
    // kfd_ioctl: a checkpoint/restore command needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN,
    // checked before the argument is read. The emulated device models no checkpoint or
    // restore and treats every process as holding neither capability.
    if row.flags & KFD_IOC_FLAG_CHECKPOINT_RESTORE != 0 {
        return Err(Errno::ACCESS);
    }
    (row.func)(device, row.cmd, arg)
}

/// `kfd_mmap`: maps a GPU's doorbell page, its MMIO page or the process's event page, by the
/// offset's `KFD_MMAP_TYPE_*`.
///
/// # Safety
/// As [`KfdDriver::mmap`](hsa_linux::kfd::driver::KfdDriver::mmap).
#[allow(unsafe_code)]
pub(crate) unsafe fn mmap(
    device: &Device,
    offset: u64,
    len: usize,
    addr: Option<NonNull<u8>>,
) -> Result<NonNull<u8>, Errno> {
    match offset & KFD_MMAP_TYPE_MASK {
        KFD_MMAP_TYPE_DOORBELL => {
            let hash = kfd_mmap_get_gpu_id(offset);
            let gpu = device
                .gpus
                .iter()
                .find(|g| g.gpu_id & 0xffff == hash)
                .ok_or(Errno::INVAL)?;
            if offset & !(KFD_MMAP_TYPE_MASK | KFD_MMAP_GPU_ID_MASK) != 0
                || len as u64 != DOORBELL_PAGE_BYTES
            {
                return Err(Errno::INVAL);
            }
            // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
            unsafe { gpu.doorbells.map_at(addr, len) }
        }
        // kfd_mmio_mmap: the GPU's remapped MMIO page, exactly one page.
        KFD_MMAP_TYPE_MMIO => {
            let hash = kfd_mmap_get_gpu_id(offset);
            let gpu = device
                .gpus
                .iter()
                .find(|g| g.gpu_id & 0xffff == hash)
                .ok_or(Errno::INVAL)?;
            if offset & !(KFD_MMAP_TYPE_MASK | KFD_MMAP_GPU_ID_MASK) != 0
                || len as u64 != PAGE_BYTES
            {
                return Err(Errno::INVAL);
            }
            // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
            unsafe { gpu.mmio.map_at(addr, len) }
        }
        KFD_MMAP_TYPE_EVENTS => {
            if offset != KFD_MMAP_EVENTS_OFFSET || len == 0 || len as u64 > EVENT_PAGE_BYTES {
                return Err(Errno::INVAL);
            }
            let mut ev = lock(&device.events);
            let page = ev.page.as_mut().ok_or(Errno::INVAL)?;
            let own = page.own.as_ref().ok_or(Errno::INVAL)?;
            // SAFETY: this function's contract (KfdDriver::mmap's) is map_at's.
            let p = unsafe { own.map_at(addr, len) }?;
            page.user_bases.push(p.as_ptr() as u64);
            Ok(p)
        }
        _ => Err(Errno::INVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row sits at its command's number, is a `'K'` command whose size is its argument
    /// struct's, and is named after it; every number of amdkfd's table (0x01 to 0x26) has a
    /// row, and only CRIU_OP (0x22) carries `KFD_IOC_FLAG_CHECKPOINT_RESTORE`.
    #[test]
    fn rows_sit_at_their_numbers_and_name_their_commands() {
        let mut numbers = Vec::new();
        for (nr, row) in AMDKFD_IOCTLS.iter().enumerate() {
            let Some(row) = row else { continue };
            numbers.push(nr as u8);
            assert_eq!(ioc_nr(row.cmd), nr, "{}", row.name);
            assert_eq!((row.cmd >> 8) & 0xff, u32::from(AMDKFD_IOCTL_BASE));
            assert!(row.name.starts_with("AMDKFD_IOC_"), "{}", row.name);
            let criu = u32::from(nr == 0x22);
            assert_eq!(
                row.flags,
                criu * KFD_IOC_FLAG_CHECKPOINT_RESTORE,
                "{}",
                row.name
            );
        }
        assert_eq!(numbers, (0x01..=0x26).collect::<Vec<u8>>());
        // _IOWR('K', 0x26, 32 bytes), gcc over kfd_ioctl.h 1.17.
        assert_eq!(amdkfd_ioctl(0x26).unwrap().cmd, 0xc020_4b26);
        // CREATE_QUEUE takes 1.17's 96 bytes (with sdma_engine_id): _IOWR('K', 0x02, 96).
        assert_eq!(amdkfd_ioctl(0x02).unwrap().cmd, 0xc060_4b02);
        // _IOWR('K', 0x20, 24 bytes: the head alone), from kfd_ioctl.h.
        assert_eq!(AMDKFD_IOC_SVM, 0xc018_4b20);
        let row = amdkfd_ioctl(0x13).unwrap();
        assert_eq!(
            (row.cmd, row.name),
            (AMDKFD_IOC_SET_TRAP_HANDLER, "AMDKFD_IOC_SET_TRAP_HANDLER")
        );
        // _IOW('K', 0x13, 24 bytes) and _IOWR('K', 0x12, 40 bytes), from kfd_ioctl.h.
        assert_eq!(AMDKFD_IOC_SET_TRAP_HANDLER, 0x4018_4b13);
        assert_eq!(AMDKFD_IOC_GET_TILE_CONFIG, 0xc028_4b12);
        // _IOR('K', 0x06, 400 bytes), _IOWR('K', 0x1C, 32), _IOWR('K', 0x22, 56), from
        // kfd_ioctl.h's structs.
        assert_eq!(amdkfd_table_command(0x06), Some(0x8190_4b06));
        assert_eq!(amdkfd_table_command(0x1C), Some(0xc020_4b1c));
        assert_eq!(amdkfd_table_command(0x22), Some(0xc038_4b22));
        assert_eq!(amdkfd_table_command(0x27), None);
    }
}
