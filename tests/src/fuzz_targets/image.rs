//! Fuzz target bodies for image descriptors: the runtime's `hsa_ext_image` descriptors turned
//! into image and sampler objects (`hsa_core::image`), and the gfx9 interpreter's image
//! resources (T#) and samplers (S#) as the MIMG instructions read them.

use std::cell::RefCell;
use std::sync::OnceLock;

use hsa_core::abi::kernel_descriptor::KernelDescriptor;
use hsa_core::image::{
    image_object, layout, sampler_object, Descriptor, Format, Geometry, SamplerDescriptor,
    IMAGE_ALIGNMENT,
};
use hsa_core::Status;
use hsa_gfx9::exec::{run_dispatch, DeviceMemory, DispatchState, KernelCode};
use hsa_gfx9::Gfx9Target;
use object::{Object, ObjectSection, ObjectSymbol};
use zerocopy::FromBytes;

fn u32_at(data: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    if let Some(s) = data.get(at..) {
        let n = s.len().min(4);
        b[..n].copy_from_slice(&s[..n]);
    }
    u32::from_le_bytes(b)
}

/// T# TYPE of a geometry (Vega ISA §8.2.1 `SQ_RSRC_IMG_*`: 1D 8, 2D 9, 3D 10, 1D array 12,
/// 2D array 13; the depth geometries are 2D images).
fn resource_type(g: Geometry) -> u32 {
    match g {
        Geometry::D1 | Geometry::D1Buffer => 8,
        Geometry::D2 | Geometry::D2Depth => 9,
        Geometry::D3 => 10,
        Geometry::D1Array => 12,
        _ => 13,
    }
}

/// A descriptor from `data` (offsets 0..40): geometry, channel type and order (small values,
/// mostly valid), width, height, depth, array size (16 bits each, or 32 with byte 1's top bit),
/// row and slice pitch (0 or multiples of 256 mostly), and the image's address.
fn descriptor(data: &[u8]) -> (Result<Geometry, hsa_core::Error>, Descriptor, u64, u64, u64) {
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    let geometry = Geometry::from_raw(u32::from(b(0) % 9));
    let wide = b(1) & 0x80 != 0;
    let dim = |i: usize| {
        let v = u64::from(u32_at(data, i));
        if wide {
            v
        } else {
            v & 0xffff
        }
    };
    let pitch = |i: usize| {
        let v = u64::from(u32_at(data, i));
        match b(1) & 3 {
            0 => 0,
            1 => (v & 0x3ff) * IMAGE_ALIGNMENT,
            _ => v,
        }
    };
    let format = Format {
        channel_type: u32::from(b(2) % 18),
        channel_order: u32::from(b(3) % 22),
    };
    let desc = Descriptor {
        geometry: *geometry.as_ref().unwrap_or(&Geometry::D2),
        width: dim(4),
        height: dim(8),
        depth: dim(12),
        array_size: dim(16),
        format,
    };
    let address =
        (u64::from(u32_at(data, 28)) | u64::from(u32_at(data, 32)) << 32) & 0x0000_ffff_ffff_ff00;
    (geometry, desc, pitch(20), pitch(24), address)
}

