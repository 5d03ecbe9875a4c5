//! The runtime: one instance per host, reference-counted init and shut-down, agents and system
//! information.
//!
//! There is no global: a [`RuntimeCell`] is a value (a `static` in a C ABI, a field in a
//! hypervisor), and `init`/`shut_down` count exactly as HSA says: n successful inits make one
//! instance; the n-th shut-down ends it; afterwards every call is `NOT_INITIALIZED`.
//!
//! Ref: HSA Runtime 1.2 §2.1 "Initialization and shut down", §2.3 "System and agent
//! information".

pub mod agent;
pub mod host_memory;
pub mod links;
pub mod pools;

use alloc::vec::Vec;

use crate::platform::{Platform, TopologySource};
use crate::platform_ref::PlatformRef;
use crate::status::{Error, Result, Status};
pub use agent::{Agent, AgentHandle};
pub use links::{Link, LinkInfo, LinkTable, LinkType};
pub use pools::{AgentPoolInfo, PoolHandle, RuntimePool};

pub use crate::addr::MAX_AGENTS;

/// The most `hsa_init` calls without a matching `hsa_shut_down` a runtime counts:
/// `INT32_MAX`. The next `hsa_init` is `HSA_STATUS_ERROR_REFCOUNT_OVERFLOW` (ROCR 5.2,
/// `core::Runtime::Acquire`, whose count is a signed 32-bit integer).
pub const MAX_REFCOUNT: u32 = i32::MAX as u32;

/// `HSA_SYSTEM_INFO_VERSION_MAJOR`/`_MINOR`: the HSA runtime specification this implements.
pub const VERSION: (u16, u16) = (1, 1);

/// `hsa_endianness_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Endianness {
    /// `HSA_ENDIANNESS_LITTLE` (0).
    Little = 0,
    /// `HSA_ENDIANNESS_BIG` (1).
    Big = 1,
}

/// The system attributes of `hsa_system_info_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SystemInfo {
    /// `HSA_SYSTEM_INFO_VERSION_MAJOR`/`_MINOR`.
    pub version: (u16, u16),
    /// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`: Hz.
    pub timestamp_frequency_hz: u64,
    /// `HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT`: the longest a signal wait may block, ticks
    /// (`u64::MAX`: no limit).
    pub signal_max_wait_ticks: u64,
    /// `HSA_SYSTEM_INFO_ENDIANNESS`.
    pub endianness: Endianness,
    /// `HSA_SYSTEM_INFO_MACHINE_MODEL`.
    pub machine_model: agent::MachineModel,
    /// `HSA_SYSTEM_INFO_EXTENSIONS`: bit mask of `hsa_extension_t` (bit `1 << 0x200` range:
    /// AMD extensions are reported through `hsa_system_extension_supported`); 0 here.
    pub extensions: [u8; 128],
    /// `HSA_AMD_SYSTEM_INFO_XNACK_ENABLED` (ROCR 7 `hsa.h`): whether this process runs with
    /// XNACK on ([`TopologySource::xnack_enabled`]).
    pub xnack_enabled: bool,
}

/// A running runtime: the platform, the agents found on it and their memory pools.
///
/// `H` is how it reaches the platform ([`PlatformRef`]): `Arc<P>` when the runtime, or the
/// queues, signals and executables made over [`platform_ref`](Runtime::platform_ref), share
/// the platform; `&P` when the platform lives elsewhere.
/// # Example
/// On the fake platform (feature `fake`: host memory, an MI210-like GPU and a CPU); the
/// [crate's quick start](crate#quick-start) runs one over the emulated device.
/// ```
/// use hsa_core::memory::GlobalFlags;
/// use hsa_core::platform::fake::FakePlatform;
/// use hsa_core::runtime::Runtime;
///
/// let platform = FakePlatform::new();
/// let rt = Runtime::new(&platform)?;
/// let gpu = rt.first_gpu().expect("the fake has a GPU agent");
/// assert_eq!(gpu.name(), "gfx90a");
/// let cpu = rt.first_cpu().expect("the fake has a CPU agent");
/// let pool = rt.find_pool(cpu.handle(), GlobalFlags::FINE_GRAINED).expect("system memory");
/// let buffer = rt.allocate(pool.handle(), 4096)?;
/// assert_eq!(buffer.size_bytes, 4096);
/// rt.free(buffer.va)?;
/// # Ok::<(), hsa_core::Error>(())
/// ```
pub struct Runtime<H: PlatformRef> {
    // Field order is drop order: pools give their chunks back before the platform goes.
    pools: Vec<RuntimePool<H>>,
    agents: Vec<Agent>,
    links: LinkTable,
    platform: H,
}

