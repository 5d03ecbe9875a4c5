//! Leaving the virtual machine through QEMU's `isa-debug-exit` device (`-device
//! isa-debug-exit,iobase=0xf4,iosize=0x04`): writing `code` to port 0xf4 ends QEMU with exit
//! status `(code << 1) | 1`.
//!
//! Ref: QEMU `hw/misc/debugexit.c`.

use crate::arch::{halt_forever, outl};

/// The `isa-debug-exit` port.
pub const DEBUG_EXIT_PORT: u16 = 0xf4;

/// Ends the VM with `code` (QEMU exits with `(code << 1) | 1`). Halts if the device is
/// missing.
pub fn exit(code: u32) -> ! {
    outl(DEBUG_EXIT_PORT, code);
    halt_forever()
}
