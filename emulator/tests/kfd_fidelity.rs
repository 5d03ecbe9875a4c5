//! Fidelity of the emulated amdkfd where Debian's ROCm 5.2 (libhsakmt, ROCR) under `kfd-emu`
//! found it differing from amdkfd (issue 21). Each test states the kernel's behaviour it
//! checks (linux `drivers/gpu/drm/amd/amdkfd/kfd_chardev.c`).

use std::sync::Arc;

use hsa_emu::device::{
    builtin_topology, EmulatedKfd, GetTileConfigArgs, SetTrapHandlerArgs,
    AMDKFD_IOC_GET_TILE_CONFIG, AMDKFD_IOC_SET_TRAP_HANDLER, BUILTIN_GPU_ID,
    MACRO_TILE_MODE_ENTRIES, TILE_MODE_ENTRIES,
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
    // are refused before their argument is read), or one it only writes through
    // /proc/self/mem, which fails with EFAULT where nothing is mapped (GET_TILE_CONFIG).
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

/// `kfd_ioctl_get_tile_config`: the GPU's tiling registers as amdgpu keeps them — on gfx9 no
/// tile-mode tables (zeros; amdgpu's arrays hold 32 and 16 entries, which cap the caller's
/// counts), no `MC_ARB_RAMCFG` (banks and ranks 0), and the `GB_ADDR_CONFIG` amdgpu composes
/// for an MI210 (`gfx_v9_0_gpu_early_init`: 0x22014042 over the register's 8 shader engines:
/// 4 pipes, 16 banks), from which ROCR's addrlib lays images out. ROCR 5.2's image
/// manager asserts that the call succeeds when HIP starts (`ImageManagerKv::Initialize`,
/// through `hsaKmtGetTileConfig` with 40 entries each); the emulated device answered `ENOTTY`
/// and every HIP program under kfd-emu aborted at start.
#[test]
fn get_tile_config_returns_gfx9s_empty_tables() {
    let d = dev();
    let mut tiles = vec![0xdead_beef_u32; 40];
    let mut macros = vec![0xdead_beef_u32; 40];
    let mut a = GetTileConfigArgs {
        tile_config_ptr: tiles.as_mut_ptr() as u64,
        macro_tile_config_ptr: macros.as_mut_ptr() as u64,
        num_tile_configs: 40,
        num_macro_tile_configs: 40,
        gpu_id: BUILTIN_GPU_ID,
        gb_addr_config: 0xffff_ffff,
        num_banks: 0xffff_ffff,
        num_ranks: 0xffff_ffff,
    };
    // SAFETY: both array pointers address live Vecs of 40 u32s, which the device writes
    // (at most 32 and 16 entries) through /proc/self/mem.
    let r = unsafe { d.ioctl(AMDKFD_IOC_GET_TILE_CONFIG, a.as_mut_bytes()) };
    assert_eq!(r, Ok(()));
    assert_eq!(
        (a.num_tile_configs, a.num_macro_tile_configs),
        (TILE_MODE_ENTRIES, MACRO_TILE_MODE_ENTRIES)
    );
    assert_eq!((TILE_MODE_ENTRIES, MACRO_TILE_MODE_ENTRIES), (32, 16));
    assert_eq!(
        (a.gb_addr_config, a.num_banks, a.num_ranks),
        (0x2219_4042, 0, 0)
    );
    assert!(tiles[..32].iter().all(|&t| t == 0), "{tiles:x?}");
    assert!(tiles[32..].iter().all(|&t| t == 0xdead_beef), "{tiles:x?}");
    assert!(macros[..16].iter().all(|&t| t == 0), "{macros:x?}");
    assert!(
        macros[16..].iter().all(|&t| t == 0xdead_beef),
        "{macros:x?}"
    );
    // An unknown GPU is EINVAL; an unmapped array EFAULT with no entries written.
    a.gpu_id = BUILTIN_GPU_ID + 1;
    assert_eq!(
        raw(&d, AMDKFD_IOC_GET_TILE_CONFIG, a.as_mut_bytes()),
        Err(Errno::INVAL)
    );
    a.gpu_id = BUILTIN_GPU_ID;
    a.tile_config_ptr = 0x10;
    a.num_tile_configs = 4;
    assert_eq!(
        raw(&d, AMDKFD_IOC_GET_TILE_CONFIG, a.as_mut_bytes()),
        Err(Errno::FAULT)
    );
    assert_eq!(a.num_tile_configs, 0);
    // The request number is kfd_ioctl.h's: _IOWR('K', 0x12, 40 bytes).
    assert_eq!(AMDKFD_IOC_GET_TILE_CONFIG, 0xc028_4b12);
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
