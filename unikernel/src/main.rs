//! # hsa-unikernel
//!
//! A `no_std` x86_64 unikernel (target `x86_64-unknown-none`) that runs hsa-rt's bare-metal
//! backend, `hsa-baremetal`, in a QEMU virtual machine, as a firmware would: the project's
//! example of embedding hsa-rt without an operating system.
//!
//! Built on another target it is a stub that says so. From the repository's root (`rustup
//! target add x86_64-unknown-none`; for the second line, `qemu-system-x86_64`: on Debian 12
//! `qemu-system-x86` from bookworm-backports, as `.ci/install-qemu` installs it):
//!
//! ```text
//! cargo build --release -p hsa-unikernel --target x86_64-unknown-none --target-dir target/unikernel
//! cargo test --release -p hsa-baremetal --test qemu -- --nocapture
//! ```
//!
//! The first builds the image, `target/unikernel/x86_64-unknown-none/release/hsa-unikernel`
//! (`.ci/run` builds it so, and lints it); the second builds it the same way and boots it in
//! QEMU (`-kernel`, PVH entry), playing its GPU from the test process — the emulated device's
//! command processor and gfx9 interpreter behind an `ivshmem-doorbell` PCI device — and prints
//! the VM's serial console: the vector_copy code object loaded from the image, dispatched,
//! every element verified, then a barrier-AND chain. The image needs that device: QEMU alone,
//! without the test's ivshmem server, has nothing to run its queue.
#![cfg_attr(target_os = "none", no_std, no_main)]
#![deny(unsafe_code)]

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!(
        "hsa-unikernel is a bare-metal image: build it with \
         `cargo build --release -p hsa-unikernel --target x86_64-unknown-none`"
    );
    std::process::exit(2);
}

#[cfg(target_os = "none")]
extern crate alloc;

#[cfg(target_os = "none")]
mod apic;
#[cfg(target_os = "none")]
mod arch;
#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod exit;
#[cfg(target_os = "none")]
mod host;
#[cfg(target_os = "none")]
mod idt;
#[cfg(target_os = "none")]
mod ivshmem;
#[cfg(target_os = "none")]
mod job;
#[cfg(target_os = "none")]
mod pci;
#[cfg(target_os = "none")]
#[allow(dead_code)] // shared with the host side (tests/qemu): each side uses its part
mod protocol;
#[cfg(target_os = "none")]
#[macro_use]
mod serial;

#[cfg(target_os = "none")]
use core::sync::atomic::Ordering;

/// The heap: the loader's and the job's `Vec`s, carved from system memory at boot.
#[cfg(target_os = "none")]
#[global_allocator]
static HEAP: hsa_baremetal::heap::CarveOutHeap = hsa_baremetal::heap::CarveOutHeap::empty();

/// Bytes of the heap.
#[cfg(target_os = "none")]
const HEAP_BYTES: usize = 16 << 20;
/// Where system memory for hsa-baremetal starts: above the image (loaded at 1 MiB, a few MiB).
#[cfg(target_os = "none")]
const CARVE_OUT_BASE: u64 = 32 << 20;

/// The interrupt vectors of MSI-X entries 0, 1, 2 (IH, command, echo).
#[cfg(target_os = "none")]
const MSIX_VECTORS: [u8; 3] = [0x30, 0x31, 0x32];

/// Called by the interrupt stubs with the saved frame.
#[cfg(target_os = "none")]
fn interrupt(frame: &idt::Frame) {
    let vector = frame.vector as u8;
    match vector {
        0..=31 => {
            let cr2: u64;
            // SAFETY: reading CR2 has no side effect.
            #[allow(unsafe_code)]
            unsafe {
                core::arch::asm!("mov {}, cr2", out(reg) cr2, options(nomem, nostack))
            };
            serial::print_forced(format_args!(
                "hsa-unikernel: FAILED: CPU exception {vector} (error {:#x}) at rip {:#x}, rsp {:#x}, cr2 {cr2:#x}\n",
                frame.error, frame.rip, frame.rsp
            ));
            exit::exit(protocol::EXIT_FAIL)
        }
        0x30 => {
            job::LAST_IH_TSC.store(arch::rdtsc(), Ordering::Release);
            job::IH_INTERRUPTS.fetch_add(1, Ordering::AcqRel);
            if let Some(p) = host::PLATFORM.get() {
                p.on_interrupt();
            }
            apic::eoi();
        }
        0x32 => {
            job::LAST_ECHO_TSC.store(arch::rdtsc(), Ordering::Release);
            job::ECHO_INTERRUPTS.fetch_add(1, Ordering::AcqRel);
            if let Some(p) = host::PLATFORM.get() {
                job::on_echo(p);
            }
            apic::eoi();
        }
        apic::SPURIOUS_VECTOR => {}
        _ => apic::eoi(),
    }
}

