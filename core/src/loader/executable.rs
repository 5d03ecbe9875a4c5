//! Executables: code objects loaded for agents, their symbols, and their lifetime.
//!
//! Ref: HSA Runtime 1.2 §2.9 "Code objects and executables" (`hsa_executable_create_alt`,
//! `hsa_executable_load_agent_code_object`, `hsa_executable_freeze`,
//! `hsa_executable_validate`, `hsa_executable_destroy`, `hsa_executable_get_symbol_by_name`,
//! `hsa_executable_symbol_get_info`); LLVM AMDGPUUsage "Loader" and "Kernel Descriptor".

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::code_object::{AlignedBytes, CodeObject, CODE_OBJECT_ALIGN};
use super::image::OwnedChunk;
use super::reloc::apply_relocation;
use crate::addr::{GpuVa, NodeId};
use crate::isa::TargetId;
use crate::platform::{MemoryChunk, MemoryFlags, MemoryKind, MemoryRequest, Platform};
use crate::platform_ref::PlatformRef;
use crate::status::{Error, Result, Status};

/// Page size used to round code object allocations, bytes.
const PAGE_BYTES: u64 = 4096;

/// What a symbol is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// A kernel (`HSA_SYMBOL_KIND_KERNEL`): its address is the kernel object.
    Kernel,
    /// A global variable (`HSA_SYMBOL_KIND_VARIABLE`).
    Variable,
}

/// The kernel-specific part of a symbol's info (`HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The kernel's source name (`.name`), e.g. `vector_copy`.
    pub kernel_name: String,
    /// `KERNEL_OBJECT`: device address of the loaded 64-byte kernel descriptor (64-aligned);
    /// goes into a dispatch packet's `kernel_object`.
    pub kernel_object: GpuVa,
    /// `KERNARG_SEGMENT_SIZE`, bytes (hidden arguments included).
    pub kernarg_segment_size: u32,
    /// `KERNARG_SEGMENT_ALIGNMENT`, bytes: the metadata's `.kernarg_segment_align`, raised to
    /// 16, the least alignment of a kernarg segment HSA allows (ROCR reports 16 for every code
    /// object v3 and later, and rocrtst asserts at least 16).
    pub kernarg_segment_align: u32,
    /// `GROUP_SEGMENT_SIZE`: fixed group (LDS) memory, bytes.
    pub group_segment_size: u32,
    /// `PRIVATE_SEGMENT_SIZE`: fixed private memory per work-item, bytes.
    pub private_segment_size: u32,
    /// `DYNAMIC_CALLSTACK`: whether the kernel needs a dynamically sized call stack.
    pub dynamic_callstack: bool,
    /// Lanes per wavefront (32 or 64).
    pub wavefront_size: u32,
}

/// One symbol of an executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// Kernel or variable.
    pub kind: SymbolKind,
    /// The ELF symbol name (`vector_copy.kd` for a kernel, as ROCR and HIP name it).
    pub name: String,
    /// The agent the code object was loaded for.
    pub node: NodeId,
    /// Device address: the kernel object for a kernel, the variable's address for a variable.
    pub address: GpuVa,
    /// Size, bytes: 64 for a kernel (its descriptor), `st_size` for a variable.
    pub size_bytes: u64,
    /// Kernel details; `None` for a variable.
    pub kernel: Option<KernelInfo>,
}

/// A variable the application defines for the code objects loaded after it to refer to: an
/// undefined symbol of theirs with this name resolves to `address`
/// (`hsa_executable_agent_global_variable_define`, `hsa_executable_readonly_variable_define`,
/// `hsa_executable_global_variable_define`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalVariable {
    /// The symbol name.
    pub name: String,
    /// The agent whose code objects it is for; `None`: every agent's (program allocation).
    pub node: Option<NodeId>,
    /// Its device address.
    pub address: GpuVa,
    /// Defined in the read-only segment (`hsa_executable_readonly_variable_define`).
    pub read_only: bool,
}

/// A code object loaded into an executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedCodeObject {
    /// The agent it was loaded for.
    pub node: NodeId,
    /// The code object's target.
    pub target: TargetId,
    /// Device address that file vaddr 0 maps to (`B` of the relocations).
    pub load_base: GpuVa,
    /// The memory holding the image.
    pub chunk: MemoryChunk,
}

