//! Kernel execution on the emulated device: host implementations registered for a kernel
//! object (the device address of the kernel's descriptor, as a dispatch packet names it), run
//! once per work-group with a [`DispatchContext`] whose every memory access is checked.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use hsa_core::packet_processor::DecodedKernelDispatch;
use hsa_core::{error, Error, GpuVa, Status};
use zerocopy::{FromBytes, Immutable, IntoBytes};

use super::mem::Region;
use super::memory::{Allocs, DeviceSpan, MemoryFault};

/// A host implementation of a kernel: called once per work-group of a dispatch.
pub(crate) type KernelFn = Arc<dyn Fn(&mut DispatchContext<'_>) -> Result<(), Error> + Send + Sync>;

/// One registered host implementation: the label its messages name the kernel by, and the
/// function.
#[derive(Clone)]
pub(crate) struct HostKernel {
    pub(crate) label: String,
    pub(crate) run: KernelFn,
}

/// Host implementations by kernel object.
#[derive(Default)]
pub(crate) struct Kernels {
    pub(crate) by_object: HashMap<u64, HostKernel>,
}

impl Kernels {
    /// The label of the kernel at `kernel_object`: its registration's, else
    /// `kernel object 0x...`.
    pub(crate) fn label(&self, kernel_object: GpuVa) -> String {
        match self.by_object.get(&kernel_object.0) {
            Some(k) => format!("kernel {}", k.label),
            None => format!("kernel object {:#x}", kernel_object.0),
        }
    }

    /// The implementation registered for `kernel_object`.
    ///
    /// # Errors
    /// [`Status::InvalidPacketFormat`] naming the object and the registered kernels when there
    /// is none.
    pub(crate) fn lookup(&self, kernel_object: GpuVa) -> Result<HostKernel, Error> {
        if let Some(k) = self.by_object.get(&kernel_object.0) {
            return Ok(k.clone());
        }
        let mut known: Vec<(u64, &str)> = self
            .by_object
            .iter()
            .map(|(o, k)| (*o, k.label.as_str()))
            .collect();
        known.sort_unstable();
        let known: Vec<String> = known
            .iter()
            .map(|(o, l)| format!("{l} at {o:#x}"))
            .collect();
        let known = if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        };
        Err(error!(
            Status::InvalidPacketFormat,
            "kernel object {:#x} has no host implementation on the emulated device (registered: \
             {known})",
            kernel_object.0
        ))
    }
}

/// What a host kernel implementation sees of one work-group of a dispatch: the packet's sizes,
/// the kernarg segment and device memory, each access checked against the live allocations
/// mapped to the GPU (a bad pointer is a [`Status::MemoryFault`] error, never a crash).
///
/// Work-groups of a dispatch run one after another in x, then y, then z order on the queue's
/// processor thread. Sizes are in work-items; addresses are GPU virtual addresses.
pub struct DispatchContext<'a> {
    dispatch: &'a DecodedKernelDispatch,
    allocs: &'a Allocs,
    gpu_id: u32,
    workgroup_id: [u32; 3],
    group_segment: Vec<u8>,
    borrowed: Option<Region>,
    /// The first access that faulted (the device's memory event reports it).
    fault: &'a Cell<Option<MemoryFault>>,
}

impl std::fmt::Debug for DispatchContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchContext")
            .field("dispatch", self.dispatch)
            .field("gpu_id", &self.gpu_id)
            .field("workgroup_id", &self.workgroup_id)
            .finish()
    }
}

impl<'a> DispatchContext<'a> {
    /// Grid dimensions, 1 to 3 (the packet's `setup`).
    pub fn dimensions(&self) -> u8 {
        self.dispatch.dimensions
    }

    /// Grid size in work-items, x/y/z (unused dimensions are 1).
    pub fn grid_size(&self) -> [u32; 3] {
        self.dispatch.grid_size
    }

