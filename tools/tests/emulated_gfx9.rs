//! The emulated device runs the real GFX9 machine code of the test kernels (vector_copy,
//! vector_add, local_reverse) on gfx900, gfx90a and gfx942, through the main job's runtime
//! path (`demo::run`): code object loading, kernarg segment, AQL packet, doorbell, completion
//! signal. Deliberately wrong kernargs or packets (this file's [`DemoFaults`], applied
//! between the main job's steps) fail verification; a bad pointer is a MEMORY_FAULT through
//! the queue's error callback, and the process lives on.

use std::sync::Arc;

use hsa_core::Status;
use hsa_emu::device::{builtin_topology_for, EmulatedKfd, ExecutionMode};
use hsa_emu::SelectedDevice;
use hsa_tools::demo::{self, DemoConfig, DemoKernel, DemoOutcome, Job};

const KERNELS: [DemoKernel; 3] = [
    DemoKernel::VectorCopy,
    DemoKernel::VectorAdd,
    DemoKernel::LocalReverse,
];

/// An emulated device whose GPU has `gfx_target_version`, in `mode`.
fn device(gfx_target_version: u32, mode: ExecutionMode) -> Arc<EmulatedKfd> {
    let d = EmulatedKfd::new(builtin_topology_for(gfx_target_version).unwrap()).unwrap();
    d.set_execution_mode(mode);
    d
}

fn config(kernel: DemoKernel, workgroup_size: u16) -> DemoConfig {
    DemoConfig {
        kernel,
        elements: 4096,
        workgroup_size,
        chain: 1,
        code_object: None,
        agent: 0,
    }
}

/// Deliberate corruptions of the main job, for tests that show a wrong kernarg layout, a
/// wrong packet or a bad pointer is caught (by verification or by the queue's error
/// callback); applied between [`Job::dispatches`] and [`Job::submit`]. The default corrupts
/// nothing.
#[derive(Clone, Copy, Debug, Default)]
struct DemoFaults {
    /// Write the pointer arguments this many bytes into the kernarg segment instead of at 0
    /// (a multiple of 8); the bytes before them hold the address of buffer `b`, a valid buffer
    /// of the right size, so the kernel reads real but wrong arguments.
    kernarg_shift_bytes: u32,
    /// The work-group size the dispatch packet says, instead of the configuration's (the
    /// verification still expects the configuration's).
    packet_workgroup_size: Option<u16>,
    /// Replace the first pointer argument by this address.
    first_argument: Option<u64>,
    /// The grid size the dispatch packet says, instead of the configuration's `elements` (the
    /// verification still expects the configuration's; a larger grid runs work-items past
    /// it, which the check of the padding catches).
    packet_grid_size: Option<u32>,
}

/// The main job's steps on `d` with `faults` applied to each dispatch before it is submitted.
fn run(
    d: &Arc<EmulatedKfd>,
    config: &DemoConfig,
    faults: &DemoFaults,
) -> Result<DemoOutcome, hsa_core::Error> {
    let job = Job::set_up(SelectedDevice::emulated(d.clone())?, config)?;
    let kernel = job.load()?;
    let buffers = job.buffers()?;
    let mut dispatches = job.dispatches(&kernel, &buffers)?;
    for k in 0..dispatches.len() {
        let mut explicit = job.explicit_arguments(k, &buffers);
        if let Some(p) = faults.first_argument {
            explicit[0] = p;
        }
        let filler = (faults.kernarg_shift_bytes / 8) as usize;
        explicit.splice(0..0, std::iter::repeat_n(buffers.addresses()[1], filler));
        dispatches.write_kernarg(k, &job.kernarg_segment(&explicit)?)?;
        let packet = dispatches.packet_mut(k);
        if let Some(wg) = faults.packet_workgroup_size {
            packet.workgroup_size[0] = wg;
        }
        if let Some(grid) = faults.packet_grid_size {
            packet.grid_size[0] = grid;
        }
    }
    job.submit(&dispatches)?;
    job.wait(&dispatches, &mut |_, _| {})?;
    let verified = job.verify(&buffers)?;
    job.finish(kernel, buffers, dispatches, verified)
}

#[test]
fn test_kernels_run_as_machine_code_on_gfx900_gfx90a_gfx942() {
    for (version, isa) in [(90000, "gfx900"), (90010, "gfx90a"), (90402, "gfx942")] {
        let d = device(version, ExecutionMode::Interpret);
        for kernel in KERNELS {
            let o = run(&d, &config(kernel, 64), &DemoFaults::default())
                .unwrap_or_else(|e| panic!("{isa} {}: {e}", kernel.name()));
            assert_eq!(o.executor, "gfx9 interpreter", "{isa} {}", kernel.name());
            assert_eq!(o.agent, isa);
            assert_eq!(o.elements_verified, 4096);
            let file = o.code_object.file_name().unwrap().to_str().unwrap();
            assert!(file.starts_with(&format!("kernels-{isa}-")), "{file}");
            let s = o.execution.unwrap();
            assert_eq!((s.interpreted_dispatches, s.host_dispatches), (1, 0));
            // 4096 work-items in groups of 64: 64 work-groups of one wave each.
            assert_eq!(s.workgroups, 64);
            // Every lane-instruction counted once per active lane: at most 64 per
            // instruction, and every instruction of a full wave has 64.
            assert_eq!(s.lane_instructions, s.instructions * 64, "{isa}");
        }
    }
}

