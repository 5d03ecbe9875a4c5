//! PM4 compute queues (`KFD_IOC_QUEUE_TYPE_COMPUTE`) of the emulated device, driven as
//! tinygrad's `AMDComputeQueue` drives one: PM4 packets written to the ring by hand, the
//! write pointer (in dwords) to the write-pointer word and the doorbell. The kernels are
//! machine code assembled with `llvm-mc-19 -mcpu=gfx90a` (the built-in GPU is a gfx90a),
//! their text beside them; the registers' offsets are linux `gc_9_4_3_offset.h`'s.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hsa_core::Status;
use hsa_emu::device::{
    builtin_profile, builtin_topology, EmulatedKfd, ExecutionMode, BUILTIN_GPU_ID,
};
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::calls::{self, plain_ioctl};
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use rustix::io::Errno;
use zerocopy::IntoBytes;

/// 16 KiB of page-aligned memory the test registers as USERPTR. Layout (bytes): ring
/// 0..4096 (1024 dwords), read pointer 4096, write pointer 4104, kernargs 4352..4376, flag
/// 4608, A 8192..9216, B 9216..10240, C 10240..11264, a dims buffer 11264, IB 12288.
#[repr(C, align(4096))]
struct Arena([AtomicU64; 2048]);

const RING: u64 = 0;
const RING_DWORDS: u64 = 1024;
const RPTR: u64 = 4096;
const WPTR: u64 = 4104;
const KERNARG: u64 = 4352;
const FLAG: u64 = 4608;
const A: u64 = 8192;
const B: u64 = 9216;
const C: u64 = 10240;
const DIMS: u64 = 11264;
const N: u64 = 256;

/// The compute registers, as offsets from `PACKET3_SET_SH_REG_START` (0x2c00): gc_9_4_3's
/// `regCOMPUTE_*` (0x0eNN, GC segment 0 at 0x2000).
const COMPUTE_START_X: u32 = 0x204;
const COMPUTE_PGM_LO: u32 = 0x20c;
const COMPUTE_PGM_RSRC1: u32 = 0x212;
const COMPUTE_RESOURCE_LIMITS: u32 = 0x215;
const COMPUTE_TMPRING_SIZE: u32 = 0x218;
const COMPUTE_RESTART_X: u32 = 0x21b;
const COMPUTE_PGM_RSRC3: u32 = 0x22d;
const COMPUTE_USER_DATA_0: u32 = 0x240;

/// `c[i] = a[i] + b[i]` over 64-item work-groups; kernargs a, b, c; user SGPRs s[0:1] the
/// kernarg pointer, then the work-group id x in s2; v0 the work-item id x.
///
/// ```text
/// s_load_dwordx4 s[4:7], s[0:1], 0x0
/// s_load_dwordx2 s[8:9], s[0:1], 0x10
/// v_lshl_add_u32 v0, s2, 6, v0
/// v_lshlrev_b32 v0, 2, v0
/// s_waitcnt lgkmcnt(0)
/// global_load_dword v1, v0, s[4:5]
/// global_load_dword v2, v0, s[6:7]
/// s_waitcnt vmcnt(0)
/// v_add_u32 v1, v1, v2
/// global_store_dword v0, v1, s[8:9]
/// s_endpgm
/// ```
const VECTOR_ADD: [u32; 17] = [
    0xC00A0100, 0x00000000, 0xC0060200, 0x00000010, 0xD1FD0000, 0x04010C02, 0x24000082, 0xBF8CC07F,
    0xDC508000, 0x01040000, 0xDC508000, 0x02060000, 0xBF8C0F70, 0x68020501, 0xDC708000, 0x00080100,
    0xBF810000,
];

/// [`VECTOR_ADD`] with b's value in v9 (`global_load_dword v9, v0, s[6:7]`,
/// `v_add_u32 v1, v1, v9`): it needs 10 VGPRs, `COMPUTE_PGM_RSRC1.VGPRS` 1 on gfx90a
/// (granule 8).
const VECTOR_ADD_V9: [u32; 17] = [
    0xC00A0100, 0x00000000, 0xC0060200, 0x00000010, 0xD1FD0000, 0x04010C02, 0x24000082, 0xBF8CC07F,
    0xDC508000, 0x01040000, 0xDC508000, 0x09060000, 0xBF8C0F70, 0x68021301, 0xDC708000, 0x00080100,
    0xBF810000,
];

