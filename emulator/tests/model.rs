//! The emulated GPU behind AMD's model interface (`hsa_emu::device::model`), driven as
//! libhsakmt's model mode drives a model library: a global aperture in which GPU address `va`
//! is CPU address `aperture + va`, buffer objects announced with `alloced_memory`, a queue
//! registered by its GPU addresses, and signal events handed to the host's `set_event`.
//! (`kfd-emu/tests/rocm7.rs` runs ROCR 7.2.4 itself through the library.)

use std::sync::mpsc;
use std::time::Duration;

use hsa_core::sdma::packet;
use hsa_core::{GpuVa, Status};
use hsa_emu::builtin_topology;
use hsa_emu::device::model::{ModelProcess, QueueInfo};
use hsa_linux::kfd::abi::{
    KFD_IOC_QUEUE_TYPE_COMPUTE, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, KFD_IOC_QUEUE_TYPE_SDMA,
};
use hsa_linux::topology::Topology;

/// The built-in topology as libhsakmt's model needs it: each GPU's `gpu_id` its node index + 1.
fn model_topology() -> Topology {
    let mut t = builtin_topology();
    for (i, n) in t.nodes.iter_mut().enumerate() {
        if n.properties.gpu_id != 0 {
            n.properties.gpu_id = i as u32 + 1;
        }
    }
    t
}

/// A global aperture of `bytes`, mapped readable and writable (libhsakmt maps each buffer
/// object's pages there; here they are all present from the start).
struct Aperture {
    base: *mut u8,
    bytes: usize,
}

impl Aperture {
    fn new(bytes: usize) -> Aperture {
        // SAFETY: a fresh private anonymous mapping at an address the kernel picks replaces
        // nothing.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                bytes,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .unwrap();
        Aperture {
            base: base.cast(),
            bytes,
        }
    }

    fn addr(&self) -> u64 {
        self.base as u64
    }

    /// A copy of the `len` bytes at GPU address `va`.
    fn read(&self, va: u64, len: usize) -> Vec<u8> {
        assert!(va as usize + len <= self.bytes);
        let mut out = vec![0; len];
        // SAFETY: inside the mapping (checked above), which lives as long as `self`; read
        // only after the queue signalled that it is done with the range.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(va as usize), out.as_mut_ptr(), len) };
        out
    }

    /// Stores `data` at GPU address `va`.
    fn write(&self, va: u64, data: &[u8]) {
        assert!(va as usize + data.len() <= self.bytes);
        // SAFETY: inside the mapping (checked above); no queue reads the range yet.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.add(va as usize), data.len())
        };
    }

    /// The 64-bit word at GPU address `va` (8-byte aligned), which the engine reads or writes
    /// atomically.
    fn word(&self, va: u64) -> &std::sync::atomic::AtomicU64 {
        assert!(va % 8 == 0 && va as usize + 8 <= self.bytes);
        // SAFETY: aligned and inside the mapping (checked above), which outlives the borrow;
        // every access to it is atomic.
        unsafe { &*(self.base.add(va as usize) as *const std::sync::atomic::AtomicU64) }
    }
}

impl Drop for Aperture {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, no longer used.
        unsafe { rustix::mm::munmap(self.base.cast(), self.bytes) }.unwrap();
    }
}

/// Sets `gpu`'s event sink (the host's `set_event`) to one that sends each event id down the
/// returned channel.
fn events_to_channel(gpu: &hsa_emu::device::model::ModelGpu) -> mpsc::Receiver<u32> {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    gpu.set_event_sink(Box::new(move |id| {
        tx.lock().unwrap().send(id).unwrap();
    }));
    rx
}

