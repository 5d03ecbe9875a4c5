//! System-management events of the emulated GPUs: `AMDKFD_IOC_SMI_EVENTS` and the descriptors
//! it hands out (Ref: linux `drivers/gpu/drm/amd/amdkfd/kfd_smi_events.c`,
//! `kfd_ioctl.h` `enum kfd_smi_event` and `KFD_EVENT_FMT_*`).
//!
//! amdkfd's client is an anonymous file: the reader polls it, reads lines of text (`"<event
//! id, hex> <event's fields>\n"`), and writes a 64-bit mask of the events it wants
//! (`KFD_SMI_EVENT_MASK_FROM_INDEX(id)`, bit `id - 1`; 0 at open). Here a client is one end of
//! a Unix stream socket pair, non-blocking as amdkfd's `read` is (`EAGAIN` when nothing is
//! queued); the device keeps the other end. The masks the reader wrote are taken, 8 bytes
//! each in the order written, whenever the device is about to queue an event, so an event
//! reaches exactly the readers whose last mask before it named it. A reader that closed its
//! end is dropped at the next event.
//!
//! The events this device raises, with amdkfd's text:
//! - `KFD_SMI_EVENT_VMFAULT` (1), `"1 <pid, hex>:<task name>\n"`, for a GPU memory fault;
//! - `KFD_SMI_EVENT_GPU_PRE_RESET` (3) and `_POST_RESET` (4), `"3 <reset sequence number,
//!   hex> HWS hang\n"`, for the GPU reset a hung SDMA engine leads to (the cause is
//!   amdgpu's description of a reset the hardware scheduler asked for);
//! - `KFD_SMI_EVENT_UNMAP_FROM_GPU` (11), `"11 <ns> -<pid> @<first page>(<pages>) <gpu_id>
//!   2\n"`, when the CPU unmapping of memory under an SVM range the GPU had access to drops
//!   that part of the range (trigger `UNMAP_FROM_CPU`);
//! - `KFD_SMI_EVENT_MIGRATE_START` (5), `"5 <ns> -<pid> @<first page>(<pages>)
//!   <from>-><to> <prefetch loc>:<preferred loc> 0\n"`, and `_END` (6), `"6 <ns> -<pid>
//!   @<first page>(<pages>) <from>-><to> 0 <error>\n"` (hex but for the trigger, 0 =
//!   `KFD_MIGRATE_TRIGGER_PREFETCH`, and the error code, 0; `from`/`to` 0 for system memory,
//!   else a gpu_id), when SET_ATTR moves an SVM range's location (the `svm` module), on the
//!   GPU whose VRAM the pages enter or leave.
//!
//! It raises no thermal, page-fault or eviction events, and no migrations but prefetches:
//! it takes no retry faults, its CPU never faults on VRAM (host memory here) and it evicts
//! no queues.
//!
//! Differences from amdkfd: the masks are a byte stream read 8 bytes at a time, so a write
//! of fewer than 8 bytes (which amdkfd answers with `EFAULT`) is taken as the start of the
//! next mask, and a longer one as several masks, the last whole one counting (amdkfd takes
//! the first 8 bytes); the queue is the socket's buffer, not a 1024-byte FIFO that drops what
//! does not fit; `fcntl(F_GETFL)` shows `O_NONBLOCK`.

