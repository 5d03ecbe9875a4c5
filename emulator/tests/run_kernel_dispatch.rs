//! `hsa_emu::device::run_kernel_dispatch` over memory that is not the emulated device's: a
//! [`FlatMemory`] from address 0 (what a VM's RAM file is to the device model of
//! `platform-baremetal/tests/qemu`).

use hsa_core::packet_processor::DecodedKernelDispatch;
use hsa_core::Status;
use hsa_emu::device::run_kernel_dispatch;
use hsa_emu::gfx9::exec::DeviceMemory;
use hsa_emu::gfx9::Gfx9Target;
use hsa_test_support::FlatMemory;

/// `run_kernel_dispatch` over memory that is not the emulated device's: the descriptor at
/// the kernel object, code from its entry point, every work-group run; an entry point past
/// the memory, a descriptor outside it and code cut short each fail with their status.
#[test]
fn run_kernel_dispatch_runs_over_any_memory() {
    let mut m = vec![0u8; 0x3000];
    // Descriptor at 0x1000: kernel_code_entry_byte_offset (bytes 16..24) = 0x100, wave64,
    // no SGPRs; the code at 0x1100 is `s_endpgm` (0xbf810000).
    m[0x1010..0x1018].copy_from_slice(&0x100i64.to_le_bytes());
    m[0x1100..0x1104].copy_from_slice(&0xbf81_0000u32.to_le_bytes());
    let mem = FlatMemory::new();
    mem.add(0, m);
    let packet = hsa_core::packet::KernelDispatch::one_dimensional(
        hsa_core::GpuVa(0x1000),
        hsa_core::GpuVa(0x2000),
        64,
        128,
    );
    let d = DecodedKernelDispatch {
        packet,
        packet_address: hsa_core::GpuVa(0x2800),
        queue_address: hsa_core::GpuVa(0),
        dispatch_id: 0,
    };
    let target =
        Gfx9Target::from_processor(hsa_core::isa::Processor::from_name("gfx90a").unwrap()).unwrap();
    let stats = run_kernel_dispatch(&d, target, &mem, 0x3000, 4096, 65536).unwrap();
    assert_eq!(
        (stats.workgroups, stats.waves, stats.instructions),
        (2, 2, 2)
    );

    let e = run_kernel_dispatch(&d, target, &mem, 0x1100, 4096, 65536).unwrap_err();
    assert_eq!(e.status(), Status::MemoryFault);
    assert!(e.detail().contains("entry 0x1100"), "{}", e.detail());

    let far = DecodedKernelDispatch {
        packet: hsa_core::packet::KernelDispatch {
            kernel_object: hsa_core::GpuVa(0x8000),
            ..packet
        },
        ..d
    };
    let e = run_kernel_dispatch(&far, target, &mem, 0x3000, 4096, 65536).unwrap_err();
    assert_eq!(e.status(), Status::MemoryFault);
    assert!(
        e.detail().starts_with("kernel descriptor: "),
        "{}",
        e.detail()
    );

    // No code read at all: the first fetch is outside the code.
    let e = run_kernel_dispatch(&d, target, &mem, 0x3000, 0, 65536).unwrap_err();
    assert_eq!(e.status(), Status::IllegalInstruction, "{}", e.detail());

    // A group segment past the LDS (rocrtst's InvalidGroupMemory: u32::MAX) is the CP's
    // invalid-group-memory error, INVALID_ALLOCATION in ROCR 5.2.
    let big = DecodedKernelDispatch {
        packet: hsa_core::packet::KernelDispatch {
            group_segment_size_bytes: u32::MAX,
            ..packet
        },
        ..d
    };
    let e = run_kernel_dispatch(&big, target, &mem, 0x3000, 4096, 65536).unwrap_err();
    assert_eq!(e.status(), Status::InvalidAllocation, "{}", e.detail());
    assert_eq!(
        e.detail(),
        "group_segment_size 4294967295 (packet 4294967295, descriptor 0) exceeds the \
         GPU's LDS of 65536 bytes"
    );
}

/// `run_kernel_dispatch` with 4 MiB of code allowed past the entry point reads only the
/// page the kernel runs (from the entry to the page's end and the 12 bytes past it), not
/// the 4 MiB.
#[test]
fn run_kernel_dispatch_reads_only_the_code_it_runs() {
    struct Counting(FlatMemory, std::cell::Cell<u64>);
    impl DeviceMemory for Counting {
        fn read(&self, addr: u64, buf: &mut [u8]) -> hsa_core::Result<()> {
            if addr >= 0x1100 {
                self.1.set(self.1.get() + buf.len() as u64);
            }
            self.0.read(addr, buf)
        }
        fn write(&self, addr: u64, data: &[u8]) -> hsa_core::Result<()> {
            self.0.write(addr, data)
        }
        fn clock_counter(&self) -> u64 {
            DeviceMemory::clock_counter(&self.0)
        }
    }
    let mut m = vec![0u8; 0x50_0000];
    // As run_kernel_dispatch_runs_over_any_memory: the descriptor at 0x1000, `s_endpgm`
    // at 0x1100; the packet and kernarg segment below the code.
    m[0x1010..0x1018].copy_from_slice(&0x100i64.to_le_bytes());
    m[0x1100..0x1104].copy_from_slice(&0xbf81_0000u32.to_le_bytes());
    let flat = FlatMemory::new();
    flat.add(0, m);
    let mem = Counting(flat, std::cell::Cell::new(0));
    let packet = hsa_core::packet::KernelDispatch::one_dimensional(
        hsa_core::GpuVa(0x1000),
        hsa_core::GpuVa(0x800),
        64,
        64,
    );
    let d = DecodedKernelDispatch {
        packet,
        packet_address: hsa_core::GpuVa(0xC00),
        queue_address: hsa_core::GpuVa(0),
        dispatch_id: 0,
    };
    let target =
        Gfx9Target::from_processor(hsa_core::isa::Processor::from_name("gfx90a").unwrap()).unwrap();
    let stats = run_kernel_dispatch(&d, target, &mem, 0x50_0000, 4 << 20, 65536).unwrap();
    assert_eq!(stats.instructions, 1);
    assert_eq!(mem.1.get(), 0x200C - 0x1100);
}
