//! B7 (issue 19): the gfx9 interpreter's speed on one host thread, each kernel next to the
//! same computation compiled for the host and run on one thread:
//!
//! - `vector_add` (memory-bound; `kernels-gfx90a-v5.hsaco`): `c[i] = a[i] + b[i]` over
//!   65,536 u32.
//! - `nbody_accel` (compute-bound; `b7/b7-gfx90a-v5.hsaco` from `b7/b7.cl`): one O(n^2)
//!   n-body acceleration step over 1,024 bodies.
//! - `lds_reduce` (`b7.cl`): per 256-work-item group, a strided sum then a tree reduction in
//!   LDS with barriers, over 1,048,576 u32 on a grid of 16,384.
//!
//! Each interpreter iteration is one whole dispatch through
//! [`run_workgroups`](hsa_gfx9::exec::run_workgroups) over a flat memory on the bench's
//! thread (no emulated device, no queue). Setup checks its results against the host's. The
//! lane-instructions of one dispatch (active lanes summed over the instructions executed) go
//! to `<target>/criterion/hsa_b7.json`, from which `scripts/bench_report.py --b7` makes
//! lane-instructions per second.
//!
//! Run: `cargo bench -p hsa-emu --bench b7_interpreter`.
#![allow(missing_docs)] // criterion_group! makes an undocumented pub fn

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use hsa_core::abi::kernel_descriptor::KernelDescriptor;
use hsa_core::loader::code_object::{AlignedBytes, CodeObject};
use hsa_gfx9::exec::{run_workgroups, DispatchState, ExecStats, KernelCode};
use hsa_gfx9::Gfx9Target;

/// The flat device memory of the interpreter's tests (one region lookup per
/// wave-instruction when every lane's access is in one region, as the emulated device's
/// memory does).
use hsa_test_support::FlatMemory as Memory;

const LOAD_BASE: u64 = 0x7000_0000_0000;
const PACKET: u64 = 0x1000;
const KERNARG: u64 = 0x2000;
const BUF: [u64; 3] = [0x100_0000, 0x200_0000, 0x300_0000];

/// A kernel's code and descriptor from a code object in testdata/codeobjects.
struct Kernel {
    code: Vec<u8>,
    base: u64,
    descriptor: KernelDescriptor,
}

fn load(file: &str, name: &str) -> Kernel {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/codeobjects")
        .join(file);
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let aligned = AlignedBytes::new(&data);
    let co = CodeObject::parse(aligned.as_bytes()).expect("code object");
    let k = co.kernel(name).expect("kernel");
    let code = co.kernel_code(&k).expect("kernel code");
    Kernel {
        code: code.code.to_vec(),
        base: LOAD_BASE + code.vaddr,
        descriptor: k.descriptor,
    }
}

/// Writes the AQL dispatch packet (work-group size x at byte 4, grid size x at 12) and the
/// kernarg segment, and returns the dispatch state.
fn setup(mem: &Memory, k: &Kernel, grid: u32, wg: u16, kernarg: &[u8]) -> DispatchState {
    let mut pkt = vec![0u8; 64];
    pkt[4..6].copy_from_slice(&wg.to_le_bytes());
    pkt[6..8].copy_from_slice(&1u16.to_le_bytes());
    pkt[8..10].copy_from_slice(&1u16.to_le_bytes());
    pkt[12..16].copy_from_slice(&grid.to_le_bytes());
    pkt[16..20].copy_from_slice(&1u32.to_le_bytes());
    pkt[20..24].copy_from_slice(&1u32.to_le_bytes());
    mem.add(PACKET, pkt);
    let mut args = kernarg.to_vec();
    args.resize(256, 0);
    mem.add(KERNARG, args);
    let mut st = DispatchState::one_dimensional(grid, wg, PACKET, KERNARG);
    st.group_segment_size = k.descriptor.group_segment_fixed_size;
    st.max_instructions_per_wave = u64::MAX;
    st
}

/// One dispatch of `k` on this thread; what it executed.
fn dispatch(k: &Kernel, st: &DispatchState, mem: &Memory) -> ExecStats {
    let code = KernelCode {
        base_address: k.base,
        bytes: &k.code,
        entry_address: k.base,
    };
    let mut stats = ExecStats::default();
    let groups = hsa_gfx9::exec::workgroup_total(st);
    run_workgroups(
        &code,
        &k.descriptor,
        Gfx9Target::Gfx90a,
        st,
        mem,
        0..groups,
        &mut stats,
    )
    .expect("dispatch");
    stats
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn args(ptrs: &[u64], tail: &[u32]) -> Vec<u8> {
    let mut a: Vec<u8> = ptrs.iter().flat_map(|p| p.to_le_bytes()).collect();
    a.extend(tail.iter().flat_map(|x| x.to_le_bytes()));
    a
}

/// Deterministic pseudo-random u32s (xorshift).
fn randoms(n: usize, mut s: u64) -> Vec<u32> {
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 16) as u32
        })
        .collect()
}

/// Lane-instructions per dispatch, by kernel, for bench_report.py.
fn record(lanes: &[(&str, u64)]) {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("criterion");
    let _ = std::fs::create_dir_all(&dir);
    let body: Vec<String> = lanes.iter().map(|(k, n)| format!("\"{k}\": {n}")).collect();
    let _ = std::fs::write(
        dir.join("hsa_b7.json"),
        format!("{{{}}}\n", body.join(", ")),
    );
}

