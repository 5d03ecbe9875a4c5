//! hsa-baremetal in a real virtual machine: boots the `hsa-unikernel` image (built here for
//! `x86_64-unknown-none`) in QEMU (TCG) with an `ivshmem-doorbell` device whose other end is
//! the device model of [`device`] — the emulated command processor and gfx9 interpreter of
//! hsa-emu serving the guest's AQL queue in guest RAM, which QEMU shares with this process
//! (`memory-backend-file,share=on`: guest-physical address = file offset).
//!
//! The guest runs the main job (vector_copy, blocked wait on the completion interrupt, every
//! element verified), a barrier-AND chain, and per test the figures or the fault phases; the
//! test reads its serial console (printed here: the test's log), its exit code
//! (`isa-debug-exit`) and the device's counters. A watchdog kills QEMU after
//! [`VM_TIMEOUT`].
//!
//! Needs `qemu-system-x86_64` (`.ci/install-qemu`) and the `x86_64-unknown-none` target; each
//! test says `skipped: ...` and passes without them. Run:
//! `cargo test --release -p hsa-baremetal --test qemu -- --nocapture`.
#![allow(unsafe_code)]

#[allow(dead_code)] // shared with the unikernel: each side uses its part
#[path = "../../unikernel/src/protocol.rs"]
mod protocol;

#[path = "qemu/device.rs"]
mod device;
#[path = "qemu/mec.rs"]
mod mec;
#[path = "qemu/server.rs"]
mod server;
#[path = "qemu/vm.rs"]
mod vm;

use std::io::{BufRead, BufReader};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hsa_core::isa::Processor;
use hsa_gfx9::Gfx9Target;

use device::{Device, DeviceStats, Mapping};
use protocol::*;

/// Guest RAM, bytes.
const RAM_BYTES: u64 = 256 << 20;
/// The ivshmem shared memory (BAR2), bytes.
const SHM_BYTES: u64 = 1 << 20;
/// The longest a VM may run.
const VM_TIMEOUT: Duration = Duration::from_secs(240);
/// QEMU's exit status for `isa-debug-exit` code [`EXIT_PASS`].
const QEMU_PASS: i32 = ((EXIT_PASS << 1) | 1) as i32;

/// Elements of the main job: the README's 1,048,576 in a release build; a debug build's
/// interpreter (`cargo test --workspace`) runs 65,536.
const MAIN_JOB_ELEMENTS: u32 = if cfg!(debug_assertions) {
    1 << 16
} else {
    1 << 20
};

/// Rounds of each figure (raw and dispatch rounds alternate; the rate phase dispatches this
/// many).
const FIGURE_ROUNDS: u32 = 400;

/// When set, the figures test writes its figures as JSON to this path (what
/// `scripts/bench_report.py` reads for BENCHMARKS.md's B9).
const B9_JSON_ENV: &str = "HSA_RT_B9_JSON";

/// One VM at a time (the machine has two cores).
static VM_LOCK: Mutex<()> = Mutex::new(());

/// What the test asks the guest for (the control page).
#[derive(Clone, Copy, Debug)]
struct VmConfig {
    apic: u32,
    elements: u32,
    run: u32,
    rounds: u32,
}

/// What a VM run produced.
struct VmRun {
    lines: Vec<(Duration, String)>,
    status: Option<i32>,
    stats: Arc<DeviceStats>,
    device_log: Vec<String>,
}

impl VmRun {
    fn line(&self, prefix: &str) -> Option<&str> {
        self.lines
            .iter()
            .map(|(_, l)| l.as_str())
            .find(|l| l.starts_with(prefix))
    }

    fn when(&self, prefix: &str) -> Option<Duration> {
        self.lines
            .iter()
            .find(|(_, l)| l.starts_with(prefix))
            .map(|(t, _)| *t)
    }

    fn figure(&self, name: &str) -> Option<u64> {
        let l = self.line(&format!("hsa-unikernel: figure {name} "))?;
        l.split_whitespace().nth(3)?.parse().ok()
    }

