//! Tests of the process-wide state through the C entry points: init counting, the doorbell
//! table, the async handler thread, signals held past shut-down, queue removal against read
//! sections. They run the Linux backend (the emulated device); the bare-metal one is tested
//! from C (`tests/baremetal.rs`).
#![allow(unsafe_code)] // the C entry points
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use hsa_core::Status;

use crate::rcu;
use crate::state::*;
use hsa_core::signal::{LoadOrder, StoreOrder};

/// The tests share the process-wide runtime: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// `hsa_init` counts to `INT32_MAX` and the next call is `REFCOUNT_OVERFLOW`, as ROCR 5.2;
/// the count then still goes down to 0. (Counting there one call at a time takes a
/// minute: the test starts the count near the limit.)
#[test]
fn init_stops_at_int32_max() {
    let _serial = lock(&SERIAL);
    init().unwrap();
    lock(&GLOBAL).0 = 0x7fff_fffe;
    init().unwrap();
    assert_eq!(lock(&GLOBAL).0, 0x7fff_ffff);
    let e = init().unwrap_err();
    assert_eq!(e.status(), Status::RefcountOverflow);
    assert_eq!(
        e.detail(),
        "hsa_init called 2147483647 times without hsa_shut_down"
    );
    assert_eq!(lock(&GLOBAL).0, 0x7fff_ffff);
    lock(&GLOBAL).0 = 1;
    shut_down().unwrap();
    assert!(state().is_err());
}

/// Stores to doorbell signals find their queue through the table's doorbell map: after
/// four queues are created and two destroyed, a store to a destroyed queue's doorbell is
/// refused as a store to any dead handle is (`INVALID_SIGNAL`, "... is not a live
/// signal"; the C store logs it and does nothing), and no entry of it is left; a live
/// queue's doorbell still rings (the doorbell word holds the value) and its barrier
/// packet completes.
#[test]
#[allow(unsafe_code)] // the C entry points, and a read of the doorbell word
fn doorbell_stores_follow_queue_create_and_destroy() {
    use crate::ffi::queue::{hsa_queue_create, hsa_queue_destroy};
    use crate::ffi::signal::{hsa_signal_create, hsa_signal_destroy, ring_doorbell};
    use hsa_core::abi::SignalHandle;
    use hsa_core::packet::{BarrierAnd, HeaderFlags};

    let _serial = lock(&SERIAL);
    init().unwrap();
    let st = state().unwrap();
    let gpu = st.rt().first_gpu().expect("the emulated GPU").handle().0;
    let mut queues = Vec::new();
    for _ in 0..4 {
        let mut q: *mut core::ffi::c_void = core::ptr::null_mut();
        // SAFETY: no callback; `q` is a writable hsa_queue_t* slot.
        let status =
            unsafe { hsa_queue_create(gpu, 64, 0, None, core::ptr::null_mut(), 0, 0, &mut q) };
        assert_eq!(status, Status::Success.raw());
        queues.push(q);
    }
    let doorbell_of = |q: *mut core::ffi::c_void| match &*st.queue(q as u64).unwrap() {
        QueueImpl::Aql(l, _) => read(l).as_ref().unwrap().doorbell_signal().handle().0,
        QueueImpl::Soft(_) => unreachable!("hsa_queue_create made it"),
    };
    let doorbells: Vec<u64> = queues.iter().map(|&q| doorbell_of(q)).collect();
    for (&q, &d) in queues.iter().zip(&doorbells) {
        assert!(Arc::ptr_eq(
            &st.queue_by_doorbell(d).unwrap(),
            &st.queue(q as u64).unwrap()
        ));
    }
    assert_eq!(hsa_queue_destroy(queues[1]), Status::Success.raw());
    assert_eq!(hsa_queue_destroy(queues[3]), Status::Success.raw());
    for &dead in [doorbells[1], doorbells[3]].iter() {
        assert!(st.queue_by_doorbell(dead).is_none());
        let e = ring_doorbell(&st, dead, 1, StoreOrder::Release).unwrap_err();
        assert_eq!(e.status(), Status::InvalidSignal);
        assert_eq!(
            e.detail(),
            alloc::format!("signal handle {dead:#x} is not a live signal")
        );
    }
    assert_eq!(st.queues.doorbells(), 2);

    // The live queue 2: barrier-AND packets, the last with a completion signal, rung
    // through the doorbell path.
    let mut done = 0u64;
    // SAFETY: no consumers; `done` is a writable hsa_signal_t.
    let status = unsafe { hsa_signal_create(1, 0, core::ptr::null(), &raw mut done) };
    assert_eq!(status, Status::Success.raw());
    let live = st.queue(queues[2] as u64).unwrap();
    let QueueImpl::Aql(l, _) = &*live else {
        unreachable!("hsa_queue_create made it")
    };
    let (index, bell) = {
        let guard = read(l);
        let aql = guard.as_ref().unwrap();
        let packet = |signal| {
            BarrierAnd::new(HeaderFlags::NONE, &[], signal)
                .unwrap()
                .emit()
                .unwrap()
        };
        // Two packets, so that the doorbell's value (the last one's index, 1) differs
        // from the word's initial 0.
        let mut r = aql.reserve(2).unwrap();
        r.write(0, &packet(SignalHandle::NULL)).unwrap();
        (
            r.write(1, &packet(SignalHandle(done))).unwrap(),
            aql.doorbell_signal().doorbell_address(),
        )
    };
    ring_doorbell(&st, doorbells[2], index as i64, StoreOrder::Release).unwrap();
    // SAFETY: the doorbell page's word of a live queue, mapped for the platform's life
    // and 8-byte aligned; read once, volatile (the device reads it too).
    let rung = unsafe { core::ptr::read_volatile(bell as *const u64) };
    assert_eq!(rung, index);
    let signal = st.signal(done).unwrap();
    let t = std::time::Instant::now();
    while signal.load(LoadOrder::Acquire) != 0 {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "the barrier packet never completed"
        );
        std::thread::yield_now();
    }
    drop((signal, live));
    assert_eq!(hsa_signal_destroy(done), Status::Success.raw());
    assert_eq!(hsa_queue_destroy(queues[0]), Status::Success.raw());
    assert_eq!(hsa_queue_destroy(queues[2]), Status::Success.raw());
    assert!(st.queue_by_doorbell(doorbells[2]).is_none());
    assert_eq!(st.queues.doorbells(), 0);
    drop(st);
    shut_down().unwrap();
}

