//! The MQD the emulated amdkfd makes for a compute queue (issue 38 item 2): golden
//! `struct v9_mqd` dwords for a matrix of ring sizes, doorbells, priorities, EOP sizes, a PM4
//! queue, a trap handler, a context save area and a CU mask. The emulator is amdkfd (linux
//! v7.0) on a gfx9 dGPU with the hardware scheduler and CWSR on. Every expected dword is worked out here from amdkfd's
//! rule (linux `drivers/gpu/drm/amd/amdkfd/kfd_mqd_manager_v9.c`, functions `init_mqd`,
//! `update_mqd`, `set_priority`, `update_cu_mask`; `kfd_mqd_manager.c` `pipe_priority_map`;
//! dword places from `v9_structs.h`; bit places from `gc_9_4_3_sh_mask.h`'s `CP_HQD_*`
//! fields), not read from the code under test.

use std::sync::Arc;

use hsa_emu::device::{builtin_topology, builtin_topology_for, EmulatedKfd, BUILTIN_GPU_ID};
use hsa_emu::ExecutionMode;
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::calls::{self, plain_ioctl};
use hsa_linux::kfd::driver::KfdDriver;
use zerocopy::IntoBytes;

/// 64 KiB of page-aligned memory registered as USERPTR: rings at 0 (up to 16 KiB),
/// amd_queue_t structures from 32768 (256 bytes each), the EOP buffer at 40960 (4 KiB), a
/// context save area at 49152.
#[repr(C, align(4096))]
struct Arena([u64; 8192]);

const QUEUES: u64 = 32768;
const EOP: u64 = 40960;
const CTX: u64 = 49152;

struct Setup {
    d: Arc<EmulatedKfd>,
    #[allow(dead_code)]
    arena: Box<Arena>,
    base: u64,
}

fn setup() -> Setup {
    setup_with(builtin_topology())
}

fn setup_with(topology: hsa_linux::topology::Topology) -> Setup {
    let d = EmulatedKfd::new(topology).unwrap();
    d.set_execution_mode(ExecutionMode::HostOnly);
    let arena = Box::new(Arena([0; 8192]));
    let base = &*arena as *const Arena as u64;
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: base,
        size: 65536,
        handle: 0,
        mmap_offset: base,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    };
    // SAFETY: the arena is 64 KiB of page-aligned memory the test owns; it outlives the
    // device's use (the queues are destroyed and the device dropped with Setup, `d` first).
    unsafe { calls::alloc_userptr_memory_of_gpu(&*d, &mut a) }.unwrap();
    calls::map_memory_to_gpu(&*d, a.handle, &[BUILTIN_GPU_ID]).unwrap();
    Setup { d, arena, base }
}

/// CREATE_QUEUE of an AQL queue whose `amd_queue_t` is the `k`-th of the arena.
fn create(s: &Setup, ring_size: u32, priority: u32, k: u64, ctx: bool) -> (u32, CreateQueueArgs) {
    let mut q = args(s, ring_size, priority, k, ctx);
    // SAFETY: the ring and amd_queue_t lie in the arena, registered and mapped above, alive
    // until after the device; nothing else touches them while the queue runs.
    unsafe { calls::create_queue(&*s.d, &mut q) }.unwrap();
    (q.queue_id, q)
}

/// CREATE_QUEUE's arguments for an AQL queue whose `amd_queue_t` is the `k`-th of the arena,
/// with a 4 KiB EOP buffer.
fn args(s: &Setup, ring_size: u32, priority: u32, k: u64, ctx: bool) -> CreateQueueArgs {
    let amd_queue = s.base + QUEUES + 256 * k;
    CreateQueueArgs {
        ring_base_address: s.base,
        write_pointer_address: amd_queue + 56,
        read_pointer_address: amd_queue + 128,
        ring_size,
        gpu_id: BUILTIN_GPU_ID,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        queue_percentage: 100,
        queue_priority: priority,
        eop_buffer_address: s.base + EOP,
        eop_buffer_size: 4096,
        ctx_save_restore_address: if ctx { s.base + CTX } else { 0 },
        ctx_save_restore_size: if ctx { 0x2000 } else { 0 },
        ctl_stack_size: if ctx { 0x1000 } else { 0 },
        ..Default::default()
    }
}