    fn transcript(&self) -> String {
        self.lines
            .iter()
            .map(|(t, l)| format!("  [{:>8.3} s] {l}", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Why a VM cannot run here (then the test is skipped), or `None`.
fn missing_prerequisite() -> Option<String> {
    let qemu = Command::new("qemu-system-x86_64")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !qemu.is_ok_and(|s| s.success()) {
        return Some(
            "qemu-system-x86_64 is not installed (Debian: qemu-system-x86; .ci/install-qemu)"
                .into(),
        );
    }
    let sysroot = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let has_target = sysroot.is_some_and(|s| {
        Path::new(&s)
            .join("lib/rustlib/x86_64-unknown-none")
            .is_dir()
    });
    if !has_target {
        return Some(
            "the x86_64-unknown-none target is not installed (rustup target add x86_64-unknown-none)"
                .into(),
        );
    }
    None
}

/// Builds the unikernel (release, `x86_64-unknown-none`) into its own target directory,
/// `target/unikernel` (the outer cargo may still hold the workspace's), once per process.
fn unikernel_image() -> Result<PathBuf, String> {
    static IMAGE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let target_dir = workspace.join("target/unikernel");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let out = Command::new(cargo)
                .current_dir(&workspace)
                .args([
                    "build",
                    "--release",
                    "-p",
                    "hsa-unikernel",
                    "--target",
                    "x86_64-unknown-none",
                ])
                .arg("--target-dir")
                .arg(&target_dir)
                .env_remove("CARGO_TARGET_DIR")
                .env_remove("CARGO_BUILD_TARGET")
                .env("CARGO_TERM_COLOR", "never")
                .output()
                .map_err(|e| format!("running cargo to build hsa-unikernel: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "building hsa-unikernel failed ({}):\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(target_dir.join("x86_64-unknown-none/release/hsa-unikernel"))
        })
        .clone()
}

/// A scratch directory for one run, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Result<Scratch, String> {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let d = base.join(format!("hsa-rt-qemu-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).map_err(|e| format!("create {}: {e}", d.display()))?;
        Ok(Scratch(d))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Boots the unikernel with `cfg` and the device model, and waits for it to end (or the
/// watchdog to kill it).
fn run_vm(tag: &str, cfg: VmConfig) -> Result<VmRun, String> {
    let _one_at_a_time = VM_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let image = unikernel_image()?;
    let scratch = Scratch::new(tag)?;
    let ram_path = scratch.0.join("ram");
    let socket = scratch.0.join("ivshmem.sock");

    let ram_file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&ram_path)
        .map_err(|e| format!("create {}: {e}", ram_path.display()))?;
    ram_file
        .set_len(RAM_BYTES)
        .map_err(|e| format!("size guest RAM file: {e}"))?;
    let ram = Mapping::new(ram_file.as_fd(), RAM_BYTES as usize)?;
    let shm_fd = rustix::fs::memfd_create("hsa-rt-ivshmem", rustix::fs::MemfdFlags::CLOEXEC)
        .map_err(|e| format!("memfd_create: {e}"))?;
    rustix::fs::ftruncate(&shm_fd, SHM_BYTES).map_err(|e| format!("ftruncate: {e}"))?;
    let shm = Mapping::new(shm_fd.as_fd(), SHM_BYTES as usize)?;
    for (off, v) in [
        (CTL_APIC_MODE, cfg.apic),
        (CTL_ELEMENTS, cfg.elements),
        (CTL_RUN, cfg.run),
        (CTL_FIGURE_ROUNDS, cfg.rounds),
        (CTL_MAGIC, MAGIC),
    ] {
        shm.u32(off as u64)
            .ok_or("control page outside the shared memory")?
            .store(v, Ordering::Release);
    }

    let make = |n: u16| {
        (0..n)
            .map(|_| server::eventfd())
            .collect::<Result<Vec<_>, _>>()
    };
    let mine = make(VECTORS)?;
    let guest = make(VECTORS)?;
    let stop = server::eventfd()?;
    let listener = server::listen(&socket)?;
    let stats = Arc::new(DeviceStats::default());
    let log = Arc::new(Mutex::new(Vec::new()));
    let target = Gfx9Target::from_processor(
        Processor::from_name("gfx90a").map_err(|e| format!("processor gfx90a: {e}"))?,
    )
    .ok_or("the interpreter does not run gfx90a")?;

    let mut qemu = Command::new("qemu-system-x86_64")
        .args(["-M", "q35", "-accel", "tcg", "-cpu", "max", "-smp", "1"])
        .args(["-m", &format!("{}M", RAM_BYTES >> 20)])
        .arg("-object")
        .arg(format!(
            "memory-backend-file,id=ram,size={}M,mem-path={},share=on",
            RAM_BYTES >> 20,
            ram_path.display()
        ))
        .args(["-machine", "memory-backend=ram"])
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ])
        .args(["-serial", "stdio", "-monitor", "none"])
        .args(["-bios", "/usr/share/qemu/qboot.rom"])
        .arg("-kernel")
        .arg(&image)
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"])
        .arg("-chardev")
        .arg(format!("socket,path={},id=ivs", socket.display()))
        .args([
            "-device",
            &format!("ivshmem-doorbell,chardev=ivs,vectors={VECTORS}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn qemu-system-x86_64: {e}"))?;
    let started = Instant::now();

    let offer = server::Offer {
        guest_peer: GUEST_PEER,
        shared_memory: shm_fd.as_fd(),
        peers: vec![
            (DEVICE_PEER, mine.iter().map(|f| f.as_fd()).collect()),
            (GUEST_PEER, guest.iter().map(|f| f.as_fd()).collect()),
        ],
    };
    let connection = match server::serve(&listener, &offer, Duration::from_secs(20)) {
        Ok(c) => c,
        Err(e) => {
            let _ = qemu.kill();
            let out = qemu.wait_with_output().map_err(|e| e.to_string())?;
            return Err(format!(
                "{e}; qemu said: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    };

    let dev = Device {
        ram,
        shm,
        mine,
        guest,
        stop,
        target,
        stats: stats.clone(),
        log: log.clone(),
    };
    let stdout = qemu.stdout.take().ok_or("no qemu stdout")?;
    let stderr = qemu.stderr.take().ok_or("no qemu stderr")?;
    let (status, lines, err_text) = std::thread::scope(|s| {
        s.spawn(|| dev.run());
        let reader = s.spawn(move || {
            let mut lines = Vec::new();
            for l in BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                let l = l.trim_end_matches('\r').to_string();
                println!("[vm {:>8.3} s] {l}", started.elapsed().as_secs_f64());
                lines.push((started.elapsed(), l));
            }
            lines
        });
        let err_reader = s.spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        // The watchdog.
        let status = loop {
            match qemu.try_wait() {
                Ok(Some(st)) => break st.code(),
                Ok(None) if started.elapsed() > VM_TIMEOUT => {
                    let _ = qemu.kill();
                    let _ = qemu.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(_) => break None,
            }
        };
        let _ = rustix::io::write(&dev.stop, &1u64.to_ne_bytes());
        (
            status,
            reader.join().unwrap_or_default(),
            err_reader.join().unwrap_or_default(),
        )
    });
    drop(connection);
    if !err_text.trim().is_empty() {
        println!("qemu stderr: {}", err_text.trim());
    }
    let device_log = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(VmRun {
        lines,
        status,
        stats,
        device_log,
    })
}

/// Runs the VM and checks what every run must show: it passed, the main job and the chain
/// verified, the device saw no error.
fn run_and_check(tag: &str, cfg: VmConfig) -> Option<VmRun> {
    if let Some(why) = missing_prerequisite() {
        println!("skipped: {why}");
        return None;
    }
    let run = match run_vm(tag, cfg) {
        Ok(r) => r,
        Err(e) => panic!("{tag}: {e}"),
    };
    let ctx = || {
        format!(
            "{tag}: serial console:\n{}\ndevice log: {:?}",
            run.transcript(),
            run.device_log
        )
    };
    assert_eq!(
        run.status,
        Some(QEMU_PASS),
        "exit status (None: killed by the watchdog); {}",
        ctx()
    );
    assert!(run.line("hsa-unikernel: PASSED").is_some(), "{}", ctx());
    let verified = format!(
        "hsa-unikernel: vector_copy verified {} elements",
        cfg.elements
    );
    let Some(main_job) = run.line(&verified) else {
        panic!("no '{verified}'; {}", ctx());
    };
    // The blocked wait slept (halted) before the dispatch could run (it waited behind a gate
    // the halt opened), and the completion interrupt came: "(blocked wait: H halts, I IH
    // interrupts)".
    let counts: Vec<u64> = main_job
        .split("(blocked wait: ")
        .nth(1)
        .unwrap_or_default()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(
        counts.len() == 2 && counts[0] >= 1 && counts[1] >= 1,
        "the main job's wait did not halt until an interrupt: '{main_job}'"
    );
    assert!(
        run.line("hsa-unikernel: barrier-AND chain of 4 dispatches verified")
            .is_some(),
        "{}",
        ctx()
    );
    assert!(run.device_log.is_empty(), "{}", ctx());
    // Queues came and went through the KIQ only: each MAP_QUEUES, UNMAP_QUEUES and
    // INVALIDATE_TLBS batch was fenced, and every queue the guest created was mapped from its
    // MQD.
    let s = &run.stats;
    let (maps, unmaps, flushes, fences) = (
        s.kiq_maps.load(Ordering::Relaxed),
        s.kiq_unmaps.load(Ordering::Relaxed),
        s.kiq_invalidations.load(Ordering::Relaxed),
        s.kiq_fences.load(Ordering::Relaxed),
    );
    assert!(maps >= 1, "no queue was mapped through the KIQ; {}", ctx());
    assert_eq!(fences, maps + unmaps + flushes, "KIQ fences; {}", ctx());
    if cfg.run & RUN_FAULTS == 0 {
        let refused = s.kiq_refused.lock().unwrap_or_else(|e| e.into_inner());
        assert!(refused.is_empty(), "KIQ packets refused: {refused:?}");
    }
    Some(run)
}

#[test]
fn main_job_and_figures_in_a_vm_with_xapic() {
    let cfg = VmConfig {
        apic: APIC_XAPIC,
        elements: MAIN_JOB_ELEMENTS,
        run: RUN_FIGURES,
        rounds: FIGURE_ROUNDS,
    };
    let Some(run) = run_and_check("xapic", cfg) else {
        return;
    };
    let mode = run.line("hsa-unikernel: ivshmem at").unwrap_or_default();
    assert!(mode.contains("XApic"), "{mode}");
    assert!(
        mode.contains("BAR0 0xc") && mode.contains("(assigned)"),
        "qboot leaves BARs to the guest: {mode}"
    );
    let s = &run.stats;
    // 1 + 4 dispatches (and 1 + 3 barrier packets), then the figures' 2 * FIGURE_ROUNDS
    // dispatches (the latency rounds, the rate phase).
    let rounds = u64::from(FIGURE_ROUNDS);
    assert_eq!(s.kernels.load(Ordering::Relaxed), 5 + 2 * rounds);
    assert_eq!(s.echoes.load(Ordering::Relaxed), rounds);
    for f in [
        "raw_round_trip_median",
        "dispatch_latency_median",
        "ratio_median_permille",
        "dispatches_per_second",
    ] {
        assert!(
            run.figure(f).is_some_and(|v| v > 0),
            "figure {f} missing: {}",
            run.transcript()
        );
    }
    let boot = run.when("hsa-unikernel: main").unwrap_or_default();
    let f = |name: &str| run.figure(name).unwrap_or(0);
    // Signed (`figure` reads unsigned values).
    let extra: i64 = run
        .line("hsa-unikernel: figure extra_median_ns ")
        .and_then(|l| l.split_whitespace().nth(3)?.parse().ok())
        .unwrap_or_else(|| panic!("no extra_median_ns figure: {}", run.transcript()));
    let s = &run.stats;
    let kernel_ns =
        s.kernel_ns.load(Ordering::Relaxed) / s.small_kernels.load(Ordering::Relaxed).max(1);
    // The device's side of the rounds: the first `rounds` one-work-item dispatches are the
    // latency rounds (the rate phase's come after).
    let sorted = |v: &Mutex<Vec<u64>>, n: usize| {
        let mut v = v.lock().unwrap_or_else(|e| e.into_inner()).clone();
        v.truncate(n);
        v.sort_unstable();
        v
    };
    let rounds = cfg.rounds as usize;
    let service = sorted(&s.service_ns, rounds);
    let echo = sorted(&s.echo_ns, rounds);
    let q = |v: &[u64], q: f64| {
        v.get(((v.len().max(1) - 1) as f64 * q).round() as usize)
            .copied()
            .unwrap_or(0)
    };
    if let Ok(path) = std::env::var(B9_JSON_ENV) {
        // For scripts/bench_report.py (BENCHMARKS.md's B9).
        let mut json = format!(
            "{{\"boot_to_main_ms\": {:.1}, \"rounds\": {}, \"device_kernel_ns\": {kernel_ns}, \
             \"device_service_median_ns\": {}, \"device_echo_median_ns\": {}",
            boot.as_secs_f64() * 1e3,
            cfg.rounds,
            q(&service, 0.5),
            q(&echo, 0.5),
        );
        for name in [
            "raw_round_trip_median",
            "raw_round_trip_min",
            "raw_round_trip_p10",
            "raw_round_trip_p90",
            "dispatch_latency_median",
            "dispatch_latency_min",
            "dispatch_latency_p10",
            "dispatch_latency_p90",
        ] {
            json += &format!(", \"{name}_ns\": {}", f(name));
        }
        json += &format!(
            ", \"extra_median_ns\": {}, \"ratio_median_permille\": {}, \
             \"dispatches_per_second\": {}, \"halts\": {}}}\n",
            extra,
            f("ratio_median_permille"),
            f("dispatches_per_second"),
            f("halts")
        );
        std::fs::write(&path, json).unwrap_or_else(|e| panic!("write {path}: {e}"));
    }
    let us = |ns: u64| ns as f64 / 1e3;
    println!(
        "B9: boot to main {:.0} ms; raw ivshmem doorbell->MSI-X round trip {:.1} us (p10 {:.1}, \
         p90 {:.1}); empty dispatch doorbell->completion interrupt {:.1} us (p10 {:.1}, p90 {:.1}); \
         median of per-round ratios {:.2}x, of differences {:.1} us; {} dispatches/s; {} halts in \
         the rounds",
        boot.as_secs_f64() * 1e3,
        us(f("raw_round_trip_median")),
        us(f("raw_round_trip_p10")),
        us(f("raw_round_trip_p90")),
        us(f("dispatch_latency_median")),
        us(f("dispatch_latency_p10")),
        us(f("dispatch_latency_p90")),
        f("ratio_median_permille") as f64 / 1e3,
        extra as f64 / 1e3,
        f("dispatches_per_second"),
        f("halts"),
    );
    println!(
        "device: {} doorbells, {} packets; per one-work-item dispatch {:.1} us in the interpreter; \
         doorbell wake-up to completion interrupt raised: median {:.1} us (p10 {:.1}, p90 {:.1}); \
         echo wake-up to interrupt raised: median {:.1} us",
        s.doorbells.load(Ordering::Relaxed),
        s.packets.load(Ordering::Relaxed),
        us(kernel_ns),
        us(q(&service, 0.5)),
        us(q(&service, 0.1)),
        us(q(&service, 0.9)),
        us(q(&echo, 0.5)),
    );
}

#[test]
fn faults_in_a_vm_with_x2apic() {
    let cfg = VmConfig {
        apic: APIC_X2APIC,
        elements: 1 << 16,
        run: RUN_FAULTS,
        rounds: 0,
    };
    let Some(run) = run_and_check("x2apic-faults", cfg) else {
        return;
    };
    let mode = run.line("hsa-unikernel: ivshmem at").unwrap_or_default();
    assert!(mode.contains("X2Apic"), "{mode}");
    for phase in [
        "hsa-unikernel: fault drop-interrupt ok",
        "hsa-unikernel: fault merge-interrupts ok",
        "hsa-unikernel: fault malformed-entry ok",
        "hsa-unikernel: fault foreign-entry ok: 1 of 2 entries skipped as VMID 0's, 1 signaled",
        "hsa-unikernel: fault queue-error ok: wait ended with MemoryFault",
        "hsa-unikernel: fault queue-error recovered",
        "hsa-unikernel: fault page-fault stale ok",
        "hsa-unikernel: fault page-fault ok: handler got ",
        "hsa-unikernel: fault page-fault recovered",
    ] {
        assert!(
            run.line(phase).is_some(),
            "no '{phase}':\n{}",
            run.transcript()
        );
    }
    // The queue's error callback ran once, in the guest's IH interrupt handler, with the
    // status and the value the device's packet processor stored in the inactive signal.
    let stored = hsa_core::queue::inactive::encode(hsa_core::Status::MemoryFault, false);
    let want = format!(
        "hsa-unikernel: fault queue-error callback: 1 call, queue 0, data 0x48534121, \
         MemoryFault: queue_inactive_signal {stored:#x} (inactive signal {stored:#x})"
    );
    assert!(
        run.lines.iter().any(|(_, l)| *l == want),
        "no '{want}':\n{}",
        run.transcript()
    );
    let s = &run.stats;
    assert_eq!(s.dropped.load(Ordering::Relaxed), 1);
    assert_eq!(s.merged.load(Ordering::Relaxed), 3);
    assert_eq!(s.malformed.load(Ordering::Relaxed), 1);
    // The injected queue error and the page fault's stop.
    assert_eq!(s.queue_errors.load(Ordering::Relaxed), 2);
    // Four queues were mapped (the main job's, which the error phase stopped, its successor,
    // and the page-fault phase's two) and all unmapped before the bad MQDs, none of which was
    // mapped.
    assert_eq!(s.kiq_maps.load(Ordering::Relaxed), 4);
    assert_eq!(s.kiq_unmaps.load(Ordering::Relaxed), 4);
    // One page fault (the store after the flush), two TLB flushes (after the unmap and after
    // the remap).
    assert_eq!(s.vm_faults.load(Ordering::Relaxed), 1);
    assert_eq!(s.kiq_invalidations.load(Ordering::Relaxed), 2);
    // Each bad MAP_QUEUES was refused naming the field (V9Mqd::load_compute's and the
    // device's checks), and the guest saw the device's message.
    let refused = s.kiq_refused.lock().unwrap_or_else(|e| e.into_inner());
    let want = [
        (
            "header",
            "MQD header 0xc0310801 is not the v9 MQD's 0xc0310800",
        ),
        (
            "slot-based-wptr",
            "SLOT_BASED_WPTR is 0, not the AQL queue's 2",
        ),
        (
            "doorbell-mismatch",
            "MAP_QUEUES doorbell_offset 0x4 differs from the MQD's DOORBELL_OFFSET 0x2",
        ),
        ("reserved-doorbell", "DOORBELL_OFFSET 0x28 is outside"),
        (
            "eop-null",
            "MQD cp_hqd_eop_base_addr_hi:lo is null with EOP_SIZE 0x9",
        ),
        (
            "vmid-without-tables",
            "MQD cp_hqd_vmid 5: the firmware gave that VMID no page tables",
        ),
    ];
    assert_eq!(refused.len(), want.len(), "{refused:?}");
    for ((name, needle), got) in want.iter().zip(refused.iter()) {
        assert!(got.contains(needle), "{name}: {got} lacks {needle}");
        let line = format!("hsa-unikernel: fault bad-mqd {name} refused: ");
        let guest = run.line(&line).unwrap_or_default();
        assert!(
            guest.contains(needle) && guest.contains("KIQ fence"),
            "{name}: the guest saw '{guest}'"
        );
    }
}
