use super::cache::{CACHE_PAGE_BYTES, CACHE_PAGE_TAIL_BYTES};
use super::*;

/// Runs `inst` at `pc` through the general interpreter (not the fast path) over `memory`
/// and `lds`: `None` to go on at the next instruction, `Some(Some(target))` for a jump,
/// `Some(None)` at the end (a barrier counts as going on), or its error.
pub(crate) fn general_step(
    w: &mut Wave,
    inst: &Instruction,
    pc: u64,
    memory: &dyn DeviceMemory,
    lds: &mut [u8],
) -> Result<Option<Option<u64>>> {
    let code = KernelCode {
        base_address: pc,
        bytes: &[],
        entry_address: pc,
    };
    let never = AtomicBool::new(false);
    let mut ctx = Ctx {
        code: code.into(),
        target: inst.target,
        memory,
        lds,
        scratch: QueueScratch::default(),
        instructions: 0,
        lane_instructions: 0,
        preempt: &never,
        cu: CuId::default(),
        gb_addr_config: 0,
        gws: Gws::new(),
        vgpr_limit: usize::MAX,
    };
    Ok(
        match execute(&mut ctx, w, inst, pc + u64::from(inst.size))? {
            Flow::Next | Flow::Barrier | Flow::Wait => None,
            Flow::Jump(t) => Some(Some(t)),
            Flow::End => Some(None),
        },
    )
}

#[test]
fn decode_cache_decodes_once_and_never_serves_other_code() {
    // s_nop 0; s_endpgm (Vega ISA SOPP opcodes 0 and 1).
    let a = [0x00, 0x00, 0x80, 0xBF, 0x00, 0x00, 0x81, 0xBF];
    let code = KernelCode {
        base_address: 0x1000,
        bytes: &a,
        entry_address: 0x1000,
    };
    let mut cache = DecodeCache::new();
    let t = Gfx9Target::Gfx90a;
    cache.begin_dispatch();
    cache.bind(t);
    assert_eq!(
        cache
            .get(&(&code).into(), &NoMemory, t, 0x1000)
            .unwrap()
            .0
            .name(),
        "s_nop"
    );
    assert_eq!(
        cache
            .get(&(&code).into(), &NoMemory, t, 0x1004)
            .unwrap()
            .0
            .name(),
        "s_endpgm"
    );
    assert_eq!(
        cache
            .get(&(&code).into(), &NoMemory, t, 0x1000)
            .unwrap()
            .0
            .name(),
        "s_nop"
    );
    assert_eq!(cache.len(), 2, "each instruction decoded once");
    assert_eq!(cache.decoded(), 2);
    let e = cache
        .get(&(&code).into(), &NoMemory, t, 0x1008)
        .unwrap_err();
    assert_eq!(e.status(), Status::IllegalInstruction);
    // The same code in the next call: served as decoded.
    cache.begin_dispatch();
    cache.bind(t);
    assert_eq!(
        cache
            .get(&(&code).into(), &NoMemory, t, 0x1000)
            .unwrap()
            .0
            .name(),
        "s_nop"
    );
    assert_eq!(cache.decoded(), 2);
    // Other code loaded at the same address: the page is decoded again.
    let b = [0x00, 0x00, 0x81, 0xBF];
    let other = KernelCode { bytes: &b, ..code };
    cache.begin_dispatch();
    cache.bind(t);
    assert_eq!(
        cache
            .get(&(&other).into(), &NoMemory, t, 0x1000)
            .unwrap()
            .0
            .name(),
        "s_endpgm"
    );
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.invalidated_pages(), 1);
    // Another target empties it.
    cache.bind(Gfx9Target::Gfx900);
    assert!(cache.is_empty());
}

/// An instruction that starts on a page's last dword and ends on the next page: a change
/// of its second dword alone (on the next page) is seen.
#[test]
fn decode_cache_sees_a_change_past_the_page_end() {
    // s_mov_b32 s0, literal (SOP1 0xBE80_00FF + literal), the literal in the next page.
    let mut bytes = vec![0u8; 8];
    bytes[..4].copy_from_slice(&0xBE80_00FFu32.to_le_bytes());
    bytes[4..].copy_from_slice(&7u32.to_le_bytes());
    let code = KernelCode {
        base_address: 0x1FFC,
        bytes: &bytes,
        entry_address: 0x1FFC,
    };
    let t = Gfx9Target::Gfx90a;
    let mut cache = DecodeCache::new();
    cache.begin_dispatch();
    cache.bind(t);
    let first = cache.get(&(&code).into(), &NoMemory, t, 0x1FFC).unwrap().0;
    assert_eq!(first.size, 8);
    assert_eq!(first.src[0], Operand::Literal(7));
    bytes[4..].copy_from_slice(&9u32.to_le_bytes());
    let code = KernelCode {
        base_address: 0x1FFC,
        bytes: &bytes,
        entry_address: 0x1FFC,
    };
    cache.begin_dispatch();
    cache.bind(t);
    assert_eq!(
        cache
            .get(&(&code).into(), &NoMemory, t, 0x1FFC)
            .unwrap()
            .0
            .src[0],
        Operand::Literal(9)
    );
    assert_eq!(cache.decoded(), 2);
}

/// Device memory over `bytes` from `base` that counts the bytes read.
struct CountingMemory {
    base: u64,
    bytes: core::cell::RefCell<Vec<u8>>,
    read: core::cell::Cell<u64>,
}

impl DeviceMemory for CountingMemory {
    fn clock_counter(&self) -> u64 {
        0
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let b = self.bytes.borrow();
        let src = usize::try_from(addr.wrapping_sub(self.base))
            .ok()
            .and_then(|o| b.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| error!(Status::MemoryFault, "read at {addr:#x}"))?;
        buf.copy_from_slice(src);
        self.read.set(self.read.get() + buf.len() as u64);
        Ok(())
    }
    fn write(&self, addr: u64, _data: &[u8]) -> Result<()> {
        bail!(Status::MemoryFault, "write at {addr:#x}")
    }
}

/// Device code is read through the memory a page (4 KiB and the 12 bytes past it) at a
/// time, only the pages reached, once per dispatch: not again within the dispatch, again
/// (and checked) in the next one, where a change past a page's end is seen; a pc outside
/// the code, an instruction cut by the code's end and a page the memory cannot read are
/// the errors host bytes give, or a memory fault naming the address.
#[test]
fn decode_cache_reads_device_code_a_page_once_per_dispatch() {
    const BASE: u64 = 0x10_0000;
    let mut bytes = vec![0u8; 3 * CACHE_PAGE_BYTES as usize];
    // s_nop 0; s_endpgm at the start; s_mov_b32 s0, 7 (literal on the next page) on the
    // second page's last dword.
    bytes[..8].copy_from_slice(&[0x00, 0x00, 0x80, 0xBF, 0x00, 0x00, 0x81, 0xBF]);
    bytes[0x1FFC..0x2000].copy_from_slice(&0xBE80_00FFu32.to_le_bytes());
    bytes[0x2000..0x2004].copy_from_slice(&7u32.to_le_bytes());
    let mem = CountingMemory {
        base: BASE,
        bytes: core::cell::RefCell::new(bytes),
        read: core::cell::Cell::new(0),
    };
    let code: CodeSource<'_> = DeviceCode {
        base_address: BASE,
        len: 3 * CACHE_PAGE_BYTES,
        entry_address: BASE,
    }
    .into();
    let t = Gfx9Target::Gfx90a;
    let mut cache = DecodeCache::new();
    let window = CACHE_PAGE_BYTES + CACHE_PAGE_TAIL_BYTES;
    cache.begin_dispatch();
    cache.bind(t);
    assert_eq!(cache.get(&code, &mem, t, BASE).unwrap().0.name(), "s_nop");
    assert_eq!(mem.read.get(), window);
    assert_eq!(
        cache.get(&code, &mem, t, BASE + 4).unwrap().0.name(),
        "s_endpgm"
    );
    let lit = |cache: &mut DecodeCache| cache.get(&code, &mem, t, BASE + 0x1FFC).unwrap().0;
    assert_eq!(lit(&mut cache).src[0], Operand::Literal(7));
    assert_eq!(mem.read.get(), 2 * window, "the pages reached, each once");
    assert_eq!(cache.code_bytes_read(), 2 * window);
    // The next dispatch reads a page again on its first use, and decodes nothing again.
    cache.begin_dispatch();
    cache.bind(t);
    assert_eq!(cache.get(&code, &mem, t, BASE).unwrap().0.name(), "s_nop");
    assert_eq!(mem.read.get(), 3 * window);
    assert_eq!(cache.decoded(), 3);
    // The literal rewritten (on the page after the instruction's): seen by the next
    // dispatch, which decodes it again.
    mem.bytes.borrow_mut()[0x2000..0x2004].copy_from_slice(&9u32.to_le_bytes());
    cache.begin_dispatch();
    cache.bind(t);
    assert_eq!(lit(&mut cache).src[0], Operand::Literal(9));
    assert_eq!((cache.decoded(), cache.invalidated_pages()), (4, 1));
    // Within the dispatch the page is not read again.
    let read = mem.read.get();
    mem.bytes.borrow_mut()[0x2000..0x2004].copy_from_slice(&11u32.to_le_bytes());
    assert_eq!(lit(&mut cache).src[0], Operand::Literal(9));
    assert_eq!(mem.read.get(), read);

    // Errors: the same as over the same bytes in host memory.
    let host_bytes = mem.bytes.borrow().clone();
    for (len, pc) in [
        // A pc at the code's end, and far past it.
        (3 * CACHE_PAGE_BYTES, BASE + 3 * CACHE_PAGE_BYTES),
        (3 * CACHE_PAGE_BYTES, BASE + 0x10_0000),
        // A pc on the address space's last page (a branch there): no overflow.
        (3 * CACHE_PAGE_BYTES, u64::MAX - 3),
        // s_mov_b32 with its literal past the code's end.
        (0x2000, BASE + 0x1FFC),
    ] {
        let device: CodeSource<'_> = DeviceCode {
            base_address: BASE,
            len,
            entry_address: BASE,
        }
        .into();
        let host: CodeSource<'_> = KernelCode {
            base_address: BASE,
            bytes: &host_bytes[..len as usize],
            entry_address: BASE,
        }
        .into();
        let (mut dc, mut hc) = (DecodeCache::new(), DecodeCache::new());
        dc.bind(t);
        hc.bind(t);
        let d = dc.get(&device, &mem, t, pc).unwrap_err();
        let h = hc.get(&host, &NoMemory, t, pc).unwrap_err();
        assert_eq!(d.status(), Status::IllegalInstruction, "{}", d.detail());
        assert_eq!((d.status(), d.detail()), (h.status(), h.detail()));
    }
    // Code the memory does not hold: a memory fault naming the address.
    let short: CodeSource<'_> = DeviceCode {
        base_address: BASE,
        len: 4 * CACHE_PAGE_BYTES,
        entry_address: BASE,
    }
    .into();
    let mut c = DecodeCache::new();
    c.bind(t);
    let e = c
        .get(&short, &mem, t, BASE + 3 * CACHE_PAGE_BYTES)
        .unwrap_err();
    assert_eq!(e.status(), Status::MemoryFault);
    assert_eq!(
        e.detail(),
        "kernel code 0x103000..0x104000: read at 0x103000"
    );
}

/// The cache holds at most DECODE_CACHE_MAX_PAGES pages, dropping the one validated
/// longest ago.
#[test]
fn decode_cache_is_bounded() {
    // s_endpgm at the start of every page.
    let pages = DECODE_CACHE_MAX_PAGES + 3;
    let mut bytes = vec![0u8; pages * CACHE_PAGE_BYTES as usize];
    for p in 0..pages {
        let o = p * CACHE_PAGE_BYTES as usize;
        bytes[o..o + 4].copy_from_slice(&0xBF81_0000u32.to_le_bytes());
    }
    let code = KernelCode {
        base_address: 0x10_0000,
        bytes: &bytes,
        entry_address: 0x10_0000,
    };
    let t = Gfx9Target::Gfx90a;
    let mut cache = DecodeCache::new();
    for p in 0..pages as u64 {
        cache.begin_dispatch();
        cache.bind(t);
        let pc = 0x10_0000 + p * CACHE_PAGE_BYTES;
        assert_eq!(
            cache
                .get(&(&code).into(), &NoMemory, t, pc)
                .unwrap()
                .0
                .name(),
            "s_endpgm"
        );
    }
    assert_eq!(cache.pages(), DECODE_CACHE_MAX_PAGES);
    assert_eq!(cache.len(), DECODE_CACHE_MAX_PAGES);
    // The last page is still there; the first was dropped and is decoded again.
    cache.begin_dispatch();
    cache.bind(t);
    let last = 0x10_0000 + (pages as u64 - 1) * CACHE_PAGE_BYTES;
    cache.get(&(&code).into(), &NoMemory, t, last).unwrap();
    assert_eq!(cache.decoded(), pages as u64);
    cache.get(&(&code).into(), &NoMemory, t, 0x10_0000).unwrap();
    assert_eq!(cache.decoded(), pages as u64 + 1);
}

