//! Entry points of hsa-rt's fuzz targets into the emulated device's own parsers of outside
//! input: the command processor's PM4 engine and the SDMA engine, which a client reaches
//! only through a queue (an AMD PM4-IB packet, an SDMA ring). Built with the private feature
//! `_fuzz` (`hsa-tests` enables it; `fuzz/` and `tests/tests/fuzz_corpus.rs` call these through
//! `hsa_tests::fuzz_targets`); nothing of the device's interface depends on it.
//!
//! Both run against the memory the device's engines see: buffer objects in an allocation
//! table (`Allocs`) translated as the engines translate them (`device_span`, which lets a
//! range cross from one buffer object into the next and faults on any byte that is not mapped
//! to the GPU). The table holds two adjacent 16 KiB buffer objects mapped to GPU
//! [`FUZZ_GPU_ID`] at [`FUZZ_MEMORY_VA`] and a third, not mapped to it, 64 KiB above; the input
//! fills the first two, zeroed before each run.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Arc;

use hsa_core::packet_processor::DecodedPm4Ib;
use hsa_core::{Error, Status};

use super::mem::{Backing, Region};
use super::memory::{Alloc, Allocs, DeviceSpan, Kind};
use super::pm4::{self, Pm4Memory};
use super::sdma::{self, CountWidth, SdmaMemory, Step};

/// The `gpu_id` the fuzzed engines run as.
pub const FUZZ_GPU_ID: u32 = 0x1234;
/// Device address of the first byte of the fuzzed memory (the two mapped buffer objects).
pub const FUZZ_MEMORY_VA: u64 = 0x1_0000;
/// Bytes of each buffer object.
pub const FUZZ_BO_BYTES: u64 = 16 << 10;
/// Device address of the buffer object that is not mapped to [`FUZZ_GPU_ID`].
pub const FUZZ_UNMAPPED_VA: u64 = FUZZ_MEMORY_VA + 64 * 1024;
/// Most SDMA packets one input runs.
pub const FUZZ_SDMA_PACKETS: usize = 256;

/// The fuzzed memory of this thread: the allocation table and its backings.
struct Memory {
    allocs: Allocs,
    mapped: Vec<Region>,
    /// End-of-pipe and trap interrupts raised (context ids), cleared per run.
    interrupts: RefCell<Vec<u32>>,
    _backings: Vec<Arc<Backing>>,
}

impl Memory {
    fn new() -> Memory {
        let mut allocs = Allocs::default();
        let mut mapped = Vec::new();
        let mut backings = Vec::new();
        for (i, va) in [
            FUZZ_MEMORY_VA,
            FUZZ_MEMORY_VA + FUZZ_BO_BYTES,
            FUZZ_UNMAPPED_VA,
        ]
        .into_iter()
        .enumerate()
        {
            let b = Arc::new(
                Backing::new("hsa-fuzz-bo", FUZZ_BO_BYTES).expect("a 16 KiB memfd buffer object"),
            );
            let region = b.region();
            let id = allocs.next_id();
            let mut on = BTreeSet::new();
            if i < 2 {
                on.insert(FUZZ_GPU_ID);
                mapped.push(region);
            }
            allocs.insert(Alloc {
                va,
                size: FUZZ_BO_BYTES,
                gpu_id: FUZZ_GPU_ID,
                handle: u64::from(id),
                mmap_offset: u64::from(id) << 12,
                kind: Kind::Gtt,
                region,
                backing: Some(b.clone()),
                mapped: on,
                pins: 0,
                coarse: false,
            });
            backings.push(b);
        }
        Memory {
            allocs,
            mapped,
            interrupts: RefCell::new(Vec::new()),
            _backings: backings,
        }
    }

    /// Zeroes the mapped buffer objects, then copies `image` into them from their start.
    fn reset(&self, image: &[u8]) {
        let zero = vec![0u8; FUZZ_BO_BYTES as usize];
        let mut rest = image;
        for r in &self.mapped {
            r.write_from(&zero);
            let n = rest.len().min(r.len());
            if n > 0 {
                if let Some(head) = r.sub(0, n as u64) {
                    head.write_from(&rest[..n]);
                }
            }
            rest = &rest[n..];
        }
        self.interrupts.borrow_mut().clear();
    }
}

impl Pm4Memory for Memory {
    fn read_dwords(&self, va: u64, out: &mut [u32]) -> Result<(), Error> {
        let len = out.len() as u64 * 4;
        let span = self
            .allocs
            .device_span(FUZZ_GPU_ID, va, len, "PM4 indirect buffer read")
            .map_err(|f| f.error)?;
        let mut bytes = vec![0u8; out.len() * 4];
        span.read_into(&mut bytes);
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    }

    fn write_u32(&self, va: u64, value: u32) -> Result<(), Error> {
        let r = self
            .allocs
            .device_region_or_fault(FUZZ_GPU_ID, va, 4, "PM4 write")?;
        r.write_from(&value.to_le_bytes());
        Ok(())
    }

