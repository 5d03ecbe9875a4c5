//! Scalar ALU (SOP1, SOP2, SOPC, SOPK) and program control (SOPP): Vega ISA §4 and §12.1..§12.5.

#[allow(unused_imports)]
use super::*;

/// MODE bit 27, GPR_IDX_EN: VALU instructions address VGPRs relative to M0[7:0] (Vega ISA
/// MODE register table and S_SET_GPR_IDX_ON).
pub(crate) const MODE_GPR_IDX_EN: u32 = 1 << 27;

/// `s_set_gpr_idx_on`, `_off`, `_idx` and `_mode` (Vega ISA SOPC opcode 17, SOPP opcodes 28
/// and 29, SOP1 opcode 50; the same in the CDNA1/2/3 guides): `on` sets MODE.GPR_IDX_EN,
/// M0[7:0] = S0[7:0] and M0[15:12] = the SSRC1 field's bits 3:0 (VSRC0_REL, VSRC1_REL,
/// VSRC2_REL, VDST_REL); `off` clears MODE.GPR_IDX_EN; `idx` sets M0[7:0] = S0[7:0]; `mode`
/// sets M0[15:12] = SIMM16[3:0]. The other bits of M0 are kept.
pub(crate) fn set_gpr_idx(w: &mut Wave, inst: &Instruction) {
    let m0 = w.sreg[M0];
    let s0 = scalar(w, &inst.src[0], false, false) as u32;
    let mask = (inst.imm as u32 & 0xF) << 12;
    match inst.op() {
        Op::SSetGprIdxOn => {
            w.mode |= MODE_GPR_IDX_EN;
            w.sreg[M0] = m0 & !0xF0FF | mask | s0 & 0xFF;
        }
        Op::SSetGprIdxOff => w.mode &= !MODE_GPR_IDX_EN,
        Op::SSetGprIdxIdx => w.sreg[M0] = m0 & !0xFF | s0 & 0xFF,
        _ => w.sreg[M0] = m0 & !0xF000 | mask,
    }
}

/// `inst` with the GPR index applied, for a VALU instruction while MODE.GPR_IDX_EN is set:
/// M0[7:0] added to the VGPR number of src0, src1, src2 and the destination whose bit
/// M0[12], M0[13], M0[14], M0[15] is set (Vega ISA S_SET_GPR_IDX_ON; the whole range of a
/// 64-bit operand moves). SGPR, constant and AGPR operands are not indexed.
///
/// # Errors
/// [`Status::IllegalInstruction`] when an indexed range would end past v255.
pub(crate) fn gpr_indexed(w: &Wave, inst: &Instruction) -> Result<Instruction> {
    let m0 = w.sreg[M0];
    let index = m0 & 0xFF;
    let mut out = *inst;
    let [s0, s1, s2] = &mut out.src;
    for (k, op) in [s0, s1, s2, &mut out.dst].into_iter().enumerate() {
        if m0 >> (12 + k) & 1 == 0 {
            continue;
        }
        if let Operand::Vgpr { index: v, count } = *op {
            let first = u32::from(v) + index;
            if first + u32::from(count.max(1)) > 256 {
                return Err(error!(
                    Status::IllegalInstruction,
                    "GPR index mode: v{v} + M0[7:0] {index} is past v255"
                ));
            }
            *op = Operand::Vgpr {
                index: first as u8,
                count,
            };
        }
    }
    Ok(out)
}

/// MODE bit 28, VSKIP: vector instructions (VOP*, DS, FLAT, MUBUF, MTBUF, MIMG) are not
/// issued (Vega ISA MODE register table and S_SETVSKIP).
pub(crate) const MODE_VSKIP: u32 = 1 << 28;
/// MODE bits 31:29, CSP: the conditional-branch stack pointer of `s_cbranch_g_fork`,
/// `s_cbranch_i_fork` and `s_cbranch_join`.
pub(crate) const MODE_CSP_SHIFT: u32 = 29;

