//! The contract between the unikernel and the host-side device model of
//! `platform-baremetal/tests/qemu` (which includes this file with `#[path]`): which ivshmem
//! peers and vectors mean what, the doorbell the AQL queue rings, and the layout of the
//! control page at the start of the ivshmem shared memory (BAR2).
//!
//! The device is QEMU's `ivshmem-doorbell` (PCI 1af4:1110; QEMU `docs/specs/ivshmem-spec.rst`):
//! BAR0 holds four 32-bit registers (interrupt mask and status, this VM's peer id, the
//! doorbell), BAR1 the MSI-X table, BAR2 the shared memory. A 32-bit store of
//! `peer << 16 | vector` to the doorbell register signals eventfd `vector` of `peer`; the host
//! raises MSI-X vector `v` of this VM by signalling the VM's own eventfd `v`. Nothing but
//! "peer, vector" crosses: a doorbell carries no value.
//!
//! The guest's RAM is a shared file (`memory-backend-file,share=on`), so the device reads and
//! writes it at guest-physical addresses (file offsets), which the unikernel's identity paging
//! makes equal to its virtual addresses and to what hsa-rt calls GPU addresses.

/// PCI vendor id of ivshmem (Red Hat, Inc.).
pub const IVSHMEM_VENDOR_ID: u16 = 0x1af4;
/// PCI device id of ivshmem.
pub const IVSHMEM_DEVICE_ID: u16 = 0x1110;

/// BAR0 register: interrupt mask (INTx only).
pub const REG_INTR_MASK: usize = 0x0;
/// BAR0 register: this VM's peer id (read-only).
pub const REG_IV_POSITION: usize = 0x8;
/// BAR0 register: the doorbell (`peer << 16 | vector`, write-only).
pub const REG_DOORBELL: usize = 0xc;
/// Size of BAR0, bytes.
pub const BAR0_BYTES: usize = 256;

/// The device model's peer id (the server hands the VM the id [`GUEST_PEER`]).
pub const DEVICE_PEER: u16 = 0;
/// The VM's peer id.
pub const GUEST_PEER: u16 = 1;
/// Vectors per peer (`ivshmem-doorbell,vectors=3`).
pub const VECTORS: u16 = 3;

/// Device vector rung by the AQL queue's doorbell store.
///
/// hsa-baremetal rings doorbell `i` with one 64-bit store of the write index to
/// `aperture + 8 * i`. The unikernel grants it doorbell [`QUEUE_DOORBELL_INDEX`] = 1 of an
/// aperture that is BAR0 itself: QEMU splits the 64-bit store into two 32-bit writes, the low
/// half to the read-only `IVPosition` register (ignored), the high half to the doorbell
/// register. While the write index is below 2^32 the high half is 0 = peer [`DEVICE_PEER`],
/// vector [`DEVICE_VECTOR_QUEUE`]; the device then reads the write index from `amd_queue_t`
/// (the CP's write-pointer poll address), as a CP whose doorbell carries no value would.
pub const DEVICE_VECTOR_QUEUE: u16 = 0;
/// Device vector: a command is waiting in the control page ([`CTL_CMD`] is set), or the KIQ's
/// doorbell (its write pointer moved): the KIQ's doorbell is a store of
/// `DEVICE_PEER << 16 | DEVICE_VECTOR_COMMAND` to the doorbell register, the write pointer
/// being at the KIQ's poll address (see [`CMD_SET_KIQ`]).
pub const DEVICE_VECTOR_COMMAND: u16 = 1;
/// Device vector: echo — the device raises [`GUEST_VECTOR_ECHO`] at once (the raw round trip).
pub const DEVICE_VECTOR_ECHO: u16 = 2;

/// Guest MSI-X vector: the IH interrupt (completion entries are in the IH ring).
pub const GUEST_VECTOR_IH: u16 = 0;
/// Guest MSI-X vector: a command finished (the unikernel polls the status instead).
pub const GUEST_VECTOR_COMMAND: u16 = 1;
/// Guest MSI-X vector: the echo of [`DEVICE_VECTOR_ECHO`].
pub const GUEST_VECTOR_ECHO: u16 = 2;

/// The doorbell index hsa-baremetal is granted in the BAR0 aperture (see
/// [`DEVICE_VECTOR_QUEUE`]).
pub const QUEUE_DOORBELL_INDEX: u32 = 1;

/// Control page: `u32` magic the device writes before the VM starts.
pub const CTL_MAGIC: usize = 0x00;
/// The value of [`CTL_MAGIC`] ("HSAV").
pub const MAGIC: u32 = 0x5641_5348;
/// Control page: `u32` local APIC mode the test asks for: [`APIC_XAPIC`] or [`APIC_X2APIC`].
pub const CTL_APIC_MODE: usize = 0x04;
/// [`CTL_APIC_MODE`]: xAPIC (MMIO registers).
pub const APIC_XAPIC: u32 = 0;
/// [`CTL_APIC_MODE`]: x2APIC (MSR registers).
pub const APIC_X2APIC: u32 = 1;
/// Control page: `u32` elements of the main job's vector_copy.
pub const CTL_ELEMENTS: usize = 0x08;
/// Control page: `u32` what to run after the main job ([`RUN_FIGURES`], [`RUN_FAULTS`]).
pub const CTL_RUN: usize = 0x0c;
/// [`CTL_RUN`] bit: measure the figures (raw round trip, dispatch latency, dispatch rate).
pub const RUN_FIGURES: u32 = 1;
/// [`CTL_RUN`] bit: run the fault phases.
pub const RUN_FAULTS: u32 = 2;
/// Control page: `u32` rounds of each figure.
pub const CTL_FIGURE_ROUNDS: usize = 0x10;

