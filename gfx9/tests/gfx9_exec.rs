//! Runs the real kernels of the gfx900/gfx90a/gfx942 code objects through the gfx9 wave
//! interpreter over a flat device memory (`hsa_test_support::FlatMemory`), and checks the results against host code.

use std::path::PathBuf;

use hsa_core::abi::queue::AmdQueue;
use hsa_core::loader::code_object::{AlignedBytes, CodeObject};
use hsa_core::packet::KernelDispatch;
use hsa_core::queue::scratch::ScratchLayout;
use hsa_core::{GpuVa, Result, Status};
use hsa_gfx9::exec::{run_dispatch, DispatchState, KernelCode, QueueScratch};
use hsa_gfx9::Gfx9Target;
use object::{Object, ObjectSection};

/// The flat test memory of the interpreter's tests.
use hsa_test_support::FlatMemory as TestMemory;

const LOAD_BASE: u64 = 0x7000_0000_0000;
const PACKET: u64 = 0x1000;
const KERNARG: u64 = 0x2000;
const BUF: [u64; 3] = [0x10_0000, 0x20_0000, 0x30_0000];

fn file(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects")
        .join(name);
    std::fs::read(p).unwrap()
}

/// Dispatches `kernel` of code object `name` over `grid` work-items in work-groups of `wg`
/// (the packet says `packet_wg`), with `kernarg` bytes, on `mem`.
fn dispatch(
    name: &str,
    kernel: &str,
    kernarg: &[u8],
    grid: u32,
    wg: u16,
    packet_wg: u16,
    mem: &TestMemory,
) -> Result<()> {
    dispatch_on(name, kernel, kernarg, grid, wg, packet_wg, mem, true)
}

/// [`dispatch`] on a queue with scratch ([`give_scratch`]) or with its `amd_queue_t` scratch
/// fields left 0.
#[allow(clippy::too_many_arguments)]
fn dispatch_on(
    name: &str,
    kernel: &str,
    kernarg: &[u8],
    grid: u32,
    wg: u16,
    packet_wg: u16,
    mem: &TestMemory,
    scratch: bool,
) -> Result<()> {
    let data = file(name);
    let aligned = AlignedBytes::new(&data);
    let co = CodeObject::parse(aligned.as_bytes()).unwrap();
    let k = co.kernel(kernel).unwrap();
    let elf = object::File::parse(aligned.as_bytes()).unwrap();
    let text = elf.section_by_name(".text").unwrap();
    let text_bytes = text.data().unwrap();
    let entry = (LOAD_BASE + k.descriptor_vaddr)
        .wrapping_add(k.descriptor.kernel_code_entry_byte_offset as u64);
    let code = KernelCode {
        base_address: LOAD_BASE + text.address(),
        bytes: text_bytes,
        entry_address: entry,
    };
    let pkt = KernelDispatch::one_dimensional(
        GpuVa::new(LOAD_BASE + k.descriptor_vaddr),
        GpuVa::new(KERNARG),
        packet_wg,
        grid,
    );
    mem.add(PACKET, pkt.emit().unwrap().bytes.to_vec());
    mem.add(KERNARG, kernarg.to_vec());
    let mut st = DispatchState::one_dimensional(grid, wg, PACKET, KERNARG);
    st.group_segment_size = k.descriptor.group_segment_fixed_size;
    st.private_segment_size = k.descriptor.private_segment_fixed_size;
    if scratch {
        give_scratch(mem, &mut st);
    }
    let target = Gfx9Target::from_processor(co.target().processor).unwrap();
    run_dispatch(&code, &k.descriptor, target, &st, mem)
}

/// Device address of the queue scratch [`give_scratch`] makes.
const SCRATCH: u64 = 0x5000_0000_0000;

/// Gives the dispatch a queue scratch at [`SCRATCH`] as hsa-core's queue creation lays it out
/// (`ScratchLayout`: one compute unit with as many scratch slots as a work-group has waves,
/// the packet's private bytes per lane), read back as the CP reads `amd_queue_t`.
fn give_scratch(mem: &TestMemory, st: &mut DispatchState) {
    let waves = (u32::from(st.workgroup_size[0])
        * u32::from(st.workgroup_size[1])
        * u32::from(st.workgroup_size[2]))
    .div_ceil(64);
    let Some(layout) = ScratchLayout::new(st.private_segment_size, 1, waves).unwrap() else {
        return;
    };
    let mut q = AmdQueue::default();
    layout.fill(SCRATCH, &mut q);
    mem.add(SCRATCH, vec![0; layout.size_bytes as usize]);
    st.scratch = QueueScratch::from_amd_queue(&amd_queue_bytes(&q));
}

