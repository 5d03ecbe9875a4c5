//! # hsa-unikernel
//!
//! A `no_std` x86_64 unikernel (target `x86_64-unknown-none`) that runs hsa-rt's bare-metal
//! backend, `hsa-baremetal`, in a QEMU virtual machine, as a firmware would: the project's
//! example of embedding hsa-rt without an operating system.
//!
//! Built on another target it is a stub that says so: `cargo build --release -p
//! hsa-unikernel --target x86_64-unknown-none` builds the real image, which
//! `cargo test --release -p hsa-baremetal --test qemu` boots.
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
mod arch;
#[cfg(target_os = "none")]
mod boot;
#[cfg(target_os = "none")]
mod exit;
#[cfg(target_os = "none")]
#[macro_use]
mod serial;

/// The 64-bit entry, called by the boot code with the PVH start info's physical address.
#[cfg(target_os = "none")]
extern "C" fn kernel_main(start_info: u32) -> ! {
    serial::init();
    println!("hsa-unikernel: main (start info at {start_info:#x})");
    exit::exit(0x10)
}

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    serial::print_forced(format_args!("hsa-unikernel: PANIC: {info}\n"));
    exit::exit(0x11)
}