/// An executable: code objects loaded for agents, frozen before use.
///
/// Owns the memory of its loaded images and frees it on [`Executable::destroy`] or drop. As
/// with `hsa_executable_destroy`, the application must not destroy an executable whose
/// kernels are still running.
/// # Example
/// The project's `vector_copy` code object for gfx90a loaded for the fake platform's GPU
/// (node 1):
/// ```
/// use hsa_core::isa::TargetId;
/// use hsa_core::loader::executable::Executable;
/// use hsa_core::platform::fake::FakePlatform;
/// use hsa_core::platform::MemoryKind;
/// use hsa_core::NodeId;
///
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/codeobjects");
/// let code_object = std::fs::read(format!("{dir}/kernels-gfx90a-v5.hsaco")).unwrap();
/// let platform = FakePlatform::new();
/// let isa = TargetId::parse("gfx90a:sramecc+:xnack-")?;
/// let mut executable = Executable::new(&platform);
/// executable.load_code_object(NodeId(1), &isa, &code_object, MemoryKind::System)?;
/// executable.freeze()?;
/// let symbol = executable.symbol_by_name("vector_copy", Some(NodeId(1)))?;
/// let kernel = symbol.kernel.as_ref().expect("a kernel");
/// assert_eq!((kernel.kernarg_segment_size, kernel.group_segment_size), (16, 0));
/// executable.destroy()?;
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub struct Executable<H: PlatformRef> {
    platform: H,
    frozen: bool,
    loaded: Vec<LoadedCodeObject>,
    chunks: Vec<OwnedChunk<H>>,
    symbols: Vec<Symbol>,
    externals: Vec<ExternalVariable>,
}

impl<H: PlatformRef> core::fmt::Debug for Executable<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Executable")
            .field("frozen", &self.frozen)
            .field("loaded", &self.loaded)
            .field("symbols", &self.symbols)
            .finish()
    }
}

impl<H: PlatformRef> Executable<H> {
    /// An empty, unfrozen executable (`hsa_executable_create_alt`).
    pub fn new(platform: H) -> Self {
        Executable {
            platform,
            frozen: false,
            loaded: Vec::new(),
            chunks: Vec::new(),
            symbols: Vec::new(),
            externals: Vec::new(),
        }
    }

    /// Defines a variable for the undefined symbols of the code objects loaded after it (see
    /// [`ExternalVariable`]): an agent's definition is used for that agent's code objects, a
    /// program definition (`node: None`) for every agent's where the agent has none.
    ///
    /// # Errors
    /// `Status::FrozenExecutable` when the executable is frozen;
    /// `Status::VariableAlreadyDefined` when a variable of that name is already defined for
    /// the same agent (or for the program), as ROCR 5.2's `DefineAgentExternalVariable`.
    pub fn define_variable(&mut self, variable: ExternalVariable) -> Result<()> {
        if self.frozen {
            crate::bail!(
                Status::FrozenExecutable,
                "cannot define {:?} in a frozen executable",
                variable.name
            );
        }
        if self
            .externals
            .iter()
            .any(|v| v.name == variable.name && v.node == variable.node)
        {
            crate::bail!(
                Status::VariableAlreadyDefined,
                "{:?} is already defined for {}",
                variable.name,
                match variable.node {
                    Some(n) => alloc::format!("node {}", n.0),
                    None => String::from("the program"),
                }
            );
        }
        self.externals.push(variable);
        Ok(())
    }

    /// The variables defined with [`Executable::define_variable`], in definition order.
    pub fn external_variables(&self) -> &[ExternalVariable] {
        &self.externals
    }

    /// The address an undefined symbol `name` of a code object loaded for `node` resolves to.
    fn external(&self, name: &str, node: NodeId) -> Option<GpuVa> {
        let of = |want: Option<NodeId>| {
            self.externals
                .iter()
                .find(|v| v.name == name && v.node == want)
                .map(|v| v.address)
        };
        of(Some(node)).or_else(|| of(None))
    }