const ADD_N: usize = 65_536;
const BODIES: usize = 1024;
const EPS2: f32 = 0.01;
const REDUCE_N: usize = 1 << 20;
const REDUCE_GRID: u32 = 16_384;

fn host_vector_add(a: &[u32], b: &[u32], c: &mut [u32]) {
    for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
        *c = a.wrapping_add(*b);
    }
}

fn host_nbody(pos: &[[f32; 4]], acc: &mut [[f32; 4]]) {
    for (p, out) in pos.iter().zip(acc.iter_mut()) {
        let (mut ax, mut ay, mut az) = (0f32, 0f32, 0f32);
        for q in pos {
            let (dx, dy, dz) = (q[0] - p[0], q[1] - p[1], q[2] - p[2]);
            let r2 = dx * dx + dy * dy + dz * dz + EPS2;
            let s = q[3] / (r2 * r2.sqrt());
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        *out = [ax, ay, az, 0.0];
    }
}

fn host_reduce(input: &[u32], out: &mut [u32]) {
    out.fill(0);
    let stride = REDUCE_GRID as usize;
    for (k, v) in input.iter().enumerate() {
        let g = (k % stride) / 256;
        out[g] = out[g].wrapping_add(*v);
    }
}

fn b7(c: &mut Criterion) {
    let mut lanes = Vec::new();
    let mut g = c.benchmark_group("B7_interpreter");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));

    // vector_add.
    let k = load("kernels-gfx90a-v5.hsaco", "vector_add");
    let a = randoms(ADD_N, 1);
    let b = randoms(ADD_N, 2);
    let mem = Memory::new();
    mem.add(BUF[0], u32s(&a));
    mem.add(BUF[1], u32s(&b));
    mem.add(BUF[2], vec![0; ADD_N * 4]);
    let st = setup(&mem, &k, ADD_N as u32, 256, &args(&BUF, &[]));
    let stats = dispatch(&k, &st, &mem);
    let mut want = vec![0u32; ADD_N];
    host_vector_add(&a, &b, &mut want);
    assert_eq!(mem.get(BUF[2], ADD_N * 4), u32s(&want), "vector_add result");
    lanes.push(("vector_add", stats.lane_instructions));
    g.bench_function("vector_add_interpreter", |bch| {
        bch.iter(|| dispatch(&k, &st, &mem))
    });
    g.bench_function("vector_add_host", |bch| {
        bch.iter(|| host_vector_add(black_box(&a), black_box(&b), &mut want))
    });

    // nbody_accel.
    let k = load("b7/b7-gfx90a-v5.hsaco", "nbody_accel");
    let r = randoms(BODIES * 4, 3);
    let pos: Vec<[f32; 4]> = r
        .chunks(4)
        .map(|c| {
            let f = |x: u32| (x % 2000) as f32 / 100.0 - 10.0;
            [f(c[0]), f(c[1]), f(c[2]), 1.0 + (c[3] % 100) as f32 / 100.0]
        })
        .collect();
    let flat: Vec<f32> = pos.iter().flatten().copied().collect();
    let mem = Memory::new();
    mem.add(BUF[0], f32s(&flat));
    mem.add(BUF[1], vec![0; BODIES * 16]);
    let st = setup(
        &mem,
        &k,
        BODIES as u32,
        256,
        &args(&BUF[..2], &[BODIES as u32, EPS2.to_bits()]),
    );
    let stats = dispatch(&k, &st, &mem);
    let mut host = vec![[0f32; 4]; BODIES];
    host_nbody(&pos, &mut host);
    let got = mem.get(BUF[1], BODIES * 16);
    for (i, (h, gpu)) in host.iter().zip(got.chunks(16)).enumerate() {
        for (d, h) in h.iter().enumerate() {
            let v = f32::from_le_bytes(gpu[d * 4..d * 4 + 4].try_into().unwrap());
            assert!(
                (v - h).abs() <= 1e-3 * h.abs().max(1.0),
                "nbody body {i} component {d}: interpreter {v}, host {h}"
            );
        }
    }
    lanes.push(("nbody_accel", stats.lane_instructions));
    g.bench_function("nbody_accel_interpreter", |bch| {
        bch.iter(|| dispatch(&k, &st, &mem))
    });
    g.bench_function("nbody_accel_host", |bch| {
        bch.iter(|| host_nbody(black_box(&pos), &mut host))
    });

    // lds_reduce.
    let k = load("b7/b7-gfx90a-v5.hsaco", "lds_reduce");
    let input = randoms(REDUCE_N, 4);
    let groups = REDUCE_GRID as usize / 256;
    let mem = Memory::new();
    mem.add(BUF[0], u32s(&input));
    mem.add(BUF[1], vec![0; groups * 4]);
    let st = setup(
        &mem,
        &k,
        REDUCE_GRID,
        256,
        &args(&BUF[..2], &[REDUCE_N as u32]),
    );
    let stats = dispatch(&k, &st, &mem);
    let mut sums = vec![0u32; groups];
    host_reduce(&input, &mut sums);
    assert_eq!(
        mem.get(BUF[1], groups * 4),
        u32s(&sums),
        "lds_reduce result"
    );
    lanes.push(("lds_reduce", stats.lane_instructions));
    g.bench_function("lds_reduce_interpreter", |bch| {
        bch.iter(|| dispatch(&k, &st, &mem))
    });
    g.bench_function("lds_reduce_host", |bch| {
        bch.iter(|| host_reduce(black_box(&input), &mut sums))
    });
    g.finish();
    record(&lanes);
}

criterion_group!(benches, b7);
criterion_main!(benches);
