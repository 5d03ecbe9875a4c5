//! AQL user-mode queues: the producer side.
//!
//! [`AqlQueue`] owns a ring of 64-byte packets and its `amd_queue_t` in platform memory, the
//! queue's doorbell signal and queue-inactive signal, and the platform's hardware queue. Packets
//! go in with [`AqlQueue::reserve`] (or [`AqlQueue::try_reserve`]), [`Reservation::write`] and
//! [`AqlQueue::ring_doorbell`]; the protocol itself is [`Producer`] over [`ring::Ring`].
//!
//! Ref: HSA Runtime 1.2 §2.6 "Queues" (`hsa_queue_create`, `hsa_queue_*_write_index_*`,
//! `hsa_queue_load_read_index_*`); `amd_hsa_queue.h`.

pub mod inactive;
mod producer;
pub mod ring;
#[cfg(not(loom))]
pub mod scratch;
#[cfg(not(loom))]
mod storage;

pub use producer::{Producer, Reservation};

#[cfg(not(loom))]
pub use aql::{AqlQueue, QueueConfig, QueueState, QUEUE_DESTROYED};

#[cfg(not(loom))]
mod aql {
    use core::fmt;

    use super::producer::{Producer, Reservation};
    use super::ring::Ring;
    use super::storage::{QueueMemory, DOORBELL_SIGNAL_OFFSET, INACTIVE_SIGNAL_OFFSET};
    use crate::abi::packet::PACKET_SIZE_BYTES;
    use crate::abi::queue::{
        AmdQueue, HsaQueue, QueueType, AMD_QUEUE_PROPERTIES_ENABLE_PROFILING,
        AMD_QUEUE_PROPERTIES_IS_PTR64, QUEUE_FEATURE_AGENT_DISPATCH, QUEUE_FEATURE_KERNEL_DISPATCH,
    };
    use crate::abi::signal::{AmdSignal, AMD_SIGNAL_KIND_DOORBELL, AMD_SIGNAL_KIND_USER};
    use crate::abi::SignalHandle;
    use crate::addr::{GpuVa, NodeId, QueueId};
    use crate::platform::{HwQueue, QueueErrorCallback, QueueKind, QueueRequest};
    use crate::platform_ref::{DoorbellOf, PlatformRef};
    use crate::signal::group::{wait_any_members, Member};
    use crate::signal::{
        DoorbellSignal, LoadOrder, MemoryOrder, Signal, SignalCondition, StoreOrder, WaitState,
    };
    use crate::status::{Error, Result, Status};
    use crate::sync::Ordering;

    /// The value [`AqlQueue::close`] stores into `amd_queue_t.queue_inactive_signal`:
    /// `0x8000_0000_0000_0000` as an `hsa_signal_value_t`, the value ROCR's queue destructor
    /// stores there to wake the threads watching the queue. The packet processor stores a
    /// positive value there instead when it stops the queue with an error (the command
    /// processor's queue error code and the status: [`inactive`](super::inactive)), so any
    /// non-zero value means "this queue takes no more packets".
    pub const QUEUE_DESTROYED: i64 = i64::MIN;