/// Counted work-item ids equal the division formula (flat = x + X*(y + Y*z)) for 1-, 2-
/// and 3-dimensional groups, from every wave of the group.
#[test]
fn workitem_ids_count_as_division() {
    for size in [
        [64, 1, 1],
        [256, 1, 1],
        [4, 3, 5],
        [7, 9, 2],
        [1, 1, 64],
        [1, 2, 40],
        [16, 16, 4],
    ] {
        let items = size[0] * size[1] * size[2];
        for first in (0..items).step_by(WAVE_SIZE) {
            let ids = workitem_ids(first, size);
            for (lane, id) in ids.iter().enumerate() {
                let f = first + lane as u32;
                if f >= items {
                    break;
                }
                let want = [f % size[0], f / size[0] % size[1], f / (size[0] * size[1])];
                assert_eq!(*id, want, "size {size:?}, flat {f}");
            }
        }
    }
}

#[test]
fn float_rounding_helpers() {
    assert_eq!(floor32(-1.5), -2.0);
    assert_eq!(floor32(1.5), 1.0);
    assert_eq!(ceil32(1.25), 2.0);
    assert_eq!(trunc32(-2.75), -2.0);
    assert_eq!(rndne32(2.5), 2.0);
    assert_eq!(rndne32(3.5), 4.0);
    assert_eq!(rndne32(-0.4).to_bits(), 0x8000_0000);
}

/// `s_buffer_atomic_add` whose offset, the signed immediate -4 (alone, or with `soe` added
/// to an SGPR holding 0), lies below the buffer: out of range, so memory is untouched
/// (`NoMemory` would fail any access), as a scalar buffer load of that offset reads 0; it
/// once overflowed adding the access size to the offset.
#[test]
fn scalar_buffer_atomic_below_the_buffer_is_out_of_range() {
    // s_buffer_atomic_add s5, s[8:11], -0x4; the same with soe (s2 offset:-0x4); and
    // s_buffer_atomic_add_x2 s[4:5], s[8:11], s2 offset:-0x4 (llvm-mc-19's words).
    for (w0, w1) in [
        (0xC10A_0144u32, 0x001F_FFFCu32),
        (0xC10A_4144, 0x041F_FFFC),
        (0xC18A_4104, 0x041F_FFFC),
    ] {
        let mut bytes = w0.to_le_bytes().to_vec();
        bytes.extend_from_slice(&w1.to_le_bytes());
        let inst = decode(&bytes, Gfx9Target::Gfx900).unwrap();
        let mut w = Wave::new(0x1000, false);
        // V#: base 0x100000, stride 0, NUM_RECORDS 64; s2 = 0; s4/s5 hold the data.
        w.sreg[8..12].copy_from_slice(&[0x10_0000, 0, 64, 0]);
        w.sreg[2] = 0;
        w.sreg[4] = 7;
        w.sreg[5] = 9;
        general_step(&mut w, &inst, 0x1000, &NoMemory, &mut [])
            .unwrap_or_else(|e| panic!("{inst}: {e}"));
    }
}

/// An `s_setreg` of HW_REG_MODE whose field covers bit 27 (GPR_IDX_EN) can turn GPR index
/// mode on: the cache then zeroes reused waves whole, as for `s_set_gpr_idx_on`; a setreg
/// of the denormal bits alone does not.
#[test]
fn setreg_of_gpr_idx_en_raises_the_vgpr_bound() {
    let t = Gfx9Target::Gfx900;
    // s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 4), 0xf; then hwreg(HW_REG_MODE), whole.
    for (w0, whole) in [(0xBA00_1901u32, false), (0xBA00_F801, true)] {
        let mut a = w0.to_le_bytes().to_vec();
        a.extend_from_slice(&0xFu32.to_le_bytes());
        let code = KernelCode {
            base_address: 0x1000,
            bytes: &a,
            entry_address: 0x1000,
        };
        let mut cache = DecodeCache::new();
        cache.begin_dispatch();
        cache.bind(t);
        cache.get(&(&code).into(), &NoMemory, t, 0x1000).unwrap();
        assert_eq!(cache.vgpr_bound == crate::wave::NUM_VGPRS, whole, "{w0:#x}");
    }
}

pub(crate) struct NoMemory;

impl DeviceMemory for NoMemory {
    fn clock_counter(&self) -> u64 {
        0
    }

    fn read(&self, addr: u64, _buf: &mut [u8]) -> Result<()> {
        bail!(Status::MemoryFault, "read at {addr:#x}")
    }
    fn write(&self, addr: u64, _data: &[u8]) -> Result<()> {
        bail!(Status::MemoryFault, "write at {addr:#x}")
    }
}

/// `s_endpgm` alone over a 200-item grid of 64-item groups: 4 groups (the last of 8
/// items), 4 waves, 4 instructions, 200 lane-instructions; split ranges add up to the
/// whole dispatch, and a range past the end runs nothing.
#[test]
fn workgroup_ranges_partition_the_dispatch_and_count() {
    let bytes = 0xBF81_0000u32.to_le_bytes();
    let code = KernelCode {
        base_address: 0x1000,
        bytes: &bytes,
        entry_address: 0x1000,
    };
    let kd = KernelDescriptor::default();
    let st = DispatchState::one_dimensional(200, 64, 0, 0);
    assert_eq!(workgroup_counts(&st), [4, 1, 1]);
    assert_eq!(workgroup_total(&st), 4);
    let mut all = ExecStats::default();
    run_workgroups(
        &code,
        &kd,
        Gfx9Target::Gfx900,
        &st,
        &NoMemory,
        0..4,
        &mut all,
    )
    .unwrap();
    assert_eq!(
        all,
        ExecStats {
            workgroups: 4,
            waves: 4,
            instructions: 4,
            lane_instructions: 200
        }
    );
    let mut parts = ExecStats::default();
    for r in [0..1, 1..3, 3..9, 9..12] {
        run_workgroups(
            &code,
            &kd,
            Gfx9Target::Gfx90a,
            &st,
            &NoMemory,
            r,
            &mut parts,
        )
        .unwrap();
    }
    assert_eq!(parts, all);
    let bad = KernelCode {
        entry_address: 0x2000,
        ..code
    };
    let mut s = ExecStats::default();
    let e =
        run_workgroups(&bad, &kd, Gfx9Target::Gfx900, &st, &NoMemory, 0..4, &mut s).unwrap_err();
    assert_eq!(e.status(), Status::IllegalInstruction);
    assert_eq!((s.workgroups, s.waves), (0, 1));
    let mut zero = st;
    zero.workgroup_size = [0, 1, 1];
    assert_eq!(
        check_dispatch(&kd, &zero).unwrap_err().status(),
        Status::InvalidArgument
    );
}

#[test]
fn perm_selects_bytes_signs_and_constants() {
    // {hi, lo} = 0x8877_6655_4433_2211: selectors 0..=7 pick bytes, 8..=11 the sign of
    // byte 1/3/5/7 (0x22, 0x44 positive; 0x66 positive; 0x88 negative), 12 zero, 13+ 0xFF.
    let (hi, lo) = (0x8877_6655, 0x4433_2211);
    assert_eq!(perm_b32(hi, lo, 0x0706_0100), 0x8877_2211);
    assert_eq!(perm_b32(hi, lo, 0x0B0A_0908), 0xFF00_0000);
    assert_eq!(perm_b32(hi, lo, 0x0C0D_FF03), 0x00FF_FF44);
}

#[test]
fn bitfield_extract() {
    // s_bfe_i64 s[4:5], s[6:7], 0x100000: sign-extend the low 16 bits.
    assert_eq!(bfe(0x8000, 0, 16, true, 64), 0xFFFF_FFFF_FFFF_8000);
    assert_eq!(bfe(0xABCD, 4, 8, false, 32), 0xBC);
    assert_eq!(bfe(0xFF, 0, 0, false, 32), 0);
}

/// An AQL dispatch's user SGPRs as the CP fills COMPUTE_USER_DATA from the kernel
/// descriptor (AMDGPUUsage's order): the queue's V# (4), dispatch ptr (2), kernarg segment
/// ptr (2), private segment size (1), then kernargs preloaded from the kernarg segment at
/// the descriptor's offset (dword 1 here) up to USER_SGPR_COUNT (12): 3 of the 4 asked for.
/// Past it, zeros; a preload the memory does not hold is a memory fault.
#[test]
fn aql_user_sgprs_follow_the_descriptor() {
    let mut kd = <KernelDescriptor as zerocopy::FromZeros>::new_zeroed();
    // ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER (0), _DISPATCH_PTR (1), _KERNARG_SEGMENT_PTR (3),
    // _PRIVATE_SEGMENT_SIZE (6); USER_SGPR_COUNT 12; preload 4 dwords from dword 1.
    kd.kernel_code_properties = 1 | 1 << 1 | 1 << 3 | 1 << 6;
    kd.compute_pgm_rsrc2 = 12 << 1;
    kd.kernarg_preload = 4 | 1 << 7;
    let mut st = DispatchState::one_dimensional(64, 64, 0x1_2345_6780, 0x9000);
    st.scratch.resource_descriptor = [0xa, 0xb, 0xc, 0xd];
    st.private_segment_size = 48;
    let kernargs: Vec<u8> = (0..8u32).flat_map(|i| (100 + i).to_le_bytes()).collect();
    let memory = CountingMemory {
        base: 0x9000,
        bytes: core::cell::RefCell::new(kernargs),
        read: core::cell::Cell::new(0),
    };
    assert_eq!(
        aql_user_sgprs(&kd, &st, &memory).unwrap(),
        [
            0xa,
            0xb,
            0xc,
            0xd,
            0x2345_6780,
            1,
            0x9000,
            0,
            48,
            101,
            102,
            103,
            0,
            0,
            0,
            0
        ]
    );
    st.kernarg_address = 0x8000;
    let e = aql_user_sgprs(&kd, &st, &memory).unwrap_err();
    assert_eq!(e.status(), Status::MemoryFault);
    assert_eq!(e.detail(), "kernarg preload: read at 0x8004");
}

/// Bytes at [`BufMemory::BASE`]; an access not wholly inside them fails naming its address.
struct BufMemory(std::cell::RefCell<Vec<u8>>);

impl BufMemory {
    const BASE: u64 = 0x20_0000;

    fn new(dwords: u32) -> BufMemory {
        let v = (0..dwords)
            .flat_map(|i| (0xA000 + i).to_le_bytes())
            .collect();
        BufMemory(std::cell::RefCell::new(v))
    }

    fn dword(&self, i: usize) -> u32 {
        let m = self.0.borrow();
        u32::from_le_bytes(m[i * 4..i * 4 + 4].try_into().unwrap())
    }
}

impl DeviceMemory for BufMemory {
    fn clock_counter(&self) -> u64 {
        0
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let m = self.0.borrow();
        let o = addr.wrapping_sub(Self::BASE) as usize;
        match m.get(o..o.wrapping_add(buf.len())) {
            Some(s) if o < m.len() => buf.copy_from_slice(s),
            _ => bail!(Status::MemoryFault, "read at {addr:#x}"),
        }
        Ok(())
    }

    fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        let mut m = self.0.borrow_mut();
        let o = addr.wrapping_sub(Self::BASE) as usize;
        let n = m.len();
        match m.get_mut(o..o.wrapping_add(data.len())) {
            Some(s) if o < n => s.copy_from_slice(data),
            _ => bail!(Status::MemoryFault, "write at {addr:#x}"),
        }
        Ok(())
    }
}

/// One MUBUF instruction (llvm-mc-19's 8 bytes for gfx90a) over a raw V# in s[8:11] (base
/// [`BufMemory::BASE`], stride 0, NUM_RECORDS `records`), `s2 = soffset`, `v0` = the lane's
/// byte offset from `voff`, all 64 lanes on.
fn raw_buffer_step(
    bytes: [u8; 8],
    mem: &BufMemory,
    records: u32,
    soffset: u32,
    voff: impl Fn(usize) -> u32,
) -> Wave {
    let inst = decode(&bytes, Gfx9Target::Gfx90a).unwrap();
    let mut w = Wave::new(0x1000, false);
    w.sreg[8..12].copy_from_slice(&[BufMemory::BASE as u32, 0, records, 0]);
    w.sreg[2] = soffset;
    w.set_exec(u64::MAX);
    for lane in 0..WAVE_SIZE {
        w.set_v(0, lane, voff(lane));
        for k in 0..4 {
            w.set_v(4 + k, lane, 0xDEAD_0000 + lane as u32 * 4 + k as u32);
        }
    }
    general_step(&mut w, &inst, 0x1000, mem, &mut []).unwrap_or_else(|e| panic!("{inst}: {e}"));
    w
}

