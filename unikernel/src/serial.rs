//! The serial console: COM1 (I/O port 0x3f8, 16550 UART), 115200 8N1, polled output. What
//! the unikernel prints is the test's log (`-serial stdio`). [`println!`](crate::println)
//! formats into it under a spin lock; the interrupt handlers never print (a fault handler
//! takes the lock by force before it reports and exits).
//!
//! Ref: National Semiconductor PC16550D data sheet (registers THR, IER, FCR, LCR, MCR, LSR).

use core::fmt;

use crate::arch::{inb, outb};

const COM1: u16 = 0x3f8;
/// Line status register: transmit holding register empty.
const LSR_THRE: u8 = 0x20;

/// The console: a zero-sized writer to COM1.
pub struct Serial;

/// The console lock.
pub static CONSOLE: spin::Mutex<Serial> = spin::Mutex::new(Serial);

/// Programs COM1: 115200 baud (divisor 1), 8 data bits, no parity, 1 stop bit, FIFOs on, no
/// interrupts.
pub fn init() {
    outb(COM1 + 1, 0x00); // IER: no interrupts
    outb(COM1 + 3, 0x80); // LCR: DLAB
    outb(COM1, 0x01); // divisor low: 115200
    outb(COM1 + 1, 0x00); // divisor high
    outb(COM1 + 3, 0x03); // LCR: 8N1
    outb(COM1 + 2, 0xc7); // FCR: enable and clear FIFOs
    outb(COM1 + 4, 0x03); // MCR: DTR, RTS
}

impl Serial {
    fn put(&mut self, b: u8) {
        while inb(COM1 + 5) & LSR_THRE == 0 {
            core::hint::spin_loop();
        }
        outb(COM1, b);
    }
}

impl fmt::Write for Serial {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            if b == b'\n' {
                self.put(b'\r');
            }
            self.put(b);
        }
        Ok(())
    }
}

/// Prints to the console (used by [`println!`](crate::println)).
pub fn print(args: fmt::Arguments<'_>) {
    use fmt::Write;
    let _ = CONSOLE.lock().write_fmt(args);
}

/// Prints from a context that may have interrupted a holder of the console lock (a fault):
/// takes the lock by force.
pub fn print_forced(args: fmt::Arguments<'_>) {
    use fmt::Write;
    if CONSOLE.is_locked() {
        // SAFETY: the lock guards nothing but the order of the UART's bytes; its holder was
        // interrupted by the fault being reported and never resumes (the caller exits).
        #[allow(unsafe_code)]
        unsafe {
            CONSOLE.force_unlock();
        }
    }
    let _ = CONSOLE.lock().write_fmt(args);
}

/// Prints a line to the serial console.
#[macro_export]
macro_rules! println {
    () => { $crate::serial::print(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::serial::print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