impl<H: PlatformRef> Runtime<H> {
    /// Builds a runtime over `platform`: reads the topology and makes one agent per node, in
    /// node order (CPU and GPU agents), the links between them and their pools.
    ///
    /// # Errors
    /// The platform's topology errors; `Status::OutOfResources` for more than [`MAX_AGENTS`]
    /// nodes or a node whose id is `MAX_AGENTS` or more (access masks hold ids below it).
    pub fn new(platform: H) -> Result<Runtime<H>> {
        let mut agents = Vec::new();
        let xnack = platform.xnack_enabled();
        if platform.node_count() > MAX_AGENTS {
            crate::bail!(
                Status::OutOfResources,
                "the topology has {} nodes, more than MAX_AGENTS ({MAX_AGENTS})",
                platform.node_count()
            );
        }
        for index in 0..platform.node_count() {
            let node = platform.node(index)?;
            if node.node_id as usize >= MAX_AGENTS {
                crate::bail!(
                    Status::OutOfResources,
                    "node {} (index {index}): node ids must be below MAX_AGENTS ({MAX_AGENTS})",
                    node.node_id
                );
            }
            let mut banks = (0..).map_while(|b| platform.memory_bank(index, b).ok().flatten());
            let (mut width, mut clock) = (0, 0);
            for bank in banks.by_ref() {
                width = width.max(bank.width_bits);
                clock = clock.max(bank.mem_clk_max_mhz);
            }
            let caches = (0..).map_while(|c| platform.cache(index, c).ok().flatten());
            let handle = AgentHandle::from_index(index);
            let agent = Agent::new(handle, node, caches, width, clock, xnack);
            agents.push(agent);
        }
        let links = links::build(&*platform)?;
        let pools = pools::build_pools(&platform, &agents, &links)?;
        Ok(Runtime {
            pools,
            agents,
            links,
            platform,
        })
    }

    /// The platform.
    pub fn platform(&self) -> &H::Target {
        &self.platform
    }

    /// The handle to the platform; queues, signals and executables made over a clone of it
    /// share the platform with the runtime.
    pub fn platform_ref(&self) -> &H {
        &self.platform
    }

    /// The system attributes.
    pub fn system_info(&self) -> SystemInfo {
        SystemInfo {
            version: VERSION,
            timestamp_frequency_hz: self.platform.timestamp_frequency_hz(),
            signal_max_wait_ticks: u64::MAX,
            endianness: if cfg!(target_endian = "little") {
                Endianness::Little
            } else {
                Endianness::Big
            },
            machine_model: agent::MachineModel::Large,
            extensions: [0; 128],
            xnack_enabled: self.platform.xnack_enabled(),
        }
    }

    /// `HSA_SYSTEM_INFO_TIMESTAMP`: the current system timestamp, ticks.
    pub fn timestamp_ticks(&self) -> u64 {
        self.platform.timestamp_ticks()
    }

    /// All agents, in node order.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// The links between nodes, as ROCR registers them (see [`links`]).
    pub fn links(&self) -> &LinkTable {
        &self.links
    }

    /// Calls `f` for each agent in order until it returns something other than
    /// `Status::Success`; `Status::InfoBreak` stops the iteration and is returned as success
    /// (`Ok(Status::InfoBreak)`), as `hsa_iterate_agents` does.
    ///
    /// # Errors
    /// The first error status `f` returns, as is.
    pub fn iterate_agents(&self, mut f: impl FnMut(&Agent) -> Status) -> Result<Status> {
        for agent in self.agents.iter() {
            match f(agent) {
                Status::Success => {}
                Status::InfoBreak => return Ok(Status::InfoBreak),
                other => return Err(Error::from(other)),
            }
        }
        Ok(Status::Success)
    }

    /// The agent behind a handle.
    ///
    /// # Errors
    /// `Status::InvalidAgent` for a handle this runtime did not give out.
    pub fn agent(&self, handle: AgentHandle) -> Result<&Agent> {
        handle
            .index()
            .and_then(|i| self.agents.get(i))
            .ok_or_else(|| {
                crate::error!(
                    Status::InvalidAgent,
                    "agent handle {:#x} is not an agent of this runtime",
                    handle.0
                )
            })
    }

    /// The first GPU agent, if any.
    pub fn first_gpu(&self) -> Option<&Agent> {
        self.agents.iter().find(|a| a.is_gpu())
    }

    /// The first CPU agent, if any.
    pub fn first_cpu(&self) -> Option<&Agent> {
        self.agents.iter().find(|a| !a.is_gpu())
    }
}

/// Holds at most one [`Runtime`] and counts `init`/`shut_down` calls.
pub struct RuntimeCell<H: PlatformRef> {
    state: spin::RwLock<CellState<H>>,
    max_refcount: u32,
}

