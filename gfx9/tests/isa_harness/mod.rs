//! The harness of the gfx9 instruction tests (`gfx9_isa.rs`, `gfx9_ops.rs`, `gfx9_sop.rs`,
//! `gfx9_vcov.rs`): the assembled code objects of `testdata/codeobjects/isa` (gen.py,
//! gen_ops.py, gen_sop.py, gen_vcov.py), a flat test memory, and one dispatch of one kernel
//! over pointer arguments.
// Each test crate that includes this module uses a different part of it.
#![allow(dead_code)]

use std::cell::RefCell;
use std::path::PathBuf;

use hsa_core::abi::kernel_descriptor::KernelDescriptor;
use hsa_core::abi::queue::AmdQueue;
use hsa_core::queue::scratch::ScratchLayout;
use hsa_core::Result;
use hsa_gfx9::exec::{run_dispatch, DispatchState, KernelCode, QueueScratch};

/// Device address of the queue scratch a dispatch gets.
const SCRATCH: u64 = 0x5000_0000_0000;
use hsa_gfx9::hwid::WaveLaunch;
use hsa_gfx9::Gfx9Target;
use object::{Object, ObjectSection, ObjectSymbol};
use zerocopy::FromBytes;

/// The flat test memory of the interpreter's tests (8-aligned bases).
pub use hsa_test_support::FlatMemory as TestMemory;

thread_local! {
    /// The data of every message interrupt a kernel on this thread raised
    /// (`s_sendmsg sendmsg(MSG_INTERRUPT)`), in order.
    pub static INTERRUPTS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
}

pub const LOAD_BASE: u64 = 0x7000_0000_0000;
pub const KERNARG: u64 = 0x2000;
/// Where pointer argument `i` points.
pub const fn buf(i: usize) -> u64 {
    0x10_0000 * (i as u64 + 1)
}

pub const CPUS: [(&str, Gfx9Target); 5] = [
    ("gfx900", Gfx9Target::Gfx900),
    ("gfx906", Gfx9Target::Gfx906),
    ("gfx908", Gfx9Target::Gfx908),
    ("gfx90a", Gfx9Target::Gfx90a),
    ("gfx942", Gfx9Target::Gfx942),
];

/// One assembled code object of `isa/`.
pub struct Isa {
    /// The code object's bytes.
    pub data: Vec<u8>,
    /// The interpreter model it runs on.
    pub target: Gfx9Target,
}