/// A raw buffer's range check counts the SGPR offset: a lane is out of range when
/// `soffset + vgpr offset + 4 > NUM_RECORDS` and reads 0, though its address lies in memory.
/// Tensile's GEMM kernels step through K with the SGPR offset and need the rows past the
/// matrix to read 0 (rocBLAS 7.2.4's `quick_gemm_64_1_4_5_8_f32_r_NN` read its guard NaNs
/// here when only the VGPR offset was checked).
#[test]
fn raw_buffer_range_check_counts_the_sgpr_offset() {
    // buffer_load_dword v1, v0, s[8:11], s2 offen
    let load = [0x00, 0x10, 0x50, 0xE0, 0x00, 0x01, 0x02, 0x02];
    let mem = BufMemory::new(64);
    let w = raw_buffer_step(load, &mem, 64, 16, |lane| lane as u32 * 4 % 128);
    for lane in 0..WAVE_SIZE {
        let at = 16 + lane as u32 * 4 % 128;
        let want = if at + 4 <= 64 { 0xA000 + at / 4 } else { 0 };
        assert_eq!(w.v(1, lane), want, "lane {lane} (byte {at})");
    }
}

/// `buffer_load/store_dwordx4` on a raw buffer are range-checked per dword (Vega ISA §8.1.5:
/// "Load/store-Dword-x{2,3,4} range-check per component"): a lane whose 16 bytes cross
/// NUM_RECORDS moves its leading dwords and reads 0 for (or drops) the rest.
#[test]
fn raw_buffer_dwordx4_is_range_checked_per_dword() {
    // NUM_RECORDS 40 with soffset 8: lane 0 (bytes 8..24) is in, lane 1 (24..40) is in,
    // lane 2 (40..56) is out; with soffset 0 lane 2 (32..48) has two dwords in.
    for (soffset, lane_dwords) in [(8u32, [4usize, 4, 0, 0]), (0, [4, 4, 2, 0])] {
        // buffer_load_dwordx4 v[4:7], v0, s[8:11], s2 offen
        let load = [0x00, 0x10, 0x5C, 0xE0, 0x00, 0x04, 0x02, 0x02];
        let mem = BufMemory::new(32);
        let w = raw_buffer_step(load, &mem, 40, soffset, |lane| lane as u32 * 16 % 64);
        for (lane, &n) in lane_dwords.iter().enumerate() {
            for k in 0..4 {
                let at = soffset + lane as u32 * 16 + k as u32 * 4;
                let want = if k < n { 0xA000 + at / 4 } else { 0 };
                assert_eq!(
                    w.v(4 + k, lane),
                    want,
                    "soffset {soffset} lane {lane} dword {k}"
                );
            }
        }
        // buffer_store_dwordx4 v[4:7], v0, s[8:11], s2 offen: lanes 0..3 only (the others
        // would store to the same places).
        let store = [0x00, 0x10, 0x7C, 0xE0, 0x00, 0x04, 0x02, 0x02];
        let mem = BufMemory::new(32);
        let before: Vec<u32> = (0..32).map(|i| mem.dword(i)).collect();
        let inst = decode(&store, Gfx9Target::Gfx90a).unwrap();
        let mut w = Wave::new(0x1000, false);
        w.sreg[8..12].copy_from_slice(&[BufMemory::BASE as u32, 0, 40, 0]);
        w.sreg[2] = soffset;
        w.set_exec(0xF);
        for lane in 0..4 {
            w.set_v(0, lane, lane as u32 * 16);
            for k in 0..4 {
                w.set_v(4 + k, lane, 0x5000 + lane as u32 * 4 + k as u32);
            }
        }
        general_step(&mut w, &inst, 0x1000, &mem, &mut []).unwrap();
        for (i, &old) in before.iter().enumerate() {
            let at = i as u32 * 4;
            let (lane, k) = (
                (at.wrapping_sub(soffset) / 16) as usize,
                (at.wrapping_sub(soffset) % 16 / 4) as usize,
            );
            let stored = at >= soffset && lane < 4 && k < lane_dwords[lane];
            let want = if stored {
                0x5000 + lane as u32 * 4 + k as u32
            } else {
                old
            };
            assert_eq!(mem.dword(i), want, "soffset {soffset} memory dword {i}");
        }
    }
}

/// D16 loads keep the half of the VGPR they do not load, unless the GPU runs with SRAM ECC
/// on (`sramecc+`), where that half reads 0 (LLVM's `d16PreservesUnusedBits`): Tensile's
/// f16 GEMMs on gfx90a load a `_d16`/`_d16_hi` pair into two VGPRs and OR them, so a kept
/// half corrupted the value (rocBLAS 7.2.4's `quick_gemm_small_f16_r` read -1.0078125 for
/// -1). Out of range, the load writes its half as 0 and treats the other half the same way.
#[test]
fn d16_loads_keep_the_other_half_unless_sramecc_is_on() {
    let mem = BufMemory::new(16);
    // Lane 0 in range (byte 8: 0xA002's low half), lane 1 out (byte 64 of 64).
    let cases: [([u8; 8], bool); 2] = [
        // buffer_load_short_d16 v1, v0, s[8:11], s2 offen
        ([0x00, 0x10, 0x90, 0xE0, 0x00, 0x01, 0x02, 0x02], false),
        // buffer_load_short_d16_hi v1, v0, s[8:11], s2 offen
        ([0x00, 0x10, 0x94, 0xE0, 0x00, 0x01, 0x02, 0x02], true),
    ];
    for (bytes, hi) in cases {
        for sramecc in [false, true] {
            let inst = decode(&bytes, Gfx9Target::Gfx90a).unwrap();
            let mut w = Wave::new(0x1000, false);
            w.sramecc = sramecc;
            w.sreg[8..12].copy_from_slice(&[BufMemory::BASE as u32, 0, 64, 0]);
            w.set_exec(0b11);
            w.set_v(0, 0, 8);
            w.set_v(0, 1, 64);
            w.set_v(1, 0, 0x1234_5678);
            w.set_v(1, 1, 0x1234_5678);
            general_step(&mut w, &inst, 0x1000, &mem, &mut []).unwrap();
            let kept = if sramecc { 0 } else { 0x1234_5678 };
            let place = |h: u32| {
                if hi {
                    h << 16 | kept & 0xFFFF
                } else {
                    kept & 0xFFFF_0000 | h
                }
            };
            assert_eq!(
                w.v(1, 0),
                place(0xA002),
                "{inst} sramecc {sramecc} in range"
            );
            assert_eq!(w.v(1, 1), place(0), "{inst} sramecc {sramecc} out of range");
        }
    }
    // ds_read_u16_d16 v1, v0 and ds_read_u16_d16_hi v1, v0 of LDS bytes 4..6 (0xBEEF).
    for (bytes, hi) in [
        ([0x00, 0x00, 0xB4, 0xD8, 0x00, 0x00, 0x00, 0x01], false),
        ([0x00, 0x00, 0xB6, 0xD8, 0x00, 0x00, 0x00, 0x01], true),
    ] {
        for sramecc in [false, true] {
            let inst = decode(&bytes, Gfx9Target::Gfx90a).unwrap();
            let mut lds = [0u8; 16];
            lds[4..6].copy_from_slice(&0xBEEFu16.to_le_bytes());
            let mut w = Wave::new(0x1000, false);
            w.sramecc = sramecc;
            w.set_exec(1);
            w.set_v(0, 0, 4);
            w.set_v(1, 0, 0x1234_5678);
            w.sreg[124] = u32::MAX; // M0: the LDS limit
            general_step(&mut w, &inst, 0x1000, &NoMemory, &mut lds).unwrap();
            let kept = if sramecc { 0 } else { 0x1234_5678 };
            let want = if hi {
                0xBEEF << 16 | kept & 0xFFFF
            } else {
                kept & 0xFFFF_0000 | 0xBEEF
            };
            assert_eq!(w.v(1, 0), want, "{inst} sramecc {sramecc}");
        }
    }
}

/// A DS address is the 32-bit sum of ADDR and the offset: LLVM folds `base - 8` into
/// `offset:256` on gfx9 (DS offsets are usable with any base there), so a negative ADDR
/// must wrap into LDS. rocFFT 7.2.4's real-to-complex post-processing reads `Z[N - k]` so;
/// it read 0 instead and its length-64 transform failed its accuracy test.
#[test]
fn ds_address_wraps_at_32_bits() {
    let t = Gfx9Target::Gfx90a;
    let mut lds = [0u8; 512];
    for (i, b) in lds.iter_mut().enumerate() {
        *b = i as u8;
    }
    let dword = |lds: &[u8], at: usize| u32::from_le_bytes(lds[at..at + 4].try_into().unwrap());
    let run = |bytes: [u8; 8], lds: &mut [u8], w: &mut Wave| {
        let inst = decode(&bytes, t).unwrap();
        general_step(w, &inst, 0x1000, &NoMemory, lds).unwrap_or_else(|e| panic!("{inst}: {e}"));
    };
    let mut w = Wave::new(0x1000, true);
    w.set_exec(1);
    w.sreg[124] = u32::MAX; // M0
    w.set_v(6, 0, (-8i32) as u32);
    // ds_read_b64 v[4:5], v6 offset:256: bytes 248..256.
    run(
        [0x00, 0x01, 0xEC, 0xD8, 0x06, 0x00, 0x00, 0x04],
        &mut lds,
        &mut w,
    );
    assert_eq!((w.v(4, 0), w.v(5, 0)), (dword(&lds, 248), dword(&lds, 252)));
    // ds_read2_b64 v[8:11], v6 offset0:1 offset1:32: bytes 0..8 and 248..256.
    run(
        [0x01, 0x20, 0xEE, 0xD8, 0x06, 0x00, 0x00, 0x08],
        &mut lds,
        &mut w,
    );
    let got: Vec<u32> = (8..12).map(|r| w.v(r, 0)).collect();
    assert_eq!(
        got,
        [
            dword(&lds, 0),
            dword(&lds, 4),
            dword(&lds, 248),
            dword(&lds, 252)
        ]
    );
    // ds_write_b64 v6, v[2:3] offset:256: bytes 248..256 take v2, v3.
    w.set_v(2, 0, 0xAABB_CCDD);
    w.set_v(3, 0, 0x1122_3344);
    run(
        [0x00, 0x01, 0x9A, 0xD8, 0x06, 0x02, 0x00, 0x00],
        &mut lds,
        &mut w,
    );
    assert_eq!(
        (dword(&lds, 248), dword(&lds, 252)),
        (0xAABB_CCDD, 0x1122_3344)
    );
}

/// A float inline constant of a 64-bit operand is the double even when the operation is an
/// integer one: `s_mov_b64`, `s_and_b64`, `v_lshlrev_b64`'s value operand and gfx94x's
/// `v_mov_b64` (encodings from llvm-mc-19; LLVM encodes the value 0x3FF0000000000000 of an
/// i64 operand as inline 1.0). The interpreter gave the f32 bits for integer operations:
/// rocRAND's Poisson kernel on gfx942 loads 1.0 into a double with `v_mov_b64`.
#[test]
fn a_64_bit_operands_float_constant_is_the_double() {
    let t = Gfx9Target::Gfx90a;
    let mut w = Wave::new(0x1000, false);
    w.set_exec(1);
    let mov_one = decode(&[0xF2, 0x01, 0x80, 0xBE], t).unwrap(); // s_mov_b64 s[0:1], 1.0
    general_step(&mut w, &mov_one, 0x1000, &NoMemory, &mut []).unwrap();
    assert_eq!(w.sreg64(0), 1.0f64.to_bits());
    let mov_minus_four = decode(&[0xF7, 0x01, 0x80, 0xBE], t).unwrap(); // s_mov_b64 s[0:1], -4.0
    general_step(&mut w, &mov_minus_four, 0x1000, &NoMemory, &mut []).unwrap();
    assert_eq!(w.sreg64(0), (-4.0f64).to_bits());
    w.sreg[2] = u32::MAX;
    w.sreg[3] = u32::MAX;
    let and_half = decode(&[0x02, 0xF0, 0x80, 0x86], t).unwrap(); // s_and_b64 s[0:1], s[2:3], 0.5
    general_step(&mut w, &and_half, 0x1000, &NoMemory, &mut []).unwrap();
    assert_eq!(w.sreg64(0), 0.5f64.to_bits());
    // v_lshlrev_b64 v[0:1], 1, 1.0
    let shl = decode(&[0x00, 0x00, 0x8F, 0xD2, 0x81, 0xE4, 0x01, 0x00], t).unwrap();
    general_step(&mut w, &shl, 0x1000, &NoMemory, &mut []).unwrap();
    let v = u64::from(w.v(0, 0)) | u64::from(w.v(1, 0)) << 32;
    assert_eq!(v, 1.0f64.to_bits() << 1);
    let mut w = Wave::new(0x1000, false);
    w.set_exec(1);
    let vmov = decode(&[0xF2, 0x70, 0x00, 0x7E], Gfx9Target::Gfx942).unwrap(); // v_mov_b64 v[0:1], 1.0
    general_step(&mut w, &vmov, 0x1000, &NoMemory, &mut []).unwrap();
    let v = u64::from(w.v(0, 0)) | u64::from(w.v(1, 0)) << 32;
    assert_eq!(v, 1.0f64.to_bits());
}

