//! The KFD sysfs topology: `/sys/devices/virtual/kfd/kfd/topology` or a captured copy of it.
//!
//! Layout (linux `drivers/gpu/drm/amd/amdkfd/kfd_topology.c`, `kfd_sysfs.h`):
//!
//! ```text
//! <root>/generation_id                      one decimal number
//! <root>/system_properties                  "platform_oem N", "platform_id N", "platform_rev N"
//! <root>/nodes/N/{name,gpu_id,properties}   name: one line (may be empty); gpu_id: a number
//! <root>/nodes/N/mem_banks/M/properties
//! <root>/nodes/N/caches/M/properties
//! <root>/nodes/N/io_links/M/properties
//! <root>/nodes/N/p2p_links/M/properties
//! ```
//!
//! A properties file is lines of `<key> <value>`. [`parse_properties`] splits them (pure, no I/O);
//! [`Topology::read`] walks a root and fills [`NodeProperties`] and friends.
//!
//! # Tolerance and errors
//! - Unknown keys are kept by [`parse_properties`] and ignored by the reader; missing keys read as
//!   0. Optional files may be missing: `generation_id`, `system_properties`, `name`, `gpu_id`,
//!   and the `mem_banks`, `caches`, `io_links`, `p2p_links` directories (dumps often omit them,
//!   and counts such as `caches_count` need not match what is present). Only a node's
//!   `properties` file is required.
//! - Every parse error is [`Status::Error`] with a message starting `"<path>:<line>: "` (or
//!   `"<path>: "` for whole-file problems), so the bad file and line can be found.
//! - Limits keep hostile input from exhausting memory: files above [`MAX_FILE_BYTES`], lines
//!   above [`MAX_LINE_BYTES`], more than [`MAX_NODES`] nodes or [`MAX_ENTRIES`] banks/caches/links
//!   per node are errors, never a panic.
//! - Values amdkfd cannot report are errors naming the file, line, node, field and value, so
//!   that every consumer (hsainfo, queue creation, the emulated device) sees the same refusal
//!   instead of each deriving its own answer: an empty properties file; on a GPU node
//!   (`simd_count > 0`), `simd_count` above [`MAX_SIMD_COUNT`], `simd_per_cu` outside
//!   `1..=simd_count` (no compute unit), a `wave_front_size` the node's ISA cannot run
//!   ([`Processor::wavefront_sizes`]); an IO or P2P link whose `node_to` is not a node of
//!   the topology. `node_from` is not checked: the 2018 MI25 dump has a link whose `node_from`
//!   (1) is not its own node (2).
//!
//! Nodes are ordered by their numeric directory name (`nodes/10` after `nodes/9`).

// hsa_core::Error carries its message inline (no allocator in core) by design, so it is large.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use hsa_core::isa::{Processor, TargetId};
use hsa_core::platform::{Cache, HeapType, IoLink, MemoryBank, NodeProperties};
use hsa_core::{error, Error, Status};

use crate::isa;

/// Copies a `&str` into a fixed-capacity name (`heapless::String`), cutting at a char boundary
/// when it does not fit. A macro so that this crate names no `heapless` type.
macro_rules! set_name {
    ($dst:expr, $s:expr) => {{
        $dst.clear();
        for c in $s.chars() {
            if $dst.push(c).is_err() {
                break;
            }
        }
    }};
}

/// The topology root on a live Linux system.
pub const DEFAULT_ROOT: &str = "/sys/devices/virtual/kfd/kfd/topology";

/// The host's system device tree, where libhsakmt reads the CPU nodes' caches
/// ([`Topology::cpu_caches_from`]).
pub const HOST_SYSTEM_ROOT: &str = "/sys/devices/system";

/// Largest file the reader accepts, bytes. Real properties files are under 2 KiB; a CPU cache's
/// `sibling_map` on a large machine is the longest line, a few KiB.
pub const MAX_FILE_BYTES: usize = 64 * 1024;

/// Longest line [`parse_properties`] accepts, bytes.
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// Most nodes a topology may have: the runtime's limit on agents,
/// [`hsa_core::addr::MAX_AGENTS`] (128), so that every topology the reader accepts fits every
/// per-agent table of the runtime (the largest capture of the test data, an MI300X system in CPX
/// mode, has 65 nodes).
pub const MAX_NODES: usize = hsa_core::addr::MAX_AGENTS;

/// Most memory banks, caches, IO links or P2P links a node may have (MI210: 217 caches).
pub const MAX_ENTRIES: usize = 4096;

/// One `<key> <value>` line of a properties file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Property<'a> {
    /// The key: ASCII letters, digits and `_`.
    pub key: &'a str,
    /// The value with surrounding whitespace removed (never empty); usually a decimal number,
    /// but not always (`sibling_map 1,0,0,...`).
    pub value: &'a str,
    /// 1-based line number in the file.
    pub line: usize,
}