/// An SDMA queue registered by GPU addresses copies between buffers of the global aperture,
/// writes its fence there, and its trap reaches the host's `set_event` as the event id, not
/// the emulated amdkfd's event table: libhsakmt's model mode, with the SDMA engine taking the
/// write pointer in memory as its doorbell (libhsakmt gives the model none).
#[test]
fn sdma_queue_runs_in_the_global_aperture_and_signals_the_host() {
    let process = ModelProcess::new(model_topology()).unwrap();
    let gpu = process.create_gpu().unwrap();
    assert_eq!(gpu.gpu_id(), 2);
    let aperture = Aperture::new(1 << 20);
    gpu.set_global_aperture(aperture.addr(), 1 << 20);
    let rx = events_to_channel(&gpu);
    let (ring, pointers, src, dst) = (0x1_0000u64, 0x2_0000u64, 0x3_0000u64, 0x4_0000u64);
    for va in [ring, pointers, src, dst] {
        gpu.alloced_memory(va, 0x1000, 0).unwrap();
    }
    let want: Vec<u8> = (0..4096).map(|i| (i * 7 + 3) as u8).collect();
    aperture.write(src, &want);
    let q = gpu
        .register_queue(&QueueInfo {
            ring_base_address: ring,
            write_pointer_address: pointers + 8,
            read_pointer_address: pointers,
            ring_size: 4096,
            queue_type: KFD_IOC_QUEUE_TYPE_SDMA,
        })
        .unwrap();
    let mut dwords = Vec::new();
    dwords.extend(packet::copy_linear(GpuVa(dst), GpuVa(src), 4096));
    dwords.extend(packet::fence(GpuVa(pointers + 0x100), 7));
    dwords.extend(packet::trap(42));
    let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
    aperture.write(ring, &bytes);
    // The write pointer, in bytes, in memory: the only "doorbell" a model gets.
    aperture
        .word(pointers + 8)
        .store(bytes.len() as u64, std::sync::atomic::Ordering::Release);
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok(42));
    assert_eq!(aperture.read(dst, 4096), want);
    assert_eq!(aperture.read(pointers + 0x100, 4), 7u32.to_le_bytes());
    // The read pointer reaches the write pointer (the engine stores it after the trap).
    let rptr = aperture.word(pointers);
    let start = std::time::Instant::now();
    while rptr.load(std::sync::atomic::Ordering::Acquire) != bytes.len() as u64 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "read pointer {} never reached {}",
            rptr.load(std::sync::atomic::Ordering::Acquire),
            bytes.len()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    gpu.destroy_queue(q).unwrap();
    // The queue's buffers may go once the queue is gone.
    gpu.freed_memory(ring, 0x1000).unwrap();
    assert_eq!(
        gpu.freed_memory(ring, 0x1000).unwrap_err().status(),
        Status::InvalidArgument
    );
}

/// What libhsakmt's model would never send, or a model cannot do, is an error naming it.
#[test]
fn bad_calls_are_errors_naming_what_is_wrong() {
    // A topology whose GPU's gpu_id is not its node index + 1.
    let e = ModelProcess::new(builtin_topology()).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.detail().to_string().contains("node 1 has gpu_id"), "{e}");
    let process = ModelProcess::new(model_topology()).unwrap();
    let gpu = process.create_gpu().unwrap();
    // The built-in topology has one GPU: a second create has none to take.
    assert_eq!(
        process.create_gpu().unwrap_err().status(),
        Status::OutOfResources
    );
    let detail = |r: Result<(), hsa_core::Error>| {
        let e = r.unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument, "{e}");
        e.detail().to_string()
    };
    assert!(detail(gpu.alloced_memory(0x1000, 0x1000, 0)).contains("no global aperture"));
    let aperture = Aperture::new(1 << 20);
    gpu.set_global_aperture(aperture.addr(), 1 << 20);
    assert!(detail(gpu.alloced_memory(0xF_F000, 0x2000, 0)).contains("outside the global aperture"));
    assert!(detail(gpu.alloced_memory(0x1800, 0x1000, 0)).contains("page-aligned"));
    gpu.alloced_memory(0x1000, 0x2000, 0).unwrap();
    assert!(detail(gpu.alloced_memory(0x2000, 0x1000, 0)).contains("free in the GPU's VM"));
    assert!(detail(gpu.freed_memory(0x1000, 0x1000)).contains("no such buffer"));
    let info = QueueInfo {
        ring_base_address: 0x1000,
        write_pointer_address: 0x2008,
        read_pointer_address: 0x2000,
        ring_size: 4096,
        queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE,
    };
    let e = gpu.register_queue(&info).unwrap_err();
    assert!(e.detail().to_string().contains("queue type 0"), "{e}");
    // An AQL queue whose pointers are not amd_queue_t's (write_dispatch_id at 56,
    // read_dispatch_id at 128 of one 64-byte aligned struct): refused as CREATE_QUEUE is.
    let e = gpu
        .register_queue(&QueueInfo {
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            ..info
        })
        .unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.detail().to_string().contains("CREATE_QUEUE"), "{e}");
}