/// FLAT addressing follows the process's apertures (the `SH_MEM_BASES` amdkfd programs for
/// it, which `GET_PROCESS_APERTURES_NEW` reports): `src_shared_base`/`src_private_*` read
/// them, a FLAT access in the shared aperture reads LDS wherever the aperture is, and a FLAT
/// address in neither aperture and in the hole of the 48-bit address space is a memory
/// violation naming the address. The interpreter used to hold the apertures as constants.
#[test]
fn flat_addresses_follow_the_process_apertures() {
    use crate::aperture::Apertures;
    let t = Gfx9Target::Gfx90a;
    // llvm-mc-19 -mcpu=gfx90a -show-encoding.
    let shared_base = decode(&[0xEB, 0x01, 0x80, 0xBE], t).unwrap(); // s_mov_b64 s[0:1], src_shared_base
    let private_limit = decode(&[0xEE, 0x01, 0x80, 0xBE], t).unwrap(); // s_mov_b64 s[0:1], src_private_limit
    let private_hi = decode(&[0xED, 0x00, 0x80, 0xBE], t).unwrap(); // s_mov_b32 s0, src_private_base
    let load = decode(&[0x00, 0x00, 0x50, 0xDC, 0x02, 0x00, 0x00, 0x01], t).unwrap(); // flat_load_dword v1, v[2:3]
    let moved = Apertures::from_bases(3 << 48, 4 << 48);
    for (apertures, shared, limit) in [
        (
            Apertures::AMDKFD_GFX9,
            0x0001_0000_0000_0000u64,
            0x0002_0000_FFFF_FFFFu64,
        ),
        (moved, 0x0003_0000_0000_0000, 0x0004_0000_FFFF_FFFF),
    ] {
        let mut w = Wave::new(0x1000, false);
        w.apertures = apertures;
        general_step(&mut w, &shared_base, 0x1000, &NoMemory, &mut []).unwrap();
        assert_eq!(w.sreg64(0), shared, "{apertures:?}");
        general_step(&mut w, &private_limit, 0x1000, &NoMemory, &mut []).unwrap();
        assert_eq!(w.sreg64(0), limit, "{apertures:?}");
        general_step(&mut w, &private_hi, 0x1000, &NoMemory, &mut []).unwrap();
        assert_eq!(w.sreg[0] as u64, limit >> 32, "{apertures:?}");
    }
    let at = |w: &mut Wave, addr: u64| {
        w.set_v(2, 0, addr as u32);
        w.set_v(3, 0, (addr >> 32) as u32);
    };
    let mut lds = [0u8; 16];
    lds[4..8].copy_from_slice(&0xCAFE_F00Du32.to_le_bytes());
    let mut w = Wave::new(0x1000, false);
    w.apertures = moved;
    w.set_exec(1);
    at(&mut w, 0x0003_0000_0000_0004);
    general_step(&mut w, &load, 0x1000, &NoMemory, &mut lds).unwrap();
    assert_eq!(w.v(1, 0), 0xCAFE_F00D);
    // With the apertures moved, the default LDS address is in the hole; so is 1 << 47 for
    // any apertures.
    for (apertures, addr) in [
        (moved, 0x0001_0000_0000_0004u64),
        (Apertures::AMDKFD_GFX9, 0x8000_0000_0000),
        (Apertures::AMDKFD_GFX9, 0x0001_0001_0000_0000),
    ] {
        w.apertures = apertures;
        at(&mut w, addr);
        let e = general_step(&mut w, &load, 0x1000, &NoMemory, &mut lds).unwrap_err();
        assert_eq!(e.status(), Status::MemoryApertureViolation, "{e}");
        assert!(
            e.detail()
                .to_string()
                .contains(&format!("FLAT address {addr:#x}")),
            "{e}"
        );
    }
}

/// A dispatch's waves take their apertures from [`DispatchState::apertures`]: a FLAT load at
/// the default LDS aperture (`0x1_0000_0000_0004`) reads LDS with amdkfd's gfx9 apertures and
/// is a memory violation for a process whose LDS aperture is elsewhere.
#[test]
fn dispatch_apertures_reach_every_wave() {
    use crate::aperture::Apertures;
    // llvm-mc-19 -mcpu=gfx90a: v_mov_b32 v2, 4; v_mov_b32 v3, 0x10000;
    // flat_load_dword v1, v[2:3]; s_waitcnt vmcnt(0) lgkmcnt(0); s_endpgm.
    let bytes = [
        0x84, 0x02, 0x04, 0x7E, 0xFF, 0x02, 0x06, 0x7E, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x50,
        0xDC, 0x02, 0x00, 0x00, 0x01, 0x70, 0x00, 0x8C, 0xBF, 0x00, 0x00, 0x81, 0xBF,
    ];
    let code = KernelCode {
        base_address: 0x1000,
        bytes: &bytes,
        entry_address: 0x1000,
    };
    let kd = KernelDescriptor::default();
    let mut st = DispatchState::one_dimensional(64, 64, 0, 0);
    st.group_segment_size = 16;
    let mut stats = ExecStats::default();
    run_workgroups(
        &code,
        &kd,
        Gfx9Target::Gfx90a,
        &st,
        &NoMemory,
        0..1,
        &mut stats,
    )
    .unwrap();
    st.apertures = Apertures::from_bases(3 << 48, 4 << 48);
    let e = run_workgroups(
        &code,
        &kd,
        Gfx9Target::Gfx90a,
        &st,
        &NoMemory,
        0..1,
        &mut stats,
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::MemoryApertureViolation, "{e}");
    assert!(e.detail().to_string().contains("0x1000000000004"), "{e}");
}

/// A memory that records the L2 actions the cache-control instructions ask of it.
#[derive(Default)]
struct L2Recorder(std::cell::RefCell<Vec<L2Action>>);

impl DeviceMemory for L2Recorder {
    fn clock_counter(&self) -> u64 {
        0
    }
    fn read(&self, addr: u64, _buf: &mut [u8]) -> Result<()> {
        bail!(Status::MemoryFault, "read at {addr:#x}")
    }
    fn write(&self, addr: u64, _data: &[u8]) -> Result<()> {
        bail!(Status::MemoryFault, "write at {addr:#x}")
    }
    fn l2_action(&self, action: L2Action) -> Result<()> {
        self.0.borrow_mut().push(action);
        Ok(())
    }
}

/// The buffer cache-control instructions reach the L2 as AMDGPUUsage's memory models use
/// them (encodings from llvm-mc-19 `-show-encoding`): on gfx90a `buffer_wbl2` writes back and
/// `buffer_invl2` invalidates; on gfx942 only with `sc1` (agent or system scope), `sc0` alone
/// being work-group scope (the L1); `buffer_wbinvl1_vol` is the L1's on both.
#[test]
fn cache_control_instructions_reach_the_l2_by_target_and_scope() {
    use L2Action::{Invalidate, WriteBack};
    let cases: [(Gfx9Target, [u8; 8], &str, Option<L2Action>); 9] = [
        (
            Gfx9Target::Gfx90a,
            [0, 0, 0xa0, 0xe0, 0, 0, 0, 0],
            "buffer_wbl2",
            Some(WriteBack),
        ),
        (
            Gfx9Target::Gfx90a,
            [0, 0, 0xa4, 0xe0, 0, 0, 0, 0],
            "buffer_invl2",
            Some(Invalidate),
        ),
        (
            Gfx9Target::Gfx90a,
            [0, 0, 0xfc, 0xe0, 0, 0, 0, 0],
            "buffer_wbinvl1_vol",
            None,
        ),
        (
            Gfx9Target::Gfx942,
            [0, 0x80, 0xa4, 0xe0, 0, 0, 0, 0],
            "buffer_inv sc1",
            Some(Invalidate),
        ),
        (
            Gfx9Target::Gfx942,
            [0, 0xc0, 0xa4, 0xe0, 0, 0, 0, 0],
            "buffer_inv sc0 sc1",
            Some(Invalidate),
        ),
        (
            Gfx9Target::Gfx942,
            [0, 0x40, 0xa4, 0xe0, 0, 0, 0, 0],
            "buffer_inv sc0",
            None,
        ),
        (
            Gfx9Target::Gfx942,
            [0, 0xc0, 0xa0, 0xe0, 0, 0, 0, 0],
            "buffer_wbl2 sc0 sc1",
            Some(WriteBack),
        ),
        (
            Gfx9Target::Gfx942,
            [0, 0x80, 0xa0, 0xe0, 0, 0, 0, 0],
            "buffer_wbl2 sc1",
            Some(WriteBack),
        ),
        (
            Gfx9Target::Gfx942,
            [0, 0x40, 0xa0, 0xe0, 0, 0, 0, 0],
            "buffer_wbl2 sc0",
            None,
        ),
    ];
    for (target, bytes, text, want) in cases {
        let inst = decode(&bytes, target).unwrap();
        assert_eq!(inst.to_string(), text, "{target:?}");
        let mem = L2Recorder::default();
        let mut w = Wave::new(0x1000, false);
        general_step(&mut w, &inst, 0x1000, &mem, &mut []).unwrap();
        assert_eq!(
            mem.0.into_inner(),
            want.into_iter().collect::<Vec<_>>(),
            "{text} on {target:?}"
        );
    }
}

/// The gfx950 instructions the interpreter does not run yet (`Class::NotRun`) decode and
/// print, and a wave that reaches one stops with an illegal-instruction error naming it,
/// its registers untouched (no instruction is run by a guess from its name).
#[test]
fn gfx950_instructions_it_does_not_run_are_refused_by_name() {
    let mem = BufMemory::new(64);
    // LLVM 22's llvm-mc -mcpu=gfx950: v_cvt_scalef32_sr_fp8_f32 v2, v1, v2, v3;
    // v_cvt_sr_f16_f32 v2, v1, v2; ds_read_b64_tr_b16 v[8:9], v1;
    // v_smfmac_f32_16x16x64_f16 v[8:11], v[12:15], v[16:23], v2.
    for (bytes, name) in [
        (
            &[0x02, 0x00, 0x37, 0xD2, 0x01, 0x05, 0x0E, 0x04][..],
            "v_cvt_scalef32_sr_fp8_f32",
        ),
        (
            &[0x02, 0x00, 0xA6, 0xD2, 0x01, 0x05, 0x02, 0x00][..],
            "v_cvt_sr_f16_f32",
        ),
        (
            &[0x00, 0x00, 0xC6, 0xD9, 0x01, 0x00, 0x00, 0x08][..],
            "ds_read_b64_tr_b16",
        ),
        (
            &[0x08, 0x00, 0xDA, 0xD3, 0x0C, 0x21, 0x0A, 0x04][..],
            "v_smfmac_f32_16x16x64_f16",
        ),
    ] {
        let inst = decode(bytes, Gfx9Target::Gfx950).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(inst.name(), name);
        assert!(
            decode(bytes, Gfx9Target::Gfx942).is_err(),
            "{name} on gfx942"
        );
        let mut w = Wave::new(0x1000, false);
        w.set_exec(u64::MAX);
        for lane in 0..WAVE_SIZE {
            w.set_v(2, lane, 7);
            w.set_v(8, lane, 7);
        }
        let e = general_step(&mut w, &inst, 0x1000, &mem, &mut []).unwrap_err();
        assert_eq!(e.status(), Status::IllegalInstruction, "{name}");
        assert!(
            e.detail().contains(name) && e.detail().contains("not implemented"),
            "{name}: {e}"
        );
        assert!(
            (0..WAVE_SIZE).all(|l| w.v(2, l) == 7 && w.v(8, l) == 7),
            "{name}"
        );
    }
}

/// One gfx950 VALU word on a wave whose v1, v2, v3 hold `a`, `b`, `c` per lane (all 64 lanes
/// on); the wave afterwards.
fn gfx950_step(bytes: &[u8], a: &[u32], b: &[u32], c: &[u32]) -> Wave {
    let inst = decode(bytes, Gfx9Target::Gfx950).unwrap();
    let mut w = Wave::new(0x1000, false);
    w.set_exec(u64::MAX);
    for lane in 0..WAVE_SIZE {
        w.set_v(1, lane, a[lane]);
        w.set_v(2, lane, b[lane]);
        w.set_v(3, lane, c[lane]);
    }
    general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut [])
        .unwrap_or_else(|e| panic!("{inst}: {e}"));
    w
}

fn lanes_of(seed: u32) -> [u32; WAVE_SIZE] {
    let mut x = seed;
    core::array::from_fn(|_| {
        // xorshift32 (Marsaglia 2003)
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    })
}