/// Splits the text of a sysfs properties file into `<key> <value>` pairs, in file order.
/// `file` names the file in error messages. Blank lines are skipped; values are kept as text
/// (see [`Properties`] for typed lookups).
///
/// # Errors
/// [`Status::Error`], message `"<file>:<line>: ..."`, when a line:
/// - is longer than [`MAX_LINE_BYTES`] (`"line longer than ..."`),
/// - has a key but no value (`"malformed line ... expected '<key> <value>'"`),
/// - has a key with a character other than ASCII letters, digits or `_` (`"malformed key"`),
/// - repeats a key seen earlier in the file (`"duplicate key"`).
pub fn parse_properties<'a>(text: &'a str, file: &str) -> Result<Vec<Property<'a>>, Error> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.len() > MAX_LINE_BYTES {
            return Err(error!(
                Status::Error,
                "{file}:{line}: line longer than {MAX_LINE_BYTES} bytes ({})",
                raw.len()
            ));
        }
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        let (key, value) = match trimmed.split_once(|c: char| c.is_ascii_whitespace()) {
            Some((k, v)) if !v.trim().is_empty() => (k, v.trim()),
            _ => {
                return Err(error!(
                    Status::Error,
                    "{file}:{line}: malformed line '{}': expected '<key> <value>'",
                    shorten(trimmed)
                ))
            }
        };
        if !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(error!(
                Status::Error,
                "{file}:{line}: malformed key '{}'",
                shorten(key)
            ));
        }
        if !seen.insert(key) {
            return Err(error!(
                Status::Error,
                "{file}:{line}: duplicate key '{key}'"
            ));
        }
        out.push(Property { key, value, line });
    }
    Ok(out)
}

/// At most 32 bytes of `s` (on a char boundary), for messages.
fn shorten(s: &str) -> &str {
    let mut end = s.len().min(32);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A parsed properties file with typed lookups that name the file and line on error.
#[derive(Clone, Debug)]
pub struct Properties<'a> {
    file: String,
    entries: Vec<Property<'a>>,
}

impl<'a> Properties<'a> {
    /// Parses `text` (see [`parse_properties`]); `file` names it in messages.
    ///
    /// # Errors
    /// As [`parse_properties`].
    pub fn parse(text: &'a str, file: &str) -> Result<Properties<'a>, Error> {
        Ok(Properties {
            file: file.to_owned(),
            entries: parse_properties(text, file)?,
        })
    }

    /// All entries, in file order (unknown keys included).
    pub fn entries(&self) -> &[Property<'a>] {
        &self.entries
    }

    /// The raw value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.entries.iter().find(|p| p.key == key).map(|p| p.value)
    }

    /// `"<file>:<line>"` of `key`, or `"<file>"` when the key is absent (for messages).
    pub fn location(&self, key: &str) -> String {
        match self.entries.iter().find(|p| p.key == key) {
            Some(p) => format!("{}:{}", self.file, p.line),
            None => self.file.clone(),
        }
    }

    /// `key` as an unsigned decimal 64-bit number; `None` when absent.
    ///
    /// # Errors
    /// [`Status::Error`], `"<file>:<line>: <key> value '<v>' is not a decimal number"`.
    pub fn u64(&self, key: &str) -> Result<Option<u64>, Error> {
        let Some(p) = self.entries.iter().find(|p| p.key == key) else {
            return Ok(None);
        };
        match p.value.parse::<u64>() {
            Ok(v) if p.value.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(v)),
            _ => Err(error!(
                Status::Error,
                "{}:{}: {key} value '{}' is not a decimal number",
                self.file,
                p.line,
                shorten(p.value)
            )),
        }
    }

    /// `key` as an unsigned 32-bit number; 0 when absent.
    ///
    /// # Errors
    /// [`Status::Error`] when not a decimal number (see [`Properties::u64`]) or above
    /// `u32::MAX` (`"... out of range for u32"`).
    pub fn u32_or_0(&self, key: &str) -> Result<u32, Error> {
        let Some(v) = self.u64(key)? else {
            return Ok(0);
        };
        u32::try_from(v).map_err(|_| {
            let line = self
                .entries
                .iter()
                .find(|p| p.key == key)
                .map_or(0, |p| p.line);
            error!(
                Status::Error,
                "{}:{line}: {key} value {v} out of range for u32", self.file
            )
        })
    }

    /// `key` as an unsigned 64-bit number; 0 when absent.
    ///
    /// # Errors
    /// As [`Properties::u64`].
    pub fn u64_or_0(&self, key: &str) -> Result<u64, Error> {
        Ok(self.u64(key)?.unwrap_or(0))
    }

    /// `key` as a signed 32-bit number (`drm_render_minor`); 0 when absent.
    ///
    /// # Errors
    /// [`Status::Error`] when not a decimal number or outside `i32`.
    pub fn i32_or_0(&self, key: &str) -> Result<i32, Error> {
        let Some(p) = self.entries.iter().find(|p| p.key == key) else {
            return Ok(0);
        };
        let digits = p.value.strip_prefix('-').unwrap_or(p.value);
        match p.value.parse::<i32>() {
            Ok(v) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(v),
            _ => Err(error!(
                Status::Error,
                "{}:{}: {key} value '{}' is not an i32",
                self.file,
                p.line,
                shorten(p.value)
            )),
        }
    }
}

/// `system_properties`: the platform's ACPI OEM ids (all 0 when the file is absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemProperties {
    /// `platform_oem`: the ACPI OEM id, as a number.
    pub platform_oem: u64,
    /// `platform_id`: the ACPI OEM table id, as a number.
    pub platform_id: u64,
    /// `platform_rev`: the ACPI OEM revision.
    pub platform_rev: u64,
}

/// One topology node with everything under `nodes/N`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyNode {
    /// `properties`, `name` and `gpu_id`, plus what was derived (ISA, marketing name).
    pub properties: NodeProperties,
    /// `mem_banks/M`, in numeric order of M (empty when the dump has none).
    pub memory_banks: Vec<MemoryBank>,
    /// `caches/M`, in numeric order of M.
    pub caches: Vec<Cache>,
    /// `io_links/M` then `p2p_links/M` (the latter with `p2p == true`), each in numeric order.
    pub io_links: Vec<IoLink>,
}

