#!/usr/bin/env python3
"""Regenerates BENCHMARKS.md from criterion's output (issue 10).

Usage (from the workspace root):
    python3 scripts/bench_report.py --run           # run every bench, then write BENCHMARKS.md
    python3 scripts/bench_report.py                 # re-read the output of the last --run
    python3 scripts/bench_report.py --run --quick   # a short run to check that all of this works
                                                    # (writes target/BENCHMARKS-quick.md)
    python3 scripts/bench_report.py --b8 [--quick]  # B8 alone, its rows printed (nothing written)

Reads <target>/criterion/<group>/<bench>/new/estimates.json (median point estimate and its
95% interval, ns), where <target> is $CARGO_TARGET_DIR or ./target. With --run it first runs
the two criterion benches (niced to -20 when root, so that other load on a shared machine
takes less from the spinning threads) and the main job for the gfx9 interpreter's figures,
B8 (hsa-rt against Debian's ROCR under kfd-emu: run_b8), and records in
<target>/criterion/hsa_run_info.json when the run started and ended, the load average before
and after, the interpreter's figures and B8's. Every row (B1..B6 and each baseline,
and the interpreter's) must come from that one run: a missing estimate, or one written before
the run started or after it ended (a bench re-run alone since), is an error naming it, and
nothing is written. It also builds hsa-core (here and at CORE_BEFORE_REV, the last commit
with the gfx9 code in it) and hsa-baremetal for x86_64-unknown-none at opt-level "s" to
measure their .text, and runs scripts/static_memory to get the static memory
of a no-alloc runtime with one queue and 64 signals. Nothing in BENCHMARKS.md is typed by hand.
"""

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CORE_CMD = "cargo bench -p hsa-core --features fake --bench hot_paths"
EMU_CMD = "cargo bench -p hsa-emu --bench emulated"
# B9: hsa-baremetal in a QEMU virtual machine; the test writes its figures to $HSA_RT_B9_JSON.
B9_CMD = ["cargo", "test", "--release", "-p", "hsa-baremetal", "--test", "qemu",
          "main_job_and_figures", "--", "--nocapture"]

# B8: the same programs on hsa-rt's libhsa-runtime64 and on Debian's (ROCR 5.2.3, with its
# libhsakmt) under kfd-emu, both on kfd-emu's built-in emulated MI210 (gfx90a), in this run.
# (id, what, program, iterations, quick iterations)
B8_CMD = "python3 scripts/bench_report.py --b8"
B8_PROGRAMS = [
    ("B8", "hsa.h dispatch round trip of a one-work-item kernel (`capi/c/dispatch_round_trip.c`: "
     "packet, doorbell, CP runs it in the interpreter, completion signal, active wait)",
     "dispatch_round_trip", 2000, 200),
    ("B8 (HIP)", "HIP empty-kernel launch + `hipStreamSynchronize` (`capi/hip/hip_check.hip`, "
     "section `launch_loop`)", "launch_loop", 1000, 100),
]
B8_GOAL = 0.5
# B8 (submit): the host-side calls of one dispatch, at most ROCR's (issue 35).
B8_SUBMIT_GOAL = 1.0

# id, what, criterion group, ours, [(baseline, goal kind, goal ratio)], unit, command
BENCHES = [
    ("B1", "submit one packet, single-producer AQL queue (reserve, write, publish, doorbell; consumer on the other core)",
     "B1_submit_spsc", "hsa_aql_queue", [("crossbeam_array_queue", "<=", 1.2)], "per packet", CORE_CMD + " -- B1"),
    ("B2", "submit one packet, 2 producers on a multi-producer AQL queue",
     "B2_submit_2_producers", "hsa_aql_queue", [("crossbeam_array_queue", "<=", 1.5)], "per packet", CORE_CMD + " -- B2"),
    ("B3", "signal ping-pong between two threads, active wait",
     "B3_signal_ping_pong_active", "hsa_signal", [("atomic_i64_spin", "<=", 1.3)], "per round trip", CORE_CMD + " -- B3"),
    ("B4", "empty-kernel dispatch round trip on the emulated device (submit, CP runs it, completion signal, wait returns)",
     "B4_dispatch_round_trip", "hsa_emulated_dispatch", [("crossbeam_channel", "<=", 2.0)], "per round trip", EMU_CMD + " -- B4"),
    ("B5", "pool free + allocate, 10,000 live blocks of 64..=4160 bytes, 64-byte aligned (seeded ChaCha8)",
     "B5_free_allocate_10k_live", "hsa_memory_pool",
     [("system_allocator", "<=", 1.0), ("linked_list_allocator", "<=", 0.01)], "per free + allocate", CORE_CMD + " -- B5"),
    ("B6", "blocked wait wake-up latency through the futex path (store to wait return; waiter blocked)",
     "B6_blocked_wake_latency", "hsa_interrupt_signal", [("raw_futex", "<=", 1.3)], "per wake-up", EMU_CMD + " -- B6"),
    ("SDMA", "64 KiB copy on the emulated SDMA engine (HDP flush, COPY_LINEAR and the completion's ATOMIC "
     "decrement written by `hsa_core::sdma`, submitted, the value awaited) against a host memcpy of the same bytes",
     "sdma_copy_64k", "hsa_emulated_sdma", [("host_memcpy", "<=", None)], "per copy", EMU_CMD + " -- sdma_copy_64k"),
]

