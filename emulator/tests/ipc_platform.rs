//! `MemorySharing::export_memory` / `import_memory` of the Linux backend over two emulated devices
//! (one per platform, as two processes each have theirs): the import is the exporter's pages
//! at an address of the importer's own, and the backend's statuses for what cannot be shared
//! or imported.

use std::sync::Arc;

use hsa_core::platform::{
    MemoryFlags, MemoryKind, MemoryRequest, MemorySharing, Platform, SharedMemory,
};
use hsa_core::{NodeId, Status};
use hsa_emu::device::builtin_topology;
use hsa_emu::{EmulatedKfd, SelectedDevice};

const CPU: NodeId = NodeId(0);
const GPU: NodeId = NodeId(1);

fn platform() -> hsa_linux::LinuxPlatform {
    let kfd = EmulatedKfd::new(builtin_topology()).expect("emulated device");
    SelectedDevice::emulated(Arc::clone(&kfd))
        .expect("platform")
        .platform
}

fn req(node: NodeId, kind: MemoryKind, size: u64, flags: MemoryFlags) -> MemoryRequest {
    MemoryRequest {
        node,
        kind,
        size_bytes: size,
        align_bytes: 4096,
        flags,
    }
}

#[test]
fn exported_memory_imports_into_another_platform() {
    let a = platform();
    let b = platform();
    let vram = a
        .allocate_memory(&req(
            GPU,
            MemoryKind::DeviceLocal,
            2 << 20,
            MemoryFlags::HOST_ACCESS,
        ))
        .unwrap();
    let shared = a.export_memory(&vram).unwrap();
    assert_eq!(shared.size_bytes, 2 << 20);
    assert_eq!(shared.token[0], std::process::id());
    // Exporting again gives the same description (one dma-buf per chunk).
    assert_eq!(a.export_memory(&vram).unwrap(), shared);

    let imported = b.import_memory(&shared, &[GPU]).unwrap();
    assert_eq!(imported.size_bytes, 2 << 20);
    assert_ne!(imported.gpu_va, vram.gpu_va);
    let host_a = vram.host_ptr.unwrap().as_ptr();
    let host_b = imported.host_ptr.unwrap().as_ptr();
    assert_eq!(host_b as u64, imported.gpu_va.0);
    // SAFETY: both are live host mappings of 2 MiB, used only here, with atomic accesses.
    let (wa, wb) = unsafe {
        (
            &*host_a.add(0x1_0008).cast::<std::sync::atomic::AtomicU64>(),
            &*host_b.add(0x1_0008).cast::<std::sync::atomic::AtomicU64>(),
        )
    };
    wa.store(0x0123_4567_89ab_cdef, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        wb.load(std::sync::atomic::Ordering::SeqCst),
        0x0123_4567_89ab_cdef
    );
    wb.store(7, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(wa.load(std::sync::atomic::Ordering::SeqCst), 7);
    // SAFETY: the import is unused from here on.
    unsafe { b.free_memory(&imported) }.unwrap();

    // Freed by the exporter: the export is gone (its descriptor closed, or reused by
    // another file whose inode differs).
    // SAFETY: unused from here on.
    unsafe { a.free_memory(&vram) }.unwrap();
    let stale = b.import_memory(&shared, &[GPU]).unwrap_err();
    assert_eq!(stale.status(), Status::InvalidArgument, "{stale}");

    // System memory is shareable only when allocated SHAREABLE (a GTT buffer object, not
    // USERPTR host pages).
    let plain = a
        .allocate_memory(&req(
            CPU,
            MemoryKind::System,
            4096,
            MemoryFlags::HOST_ACCESS,
        ))
        .unwrap();
    let e = a.export_memory(&plain).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument, "{e}");
    let shareable = a
        .allocate_memory(&req(
            CPU,
            MemoryKind::System,
            4096,
            MemoryFlags::HOST_ACCESS | MemoryFlags::SHAREABLE,
        ))
        .unwrap();
    let s = a.export_memory(&shareable).unwrap();
    let sig = b.import_memory(&s, &[GPU]).unwrap();
    // A size other than the export's, a process that does not exist, a descriptor that
    // is not open: InvalidArgument.
    for bad in [
        SharedMemory {
            size_bytes: 8192,
            ..s
        },
        SharedMemory {
            token: [0x7fff_fff0, s.token[1], s.token[2], s.token[3]],
            ..s
        },
        SharedMemory {
            token: [s.token[0], 0x7fff_fff0, s.token[2], s.token[3]],
            ..s
        },
        SharedMemory { token: [0; 4], ..s },
    ] {
        let e = b.import_memory(&bad, &[GPU]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument, "{bad:?}: {e}");
    }
    // SAFETY: unused from here on.
    unsafe {
        b.free_memory(&sig).unwrap();
        a.free_memory(&plain).unwrap();
        a.free_memory(&shareable).unwrap();
    }
}