    /// Whether a queue still consumes packets, and if not, why ([`AqlQueue::state`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum QueueState {
        /// The packet processor consumes packets.
        Active,
        /// [`AqlQueue::inactivate`] stopped the hardware queue (`hsa_queue_inactivate`).
        Inactive,
        /// The packet processor stopped the queue with this status (a malformed packet, a
        /// memory fault...), as stored in `queue_inactive_signal` and reported once through
        /// the queue's error callback.
        Stopped(Status),
        /// [`AqlQueue::close`] or [`AqlQueue::destroy`] has begun.
        Destroyed,
    }

    /// [`AqlQueue`] lifecycle values (`lifecycle` field).
    const LIFE_ACTIVE: u8 = 0;
    const LIFE_INACTIVE: u8 = 1;
    const LIFE_DESTROYED: u8 = 2;

    /// Queue ids (`hsa_queue_t.id`), unique over the process's lifetime as HSA requires;
    /// platform ids (KFD `queue_id`) are reused. A plain core atomic: not part of any
    /// protocol, so not switched to loom.
    static NEXT_QUEUE_ID: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);

    /// What to create: `hsa_queue_create`'s parameters plus the agent properties it checks them
    /// against.
    #[derive(Clone, Copy, Debug)]
    pub struct QueueConfig {
        /// The agent's node.
        pub node: NodeId,
        /// Requested size, packets: a power of two, `1..=max_size_packets`; the queue gets
        /// `max(size_packets, min_size_packets)`.
        pub size_packets: u32,
        /// `HSA_AGENT_INFO_QUEUE_MIN_SIZE` of the agent, packets (a power of two).
        pub min_size_packets: u32,
        /// `HSA_AGENT_INFO_QUEUE_MAX_SIZE` of the agent, packets (a power of two).
        pub max_size_packets: u32,
        /// `HSA_AGENT_INFO_QUEUE_TYPE` of the agent: `Single` allows only single-producer
        /// queues.
        pub agent_queue_type: QueueType,
        /// The requested `hsa_queue_type32_t` (raw, as an application passes it).
        pub queue_type: u32,
        /// `HSA_QUEUE_FEATURE_*` bits for `hsa_queue_t.features`.
        pub features: u32,
        /// Set `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING` (`hsa_amd_profiling_set_profiler_enabled`).
        pub profiling: bool,
        /// Called after the queue recorded the error the platform reported when the processor
        /// stopped the queue ([`AqlQueue::error`]), on the platform's thread (see
        /// [`QueueRequest::on_error`]). Optional: without it the error is recorded, logged by
        /// the platform, and ends the waits of [`AqlQueue::wait_completion`]; nothing aborts.
        /// (The C API passes a callback that aborts for `hsa_queue_create` without one, as
        /// ROCR does.) Without the `alloc` feature the queue keeps no record and the platform
        /// gets this callback directly (`None`: its own policy).
        pub on_error: Option<QueueErrorCallback>,
        /// Private bytes per work-item the queue's scratch holds (`hsa_queue_create`'s
        /// `private_segment_size`): `Some(n)`: the queue gets one scratch slot of 64 × `n`
        /// bytes (rounded up to 1 KiB) per wave the GPU holds at creation, its fields written
        /// into `amd_queue_t` ([`scratch`](super::scratch)); `Some(0)`: none at creation.
        /// `None` (`UINT32_MAX` in the C API): as [`grow_scratch`](Self::grow_scratch) says.
        /// Whatever it starts with, a dispatch needing more gets the command processor's
        /// scratch request, which [`AqlQueue::serve_scratch_request`] serves by growing it.
        pub private_segment_size: Option<u32>,
        /// For `private_segment_size` `None`: `true` (the default with the `alloc` feature,
        /// ROCR's for a GPU): the queue starts without scratch and gets it when the command
        /// processor first reports a scratch request
        /// ([`AqlQueue::serve_scratch_request`], which [`AqlQueue::wait_completion`] and
        /// [`AqlQueue::reserve`] call); `false` (the default without `alloc`): a fixed
        /// carve-out of [`DEFAULT_PRIVATE_SEGMENT_BYTES`](super::scratch::DEFAULT_PRIVATE_SEGMENT_BYTES)
        /// per lane for every wave slot, taken at creation (none when the platform cannot
        /// give it), for callers that wait on their completion signals without serving the
        /// request.
        pub grow_scratch: bool,
    }

    impl QueueConfig {
        /// A config with HSA's usual agent values for a GPU (ROCR: min 4096 bytes = 64
        /// packets, max 2^17 packets... here the caller's), a kernel-dispatch multi-producer
        /// queue, no profiling, no callback.
        pub fn new(
            node: NodeId,
            size_packets: u32,
            min_size_packets: u32,
            max_size_packets: u32,
        ) -> Self {
            QueueConfig {
                node,
                size_packets,
                min_size_packets,
                max_size_packets,
                agent_queue_type: QueueType::Multi,
                queue_type: QueueType::Multi as u32,
                features: QUEUE_FEATURE_KERNEL_DISPATCH,
                profiling: false,
                on_error: None,
                private_segment_size: None,
                grow_scratch: cfg!(feature = "alloc"),
            }
        }

        /// Checks the config as `hsa_queue_create` does; returns the queue type and the size.
        fn validate(&self) -> Result<(QueueType, u32)> {
            const NAMES: [&str; 2] = ["min_size_packets", "max_size_packets"];
            for (i, v) in [self.min_size_packets, self.max_size_packets]
                .into_iter()
                .enumerate()
            {
                if !v.is_power_of_two() {
                    return Err(Error::lazy(
                        Status::InvalidArgument,
                        [i as u64, v.into()],
                        |&[i, v, ..], f| {
                            let name = NAMES.get(i as usize).copied().unwrap_or("size");
                            write!(f, "agent {name} {v} is not a power of two")
                        },
                    ));
                }
            }
            if self.min_size_packets > self.max_size_packets {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [self.min_size_packets.into(), self.max_size_packets.into()],
                    |&[min, max, ..], f| {
                        write!(
                            f,
                            "agent min_size_packets {min} exceeds max_size_packets {max}"
                        )
                    },
                ));
            }
            if !self.size_packets.is_power_of_two() {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [self.size_packets.into()],
                    |&[size, ..], f| {
                        write!(f, "queue size_packets {size} is 0 or not a power of two")
                    },
                ));
            }
            if self.size_packets > self.max_size_packets {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [self.size_packets.into(), self.max_size_packets.into()],
                    |&[size, max, ..], f| {
                        write!(f, "queue size_packets {size} exceeds the agent's max {max}")
                    },
                ));
            }
            let Some(queue_type) = QueueType::from_raw(self.queue_type) else {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [self.queue_type.into()],
                    |&[t, ..], f| {
                        write!(
                            f,
                            "queue_type {t} is not MULTI 0, SINGLE 1 or COOPERATIVE 2"
                        )
                    },
                ));
            };
            let known = QUEUE_FEATURE_KERNEL_DISPATCH | QUEUE_FEATURE_AGENT_DISPATCH;
            if self.features & !known != 0 || self.features == 0 {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [self.features.into()],
                    |&[features, ..], f| {
                        write!(
                            f,
                            "queue features {features:#x} are empty or hold bits other than \
                             KERNEL_DISPATCH 1 and AGENT_DISPATCH 2"
                        )
                    },
                ));
            }
            if self.agent_queue_type == QueueType::Single && queue_type != QueueType::Single {
                return Err(Error::lazy(
                    Status::InvalidQueueCreation,
                    [(queue_type as u32).into()],
                    |&[t, ..], f| {
                        write!(f, "agent supports only SINGLE queues; queue_type ")?;
                        match QueueType::from_raw(t as u32) {
                            Some(t) => write!(f, "{t:?}")?,
                            None => write!(f, "{t}")?,
                        }
                        write!(f, " requested")
                    },
                ));
            }
            Ok((queue_type, self.size_packets.max(self.min_size_packets)))
        }
    }

    /// An AQL queue: ring, `amd_queue_t`, doorbell and inactive signals, hardware queue.
    ///
    /// Dropping it destroys the hardware queue and frees the memory; [`destroy`] does the same
    /// and reports errors. Ref: HSA Runtime 1.2 §2.6.2 `hsa_queue_create`,
    /// `hsa_queue_destroy`, `hsa_queue_inactivate`.
    ///
    /// [`destroy`]: AqlQueue::destroy
    /// # Example
    /// A queue of 64 packets on the fake platform's GPU (node 1), one barrier-AND packet written
    /// and the doorbell rung (the fake runs no packet processor; the emulated device of the
    /// [crate's quick start](crate#quick-start) does).
    /// ```
    /// use hsa_core::abi::SignalHandle;
    /// use hsa_core::packet::{BarrierAnd, HeaderFlags};
    /// use hsa_core::platform::fake::FakePlatform;
    /// use hsa_core::queue::{AqlQueue, QueueConfig};
    /// use hsa_core::signal::LoadOrder;
    /// use hsa_core::NodeId;
    ///
    /// let platform = FakePlatform::new();
    /// let queue = AqlQueue::create(&platform, &QueueConfig::new(NodeId(1), 64, 64, 131072))?;
    /// let mut reservation = queue.reserve(1)?;
    /// let barrier = BarrierAnd::new(HeaderFlags::SYSTEM, &[], SignalHandle::NULL)?;
    /// let index = reservation.write_next(&barrier.emit()?)?;
    /// queue.ring_doorbell(index)?;
    /// assert_eq!((index, queue.load_write_index(LoadOrder::Acquire)), (0, 1));
    /// queue.destroy()?;
    /// # Ok::<(), hsa_core::Error>(())
    /// ```
    pub struct AqlQueue<H: PlatformRef> {
        platform: H,
        producer: Producer,
        memory: QueueMemory,
        hw: HwQueue<DoorbellOf<H>>,
        id: u64,
        node: NodeId,
        queue_type: QueueType,
        doorbell: DoorbellSignal<H>,
        inactive: Signal<H>,
        /// Largest doorbell value rung + 1 on a single-producer queue (0: never rung), which
        /// refuses a lower one (see [`AqlQueue::ring_doorbell`]). A plain core atomic: the
        /// queue type is not part of the loom models.
        last_doorbell: core::sync::atomic::AtomicU64,
        /// `LIFE_*`: changed by `inactivate` and `close`, read by every waiter (a plain core
        /// atomic: the queue type is not part of the loom models).
        lifecycle: core::sync::atomic::AtomicU8,
        /// Held while a scratch request is served, so that of two threads that see one
        /// request (two waiters) one grows the scratch and the other waits for the result.
        scratch_server: spin::Mutex<()>,
        /// The application's error callback, called when a scratch request cannot be served
        /// (with `alloc` the record's `forward`).
        #[cfg(not(feature = "alloc"))]
        on_error: Option<QueueErrorCallback>,
        /// Where the platform's error callback records why the queue stopped; its address is
        /// the callback's data, so it stays put and outlives the hardware queue. An `Arc`, not a
        /// `Box`: moving a `Box` would (under Stacked Borrows, as miri checks) invalidate the
        /// address handed to the platform; the `Arc`'s inner pointer stays valid as the queue
        /// moves.
        #[cfg(feature = "alloc")]
        record: Option<alloc::sync::Arc<ErrorRecord>>,
    }

    /// Why a queue stopped, as the platform reported it ([`QueueRequest::on_error`]), and the
    /// application's callback to tell after recording it.
    #[cfg(feature = "alloc")]
    struct ErrorRecord {
        error: spin::Mutex<Option<Error>>,
        forward: Option<QueueErrorCallback>,
    }

    /// The platform's error callback of every queue (with `alloc`): records the error in the
    /// queue's [`ErrorRecord`] (the first one: a platform reports a queue once), then calls the
    /// application's callback.
    #[cfg(feature = "alloc")]
    #[allow(unsafe_code)] // the record's address as the callback's data
    fn record_error(error: &Error, queue: QueueId, data: usize) {
        // SAFETY: `data` is the address of the ErrorRecord (in its Arc) of a queue whose hardware
        // queue this platform created with this callback; the platform calls it only before
        // `destroy_queue` of that queue returned (QueueRequest::on_error's contract), and the
        // queue frees the record only after that returned (or never, `AqlQueue::drop`).
        let record = unsafe { &*(data as *const ErrorRecord) };
        {
            let mut slot = record.error.lock();
            if slot.is_none() {
                *slot = Some(error.clone());
            }
        }
        if let Some(cb) = record.forward {
            (cb.func)(error, queue, cb.data);
        }
    }

    /// `InvalidQueue`: queue `id` was inactivated (formatted only when displayed).
    fn inactive_error(id: u64) -> Error {
        Error::lazy(Status::InvalidQueue, [id], |&[id, ..], f| {
            write!(f, "queue {id} is inactive")
        })
    }

    /// `InvalidQueue`: queue `id` was closed (formatted only when displayed).
    fn destroyed_error(id: u64) -> Error {
        Error::lazy(Status::InvalidQueue, [id], |&[id, ..], f| {
            write!(f, "queue {id} was destroyed")
        })
    }

    impl<H: PlatformRef> fmt::Debug for AqlQueue<H> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("AqlQueue")
                .field("id", &self.id)
                .field("hw", &self.hw)
                .field("type", &self.queue_type)
                .field("size_packets", &self.size_packets())
                .finish()
        }
    }

    impl<H: PlatformRef> AqlQueue<H> {
        /// Creates a queue (`hsa_queue_create`): allocates the ring (aligned to its size) and
        /// the descriptor, initialises `hsa_queue_t`/`amd_queue_t` (type, features, base
        /// address, doorbell signal, size, id; `read_dispatch_id_field_base_byte_offset` 128;
        /// `IS_PTR64` (+ `ENABLE_PROFILING`); the queue-inactive signal; the group and private
        /// aperture bases' high halves from
        /// [`TopologySource::segment_apertures`](crate::platform::TopologySource::segment_apertures),
        /// when the platform knows them), marks every header
        /// INVALID with both indices 0, then asks the platform for the hardware queue and stores
        /// its doorbell address into the doorbell signal.
        ///
        /// # Errors
        /// `Status::InvalidArgument` when `size_packets` is 0, not a power of two or above
        /// `max_size_packets`, when `queue_type` is not a `hsa_queue_type_t`, when `features`
        /// is empty or unknown, or when the agent's min/max are not powers of two or min > max;
        /// `Status::InvalidQueueCreation` when the agent supports only single-producer queues
        /// and another type is asked for; the platform's status (`Status::OutOfResources`,
        /// `Status::InvalidQueueCreation`, ...) when memory or the hardware queue could not be
        /// had; `Status::InvalidAllocation` when the platform returned unusable memory.
        pub fn create(platform: H, config: &QueueConfig) -> Result<Self> {
            let (queue_type, size_packets) = config.validate()?;
            let mut memory = QueueMemory::allocate(&*platform, config.node, size_packets)?;
            let scratch = if config.private_segment_size.is_none() && config.grow_scratch {
                None
            } else {
                match memory.allocate_scratch(&*platform, config.node, config.private_segment_size)
                {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = memory.release(&*platform);
                        return Err(e);
                    }
                }
            };
            let id = NEXT_QUEUE_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            let amd_va = memory.amd_queue_va();
            let doorbell_va = memory.signal_va(DOORBELL_SIGNAL_OFFSET);
            let inactive_va = memory.signal_va(INACTIVE_SIGNAL_OFFSET);
            let mut amd = AmdQueue {
                hsa_queue: HsaQueue {
                    type_: queue_type as u32,
                    features: config.features,
                    base_address: memory.ring.chunk.gpu_va.get(),
                    doorbell_signal: SignalHandle(doorbell_va.get()),
                    size: size_packets,
                    reserved1: 0,
                    id,
                },
                ..AmdQueue::default()
            };
            amd.read_dispatch_id_field_base_byte_offset = 128;
            amd.queue_properties = AMD_QUEUE_PROPERTIES_IS_PTR64
                | if config.profiling {
                    AMD_QUEUE_PROPERTIES_ENABLE_PROFILING
                } else {
                    0
                };
            amd.queue_inactive_signal = SignalHandle(inactive_va.get());
            if let Some(a) =
                crate::platform::TopologySource::segment_apertures(&*platform, config.node)
            {
                amd.group_segment_aperture_base_hi = (a.group_base >> 32) as u32;
                amd.private_segment_aperture_base_hi = (a.private_base >> 32) as u32;
            }
            if let Some((layout, base)) = scratch {
                layout.fill(base.get(), &mut amd);
            }
            let doorbell_init = AmdSignal {
                kind: AMD_SIGNAL_KIND_DOORBELL,
                queue_ptr: amd_va.get(),
                ..AmdSignal::default()
            };
            let inactive_init = AmdSignal {
                kind: AMD_SIGNAL_KIND_USER,
                ..AmdSignal::default()
            };
            let (ring, db_raw, inactive_raw) =
                memory.init(size_packets, &amd, &doorbell_init, &inactive_init);
            let request = QueueRequest {
                node: config.node,
                kind: QueueKind::ComputeAql,
                ring: memory.ring.chunk.gpu_va,
                ring_host: memory.ring.host,
                ring_size_bytes: u64::from(size_packets) * PACKET_SIZE_BYTES as u64,
                amd_queue: amd_va,
                amd_queue_host: memory.desc.host,
                read_pointer: GpuVa(amd_va.get() + 128),
                write_pointer: GpuVa(amd_va.get() + 56),
                on_error: config.on_error,
            };
            #[cfg(feature = "alloc")]
            let record = alloc::sync::Arc::new(ErrorRecord {
                error: spin::Mutex::new(None),
                forward: config.on_error,
            });
            #[cfg(feature = "alloc")]
            let request = QueueRequest {
                on_error: Some(QueueErrorCallback {
                    func: record_error,
                    data: alloc::sync::Arc::as_ptr(&record) as usize,
                }),
                ..request
            };
            let hw = memory.create_queue(&*platform, &request)?;
            // The doorbell signal's value is the doorbell address (ROCR's hardware_doorbell_ptr).
            db_raw
                .value()
                .store(hw.doorbell_address as i64, Ordering::Release);
            let doorbell = DoorbellSignal::new(db_raw, platform.clone(), hw.doorbell.clone());
            let inactive = Signal::from_parts(inactive_raw, platform.clone(), None, None);
            log::debug!(
                "queue {id} created on node {}: {size_packets} packets at {:#x}, hardware \
                 queue {}, doorbell at {:#x}",
                config.node.0,
                memory.ring.chunk.gpu_va.get(),
                hw.id.0,
                hw.doorbell_address
            );
            Ok(AqlQueue {
                platform,
                producer: Producer::new(ring, queue_type != QueueType::Single),
                memory,
                hw,
                id,
                node: config.node,
                queue_type,
                doorbell,
                inactive,
                last_doorbell: core::sync::atomic::AtomicU64::new(0),
                lifecycle: core::sync::atomic::AtomicU8::new(LIFE_ACTIVE),
                scratch_server: spin::Mutex::new(()),
                #[cfg(not(feature = "alloc"))]
                on_error: config.on_error,
                #[cfg(feature = "alloc")]
                record: Some(record),
            })
        }

        /// The agent (topology node) the queue runs on.
        pub fn node(&self) -> NodeId {
            self.node
        }

        /// `hsa_queue_t.id`: unique over the process's lifetime.
        pub fn id(&self) -> u64 {
            self.id
        }

        /// The platform's hardware queue (id, doorbell address and doorbell handle).
        pub fn hw_queue(&self) -> &HwQueue<DoorbellOf<H>> {
            &self.hw
        }

        /// The platform's queue id.
        pub fn hw_id(&self) -> QueueId {
            self.hw.id
        }

        /// Single, multi or cooperative.
        pub fn queue_type(&self) -> QueueType {
            self.queue_type
        }

        /// Size, packets.
        pub fn size_packets(&self) -> u32 {
            self.producer.ring().size_packets()
        }

        /// Device address of the `amd_queue_t` (its first 40 bytes are the `hsa_queue_t` an
        /// application's `hsa_queue_t*` points to).
        pub fn amd_queue_address(&self) -> GpuVa {
            self.memory.amd_queue_va()
        }

        /// Device address of the ring (`hsa_queue_t.base_address`).
        pub fn ring_address(&self) -> GpuVa {
            self.memory.ring.chunk.gpu_va
        }

        /// The ring view, for a packet processor (consumer side) or tools.
        ///
        /// # Safety
        /// The caller guarantees it stops using the returned `Ring` (and its copies) before
        /// the queue is destroyed or dropped: the ring memory is freed then.
        #[allow(unsafe_code)] // an unsafe accessor; no unsafe block
        pub unsafe fn ring(&self) -> Ring {
            *self.producer.ring()
        }

        /// Turns the writing of dispatch timestamps into completion signals on or off for the
        /// packets the processor takes from now on: the `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`
        /// bit of `amd_queue_t.queue_properties` (`hsa_amd_profiling_set_profiler_enabled`;
        /// ROCR `AqlQueue::SetProfiling`).
        pub fn set_profiling(&self, enable: bool) {
            let bit = crate::abi::queue::AMD_QUEUE_PROPERTIES_ENABLE_PROFILING;
            if enable {
                self.producer.ring().update_queue_properties(bit, 0);
            } else {
                self.producer.ring().update_queue_properties(0, bit);
            }
        }

        /// The doorbell signal (`hsa_queue_t.doorbell_signal`).
        pub fn doorbell_signal(&self) -> &DoorbellSignal<H> {
            &self.doorbell
        }

        /// The queue-inactive signal (`amd_queue_t.queue_inactive_signal`): a user signal, 0
        /// while the queue runs; the packet processor stores its error status there when it
        /// stops the queue, and [`close`](Self::close) stores [`QUEUE_DESTROYED`].
        pub fn inactive_signal(&self) -> &Signal<H> {
            &self.inactive
        }

        /// Whether the hardware queue still exists (neither inactivated nor closed). A queue
        /// its processor stopped with an error is still active in this sense: see
        /// [`state`](Self::state).
        pub fn is_active(&self) -> bool {
            self.lifecycle.load(core::sync::atomic::Ordering::Acquire) == LIFE_ACTIVE
        }

        /// Whether the queue still consumes packets, and if not, why. A closed queue reports
        /// [`QueueState::Destroyed`] even when its processor had stopped it first.
        pub fn state(&self) -> QueueState {
            match self.lifecycle.load(core::sync::atomic::Ordering::Acquire) {
                LIFE_DESTROYED => return QueueState::Destroyed,
                LIFE_INACTIVE => return QueueState::Inactive,
                _ => {}
            }
            // Acquire pairs with the processor's Release store of its status.
            match self.inactive.load(LoadOrder::Acquire) {
                // A queue the platform reported stopped without a status in its signal (amdkfd
                // evicts every queue of a GPU after a memory fault).
                0 => match self.recorded_error() {
                    Some(e) => QueueState::Stopped(e.status()),
                    None => QueueState::Active,
                },
                QUEUE_DESTROYED => QueueState::Destroyed,
                // A scratch request waits for the runtime, it does not stop the queue
                // (ROCR's DynamicScratchHandler reports no error for it).
                v if super::scratch::is_scratch_request(v) => QueueState::Active,
                v => QueueState::Stopped(super::inactive::decode(v).unwrap_or(Status::Error)),
            }
        }

        /// Why the queue stopped, as the platform reported it through the queue-error path
        /// (the status and what the platform knows: on Linux the `queue_inactive_signal` value
        /// and the KFD events' data; on bare metal the signal's value), once it has; `None`
        /// while no error was reported. Without the `alloc` feature the queue keeps no record:
        /// a queue its processor stopped gives the status read from `queue_inactive_signal`.
        pub fn error(&self) -> Option<Error> {
            if let Some(e) = self.recorded_error() {
                return Some(e);
            }
            #[cfg(not(feature = "alloc"))]
            if let v @ 1.. = self.inactive.load(LoadOrder::Acquire) {
                let status = super::inactive::decode(v).unwrap_or(Status::Error);
                return Some(Error::lazy(status, [v as u64], |&[v, ..], f| {
                    write!(f, "queue_inactive_signal {v:#x}")
                }));
            }
            None
        }

        /// The error the platform's callback recorded, if any.
        fn recorded_error(&self) -> Option<Error> {
            #[cfg(feature = "alloc")]
            return self.record.as_ref().and_then(|r| r.error.lock().clone());
            #[cfg(not(feature = "alloc"))]
            return None;
        }

        /// The error a waiter on this queue gets when the queue no longer consumes packets;
        /// `None` while it does.
        fn stop_error(&self) -> Option<Error> {
            let id = self.id;
            Some(match self.state() {
                QueueState::Active => return None,
                QueueState::Inactive => inactive_error(id),
                QueueState::Destroyed => destroyed_error(id),
                // The error carries the status (its Display names it): the message says it
                // in words.
                QueueState::Stopped(status) => {
                    Error::lazy(status, [id, status.raw().into()], |&[id, raw, ..], f| {
                        let status = Status::from_raw(raw as u32)
                            .map_or("unknown status", Status::description);
                        write!(
                            f,
                            "queue {id} was stopped by its packet processor: {status}"
                        )
                    })
                }
            })
        }

        /// Waits until `signal` satisfies `condition` against `compare`, as
        /// [`Signal::wait`] (Acquire), but gives up as soon as this queue stops consuming
        /// packets: the wait for a completion signal of a packet on this queue, which would
        /// otherwise never return once the queue is destroyed or has failed.
        ///
        /// Returns the value last observed: it satisfies the condition unless `timeout_ns`
        /// (a hint; `u64::MAX`: none) passed first. The stop is noticed within
        /// [`MULTI_EVENT_SLICE_NS`](crate::signal::wait::MULTI_EVENT_SLICE_NS) when `signal`
        /// is an interrupt signal, within one backoff round otherwise.
        ///
        /// # Errors
        /// When the queue stopped before the condition held: `Status::InvalidQueue` ("queue N
        /// was destroyed" after [`close`](Self::close), "queue N is inactive" after
        /// [`inactivate`](Self::inactivate)), or the status the packet processor stopped it
        /// with (e.g. `Status::InvalidPacketFormat`).
        pub fn wait_completion<S: PlatformRef<Target = H::Target>>(
            &self,
            signal: &Signal<S>,
            condition: SignalCondition,
            compare: i64,
            timeout_ns: u64,
            state: WaitState,
        ) -> Result<i64> {
            let members = [Member::of(signal), Member::of(&self.inactive)];
            loop {
                let v = signal.load(LoadOrder::Acquire);
                if condition.holds(v, compare) {
                    return Ok(v);
                }
                // A failed request stops the queue: stop_error reports it.
                let _ = self.serve_scratch_request();
                if let Some(e) = self.stop_error() {
                    return Err(e);
                }
                let conditions = [condition, SignalCondition::Ne];
                // 0 while the queue runs; a scratch request another thread is serving: wait
                // for its value to change (not spin on it).
                let inactive = self.inactive.load(LoadOrder::Acquire);
                match wait_any_members(
                    members.len(),
                    |i| members[i],
                    &conditions,
                    &[compare, inactive],
                    timeout_ns,
                    state,
                ) {
                    Some((0, v)) => return Ok(v),
                    // The inactive signal changed: the loop re-checks the condition first.
                    Some(_) => continue,
                    None => return Ok(signal.load(LoadOrder::Acquire)),
                }
            }
        }

        /// Serves the command processor's scratch request, if one is pending in the queue's
        /// inactive signal ([`scratch::is_scratch_request`](super::scratch::is_scratch_request)),
        /// as ROCR 5.2's `AqlQueue::DynamicScratchHandler` does: gives the queue's scratch
        /// back, allocates what the kernel dispatch at the read index needs
        /// ([`ScratchLayout::for_request`](super::scratch::ScratchLayout::for_request): its
        /// `private_segment_size` for every wave slot of the GPU, or the slots it fills when
        /// that is above 140 MiB), rewrites `amd_queue_t`'s scratch fields (V#,
        /// `compute_tmpring_size`, backing address and size, bytes per lane), then stores 0
        /// into the inactive signal (Release), which resumes the queue: the processor runs the
        /// packet again with the new fields. [`wait_completion`](Self::wait_completion) and
        /// [`reserve`](Self::reserve) call it while they wait; a thread that waits otherwise
        /// (on a completion signal alone) calls it itself. The scratch is given back when the
        /// queue is destroyed.
        ///
        /// Returns whether a request was served (`false`: none pending, the queue is not
        /// active, or another thread is serving it now).
        ///
        /// # Errors
        /// [`Status::OutOfResources`] (ROCR's status when it cannot give the scratch) when
        /// the request cannot be served: more than
        /// [`MAX_WAVE_SCRATCH_BYTES`](super::scratch::MAX_WAVE_SCRATCH_BYTES) per wave, a
        /// packet without private segment or that is no kernel dispatch, a packet whose
        /// `private_segment_size` already fits (its kernel needs more), or device memory the
        /// platform cannot allocate. The queue then stops: the error's status goes into the
        /// inactive signal ([`inactive::encode`](super::inactive::encode)), it is recorded
        /// ([`error`](Self::error)) and the queue's error callback is called with it, as
        /// ROCR calls `errors_callback_`.
        pub fn serve_scratch_request(&self) -> Result<bool> {
            // Another thread serving it: the caller waits for the inactive value to change.
            let Some(_serving) = self.scratch_server.try_lock() else {
                return Ok(false);
            };
            if !self.is_active()
                || !super::scratch::is_scratch_request(self.inactive.load(LoadOrder::Acquire))
            {
                return Ok(false);
            }
            match self
                .memory
                .replace_scratch(&*self.platform, self.node, self.producer.ring())
            {
                Ok(layout) => {
                    log::debug!(
                        "queue {}: scratch request served: {} bytes for {} wave slots of {} \
                         bytes",
                        self.id,
                        layout.size_bytes,
                        layout.waves,
                        layout.wave_bytes()
                    );
                    // Release: the processor's Acquire load of 0 sees the new fields.
                    self.inactive.store(0, StoreOrder::Release);
                    Ok(true)
                }
                Err(e) => {
                    log::error!("queue {}: {}", self.id, e);
                    self.inactive.store(
                        super::inactive::encode(e.status(), false),
                        StoreOrder::Release,
                    );
                    self.report_stop(&e);
                    Err(e)
                }
            }
        }

        /// Records `error` as the reason the queue stopped (the first one only) and calls the
        /// application's error callback, as the platform does for a processor's error.
        fn report_stop(&self, error: &Error) {
            #[cfg(feature = "alloc")]
            if let Some(record) = &self.record {
                {
                    let mut slot = record.error.lock();
                    if slot.is_none() {
                        *slot = Some(error.clone());
                    }
                }
                if let Some(cb) = record.forward {
                    (cb.func)(error, self.hw.id, cb.data);
                }
            }
            #[cfg(not(feature = "alloc"))]
            if let Some(cb) = self.on_error {
                (cb.func)(error, self.hw.id, cb.data);
            }
        }

        /// Bytes of scratch backing memory the queue holds now (0: none); its fields in
        /// `amd_queue_t` describe the same memory.
        pub fn scratch_size_bytes(&self) -> u64 {
            self.memory.scratch_bytes()
        }

        /// Loads the write index (`hsa_queue_load_write_index_scacquire` / `_relaxed`).
        pub fn load_write_index(&self, order: LoadOrder) -> u64 {
            self.producer.ring().write_index().load(order.ordering())
        }

        /// Stores the write index (`hsa_queue_store_write_index_relaxed` / `_screlease`).
        /// Moving it back under outstanding reservations garbles packets (never memory
        /// safety: bodies are written atomically).
        pub fn store_write_index(&self, value: u64, order: StoreOrder) {
            self.producer
                .ring()
                .write_index()
                .store(value, order.ordering())
        }

        /// Compare-and-swap on the write index; returns the value observed
        /// (`hsa_queue_cas_write_index_*`).
        pub fn cas_write_index(&self, expected: u64, value: u64, order: MemoryOrder) -> u64 {
            match self.producer.ring().write_index().compare_exchange(
                expected,
                value,
                order.ordering(),
                order.failure_ordering(),
            ) {
                Ok(v) | Err(v) => v,
            }
        }

        /// Adds to the write index, returns the previous value (`hsa_queue_add_write_index_*`).
        /// This reserves without back-pressure; prefer [`reserve`](Self::reserve).
        pub fn add_write_index(&self, value: u64, order: MemoryOrder) -> u64 {
            self.producer
                .ring()
                .write_index()
                .fetch_add(value, order.ordering())
        }

        /// Loads the read index (`hsa_queue_load_read_index_scacquire` / `_relaxed`).
        pub fn load_read_index(&self, order: LoadOrder) -> u64 {
            self.producer.ring().read_index().load(order.ordering())
        }

        /// Reserves `count` slots, waiting while the queue is full; see
        /// [`Producer::reserve`]. A queue that stops consuming packets while (or before) this
        /// waits ends the wait with an error instead of leaving it spinning.
        ///
        /// # Errors
        /// `Status::InvalidArgument` when `count` is 0 or larger than the queue; when the
        /// queue is full and no longer consumes packets, the error
        /// [`wait_completion`](Self::wait_completion) documents (`Status::InvalidQueue` for a
        /// closed or inactive queue, the processor's status for a failed one).
        pub fn reserve(&self, count: u32) -> Result<Reservation<'_>> {
            self.producer.reserve_unless(count, || {
                let _ = self.serve_scratch_request();
                self.stop_error()
            })
        }

        /// Reserves `count` slots if free now; see [`Producer::try_reserve`].
        ///
        /// # Errors
        /// `Status::InvalidArgument` when `count` is 0 or larger than the queue;
        /// `Status::OutOfResources` when the queue is too full.
        pub fn try_reserve(&self, count: u32) -> Result<Reservation<'_>> {
            self.producer.try_reserve(count)
        }

        /// Rings the doorbell for packets up to and including `last_index` (once per batch):
        /// stores it into the doorbell signal, which calls
        /// [`Platform::ring_doorbell`](crate::platform::Platform::ring_doorbell) with the
        /// queue's doorbell handle. No lock and no read-modify-write.
        ///
        /// A multi-producer queue stores `last_index` as it is, as ROCR does on gfx9 and later
        /// (`AqlQueue::StoreRelaxed` with a hardware doorbell: one store, "the hardware
        /// doorbell supports AQL semantics"): two producers racing may store out of order, so
        /// the doorbell can end below the largest value rung. That loses nothing: each
        /// producer rings after its own packet's header is stored, so the packet processor is
        /// woken after every packet became valid, and it takes packets up to the write index
        /// (the CP's write-pointer poll of `amd_queue_t.write_dispatch_id`, which a
        /// reservation advances) whose headers are no longer INVALID, not up to the doorbell's
        /// value. A single-producer queue keeps the largest value rung and rejects a lower one.
        ///
        /// # Errors
        /// `Status::InvalidArgument` when `last_index` is not below the write index (nothing
        /// reserved there), or, on a single-producer queue, lower than the last doorbell
        /// value; `Status::InvalidQueue` after [`inactivate`](Self::inactivate) or
        /// [`close`](Self::close).
        pub fn ring_doorbell(&self, last_index: u64) -> Result<()> {
            use core::sync::atomic::Ordering as Order;
            match self.lifecycle.load(Order::Acquire) {
                LIFE_ACTIVE => {}
                LIFE_INACTIVE => return Err(inactive_error(self.id)),
                _ => return Err(destroyed_error(self.id)),
            }
            let write = self.load_write_index(LoadOrder::Acquire);
            if last_index >= write {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [last_index, write],
                    |&[last_index, write, ..], f| {
                        write!(
                            f,
                            "doorbell value {last_index} is not below the write index {write}"
                        )
                    },
                ));
            }
            if self.queue_type != QueueType::Single {
                self.doorbell.store(last_index, StoreOrder::Release);
                return Ok(());
            }
            let rung = last_index + 1;
            // Relaxed: the doorbell store below carries the packet ordering (Release).
            let before = self.last_doorbell.fetch_max(rung, Order::Relaxed);
            if before > rung {
                return Err(Error::lazy(
                    Status::InvalidArgument,
                    [last_index, before - 1],
                    |&[last_index, last, ..], f| {
                        write!(
                            f,
                            "doorbell value {last_index} is lower than the last one {last} on \
                             a single-producer queue"
                        )
                    },
                ));
            }
            self.doorbell.store(last_index, StoreOrder::Release);
            Ok(())
        }

        /// Stops the hardware queue but keeps its memory (`hsa_queue_inactivate`): the
        /// processor consumes no more packets; the queue can still be destroyed.
        ///
        /// # Errors
        /// The platform's status (e.g. `Status::InvalidQueue`) from `destroy_queue`; the
        /// queue then stays active.
        pub fn inactivate(&mut self) -> Result<()> {
            self.memory.destroy_queue(&*self.platform)?;
            // Only from ACTIVE: a closed queue stays closed.
            let _ = self.lifecycle.compare_exchange(
                LIFE_ACTIVE,
                LIFE_INACTIVE,
                core::sync::atomic::Ordering::AcqRel,
                core::sync::atomic::Ordering::Acquire,
            );
            Ok(())
        }

        /// Begins destroying the queue through a shared reference, for when other threads
        /// still use it: marks it destroyed, stores [`QUEUE_DESTROYED`] into the inactive
        /// signal (waking whoever waits on it, as ROCR's queue destructor does), and destroys
        /// the hardware queue. Every thread waiting on the queue then returns
        /// `Status::InvalidQueue`: [`reserve`](Self::reserve) on a full queue,
        /// [`wait_completion`](Self::wait_completion), and [`ring_doorbell`](Self::ring_doorbell)
        /// from then on. The memory stays valid until [`destroy`](Self::destroy) or drop, which
        /// the borrow rules hold off until every such thread has let go. Idempotent.
        ///
        /// # Errors
        /// The platform's status from `destroy_queue` (the queue is marked destroyed all the
        /// same; [`destroy`](Self::destroy) tries the hardware queue again).
        pub fn close(&self) -> Result<()> {
            let was = self
                .lifecycle
                .swap(LIFE_DESTROYED, core::sync::atomic::Ordering::AcqRel);
            if was != LIFE_DESTROYED {
                // Release pairs with the Acquire loads of waiters (state, wait_any).
                self.inactive.store(QUEUE_DESTROYED, StoreOrder::Release);
            }
            self.memory.destroy_queue(&*self.platform)
        }

        /// Destroys the queue (`hsa_queue_destroy`): [`close`](Self::close), then the memory.
        ///
        /// # Errors
        /// The platform's status from `destroy_queue` (the memory is then leaked, since the
        /// processor may still use it) or from `free_memory` (`Status::ResourceFree`).
        pub fn destroy(mut self) -> Result<()> {
            self.teardown()
        }

        fn teardown(&mut self) -> Result<()> {
            let _ = self.close();
            self.memory.release(&*self.platform)
        }
    }

    impl<H: PlatformRef> Drop for AqlQueue<H> {
        fn drop(&mut self) {
            // Errors are reported by `destroy`; a drop can only release what it safely can.
            let _ = self.teardown();
            // A hardware queue the platform failed to destroy may still report its error:
            // its record stays, as its memory does.
            #[cfg(feature = "alloc")]
            if self.memory.hw_queue_live() {
                if let Some(record) = self.record.take() {
                    core::mem::forget(record);
                }
            }
        }
    }

    #[cfg(test)]
    #[allow(unsafe_code)] // the tests play the packet processor through `AqlQueue::ring`
    mod tests {
        use super::*;
        use crate::abi::queue::QUEUE_FEATURE_AGENT_DISPATCH;
        use crate::packet::EncodedPacket;
        use crate::platform::fake::{FakePlatform, FaultInjector, FaultMethod, Tamper};
        use crate::platform::{MemoryFlags, MemoryKind, MemoryRequest, Platform};
        use crate::queue::ring::INVALID_HEADER_WORD;
        use std::string::ToString;

        /// The fake: it only records queues, and these tests play the packet processor.
        fn platform() -> FakePlatform {
            FakePlatform::new()
        }

        /// A queue config without scratch (its 436 MiB default would weigh on miri); the
        /// scratch test below asks for some.
        fn config(size: u32) -> QueueConfig {
            let mut c = QueueConfig::new(NodeId(1), size, 64, 1 << 17);
            c.private_segment_size = Some(0);
            c
        }

        /// A queue asking for 16 private bytes per work-item on the fake MI210 (104 CUs, 32
        /// scratch slots each) gets 3328 slots of 1 KiB in device-local memory, described in
        /// its amd_queue_t as ROCR's InitScratchSRD describes it; destroying the queue gives
        /// the memory back. Without scratch, every field is 0; above the per-lane limit,
        /// creation fails with OUT_OF_RESOURCES and nothing stays allocated.
        #[test]
        fn create_gives_the_queue_scratch_and_destroy_frees_it() {
            let plat = platform();
            let mut cfg = config(64);
            cfg.private_segment_size = Some(16);
            let q = AqlQueue::create(&plat, &cfg).unwrap();
            let d = q.memory.descriptor_snapshot();
            let chunks = plat.live_chunks();
            assert_eq!(chunks.len(), 3);
            let base = d.scratch_backing_memory_location;
            assert!(
                chunks
                    .iter()
                    .any(|c| c.gpu_va.get() == base && c.size_bytes == 3328 * 1024),
                "{chunks:?}"
            );
            assert_eq!(d.scratch_backing_memory_byte_size, 3328 * 1024);
            assert_eq!(d.compute_tmpring_size, 0xD00 | 1 << 12);
            assert_eq!(d.scratch_wave64_lane_byte_size, 16);
            assert_eq!(
                d.scratch_resource_descriptor,
                [
                    base as u32,
                    (base >> 32) as u32 | 1 << 31,
                    3328 * 1024,
                    0x00EA_4FAC
                ]
            );
            q.destroy().unwrap();
            assert_eq!(plat.live_chunks().len(), 0);
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            let d = q.memory.descriptor_snapshot();
            assert_eq!(d.scratch_resource_descriptor, [0; 4]);
            assert_eq!(
                (d.compute_tmpring_size, d.scratch_backing_memory_location),
                (0, 0)
            );
            q.destroy().unwrap();
            cfg.private_segment_size = Some(131_057);
            let e = AqlQueue::create(&plat, &cfg).map(|_| ()).unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources);
            assert_eq!(plat.live_chunks().len(), 0);
        }

        /// A published kernel dispatch of 128 work-items in groups of 64 asking for
        /// `private` bytes per work-item, at the queue's next index; the CP's wave64 scratch
        /// request (code 1) stored into the inactive signal, as the emulated CP stores it.
        fn request_scratch<H: PlatformRef>(q: &AqlQueue<H>, private: u32) {
            let mut k = crate::packet::KernelDispatch::one_dimensional(
                GpuVa(0x1000),
                GpuVa(0x2000),
                64,
                128,
            );
            k.private_segment_size_bytes = private;
            let mut r = q.reserve(1).unwrap();
            let index = r.write_next(&k.emit().unwrap()).unwrap();
            q.ring_doorbell(index).unwrap();
            q.inactive_signal().store(1, StoreOrder::Release);
        }

        /// ROCR's dynamic scratch, played on the fake: a queue created with the default
        /// config holds no scratch; a pending request is not an error (state Active); serving
        /// it for 16 bytes per work-item gives 3328 slots of 1 KiB (104 CUs × 32 slots) in a
        /// new device-local chunk, rewrites the five fields as ROCR's InitScratchSRD does and
        /// stores 0 (the resume); a request the held scratch already fits (the packet asks for
        /// less than its kernel needs) fails the queue instead of looping; destroy gives the
        /// memory back.
        #[test]
        fn a_scratch_request_grows_the_queues_scratch_and_resumes_it() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &QueueConfig::new(NodeId(1), 64, 64, 1 << 17)).unwrap();
            assert_eq!(q.scratch_size_bytes(), 0);
            assert_eq!(plat.live_chunks().len(), 2, "ring and descriptor only");
            assert_eq!(q.serve_scratch_request(), Ok(false), "nothing pending");
            request_scratch(&q, 16);
            assert_eq!(q.state(), QueueState::Active);
            assert_eq!(q.serve_scratch_request(), Ok(true));
            assert_eq!(q.inactive_signal().load(LoadOrder::Acquire), 0, "resumed");
            let d = q.memory.descriptor_snapshot();
            let base = d.scratch_backing_memory_location;
            assert_ne!(base, 0);
            assert_eq!(base % (1 << 16), 0);
            assert_eq!(d.compute_tmpring_size, 0xD00 | 1 << 12);
            assert_eq!(d.scratch_backing_memory_byte_size, 3328 * 1024);
            assert_eq!(d.scratch_wave64_lane_byte_size, 16);
            assert_eq!(
                d.scratch_resource_descriptor,
                [
                    base as u32,
                    (base >> 32) as u32 | 1 << 31,
                    3328 * 1024,
                    0x00EA_4FAC
                ]
            );
            assert_eq!(q.scratch_size_bytes(), 3328 * 1024);
            assert_eq!(plat.live_chunks().len(), 3);
            // The processor moves on; the next packet asks for 1 KiB per lane, which is
            // "large" scratch (3328 x 64 KiB > 140 MiB): only its own 8 waves (2 groups of
            // one wave on 8 engines), fewer than held but each larger, so it grows.
            // SAFETY: used only while q lives.
            unsafe { q.ring() }.read_index().store(1, Ordering::Release);
            request_scratch(&q, 1024);
            assert_eq!(q.serve_scratch_request(), Ok(true));
            let d = q.memory.descriptor_snapshot();
            assert_eq!(d.compute_tmpring_size, 8 | 64 << 12);
            assert_eq!(d.scratch_wave64_lane_byte_size, 1024);
            assert_eq!(q.scratch_size_bytes(), 8 * 65536);
            assert_eq!(
                plat.live_chunks().len(),
                3,
                "the old scratch was given back"
            );
            // The same packet again: its 1 KiB already fits.
            q.inactive_signal().store(1, StoreOrder::Release);
            let e = q.serve_scratch_request().unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources);
            assert!(e.detail().to_string().contains("again"), "{e}");
            assert_eq!(q.state(), QueueState::Stopped(Status::OutOfResources));
            q.destroy().unwrap();
            assert_eq!(plat.live_chunks().len(), 0);
        }

        /// A scratch request while the packet at the read index is no kernel dispatch (a
        /// confused command processor) stops the queue, naming the packet's type.
        #[test]
        fn a_scratch_request_on_a_packet_that_is_no_kernel_dispatch_stops_the_queue() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &QueueConfig::new(NodeId(1), 64, 64, 1 << 17)).unwrap();
            let mut r = q.reserve(1).unwrap();
            let barrier = crate::packet::BarrierAnd {
                flags: crate::packet::HeaderFlags::SYSTEM,
                dep_signals: [SignalHandle(0); 5],
                completion_signal: SignalHandle(0),
            };
            let index = r.write_next(&barrier.emit().unwrap()).unwrap();
            q.ring_doorbell(index).unwrap();
            q.inactive_signal().store(1, StoreOrder::Release);
            let e = q.serve_scratch_request().unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources);
            assert_eq!(
                e.detail(),
                "scratch request for packet 0, whose type 3 is not a kernel dispatch (2)"
            );
            assert_eq!(q.state(), QueueState::Stopped(Status::OutOfResources));
        }

        /// A queue that asks for the default scratch up front (no growth) and cannot get it
        /// is still made, without scratch (ROCR warns and goes on); one that asked for a size
        /// fails with the platform's status.
        #[test]
        fn scratch_up_front_that_cannot_be_allocated() {
            let plat = FaultInjector::new(platform());
            let mut cfg = QueueConfig::new(NodeId(1), 64, 64, 1 << 17);
            cfg.grow_scratch = false;
            // Ring, descriptor, then the scratch: the third allocation fails.
            let third = plat.calls(FaultMethod::AllocateMemory) + 3;
            plat.fail_nth(FaultMethod::AllocateMemory, third, Status::OutOfResources);
            let q = AqlQueue::create(&plat, &cfg).unwrap();
            assert_eq!(q.scratch_size_bytes(), 0);
            assert_eq!(
                q.memory
                    .descriptor_snapshot()
                    .scratch_backing_memory_location,
                0
            );
            let asked = plat.memory_requests();
            assert_eq!(asked.len(), 3);
            assert_eq!(asked[2].kind, MemoryKind::DeviceLocal, "{asked:?}");
            drop(q);
            cfg.private_segment_size = Some(16);
            let third = plat.calls(FaultMethod::AllocateMemory) + 3;
            plat.fail_nth(FaultMethod::AllocateMemory, third, Status::OutOfResources);
            let e = AqlQueue::create(&plat, &cfg).unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources);
            assert_eq!(plat.inner().live_chunks().len(), 0, "nothing kept");
        }

        /// A request above COMPUTE_TMPRING_SIZE.WAVESIZE (131057 bytes per work-item, 8 MiB
        /// per wave) fails the queue with OUT_OF_RESOURCES: the status in the inactive
        /// signal's upper half, the queue's recorded error, its callback called once; the
        /// queue keeps no scratch. Without a pending request nothing is served.
        #[test]
        fn an_impossible_scratch_request_stops_the_queue_with_out_of_resources() {
            use core::sync::atomic::AtomicUsize;
            fn count(e: &Error, _: QueueId, data: usize) {
                assert_eq!(e.status(), Status::OutOfResources);
                // SAFETY: `data` is the test's `AtomicUsize`, alive while the queue is.
                let n = unsafe { &*(data as *const AtomicUsize) };
                n.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
            }
            let plat = platform();
            let calls = AtomicUsize::new(0);
            let mut cfg = QueueConfig::new(NodeId(1), 64, 64, 1 << 17);
            cfg.on_error = Some(QueueErrorCallback {
                func: count,
                data: &calls as *const AtomicUsize as usize,
            });
            let q = AqlQueue::create(&plat, &cfg).unwrap();
            request_scratch(&q, 131_057);
            let e = q.serve_scratch_request().unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources);
            assert!(
                e.detail().to_string().contains("8388608 bytes per wave"),
                "{e}"
            );
            let v = q.inactive_signal().load(LoadOrder::Acquire);
            assert_eq!(v >> 32, i64::from(Status::OutOfResources.raw()));
            assert_eq!(q.state(), QueueState::Stopped(Status::OutOfResources));
            assert_eq!(q.error().map(|e| e.status()), Some(Status::OutOfResources));
            assert_eq!(calls.load(core::sync::atomic::Ordering::SeqCst), 1);
            assert_eq!(q.scratch_size_bytes(), 0);
            assert_eq!(q.serve_scratch_request(), Ok(false), "stopped, not pending");
            q.destroy().unwrap();
            assert_eq!(plat.live_chunks().len(), 0);
        }

        fn packet(seq: u32) -> EncodedPacket {
            let mut bytes = [0u8; 64];
            bytes[0] = 1; // INVALID header
            bytes[8..12].copy_from_slice(&seq.to_le_bytes());
            bytes[63] = 0xab;
            EncodedPacket {
                bytes,
                header_word: 0x0001_1402, // KERNEL_DISPATCH, barrier, system scopes; setup 1
            }
        }

        /// Consumes every published packet as a packet processor would; returns the seqs.
        fn consume(ring: &Ring) -> std::vec::Vec<u32> {
            let mut out = std::vec::Vec::new();
            let mut r = ring.read_index().load(Ordering::Acquire);
            loop {
                let h = ring.header_word(r).load(Ordering::Acquire);
                if h == INVALID_HEADER_WORD {
                    return out;
                }
                // SAFETY: consumer of a slot whose valid header was Acquire-loaded.
                let p = unsafe { ring.read_packet(r, h) };
                assert_eq!(p[63], 0xab);
                out.push(u32::from_le_bytes([p[8], p[9], p[10], p[11]]));
                ring.header_word(r)
                    .store(INVALID_HEADER_WORD, Ordering::Release);
                r += 1;
                ring.read_index().store(r, Ordering::Release);
            }
        }

        #[test]
        fn create_fills_hsa_queue_and_amd_queue() {
            let plat = platform();
            let mut cfg = config(256);
            cfg.profiling = true;
            cfg.features = QUEUE_FEATURE_KERNEL_DISPATCH | QUEUE_FEATURE_AGENT_DISPATCH;
            fn on_error(_: &crate::status::Error, _: QueueId, _: usize) {}
            cfg.on_error = Some(QueueErrorCallback {
                func: on_error,
                data: 42,
            });
            let q = AqlQueue::create(&plat, &cfg).unwrap();
            let d = q.memory.descriptor_snapshot();
            assert_eq!(d.hsa_queue.type_, 0);
            assert_eq!(d.hsa_queue.features, 3);
            assert_eq!(d.hsa_queue.size, 256);
            assert_eq!(d.hsa_queue.id, q.id());
            assert_eq!(d.hsa_queue.base_address, q.ring_address().get());
            assert_eq!(
                q.ring_address().get() % (256 * 64),
                0,
                "ring aligned to its size"
            );
            assert_eq!(d.hsa_queue.doorbell_signal, q.doorbell_signal().handle());
            assert_eq!(d.write_dispatch_id, 0);
            assert_eq!(d.read_dispatch_id, 0);
            assert_eq!(d.read_dispatch_id_field_base_byte_offset, 128);
            assert_eq!(d.queue_properties, (1 << 1) | (1 << 3)); // IS_PTR64 | ENABLE_PROFILING
            assert_eq!(d.queue_inactive_signal, q.inactive_signal().handle());
            // The fake's GPU apertures (amdkfd's gfx9: LDS at 1 << 48, scratch at 2 << 48),
            // bits 63:32 of each base.
            assert_eq!(d.group_segment_aperture_base_hi, 0x0001_0000);
            assert_eq!(d.private_segment_aperture_base_hi, 0x0002_0000);
            let db = q.memory.signal_snapshot(DOORBELL_SIGNAL_OFFSET);
            assert_eq!(db.kind, -1); // AMD_SIGNAL_KIND_DOORBELL
            assert_eq!(db.value as u64, q.hw_queue().doorbell_address);
            assert_eq!(
                q.doorbell_signal().doorbell_address(),
                q.hw_queue().doorbell_address
            );
            assert_eq!(db.queue_ptr, q.amd_queue_address().get());
            let ia = q.memory.signal_snapshot(INACTIVE_SIGNAL_OFFSET);
            assert_eq!(ia.kind, 1);
            assert_eq!(q.inactive_signal().load(LoadOrder::Acquire), 0);
            // SAFETY: used only while q lives.
            let ring = unsafe { q.ring() };
            for i in 0..256 {
                assert_eq!(
                    ring.header_word(i).load(Ordering::Relaxed),
                    INVALID_HEADER_WORD
                );
            }
            let req = plat.queue_request(q.hw_id()).unwrap();
            assert_eq!(req.ring, q.ring_address());
            assert_eq!(req.ring_size_bytes, 256 * 64);
            assert_eq!(req.amd_queue, q.amd_queue_address());
            assert_eq!(req.read_pointer.get(), q.amd_queue_address().get() + 128);
            assert_eq!(req.write_pointer.get(), q.amd_queue_address().get() + 56);
            assert_eq!(req.node, NodeId(1));
            assert_eq!(q.node(), NodeId(1));
            assert_eq!(req.ring_host_addr, q.ring_address().get());
            assert!(req.on_error.is_some(), "callback registered at creation");
            let q2 = AqlQueue::create(&plat, &config(64)).unwrap();
            assert_ne!(q2.id(), q.id());
            assert_eq!(q2.memory.descriptor_snapshot().queue_properties, 1 << 1);
            q2.set_profiling(true);
            assert_eq!(
                q2.memory.descriptor_snapshot().queue_properties,
                (1 << 1) | (1 << 3)
            );
            q.set_profiling(false);
            assert_eq!(q.memory.descriptor_snapshot().queue_properties, 1 << 1);
            q.destroy().unwrap();
            drop(q2);
            assert_eq!(plat.live_queue_count(), 0);
            assert_eq!(plat.live_chunks().len(), 0);
        }

        /// The doorbell signal's store and a ringer detached from the queue (the C ABI's
        /// doorbell stores) ring that queue's own doorbell handle with the packet id given, in
        /// call order; another queue's ringer rings its own. (`cargo mutants` found no test
        /// that noticed `DoorbellRinger::ring` doing nothing.)
        #[test]
        fn doorbell_store_and_its_ringer_ring_the_queues_doorbell() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            let q2 = AqlQueue::create(&plat, &config(64)).unwrap();
            let ringer = q.doorbell_signal().ringer();
            q.doorbell_signal().store(3, StoreOrder::Release);
            ringer.ring(7, StoreOrder::Relaxed);
            q2.doorbell_signal().ringer().ring(1, StoreOrder::Release);
            let (d, d2) = (q.hw_queue().doorbell, q2.hw_queue().doorbell);
            assert_ne!(d, d2);
            assert_eq!(plat.doorbell_writes(), [(d, 3), (d, 7), (d2, 1)]);
            // Their Debug output names the signal and the platform's doorbell.
            assert_eq!(
                std::format!("{:?}", q.doorbell_signal()),
                std::format!(
                    "DoorbellSignal {{ handle: {:?}, doorbell: {d:?} }}",
                    q.doorbell_signal().handle()
                )
            );
            assert_eq!(
                std::format!("{ringer:?}"),
                std::format!("DoorbellRinger {{ doorbell: {d:?} }}")
            );
            drop(q2);
            q.destroy().unwrap();
        }

        /// The platform's queue-error callback (played here: the fake only records it) is the
        /// queue's recorder: the queue keeps the first error it is given, reports itself
        /// stopped with its status (here with nothing in `queue_inactive_signal`, as a queue
        /// amdkfd evicted after a memory fault), ends a completion wait with it, and passes it
        /// on to the application's callback with its data.
        #[test]
        fn the_queue_records_the_error_its_platform_reports() {
            use core::sync::atomic::AtomicUsize;
            fn count(_: &Error, _: QueueId, data: usize) {
                // SAFETY: `data` is the test's `AtomicUsize`, alive while the queue is.
                let n = unsafe { &*(data as *const AtomicUsize) };
                n.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
            }
            let plat = platform();
            let calls = AtomicUsize::new(0);
            let mut cfg = config(64);
            cfg.on_error = Some(QueueErrorCallback {
                func: count,
                data: &calls as *const AtomicUsize as usize,
            });
            let q = AqlQueue::create(&plat, &cfg).unwrap();
            let quiet = AqlQueue::create(&plat, &config(64)).unwrap();
            assert!(q.error().is_none());
            assert_eq!(q.state(), QueueState::Active);
            let report = plat.queue_request(q.hw_id()).unwrap().on_error.unwrap();
            let fault = crate::error!(Status::MemoryFault, "KFD memory event at 0x1000");
            (report.func)(&fault, q.hw_id(), report.data);
            (report.func)(&Error::from(Status::Error), q.hw_id(), report.data);
            assert_eq!(q.error(), Some(fault.clone()), "the first error is kept");
            assert_eq!(q.state(), QueueState::Stopped(Status::MemoryFault));
            assert_eq!(calls.load(core::sync::atomic::Ordering::SeqCst), 2);
            let pool = crate::signal::SignalPool::new(&plat, NodeId(0));
            let done = pool.create(1).unwrap();
            let e = q
                .wait_completion(&done, SignalCondition::Eq, 0, u64::MAX, WaitState::Active)
                .unwrap_err();
            assert_eq!(e.status(), Status::MemoryFault);
            // A queue created without a callback records all the same.
            let report = plat.queue_request(quiet.hw_id()).unwrap().on_error.unwrap();
            (report.func)(&fault, quiet.hw_id(), report.data);
            assert_eq!(quiet.error(), Some(fault));
            drop(done);
            q.destroy().unwrap();
            quiet.destroy().unwrap();
        }

        #[test]
        fn size_below_min_is_raised_to_min() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(4)).unwrap();
            assert_eq!(q.size_packets(), 64);
            assert_eq!(q.memory.descriptor_snapshot().hsa_queue.size, 64);
        }

        #[test]
        fn create_errors_follow_hsa_queue_create() {
            let plat = FaultInjector::new(platform());
            let status = |c: QueueConfig| AqlQueue::create(&plat, &c).unwrap_err().status();
            assert_eq!(status(config(0)), Status::InvalidArgument);
            assert_eq!(status(config(96)), Status::InvalidArgument);
            assert_eq!(status(config(1 << 18)), Status::InvalidArgument);
            let e = AqlQueue::create(&plat, &config(96)).unwrap_err();
            assert!(e.detail().to_string().contains("96"), "{e}");
            let mut c = config(64);
            c.queue_type = 3;
            assert_eq!(status(c), Status::InvalidArgument);
            let mut c = config(64);
            c.features = 4;
            assert_eq!(status(c), Status::InvalidArgument);
            let mut c = config(64);
            c.agent_queue_type = QueueType::Single;
            assert_eq!(status(c), Status::InvalidQueueCreation);
            c.queue_type = QueueType::Single as u32;
            assert!(AqlQueue::create(&plat, &c).is_ok());
            let mut c = config(64);
            c.min_size_packets = 1 << 18;
            assert_eq!(status(c), Status::InvalidArgument);
            let mut c = config(64);
            c.max_size_packets = 1000;
            assert_eq!(status(c), Status::InvalidArgument);
            // The bounds are inclusive: min == max == size is a valid (one-size) agent.
            let c = QueueConfig {
                private_segment_size: Some(0),
                ..QueueConfig::new(NodeId(1), 128, 128, 128)
            };
            assert_eq!(c.validate().unwrap(), (QueueType::Multi, 128));
            let q = AqlQueue::create(&plat, &c).unwrap();
            assert_eq!(q.size_packets(), 128);
            assert_eq!(
                std::format!("{q:?}"),
                std::format!(
                    "AqlQueue {{ id: {}, hw: {:?}, type: Multi, size_packets: 128 }}",
                    q.id(),
                    q.hw
                )
            );
            drop(q);
            plat.fail_next(FaultMethod::CreateQueue, Status::OutOfResources);
            assert_eq!(status(config(64)), Status::OutOfResources);
            plat.fail_next(FaultMethod::AllocateMemory, Status::OutOfResources);
            assert_eq!(status(config(64)), Status::OutOfResources);
            plat.tamper_next(Tamper::HideHostPtr);
            assert_eq!(status(config(64)), Status::InvalidAllocation);
            // A chunk shorter than asked, or host memory not aligned to its size, is refused
            // and given back.
            for tamper in [Tamper::ShortChunk, Tamper::MisalignHostPtr] {
                plat.tamper_next(tamper);
                let e = AqlQueue::create(&plat, &config(128)).unwrap_err();
                assert_eq!(e.status(), Status::InvalidAllocation, "{tamper:?}");
                assert!(
                    e.detail()
                        .to_string()
                        .ends_with("-aligned chunk of 8192 bytes"),
                    "{tamper:?}: {e}"
                );
            }
            // The queue's memory: the ring (128 packets of 64 bytes) and the 4 KiB of
            // amd_queue_t, each system memory the host sees, fine-grained and uncached,
            // aligned to its size.
            let before = plat.memory_requests().len();
            drop(AqlQueue::create(&plat, &config(128)).unwrap());
            let flags =
                MemoryFlags::HOST_ACCESS | MemoryFlags::FINE_GRAINED | MemoryFlags::UNCACHED;
            let want = [8192, 4096].map(|size_bytes| MemoryRequest {
                node: NodeId(1),
                kind: MemoryKind::System,
                size_bytes,
                align_bytes: size_bytes,
                flags,
            });
            assert_eq!(plat.memory_requests()[before..], want);
            assert_eq!(
                plat.inner().live_chunks().len(),
                0,
                "failed creations give memory back"
            );
            assert_eq!(plat.inner().live_queue_count(), 0);
        }

        #[test]
        fn reserve_write_publish_and_back_pressure() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            // SAFETY: used only while q lives.
            let ring = unsafe { q.ring() };
            let mut r = q.reserve(60).unwrap();
            assert_eq!((r.start_index(), r.last_index(), r.count()), (0, 59, 60));
            for i in 0..60 {
                assert_eq!(r.write(i, &packet(i)).unwrap(), u64::from(i));
            }
            assert_eq!(ring.header_word(0).load(Ordering::Acquire), 0x0001_1402);
            assert_eq!(q.load_write_index(LoadOrder::Acquire), 60);
            // 4 slots left: 5 do not fit; the write index does not move.
            let e = q.try_reserve(5).unwrap_err();
            assert_eq!(e.status(), Status::OutOfResources);
            assert_eq!(q.load_write_index(LoadOrder::Relaxed), 60);
            let mut r = q.try_reserve(4).unwrap();
            while r.written() < 4 {
                let n = 60 + r.written();
                r.write_next(&packet(n)).unwrap();
            }
            assert_eq!(
                q.try_reserve(1).unwrap_err().status(),
                Status::OutOfResources
            );
            assert_eq!(consume(&ring), (0..64).collect::<std::vec::Vec<_>>());
            assert_eq!(q.load_read_index(LoadOrder::Acquire), 64);
            // Wrapped: slot 0 again, index 64.
            let mut r = q.reserve(1).unwrap();
            assert_eq!(r.write(0, &packet(64)).unwrap(), 64);
            assert_eq!(consume(&ring), [64]);
        }

        #[test]
        fn reservation_errors() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            assert_eq!(q.reserve(0).unwrap_err().status(), Status::InvalidArgument);
            assert_eq!(q.reserve(65).unwrap_err().status(), Status::InvalidArgument);
            assert_eq!(
                q.try_reserve(0).unwrap_err().status(),
                Status::InvalidArgument
            );
            let mut r = q.reserve(2).unwrap();
            let e = r.write(1, &packet(1)).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert!(
                e.detail().to_string().contains("next unwritten slot is 0"),
                "{e}"
            );
            let mut bad = packet(0);
            bad.header_word = 0x0000_0001;
            assert_eq!(
                r.write(0, &bad).unwrap_err().status(),
                Status::InvalidPacketFormat
            );
            r.write(0, &packet(0)).unwrap();
            r.write(1, &packet(1)).unwrap();
            assert_eq!(
                r.write_next(&packet(2)).unwrap_err().status(),
                Status::InvalidArgument
            );
        }

        #[test]
        fn index_operations_in_every_order() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            q.store_write_index(5, StoreOrder::Relaxed);
            assert_eq!(q.load_write_index(LoadOrder::Relaxed), 5);
            assert_eq!(q.add_write_index(3, MemoryOrder::AcqRel), 5);
            assert_eq!(q.cas_write_index(7, 100, MemoryOrder::Acquire), 8);
            assert_eq!(q.cas_write_index(8, 10, MemoryOrder::Release), 8);
            assert_eq!(q.load_write_index(LoadOrder::Acquire), 10);
            assert_eq!(q.load_read_index(LoadOrder::Relaxed), 0);
        }

        #[test]
        fn doorbell_rules() {
            let plat = platform();
            let mut c = config(64);
            c.queue_type = QueueType::Single as u32;
            let s = AqlQueue::create(&plat, &c).unwrap();
            let e = s.ring_doorbell(0).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument, "nothing reserved yet");
            s.add_write_index(4, MemoryOrder::Relaxed);
            s.ring_doorbell(3).unwrap();
            s.ring_doorbell(3).unwrap();
            let e = s.ring_doorbell(1).unwrap_err();
            assert_eq!(e.status(), Status::InvalidArgument);
            assert!(
                e.detail().to_string().contains("lower than the last one 3"),
                "{e}"
            );
            let m = AqlQueue::create(&plat, &config(64)).unwrap();
            m.add_write_index(8, MemoryOrder::Relaxed);
            m.ring_doorbell(6).unwrap();
            m.ring_doorbell(2).unwrap(); // multi: stored as given (ROCR's gfx9+ doorbell)
            m.ring_doorbell(7).unwrap();
            let rung: std::vec::Vec<_> = plat.doorbell_writes();
            assert_eq!(
                rung,
                [
                    (s.hw_id(), 3),
                    (s.hw_id(), 3),
                    (m.hw_id(), 6),
                    (m.hw_id(), 2),
                    (m.hw_id(), 7)
                ]
            );
            let mut m = m;
            m.inactivate().unwrap();
            assert!(!m.is_active());
            assert_eq!(plat.live_queue_count(), 1);
            assert_eq!(
                m.ring_doorbell(7).unwrap_err().status(),
                Status::InvalidQueue
            );
            m.destroy().unwrap();
            assert_eq!(plat.live_queue_count(), 1);
        }

        /// Producers ringing at once, each its own values out of order: no lock orders them and
        /// nothing is added: every value rung is stored once, as given (the doorbell may end
        /// below the largest; the packet processor reads up to the write index).
        #[test]
        fn concurrent_rings_store_each_value_once() {
            let plat = platform();
            let m = AqlQueue::create(&plat, &config(1024)).unwrap();
            m.add_write_index(1000, MemoryOrder::Relaxed);
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let m = &m;
                    s.spawn(move || {
                        for i in (0..250u64).rev() {
                            m.ring_doorbell(i * 4 + t).unwrap();
                        }
                    });
                }
            });
            let mut rung: std::vec::Vec<u64> =
                plat.doorbell_writes().into_iter().map(|(_, v)| v).collect();
            rung.sort_unstable();
            assert_eq!(rung, (0..1000).collect::<std::vec::Vec<u64>>());
        }

        /// Producer A is held just before its doorbell store while producer B rings a larger
        /// value; A's smaller store then lands last and stays: no repair store, no read of what
        /// B rang (the single store ROCR makes on gfx9+).
        #[test]
        fn a_late_smaller_doorbell_store_is_stored_as_is() {
            let plat = FaultInjector::new(platform());
            let m = AqlQueue::create(&plat, &config(64)).unwrap();
            assert_eq!(m.queue_type, QueueType::Multi);
            m.add_write_index(8, MemoryOrder::Relaxed);
            let hold = plat.hold_next(FaultMethod::RingDoorbell);
            std::thread::scope(|s| {
                let a = s.spawn(|| m.ring_doorbell(3));
                hold.wait_arrival();
                m.ring_doorbell(6).unwrap();
                hold.release();
                a.join().unwrap().unwrap();
            });
            let id = m.hw_id();
            assert_eq!(
                plat.inner().doorbell_writes(),
                [(id, 6), (id, 3)],
                "B's 6, then A's late 3"
            );
            assert_eq!(plat.calls(FaultMethod::RingDoorbell), 2);
        }

        /// A queue its processor stops after it was closed still reads as destroyed (the
        /// processor's late status store does not bring the queue back as "stopped").
        #[test]
        fn a_closed_queue_stays_destroyed_whatever_its_signal_says() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            q.close().unwrap();
            let code = super::super::inactive::encode(Status::InvalidPacketFormat, false);
            q.inactive_signal().store(code, StoreOrder::Release);
            assert_eq!(q.state(), QueueState::Destroyed);
            q.add_write_index(1, MemoryOrder::Relaxed);
            let e = q.ring_doorbell(0).unwrap_err();
            assert_eq!(e.detail(), std::format!("queue {} was destroyed", q.id()));
        }

        /// Producers reserving at once on a multi-producer queue each get their own slots:
        /// the write index moves by a compare-exchange, so no reservation is lost or shared.
        #[test]
        fn concurrent_reservations_are_disjoint_and_all_counted() {
            let plat = platform();
            let m = AqlQueue::create(&plat, &config(1 << 17)).unwrap();
            let (threads, each) = if cfg!(miri) { (2, 20) } else { (4, 30_000) };
            let starts = std::sync::Mutex::new(std::vec::Vec::new());
            // All start together, so their reservations interleave.
            let go = std::sync::Barrier::new(threads);
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (m, go, starts) = (&m, &go, &starts);
                    s.spawn(move || {
                        let mut mine = std::vec::Vec::with_capacity(each);
                        go.wait();
                        for i in 0..each {
                            // Both ways in: the waiting reserve and the non-waiting one.
                            let r = if (t + i) % 2 == 0 {
                                m.try_reserve(1)
                            } else {
                                m.reserve(1)
                            };
                            mine.push(r.unwrap().start_index());
                        }
                        starts.lock().unwrap().extend(mine);
                    });
                }
            });
            let mut starts = starts.into_inner().unwrap();
            starts.sort_unstable();
            let total = (threads * each) as u64;
            assert_eq!(starts, (0..total).collect::<std::vec::Vec<_>>());
            assert_eq!(m.load_write_index(LoadOrder::Acquire), total);
        }

        #[test]
        fn close_ends_waits_and_refuses_more_work() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            assert_eq!(q.state(), QueueState::Active);
            let signals = crate::signal::SignalPool::new(&plat, NodeId(0));
            let done = signals.create(1).unwrap();
            // Nothing consumes packets here: fill the queue.
            let mut r = q.reserve(64).unwrap();
            while r.written() < 64 {
                r.write_next(&packet(r.written())).unwrap();
            }
            let wait = |q: &AqlQueue<&FakePlatform>, t| {
                q.wait_completion(&done, SignalCondition::Eq, 0, t, WaitState::Blocked)
            };
            assert_eq!(wait(&q, 1_000_000).unwrap(), 1, "timeout: the last value");
            q.close().unwrap();
            assert_eq!(q.state(), QueueState::Destroyed);
            assert!(!q.is_active());
            assert_eq!(plat.live_queue_count(), 0, "hardware queue destroyed");
            assert_eq!(
                q.inactive_signal().load(LoadOrder::Acquire),
                QUEUE_DESTROYED
            );
            assert_eq!(QUEUE_DESTROYED as u64, 0x8000_0000_0000_0000);
            let id = q.id();
            for e in [
                q.reserve(1).unwrap_err(),
                wait(&q, u64::MAX).unwrap_err(),
                q.ring_doorbell(63).unwrap_err(),
            ] {
                assert_eq!(e.status(), Status::InvalidQueue);
                assert_eq!(e.detail(), std::format!("queue {id} was destroyed"));
            }
            // A condition that already holds is still reported as met.
            done.store(0, StoreOrder::Release);
            assert_eq!(wait(&q, u64::MAX).unwrap(), 0);
            q.close().unwrap();
            drop(done);
            drop(signals);
            q.destroy().unwrap();
            assert!(plat.live_chunks().is_empty());
        }

        #[test]
        fn a_stopped_queue_ends_waits_with_the_processor_status() {
            let plat = platform();
            let mut q = AqlQueue::create(&plat, &config(64)).unwrap();
            let mut r = q.reserve(64).unwrap();
            while r.written() < 64 {
                r.write_next(&packet(r.written())).unwrap();
            }
            // What the packet processor does when a packet is malformed.
            let code = super::super::inactive::encode(Status::InvalidPacketFormat, false);
            q.inactive_signal().store(code, StoreOrder::Release);
            assert_eq!(q.state(), QueueState::Stopped(Status::InvalidPacketFormat));
            let e = q.reserve(1).unwrap_err();
            assert_eq!(e.status(), Status::InvalidPacketFormat);
            assert_eq!(
                e.detail(),
                std::format!(
                    "queue {} was stopped by its packet processor: malformed AQL packet",
                    q.id()
                )
            );
            // The status is named once, by Display.
            assert_eq!(
                std::format!("{e}")
                    .matches("HSA_STATUS_ERROR_INVALID_PACKET_FORMAT")
                    .count(),
                1,
                "{e}"
            );
            // A real CP's code (no status in the upper half) reads as ROCR reads it; a code
            // ROCR does not define still reads as stopped.
            q.inactive_signal().store(0x100, StoreOrder::Release);
            assert_eq!(q.state(), QueueState::Stopped(Status::InvalidPacketFormat));
            q.inactive_signal().store(0x1000, StoreOrder::Release);
            assert_eq!(q.state(), QueueState::Stopped(Status::Error));
            q.inactivate().unwrap();
            assert_eq!(q.state(), QueueState::Inactive);
            let inactive = std::format!("queue {} is inactive", q.id());
            let e = q.reserve(1).unwrap_err();
            assert_eq!(e.status(), Status::InvalidQueue);
            assert_eq!(e.detail(), inactive);
            let e = q.ring_doorbell(63).unwrap_err();
            assert_eq!(e.status(), Status::InvalidQueue);
            assert_eq!(e.detail(), inactive);
            q.destroy().unwrap();
        }

        /// A queue destroyed normally frees its error record (only a queue whose hardware
        /// queue outlives it keeps the record, below).
        #[test]
        fn destroy_frees_the_error_record() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            let record = alloc::sync::Arc::downgrade(q.record.as_ref().unwrap());
            q.destroy().unwrap();
            assert!(record.upgrade().is_none(), "the record was freed");
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            let record = alloc::sync::Arc::downgrade(q.record.as_ref().unwrap());
            drop(q);
            assert!(record.upgrade().is_none(), "drop frees it too");
        }

        #[test]
        fn destroy_reports_platform_error_and_abandons_memory() {
            let plat = platform();
            let q = AqlQueue::create(&plat, &config(64)).unwrap();
            let record = alloc::sync::Arc::as_ptr(q.record.as_ref().unwrap());
            plat.destroy_queue(q.hw_id()).unwrap(); // someone else destroyed it
            let e = q.destroy().unwrap_err();
            assert_eq!(e.status(), Status::InvalidQueue);
            assert_eq!(
                plat.live_chunks().len(),
                2,
                "memory the processor may use is not freed"
            );
            // The queue's error record stays allocated as well (a platform that failed to
            // destroy the hardware queue may still call its error callback). The fake calls
            // none, so the test frees it (miri's leak check would report it).
            // SAFETY: `record` came from the queue's Arc, whose one strong count the queue's
            // drop forgot; nothing else holds or uses the pointer.
            unsafe { drop(alloc::sync::Arc::from_raw(record)) };
        }
    }
}