# What bounds a bench when its goal is missed (shown only then).
BOUNDS = {
    "B1": "(not profiled apart; what differs from the baseline) the AQL publish protocol: per packet the "
          "consumer writes the INVALID header back into the slot and then the read index, so the slot line "
          "crosses the cores twice (ArrayQueue writes one stamp), and the doorbell takes a spin lock and "
          "stores. On this machine B1's ratio varied between about 1x and 2x from run to run under the "
          "same load, so one run does not settle it.",
    "B2": "(not profiled apart; what differs from the baseline) the cache lines the two producers share per "
          "packet: the write index (fetch_add, then the back-pressure load of the read index), the doorbell "
          "word (one store per packet, as ROCR's gfx9+ doorbell; no fetch_max or fences since 2026-12-07) "
          "and the slot, against ArrayQueue's tail (one compare-and-swap) and the slot: two contended lines "
          "per packet against one.",
    "B3": "a Signal wait is an atomic load loop like the baseline; what is left is the call overhead and the "
          "Release/Acquire pairs through the 64-byte amd_signal_t slots.",
    "B4": "the emulated CP thread: per dispatch it takes the allocation table's read lock, decodes and "
          "validates the packet, resolves the kernel by object address under a lock and runs the host kernel "
          "for one work-group; a channel round trip does none of that. The CP learns of the packet only by "
          "watching the doorbell word, the write index and the next header (no doorbell notification since "
          "issue 18): within 50 us of its last packet it spins, so a back-to-back round trip costs no wake-up; "
          "after that it sleeps 50 us doubling to 1 ms between looks.",
    "B8": "the emulated device's part of each round trip, which both runtimes share and which is nearly all "
          "of it. The B8 (submit) row measures each runtime's host-side part alone (signal reset, write-index "
          "add, read-index load, packet, doorbell store): tens to a couple of hundred ns on either runtime, "
          "against a round trip of about 1.7 to 2.6 us; the rest is the wait, the same on both: the emulated "
          "CP noticing the doorbell, interpreting the kernel and storing the completion signal, and the "
          "waiter seeing it. With ROCR's host part R, ours H and the device's D, the ratio is (H + D) / "
          "(R + D); even H = 0 gives D / (R + D), above 0.9 here, so 0.5x cannot be reached on a device "
          "both runtimes share, however fast either host side gets. (The host part did shrink: the hot "
          "calls now take no lock and no reference count, ARCHITECTURE's 'read-side sections'.)",
    "B8 (HIP)": "as B8: the emulated device's cost per launch, shared by both runtimes, plus HIP's own "
                "(libamdhip64 5.2.3 is the same library on both sides), so the two per-launch times "
                "stay within a few per cent of each other (about 6 us each before issue 19's fix).",
    "B5": "the pool's spin lock and its out-of-band records (a per-range directory finds a block by address "
          "since 2026-12-07; a B-tree over every allocation before) against glibc's per-size bins.",
    "B8 (submit)": "the calls' own cost (ROCR converts a handle to its object by pointer arithmetic; hsa-rt "
                   "checks each handle in a lock-free table inside a read-side section, so a stale or foreign "
                   "handle is refused instead of followed) and the cache lines the first call after a wait "
                   "touches again.",
    "B6": "the emulated event path: the waiter's AMDKFD_IOC_WAIT_EVENTS copies its event array in and out "
          "through /proc/self/mem (syscalls) and re-takes the event-table mutex after the condvar wake; the "
          "store side takes the platform state lock and the event mutex before the futex wake. Those live in "
          "emulator/src/device/mod.rs (the emulated kernel), not in the core's wait.",
}


def target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")


class ReportError(Exception):
    """What makes the report impossible to write from one run; the message names it."""


def estimate(group, bench, window):
    """criterion's median estimate of `group/bench` (point, lower, upper; ns), which must have
    been written during the recorded run (`window` = (started, finished), seconds since the
    epoch)."""
    path = target_dir() / "criterion" / group / bench / "new" / "estimates.json"
    try:
        mtime = path.stat().st_mtime
        with open(path) as f:
            e = json.load(f)["median"]
        ci = e["confidence_interval"]
        point, lower, upper = e["point_estimate"], ci["lower_bound"], ci["upper_bound"]
    except OSError as err:
        raise ReportError(f"{group}/{bench}: no criterion estimate ({path}: {err.strerror})")
    except (KeyError, TypeError, ValueError) as err:
        raise ReportError(f"{group}/{bench}: {path} has no median estimate ({err!r})")
    started, finished = window
    # One second of slack: file times and time.time() may be rounded differently.
    if not started - 1 <= mtime <= finished + 1:
        when = "before" if mtime < started else "after"
        raise ReportError(f"{group}/{bench}: {path} was written {when} the recorded run "
                          f"({time.ctime(mtime)}; the run: {time.ctime(started)} to "
                          f"{time.ctime(finished)}); run everything again with --run")
    return point, lower, upper


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns:.3g} ns"


def machine():
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return os.cpu_count(), model


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return ["?", "?", "?"]


def run(cmd, env=None, cwd=ROOT):
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=cwd, check=True, env=env)


# criterion's command-line options for --quick: shorter warm-up and measurement (groups that
# set their own, B6, keep theirs).
QUICK_ARGS = ["--warm-up-time", "0.2", "--measurement-time", "0.5"]


def run_info_path():
    return target_dir() / "criterion" / "hsa_run_info.json"


def run_benches(quick):
    """Runs both benches and the interpreter's job; records the run in hsa_run_info.json."""
    nice = ["nice", "-n", "-20"] if os.geteuid() == 0 else []
    extra = QUICK_ARGS if quick else []
    # A failed run must not leave the record of an earlier one next to its partial output.
    run_info_path().unlink(missing_ok=True)
    before = loadavg()
    started = time.time()
    for cmd in (CORE_CMD, EMU_CMD):
        run(nice + cmd.split() + ["--"] + extra)
    interp = interpreter_speed(runs=1 if quick else 9)
    run_b7()
    b8 = run_b8(quick)
    if shutil.which("qemu-system-x86_64"):
        run_b9()
    else:
        b9_path().unlink(missing_ok=True)
    finished = time.time()
    after = loadavg()
    info = {"loadavg_before": before, "loadavg_after": after, "niced": bool(nice),
            "started": started, "finished": finished, "quick": quick,
            "criterion_args": extra, "interpreter": interp, "b8": b8}
    run_info_path().parent.mkdir(parents=True, exist_ok=True)
    run_info_path().write_text(json.dumps(info))


def run_info():
    """The record of the last --run."""
    path = run_info_path()
    try:
        info = json.loads(path.read_text())
        info["started"], info["finished"], info["interpreter"]
    except OSError:
        raise ReportError(f"no record of a run ({path}): run the benches with --run")
    except (KeyError, TypeError, ValueError) as err:
        raise ReportError(f"{path} is not a record of a complete --run ({err!r}): run again with --run")
    return info


