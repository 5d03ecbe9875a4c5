//! The code object reader: a checked, borrowed view of an AMDGPU HSA code object (ELF64,
//! code object v4, v5 or v6), with its metadata note and kernel descriptors.
//!
//! No-panic contract: every offset, size and count read from the file is checked against the
//! file before use; any input gives `Ok` or an `Error`, never a panic.
//!
//! Ref: LLVM AMDGPUUsage, "ELF Code Object" (header, `EI_OSABI` = `ELFOSABI_AMDGPU_HSA`,
//! `EI_ABIVERSION`, `e_flags`), "Note Records" (`NT_AMDGPU_METADATA` = 32, name `AMDGPU`),
//! "Symbols" (`<name>.kd`), "Kernel Descriptor".

use object::elf::{self, FileHeader64, ProgramHeader64};
use object::read::elf::{
    FileHeader as _, NoteIterator, ProgramHeader as _, SectionHeader as _, SectionTable, Sym as _,
    SymbolTable,
};
use object::LittleEndian as LE;
use zerocopy::FromBytes;

use super::metadata::{KernelMetadata, Metadata};
use crate::abi::kernel_descriptor::{KernelDescriptor, KERNEL_DESCRIPTOR_SIZE};
use crate::isa::TargetId;
use crate::status::{Error, Result, Status};

/// `EM_AMDGPU`: the ELF machine of AMD GPUs.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`: the OS ABI of HSA code objects.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `NT_AMDGPU_METADATA`: the note type of the MessagePack metadata (code object v3+).
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Alignment, bytes, that the code object's bytes must start at: the ELF headers, symbols and
/// notes are read in place as 64-bit structures.
pub const CODE_OBJECT_ALIGN: usize = 8;
/// Largest loaded image accepted (span of all `PT_LOAD` segments), bytes.
pub const MAX_IMAGE_BYTES: u64 = 1 << 32;
/// Largest `PT_LOAD` alignment accepted, bytes.
pub const MAX_SEGMENT_ALIGN: u64 = 1 << 21;

const EI_CLASS: usize = 4;
const EI_DATA: usize = 5;
const EI_OSABI: usize = 7;
const EI_ABIVERSION: usize = 8;
/// `DT_RELR` (packed relative relocations), which AMDGPU code objects do not use.
const DT_RELR: u32 = 36;

/// Bytes of one `Elf64_Rela`.
const RELA_SIZE: u64 = 24;

fn invalid(args: core::fmt::Arguments<'_>) -> Error {
    Error::fmt(Status::InvalidCodeObject, args)
}

macro_rules! bad {
    ($($arg:tt)*) => { invalid(format_args!($($arg)*)) };
}

/// An owned, 8-byte aligned copy of a code object's bytes, for input whose address is not
/// [`CODE_OBJECT_ALIGN`]-aligned (a slice of a larger buffer, a `static` byte string).
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlignedBytes {
    words: alloc::vec::Vec<u64>,
    len: usize,
}

#[cfg(feature = "alloc")]
impl AlignedBytes {
    /// Copies `bytes` into aligned storage.
    pub fn new(bytes: &[u8]) -> AlignedBytes {
        use zerocopy::IntoBytes;
        let mut words = alloc::vec![0u64; bytes.len().div_ceil(8)];
        words.as_mut_bytes()[..bytes.len()].copy_from_slice(bytes);
        AlignedBytes {
            words,
            len: bytes.len(),
        }
    }

    /// The copied bytes, starting at an 8-byte aligned address.
    pub fn as_bytes(&self) -> &[u8] {
        use zerocopy::IntoBytes;
        &self.words.as_bytes()[..self.len]
    }

    /// The copied bytes, mutable (to patch a code object in place), still 8-byte aligned.
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        use zerocopy::IntoBytes;
        &mut self.words.as_mut_bytes()[..self.len]
    }
}

/// The bytes, as [`AlignedBytes::as_bytes`].
#[cfg(feature = "alloc")]
impl core::ops::Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// The bytes, as [`AlignedBytes::as_mut_bytes`].
#[cfg(feature = "alloc")]
impl core::ops::DerefMut for AlignedBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_bytes()
    }
}

/// One loadable segment (`PT_LOAD`), checked: its file bytes lie inside the file and
/// `filesz <= memsz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment<'a> {
    /// `p_vaddr`: where it goes, relative to the load base, bytes.
    pub vaddr: u64,
    /// `p_memsz`: its size in memory, bytes (the part past the file bytes is zero).
    pub mem_size: u64,
    /// The `p_filesz` bytes from the file.
    pub file_bytes: &'a [u8],
    /// `p_align` (0 or a power of two), bytes.
    pub align: u64,
    /// `p_flags` (`PF_X` 1, `PF_W` 2, `PF_R` 4).
    pub flags: u32,
}

/// One dynamic relocation (`Elf64_Rela` of `DT_RELA`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynRelocation {
    /// `r_offset`: the address (relative to the load base) to patch, bytes.
    pub offset: u64,
    /// `ELF64_R_TYPE(r_info)`: an `R_AMDGPU_*` type.
    pub r_type: u32,
    /// `ELF64_R_SYM(r_info)`: index into `.dynsym` (0 = none).
    pub symbol: u32,
    /// `r_addend`.
    pub addend: i64,
}