/// `COMPUTE_PGM_RSRC2` of the kernels: USER_SGPR 2 (bits 1..6), TGID_X_EN (bit 7).
const RSRC2: u32 = 2 << 1 | 1 << 7;

/// `COMPUTE_DISPATCH_INITIATOR` as tinygrad sends it: COMPUTE_SHADER_EN, FORCE_START_AT_000.
const INITIATOR: u32 = 1 | 1 << 2;

/// A page of code (executable USERPTR memory mapped to the GPU).
#[repr(C, align(4096))]
struct CodePage([AtomicU64; 512]);

/// Field order: `d` drops (destroying the queue, joining its thread) before the memory it
/// uses.
struct Setup {
    d: Arc<EmulatedKfd>,
    arena: Box<Arena>,
    code: Box<CodePage>,
    queue_id: u32,
    doorbell: NonNull<u64>,
    /// The producer's write pointer (dwords written, unwrapped).
    wptr: std::cell::Cell<u64>,
}

fn register(d: &EmulatedKfd, gpu_id: u32, base: u64, size: u64, flags: u32) {
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: base,
        size,
        handle: 0,
        mmap_offset: base,
        gpu_id,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | flags,
    };
    // SAFETY: `base..base + size` is page-aligned memory the test owns (an Arena or a
    // CodePage, boxed), reached only through atomics, alive until after the device (Setup's
    // field order).
    unsafe { calls::alloc_userptr_memory_of_gpu(d, &mut a) }.unwrap();
    assert_eq!(calls::map_memory_to_gpu(d, a.handle, &[gpu_id]).unwrap(), 1);
}

/// The queue's arguments as tinygrad's `KFDIface.create_queue` sends them.
fn queue_args(base: u64, gpu_id: u32) -> CreateQueueArgs {
    CreateQueueArgs {
        ring_base_address: base + RING,
        write_pointer_address: base + WPTR,
        read_pointer_address: base + RPTR,
        ring_size: (RING_DWORDS * 4) as u32,
        gpu_id,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE,
        queue_percentage: KFD_MAX_QUEUE_PERCENTAGE,
        queue_priority: 7,
        ..Default::default()
    }
}

fn create(d: &EmulatedKfd, q: &mut CreateQueueArgs) -> Result<(), Errno> {
    // SAFETY: EmulatedKfd uses a queue's addresses only inside allocations mapped to its GPU
    // (its ioctl's `# Safety`); the good ones are the test's arena, registered and mapped to
    // the GPU, alive until after the device, its shared words accessed atomically.
    unsafe { d.ioctl(AMDKFD_IOC_CREATE_QUEUE, q.as_mut_bytes()) }
}

fn setup() -> Setup {
    setup_on(builtin_topology())
}

/// [`setup`] on the first GPU of `topology`.
fn setup_on(topology: hsa_linux::topology::Topology) -> Setup {
    let gpu_id = topology
        .nodes
        .iter()
        .map(|n| n.properties.gpu_id)
        .find(|&id| id != 0)
        .unwrap();
    let d = EmulatedKfd::new(topology).unwrap();
    d.set_execution_mode(ExecutionMode::InterpretOnly);
    let arena = Box::new(Arena(std::array::from_fn(|_| AtomicU64::new(0))));
    let code = Box::new(CodePage(std::array::from_fn(|_| AtomicU64::new(0))));
    let base = &*arena as *const Arena as u64;
    register(&d, gpu_id, base, 16384, 0);
    register(
        &d,
        gpu_id,
        &*code as *const CodePage as u64,
        4096,
        KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE,
    );
    let mut q = queue_args(base, gpu_id);
    create(&d, &mut q).unwrap();
    assert_eq!(
        q.doorbell_offset & KFD_MMAP_TYPE_MASK,
        KFD_MMAP_TYPE_DOORBELL
    );
    let page = calls::mmap(&*d, MapTarget::Kfd, q.doorbell_offset & !0x1fff, 8192).unwrap();
    let doorbell = NonNull::new(
        page.as_ptr()
            .wrapping_add((q.doorbell_offset & 0x1fff) as usize)
            .cast::<u64>(),
    )
    .unwrap();
    Setup {
        d,
        arena,
        code,
        queue_id: q.queue_id,
        doorbell,
        wptr: std::cell::Cell::new(0),
    }
}