/// `cp_hqd_eop_control` for the EOP sizes the tests use, worked out by hand from amdkfd's
/// `size ? min(0xA, order_base_2(size / 4) - 1) : 0`: 4096 / 4 = 1024 = 2^10 -> 9;
/// 12 / 4 = 3 -> order 2 -> 1; 20 / 4 = 5 -> order 3 -> 2; 8 / 4 = 2 -> 1 -> 0;
/// 65536 / 4 = 2^14 -> 13, clamped to 0xA.
fn eop_control(size: u64) -> u32 {
    match size {
        0 => 0,
        8 => 0,
        12 => 1,
        20 => 2,
        4096 => 9,
        65536 => 0xA,
        _ => panic!("no hand-worked EOP_SIZE for {size}"),
    }
}

/// The dwords amdkfd writes for AQL queue `q` (id `qid`), every other dword 0. Dwords
/// 128/129 (the MQD's own address) are left to the caller.
fn expected(q: &CreateQueueArgs, qid: u32) -> [u32; 512] {
    let mut d = [0u32; 512];
    // init_mqd: header, compute_pipelinestat_enable (dword 11), the eight
    // compute_static_thread_mgmt_se* (23, 24, 26, 27, 39..42) all ones.
    d[0] = 0xC031_0800;
    d[11] = 1;
    for i in [23, 24, 26, 27, 39, 40, 41, 42] {
        d[i] = 0xFFFF_FFFF;
    }
    // init_mqd: TRAP_PRESENT (COMPUTE_PGM_RSRC2 bit 6) when q->tba_addr != 0: on a dGPU with
    // CWSR, kfd_process_device_init_cwsr_dgpu sets every process's tba_addr (the CWSR trap
    // handler), so every queue, with or without SET_TRAP_HANDLER.
    d[20] = 1 << 6;
    // cp_hqd_persistent_state (132): PRELOAD_REQ (bit 0) | 0x53 << PRELOAD_SIZE (bit 8),
    // | QSWITCH_MODE (bit 30) with a CWSR area.
    d[132] = 1 | 0x53 << 8;
    // cp_mqd_control (162): PRIV_STATE (bit 8).
    d[162] = 1 << 8;
    // cp_hqd_quantum (135): QUANTUM_EN (0) | QUANTUM_SCALE 1 (bit 4) | QUANTUM_DURATION 1
    // (bit 8).
    d[135] = 1 | 1 << 4 | 1 << 8;
    // cp_hqd_hq_status0 (160): bit 14, the CP sets up the dispatch pointer.
    d[160] = 1 << 14;
    // cp_hqd_aql_control (181): CONTROL0 for an AQL queue.
    d[181] = 1;
    // update_mqd: cp_hqd_pq_control (145) = 5 << RPTR_BLOCK_SIZE (8) | UNORD_DISPATCH (28,
    // from init_mqd) | order_base_2(size / 4) - 1; AQL: NO_UPDATE_RPTR (27) |
    // 2 << SLOT_BASED_WPTR (25) | QUEUE_FULL_EN (14) | WPP_CLAMP_EN (16).
    let log2_dwords = (q.ring_size / 4).trailing_zeros();
    d[145] = (log2_dwords - 1) | 5 << 8 | 1 << 28 | 1 << 27 | 2 << 25 | 1 << 14 | 1 << 16;
    // cp_hqd_pq_base_lo/hi (136, 137): ring >> 8.
    d[136] = (q.ring_base_address >> 8) as u32;
    d[137] = (q.ring_base_address >> 40) as u32;
    // Read-pointer report (139, 140) and write-pointer poll (141, 142) addresses.
    d[139] = q.read_pointer_address as u32;
    d[140] = (q.read_pointer_address >> 32) as u32;
    d[141] = q.write_pointer_address as u32;
    d[142] = (q.write_pointer_address >> 32) as u32;
    // cp_hqd_pq_doorbell_control (143): doorbell_off << DOORBELL_OFFSET (2), the doorbell's
    // dword offset being 2 * queue id (8 bytes each from the page's start); AQL:
    // DOORBELL_BIF_DROP (bit 1). DOORBELL_EN stays off (hqd_load sets it).
    d[143] = (qid * 2) << 2 | 1 << 1;
    // cp_hqd_ib_control (149): 3 << MIN_IB_AVAIL_SIZE (20) | IB_EXE_DISABLE (23).
    d[149] = 3 << 20 | 1 << 23;
    // cp_hqd_eop_control (167): size ? min(0xA, order_base_2(size / 4) - 1) : 0; base
    // (165, 166) >> 8.
    d[167] = eop_control(q.eop_buffer_size);
    d[165] = (q.eop_buffer_address >> 8) as u32;
    d[166] = (q.eop_buffer_address >> 40) as u32;
    // cp_hqd_vmid (131): 0. Under the HWS, create_queue_cpsch never sets q->vmid; the HWS
    // picks the VMID when it maps the process.
    d[131] = 0;
    // set_priority: cp_hqd_pipe_priority (133) = pipe_priority_map[priority]: LOW (0) for
    // 0..=6, MEDIUM (1) for 7..=10, HIGH (2) for 11..=15.
    d[133] = match q.queue_priority {
        0..=6 => 0,
        7..=10 => 1,
        _ => 2,
    };
    // cp_hqd_queue_priority (134): 0 whatever the priority; linux v7.0's set_priority no
    // longer writes it (commit 73463e26f7e2, "drm/amdkfd: Disable MQD queue priority").
    d[134] = 0;
    // CWSR area: init_mqd's QSWITCH_MODE, base (171, 172), ctx_save_size (177),
    // cntl_stack_size (175), cntl_stack_offset (174) and wg_state_offset (176) = the
    // control stack size; update_mqd's cp_hqd_ctx_save_control (173) 0.
    if q.ctx_save_restore_address != 0 {
        d[132] |= 1 << 30;
        d[171] = q.ctx_save_restore_address as u32;
        d[172] = (q.ctx_save_restore_address >> 32) as u32;
        d[177] = q.ctx_save_restore_size;
        d[175] = q.ctl_stack_size;
        d[174] = q.ctl_stack_size;
        d[176] = q.ctl_stack_size;
    }
    d
}