/// gfx950's v_bitop3_b32 (words from LLVM 22's llvm-mc -mcpu=gfx950 -show-encoding): each
/// table against the same function written with Rust's operators.
#[test]
fn gfx950_bitop3_b32_follows_its_truth_table() {
    let (a, b, c) = (lanes_of(1), lanes_of(2), lanes_of(3));
    // v_bitop3_b32 v4, v1, v2, v3 bitop3:T: neg = T[2:0], abs = T[5:3], omod = T[7:6].
    let word = |t: u32| -> [u8; 8] {
        let w0 = 0xD234_0004 | (t >> 3 & 7) << 8;
        let w1 = 0x040E_0501 | (t & 7) << 29 | (t >> 6 & 3) << 27;
        let mut b = [0; 8];
        b[..4].copy_from_slice(&w0.to_le_bytes());
        b[4..].copy_from_slice(&w1.to_le_bytes());
        b
    };
    // LLVM's own encodings: v_bitop3_b32 v4, v1, v2, v3 bitop3:0xe8, and with v2 as the
    // destination bitop3:0x96.
    assert_eq!(word(0xE8), [0x04, 0x05, 0x34, 0xD2, 0x01, 0x05, 0x0E, 0x1C]);
    let llvm = [0x02, 0x02, 0x34, 0xD2, 0x01, 0x05, 0x0E, 0xD4];
    assert_eq!(
        decode(&llvm, Gfx9Target::Gfx950).unwrap().to_string(),
        "v_bitop3_b32 v2, v1, v2, v3 bitop3:0x96"
    );
    type Bitwise = fn(u32, u32, u32) -> u32;
    let f: [(u32, Bitwise); 8] = [
        (0x96, |a, b, c| a ^ b ^ c),
        (0xE8, |a, b, c| (a & b) | (a & c) | (b & c)),
        (0x6C, |a, b, c| b ^ (a & c)),
        (0xF0, |a, _, _| a),
        (0xCC, |_, b, _| b),
        (0xAA, |_, _, c| c),
        (0x80, |a, b, c| a & b & c),
        (0x01, |a, b, c| !(a | b | c)),
    ];
    for (t, g) in f {
        let w = gfx950_step(&word(t), &a, &b, &c);
        for lane in 0..WAVE_SIZE {
            assert_eq!(
                w.v(4, lane),
                g(a[lane], b[lane], c[lane]),
                "bitop3:{t:#x} lane {lane}"
            );
        }
    }
}

/// gfx950's v_cvt_f32_bf16 (VOP1 and VOP3 words from LLVM 22): the low half's bf16 as an
/// f32, denormals and NaN payloads kept (CDNA4 ISA §7.4), the high half ignored.
#[test]
fn gfx950_cvt_f32_bf16_is_exact() {
    let a: [u32; WAVE_SIZE] = core::array::from_fn(|l| match l {
        0 => 0x0001,      // the smallest bf16 denormal
        1 => 0xFFFF_807F, // a negative denormal, high half set
        2 => 0x7FC1,      // a quiet NaN with payload
        3 => 0x7F81,      // a signaling NaN
        4 => 0x3F80,      // 1.0
        5 => 0xFF80,      // -inf
        _ => lanes_of(9)[l],
    });
    let zero = [0; WAVE_SIZE];
    // v_cvt_f32_bf16_e32 v2, v1; v_cvt_f32_bf16_e64 v2, v1.
    for bytes in [
        &[0x01, 0xB7, 0x04, 0x7E][..],
        &[0x02, 0x00, 0x9B, 0xD1, 0x01, 0x01, 0x00, 0x00][..],
    ] {
        let w = gfx950_step(bytes, &a, &zero, &zero);
        for (lane, x) in a.iter().enumerate() {
            assert_eq!(w.v(2, lane), (x & 0xFFFF) << 16, "lane {lane}");
        }
    }
}

/// gfx950's lane swaps (words from LLVM 22): v_permlane16_swap_b32 trades the destination's
/// odd 16-lane rows with the source's even rows, v_permlane32_swap_b32 the destination's
/// upper 32 lanes with the source's lower 32; both registers change. One register named
/// twice swaps with itself. A lane off is refused.
#[test]
fn gfx950_permlane_swaps_trade_rows() {
    let (a, b) = (lanes_of(4), lanes_of(5));
    let zero = [0; WAVE_SIZE];
    // v_permlane16_swap_b32_e32 v2, v1 (dst v2 = b, src v1 = a).
    let w = gfx950_step(&[0x01, 0xB3, 0x04, 0x7E], &a, &b, &zero);
    for lane in 0..WAVE_SIZE {
        let (row, l) = (lane / 16, lane % 16);
        let (want_d, want_s) = match row {
            1 => (a[l], b[lane]),
            3 => (a[32 + l], b[lane]),
            _ => (b[lane], a[lane]),
        };
        let want_s = if row % 2 == 0 { b[lane + 16] } else { want_s };
        let want_s = if row % 2 == 1 { a[lane] } else { want_s };
        assert_eq!(
            (w.v(2, lane), w.v(1, lane)),
            (want_d, want_s),
            "lane {lane}"
        );
    }
    // v_permlane32_swap_b32_e64 v2, v1 bound_ctrl:1 (dst v2 = b, src v1 = a).
    let w = gfx950_step(
        &[0x02, 0x10, 0x9A, 0xD1, 0x01, 0x01, 0x00, 0x00],
        &a,
        &b,
        &zero,
    );
    for lane in 0..WAVE_SIZE {
        let (want_d, want_s) = if lane >= 32 {
            (a[lane - 32], a[lane])
        } else {
            (b[lane], b[lane + 32])
        };
        assert_eq!(
            (w.v(2, lane), w.v(1, lane)),
            (want_d, want_s),
            "lane {lane}"
        );
    }
    // v_permlane32_swap_b32_e32 v1, v1: the halves of v1 trade places.
    let w = gfx950_step(&[0x01, 0xB5, 0x02, 0x7E], &a, &b, &zero);
    for lane in 0..WAVE_SIZE {
        assert_eq!(w.v(1, lane), a[lane ^ 32], "lane {lane}");
    }
    // EXEC with a lane off: refused, nothing written.
    let inst = decode(&[0x01, 0xB3, 0x04, 0x7E], Gfx9Target::Gfx950).unwrap();
    let mut w = Wave::new(0x1000, false);
    w.set_exec(u64::MAX >> 1);
    w.set_v(2, 5, 7);
    let e = general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut []).unwrap_err();
    assert_eq!(e.status(), Status::IllegalInstruction);
    assert!(e.detail().contains("EXEC"), "{e}");
    assert_eq!(w.v(2, 5), 7);
}

/// One gfx950 instruction on lanes whose v1/v2 hold `a`/`b` and v4 holds `d`, with MODE
/// `mode`.
fn gfx950_step_mode(bytes: &[u8], mode: u32, a: &[u32], b: &[u32], d: u32) -> Wave {
    gfx950_try(bytes, mode, [a, b, &[0; WAVE_SIZE]], d)
        .unwrap_or_else(|(inst, e)| panic!("{inst}: {e}"))
}

/// One gfx950 instruction on lanes whose v1, v2, v3 hold `src` and v4 holds `d`, with MODE
/// `mode`; the wave after it, or the instruction's text and the error.
fn gfx950_try(
    bytes: &[u8],
    mode: u32,
    src: [&[u32]; 3],
    d: u32,
) -> core::result::Result<Wave, (String, hsa_core::Error)> {
    let inst = decode(bytes, Gfx9Target::Gfx950).unwrap();
    let mut w = Wave::new(0x1000, false);
    w.set_exec(u64::MAX);
    w.mode = mode;
    for lane in 0..WAVE_SIZE {
        for (r, s) in src.iter().enumerate() {
            w.set_v(1 + r, lane, s[lane]);
        }
        w.set_v(4, lane, d);
        w.set_v(5, lane, d);
    }
    match general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut []) {
        Ok(_) => Ok(w),
        Err(e) => Err((inst.to_string(), e)),
    }
}

/// gfx950's FP8/BF8 conversions use the OCP formats, not gfx942's FNUZ ones, and overflow
/// as MODE.FP16_OVFL says (CDNA4 ISA §7.3, tables 30 and 31 and the FP16_OVFL rule). The
/// words are LLVM 22's (llvm-mc -mcpu=gfx950 -show-encoding); the expected bytes are worked
/// out by hand from table 30 (FP8 E4M3 bias 7, BF8 E5M2 bias 15).
#[test]
fn gfx950_fp8_conversions_are_ocp() {
    const OVFL: u32 = 1 << 23;
    let f = |x: f32| x.to_bits();
    let two = |e: i32| 2f32.powi(e);
    let lanes = |v: &[f32]| -> [u32; WAVE_SIZE] {
        core::array::from_fn(|l| v.get(l).copied().map_or(0, f32::to_bits))
    };
    // v_cvt_pk_fp8_f32 v4, v1, v2: (a, b, bytes without FP16_OVFL, bytes with it).
    let fp8: [(f32, f32, [u8; 2], [u8; 2]); 6] = [
        (1.0, -2.0, [0x38, 0xC0], [0x38, 0xC0]),
        (448.0, 464.0, [0x7E, 0x7E], [0x7E, 0x7E]), // 464: the tie goes to even 0x7E
        (465.0, f32::NEG_INFINITY, [0x7F, 0xFF], [0x7E, 0xFE]),
        (f32::NAN, -0.0, [0x7F, 0x80], [0x7F, 0x80]),
        (two(-9), two(-10), [0x01, 0x00], [0x01, 0x00]),
        (0.3, 3.0 * two(-9), [0x2A, 0x03], [0x2A, 0x03]),
    ];
    let a = lanes(&fp8.map(|r| r.0));
    let b = lanes(&fp8.map(|r| r.1));
    let word = [0x04, 0x00, 0xA2, 0xD2, 0x01, 0x05, 0x02, 0x00];
    for (mode, pick) in [(0, 2), (OVFL, 3)] {
        let w = gfx950_step_mode(&word, mode, &a, &b, 0xAABB_CCDD);
        for lane in 0..WAVE_SIZE {
            let want = fp8
                .get(lane)
                .map_or([0, 0], |r| if pick == 2 { r.2 } else { r.3 });
            let want = 0xAABB_0000 | u32::from(want[1]) << 8 | u32::from(want[0]);
            assert_eq!(w.v(4, lane), want, "fp8 MODE {mode:#x} lane {lane}");
        }
    }
    // v_cvt_pk_bf8_f32 v4, v1, v2 op_sel:[0,0,1]: the pair to D[31:16].
    let bf8: [(f32, f32, [u8; 2], [u8; 2]); 6] = [
        (1.0, -2.0, [0x3C, 0xC0], [0x3C, 0xC0]),
        (57344.0, 61440.0, [0x7B, 0x7C], [0x7B, 0x7B]), // 61440: the tie goes to inf
        (f32::INFINITY, -1e6, [0x7C, 0xFC], [0x7B, 0xFB]),
        (f32::NAN, -0.0, [0x7E, 0x80], [0x7E, 0x80]),
        (two(-16), two(-17), [0x01, 0x00], [0x01, 0x00]),
        (0.3, 3.0 * two(-16), [0x35, 0x03], [0x35, 0x03]),
    ];
    let a = lanes(&bf8.map(|r| r.0));
    let b = lanes(&bf8.map(|r| r.1));
    let word = [0x04, 0x40, 0xA3, 0xD2, 0x01, 0x05, 0x02, 0x00];
    for (mode, pick) in [(0, 2), (OVFL, 3)] {
        let w = gfx950_step_mode(&word, mode, &a, &b, 0xAABB_CCDD);
        for lane in 0..WAVE_SIZE {
            let want = bf8
                .get(lane)
                .map_or([0, 0], |r| if pick == 2 { r.2 } else { r.3 });
            let want = (u32::from(want[1]) << 8 | u32::from(want[0])) << 16 | 0xCCDD;
            assert_eq!(w.v(4, lane), want, "bf8 MODE {mode:#x} lane {lane}");
        }
    }
    // v_cvt_f32_fp8_e32 v4, v1 and v_cvt_pk_f32_bf8_e32 v[4:5], v1: the codes back.
    let codes: [u32; WAVE_SIZE] = core::array::from_fn(|l| match l {
        0 => 0x7E,
        1 => 0xFF,
        2 => 0x80,
        3 => 0x01,
        _ => 0x38,
    });
    let w = gfx950_step_mode(&[0x01, 0xA9, 0x08, 0x7E], 0, &codes, &codes, 0);
    let want = [f(448.0), 0xFFC0_0000, f(-0.0), f(two(-9)), f(1.0)];
    for lane in 0..WAVE_SIZE {
        assert_eq!(w.v(4, lane), want[lane.min(4)], "f32_fp8 lane {lane}");
    }
    let pairs: [u32; WAVE_SIZE] = core::array::from_fn(|l| if l == 0 { 0xFC7C } else { 0x7D01 });
    let w = gfx950_step_mode(&[0x01, 0xAF, 0x08, 0x7E], 0, &pairs, &pairs, 0);
    assert_eq!(
        (w.v(4, 0), w.v(5, 0)),
        (f(f32::INFINITY), f(f32::NEG_INFINITY))
    );
    assert_eq!((w.v(4, 1), w.v(5, 1)), (f(two(-16)), 0x7FC0_0000));
}

