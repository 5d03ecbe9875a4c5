//! `hsa_core::signal::wait_any` over many interrupt signals on the emulated device blocks in
//! one `AMDKFD_IOC_WAIT_EVENTS` over all their events (`wait_for_all` 0, no timeout), as ROCR's
//! `hsaKmtWaitOnMultipleEvents` does, instead of taking 1 ms turns on one event at a time; and
//! it reports the signal that fired, here the last one.

use std::sync::Arc;

use hsa_core::runtime::Runtime;
use hsa_core::signal::{wait_any, MemoryOrder, SignalCondition, SignalPool, WaitState};
use hsa_core::NodeId;
use hsa_emu::device::record::KfdCall;
use hsa_emu::{builtin_topology, EmulatedKfd, SelectedDevice};
use hsa_linux::kfd::abi::{WaitEventsArgs, AMDKFD_IOC_WAIT_EVENTS};
use zerocopy::FromBytes;

/// Signals waited on at once.
const SIGNALS: usize = 12;

#[test]
fn wait_any_blocks_in_one_wait_events_over_every_signal_and_reports_the_last() {
    let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
    let rt = Runtime::new(Arc::new(
        SelectedDevice::emulated(emulated.clone()).unwrap().platform,
    ))
    .unwrap();
    let cpu = rt.first_cpu().unwrap();
    let pool = SignalPool::new(rt.platform(), NodeId(cpu.node()));
    let signals: Vec<_> = (0..SIGNALS)
        .map(|_| pool.create_interrupt(1).unwrap())
        .collect();
    let refs: Vec<_> = signals.iter().collect();
    let conditions = [SignalCondition::Lt; SIGNALS];
    let values = [1i64; SIGNALS];
    emulated.start_recording();
    let hit = std::thread::scope(|s| {
        s.spawn(|| {
            // Long past the spin phase: the waiter is blocked by now.
            std::thread::sleep(std::time::Duration::from_millis(100));
            signals[SIGNALS - 1].subtract(8, MemoryOrder::Release);
        });
        wait_any(&refs, &conditions, &values, u64::MAX, WaitState::Blocked).unwrap()
    });
    assert_eq!(hit, Some((SIGNALS - 1, -7)));
    // The signals' events are distinct: one wait must cover all of them.
    let mut events: Vec<u32> = signals.iter().map(|s| s.event().unwrap().0).collect();
    events.dedup();
    assert_eq!(events.len(), SIGNALS);
    // Every WAIT_EVENTS of the wait (not the monitor's, on its own two events) names all of
    // the signals' events, waits for any, with no timeout.
    let waits: Vec<WaitEventsArgs> = emulated
        .recording()
        .into_iter()
        .filter_map(|c| match c {
            KfdCall::Ioctl {
                request, before, ..
            } if request == AMDKFD_IOC_WAIT_EVENTS => WaitEventsArgs::read_from_bytes(&before).ok(),
            _ => None,
        })
        .filter(|a| a.num_events != 2)
        .collect();
    assert!(!waits.is_empty(), "the wait never blocked in WAIT_EVENTS");
    for a in &waits {
        assert_eq!(a.num_events as usize, SIGNALS, "{a:?}");
        assert_eq!(a.wait_for_all, 0, "{a:?}");
        assert_eq!(a.timeout, u32::MAX, "{a:?}");
    }
}
