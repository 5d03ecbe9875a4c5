//! ROCm 7's virtual-memory API (`hsa_runtime::VirtualMemory`) over the Linux platform on the
//! emulated device, end to end: a reservation, a handle of VRAM, two mappings of it (aliases
//! of the same pages), access for the host and the GPU, an SDMA copy out of the range, a
//! read-only host mapping, export and import of the handle as a dma-buf, and ROCR 7's statuses
//! for misuse. The emulated device answers the render node's requests as amdgpu does
//! (`hsa-emu`'s `gem` module), so this exercises the same ioctls as a real GPU.

use std::sync::{Arc, Mutex};

use hsa_core::memory::AccessPermission;
use hsa_core::memory::GlobalFlags;
use hsa_core::runtime::host_memory::HostMemory;
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::{NodeId, Status};
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_runtime::vmem::{ADDRESS_NO_REGISTER, MEMORY_TYPE_NONE, MEMORY_TYPE_PINNED};
use hsa_runtime::{Services, ServicesConfig};

const MIB: u64 = 1 << 20;

/// The protection of the host mapping holding `va`, from `/proc/self/maps` (`"rw-s"`, ...).
fn host_protection(va: u64) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (lo, hi) = f.next()?.split_once('-')?;
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).ok()?,
            u64::from_str_radix(hi, 16).ok()?,
        );
        (lo <= va && va < hi).then(|| f.next().unwrap_or("").to_owned())
    })
}

