//! The code object metadata: the MessagePack map in the `NT_AMDGPU_METADATA` note, read
//! lazily and without allocation.
//!
//! Ref: LLVM AMDGPUUsage, "Code Object V3 Metadata" (map keys `amdhsa.version`,
//! `amdhsa.target`, `amdhsa.kernels`; kernel keys `.name`, `.symbol`, `.kernarg_segment_size`,
//! ...), "Code Object V4 Metadata", "Code Object V5 Metadata" (`.uses_dynamic_stack`).

use super::msgpack::{self, Array, ArrayIter, Map, Value};
use crate::status::{Error, Result, Status};

/// The decoded top-level metadata map.
#[derive(Clone, Copy, Debug)]
pub struct Metadata<'a> {
    /// `amdhsa.version`: `[major, minor]` (`[1, 1]` = code object v4, `[1, 2]` = v5 and v6).
    pub version: [u64; 2],
    /// `amdhsa.target`: the full target triple and id, e.g.
    /// `"amdgcn-amd-amdhsa--gfx90a:xnack-"`; `None` when absent.
    pub target: Option<&'a str>,
    kernels: Option<Array<'a>>,
}

fn bad(field: &str, what: &str) -> Error {
    crate::error!(Status::InvalidCodeObject, "metadata {field}: {what}")
}

fn kbad(kernel: &str, field: &str, what: &str) -> Error {
    crate::error!(
        Status::InvalidCodeObject,
        "metadata of kernel {kernel:?}: {field} {what}"
    )
}