/// The 64-bit entry, called by the boot code with the PVH start info's physical address.
#[cfg(target_os = "none")]
extern "C" fn kernel_main(start_info: u32) -> ! {
    let entry_tsc = arch::rdtsc();
    serial::init();
    println!("hsa-unikernel: main");
    match bring_up(start_info, entry_tsc) {
        Ok(()) => {
            println!("hsa-unikernel: PASSED");
            exit::exit(protocol::EXIT_PASS)
        }
        Err(e) => {
            println!("hsa-unikernel: FAILED: {e}");
            exit::exit(protocol::EXIT_FAIL)
        }
    }
}

#[cfg(target_os = "none")]
fn bring_up(start_info: u32, entry_tsc: u64) -> Result<(), hsa_core::Error> {
    use hsa_core::{error, Status};
    idt::init();
    // SAFETY: `start_info` is what the PVH entry got in ebx from QEMU.
    #[allow(unsafe_code)]
    let ram = unsafe { boot::ram_ranges(u64::from(start_info)) }
        .map_err(|e| error!(Status::Error, "{e}"))?;
    let Some(&(ram_base, ram_bytes)) = ram
        .iter()
        .find(|(b, s)| *b <= CARVE_OUT_BASE && b + s > CARVE_OUT_BASE)
    else {
        hsa_core::bail!(
            Status::OutOfResources,
            "no RAM range holds {CARVE_OUT_BASE:#x}: {ram:x?}"
        );
    };
    let ram_end = ram_base + ram_bytes;
    let dev = ivshmem::bring_up().map_err(|e| error!(Status::Error, "{e}"))?;
    let mode = match dev.control32(protocol::CTL_APIC_MODE) {
        protocol::APIC_X2APIC => apic::Mode::X2Apic,
        _ => apic::Mode::XApic,
    };
    let apic_id = apic::init(mode).map_err(|e| error!(Status::Error, "{e}"))?;
    dev.enable_msix(apic_id, &MSIX_VECTORS)
        .map_err(|e| error!(Status::Error, "ivshmem: {e}"))?;
    println!(
        "hsa-unikernel: ivshmem at {} (peer {}): BAR0 {:#x}{}, BAR1 {:#x}, BAR2 {:#x} ({} KiB); \
         {:?} id {apic_id}; TSC {} MHz; RAM to {ram_end:#x}",
        dev.bdf,
        dev.peer,
        dev.registers.address,
        if dev.registers.by_firmware {
            " (firmware's)"
        } else {
            " (assigned)"
        },
        dev.msix_bar.address,
        dev.shared.address,
        dev.shared.size_bytes / 1024,
        apic::current_mode(),
        apic::tsc_hz() / 1_000_000
    );
    let vm_host = host::VmHost::new(
        dev,
        CARVE_OUT_BASE,
        ram_end - CARVE_OUT_BASE,
        apic::tsc_hz(),
    )?;
    let platform = hsa_baremetal::BaremetalPlatform::new(vm_host)?;
    let p = host::PLATFORM.call_once(|| platform);
    p.init_heap(&HEAP, HEAP_BYTES)?;
    dev.command(
        protocol::CMD_SET_IH,
        &host::VmHost::ih_layout(),
        apic::tsc_hz(),
    )
    .map_err(|e| error!(Status::Error, "{e}"))?;
    // The firmware's GPUVM setup: VMID 8's page-table base and PASID.
    dev.command(protocol::CMD_SET_VM, &p.host().vm_setup(), apic::tsc_hz())
        .map_err(|e| error!(Status::Error, "{e}"))?;
    // The firmware's KIQ bring-up: the device learns where the KIQ ring is.
    dev.command(
        protocol::CMD_SET_KIQ,
        &host::VmHost::kiq_layout()?,
        apic::tsc_hz(),
    )
    .map_err(|e| error!(Status::Error, "{e}"))?;
    arch::enable_interrupts();
    let cfg = job::Config {
        elements: dev.control32(protocol::CTL_ELEMENTS),
        figures: dev.control32(protocol::CTL_RUN) & protocol::RUN_FIGURES != 0,
        faults: dev.control32(protocol::CTL_RUN) & protocol::RUN_FAULTS != 0,
        rounds: dev.control32(protocol::CTL_FIGURE_ROUNDS),
    };
    println!(
        "hsa-unikernel: platform up {} us after entry; running {cfg:?}",
        (arch::rdtsc() - entry_tsc) * 1_000_000 / apic::tsc_hz().max(1)
    );
    job::run(p, cfg)
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    serial::print_forced(format_args!("hsa-unikernel: FAILED: panic: {info}\n"));
    exit::exit(protocol::EXIT_FAIL)
}
