//! The decode cache: each code page's instructions decoded (and classified for the fast path)
//! once, validated by content on first use in each dispatch.

#[allow(unused_imports)]
use super::*;

/// Code bytes per page of a [`DecodeCache`] (a power of two).
pub(crate) const CACHE_PAGE_BYTES: u64 = 4096;

/// Code bytes past a page's end that an instruction starting in it may cover: the longest
/// gfx9 encoding is 16 bytes (gfx950's scaled MFMA, two 64-bit words; otherwise 8: a 32-bit
/// encoding with a literal, or a 64-bit one), so one starting at the page's last dword ends
/// 12 bytes into the next page.
pub(crate) const CACHE_PAGE_TAIL_BYTES: u64 = 12;

/// Most code pages a [`DecodeCache`] keeps (256 KiB of code); past it, the page validated
/// longest ago is dropped. A page costs its raw bytes (4 KiB), its slot index (4 KiB) and
/// the instructions decoded in it.
pub const DECODE_CACHE_MAX_PAGES: usize = 64;

/// One code page of a [`DecodeCache`].
#[derive(Debug)]
pub(crate) struct CachePage {
    /// Page number (device address / [`CACHE_PAGE_BYTES`]).
    pub(super) number: u64,
    /// Device address of `raw[0]`.
    pub(super) raw_start: u64,
    /// The code bytes the page's instructions were decoded from: the page and
    /// [`CACHE_PAGE_TAIL_BYTES`] past it, clipped to the code they came from.
    pub(super) raw: Vec<u8>,
    /// One slot per dword: 0 = not decoded, else index + 1 into `insts`.
    pub(super) slots: Vec<u32>,
    /// Each decoded instruction with its fast-path form.
    pub(super) insts: Vec<(Instruction, Fast)>,
    /// The [`DecodeCache::generation`] the page was last validated in.
    pub(super) checked: u64,
}

impl CachePage {
    /// The device addresses of the code bytes page `number` covers (its raw window: the page
    /// and [`CACHE_PAGE_TAIL_BYTES`] past it, clipped to `code`); empty when the page holds
    /// none of the code.
    pub(super) fn window(number: u64, code: &CodeSource<'_>) -> (u64, u64) {
        let start = number * CACHE_PAGE_BYTES;
        let lo = start.max(code.base_address());
        let hi = start
            .saturating_add(CACHE_PAGE_BYTES + CACHE_PAGE_TAIL_BYTES)
            .min(code.end_address());
        (lo, hi.max(lo))
    }
}