/// The bytes of an `amd_queue_t`.
fn amd_queue_bytes(q: &AmdQueue) -> [u8; 256] {
    let mut b = [0u8; 256];
    b[..].copy_from_slice(zerocopy::IntoBytes::as_bytes(q));
    b
}

fn ptrs(p: &[u64]) -> Vec<u8> {
    p.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn as_u32(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

const FILES: [&str; 5] = [
    "kernels-gfx900-v4.hsaco",
    "kernels-gfx900-v5.hsaco",
    "kernels-gfx90a-v5.hsaco",
    "kernels-gfx942-v5.hsaco",
    "kernels-gfx9-generic-v6.hsaco",
];

/// `native` work-items, or `under_miri` under miri (where a wave64 instruction costs
/// milliseconds); both leave the last work-group partial where the test needs that.
const fn size(native: u32, under_miri: u32) -> u32 {
    if cfg!(miri) {
        under_miri
    } else {
        native
    }
}

// 4 groups of 256, the last one partial (232 work-items); under miri 2, the last of 44.
const N: u32 = size(1000, 300);

/// The code objects a test runs: all of them, or under miri (~10^4 times slower than a native
/// run) only the first.
fn under_test<'a>(files: &'a [&'a str]) -> &'a [&'a str] {
    if cfg!(miri) {
        &files[..1]
    } else {
        files
    }
}

fn input(n: u32, seed: u32) -> Vec<u32> {
    (0..n)
        .map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 3)
        .collect()
}

#[test]
fn vector_copy_and_add_match_host() {
    for &f in under_test(&FILES) {
        let a = input(N, 1);
        let b = input(N, 7);
        let mem = TestMemory::new();
        mem.add(BUF[0], words(&a));
        mem.add(BUF[1], vec![0; N as usize * 4]);
        dispatch(f, "vector_copy", &ptrs(&BUF[..2]), N, 256, 256, &mem).unwrap();
        assert_eq!(
            as_u32(&mem.get(BUF[1], N as usize * 4)),
            a,
            "{f} vector_copy"
        );

        let mem = TestMemory::new();
        mem.add(BUF[0], words(&a));
        mem.add(BUF[1], words(&b));
        mem.add(BUF[2], vec![0; N as usize * 4]);
        dispatch(f, "vector_add", &ptrs(&BUF), N, 256, 256, &mem).unwrap();
        let want: Vec<u32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
        assert_eq!(
            as_u32(&mem.get(BUF[2], N as usize * 4)),
            want,
            "{f} vector_add"
        );
    }
}

fn reverse_ref(a: &[u32], wg: usize) -> Vec<u32> {
    let mut out = vec![0; a.len()];
    for (g, chunk) in a.chunks(wg).enumerate() {
        for (l, _) in chunk.iter().enumerate() {
            // tile[lsz - 1 - lid] with lsz the full work-group size: in a partial last group
            // the lanes read LDS slots nobody wrote (0 on a fresh LDS).
            let src = wg - 1 - l;
            out[g * wg + l] = if src < chunk.len() { chunk[src] } else { 0 };
        }
    }
    out
}

#[test]
fn local_reverse_uses_lds_and_barrier() {
    for &f in under_test(&FILES) {
        let n = size(1024, 256);
        let a = input(n, 3);
        let mem = TestMemory::new();
        mem.add(BUF[0], words(&a));
        mem.add(BUF[1], vec![0; n as usize * 4]);
        dispatch(f, "local_reverse", &ptrs(&BUF[..2]), n, 256, 256, &mem).unwrap();
        assert_eq!(
            as_u32(&mem.get(BUF[1], n as usize * 4)),
            reverse_ref(&a, 256),
            "{f}"
        );
    }
}

#[test]
fn wrong_workgroup_size_in_packet_gives_wrong_result() {
    let n = size(1024, 256);
    let a = input(n, 3);
    let mem = TestMemory::new();
    mem.add(BUF[0], words(&a));
    mem.add(BUF[1], vec![0; n as usize * 4]);
    // The kernel computes global ids from the packet's workgroup_size_x (128, wrong).
    dispatch(
        "kernels-gfx90a-v5.hsaco",
        "local_reverse",
        &ptrs(&BUF[..2]),
        n,
        256,
        128,
        &mem,
    )
    .unwrap();
    let got = as_u32(&mem.get(BUF[1], n as usize * 4));
    assert_ne!(got, reverse_ref(&a, 256));
}

#[test]
fn out_of_bounds_kernarg_pointer_is_memory_fault() {
    for &f in under_test(&FILES) {
        let mem = TestMemory::new();
        mem.add(BUF[0], vec![0; 4096]);
        mem.add(BUF[1], vec![0; 4096]);
        let e = dispatch(
            f,
            "vector_copy",
            &ptrs(&[0xDEAD_0000, BUF[1]]),
            1024,
            256,
            256,
            &mem,
        )
        .unwrap_err();
        assert_eq!(e.status(), Status::MemoryFault, "{f}: {e}");
        assert!(e.detail().to_string().contains("0xdead0000"), "{e}");
    }
}

#[test]
fn illegal_instruction_names_encoding_and_offset() {
    let mem = TestMemory::new();
    mem.add(BUF[0], vec![0; 16]);
    // MUBUF opcode 127 (no gfx9 instruction), then s_endpgm.
    let code_bytes = words(&[0xE1FC0000, 0x80000000, 0xBF810000]);
    let code = KernelCode {
        base_address: 0x4000,
        bytes: &code_bytes,
        entry_address: 0x4000,
    };
    let kd = hsa_core::abi::kernel_descriptor::KernelDescriptor::default();
    let st = DispatchState::one_dimensional(64, 64, 0, 0);
    let e = run_dispatch(&code, &kd, Gfx9Target::Gfx900, &st, &mem).unwrap_err();
    assert_eq!(e.status(), Status::IllegalInstruction);
    assert!(
        e.detail().contains("MUBUF") && e.detail().contains("0x0"),
        "{e}"
    );
}

/// `s_trap 2` (`__builtin_trap`) stops the dispatch with `EXCEPTION`, the status ROCR 5.2
/// reports for the CP's debug-trap queue error (`0x8000_0000`), not `ILLEGAL_INSTRUCTION`.
#[test]
fn s_trap_is_exception_naming_trap_id_and_offset() {
    let mem = TestMemory::new();
    // s_nop 0; s_trap 2; s_endpgm (llvm-mc-19 -mcpu=gfx90a: s_trap 2 is 0xbf920002).
    let code_bytes = words(&[0xBF800000, 0xBF920002, 0xBF810000]);
    let code = KernelCode {
        base_address: 0x4000,
        bytes: &code_bytes,
        entry_address: 0x4000,
    };
    let kd = hsa_core::abi::kernel_descriptor::KernelDescriptor::default();
    let st = DispatchState::one_dimensional(64, 64, 0, 0);
    let e = run_dispatch(&code, &kd, Gfx9Target::Gfx90a, &st, &mem).unwrap_err();
    assert_eq!(e.status(), Status::Exception, "{e}");
    assert!(
        e.detail().contains("s_trap 2") && e.detail().contains("0x4"),
        "{e}"
    );
}

/// `s_trap 3` (`llvm.debugtrap`) with no debugger is a no-operation (AMDGPUUsage "Trap
/// Handler ABI": the trap handler returns at once): the wave runs on and its store lands.
#[test]
fn s_trap_3_debugtrap_continues() {
    let mem = TestMemory::new();
    mem.add(BUF[0], vec![0; 4]);
    // s_trap 3; v_mov_b32 v1, 0x2a; v_mov_b32 v2, BUF0; v_mov_b32 v3, 0;
    // global_store_dword v[2:3], v1, off; s_endpgm (llvm-mc-19 -mcpu=gfx90a).
    let code_bytes = words(&[
        0xBF920003,
        0x7E0202FF,
        0x2A,
        0x7E0402FF,
        BUF[0] as u32,
        0x7E060280,
        0xDC708000,
        0x007F0102,
        0xBF810000,
    ]);
    let code = KernelCode {
        base_address: 0x4000,
        bytes: &code_bytes,
        entry_address: 0x4000,
    };
    let kd = hsa_core::abi::kernel_descriptor::KernelDescriptor::default();
    let st = DispatchState::one_dimensional(1, 1, 0, 0);
    run_dispatch(&code, &kd, Gfx9Target::Gfx90a, &st, &mem).unwrap();
    assert_eq!(as_u32(&mem.get(BUF[0], 4)), [42]);
}

// --- kernels_more.cl ---

/// gfx940 and gfx941 run on the gfx942 model (their stores carry `sc0 sc1`).
const MORE: [&str; 5] = [
    "more/kernels_more-gfx900-v5.hsaco",
    "more/kernels_more-gfx90a-v5.hsaco",
    "more/kernels_more-gfx940-v5.hsaco",
    "more/kernels_more-gfx941-v5.hsaco",
    "more/kernels_more-gfx942-v5.hsaco",
];

#[test]
fn branchy_and_loop_sum_match_host() {
    let n = size(1000, 200);
    let grid = size(1024, 256);
    let a: Vec<u32> = input(grid, 5).iter().map(|v| v % 2000).collect();
    for &f in under_test(&MORE) {
        let mem = TestMemory::new();
        mem.add(BUF[0], words(&a));
        mem.add(BUF[1], vec![0xEE; grid as usize * 4]);
        let mut ka = ptrs(&BUF[..2]);
        ka.extend_from_slice(&1000i32.to_le_bytes());
        ka.extend_from_slice(&n.to_le_bytes());
        dispatch(f, "branchy", &ka, grid, 256, 256, &mem).unwrap();
        let got = as_u32(&mem.get(BUF[1], grid as usize * 4));
        for i in 0..grid as usize {
            let v = a[i] as i32;
            let want = if i as u32 >= n {
                0xEEEE_EEEE
            } else if v > 1000 {
                (v * 3) as u32
            } else {
                (1000 - v) as u32
            };
            assert_eq!(got[i], want, "{f} branchy[{i}]");
        }

        let mem = TestMemory::new();
        mem.add(BUF[0], words(&a));
        mem.add(BUF[1], vec![0; grid as usize * 4]);
        let mut ka = ptrs(&BUF[..2]);
        ka.extend_from_slice(&n.to_le_bytes());
        ka.extend_from_slice(&[0; 4]);
        dispatch(f, "loop_sum", &ka, grid, 128, 128, &mem).unwrap();
        let got = as_u32(&mem.get(BUF[1], grid as usize * 4));
        for i in 0..n as usize {
            let v = a[i] as i32;
            let mut acc = 0i32;
            for j in 0..(i as u32 % 13) {
                acc = acc.wrapping_add((v ^ j as i32).wrapping_add((j * j) as i32));
            }
            assert_eq!(got[i] as i32, acc, "{f} loop_sum[{i}]");
        }
    }
}

#[test]
fn saxpy_clamp_and_mixed_args_match_host() {
    let n = size(900, 200);
    let grid = size(1024, 256);
    let x: Vec<f32> = (0..grid).map(|i| (i as f32) * 0.25 - 100.0).collect();
    let y: Vec<f32> = (0..grid).map(|i| 50.0 - (i as f32) * 0.125).collect();
    for &f in under_test(&MORE) {
        let mem = TestMemory::new();
        mem.add(BUF[0], x.iter().flat_map(|v| v.to_le_bytes()).collect());
        mem.add(BUF[1], y.iter().flat_map(|v| v.to_le_bytes()).collect());
        let (a, lo, hi) = (1.5f32, -60.0f32, 80.0f32);
        let mut ka = a.to_le_bytes().to_vec();
        ka.extend_from_slice(&[0; 4]);
        ka.extend_from_slice(&ptrs(&BUF[..2]));
        ka.extend_from_slice(&lo.to_le_bytes());
        ka.extend_from_slice(&hi.to_le_bytes());
        ka.extend_from_slice(&n.to_le_bytes());
        ka.extend_from_slice(&[0; 4]);
        dispatch(f, "saxpy_clamp", &ka, grid, 256, 256, &mem).unwrap();
        let got = mem.get(BUF[1], grid as usize * 4);
        for i in 0..grid as usize {
            let g = f32::from_le_bytes(got[i * 4..i * 4 + 4].try_into().unwrap());
            let want = if (i as u32) < n {
                let r = a.mul_add(x[i], y[i]).max(lo).min(hi);
                r + i as f32 * 0.5
            } else {
                y[i]
            };
            assert_eq!(g, want, "{f} saxpy_clamp[{i}]");
        }

        // mixed_args(long* out, long a, uint b, short c, char d, float f, uint n)
        let mem = TestMemory::new();
        mem.add(BUF[0], vec![0; grid as usize * 8]);
        let (a, b, c, d, fl) = (-123_456_789_012i64, 0xF000_1234u32, -1234i16, -7i8, -3.3f32);
        let mut ka = ptrs(&BUF[..1]);
        ka.extend_from_slice(&a.to_le_bytes());
        ka.extend_from_slice(&b.to_le_bytes());
        ka.extend_from_slice(&c.to_le_bytes());
        ka.push(d as u8);
        ka.push(0);
        ka.extend_from_slice(&fl.to_le_bytes());
        ka.extend_from_slice(&n.to_le_bytes());
        dispatch(f, "mixed_args", &ka, grid, 64, 64, &mem).unwrap();
        let got = mem.get(BUF[0], grid as usize * 8);
        for i in 0..grid as usize {
            let g = i64::from_le_bytes(got[i * 8..i * 8 + 8].try_into().unwrap());
            let want = if (i as u32) < n {
                a.wrapping_mul(i as i64) + (b >> (i & 7)) as i64 + c as i64 - d as i64
                    + (fl * 4.0) as i64
            } else {
                0
            };
            assert_eq!(g, want, "{f} mixed_args[{i}]");
        }
    }
}

#[test]
fn group_sum_reduces_with_barriers() {
    let grid = size(1000, 300); // last group partial
    let a: Vec<u32> = input(grid, 11).iter().map(|v| v & 0xFFFF).collect();
    for &f in under_test(&MORE) {
        let mem = TestMemory::new();
        mem.add(BUF[0], words(&a));
        mem.add(BUF[1], vec![0; 16]);
        dispatch(f, "group_sum", &ptrs(&BUF[..2]), grid, 256, 256, &mem).unwrap();
        let got = as_u32(&mem.get(BUF[1], 16));
        // A partial last group: lanes >= 232 never write part[], lsz is the full 256, so the
        // sum covers part[0..256] where the unwritten slots hold 0.
        let want: Vec<u32> = a
            .chunks(256)
            .map(|c| c.iter().fold(0u32, |s, v| s.wrapping_add(*v)))
            .collect();
        // One sum per group; the buffer holds 4 (fewer groups under miri leave zeros).
        assert_eq!(got[..want.len()], want[..], "{f}");
        assert!(got[want.len()..].iter().all(|&v| v == 0), "{f}: {got:?}");
    }
}

/// A kernel with a dynamically indexed private array, as clang-19 -O1 compiles it (private.cl):
/// scratch through the private segment buffer V# and the wave's scratch offset (gfx900,
/// gfx90a: `buffer_store_dword ... offen`) or architected flat scratch (gfx942:
/// `scratch_store_dword`), with the private segment size from the descriptor. Every lane and
/// every wave must see only its own array.
#[test]
fn private_array_kernel_uses_scratch() {
    let n = size(1000, 130);
    let grid = size(1024, 192);
    // `in` has 1024 elements whatever the grid.
    let a: Vec<u32> = input(1024, 9).iter().map(|v| v % 100_000).collect();
    for f in [
        "isa/private-gfx900-v5.hsaco",
        "isa/private-gfx90a-v5.hsaco",
        "isa/private-gfx942-v5.hsaco",
    ] {
        let mem = TestMemory::new();
        mem.add(BUF[0], words(&a));
        mem.add(BUF[1], vec![0xEE; grid as usize * 4]);
        let mut ka = ptrs(&BUF[..2]);
        ka.extend_from_slice(&n.to_le_bytes());
        ka.extend_from_slice(&[0; 4]);
        dispatch(f, "private_array", &ka, grid, 128, 128, &mem).unwrap();
        let got = as_u32(&mem.get(BUF[1], grid as usize * 4));
        for i in 0..grid as usize {
            let want = if i as u32 >= n {
                0xEEEE_EEEE
            } else {
                let tmp = |j: usize| (a[(i + j) % 1024] as i32).wrapping_mul(j as i32);
                tmp(a[i] as usize % 64).wrapping_add(tmp(i * 7 % 64)) as u32
            };
            assert_eq!(got[i], want, "{f} private_array[{i}]");
        }
    }
}

/// The same kernel on a queue whose `amd_queue_t` scratch fields are 0 (no runtime set its
/// scratch up): the CP does not launch it but makes its scratch request — the interpreter's
/// `OUT_OF_RESOURCES` naming the bytes per wave it needs and the 0 the queue has — and no
/// lane writes anything.
#[test]
fn private_array_kernel_without_queue_scratch_is_a_scratch_request() {
    for f in [
        "isa/private-gfx900-v5.hsaco",
        "isa/private-gfx90a-v5.hsaco",
        "isa/private-gfx942-v5.hsaco",
    ] {
        let mem = TestMemory::new();
        mem.add(BUF[0], vec![0; 4096]);
        mem.add(BUF[1], vec![0xEE; 256 * 4]);
        let mut ka = ptrs(&BUF[..2]);
        ka.extend_from_slice(&256u32.to_le_bytes());
        ka.extend_from_slice(&[0; 4]);
        let e = dispatch_on(f, "private_array", &ka, 256, 128, 128, &mem, false).unwrap_err();
        assert_eq!(e.status(), Status::OutOfResources, "{f}: {e:?}");
        assert!(
            e.detail().contains("gives 0 bytes per slot in 0 slots"),
            "{f}: {e:?}"
        );
        assert!(mem.get(BUF[1], 1024).iter().all(|&b| b == 0xEE), "{f}");
    }
}