/// The runtime's image and sampler descriptors ([`layout`], [`image_object`],
/// [`sampler_object`]), as `hsa_ext_image_create_with_layout`, `hsa_ext_image_data_get_info`
/// and `hsa_ext_sampler_create` take them from an application: the descriptor from the first
/// 36 bytes (see `descriptor`), a sampler descriptor from the next three bytes (raw values,
/// mostly valid).
///
/// Property: a refused descriptor is `IMAGE_FORMAT_UNSUPPORTED`, `IMAGE_SIZE_UNSUPPORTED` or
/// `IMAGE_PITCH_UNSUPPORTED` (`INVALID_ARGUMENT` for a geometry outside `hsa_ext_image.h`); an
/// accepted layout holds every texel (row pitch a multiple of 256 covering a row, slices one
/// after another); its image object, decoded here from the Vega ISA's bit positions, gives
/// back the address, width, rows, depth or layers, TYPE and pitch (the V# of a 1DB image its
/// address, stride and size). A refused sampler is `SAMPLER_DESCRIPTOR_UNSUPPORTED`; an
/// accepted one has the same address mode in CLAMP_X/Y/Z and the asked filter and
/// normalization.
pub fn image_descriptor(data: &[u8]) {
    let (geometry, desc, row_pitch, slice_pitch, address) = descriptor(data);
    match geometry {
        Err(e) => assert_eq!(e.status(), Status::InvalidArgument, "{e}"),
        Ok(g) => match layout(&desc, row_pitch, slice_pitch) {
            Err(e) => assert!(
                matches!(
                    e.status(),
                    Status::ImageFormatUnsupported
                        | Status::ImageSizeUnsupported
                        | Status::ImagePitchUnsupported
                ),
                "{e}"
            ),
            Ok(l) => {
                let e = u64::from(l.info.element_bytes);
                assert!(e > 0 && l.row_pitch >= desc.width * e, "{l:?}");
                assert_eq!(l.size % IMAGE_ALIGNMENT, 0, "{l:?}");
                let w = image_object(&desc, &l, address);
                if g == Geometry::D1Buffer {
                    assert_eq!(u64::from(w[0]) | u64::from(w[1] & 0xffff) << 32, address);
                    assert_eq!(u64::from((w[1] >> 16) & 0x3fff), e);
                    assert_eq!(u64::from(w[2]), desc.width * e);
                } else {
                    assert_eq!(l.row_pitch % IMAGE_ALIGNMENT, 0, "{l:?}");
                    assert_eq!(l.slice_pitch, l.row_pitch * l.rows, "{l:?}");
                    assert_eq!(l.size, l.slice_pitch * l.slices, "{l:?}");
                    let base = u64::from(w[0]) << 8 | u64::from(w[1] & 0xff) << 40;
                    assert_eq!(base, address);
                    assert_eq!(u64::from(w[2] & 0x3fff) + 1, desc.width, "{w:x?}");
                    assert_eq!(u64::from((w[2] >> 14) & 0x3fff) + 1, l.rows, "{w:x?}");
                    assert_eq!(w[3] >> 28, resource_type(g), "{w:x?}");
                    assert_eq!((w[3] >> 12) & 0xf, 0, "BASE_LEVEL");
                    assert_eq!((w[3] >> 20) & 0x1f, 0, "SW_MODE linear");
                    let depth = u64::from(w[4] & 0x1fff) + 1;
                    match g {
                        Geometry::D3 => assert_eq!(depth, desc.depth),
                        Geometry::D1Array | Geometry::D2Array | Geometry::D2ArrayDepth => {
                            assert_eq!(depth, desc.array_size)
                        }
                        _ => assert_eq!(depth, 1),
                    }
                    assert_eq!(u64::from((w[4] >> 13) & 0xffff) + 1, l.row_pitch / e);
                    assert_eq!(u64::from(w[10]), desc.width);
                }
            }
        },
    }
    let b = |i: usize| u32::from(data.get(i).copied().unwrap_or(0));
    let sd = SamplerDescriptor {
        coordinate_mode: b(36) % 3,
        filter_mode: b(37) % 3,
        address_mode: b(38) % 6,
    };
    match sampler_object(&sd) {
        Err(e) => assert_eq!(e.status(), Status::SamplerDescriptorUnsupported, "{e}"),
        Ok(s) => {
            let clamp = s[0] & 7;
            assert_eq!((s[0] >> 3) & 7, clamp);
            assert_eq!((s[0] >> 6) & 7, clamp);
            // SQ_TEX_CLAMP: wrap 0, mirror 1, clamp to last texel 2, clamp to border 6.
            let want = match sd.address_mode {
                0 | 3 => 0,
                1 => 2,
                2 => 6,
                _ => 1,
            };
            assert_eq!(clamp, want, "{sd:?}");
            assert_eq!((s[0] >> 15) & 1, u32::from(sd.coordinate_mode == 0));
            assert_eq!((s[2] >> 20) & 3, sd.filter_mode);
            assert_eq!((s[2] >> 22) & 3, sd.filter_mode);
        }
    }
}

/// One assembled `testdata/codeobjects/isa/image-<cpu>` code object: its `.text`, where it is
/// loaded, and its kernels (name order) with descriptor and entry.
struct ImageKernels {
    target: Gfx9Target,
    text: Vec<u8>,
    text_address: u64,
    kernels: Vec<(String, KernelDescriptor, u64)>,
}

