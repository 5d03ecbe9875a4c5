//! Images and samplers (the HSA image extension, `hsa_ext_image.h`, HSA Runtime Programmer's
//! Reference Manual 1.2 §3.3 "Images and Samplers"; ROCR's `hsa_amd_image_create`) on gfx9
//! GPU agents other than gfx94x (ROCR reports no image support there either): [`Images`].
//!
//! - **Formats, layout, descriptors and texel math** are [`hsa_core::image`]'s: every image is
//!   linear, rows padded to 256 bytes, so the opaque layout and the linear one are the same
//!   memory order (an application may read an image it made with either).
//! - **Handles.** An image handle is the address of its 48-byte image object (the T#, or V#
//!   for 1DB, then channel type, channel order and width), a sampler handle that of its
//!   32-byte sampler object (the S#), as in ROCR: a kernel takes the handle as its image or
//!   sampler argument, and ROCclr copies the descriptors from it for HIP's texture objects. The
//!   objects are in system memory (the CPU agent's kernarg pool), which every agent reaches and
//!   whose host and device addresses agree.
//! - **Import, export, copy and clear** run on the host, synchronously as the extension
//!   specifies, through [`HostMemory::copy_bytes`]: the image's memory must be host-reachable
//!   (system memory, or device memory the host maps, as the emulated device's is); device
//!   memory the host cannot map is refused with `INVALID_ARGUMENT` naming the range (ROCR runs
//!   blit kernels there). Regions are in region coordinates ([`hsa_core::image::region`]: a 1DA
//!   image's y is its layer). Copies may mix geometries (a 2D block into a slice of a 3D
//!   image). An image whose texels would run past the runtime allocation its memory starts in
//!   is refused at creation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hsa_core::image::region::{
    check_region, clear_texel, copy_compatible, memory_end, memory_pitches, region_dims,
    texel_address, Region,
};
use hsa_core::image::{self, Descriptor, Geometry, Layout, SamplerDescriptor, IMAGE_OBJECT_DWORDS};
use hsa_core::memory::GlobalFlags;
use hsa_core::platform::Platform;
use hsa_core::runtime::host_memory::HostMemory;
use hsa_core::runtime::{Agent, AgentHandle, Runtime};
use hsa_core::{bail, error, Error, GpuVa, Status};

use crate::lock;

/// An image: the address of its image object, what a kernel takes as its image argument
/// (`hsa_ext_image_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageHandle(pub u64);

/// A sampler: the address of its sampler object, a kernel's sampler argument
/// (`hsa_ext_sampler_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SamplerHandle(pub u64);

/// What the runtime keeps of one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    /// The agent it was made for.
    pub agent: AgentHandle,
    /// Its geometry, size and format.
    pub desc: Descriptor,
    /// Its memory's layout.
    pub layout: Layout,
    /// Device address of its memory.
    pub data: u64,
}

/// The T# words another driver laid out, with ROCR's `metadata_amd_t` head
/// (`hsa_amd_image_descriptor_t`: version 1, then `0x1002 << 16 | chip id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForeignLayout {
    /// Must be 1.
    pub version: u32,
    /// `0x1002 << 16 | HSA_AMD_AGENT_INFO_CHIP_ID`.
    pub device_id: u32,
    /// The T# words.
    pub words: [u32; 8],
}

/// Whether `agent` provides the image extension: gfx9 GPUs other than gfx94x (ROCR 5.2's image
/// library covers gfx9 to gfx11; this runtime writes gfx9 descriptors only, and ROCR reports
/// no image support on gfx94x).
pub fn agent_has_images(agent: &Agent) -> bool {
    let Some(v) = agent.isa().and_then(|t| t.processor.gfx_target_version()) else {
        return false;
    };
    agent.is_gpu() && v / 10000 == 9 && (v / 100) % 100 != 4
}