/// The decoded instructions of the code a thread runs, kept across dispatches: each
/// instruction is decoded the first time a wave reaches it and served from here afterwards,
/// by every later dispatch of the same kernel (issue 19: "decode each kernel once").
///
/// Never stale: entries are keyed by device address, but every page (4 KiB of code) keeps
/// the raw bytes its instructions were decoded from, and the first time a page is used in a
/// dispatch (after [`DecodeCache::begin_dispatch`]) it is compared with the code bytes of
/// that dispatch's code source: for [`DeviceCode`], the page is read from device memory then,
/// once per dispatch, and only the pages waves reach are read, never the whole image. When
/// they differ — a loader put other code at that address, a program rewrote its code — the
/// page's instructions are dropped and decoded again from the new bytes. This is validation
/// by content, so it holds for any runtime, also one that never invalidates an instruction
/// cache (no PM4 ACQUIRE_MEM, no free/unmap notification is needed). Within one dispatch the
/// code is immutable, as a GPU's instruction cache assumes while a dispatch runs. A page's window includes the 4 bytes
/// past it (the rest of an 8-byte instruction starting on its last dword) and where the code
/// ends, so an instruction crossing into the next page or ending at the code's end is
/// revalidated with everything it was decoded from.
///
/// Bounded: at most [`DECODE_CACHE_MAX_PAGES`] pages; another page evicts the one validated
/// longest ago. Another [`Gfx9Target`] empties the cache.
///
/// It also keeps the thread's first few waves (their register files, 64 KiB of VGPRs each,
/// and as many AGPRs on gfx90a/gfx942) and LDS buffer from one call
/// to the next, so a small dispatch allocates nothing: a reused wave's registers are zeroed
/// below the highest register any instruction decoded since the cache was last emptied
/// names (no wave running code of this cache writes above it), so every dispatch still
/// starts from zeroed registers, as a new wave would.
///
/// Make one per host thread that runs work-groups and pass it to every call on that thread
/// (the emulated device keeps one per queue and worker thread).
#[derive(Debug, Default)]
pub struct DecodeCache {
    /// The target the entries were decoded for.
    pub(super) target: Option<Gfx9Target>,
    /// Counts [`DecodeCache::begin_dispatch`] calls: a page is validated once per generation.
    pub(super) generation: u64,
    pub(super) pages: Vec<CachePage>,
    /// Index into `pages` of the page last looked up.
    pub(super) last: usize,
    /// The instruction at the last unaligned pc (not cached).
    pub(super) unaligned: Option<(Instruction, Fast)>,
    /// One past the highest VGPR / AGPR any instruction decoded since the cache was emptied
    /// names (at least the three work-item id VGPRs): no wave running this code writes a
    /// register at or above it.
    pub(super) vgpr_bound: usize,
    pub(super) agpr_bound: usize,
    /// Instructions decoded over the cache's life.
    pub(super) decoded: u64,
    /// Pages whose bytes had changed when they were validated, over the cache's life.
    pub(super) invalidated: u64,
    /// Code bytes read from device memory ([`CodeSource::Device`]), over the cache's life.
    pub(super) code_bytes_read: u64,
    /// The waves and LDS of the last call, reused by the next.
    pub(super) waves: Vec<Wave>,
    pub(super) lds: Vec<u8>,
    /// The CUs of the last CU enable masks seen (`enabled_cus` of them).
    pub(super) cus: Option<([u32; crate::hwid::MAX_SHADER_ENGINES], Vec<CuId>)>,
}

impl DecodeCache {
    /// An empty cache.
    pub fn new() -> DecodeCache {
        DecodeCache::default()
    }

    /// Instructions held decoded now.
    pub fn len(&self) -> usize {
        self.pages.iter().map(|p| p.insts.len()).sum()
    }

    /// Whether no instruction is held decoded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Instructions decoded over the cache's life (each decode of an instruction counts,
    /// also one of an instruction decoded again because its bytes changed).
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// Pages found changed (their instructions dropped) over the cache's life.
    pub fn invalidated_pages(&self) -> u64 {
        self.invalidated
    }

    /// Code bytes read from device memory ([`CodeSource::Device`]) over the cache's life:
    /// each page a call's waves reach, once per call (4 KiB and the 12 bytes past it, clipped
    /// to the code). Host bytes ([`CodeSource::Host`]) are compared in place and not counted.
    pub fn code_bytes_read(&self) -> u64 {
        self.code_bytes_read
    }

    /// Code pages held now (at most [`DECODE_CACHE_MAX_PAGES`]).
    pub fn pages(&self) -> usize {
        self.pages.len()
    }

    /// Starts a dispatch: every page is validated again on its first use after this (device
    /// code read again), once, however many [`run_workgroups_preemptible`] calls run the
    /// dispatch's work-groups with this cache. Call it before a dispatch's first call on the
    /// thread: the code may have changed since the last dispatch.
    pub fn begin_dispatch(&mut self) {
        self.generation += 1;
    }

    /// Starts a call that runs `target` code: empties the cache when its entries are for
    /// another target.
    pub(super) fn bind(&mut self, target: Gfx9Target) {
        if self.target != Some(target) {
            self.target = Some(target);
            self.pages.clear();
            self.waves.clear();
            self.last = 0;
            self.unaligned = None;
            self.vgpr_bound = 3;
            self.agpr_bound = 0;
        }
    }