impl TopologyNode {
    /// The node's processor (gfx90a) from `gfx_target_version` (filled in from the device id
    /// on kernels that did not report it); `None` for a CPU or a GPU the processor table does
    /// not have.
    pub fn processor(&self) -> Option<Processor> {
        self.target_id(false).map(|t| t.processor)
    }

    /// The node's target id in a process whose XNACK mode is `xnack_on`
    /// (`gfx90a:sramecc+:xnack-`; its [`TargetId::isa_name`] is ROCR's ISA name): the value
    /// the runtime's agent for this node has, through the same derivation
    /// ([`TargetId::of_node`]). `None` where [`TopologyNode::processor`] is.
    pub fn target_id(&self, xnack_on: bool) -> Option<TargetId> {
        TargetId::of_node(&self.properties, xnack_on)
    }

    /// Bytes of frame-buffer memory (public + private heaps) in `mem_banks`; 0 when the dump
    /// has no banks.
    pub fn local_memory_bytes(&self) -> u64 {
        self.memory_banks
            .iter()
            .filter(|b| {
                matches!(
                    b.heap_type,
                    HeapType::FrameBufferPublic | HeapType::FrameBufferPrivate
                )
            })
            .fold(0u64, |a, b| a.saturating_add(b.size_bytes))
    }
}

/// A whole KFD topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// `generation_id`: bumped by the kernel on every topology change; `None` when absent.
    pub generation_id: Option<u64>,
    /// `system_properties` (zeros when absent).
    pub system: SystemProperties,
    /// The nodes in numeric order of N.
    pub nodes: Vec<TopologyNode>,
}

impl Topology {
    /// Reads the live topology at [`DEFAULT_ROOT`].
    ///
    /// # Errors
    /// As [`Topology::read`].
    pub fn read_default() -> Result<Topology, Error> {
        let mut t = Topology::read(Path::new(DEFAULT_ROOT))?;
        t.name_cpus_from_host();
        if let Err(e) = t.cpu_caches_from(&Filesystem, Path::new(HOST_SYSTEM_ROOT)) {
            // The caches are informational (HSA_AGENT_INFO_CACHE_SIZE, the cache API): the
            // runtime runs without them, as libhsakmt does when the tree is absent.
            log::warn!("CPU caches left out: {}", e.detail());
        }
        Ok(t)
    }

    /// Gives each CPU node that has no caches (amdkfd reports none for CPUs) the caches of
    /// the host's CPU cache tree under `system` (normally [`HOST_SYSTEM_ROOT`]), as libhsakmt's
    /// `topology_get_cpu_cache_props` does: for CPU node `N`, every `cpu<P>` directory of
    /// `node/node<N>` (for node 0 without that directory, of `cpu`, as a kernel without NUMA
    /// has it), in the order of P, and in each every `cache/index<K>` whose `shared_cpu_list`
    /// starts with P (a cache shared by several CPUs is listed once, for the first); its
    /// `level`, `type` (`Data` 1, `Instruction` 2, `Unified` 3, with the CPU bit 4), `size`
    /// (KiB: `32K`, `1M`) and `coherency_line_size` (bytes). `processor_id_low` is P. Nodes
    /// that have caches, and CPU nodes without a tree, are left as they are.
    ///
    /// # Errors
    /// [`Status::Error`] naming the file that cannot be read or parsed (the nodes before it
    /// keep what was read).
    pub fn cpu_caches_from(&mut self, tree: &dyn SysfsTree, system: &Path) -> Result<(), Error> {
        for (index, node) in self.nodes.iter_mut().enumerate() {
            let p = &node.properties;
            if p.simd_count != 0 || p.cpu_cores_count == 0 || !node.caches.is_empty() {
                continue;
            }
            let mut dir = system.join("node").join(format!("node{index}"));
            let mut cpus = prefixed_entries(tree, &dir, "cpu")?;
            if cpus.is_empty() && index == 0 {
                dir = system.join("cpu");
                cpus = prefixed_entries(tree, &dir, "cpu")?;
            }
            let mut caches = Vec::new();
            for (cpu, cpu_dir) in cpus {
                let cache_dir = cpu_dir.join("cache");
                for (_, d) in prefixed_entries(tree, &cache_dir, "index")? {
                    let first = read_capped(tree, &d.join("shared_cpu_list"))?;
                    let first = first
                        .trim()
                        .split([',', '-'])
                        .next()
                        .and_then(|n| n.parse::<u32>().ok());
                    if first != Some(cpu) {
                        continue;
                    }
                    if caches.len() == MAX_ENTRIES {
                        return Err(error!(
                            Status::Error,
                            "{}: more than {MAX_ENTRIES} CPU caches (MAX_ENTRIES)",
                            dir.display()
                        ));
                    }
                    caches.push(read_cpu_cache(tree, &d, cpu)?);
                }
            }
            node.caches = caches;
        }
        Ok(())
    }