/// The SGPR index M0 registers past scalar operand `op` (`s_movrels`/`s_movreld`, Vega ISA
/// SOP1 42..45: `SGPR[op + M0]`).
///
/// # Errors
/// [`Status::IllegalInstruction`] naming the instruction when the register (range) would
/// end past s101: the SGPRs a wave has (the special registers are not indexed).
fn relative_sgpr(w: &Wave, inst: &Instruction, op: &Operand) -> Result<usize> {
    let Operand::Sreg { index, count } = *op else {
        bail!(
            Status::IllegalInstruction,
            "{}: the relative operand is not an SGPR",
            inst.name()
        );
    };
    let m0 = w.sreg[M0];
    let i = u64::from(index) + u64::from(m0);
    if i + u64::from(count) > 102 {
        bail!(
            Status::IllegalInstruction,
            "{}: SGPR {index} + M0 ({m0}) is past s101",
            inst.name()
        );
    }
    Ok(i as usize)
}

/// The fork of `s_cbranch_g_fork`/`s_cbranch_i_fork` (Vega ISA SOP2 41, SOPK 16) with mask
/// `mask` and target `target`: all of EXEC passing jumps, none passing goes on; otherwise the
/// larger side runs first and the other (its PC and EXEC) is pushed on the stack of 4-SGPR
/// slots at `s[4·CSP]` (EXEC in the low pair, PC in the high one), MODE.CSP incremented.
fn fork(w: &mut Wave, inst: &Instruction, mask: u64, target: u64, next: u64) -> Result<Flow> {
    let exec = w.exec();
    let (pass, fail) = (mask & exec, !mask & exec);
    if pass == exec {
        return Ok(Flow::Jump(target));
    }
    if fail == exec {
        return Ok(Flow::Next);
    }
    let csp = w.mode >> MODE_CSP_SHIFT & 7;
    let slot = 4 * csp as usize;
    if csp == 7 {
        bail!(
            Status::IllegalInstruction,
            "{}: the conditional-branch stack is full (MODE.CSP 7)",
            inst.name()
        );
    }
    let (run_exec, run_pc, saved_exec, saved_pc) = if fail.count_ones() < pass.count_ones() {
        (fail, next, pass, target)
    } else {
        (pass, target, fail, next)
    };
    w.set_sreg64(slot, saved_exec);
    w.set_sreg64(slot + 2, saved_pc);
    w.mode = w.mode & !(7 << MODE_CSP_SHIFT) | (csp + 1) << MODE_CSP_SHIFT;
    w.set_exec(run_exec);
    Ok(if run_pc == next {
        Flow::Next
    } else {
        Flow::Jump(run_pc)
    })
}