/// A PM4 type-3 packet: header (`PACKET3(op, body.len() - 1)`) and body.
fn pkt3(op: u8, body: &[u32]) -> Vec<u32> {
    let mut v = vec![3 << 30 | (body.len() as u32 - 1) << 16 | u32::from(op) << 8];
    v.extend_from_slice(body);
    v
}

fn set_sh_reg(offset: u32, values: &[u32]) -> Vec<u32> {
    let mut body = vec![offset];
    body.extend_from_slice(values);
    pkt3(0x76, &body)
}

/// `RELEASE_MEM` (end-of-pipe, CACHE_FLUSH_AND_INV_TS) of 32-bit `value` to `va`, with
/// `int_sel` and context id `ctxid`, as tinygrad's `release_mem` on gfx9.
fn release_mem(va: u64, value: u32, int_sel: u32, ctxid: u32) -> Vec<u32> {
    pkt3(
        0x49,
        &[
            0x14 | 5 << 8,
            1 << 29 | int_sel << 24,
            va as u32,
            (va >> 32) as u32,
            value,
            0,
            ctxid,
        ],
    )
}

/// `WAIT_REG_MEM` on memory (`MEM_SPACE` 1) with `function`, as tinygrad's `wait_reg_mem`.
fn wait_mem(va: u64, reference: u32, mask: u32, function: u32) -> Vec<u32> {
    pkt3(
        0x3c,
        &[
            function | 1 << 4,
            va as u32,
            (va >> 32) as u32,
            reference,
            mask,
            4,
        ],
    )
}

impl Setup {
    fn base(&self) -> u64 {
        &*self.arena as *const Arena as u64
    }

    fn word(&self, offset: u64) -> &AtomicU64 {
        &self.arena.0[(offset / 8) as usize]
    }

    fn dword(&self, offset: u64) -> u32 {
        (self.word(offset & !7).load(Ordering::Acquire) >> (8 * (offset & 4))) as u32
    }

    fn set_dword(&self, offset: u64, v: u32) {
        let w = self.word(offset & !7);
        let shift = 8 * (offset & 4);
        let old = w.load(Ordering::Relaxed);
        w.store(
            old & !(0xffff_ffff << shift) | u64::from(v) << shift,
            Ordering::Release,
        );
    }

    fn code_base(&self) -> u64 {
        &*self.code as *const CodePage as u64
    }

    fn write_code(&self, code: &[u32]) {
        for (k, pair) in code.chunks(2).enumerate() {
            let hi = pair.get(1).map_or(0, |&d| u64::from(d));
            self.code.0[k].store(u64::from(pair[0]) | hi << 32, Ordering::Release);
        }
    }

    /// Writes `dwords` to the ring at the write pointer, then the write pointer and the
    /// doorbell (dwords, unwrapped), as tinygrad's `_submit` and `signal_doorbell`.
    fn submit(&self, dwords: &[u32]) {
        let mut w = self.wptr.get();
        for &d in dwords {
            self.set_dword(RING + (w % RING_DWORDS) * 4, d);
            w += 1;
        }
        self.wptr.set(w);
        self.word(WPTR).store(w, Ordering::Release);
        // SAFETY: the doorbell page stays mapped while the device lives; the CP reads it
        // atomically.
        let bell = unsafe { AtomicU64::from_ptr(self.doorbell.as_ptr()) };
        bell.store(w, Ordering::Release);
    }