    /// Decodes the instruction at `pc` of `code` from the bytes of its page `p` (validated in
    /// this generation); an unaligned pc within 8 bytes of the page's window end (only
    /// `s_setpc_b64` makes one, decoded each time it runs) is read from `code`.
    ///
    /// # Errors
    /// As [`DecodeCache::get`].
    #[cold]
    #[inline(never)]
    pub(super) fn decode_at(
        &mut self,
        p: usize,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
        target: Gfx9Target,
        pc: u64,
    ) -> Result<Instruction> {
        let (base, end) = (code.base_address(), code.end_address());
        if pc < base || pc >= end {
            bail!(
                Status::IllegalInstruction,
                "pc {pc:#x} outside the kernel code ({base:#x}..+{:#x})",
                end - base
            );
        }
        // The longest encoding is 16 bytes; none is read past the code's end.
        let n = (end - pc).min(16) as usize;
        let pg = &self.pages[p];
        let off = (pc - pg.raw_start) as usize;
        let mut buf = [0u8; 16];
        let bytes = match pg.raw.get(off..off + n) {
            Some(b) => b,
            None => {
                code.read(pc, &mut buf[..n], memory)?;
                if let CodeSource::Device(_) = code {
                    self.code_bytes_read += n as u64;
                }
                &buf[..n]
            }
        };
        let kernel_off = pc.wrapping_sub(code.entry_address());
        decode(bytes, target)
            .map_err(|e| error!(e.status(), "kernel offset {kernel_off:#x}: {}", e.detail()))
    }

    /// The CUs `cu_enable` enables ([`enabled_cus`], computed once per mask).
    pub(super) fn cus(&mut self, cu_enable: &[u32; crate::hwid::MAX_SHADER_ENGINES]) -> &[CuId] {
        if self.cus.as_ref().is_none_or(|(m, _)| m != cu_enable) {
            self.cus = Some((*cu_enable, enabled_cus(cu_enable)));
        }
        self.cus.as_ref().map_or(&[], |(_, cus)| cus.as_slice())
    }

    /// The index of page `number`, validated against `code` in this generation (its
    /// instructions dropped when its bytes changed), added when absent.
    ///
    /// # Errors
    /// [`Status::MemoryFault`]: reading device code failed.
    #[inline]
    pub(super) fn page(
        &mut self,
        number: u64,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
    ) -> Result<usize> {
        let p = match self.pages.get(self.last) {
            Some(pg) if pg.number == number => self.last,
            _ => match self.pages.iter().position(|pg| pg.number == number) {
                Some(p) => p,
                None => {
                    if self.pages.len() >= DECODE_CACHE_MAX_PAGES {
                        let oldest = (0..self.pages.len())
                            .min_by_key(|&i| self.pages[i].checked)
                            .unwrap_or(0);
                        self.pages.swap_remove(oldest);
                    }
                    // Filled by the validation below.
                    self.pages.push(CachePage {
                        number,
                        raw_start: u64::MAX,
                        raw: Vec::new(),
                        slots: vec![0; (CACHE_PAGE_BYTES / 4) as usize],
                        insts: Vec::new(),
                        checked: self.generation.wrapping_sub(1),
                    });
                    self.pages.len() - 1
                }
            },
        };
        self.last = p;
        if self.pages[p].checked != self.generation {
            self.validate(p, code, memory)?;
        }
        Ok(p)
    }