/// Where the [`image`] target loads the code objects.
const IMAGE_LOAD_BASE: u64 = 0x7000_0000_0000;
/// The kernarg segment of the [`image`] target's dispatch.
const IMAGE_KERNARG: u64 = 0x2000;

/// Where pointer argument `i` of the image kernels points.
const fn image_buf(i: usize) -> u64 {
    0x10_0000 * (i as u64 + 1)
}

fn image_kernels() -> &'static [ImageKernels; 2] {
    static KERNELS: OnceLock<[ImageKernels; 2]> = OnceLock::new();
    KERNELS.get_or_init(|| {
        let load = |bytes: &[u8], target| {
            let aligned = hsa_core::loader::code_object::AlignedBytes::new(bytes);
            let elf = object::File::parse(aligned.as_bytes()).expect("an assembled code object");
            let text = elf.section_by_name(".text").expect(".text");
            let mut kernels = Vec::new();
            for sym in elf.symbols() {
                let Some(name) = sym.name().ok().and_then(|n| n.strip_suffix(".kd")) else {
                    continue;
                };
                let sec = elf
                    .section_by_index(sym.section_index().expect("in a section"))
                    .expect("its section");
                let off = (sym.address() - sec.address()) as usize;
                let data = sec.data().expect("descriptor bytes");
                let kd = KernelDescriptor::read_from_bytes(&data[off..off + 64]).expect("64 bytes");
                let entry = (IMAGE_LOAD_BASE + sym.address())
                    .wrapping_add(kd.kernel_code_entry_byte_offset as u64);
                kernels.push((name.to_owned(), kd, entry));
            }
            kernels.sort_by(|a, b| a.0.cmp(&b.0));
            ImageKernels {
                target,
                text: text.data().expect(".text bytes").to_vec(),
                text_address: IMAGE_LOAD_BASE + text.address(),
                kernels,
            }
        };
        [
            load(
                include_bytes!("../../../testdata/codeobjects/isa/image-gfx900.hsaco"),
                Gfx9Target::Gfx900,
            ),
            load(
                include_bytes!("../../../testdata/codeobjects/isa/image-gfx90a.hsaco"),
                Gfx9Target::Gfx90a,
            ),
        ]
    })
}

/// A flat device memory of a few allocations (kernarg, the kernels' buffers), every access
/// bounds-checked.
struct FlatMemory(RefCell<Vec<(u64, Vec<u8>)>>);

impl FlatMemory {
    fn find<R>(&self, addr: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let mut allocs = self.0.borrow_mut();
        for (base, bytes) in allocs.iter_mut() {
            let end = addr.checked_add(len as u64)?;
            if addr >= *base && end <= *base + bytes.len() as u64 {
                let o = (addr - *base) as usize;
                return Some(f(&mut bytes[o..o + len]));
            }
        }
        None
    }
}

impl DeviceMemory for FlatMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> hsa_core::Result<()> {
        self.find(addr, buf.len(), |m| buf.copy_from_slice(m))
            .ok_or_else(|| {
                hsa_core::error!(
                    Status::MemoryFault,
                    "read of {} bytes at {addr:#x}",
                    buf.len()
                )
            })
    }

    /// A fixed clock: the image kernels read none, and a fuzz run must not depend on time.
    fn clock_counter(&self) -> u64 {
        0x1234_5678
    }

    fn write(&self, addr: u64, data: &[u8]) -> hsa_core::Result<()> {
        self.find(addr, data.len(), |m| m.copy_from_slice(data))
            .ok_or_else(|| {
                hsa_core::error!(
                    Status::MemoryFault,
                    "write of {} bytes at {addr:#x}",
                    data.len()
                )
            })
    }
}

/// The [`image`] target's kernel selector (byte 0) of kernel `name` in the code object of
/// selector bit `cpu` (0 gfx900, 1 gfx90a); `None` when it has no such kernel.
pub fn image_kernel_selector(cpu: u8, name: &str) -> Option<u8> {
    let set = &image_kernels()[usize::from(cpu & 1)];
    set.kernels
        .iter()
        .position(|(n, _, _)| n == name)
        .and_then(|i| u8::try_from(i).ok())
}

/// Bytes of the texels the [`image`] target's images read and write (pointer argument 5).
const IMAGE_TEXEL_BYTES: usize = 4096;