/// A kernel: its metadata joined with its kernel descriptor, cross-checked.
#[derive(Clone, Copy, Debug)]
pub struct Kernel<'a> {
    /// The kernel's entry of `amdhsa.kernels`.
    pub metadata: KernelMetadata<'a>,
    /// Its 64-byte descriptor, as in the file.
    pub descriptor: KernelDescriptor,
    /// The descriptor's address relative to the load base (`st_value` of `<name>.kd`), bytes.
    pub descriptor_vaddr: u64,
}

/// A global variable exported by the code object (a defined `STT_OBJECT` of `.dynsym` that
/// is not a kernel descriptor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variable<'a> {
    /// Symbol name.
    pub name: &'a str,
    /// Address relative to the load base, bytes.
    pub vaddr: u64,
    /// `st_size`, bytes.
    pub size: u64,
}

/// The `.text` section: where the machine code of the kernels lies, checked against the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextSection<'a> {
    /// Its index in the section header table (`st_shndx` of the symbols defined in it).
    pub index: usize,
    /// `sh_addr`: its address relative to the load base, bytes.
    pub vaddr: u64,
    /// Its `sh_size` bytes from the file (`sh_offset` onwards).
    pub bytes: &'a [u8],
}

impl TextSection<'_> {
    /// The address just past its last byte (`sh_addr + sh_size`), bytes. Cannot overflow for
    /// a `TextSection` from [`CodeObject::text_section`] (checked there); saturates for one
    /// built by hand.
    pub fn end(&self) -> u64 {
        self.vaddr.saturating_add(self.bytes.len() as u64)
    }
}

/// The machine code of one kernel: the bytes of its function symbol (`STT_FUNC` named as its
/// descriptor symbol without `.kd`), checked to lie inside `.text` and to start at the
/// descriptor's entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelCode<'a> {
    /// The function symbol's name, e.g. `vector_copy` (mangled for C++ kernels).
    pub symbol: &'a str,
    /// `st_value`: the address of the first instruction relative to the load base, bytes.
    pub vaddr: u64,
    /// The `st_size` bytes of code.
    pub code: &'a [u8],
}

/// A parsed and checked code object, borrowing the file's bytes.
#[derive(Debug)]
pub struct CodeObject<'a> {
    data: &'a [u8],
    version: u32,
    e_flags: u32,
    target: TargetId,
    phdrs: &'a [ProgramHeader64<LE>],
    sections: SectionTable<'a, FileHeader64<LE>>,
    dynsym: SymbolTable<'a, FileHeader64<LE>>,
    /// The first metadata note (version, target).
    metadata: Metadata<'a>,
    /// Kernels of all metadata notes together.
    kernel_count: u32,
    image_start: u64,
    image_end: u64,
    image_align: u64,
}

