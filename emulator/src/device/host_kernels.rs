//! Host implementations of the project's test kernels (`testdata/codeobjects/kernels.cl`),
//! for the emulated device: what runs in [`ExecutionMode::HostOnly`](super::ExecutionMode),
//! and the fallback of the GFX9 interpreter on GPUs whose ISA it does not run (gfx10+).
//!
//! Each follows its OpenCL C source exactly: the global id is
//! `workgroup_id_x * workgroup_size_x + workitem_id_x`, the work-group size comes from the
//! dispatch packet, grid offsets are ignored, and the kernarg segment holds only the explicit
//! pointer arguments (8 bytes each, at offsets 0, 8, 16). All device memory goes through the
//! [`DispatchContext`]'s checked accessors, so a bad pointer in the kernarg segment becomes a
//! memory fault on the queue, never a crash.

use hsa_core::{error, Error, GpuVa, Status};

use super::{DispatchContext, EmulatedKfd};

/// The kernels [`register_test_kernel`] knows, by kernel name.
pub const TEST_KERNELS: [&str; 3] = ["vector_copy", "vector_add", "local_reverse"];

/// A host implementation: called once per work-group.
pub type HostKernelFn = fn(&mut DispatchContext<'_>) -> Result<(), Error>;

/// The range `[first, first + count)` of global x ids of this work-group inside the grid.
fn items(ctx: &DispatchContext<'_>) -> (u64, usize) {
    let wg = u64::from(ctx.workgroup_size()[0]);
    let first = u64::from(ctx.workgroup_id()[0]) * wg;
    let end = (first + wg).min(u64::from(ctx.grid_size()[0]));
    (first, end.saturating_sub(first) as usize)
}

fn element_address(base: u64, index: u64) -> Result<u64, Error> {
    index
        .checked_mul(4)
        .and_then(|off| base.checked_add(off))
        .ok_or_else(|| {
            error!(
                Status::MemoryFault,
                "memory fault: address {base:#x} + 4 * {index} overflows"
            )
        })
}

/// `out[i] = in[i]`.
fn vector_copy(ctx: &mut DispatchContext<'_>) -> Result<(), Error> {
    let (src, dst) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(8)?);
    let (first, n) = items(ctx);
    let data: Vec<i32> = ctx.read_slice(element_address(src, first)?, n)?;
    ctx.write_slice(element_address(dst, first)?, &data)
}

/// `c[i] = a[i] + b[i]` (32-bit wrapping, as the GPU adds).
fn vector_add(ctx: &mut DispatchContext<'_>) -> Result<(), Error> {
    let (a, b, c) = (
        ctx.kernarg_u64(0)?,
        ctx.kernarg_u64(8)?,
        ctx.kernarg_u64(16)?,
    );
    let (first, n) = items(ctx);
    let x: Vec<i32> = ctx.read_slice(element_address(a, first)?, n)?;
    let y: Vec<i32> = ctx.read_slice(element_address(b, first)?, n)?;
    let sum: Vec<i32> = x.iter().zip(&y).map(|(p, q)| p.wrapping_add(*q)).collect();
    ctx.write_slice(element_address(c, first)?, &sum)
}

/// Each work-group's chunk reversed through LDS: `out[base + lid] = in[base + lsz - 1 - lid]`.
/// The source reads `tile[lsz - 1 - lid]`, which a partial work-group never wrote; that is
/// undefined on hardware, so here it is an error naming the dispatch shape.
fn local_reverse(ctx: &mut DispatchContext<'_>) -> Result<(), Error> {
    let (src, dst) = (ctx.kernarg_u64(0)?, ctx.kernarg_u64(8)?);
    let lsz = usize::from(ctx.workgroup_size()[0]);
    if lsz > 256 {
        return Err(error!(
            Status::InvalidPacketFormat,
            "local_reverse: work-group size {lsz} exceeds its 256-entry LDS tile"
        ));
    }
    if ctx.group_segment_size_bytes() < 1024 {
        return Err(error!(
            Status::InvalidPacketFormat,
            "local_reverse: group segment is {} bytes; the kernel's LDS tile needs 1024",
            ctx.group_segment_size_bytes()
        ));
    }
    let (first, n) = items(ctx);
    if n != lsz {
        return Err(error!(Status::InvalidPacketFormat, "local_reverse: partial work-group of {n} items at {first}; the grid must be a multiple of {lsz}"));
    }
    let tile: Vec<i32> = ctx.read_slice(element_address(src, first)?, n)?;
    let lds = ctx.group_segment();
    for (slot, v) in lds.chunks_exact_mut(4).zip(&tile) {
        slot.copy_from_slice(&v.to_ne_bytes());
    }
    let reversed: Vec<i32> = (0..n)
        .map(|lid| {
            let at = (lsz - 1 - lid) * 4;
            i32::from_ne_bytes([lds[at], lds[at + 1], lds[at + 2], lds[at + 3]])
        })
        .collect();
    ctx.write_slice(element_address(dst, first)?, &reversed)
}

/// The host implementation of the test kernel named `name` (one of [`TEST_KERNELS`], with or
/// without the `.kd` of its descriptor symbol); `None` for another name.
pub fn test_kernel(name: &str) -> Option<HostKernelFn> {
    match name.strip_suffix(".kd").unwrap_or(name) {
        "vector_copy" => Some(vector_copy),
        "vector_add" => Some(vector_add),
        "local_reverse" => Some(local_reverse),
        _ => None,
    }
}

/// Registers the host implementation of the test kernel `name` ([`test_kernel`]) on `device`
/// for the kernel loaded at `kernel_object` (what the executable's symbol lookup returned),
/// labelled `name`. Returns whether `name` is a test kernel (nothing is registered
/// otherwise).
///
/// # Errors
/// As [`EmulatedKfd::register_kernel`]: [`Status::InvalidArgument`] for a kernel object that
/// is not a kernel descriptor's address.
pub fn register_test_kernel(
    device: &EmulatedKfd,
    kernel_object: GpuVa,
    name: &str,
) -> Result<bool, Error> {
    let Some(f) = test_kernel(name) else {
        return Ok(false);
    };
    let label = name.strip_suffix(".kd").unwrap_or(name);
    device.register_kernel(kernel_object, label, f)?;
    Ok(true)
}
