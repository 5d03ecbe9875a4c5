//! Queue errors reach the `log` facade at error level with their full detail, whether or not
//! the queue has an error callback (here none: the queue records the error, `AqlQueue::error`):
//! a test logger (this test binary's only `log` backend) captures the records while a
//! malformed packet stops a queue of the emulated device.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hsa_core::packet::EncodedPacket;
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::{NodeId, Status};
use hsa_emu::device::BUILTIN_GPU_ID;
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use log::{Level, LevelFilter, Log, Metadata, Record};

/// Every record: level, target (the module that logged it) and message.
static RECORDS: Mutex<Vec<(Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl Log for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &Record<'_>) {
        RECORDS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((
                record.level(),
                record.target().to_string(),
                record.args().to_string(),
            ));
    }

    fn flush(&self) {}
}

static CAPTURE: Capture = Capture;

#[test]
fn a_queue_error_is_logged_at_error_level_with_its_detail() {
    log::set_logger(&CAPTURE).unwrap();
    log::set_max_level(LevelFilter::Trace);
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let config = QueueConfig::new(NodeId(gpu.node()), 64, 64, gpu.queue_max_size());
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    // A packet whose header says type 6 (undefined).
    let packet = EncodedPacket {
        bytes: [0; 64],
        header_word: 6 | 2 << 9 | 2 << 11,
    };
    let mut r = q.reserve(1).unwrap();
    let last = r.write_next(&packet).unwrap();
    q.ring_doorbell(last).unwrap();
    let started = Instant::now();
    let error = loop {
        if let Some(e) = q.error() {
            break e;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no queue error"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let errors: Vec<(String, String)> = RECORDS
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, _, _)| *level == Level::Error)
        .map(|(_, target, message)| (target.clone(), message.clone()))
        .collect();
    let code = hsa_core::queue::inactive::encode(Status::InvalidPacketFormat, false);
    let detail = format!(
        "queue_inactive_signal {code:#x}; KFD hardware exception event on gpu_id \
         {BUILTIN_GPU_ID:#x}: per-engine reset after a GPU hang"
    );
    // The queue keeps the error the platform reported, as it logged it.
    assert_eq!(error.status(), Status::InvalidPacketFormat);
    assert_eq!(error.detail(), detail.as_str());
    assert_eq!(
        errors,
        [
            // The device's log: the packet and what is wrong with it.
            (
                "hsa_emu::device".to_string(),
                "queue 0 stopped with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: packet 0: \
                 packet type (header bits 0..8) is 6; must be in 0..=5"
                    .to_string()
            ),
            // The runtime's, before the queue records it: what amdkfd reported.
            (
                "hsa_linux::device::monitor".to_string(),
                format!("queue 0 stopped with HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: {detail}")
            ),
        ]
    );
    // The queue's creation, at debug level, from the core.
    let records = RECORDS.lock().unwrap().clone();
    let created = format!(
        "queue {} created on node {}: 64 packets",
        q.id(),
        gpu.node()
    );
    assert!(
        records.iter().any(|(level, target, message)| {
            *level == Level::Debug
                && target == "hsa_core::queue::aql"
                && message.starts_with(&created)
        }),
        "{records:?}"
    );
    q.destroy().unwrap();
}