impl<'a> CodeObject<'a> {
    /// Parses and checks a code object: ELF64 little-endian, `e_machine` `EM_AMDGPU`, OS ABI
    /// `ELFOSABI_AMDGPU_HSA`, ABI version 2/3/4 (code object v4/v5/v6), a known processor in
    /// `e_flags`, sane `PT_LOAD` segments, a metadata note, and every kernel's descriptor
    /// present and agreeing with its metadata.
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` with a message naming the field and value: not ELF, wrong
    /// class/data/machine/OS ABI/ABI version, unknown processor, a segment or note outside
    /// the file, missing or malformed metadata, a kernel whose descriptor is missing,
    /// misaligned or disagrees with its metadata. `Status::InvalidArgument` when `data` does
    /// not start at a [`CODE_OBJECT_ALIGN`]-byte aligned address (a `Vec<u8>` or file buffer
    /// from the system allocator always does).
    pub fn parse(data: &'a [u8]) -> Result<CodeObject<'a>> {
        if data.as_ptr() as usize % CODE_OBJECT_ALIGN != 0 {
            return Err(crate::error!(
                Status::InvalidArgument,
                "code object bytes at {:p} are not {CODE_OBJECT_ALIGN}-byte aligned (the ELF structures are read in place)",
                data.as_ptr()
            ));
        }
        let ident = data.get(..16).ok_or_else(|| {
            bad!(
                "file is {} bytes, shorter than an ELF identification",
                data.len()
            )
        })?;
        if ident[..4] != elf::ELFMAG {
            return Err(bad!("not an ELF file (magic {:02x?})", &ident[..4]));
        }
        if ident[EI_CLASS] != elf::ELFCLASS64 {
            return Err(bad!(
                "EI_CLASS is {}, expected ELFCLASS64 (2)",
                ident[EI_CLASS]
            ));
        }
        if ident[EI_DATA] != elf::ELFDATA2LSB {
            return Err(bad!(
                "EI_DATA is {}, expected little-endian (1)",
                ident[EI_DATA]
            ));
        }
        if ident[EI_OSABI] != ELFOSABI_AMDGPU_HSA {
            return Err(bad!(
                "EI_OSABI is {}, expected ELFOSABI_AMDGPU_HSA (64)",
                ident[EI_OSABI]
            ));
        }
        let abi_version = ident[EI_ABIVERSION];
        let version = match abi_version {
            2 => 4,
            3 => 5,
            4 => 6,
            v => {
                return Err(bad!(
                    "EI_ABIVERSION is {v}; only 2, 3, 4 (code object v4, v5, v6) are supported"
                ))
            }
        };
        let header = FileHeader64::<LE>::parse(data).map_err(|e| bad!("ELF header: {e}"))?;
        let endian = LE;
        let machine = header.e_machine(endian);
        if machine != EM_AMDGPU {
            return Err(bad!("e_machine is {machine}, expected EM_AMDGPU (224)"));
        }
        let e_flags = header.e_flags(endian);
        let target = TargetId::from_e_flags(e_flags)
            .map_err(|e| e.with_status(Status::InvalidCodeObject))?;
        if version < 6 && target.generic_version != 0 {
            return Err(bad!(
                "e_flags {e_flags:#x}: generic version in a code object v{version}"
            ));
        }
        let phdrs = header
            .program_headers(endian, data)
            .map_err(|e| bad!("program headers: {e}"))?;

        // Segments: inside the file, sane sizes, bounded image.
        let (mut start, mut end, mut align) = (u64::MAX, 0u64, 4096u64);
        for (i, ph) in phdrs.iter().enumerate() {
            if ph.p_type(endian) != elf::PT_LOAD {
                continue;
            }
            let seg = checked_segment(data, ph, i)?;
            start = start.min(seg.vaddr);
            end = end.max(seg.vaddr + seg.mem_size); // checked in checked_segment
            align = align.max(seg.align);
        }
        if end == 0 {
            return Err(bad!("no PT_LOAD segment"));
        }
        let image_start = start & !(align - 1);
        if end - image_start > MAX_IMAGE_BYTES {
            return Err(bad!(
                "loaded image spans {:#x} bytes, more than {MAX_IMAGE_BYTES:#x}",
                end - image_start
            ));
        }

        // Metadata notes: one, or one per kernel in a code object linked from several
        // (rocBLAS's Tensile libraries hold hundreds), whose kernel lists together are the
        // code object's, as amd_comgr merges them. Every note must agree on the version and
        // on the target where it names one: Tensile's per-kernel notes may leave
        // amdhsa.target out (rocBLAS 7.2.4's double-precision libraries do), and such a note
        // belongs to the code object's target.
        let mut metadata: Option<Metadata<'a>> = None;
        let mut kernel_count = 0u32;
        for (index, desc) in MetadataNotes::new(phdrs, data).enumerate() {
            let note = Metadata::parse(desc?).map_err(|e| {
                if index == 0 {
                    e
                } else {
                    bad!("metadata note {index}: {}", e.detail())
                }
            })?;
            if let Some(first) = &mut metadata {
                if first.target.is_none() {
                    first.target = note.target;
                }
                if note.version != first.version
                    || note.target.is_some_and(|t| Some(t) != first.target)
                {
                    return Err(bad!(
                        "metadata note {index}: amdhsa.version {:?} and amdhsa.target {:?} \
                         differ from the first note's {:?} and {:?}",
                        note.version,
                        note.target,
                        first.version,
                        first.target
                    ));
                }
            } else {
                metadata = Some(note);
            }
            kernel_count = kernel_count.saturating_add(note.kernel_count());
        }
        let metadata = metadata
            .ok_or_else(|| bad!("no NT_AMDGPU_METADATA note (name \"AMDGPU\", type 32)"))?;

        let sections = header
            .sections(endian, data)
            .map_err(|e| bad!("section headers: {e}"))?;
        let dynsym = sections
            .symbols(endian, data, elf::SHT_DYNSYM)
            .map_err(|e| bad!(".dynsym: {e}"))?;

        let co = CodeObject {
            data,
            version,
            e_flags,
            target,
            phdrs,
            sections,
            dynsym,
            metadata,
            kernel_count,
            image_start,
            image_end: end,
            image_align: align,
        };
        for kernel in co.kernels() {
            kernel?;
        }
        for reloc in co.dynamic_relocations()? {
            reloc?;
        }
        for var in co.variables() {
            var?;
        }
        Ok(co)
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    /// Code object version: 4, 5 or 6 (from `EI_ABIVERSION` 2, 3, 4).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The raw `e_flags`.
    pub fn e_flags(&self) -> u32 {
        self.e_flags
    }

    /// The target the code was built for (from `e_flags`).
    pub fn target(&self) -> TargetId {
        self.target
    }

    /// The first metadata note: the code object's `amdhsa.version` and `amdhsa.target`
    /// (every note agrees on them, `parse` checked). Its kernels are the first note's
    /// only; [`CodeObject::kernels`] walks every note's.
    pub fn metadata(&self) -> &Metadata<'a> {
        &self.metadata
    }

    /// Number of kernels of all the metadata notes (`amdhsa.kernels` entries).
    pub fn kernel_count(&self) -> u32 {
        self.kernel_count
    }

    /// Start of the loaded image relative to the vaddrs of the file (the lowest `PT_LOAD`
    /// vaddr rounded down to [`CodeObject::image_align`]), bytes.
    pub fn image_start(&self) -> u64 {
        self.image_start
    }

    /// Bytes from [`CodeObject::image_start`] to the end of the last `PT_LOAD` in memory.
    pub fn image_size(&self) -> u64 {
        self.image_end - self.image_start
    }

    /// Alignment the image needs: the largest `p_align`, at least 4096, bytes.
    pub fn image_align(&self) -> u64 {
        self.image_align
    }

    /// The `PT_LOAD` segments, in file order (each already checked by `parse`).
    pub fn load_segments(&self) -> impl Iterator<Item = LoadSegment<'a>> + '_ {
        self.phdrs
            .iter()
            .enumerate()
            .filter(|(_, ph)| ph.p_type(LE) == elf::PT_LOAD)
            .filter_map(|(i, ph)| checked_segment(self.data, ph, i).ok())
    }

    /// The file bytes backing `[vaddr, vaddr + len)`, when one `PT_LOAD` holds them all in its
    /// file part.
    pub fn bytes_at_vaddr(&self, vaddr: u64, len: u64) -> Option<&'a [u8]> {
        self.load_segments().find_map(|s| {
            let off = vaddr.checked_sub(s.vaddr)?;
            let end = off.checked_add(len)?;
            s.file_bytes
                .get(usize::try_from(off).ok()?..usize::try_from(end).ok()?)
        })
    }

    /// The kernels of the metadata, each joined with its descriptor and cross-checked: the
    /// group and private segment sizes, the kernarg segment size (unless the descriptor's is
    /// 0, which states no size: the metadata's is used), the wavefront size and (code object
    /// v5+) the dynamic-stack bit must agree (AMDGPUUsage, "Kernel Descriptor" and "Code
    /// Object V3+ Metadata"); a disagreement is `InvalidCodeObject` naming the kernel and
    /// field, where ROCR would load the kernel with the descriptor's values.
    /// The kernels come note by note, in file order.
    pub fn kernels(&self) -> impl Iterator<Item = Result<Kernel<'a>>> + '_ {
        MetadataNotes::new(self.phdrs, self.data).flat_map(move |desc| {
            let notes = desc.and_then(Metadata::parse);
            let (kernels, error) = match notes {
                Ok(m) => (Some(m.kernels()), None),
                Err(e) => (None, Some(Err(e))),
            };
            error.into_iter().chain(
                kernels
                    .into_iter()
                    .flatten()
                    .map(move |m| m.and_then(|m| self.join_kernel(m))),
            )
        })
    }

    /// The kernel whose `.name` or `.symbol` is `name`.
    ///
    /// # Errors
    /// `Status::InvalidSymbolName` when there is none; `Status::InvalidCodeObject` for a
    /// malformed entry met on the way (not possible after a successful `parse`).
    pub fn kernel(&self, name: &str) -> Result<Kernel<'a>> {
        for k in self.kernels() {
            let k = k?;
            if k.metadata.name == name || k.metadata.symbol == name {
                return Ok(k);
            }
        }
        Err(crate::error!(
            Status::InvalidSymbolName,
            "no kernel named {name:?}"
        ))
    }

    /// Finds a defined `.dynsym` symbol by name: `(st_value, st_size)`.
    pub fn dynamic_symbol(&self, name: &str) -> Option<(u64, u64)> {
        self.dynsym.iter().find_map(|sym| {
            let n = self.dynsym.symbol_name(LE, sym).ok()?;
            (n == name.as_bytes() && sym.st_shndx(LE) != elf::SHN_UNDEF)
                .then(|| (sym.st_value(LE), sym.st_size(LE)))
        })
    }

    /// `.dynsym` entry `index`: `(name, st_value, defined)`.
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` for an index past the table or a bad name offset.
    pub fn dynamic_symbol_by_index(&self, index: u32) -> Result<(&'a str, u64, bool)> {
        let sym = self
            .dynsym
            .symbol(object::SymbolIndex(index as usize))
            .map_err(|_| {
                bad!(
                    "symbol index {index} is past .dynsym ({} entries)",
                    self.dynsym.len()
                )
            })?;
        let name = self
            .dynsym
            .symbol_name(LE, sym)
            .map_err(|_| bad!(".dynsym entry {index}: bad name offset"))?;
        let name = core::str::from_utf8(name)
            .map_err(|_| bad!(".dynsym entry {index}: name is not UTF-8"))?;
        Ok((name, sym.st_value(LE), sym.st_shndx(LE) != elf::SHN_UNDEF))
    }

