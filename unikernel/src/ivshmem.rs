//! The ivshmem-doorbell device as the unikernel drives it: finding it on PCI, its BARs (the
//! doorbell registers, the MSI-X table, the shared memory with the control page), MSI-X, and
//! the command exchange with the host-side device model (see [`crate::protocol`]).
#![allow(unsafe_code)]

use core::sync::atomic::{fence, Ordering};

use crate::arch::rdtsc;
use crate::pci::{self, Bar, BarAllocator, Bdf, PciError};
use crate::protocol::*;

/// How long a command may take before the unikernel gives up, seconds.
const COMMAND_TIMEOUT_S: u64 = 5;

/// The device, brought up.
#[derive(Clone, Copy, Debug)]
pub struct Ivshmem {
    /// Its PCI address.
    pub bdf: Bdf,
    /// BAR0: registers (and the queue's doorbell aperture).
    pub registers: Bar,
    /// BAR1: the MSI-X table.
    pub msix_bar: Bar,
    /// BAR2: the shared memory, control page first.
    pub shared: Bar,
    /// This VM's peer id (the `IVPosition` register).
    pub peer: u32,
}

/// Why the device could not be brought up.
#[derive(Clone, Copy, Debug)]
pub enum BringUpError {
    /// No 1af4:1110 function.
    NotFound,
    /// A PCI step failed.
    Pci(PciError),
    /// The control page does not start with [`MAGIC`] (the value found).
    BadMagic(u32),
}

impl core::fmt::Display for BringUpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BringUpError::NotFound => write!(f, "no ivshmem device (PCI 1af4:1110)"),
            BringUpError::Pci(e) => write!(f, "ivshmem: {e}"),
            BringUpError::BadMagic(m) => {
                write!(f, "ivshmem control page magic is {m:#x}, not {MAGIC:#x}")
            }
        }
    }
}

impl From<PciError> for BringUpError {
    fn from(e: PciError) -> Self {
        BringUpError::Pci(e)
    }
}

/// Finds the device, assigns its BARs where the firmware did not, enables memory decoding and
/// bus mastering, and checks the control page's magic. MSI-X comes later
/// ([`Ivshmem::enable_msix`]), once the local APIC (the destination) is up.
pub fn bring_up() -> Result<Ivshmem, BringUpError> {
    let bdf = pci::find(IVSHMEM_VENDOR_ID, IVSHMEM_DEVICE_ID).ok_or(BringUpError::NotFound)?;
    pci::disable_decoding(bdf);
    let mut alloc = BarAllocator::default();
    // Largest first, so the bump allocator wastes nothing on alignment.
    let shared = pci::setup_bar(bdf, 2, &mut alloc)?;
    let msix_bar = pci::setup_bar(bdf, 1, &mut alloc)?;
    let registers = pci::setup_bar(bdf, 0, &mut alloc)?;
    pci::enable(bdf);
    let dev = Ivshmem {
        bdf,
        registers,
        msix_bar,
        shared,
        peer: 0,
    };
    let peer = dev.register(REG_IV_POSITION);
    let dev = Ivshmem { peer, ..dev };
    let magic = dev.control32(CTL_MAGIC);
    if magic != MAGIC {
        return Err(BringUpError::BadMagic(magic));
    }
    Ok(dev)
}

impl Ivshmem {
    /// Programs MSI-X entry `i` to deliver `vectors[i]` to local APIC `apic_id`, and enables
    /// MSI-X.
    ///
    /// # Errors
    /// No MSI-X capability, or a table smaller than `vectors`.
    pub fn enable_msix(&self, apic_id: u32, vectors: &[u8]) -> Result<(), PciError> {
        let bars = [
            Some(self.registers),
            Some(self.msix_bar),
            Some(self.shared),
            None,
            None,
            None,
        ];
        pci::msix(self.bdf, &bars)?.program(apic_id, vectors)
    }

    fn register(&self, offset: usize) -> u32 {
        // SAFETY: BAR0 is mapped uncached below 4 GiB (identity paging) and 256 bytes long;
        // offsets are the device's registers.
        unsafe {
            core::ptr::read_volatile((self.registers.address as usize + offset) as *const u32)
        }
    }