/// The async handler thread (`hsa_amd_signal_async_handler`, issue 20: "without
/// busy-polling") sleeps while no watched signal changes: over 300 ms with a handler armed
/// on a signal nobody touches, the thread named "hsa-rt async handlers" is given under 3
/// clock ticks of CPU time (`/proc/self/task/TID/stat` utime + stime, 100 per second), where
/// polling would take about 30. (CPU time, not a speed: the wall-clock wait only gives a
/// poller the chance to burn it.) Then the handler runs once the signal changes.
#[test]
#[allow(unsafe_code)] // the C entry points and the handler's argument
fn the_async_handler_thread_sleeps_until_a_signal_changes() {
    use crate::ffi::signal::{hsa_signal_create, hsa_signal_destroy};
    use crate::ffi::signal_ext::hsa_amd_signal_async_handler;
    use core::sync::atomic::AtomicBool;

    /// utime + stime of this process's thread whose name starts with `prefix`.
    fn cpu_ticks(prefix: &str) -> Option<u64> {
        for task in std::fs::read_dir("/proc/self/task").ok()? {
            let dir = task.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            if !comm.starts_with(prefix) {
                continue;
            }
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            // Fields after the ")" that ends the name: state is the 3rd field, utime the
            // 14th and stime the 15th.
            let rest = &stat[stat.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            return Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?);
        }
        None
    }
    unsafe extern "C" fn handler(value: i64, arg: *mut core::ffi::c_void) -> bool {
        // SAFETY: `arg` is the test's `AtomicBool`, alive until the handler has run.
        let ran = unsafe { &*arg.cast::<AtomicBool>() };
        ran.store(value == 5, Ordering::Release);
        false
    }

    let _serial = lock(&SERIAL);
    init().unwrap();
    let mut signal = 0u64;
    // SAFETY: no consumers; `signal` is a writable hsa_signal_t.
    let status = unsafe { hsa_signal_create(0, 0, core::ptr::null(), &raw mut signal) };
    assert_eq!(status, Status::Success.raw());
    let ran = AtomicBool::new(false);
    // SAFETY: a live signal, a valid handler; `ran` outlives the registration (the handler
    // runs, and returns false, before the test ends).
    let status = unsafe {
        hsa_amd_signal_async_handler(
            signal,
            0, // HSA_SIGNAL_CONDITION_EQ
            5,
            Some(handler),
            (&raw const ran).cast_mut().cast(),
        )
    };
    assert_eq!(status, Status::Success.raw());
    std::thread::sleep(std::time::Duration::from_millis(50));
    let before = cpu_ticks("hsa-rt async").expect("the async handler thread");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let after = cpu_ticks("hsa-rt async").expect("the async handler thread");
    assert!(
        after - before < 3,
        "the idle async handler thread used {} ticks in 300 ms",
        after - before
    );
    state()
        .unwrap()
        .signal(signal)
        .unwrap()
        .store(5, StoreOrder::Release);
    let t = std::time::Instant::now();
    while !ran.load(Ordering::Acquire) {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "the handler never ran"
        );
        std::thread::yield_now();
    }
    assert_eq!(hsa_signal_destroy(signal), Status::Success.raw());
    shut_down().unwrap();
}