    /// Exported global variables.
    pub fn variables(&self) -> impl Iterator<Item = Result<Variable<'a>>> + '_ {
        self.dynsym.iter().filter_map(move |sym| {
            if sym.st_type() != elf::STT_OBJECT
                || sym.st_shndx(LE) == elf::SHN_UNDEF
                || !matches!(sym.st_bind(), elf::STB_GLOBAL | elf::STB_WEAK)
            {
                return None;
            }
            let name = match self.dynsym.symbol_name(LE, sym).map(core::str::from_utf8) {
                Ok(Ok(n)) => n,
                _ => {
                    return Some(Err(bad!(
                        ".dynsym: a symbol name is not valid UTF-8 or out of range"
                    )))
                }
            };
            if name.ends_with(".kd") {
                return None;
            }
            let (vaddr, size) = (sym.st_value(LE), sym.st_size(LE));
            let inside = vaddr >= self.image_start
                && vaddr.checked_add(size).is_some_and(|e| e <= self.image_end);
            Some(if inside {
                Ok(Variable { name, vaddr, size })
            } else {
                Err(bad!(
                    "variable {name:?} at {vaddr:#x} size {size} lies outside the loaded image"
                ))
            })
        })
    }

    /// The dynamic relocations (`DT_RELA`/`DT_RELASZ` of `PT_DYNAMIC`); empty when there is
    /// no dynamic segment or no `DT_RELA`.
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` for a malformed dynamic section, `DT_REL` (AMDGPU uses
    /// RELA only), a `DT_RELAENT` other than 24, or a table outside the file. Each item is an
    /// error for a relocation whose patch address lies outside the loaded image.
    pub fn dynamic_relocations(&self) -> Result<impl Iterator<Item = Result<DynRelocation>> + '_> {
        let (mut rela, mut relasz, mut relaent) = (None, 0u64, RELA_SIZE);
        for ph in self.phdrs {
            let Some(dynamic) = ph
                .dynamic(LE, self.data)
                .map_err(|e| bad!("PT_DYNAMIC: {e}"))?
            else {
                continue;
            };
            for d in dynamic {
                let (tag, val) = (d.d_tag.get(LE), d.d_val.get(LE));
                match u32::try_from(tag) {
                    Ok(elf::DT_NULL) => break,
                    Ok(elf::DT_RELA) => rela = Some(val),
                    Ok(elf::DT_RELASZ) => relasz = val,
                    Ok(elf::DT_RELAENT) => relaent = val,
                    Ok(elf::DT_REL) | Ok(DT_RELR) => {
                        return Err(bad!(
                            "dynamic tag {tag} (DT_REL/DT_RELR) is not used by AMDGPU code objects"
                        ))
                    }
                    _ => {}
                }
            }
        }
        if relaent != RELA_SIZE {
            return Err(bad!("DT_RELAENT is {relaent}, expected 24"));
        }
        let table: &'a [u8] = match rela {
            None | Some(_) if relasz == 0 => &[],
            None => return Err(bad!("DT_RELASZ is {relasz} without DT_RELA")),
            Some(addr) => self.bytes_at_vaddr(addr, relasz).ok_or_else(|| {
                bad!("DT_RELA {addr:#x} size {relasz} is not inside a PT_LOAD's file bytes")
            })?,
        };
        if table.len() as u64 % RELA_SIZE != 0 {
            return Err(bad!("DT_RELASZ {relasz} is not a multiple of 24"));
        }
        let (start, end) = (self.image_start, self.image_end);
        Ok(table.chunks_exact(RELA_SIZE as usize).map(move |c| {
            let word = |i: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&c[i * 8..i * 8 + 8]);
                u64::from_le_bytes(b)
            };
            let (offset, info, addend) = (word(0), word(1), word(2) as i64);
            let r = DynRelocation { offset, r_type: info as u32, symbol: (info >> 32) as u32, addend };
            if offset < start || offset >= end {
                return Err(bad!("relocation at {offset:#x} lies outside the loaded image [{start:#x}, {end:#x})"));
            }
            Ok(r)
        }))
    }

    /// The `.text` section (the first section named `.text`).
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` naming the field and value when there is no `.text`, it is
    /// not `SHT_PROGBITS` with `SHF_EXECINSTR`, its `sh_offset + sh_size` is past the file,
    /// or `sh_addr + sh_size` overflows.
    pub fn text_section(&self) -> Result<TextSection<'a>> {
        let (index, header) = self
            .sections
            .section_by_name(LE, b".text")
            .ok_or_else(|| bad!("no .text section"))?;
        let (kind, flags) = (header.sh_type(LE), header.sh_flags(LE));
        if kind != elf::SHT_PROGBITS || flags & u64::from(elf::SHF_EXECINSTR) == 0 {
            return Err(bad!(
                ".text has sh_type {kind} and sh_flags {flags:#x}, expected SHT_PROGBITS (1) with SHF_EXECINSTR (0x4)"
            ));
        }
        let (offset, size, vaddr) = (header.sh_offset(LE), header.sh_size(LE), header.sh_addr(LE));
        let bytes = header.data(LE, self.data).map_err(|_| {
            bad!(
                ".text: sh_offset {offset:#x} + sh_size {size:#x} is past the file ({} bytes)",
                self.data.len()
            )
        })?;
        if vaddr.checked_add(size).is_none() {
            return Err(bad!(
                ".text: sh_addr {vaddr:#x} + sh_size {size:#x} overflows"
            ));
        }
        Ok(TextSection {
            index: index.0,
            vaddr,
            bytes,
        })
    }

    /// The machine code of `kernel`: its function symbol in `.dynsym` (the descriptor
    /// symbol's name without `.kd`, AMDGPUUsage "Symbols"), with the symbol's size never
    /// trusted: the range must lie inside `.text`.
    ///
    /// # Errors
    /// `Status::InvalidCodeObject` naming the kernel, symbol and value when: the descriptor
    /// symbol does not end in `.kd`; the function symbol is not defined in `.dynsym`, is not
    /// `STT_FUNC`, is not in `.text` (`st_shndx`), has size 0, or its range
    /// `[st_value, st_value + st_size)` is not inside `.text`; `st_value` is not the kernel
    /// descriptor's entry (`<name>.kd` + `kernel_code_entry_byte_offset`). Errors of
    /// [`CodeObject::text_section`].
    pub fn kernel_code(&self, kernel: &Kernel<'a>) -> Result<KernelCode<'a>> {
        let text = self.text_section()?;
        let name = kernel.metadata.name;
        let kd = kernel.metadata.symbol;
        let symbol = kd.strip_suffix(".kd").ok_or_else(|| {
            bad!("kernel {name:?}: descriptor symbol {kd:?} does not end in \".kd\"")
        })?;
        let sym = self
            .dynsym
            .iter()
            .find(|s| {
                s.st_shndx(LE) != elf::SHN_UNDEF
                    && self.dynsym.symbol_name(LE, s).ok() == Some(symbol.as_bytes())
            })
            .ok_or_else(|| {
                bad!("kernel {name:?}: function symbol {symbol:?} is not defined in .dynsym")
            })?;
        if sym.st_type() != elf::STT_FUNC {
            return Err(bad!(
                "kernel {name:?}: symbol {symbol:?} has type {}, expected STT_FUNC (2)",
                sym.st_type()
            ));
        }
        let shndx = usize::from(sym.st_shndx(LE));
        if shndx != text.index {
            return Err(bad!(
                "kernel {name:?}: symbol {symbol:?} is in section {shndx}, not .text (section {})",
                text.index
            ));
        }
        let (vaddr, size) = (sym.st_value(LE), sym.st_size(LE));
        if size == 0 {
            return Err(bad!(
                "kernel {name:?}: symbol {symbol:?} has size 0, so its code range is unknown"
            ));
        }
        let end = vaddr.checked_add(size);
        let code = end
            .filter(|&e| vaddr >= text.vaddr && e <= text.end())
            .and_then(|e| {
                let from = usize::try_from(vaddr - text.vaddr).ok()?;
                let to = usize::try_from(e - text.vaddr).ok()?;
                text.bytes.get(from..to)
            })
            .ok_or_else(|| {
                bad!(
                    "kernel {name:?}: symbol {symbol:?} at {vaddr:#x} size {size} lies outside .text [{:#x}, {:#x})",
                    text.vaddr,
                    text.end()
                )
            })?;
        let offset = kernel.descriptor.kernel_code_entry_byte_offset;
        match (kernel.descriptor_vaddr as i64).checked_add(offset) {
            Some(entry) if entry as u64 == vaddr => {}
            Some(entry) => {
                return Err(bad!(
                    "kernel {name:?}: symbol {symbol:?} is at {vaddr:#x} but the descriptor {kd:?} enters the kernel at {:#x}",
                    entry as u64
                ))
            }
            None => {
                return Err(bad!(
                    "kernel {name:?}: descriptor {kd:?} at {:#x} has kernel_code_entry_byte_offset {offset}, which overflows",
                    kernel.descriptor_vaddr
                ))
            }
        }
        Ok(KernelCode {
            symbol,
            vaddr,
            code,
        })
    }

    /// The defined symbols of `.dynsym` that lie in `.text` (`st_shndx`), as `(name,
    /// st_value)` in table order: the labels of code addresses (branch targets).
    ///
    /// # Errors
    /// Errors of [`CodeObject::text_section`]. Each item is a `Status::InvalidCodeObject`
    /// error for a symbol whose name offset is out of range or whose name is not UTF-8
    /// (naming its `.dynsym` index).
    pub fn text_symbols(&self) -> Result<impl Iterator<Item = Result<(&'a str, u64)>> + '_> {
        let text = self.text_section()?;
        Ok(self
            .dynsym
            .iter()
            .enumerate()
            .filter(move |(_, s)| {
                usize::from(s.st_shndx(LE)) == text.index
                    && !matches!(s.st_type(), elf::STT_SECTION | elf::STT_FILE)
            })
            .map(move |(i, s)| {
                let name = self
                    .dynsym
                    .symbol_name(LE, s)
                    .map_err(|_| bad!(".dynsym entry {i}: bad name offset"))?;
                let name = core::str::from_utf8(name)
                    .map_err(|_| bad!(".dynsym entry {i}: name is not UTF-8"))?;
                Ok((name, s.st_value(LE)))
            }))
    }

    fn join_kernel(&self, metadata: KernelMetadata<'a>) -> Result<Kernel<'a>> {
        let name = metadata.name;
        let symbol = metadata.symbol;
        let (vaddr, size) = self.dynamic_symbol(symbol).ok_or_else(|| {
            bad!("kernel {name:?}: descriptor symbol {symbol:?} is not defined in .dynsym")
        })?;
        if size != KERNEL_DESCRIPTOR_SIZE as u64 {
            return Err(bad!(
                "kernel {name:?}: descriptor symbol {symbol:?} has size {size}, expected 64"
            ));
        }
        if vaddr % 64 != 0 {
            return Err(bad!(
                "kernel {name:?}: descriptor at {vaddr:#x} is not 64-byte aligned"
            ));
        }
        let bytes = self.bytes_at_vaddr(vaddr, 64).ok_or_else(|| {
            bad!("kernel {name:?}: descriptor at {vaddr:#x} is not inside a PT_LOAD's file bytes")
        })?;
        let descriptor = KernelDescriptor::read_from_bytes(bytes)
            .map_err(|_| bad!("kernel {name:?}: descriptor is not 64 bytes"))?;
        let m = &metadata;
        let d = &descriptor;
        let check = |field: &str, md: u64, kd: u64| {
            if md == kd {
                Ok(())
            } else {
                Err(bad!("kernel {name:?}: {field} is {md} in metadata but {kd} in the kernel descriptor"))
            }
        };
        check(
            "group_segment_fixed_size",
            m.group_segment_fixed_size.into(),
            d.group_segment_fixed_size.into(),
        )?;
        check(
            "private_segment_fixed_size",
            m.private_segment_fixed_size.into(),
            d.private_segment_fixed_size.into(),
        )?;
        // A descriptor's kernarg_size of 0 means the producer did not state it: the
        // assembler's default when `.amdhsa_kernarg_size` is left out, as in the hand-written
        // Tensile kernels rocBLAS 7 ships. ROCR loads such kernels (it takes the descriptor's 0
        // and leaves the size to the metadata's readers); the metadata's size stands.
        if d.kernarg_size != 0 {
            check(
                "kernarg_segment_size",
                m.kernarg_segment_size.into(),
                d.kernarg_size.into(),
            )?;
        }
        check(
            "wavefront_size",
            m.wavefront_size.into(),
            d.wavefront_size().into(),
        )?;
        if self.version >= 5 {
            check(
                "uses_dynamic_stack",
                m.uses_dynamic_stack.into(),
                d.uses_dynamic_stack().into(),
            )?;
        }
        let entry = (vaddr as i64).checked_add(d.kernel_code_entry_byte_offset);
        let entry_ok =
            entry.is_some_and(|e| e >= self.image_start as i64 && (e as u64) < self.image_end);
        if !entry_ok {
            return Err(bad!(
                "kernel {name:?}: kernel_code_entry_byte_offset {} points outside the loaded image",
                d.kernel_code_entry_byte_offset
            ));
        }
        Ok(Kernel {
            metadata,
            descriptor,
            descriptor_vaddr: vaddr,
        })
    }
}

/// The descriptors of the `NT_AMDGPU_METADATA` notes (name `AMDGPU`, type 32) of the
/// `PT_NOTE` segments, in file order; an error for a malformed note segment or note.
struct MetadataNotes<'a> {
    data: &'a [u8],
    phdrs: core::slice::Iter<'a, ProgramHeader64<LE>>,
    notes: Option<NoteIterator<'a, FileHeader64<LE>>>,
    failed: bool,
}

impl<'a> MetadataNotes<'a> {
    fn new(phdrs: &'a [ProgramHeader64<LE>], data: &'a [u8]) -> Self {
        MetadataNotes {
            data,
            phdrs: phdrs.iter(),
            notes: None,
            failed: false,
        }
    }
}

impl<'a> Iterator for MetadataNotes<'a> {
    type Item = Result<&'a [u8]>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(notes) = &mut self.notes {
                match notes.next() {
                    Ok(Some(note)) => {
                        if note.name() == b"AMDGPU" && note.n_type(LE) == NT_AMDGPU_METADATA {
                            return Some(Ok(note.desc()));
                        }
                        continue;
                    }
                    Ok(None) => self.notes = None,
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(bad!("note: {e}")));
                    }
                }
            }
            let ph = self.phdrs.next()?;
            match ph.notes(LE, self.data) {
                Ok(notes) => self.notes = notes,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(bad!("note segment: {e}")));
                }
            }
        }
    }
}

