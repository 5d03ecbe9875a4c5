//! Property tests of the AQL packet wire layer: the view never panics on any 64 bytes, every
//! valid builder input survives emit → publish → parse unchanged, and the builders and the
//! parser apply the same checks (same message; `INVALID_ARGUMENT` vs `INVALID_PACKET_FORMAT`)
//! but one: a kernel dispatch with a null kernarg address, which `hsa.h` allows and the parser
//! accepts, while the builder rejects it.

use hsa_core::abi::packet::{FenceScope, PacketType};
use hsa_core::abi::SignalHandle;
use hsa_core::packet::{
    AgentDispatch, AqlPacket, BarrierAnd, BarrierOr, BarrierValue, EncodedPacket, HeaderFlags,
    KernelDispatch, Packet, PacketHeader,
};
use hsa_core::{GpuVa, Status};
use proptest::prelude::*;

/// The bytes a consumer sees once the header word is published.
fn published(e: &EncodedPacket) -> [u8; 64] {
    let mut b = e.bytes;
    b[..4].copy_from_slice(&e.header_word.to_le_bytes());
    b
}

fn scope() -> impl Strategy<Value = FenceScope> {
    prop_oneof![
        Just(FenceScope::None),
        Just(FenceScope::Agent),
        Just(FenceScope::System)
    ]
}

fn flags() -> impl Strategy<Value = HeaderFlags> {
    (any::<bool>(), scope(), scope()).prop_map(|(barrier, a, r)| HeaderFlags {
        barrier,
        acquire_fence_scope: a,
        release_fence_scope: r,
    })
}

fn signal() -> impl Strategy<Value = SignalHandle> {
    prop_oneof![
        Just(SignalHandle::NULL),
        any::<u64>().prop_map(SignalHandle)
    ]
}

fn valid_kernel_dispatch() -> impl Strategy<Value = KernelDispatch> {
    (
        flags(),
        1u8..=3,
        [1u16..=1024, 1u16..=1024, 1u16..=1024],
        [any::<u32>(), any::<u32>(), any::<u32>()],
        any::<u32>(),
        any::<u32>(),
        1u64..(1 << 57),
        1u64..(1 << 59),
        signal(),
    )
        .prop_map(|(flags, dims, wg, extra, private, group, ko, ka, sig)| {
            let mut workgroup_size = [1u16; 3];
            let mut grid_size = [1u32; 3];
            for i in 0..usize::from(dims) {
                workgroup_size[i] = wg[i];
                // grid >= workgroup: workgroup + extra, saturating at u32::MAX.
                grid_size[i] = u32::from(wg[i]).saturating_add(extra[i]);
            }
            KernelDispatch {
                flags,
                dimensions: dims,
                workgroup_size,
                grid_size,
                private_segment_size_bytes: private,
                group_segment_size_bytes: group,
                kernel_object: GpuVa(ko * 64),
                kernarg_address: GpuVa(ka * 16),
                completion_signal: sig,
            }
        })
}

/// Any kernel dispatch the 64 bytes can express (dimensions 0..=3), biased to the edges.
fn any_kernel_dispatch() -> impl Strategy<Value = KernelDispatch> {
    let wg = || prop_oneof![0u16..=3, any::<u16>()];
    let grid = || prop_oneof![0u32..=3, 60u32..=70, any::<u32>()];
    let addr = || {
        prop_oneof![
            Just(0u64),
            (1u64..1 << 40).prop_map(|x| x * 64),
            (1u64..1 << 40).prop_map(|x| x * 16),
            any::<u64>()
        ]
        .prop_map(GpuVa)
    };
    (
        flags(),
        0u8..=3,
        [wg(), wg(), wg()],
        [grid(), grid(), grid()],
        addr(),
        addr(),
        signal(),
    )
        .prop_map(|(flags, dims, wg, grid, ko, ka, sig)| KernelDispatch {
            flags,
            dimensions: dims,
            workgroup_size: wg,
            grid_size: grid,
            private_segment_size_bytes: 0,
            group_segment_size_bytes: 0,
            kernel_object: ko,
            kernarg_address: ka,
            completion_signal: sig,
        })
}