#[test]
fn chains_and_partial_groups_run_on_several_threads() {
    let d = device(90010, ExecutionMode::Interpret);
    d.set_interpreter_threads(3);
    assert_eq!(d.interpreter_threads(), 3);
    // 4000 items in groups of 256: 16 groups, the last of 160 items (3 waves, the last half
    // full); four dispatches chained by barrier-AND packets.
    let mut c = config(DemoKernel::VectorCopy, 256);
    c.elements = 4000;
    c.chain = 4;
    let o = run(&d, &c, &DemoFaults::default()).unwrap();
    assert_eq!(o.executor, "gfx9 interpreter");
    assert_eq!(o.elements_verified, 4000);
    let s = o.execution.unwrap();
    assert_eq!(s.interpreted_dispatches, 4);
    assert_eq!(s.workgroups, 4 * 16);
    let mut r = config(DemoKernel::LocalReverse, 128);
    r.chain = 3;
    assert_eq!(run(&d, &r, &DemoFaults::default()).unwrap().dispatches, 3);
}

#[test]
fn host_implementations_run_in_host_mode_and_for_other_isas() {
    let d = device(90010, ExecutionMode::HostOnly);
    assert_eq!(d.execution_mode(), ExecutionMode::HostOnly);
    let o = run(
        &d,
        &config(DemoKernel::VectorAdd, 64),
        &DemoFaults::default(),
    )
    .unwrap();
    assert_eq!(o.executor, "host implementation");
    // gfx1030 is not GFX9: its code object loads, and the host implementation runs it.
    let d = device(100300, ExecutionMode::Interpret);
    let o = run(
        &d,
        &config(DemoKernel::VectorAdd, 64),
        &DemoFaults::default(),
    )
    .unwrap();
    assert_eq!(o.agent, "gfx1030");
    assert_eq!(o.executor, "host implementation");
    // HSA_RT_EMULATION=interpret asks for the machine code and nothing else: on gfx1030 the
    // dispatch fails instead of falling back.
    let d = device(100300, ExecutionMode::InterpretOnly);
    let e = run(
        &d,
        &config(DemoKernel::VectorAdd, 64),
        &DemoFaults::default(),
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::InvalidIsa, "{e}");
    assert!(
        e.detail()
            .to_string()
            .contains("HSA_RT_EMULATION=interpret, but the GPU's ISA"),
        "{e}"
    );
    assert_eq!(
        ExecutionMode::parse("interpret").unwrap(),
        ExecutionMode::InterpretOnly
    );
    assert_eq!(
        ExecutionMode::parse("host").unwrap(),
        ExecutionMode::HostOnly
    );
    assert_eq!(ExecutionMode::parse("").unwrap(), ExecutionMode::Interpret);
    let e = ExecutionMode::parse("gpu").unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(
        e.detail()
            .to_string()
            .contains("HSA_RT_EMULATION value 'gpu'"),
        "{}",
        e.detail()
    );
}

#[test]
fn wrong_kernarg_offset_and_wrong_packet_workgroup_size_fail_verification() {
    let d = device(90010, ExecutionMode::Interpret);
    // The pointers 8 bytes late: the kernel copies b (the filler) into a and leaves c zero.
    let shifted = DemoFaults {
        kernarg_shift_bytes: 8,
        ..DemoFaults::default()
    };
    let e = run(&d, &config(DemoKernel::VectorCopy, 64), &shifted).unwrap_err();
    assert_eq!(e.status(), Status::Error);
    assert!(
        e.detail()
            .to_string()
            .contains("vector_copy: element 0 is 0, expected -3"),
        "{}",
        e.detail()
    );
    // The packet says 128 work-items a group, the host expects chunks of 64 reversed: the
    // kernel reads its work-group size from the packet (dispatch ptr), so it reverses 128.
    let wide = DemoFaults {
        packet_workgroup_size: Some(128),
        ..DemoFaults::default()
    };
    let e = run(&d, &config(DemoKernel::LocalReverse, 64), &wide).unwrap_err();
    assert!(
        e.detail()
            .to_string()
            .contains("local_reverse: element 0 is"),
        "{}",
        e.detail()
    );
    // Each uncorrupted flow passes on the same device.
    run(
        &d,
        &config(DemoKernel::LocalReverse, 64),
        &DemoFaults::default(),
    )
    .unwrap();
}