    /// Validates page `p` against `code` for this generation: compares the code bytes of its
    /// window now (device code read through `memory`) with those it was decoded from, and
    /// drops its instructions when they differ.
    ///
    /// # Errors
    /// [`Status::MemoryFault`]: reading device code failed (the page stays unvalidated).
    #[cold]
    #[inline(never)]
    pub(super) fn validate(
        &mut self,
        p: usize,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
    ) -> Result<()> {
        let pg = &mut self.pages[p];
        let (lo, hi) = CachePage::window(pg.number, code);
        let mut buf = [0u8; (CACHE_PAGE_BYTES + CACHE_PAGE_TAIL_BYTES) as usize];
        let now: &[u8] = match code {
            CodeSource::Host(c) => {
                let off = (lo - c.base_address) as usize;
                c.bytes.get(off..off + (hi - lo) as usize).unwrap_or(&[])
            }
            CodeSource::Device(_) => {
                let now = &mut buf[..(hi - lo) as usize];
                if !now.is_empty() {
                    code.read(lo, now, memory)?;
                    self.code_bytes_read += now.len() as u64;
                }
                now
            }
        };
        if lo != pg.raw_start || now != pg.raw.as_slice() {
            if !pg.insts.is_empty() {
                self.invalidated += 1;
            }
            pg.raw_start = lo;
            pg.raw.clear();
            pg.raw.extend_from_slice(now);
            pg.slots.fill(0);
            pg.insts.clear();
        }
        pg.checked = self.generation;
        Ok(())
    }

    /// The instruction at `pc` of `code`, decoded now if it is not yet (device code is read
    /// through `memory`).
    ///
    /// # Errors
    /// - [`Status::IllegalInstruction`]: `pc` outside the code, or the bytes there do not
    ///   decode (the message names the kernel offset).
    /// - [`Status::MemoryFault`]: reading device code failed.
    #[inline]
    pub(super) fn get(
        &mut self,
        code: &CodeSource<'_>,
        memory: &dyn DeviceMemory,
        target: Gfx9Target,
        pc: u64,
    ) -> Result<&(Instruction, Fast)> {
        let p = self.page(pc / CACHE_PAGE_BYTES, code, memory)?;
        let slot = (pc % CACHE_PAGE_BYTES / 4) as usize;
        let i = self.pages[p].slots[slot];
        if i != 0 {
            return Ok(&self.pages[p].insts[i as usize - 1]);
        }
        let inst = self.decode_at(p, code, memory, target, pc)?;
        self.decoded += 1;
        let op = inst.op();
        // An s_setreg of HW_REG_MODE (id 1) whose field covers bit 27 (GPR_IDX_EN) can turn
        // GPR index mode on as s_set_gpr_idx_on does.
        let hwreg = inst.imm as u16 as u32;
        let (id, offset, size) = (hwreg & 0x3F, hwreg >> 6 & 0x1F, (hwreg >> 11) + 1);
        let sets_gpr_idx = matches!(op, Op::SSetregB32 | Op::SSetregImm32B32)
            && id == 1
            && offset <= 27
            && 27 < offset + size;
        if op.attrs().class == Class::SetGprIdx || sets_gpr_idx {
            // Indexed VGPR addressing (GPR index mode, M0-relative moves) reaches VGPRs past
            // the ones the operands name: reused waves are then zeroed whole.
            self.vgpr_bound = crate::wave::NUM_VGPRS;
        }
        for op in [
            &inst.dst,
            &inst.sdst,
            &inst.src[0],
            &inst.src[1],
            &inst.src[2],
        ] {
            match *op {
                Operand::Vgpr { index, count } => {
                    self.vgpr_bound = self.vgpr_bound.max(index as usize + count.max(1) as usize)
                }
                Operand::Agpr { index, count } => {
                    self.agpr_bound = self.agpr_bound.max(index as usize + count.max(1) as usize)
                }
                _ => {}
            }
        }
        let inst = (inst, crate::fast::classify(&inst, pc));
        if pc % 4 != 0 {
            // A slot is a dword: an unaligned pc (only `s_setpc_b64` makes one) is decoded
            // each time it runs.
            return Ok(self.unaligned.insert(inst));
        }
        let pg = &mut self.pages[p];
        pg.insts.push(inst);
        pg.slots[slot] = pg.insts.len() as u32;
        Ok(&pg.insts[pg.insts.len() - 1])
    }
}