struct CellState<H: PlatformRef> {
    refcount: u32,
    runtime: Option<Runtime<H>>,
}

/// Shared access to the runtime in a [`RuntimeCell`]; shut-down waits until every guard is
/// dropped.
pub struct RuntimeGuard<'a, H: PlatformRef> {
    guard: spin::RwLockReadGuard<'a, CellState<H>>,
}

impl<H: PlatformRef> core::ops::Deref for RuntimeGuard<'_, H> {
    type Target = Runtime<H>;
    fn deref(&self) -> &Runtime<H> {
        // A guard is only handed out while the runtime exists (see `RuntimeCell::get`).
        match &self.guard.runtime {
            Some(rt) => rt,
            None => unreachable_runtime(),
        }
    }
}

#[cold]
fn unreachable_runtime() -> ! {
    // `RuntimeCell::get` checks `runtime.is_some()` under the same read lock that the guard
    // keeps, and shut-down needs the write lock: this cannot be reached.
    panic!("hsa-rt: runtime guard without a runtime")
}

impl<H: PlatformRef> Default for RuntimeCell<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: PlatformRef> RuntimeCell<H> {
    /// An empty cell (no runtime; every access is `NOT_INITIALIZED`) whose count stops at
    /// [`MAX_REFCOUNT`], as ROCR's.
    pub const fn new() -> RuntimeCell<H> {
        Self::with_max_refcount(MAX_REFCOUNT)
    }

    /// An empty cell whose reference count stops at `max_refcount` (tests use a small one to
    /// reach `REFCOUNT_OVERFLOW`).
    pub const fn with_max_refcount(max_refcount: u32) -> RuntimeCell<H> {
        RuntimeCell {
            state: spin::RwLock::new(CellState {
                refcount: 0,
                runtime: None,
            }),
            max_refcount,
        }
    }

    /// `hsa_init`: the first call builds the runtime over the platform handle
    /// `make_platform()` returns; later calls only count.
    ///
    /// # Errors
    /// `Status::RefcountOverflow` when the count is at its maximum; the platform's or
    /// [`Runtime::new`]'s error when the first init fails (the count stays 0).
    pub fn init(&self, make_platform: impl FnOnce() -> Result<H>) -> Result<()> {
        let mut state = self.state.write();
        if state.refcount >= self.max_refcount {
            crate::bail!(
                Status::RefcountOverflow,
                "hsa_init called {} times without hsa_shut_down",
                state.refcount
            );
        }
        if state.refcount == 0 {
            state.runtime = Some(Runtime::new(make_platform()?)?);
        }
        state.refcount += 1;
        Ok(())
    }

    /// `hsa_shut_down`: counts down; the call that reaches 0 drops the runtime (and with it
    /// its handle to the platform).
    ///
    /// # Errors
    /// `Status::NotInitialized` when the count is already 0.
    pub fn shut_down(&self) -> Result<()> {
        let mut state = self.state.write();
        if state.refcount == 0 {
            crate::bail!(
                Status::NotInitialized,
                "hsa_shut_down called more often than hsa_init"
            );
        }
        state.refcount -= 1;
        if state.refcount == 0 {
            state.runtime = None;
        }
        Ok(())
    }

    /// Shared access to the runtime.
    ///
    /// # Errors
    /// `Status::NotInitialized` when no runtime exists.
    pub fn get(&self) -> Result<RuntimeGuard<'_, H>> {
        let guard = self.state.read();
        if guard.runtime.is_none() {
            crate::bail!(
                Status::NotInitialized,
                "the runtime is not initialized (call hsa_init first)"
            );
        }
        Ok(RuntimeGuard { guard })
    }

    /// The current reference count.
    pub fn refcount(&self) -> u32 {
        self.state.read().refcount
    }
}