    /// Loads a code object for the agent `node` whose ISA is `agent_isa`
    /// (`hsa_executable_load_agent_code_object`): checks it, checks that its target runs on
    /// the agent, allocates one chunk of `memory` (flags `EXECUTABLE | HOST_ACCESS`) covering
    /// the whole image, copies the `PT_LOAD` segments (zero-filling the rest), applies the
    /// dynamic relocations, maps the chunk to the agent and adds the kernels and variables to
    /// the symbols. Returns the index of the loaded code object.
    ///
    /// # Errors
    /// - `Status::FrozenExecutable` when the executable is frozen.
    /// - `Status::InvalidCodeObject` for a malformed code object (see [`CodeObject::parse`]) or
    ///   a bad relocation.
    /// - `Status::IncompatibleArguments` when the code object's ISA does not run on
    ///   `agent_isa` (the message names both ISAs). This is the code `hsa.h` documents for
    ///   `hsa_executable_load_agent_code_object` when "the agent does not support the
    ///   instruction set architecture of the code object".
    /// - `Status::VariableUndefined` for a relocation against an undefined symbol that no
    ///   [`Executable::define_variable`] defines for the agent or the program.
    /// - `Status::InvalidAllocation` when the platform's memory has no host pointer.
    /// - The platform's status when allocating or mapping fails (e.g. `OutOfResources`).
    pub fn load_code_object(
        &mut self,
        node: NodeId,
        agent_isa: &TargetId,
        code_object: &[u8],
        memory: MemoryKind,
    ) -> Result<usize> {
        if self.frozen {
            crate::bail!(
                Status::FrozenExecutable,
                "cannot load a code object into a frozen executable"
            );
        }
        // The reader needs 8-byte aligned bytes; copy a misaligned input once.
        let aligned_copy: AlignedBytes;
        let code_object = if code_object.as_ptr() as usize % CODE_OBJECT_ALIGN == 0 {
            code_object
        } else {
            aligned_copy = AlignedBytes::new(code_object);
            aligned_copy.as_bytes()
        };
        let co = CodeObject::parse(code_object)?;
        co.target().check_runs_on(agent_isa)?;

        let size_bytes = co.image_size().div_ceil(PAGE_BYTES) * PAGE_BYTES;
        let request = MemoryRequest {
            node,
            kind: memory,
            size_bytes,
            align_bytes: co.image_align().max(PAGE_BYTES),
            flags: MemoryFlags::EXECUTABLE | MemoryFlags::HOST_ACCESS,
        };
        let mut owned = OwnedChunk::allocate(self.platform.clone(), &request)?;
        // On error `owned` is dropped here, which frees the chunk.
        let symbols = self.fill_and_register(&co, node, &mut owned)?;
        let chunk = *owned.chunk();
        let load_base = GpuVa(chunk.gpu_va.get().wrapping_sub(co.image_start()));
        self.loaded.push(LoadedCodeObject {
            node,
            target: co.target(),
            load_base,
            chunk,
        });
        self.chunks.push(owned);
        log::debug!(
            "code object for {} loaded on node {}: {} bytes at {:#x}, {} symbols",
            agent_isa,
            node.0,
            chunk.size_bytes,
            chunk.gpu_va.get(),
            symbols.len()
        );
        self.symbols.extend(symbols);
        Ok(self.loaded.len() - 1)
    }

    fn fill_and_register(
        &self,
        co: &CodeObject<'_>,
        node: NodeId,
        owned: &mut OwnedChunk<H>,
    ) -> Result<Vec<Symbol>> {
        let chunk: MemoryChunk = *owned.chunk();
        if chunk.size_bytes < co.image_size() || chunk.gpu_va.get() % co.image_align() != 0 {
            crate::bail!(
                Status::InvalidAllocation,
                "platform returned {} bytes at {}; the image needs {} bytes aligned to {}",
                chunk.size_bytes,
                chunk.gpu_va,
                co.image_size(),
                co.image_align()
            );
        }
        let start = co.image_start();
        let load_base = chunk.gpu_va.get().checked_sub(start).ok_or_else(|| {
            crate::error!(
                Status::InvalidAllocation,
                "chunk at {} is below the image start {start:#x}",
                chunk.gpu_va
            )
        })?;
        owned.with_host_bytes(|image| -> Result<()> {
            for seg in co.load_segments() {
                // parse() checked vaddr >= image_start and vaddr + memsz <= image end.
                let at = usize::try_from(seg.vaddr - start)
                    .map_err(|_| Error::from(Status::InvalidCodeObject))?;
                let mem = usize::try_from(seg.mem_size)
                    .map_err(|_| Error::from(Status::InvalidCodeObject))?;
                let dst = image.get_mut(at..at + mem).ok_or_else(|| {
                    crate::error!(
                        Status::InvalidCodeObject,
                        "segment at {:#x} does not fit the image",
                        seg.vaddr
                    )
                })?;
                let (file_part, bss) = dst.split_at_mut(seg.file_bytes.len());
                file_part.copy_from_slice(seg.file_bytes);
                bss.fill(0);
            }
            for r in co.dynamic_relocations()? {
                let r = r?;
                let s = if r.symbol == 0 {
                    0
                } else {
                    let (name, value, defined) = co.dynamic_symbol_by_index(r.symbol)?;
                    if defined {
                        load_base.wrapping_add(value)
                    } else if let Some(address) = self.external(name, node) {
                        address.get()
                    } else {
                        crate::bail!(
                            Status::VariableUndefined,
                            "relocation at {:#x} refers to undefined symbol {name:?}, which \
                             the executable does not define",
                            r.offset
                        );
                    }
                };
                apply_relocation(image, start, load_base, &r, s)?;
            }
            Ok(())
        })??;
        self.platform
            .map_memory(&chunk, &[node])
            .map_err(|e| e.context("mapping code object memory"))?;

        let mut symbols = Vec::new();
        for k in co.kernels() {
            let k = k?;
            let kernel_object = GpuVa(load_base.wrapping_add(k.descriptor_vaddr));
            if kernel_object.get() % 64 != 0 {
                crate::bail!(
                    Status::InvalidCodeObject,
                    "kernel {:?}: kernel object {kernel_object} is not 64-byte aligned",
                    k.metadata.name
                );
            }
            let m = &k.metadata;
            symbols.push(Symbol {
                kind: SymbolKind::Kernel,
                name: m.symbol.to_string(),
                node,
                address: kernel_object,
                size_bytes: 64,
                kernel: Some(KernelInfo {
                    kernel_name: m.name.to_string(),
                    kernel_object,
                    kernarg_segment_size: m.kernarg_segment_size,
                    kernarg_segment_align: m.kernarg_segment_align.max(16),
                    group_segment_size: m.group_segment_fixed_size,
                    private_segment_size: m.private_segment_fixed_size,
                    dynamic_callstack: m.uses_dynamic_stack || k.descriptor.uses_dynamic_stack(),
                    wavefront_size: m.wavefront_size,
                }),
            });
        }
        for v in co.variables() {
            let v = v?;
            symbols.push(Symbol {
                kind: SymbolKind::Variable,
                name: v.name.to_string(),
                node,
                address: GpuVa(load_base.wrapping_add(v.vaddr)),
                size_bytes: v.size,
                kernel: None,
            });
        }
        Ok(symbols)
    }