    /// Names the CPU nodes that have no name after this machine's `/proc/cpuinfo`
    /// ([`Topology::name_cpus_from_cpuinfo`]), as libhsakmt does for every topology it reads:
    /// KFD leaves CPU nodes unnamed, so ROCR's CPU agents are named after the processor of
    /// the machine the program runs on — also over a captured topology, whose CPU nodes are
    /// then the running machine's as far as the runtime can tell. A missing or unreadable
    /// file leaves the names empty (they are informational).
    pub fn name_cpus_from_host(&mut self) {
        let mut cpuinfo = String::new();
        if let Ok(f) = fs::File::open("/proc/cpuinfo") {
            let _ = f.take(MAX_CPUINFO_BYTES).read_to_string(&mut cpuinfo);
        }
        self.name_cpus_from_cpuinfo(&cpuinfo);
    }

    /// Names every CPU node that has no name after the `model name` of the logical CPU in
    /// `cpuinfo` (the text of `/proc/cpuinfo`) whose `apicid` is the node's
    /// `cpu_core_id_base`, as libhsakmt does; failing that, after the first `model name`.
    /// Both `name` and `marketing_name` are set (rocminfo prints both); nodes with a name
    /// and GPU nodes are left alone. Text without any `model name` changes nothing.
    pub fn name_cpus_from_cpuinfo(&mut self, cpuinfo: &str) {
        let names = cpu_model_names(cpuinfo);
        let Some(first) = names.first() else {
            return;
        };
        for n in &mut self.nodes {
            let p = &mut n.properties;
            if p.simd_count != 0 || p.cpu_cores_count == 0 || !p.name.is_empty() {
                continue;
            }
            let name = names
                .iter()
                .find(|(apicid, _)| *apicid == Some(p.cpu_core_id_base))
                .unwrap_or(first)
                .1
                .as_str();
            set_name!(p.name, name);
            set_name!(p.marketing_name, name);
        }
    }

    /// Reads a topology root (the live one or a captured copy).
    ///
    /// # Errors
    /// [`Status::Error`] naming the path when: `<root>/nodes` cannot be listed; a node has no
    /// readable `properties`; a file is larger than [`MAX_FILE_BYTES`] or not UTF-8; there are
    /// more than [`MAX_NODES`] nodes or [`MAX_ENTRIES`] entries under one directory; the node
    /// numbers have a gap (`"node 1 is missing"`); a file is not a regular file (a FIFO, a
    /// device); any file fails to parse (see [`parse_properties`], [`Properties::u64`]); a
    /// properties file is empty, a GPU node's `simd_count`, `simd_per_cu` or
    /// `wave_front_size` is a value amdkfd cannot report, or a link's `node_to` is not a node
    /// (see the module doc, "Tolerance and errors").
    pub fn read(root: &Path) -> Result<Topology, Error> {
        Topology::read_from(&Filesystem, root)
    }

    /// Reads a topology root from `tree` (the file system, or a [`MemoryTree`] built in
    /// memory); [`Topology::read`] is this over [`Filesystem`].
    ///
    /// # Errors
    /// As [`Topology::read`]; errors of `tree` are reported with the path that failed.
    pub fn read_from(tree: &dyn SysfsTree, root: &Path) -> Result<Topology, Error> {
        let generation_id = match read_optional(tree, &root.join("generation_id"))? {
            Some(text) => Some(parse_single_number(&text, &root.join("generation_id"))?),
            None => None,
        };
        let system = match read_optional(tree, &root.join("system_properties"))? {
            Some(text) => {
                let path = root.join("system_properties");
                let p = Properties::parse(&text, &path.display().to_string())?;
                SystemProperties {
                    platform_oem: p.u64_or_0("platform_oem")?,
                    platform_id: p.u64_or_0("platform_id")?,
                    platform_rev: p.u64_or_0("platform_rev")?,
                }
            }
            None => SystemProperties::default(),
        };
        let nodes_dir = root.join("nodes");
        let ids = numbered_entries(
            tree,
            &nodes_dir,
            (MAX_NODES, "MAX_NODES, the runtime's MAX_AGENTS"),
            true,
        )?;
        // KFD numbers its nodes 0..N: a gap is a partial capture, not a smaller machine.
        if let Some((i, (id, _))) = ids
            .iter()
            .enumerate()
            .find(|(i, (id, _))| *id as usize != *i)
        {
            return Err(error!(
                Status::Error,
                "{}: node {i} is missing (found node {id} after {} node(s); KFD numbers nodes \
                 from 0 without gaps)",
                nodes_dir.display(),
                i
            ));
        }
        let node_count = ids.len();
        let mut nodes = Vec::with_capacity(node_count);
        for (id, dir) in ids {
            nodes.push(read_node(tree, id, &dir, node_count)?);
        }
        Ok(Topology {
            generation_id,
            system,
            nodes,
        })
    }

    /// Number of GPU nodes (nodes with SIMDs).
    pub fn gpu_count(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.properties.simd_count > 0)
            .count()
    }

    /// Number of CPU nodes (nodes with CPU cores and no SIMDs).
    pub fn cpu_count(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.properties.simd_count == 0 && n.properties.cpu_cores_count > 0)
            .count()
    }

    /// XGMI hives: `hive_id` (non-zero) to the node ids in it, ascending.
    pub fn xgmi_hives(&self) -> BTreeMap<u64, Vec<u32>> {
        let mut hives: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for n in &self.nodes {
            if n.properties.hive_id != 0 {
                hives
                    .entry(n.properties.hive_id)
                    .or_default()
                    .push(n.properties.node_id);
            }
        }
        hives
    }
}