/// UPDATE_QUEUE of queue `qid` (a 4 KiB ring at the arena's start, 100 %) to `priority`.
fn update_priority(s: &Setup, qid: u32, priority: u32) {
    let mut u = UpdateQueueArgs {
        ring_base_address: s.base,
        queue_id: qid,
        ring_size: 4096,
        queue_percentage: 100,
        queue_priority: priority,
    };
    plain_ioctl(&*s.d, &mut u).unwrap();
}

fn check(s: &Setup, qid: u32, want: &[u32; 512]) {
    let got = s.d.mqd(qid).expect("a compute queue has an MQD").dwords();
    // Dwords 128/129: the MQD's own address, where the device keeps it: 4-byte aligned,
    // not null.
    let own = u64::from(got[128]) | u64::from(got[129]) << 32;
    assert!(own != 0 && own % 4 == 0, "cp_mqd_base_addr {own:#x}");
    for i in 0..512 {
        if i == 128 || i == 129 {
            continue;
        }
        assert_eq!(
            got[i], want[i],
            "queue {qid} dword {i}: {:#x} != {:#x}",
            got[i], want[i]
        );
    }
}

/// Three ring sizes, two doorbells (queue ids 0 and 1), two priorities (the last LOW and the first HIGH
/// pipe priority of pipe_priority_map).
#[test]
fn golden_mqds_for_ring_sizes_doorbells_and_priorities() {
    for ring_size in [1024, 4096, 16384] {
        for priority in [6, 11] {
            let s = setup();
            let (q0, a0) = create(&s, ring_size, priority, 0, false);
            let (q1, a1) = create(&s, ring_size, priority, 1, false);
            assert_eq!((q0, q1), (0, 1));
            check(&s, q0, &expected(&a0, q0));
            check(&s, q1, &expected(&a1, q1));
            for queue_id in [q0, q1] {
                let mut d = DestroyQueueArgs { queue_id, pad: 0 };
                plain_ioctl(&*s.d, &mut d).unwrap();
            }
        }
    }
}