use std::io::{Read, Write};
use std::os::fd::{IntoRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::io::Errno;

use hsa_linux::kfd::abi::SmiEventsArgs;

use super::Device;
use std::sync::Arc;

/// `KFD_SMI_EVENT_VMFAULT`.
pub const KFD_SMI_EVENT_VMFAULT: u32 = 1;
/// `KFD_SMI_EVENT_GPU_PRE_RESET`.
pub const KFD_SMI_EVENT_GPU_PRE_RESET: u32 = 3;
/// `KFD_SMI_EVENT_GPU_POST_RESET`.
pub const KFD_SMI_EVENT_GPU_POST_RESET: u32 = 4;

/// `KFD_SMI_EVENT_MIGRATE_START`: an SVM range's pages start moving between system memory
/// and a GPU's VRAM.
pub const KFD_SMI_EVENT_MIGRATE_START: u32 = 5;
/// `KFD_SMI_EVENT_MIGRATE_END`: that move is over.
pub const KFD_SMI_EVENT_MIGRATE_END: u32 = 6;
/// `KFD_MIGRATE_TRIGGER_PREFETCH` (`enum KFD_MIGRATE_TRIGGERS`, 0): the migration is
/// SET_ATTR's prefetch (`svm_range_trigger_migration`).
pub const KFD_MIGRATE_TRIGGER_PREFETCH: u32 = 0;

/// `KFD_SMI_EVENT_UNMAP_FROM_GPU`.
pub const KFD_SMI_EVENT_UNMAP_FROM_GPU: u32 = 11;
/// `KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU`: the CPU unmapped the range's memory.
pub const KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU: u32 = 2;

/// `KFD_SMI_EVENT_MASK_FROM_INDEX(event)`: the mask bit of event id `event` (1..=64).
pub const fn kfd_smi_event_mask_from_index(event: u32) -> u64 {
    1u64 << (event - 1)
}

/// One reader of a GPU's events.
#[derive(Debug)]
struct Client {
    gpu_id: u32,
    /// The device's end of the pair.
    end: UnixStream,
    /// The events it wants (amdkfd's `client->events`).
    mask: u64,
    /// Bytes of a mask not yet complete.
    partial: Vec<u8>,
}

impl Client {
    /// Takes the masks the reader wrote since the last look; `false` when it closed its end.
    fn take_masks(&mut self) -> bool {
        let mut buf = [0u8; 256];
        loop {
            match self.end.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => {
                    self.partial.extend_from_slice(&buf[..n]);
                    let whole = self.partial.len() / 8 * 8;
                    if let Some(last) = self.partial[..whole].chunks_exact(8).next_back() {
                        let mut m = [0u8; 8];
                        m.copy_from_slice(last);
                        self.mask = u64::from_ne_bytes(m);
                    }
                    self.partial.drain(..whole);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }
}

/// The process's SMI readers, of every GPU.
#[derive(Debug, Default)]
pub(crate) struct SmiClients {
    clients: Vec<Client>,
    /// Each GPU's reset sequence number (amdkfd's `reset_seq_num`), by gpu_id.
    reset_seq: std::collections::HashMap<u32, u32>,
}

impl SmiClients {
    /// Queues event `event` with the text `fields` (after the id and a space) for every
    /// reader of GPU `gpu_id` whose mask names it (`kfd_smi_event_add`); drops readers that
    /// closed their end.
    pub(crate) fn add(&mut self, gpu_id: u32, event: u32, fields: &str) {
        let line = format!("{event:x} {fields}");
        let bit = kfd_smi_event_mask_from_index(event);
        self.clients.retain_mut(|c| {
            if c.gpu_id != gpu_id {
                return true;
            }
            if !c.take_masks() {
                return false;
            }
            if c.mask & bit == 0 {
                return true;
            }
            match c.end.write_all(line.as_bytes()) {
                Ok(()) => true,
                // A reader that never reads: its queue is full, the event is lost (amdkfd
                // drops it too when its FIFO is full).
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => true,
                Err(_) => false,
            }
        });
    }

    /// A GPU memory fault of this process on GPU `gpu_id` (`kfd_smi_event_update_vmfault`).
    pub(crate) fn vm_fault(&mut self, gpu_id: u32) {
        let name = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        // TASK_COMM_LEN: 15 characters and the NUL.
        let name: String = name.trim_end_matches('\n').chars().take(15).collect();
        self.add(
            gpu_id,
            KFD_SMI_EVENT_VMFAULT,
            &format!("{:x}:{name}\n", std::process::id()),
        );
    }

    /// Pages `start..=last` (page numbers) of an SVM range are unmapped from GPU `gpu_id`
    /// for `trigger` (`KFD_SVM_UNMAP_TRIGGER_*`): `kfd_smi_event_unmap_from_gpu`'s line, the
    /// boot-time clock in ns, this process's pid, the first page and the number of pages
    /// (hex), the GPU and the trigger.
    pub(crate) fn unmap_from_gpu(&mut self, gpu_id: u32, start: u64, last: u64, trigger: u32) {
        let ns = boottime_ns();
        let pages = last.saturating_sub(start).saturating_add(1);
        self.add(
            gpu_id,
            KFD_SMI_EVENT_UNMAP_FROM_GPU,
            &format!(
                "{ns} -{} @{start:x}({pages:x}) {gpu_id:x} {trigger}\n",
                std::process::id()
            ),
        );
    }

    /// A migration of `pages` pages from page `start` (page numbers, 4 KiB pages) begins
    /// between locations `from` and `to` (each 0 for system memory, else a gpu_id), told to
    /// the readers of GPU `gpu_id` (amdkfd raises it on the GPU whose VRAM the pages enter or
    /// leave): `kfd_smi_event_migration_start`'s line (`KFD_EVENT_FMT_MIGRATE_START`), the
    /// boot-time clock in ns, this process's pid, the first page and the page count in hex,
    /// `from->to` in hex, the range's prefetch and preferred locations in hex
    /// (`ffffffff` for UNDEFINED) and the trigger (`KFD_MIGRATE_TRIGGER_*`) in decimal.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn migrate_start(
        &mut self,
        gpu_id: u32,
        start: u64,
        pages: u64,
        from: u32,
        to: u32,
        prefetch_loc: u32,
        preferred_loc: u32,
        trigger: u32,
    ) {
        let ns = boottime_ns();
        self.add(
            gpu_id,
            KFD_SMI_EVENT_MIGRATE_START,
            &format!(
                "{ns} -{} @{start:x}({pages:x}) {from:x}->{to:x} {prefetch_loc:x}:{preferred_loc:x} \
                 {trigger}\n",
                std::process::id()
            ),
        );
    }

    /// The migration [`migrate_start`](Self::migrate_start) announced is over, with
    /// `error` (0, or the negative errno it failed with): `kfd_smi_event_migration_end`'s
    /// line (`KFD_EVENT_FMT_MIGRATE_END` as since Linux 6.12, which added the error code):
    /// the boot-time clock in ns, the pid, the first page and page count in hex, `from->to`
    /// in hex, the trigger and the error code in decimal.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn migrate_end(
        &mut self,
        gpu_id: u32,
        start: u64,
        pages: u64,
        from: u32,
        to: u32,
        trigger: u32,
        error: i32,
    ) {
        let ns = boottime_ns();
        self.add(
            gpu_id,
            KFD_SMI_EVENT_MIGRATE_END,
            &format!(
                "{ns} -{} @{start:x}({pages:x}) {from:x}->{to:x} {trigger} {error}\n",
                std::process::id()
            ),
        );
    }

    /// The reset of GPU `gpu_id` after its hardware scheduler found an engine hung: the
    /// pre-reset event with the next sequence number, then the post-reset event with the same
    /// (`kfd_smi_event_update_gpu_reset`, before and after `amdgpu_device_gpu_recover`).
    pub(crate) fn gpu_reset(&mut self, gpu_id: u32) {
        let seq = self.reset_seq.entry(gpu_id).or_insert(0);
        *seq = seq.wrapping_add(1);
        let fields = format!("{:x} HWS hang\n", *seq);
        self.add(gpu_id, KFD_SMI_EVENT_GPU_PRE_RESET, &fields);
        self.add(gpu_id, KFD_SMI_EVENT_GPU_POST_RESET, &fields);
    }
}

/// `ktime_get_boottime_ns`: the boot-time clock (`CLOCK_BOOTTIME`), ns.
fn boottime_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    t.tv_sec
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec)
}

