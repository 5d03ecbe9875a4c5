//! The hand-made seeds of the engine and image targets (`fuzz/seeds/<target>/<name>`), built
//! here from the runtime's own builders (the SDMA packets hsa-rt's copy engine writes, the
//! PM4 of ROCR's cache invalidation, the MQD of a real queue layout, the IH entries the
//! command processor writes, the image objects `hsa_ext_image_create` makes), so that each
//! seed is what real producers emit. `tests/tests/fuzz_corpus.rs` checks the files are these
//! (`HSA_RT_WRITE_SEEDS=1` rewrites them).

use hsa_baremetal::ih::IhEntry;
use hsa_baremetal::irq::{CLIENT_GRBM_CP, SOURCE_CP_BAD_OPCODE, SOURCE_CP_END_OF_PIPE};
use hsa_core::sdma::packet;
use hsa_core::sdma::{copy_commands, copy_rect_commands, RectSurface, SdmaCompletion};
use hsa_core::GpuVa;
use hsa_emu::device::drm::{DrmAmdgpuInfo, DrmVersion};
use hsa_emu::device::fuzz::{FUZZ_BO_BYTES, FUZZ_MEMORY_VA, FUZZ_UNMAPPED_VA};
use zerocopy::IntoBytes;

/// A seed: its target, file name and bytes.
pub type Seed = (&'static str, String, Vec<u8>);

fn dwords(d: &[u32]) -> Vec<u8> {
    d.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A PM4 type-3 header of `opcode` with `body` dwords after it.
const fn pm4_header(opcode: u8, body: u32) -> u32 {
    3 << 30 | ((body - 1) & 0x3fff) << 16 | (opcode as u32) << 8
}

/// `INDIRECT_BUFFER` to `va` of `size` dwords (VALID set), as ROCR's `amd_gpu_pm4.h`.
fn indirect_buffer(va: u64, size: u32) -> [u32; 4] {
    [
        pm4_header(0x3f, 3),
        (va as u32 >> 2) << 2,
        (va >> 32) as u32 & 0xffff,
        size | 1 << 23,
    ]
}

/// A PM4 seed: the packet's four dwords, then the memory image (from `FUZZ_MEMORY_VA`).
fn pm4_seed(packet: [u32; 4], memory: &[u32]) -> Vec<u8> {
    let mut v = dwords(&packet);
    v.extend(dwords(memory));
    v
}

/// An SDMA seed: the ring's dwords (at most 255), then the memory image.
fn sdma_seed(ring: &[u32], memory: &[u8]) -> Vec<u8> {
    assert!(ring.len() <= 255);
    let mut v = vec![ring.len() as u8];
    v.extend(dwords(ring));
    v.extend_from_slice(memory);
    v
}

fn va(offset: u64) -> GpuVa {
    GpuVa(FUZZ_MEMORY_VA + offset)
}

/// Every seed of the targets this module serves.
pub fn seeds() -> Vec<Seed> {
    let mut out: Vec<Seed> = Vec::new();

    // ---- pm4 ----
    // ROCR 5.2's GpuAgent::InvalidateCodeCaches: an IB holding one ACQUIRE_MEM (7 dwords).
    let acquire = [
        pm4_header(0x58, 6),
        1 << 29 | 1 << 27 | 1 << 23 | 1 << 18,
        0xffff_ffff,
        0xff,
        0,
        0,
        0,
    ];
    out.push((
        "pm4",
        "rocr_invalidate_code_caches".into(),
        pm4_seed(indirect_buffer(FUZZ_MEMORY_VA, 7), &acquire),
    ));
    // WRITE_DATA (memory, 2 dwords) then RELEASE_MEM (end of pipe, 64-bit data, interrupt),
    // then an IB2 with a NOP, in one IB.
    let target = FUZZ_MEMORY_VA + 0x800;
    let mut ib: Vec<u32> = vec![
        pm4_header(0x37, 5),
        5 << 8,
        target as u32,
        (target >> 32) as u32,
        0x1111_1111,
        0x2222_2222,
        pm4_header(0x49, 7),
        0x14 | 5 << 8,
        2 << 29 | 2 << 24,
        (target + 16) as u32,
        ((target + 16) >> 32) as u32,
        0xdead_beef,
        0x1,
        42,
    ];
    let ib2 = FUZZ_MEMORY_VA + 0x400;
    ib.extend(indirect_buffer(ib2, 2));
    let mut memory = ib.clone();
    memory.resize(0x400 / 4, 0);
    memory.extend([pm4_header(0x10, 1), 0]);
    out.push((
        "pm4",
        "write_release_and_ib2".into(),
        pm4_seed(indirect_buffer(FUZZ_MEMORY_VA, ib.len() as u32), &memory),
    ));
    // The packet itself: a one-dword NOP and a type-2 filler; an IB into unmapped memory.
    out.push((
        "pm4",
        "nops".into(),
        pm4_seed(
            [
                pm4_header(0x10, 0x4000),
                0x8000_0000,
                0x8000_0000,
                0x8000_0000,
            ],
            &[],
        ),
    ));
    out.push((
        "pm4",
        "ib_into_unmapped_memory".into(),
        pm4_seed(indirect_buffer(FUZZ_UNMAPPED_VA, 4), &[]),
    ));

    // ---- sdma ----
    let memory: Vec<u8> = (0..256u32).flat_map(|i| (i * 7).to_le_bytes()).collect();
    let completion = SdmaCompletion {
        value: va(0x2000),
        mailbox: Some((va(0x2010), 5)),
        timestamps: Some((va(0x2020), va(0x2028))),
    };
    let mut ring = Vec::new();
    copy_commands(
        &mut ring,
        va(0x1000),
        va(0),
        1024,
        &[va(0x2030)],
        &completion,
    );
    out.push((
        "sdma",
        "rocr_copy_with_dependency".into(),
        sdma_seed(&ring, &memory),
    ));
    let mut ring = Vec::new();
    let surface = |base: u64| RectSurface {
        base: va(base),
        pitch: 256,
        slice: 256 * 8,
        offset: [16, 1, 0],
    };
    copy_rect_commands(
        &mut ring,
        &surface(0x3000),
        &surface(0),
        [64, 4, 2],
        &[],
        &completion,
    )
    .expect("a rect copy command");
    out.push(("sdma", "rect_copy".into(), sdma_seed(&ring, &memory)));
    let mut ring = Vec::new();
    ring.extend(packet::fence(va(0x100), 7));
    ring.extend(packet::trap(3));
    ring.extend(packet::hdp_flush());
    ring.extend(packet::atomic_add64(va(0x108), -1));
    ring.extend(packet::timestamp(va(0x110)));
    ring.extend(packet::poll_mem_eq(va(0x100), 7));
    // CONST_FILL of 16 dwords (fillsize 2: dwords).
    ring.extend([11 | 2 << 30, va(0x200).0 as u32, 0, 0x5a5a_5a5a, 63]);
    ring.extend([0, 0]);
    out.push(("sdma", "every_packet".into(), sdma_seed(&ring, &memory)));
    // A copy that runs from the first buffer object into the second, and one into unmapped
    // memory.
    let mut ring = Vec::new();
    ring.extend(packet::copy_linear(va(FUZZ_BO_BYTES - 64), va(0), 128));
    ring.extend(packet::copy_linear(GpuVa(FUZZ_UNMAPPED_VA), va(0), 16));
    out.push((
        "sdma",
        "across_and_past_buffer_objects".into(),
        sdma_seed(&ring, &memory),
    ));

    // ---- mqd ----
    let mqd = |f: [u64; 7], fix: u8| {
        let mut v: Vec<u8> = f.iter().flat_map(|x| x.to_le_bytes()).collect();
        v.push(fix);
        v
    };
    out.push((
        "mqd",
        "aql_queue".into(),
        mqd(
            [
                0x1_2345_6700,
                4096,
                0x7_0000_0080,
                0x7_0000_0038,
                3,
                0x7_8000_0000,
                4096,
            ],
            0,
        ),
    ));
    out.push((
        "mqd",
        "rounded".into(),
        mqd(
            [0x1234_5678, 10, 0x3333, 0x5555, 0x1234_5678, 0x9abc, 9],
            0xf,
        ),
    ));

    // ---- ih_ring ----
    let eop = |id: u32| {
        IhEntry {
            client_id: CLIENT_GRBM_CP,
            source_id: SOURCE_CP_END_OF_PIPE,
            src_data: [id, 0, 0, 0],
            ..IhEntry::default()
        }
        .encode()
    };
    let bad_opcode = IhEntry {
        client_id: CLIENT_GRBM_CP,
        source_id: SOURCE_CP_BAD_OPCODE,
        src_data: [0x29, 0, 0, 0],
        ..IhEntry::default()
    }
    .encode();
    let mut ih = vec![2u8]; // a 128-byte ring: 4 entries
    ih.extend(96u32.to_le_bytes());
    for e in [eop(1), eop(2), bad_opcode, eop(70)] {
        ih.extend(e);
    }
    // Then the write pointer wraps with the overflow bit set.
    ih.extend((32u32 | 1).to_le_bytes());
    for e in [eop(3), eop(4), eop(5), eop(6)] {
        ih.extend(e);
    }
    out.push(("ih_ring", "eop_queue_error_and_overflow".into(), ih));

    // ---- image_descriptor ----
    let desc = |g: u8, wide_pitch: u8, ty: u8, order: u8, dims: [u32; 4], rp: u32, addr: u64| {
        let mut v = vec![g, wide_pitch, ty, order];
        for d in dims {
            v.extend(d.to_le_bytes());
        }
        v.extend(rp.to_le_bytes());
        v.extend(0u32.to_le_bytes());
        v.extend((addr as u32).to_le_bytes());
        v.extend(((addr >> 32) as u32).to_le_bytes());
        v
    };
    // Channel types (hsa_ext_image.h): UNORM_INT8 2, UNSIGNED_INT32 13, FLOAT 15; orders:
    // R 1, RGBA 8.
    for (name, g, ty, order, dims) in [
        ("rgba8_2d", 1u8, 2u8, 8u8, [64u32, 32, 0, 0]),
        ("r32f_3d", 2, 15, 1, [16, 16, 4, 0]),
        ("rgba32ui_2d_array", 4, 13, 8, [8, 8, 0, 3]),
        ("r8_1d_buffer", 5, 2, 1, [1000, 0, 0, 0]),
        ("rgba8_1d_array", 3, 2, 8, [100, 0, 0, 7]),
    ] {
        let mut v = desc(g, 0, ty, order, dims, 0, 0x10_0000);
        v.extend([1, 1, 1]); // normalized, linear, clamp to edge
        out.push(("image_descriptor", name.into(), v));
    }

    // ---- image ----
    // Origin 2: the runtime's own image and sampler objects on the texels.
    for (name, kernel, lanes, g, ty, order, dims) in [
        (
            "load_rgba8_2d",
            "load_mf",
            3u8,
            1u8,
            2u8,
            8u8,
            [4u32, 4, 0, 0],
        ),
        ("sample_r32f_2d", "sample_mf", 3, 1, 15, 1, [4, 4, 0, 0]),
        ("store_rgba32ui_3d", "store_mf", 1, 2, 13, 8, [2, 2, 2, 0]),
        (
            "atomic_add_r32ui_1d",
            "atomic_add_rtn",
            0,
            0,
            13,
            1,
            [16, 0, 0, 0],
        ),
    ] {
        for cpu in 0..2u8 {
            let selector = super::image::image_kernel_selector(cpu, kernel)
                .unwrap_or_else(|| panic!("no kernel {kernel} for selector {cpu}"));
            let mut v = vec![selector, cpu | 2 << 1 | lanes << 3];
            let mut body = desc(g, 0, ty, order, dims, 0, 0);
            body.resize(32, 0);
            body.extend([0u8; 16]); // S# (replaced by the sampler object)
            for lane in 0..4u32 {
                for c in [lane % 4, lane / 2, 0, 0] {
                    body.extend(c.to_le_bytes());
                }
            }
            for lane in 0..16u32 {
                body.extend((lane * 0x0101_0101).to_le_bytes());
            }
            body.extend((0..1024u32).flat_map(|i| i.wrapping_mul(0x0102_0304).to_le_bytes()));
            // The sampler descriptor bytes are data[40..43]: body bytes 38..41 (normalized,
            // linear, clamp to edge).
            body[38] = 1;
            body[39] = 1;
            body[40] = 1;
            v.extend(body);
            let cpu_name = ["gfx900", "gfx90a"][usize::from(cpu)];
            out.push(("image", format!("{cpu_name}_{name}"), v));
        }
    }

    // ---- drm_ioctl ----
    let mut drm = Vec::new();
    // DRM_IOCTL_VERSION with every buffer in the scratch area (pointer mode 3).
    drm.extend([0u8, 3, 0]);
    let v = DrmVersion {
        name_len: 16,
        name: 0,
        date_len: 16,
        date: 64,
        desc_len: 16,
        desc: 128,
        ..DrmVersion::default()
    };
    drm.extend(v.as_bytes());
    // GET_CLIENT of client 0.
    drm.extend([1u8, 0, 0]);
    drm.extend([0u8; 40]);
    // AMDGPU_INFO DEV_INFO (0x16) into the scratch area.
    drm.extend([2u8, 3, 0]);
    let q = DrmAmdgpuInfo {
        return_pointer: 256,
        return_size: 368,
        query: 0x16,
        data: [0; 4],
    };
    drm.extend(q.as_bytes());
    out.push(("drm_ioctl", "libdrm_queries".into(), drm));
    out
}