    /// Freezes the executable (`hsa_executable_freeze`): no more code objects may be loaded.
    ///
    /// # Errors
    /// `Status::FrozenExecutable` when it is already frozen.
    pub fn freeze(&mut self) -> Result<()> {
        if self.frozen {
            crate::bail!(Status::FrozenExecutable, "executable is already frozen");
        }
        self.frozen = true;
        Ok(())
    }

    /// Whether [`Executable::freeze`] has been called.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Checks the executable (`hsa_executable_validate`): every symbol's address lies inside
    /// the memory of a code object loaded for its agent, and every kernel object is 64-byte
    /// aligned.
    ///
    /// # Errors
    /// `Status::InvalidExecutable` naming the first symbol that fails.
    pub fn validate(&self) -> Result<()> {
        for s in &self.symbols {
            let inside = self.loaded.iter().any(|l| {
                l.node == s.node
                    && s.address.get() >= l.chunk.gpu_va.get()
                    && s.address
                        .get()
                        .checked_add(s.size_bytes)
                        .is_some_and(|e| e <= l.chunk.gpu_va.get() + l.chunk.size_bytes)
            });
            if !inside {
                crate::bail!(
                    Status::InvalidExecutable,
                    "symbol {:?} at {} lies outside its code object's memory",
                    s.name,
                    s.address
                );
            }
            if s.kind == SymbolKind::Kernel && s.address.get() % 64 != 0 {
                crate::bail!(
                    Status::InvalidExecutable,
                    "kernel {:?}: kernel object {} is not 64-byte aligned",
                    s.name,
                    s.address
                );
            }
        }
        Ok(())
    }

    /// The code objects loaded so far, in load order.
    pub fn loaded_code_objects(&self) -> &[LoadedCodeObject] {
        &self.loaded
    }

    /// All symbols, in load order (`hsa_executable_iterate_agent_symbols`).
    pub fn symbols(&self) -> impl Iterator<Item = &Symbol> + '_ {
        self.symbols.iter()
    }

    /// The symbol named `name` for agent `node` (any agent when `None`)
    /// (`hsa_executable_get_symbol_by_name`). A kernel is found by its symbol name
    /// (`vector_copy.kd`) or by its source name (`vector_copy`).
    ///
    /// # Errors
    /// `Status::InvalidSymbolName` when no symbol matches.
    pub fn symbol_by_name(&self, name: &str, node: Option<NodeId>) -> Result<&Symbol> {
        let agent_ok = |s: &&Symbol| node.is_none_or(|n| n == s.node);
        self.symbols
            .iter()
            .filter(agent_ok)
            .find(|s| s.name == name)
            .or_else(|| {
                self.symbols
                    .iter()
                    .filter(agent_ok)
                    .find(|s| s.kernel.as_ref().is_some_and(|k| k.kernel_name == name))
            })
            .ok_or_else(|| {
                crate::error!(
                    Status::InvalidSymbolName,
                    "no symbol named {name:?} in the executable"
                )
            })
    }

    /// Destroys the executable (`hsa_executable_destroy`), freeing the memory of every
    /// loaded code object.
    ///
    /// # Errors
    /// The platform's status (`Status::ResourceFree`) for the first chunk that could not be
    /// freed; the others are still freed.
    pub fn destroy(mut self) -> Result<()> {
        self.free_all()
    }

    fn free_all(&mut self) -> Result<()> {
        let mut first = Ok(());
        self.symbols.clear();
        self.loaded.clear();
        for chunk in self.chunks.drain(..) {
            let r = chunk.free();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