/// UPDATE_QUEUE reruns update_mqd: the new priority's pipe priority, nothing else moves.
#[test]
fn update_queue_rewrites_the_pipe_priority() {
    let s = setup();
    let (qid, mut a) = create(&s, 4096, 7, 0, false);
    check(&s, qid, &expected(&a, qid));
    update_priority(&s, qid, 15);
    a.queue_priority = 15;
    check(&s, qid, &expected(&a, qid));
}

/// SET_CU_MASK (update_cu_mask) writes the mapped per-engine masks into
/// compute_static_thread_mgmt_se0..7. The built-in MI210 shape: 8 engines of one array of 13
/// CUs; user bit i is CU i / 8 of engine i % 8 (mqd_symmetrically_map_cu_mask), so bits 0,
/// 9 and 103 are SE0 CU0, SE1 CU1 and SE7 CU12; bit 104 is past the CUs.
#[test]
fn set_cu_mask_writes_the_static_thread_mgmt_words() {
    let s = setup();
    let (qid, a) = create(&s, 1024, 0, 0, false);
    calls::set_cu_mask(&*s.d, qid, &[1 | 1 << 9, 0, 0, 1 << 7 | 1 << 8]).unwrap();
    let mut want = expected(&a, qid);
    for i in [23, 24, 26, 27, 39, 40, 41, 42] {
        want[i] = 0;
    }
    want[23] = 1;
    want[24] = 1 << 1;
    want[42] = 1 << 12;
    check(&s, qid, &want);
}

/// On GC 9.4.3 (gfx942) amdkfd makes a queue's MQDs with `init_mqd_v9_4_3`, one per XCC of
/// the partition (two here); the emulated GPU runs the queue from the master XCC's, whose
/// dwords differ from the gfx90a image: `compute_current_logic_xcc_id` (39) = (the node's
/// logical XCC start, one more per queue) % 2; `compute_tg_chunk_size` (41) 1;
/// `cp_mqd_stride_size` (226) = `mqd_stride_v9` with CWSR: the control stack page-aligned
/// plus a page; `cp_hqd_pq_control` (145) without `NO_UPDATE_RPTR` (bit 27), the master's CP
/// reporting the read pointer. UPDATE_QUEUE (`update_mqd_v9_4_3`) keeps them; SET_CU_MASK
/// writes SE0-SE3's masks only.
#[test]
fn gfx942_queues_run_from_the_master_xccs_mqd() {
    let mut t = builtin_topology_for(90402).unwrap();
    t.nodes[1].properties.num_xcc = 2;
    let s = setup_with(t);
    let xcc = |a: &CreateQueueArgs, qid: u32, logical: u32| {
        let mut w = expected(a, qid);
        w[39] = logical;
        w[41] = 1;
        w[226] = a.ctl_stack_size.next_multiple_of(4096) + 4096;
        w[145] &= !(1 << 27);
        w
    };
    let (q0, a0) = create(&s, 4096, 7, 0, true);
    let (q1, mut a1) = create(&s, 4096, 7, 1, false);
    let (q2, a2) = create(&s, 1024, 7, 2, false);
    check(&s, q0, &xcc(&a0, q0, 0));
    check(&s, q1, &xcc(&a1, q1, 1));
    check(&s, q2, &xcc(&a2, q2, 0));
    assert_eq!(xcc(&a0, q0, 0)[226], 0x2000);
    update_priority(&s, q1, 15);
    a1.queue_priority = 15;
    check(&s, q1, &xcc(&a1, q1, 1));
    // The MI210 shape: user bit i is CU i / 8 of engine i % 8; bits 0 and 9 land on SE0 and
    // SE1, bit 103 on SE7 (its CU 12), which these GPUs' MQD cannot hold: dword 42 stays
    // all-ones.
    calls::set_cu_mask(&*s.d, q2, &[1 | 1 << 9, 0, 0, 1 << 7]).unwrap();
    let mut want = xcc(&a2, q2, 0);
    want[23] = 1;
    want[24] = 1 << 1;
    want[26] = 0;
    want[27] = 0;
    check(&s, q2, &want);
}