impl<'a> Metadata<'a> {
    /// Reads the note's descriptor bytes.
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` naming the field when the bytes are not one MessagePack
    /// map, `amdhsa.version` is missing or not two integers, `amdhsa.target` is not a string
    /// or `amdhsa.kernels` not an array.
    pub fn parse(desc: &'a [u8]) -> Result<Metadata<'a>> {
        let (value, _rest) = msgpack::decode(desc)?;
        let map = value.as_map().ok_or_else(|| bad("root", "is not a map"))?;
        let version = map
            .get("amdhsa.version")?
            .ok_or_else(|| bad("amdhsa.version", "is missing"))?;
        let version = version
            .as_array()
            .ok_or_else(|| bad("amdhsa.version", "is not an array"))?;
        let mut v = [0u64; 2];
        if version.len() != 2 {
            return Err(crate::error!(
                Status::InvalidCodeObject,
                "metadata amdhsa.version has {} elements, expected 2",
                version.len()
            ));
        }
        for (slot, item) in v.iter_mut().zip(version.iter()) {
            *slot = item?
                .as_u64()
                .ok_or_else(|| bad("amdhsa.version", "element is not an unsigned integer"))?;
        }
        let target = match map.get("amdhsa.target")? {
            None => None,
            Some(t) => Some(
                t.as_str()
                    .ok_or_else(|| bad("amdhsa.target", "is not a string"))?,
            ),
        };
        let kernels = match map.get("amdhsa.kernels")? {
            None => None,
            Some(k) => Some(
                k.as_array()
                    .ok_or_else(|| bad("amdhsa.kernels", "is not an array"))?,
            ),
        };
        Ok(Metadata {
            version: v,
            target,
            kernels,
        })
    }

    /// Number of entries of `amdhsa.kernels`.
    pub fn kernel_count(&self) -> u32 {
        self.kernels.map_or(0, |k| k.len())
    }

    /// The kernels, decoded one by one.
    pub fn kernels(&self) -> KernelIter<'a> {
        KernelIter {
            inner: self.kernels.map(|a| a.iter()),
        }
    }
}

/// Iterator over the kernels of [`Metadata`]; yields an error for a malformed entry.
#[derive(Clone, Debug)]
pub struct KernelIter<'a> {
    inner: Option<ArrayIter<'a>>,
}

impl<'a> Iterator for KernelIter<'a> {
    type Item = Result<KernelMetadata<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        let v = self.inner.as_mut()?.next()?;
        Some(v.and_then(|v| KernelMetadata::from_value(&v)))
    }
}

/// One entry of `amdhsa.kernels`. Sizes are bytes.
#[derive(Clone, Copy, Debug)]
pub struct KernelMetadata<'a> {
    /// `.name`: the kernel's source name.
    pub name: &'a str,
    /// `.symbol`: the ELF symbol of its kernel descriptor (`<name>.kd`).
    pub symbol: &'a str,
    /// `.kernarg_segment_size`: bytes of kernarg segment, hidden arguments included.
    pub kernarg_segment_size: u32,
    /// `.kernarg_segment_align`: alignment of the kernarg segment, bytes (a power of two).
    pub kernarg_segment_align: u32,
    /// `.group_segment_fixed_size`: bytes of group (LDS) memory.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`: bytes of private memory per work-item.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size`: lanes per wavefront (32 or 64).
    pub wavefront_size: u32,
    /// `.sgpr_count`: SGPRs per wavefront.
    pub sgpr_count: u32,
    /// `.vgpr_count`: VGPRs per work-item.
    pub vgpr_count: u32,
    /// `.max_flat_workgroup_size`: largest work-group (work-items), when given.
    pub max_flat_workgroup_size: Option<u32>,
    /// `.uses_dynamic_stack`: whether the kernel has a dynamically sized call stack (false
    /// when absent).
    pub uses_dynamic_stack: bool,
    args: Option<Array<'a>>,
}

fn req_u32(map: &Map<'_>, kernel: &str, key: &str) -> Result<u32> {
    let v = map
        .get(key)?
        .ok_or_else(|| kbad(kernel, key, "is missing"))?;
    opt_u32_value(&v, kernel, key)
}

fn opt_u32_value(v: &Value<'_>, kernel: &str, key: &str) -> Result<u32> {
    let n = v
        .as_u64()
        .ok_or_else(|| kbad(kernel, key, "is not an unsigned integer"))?;
    u32::try_from(n).map_err(|_| {
        crate::error!(
            Status::InvalidCodeObject,
            "metadata of kernel {kernel:?}: {key} is {n}, too large"
        )
    })
}

fn opt_u32(map: &Map<'_>, kernel: &str, key: &str) -> Result<Option<u32>> {
    map.get(key)?
        .map(|v| opt_u32_value(&v, kernel, key))
        .transpose()
}

fn opt_str<'a>(map: &Map<'a>, kernel: &str, key: &str) -> Result<Option<&'a str>> {
    map.get(key)?
        .map(|v| {
            v.as_str()
                .ok_or_else(|| kbad(kernel, key, "is not a string"))
        })
        .transpose()
}

impl<'a> KernelMetadata<'a> {
    fn from_value(v: &Value<'a>) -> Result<KernelMetadata<'a>> {
        let map = v
            .as_map()
            .ok_or_else(|| bad("amdhsa.kernels", "entry is not a map"))?;
        let name = opt_str(&map, "?", ".name")?
            .ok_or_else(|| bad("amdhsa.kernels", "entry without .name"))?;
        let symbol =
            opt_str(&map, name, ".symbol")?.ok_or_else(|| kbad(name, ".symbol", "is missing"))?;
        let uses_dynamic_stack = match map.get(".uses_dynamic_stack")? {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| kbad(name, ".uses_dynamic_stack", "is not a boolean"))?,
        };
        let args = match map.get(".args")? {
            None => None,
            Some(v) => Some(
                v.as_array()
                    .ok_or_else(|| kbad(name, ".args", "is not an array"))?,
            ),
        };
        let kernarg_segment_align = req_u32(&map, name, ".kernarg_segment_align")?;
        if !kernarg_segment_align.is_power_of_two() {
            return Err(crate::error!(
                Status::InvalidCodeObject,
                "metadata of kernel {name:?}: .kernarg_segment_align is {kernarg_segment_align}, not a power of two"
            ));
        }
        let wavefront_size = req_u32(&map, name, ".wavefront_size")?;
        if wavefront_size != 32 && wavefront_size != 64 {
            return Err(crate::error!(
                Status::InvalidCodeObject,
                "metadata of kernel {name:?}: .wavefront_size is {wavefront_size}, expected 32 or 64"
            ));
        }
        Ok(KernelMetadata {
            name,
            symbol,
            kernarg_segment_size: req_u32(&map, name, ".kernarg_segment_size")?,
            kernarg_segment_align,
            group_segment_fixed_size: req_u32(&map, name, ".group_segment_fixed_size")?,
            private_segment_fixed_size: req_u32(&map, name, ".private_segment_fixed_size")?,
            wavefront_size,
            sgpr_count: req_u32(&map, name, ".sgpr_count")?,
            vgpr_count: req_u32(&map, name, ".vgpr_count")?,
            max_flat_workgroup_size: opt_u32(&map, name, ".max_flat_workgroup_size")?,
            uses_dynamic_stack,
            args,
        })
    }

    /// Number of entries of `.args` (hidden arguments included).
    pub fn arg_count(&self) -> u32 {
        self.args.map_or(0, |a| a.len())
    }

    /// The kernel's arguments in order, hidden arguments included.
    pub fn args(&self) -> ArgIter<'a> {
        ArgIter {
            kernel: self.name,
            inner: self.args.map(|a| a.iter()),
        }
    }
}

/// Iterator over a kernel's `.args`.
#[derive(Clone, Debug)]
pub struct ArgIter<'a> {
    kernel: &'a str,
    inner: Option<ArrayIter<'a>>,
}

impl<'a> Iterator for ArgIter<'a> {
    type Item = Result<KernelArg<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        let v = self.inner.as_mut()?.next()?;
        let kernel = self.kernel;
        Some(v.and_then(|v| KernelArg::from_value(&v, kernel)))
    }
}

/// One kernel argument (an entry of `.args`). Offsets and sizes are bytes within the kernarg
/// segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelArg<'a> {
    /// `.name`, when given.
    pub name: Option<&'a str>,
    /// `.type_name` (source type, e.g. `"int*"`), when given.
    pub type_name: Option<&'a str>,
    /// `.offset`.
    pub offset: u32,
    /// `.size`.
    pub size: u32,
    /// `.value_kind` (`"global_buffer"`, `"by_value"`, `"hidden_block_count_x"`, ...).
    pub value_kind: &'a str,
    /// `.address_space` (`"global"`, `"local"`, ...), for pointers.
    pub address_space: Option<&'a str>,
    /// `.access` (`"read_only"`, `"write_only"`, `"read_write"`), when given.
    pub access: Option<&'a str>,
}

impl<'a> KernelArg<'a> {
    fn from_value(v: &Value<'a>, kernel: &str) -> Result<KernelArg<'a>> {
        let map = v
            .as_map()
            .ok_or_else(|| kbad(kernel, ".args", "entry is not a map"))?;
        Ok(KernelArg {
            name: opt_str(&map, kernel, ".name")?,
            type_name: opt_str(&map, kernel, ".type_name")?,
            offset: req_u32(&map, kernel, ".offset")?,
            size: req_u32(&map, kernel, ".size")?,
            value_kind: opt_str(&map, kernel, ".value_kind")?
                .ok_or_else(|| kbad(kernel, ".args .value_kind", "is missing"))?,
            address_space: opt_str(&map, kernel, ".address_space")?,
            access: opt_str(&map, kernel, ".access")?,
        })
    }

    /// Whether the runtime, not the user, fills it (`.value_kind` starts with `hidden_`).
    pub fn is_hidden(&self) -> bool {
        self.value_kind.starts_with("hidden_")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    /// msgpack of `{"amdhsa.version": [1, 2], "amdhsa.kernels": [{".name": "k", <extra>}]}`.
    fn note(extra: &[u8], extra_pairs: u8) -> std::vec::Vec<u8> {
        let mut v = std::vec![0x82];
        v.push(0xae);
        v.extend_from_slice(b"amdhsa.version");
        v.extend_from_slice(&[0x92, 0x01, 0x02]);
        v.push(0xae);
        v.extend_from_slice(b"amdhsa.kernels");
        v.extend_from_slice(&[0x91, 0x80 | (1 + extra_pairs), 0xa5]);
        v.extend_from_slice(b".name");
        v.extend_from_slice(&[0xa1, b'k']);
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn missing_fields_name_kernel_and_key() {
        let n = note(&[], 0);
        let md = Metadata::parse(&n).unwrap();
        assert_eq!(md.version, [1, 2]);
        assert_eq!(md.target, None);
        assert_eq!(md.kernel_count(), 1);
        let e = md.kernels().next().unwrap().unwrap_err();
        assert_eq!(e.status(), Status::InvalidCodeObject);
        assert_eq!(e.detail(), "metadata of kernel \"k\": .symbol is missing");
        // A .symbol but no sizes: the first required size is named.
        let mut extra = std::vec![0xa7];
        extra.extend_from_slice(b".symbol");
        extra.extend_from_slice(&[0xa4]);
        extra.extend_from_slice(b"k.kd");
        let n = note(&extra, 1);
        let e = Metadata::parse(&n)
            .unwrap()
            .kernels()
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(
            e.detail(),
            "metadata of kernel \"k\": .kernarg_segment_align is missing"
        );
    }

    #[test]
    fn bad_root_and_version() {
        assert!(Metadata::parse(&[0x90])
            .unwrap_err()
            .detail()
            .to_string()
            .contains("root: is not a map"));
        let e = Metadata::parse(&[0x80]).unwrap_err();
        assert_eq!(e.detail(), "metadata amdhsa.version: is missing");
    }
}