/// The file-system operations [`Topology::read_from`] needs: reading a small file and listing
/// a directory. [`Filesystem`] is the real one; [`MemoryTree`] holds a tree in memory (tests,
/// fuzzing, and embedders that receive a topology as data rather than as files).
pub trait SysfsTree {
    /// At most `limit` bytes of the file at `path` (a longer file may be returned cut at
    /// `limit`, or whole; the reader rejects anything above [`MAX_FILE_BYTES`]).
    ///
    /// # Errors
    /// An [`io::Error`] of kind [`io::ErrorKind::NotFound`] when nothing is at `path`; any
    /// other error when `path` is a directory or cannot be read.
    fn read_file(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>>;

    /// The names of the entries directly inside the directory `dir`, in any order.
    ///
    /// # Errors
    /// An [`io::Error`] of kind [`io::ErrorKind::NotFound`] when nothing is at `dir`; any
    /// other error when `dir` is not a directory or cannot be listed.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>>;
}

/// The real file system ([`std::fs`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Filesystem;

impl SysfsTree for Filesystem {
    fn read_file(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        // sysfs attributes are regular files; opening a FIFO would block, a device could
        // stream forever.
        if !fs::metadata(path)?.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        let mut buf = Vec::new();
        fs::File::open(path)?
            .take(limit as u64)
            .read_to_end(&mut buf)?;
        Ok(buf)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        fs::read_dir(dir)?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect()
    }
}

/// A sysfs tree held in memory: files by path, with every ancestor directory of a file (and
/// any directory added with [`MemoryTree::add_dir`]) present. Paths are compared as given, so
/// build them from the same root that is passed to [`Topology::read_from`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryTree {
    files: BTreeMap<PathBuf, Vec<u8>>,
    dirs: BTreeSet<PathBuf>,
}

impl MemoryTree {
    /// An empty tree (no directories, so reading any root fails with "cannot list").
    pub fn new() -> MemoryTree {
        MemoryTree::default()
    }

    /// Adds the directory `dir` and its ancestors.
    pub fn add_dir(&mut self, dir: impl AsRef<Path>) {
        for a in dir.as_ref().ancestors() {
            if a.as_os_str().is_empty() || !self.dirs.insert(a.to_path_buf()) {
                break;
            }
        }
    }

    /// Adds (or replaces) the file at `path` with `bytes`, and its parent directories.
    pub fn add_file(&mut self, path: impl AsRef<Path>, bytes: impl Into<Vec<u8>>) {
        let path = path.as_ref();
        if let Some(parent) = path.parent() {
            self.add_dir(parent);
        }
        self.files.insert(path.to_path_buf(), bytes.into());
    }

    /// Copies every regular file under `root` on the file system into a new tree, under the
    /// same paths (symbolic links are not followed).
    ///
    /// # Errors
    /// [`Status::Error`] naming the path that could not be listed or read.
    pub fn capture(root: &Path) -> Result<MemoryTree, Error> {
        let mut tree = MemoryTree::new();
        tree.add_dir(root);
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            let rd = fs::read_dir(&dir)
                .map_err(|e| error!(Status::Error, "{}: cannot list: {e}", dir.display()))?;
            for entry in rd {
                let entry = entry
                    .map_err(|e| error!(Status::Error, "{}: cannot list: {e}", dir.display()))?;
                let path = entry.path();
                let kind = entry
                    .file_type()
                    .map_err(|e| error!(Status::Error, "{}: cannot stat: {e}", path.display()))?;
                if kind.is_dir() {
                    tree.add_dir(&path);
                    pending.push(path);
                } else if kind.is_file() {
                    let bytes = fs::read(&path).map_err(|e| {
                        error!(Status::Error, "{}: cannot read: {e}", path.display())
                    })?;
                    tree.add_file(path, bytes);
                }
            }
        }
        Ok(tree)
    }
}

impl SysfsTree for MemoryTree {
    fn read_file(&self, path: &Path, limit: usize) -> io::Result<Vec<u8>> {
        match self.files.get(path) {
            Some(bytes) => Ok(bytes[..bytes.len().min(limit)].to_vec()),
            None if self.dirs.contains(path) => Err(io::Error::other("is a directory")),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        if !self.dirs.contains(dir) {
            return Err(if self.files.contains_key(dir) {
                io::Error::other("not a directory")
            } else {
                io::ErrorKind::NotFound.into()
            });
        }
        // Path order is by components, so everything under `dir` follows it contiguously.
        let under = |p: &&PathBuf| p.starts_with(dir);
        let subdirs = self.dirs.range(dir.to_path_buf()..).take_while(under);
        let files = self.files.range(dir.to_path_buf()..).map(|(p, _)| p);
        let files = files.take_while(under);
        let children = subdirs
            .chain(files)
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_os_string()));
        Ok(children.collect())
    }
}

/// Most bytes of `/proc/cpuinfo` read (a 512-thread machine has ~1 MiB).
const MAX_CPUINFO_BYTES: u64 = 16 << 20;

/// The `(apicid, model name)` of every logical CPU in the text of `/proc/cpuinfo`, in file
/// order; `apicid` is `None` where the block has none (non-x86 machines).
pub fn cpu_model_names(cpuinfo: &str) -> Vec<(Option<u32>, String)> {
    let mut out = Vec::new();
    for block in cpuinfo.split("\n\n") {
        let mut model = None;
        let mut apicid = None;
        for line in block.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            match key.trim() {
                "model name" => model = Some(value.trim()),
                "apicid" => apicid = value.trim().parse::<u32>().ok(),
                _ => {}
            }
        }
        if let Some(m) = model.filter(|m| !m.is_empty()) {
            out.push((apicid, m.to_owned()));
        }
    }
    out
}

