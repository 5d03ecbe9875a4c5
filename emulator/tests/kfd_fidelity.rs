//! Fidelity of the emulated amdkfd where Debian's ROCm 5.2 (libhsakmt, ROCR) under `kfd-emu`
//! found it differing from amdkfd (issue 21). Each test states the kernel's behaviour it
//! checks (linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`).

use std::sync::Arc;

use hsa_emu::device::{
    builtin_topology, EmulatedKfd, SetTrapHandlerArgs, AMDKFD_IOC_SET_TRAP_HANDLER, BUILTIN_GPU_ID,
};
use hsa_linux::kfd::abi::*;
use hsa_linux::kfd::driver::{KfdDriver, MapTarget};
use rustix::io::Errno;
use zerocopy::IntoBytes;

fn dev() -> Arc<EmulatedKfd> {
    EmulatedKfd::new(builtin_topology()).expect("emulated device")
}

/// An ioctl whose argument carries no pointer the device dereferences.
fn raw(d: &EmulatedKfd, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
    // SAFETY: the requests of these tests carry no pointer the emulated device follows
    // (SET_TRAP_HANDLER's addresses are GPU addresses it only records; the unknown requests
    // are refused before their argument is read).
    unsafe { d.ioctl(request, arg) }
}

/// `kfd_ioctl_set_trap_handler`: the process's trap handler (TBA/TMA) on a GPU it has;
/// success, or `EINVAL` for a `gpu_id` the process has no device data for. ROCR 5.2 asserts
/// that it succeeds (`GpuAgent::BindTrapHandler`).
#[test]
fn set_trap_handler_records_the_handler() {
    let d = dev();
    let mut a = SetTrapHandlerArgs {
        tba_addr: 0x7f00_0000_0000,
        tma_addr: 0x7f00_0001_0000,
        gpu_id: BUILTIN_GPU_ID,
        pad: 0,
    };
    assert_eq!(
        raw(&d, AMDKFD_IOC_SET_TRAP_HANDLER, a.as_mut_bytes()),
        Ok(())
    );
    assert_eq!(
        d.trap_handler(BUILTIN_GPU_ID),
        Some((0x7f00_0000_0000, 0x7f00_0001_0000))
    );
    a.gpu_id = BUILTIN_GPU_ID + 1;
    assert_eq!(
        raw(&d, AMDKFD_IOC_SET_TRAP_HANDLER, a.as_mut_bytes()),
        Err(Errno::INVAL)
    );
    // The request number is kfd_ioctl.h's: _IOW('K', 0x13, 24 bytes).
    assert_eq!(AMDKFD_IOC_SET_TRAP_HANDLER, 0x4018_4b13);
}

/// ROCm 5.x kernels had their own ioctls from 0x80 (`AMDKFD_COMMAND_START_2`: IPC
/// import/export 0x80/0x81, the 5.x `DBG_TRAP` 0x82, `CROSS_MEMORY_COPY` 0x83, `RLC_SPM`
/// 0x84); an upstream amdkfd has no such numbers, and its `kfd_ioctl` answers a number past
/// its table with the `-EINVAL` it starts with (`nr >= AMDKFD_CORE_IOCTL_COUNT` → `err_i1`,
/// before linux 6.18 made it `ENOTTY`), as it answers number 0. libhsakmt 5.2 asks 0x82 for
/// the debugger's version at open and goes on without it on `EINVAL`.
#[test]
fn numbers_past_the_table_are_einval_as_on_a_kernel_without_them() {
    let d = dev();
    // The 5.2-era DBG_TRAP: _IOWR('K', 0x82, 40 bytes), as libhsakmt 5.2 issues it.
    let mut arg = [0u8; 40];
    assert_eq!(
        raw(&d, ioc(IOC_READ | IOC_WRITE, b'K', 0x82, 40), &mut arg),
        Err(Errno::INVAL)
    );
    for nr in [0x00, 0x27, 0x7f, 0x80, 0x81, 0x83, 0x84, 0xff] {
        let mut arg = [0u8; 8];
        assert_eq!(
            raw(&d, ioc(IOC_READ | IOC_WRITE, b'K', nr, 8), &mut arg),
            Err(Errno::INVAL),
            "nr {nr:#x}"
        );
    }
}

/// `kfd_ioctl_alloc_memory_of_gpu` with `KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP`: one page, whose
/// `mmap_offset` is `KFD_MMAP_TYPE_MMIO | KFD_MMAP_GPU_ID(gpu_id)` ("MMIO is mapped through
/// kfd device"); `kfd_mmap` of that offset on `/dev/kfd` maps the GPU's remapped MMIO page
/// (`kfd_mmio_mmap`: exactly one page, else `EINVAL`). ROCR maps it for HDP flushes.
#[test]
fn mmio_remap_is_mapped_through_dev_kfd() {
    let d = dev();
    let mut a = AllocMemoryOfGpuArgs {
        va_addr: 0x10_0000_0000,
        size: 4096,
        gpu_id: BUILTIN_GPU_ID,
        flags: KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP
            | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
            | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE,
        ..Default::default()
    };
    raw(&d, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, a.as_mut_bytes()).unwrap();
    let want = KFD_MMAP_TYPE_MMIO | kfd_mmap_gpu_id(BUILTIN_GPU_ID);
    assert_eq!(a.mmap_offset, want);
    let p = hsa_linux::kfd::calls::mmap(&*d, MapTarget::Kfd, want, 4096).expect("mmap MMIO");
    let q = hsa_linux::kfd::calls::mmap(&*d, MapTarget::Kfd, want, 4096).expect("mmap again");
    // One page per GPU, as amdgpu's rmmio_remap: both mappings show the same memory.
    // SAFETY: p and q are live 4096-byte read-write mappings made above, never unmapped.
    unsafe {
        p.as_ptr().cast::<u32>().write_volatile(0x1234_5678);
        assert_eq!(q.as_ptr().cast::<u32>().read_volatile(), 0x1234_5678);
    }
    assert_eq!(
        hsa_linux::kfd::calls::mmap(&*d, MapTarget::Kfd, want, 8192).err(),
        Some(Errno::INVAL)
    );
    // Another GPU's MMIO page: no such GPU.
    assert_eq!(
        hsa_linux::kfd::calls::mmap(
            &*d,
            MapTarget::Kfd,
            KFD_MMAP_TYPE_MMIO | kfd_mmap_gpu_id(BUILTIN_GPU_ID + 1),
            4096
        )
        .err(),
        Some(Errno::INVAL)
    );
}