#[test]
fn reserve_create_map_access_copy_export_import_and_misuse() {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let device = SelectedDevice::emulated(emulated.clone()).unwrap();
    let rt = Arc::new(Runtime::new(Arc::new(device.platform)).unwrap());
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let (gpu_node, cpu_node) = (NodeId(gpu.node()), NodeId(cpu.node()));
    let signals = Arc::new(SignalPool::new(rt.platform_ref().clone(), cpu_node));
    let services = Services::new(
        rt.clone(),
        Arc::new(HostMemory::new()),
        signals.clone(),
        ServicesConfig::default(),
    );
    let vm = services.vmem();
    assert!(vm.supported(), "the emulated device's KFD is 1.15 or later");
    let st = |r: Result<_, hsa_core::Error>| r.map(|_: ()| ()).unwrap_err().status();

    let vram = rt
        .find_pool(gpu.handle(), GlobalFlags::COARSE_GRAINED)
        .unwrap()
        .handle()
        .0;
    let system = rt
        .find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED)
        .unwrap()
        .handle();

    // A 2 MiB-aligned reservation; a second one at a hint that is free is placed there.
    let a = vm.reserve(4 * MIB, 0, 2 * MIB, 0).unwrap();
    assert_eq!(a % (2 * MIB), 0);
    let hint = a + 64 * MIB;
    let b = vm.reserve(MIB, hint, 0, 0).unwrap();
    assert_eq!(b, hint, "a free, aligned hint is honoured");
    // The hint is taken now: another reservation goes elsewhere.
    let c = vm.reserve(MIB, hint, 0, 0).unwrap();
    assert_ne!(c, hint);
    vm.free(c, MIB).unwrap();

    // A handle of 1 MiB of VRAM, of each type; bad types, pools and sizes.
    let h = vm.create_handle(vram, MIB, MEMORY_TYPE_NONE).unwrap();
    assert_eq!(vm.properties(h).unwrap(), (vram, MEMORY_TYPE_NONE));
    let pinned = vm.create_handle(vram, MIB, MEMORY_TYPE_PINNED).unwrap();
    assert_eq!(vm.properties(pinned).unwrap(), (vram, MEMORY_TYPE_PINNED));
    vm.release_handle(pinned).unwrap();
    assert_eq!(
        st(vm.create_handle(vram, MIB, 2).map(|_| ())),
        Status::InvalidArgument
    );
    assert_eq!(
        st(vm.create_handle(0xdead, MIB, 0).map(|_| ())),
        Status::InvalidArgument
    );
    assert_eq!(
        st(vm.create_handle(vram, MIB + 1, 0).map(|_| ())),
        Status::InvalidArgument
    );

    // Two mappings of the same handle: the same pages at a and at a + 1 MiB.
    vm.map(a, MIB, 0, h).unwrap();
    vm.map(a + MIB, MIB, 0, h).unwrap();
    assert_eq!(st(vm.map(a + MIB, MIB, 0, h)), Status::InvalidArgument);
    assert_eq!(
        st(vm.map(a + 3 * MIB, 2 * MIB, 0, h)),
        Status::InvalidArgument
    );
    // Memory of a CPU pool cannot be mapped (ROCR 7 maps GPU memory only).
    let sys_h = vm.create_handle(system.0, MIB, MEMORY_TYPE_NONE).unwrap();
    assert_eq!(st(vm.map(a + 2 * MIB, MIB, 0, sys_h)), Status::InvalidAgent);
    // It is still a dma-buf (a GTT buffer object, not USERPTR pages amdgpu cannot export).
    let sys_fd = vm.export(sys_h).unwrap();
    // SAFETY: the descriptor export returned, ours to close.
    drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(sys_fd) });
    vm.release_handle(sys_h).unwrap();
    assert_eq!(vm.get_access(a, gpu_node).unwrap(), None);

    // Access for the host and the GPU over both mappings at once.
    let rw = [
        (cpu_node, Some(AccessPermission::ReadWrite)),
        (gpu_node, Some(AccessPermission::ReadWrite)),
    ];
    // SAFETY: nothing uses the range yet.
    unsafe { vm.set_access(a, 2 * MIB, &rw) }.unwrap();
    // SAFETY: as above; a range the mappings do not tile.
    let e = unsafe { vm.set_access(a, 3 * MIB, &rw) };
    assert_eq!(st(e), Status::InvalidAllocation);
    assert_eq!(
        vm.get_access(a + 5, gpu_node).unwrap(),
        Some(AccessPermission::ReadWrite)
    );
    assert_eq!(host_protection(a).as_deref(), Some("rw-s"));
    let pattern: Vec<u8> = (0..MIB).map(|i| (i * 7 + i / 4096) as u8).collect();
    // SAFETY: the host has read-write access to the 1 MiB at a; nothing else uses it.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), a as *mut u8, MIB as usize) };
    // SAFETY: the second mapping, readable by the host.
    let alias = unsafe { std::slice::from_raw_parts((a + MIB) as *const u8, MIB as usize) };
    assert!(alias == &pattern[..], "the two mappings are the same pages");
    // What the copy engine asks before it gives a range to a GPU's SDMA engine.
    assert!(vm.reachable(a, 2 * MIB, gpu_node));
    assert!(
        vm.reachable(a + MIB - 8, 16, gpu_node),
        "across the two mappings"
    );
    assert!(!vm.reachable(a, 0, gpu_node));
    assert!(!vm.reachable(a, 3 * MIB, gpu_node), "past the mappings");
    assert!(
        !vm.reachable(a + 3 * MIB, 16, gpu_node),
        "reserved, not mapped"
    );

    // The GPU's SDMA engine copies out of the range into system memory.
    let dst = rt.allocate(system, MIB).unwrap();
    rt.allow_access(&[gpu.handle()], dst.va).unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    services.copy().set_sdma_log(Some(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_owned())
    })));
    // Copies the second mapping's 1 MiB to dst through the copy engine (GPU node's copy
    // agent) and waits: the completion signal's value, 0 when the copy completed.
    let copy_second_to_dst = || {
        let done = Arc::new(signals.create_interrupt(1).unwrap());
        // SAFETY: both ranges stay mapped until the wait below.
        unsafe {
            services
                .copy()
                .copy(
                    dst.va.0,
                    a + MIB,
                    MIB as usize,
                    Some(gpu_node),
                    Vec::new(),
                    done.clone(),
                )
                .unwrap()
        };
        done.wait(
            SignalCondition::Eq,
            0,
            60_000_000_000,
            WaitState::Blocked,
            LoadOrder::Acquire,
        )
    };
    let v = copy_second_to_dst();
    assert_eq!(v, 0, "the copy completed");
    assert!(
        !lines.lock().unwrap().is_empty(),
        "the copy went to the GPU's SDMA queue, not the host"
    );
    // SAFETY: the copy completed (acquire wait); system memory the host reads.
    let copied =
        unsafe { std::slice::from_raw_parts(dst.host_ptr.unwrap().as_ptr(), MIB as usize) };
    assert!(
        copied == &pattern[..],
        "SDMA read the pages through the GPU mapping"
    );

    // Without the GPU's access the same copy runs on the host (the host may read the pages):
    // no SDMA command, the same bytes.
    // SAFETY: the GPU no longer uses the second mapping.
    unsafe { vm.set_access(a + MIB, MIB, &[(gpu_node, None)]) }.unwrap();
    assert!(!vm.reachable(a + MIB, 16, gpu_node));
    assert!(
        vm.reachable(a, MIB, gpu_node),
        "the first mapping keeps its access"
    );
    lines.lock().unwrap().clear();
    // SAFETY: dst is unused by the device now (the copy above completed).
    unsafe { std::ptr::write_bytes(dst.host_ptr.unwrap().as_ptr(), 0, MIB as usize) };
    let v = copy_second_to_dst();
    assert_eq!(v, 0, "the host copy completed");
    assert!(
        lines.lock().unwrap().is_empty(),
        "no SDMA command for a range the GPU cannot reach"
    );
    // SAFETY: the copy completed (acquire wait); system memory the host reads.
    let copied =
        unsafe { std::slice::from_raw_parts(dst.host_ptr.unwrap().as_ptr(), MIB as usize) };
    assert!(copied == &pattern[..], "the host copied the pages");
    services.copy().set_sdma_log(None);

    // Read-only for the host: the pages are mapped read-only.
    // SAFETY: the host only reads the first mapping from now on.
    unsafe { vm.set_access(a, MIB, &[(cpu_node, Some(AccessPermission::ReadOnly))]) }.unwrap();
    assert_eq!(host_protection(a).as_deref(), Some("r--s"));
    // SAFETY: readable.
    assert_eq!(unsafe { (a as *const u8).add(4097).read() }, pattern[4097]);

    // Export the handle as a dma-buf and import it: a new handle over the same memory.
    let fd = vm.export(h).unwrap();
    assert!(fd >= 0);
    let h2 = vm.import(fd).unwrap();
    assert_ne!(h2, h);
    assert_eq!(vm.properties(h2).unwrap().1, MEMORY_TYPE_NONE);
    // SAFETY: our own descriptor, imported (the driver holds its own reference).
    drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    vm.map(b, MIB, 0, h2).unwrap();
    // SAFETY: nothing uses b yet.
    unsafe { vm.set_access(b, MIB, &[(cpu_node, Some(AccessPermission::ReadOnly))]) }.unwrap();
    // SAFETY: b is readable by the host now.
    let imported = unsafe { std::slice::from_raw_parts(b as *const u8, MIB as usize) };
    assert!(
        imported == &pattern[..],
        "the import reaches the exported pages"
    );

    // A reservation with mappings cannot be freed; release while mapped keeps the memory.
    assert_eq!(st(vm.free(a, 4 * MIB)), Status::ResourceFree);
    vm.release_handle(h).unwrap();
    assert_eq!(st(vm.release_handle(h)), Status::InvalidAllocation);
    // SAFETY: nothing uses the first mapping any more.
    unsafe { vm.unmap(a, MIB) }.unwrap();
    assert_eq!(host_protection(a).as_deref(), Some("---p"));
    assert_eq!(
        alias[12345], pattern[12345],
        "the last mapping keeps the memory"
    );
    // Retain through the remaining mapping: one more reference to release.
    assert_eq!(vm.retain(a + MIB).unwrap(), h);
    vm.release_handle(h).unwrap();
    // SAFETY: nothing uses the ranges any more.
    unsafe {
        assert_eq!(st(vm.unmap(a + MIB, 2 * MIB)), Status::InvalidAllocation);
        vm.unmap(a + MIB, MIB).unwrap();
        vm.unmap(b, MIB).unwrap();
    }
    assert_eq!(st(vm.properties(h).map(|_| ())), Status::InvalidAllocation);
    vm.release_handle(h2).unwrap();
    vm.free(a, 4 * MIB).unwrap();
    vm.free(b, MIB).unwrap();
    assert_eq!(st(vm.free(a, 4 * MIB)), Status::InvalidAllocation);

    // Host-only reservations still work beside the device ones.
    let host = vm.reserve(MIB, 0, 0, ADDRESS_NO_REGISTER).unwrap();
    vm.free(host, MIB).unwrap();

    rt.free(dst.va).unwrap();
}