/// gfx950's FP8 MFMAs read OCP E4M3: v_mfma_f32_16x16x32_fp8_fp8 (LLVM 22's word) with every
/// A byte 0x38 (1.0 in OCP E4M3; 0.5 in gfx942's FNUZ) and every B byte 0x40 (2.0; FNUZ
/// 1.0) and C = 0 gives 32 × 2 = 64 in every element (FNUZ would give 16).
#[test]
fn gfx950_fp8_mfma_reads_ocp() {
    let bytes = [0x08, 0x00, 0xF3, 0xD3, 0x04, 0x0D, 0x02, 0x02];
    let inst = decode(&bytes, Gfx9Target::Gfx950).unwrap();
    assert_eq!(
        inst.to_string(),
        "v_mfma_f32_16x16x32_fp8_fp8 v[8:11], v[4:5], v[6:7], 0"
    );
    let mut w = Wave::new(0x1000, false);
    w.set_exec(u64::MAX);
    for lane in 0..WAVE_SIZE {
        for r in 4..6 {
            w.set_v(r, lane, 0x3838_3838);
        }
        for r in 6..8 {
            w.set_v(r, lane, 0x4040_4040);
        }
    }
    general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut []).unwrap();
    for lane in 0..WAVE_SIZE {
        for r in 8..12 {
            assert_eq!(f32::from_bits(w.v(r, lane)), 64.0, "v{r} lane {lane}");
        }
    }
}

/// Per-lane values: the listed ones, then zeros.
fn per_lane(v: &[u32]) -> [u32; WAVE_SIZE] {
    core::array::from_fn(|l| v.get(l).copied().unwrap_or(0))
}

/// gfx950's scaled conversions (CDNA4 ISA §12.11 V_CVT_SCALEF32_*, §7.3): LLVM 22's words;
/// the expected values worked out by hand from the ISA's formats (FP8 E4M3 bias 7, BF8 E5M2
/// bias 15, FP4 E2M1 bias 1) and its rule that the scale is the f32 operand's exponent
/// field, 2^(e - 127), divided out before rounding and multiplied in after an up-conversion.
#[test]
fn gfx950_scaled_conversions() {
    let f = |x: f32| x.to_bits();
    const ONE: u32 = 0x3F80_0000; // scale 2^0
    const EIGHT: u32 = 0x4100_0000; // 2^3
    const TINY: u32 = 0x3C00_0000; // 2^-7
    const ZERO: u32 = 0; // exponent 0: 2^-127
    const KEEP_F32_DENORM: u32 = 0x30; // MODE FP_DENORM[5:4] = 3
    let check = |what: &str, w: &Wave, reg: usize, want: &[u32]| {
        for (lane, x) in want.iter().enumerate() {
            assert_eq!(w.v(reg, lane), *x, "{what}: v{reg} lane {lane}");
        }
    };
    // v_cvt_scalef32_pk_fp8_f32 v4, v1, v2, v3 op_sel:[0,0,0,1]: the pair to D[31:16].
    let pk_fp8 = [0x04, 0x40, 0x35, 0xD2, 0x01, 0x05, 0x0E, 0x04];
    let a = per_lane(&[f(1.0), f(8.0), f(1.0), f(7168.0), 0x0080_0000]);
    let b = per_lane(&[f(-2.0), f(3584.0), f(0.5), f(-0.0), 0x0000_0010]);
    let s = per_lane(&[ONE, EIGHT, TINY, EIGHT, ZERO]);
    let w = gfx950_try(&pk_fp8, 0, [&a, &b, &s], 0x1234_5678).unwrap();
    // 1 → 0x38, -2 → 0xC0; 8/8, 3584/8 = 448 → 0x38, 0x7E; 1·2^7 = 128 → 0x70, 64 → 0x68;
    // 7168/8 = 896 overflows to NaN 0x7F without FP16_OVFL, -0 → 0x80; 2^-126/2^-127 = 2
    // → 0x40 and the f32 denormal 2^-145 flushed by MODE 0 → 0.
    check(
        "pk_fp8_f32",
        &w,
        4,
        &[
            0xC038_5678,
            0x7E38_5678,
            0x6870_5678,
            0x807F_5678,
            0x0040_5678,
        ],
    );
    let w = gfx950_try(&pk_fp8, KEEP_F32_DENORM, [&a, &b, &s], 0x1234_5678).unwrap();
    // Kept: 2^-145 · 2^127 = 2^-18, below E4M3's smallest denormal 2^-9: still 0. The
    // denormal 2^-136 (0x0000_2000) gives 2^-9 = 0x01.
    check("pk_fp8_f32 denormals kept", &w, 4, &[0xC038_5678]);
    let b2 = per_lane(&[0, 0, 0, 0, 0x0000_2000]);
    let w = gfx950_try(&pk_fp8, KEEP_F32_DENORM, [&a, &b2, &s], 0).unwrap();
    assert_eq!(w.v(4, 4), 0x0140_0000);
    let w = gfx950_try(&pk_fp8, 0, [&a, &b2, &s], 0).unwrap();
    assert_eq!(w.v(4, 4), 0x0040_0000, "MODE 0 flushes the f32 denormal");
    // The scale as an inline constant: v_cvt_scalef32_pk_fp8_f32 v4, v1, v2, 1.0.
    let w = gfx950_try(
        &[0x04, 0x00, 0x35, 0xD2, 0x01, 0x05, 0xCA, 0x03],
        0,
        [&a, &b, &s],
        0,
    )
    .unwrap();
    // Scale 1: 8.0 → 0x50, 3584 overflows to NaN 0x7F.
    check("pk_fp8_f32 1.0", &w, 4, &[0x0000_C038, 0x0000_7F50]);

    // v_cvt_scalef32_pk_f32_fp8 v[4:5], v1, v3 op_sel:[1,0,0]: S0's high word.
    let src = per_lane(&[0x4038_0000, 0xFF7E_0000, 0x0180_0000, 0x7E7E_0000]);
    let s = per_lane(&[EIGHT, ONE, ZERO, 0x7F00_0000]);
    let w = gfx950_try(
        &[0x04, 0x08, 0x39, 0xD2, 0x01, 0x07, 0x02, 0x00],
        0,
        [&src, &[0; WAVE_SIZE], &s],
        0,
    )
    .unwrap();
    // 1·8, 2·8; 448, NaN (negative); -0, 2^-9·2^-127 = 2^-136 (an exact f32 denormal);
    // 448·2^127 overflows to +inf.
    check(
        "pk_f32_fp8 lo",
        &w,
        4,
        &[f(8.0), f(448.0), f(-0.0), 0x7F80_0000],
    );
    check(
        "pk_f32_fp8 hi",
        &w,
        5,
        &[f(16.0), 0xFFC0_0000, 0x0000_2000, 0x7F80_0000],
    );

    // v_cvt_scalef32_f32_bf8 v4, v1, v3 op_sel:[0,1,0]: S0's byte 2.
    let src = per_lane(&[0x007C_0000, 0x003C_0000, 0x007D_0000]);
    let s = per_lane(&[ONE, TINY, ONE]);
    let w = gfx950_try(
        &[0x04, 0x10, 0x3C, 0xD2, 0x01, 0x07, 0x02, 0x00],
        0,
        [&src, &[0; WAVE_SIZE], &s],
        0,
    )
    .unwrap();
    check(
        "f32_bf8",
        &w,
        4,
        &[0x7F80_0000, f(2f32.powi(-7)), 0x7FC0_0000],
    );

    // v_cvt_scalef32_pk_fp4_f32 v4, v1, v2, v3 op_sel:[0,0,1,1]: the nibble pair to byte 3.
    let pk_fp4 = [0x04, 0x60, 0x3D, 0xD2, 0x01, 0x05, 0x0E, 0x04];
    let a = per_lane(&[f(1.0), f(5.0), f(0.25), f(100.0), f(-0.0)]);
    let b = per_lane(&[f(-6.0), f(2.5), f(-0.3), f(f32::INFINITY), f(0.1)]);
    let s = per_lane(&[ONE, ONE, ONE, EIGHT, ONE]);
    let w = gfx950_try(&pk_fp4, 0, [&a, &b, &s], 0x1234_5678).unwrap();
    // 1 → 2 and -6 → 0xF; 5 (a tie) → 4 = 6 and 2.5 (a tie) → 2 = 4; 0.25 (a tie) → 0
    // and -0.3 → -0.5 = 9; 100/8 and +inf saturate to 6 = 7; -0 → 8 and 0.1 → 0.
    check(
        "pk_fp4_f32",
        &w,
        4,
        &[
            0xF234_5678,
            0x4634_5678,
            0x9034_5678,
            0x7734_5678,
            0x0834_5678,
        ],
    );
    // A NaN has no FP4 code: refused, and no lane is written.
    let nan = per_lane(&[f(1.0), f(f32::NAN)]);
    let (text, e) = gfx950_try(&pk_fp4, 0, [&nan, &b, &s], 0x1234_5678).unwrap_err();
    assert_eq!(e.status(), Status::IllegalInstruction, "{text}");
    assert!(
        e.to_string().contains("lane 1 converts a NaN to FP4"),
        "{e}"
    );

    // v_cvt_scalef32_pk_f32_fp4 v[4:5], v1, v3 op_sel:[1,0,0]: byte 1's nibbles.
    let src = per_lane(&[0x0000_F200]);
    let s = per_lane(&[0x4000_0000]); // 2.0: 2^1
    let w = gfx950_try(
        &[0x04, 0x08, 0x3F, 0xD2, 0x01, 0x07, 0x02, 0x00],
        0,
        [&src, &[0; WAVE_SIZE], &s],
        0,
    )
    .unwrap();
    assert_eq!((w.v(4, 0), w.v(5, 0)), (f(2.0), f(-12.0)));

    // v_cvt_scalef32_pk_fp8_f16 v4, v1, v3: S0's f16 pair to D[15:0]; f16 denormals are
    // kept whatever MODE says (§7.4): 2^-24 / 2^-16 = 2^-8 = 0x02.
    let src = per_lane(&[0xC000_3C00, 0x0000_0001]);
    let s = per_lane(&[ONE, 0x3780_0000]);
    let w = gfx950_try(
        &[0x04, 0x00, 0x40, 0xD2, 0x01, 0x07, 0x02, 0x00],
        0,
        [&src, &[0; WAVE_SIZE], &s],
        0xAABB_CCDD,
    )
    .unwrap();
    check("pk_fp8_f16", &w, 4, &[0xAABB_C038, 0xAABB_0002]);

    // v_cvt_scalef32_pk_bf16_bf8 v4, v1, v3: 1.0·2^-7 → bf16 0x3C00, inf → 0x7F80.
    let src = per_lane(&[0x0000_7C3C]);
    let s = per_lane(&[TINY]);
    let w = gfx950_try(
        &[0x04, 0x00, 0x6A, 0xD2, 0x01, 0x07, 0x02, 0x00],
        0,
        [&src, &[0; WAVE_SIZE], &s],
        0,
    )
    .unwrap();
    assert_eq!(w.v(4, 0), 0x7F80_3C00);

    // v_cvt_scalef32_f16_fp8 v4, v1, v3 op_sel:[1,0,1]: byte 1 (2.0) times 8 = 16.0 (f16
    // 0x4C00) into D[31:16], D[15:0] kept.
    let src = per_lane(&[0x0000_4000]);
    let s = per_lane(&[EIGHT]);
    let w = gfx950_try(
        &[0x04, 0x48, 0x4A, 0xD2, 0x01, 0x07, 0x02, 0x00],
        0,
        [&src, &[0; WAVE_SIZE], &s],
        0x1111_2222,
    )
    .unwrap();
    assert_eq!(w.v(4, 0), 0x4C00_2222);

    // A scale whose exponent field is 0xFF (E8M0 NaN) is refused, registers untouched.
    let s = per_lane(&[ONE, 0x7F80_0000]);
    let a = per_lane(&[f(1.0), f(1.0)]);
    let (_, e) = gfx950_try(&pk_fp8, 0, [&a, &a, &s], 0x1234_5678).unwrap_err();
    assert!(
        e.to_string().contains("lane 1's scale exponent is 0xFF"),
        "{e}"
    );
    // neg on an FP8 source: the decoder refuses the word, as LLVM 22 does.
    let neg = [0x04, 0x08, 0x39, 0xD2, 0x01, 0x07, 0x02, 0x20];
    let e = decode(&neg, Gfx9Target::Gfx950).unwrap_err();
    assert!(
        e.to_string().contains("neg/abs of an integer operand"),
        "{e}"
    );
    // v_cvt_scalef32_pk_fp8_f16 v4, -v1, v3 (LLVM 22 encodes it): whether neg acts on one
    // half or both is not documented, so it is refused.
    let neg = [0x04, 0x00, 0x40, 0xD2, 0x01, 0x07, 0x02, 0x20];
    let (text, e) = gfx950_try(&neg, 0, [&a, &a, &s], 7).unwrap_err();
    assert_eq!(text, "v_cvt_scalef32_pk_fp8_f16 v4, -v1, v3");
    assert!(
        e.to_string().contains("neg/abs on a packed 16-bit source"),
        "{e}"
    );
}

