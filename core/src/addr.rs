//! Newtypes for addresses and ids, so a device address is never mixed up with a host pointer,
//! an event id with a queue id, or a packet index with a byte offset.

use core::fmt;

macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// Wraps a raw value.
            pub const fn new(raw: $inner) -> Self {
                Self(raw)
            }
            /// The raw value.
            pub const fn get(self) -> $inner {
                self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({:#x})"), self.0)
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{:#x}", self.0)
            }
        }
    };
}

id_newtype!(
    /// A virtual address in a GPU's address space (bytes). On Linux (amdkfd SVM) and in the
    /// emulated device the CPU maps the same memory at the same address; on bare metal the
    /// host's translation decides.
    GpuVa(u64)
);
id_newtype!(
    /// A physical (bus) address, bytes. Bare metal only.
    PhysAddr(u64)
);
id_newtype!(
    /// Index of a 64-bit doorbell slot in the doorbell aperture (slot `i` is at byte `8 * i`).
    DoorbellIndex(u32)
);
id_newtype!(
    /// A hardware queue's id as the platform names it (KFD `queue_id`).
    QueueId(u32)
);
id_newtype!(
    /// A platform event's id (KFD `event_id`); written to an event mailbox to raise it.
    EventId(u32)
);
id_newtype!(
    /// A topology node id (KFD sysfs `nodes/N`); every agent is one node.
    NodeId(u32)
);
id_newtype!(
    /// A packet's position in an AQL queue: the monotonically increasing 64-bit write/read
    /// index, in packets. The slot is `index % size_packets`.
    PacketIndex(u64)
);

impl GpuVa {
    /// The null address.
    pub const NULL: GpuVa = GpuVa(0);

    /// Whether the address is 0.
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// `self + bytes`, or `None` on overflow.
    pub const fn checked_add(self, bytes: u64) -> Option<GpuVa> {
        match self.0.checked_add(bytes) {
            Some(v) => Some(GpuVa(v)),
            None => None,
        }
    }

    /// Whether the address is a multiple of `align_bytes` (a power of two).
    pub const fn is_aligned(self, align_bytes: u64) -> bool {
        align_bytes != 0 && self.0 & (align_bytes - 1) == 0
    }
}