    /// Rings `vector` of `peer` (a 32-bit store to the doorbell register).
    pub fn ring(&self, peer: u16, vector: u16) {
        // Release: everything written before (the control page) is visible to the device
        // before it is told (pairs with the device's Acquire after its eventfd read).
        fence(Ordering::SeqCst);
        // SAFETY: as in `register`; the doorbell register is write-only, 32 bits.
        unsafe {
            core::ptr::write_volatile(
                (self.registers.address as usize + REG_DOORBELL) as *mut u32,
                u32::from(peer) << 16 | u32::from(vector),
            )
        }
    }

    /// Address of byte `offset` of the control page.
    pub fn control_addr(&self, offset: usize) -> usize {
        self.shared.address as usize + offset
    }

    /// Reads a `u32` of the control page.
    pub fn control32(&self, offset: usize) -> u32 {
        // SAFETY: the control page is the first 4 KiB of BAR2, mapped below 4 GiB; offsets
        // are the protocol's, 4-aligned.
        unsafe { core::ptr::read_volatile(self.control_addr(offset) as *const u32) }
    }

    /// Writes a `u32` of the control page.
    pub fn set_control32(&self, offset: usize, value: u32) {
        // SAFETY: as in `control32`.
        unsafe { core::ptr::write_volatile(self.control_addr(offset) as *mut u32, value) }
    }

    fn set_control64(&self, offset: usize, value: u64) {
        // SAFETY: as in `control32`; argument slots are 8-aligned.
        unsafe { core::ptr::write_volatile(self.control_addr(offset) as *mut u64, value) }
    }

    /// Runs command `cmd` with `args` on the device and waits (polling) for its status.
    ///
    /// # Errors
    /// The device's message when it refused; a timeout message after
    /// [`COMMAND_TIMEOUT_S`].
    /// The device's last message (why it refused a command or a KIQ packet).
    pub fn message(&self) -> alloc::string::String {
        let mut message = alloc::vec::Vec::with_capacity(MESSAGE_BYTES);
        for i in 0..MESSAGE_BYTES {
            // SAFETY: as in `control32`, byte reads inside the message area.
            let b = unsafe {
                core::ptr::read_volatile(self.control_addr(CTL_MESSAGE + i) as *const u8)
            };
            if b == 0 {
                break;
            }
            message.push(b);
        }
        alloc::string::String::from_utf8(message).unwrap_or_else(|_| "(not UTF-8)".into())
    }

    pub fn command(&self, cmd: u32, args: &[u64], tsc_hz: u64) -> Result<(), CommandError> {
        static LOCK: spin::Mutex<()> = spin::Mutex::new(());
        let _g = LOCK.lock();
        for (i, a) in args.iter().enumerate().take(8) {
            self.set_control64(CTL_ARGS + 8 * i, *a);
        }
        self.set_control32(CTL_CMD_STATUS, STATUS_PENDING);
        fence(Ordering::SeqCst);
        self.set_control32(CTL_CMD, cmd);
        self.ring(DEVICE_PEER, DEVICE_VECTOR_COMMAND);
        let deadline = rdtsc() + COMMAND_TIMEOUT_S * tsc_hz;
        loop {
            match self.control32(CTL_CMD_STATUS) {
                STATUS_PENDING => {}
                STATUS_OK => return Ok(()),
                _ => {
                    return Err(CommandError {
                        cmd,
                        message: self.message(),
                    })
                }
            }
            if rdtsc() > deadline {
                return Err(CommandError {
                    cmd,
                    message: "the device did not answer within 5 s".into(),
                });
            }
            core::hint::spin_loop();
        }
    }
}

/// A command the device refused (or never answered), with its message (at most
/// [`MESSAGE_BYTES`] bytes from the device).
#[derive(Clone)]
pub struct CommandError {
    /// The command code.
    pub cmd: u32,
    message: alloc::string::String,
}

impl core::fmt::Display for CommandError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "device command {}: {}", self.cmd, self.message)
    }
}

impl core::fmt::Debug for CommandError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}