fn checked_segment<'a>(
    data: &'a [u8],
    ph: &ProgramHeader64<LE>,
    index: usize,
) -> Result<LoadSegment<'a>> {
    let (off, filesz, memsz, vaddr, align) = (
        ph.p_offset(LE),
        ph.p_filesz(LE),
        ph.p_memsz(LE),
        ph.p_vaddr(LE),
        ph.p_align(LE),
    );
    if filesz > memsz {
        return Err(bad!(
            "PT_LOAD {index}: p_filesz {filesz:#x} > p_memsz {memsz:#x}"
        ));
    }
    let file_bytes = off
        .checked_add(filesz)
        .and_then(|end| data.get(usize::try_from(off).ok()?..usize::try_from(end).ok()?))
        .ok_or_else(|| bad!("PT_LOAD {index}: p_offset {off:#x} + p_filesz {filesz:#x} is past the file ({} bytes)", data.len()))?;
    if vaddr.checked_add(memsz).is_none_or(|e| e > MAX_IMAGE_BYTES) {
        return Err(bad!(
            "PT_LOAD {index}: p_vaddr {vaddr:#x} + p_memsz {memsz:#x} is past {MAX_IMAGE_BYTES:#x}"
        ));
    }
    if align > 1 && (!align.is_power_of_two() || align > MAX_SEGMENT_ALIGN) {
        return Err(bad!(
            "PT_LOAD {index}: p_align {align:#x} is not a power of two <= {MAX_SEGMENT_ALIGN:#x}"
        ));
    }
    if align > 1 && vaddr % align != off % align {
        return Err(bad!("PT_LOAD {index}: p_vaddr {vaddr:#x} and p_offset {off:#x} disagree modulo p_align {align:#x}"));
    }
    Ok(LoadSegment {
        vaddr,
        mem_size: memsz,
        file_bytes,
        align: align.max(1),
        flags: ph.p_flags(LE),
    })
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;

    const FILE: &[u8] = include_bytes!("../../../testdata/codeobjects/kernels-gfx900-v4.hsaco");

    #[test]
    fn layout_of_a_real_file() {
        // llvm-readelf-19 -l --dyn-syms kernels-gfx900-v4.hsaco: PT_LOADs at vaddr 0, 0x1b00
        // and 0x2d90 (memsz 0x270); vector_copy FUNC at 0x1b00 (96 bytes), .kd at 0x9c0.
        assert_eq!(AlignedBytes::new(FILE).as_bytes(), FILE);
        let aligned = AlignedBytes::new(FILE);
        let co = CodeObject::parse(aligned.as_bytes()).unwrap();
        assert_eq!(co.version(), 4);
        assert_eq!(co.image_start(), 0);
        assert_eq!(co.image_align(), 0x1000);
        assert_eq!(co.load_segments().count(), 3);
        assert_eq!(co.dynamic_symbol("vector_copy.kd"), Some((0x9c0, 64)));
        assert_eq!(co.image_size(), 0x2d90 + 0x270);
        assert_eq!(co.dynamic_symbol("vector_copy"), Some((0x1b00, 96)));
        assert_eq!(co.dynamic_relocations().unwrap().count(), 0);
        assert_eq!(co.variables().count(), 0);
        let kd = co.bytes_at_vaddr(0x9c0, 64).unwrap();
        assert_eq!(
            &kd[8..12],
            &16u32.to_le_bytes(),
            "kernarg_size of vector_copy"
        );
        assert!(co.bytes_at_vaddr(u64::MAX - 10, 64).is_none());
        assert_eq!(
            co.kernel("vector_add.kd").unwrap().metadata.name,
            "vector_add"
        );
        assert_eq!(
            co.kernel("nope").unwrap_err().status(),
            Status::InvalidSymbolName
        );
    }

    #[test]
    fn text_and_kernel_code_of_a_real_file() {
        // llvm-readelf-19 -S --dyn-syms kernels-gfx900-v4.hsaco: .text is section 7 at 0x1b00
        // (file offset 0xb00), 0x28c bytes; vector_copy 96 bytes at 0x1b00, vector_add 128
        // at 0x1c00, local_reverse 140 at 0x1d00; the code starts with `s_load_dword s9,
        // s[4:5], 0x4` (C0020242 00000004).
        let aligned = AlignedBytes::new(FILE);
        let co = CodeObject::parse(aligned.as_bytes()).unwrap();
        let text = co.text_section().unwrap();
        assert_eq!((text.index, text.vaddr, text.end()), (7, 0x1b00, 0x1d8c));
        assert_eq!(text.bytes, &FILE[0xb00..0xd8c]);
        let mut codes: alloc::vec::Vec<_> = co
            .kernels()
            .map(|k| co.kernel_code(&k.unwrap()).unwrap())
            .map(|c| (c.symbol, c.vaddr, c.code.len()))
            .collect();
        codes.sort();
        assert_eq!(
            codes,
            [
                ("local_reverse", 0x1d00, 140),
                ("vector_add", 0x1c00, 128),
                ("vector_copy", 0x1b00, 96)
            ]
        );
        let k = co.kernel("vector_copy").unwrap();
        assert_eq!(
            &co.kernel_code(&k).unwrap().code[..8],
            &[0x42, 0x02, 0x02, 0xC0, 4, 0, 0, 0]
        );
        let mut labels: alloc::vec::Vec<_> =
            co.text_symbols().unwrap().map(|s| s.unwrap()).collect();
        labels.sort();
        assert_eq!(
            labels,
            [
                ("local_reverse", 0x1d00),
                ("vector_add", 0x1c00),
                ("vector_copy", 0x1b00)
            ]
        );
    }
}