impl Isa {
    pub fn load(family: &str, cpu: &str, target: Gfx9Target) -> Isa {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/codeobjects/isa")
            .join(format!("{family}-{cpu}.hsaco"));
        Isa {
            data: std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}")),
            target,
        }
    }

    /// The kernels of the file (symbols with a `.kd` descriptor).
    pub fn kernels(&self) -> Vec<String> {
        let elf = object::File::parse(&*self.data).unwrap();
        let mut v: Vec<String> = elf
            .symbols()
            .filter_map(|s| s.name().ok()?.strip_suffix(".kd").map(str::to_string))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Runs `kernel` over `items` work-items (work-groups of 64) with pointer arguments to
    /// `bufs` (placed at [`buf`]`(i)`), and returns the buffers afterwards.
    pub fn run(&self, kernel: &str, items: u32, bufs: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
        self.run_with(kernel, items, bufs, &[])
    }

    /// [`Isa::run`] with kernarg dwords replaced: `(byte offset, value)` pairs, for kernels
    /// whose arguments are not all pointers.
    pub fn run_with(
        &self,
        kernel: &str,
        items: u32,
        bufs: &[Vec<u8>],
        kernarg_dwords: &[(usize, u32)],
    ) -> Result<Vec<Vec<u8>>> {
        self.run_launch(kernel, items, bufs, kernarg_dwords, WaveLaunch::SINGLE_CU)
    }

    /// [`Isa::run`] with work-groups of `group` work-items instead of 64.
    pub fn run_group_size(
        &self,
        kernel: &str,
        items: u32,
        group: u16,
        bufs: &[Vec<u8>],
    ) -> Result<Vec<Vec<u8>>> {
        self.run_full(kernel, items, group, bufs, &[], WaveLaunch::SINGLE_CU, 0)
    }

    /// [`Isa::run_with`] on a queue described by `launch` (its enabled CUs and ids).
    pub fn run_launch(
        &self,
        kernel: &str,
        items: u32,
        bufs: &[Vec<u8>],
        kernarg_dwords: &[(usize, u32)],
        launch: WaveLaunch,
    ) -> Result<Vec<Vec<u8>>> {
        self.run_full(kernel, items, 64, bufs, kernarg_dwords, launch, 0)
    }

    /// [`Isa::run`] on a GPU whose `GB_ADDR_CONFIG` is `gb_addr_config` (how swizzled
    /// images are addressed).
    pub fn run_addr_config(
        &self,
        kernel: &str,
        items: u32,
        bufs: &[Vec<u8>],
        gb_addr_config: u32,
    ) -> Result<Vec<Vec<u8>>> {
        self.run_full(
            kernel,
            items,
            64,
            bufs,
            &[],
            WaveLaunch::SINGLE_CU,
            gb_addr_config,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn run_full(
        &self,
        kernel: &str,
        items: u32,
        group: u16,
        bufs: &[Vec<u8>],
        kernarg_dwords: &[(usize, u32)],
        launch: WaveLaunch,
        gb_addr_config: u32,
    ) -> Result<Vec<Vec<u8>>> {
        let elf = object::File::parse(&*self.data).unwrap();
        let kd_sym = elf
            .symbols()
            .find(|s| s.name() == Ok(&format!("{kernel}.kd")))
            .unwrap_or_else(|| panic!("no kernel {kernel}"));
        let rodata = elf
            .section_by_index(kd_sym.section_index().unwrap())
            .unwrap();
        let off = (kd_sym.address() - rodata.address()) as usize;
        let kd = KernelDescriptor::read_from_bytes(&rodata.data().unwrap()[off..off + 64]).unwrap();
        let text = elf.section_by_name(".text").unwrap();
        let code = KernelCode {
            base_address: LOAD_BASE + text.address(),
            bytes: text.data().unwrap(),
            entry_address: (LOAD_BASE + kd_sym.address())
                .wrapping_add(kd.kernel_code_entry_byte_offset as u64),
        };
        let mem = TestMemory::new();
        let mut args = Vec::new();
        for i in 0..8 {
            args.extend_from_slice(&buf(i).to_le_bytes());
        }
        for &(off, v) in kernarg_dwords {
            args[off..off + 4].copy_from_slice(&v.to_le_bytes());
        }
        mem.add(KERNARG, args);
        for (i, b) in bufs.iter().enumerate() {
            mem.add(buf(i), b.clone());
        }
        let mut st = DispatchState::one_dimensional(items, group, 0, KERNARG);
        st.group_segment_size = kd.group_segment_fixed_size;
        st.private_segment_size = kd.private_segment_fixed_size;
        // The queue's scratch as hsa-core lays it out (one compute unit with a slot per wave
        // of the group), read back from its amd_queue_t as the CP does.
        let waves = u32::from(group).div_ceil(64);
        if let Some(layout) = ScratchLayout::new(st.private_segment_size, 1, waves)? {
            let mut q = AmdQueue::default();
            layout.fill(SCRATCH, &mut q);
            mem.add(SCRATCH, vec![0; layout.size_bytes as usize]);
            let mut b = [0u8; 256];
            b.copy_from_slice(zerocopy::IntoBytes::as_bytes(&q));
            st.scratch = QueueScratch::from_amd_queue(&b);
        }
        st.launch = launch;
        st.gb_addr_config = gb_addr_config;
        let ran = run_dispatch(&code, &kd, self.target, &st, &mem);
        INTERRUPTS.with(|v| v.borrow_mut().extend(mem.interrupts()));
        ran?;
        Ok((0..bufs.len()).map(|i| mem.region(buf(i))).collect())
    }
}

pub fn bytes32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn bytes64(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
pub fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}
pub fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Deterministic pseudo-random words (xorshift64*), the inputs of the instruction tests.
pub fn prng(seed: u64) -> impl FnMut() -> u32 {
    let mut s = seed | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}

/// `x` with an f32 denormal flushed to a zero of its sign.
pub fn flush32(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}