/// The demo's check of the elements past the grid catches work-items that run beyond it: a
/// packet whose grid covers the padding (`packet_grid_size`) makes vector_copy write there,
/// and the run fails naming the first such element; on both executors (the interpreter and
/// the host implementations), which run a partial last work-group correctly otherwise.
#[test]
fn work_items_past_the_grid_are_caught_and_partial_groups_run_on_both_executors() {
    for mode in [ExecutionMode::Interpret, ExecutionMode::HostOnly] {
        let d = device(90010, mode);
        let mut c = config(DemoKernel::VectorCopy, 64);
        c.elements = 1000;
        let o = run(&d, &c, &DemoFaults::default()).unwrap();
        assert_eq!(o.elements_verified, 1000, "{mode:?}");
        assert_eq!(o.elements_past_grid_verified, 3 * 24, "{mode:?}");
        let vector_add = DemoConfig {
            kernel: DemoKernel::VectorAdd,
            elements: 10,
            ..c.clone()
        };
        let o = run(&d, &vector_add, &DemoFaults::default()).unwrap();
        assert_eq!(
            (o.elements_verified, o.workgroup_size),
            (10, 10),
            "{mode:?}"
        );
        let wide = DemoFaults {
            packet_grid_size: Some(1024),
            ..DemoFaults::default()
        };
        let e = run(&d, &c, &wide).unwrap_err();
        assert_eq!(e.status(), Status::Error, "{mode:?} {e}");
        assert_eq!(
            e.detail(),
            format!(
                "vector_copy: element 1000 of buffer c, past the grid of 1000 work-items, is \
                 {}, expected it untouched ({}): a work-item beyond the grid ran",
                demo::PAST_GRID_VALUES[0],
                demo::PAST_GRID_VALUES[2]
            ),
            "{mode:?}"
        );
    }
}

#[test]
fn bad_pointer_is_a_memory_fault_through_the_error_callback() {
    let d = device(90402, ExecutionMode::Interpret);
    let wild = DemoFaults {
        first_argument: Some(0xdead_0000_0000),
        ..DemoFaults::default()
    };
    let e = run(&d, &config(DemoKernel::VectorCopy, 64), &wild).unwrap_err();
    assert_eq!(e.status(), Status::MemoryFault, "{e}");
    let m = e.detail().to_string();
    for want in [
        "vector_copy",
        "gfx942",
        "global_load_dword",
        "0xdead00000000",
    ] {
        assert!(m.contains(want), "{want} missing in: {m}");
    }
    // The process lives and the device still runs kernels.
    let o = run(
        &d,
        &config(DemoKernel::VectorAdd, 64),
        &DemoFaults::default(),
    )
    .unwrap();
    assert_eq!(o.executor, "gfx9 interpreter");
}

#[test]
fn machine_code_that_fails_fails_even_with_a_host_implementation() {
    // vector_copy for gfx90a with its third instruction (`v_mov_b32_e32 v1, 0`) replaced by
    // 0xffffffff, an invalid encoding (llvm-mc-19 --disassemble: "invalid instruction
    // encoding"). The demo registers a host implementation of vector_copy; the default mode
    // must still stop the queue with the interpreter's error instead of running it.
    let original = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/codeobjects/kernels-gfx90a-v5.hsaco"
    ))
    .unwrap();
    // s_load_dword s9, s[4:5], 0x4; s_load_dwordx4 s[0:3], s[6:7], 0x0; v_mov_b32_e32 v1, 0
    let prologue: Vec<u8> = [0xC002_0242u32, 4, 0xC00A_0003, 0, 0x7E02_0280]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let at: Vec<usize> = original
        .windows(prologue.len())
        .enumerate()
        .filter(|(_, w)| *w == prologue.as_slice())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "vector_copy's prologue occurs once");
    let mut patched = original.clone();
    patched[at[0] + 16..at[0] + 20].copy_from_slice(&[0xff; 4]);
    let dir = std::env::temp_dir().join(format!("hsa-illegal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kernels-gfx90a-v5.hsaco");
    std::fs::write(&file, &patched).unwrap();

    let d = device(90010, ExecutionMode::Interpret);
    let mut c = config(DemoKernel::VectorCopy, 64);
    c.code_object = Some(file);
    let e = run(&d, &c, &DemoFaults::default()).unwrap_err();
    assert_eq!(e.status(), Status::IllegalInstruction, "{e}");
    assert!(e.detail().to_string().contains("vector_copy"), "{e}");
    assert!(e.detail().to_string().contains("0xffffffff"), "{e}");
    let s = d.execution_stats();
    assert_eq!(s.host_dispatches, 0, "no host implementation ran");
    let _ = std::fs::remove_dir_all(&dir);
}