/// gfx950's v_prng_b32 (CDNA4 ISA VOP1 88): (x << 1) ^ (x[31] ? 197 : 0).
#[test]
fn gfx950_prng_steps_its_lfsr() {
    let a = per_lane(&[0x8000_0001, 0x1234_5678, 0, 0xFFFF_FFFF]);
    let w = gfx950_step_mode(&[0x01, 0xB1, 0x08, 0x7E], 0, &a, &a, 0);
    assert_eq!(
        (w.v(4, 0), w.v(4, 1), w.v(4, 2), w.v(4, 3)),
        (0xC7, 0x2468_ACF0, 0, 0xFFFF_FF3B)
    );
}

/// gfx950's VOP3 additions with pseudocode in the CDNA4 ISA (VOP3 613..616, 676, 677, 680,
/// 681), on LLVM 22's words; the expected values worked out by hand.
#[test]
fn gfx950_minimum3_packing_conversions_and_bf8_rounding() {
    let f = |x: f32| x.to_bits();
    const KEEP_F32: u32 = 0x30; // MODE FP_DENORM[5:4] = 3
    const KEEP_F16: u32 = 0xC0; // MODE FP_DENORM[7:6] = 3
    let run = |bytes: &[u8], mode: u32, src: [&[u32]; 3], d: u32| {
        gfx950_try(bytes, mode, src, d).unwrap_or_else(|(t, e)| panic!("{t}: {e}"))
    };
    let lanes4 = |w: &Wave| [0, 1, 2, 3, 4].map(|l| w.v(4, l));

    // v_minimum3_f32 / v_maximum3_f32 v4, v1, v2, v3: IEEE minimum/maximum, so a NaN wins
    // (quieted: the signaling 0x7F80_0001 gives 0x7FC0_0001), and -0 < +0.
    let a = per_lane(&[f(1.0), f(-0.0), 0x7FC0_0001, f(1.0), f(f32::INFINITY)]);
    let b = per_lane(&[f(-2.0), f(0.0), f(1.0), 0x7F80_0001, f(f32::NEG_INFINITY)]);
    let c = per_lane(&[f(3.0), f(0.0), f(2.0), f(5.0), 0]);
    let w = run(
        &[0x04, 0x00, 0xA8, 0xD2, 0x01, 0x05, 0x0E, 0x04],
        0,
        [&a, &b, &c],
        0,
    );
    assert_eq!(
        lanes4(&w),
        [
            f(-2.0),
            f(-0.0),
            0x7FC0_0001,
            0x7FC0_0001,
            f(f32::NEG_INFINITY)
        ]
    );
    let w = run(
        &[0x04, 0x00, 0xA9, 0xD2, 0x01, 0x05, 0x0E, 0x04],
        0,
        [&a, &b, &c],
        0,
    );
    assert_eq!(
        lanes4(&w),
        [f(3.0), f(0.0), 0x7FC0_0001, 0x7FC0_0001, f(f32::INFINITY)]
    );

    // v_cvt_pk_f16_f32 v4, v1, v2: nearest even whatever MODE's rounding; 65520 (the
    // midpoint of 65504 and the next binade) rounds to +inf; 1e-8 is under half the
    // smallest f16 denormal; 2^-20 is the f16 denormal 0x0010, flushed unless MODE keeps
    // f16 output denormals; 1 + 2^-11 and 1 + 3·2^-11 are ties that go to the even code.
    let a = per_lane(&[f(1.0), f(65520.0), 0x7FC0_0000, f(1.0 + 2f32.powi(-11))]);
    let b = per_lane(&[
        f(-2.0),
        f(1e-8),
        f(2f32.powi(-20)),
        f(1.0 + 3.0 * 2f32.powi(-11)),
    ]);
    let pk16 = [0x04, 0x00, 0x67, 0xD2, 0x01, 0x05, 0x02, 0x00];
    let w = run(&pk16, 0, [&a, &b, &[0; WAVE_SIZE]], 0);
    assert_eq!(
        lanes4(&w)[..4],
        [0xC000_3C00, 0x0000_7C00, 0x0000_7E00, 0x3C02_3C00]
    );
    let w = run(&pk16, KEEP_F16 | 3, [&a, &b, &[0; WAVE_SIZE]], 0);
    assert_eq!(
        w.v(4, 2),
        0x0010_7E00,
        "f16 denormal kept (and MODE rounding ignored)"
    );
    // With clamp: -2 → +0.
    let w = run(
        &[0x04, 0x80, 0x67, 0xD2, 0x01, 0x05, 0x02, 0x00],
        0,
        [&a, &b, &[0; WAVE_SIZE]],
        0,
    );
    assert_eq!(w.v(4, 0), 0x0000_3C00);

    // v_cvt_pk_bf16_f32 v4, v1, v2: ties to even (0x3F80_8000 → 0x3F80, 0x3F81_8000 →
    // 0x3F82), a signaling NaN quieted, f32::MAX rounding to +inf, denormals as MODE's f32
    // input mode says.
    let a = per_lane(&[f(1.0), 0x3F80_8000, 0x7F80_0001, 0x0001_8000]);
    let b = per_lane(&[f(-2.0), 0x3F81_8000, 0x7F7F_FFFF, 0x8001_0000]);
    let pkbf = [0x04, 0x00, 0x68, 0xD2, 0x01, 0x05, 0x02, 0x00];
    let w = run(&pkbf, KEEP_F32, [&a, &b, &[0; WAVE_SIZE]], 0);
    assert_eq!(
        lanes4(&w)[..4],
        [0xC000_3F80, 0x3F82_3F80, 0x7F80_7FC0, 0x8001_0002]
    );
    let w = run(&pkbf, 0, [&a, &b, &[0; WAVE_SIZE]], 0);
    assert_eq!(
        w.v(4, 3),
        0x8000_0000,
        "f32 denormal inputs flushed by MODE 0"
    );

    // v_ashr_pk_i8_i32 v4, v1, v2, v3 and v_ashr_pk_u8_i32 ... op_sel:[0,0,0,1].
    let a = per_lane(&[256, (-1i32) as u32, 40]);
    let b = per_lane(&[(-1000i32) as u32, 0x7FFF_FFFF, (-40i32) as u32]);
    let c = per_lane(&[1, 33, 2]);
    let w = run(
        &[0x04, 0x00, 0x65, 0xD2, 0x01, 0x05, 0x0E, 0x04],
        0,
        [&a, &b, &c],
        0xAAAA_BBBB,
    );
    assert_eq!(lanes4(&w)[..3], [0xAAAA_807F, 0xAAAA_7FFF, 0xAAAA_F60A]);
    let w = run(
        &[0x04, 0x40, 0x66, 0xD2, 0x01, 0x05, 0x0E, 0x04],
        0,
        [&a, &b, &c],
        0xAAAA_BBBB,
    );
    assert_eq!(lanes4(&w)[..3], [0x0080_BBBB, 0xFF00_BBBB, 0x000A_BBBB]);

    // v_cvt_sr_bf8_f32 / v_cvt_sr_fp8_f32 v4, v1, v2 on gfx950: the seed's top 21 bits
    // (BF8) or 20 bits (FP8) join 1.0's mantissa. 0xC000_0000 gives 1.1875 → BF8 1.25
    // (0x3D) and 1.09375 → FP8 1.125 (0x39); 0x4000_0000 gives 1.0625 → 0x3C and 1.03125 →
    // 0x38.
    let one = per_lane(&[f(1.0), f(1.0)]);
    let seed = per_lane(&[0xC000_0000, 0x4000_0000]);
    let w = run(
        &[0x04, 0x00, 0xA5, 0xD2, 0x01, 0x05, 0x02, 0x00],
        0,
        [&one, &seed, &[0; WAVE_SIZE]],
        0x1234_5678,
    );
    assert_eq!((w.v(4, 0), w.v(4, 1)), (0x1234_563D, 0x1234_563C));
    let w = run(
        &[0x04, 0x00, 0xA4, 0xD2, 0x01, 0x05, 0x02, 0x00],
        0,
        [&one, &seed, &[0; WAVE_SIZE]],
        0x1234_5678,
    );
    assert_eq!((w.v(4, 0), w.v(4, 1)), (0x1234_5639, 0x1234_5638));
}

/// gfx950's v_pk_minimum3_f16 / v_pk_maximum3_f16 (CDNA4 ISA VOP3P 27, 28; LLVM 22's words):
/// per half the IEEE minimum/maximum of three (a NaN wins, quieted; -0 < +0), the halves
/// picked by op_sel/op_sel_hi as for the other packed f16 instructions.
#[test]
fn gfx950_packed_minimum3_and_maximum3() {
    let a = per_lane(&[0xC000_3C00, 0x0000_7C01]);
    let b = per_lane(&[0x7E01_8000]);
    let c = per_lane(&[0x4000_0000]);
    let w = gfx950_try(
        &[0x04, 0x40, 0x9B, 0xD3, 0x01, 0x05, 0x0E, 0x1C],
        0,
        [&a, &b, &c],
        0,
    )
    .unwrap();
    assert_eq!((w.v(4, 0), w.v(4, 1)), (0x7E01_8000, 0x0000_7E01));
    // v_pk_maximum3_f16 v4, v1, v2, v3 op_sel:[1,0,0] op_sel_hi:[0,1,1]: the low result
    // takes S0's high half (-2) and the high result S0's low half (1.0).
    let w = gfx950_try(
        &[0x04, 0x48, 0x9C, 0xD3, 0x01, 0x05, 0x0E, 0x14],
        0,
        [&a, &b, &c],
        0,
    )
    .unwrap();
    assert_eq!(w.v(4, 0), 0x7E01_0000);
}

/// gfx950's `buffer_atomic_pk_add_bf16` (LLVM 22's words): each bf16 half of the memory
/// dword plus the matching half of the data, as the gfx942 `global_atomic_pk_add_bf16`
/// does; with `sc0` the old dword comes back.
#[test]
fn gfx950_buffer_atomic_pk_add_bf16() {
    let mem = BufMemory::new(4);
    // Dword 0: (1.0, 2.0); dword 1: (1.0, 1.0).
    mem.write(BufMemory::BASE, &0x4000_3F80u32.to_le_bytes())
        .unwrap();
    mem.write(BufMemory::BASE + 4, &0x3F80_3F80u32.to_le_bytes())
        .unwrap();
    for (bytes, dword, want_mem, want_v1) in [
        // buffer_atomic_pk_add_bf16 v1, off, s[8:11], 0: (1+1, 2-1) = (2.0, 1.0).
        (
            [0x00, 0x00, 0x48, 0xE1, 0x00, 0x01, 0x02, 0x80],
            0,
            0x3F80_4000,
            0xBF80_3F80,
        ),
        // ... offset:4 sc0: (1+1, 1-1) = (2.0, 0), the old dword returned.
        (
            [0x04, 0x40, 0x48, 0xE1, 0x00, 0x01, 0x02, 0x80],
            1,
            0x0000_4000,
            0x3F80_3F80,
        ),
    ] {
        let inst = decode(&bytes, Gfx9Target::Gfx950).unwrap();
        let mut w = Wave::new(0x1000, false);
        w.sreg[8..12].copy_from_slice(&[BufMemory::BASE as u32, 0, 64, 0]);
        w.set_exec(1);
        w.set_v(1, 0, 0xBF80_3F80); // (1.0, -1.0)
        general_step(&mut w, &inst, 0x1000, &mem, &mut [])
            .unwrap_or_else(|e| panic!("{inst}: {e}"));
        assert_eq!(mem.dword(dword), want_mem, "{inst}");
        assert_eq!(w.v(1, 0), want_v1, "{inst}");
    }
}