    /// Work-group size in work-items, x/y/z, as in the packet.
    pub fn workgroup_size(&self) -> [u16; 3] {
        self.dispatch.workgroup_size
    }

    /// Number of work-groups in each dimension: `ceil(grid / workgroup)` (the last group of a
    /// dimension may be partial, HSA PSA §2.4).
    pub fn workgroup_count(&self) -> [u32; 3] {
        workgroup_count(self.dispatch)
    }

    /// This work-group's id, x/y/z.
    pub fn workgroup_id(&self) -> [u32; 3] {
        self.workgroup_id
    }

    /// The global ids (x, y, z) of this work-group's work-items, x fastest; partial groups at
    /// the grid's edge yield only the work-items inside the grid.
    pub fn work_items(&self) -> impl Iterator<Item = [u32; 3]> {
        let wg = self.dispatch.workgroup_size.map(u32::from);
        let grid = self.dispatch.grid_size;
        let base: [u32; 3] = std::array::from_fn(|i| self.workgroup_id[i].saturating_mul(wg[i]));
        let end: [u32; 3] = std::array::from_fn(|i| base[i].saturating_add(wg[i]).min(grid[i]));
        (base[2]..end[2]).flat_map(move |z| {
            (base[1]..end[1]).flat_map(move |y| (base[0]..end[0]).map(move |x| [x, y, z]))
        })
    }

    /// Group segment (LDS) size of the dispatch, bytes.
    pub fn group_segment_size_bytes(&self) -> u32 {
        self.dispatch.group_segment_size_bytes
    }

    /// Private segment size per work-item, bytes.
    pub fn private_segment_size_bytes(&self) -> u32 {
        self.dispatch.private_segment_size_bytes
    }

    /// This work-group's group segment: `group_segment_size_bytes` zeroed bytes, fresh for
    /// every work-group.
    pub fn group_segment(&mut self) -> &mut [u8] {
        &mut self.group_segment
    }

    /// The kernel object (address of the kernel descriptor).
    pub fn kernel_object(&self) -> GpuVa {
        self.dispatch.kernel_object
    }

    /// The kernarg segment's address.
    pub fn kernarg_address(&self) -> GpuVa {
        self.dispatch.kernarg_address
    }

    /// `len` bytes of the kernarg segment from byte `offset` (they may cross from one
    /// allocation into the adjacent one).
    ///
    /// # Errors
    /// [`Status::MemoryFault`] when a byte of `kernarg_address + offset .. + len` is in no
    /// live allocation mapped to the GPU (the message names the access and that byte).
    pub fn kernarg_bytes(&self, offset: u64, len: usize) -> Result<Vec<u8>, Error> {
        let va = self
            .dispatch
            .kernarg_address
            .0
            .checked_add(offset)
            .ok_or_else(|| {
                error!(
                    Status::MemoryFault,
                    "kernarg offset {offset:#x} overflows the address space"
                )
            })?;
        let r = self.span(va, 1, len, "kernarg read")?;
        let mut out = vec![0u8; len];
        r.try_read_into(&mut out)
            .map_err(|f| self.unmapped(va + f.offset, "kernarg read"))?;
        Ok(out)
    }