#[cfg(all(test, feature = "fake"))]
mod tests {
    use super::*;
    use crate::platform::fake::FakePlatform;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn n_inits_make_one_runtime_and_the_nth_shut_down_ends_it() {
        static MADE: AtomicU32 = AtomicU32::new(0);
        let cell: RuntimeCell<Arc<FakePlatform>> = RuntimeCell::new();
        assert_eq!(cell.get().err().unwrap().status(), Status::NotInitialized);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    cell.init(|| {
                        MADE.fetch_add(1, Ordering::SeqCst);
                        Ok(Arc::new(FakePlatform::new()))
                    })
                    .unwrap()
                });
            }
        });
        assert_eq!(
            MADE.load(Ordering::SeqCst),
            1,
            "one platform for eight inits"
        );
        assert_eq!(cell.refcount(), 8);
        assert_eq!(cell.get().unwrap().agents().len(), 2);
        std::thread::scope(|s| {
            for _ in 0..7 {
                s.spawn(|| cell.shut_down().unwrap());
            }
        });
        assert_eq!(cell.get().unwrap().first_gpu().unwrap().name(), "gfx90a");
        cell.shut_down().unwrap();
        assert_eq!(cell.get().err().unwrap().status(), Status::NotInitialized);
        assert_eq!(
            cell.shut_down().unwrap_err().status(),
            Status::NotInitialized
        );
    }

    /// ROCR stops counting at `INT32_MAX`, not `u32::MAX`.
    #[test]
    fn default_cell_stops_at_int32_max() {
        let cell: RuntimeCell<Arc<FakePlatform>> = RuntimeCell::new();
        assert_eq!(cell.max_refcount, 2_147_483_647);
        assert_eq!(MAX_REFCOUNT, 0x7fff_ffff);
    }

    #[test]
    fn refcount_overflow_and_failed_first_init() {
        let cell: RuntimeCell<Arc<FakePlatform>> = RuntimeCell::with_max_refcount(2);
        let failed = cell.init(|| Err(Error::new(Status::OutOfResources, "no device")));
        assert_eq!(failed.unwrap_err().status(), Status::OutOfResources);
        assert_eq!(cell.refcount(), 0);
        cell.init(|| Ok(Arc::new(FakePlatform::new()))).unwrap();
        cell.init(|| Ok(Arc::new(FakePlatform::new()))).unwrap();
        let e = cell.init(|| Ok(Arc::new(FakePlatform::new()))).unwrap_err();
        assert_eq!(e.status(), Status::RefcountOverflow);
        assert_eq!(cell.refcount(), 2);
    }

    #[test]
    fn iterate_agents_follows_info_break() {
        let rt = Runtime::new(Arc::new(FakePlatform::new())).unwrap();
        let mut seen = 0;
        assert_eq!(
            rt.iterate_agents(|_| {
                seen += 1;
                Status::InfoBreak
            })
            .unwrap(),
            Status::InfoBreak
        );
        assert_eq!(seen, 1);
        assert_eq!(
            rt.iterate_agents(|_| Status::Success).unwrap(),
            Status::Success
        );
        let e = rt.iterate_agents(|_| Status::InvalidAgent).unwrap_err();
        assert_eq!(e.status(), Status::InvalidAgent);
        assert_eq!(
            rt.agent(AgentHandle(1)).err().unwrap().status(),
            Status::InvalidAgent
        );
    }

    /// Queues and signals made over the runtime's shared handle outlive the runtime: the
    /// queue still takes packets (the fake's processor completes a barrier-AND), and the
    /// platform goes with the last of them.
    #[test]
    fn a_queue_over_the_shared_platform_outlives_the_runtime() {
        use crate::packet::{BarrierAnd, HeaderFlags};
        use crate::queue::{AqlQueue, QueueConfig};
        use crate::signal::{SignalCondition, SignalPool, WaitState};
        use crate::NodeId;

        let rt = Runtime::new(Arc::new(FakePlatform::new())).unwrap();
        let gpu = rt.first_gpu().unwrap();
        let cpu = NodeId(rt.first_cpu().unwrap().node());
        let config = QueueConfig::new(
            NodeId(gpu.node()),
            64,
            gpu.queue_min_size(),
            gpu.queue_max_size(),
        );
        let queue = AqlQueue::create(rt.platform_ref().clone(), &config).unwrap();
        let signals = Arc::new(SignalPool::new(rt.platform_ref().clone(), cpu));
        let plat = rt.platform_ref().clone();
        drop(rt);
        let done = signals.create(1).unwrap();
        let packet = BarrierAnd::new(HeaderFlags::SYSTEM, &[], done.handle())
            .unwrap()
            .emit()
            .unwrap();
        let mut reservation = queue.reserve(1).unwrap();
        let last = reservation.write_next(&packet).unwrap();
        queue.ring_doorbell(last).unwrap();
        // The queue and the signal still reach the platform: the doorbell store arrived, and
        // the completion (written here as the device would) wakes the wait.
        let rung: Vec<u64> = plat.doorbell_writes().iter().map(|&(_, w)| w).collect();
        assert_eq!(rung, [last]);
        done.store(0, crate::signal::StoreOrder::Release);
        let value =
            queue.wait_completion(&done, SignalCondition::Eq, 0, u64::MAX, WaitState::Active);
        assert_eq!(value.unwrap(), 0);
        queue.destroy().unwrap();
        drop((done, signals));
        assert_eq!(plat.live_chunks().len(), 0);
        assert_eq!(Arc::strong_count(&plat), 1);
    }
}