fn agent_dispatch() -> impl Strategy<Value = AgentDispatch> {
    (
        flags(),
        any::<u16>(),
        any::<u64>(),
        any::<[u64; 4]>(),
        signal(),
    )
        .prop_map(|(flags, ty, ret, args, sig)| AgentDispatch {
            flags,
            function_type: ty,
            return_address: GpuVa(ret),
            args,
            completion_signal: sig,
        })
}

fn any_barrier_value() -> impl Strategy<Value = BarrierValue> {
    (
        flags(),
        signal(),
        any::<i64>(),
        any::<i64>(),
        prop_oneof![0u32..=5, any::<u32>()],
        signal(),
    )
        .prop_map(|(flags, s, value, mask, condition, c)| BarrierValue {
            flags,
            signal: s,
            value,
            mask,
            condition,
            completion_signal: c,
        })
}

/// 64 bytes whose header is usually well-formed, so parsing reaches the body checks.
fn packet_bytes() -> impl Strategy<Value = [u8; 64]> {
    (any::<[u8; 64]>(), 0u8..=7, any::<bool>(), 0u8..=2).prop_map(|(mut b, ty, fix, amd)| {
        if fix {
            b[0] = ty;
            b[1] &= !0x18 & !0x06; // fence scopes 0
        }
        if ty == 0 && amd == 0 {
            b[2] = 2; // AmdFormat BARRIER_VALUE
        }
        b
    })
}

/// Writes `k` into zeroed bytes through the view's setters (no builder checks).
fn raw_kernel_dispatch(k: &KernelDispatch) -> [u8; 64] {
    let mut v = AqlPacket::from_array([0; 64]);
    v.set_header(PacketHeader::new(PacketType::KernelDispatch, k.flags));
    v.set_setup(u16::from(k.dimensions));
    v.set_workgroup_size(k.workgroup_size);
    v.set_grid_size(k.grid_size);
    v.set_private_segment_size_bytes(k.private_segment_size_bytes);
    v.set_group_segment_size_bytes(k.group_segment_size_bytes);
    v.set_kernel_object(k.kernel_object);
    v.set_kernarg_address(k.kernarg_address);
    v.set_completion_signal(k.completion_signal);
    v.into_inner()
}

fn raw_barrier_value(p: &BarrierValue) -> [u8; 64] {
    let mut v = AqlPacket::from_array([0; 64]);
    v.set_header(PacketHeader::new(PacketType::VendorSpecific, p.flags));
    v.set_amd_format(2);
    v.set_barrier_value_signal(p.signal);
    v.set_barrier_value_value(p.value);
    v.set_barrier_value_mask(p.mask);
    v.set_barrier_value_condition(p.condition);
    v.set_completion_signal(p.completion_signal);
    v.into_inner()
}