/// SET_TRAP_HANDLER before CREATE_QUEUE changes nothing in the MQD (TRAP_PRESENT is set
/// either way: the CWSR handler is the first level); a context save area fills the CWSR
/// fields and QSWITCH_MODE.
#[test]
fn trap_handler_and_context_save_area() {
    let s = setup();
    let mut t = SetTrapHandlerArgs {
        tba_addr: 0x7000_0000,
        tma_addr: 0x7000_1000,
        gpu_id: BUILTIN_GPU_ID,
        pad: 0,
    };
    // SAFETY: the argument is the ioctl's own struct, 24 bytes, alive for the call.
    unsafe { s.d.ioctl(AMDKFD_IOC_SET_TRAP_HANDLER, t.as_mut_bytes()) }.unwrap();
    let (qid, a) = create(&s, 4096, 9, 0, true);
    check(&s, qid, &expected(&a, qid));
}

/// A ring the MQD cannot hold (not 256-byte aligned: cp_hqd_pq_base keeps address >> 8) is
/// refused.
#[test]
fn unaligned_ring_is_refused() {
    let s = setup();
    let amd_queue = s.base + QUEUES;
    let mut q = CreateQueueArgs {
        ring_base_address: s.base + 0x40,
        write_pointer_address: amd_queue + 56,
        read_pointer_address: amd_queue + 128,
        ring_size: 1024,
        gpu_id: BUILTIN_GPU_ID,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        queue_percentage: 100,
        ..Default::default()
    };
    // SAFETY: as in `create`.
    let r = unsafe { calls::create_queue(&*s.d, &mut q) };
    assert!(r.is_err(), "a ring at base + 0x40 was taken");
    assert!(s.d.mqd(0).is_none());
}

/// A queue created with no SET_TRAP_HANDLER still has TRAP_PRESENT (dword 20 = 1 << 6), and
/// its MQD's VMID (dword 131) is 0 while its priority 9 leaves dword 134 at 0.
#[test]
fn trap_present_vmid_0_and_no_queue_priority_without_trap_handler() {
    let s = setup();
    let (qid, _) = create(&s, 4096, 9, 0, false);
    let got = s.d.mqd(qid).unwrap().dwords();
    assert_eq!((got[20], got[131], got[133], got[134]), (1 << 6, 0, 1, 0));
}

