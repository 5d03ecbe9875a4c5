//! The local APIC, in xAPIC mode (registers in the 4 KiB page at 0xfee00000) or x2APIC mode
//! (registers as MSRs 0x800 + offset / 16): enable, end of interrupt, the APIC id (the MSI
//! destination), and the one-shot timer that ends a `hlt` at a deadline. Also the legacy
//! 8259 PICs (masked) and the PIT, against which the TSC and the APIC timer are calibrated.
//!
//! Ref: Intel SDM Vol. 3A §11.4 (IA32_APIC_BASE), §11.5.4 (APIC timer), §11.12 (x2APIC);
//! Intel 8254 data sheet (channel 2, mode 0).
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arch::{cpuid, inb, outb, rdmsr, rdtsc, wrmsr};

const IA32_APIC_BASE: u32 = 0x1b;
const APIC_BASE_ENABLE: u64 = 1 << 11;
const APIC_BASE_X2APIC: u64 = 1 << 10;
/// Physical (= virtual) address of the xAPIC register page.
pub const XAPIC_BASE: usize = 0xfee0_0000;

const REG_ID: u32 = 0x20;
const REG_TPR: u32 = 0x80;
const REG_EOI: u32 = 0xb0;
const REG_SVR: u32 = 0xf0;
const REG_LVT_TIMER: u32 = 0x320;
const REG_TIMER_INITIAL: u32 = 0x380;
const REG_TIMER_CURRENT: u32 = 0x390;
const REG_TIMER_DIVIDE: u32 = 0x3e0;
const LVT_MASKED: u32 = 1 << 16;

/// The vector of the APIC timer.
pub const TIMER_VECTOR: u8 = 0x40;
/// The spurious-interrupt vector.
pub const SPURIOUS_VECTOR: u8 = 0xff;

/// Which register interface the APIC was put in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Memory-mapped registers.
    XApic,
    /// MSR registers.
    X2Apic,
}

/// 0 = xAPIC, 1 = x2APIC (set once by [`init`]; read by the interrupt handlers).
static MODE: AtomicU32 = AtomicU32::new(0);
/// TSC ticks per second.
static TSC_HZ: AtomicU64 = AtomicU64::new(1);
/// APIC timer ticks per second (divide by 1).
static TIMER_HZ: AtomicU64 = AtomicU64::new(1);

fn mode() -> Mode {
    if MODE.load(Ordering::Relaxed) == 1 {
        Mode::X2Apic
    } else {
        Mode::XApic
    }
}

fn read(reg: u32) -> u32 {
    match mode() {
        Mode::X2Apic => rdmsr(0x800 + (reg >> 4)) as u32,
        // SAFETY: the xAPIC page is identity-mapped uncached (boot paging); `reg` is one of
        // the architectural registers above, 16-byte aligned.
        Mode::XApic => unsafe {
            core::ptr::read_volatile((XAPIC_BASE + reg as usize) as *const u32)
        },
    }
}

fn write(reg: u32, value: u32) {
    match mode() {
        Mode::X2Apic => wrmsr(0x800 + (reg >> 4), u64::from(value)),
        // SAFETY: as in `read`.
        Mode::XApic => unsafe {
            core::ptr::write_volatile((XAPIC_BASE + reg as usize) as *mut u32, value)
        },
    }
}

/// Whether the CPU has x2APIC (CPUID.01H:ECX bit 21).
pub fn has_x2apic() -> bool {
    cpuid(1).2 & (1 << 21) != 0
}

/// Masks both 8259 PICs (the APIC delivers everything).
fn mask_pics() {
    outb(0x21, 0xff);
    outb(0xa1, 0xff);
}

