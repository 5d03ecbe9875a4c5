//! The apertures of FLAT addressing: which 64-bit FLAT addresses a gfx9 GPU sends to the
//! work-group's LDS, which to the lane's private segment, and which it refuses.
//!
//! On silicon they come from the `SH_MEM_BASES` register, which amdkfd programs for each
//! process (`kfd_flat_memory.c`: `kfd_init_apertures_v9` puts the LDS aperture at `1 << 48`
//! and the scratch aperture at `2 << 48`; `compute_sh_mem_bases_64bit` packs their top 16 bits
//! into the register; `GET_PROCESS_APERTURES_NEW` reports the same bases and limits). A FLAT
//! address inside neither aperture is a GPUVM address, unless bits 63:47 are neither all 0
//! nor all 1: that is the hole of the 48-bit virtual address space, and the access is a
//! memory violation (Vega ISA §9.3 "Flat memory instructions", §4.5 "Memory violations";
//! the queue error ROCR reads as `HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION`).

/// A process's shared (LDS) and private (scratch) apertures on one GPU, held as the
/// `SH_MEM_BASES` register value they come from: bits 15:0 are `PRIVATE_BASE` and bits 31:16
/// `SHARED_BASE`, each bits 63:48 of its aperture's base address (gc_9_0_sh_mask.h
/// `SH_MEM_BASES__PRIVATE_BASE`/`__SHARED_BASE`). Each aperture spans 4 GiB from its base
/// (amdkfd's `MAKE_LDS_APP_LIMIT`/`MAKE_SCRATCH_APP_LIMIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Apertures {
    sh_mem_bases: u32,
}

/// Where a FLAT address goes ([`Apertures::resolve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlatTarget {
    /// Byte `0` of the work-group's LDS plus this offset (bytes).
    Lds(u32),
    /// This byte offset in the lane's private segment.
    Private(u32),
    /// A GPUVM (device virtual) address.
    Global(u64),
    /// In neither aperture and in the hole of the 48-bit address space: a memory violation.
    Hole,
}

/// Bytes each aperture spans from its base: 4 GiB.
const APERTURE_BYTES: u64 = 1 << 32;

impl Apertures {
    /// What amdkfd programs on every gfx9 (and gfx10/11) GPU: the LDS aperture at
    /// `0x1_0000_0000_0000`, the scratch aperture at `0x2_0000_0000_0000`
    /// (`kfd_flat_memory.c`: `MAKE_LDS_APP_BASE_V9`, `MAKE_SCRATCH_APP_BASE_V9`).
    pub const AMDKFD_GFX9: Apertures = Apertures::from_sh_mem_bases(0x0001_0002);

    /// The apertures a `SH_MEM_BASES` value selects.
    pub const fn from_sh_mem_bases(sh_mem_bases: u32) -> Apertures {
        Apertures { sh_mem_bases }
    }

    /// The apertures whose bases are `shared_base` and `private_base` (bytes; only bits 63:48
    /// count, as the register holds no others), packed as amdkfd's
    /// `compute_sh_mem_bases_64bit` does.
    pub const fn from_bases(shared_base: u64, private_base: u64) -> Apertures {
        Apertures::from_sh_mem_bases(
            ((shared_base >> 48) as u32) << 16 | (private_base >> 48) as u32,
        )
    }

    /// The `SH_MEM_BASES` value.
    pub const fn sh_mem_bases(self) -> u32 {
        self.sh_mem_bases
    }

    /// The shared (LDS) aperture's first address: what `src_shared_base` reads as a 64-bit
    /// operand.
    pub const fn shared_base(self) -> u64 {
        ((self.sh_mem_bases >> 16) as u64) << 48
    }

    /// The shared aperture's last address (`src_shared_limit` as a 64-bit operand).
    pub const fn shared_limit(self) -> u64 {
        self.shared_base() + (APERTURE_BYTES - 1)
    }

    /// The private (scratch) aperture's first address (`src_private_base`).
    pub const fn private_base(self) -> u64 {
        ((self.sh_mem_bases & 0xFFFF) as u64) << 48
    }

    /// The private aperture's last address (`src_private_limit`).
    pub const fn private_limit(self) -> u64 {
        self.private_base() + (APERTURE_BYTES - 1)
    }