def text_bytes(rlib, size_tool):
    """Sum of the .text* sections of an rlib's object files."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["ar", "x", str(rlib)], cwd=d, check=True)
        objs = [str(p) for p in Path(d).iterdir() if p.suffix == ".o"]
        if not objs:
            return 0
        out = subprocess.run([size_tool, "-A"] + objs, capture_output=True, text=True, check=True).stdout
    total = 0
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".text") and parts[1].isdigit():
            total += int(parts[1])
    return total


SIZE_ENV = ("CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 "
            "CARGO_PROFILE_RELEASE_DEBUG=0")
SIZE_CMD = SIZE_ENV + " cargo build --release -p {crate} --target x86_64-unknown-none {features}"

# The last commit whose hsa-core held the gfx9 decoder, disassembler and interpreter (issue 18
# moved them to hsa-emu): hsa-core's .text is measured in a `git archive` of it as well, with
# the same command, so the report shows the size before and after.
CORE_BEFORE_REV = "cb6fc0728309205cade13123f09c090ade21ae6e"

# Feature sets measured: (label, cargo flags for hsa-core, cargo flags for hsa-baremetal).
SIZE_FEATURES = (
    ("no `alloc`", "--no-default-features", ""),
    ("`alloc` (hsa-baremetal: + linked_list_allocator heap)", "--features alloc", "--features alloc"),
)


def crate_text(tree, tdir, crate, features, size_tool):
    """.text bytes of `crate`'s rlib built in `tree` (a checkout) for x86_64-unknown-none with
    SIZE_ENV and `features`, target directory `tdir`."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(tdir), CARGO_PROFILE_RELEASE_OPT_LEVEL="s",
               CARGO_PROFILE_RELEASE_CODEGEN_UNITS="1", CARGO_PROFILE_RELEASE_DEBUG="0")
    lib = crate.replace("-", "_")
    # Builds with other features leave rlibs of the same name: remove them first.
    deps = tdir / "x86_64-unknown-none" / "release" / "deps"
    for old in glob.glob(str(deps / "libhsa_*.rlib")):
        os.remove(old)
    cmd = ["cargo", "build", "-q", "--release", "-p", crate, "--target", "x86_64-unknown-none"]
    run(cmd + features.split(), env=env, cwd=tree)
    rlibs = sorted(deps.glob(f"lib{lib}-*.rlib"), key=lambda p: p.stat().st_mtime)
    if not rlibs:
        raise ReportError(f"code size: `{' '.join(cmd + features.split())}` in {tree} left no lib{lib} rlib")
    return text_bytes(rlibs[-1], size_tool)