/// SMI_EVENTS as `kfd_ioctl_smi_events` and `kfd_smi_event_open`: a new reader of GPU
/// `gpuid`'s events, with no events enabled, its descriptor (which the caller owns) in
/// `anon_fd`. `EINVAL` for a gpu_id of no GPU of the process; the errno of the socket pair's
/// creation (`EMFILE`, `ENFILE`, `ENOMEM`).
pub(crate) fn smi_events(device: &Arc<Device>, a: &mut SmiEventsArgs) -> Result<(), Errno> {
    device.gpu_by_id(a.gpuid)?;
    let (theirs, ours) =
        UnixStream::pair().map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::NOMEM))?;
    theirs
        .set_nonblocking(true)
        .and_then(|()| ours.set_nonblocking(true))
        .map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::NOMEM))?;
    super::lock(&device.smi).clients.push(Client {
        gpu_id: a.gpuid,
        end: ours,
        mask: 0,
        partial: Vec::new(),
    });
    let fd: OwnedFd = theirs.into();
    a.anon_fd = fd.into_raw_fd() as u32;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader as `smi_events` makes one, on GPU 1: its end, and the device's state.
    fn reader() -> (UnixStream, SmiClients) {
        let (theirs, ours) = UnixStream::pair().unwrap();
        theirs.set_nonblocking(true).unwrap();
        ours.set_nonblocking(true).unwrap();
        let clients = SmiClients {
            clients: vec![Client {
                gpu_id: 1,
                end: ours,
                mask: 0,
                partial: Vec::new(),
            }],
            ..SmiClients::default()
        };
        (theirs, clients)
    }

    /// Masks are taken 8 bytes at a time, the last whole one counting, a piece kept for the
    /// next; only the readers of the event's GPU whose mask names it get it.
    #[test]
    fn masks_are_taken_in_8_byte_pieces() {
        let (mut r, mut c) = reader();
        r.write_all(&[0xff; 4]).unwrap();
        c.add(1, 1, "a\n");
        c.add(2, 2, "other GPU\n");
        r.write_all(&[0xff; 4]).unwrap();
        r.write_all(&2u64.to_ne_bytes()).unwrap();
        c.add(1, 1, "b\n");
        c.add(1, 2, "c\n");
        let mut buf = [0u8; 64];
        let n = r.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"2 c\n");
        assert_eq!(c.clients.len(), 1);
    }

    /// A reader that never reads loses what does not fit (amdkfd drops it too) and stays; a
    /// reader that closed its end is dropped at the next event.
    #[test]
    fn a_full_reader_loses_events_and_a_closed_one_goes() {
        let (mut r, mut c) = reader();
        r.write_all(&u64::MAX.to_ne_bytes()).unwrap();
        let line = "x".repeat(4095) + "\n";
        for _ in 0..2048 {
            c.add(1, 1, &line);
        }
        assert_eq!(c.clients.len(), 1, "kept while full");
        let mut buf = vec![0u8; 1 << 16];
        assert!(r.read(&mut buf).unwrap() > 0);
        drop(r);
        c.add(1, 1, "y\n");
        assert!(c.clients.is_empty(), "dropped once closed");
    }

    /// The migration lines are amdkfd's `KFD_EVENT_FMT_MIGRATE_START` / `_END` after the
    /// event id (5, 6): ns, `-pid`, `@first page(page count)` in hex, `from->to` in hex,
    /// then for START `prefetch:preferred` in hex and the trigger, for END the trigger and
    /// the error code; only a reader whose mask names the event gets it.
    #[test]
    fn migration_lines_are_amdkfds() {
        let (mut r, mut c) = reader();
        r.write_all(&(1u64 << 4).to_ne_bytes()).unwrap();
        c.migrate_start(
            1,
            0x7f000,
            0x200,
            0,
            1,
            1,
            u32::MAX,
            KFD_MIGRATE_TRIGGER_PREFETCH,
        );
        c.migrate_end(1, 0x7f000, 0x200, 0, 1, KFD_MIGRATE_TRIGGER_PREFETCH, 0);
        r.write_all(&(3u64 << 4).to_ne_bytes()).unwrap();
        c.migrate_start(
            1,
            0x10,
            0x1f,
            0xabcd,
            0,
            0,
            0xabcd,
            KFD_MIGRATE_TRIGGER_PREFETCH,
        );
        c.migrate_end(1, 0x10, 0x1f, 0xabcd, 0, KFD_MIGRATE_TRIGGER_PREFETCH, -28);
        let mut buf = [0u8; 512];
        let n = r.read(&mut buf).unwrap();
        let text = std::str::from_utf8(&buf[..n]).unwrap();
        let pid = std::process::id();
        let want = [
            ("5", format!("-{pid} @7f000(200) 0->1 1:ffffffff 0\n")),
            ("5", format!("-{pid} @10(1f) abcd->0 0:abcd 0\n")),
            ("6", format!("-{pid} @10(1f) abcd->0 0 -28\n")),
        ];
        let got: Vec<&str> = text.split_inclusive('\n').collect();
        assert_eq!(got.len(), want.len(), "{text:?}");
        for (line, (id, rest)) in got.iter().zip(&want) {
            let (i, l) = line.split_once(' ').unwrap();
            let (ns, l) = l.split_once(' ').unwrap();
            assert_eq!((i, l), (*id, rest.as_str()), "{line:?}");
            assert!(ns.parse::<i64>().unwrap() > 0, "{line:?}");
        }
    }

    /// Each reset takes the next sequence number, per GPU.
    #[test]
    fn reset_sequence_numbers_count_per_gpu() {
        let (mut r, mut c) = reader();
        r.write_all(&0x8u64.to_ne_bytes()).unwrap();
        c.gpu_reset(1);
        c.gpu_reset(2);
        c.gpu_reset(1);
        let mut buf = [0u8; 64];
        let n = r.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"4 1 HWS hang\n4 2 HWS hang\n");
    }
}