/// Reads a file of at most [`MAX_FILE_BYTES`] as UTF-8.
fn read_capped(tree: &dyn SysfsTree, path: &Path) -> Result<String, Error> {
    read_optional(tree, path)?.ok_or_else(|| {
        let e = io::Error::from(io::ErrorKind::NotFound);
        error!(Status::Error, "{}: cannot open: {e}", path.display())
    })
}

/// One `cache/index<K>` directory of CPU `cpu` ([`Topology::cpu_caches_from`]).
fn read_cpu_cache(tree: &dyn SysfsTree, dir: &Path, cpu: u32) -> Result<Cache, Error> {
    let number = |name: &str| -> Result<u32, Error> {
        let path = dir.join(name);
        let v = parse_single_number(&read_capped(tree, &path)?, &path)?;
        u32::try_from(v).map_err(|_| {
            error!(
                Status::Error,
                "{}:1: {v} does not fit 32 bits",
                path.display()
            )
        })
    };
    let type_path = dir.join("type");
    let kind = match read_capped(tree, &type_path)?.trim() {
        "Data" => 1,
        "Instruction" => 2,
        "Unified" => 3,
        other => {
            return Err(error!(
                Status::Error,
                "{}:1: '{}' is not Data, Instruction or Unified",
                type_path.display(),
                shorten(other)
            ))
        }
    };
    let size_path = dir.join("size");
    let size = read_capped(tree, &size_path)?;
    let size = size.trim();
    let (digits, scale) = match size.strip_suffix('K') {
        Some(d) => (d, 1),
        None => match size.strip_suffix('M') {
            Some(d) => (d, 1024),
            None => (size, 0),
        },
    };
    let size_kib = digits
        .parse::<u32>()
        .ok()
        .filter(|_| scale != 0)
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| {
            error!(
                Status::Error,
                "{}:1: '{}' is not a size in K or M",
                size_path.display(),
                shorten(size)
            )
        })?;
    Ok(Cache {
        processor_id_low: cpu,
        level: number("level")?,
        size_kib,
        cache_line_size_bytes: number("coherency_line_size")?,
        cache_type: kind | 4,
    })
}

/// The entries of `dir` named `<prefix><number>` (`cpu3`, `index0`), sorted by number; empty
/// when `dir` does not exist.
fn prefixed_entries(
    tree: &dyn SysfsTree,
    dir: &Path,
    prefix: &str,
) -> Result<Vec<(u32, PathBuf)>, Error> {
    let names = match tree.list_dir(dir) {
        Ok(names) => names,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(error!(Status::Error, "{}: cannot list: {e}", dir.display())),
    };
    let mut out = Vec::new();
    for name in names {
        let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix(prefix))
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if out.len() == MAX_ENTRIES {
            return Err(error!(
                Status::Error,
                "{}: more than {MAX_ENTRIES} {prefix}<N> entries (MAX_ENTRIES)",
                dir.display()
            ));
        }
        out.push((n, dir.join(&name)));
    }
    out.sort_by_key(|(n, _)| *n);
    Ok(out)
}

/// Like [`read_capped`] but `None` when the file does not exist.
fn read_optional(tree: &dyn SysfsTree, path: &Path) -> Result<Option<String>, Error> {
    let buf = match tree.read_file(path, MAX_FILE_BYTES + 1) {
        Ok(buf) => buf,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(error!(
                Status::Error,
                "{}: cannot read: {e}",
                path.display()
            ))
        }
    };
    if buf.len() > MAX_FILE_BYTES {
        return Err(error!(
            Status::Error,
            "{}: file larger than {MAX_FILE_BYTES} bytes",
            path.display()
        ));
    }
    String::from_utf8(buf).map(Some).map_err(|e| {
        error!(
            Status::Error,
            "{}: not UTF-8 at byte {}",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// A file holding one decimal number (`generation_id`, `gpu_id`).
fn parse_single_number(text: &str, path: &Path) -> Result<u64, Error> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error!(
            Status::Error,
            "{}:1: '{}' is not a decimal number",
            path.display(),
            shorten(t)
        ));
    }
    t.parse::<u64>().map_err(|_| {
        error!(
            Status::Error,
            "{}:1: '{}' does not fit 64 bits",
            path.display(),
            shorten(t)
        )
    })
}

/// The numerically named subdirectories of `dir`, sorted by number. Other names are skipped.
/// A missing `dir` is an error when `required`, else empty.
/// `cap_name` names the limit `cap` in the error for too many entries.
fn numbered_entries(
    tree: &dyn SysfsTree,
    dir: &Path,
    (cap, cap_name): (usize, &str),
    required: bool,
) -> Result<Vec<(u32, PathBuf)>, Error> {
    let names = match tree.list_dir(dir) {
        Ok(names) => names,
        Err(e) if !required && e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(error!(Status::Error, "{}: cannot list: {e}", dir.display())),
    };
    let mut out = Vec::new();
    for name in names {
        let Some(n) = name
            .to_str()
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(n) = n.parse::<u32>() else { continue };
        if out.len() == cap {
            return Err(error!(
                Status::Error,
                "{}: more than {cap} entries ({cap_name})",
                dir.display()
            ));
        }
        out.push((n, dir.join(&name)));
    }
    out.sort_by_key(|(n, _)| *n);
    Ok(out)
}