/// A signal still held when the last `hsa_shut_down` drops the state (a call in another
/// thread that looked it up, here this test) stays usable: it keeps its pool and the
/// platform alive, and gives its slot back when it goes. (When the state owned the pool
/// and the platform, the shut-down freed the signal's memory under it.)
#[test]
#[allow(unsafe_code)] // creates the signal through the C entry point, as a C caller does
fn a_signal_held_past_shut_down_keeps_its_memory() {
    let _serial = lock(&SERIAL);
    init().unwrap();
    let mut handle = 0u64;
    // SAFETY: no consumers; `handle` is a writable hsa_signal_t.
    let status =
        unsafe { crate::ffi::signal::hsa_signal_create(41, 0, core::ptr::null(), &raw mut handle) };
    assert_eq!(status, Status::Success.raw());
    let signal = state().unwrap().signal(handle).unwrap();
    shut_down().unwrap();
    assert_eq!(
        state().err().map(|e| e.status()),
        Some(Status::NotInitialized)
    );
    assert_eq!(signal.load(LoadOrder::Acquire), 41);
    signal.store(7, StoreOrder::Release);
    assert_eq!(signal.load(LoadOrder::Acquire), 7);
    assert_eq!(signal.handle().0, handle);
    drop(signal);
}

/// `QueueTable::remove` does not hold the queue's lock across the doorbell's grace period:
/// a thread that finds the lock read-held from inside a section (the remover between its
/// two maps) keeps its section and still gets the write lock (as hsa_queue_inactivate
/// would) before the remover can finish. When the remover held the read lock while it
/// waited for sections, this never happened: a doorbell store waiting behind a waiting
/// writer and the remover's grace period waited for each other.
#[test]
#[allow(unsafe_code)] // the C entry points
fn a_queue_removal_waits_for_sections_without_the_queue_lock() {
    use crate::ffi::queue::{hsa_queue_create, hsa_queue_destroy};
    use core::sync::atomic::AtomicBool;

    let _serial = lock(&SERIAL);
    init().unwrap();
    let st = state().unwrap();
    let gpu = st.rt().first_gpu().expect("the emulated GPU").handle().0;
    let mut caught = 0;
    // Queues until the prober caught the remover holding the lock once (a count, not a time).
    while caught < 1 {
        let mut q: *mut core::ffi::c_void = core::ptr::null_mut();
        // SAFETY: no callback; `q` is a writable hsa_queue_t* slot.
        let status =
            unsafe { hsa_queue_create(gpu, 64, 0, None, core::ptr::null_mut(), 0, 0, &mut q) };
        assert_eq!(status, Status::Success.raw());
        let address = q as u64;
        let queue = st.queue(address).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let prober = {
            let (queue, done) = (queue.clone(), done.clone());
            std::thread::spawn(move || {
                let QueueImpl::Aql(l, _) = &*queue else {
                    unreachable!("hsa_queue_create made it")
                };
                while !done.load(Ordering::Acquire) {
                    let section = rcu::read().unwrap();
                    if l.try_write().is_ok() {
                        continue;
                    }
                    // The remover holds the read lock: with this section kept, the write
                    // lock must still come.
                    while l.try_write().is_err() {
                        std::thread::yield_now();
                    }
                    drop(section);
                    return true;
                }
                false
            })
        };
        let removed = st.queues.remove(address).unwrap();
        done.store(true, Ordering::Release);
        caught += usize::from(prober.join().unwrap());
        assert!(st.queues.by_doorbell(doorbell_of(&removed), None).is_none());
        // Registered again, so that the C call destroys it.
        st.queues
            .insert_aql(address, doorbell_of(&removed), removed);
        drop(queue);
        assert_eq!(hsa_queue_destroy(q), Status::Success.raw());
    }
    drop(st);
    shut_down().unwrap();
}

