//! A multi-producer AQL queue's doorbell stores each producer's value as given (ROCR's gfx9+
//! doorbell), so the doorbell can end below the last packet. The emulated command processor
//! takes packets up to the write index, as the CP's write-pointer poll does: every packet
//! still runs, whatever order the doorbell values arrived in.

use std::sync::Arc;

use hsa_core::abi::SignalHandle;
use hsa_core::packet::{BarrierAnd, EncodedPacket, HeaderFlags};
use hsa_core::queue::{AqlQueue, QueueConfig};
use hsa_core::runtime::Runtime;
use hsa_core::signal::{LoadOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::NodeId;
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};

fn barrier(completion: SignalHandle) -> EncodedPacket {
    BarrierAnd::new(HeaderFlags::SYSTEM, &[], completion)
        .unwrap()
        .emit()
        .unwrap()
}

#[test]
fn packets_run_when_the_doorbell_ends_below_the_last_one() {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated).unwrap().platform,
    ))
    .unwrap();
    let gpu = rt.first_gpu().unwrap();
    let cpu = rt.first_cpu().unwrap();
    let config = QueueConfig::new(
        NodeId(gpu.node()),
        256,
        gpu.queue_min_size(),
        gpu.queue_max_size(),
    );
    let q = AqlQueue::create(rt.platform(), &config).unwrap();
    let signals = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let wait_zero = |s: &hsa_core::signal::Signal<_>| {
        s.wait(
            SignalCondition::Eq,
            0,
            10_000_000_000,
            WaitState::Blocked,
            LoadOrder::Acquire,
        )
    };

    // Two reservations; the later slot is written and rung first, then the earlier one, so
    // the doorbell's last value (0) is below the last packet (1).
    let first = signals.create(1).unwrap();
    let second = signals.create(1).unwrap();
    let mut r0 = q.reserve(1).unwrap();
    let mut r1 = q.reserve(1).unwrap();
    let i1 = r1.write_next(&barrier(second.handle())).unwrap();
    q.ring_doorbell(i1).unwrap();
    let i0 = r0.write_next(&barrier(first.handle())).unwrap();
    q.ring_doorbell(i0).unwrap();
    assert_eq!((i0, i1), (0, 1));
    assert_eq!(
        wait_zero(&first),
        0,
        "the packet at index 0 never completed"
    );
    assert_eq!(
        wait_zero(&second),
        0,
        "the packet at index 1 never completed"
    );

    // Two producers, 2,000 packets, each rung with its own index in whatever order the
    // threads get there; each completion decrements one signal.
    let per_thread = 1_000u64;
    let done = signals.create(2 * per_thread as i64).unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (q, done) = (&q, &done);
            s.spawn(move || {
                let packet = barrier(done.handle());
                for _ in 0..per_thread {
                    let mut r = q.reserve(1).unwrap();
                    let i = r.write_next(&packet).unwrap();
                    q.ring_doorbell(i).unwrap();
                }
            });
        }
    });
    assert_eq!(wait_zero(&done), 0, "not every packet completed");
    assert_eq!(q.load_read_index(LoadOrder::Acquire), 2 + 2 * per_thread);
}