    /// Waits up to 10 s for the flag dword to be `v`.
    fn wait_flag(&self, v: u32) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if self.dword(FLAG) == v {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// Waits up to 10 s for the queue to stop; its error.
    fn wait_error(&self) -> hsa_core::Error {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Some(e) = self.d.queue_error(self.queue_id) {
                return e;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("the queue did not stop within 10 s");
    }

    /// The vector add's inputs (`a[i] = 3i + 1`, `b[i] = 1000 - 7i`) and kernargs.
    fn vector_add_data(&self) {
        for i in 0..N {
            self.set_dword(A + 4 * i, 3 * i as u32 + 1);
            self.set_dword(B + 4 * i, 1000u32.wrapping_sub(7 * i as u32));
            self.set_dword(C + 4 * i, 0xdead_beef);
        }
        let base = self.base();
        self.word(KERNARG).store(base + A, Ordering::Relaxed);
        self.word(KERNARG + 8).store(base + B, Ordering::Relaxed);
        self.word(KERNARG + 16).store(base + C, Ordering::Release);
    }

    /// The register writes of tinygrad's `AMDComputeQueue.exec` for the vector add with
    /// `rsrc1` and `user_sgprs` user SGPRs (kernarg pointer in USER_DATA_0/1), work-groups of
    /// 64.
    fn vector_add_registers(&self, rsrc1: u32, user_sgprs: u32) -> Vec<u32> {
        let kernarg = self.base() + KERNARG;
        let pgm = self.code_base() >> 8;
        let rsrc2 = RSRC2 & !(0x1f << 1) | user_sgprs << 1;
        [
            set_sh_reg(COMPUTE_PGM_LO, &[pgm as u32, (pgm >> 32) as u32]),
            set_sh_reg(COMPUTE_PGM_RSRC1, &[rsrc1, rsrc2]),
            set_sh_reg(COMPUTE_PGM_RSRC3, &[0]),
            set_sh_reg(COMPUTE_TMPRING_SIZE, &[0]),
            set_sh_reg(COMPUTE_RESTART_X, &[0, 0, 0]),
            set_sh_reg(
                COMPUTE_USER_DATA_0,
                &[kernarg as u32, (kernarg >> 32) as u32],
            ),
            set_sh_reg(COMPUTE_RESOURCE_LIMITS, &[0]),
            // START_X/Y/Z, NUM_THREAD_X/Y/Z, PIPELINESTAT_ENABLE, PERFCOUNT_ENABLE.
            set_sh_reg(COMPUTE_START_X, &[0, 0, 0, 64, 1, 1, 0, 0]),
        ]
        .concat()
    }

    fn check_sum(&self) {
        for i in 0..N {
            let want = (3 * i as u32 + 1).wrapping_add(1000u32.wrapping_sub(7 * i as u32));
            assert_eq!(self.dword(C + 4 * i), want, "c[{i}]");
        }
    }
}

/// A PM4 dispatch of a vector add, as tinygrad's `exec` writes it (registers, DISPATCH_DIRECT
/// of 4 work-groups, CS_PARTIAL_FLUSH, then a RELEASE_MEM of a flag), computes what the host
/// computes; the read pointer the CP reports is past the packets; a DISPATCH_INDIRECT of the
/// same kernel over dimensions in memory does it again.
#[test]
fn pm4_dispatch_of_a_vector_add_computes_what_the_host_computes() {
    let s = setup();
    s.write_code(&VECTOR_ADD);
    s.vector_add_data();
    let mut stream = s.vector_add_registers(0, 2);
    stream.extend(pkt3(0x15, &[4, 1, 1, INITIATOR]));
    stream.extend(pkt3(0x46, &[7 | 4 << 8])); // EVENT_WRITE CS_PARTIAL_FLUSH
    stream.extend(release_mem(s.base() + FLAG, 1, 0, 0));
    s.submit(&stream);
    assert!(
        s.wait_flag(1),
        "no RELEASE_MEM: {:?}",
        s.d.queue_error(s.queue_id)
    );
    assert_eq!(s.d.queue_error(s.queue_id), None);
    s.check_sum();
    assert_eq!(u64::from(s.dword(RPTR)), stream.len() as u64 % RING_DWORDS);
    assert_eq!(s.d.execution_stats().interpreted_dispatches, 1);

    // DISPATCH_INDIRECT: the dimensions (4, 1, 1) from memory; the registers are kept.
    for i in 0..N {
        s.set_dword(C + 4 * i, 0);
    }
    s.set_dword(DIMS, 4);
    s.set_dword(DIMS + 4, 1);
    s.set_dword(DIMS + 8, 1);
    let dims = s.base() + DIMS;
    let mut stream = pkt3(0x16, &[dims as u32, (dims >> 32) as u32, INITIATOR]);
    stream.extend(release_mem(s.base() + FLAG, 2, 0, 0));
    s.submit(&stream);
    assert!(s.wait_flag(2), "{:?}", s.d.queue_error(s.queue_id));
    s.check_sum();
}

/// WAIT_REG_MEM on memory holds the queue until the host writes the value: a flag the host
/// sets later lets the RELEASE_MEM after it run; the HDP flush (write REQ, wait on DONE at
/// NBIO's 0xd20 + 0x106/0x107, tinygrad's `memory_barrier`) passes at once.
/// A producer that stores the write-pointer word, then the doorbell (tinygrad's
/// `signal_doorbell`), may see the CP run its packets from the word before the doorbell
/// store: the doorbell, still behind the read pointer, is not taken as the write pointer
/// (it was, once in CI: "write pointer 0 against read pointer 30"). Here the doorbell is
/// rung late, then a second batch comes by the word alone.
#[test]
fn a_doorbell_behind_the_read_pointer_is_not_the_write_pointer() {
    let s = setup();
    let bell = || {
        // SAFETY: the doorbell page stays mapped while the device lives; the CP reads it
        // atomically.
        unsafe { AtomicU64::from_ptr(s.doorbell.as_ptr()) }
    };
    let mut stream = release_mem(s.base() + FLAG, 5, 0, 0);
    let n = stream.len() as u64;
    for (k, &d) in stream.iter().enumerate() {
        s.set_dword(RING + k as u64 * 4, d);
    }
    // The word only: the doorbell still holds 0.
    s.word(WPTR).store(n, Ordering::Release);
    assert!(s.wait_flag(5), "{:?}", s.d.queue_error(s.queue_id));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(s.d.queue_error(s.queue_id), None);
    bell().store(n, Ordering::Release);
    // A second batch by the word alone, the doorbell left at the first.
    stream = release_mem(s.base() + FLAG, 6, 0, 0);
    for (k, &d) in stream.iter().enumerate() {
        s.set_dword(RING + (n + k as u64) * 4, d);
    }
    s.word(WPTR)
        .store(n + stream.len() as u64, Ordering::Release);
    assert!(s.wait_flag(6), "{:?}", s.d.queue_error(s.queue_id));
    assert_eq!(s.d.queue_error(s.queue_id), None);
}

#[test]
fn wait_reg_mem_waits_for_memory_and_passes_the_hdp_flush() {
    let s = setup();
    let gate = s.base() + DIMS;
    let mut stream = pkt3(0x3c, &[1 << 6 | 5, 0xd20 + 0x106, 0xd20 + 0x107, !0, !0, 4]);
    // Function 3 (==) under mask 0xff00: the gate's second byte must be 0x12.
    stream.extend(wait_mem(gate, 0x1200, 0xff00, 3));
    stream.extend(release_mem(s.base() + FLAG, 7, 0, 0));
    s.set_dword(DIMS, 0x34_11ff);
    s.submit(&stream);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(s.dword(FLAG), 0, "the wait passed before its value came");
    assert_eq!(s.d.queue_error(s.queue_id), None);
    s.set_dword(DIMS, 0x56_1200);
    assert!(s.wait_flag(7), "{:?}", s.d.queue_error(s.queue_id));
}

/// RELEASE_MEM signals a KFD event as tinygrad's `signal`: the event id into the event's
/// mailbox slot (32-bit data), then the end-of-pipe interrupt with the id as context id,
/// whose handler (amdkfd's `kfd_signal_event_interrupt`) sets the event and resets the slot:
/// a COPY_DATA of the slot (64-bit, memory to memory) after the interrupt reads
/// `UNSIGNALED_EVENT_SLOT` back, and the event is set before anyone waits.
#[test]
fn release_mem_signals_an_event() {
    let s = setup();
    let page_va = 0x7f00_0040_0000u64;
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: page_va,
        size: hsa_emu::device::EVENT_PAGE_BYTES,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
        ..Default::default()
    };
    calls::alloc_memory_of_gpu(&*s.d, &mut a).unwrap();
    calls::map_memory_to_gpu(&*s.d, a.handle, &[BUILTIN_GPU_ID]).unwrap();
    let mut ce = CreateEventArgs {
        event_type: KFD_IOC_EVENT_SIGNAL,
        auto_reset: 1,
        event_page_offset: a.handle,
        ..Default::default()
    };
    plain_ioctl(&*s.d, &mut ce).unwrap();
    let mailbox = page_va + 8 * u64::from(ce.event_slot_index);
    let wait = |ms| {
        let mut data = [EventData {
            event_id: ce.event_id,
            ..Default::default()
        }];
        calls::wait_events(&*s.d, &mut data, false, ms).unwrap()
    };
    assert_eq!(wait(0), KFD_IOC_WAIT_RESULT_TIMEOUT);
    let copy = s.base() + DIMS;
    s.word(DIMS).store(0x1234, Ordering::Release);
    let mut stream = release_mem(mailbox, ce.event_id, 0, 0);
    // Only the interrupt: DATA_SEL 0.
    let mut interrupt = release_mem(0, 0, 2, ce.event_id);
    interrupt[2] &= !(7 << 29);
    stream.extend(interrupt);
    // COPY_DATA: SRC_SEL 1 (memory), DST_SEL 5 (memory), COUNT_SEL 1 (64 bits).
    stream.extend(pkt3(
        0x40,
        &[
            1 | 5 << 8 | 1 << 16,
            mailbox as u32,
            (mailbox >> 32) as u32,
            copy as u32,
            (copy >> 32) as u32,
        ],
    ));
    stream.extend(release_mem(s.base() + FLAG, 3, 0, 0));
    s.submit(&stream);
    assert!(s.wait_flag(3), "{:?}", s.d.queue_error(s.queue_id));
    assert_eq!(
        s.word(DIMS).load(Ordering::Acquire),
        hsa_emu::device::UNSIGNALED_EVENT_SLOT
    );
    assert_eq!(wait(0), KFD_IOC_WAIT_RESULT_COMPLETE);
    assert_eq!(s.d.queue_error(s.queue_id), None);
}

/// Issue 40's proof: a COMPUTE_PGM_RSRC1 whose VGPR count is too small for the kernel (8
/// VGPRs for a kernel using v9) stops the queue with the illegal-instruction error naming the
/// register, before the instruction runs: c is untouched. With RSRC1.VGPRS 1 (16 VGPRs) the
/// same kernel runs.
#[test]
fn rsrc1_vgpr_count_too_small_stops_the_queue() {
    let s = setup();
    s.write_code(&VECTOR_ADD_V9);
    s.vector_add_data();
    let mut stream = s.vector_add_registers(0, 2);
    stream.extend(pkt3(0x15, &[4, 1, 1, INITIATOR]));
    stream.extend(release_mem(s.base() + FLAG, 1, 0, 0));
    s.submit(&stream);
    let e = s.wait_error();
    assert_eq!(e.status(), Status::IllegalInstruction);
    assert_eq!(
        e.detail(),
        format!(
            "PM4 dispatch of COMPUTE_PGM {:#x} on gfx90a: global_load_dword at kernel offset \
             0x28 names v9 but the wave has 8 VGPRs (COMPUTE_PGM_RSRC1.VGPRS 0): the SPI gave \
             it no more",
            s.code_base()
        )
    );
    assert_eq!(s.dword(FLAG), 0);
    assert_eq!(s.dword(C), 0xdead_beef);

    let s = setup();
    s.write_code(&VECTOR_ADD_V9);
    s.vector_add_data();
    let mut stream = s.vector_add_registers(1, 2);
    stream.extend(pkt3(0x15, &[4, 1, 1, INITIATOR]));
    stream.extend(release_mem(s.base() + FLAG, 1, 0, 0));
    s.submit(&stream);
    assert!(s.wait_flag(1), "{:?}", s.d.queue_error(s.queue_id));
    s.check_sum();
}

/// Issue 40's proof: a USER_SGPR count the kernel does not expect (1: only USER_DATA_0, the
/// kernarg pointer's low half, is loaded; the work-group id lands in s1) makes the kernel's
/// first load read the kernarg pointer's low 32 bits as its address: a memory fault there, as
/// on the GPU, through the KFD memory event.
#[test]
fn user_sgpr_count_the_kernel_does_not_expect_faults() {
    let s = setup();
    s.write_code(&VECTOR_ADD);
    s.vector_add_data();
    let mut ev = CreateEventArgs {
        event_type: KFD_IOC_EVENT_MEMORY,
        auto_reset: 1,
        ..Default::default()
    };
    plain_ioctl(&*s.d, &mut ev).unwrap();
    let mut stream = s.vector_add_registers(0, 1);
    stream.extend(pkt3(0x15, &[4, 1, 1, INITIATOR]));
    s.submit(&stream);
    let e = s.wait_error();
    assert_eq!(e.status(), Status::MemoryFault);
    let lo = (s.base() + KERNARG) & 0xffff_ffff;
    assert_eq!(
        e.detail(),
        format!(
            "PM4 dispatch of COMPUTE_PGM {:#x} on gfx90a: s_load_dwordx4 at kernel offset 0x0: \
             memory fault: read at {lo:#x} (16 bytes) outside GPU {BUILTIN_GPU_ID:#x}'s memory",
            s.code_base()
        )
    );
    let mut data = [EventData {
        event_id: ev.event_id,
        ..Default::default()
    }];
    assert_eq!(
        calls::wait_events(&*s.d, &mut data, false, 10_000).unwrap(),
        KFD_IOC_WAIT_RESULT_COMPLETE
    );
    assert_eq!(data[0].memory_exception().va, lo);
    assert_eq!(s.dword(C), 0xdead_beef);
}

/// Packets and fields the CP does not run stop the queue with INVALID_PACKET_FORMAT naming
/// them and their place on the ring.
#[test]
fn unsupported_packets_stop_the_queue_with_their_place() {
    let s = setup();
    // Two NOP dwords, then SET_SH_REG of COMPUTE_STATIC_THREAD_MGMT_SE0 (0x216).
    let mut stream = pkt3(0x10, &[0]);
    stream.extend(set_sh_reg(0x216, &[0xffff_ffff]));
    s.submit(&stream);
    let e = s.wait_error();
    assert_eq!(e.status(), Status::InvalidPacketFormat);
    let ring = s.base() + RING;
    assert_eq!(
        e.detail(),
        format!(
            "PM4 at ring at {ring:#x}, write pointer 2 (dword 2, {:#x}): SET_SH_REG of register \
             0x2e16 (offset 0x216) = 0xffffffff: not a compute register the emulated CP keeps \
             (COMPUTE_START_*, NUM_THREAD_*, PIPELINESTAT_ENABLE, PERFCOUNT_ENABLE, PGM_LO/HI, DISPATCH_SCRATCH_BASE_LO/HI, \
             PGM_RSRC1/2/3, RESOURCE_LIMITS, TMPRING_SIZE, RESTART_*, USER_DATA_0..15)",
            ring + 8
        )
    );
}

/// CREATE_QUEUE of a PM4 queue checks what amdkfd checks: ring size (a power of two; a smaller
/// one than 1024 bytes is raised to 1024), pointers' alignment and memory, the percentage's
/// low 8 bits (the XCC id above them is accepted).
#[test]
fn create_pm4_queue_checks_its_arguments() {
    let s = setup();
    let base = s.base();
    type Edit = fn(&mut CreateQueueArgs);
    let cases: [(Edit, Errno); 5] = [
        (|q| q.ring_size = 1000, Errno::INVAL),
        (|q| q.queue_percentage = 101 | 1 << 8, Errno::INVAL),
        (|q| q.write_pointer_address += 4, Errno::INVAL),
        (|q| q.read_pointer_address = 0, Errno::FAULT),
        (|q| q.ring_base_address = 0x1000, Errno::INVAL),
    ];
    for (edit, want) in cases {
        let mut q = queue_args(base, BUILTIN_GPU_ID);
        edit(&mut q);
        assert_eq!(create(&s.d, &mut q).unwrap_err(), want, "{q:?}");
    }
    let mut q = queue_args(base, BUILTIN_GPU_ID);
    q.queue_percentage = KFD_MAX_QUEUE_PERCENTAGE | 1 << 8;
    create(&s.d, &mut q).unwrap();
    assert_ne!(q.queue_id, s.queue_id);
}

/// A queue destroyed while a WAIT_REG_MEM waits for a value that never comes ends quietly:
/// DESTROY_QUEUE returns, no queue error is logged and no hardware-exception event is set.
#[test]
fn destroying_a_queue_blocked_in_wait_reg_mem_reports_nothing() {
    let s = setup();
    let mut hw = CreateEventArgs {
        event_type: KFD_IOC_EVENT_HW_EXCEPTION,
        auto_reset: 1,
        ..Default::default()
    };
    plain_ioctl(&*s.d, &mut hw).unwrap();
    let mut stream = wait_mem(s.base() + DIMS, 1, !0, 3);
    stream.extend(release_mem(s.base() + FLAG, 1, 0, 0));
    s.submit(&stream);
    std::thread::sleep(Duration::from_millis(20));
    let mut d = DestroyQueueArgs {
        queue_id: s.queue_id,
        ..Default::default()
    };
    plain_ioctl(&*s.d, &mut d).unwrap();
    assert_eq!(s.d.queue_error(s.queue_id), None);
    let mut data = [EventData {
        event_id: hw.event_id,
        ..Default::default()
    }];
    assert_eq!(
        calls::wait_events(&*s.d, &mut data, false, 100).unwrap(),
        KFD_IOC_WAIT_RESULT_TIMEOUT
    );
    assert_eq!(s.dword(FLAG), 0);
}

/// Stores each lane's `v0 + 7` to its private segment at offset 0 and loads it back, then
/// writes it to the first kernarg's array (gfx942: architected flat scratch).
///
/// ```text
/// s_load_dwordx2 s[4:5], s[0:1], 0x0
/// v_mov_b32 v1, 0
/// v_add_u32 v2, 7, v0
/// scratch_store_dword v1, v2, off
/// s_waitcnt vmcnt(0)
/// scratch_load_dword v3, v1, off
/// v_lshlrev_b32 v0, 2, v0
/// s_waitcnt vmcnt(0) lgkmcnt(0)
/// global_store_dword v0, v3, s[4:5]
/// s_endpgm
/// ```
const SCRATCH_ROUND_TRIP_GFX942: [u32; 14] = [
    0xC0060100, 0x00000000, 0x7E020280, 0x68040087, 0xDC706000, 0x007F0201, 0xBF8C0F70, 0xDC506000,
    0x037F0001, 0x24000082, 0xBF8C0070, 0xDC708000, 0x00040300, 0xBF810000,
];

/// On the gfx942 profile a PM4 dispatch's scratch is COMPUTE_DISPATCH_SCRATCH_BASE's memory
/// in COMPUTE_TMPRING_SIZE's slots (tinygrad's "architected flat scratch" setup): the
/// kernel's private stores land there, each lane's dword 0 at `base + 4 × lane` (scratch is
/// swizzled per dword, 64 lanes), and its loads read them back.
#[test]
fn gfx942_dispatch_scratch_is_the_dispatch_scratch_base() {
    let s = setup_on(builtin_profile("gfx942").unwrap());
    s.write_code(&SCRATCH_ROUND_TRIP_GFX942);
    let scratch = s.base() + 12288;
    let kernarg = s.base() + KERNARG;
    s.word(KERNARG).store(s.base() + C, Ordering::Release);
    let pgm = s.code_base() >> 8;
    let stream = [
        set_sh_reg(COMPUTE_PGM_LO, &[pgm as u32, (pgm >> 32) as u32]),
        // RSRC2: SCRATCH_EN (bit 0), USER_SGPR 2.
        set_sh_reg(COMPUTE_PGM_RSRC1, &[0, 1 | 2 << 1]),
        // One slot (WAVES 1) of 1 KiB (WAVESIZE 1): 16 bytes a lane.
        set_sh_reg(COMPUTE_TMPRING_SIZE, &[1 << 12 | 1]),
        set_sh_reg(
            0x210, // COMPUTE_DISPATCH_SCRATCH_BASE_LO, _HI
            &[(scratch >> 8) as u32, (scratch >> 40) as u32],
        ),
        set_sh_reg(
            COMPUTE_USER_DATA_0,
            &[kernarg as u32, (kernarg >> 32) as u32],
        ),
        set_sh_reg(COMPUTE_START_X, &[0, 0, 0, 64, 1, 1]),
        pkt3(0x15, &[1, 1, 1, INITIATOR]),
        release_mem(s.base() + FLAG, 1, 0, 0),
    ]
    .concat();
    s.submit(&stream);
    assert!(s.wait_flag(1), "{:?}", s.d.queue_error(s.queue_id));
    for lane in 0..64u64 {
        assert_eq!(s.dword(C + 4 * lane), lane as u32 + 7, "c[{lane}]");
        assert_eq!(
            s.dword(12288 + 4 * lane),
            lane as u32 + 7,
            "scratch lane {lane}"
        );
    }
}