/// Reads and parses the properties file at `path` of node `id` into `text`'s buffer.
///
/// # Errors
/// As [`read_capped`] and [`Properties::parse`]; [`Status::Error`] when the file holds no
/// `<key> <value>` line (amdkfd never writes an empty properties file: `kfd_topology.c` prints
/// every field of a node, bank, cache and link).
fn read_properties<'a>(
    tree: &dyn SysfsTree,
    id: u32,
    path: &Path,
    text: &'a mut String,
) -> Result<Properties<'a>, Error> {
    *text = read_capped(tree, path)?;
    let p = Properties::parse(text, &path.display().to_string())?;
    if p.entries().is_empty() {
        return Err(error!(
            Status::Error,
            "{}: node {id}: the properties file is empty (no '<key> <value>' line; amdkfd \
             always writes the fields)",
            path.display()
        ));
    }
    Ok(p)
}

/// Most SIMDs a node can report: amdkfd copies `simd_count` from the 16-bit `num_simd_cores`
/// of the CRAT compute-unit affinity structure (linux `kfd_crat.h`,
/// `struct crat_subtype_computeunit`; `kfd_topology.c`, `kfd_populated_cu_info_gpu`).
pub const MAX_SIMD_COUNT: u32 = u16::MAX as u32;

/// Checks what a GPU node's compute fields must satisfy for the runtime to use them, after
/// `gfx_target_version` was filled in: `simd_count` fits the CRAT field ([`MAX_SIMD_COUNT`]),
/// `simd_per_cu` gives at least one compute unit (`1..=simd_count`), and `wave_front_size` is
/// a wavefront size of the node's processor ([`Processor::wavefront_sizes`]; 32 or 64 when
/// the processor table does not have its `gfx_target_version`). A CPU node (`simd_count` 0) passes.
///
/// # Errors
/// [`Status::Error`], `"<file>:<line>: node <id>: <field> <value> ..."` (`"<file>: ..."` when
/// the field is absent and read as 0).
fn check_gpu_fields(p: &Properties<'_>, props: &NodeProperties) -> Result<(), Error> {
    let id = props.node_id;
    let simds = props.simd_count;
    if simds == 0 {
        return Ok(());
    }
    if simds > MAX_SIMD_COUNT {
        return Err(error!(
            Status::Error,
            "{}: node {id}: simd_count {simds} is out of range: amdkfd reports at most \
             {MAX_SIMD_COUNT} (a 16-bit CRAT field)",
            p.location("simd_count")
        ));
    }
    let per_cu = props.simd_per_cu;
    if per_cu == 0 || per_cu > simds {
        return Err(error!(
            Status::Error,
            "{}: node {id}: simd_per_cu {per_cu} with simd_count {simds} gives no compute \
             unit: a GPU node has 1..={simds} SIMDs per CU",
            p.location("simd_per_cu")
        ));
    }
    let wave = props.wave_front_size;
    let gfxv = props.gfx_target_version;
    match Processor::from_gfx_target_version(gfxv) {
        Some(processor) if !processor.wavefront_sizes().contains(&wave) => {
            let legal = match processor.wavefront_sizes() {
                [one] => format!("{one} only"),
                _ => "32 or 64".to_owned(),
            };
            Err(error!(
                Status::Error,
                "{}: node {id}: wave_front_size {wave} is not a wavefront size of {processor} \
                 (gfx_target_version {gfxv}): {legal}",
                p.location("wave_front_size")
            ))
        }
        None if wave != 32 && wave != 64 => Err(error!(
            Status::Error,
            "{}: node {id}: wave_front_size {wave} is not a wavefront size of an AMD GPU \
             (32 or 64)",
            p.location("wave_front_size")
        )),
        _ => Ok(()),
    }
}