/// Enables the APIC in `mode`, software-enabled with [`SPURIOUS_VECTOR`], priority 0, timer
/// masked; calibrates the TSC and the timer against the PIT. Returns the APIC id.
///
/// # Errors
/// When x2APIC is asked for and the CPU lacks it.
pub fn init(want: Mode) -> Result<u32, &'static str> {
    mask_pics();
    let base = rdmsr(IA32_APIC_BASE);
    match want {
        Mode::XApic => {
            if base & APIC_BASE_X2APIC != 0 {
                return Err("the APIC is already in x2APIC mode (leaving it needs a reset)");
            }
            wrmsr(
                IA32_APIC_BASE,
                (base & !0xfff_u64) | (XAPIC_BASE as u64) | APIC_BASE_ENABLE,
            );
            MODE.store(0, Ordering::Relaxed);
        }
        Mode::X2Apic => {
            if !has_x2apic() {
                return Err("the CPU has no x2APIC (CPUID.01H:ECX[21])");
            }
            wrmsr(IA32_APIC_BASE, base | APIC_BASE_ENABLE);
            wrmsr(IA32_APIC_BASE, base | APIC_BASE_ENABLE | APIC_BASE_X2APIC);
            MODE.store(1, Ordering::Relaxed);
        }
    }
    write(REG_TPR, 0);
    write(REG_SVR, 0x100 | u32::from(SPURIOUS_VECTOR));
    write(REG_TIMER_DIVIDE, 0xb); // divide by 1
    write(REG_LVT_TIMER, LVT_MASKED | u32::from(TIMER_VECTOR));
    calibrate();
    Ok(id())
}

/// The current mode.
pub fn current_mode() -> Mode {
    mode()
}

/// This CPU's APIC id (xAPIC: ID register bits 31:24; x2APIC: the whole register).
pub fn id() -> u32 {
    match mode() {
        Mode::X2Apic => read(REG_ID),
        Mode::XApic => read(REG_ID) >> 24,
    }
}

/// Signals end of interrupt.
pub fn eoi() {
    write(REG_EOI, 0);
}

/// TSC ticks per second (after [`init`]).
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Measures the TSC and the APIC timer over 10 ms of PIT channel 2 (mode 0, 1193182 Hz).
fn calibrate() {
    const PIT_HZ: u64 = 1_193_182;
    const LATCH: u64 = PIT_HZ / 100; // 10 ms
                                     // Gate on, speaker off.
    outb(0x61, (inb(0x61) & !0x02) | 0x01);
    outb(0x43, 0xb0); // channel 2, lobyte/hibyte, mode 0, binary
    outb(0x42, LATCH as u8);
    outb(0x42, (LATCH >> 8) as u8);
    write(REG_TIMER_INITIAL, u32::MAX);
    let t0 = rdtsc();
    let a0 = read(REG_TIMER_CURRENT);
    while inb(0x61) & 0x20 == 0 {
        core::hint::spin_loop();
    }
    let t1 = rdtsc();
    let a1 = read(REG_TIMER_CURRENT);
    write(REG_TIMER_INITIAL, 0);
    TSC_HZ.store(((t1 - t0) * 100).max(1), Ordering::Relaxed);
    TIMER_HZ.store(
        (u64::from(a0.wrapping_sub(a1)) * 100).max(1),
        Ordering::Relaxed,
    );
}

/// Arms the one-shot timer to fire ([`TIMER_VECTOR`]) at TSC value `deadline_tsc` (at once
/// when it has passed; at most ~4 s ahead, the 32-bit counter's reach; a later deadline fires
/// early, a spurious wake-up the waiter allows).
pub fn arm_timer(deadline_tsc: u64) {
    let now = rdtsc();
    let tsc = TSC_HZ.load(Ordering::Relaxed);
    let timer = TIMER_HZ.load(Ordering::Relaxed);
    let ticks = u128::from(deadline_tsc.saturating_sub(now)) * u128::from(timer) / u128::from(tsc);
    let ticks = u32::try_from(ticks).unwrap_or(u32::MAX).max(1);
    write(REG_LVT_TIMER, u32::from(TIMER_VECTOR)); // one-shot, unmasked
    write(REG_TIMER_INITIAL, ticks);
}

/// Stops the timer.
pub fn disarm_timer() {
    write(REG_TIMER_INITIAL, 0);
    write(REG_LVT_TIMER, LVT_MASKED | u32::from(TIMER_VECTOR));
}