/// An AQL queue registered by GPU addresses completes a barrier-AND packet: the completion
/// signal's value drops to 0, and its event, which has no mailbox (libhsakmt's model mode
/// gives events no slot: `event_mailbox_ptr` is 0), reaches the host's `set_event` by its
/// `event_id`; a completion signal with no event raises nothing.
#[test]
fn aql_completion_raises_the_signal_event_by_id() {
    use hsa_core::abi::signal::AmdSignal;
    use hsa_core::abi::SignalHandle;
    use hsa_core::packet::{BarrierAnd, HeaderFlags};
    use std::sync::atomic::Ordering;
    use zerocopy::IntoBytes;

    let process = ModelProcess::new(model_topology()).unwrap();
    let gpu = process.create_gpu().unwrap();
    let aperture = Aperture::new(1 << 20);
    gpu.set_global_aperture(aperture.addr(), 1 << 20);
    let rx = events_to_channel(&gpu);
    let (ring, queue, signals) = (0x1_0000u64, 0x2_0000u64, 0x3_0000u64);
    for va in [ring, queue, signals] {
        gpu.alloced_memory(va, 0x1000, 0).unwrap();
    }
    // Signal 0: value 1, event 9, no mailbox. Signal 1: value 1, no event.
    for (k, event_id) in [(0u64, 9u32), (1, 0)] {
        let s = AmdSignal {
            value: 1,
            event_id,
            ..AmdSignal::default()
        };
        aperture.write(signals + 64 * k, s.as_bytes());
    }
    let q = gpu
        .register_queue(&QueueInfo {
            ring_base_address: ring,
            // amd_queue_t's write_dispatch_id (offset 56) and read_dispatch_id (offset 128).
            write_pointer_address: queue + 56,
            read_pointer_address: queue + 128,
            ring_size: 4096,
            queue_type: KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        })
        .unwrap();
    for (k, signal) in [signals + 64, signals].into_iter().enumerate() {
        let p = BarrierAnd::new(HeaderFlags::SYSTEM, &[], SignalHandle(signal))
            .unwrap()
            .emit()
            .unwrap();
        let at = ring + 64 * k as u64;
        aperture.write(at, &p.bytes);
        // Publish the header last, as a runtime does.
        let first = aperture.word(at);
        let v = first.load(Ordering::Relaxed) & !0xFFFF_FFFF | u64::from(p.header_word);
        first.store(v, Ordering::Release);
    }
    // The write index in memory: the only "doorbell" a model gets.
    aperture.word(queue + 56).store(2, Ordering::Release);
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)), Ok(9));
    assert_eq!(aperture.read(signals, 8), 0i64.to_le_bytes());
    assert_eq!(aperture.read(signals + 64, 8), 0i64.to_le_bytes());
    // Nothing else: the event-less signal raised no event.
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(200)),
        Err(mpsc::RecvTimeoutError::Timeout)
    );
    gpu.destroy_queue(q).unwrap();
}
