//! Fault injection over whole runs of the emulated device: every failed ioctl surfaces as an
//! `Error` from the call that hit it (no panic, no hang), and nothing the run created outlives
//! it (`EmulatedKfd::live_handles` back to zero).

use std::sync::Arc;
use std::time::Instant;

use hsa_emu::device::{builtin_topology, EmulatedKfd, LiveHandles};
use hsa_emu::SelectedDevice;
use hsa_tools::demo::{self, DemoConfig, DemoKernel};
use rustix::io::Errno;

fn config() -> DemoConfig {
    DemoConfig {
        kernel: DemoKernel::VectorCopy,
        elements: 256,
        workgroup_size: 64,
        chain: 2,
        code_object: None,
        agent: 0,
    }
}

fn run_once(emulated: &Arc<EmulatedKfd>) -> Result<demo::DemoOutcome, hsa_core::Error> {
    let device = SelectedDevice::emulated(emulated.clone())?;
    demo::run(device, &config())
}

#[test]
fn every_failed_ioctl_of_a_vector_copy_run_is_an_error_and_leaks_nothing() {
    let clean = EmulatedKfd::new(builtin_topology()).unwrap();
    let outcome = run_once(&clean).unwrap();
    assert_eq!(outcome.elements_verified, 256);
    let total = clean.ioctl_count();
    assert!(
        total > 10,
        "a vector_copy run makes more than 10 ioctls, saw {total}"
    );
    // A clean run leaves nothing but the event page the runtime handed KFD: amdkfd keeps it
    // for the process's life (FREE of it is EPERM) and releases it when /dev/kfd is closed
    // (here: when the EmulatedKfd drops).
    let event_page_only = LiveHandles {
        memory: 1,
        ..LiveHandles::default()
    };
    assert_eq!(clean.live_handles(), event_page_only);
    drop(clean);

    let errnos = [Errno::NOMEM, Errno::INVAL, Errno::FAULT, Errno::BUSY];
    let mut failures = Vec::new();
    let mut errors = 0;
    for n in 0..total {
        let errno = errnos[(n % 4) as usize];
        let emulated = EmulatedKfd::new(builtin_topology()).unwrap();
        emulated.fail_nth_ioctl(n, errno);
        let started = Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_once(&emulated)));
        let took = started.elapsed();
        let live = emulated.live_handles();
        match result {
            Err(_) => failures.push(format!("ioctl #{n} failing with {errno:?}: panicked")),
            Ok(Ok(_)) => {
                // An ioctl whose failure the runtime tolerates (e.g. an optional query) may
                // succeed overall; it must still not leak.
            }
            Ok(Err(e)) => {
                // The error is the failed ioctl's, named with its errno (kfd::ioctl_error),
                // whatever context the layers above added.
                let msg = e.to_string();
                let code = format!("errno {}", errno.raw_os_error());
                if !msg.contains(&code) {
                    failures.push(format!(
                        "ioctl #{n} ({errno:?}): error does not name {code}: {msg}"
                    ));
                }
                errors += 1;
            }
        }
        if took.as_secs() >= 30 {
            failures.push(format!("ioctl #{n} ({errno:?}): run took {took:?}"));
        }
        // The event page (when the run got as far as creating it) is the only thing a run
        // may leave.
        if live != LiveHandles::default() && live != event_page_only {
            failures.push(format!("ioctl #{n} ({errno:?}): leaked {live:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Most ioctls of the run are needed: their failure must fail the run. (Cleanup ioctls —
    // UNMAP before FREE, DESTROY at teardown — may fail without failing it.)
    assert!(
        errors * 2 > total,
        "only {errors} of {total} injected failures failed the run"
    );
}