/// Control page: `u32` command code (written last by the guest, Release; the device sets it
/// back to 0 before the status).
pub const CTL_CMD: usize = 0x40;
/// Control page: `u32` command status: [`STATUS_PENDING`], [`STATUS_OK`], [`STATUS_REFUSED`].
pub const CTL_CMD_STATUS: usize = 0x44;
/// Control page: eight `u64` command arguments.
pub const CTL_ARGS: usize = 0x48;
/// Control page: `IH_RB_RPTR`, the IH read pointer register (bytes), written by the guest.
pub const CTL_IH_RPTR: usize = 0x100;
/// Control page: `IH_RB_CNTL.WPTR_OVERFLOW_CLEAR`, set to 1 by the guest.
pub const CTL_IH_OVERFLOW_CLEAR: usize = 0x104;
/// Control page: the device's message for a refused command (NUL-terminated UTF-8).
pub const CTL_MESSAGE: usize = 0x200;
/// Bytes of [`CTL_MESSAGE`].
pub const MESSAGE_BYTES: usize = 0x100;
/// Bytes of the control page.
pub const CONTROL_PAGE_BYTES: usize = 0x1000;

/// Command status: not done yet.
pub const STATUS_PENDING: u32 = 0;
/// Command status: done.
pub const STATUS_OK: u32 = 1;
/// Command status: refused; [`CTL_MESSAGE`] says why.
pub const STATUS_REFUSED: u32 = 2;

/// Command: the IH ring. Args: ring address, ring bytes, write-pointer write-back address.
pub const CMD_SET_IH: u32 = 1;
/// Command: the KIQ, as the firmware brought it up (its ring; on a GPU, the KIQ's MQD and
/// HQD). Args: ring address, ring dwords, the address of the 64-bit write pointer (dwords)
/// the device polls. Queues are then mapped and unmapped with `MAP_QUEUES`/`UNMAP_QUEUES`
/// packets on that ring (`hsa_baremetal::kiq`), each batch fenced by `QUERY_STATUS`.
pub const CMD_SET_KIQ: u32 = 2;
/// Command: a GPUVM context, as the firmware programs one (`VM_CONTEXT<n>_PAGE_TABLE_BASE_ADDR`,
/// `IH_VMID_<n>_LUT`, `SH_MEM_BASES`). Args: VMID (1..=15), page-table base (the PDB2's PDE:
/// `hsa_baremetal::gpuvm::GpuVm::root_pde`), PASID, `SH_MEM_BASES` (the device's interpreter
/// runs amdkfd's gfx9 apertures, 0x0001_0002, only; a queue's `amd_queue_t` must name the
/// same apertures). A queue whose MQD names that VMID
/// (`cp_hqd_vmid`) reaches memory only through those tables; `INVALIDATE_TLBS` on the KIQ for
/// the PASID drops the translations the device keeps.
pub const CMD_SET_VM: u32 = 3;
/// Command: arm a fault for what comes next. Args: fault ([`FAULT_DROP_INTERRUPT`]...), count.
pub const CMD_ARM_FAULT: u32 = 4;

/// Fault: the next completion's IH entry is written but its MSI-X is not raised.
pub const FAULT_DROP_INTERRUPT: u64 = 1;
/// Fault: the next `count` completions' IH entries are written with one MSI-X, after the last.
pub const FAULT_MERGE_INTERRUPTS: u64 = 2;
/// Fault: a malformed IH entry (reserved bits set) is written before the next completion's.
pub const FAULT_MALFORMED_ENTRY: u64 = 3;
/// Fault: before the next completion's IH entry, an end-of-pipe entry of VMID 0 and no PASID
/// naming the same event (amdgpu's own fence on a shared IH ring), which the runtime must skip.
pub const FAULT_FOREIGN_ENTRY: u64 = 5;
/// The VMID the firmware runs this runtime's queues under: the device stamps it on every IH
/// entry it writes for them, and the unikernel's `Host::ih_filter` takes only it.
pub const GUEST_VMID: u8 = 8;
/// The PASID of this runtime's process, stamped and filtered as [`GUEST_VMID`].
pub const GUEST_PASID: u16 = 0x8001;
/// Fault: the next kernel dispatch stops its queue with `Status::MemoryFault` (the packet
/// processor stores it in `queue_inactive_signal`; the device then writes a CP error entry,
/// client `GRBM_CP`, source 183 `CP_BAD_OPCODE`, and raises the IH vector).
pub const FAULT_QUEUE_ERROR: u64 = 4;

/// `isa-debug-exit` code of a run that passed (QEMU exits with 0x21).
pub const EXIT_PASS: u32 = 0x10;
/// `isa-debug-exit` code of a run that failed (QEMU exits with 0x23).
pub const EXIT_FAIL: u32 = 0x11;
