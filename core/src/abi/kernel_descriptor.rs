//! The 64-byte AMDGPU kernel descriptor (code object v3 and later): what a kernel dispatch
//! packet's `kernel_object` points at.
//!
//! Ref: LLVM AMDGPUUsage, "Kernel Descriptor" (table "Code Object V3 and Above Kernel
//! Descriptor"), "compute_pgm_rsrc1 for GFX6-GFX12", "compute_pgm_rsrc2 for GFX6-GFX12",
//! "Kernel Code Properties". The older `amd_kernel_code_t` of `amd_hsa_kernel_code.h` is a
//! different (256-byte) layout and is not used by code object v4+.

use core::mem::{offset_of, size_of};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// The kernel descriptor, byte for byte as the code object stores it (little-endian fields).
///
/// Ref: AMDGPUUsage "Code Object V3 and Above Kernel Descriptor": bits 0-31 group segment,
/// 32-63 private segment, 64-95 kernarg size, 128-191 entry offset, 352-383 rsrc3, 384-415
/// rsrc1, 416-447 rsrc2, 448-463 kernel code properties, 464-479 kernarg preload.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct KernelDescriptor {
    /// `GROUP_SEGMENT_FIXED_SIZE`: bytes of group (LDS) memory the kernel needs, not counting
    /// dynamically allocated group memory.
    pub group_segment_fixed_size: u32,
    /// `PRIVATE_SEGMENT_FIXED_SIZE`: bytes of private (scratch) memory per work-item, not
    /// counting a dynamic call stack.
    pub private_segment_fixed_size: u32,
    /// `KERNARG_SIZE`: size of the kernarg segment, bytes.
    pub kernarg_size: u32,
    /// Reserved, must be 0.
    pub reserved0: [u8; 4],
    /// `KERNEL_CODE_ENTRY_BYTE_OFFSET`: signed byte offset from the descriptor's own address to
    /// the kernel's first instruction (256-byte aligned).
    pub kernel_code_entry_byte_offset: i64,
    /// Reserved, must be 0.
    pub reserved1: [u8; 20],
    /// `COMPUTE_PGM_RSRC3`: the `COMPUTE_PGM_RSRC3` register value (GFX90A+/GFX10+; 0 before).
    pub compute_pgm_rsrc3: u32,
    /// `COMPUTE_PGM_RSRC1`: the `COMPUTE_PGM_RSRC1` register value; see [`Rsrc1`].
    pub compute_pgm_rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`: the `COMPUTE_PGM_RSRC2` register value; see [`Rsrc2`].
    pub compute_pgm_rsrc2: u32,
    /// Kernel code properties bits; see the accessors on [`KernelDescriptor`].
    pub kernel_code_properties: u16,
    /// `KERNARG_PRELOAD_SPEC_LENGTH` (bits 0-6) and `KERNARG_PRELOAD_SPEC_OFFSET` (bits 7-15).
    pub kernarg_preload: u16,
    /// Reserved, must be 0.
    pub reserved2: [u8; 4],
}

const _: () = assert!(size_of::<KernelDescriptor>() == 64);
const _: () = assert!(offset_of!(KernelDescriptor, group_segment_fixed_size) == 0);
const _: () = assert!(offset_of!(KernelDescriptor, private_segment_fixed_size) == 4);
const _: () = assert!(offset_of!(KernelDescriptor, kernarg_size) == 8);
const _: () = assert!(offset_of!(KernelDescriptor, reserved0) == 12);
const _: () = assert!(offset_of!(KernelDescriptor, kernel_code_entry_byte_offset) == 16);
const _: () = assert!(offset_of!(KernelDescriptor, reserved1) == 24);
const _: () = assert!(offset_of!(KernelDescriptor, compute_pgm_rsrc3) == 44);
const _: () = assert!(offset_of!(KernelDescriptor, compute_pgm_rsrc1) == 48);
const _: () = assert!(offset_of!(KernelDescriptor, compute_pgm_rsrc2) == 52);
const _: () = assert!(offset_of!(KernelDescriptor, kernel_code_properties) == 56);
const _: () = assert!(offset_of!(KernelDescriptor, kernarg_preload) == 58);
const _: () = assert!(offset_of!(KernelDescriptor, reserved2) == 60);

/// Size of a kernel descriptor, bytes; descriptors are also 64-byte aligned in a code object.
pub const KERNEL_DESCRIPTOR_SIZE: usize = 64;

/// Bit positions of `kernel_code_properties` (AMDGPUUsage "Kernel Code Properties"; bit 448
/// of the descriptor is bit 0 here).
pub mod code_properties {
    /// `ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER` (bit 0).
    pub const ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
    /// `ENABLE_SGPR_DISPATCH_PTR` (bit 1).
    pub const ENABLE_SGPR_DISPATCH_PTR: u16 = 1 << 1;
    /// `ENABLE_SGPR_QUEUE_PTR` (bit 2).
    pub const ENABLE_SGPR_QUEUE_PTR: u16 = 1 << 2;
    /// `ENABLE_SGPR_KERNARG_SEGMENT_PTR` (bit 3).
    pub const ENABLE_SGPR_KERNARG_SEGMENT_PTR: u16 = 1 << 3;
    /// `ENABLE_SGPR_DISPATCH_ID` (bit 4).
    pub const ENABLE_SGPR_DISPATCH_ID: u16 = 1 << 4;
    /// `ENABLE_SGPR_FLAT_SCRATCH_INIT` (bit 5).
    pub const ENABLE_SGPR_FLAT_SCRATCH_INIT: u16 = 1 << 5;
    /// `ENABLE_SGPR_PRIVATE_SEGMENT_SIZE` (bit 6).
    pub const ENABLE_SGPR_PRIVATE_SEGMENT_SIZE: u16 = 1 << 6;
    /// `ENABLE_WAVEFRONT_SIZE32` (bit 10; GFX10+, reserved 0 before).
    pub const ENABLE_WAVEFRONT_SIZE32: u16 = 1 << 10;
    /// `USES_DYNAMIC_STACK` (bit 11; set by code object v5+ producers).
    pub const USES_DYNAMIC_STACK: u16 = 1 << 11;
}

impl KernelDescriptor {
    fn prop(&self, bit: u16) -> bool {
        self.kernel_code_properties & bit != 0
    }
    /// `ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER`: the private segment buffer V# is in user SGPRs.
    pub fn enable_sgpr_private_segment_buffer(&self) -> bool {
        self.prop(code_properties::ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER)
    }
    /// `ENABLE_SGPR_DISPATCH_PTR`: the dispatch packet's address is in user SGPRs.
    pub fn enable_sgpr_dispatch_ptr(&self) -> bool {
        self.prop(code_properties::ENABLE_SGPR_DISPATCH_PTR)
    }
    /// `ENABLE_SGPR_QUEUE_PTR`: the `amd_queue_t` address is in user SGPRs.
    pub fn enable_sgpr_queue_ptr(&self) -> bool {
        self.prop(code_properties::ENABLE_SGPR_QUEUE_PTR)
    }
    /// `ENABLE_SGPR_KERNARG_SEGMENT_PTR`: the kernarg segment address is in user SGPRs.
    pub fn enable_sgpr_kernarg_segment_ptr(&self) -> bool {
        self.prop(code_properties::ENABLE_SGPR_KERNARG_SEGMENT_PTR)
    }
    /// `ENABLE_SGPR_DISPATCH_ID`: the 64-bit dispatch id is in user SGPRs.
    pub fn enable_sgpr_dispatch_id(&self) -> bool {
        self.prop(code_properties::ENABLE_SGPR_DISPATCH_ID)
    }
    /// `ENABLE_SGPR_FLAT_SCRATCH_INIT`: flat scratch initialisation values are in user SGPRs.
    pub fn enable_sgpr_flat_scratch_init(&self) -> bool {
        self.prop(code_properties::ENABLE_SGPR_FLAT_SCRATCH_INIT)
    }
    /// `ENABLE_SGPR_PRIVATE_SEGMENT_SIZE`: the per-work-item private size is in a user SGPR.
    pub fn enable_sgpr_private_segment_size(&self) -> bool {
        self.prop(code_properties::ENABLE_SGPR_PRIVATE_SEGMENT_SIZE)
    }
    /// `ENABLE_WAVEFRONT_SIZE32`: the kernel runs in wave32 mode (GFX10+).
    pub fn wavefront_size32(&self) -> bool {
        self.prop(code_properties::ENABLE_WAVEFRONT_SIZE32)
    }
    /// `USES_DYNAMIC_STACK`: the machine code uses a dynamically sized stack.
    pub fn uses_dynamic_stack(&self) -> bool {
        self.prop(code_properties::USES_DYNAMIC_STACK)
    }
    /// Wavefront size in lanes implied by the descriptor: 32 when `ENABLE_WAVEFRONT_SIZE32`,
    /// else 64.
    pub fn wavefront_size(&self) -> u32 {
        if self.wavefront_size32() {
            32
        } else {
            64
        }
    }
    /// `COMPUTE_PGM_RSRC1` decoded.
    pub fn rsrc1(&self) -> Rsrc1 {
        Rsrc1(self.compute_pgm_rsrc1)
    }
    /// `COMPUTE_PGM_RSRC2` decoded.
    pub fn rsrc2(&self) -> Rsrc2 {
        Rsrc2(self.compute_pgm_rsrc2)
    }
    /// `KERNARG_PRELOAD_SPEC_LENGTH`: kernarg dwords preloaded into user SGPRs (GFX940+).
    pub fn kernarg_preload_length_dwords(&self) -> u16 {
        self.kernarg_preload & 0x7f
    }
    /// `KERNARG_PRELOAD_SPEC_OFFSET`: first preloaded kernarg dword.
    pub fn kernarg_preload_offset_dwords(&self) -> u16 {
        self.kernarg_preload >> 7
    }
}

const fn bits(v: u32, lo: u32, width: u32) -> u32 {
    (v >> lo) & ((1 << width) - 1)
}

/// `COMPUTE_PGM_RSRC1` (AMDGPUUsage "compute_pgm_rsrc1 for GFX6-GFX12").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Rsrc1(pub u32);

impl Rsrc1 {
    /// `GRANULATED_WORKITEM_VGPR_COUNT` (bits 0-5): VGPR blocks used minus 1; the block size
    /// depends on the target and wave size.
    pub const fn granulated_workitem_vgpr_count(self) -> u32 {
        bits(self.0, 0, 6)
    }
    /// `GRANULATED_WAVEFRONT_SGPR_COUNT` (bits 6-9): SGPR blocks (of 16 on GFX9, 8 before)
    /// used minus 1; reserved 0 on GFX10+.
    pub const fn granulated_wavefront_sgpr_count(self) -> u32 {
        bits(self.0, 6, 4)
    }
    /// `PRIORITY` (bits 10-11).
    pub const fn priority(self) -> u32 {
        bits(self.0, 10, 2)
    }
    /// `ENABLE_IEEE_MODE` (bit 23; GFX6-GFX11).
    pub const fn enable_ieee_mode(self) -> bool {
        bits(self.0, 23, 1) != 0
    }
}

/// `COMPUTE_PGM_RSRC2` (AMDGPUUsage "compute_pgm_rsrc2 for GFX6-GFX12").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Rsrc2(pub u32);

impl Rsrc2 {
    /// `ENABLE_PRIVATE_SEGMENT` (bit 0): scratch is enabled (`SCRATCH_EN`).
    pub const fn enable_private_segment(self) -> bool {
        bits(self.0, 0, 1) != 0
    }
    /// `USER_SGPR_COUNT` (bits 1-5): user SGPRs the CP initialises.
    pub const fn user_sgpr_count(self) -> u32 {
        bits(self.0, 1, 5)
    }
    /// `ENABLE_SGPR_WORKGROUP_ID_X` (bit 7).
    pub const fn enable_sgpr_workgroup_id_x(self) -> bool {
        bits(self.0, 7, 1) != 0
    }
    /// `ENABLE_SGPR_WORKGROUP_ID_Y` (bit 8).
    pub const fn enable_sgpr_workgroup_id_y(self) -> bool {
        bits(self.0, 8, 1) != 0
    }
    /// `ENABLE_SGPR_WORKGROUP_ID_Z` (bit 9).
    pub const fn enable_sgpr_workgroup_id_z(self) -> bool {
        bits(self.0, 9, 1) != 0
    }
    /// `ENABLE_SGPR_WORKGROUP_INFO` (bit 10).
    pub const fn enable_sgpr_workgroup_info(self) -> bool {
        bits(self.0, 10, 1) != 0
    }
    /// `ENABLE_VGPR_WORKITEM_ID` (bits 11-12): 0 = X, 1 = X and Y, 2 = X, Y and Z.
    pub const fn enable_vgpr_workitem_id(self) -> u32 {
        bits(self.0, 11, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vector_copy.kd` of `testdata/codeobjects/kernels-gfx1030-v5.hsaco`, from
    /// `llvm-readelf-19 -x .rodata` (file offset 0xac0).
    const GFX1030_VECTOR_COPY_KD: [u8; 64] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x40, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x40, 0x00, 0xaf, 0x60, 0x90, 0x00, 0x00, 0x00, 0x0b, 0x04, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn decodes_real_descriptor() {
        let kd = KernelDescriptor::read_from_bytes(&GFX1030_VECTOR_COPY_KD).unwrap();
        assert_eq!(kd.group_segment_fixed_size, 0);
        assert_eq!(kd.private_segment_fixed_size, 0);
        assert_eq!(kd.kernarg_size, 16);
        assert_eq!(kd.kernel_code_entry_byte_offset, 0x1140);
        assert_eq!(kd.compute_pgm_rsrc1, 0x60af_0040);
        assert_eq!(kd.compute_pgm_rsrc2, 0x90);
        assert_eq!(kd.kernel_code_properties, 0x040b);
        assert!(kd.enable_sgpr_private_segment_buffer());
        assert!(kd.enable_sgpr_dispatch_ptr());
        assert!(!kd.enable_sgpr_queue_ptr());
        assert!(kd.enable_sgpr_kernarg_segment_ptr());
        assert!(!kd.enable_sgpr_dispatch_id());
        assert!(kd.wavefront_size32());
        assert_eq!(kd.wavefront_size(), 32);
        assert!(!kd.uses_dynamic_stack());
        // 4 (private segment buffer) + 2 (dispatch ptr) + 2 (kernarg ptr) user SGPRs.
        assert_eq!(kd.rsrc2().user_sgpr_count(), 8);
        assert!(kd.rsrc2().enable_sgpr_workgroup_id_x());
        assert!(!kd.rsrc2().enable_sgpr_workgroup_id_y());
        assert_eq!(kd.rsrc2().enable_vgpr_workitem_id(), 0);
        assert_eq!(kd.rsrc1().granulated_workitem_vgpr_count(), 0);
        assert_eq!(kd.rsrc1().granulated_wavefront_sgpr_count(), 1);
        assert_eq!(kd.as_bytes(), &GFX1030_VECTOR_COPY_KD);
    }
}