fn read_node(
    tree: &dyn SysfsTree,
    id: u32,
    dir: &Path,
    node_count: usize,
) -> Result<TopologyNode, Error> {
    let path = dir.join("properties");
    let mut text = String::new();
    let p = read_properties(tree, id, &path, &mut text)?;
    let mut props = NodeProperties {
        node_id: id,
        cpu_cores_count: p.u32_or_0("cpu_cores_count")?,
        simd_count: p.u32_or_0("simd_count")?,
        mem_banks_count: p.u32_or_0("mem_banks_count")?,
        caches_count: p.u32_or_0("caches_count")?,
        io_links_count: p.u32_or_0("io_links_count")?,
        p2p_links_count: p.u32_or_0("p2p_links_count")?,
        cpu_core_id_base: p.u32_or_0("cpu_core_id_base")?,
        simd_id_base: p.u32_or_0("simd_id_base")?,
        max_waves_per_simd: p.u32_or_0("max_waves_per_simd")?,
        lds_size_in_kb: p.u32_or_0("lds_size_in_kb")?,
        gds_size_in_kb: p.u32_or_0("gds_size_in_kb")?,
        num_gws: p.u32_or_0("num_gws")?,
        wave_front_size: p.u32_or_0("wave_front_size")?,
        array_count: p.u32_or_0("array_count")?,
        simd_arrays_per_engine: p.u32_or_0("simd_arrays_per_engine")?,
        cu_per_simd_array: p.u32_or_0("cu_per_simd_array")?,
        simd_per_cu: p.u32_or_0("simd_per_cu")?,
        max_slots_scratch_cu: p.u32_or_0("max_slots_scratch_cu")?,
        gfx_target_version: p.u32_or_0("gfx_target_version")?,
        vendor_id: p.u32_or_0("vendor_id")?,
        device_id: p.u32_or_0("device_id")?,
        location_id: p.u32_or_0("location_id")?,
        domain: p.u32_or_0("domain")?,
        drm_render_minor: p.i32_or_0("drm_render_minor")?,
        hive_id: p.u64_or_0("hive_id")?,
        unique_id: p.u64_or_0("unique_id")?,
        num_sdma_engines: p.u32_or_0("num_sdma_engines")?,
        num_sdma_xgmi_engines: p.u32_or_0("num_sdma_xgmi_engines")?,
        num_sdma_queues_per_engine: p.u32_or_0("num_sdma_queues_per_engine")?,
        num_cp_queues: p.u32_or_0("num_cp_queues")?,
        max_engine_clk_fcompute: p.u32_or_0("max_engine_clk_fcompute")?,
        max_engine_clk_ccompute: p.u32_or_0("max_engine_clk_ccompute")?,
        local_mem_size: p.u64_or_0("local_mem_size")?,
        fw_version: p.u32_or_0("fw_version")?,
        capability: p.u32_or_0("capability")?,
        debug_prop: p.u32_or_0("debug_prop")?,
        sdma_fw_version: p.u32_or_0("sdma_fw_version")?,
        num_xcc: p.u32_or_0("num_xcc")?,
        ..NodeProperties::default()
    };
    // HSA_CAP_ASIC_REVISION_MASK / _SHIFT of kfd_sysfs.h.
    props.asic_revision = (props.capability & 0x03c0_0000) >> 22;
    let is_gpu = props.simd_count > 0;
    if is_gpu && props.gfx_target_version == 0 {
        props.gfx_target_version =
            isa::gfx_target_version_from_device_id(props.device_id).unwrap_or(0);
    }
    if is_gpu && props.num_xcc == 0 {
        // Kernels before num_xcc (linux 6.5) had one XCC per node.
        props.num_xcc = 1;
    }
    check_gpu_fields(&p, &props)?;
    let gpu_id_path = dir.join("gpu_id");
    if let Some(text) = read_optional(tree, &gpu_id_path)? {
        let v = parse_single_number(&text, &gpu_id_path)?;
        props.gpu_id = u32::try_from(v).map_err(|_| {
            error!(
                Status::Error,
                "{}:1: gpu_id {v} out of range for u32",
                gpu_id_path.display()
            )
        })?;
    }
    let name = read_optional(tree, &dir.join("name"))?.unwrap_or_default();
    let name = name.trim();
    set_name!(props.name, name);
    if is_gpu {
        if let Some(m) = isa::marketing_name_from_device_id(props.device_id) {
            set_name!(props.marketing_name, m);
        }
    } else {
        set_name!(props.marketing_name, name);
    }

    let mut memory_banks = Vec::new();
    for (_, d) in numbered_entries(
        tree,
        &dir.join("mem_banks"),
        (MAX_ENTRIES, "MAX_ENTRIES"),
        false,
    )? {
        let path = d.join("properties");
        let mut text = String::new();
        let q = read_properties(tree, id, &path, &mut text)?;
        memory_banks.push(MemoryBank {
            heap_type: HeapType::from_raw(q.u32_or_0("heap_type")?),
            size_bytes: q.u64_or_0("size_in_bytes")?,
            flags: q.u32_or_0("flags")?,
            width_bits: q.u32_or_0("width")?,
            mem_clk_max_mhz: q.u32_or_0("mem_clk_max")?,
        });
    }
    let mut caches = Vec::new();
    for (_, d) in numbered_entries(
        tree,
        &dir.join("caches"),
        (MAX_ENTRIES, "MAX_ENTRIES"),
        false,
    )? {
        let path = d.join("properties");
        let mut text = String::new();
        let q = read_properties(tree, id, &path, &mut text)?;
        caches.push(Cache {
            processor_id_low: q.u32_or_0("processor_id_low")?,
            level: q.u32_or_0("level")?,
            size_kib: q.u32_or_0("size")?,
            cache_line_size_bytes: q.u32_or_0("cache_line_size")?,
            cache_type: q.u32_or_0("type")?,
        });
    }
    let mut io_links = Vec::new();
    for (sub, p2p) in [("io_links", false), ("p2p_links", true)] {
        for (_, d) in numbered_entries(tree, &dir.join(sub), (MAX_ENTRIES, "MAX_ENTRIES"), false)? {
            let path = d.join("properties");
            let mut text = String::new();
            let q = read_properties(tree, id, &path, &mut text)?;
            let node_to = q.u32_or_0("node_to")?;
            // KFD links only nodes of its own list (`kfd_topology.c`); a link elsewhere is a
            // damaged or partial capture.
            if node_to as usize >= node_count {
                return Err(error!(
                    Status::Error,
                    "{}: node {id}: node_to {node_to} names no node (the topology has nodes \
                     0..={})",
                    q.location("node_to"),
                    node_count - 1
                ));
            }
            io_links.push(IoLink {
                link_type: q.u32_or_0("type")?,
                node_from: q.u32_or_0("node_from")?,
                node_to,
                weight: q.u32_or_0("weight")?,
                min_bandwidth: q.u32_or_0("min_bandwidth")?,
                max_bandwidth: q.u32_or_0("max_bandwidth")?,
                flags: q.u32_or_0("flags")?,
                rec_sdma_eng_id_mask: q.u32_or_0("recommended_sdma_engine_id_mask")?,
                p2p,
            });
        }
    }
    Ok(TopologyNode {
        properties: props,
        memory_banks,
        caches,
        io_links,
    })
}
