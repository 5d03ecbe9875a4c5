//! The main job's progress display when stderr is not a terminal (a pipe, as here): the run
//! reports its work-groups as they complete, takes longer than the second after which a
//! terminal would get a bar, and its stderr holds no escape code, carriage return or bar.
//! The run happens in a child process (this test binary again, running only [`child`]) whose
//! stderr is a pipe the parent reads.

use std::process::Command;
use std::time::Instant;

use hsa_tools::demo::{self, DemoConfig};
use hsa_tools::progress::{ProgressDisplay, SHOW_AFTER};

const CHILD_ENV: &str = "HSA_RT_TEST_CHILD";

/// In the child: the main job on the emulated device (interpreting), with the display the
/// `vector_copy` example uses, run until the bar's delay passed; prints the progress calls,
/// the time taken and the number of runs on stdout.
#[test]
fn child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let config = DemoConfig {
        elements: 300_000,
        ..DemoConfig::default()
    };
    let started = Instant::now();
    let mut calls = Vec::new();
    let mut increasing = true;
    let mut display = ProgressDisplay::stderr("work-groups");
    // As many runs as it takes to outlast the bar's delay, however fast the interpreter is,
    // all through the one display (a terminal would show the bar once the delay passed).
    let mut runs = 0;
    while runs == 0 || started.elapsed() <= SHOW_AFTER * 3 / 2 {
        let first = calls.len();
        let device = hsa_emu::open_default().unwrap();
        let outcome = demo::run_with_progress(device, &config, &mut |done, total| {
            calls.push((done, total));
            display.update(done, total);
        })
        .unwrap();
        assert_eq!(outcome.elements_verified, 300_000);
        increasing &= calls[first..].windows(2).all(|w| w[0].0 <= w[1].0);
        runs += 1;
    }
    let shown = display.is_shown();
    display.finish();
    println!(
        "progress: {} calls, last {:?}, increasing {increasing}, shown {shown}, ms {}, runs \
         {runs}",
        calls.len(),
        calls.last(),
        started.elapsed().as_millis(),
    );
}

#[test]
fn no_bar_when_stderr_is_not_a_terminal() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .env("HSA_RT_DEVICE", "emulated")
        .env("HSA_RT_EMULATION", "interpret")
        .env_remove("HSA_RT_SYSFS")
        .env_remove("HSA_XNACK")
        .env_remove("HSA_RT_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The harness prints `test child ... ` before the child's line.
    let line = stdout
        .lines()
        .find_map(|l| l.find("progress: ").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("{stdout}"));
    // 300000 elements in work-groups of 256: 1172 work-groups, counted as they complete.
    assert!(line.contains(", increasing true, shown false, "), "{line}");
    let ms: u128 = line
        .split(", ms ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        ms > SHOW_AFTER.as_millis(),
        "the run must outlast the bar's delay to test anything: {line}"
    );
    let calls: usize = line["progress: ".len()..]
        .split(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(calls > 1, "{line}");
    assert!(line.contains(", 1172))"), "the total: {line}");
    assert!(
        !stderr.contains('\x1b'),
        "escape code on stderr: {stderr:?}"
    );
    assert!(
        !stderr.contains('\r'),
        "carriage return on stderr: {stderr:?}"
    );
    assert!(
        !stderr.contains("work-groups"),
        "a bar on stderr: {stderr:?}"
    );
}