/// gfx950's dense MFMAs with twice gfx942's K (LLVM 22's words) in the layout of the CDNA4
/// ISA's tables (§7.1.5.1 "BF16", "IU8"; the §7.1.4 formulas): A[i][k] in lane
/// `i + M·(k / K_L)`, item `k % K_L` (K_L = 8 for f16/bf16, 16 for i8); D[i][j] in lane
/// `j + N·((i / 4) % M_I)`, item `i % 4 + 4·(i / (4·M_I))` (M_I = 64 / N). The values are
/// small integers, so every sum is exact and D is compared bit for bit with a host product.
/// (A K order shared by A and B gives the same D, so what this checks is which lanes hold
/// which rows and K groups, and where D lands; seen failing with either changed.)
#[test]
fn gfx950_wide_k_mfmas() {
    // (word, M, K, bits per element, float kind: 0 i8, 1 f16, 2 bf16).
    let cases: [([u8; 8], usize, usize, u32, u8); 3] = [
        // v_mfma_f32_16x16x32_f16 v[0:3], v[4:7], v[8:11], 0
        (
            [0x00, 0x00, 0xD4, 0xD3, 0x04, 0x11, 0x02, 0x02],
            16,
            32,
            16,
            1,
        ),
        // v_mfma_i32_32x32x32_i8 v[0:15], v[16:19], v[20:23], 0
        (
            [0x00, 0x00, 0xB8, 0xD3, 0x10, 0x29, 0x02, 0x02],
            32,
            32,
            8,
            0,
        ),
        // v_mfma_f32_32x32x16_bf16 v[0:15], v[16:19], v[20:23], 0
        (
            [0x00, 0x00, 0xB7, 0xD3, 0x10, 0x29, 0x02, 0x02],
            32,
            16,
            16,
            2,
        ),
    ];
    for (word, m, k, bits, kind) in cases {
        let inst = decode(&word, Gfx9Target::Gfx950).unwrap();
        let (a_reg, b_reg) = if m == 16 { (4, 8) } else { (16, 20) };
        let kl = 4 * 32 / bits as usize;
        // Small integers -4..=4 as i8, f16 or bf16 bits.
        let val = |x: i32| -> u32 {
            match kind {
                0 => x as u8 as u32,
                1 => u32::from(half::f16::from_f32(x as f32).to_bits()),
                _ => u32::from(half::bf16::from_f32(x as f32).to_bits()),
            }
        };
        let a_of = |i: usize, kk: usize| ((i * 3 + kk * 5) % 9) as i32 - 4;
        let b_of = |kk: usize, j: usize| ((kk * 7 + j * 2) % 9) as i32 - 4;
        let mut w = Wave::new(0x1000, false);
        w.set_exec(u64::MAX);
        for lane in 0..WAVE_SIZE {
            for r in 0..4 {
                w.set_v(a_reg + r, lane, 0);
                w.set_v(b_reg + r, lane, 0);
            }
        }
        let put = |w: &mut Wave, reg: usize, lane: usize, item: usize, v: u32| {
            let (r, sh) = (reg + item * bits as usize / 32, item * bits as usize % 32);
            let old = w.v(r, lane);
            let mask = (((1u64 << bits) - 1) as u32) << sh;
            w.set_v(r, lane, old & !mask | (v << sh) & mask);
        };
        for i in 0..m {
            for kk in 0..k {
                let lane = i + m * (kk / kl);
                put(&mut w, a_reg, lane, kk % kl, val(a_of(i, kk)));
                put(&mut w, b_reg, lane, kk % kl, val(b_of(kk, i)));
            }
        }
        general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut [])
            .unwrap_or_else(|e| panic!("{inst}: {e}"));
        let m_i = 64 / m;
        for i in 0..m {
            for j in 0..m {
                let want: i32 = (0..k).map(|kk| a_of(i, kk) * b_of(kk, j)).sum();
                let (lane, item) = (j + m * ((i / 4) % m_i), i % 4 + 4 * (i / (4 * m_i)));
                let got = w.v(item, lane);
                let want = if kind == 0 {
                    want as u32
                } else {
                    (want as f32).to_bits()
                };
                assert_eq!(got, want, "{inst}: D[{i}][{j}] (v{item} lane {lane})");
            }
        }
    }
}

/// gfx950's `v_mfma_f32_16x16x128_f8f6f4` and `v_mfma_f32_32x32x64_f8f6f4` with A and B in
/// different formats (cbsz, blgp: 0 FP8, 1 BF8, 2 FP6, 3 BF6, 4 FP4) laid out as the CDNA4
/// ISA's §7.1.5.1 tables show (lane group g = lane / M: FP8/BF8 K positions 16g.. in the
/// first four registers and K/2 + 16g.. in the next four; FP6/BF6/FP4 32g.. in order), the
/// codes written from table 30 by hand. Values in ±{0, 0.5, 1, 1.5, 2} make every sum exact;
/// D is compared with a host product. Mixing formats is what checks the layouts: a K
/// position one format places differently from the other pairs the wrong elements.
#[test]
fn gfx950_f8f6f4_mfmas_mix_formats() {
    // Codes of 0, 0.5, 1, 1.5, 2 and the sign bit, per format (bits per element).
    const CODES: [([u32; 5], u32, u32); 5] = [
        ([0x00, 0x30, 0x38, 0x3C, 0x40], 0x80, 8), // FP8 E4M3 bias 7
        ([0x00, 0x38, 0x3C, 0x3E, 0x40], 0x80, 8), // BF8 E5M2 bias 15
        ([0x00, 0x04, 0x08, 0x0C, 0x10], 0x20, 6), // FP6 E2M3 bias 1
        ([0x00, 0x08, 0x0C, 0x0E, 0x10], 0x20, 6), // BF6 E3M2 bias 3
        ([0x0, 0x1, 0x2, 0x3, 0x4], 0x8, 4),       // FP4 E2M1 bias 1
    ];
    // Value index -4..=4 → ±{0, 0.5, 1, 1.5, 2}.
    let value = |x: i32| x as f32 / 2.0;
    let code = |x: i32, fmt: usize| {
        let (mags, sign, _) = CODES[fmt];
        mags[x.unsigned_abs() as usize] | if x < 0 { sign } else { 0 }
    };
    // Lane and element of matrix position (row or column i, K position k).
    let place = |m: usize, kk: usize, fmt: usize, i: usize, k: usize| -> (usize, usize) {
        let (g, e) = if fmt < 2 {
            if k < kk / 2 {
                (k / 16, k % 16)
            } else {
                ((k - kk / 2) / 16, 16 + (k - kk / 2) % 16)
            }
        } else {
            (k / 32, k % 32)
        };
        (i + m * g, e)
    };
    let put = |w: &mut Wave, reg: usize, lane: usize, e: usize, bits: u32, c: u32| {
        let bit = e * bits as usize;
        let (r, sh) = (reg + bit / 32, bit % 32);
        let lo = w.v(r, lane) & !(((1u64 << bits) - 1) << sh) as u32 | c << sh;
        w.set_v(r, lane, lo);
        if sh + bits as usize > 32 {
            let hi_bits = sh + bits as usize - 32;
            let hi = w.v(r + 1, lane) & !((1u32 << hi_bits) - 1) | c >> (bits as usize - hi_bits);
            w.set_v(r + 1, lane, hi);
        }
    };
    for (m, kk) in [(16usize, 128usize), (32, 64)] {
        let (a_reg, b_reg, w0, w1) = if m == 16 {
            (4, 12, 0xD3AD_0000u32, 0x0202_1904u32)
        } else {
            (16, 24, 0xD3AE_0000, 0x0202_3110)
        };
        for (fa, fb) in [(0, 4), (4, 0), (2, 1), (3, 2), (1, 3), (0, 0)] {
            let mut bytes = [0u8; 8];
            bytes[..4].copy_from_slice(&(w0 | (fa as u32) << 8).to_le_bytes());
            bytes[4..].copy_from_slice(&(w1 | (fb as u32) << 29).to_le_bytes());
            let inst = decode(&bytes, Gfx9Target::Gfx950).unwrap();
            let a_of = |i: usize, k: usize| ((i * 5 + k * 3) % 9) as i32 - 4;
            let b_of = |k: usize, j: usize| ((k * 7 + j) % 9) as i32 - 4;
            let mut w = Wave::new(0x1000, false);
            w.set_exec(u64::MAX);
            for lane in 0..WAVE_SIZE {
                for r in 0..8 {
                    w.set_v(a_reg + r, lane, 0);
                    w.set_v(b_reg + r, lane, 0);
                }
            }
            for i in 0..m {
                for k in 0..kk {
                    let (lane, e) = place(m, kk, fa, i, k);
                    put(&mut w, a_reg, lane, e, CODES[fa].2, code(a_of(i, k), fa));
                    let (lane, e) = place(m, kk, fb, i, k);
                    put(&mut w, b_reg, lane, e, CODES[fb].2, code(b_of(k, i), fb));
                }
            }
            general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut [])
                .unwrap_or_else(|e| panic!("{inst}: {e}"));
            let m_i = 64 / m;
            for i in 0..m {
                for j in 0..m {
                    let want: f32 = (0..kk).map(|k| value(a_of(i, k)) * value(b_of(k, j))).sum();
                    let (lane, item) = (j + m * ((i / 4) % m_i), i % 4 + 4 * (i / (4 * m_i)));
                    assert_eq!(f32::from_bits(w.v(item, lane)), want, "{inst}: D[{i}][{j}]");
                }
            }
        }
    }
    // The scaled form (CDNA4 ISA §7.2): v_mfma_ld_scale_b32 v20, v21 op_sel:[1,0]
    // op_sel_hi:[1,1] before the 16x16x128 MFMA (its abid 1), FP8 A and FP4 B (the text
    // is LLVM 22's for these 16 bytes). A's scales
    // are byte 3 of v20 and B's byte 2 of v21 ({op_sel_hi, op_sel}), in lane
    // row + 16 · (k / 32); each 32-long partial product is multiplied by both.
    let (fa, fb) = (0usize, 4usize);
    let mut bytes = [0u8; 16];
    bytes[..4].copy_from_slice(&(0xD3AC_0000u32 | 1 << 11).to_le_bytes());
    bytes[4..8].copy_from_slice(&(0x114u32 | 0x115 << 9 | 3 << 27).to_le_bytes());
    bytes[8..12].copy_from_slice(&(0xD3AD_0800u32 | (fa as u32) << 8).to_le_bytes());
    bytes[12..].copy_from_slice(&(0x0202_1904u32 | (fb as u32) << 29).to_le_bytes());
    let inst = decode(&bytes, Gfx9Target::Gfx950).unwrap();
    assert_eq!(inst.size, 16);
    assert_eq!(
        inst.to_string(),
        "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:15], 0, v20, v21 \
         op_sel:[1,0,0] op_sel_hi:[1,1,0] blgp:4"
    );
    let a_of = |i: usize, k: usize| ((i * 5 + k * 3) % 9) as i32 - 4;
    let b_of = |k: usize, j: usize| ((k * 7 + j) % 9) as i32 - 4;
    let ea = |lane: usize| 125 + (lane * 7 % 5) as u32; // 2^-2 ..= 2^2
    let eb = |lane: usize| 125 + (lane * 3 % 5) as u32;
    let mut w = Wave::new(0x1000, false);
    w.set_exec(u64::MAX);
    for lane in 0..WAVE_SIZE {
        for r in 0..16 {
            w.set_v(4 + r, lane, 0);
        }
        w.set_v(20, lane, ea(lane) << 24 | 0x00FF_FFFF);
        w.set_v(21, lane, 0xFF00_FFFF | eb(lane) << 16);
    }
    for i in 0..16 {
        for k in 0..128 {
            let (lane, e) = place(16, 128, fa, i, k);
            put(&mut w, 4, lane, e, CODES[fa].2, code(a_of(i, k), fa));
            let (lane, e) = place(16, 128, fb, i, k);
            put(&mut w, 12, lane, e, CODES[fb].2, code(b_of(k, i), fb));
        }
    }
    general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut [])
        .unwrap_or_else(|e| panic!("{inst}: {e}"));
    for i in 0..16 {
        for j in 0..16 {
            let want: f32 = (0..4)
                .map(|g| {
                    let part: f32 = (32 * g..32 * g + 32)
                        .map(|k| value(a_of(i, k)) * value(b_of(k, j)))
                        .sum();
                    let sa = 2f32.powi(ea(i + 16 * g) as i32 - 127);
                    let sb = 2f32.powi(eb(j + 16 * g) as i32 - 127);
                    part * sa * sb
                })
                .sum();
            let (lane, item) = (j + 16 * (i / 4), i % 4);
            assert_eq!(f32::from_bits(w.v(item, lane)), want, "scaled D[{i}][{j}]");
        }
    }
    // The E8M0 NaN as a scale is refused.
    w.set_v(20, 5, 0xFF00_0000);
    let e = general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut []).unwrap_err();
    assert!(e.to_string().contains("lane 5's A scale is 0xFF"), "{e}");

    // Format code 5 names no format: refused by name, D untouched.
    let inst = decode(
        &[0x00, 0x05, 0xAD, 0xD3, 0x04, 0x19, 0x02, 0x04],
        Gfx9Target::Gfx950,
    )
    .unwrap();
    let mut w = Wave::new(0x1000, false);
    w.set_exec(u64::MAX);
    let e = general_step(&mut w, &inst, 0x1000, &BufMemory::new(16), &mut []).unwrap_err();
    assert!(e.to_string().contains("format codes above 4"), "{e}");
}