/// The doorbell signal handle of an AQL queue of the table.
fn doorbell_of(q: &QueueImpl) -> u64 {
    match q {
        QueueImpl::Aql(l, _) => read(l).as_ref().unwrap().doorbell_signal().handle().0,
        QueueImpl::Soft(_) => unreachable!("hsa_queue_create made it"),
    }
}

/// ROCR 7.2.4's system attributes 0x203-0x208 (rocminfo 7.2.4 stops at 0x207 without them):
/// MWAITX false, dma-buf and the virtual memory API false (not exported), XNACK as the
/// emulated amdkfd's default mode on the built-in gfx90a (off, so the agent's ISA is
/// `xnack-`), the AMD interface 1.15 of 7.2.4's hsa_ext_amd.h; 0x209 is not an attribute.
#[test]
fn rocr7_system_attributes() {
    use crate::abi::*;
    use crate::ffi::system::hsa_system_get_info;
    use core::ffi::c_void;

    let _serial = lock(&SERIAL);
    init().unwrap();
    let get_bool = |attr: u32| {
        let mut v = 0xaau8;
        // SAFETY: a bool attribute written into one byte.
        let s = unsafe { hsa_system_get_info(attr, (&raw mut v).cast::<c_void>()) };
        assert_eq!(s, Status::Success.raw(), "attribute {attr:#x}");
        v
    };
    let get_u16 = |attr: u32| {
        let mut v = 0xaaaau16;
        // SAFETY: a uint16_t attribute.
        let s = unsafe { hsa_system_get_info(attr, (&raw mut v).cast::<c_void>()) };
        assert_eq!(s, Status::Success.raw(), "attribute {attr:#x}");
        v
    };
    assert_eq!(get_bool(HSA_AMD_SYSTEM_INFO_MWAITX_ENABLED), 0);
    // The emulated amdkfd reports interface 1.17 and serves EXPORT_DMABUF (1.12): ROCR 7
    // says DMA-buf is supported from 1.12 on.
    assert_eq!(get_bool(HSA_AMD_SYSTEM_INFO_DMABUF_SUPPORTED), 1);
    // And 1.15 with a GPU: the virtual-memory API (ROCR 7's `CheckVirtualMemApiSupport`).
    assert_eq!(get_bool(HSA_AMD_SYSTEM_INFO_VIRTUAL_MEM_API_SUPPORTED), 1);
    assert_eq!(get_bool(HSA_AMD_SYSTEM_INFO_XNACK_ENABLED), 0);
    let st = state().unwrap();
    let isa = alloc::format!("{}", st.rt().first_gpu().unwrap().isa().unwrap());
    assert!(isa.ends_with("xnack-"), "{isa}");
    assert_eq!(get_u16(HSA_AMD_SYSTEM_INFO_EXT_VERSION_MAJOR), 1);
    assert_eq!(get_u16(HSA_AMD_SYSTEM_INFO_EXT_VERSION_MINOR), 15);
    let mut v = 0u64;
    // SAFETY: a writable u64.
    let s = unsafe { hsa_system_get_info(0x209, (&raw mut v).cast::<c_void>()) };
    assert_eq!(s, Status::InvalidArgument.raw());
    shut_down().unwrap();
}