    /// Where the FLAT address `addr` goes: the shared aperture first, then the private one,
    /// then GPUVM unless `addr` is in the hole (bits 63:47 neither all 0 nor all 1). A base
    /// of 0 opens no aperture (amdkfd never programs one; the register's reset value).
    pub fn resolve(self, addr: u64) -> FlatTarget {
        let within = |base: u64| {
            addr.checked_sub(base)
                .filter(|o| base != 0 && *o < APERTURE_BYTES)
                .map(|o| o as u32)
        };
        if let Some(o) = within(self.shared_base()) {
            FlatTarget::Lds(o)
        } else if let Some(o) = within(self.private_base()) {
            FlatTarget::Private(o)
        } else if matches!(addr >> 47, 0 | 0x1_FFFF) {
            FlatTarget::Global(addr)
        } else {
            FlatTarget::Hole
        }
    }
}

impl Default for Apertures {
    /// [`Apertures::AMDKFD_GFX9`].
    fn default() -> Apertures {
        Apertures::AMDKFD_GFX9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amdkfd_gfx9_apertures() {
        // kfd_flat_memory.c: lds_base 1 << 48, scratch_base 2 << 48, limits base + 4 GiB - 1;
        // SH_MEM_BASES = SHARED_BASE (1) << 16 | PRIVATE_BASE (2).
        let a = Apertures::AMDKFD_GFX9;
        assert_eq!(a.sh_mem_bases(), 0x0001_0002);
        assert_eq!(a.shared_base(), 0x0001_0000_0000_0000);
        assert_eq!(a.shared_limit(), 0x0001_0000_FFFF_FFFF);
        assert_eq!(a.private_base(), 0x0002_0000_0000_0000);
        assert_eq!(a.private_limit(), 0x0002_0000_FFFF_FFFF);
        assert_eq!(
            Apertures::from_bases(0x0001_0000_0000_0000, 0x0002_0000_0000_0000),
            a
        );
    }

    #[test]
    fn addresses_resolve_as_the_hardware_routes_them() {
        let a = Apertures::AMDKFD_GFX9;
        assert_eq!(a.resolve(0x0001_0000_0000_0010), FlatTarget::Lds(0x10));
        assert_eq!(
            a.resolve(0x0001_0000_FFFF_FFFF),
            FlatTarget::Lds(0xFFFF_FFFF)
        );
        assert_eq!(a.resolve(0x0002_0000_0000_0000), FlatTarget::Private(0));
        assert_eq!(
            a.resolve(0x0002_0000_1234_5678),
            FlatTarget::Private(0x1234_5678)
        );
        // Past a limit, inside the 48-bit hole: bits 63:47 are 0b10 and 0b100.
        assert_eq!(a.resolve(0x0001_0001_0000_0000), FlatTarget::Hole);
        assert_eq!(a.resolve(0x0002_0001_0000_0000), FlatTarget::Hole);
        assert_eq!(a.resolve(0x8000_0000_0000), FlatTarget::Hole);
        assert_eq!(a.resolve(0x8000_0000_0000_0000), FlatTarget::Hole);
        // The top and bottom of the canonical halves are GPUVM addresses.
        assert_eq!(
            a.resolve(0x7FFF_FFFF_FFFF),
            FlatTarget::Global(0x7FFF_FFFF_FFFF)
        );
        assert_eq!(a.resolve(0x1000), FlatTarget::Global(0x1000));
        assert_eq!(
            a.resolve(0xFFFF_8000_0000_0000),
            FlatTarget::Global(0xFFFF_8000_0000_0000)
        );
        // Other apertures: a process whose LDS aperture is at 3 << 48 and scratch at 4 << 48.
        let b = Apertures::from_bases(3 << 48, 4 << 48);
        assert_eq!(b.sh_mem_bases(), 0x0003_0004);
        assert_eq!(b.resolve(0x0003_0000_0000_0008), FlatTarget::Lds(8));
        assert_eq!(b.resolve(0x0004_0000_0000_0008), FlatTarget::Private(8));
        assert_eq!(b.resolve(0x0001_0000_0000_0008), FlatTarget::Hole);
        // A zero register opens no aperture.
        let none = Apertures::from_sh_mem_bases(0);
        assert_eq!(none.resolve(0x10), FlatTarget::Global(0x10));
    }
}