pub(crate) fn sopp(ctx: &Ctx<'_, '_>, w: &mut Wave, inst: &Instruction, next: u64) -> Result<Flow> {
    let target = next.wrapping_add((inst.imm as i64 * 4) as u64);
    let taken = match inst.op() {
        Op::SNop | Op::SWaitcnt | Op::SSetprio => return Ok(Flow::Next),
        // Nothing to do here (Vega ISA SOPP): there is no instruction cache to invalidate
        // (s_icache_inv), no sleeping wave that s_sleep does not end by itself (s_wakeup), no
        // performance level (s_incperflevel, s_decperflevel) and no thread trace
        // (s_ttracedata).
        Op::SIcacheInv | Op::SWakeup | Op::SIncperflevel | Op::SDecperflevel | Op::STtracedata => {
            return Ok(Flow::Next)
        }
        // A sleeping wave lets others run: here the host thread gives up its time slice (a
        // kernel polling memory the host writes, such as hostcall's, waits this way).
        Op::SSleep => {
            std::thread::yield_now();
            return Ok(Flow::Next);
        }
        Op::SSendmsg | Op::SSendmsghalt => {
            send_message(ctx, w, inst)?;
            if inst.op() == Op::SSendmsghalt {
                return Err(error!(
                    Status::Exception,
                    "{}: the wave halted after its message (nothing resumes a \
                     halted wave here)",
                    inst.op()
                ));
            }
            return Ok(Flow::Next);
        }
        Op::SEndpgm | Op::SEndpgmSaved => return Ok(Flow::End),
        // S_SETHALT (Vega ISA SOPP 13): SIMM16[0] = 1 halts the wave until the host resumes
        // it, which nothing does here; 0 resumes (a running wave: nothing to do).
        Op::SSethalt if inst.imm & 1 == 0 => return Ok(Flow::Next),
        Op::SSethalt => {
            return Err(error!(
                Status::Exception,
                "{} 1: the wave halted (nothing resumes a halted wave here)",
                inst.op()
            ))
        }
        // The debugger's conditional branches (Vega ISA SOPP 23..26): STATUS.COND_DBG_SYS
        // and COND_DBG_USER are set by a debugger only, and none is attached here: never
        // taken.
        Op::SCbranchCdbgsys
        | Op::SCbranchCdbguser
        | Op::SCbranchCdbgsysOrUser
        | Op::SCbranchCdbgsysAndUser => false,
        Op::SBarrier => return Ok(Flow::Barrier),
        // `llvm.debugtrap` (trap id 3) with no debugger attached: the trap handler returns at
        // once and the wave goes on (AMDGPUUsage, "Trap Handler ABI").
        Op::STrap if inst.imm as u16 & 0xFF == 3 => return Ok(Flow::Next),
        // No trap handler runs here: any other trap stops the dispatch as the CP reports a
        // wave trap to ROCR, the debug-trap queue error (0x8000_0000), which ROCR 5.2 turns
        // into HSA_STATUS_ERROR_EXCEPTION (amd_aql_queue.cpp). Trap id 2 is
        // `__builtin_trap` (AMDGPUUsage, "Trap Handler ABI").
        Op::STrap => {
            return Err(error!(
                Status::Exception,
                "{} {}: the wave trapped (no trap handler runs in the emulator)",
                inst.op(),
                inst.imm as u16 & 0xFF
            ))
        }
        Op::SBranch => true,
        Op::SCbranchScc0 => !w.scc,
        Op::SCbranchScc1 => w.scc,
        Op::SCbranchVccz => w.vcc() == 0,
        Op::SCbranchVccnz => w.vcc() != 0,
        Op::SCbranchExecz => w.exec() == 0,
        Op::SCbranchExecnz => w.exec() != 0,
        _ => return Err(not_implemented(inst)),
    };
    Ok(if taken {
        Flow::Jump(target)
    } else {
        Flow::Next
    })
}

/// `s_sendmsg`'s message (SIMM16[3:0]; Vega ISA §4.4 "Send Message Types"): compute waves
/// send `MSG_INTERRUPT`, an interrupt to the host with M0[22:0] as data
/// ([`DeviceMemory::message_interrupt`]). The others (geometry-shader messages, the trap
/// handler's `MSG_SAVEWAVE`, `MSG_SYSMSG`, ...) are no compute kernel's: an error naming the
/// message.
pub(crate) fn send_message(ctx: &Ctx<'_, '_>, w: &Wave, inst: &Instruction) -> Result<()> {
    let imm = inst.imm as u16;
    match imm & 0xF {
        1 => ctx.memory.message_interrupt(w.sreg[M0] & 0x7F_FFFF),
        id => Err(error!(
            Status::IllegalInstruction,
            "{} message {} (SIMM16 {imm:#x}) is not one the interpreter delivers (only \
             MSG_INTERRUPT)",
            inst.name(),
            crate::disasm::sendmsg_name(id).unwrap_or("with no gfx9 name")
        )),
    }
}

pub(crate) fn bfe(v: u64, off: u32, width: u32, signed: bool, bits: u32) -> u64 {
    if width == 0 {
        return 0;
    }
    let r = v >> (off % bits);
    if width >= bits {
        return r;
    }
    let mask = (1u64 << width) - 1;
    let r = r & mask;
    if signed && r >> (width - 1) & 1 != 0 {
        r | !mask
    } else {
        r
    }
}