/// The access capability mask of `format` in `geometry` on `agent` (read-only 1, write-only 2,
/// read-write 4; `hsa_ext_image_get_capability`), 0 when unsupported (always on CPU agents and
/// on GPUs without images).
pub fn capability(agent: &Agent, geometry: Geometry, format: image::Format) -> u32 {
    if !agent_has_images(agent) {
        return 0;
    }
    image::format_info(format, geometry).map_or(0, |i| i.capability)
}

/// The layout of an image of `desc` on `agent`; `pitches` are the application's linear-layout
/// row and slice pitches, bytes (`None`: the opaque layout; a row pitch of 0 means the width
/// times the element size, as the extension defines it; `hsa_ext_image_data_get_info*`).
///
/// # Errors
/// `HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED` on an agent without images; the
/// statuses of [`hsa_core::image::layout`].
pub fn data_layout(
    agent: &Agent,
    desc: &Descriptor,
    pitches: Option<(u64, u64)>,
) -> Result<Layout, Error> {
    if !agent_has_images(agent) {
        bail!(
            Status::ImageFormatUnsupported,
            "agent {} has no image support in this runtime (gfx9 other than gfx94x only)",
            agent.name()
        );
    }
    let (row, slice) = match pitches {
        None => (0, 0),
        Some((0, slice)) => {
            let e = image::format_info(desc.format, desc.geometry).map_or(0, |i| i.element_bytes);
            (desc.width.saturating_mul(u64::from(e)), slice)
        }
        Some(p) => p,
    };
    image::layout(desc, row, slice)
}

/// The images and samplers of one runtime, by handle (module docs). Every method may be
/// called from any thread.
pub struct Images<P: Platform + 'static> {
    rt: Arc<Runtime<Arc<P>>>,
    host: Arc<HostMemory>,
    images: Mutex<HashMap<u64, Image>>,
    samplers: Mutex<HashMap<u64, AgentHandle>>,
}

impl<P: Platform + 'static> std::fmt::Debug for Images<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Images")
            .field("images", &lock(&self.images).len())
            .field("samplers", &lock(&self.samplers).len())
            .finish_non_exhaustive()
    }
}