    fn write_u64(&self, va: u64, value: u64) -> Result<(), Error> {
        let r = self
            .allocs
            .device_region_or_fault(FUZZ_GPU_ID, va, 8, "PM4 write")?;
        r.write_from(&value.to_le_bytes());
        Ok(())
    }

    fn gpu_clock(&self) -> u64 {
        0x1234_5678
    }

    fn end_of_pipe_interrupt(&self, context_id: u32) {
        self.interrupts.borrow_mut().push(context_id);
    }

    fn dispatch(&self, _dispatch: &pm4::ComputeDispatch) -> Result<(), Error> {
        // No waves here: the engine's checks of the registers are what is fuzzed.
        Ok(())
    }

    fn poll_interval(&self) -> Result<(), Error> {
        // Nobody writes the fuzzed memory meanwhile: a wait that does not hold at once ends.
        Err(hsa_core::error!(
            Status::Exception,
            "preempted: fuzzed wait"
        ))
    }
}

impl SdmaMemory for Memory {
    fn span(&self, va: u64, len: u64, what: &str) -> Result<DeviceSpan, Error> {
        self.allocs
            .device_span(FUZZ_GPU_ID, va, len, what)
            .map_err(|f| f.error)
    }

    fn gpu_clock(&self) -> u64 {
        0x1234_5678
    }

    fn trap(&self, int_ctx: u32) {
        self.interrupts.borrow_mut().push(int_ctx);
    }

    fn unmapped(&self, va: u64, what: &str) -> Error {
        hsa_core::error!(
            Status::MemoryFault,
            "{what} at {va:#x}: unmapped user memory"
        )
    }
}

thread_local! {
    static MEMORY: Memory = Memory::new();
}

fn le_u32s(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect()
}

/// The PM4 engine on one AMD PM4-IB packet: the input's first 16 bytes are the packet's four
/// PM4 dwords (zero-padded), the rest the fuzzed memory's bytes (indirect buffers, write
/// targets).
///
/// # Panics
/// When the engine breaks its contract: an error other than `InvalidPacketFormat` or
/// `MemoryFault`, a write or interrupt after an error (none here: the memory is the fuzzed
/// one), or a panic of its own.
pub fn pm4(data: &[u8]) {
    let (head, image) = data.split_at(data.len().min(16));
    let mut dw = le_u32s(head);
    dw.resize(4, 0);
    let packet = DecodedPm4Ib {
        pm4: [dw[0], dw[1], dw[2], dw[3]],
        completion_signal: hsa_core::abi::SignalHandle::NULL,
    };
    MEMORY.with(|m| {
        m.reset(image);
        match pm4::execute(&packet, &mut pm4::Pm4State::default(), m) {
            Ok(counts) => {
                // Each packet counted ran; a run cannot execute more than the dwords it was
                // given: 4 in the packet and at most two levels of IB of 2^20 dwords.
                assert!(counts.total() <= 4 + 2 * (1 << 20), "{counts:?}");
            }
            Err(e) => assert!(
                matches!(
                    e.status(),
                    Status::InvalidPacketFormat | Status::MemoryFault | Status::Exception
                ),
                "{e}"
            ),
        }
    });
}

/// The SDMA engine on a ring: the input's first byte is the number of ring dwords that
/// follow (little-endian, zero-padded), the rest the fuzzed memory's bytes; an even count runs
/// the engine of SDMA 4.0-4.2 (22-bit byte counts), an odd one SDMA 4.4's (30 bits). Packets run in
/// order, as the engine's thread runs them, until one fails, waits (`POLL_REGMEM` or a looping
/// `ATOMIC` whose condition does not hold) or [`FUZZ_SDMA_PACKETS`] ran.
///
/// # Panics
/// When the engine breaks its contract: an error other than `InvalidPacketFormat` or
/// `MemoryFault`, a packet of 0 dwords or longer than what was left, or a panic of its own.
pub fn sdma(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (ring, image) = rest.split_at(rest.len().min(usize::from(n) * 4));
    let mut dw = le_u32s(ring);
    dw.resize(usize::from(n), 0);
    let width = if n % 2 == 0 {
        CountWidth::SDMA_4_0
    } else {
        CountWidth::SDMA_4_4
    };
    MEMORY.with(|m| {
        m.reset(image);
        let mut i = 0;
        for _ in 0..FUZZ_SDMA_PACKETS {
            if i >= dw.len() {
                break;
            }
            match sdma::execute(&dw[i..], m, width) {
                Ok(Step::Done(len)) => {
                    let len = len as usize;
                    assert!(len >= 1 && i + len <= dw.len(), "packet of {len} at {i}");
                    i += len;
                }
                Ok(Step::Wait) => break,
                Err(e) => {
                    assert!(
                        matches!(
                            e.status(),
                            Status::InvalidPacketFormat | Status::MemoryFault
                        ),
                        "{e}"
                    );
                    break;
                }
            }
        }
    });
}