pub(crate) fn salu(w: &mut Wave, inst: &Instruction, next: u64) -> Result<Flow> {
    let op = inst.op();
    let wd = inst.info.widths;
    let a = scalar(w, &inst.src[0], wd[1] == 2, false);
    let b = scalar(w, &inst.src[1], wd[2] == 2, false);
    let (a32, b32) = (a as u32, b as u32);
    let scc = w.scc;
    let mut new_scc = scc;
    let nz = |r: u64| r != 0;
    let imm = inst.imm;
    let d_old = scalar(w, &inst.dst, false, false) as u32;
    let result: Option<u64> = match inst.encoding {
        Encoding::Sopc => {
            new_scc = match op {
                Op::SCmpEqI32 | Op::SCmpEqU32 => a32 == b32,
                Op::SCmpLgI32 | Op::SCmpLgU32 => a32 != b32,
                Op::SCmpGtI32 => (a32 as i32) > (b32 as i32),
                Op::SCmpGeI32 => (a32 as i32) >= (b32 as i32),
                Op::SCmpLtI32 => (a32 as i32) < (b32 as i32),
                Op::SCmpLeI32 => (a32 as i32) <= (b32 as i32),
                Op::SCmpGtU32 => a32 > b32,
                Op::SCmpGeU32 => a32 >= b32,
                Op::SCmpLtU32 => a32 < b32,
                Op::SCmpLeU32 => a32 <= b32,
                Op::SCmpEqU64 => a == b,
                Op::SCmpLgU64 => a != b,
                Op::SBitcmp0B32 => a32 >> (b32 & 31) & 1 == 0,
                Op::SBitcmp1B32 => a32 >> (b32 & 31) & 1 == 1,
                Op::SBitcmp0B64 => a >> (b32 & 63) & 1 == 0,
                Op::SBitcmp1B64 => a >> (b32 & 63) & 1 == 1,
                // S_SETVSKIP (Vega ISA SOPC 16): MODE.VSKIP = S0[S1[4:0]]; SCC unchanged.
                Op::SSetvskip => {
                    let on = a32 >> (b32 & 31) & 1;
                    w.mode = w.mode & !MODE_VSKIP | (on * MODE_VSKIP);
                    return Ok(Flow::Next);
                }
                _ => return Err(not_implemented(inst)),
            };
            None
        }
        Encoding::Sopk => {
            let k = imm as u32; // sign-extended
            let ku = imm as u16 as u32;
            let d = d_old;
            match op {
                Op::SMovkI32 => Some(k as u64),
                Op::SCmovkI32 => Some(if scc { k } else { d } as u64),
                Op::SAddkI32 => {
                    let (r, o) = (d as i32).overflowing_add(k as i32);
                    new_scc = o;
                    Some(r as u32 as u64)
                }
                Op::SMulkI32 => Some(d.wrapping_mul(k) as u64),
                // S_CALL_B64 (Vega ISA SOPK opcode 21): D = the address of the next
                // instruction, PC = that + simm16 × 4.
                Op::SCallB64 => {
                    set_sdst(w, &inst.dst, next);
                    return Ok(Flow::Jump(next.wrapping_add((i64::from(imm) * 4) as u64)));
                }
                // S_CBRANCH_I_FORK (Vega ISA SOPK 16): a fork to PC + 4 + simm16 × 4 under
                // the mask in the SDST field's SGPR pair.
                Op::SCbranchIFork => {
                    let mask = scalar(w, &inst.dst, true, false);
                    let target = next.wrapping_add((i64::from(imm) * 4) as u64);
                    return fork(w, inst, mask, target, next);
                }
                Op::SGetregB32 | Op::SSetregB32 | Op::SSetregImm32B32 => {
                    let (id, offset, size) = (ku & 0x3F, ku >> 6 & 0x1F, (ku >> 11) + 1);
                    let mask = (((1u64 << size) - 1) << offset) as u32;
                    // HW_REG_HW_ID (4) is read-only: the SPI sets it at launch (hwid module).
                    // HW_REG_XCC_ID (20, gfx940+) too: the XCC the wave runs on.
                    let xcc = id == 20 && inst.target.is_gfx940();
                    if id == 4 && op == Op::SGetregB32 {
                        Some(u64::from((w.hw_id & mask) >> offset))
                    } else if xcc && op == Op::SGetregB32 {
                        Some(u64::from((crate::hwid::XCC_ID & mask) >> offset))
                    } else if id != 1 {
                        bail!(
                            Status::IllegalInstruction,
                            "{op} of hardware register {id}: only HW_REG_MODE (1), and \
                             s_getreg_b32 of HW_REG_HW_ID (4) and gfx942's HW_REG_XCC_ID \
                             (20), are modelled"
                        );
                    } else if op == Op::SGetregB32 {
                        Some(u64::from((w.mode & mask) >> offset))
                    } else {
                        w.mode = w.mode & !mask | (a32 << offset) & mask;
                        None
                    }
                }
                _ => {
                    new_scc = match op {
                        Op::SCmpkEqI32 => d == k,
                        Op::SCmpkLgI32 => d != k,
                        Op::SCmpkGtI32 => (d as i32) > (k as i32),
                        Op::SCmpkGeI32 => (d as i32) >= (k as i32),
                        Op::SCmpkLtI32 => (d as i32) < (k as i32),
                        Op::SCmpkLeI32 => (d as i32) <= (k as i32),
                        Op::SCmpkEqU32 => d == ku,
                        Op::SCmpkLgU32 => d != ku,
                        Op::SCmpkGtU32 => d > ku,
                        Op::SCmpkGeU32 => d >= ku,
                        Op::SCmpkLtU32 => d < ku,
                        Op::SCmpkLeU32 => d <= ku,
                        _ => return Err(not_implemented(inst)),
                    };
                    None
                }
            }
        }
        Encoding::Sop1 => {
            let exec = w.exec();
            let saveexec = |f: u64| (f, f != 0);
            let r: u64 = match op {
                Op::SMovB32 | Op::SMovB64 => a,
                Op::SCmovB32 | Op::SCmovB64 => {
                    if !scc {
                        return Ok(Flow::Next);
                    }
                    a
                }
                Op::SNotB32 => {
                    let r = !a32 as u64;
                    new_scc = nz(r);
                    r
                }
                Op::SNotB64 => {
                    new_scc = nz(!a);
                    !a
                }
                Op::SBrevB32 => a32.reverse_bits() as u64,
                Op::SBrevB64 => a.reverse_bits(),
                Op::SBcnt0I32B32 | Op::SBcnt1I32B32 | Op::SBcnt0I32B64 | Op::SBcnt1I32B64 => {
                    let ones = if wd[1] == 2 {
                        a.count_ones()
                    } else {
                        a32.count_ones()
                    };
                    let bits = if wd[1] == 2 { 64 } else { 32 };
                    let r = if matches!(op, Op::SBcnt0I32B32 | Op::SBcnt0I32B64) {
                        bits - ones
                    } else {
                        ones
                    } as u64;
                    new_scc = nz(r);
                    r
                }
                Op::SFf1I32B32 => {
                    (if a32 == 0 {
                        u32::MAX
                    } else {
                        a32.trailing_zeros()
                    }) as u64
                }
                Op::SFf0I32B32 => {
                    (if a32 == u32::MAX {
                        u32::MAX
                    } else {
                        a32.trailing_ones()
                    }) as u64
                }
                Op::SFf1I32B64 => (if a == 0 { u32::MAX } else { a.trailing_zeros() }) as u64,
                Op::SFf0I32B64 => {
                    (if a == u64::MAX {
                        u32::MAX
                    } else {
                        a.trailing_ones()
                    }) as u64
                }
                Op::SFlbitI32B32 => {
                    (if a32 == 0 {
                        u32::MAX
                    } else {
                        a32.leading_zeros()
                    }) as u64
                }
                Op::SFlbitI32B64 => (if a == 0 { u32::MAX } else { a.leading_zeros() }) as u64,
                Op::SFlbitI32 => {
                    let v = a32 as i32;
                    if v == 0 || v == -1 {
                        u32::MAX as u64
                    } else {
                        (if v < 0 { !a32 } else { a32 }).leading_zeros() as u64
                    }
                }
                // S_FLBIT_I32_I64 (Vega ISA SOP1 opcode 21): s_flbit_i32 of 64 bits.
                Op::SFlbitI32I64 => {
                    if a == 0 || a == u64::MAX {
                        u32::MAX as u64
                    } else {
                        (if (a as i64) < 0 { !a } else { a }).leading_zeros() as u64
                    }
                }
                // S_WQM_B32/B64 (Vega ISA SOP1 opcodes 6, 7): each nibble with a bit set
                // becomes 0xF; SCC = D != 0.
                Op::SWqmB32 | Op::SWqmB64 => {
                    let r = (0..16).fold(0u64, |r, k| {
                        if a >> (4 * k) & 0xF != 0 {
                            r | 0xF << (4 * k)
                        } else {
                            r
                        }
                    });
                    let r = if wd[0] == 2 { r } else { r & 0xFFFF_FFFF };
                    new_scc = nz(r);
                    r
                }
                // S_QUADMASK_B32/B64 (Vega ISA SOP1 40, 41): bit k of D is set when the
                // 4-bit group k of S0 is not 0; SCC = D != 0.
                Op::SQuadmaskB32 | Op::SQuadmaskB64 => {
                    let groups = if wd[0] == 2 { 16 } else { 8 };
                    let r =
                        (0..groups).fold(0u64, |r, k| r | u64::from(a >> (4 * k) & 0xF != 0) << k);
                    new_scc = nz(r);
                    r
                }
                // S_BITREPLICATE_B64_B32 (Vega ISA SOP1 55): bit i of S0 into bits 2i and
                // 2i + 1 of D; SCC unchanged.
                Op::SBitreplicateB64B32 => {
                    (0..32).fold(0u64, |r, i| r | ((a >> i & 1) * 3) << (2 * i))
                }
                Op::SSextI32I8 => a32 as i8 as i32 as u32 as u64,
                Op::SSextI32I16 => a32 as i16 as i32 as u32 as u64,
                Op::SBitset0B32 => (d_old & !(1 << (a32 & 31))) as u64,
                Op::SBitset1B32 => (d_old | 1 << (a32 & 31)) as u64,
                // S_BITSET0/1_B64 (Vega ISA SOP1 opcodes 25, 27): D.u64[S0.u[5:0]] = 0 / 1.
                Op::SBitset0B64 => scalar(w, &inst.dst, true, false) & !(1u64 << (a32 & 63)),
                Op::SBitset1B64 => scalar(w, &inst.dst, true, false) | 1u64 << (a32 & 63),
                Op::SAbsI32 => {
                    let r = (a32 as i32).unsigned_abs() as u64;
                    new_scc = nz(r);
                    r
                }
                // S_MOVRELS_B32/B64 (Vega ISA SOP1 42, 43): D = the SGPR(s) M0 registers past
                // the source operand's.
                Op::SMovrelsB32 | Op::SMovrelsB64 => {
                    let i = relative_sgpr(w, inst, &inst.src[0])?;
                    if wd[0] == 2 {
                        w.sreg64(i)
                    } else {
                        u64::from(w.sreg[i])
                    }
                }
                // S_MOVRELD_B32/B64 (Vega ISA SOP1 44, 45): the SGPR(s) M0 registers past the
                // destination operand's = S0.
                Op::SMovreldB32 | Op::SMovreldB64 => {
                    let i = relative_sgpr(w, inst, &inst.dst)?;
                    if wd[0] == 2 {
                        w.set_sreg64(i, a);
                    } else {
                        w.sreg[i] = a32;
                    }
                    return Ok(Flow::Next);
                }
                // S_CBRANCH_JOIN (Vega ISA SOP1 46): S0 holds the conditional stack pointer
                // saved before the fork; equal to MODE.CSP: go on; else pop the other path.
                Op::SCbranchJoin => {
                    let csp = w.mode >> MODE_CSP_SHIFT & 7;
                    if csp == a32 {
                        return Ok(Flow::Next);
                    }
                    let csp = csp.wrapping_sub(1) & 7;
                    w.mode = w.mode & !(7 << MODE_CSP_SHIFT) | csp << MODE_CSP_SHIFT;
                    let slot = 4 * csp as usize;
                    w.set_exec(w.sreg64(slot));
                    return Ok(Flow::Jump(w.sreg64(slot + 2)));
                }
                // S_RFE_B64 (Vega ISA SOP1 31): return from the trap handler: PRIV = 0 (this
                // interpreter runs no wave privileged), PC = S0.
                Op::SRfeB64 => return Ok(Flow::Jump(a)),
                Op::SGetpcB64 => next,
                Op::SSetpcB64 => return Ok(Flow::Jump(a)),
                Op::SSwappcB64 => {
                    set_sdst(w, &inst.dst, next);
                    return Ok(Flow::Jump(a));
                }
                Op::SAndSaveexecB64
                | Op::SOrSaveexecB64
                | Op::SXorSaveexecB64
                | Op::SAndn2SaveexecB64
                | Op::SOrn2SaveexecB64
                | Op::SNandSaveexecB64
                | Op::SNorSaveexecB64
                | Op::SXnorSaveexecB64
                | Op::SAndn1SaveexecB64
                | Op::SOrn1SaveexecB64 => {
                    let (e, s) = saveexec(match op {
                        Op::SAndSaveexecB64 => a & exec,
                        Op::SOrSaveexecB64 => a | exec,
                        Op::SXorSaveexecB64 => a ^ exec,
                        Op::SAndn2SaveexecB64 => a & !exec,
                        Op::SOrn2SaveexecB64 => a | !exec,
                        Op::SNandSaveexecB64 => !(a & exec),
                        Op::SNorSaveexecB64 => !(a | exec),
                        Op::SXnorSaveexecB64 => !(a ^ exec),
                        Op::SAndn1SaveexecB64 => !a & exec,
                        _ => !a | exec,
                    });
                    w.set_exec(e);
                    new_scc = s;
                    exec
                }
                Op::SAndn1WrexecB64 | Op::SAndn2WrexecB64 => {
                    let e = if op == Op::SAndn1WrexecB64 {
                        !a & exec
                    } else {
                        a & !exec
                    };
                    w.set_exec(e);
                    new_scc = e != 0;
                    e
                }
                _ => return Err(not_implemented(inst)),
            };
            Some(r)
        }
        _ => {
            let wide = wd[0] == 2;
            let r: u64 = match op {
                Op::SAddU32 => {
                    let (r, c) = a32.overflowing_add(b32);
                    new_scc = c;
                    r as u64
                }
                Op::SSubU32 => {
                    let (r, c) = a32.overflowing_sub(b32);
                    new_scc = c;
                    r as u64
                }
                Op::SAddI32 => {
                    let (r, o) = (a32 as i32).overflowing_add(b32 as i32);
                    new_scc = o;
                    r as u32 as u64
                }
                Op::SSubI32 => {
                    let (r, o) = (a32 as i32).overflowing_sub(b32 as i32);
                    new_scc = o;
                    r as u32 as u64
                }
                Op::SAddcU32 => {
                    let t = a32 as u64 + b32 as u64 + scc as u64;
                    new_scc = t >> 32 != 0;
                    t as u32 as u64
                }
                Op::SSubbU32 => {
                    let t = (a32 as u64).wrapping_sub(b32 as u64 + scc as u64);
                    new_scc = b32 as u64 + scc as u64 > a32 as u64;
                    t as u32 as u64
                }
                Op::SMinI32 | Op::SMinU32 | Op::SMaxI32 | Op::SMaxU32 => {
                    let signed = matches!(op, Op::SMinI32 | Op::SMaxI32);
                    let lt = if signed {
                        (a32 as i32) < (b32 as i32)
                    } else {
                        a32 < b32
                    };
                    let gt = if signed {
                        (a32 as i32) > (b32 as i32)
                    } else {
                        a32 > b32
                    };
                    if matches!(op, Op::SMinI32 | Op::SMinU32) {
                        new_scc = lt;
                        if lt {
                            a
                        } else {
                            b
                        }
                    } else {
                        new_scc = gt;
                        if gt {
                            a
                        } else {
                            b
                        }
                    }
                }
                Op::SCselectB32 | Op::SCselectB64 => {
                    if scc {
                        a
                    } else {
                        b
                    }
                }
                Op::SAndB32 | Op::SAndB64 => a & b,
                Op::SOrB32 | Op::SOrB64 => a | b,
                Op::SXorB32 | Op::SXorB64 => a ^ b,
                Op::SAndn2B32 | Op::SAndn2B64 => a & !b,
                Op::SOrn2B32 | Op::SOrn2B64 => a | !b,
                Op::SNandB32 | Op::SNandB64 => !(a & b),
                Op::SNorB32 | Op::SNorB64 => !(a | b),
                Op::SXnorB32 | Op::SXnorB64 => !(a ^ b),
                Op::SLshlB32 => (a32 << (b32 & 31)) as u64,
                Op::SLshrB32 => (a32 >> (b32 & 31)) as u64,
                Op::SAshrI32 => ((a32 as i32) >> (b32 & 31)) as u32 as u64,
                Op::SLshlB64 => a << (b32 & 63),
                Op::SLshrB64 => a >> (b32 & 63),
                Op::SAshrI64 => ((a as i64) >> (b32 & 63)) as u64,
                Op::SBfmB32 => (1u32.wrapping_shl(a32 & 31).wrapping_sub(1) << (b32 & 31)) as u64,
                Op::SBfmB64 => 1u64.wrapping_shl(a32 & 63).wrapping_sub(1) << (b32 & 63),
                Op::SMulI32 => a32.wrapping_mul(b32) as u64,
                Op::SMulHiU32 => (a32 as u64 * b32 as u64) >> 32,
                Op::SMulHiI32 => ((a32 as i32 as i64 * b32 as i32 as i64) >> 32) as u32 as u64,
                Op::SBfeU32 => bfe(a32 as u64, b32 & 31, b32 >> 16 & 0x7F, false, 32) as u32 as u64,
                Op::SBfeI32 => {
                    bfe(a32 as u64, b32 & 31, (b32 >> 16 & 0x7F).min(32), true, 32) as u32 as u64
                }
                Op::SBfeU64 => bfe(a, b32 & 63, b32 >> 16 & 0x7F, false, 64),
                Op::SBfeI64 => bfe(a, b32 & 63, (b32 >> 16 & 0x7F).min(64), true, 64),
                Op::SAbsdiffI32 => (a32 as i32).wrapping_sub(b32 as i32).unsigned_abs() as u64,
                Op::SLshl1AddU32 | Op::SLshl2AddU32 | Op::SLshl3AddU32 | Op::SLshl4AddU32 => {
                    let n = match op {
                        Op::SLshl1AddU32 => 1,
                        Op::SLshl2AddU32 => 2,
                        Op::SLshl3AddU32 => 3,
                        _ => 4,
                    };
                    let t = ((a32 as u64) << n) + b32 as u64;
                    new_scc = t >> 32 != 0;
                    t as u32 as u64
                }
                Op::SPackLlB32B16 => ((a32 & 0xFFFF) | b32 << 16) as u64,
                Op::SPackLhB32B16 => ((a32 & 0xFFFF) | (b32 & 0xFFFF_0000)) as u64,
                Op::SPackHhB32B16 => ((a32 >> 16) | (b32 & 0xFFFF_0000)) as u64,
                // S_CBRANCH_G_FORK (Vega ISA SOP2 41): a fork to the address in S1 under the
                // mask S0.
                Op::SCbranchGFork => return fork(w, inst, a, b, next),
                // S_RFE_RESTORE_B64 (Vega ISA SOP2 43): S_RFE_B64 that also restores the
                // instruction ATC bit from S1[0], which has no effect here.
                Op::SRfeRestoreB64 => return Ok(Flow::Jump(a)),
                _ => return Err(not_implemented(inst)),
            };
            let r = if wide { r } else { r as u32 as u64 };
            let sets_scc_nz = matches!(
                op,
                Op::SAndB32
                    | Op::SAndB64
                    | Op::SOrB32
                    | Op::SOrB64
                    | Op::SXorB32
                    | Op::SXorB64
                    | Op::SAndn2B32
                    | Op::SAndn2B64
                    | Op::SOrn2B32
                    | Op::SOrn2B64
                    | Op::SNandB32
                    | Op::SNandB64
                    | Op::SNorB32
                    | Op::SNorB64
                    | Op::SXnorB32
                    | Op::SXnorB64
                    | Op::SLshlB32
                    | Op::SLshlB64
                    | Op::SLshrB32
                    | Op::SLshrB64
                    | Op::SAshrI32
                    | Op::SAshrI64
                    | Op::SBfeU32
                    | Op::SBfeI32
                    | Op::SBfeU64
                    | Op::SBfeI64
                    | Op::SAbsdiffI32
            );
            if sets_scc_nz {
                new_scc = r != 0;
            }
            Some(r)
        }
    };
    if let Some(r) = result {
        set_sdst(w, &inst.dst, r);
    }
    w.scc = new_scc;
    Ok(Flow::Next)
}