impl<P: Platform + 'static> Images<P> {
    /// No image or sampler yet; copies reach memory through `host`.
    pub fn new(rt: Arc<Runtime<Arc<P>>>, host: Arc<HostMemory>) -> Images<P> {
        Images {
            rt,
            host,
            images: Mutex::new(HashMap::new()),
            samplers: Mutex::new(HashMap::new()),
        }
    }

    /// Allocates an object of `words` in system memory (the first CPU agent's kernarg pool)
    /// and writes them; its address.
    fn new_object(&self, words: &[u32]) -> Result<u64, Error> {
        let rt = &self.rt;
        let cpu = rt
            .agents()
            .iter()
            .find(|a| !a.is_gpu())
            .ok_or_else(|| error!(Status::OutOfResources, "no CPU agent for image objects"))?;
        let pool = rt
            .find_pool(cpu.handle(), GlobalFlags::KERNARG)
            .ok_or_else(|| error!(Status::OutOfResources, "no kernarg pool for image objects"))?;
        let a = rt.allocate(pool.handle(), (words.len() * 4) as u64)?;
        let Some(host) = a.host_ptr else {
            let _ = rt.free(a.va);
            bail!(
                Status::OutOfResources,
                "the kernarg pool's memory at {:#x} has no host mapping",
                a.va.0
            );
        };
        // SAFETY: the allocation holds at least words.len() * 4 bytes, host-mapped at `host`,
        // aligned to the pool's alignment (at least 16 bytes); nothing else uses it yet.
        unsafe {
            std::ptr::copy_nonoverlapping(words.as_ptr(), host.as_ptr().cast::<u32>(), words.len())
        };
        Ok(a.va.0)
    }

    /// Refuses an image whose memory would wrap the address space, or whose texels would run
    /// past the runtime allocation its memory starts in (the last texel ends
    /// `(slices - 1) * slice_pitch + (rows - 1) * row_pitch + width * element bytes` after
    /// `data`): the host copies would otherwise write past it. Memory the runtime did not
    /// allocate is the application's to size.
    fn check_extent(&self, data: u64, d: &Descriptor, l: &Layout) -> Result<(), Error> {
        if data.checked_add(l.size).is_none() {
            bail!(
                Status::InvalidArgument,
                "image_data {data:#x} + {} bytes runs past the end of the address space",
                l.size
            );
        }
        let Ok(info) = self.rt.pointer_info(GpuVa(data)) else {
            return Ok(());
        };
        let a = info.allocation;
        let extent = (l.slices - 1) * l.slice_pitch
            + (l.rows - 1) * l.row_pitch
            + d.width * u64::from(l.info.element_bytes);
        let offset = data - a.va.0;
        if offset + extent > a.size_bytes {
            bail!(
                Status::InvalidArgument,
                "image_data {data:#x}: the image's {extent} bytes run past its allocation \
                 ({:#x}, {} bytes)",
                a.va.0,
                a.size_bytes
            );
        }
        Ok(())
    }

    /// Makes the object of `image` from `words` and records it.
    fn register(
        &self,
        image: Image,
        words: &[u32; IMAGE_OBJECT_DWORDS],
    ) -> Result<ImageHandle, Error> {
        let handle = self.new_object(words)?;
        lock(&self.images).insert(handle, image);
        Ok(ImageHandle(handle))
    }

    /// An image of `desc` over the memory at `data` for `agent` (`hsa_ext_image_create`, and
    /// `_with_layout` with the application's `pitches`: see [`data_layout`]); `data` holds at
    /// least the layout's size, aligned to its alignment.
    ///
    /// # Errors
    /// The statuses of [`data_layout`]; `Status::InvalidArgument` for `data` not aligned to
    /// the layout's alignment or inside a runtime allocation the image's texels would run
    /// past; `Status::OutOfResources` when the object cannot be allocated.
    pub fn create(
        &self,
        agent: &Agent,
        desc: &Descriptor,
        data: u64,
        pitches: Option<(u64, u64)>,
    ) -> Result<ImageHandle, Error> {
        let l = data_layout(agent, desc, pitches)?;
        if data % l.alignment != 0 {
            bail!(
                Status::InvalidArgument,
                "image_data {data:#x} is not aligned to the image's {} bytes",
                l.alignment
            );
        }
        self.check_extent(data, desc, &l)?;
        let image = Image {
            agent: agent.handle(),
            desc: *desc,
            layout: l,
            data,
        };
        self.register(image, &image::image_object(desc, &l, data))
    }

    /// An image over memory another driver laid out (graphics interop,
    /// `hsa_amd_image_create`), described by the T# words in `foreign`. This runtime takes
    /// only linear layouts (`SW_MODE` 0) without compression metadata; its T# keeps the
    /// layout's size, pitch and levels and gets the base address, format and channel selects
    /// of `desc`, as ROCR patches them.
    ///
    /// # Errors
    /// `Status::InvalidAllocation` for `data` not 256-byte aligned; `Status::InvalidArgument`
    /// for a 1DB geometry or `data` inside a runtime allocation the image's rows (at the
    /// layout's PITCH) would run past; `HSA_EXT_STATUS_ERROR_IMAGE_FORMAT_UNSUPPORTED` for a
    /// version other than 1, another device's id, a swizzled or compressed layout, a PITCH
    /// below the width, or an unsupported format; `Status::OutOfResources`.
    pub fn create_from_layout(
        &self,
        agent: &Agent,
        desc: &Descriptor,
        foreign: &ForeignLayout,
        data: u64,
    ) -> Result<ImageHandle, Error> {
        if data % image::IMAGE_ALIGNMENT != 0 {
            bail!(
                Status::InvalidAllocation,
                "image_data {data:#x} is not 256-byte aligned"
            );
        }
        if desc.geometry == Geometry::D1Buffer {
            bail!(
                Status::InvalidArgument,
                "a 1DB image has no T# layout to import"
            );
        }
        if foreign.version != 1 {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout version {} is not 1",
                foreign.version
            );
        }
        let id = 0x1002 << 16 | agent.chip_id();
        if foreign.device_id != id {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout is for device {:#x}, not this agent's {id:#x}",
                foreign.device_id
            );
        }
        let w = foreign.words;
        let sw_mode = (w[3] >> 20) & 0x1f;
        let compressed = (w[6] >> 21) & 1 != 0 || w[7] != 0;
        if sw_mode != 0 || compressed {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout has swizzle mode {sw_mode}{}: only linear, uncompressed layouts \
                 are supported",
                if compressed {
                    " with compression metadata"
                } else {
                    ""
                }
            );
        }
        // The layout this runtime would give, for the format's checks and the host copies.
        let mut l = data_layout(agent, desc, None)?;
        let e = u64::from(l.info.element_bytes);
        let pitch_texels = u64::from((w[4] >> 13) & 0xffff) + 1;
        if pitch_texels < desc.width {
            bail!(
                Status::ImageFormatUnsupported,
                "image layout's PITCH of {pitch_texels} texels is below the width {}",
                desc.width
            );
        }
        l.row_pitch = pitch_texels * e;
        l.slice_pitch = l.row_pitch * l.rows;
        l.size = l.slice_pitch * l.slices;
        self.check_extent(data, desc, &l)?;
        let ours = image::image_object(desc, &l, data);
        let mut words = [0u32; IMAGE_OBJECT_DWORDS];
        words[..8].copy_from_slice(&w);
        words[0] = ours[0];
        // BASE_ADDRESS_HI, DATA_FORMAT, NUM_FORMAT.
        words[1] =
            (w[1] & !(0xff | 0x3f << 20 | 0xf << 26)) | (ours[1] & (0xff | 0x3f << 20 | 0xf << 26));
        // DST_SEL_X..W, TYPE.
        words[3] = (w[3] & !(0xfff | 0xf << 28)) | (ours[3] & (0xfff | 0xf << 28));
        words[8..].copy_from_slice(&ours[8..]);
        let image = Image {
            agent: agent.handle(),
            desc: *desc,
            layout: l,
            data,
        };
        self.register(image, &words)
    }

    /// The image of `handle`.
    ///
    /// # Errors
    /// `Status::InvalidArgument` naming `what` when it is not a live image.
    pub fn image(&self, handle: ImageHandle, what: &str) -> Result<Image, Error> {
        lock(&self.images).get(&handle.0).copied().ok_or_else(|| {
            error!(
                Status::InvalidArgument,
                "{what} {:#x} is not a live image", handle.0
            )
        })
    }

    /// Forgets the image and frees its object (not its memory, which is the application's;
    /// `hsa_ext_image_destroy`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when `handle` is not a live image; the pool's error.
    pub fn destroy(&self, handle: ImageHandle) -> Result<(), Error> {
        if lock(&self.images).remove(&handle.0).is_none() {
            bail!(
                Status::InvalidArgument,
                "image {:#x} is not a live image",
                handle.0
            );
        }
        self.rt.free(GpuVa(handle.0))
    }

    /// Copies rows between a region of `img` and linear memory at `memory` (`row`/`slice`
    /// bytes apart); `to_image` chooses the direction.
    ///
    /// # Safety
    /// Outside the runtime's allocations and locks, the linear memory holds the region.
    unsafe fn copy_rows(
        &self,
        img: &Image,
        region: &Region,
        memory: u64,
        row: u64,
        slice: u64,
        to_image: bool,
    ) -> Result<(), Error> {
        let e = u64::from(img.layout.info.element_bytes);
        let row_bytes = u64::from(region.range[0]) * e;
        for z in 0..u64::from(region.range[2]) {
            for y in 0..u64::from(region.range[1]) {
                let at = texel_address(
                    img.data,
                    &img.desc,
                    &img.layout,
                    u64::from(region.offset[0]),
                    u64::from(region.offset[1]) + y,
                    u64::from(region.offset[2]) + z,
                );
                let m = memory + z * slice + y * row;
                let (dst, src) = if to_image { (at, m) } else { (m, at) };
                // SAFETY: the image's rows are inside its memory (checked at creation and by
                // check_region); the linear memory per this function's contract.
                unsafe {
                    self.host
                        .copy_bytes(&self.rt, dst, src, row_bytes as usize)?
                };
            }
        }
        Ok(())
    }

    /// Copies `region` between image `handle` and linear memory at `memory` with the
    /// application's pitches (a pitch below the region's row or slice, 0 included, is the
    /// tight one, as the header says), now: `hsa_ext_image_import` (`to_image`) and
    /// `hsa_ext_image_export`. `names` are the memory's and the image's argument names, for
    /// errors.
    ///
    /// # Safety
    /// Outside the runtime's allocations and locks, `memory` holds the region at its pitches.
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a dead image, a region outside it or empty, memory whose
    /// last byte would wrap the address space, or image memory the host cannot reach.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn transfer(
        &self,
        handle: ImageHandle,
        memory: u64,
        row_pitch: u64,
        slice_pitch: u64,
        region: &Region,
        to_image: bool,
        names: (&str, &str),
    ) -> Result<(), Error> {
        let (mem_name, img_name) = names;
        let img = self.image(handle, img_name)?;
        check_region(
            &img.desc,
            &img.layout,
            region.offset,
            region.range,
            img_name,
        )?;
        let (row, slice) =
            memory_pitches(&img.desc, &img.layout, region.range, row_pitch, slice_pitch);
        let need_row = u64::from(region.range[0]) * u64::from(img.layout.info.element_bytes);
        if memory_end(memory, region.range, need_row, row, slice).is_none() {
            bail!(
                Status::InvalidArgument,
                "{mem_name} {memory:#x} with pitches (row {row}, slice {slice} bytes) runs past \
                 the end of the address space"
            );
        }
        // SAFETY: the caller's contract.
        unsafe { self.copy_rows(&img, region, memory, row, slice, to_image) }
    }

    /// Copies `range` texels from `src_offset` in `src` to `dst_offset` in `dst`, now
    /// (`hsa_ext_image_copy`). The geometries may differ (any pair of regions of the same
    /// size, offsets and range in region coordinates). The formats must be the same, except
    /// that sRGBA and RGBA unorm8 mix ([`copy_compatible`]: bytes are copied, not converted).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for dead images, images of different agents or regions
    /// outside them; `Status::IncompatibleArguments` for different formats.
    pub fn copy(
        &self,
        src: ImageHandle,
        src_offset: [u32; 3],
        dst: ImageHandle,
        dst_offset: [u32; 3],
        range: [u32; 3],
    ) -> Result<(), Error> {
        let s = self.image(src, "src_image")?;
        let d = self.image(dst, "dst_image")?;
        if s.agent != d.agent {
            bail!(
                Status::InvalidArgument,
                "src_image and dst_image belong to different agents ({:#x}, {:#x})",
                s.agent.0,
                d.agent.0
            );
        }
        if !copy_compatible(s.desc.format, d.desc.format) {
            bail!(
                Status::IncompatibleArguments,
                "image formats differ: {:?} and {:?}",
                s.desc.format,
                d.desc.format
            );
        }
        check_region(&s.desc, &s.layout, src_offset, range, "src_image")?;
        check_region(&d.desc, &d.layout, dst_offset, range, "dst_image")?;
        let row_bytes = u64::from(range[0]) * u64::from(s.layout.info.element_bytes);
        for z in 0..u64::from(range[2]) {
            for y in 0..u64::from(range[1]) {
                let at = |img: &Image, o: [u32; 3]| {
                    texel_address(
                        img.data,
                        &img.desc,
                        &img.layout,
                        o[0].into(),
                        u64::from(o[1]) + y,
                        u64::from(o[2]) + z,
                    )
                };
                // SAFETY: both rows are inside their images' memory (checked at creation and
                // by check_region above).
                unsafe {
                    self.host.copy_bytes(
                        &self.rt,
                        at(&d, dst_offset),
                        at(&s, src_offset),
                        row_bytes as usize,
                    )?
                };
            }
        }
        Ok(())
    }

    /// Fills `region` of image `handle` with the colour `value` (four `float`s, `int32_t`s or
    /// `uint32_t`s as bits, by the format's channel type; a depth order reads the first),
    /// converted as an image store converts it ([`clear_texel`]), now (`hsa_ext_image_clear`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a dead image, a region outside it, or image memory the
    /// host cannot reach.
    pub fn clear(
        &self,
        handle: ImageHandle,
        value: [u32; 4],
        region: &Region,
    ) -> Result<(), Error> {
        let img = self.image(handle, "image")?;
        check_region(&img.desc, &img.layout, region.offset, region.range, "image")?;
        let e = img.layout.info.element_bytes as usize;
        let texel = clear_texel(img.desc.format, &img.layout, value);
        let row: Vec<u8> = texel[..e]
            .iter()
            .copied()
            .cycle()
            .take(e * region.range[0] as usize)
            .collect();
        // SAFETY: `row` holds one region row, read as a row pitch of 0 for every row.
        unsafe { self.copy_rows(&img, region, row.as_ptr() as u64, 0, 0, true) }
    }

    /// A sampler of `desc` for `agent` (`hsa_ext_sampler_create`).
    ///
    /// # Errors
    /// `Status::InvalidAgent` for an agent without images;
    /// `HSA_EXT_STATUS_ERROR_SAMPLER_DESCRIPTOR_UNSUPPORTED` for modes outside
    /// `hsa_ext_image.h`'s; `Status::OutOfResources`.
    pub fn create_sampler(
        &self,
        agent: &Agent,
        desc: &SamplerDescriptor,
    ) -> Result<SamplerHandle, Error> {
        if !agent_has_images(agent) {
            bail!(
                Status::InvalidAgent,
                "agent {} has no image support in this runtime",
                agent.name()
            );
        }
        let words = image::sampler_object(desc)?;
        let handle = self.new_object(&words)?;
        lock(&self.samplers).insert(handle, agent.handle());
        Ok(SamplerHandle(handle))
    }

    /// Creates a sampler with one addressing mode per axis (`hsa_ext_sampler_create_v2`,
    /// ROCR 7: `address_modes` X, Y, Z; `desc.address_mode` is not used), as
    /// [`Images::create_sampler`].
    ///
    /// # Errors
    /// As [`Images::create_sampler`].
    pub fn create_sampler_per_axis(
        &self,
        agent: &Agent,
        desc: &SamplerDescriptor,
        address_modes: [u32; 3],
    ) -> Result<SamplerHandle, Error> {
        if !agent_has_images(agent) {
            bail!(
                Status::InvalidAgent,
                "agent {} has no image support in this runtime",
                agent.name()
            );
        }
        let words = image::sampler_object_per_axis(desc, address_modes)?;
        let handle = self.new_object(&words)?;
        lock(&self.samplers).insert(handle, agent.handle());
        Ok(SamplerHandle(handle))
    }

    /// Frees the sampler's object (`hsa_ext_sampler_destroy`).
    ///
    /// # Errors
    /// `Status::InvalidArgument` for a handle that is not a live sampler; the pool's error.
    pub fn destroy_sampler(&self, handle: SamplerHandle) -> Result<(), Error> {
        if lock(&self.samplers).remove(&handle.0).is_none() {
            bail!(
                Status::InvalidArgument,
                "sampler {:#x} is not a live sampler",
                handle.0
            );
        }
        self.rt.free(GpuVa(handle.0))
    }

    /// The extent of image `handle` in region coordinates ([`region_dims`]).
    ///
    /// # Errors
    /// `Status::InvalidArgument` when it is not a live image.
    pub fn region_dims(&self, handle: ImageHandle) -> Result<[u64; 3], Error> {
        let img = self.image(handle, "image")?;
        Ok(region_dims(&img.desc, &img.layout))
    }
}