fn round_trip(p: Packet) {
    let e = p.emit().unwrap();
    assert_eq!(
        e.bytes[..4],
        [1, 0, 0, 0],
        "unpublished slot must read INVALID"
    );
    let unpublished = AqlPacket::new_checked(&e.bytes[..]).unwrap();
    assert_eq!(unpublished.parse().unwrap(), Packet::Invalid);
    let bytes = published(&e);
    let v = AqlPacket::new_checked(&bytes[..]).unwrap();
    assert_eq!(v.header_word(), e.header_word);
    assert_eq!(v.parse().unwrap(), p);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 16 } else { 2000 }))]

    #[test]
    fn view_never_panics_and_parse_is_stable(bytes in packet_bytes()) {
        let v = AqlPacket::new_checked(&bytes[..]).unwrap();
        // Every getter on arbitrary bytes.
        let _ = (v.header_raw(), v.header_word(), v.header(), v.packet_type(), v.setup());
        let _ = (v.dimensions(), v.workgroup_size(), v.grid_size(), v.kernel_object());
        let _ = (v.kernarg_address(), v.completion_signal(), v.agent_function_type());
        let _ = (v.return_address(), v.args(), v.dep_signals(), v.amd_format());
        let _ = (v.barrier_value_signal(), v.barrier_value_value(), v.barrier_value_mask());
        let _ = (v.barrier_value_condition(), v.private_segment_size_bytes());
        let _ = v.group_segment_size_bytes();
        match v.parse() {
            Ok(p) => {
                prop_assert_eq!(p.packet_type() as u8, bytes[0]);
                // What parses re-emits (reserved fields cleared) and parses the same, but a
                // kernel dispatch without kernarg segment, which only the builder refuses.
                match (p, p.emit()) {
                    (Packet::KernelDispatch(k), Err(e)) if k.kernarg_address.is_null() => {
                        prop_assert_eq!(e.status(), Status::InvalidArgument);
                    }
                    (_, e) => {
                        let again = published(&e.unwrap());
                        prop_assert_eq!(AqlPacket::from_array(again).parse().unwrap(), p);
                    }
                }
            }
            Err(e) => {
                prop_assert_eq!(e.status(), Status::InvalidPacketFormat);
                prop_assert!(e.detail().to_string().contains(" is "), "{}", e.detail());
            }
        }
    }

    #[test]
    fn any_length_other_than_64_is_rejected(len in 0usize..200) {
        let buf = vec![0u8; len];
        let r = AqlPacket::new_checked(&buf[..]);
        prop_assert_eq!(r.is_ok(), len == 64);
        if let Err(e) = r {
            prop_assert_eq!(e.status(), Status::InvalidArgument);
        }
    }

    #[test]
    fn kernel_dispatch_round_trips(k in valid_kernel_dispatch()) {
        round_trip(Packet::KernelDispatch(k));
    }

    #[test]
    fn barriers_round_trip(f in flags(), deps in prop::collection::vec(signal(), 0..=5),
                           c in signal()) {
        let and = BarrierAnd::new(f, &deps, c).unwrap();
        prop_assert_eq!(&and.dep_signals[..deps.len()], &deps[..]);
        round_trip(Packet::BarrierAnd(and));
        round_trip(Packet::BarrierOr(BarrierOr::new(f, &deps, c).unwrap()));
    }

    #[test]
    fn too_many_dependencies_are_rejected(n in 6usize..40) {
        let deps = vec![SignalHandle(0x40); n];
        let e = BarrierOr::new(HeaderFlags::NONE, &deps, SignalHandle::NULL).unwrap_err();
        prop_assert_eq!(e.status(), Status::InvalidArgument);
        prop_assert_eq!(e.detail(), format!("dependency signal count is {n}; must be <= 5"));
        let e = BarrierAnd::new(HeaderFlags::NONE, &deps, SignalHandle::NULL).unwrap_err();
        prop_assert_eq!(e.status(), Status::InvalidArgument);
    }

    #[test]
    fn agent_dispatch_round_trips(a in agent_dispatch()) {
        round_trip(Packet::AgentDispatch(a));
    }

    #[test]
    fn barrier_value_builder_and_parser_agree(p in any_barrier_value()) {
        let raw = raw_barrier_value(&p);
        let parsed = AqlPacket::from_array(raw).parse();
        // A null signal is valid (hsa_ext_amd.h: a satisfied dependency).
        let valid = p.condition <= 3;
        match (p.emit(), parsed) {
            (Ok(_), Ok(q)) => {
                prop_assert!(valid);
                prop_assert_eq!(q, Packet::BarrierValue(p));
                round_trip(Packet::BarrierValue(p));
            }
            (Err(b), Err(q)) => {
                prop_assert!(!valid);
                prop_assert_eq!(b.status(), Status::InvalidArgument);
                prop_assert_eq!(q.status(), Status::InvalidPacketFormat);
                prop_assert_eq!(b.detail(), q.detail());
            }
            (b, q) => prop_assert!(false, "builder {:?} but parser {:?}", b, q),
        }
    }

    #[test]
    fn kernel_dispatch_builder_and_parser_agree(k in any_kernel_dispatch()) {
        let parsed = AqlPacket::from_array(raw_kernel_dispatch(&k)).parse();
        match (k.emit(), parsed) {
            (Ok(e), Ok(q)) => {
                prop_assert_eq!(q, Packet::KernelDispatch(k));
                prop_assert_eq!(AqlPacket::from_array(published(&e)).parse().unwrap(), q);
            }
            (Err(b), Err(q)) => {
                prop_assert_eq!(b.status(), Status::InvalidArgument);
                prop_assert_eq!(q.status(), Status::InvalidPacketFormat);
                prop_assert_eq!(b.detail(), q.detail());
            }
            // The one rule only the builder has: the kernarg address is null and nothing else
            // is wrong.
            (Err(b), Ok(q)) if k.kernarg_address.is_null() => {
                prop_assert_eq!(b.status(), Status::InvalidArgument);
                prop_assert_eq!(b.detail(), "kernarg_address is null (0x0); must be non-null");
                prop_assert_eq!(q, Packet::KernelDispatch(k));
            }
            (b, q) => prop_assert!(false, "builder {:?} but parser {:?}", b, q),
        }
    }

    #[test]
    fn null_kernarg_is_the_only_builder_parser_difference(k in valid_kernel_dispatch()) {
        let k = KernelDispatch { kernarg_address: GpuVa(0), ..k };
        let e = k.emit().unwrap_err();
        prop_assert_eq!(e.status(), Status::InvalidArgument);
        prop_assert_eq!(e.detail(), "kernarg_address is null (0x0); must be non-null");
        let parsed = AqlPacket::from_array(raw_kernel_dispatch(&k)).parse().unwrap();
        prop_assert_eq!(parsed, Packet::KernelDispatch(k));
    }

    #[test]
    fn each_kernel_dispatch_rule_gives_its_message(k in valid_kernel_dispatch(),
                                                   rule in 0usize..7, i in 0usize..3) {
        let mut bad = k;
        let used = i < usize::from(k.dimensions);
        let axis = ["x", "y", "z"][i];
        let want = match rule {
            0 => {
                bad.workgroup_size[i] = 0;
                format!("workgroup_size_{axis} is 0; must be >= 1")
            }
            1 => {
                bad.grid_size[i] = 0;
                format!("grid_size_{axis} is 0; must be >= 1")
            }
            2 if !used => {
                bad.grid_size[i] = 2;
                format!("grid_size_{axis} is 2; must be 1 when dimensions is {}", k.dimensions)
            }
            2 | 3 if used && k.workgroup_size[i] > 1 => {
                bad.grid_size[i] = u32::from(k.workgroup_size[i]) - 1;
                format!("grid_size_{axis} is {}; must be >= workgroup_size_{axis} ({})",
                        bad.grid_size[i], k.workgroup_size[i])
            }
            4 => {
                bad.kernel_object = GpuVa(k.kernel_object.get() | 0x20);
                format!("kernel_object is {:#x}; must be 64-byte aligned", bad.kernel_object.get())
            }
            5 => {
                bad.kernarg_address = GpuVa(k.kernarg_address.get() + 4);
                format!("kernarg_address is {:#x}; must be 16-byte aligned",
                        bad.kernarg_address.get())
            }
            6 => {
                bad.dimensions = 4 + i as u8;
                format!("dimensions is {}; must be in 1..=3", bad.dimensions)
            }
            _ => return Ok(()),
        };
        let e = bad.emit().unwrap_err();
        prop_assert_eq!(e.status(), Status::InvalidArgument);
        prop_assert_eq!(e.detail(), want);
    }
}