def code_sizes():
    """Per feature set: hsa-core's .text at CORE_BEFORE_REV and now, hsa-baremetal's now."""
    size_tool = shutil.which("llvm-size-19") or shutil.which("llvm-size") or shutil.which("size")
    tmp = Path(tempfile.gettempdir())
    rows = []
    with tempfile.TemporaryDirectory() as before_tree:
        archive = subprocess.run(["git", "archive", CORE_BEFORE_REV], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", before_tree], input=archive, check=True)
        for label, core_features, baremetal_features in SIZE_FEATURES:
            before = crate_text(Path(before_tree), tmp / "tgt-bench-size-before", "hsa-core",
                                core_features, size_tool)
            now = crate_text(ROOT, tmp / "tgt-bench-size", "hsa-core", core_features, size_tool)
            baremetal = crate_text(ROOT, tmp / "tgt-bench-size", "hsa-baremetal", baremetal_features,
                                   size_tool)
            cmds = (SIZE_CMD.format(crate="hsa-core", features=core_features).strip(),
                    SIZE_CMD.format(crate="hsa-baremetal", features=baremetal_features).strip())
            rows.append((label, before, now, baremetal, cmds))
    return rows, os.path.basename(size_tool or "size")


def code_size_lines(rows, tool):
    """The "Code size" section of BENCHMARKS.md from what code_sizes() measured."""
    lines = ["", "## Code size (`x86_64-unknown-none`, `opt-level = \"s\"`)", "",
             f"Sum of the `.text*` sections ({tool} -A) of the object files in each crate's rlib (`ar x`): "
             "all non-generic code of the crate plus the generic code it instantiates itself; generic code "
             "that only a user instantiates (e.g. `AqlQueue<P>` for a platform `P`) lands in the user's "
             "object and is not counted. codegen-units = 1, no debug info. \"Before\" is hsa-core at "
             f"`{CORE_BEFORE_REV[:7]}`, the last commit that held the gfx9 decoder, disassembler and "
             "interpreter (issue 18 moved them to hsa-emu), built from a `git archive` of it with the same "
             "command.", "",
             f"| features | hsa-core .text before (`{CORE_BEFORE_REV[:7]}`) | hsa-core .text now | change "
             "| hsa-baremetal .text now | commands |", "|---|---|---|---|---|---|"]
    for label, before, now, baremetal, cmds in rows:
        change = f"{now - before:+,} B ({(now - before) / before:+.0%})" if before else "-"
        lines.append(f"| {label} | {before:,} B | {now:,} B | {change} | {baremetal:,} B | "
                    + "; ".join(f"`{c}`" for c in cmds) + " |")
    return lines


def static_memory():
    env = dict(os.environ, CARGO_TARGET_DIR=str(Path(tempfile.gettempdir()) / "tgt-bench-static"))
    out = subprocess.run(["cargo", "run", "-q", "--release"], cwd=ROOT / "scripts" / "static_memory",
                         capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out)


def interpreter_speed(runs):
    """vector_add (1,048,576 elements) through the main job, `runs` runs each: the gfx9
    interpreter's lane-instructions per second as the example prints them, and the wall time
    of the whole run next to the same run with the host implementation
    (HSA_RT_EMULATION=host)."""
    import re
    import statistics
    run(["cargo", "build", "-q", "--release", "--example", "vector_copy"])
    exe = Path(target_dir()) / "release" / "examples" / "vector_copy"
    speeds, walls = [], {"interpret": [], "host": []}
    # The two modes alternate run by run, so that a change in the machine's load during the
    # measurement falls on both sides of the ratio rather than on one.
    for _ in range(runs):
        for mode in ("interpret", "host"):
            env = dict(os.environ, HSA_RT_DEVICE="emulated", HSA_RT_EMULATION=mode)
            t0 = time.monotonic()
            out = subprocess.run([str(exe), "--kernel", "vector-add"], capture_output=True, text=True,
                                 check=True, env=env).stdout
            walls[mode].append(time.monotonic() - t0)
            if mode != "interpret":
                continue
            m = re.search(r"([0-9.]+) M lane-instructions/s", out)
            if not m:
                raise ReportError("vector_copy --kernel vector-add (HSA_RT_EMULATION=interpret) printed no "
                                  f"'M lane-instructions/s' figure; its output: {out.strip()!r}")
            speeds.append(float(m.group(1)))
    result = {mode: {"wall_s": statistics.median(w), "mlips": None} for mode, w in walls.items()}
    result["interpret"]["mlips"] = statistics.median(speeds)
    return result


def run_b8(quick):
    """B8: builds hsa-rt's library and kfd-emu (release), the hsa.h program (gcc, against
    Debian's hsa.h) and hip_check (hipcc), then runs each program alternately on hsa-rt's
    library and on Debian's ROCR under kfd-emu (both with their defaults: SDMA on, though
    neither program copies), 5 rounds (1 with --quick), niced to -20 as root; per program and library the median over rounds
    of the program's own median batch, ns per round trip."""
    import re
    import statistics
    hipcc = shutil.which("hipcc")
    for need, what in ((hipcc, "hipcc (apt install hipcc libamdhip64-dev rocm-device-libs)"),
                       (shutil.which("gcc"), "gcc"),
                       (Path("/usr/include/hsa/hsa.h").exists() or None, "/usr/include/hsa/hsa.h "
                        "(apt install libhsa-runtime-dev)")):
        if not need:
            raise ReportError(f"B8 needs {what}")
    run(["cargo", "build", "-q", "--release", "-p", "hsa-capi", "--lib"])
    run(["cargo", "build", "-q", "--release", "-p", "kfd-emu"])  # the binary and the preload
    rel = target_dir() / "release"
    work = Path(tempfile.mkdtemp(prefix="hsa-b8-"))
    (work / "libhsa-runtime64.so.1").symlink_to(rel / "libhsa_runtime64.so")
    drt = work / "dispatch_round_trip"
    run(["gcc", "-std=gnu11", "-O2", "-Wall", "-Werror", "-o", str(drt),
         str(ROOT / "capi/c/dispatch_round_trip.c"), "-l:libhsa-runtime64.so.1"])
    hip_check = work / "hip_check"
    run([hipcc, "--offload-arch=gfx90a", str(ROOT / "capi/hip/hip_check.hip"), "-o", str(hip_check)])
    code_object = str(ROOT / "testdata/codeobjects/kernels-gfx90a-v5.hsaco")
    base = {k: v for k, v in os.environ.items()
            if k not in ("LD_LIBRARY_PATH", "HSA_RT_SYSFS", "HSA_RT_EMULATION", "HSA_RT_DEVICE",
                         "HSA_RT_LOG")}
    ours_env = dict(base, LD_LIBRARY_PATH=str(work), HSA_RT_DEVICE="emulated")
    rocr_env = dict(base, KFD_EMU_PRELOAD=str(rel / "libkfd_emu_preload.so"))
    rounds = 1 if quick else 5
    nice = ["nice", "-n", "-20"] if os.geteuid() == 0 else []
    result = {}
    for bid, _, program, iterations, quick_iterations in B8_PROGRAMS:
        n = str(quick_iterations if quick else iterations)
        argv = [str(drt), code_object, n] if program == "dispatch_round_trip" else \
            [str(hip_check), "launch_loop", n]
        figures = {"ours": [], "rocr": []}
        submits = {"ours": [], "rocr": []}
        for _ in range(rounds):
            for who, cmd, env in (("ours", argv, ours_env),
                                  ("rocr", [str(rel / "kfd-emu"), "--"] + argv, rocr_env)):
                cmd = nice + cmd
                print("+", " ".join(cmd), file=sys.stderr)
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                m = re.search(r"([0-9.]+) ns per (dispatch|launch)", out.stdout)
                if out.returncode != 0 or not m:
                    raise ReportError(f"{bid}: `{' '.join(cmd)}` ({who}) failed (exit status "
                                      f"{out.returncode}): {out.stdout.strip()!r} {out.stderr.strip()[-2000:]!r}")
                figures[who].append(float(m.group(1)))
                s = re.search(r"submit ([0-9.]+) ns per dispatch", out.stdout)
                if program == "dispatch_round_trip":
                    if not s:
                        raise ReportError(f"{bid}: `{' '.join(cmd)}` ({who}) printed no submit line: "
                                          f"{out.stdout.strip()!r}")
                    submits[who].append(float(s.group(1)))
        result[bid] = {"ours_ns": statistics.median(figures["ours"]),
                       "rocr_ns": statistics.median(figures["rocr"]),
                       "ours_all": figures["ours"], "rocr_all": figures["rocr"],
                       "iterations": int(n), "rounds": rounds}
        if submits["ours"]:
            result[bid]["submit"] = {"ours_ns": statistics.median(submits["ours"]),
                                     "rocr_ns": statistics.median(submits["rocr"]),
                                     "ours_all": submits["ours"], "rocr_all": submits["rocr"]}
    shutil.rmtree(work, ignore_errors=True)
    return result


def b8_rows(b8):
    """The B8 rows of the main table from run_b8()'s figures, and the ids that missed."""
    rows, missed = [], []
    for bid, what, program, _, _ in B8_PROGRAMS:
        f = b8[bid]
        ratio = f["ours_ns"] / f["rocr_ns"]
        met = ratio <= B8_GOAL
        if not met:
            missed.append(bid)
        per = "per launch" if program == "launch_loop" else "per round trip"
        spread = lambda xs: ", ".join(fmt_ns(x) for x in xs)
        rows.append(
            f"| {bid} | {what}, {per}, emulated MI210, {f['iterations']:,} iterations x {f['rounds']} "
            f"round(s) | `hsa-rt` {fmt_ns(f['ours_ns'])} [{spread(f['ours_all'])}] | "
            f"`ROCR 5.2.3 under kfd-emu` {fmt_ns(f['rocr_ns'])} [{spread(f['rocr_all'])}] | "
            f"{ratio:.3g}x | <= {B8_GOAL}x ROCR | {'yes' if met else '**no**'} | `{B8_CMD}` |")
        sub = f.get("submit")
        if sub:
            sub_ratio = sub['ours_ns'] / sub['rocr_ns']
            sub_met = sub_ratio <= B8_SUBMIT_GOAL
            if not sub_met:
                missed.append(f"{bid} (submit)")
            rows.append(
                f"| {bid} (submit) | the same program's host-side part alone: each round trip's calls "
                f"from the signal reset through the doorbell store (separate batches, the wait left out), "
                f"per dispatch, {f['iterations']:,} iterations x {f['rounds']} round(s) | "
                f"`hsa-rt` {fmt_ns(sub['ours_ns'])} [{spread(sub['ours_all'])}] | "
                f"`ROCR 5.2.3 under kfd-emu` {fmt_ns(sub['rocr_ns'])} [{spread(sub['rocr_all'])}] | "
                f"{sub_ratio:.3g}x | <= {B8_SUBMIT_GOAL}x ROCR | {'yes' if sub_met else '**no**'} | "
                f"`{B8_CMD}` |")
    return rows, missed


B7_CMD = "cargo bench -p hsa-emu --bench b7_interpreter"
# kernel, what it computes, goal (M lane-instructions per second) or None
B7_KERNELS = [
    ("vector_add", "vector_add, 65,536 u32 (`kernels-gfx90a-v5.hsaco`; memory-bound)", None),
    ("nbody_accel", "n-body acceleration step, 1,024 bodies, O(n^2) (`b7/b7.cl`; compute-bound)", 1000.0),
    ("lds_reduce", "LDS tree reduction, 1,048,576 u32, 64 groups of 256 (`b7/b7.cl`)", None),
]


def b7_path():
    return target_dir() / "criterion" / "hsa_b7_report.json"


def run_b7():
    """Runs B7's criterion bench on a quiet core (niced as root) and keeps its figures:
    criterion's medians and the lane-instructions the bench recorded per dispatch."""
    nice = ["nice", "-n", "-20"] if os.geteuid() == 0 else []
    lanes_path = target_dir() / "criterion" / "hsa_b7.json"
    lanes_path.unlink(missing_ok=True)
    before = loadavg()
    started = time.time()
    run(nice + B7_CMD.split())
    finished = time.time()
    if not lanes_path.exists():
        raise ReportError(f"{B7_CMD} wrote no {lanes_path}")
    lanes = json.loads(lanes_path.read_text())
    figures = {}
    for kernel, _, _ in B7_KERNELS:
        figures[kernel] = {
            "lanes": lanes[kernel],
            "interpreter": estimate("B7_interpreter", f"{kernel}_interpreter", (started, finished)),
            "host": estimate("B7_interpreter", f"{kernel}_host", (started, finished)),
        }
    info = {"when": time.strftime("%Y-%m-%d %H:%M", time.gmtime(started)), "load_before": before,
            "load_after": loadavg(), "figures": figures}
    b7_path().write_text(json.dumps(info))


def b7_lines():
    """BENCHMARKS.md's B7 section from the last run_b7(), or [] when there is none."""
    path = b7_path()
    if not path.exists():
        return []
    b = json.loads(path.read_text())
    lines = ["", "## B7: gfx9 interpreter speed on one host thread", "",
             f"One run of `{B7_CMD}` on {b['when']} UTC (load average before: {' / '.join(b['load_before'])}; "
             f"after: {' / '.join(b['load_after'])}). Each interpreter iteration is one whole dispatch, gfx90a, "
             "on the bench's thread (`run_workgroups` over a flat memory: no queue, no device); the baseline is "
             "the same computation written in Rust and compiled for the host, on one thread. Lane-instructions "
             "are the active lanes (EXEC) summed over every instruction the dispatch executed; per second of the "
             "dispatch's median time. Times are criterion's median [95% interval]. Ratio = interpreter / host.", "",
             "| kernel | lane-instructions per dispatch | interpreter | lane-instructions per second | host | "
             "ratio | goal | met |", "|---|---|---|---|---|---|---|---|"]
    for kernel, what, goal in B7_KERNELS:
        f = b["figures"][kernel]
        (ip, il, iu), (hp, hl, hu) = f["interpreter"], f["host"]
        mlips = f["lanes"] / ip * 1e3
        goal_s, met = ("-", "-") if goal is None else \
            (f">= {goal / 1000:g} G/s", "yes" if mlips >= goal else "**no**")
        lines.append(f"| {what} | {f['lanes']:,} | {fmt_ns(ip)} [{fmt_ns(il)} .. {fmt_ns(iu)}] | {mlips:,.0f} M/s | "
                     f"{fmt_ns(hp)} [{fmt_ns(hl)} .. {fmt_ns(hu)}] | {ip / hp:,.0f}x | {goal_s} | {met} |")
    return lines


def splice_b7(text, section):
    """Replaces (or inserts before B9, or appends) the B7 section of a BENCHMARKS.md text."""
    head = "## B7: gfx9 interpreter speed on one host thread"
    body = "\n".join(section).lstrip("\n") + "\n"
    if head in text:
        start = text.index(head)
        nxt = text.find("\n## ", start + len(head))
        rest = text[nxt + 1:] if nxt >= 0 else ""
        return text[:start].rstrip("\n") + "\n\n" + body + ("\n" + rest if rest else "")
    b9 = "## B9: hsa-baremetal in a virtual machine"
    if b9 in text:
        start = text.index(b9)
        return text[:start].rstrip("\n") + "\n\n" + body + "\n" + text[start:]
    return text.rstrip("\n") + "\n\n" + body


def b9_path():
    return target_dir() / "criterion" / "hsa_b9.json"


def run_b9():
    """Boots the unikernel once (the qemu test's figures run) and keeps its figures."""
    path = b9_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    env = dict(os.environ, HSA_RT_B9_JSON=str(path))
    run(B9_CMD, env=env)
    if not path.exists():
        raise ReportError(f"{' '.join(B9_CMD)} wrote no {path} (is qemu-system-x86_64 installed? "
                          "the test says `skipped: ...` without it)")
    info = json.loads(path.read_text())
    info["when"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    info["load_before"] = loadavg()
    path.write_text(json.dumps(info))


def b9_lines():
    """BENCHMARKS.md's B9 section from the last run_b9(), or [] when there is none."""
    path = b9_path()
    if not path.exists():
        return []
    b = json.loads(path.read_text())
    raw, lat = b["raw_round_trip_median_ns"], b["dispatch_latency_median_ns"]
    # The median of the per-round ratios (each dispatch round over the raw round next to it).
    ratio = b["ratio_median_permille"] / 1000
    met = "yes" if ratio <= 1.5 else "**no**"
    cmd = "`python3 scripts/bench_report.py --b9` (`" + " ".join(B9_CMD) + "`)"
    spread = lambda k: f"{fmt_ns(b[k + '_median_ns'])} [{fmt_ns(b[k + '_p10_ns'])} .. {fmt_ns(b[k + '_p90_ns'])}]"
    lines = ["", "## B9: hsa-baremetal in a virtual machine", "",
            f"One boot of `hsa-unikernel` in QEMU (TCG, q35, qboot, 1 vCPU) on {b['when']} UTC (load average "
            f"before: {b['load_before']}), its device an `ivshmem-doorbell` whose other end is the test's device "
            "model (hsa-emu's packet processor and gfx9 interpreter over the shared guest RAM, every access "
            "translated through the GPU page tables the unikernel built for its VMID, translations kept "
            "until `INVALIDATE_TLBS`). Times are the "
            f"guest's TSC: median [10th .. 90th percentile] of {b['rounds']} rounds each. The raw and dispatch "
            "rounds alternate (raw first in even rounds, dispatch first in odd ones), so both see the same host, "
            "and both wait the same way: in the queue's blocked completion wait (`AqlQueue::wait_completion`, "
            "`WaitState::Blocked`) on an interrupt signal, which in this VM halts at once (`sti; hlt`: the "
            "unikernel's `Host::wait_spin_ns` is 0, since a spinning vCPU takes the host CPU the device model "
            "needs). Raw: the guest rings the device's echo vector (a 32-bit store to the ivshmem doorbell "
            "register); the device (blocked in `poll` on the eventfd) signals the guest's MSI-X eventfd; timed "
            "to the echo interrupt's entry, whose handler then completes the signal. Dispatch: a one-work-item "
            "vector_copy with an interrupt completion signal, timed from the doorbell store to the entry of its "
            "completion interrupt (IH entry written, MSI-X raised). Ratio: the median of the per-round ratios "
            "(each dispatch round over the raw round next to it); the median of the per-round differences "
            f"(dispatch minus raw) is {fmt_ns(b['extra_median_ns'])}, the dispatch's cost over the raw round "
            "trip, which varies less from run to run than the ratio: the raw round trip is mostly host thread "
            "wake-ups (vCPU, device thread, QEMU's I/O thread), whose cost swings with the host's load. Dispatches per second: that many dispatches "
            "back to back (a doorbell each), one wait for the last. Boot: host wall time from spawning QEMU to "
            "the unikernel's first line. The device model's own share, per round (host clock, median): "
            f"{fmt_ns(b['device_service_median_ns'])} from the doorbell's wake-up to the completion interrupt "
            f"raised ({fmt_ns(b['device_kernel_ns'])} of it in the interpreter), "
            f"{fmt_ns(b['device_echo_median_ns'])} from the echo's wake-up to its interrupt raised.", "",
            "| what | ours | baseline | ratio | goal | met | command |", "|---|---|---|---|---|---|---|",
            f"| doorbell to completion interrupt, empty dispatch, in the VM | {spread('dispatch_latency')} "
            f"| raw ivshmem doorbell to MSI-X round trip {spread('raw_round_trip')} | {ratio:.2f}x | <= 1.5x raw "
            f"| {met} | {cmd} |",
            f"| dispatches per second in the VM | {b['dispatches_per_second']:,} /s | - | - | - | - | same |",
            f"| boot to `main` (spawn to first serial line) | {b['boot_to_main_ms']:.0f} ms | - | - | - | - | same |"]
    if ratio > 1.5:
        lines += ["", "B9 is bounded by the device model's work per dispatch, which the raw round trip does not "
                  f"do: {fmt_ns(b['device_kernel_ns'])} in hsa-emu's interpreter per one-work-item dispatch "
                  "(descriptor and 4 KiB of code read from guest RAM, a wave's 2 x 64 KiB register files "
                  "allocated and zeroed on gfx90a, the wave run), plus the packet processor, the signal and the "
                  "IH entry, on 2 host cores shared with the VM's threads."]
    return lines


def splice_b9(text, section):
    """Replaces (or appends) the B9 section of a BENCHMARKS.md text."""
    head = "## B9: hsa-baremetal in a virtual machine"
    if head in text:
        start = text.index(head)
        nxt = text.find("\n## ", start + len(head))
        rest = text[nxt + 1:] if nxt >= 0 else ""
        text = text[:start].rstrip("\n") + "\n\n"
        return text + "\n".join(section).lstrip("\n") + "\n" + ("\n" + rest if rest else "")
    return text.rstrip("\n") + "\n" + "\n".join(section) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", action="store_true", help="run the benches first")
    ap.add_argument("--quick", action="store_true",
                    help="with --run: criterion " + " ".join(QUICK_ARGS) + " and one interpreter run; "
                         "writes target/BENCHMARKS-quick.md unless --out is given (a check that the "
                         "whole report works, not figures to publish)")
    ap.add_argument("--no-sizes", action="store_true", help="skip the code-size and static-memory builds")
    ap.add_argument("--out", help="where to write the report (default: BENCHMARKS.md)")
    ap.add_argument("--b8", action="store_true",
                    help="only run B8 (hsa-rt against Debian's ROCR under kfd-emu) and print its rows "
                         "(writes nothing; the report takes B8 from a --run)")
    ap.add_argument("--b7", action="store_true",
                    help="only run B7 (the interpreter against host code, one thread) and replace "
                         "BENCHMARKS.md's B7 section with its figures")
    ap.add_argument("--b9", action="store_true",
                    help="only boot the VM (B9) and replace BENCHMARKS.md's B9 section with its figures")
    args = ap.parse_args()
    if args.b8:
        try:
            rows, _ = b8_rows(run_b8(args.quick))
        except ReportError as err:
            sys.exit(f"bench_report: {err}")
        except subprocess.CalledProcessError as err:
            sys.exit(f"bench_report: `{' '.join(map(str, err.cmd))}` failed (exit status {err.returncode})")
        print("\n".join(rows))
        return
    if args.b7:
        try:
            run_b7()
        except ReportError as err:
            sys.exit(f"bench_report: {err}")
        except subprocess.CalledProcessError as err:
            sys.exit(f"bench_report: `{' '.join(map(str, err.cmd))}` failed (exit status {err.returncode}); "
                     "nothing written")
        out = Path(args.out or ROOT / "BENCHMARKS.md")
        out.write_text(splice_b7(out.read_text() if out.exists() else "", b7_lines()))
        print(f"wrote B7 into {out}", file=sys.stderr)
        return
    if args.b9:
        try:
            run_b9()
        except ReportError as err:
            sys.exit(f"bench_report: {err}")
        except subprocess.CalledProcessError as err:
            sys.exit(f"bench_report: `{' '.join(map(str, err.cmd))}` failed (exit status {err.returncode}); "
                     "nothing written")
        out = Path(args.out or ROOT / "BENCHMARKS.md")
        out.write_text(splice_b9(out.read_text() if out.exists() else "", b9_lines()))
        print(f"wrote B9 into {out}", file=sys.stderr)
        return
    if args.quick and not (args.run or args.b8):
        ap.error("--quick only applies to --run and --b8")
    try:
        if args.run:
            run_benches(args.quick)
        info = run_info()
        lines = report(info, args.no_sizes)
    except ReportError as err:
        sys.exit(f"bench_report: {err}")
    except subprocess.CalledProcessError as err:
        sys.exit(f"bench_report: `{' '.join(map(str, err.cmd))}` failed (exit status {err.returncode}); "
                 "nothing written")
    out = args.out or str(target_dir() / "BENCHMARKS-quick.md" if info.get("quick") else ROOT / "BENCHMARKS.md")
    Path(out).write_text("\n".join(lines) + "\n")
    print(f"wrote {out}", file=sys.stderr)


def report(info, no_sizes):
    """The lines of BENCHMARKS.md from the recorded run `info`.

    Raises ReportError naming every estimate that is missing or not from that run."""
    window = (info["started"], info["finished"])
    rows, errors = [], []
    for bid, what, group, ours, baselines, unit, cmd in BENCHES:
        for base, kind, goal in baselines:
            try:
                o = estimate(group, ours, window)
                b = estimate(group, base, window)
            except ReportError as err:
                errors.append(f"{bid}: {err}")
                continue
            rows.append((bid, what, ours, base, goal, unit, cmd, o, b))
    it = info["interpreter"]
    for mode in ("interpret", "host"):
        if not isinstance(it.get(mode), dict) or not it[mode].get("wall_s"):
            errors.append(f"gfx9 interpreter: no {mode} wall time in the recorded run")
    if isinstance(it.get("interpret"), dict) and it["interpret"].get("mlips") is None:
        errors.append("gfx9 interpreter: no lane-instructions/s figure in the recorded run")
    if not isinstance(info.get("b8"), dict) or any(bid not in info["b8"] for bid, *_ in B8_PROGRAMS):
        errors.append("B8: no figures in the recorded run (run again with --run)")
    if errors:
        raise ReportError("rows missing, nothing written:\n  " + "\n  ".join(dict.fromkeys(errors)))

    cores, model = machine()
    lines = ["# Benchmarks", "",
             "Generated by `scripts/bench_report.py` from criterion's output "
             "(`target/criterion/**/new/estimates.json`); do not edit by hand.", "",
             f"- Machine: {cores} cores, {model} ({platform.machine()}, Linux {platform.release()}).",
             f"- One run, {time.strftime('%Y-%m-%d %H:%M', time.localtime(info['started']))} to "
             f"{time.strftime('%H:%M', time.localtime(info['finished']))}. Load average (1/5/15 min) before: "
             f"{' / '.join(info['loadavg_before'])}; after: {' / '.join(info['loadavg_after'])}. Benches ran "
             f"with `nice -n -20`: {info['niced']}."]
    if info.get("quick"):
        lines.append(f"- **Quick run** (criterion `{' '.join(info['criterion_args'])}`, one interpreter run): "
                     "a check that the report works, not figures to publish.")
    lines += [
        "- Each bench and its baseline run back to back in the same process; the bench thread is pinned to "
        "CPU 0 and its peer (consumer, second producer, responder, CP thread, SDMA engine thread) to CPU 1. Criterion: 30 samples "
        f"over ~{'0.5' if info.get('quick') else '3'} s (B5's linked_list_allocator 10 samples; B6 see below).",
        "- Times are criterion's median (95% interval in brackets). Ratio = ours / baseline. On this shared "
        "2-core machine absolute figures move a lot between runs (other builds compete for the cores); the "
        "goals are ratios for that reason. The machine is a KVM guest: what a cache line costs to move between "
        "its two vCPUs depends on where the host runs them, which can change between runs and even between a "
        "bench and its baseline, so the benches that cross cores (B1, B2, B3, B4) are best compared over "
        "several runs.",
        "- Reproduce everything: `python3 scripts/bench_report.py --run` (as root it runs the benches under "
        "`nice -n -20`), or one bench with the command in its row (the report then refuses to mix it with the "
        "rest: every row comes from one run).",
        "",
        "| id | what | ours | baseline | ratio | goal | met | command |",
        "|---|---|---|---|---|---|---|---|",
    ]
    missed = []
    for bid, what, ours, base, goal, unit, cmd, o, b in rows:
        ratio = o[0] / b[0]
        met = goal is None or ratio <= goal
        if goal is None:
            goal_txt = "none (reported, no issue sets a goal)"
        elif base == "linked_list_allocator":
            goal_txt = ">= 100x faster than linked_list_allocator (ratio <= 0.01)"
        else:
            goal_txt = f"<= {goal}x {base}"
        if not met:
            missed.append(bid)
        lines.append(
            f"| {bid} | {what}, {unit} | `{ours}` {fmt_ns(o[0])} [{fmt_ns(o[1])}, {fmt_ns(o[2])}] | "
            f"`{base}` {fmt_ns(b[0])} [{fmt_ns(b[1])}, {fmt_ns(b[2])}] | {ratio:.3g}x"
            f"{f' ({b[0] / o[0]:.0f}x faster)' if ratio < 0.1 else ''} | {goal_txt} | "
            f"{'-' if goal is None else 'yes' if met else '**no**'} | `{cmd}` |")
    b8_lines, b8_missed = b8_rows(info["b8"])
    lines += b8_lines
    missed += b8_missed
    lines += ["", "## Goals missed", ""]
    if missed:
        for bid in dict.fromkeys(missed):
            lines.append(f"- **{bid}** — bounded by {BOUNDS[bid]}")
    else:
        lines.append("None in this run.")
    lines += [
        "", "## How each bench measures", "",
        "- B1/B2: the queues run on a platform whose `ring_doorbell` is one Release store to a doorbell word "
        "(as an MMIO doorbell is: no syscall); the consumer is a `RingConsumer` that copies each packet out and "
        "frees the slot. Ring and ArrayQueue both hold 256 64-byte items. B1: the consumer runs on the other "
        "core the whole time.",
        "- B2 measures what two producers on two cores cost each other: the bench thread (CPU 0) and a second "
        "producer thread (CPU 1, started once) each submit 128 packets per batch (reserve, write, publish, "
        "doorbell per packet), started together through a shared start word; a batch is timed from the start "
        "until both are done, then the bench thread drains the 256 packets as the consumer, not timed, so no "
        "producer ever waits for room. A sample's time is its median batch, per packet. The consumer's traffic "
        "during submission is B1's subject, not B2's. Why the spread is bounded: the bench used to start the "
        "second producer per sample from the bench thread, so it inherited its pinning to CPU 0; both "
        "producers then time-shared one core beside a spinning consumer, never contended, and whenever the "
        "scheduler preempted a producer between taking a slot and publishing it (or holding the doorbell "
        "lock) the ring stalled for a time slice (milliseconds), so each sample's figure depended on how many "
        "such preemptions it caught (issue 17: an interval from 107 ns to 1 µs). Now only two threads spin, one per core, and a batch "
        "(a few to some tens of microseconds) that another process preempts moves a sample only if more than half of the "
        "sample's batches were preempted.",
        "- B3: two user signals (no event) from a `SignalPool`; the responder waits `NE last` and stores the value "
        "back; the bench thread stores `i` and waits `EQ i`, both `WaitState::Active`. The baseline does the same "
        "on two cache-padded `AtomicI64`s with `spin_loop` hints.",
        "- B4: `hsa_emu::open_default()` on the emulated device, the `vector_copy` code object loaded and "
        "its kernel replaced by an empty host kernel (`ExecutionMode::HostOnly`: by default the device would "
        "interpret the kernel's machine code); one work-item dispatch with a user completion signal, active "
        "wait (`AqlQueue::wait_completion`, so a queue the CP stopped fails the bench with its error). The "
        "baseline sends a `u64` over a bounded crossbeam channel and receives it back.",
        "- B5: the same seeded sequence for all three allocators: 10,000 live blocks, then per iteration free a "
        "random live block and allocate a new random size in its place. `MemoryPool` with a 64-byte granule and "
        "alignment over the fake platform; `std::alloc` with `Layout(size, 64)`; `linked_list_allocator::Heap` "
        "(first fit) over a 96 MiB arena.",
        "- B6: one-way wake-up latency: the waiter blocks (`WaitState::Blocked` on an interrupt signal: its "
        "20 µs spin phase is over, it sleeps in the device's event wait); the bench thread sleeps 300 µs, "
        "takes CLOCK_MONOTONIC, stores; the waiter takes CLOCK_MONOTONIC when its wait returns. The baseline "
        "does the same with `rustix::thread::futex::{wait, wake}` on an `AtomicU32`. Only the latencies are "
        "timed (criterion measurement time 150 ms of latency, 20 samples).",
        "- SDMA: an `hsa_core::sdma::SdmaQueue` on the emulated device (its engine thread started from "
        "CPU 1, so it runs there; the bench panics if the engine thread may run on the bench thread's CPU 0) "
        "and one command made once by `copy_commands`: an HDP flush, one `COPY_LINEAR` of 64 KiB between two "
        "halves of a fine-grained system buffer, an `ATOMIC` add of -1 to a 64-bit value. Per iteration the "
        "value is set to 1, the command submitted (ring write, write pointer, doorbell) and the value spun "
        "on until it is 0. The engine watches the doorbell word in a spin loop for 50 us after its last "
        "packet (then sleeps 50 us doubling to 1 ms), so back-to-back copies cost no wake-up: what is left "
        "is the engine's memmove of the 64 KiB plus two cross-core handoffs (doorbell, completion). Until "
        "the engine thread was placed (it inherits its creator's CPUs, and B4 and B6 leave the bench thread "
        "pinned to CPU 0), it shared CPU 0 with the spinning bench thread and each copy waited a scheduler "
        "time slice (~250 us, 282x). The baseline is `copy_from_slice` of 64 KiB between two heap buffers "
        "on the bench thread.",
        "- B8: not criterion: two programs time themselves (CLOCK_MONOTONIC / steady_clock; 10 untimed "
        "iterations, then five batches, the median batch's time per iteration), each run alternately on "
        "hsa-rt's libhsa-runtime64 (release; `LD_LIBRARY_PATH`, `HSA_RT_DEVICE=emulated`) and on Debian's "
        "libhsa-runtime64 (ROCR 5.2.3 with its libhsakmt) under `kfd-emu` (release; both with "
        "their defaults, SDMA on, though neither program copies), 5 rounds alternating, niced as the criterion benches, the "
        "median round shown (every round in brackets). Each program runs its main thread on CPU 1 "
        "while the runtime starts (so the emulated command processor's threads, started when the "
        "queues are created, inherit CPU 1), then on CPU 0 for the timed loop, as the criterion benches "
        "place their peers: left to the scheduler, the waiting thread and the command processor "
        "sometimes shared one CPU and every dispatch waited for a time slice (issue 21). Both drive the same emulated MI210: the same CP thread and gfx9 interpreter run the "
        "kernel, so the ratio is the two runtimes' host-side cost per dispatch. B8: hsa.h only "
        "(`capi/c/dispatch_round_trip.c`): one queue, one kernarg buffer, one completion signal made with "
        "`hsa_signal_create` (ROCR: an interrupt signal), per iteration the signal set to 1, one "
        "work-item of `vector_copy` dispatched (barrier bit, system-scope fences), the doorbell rung, "
        "`hsa_signal_wait_scacquire(LT 1, HSA_WAIT_STATE_ACTIVE)`, the copied element checked. "
        "B8 (HIP): `hipLaunchKernelGGL` of an empty kernel (one work-group of 64) and "
        "`hipStreamSynchronize(0)` per iteration, through Debian's libamdhip64 (HIP 5.2.3) over each "
        "runtime.",
    ]
    if not no_sizes:
        lines += code_size_lines(*code_sizes())
        sm = static_memory()
        lines += ["", "## Static memory of a no-alloc runtime with one queue and 64 signals", "",
                  "`size_of` with hsa-core built without `alloc` (`scripts/static_memory`, run by this script), "
                  "plus the platform memory those structures own:", "",
                  "| item | bytes |", "|---|---|",
                  f"| `AqlQueue` | {sm['aql_queue_bytes']} |",
                  f"| `SignalPool` (fixed slab table) | {sm['signal_pool_bytes']} |",
                  f"| {sm['signals']} x `Signal` ({sm['signal_bytes']} each) | {sm['signals'] * sm['signal_bytes']} |",
                  f"| **host structures** | **{sm['host_structs_bytes']:,}** |",
                  f"| ring (64 packets x 64 B, the amdkfd minimum) | {sm['ring_bytes']:,} |",
                  f"| queue descriptor chunk (`amd_queue_t` + doorbell and inactive signals) | {sm['queue_descriptor_bytes']:,} |",
                  f"| signal slab(s) (64 `amd_signal_t` slots each) | {sm['signal_slab_bytes']:,} |",
                  f"| **platform memory** | **{sm['platform_memory_bytes']:,}** |",
                  f"| **total** | **{sm['host_structs_bytes'] + sm['platform_memory_bytes']:,}** |"]
    runs = 1 if info.get("quick") else 9
    lines += ["", "## The gfx9 interpreter (emulated device)", "",
              "vector_add over 1,048,576 elements (grid 1,048,576, work-group 256, gfx90a profile) run by the main job: "
              "lane-instructions are the active lanes (EXEC) summed over every instruction executed, per second of "
              f"interpretation, as the example prints them (median of {runs} run{'s' if runs > 1 else ''}). The "
              "baseline is the same run with the kernel's host implementation (`HSA_RT_EMULATION=host`), "
              "whole-process wall time; the two alternate run by run.", "",
              "| what | interpreter | host implementation | ratio | command |", "|---|---|---|---|---|",
              f"| lane-instructions per second | {it['interpret']['mlips']} M | - | - | "
              "`cargo run --release --example vector_copy -- --kernel vector-add` |",
              f"| wall time of the run | {it['interpret']['wall_s'] * 1e3:.1f} ms | {it['host']['wall_s'] * 1e3:.1f} ms | "
              f"{it['interpret']['wall_s'] / it['host']['wall_s']:.2f}x | same, with `HSA_RT_EMULATION=interpret` / `host` |"]
    lines += b7_lines()
    lines += b9_lines()
    return lines


if __name__ == "__main__":
    main()