    /// The little-endian u32 at byte `offset` of the kernarg segment.
    ///
    /// # Errors
    /// As [`DispatchContext::kernarg_bytes`].
    pub fn kernarg_u32(&self, offset: u64) -> Result<u32, Error> {
        let b = self.kernarg_bytes(offset, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The little-endian u64 at byte `offset` of the kernarg segment (a pointer argument).
    ///
    /// # Errors
    /// As [`DispatchContext::kernarg_bytes`].
    pub fn kernarg_u64(&self, offset: u64) -> Result<u64, Error> {
        let b = self.kernarg_bytes(offset, 8)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(&b);
        Ok(u64::from_le_bytes(w))
    }

    /// The bytes of `count` elements of `size` bytes at `addr`, or the error of their
    /// overflowing the address space.
    fn bytes(addr: u64, count: usize, size: usize, what: &str) -> Result<u64, Error> {
        (count as u64).checked_mul(size as u64).ok_or_else(|| {
            error!(
                Status::MemoryFault,
                "{what} of {count} elements at {addr:#x} overflows"
            )
        })
    }

    /// The memory fault of an access (`what`) that reached, at `va`, user memory its owner
    /// unmapped (as a GPU's access to an invalidated userptr buffer object faults), recorded.
    fn unmapped(&self, va: u64, what: &str) -> Error {
        self.record_fault(va, what);
        error!(
            Status::MemoryFault,
            "memory fault on GPU {:#x}: {what} at {va:#x}: user memory that was unmapped",
            self.gpu_id
        )
    }

    /// Records `address` as the dispatch's fault unless one was recorded already.
    fn record_fault(&self, address: u64, what: &str) {
        if self.fault.get().is_none() {
            self.fault.set(Some(MemoryFault::of(address, what)));
        }
    }

    /// The live region of `count` elements of `size` bytes at `addr`, inside one allocation
    /// (a slice into device memory is one host mapping); a fault is recorded at `addr`.
    fn region(&self, addr: u64, count: usize, size: usize, what: &str) -> Result<Region, Error> {
        let len = Self::bytes(addr, count, size, what)?;
        self.allocs
            .device_region_or_fault(self.gpu_id, addr, len, what)
            .inspect_err(|_| self.record_fault(addr, what))
    }

    /// The live memory of `count` elements of `size` bytes at `addr`, which may cross from one
    /// allocation into the adjacent one, as a GPU's access may ([`Allocs::device_span`]); a
    /// fault is recorded at the first byte in no live allocation mapped to the GPU.
    fn span(&self, addr: u64, count: usize, size: usize, what: &str) -> Result<DeviceSpan, Error> {
        let len = Self::bytes(addr, count, size, what)?;
        self.allocs
            .device_span(self.gpu_id, addr, len, what)
            .map_err(|f| {
                self.record_fault(f.address, what);
                f.error
            })
    }

    /// Reads one `T` at device address `addr` (its bytes may cross from one allocation into
    /// the adjacent one, as a GPU's access may).
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the access and its first byte (of the
    /// `size_of::<T>()` at `addr`) that is in no live allocation mapped to the GPU.
    pub fn read<T: FromBytes + IntoBytes>(&self, addr: u64) -> Result<T, Error> {
        let r = self.span(addr, 1, size_of::<T>(), "read")?;
        let mut v = T::new_zeroed();
        r.try_read_into(v.as_mut_bytes())
            .map_err(|f| self.unmapped(addr + f.offset, "read"))?;
        Ok(v)
    }

    /// Writes one `T` at device address `addr` (across allocations as
    /// [`DispatchContext::read`]); nothing is written when a byte faults.
    ///
    /// # Errors
    /// As [`DispatchContext::read`].
    pub fn write<T: IntoBytes + Immutable>(&self, addr: u64, value: T) -> Result<(), Error> {
        let r = self.span(addr, 1, size_of::<T>(), "write")?;
        r.try_write_from(value.as_bytes())
            .map_err(|f| self.unmapped(addr + f.offset, "write"))
    }

    /// Reads `count` consecutive `T` at `addr`.
    ///
    /// # Errors
    /// As [`DispatchContext::read`], for the whole range.
    pub fn read_slice<T: FromBytes + IntoBytes + Clone>(
        &self,
        addr: u64,
        count: usize,
    ) -> Result<Vec<T>, Error> {
        let r = self.span(addr, count, size_of::<T>(), "read")?;
        let mut v = vec![T::new_zeroed(); count];
        r.try_read_into(v.as_mut_slice().as_mut_bytes())
            .map_err(|f| self.unmapped(addr + f.offset, "read"))?;
        Ok(v)
    }

    /// Writes `values` consecutively at `addr`; nothing is written when a byte faults.
    ///
    /// # Errors
    /// As [`DispatchContext::read`], for the whole range.
    pub fn write_slice<T: IntoBytes + Immutable>(
        &self,
        addr: u64,
        values: &[T],
    ) -> Result<(), Error> {
        let r = self.span(addr, values.len(), size_of::<T>(), "write")?;
        r.try_write_from(values.as_bytes())
            .map_err(|f| self.unmapped(addr + f.offset, "write"))
    }

    /// `count` values of `T` at `addr` as a mutable slice into device memory (one borrow at a
    /// time: the slice borrows the context). Other agents and the host may access the same
    /// memory concurrently, as on hardware; use it for memory the dispatch owns. Unlike the
    /// copying accessors, a slice reaches the memory directly: user memory (a `USERPTR`
    /// buffer object) must stay mapped while it is borrowed.
    ///
    /// # Errors
    /// [`Status::MemoryFault`] naming the address when the range is not inside one live
    /// allocation mapped to the GPU (a slice, unlike [`DispatchContext::read_slice`], cannot
    /// cross into the adjacent allocation: it is one host mapping) or `addr` is not aligned
    /// for `T`.
    pub fn memory_slice<T: FromBytes + IntoBytes>(
        &mut self,
        addr: u64,
        count: usize,
    ) -> Result<&mut [T], Error> {
        let r = self.region(addr, count, size_of::<T>(), "access")?;
        self.borrowed = Some(r);
        let slot = self
            .borrowed
            .as_mut()
            .ok_or_else(|| error!(Status::Error, "unreachable"))?;
        slot.as_mut_slice::<T>(count).ok_or_else(|| {
            error!(
                Status::MemoryFault,
                "memory fault: access at {addr:#x} is not aligned to {} bytes",
                align_of::<T>()
            )
        })
    }
}

/// `ceil(grid / workgroup)` per dimension (workgroup sizes are validated non-zero by the
/// processor; a zero is treated as 1).
fn workgroup_count(d: &DecodedKernelDispatch) -> [u32; 3] {
    std::array::from_fn(|i| {
        let wg = u32::from(d.workgroup_size[i].max(1));
        d.grid_size[i].div_ceil(wg)
    })
}

/// Runs `f` for every work-group of `dispatch` on GPU `gpu_id` with `lds_bytes` of LDS. The
/// first access of `f` that faults is recorded in `fault`.
///
/// # Errors
/// [`Status::InvalidPacketFormat`] when the group segment exceeds the LDS; the first error of
/// `f`.
pub(crate) fn run(
    f: &KernelFn,
    name: &str,
    dispatch: &DecodedKernelDispatch,
    allocs: &Allocs,
    gpu_id: u32,
    lds_bytes: u32,
    fault: &Cell<Option<MemoryFault>>,
) -> Result<(), Error> {
    if dispatch.group_segment_size_bytes > lds_bytes {
        return Err(error!(
            Status::InvalidPacketFormat,
            "kernel {name}: group_segment_size {} exceeds the GPU's LDS of {lds_bytes} bytes",
            dispatch.group_segment_size_bytes
        ));
    }
    let counts = workgroup_count(dispatch);
    let mut ctx = DispatchContext {
        dispatch,
        allocs,
        gpu_id,
        workgroup_id: [0; 3],
        group_segment: vec![0; dispatch.group_segment_size_bytes as usize],
        borrowed: None,
        fault,
    };
    for z in 0..counts[2] {
        for y in 0..counts[1] {
            for x in 0..counts[0] {
                ctx.workgroup_id = [x, y, z];
                ctx.group_segment.fill(0);
                ctx.borrowed = None;
                f(&mut ctx).map_err(|e| error!(e.status(), "kernel {name}: {}", e.detail()))?;
            }
        }
    }
    Ok(())
}