/// The gfx9 interpreter's MIMG instructions on fuzzed image resources (T#) and samplers (S#):
/// one dispatch of a kernel of `testdata/codeobjects/isa/image-<cpu>` (`gen.py`'s image
/// family: loads, stores, mip loads and stores, samples, resinfo, atomics, d16/a16/tfe forms;
/// the T# in argument 0, the S# in 1, each lane's address in 2 and data in 3, results in 4,
/// texels in 5). Byte 0 picks the kernel; byte 1: bit 0 the code object (gfx900 or gfx90a),
/// bits 1..3 the T#'s origin (0 raw; 1 raw with its base on the texels; 2 and 3 the runtime's
/// image object of the descriptor in bytes 2..38 (see `image_descriptor`) placed on the
/// texels, with its sampler object, where the runtime accepts them, else raw), bits 3..5 the
/// lanes (1..4). Then 32 bytes of T#, 16 of S#, 64 of lane addresses, 64 of lane data, and the
/// texels (up to 4096 bytes).
///
/// Property: a dispatch that fails, fails with `IllegalInstruction` (the interpreter's refusal
/// of a descriptor field it does not emulate) or `MemoryFault` (an access outside the
/// allocations); no panic.
pub fn image(data: &[u8]) {
    let b = |i: usize| data.get(i).copied().unwrap_or(0);
    let set = &image_kernels()[usize::from(b(1) & 1)];
    let Some((_, kd, entry)) = set.kernels.get(usize::from(b(0)) % set.kernels.len()) else {
        return;
    };
    let origin = (b(1) >> 1) & 3;
    let lanes = u32::from((b(1) >> 3) & 3) + 1;
    let body = data.get(2..).unwrap_or(&[]);
    let mut t: [u32; 8] = std::array::from_fn(|k| u32_at(body, 4 * k));
    let mut s: [u32; 4] = std::array::from_fn(|k| u32_at(body, 32 + 4 * k));
    let texels_at = image_buf(5);
    if origin == 1 {
        t[0] = (texels_at >> 8) as u32;
        t[1] = (t[1] & !0xff) | (texels_at >> 40) as u32 & 0xff;
    } else if origin >= 2 {
        let (geometry, desc, rp, sp, _) = descriptor(body);
        if let (Ok(_), Ok(l)) = (geometry, layout(&desc, rp, sp)) {
            let w = image_object(&desc, &l, texels_at);
            t.copy_from_slice(&w[..8]);
        }
        let sd = SamplerDescriptor {
            coordinate_mode: u32::from(b(40) % 2),
            filter_mode: u32::from(b(41) % 2),
            address_mode: u32::from(b(42) % 5),
        };
        if let Ok(w) = sampler_object(&sd) {
            s.copy_from_slice(&w[..4]);
        }
    }
    let lane_bytes = |at: usize| -> Vec<u8> {
        let mut v = body.get(at..).unwrap_or(&[]).to_vec();
        v.resize(64, 0);
        v.truncate(64);
        v
    };
    let mut texels = body.get(48 + 128..).unwrap_or(&[]).to_vec();
    texels.truncate(IMAGE_TEXEL_BYTES);
    texels.resize(IMAGE_TEXEL_BYTES, 0);
    let mem = FlatMemory(RefCell::new(Vec::new()));
    let mut args = Vec::new();
    for i in 0..8 {
        args.extend_from_slice(&image_buf(i).to_le_bytes());
    }
    let words = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    {
        let mut m = mem.0.borrow_mut();
        m.push((IMAGE_KERNARG, args));
        m.push((image_buf(0), words(&t)));
        m.push((image_buf(1), words(&s)));
        m.push((image_buf(2), lane_bytes(48)));
        m.push((image_buf(3), lane_bytes(112)));
        m.push((image_buf(4), vec![0; 64]));
        m.push((texels_at, texels));
    }
    let code = KernelCode {
        base_address: set.text_address,
        bytes: &set.text,
        entry_address: *entry,
    };
    let mut st = DispatchState::one_dimensional(lanes, 64, 0, IMAGE_KERNARG);
    st.group_segment_size = kd.group_segment_fixed_size;
    st.private_segment_size = kd.private_segment_fixed_size;
    if let Err(e) = run_dispatch(&code, kd, set.target, &st, &mem) {
        assert!(
            matches!(e.status(), Status::IllegalInstruction | Status::MemoryFault),
            "{e}"
        );
    }
}