/// EOP sizes that are not powers of two (and 8, 64 KiB) give amdkfd's EOP_SIZE, worked out
/// by hand ([`eop_control`]); 4 and 7 bytes, where amdkfd's `order_base_2(size / 4) - 1` is
/// -1 and it would store 0xFFFF_FFFF, are refused by the emulated CP (EINVAL), no MQD left.
#[test]
fn eop_sizes_follow_amdkfd_arithmetic() {
    for eop in [8, 12, 20, 65536] {
        let s = setup();
        let mut a = args(&s, 4096, 0, 0, false);
        a.eop_buffer_size = eop;
        // SAFETY: as in `create`.
        unsafe { calls::create_queue(&*s.d, &mut a) }.unwrap();
        let got = s.d.mqd(a.queue_id).unwrap().dwords();
        assert_eq!(got[167], eop_control(eop), "EOP size {eop}");
        check(&s, a.queue_id, &expected(&a, a.queue_id));
    }
    for eop in [4, 7] {
        let s = setup();
        let mut a = args(&s, 4096, 0, 0, false);
        a.eop_buffer_size = eop;
        // SAFETY: as in `create`.
        let r = unsafe { calls::create_queue(&*s.d, &mut a) };
        assert!(r.is_err(), "EOP size {eop} was taken");
        assert!(s.d.mqd(0).is_none());
    }
}

/// A PM4 compute queue (KFD_IOC_QUEUE_TYPE_COMPUTE): no CP_HQD_AQL_CONTROL (dword 181 = 0),
/// cp_hqd_pq_control (145) without NO_UPDATE_RPTR, SLOT_BASED_WPTR, QUEUE_FULL_EN and
/// WPP_CLAMP_EN, the doorbell control (143) without DOORBELL_BIF_DROP.
#[test]
fn golden_mqd_for_a_pm4_queue() {
    let s = setup();
    // Read pointer (4 bytes) and write pointer (8 bytes) in the arena past the rings.
    let rptr = s.base + QUEUES;
    let wptr = s.base + QUEUES + 64;
    let mut a = CreateQueueArgs {
        ring_base_address: s.base,
        write_pointer_address: wptr,
        read_pointer_address: rptr,
        ring_size: 4096,
        gpu_id: BUILTIN_GPU_ID,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE,
        queue_percentage: 100,
        queue_priority: 11,
        eop_buffer_address: s.base + EOP,
        eop_buffer_size: 4096,
        ..Default::default()
    };
    // SAFETY: ring and pointers lie in the arena, registered and mapped, alive until after
    // the device.
    unsafe { calls::create_queue(&*s.d, &mut a) }.unwrap();
    let qid = a.queue_id;
    let mut want = expected(&a, qid);
    want[181] = 0;
    // 4096 bytes = 1024 dwords -> QUEUE_SIZE 9; 5 << 8; UNORD_DISPATCH (28).
    want[145] = 9 | 5 << 8 | 1 << 28;
    want[143] = (qid * 2) << 2;
    check(&s, qid, &want);
}

/// UPDATE_QUEUE after SET_CU_MASK: update_mqd (no CU mask given) leaves the masks as
/// SET_CU_MASK wrote them, and rewrites only the pipe priority.
#[test]
fn update_queue_keeps_the_cu_mask() {
    let s = setup();
    let (qid, mut a) = create(&s, 1024, 0, 0, false);
    calls::set_cu_mask(&*s.d, qid, &[1 | 1 << 9, 0, 0, 1 << 7 | 1 << 8]).unwrap();
    let mut u = UpdateQueueArgs {
        ring_base_address: s.base,
        queue_id: qid,
        ring_size: 1024,
        queue_percentage: 100,
        queue_priority: 12,
    };
    plain_ioctl(&*s.d, &mut u).unwrap();
    a.queue_priority = 12;
    let mut want = expected(&a, qid);
    for i in [23, 24, 26, 27, 39, 40, 41, 42] {
        want[i] = 0;
    }
    // As in set_cu_mask_writes_the_static_thread_mgmt_words: SE0 CU0, SE1 CU1, SE7 CU12.
    want[23] = 1;
    want[24] = 1 << 1;
    want[42] = 1 << 12;
    assert_eq!(want[133], 2);
    check(&s, qid, &want);
}
