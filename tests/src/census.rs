//! The gfx9 opcode census: every opcode of every compute encoding (SOP1, SOP2, SOPC, SOPK,
//! SOPP, SMEM, VOP1, VOP2, VOPC, VOP3, VOP3P, DS, FLAT/GLOBAL/SCRATCH, MUBUF, MTBUF) that
//! `llvm-mc-19 --disassemble` decodes for a processor, compared with our decoder and
//! disassembler on the same words (issue 39).
//!
//! For each opcode value of each encoding the census builds a few words (operand fields
//! zero; VGPR sources; an SGPR quad where a buffer resource goes; `off` scratch/global
//! addresses; a literal dword after 32-bit VALU words) and asks llvm-mc about all of them in
//! one run per processor. An opcode is *known to llvm* when llvm decodes one of its words;
//! its census class is then:
//! - `equal`: ours decodes one of those words to llvm's text and size;
//! - `differs`: ours decodes a word llvm decodes, never to the same text;
//! - `missing`: ours rejects every word llvm decodes.
//!
//! MIMG, EXP and VINTRP are graphics encodings and are not counted (the interpreter's MIMG
//! subset is tested on its own).

use std::collections::BTreeMap;
use std::io;

use crate::llvm_diff::{self, Llvm};
use hsa_gfx9::{decode, Gfx9Target};

/// A compute encoding the census walks: its name and how many opcode values it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// SOP2 (opcodes 0..=95; 96.. are SOPK and the other scalar prefixes).
    Sop2,
    /// SOPK (0..=28).
    Sopk,
    /// SOP1.
    Sop1,
    /// SOPC.
    Sopc,
    /// SOPP.
    Sopp,
    /// SMEM.
    Smem,
    /// VOP1.
    Vop1,
    /// VOP2 (0..=61).
    Vop2,
    /// VOPC.
    Vopc,
    /// VOP3 (all 1024 values: the VOP3 forms of VOPC/VOP2/VOP1 opcodes and the VOP3-only
    /// ones).
    Vop3,
    /// VOP3P (with the MAI opcodes).
    Vop3p,
    /// DS.
    Ds,
    /// FLAT, GLOBAL and SCRATCH (the segment field is part of the opcode here).
    Flat,
    /// MUBUF.
    Mubuf,
    /// MTBUF.
    Mtbuf,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 15] = [
        Family::Sop2,
        Family::Sopk,
        Family::Sop1,
        Family::Sopc,
        Family::Sopp,
        Family::Smem,
        Family::Vop1,
        Family::Vop2,
        Family::Vopc,
        Family::Vop3,
        Family::Vop3p,
        Family::Ds,
        Family::Flat,
        Family::Mubuf,
        Family::Mtbuf,
    ];

    /// The ISA guides' name, e.g. `"VOP3P"`.
    pub const fn name(self) -> &'static str {
        match self {
            Family::Sop2 => "SOP2",
            Family::Sopk => "SOPK",
            Family::Sop1 => "SOP1",
            Family::Sopc => "SOPC",
            Family::Sopp => "SOPP",
            Family::Smem => "SMEM",
            Family::Vop1 => "VOP1",
            Family::Vop2 => "VOP2",
            Family::Vopc => "VOPC",
            Family::Vop3 => "VOP3",
            Family::Vop3p => "VOP3P",
            Family::Ds => "DS",
            Family::Flat => "FLAT",
            Family::Mubuf => "MUBUF",
            Family::Mtbuf => "MTBUF",
        }
    }

    /// Opcode values (FLAT: opcode × 3 segments).
    const fn opcodes(self) -> u32 {
        match self {
            Family::Sop2 => 96,
            Family::Sopk => 29,
            Family::Sop1 | Family::Vop1 | Family::Vopc | Family::Ds | Family::Smem => 256,
            Family::Sopc | Family::Sopp | Family::Vop3p | Family::Mubuf => 128,
            Family::Vop2 => 62,
            Family::Vop3 => 1024,
            Family::Flat => 128 * 3,
            Family::Mtbuf => 16,
        }
    }

    /// The words the census tries for opcode value `op`.
    fn words(self, op: u32) -> Vec<[u32; 2]> {
        // SGPR and VGPR operand codes: s0 = 0, v0 = 256, v1 = 257.
        match self {
            Family::Sop2 => vec![[0x8000_0000 | op << 23 | 4 << 16 | 2 << 8 | 6, 0]],
            Family::Sopk => vec![[0xB000_0000 | op << 23 | 4 << 16 | 0x10, 0]],
            Family::Sop1 => vec![[0xBE80_0000 | 4 << 16 | op << 8 | 6, 0]],
            Family::Sopc => vec![[0xBF00_0000 | op << 16 | 2 << 8 | 6, 0]],
            Family::Sopp => vec![[0xBF80_0000 | op << 16, 0], [0xBF80_0000 | op << 16 | 1, 0]],
            Family::Smem => {
                let w0 = 0xC000_0000 | op << 18 | 4 << 6;
                vec![
                    // s[2:3] base, immediate offset 4.
                    [w0 | 1 | 1 << 17, 4],
                    // s[8:11] base (a V#).
                    [w0 | 4 | 1 << 17, 4],
                    // glc (returning atomics).
                    [w0 | 1 | 1 << 17 | 1 << 16, 4],
                    [w0 | 4 | 1 << 17 | 1 << 16, 4],
                    // No operand fields (s_dcache_*, s_memtime with sdata only).
                    [0xC000_0000 | op << 18, 0],
                    [0xC000_0000 | op << 18 | 4 << 6, 0],
                ]
            }
            Family::Vop1 => vec![
                [0x7E00_0000 | 2 << 17 | op << 9 | 257, 0],
                [0x7E00_0000 | 2 << 17 | op << 9 | 4, 0],
                [0x7E00_0000 | op << 9, 0],
            ],
            Family::Vop2 => vec![
                [op << 25 | 2 << 17 | 3 << 9 | 257, 0],
                [op << 25 | 2 << 17 | 3 << 9 | 0xFF, 0x3C00],
            ],
            Family::Vopc => vec![
                [0x7C00_0000 | op << 17 | 3 << 9 | 257, 0],
                [0x7C00_0000 | op << 17 | 3 << 9 | 4, 0],
            ],
            Family::Vop3 => {
                let w0 = 0xD000_0000 | op << 16 | 2;
                vec![
                    [w0, 257 | 258 << 9 | 259 << 18],
                    [w0, 257 | 258 << 9],
                    [w0, 257],
                    [w0, 4 | 6 << 9 | 8 << 18],
                    [w0, 257 | 6 << 9],
                    // VOP3b: sdst s[10:11].
                    [w0 | 10 << 8, 257 | 258 << 9 | 260 << 18],
                    [w0 | 10 << 8, 257 | 258 << 9 | 106 << 18],
                    [w0 | 10 << 8, 257 | 258 << 9],
                    // VOPC into s[10:11].
                    [0xD000_0000 | op << 16 | 10, 257 | 258 << 9],
                    [0xD000_0000 | op << 16, 0],
                ]
            }
            Family::Vop3p => {
                let w0 = 0xD380_0000 | op << 16 | 4 << 8;
                // op_sel_hi set for every source (the default llvm prints nothing for).
                let hi = 3 << 27;
                vec![
                    [w0 | 1 << 14, hi | 257 | 258 << 9],
                    [w0 | 1 << 14, hi | 257 | 258 << 9 | 259 << 18],
                    // MAI: vdst in AGPRs (acc_cd bit 15), A/B in VGPRs, C in AGPRs (code 256+).
                    [0xD380_0000 | op << 16 | 1 << 15, 296 | 300 << 9 | 256 << 18],
                    [0xD380_0000 | op << 16 | 1 << 15, 296 | 300 << 9 | 260 << 18],
                    [0xD380_0000 | op << 16 | 1 << 15, 296 | 300 << 9 | 264 << 18],
                    [0xD380_0000 | op << 16, 296 | 300 << 9 | 256 << 18],
                    [0xD380_0000 | op << 16, 296],
                    [0xD380_0000 | op << 16 | 1 << 15, 296],
                    [0xD380_0000 | op << 16 | 1 << 15, 0x1000_0000 | 296],
                ]
            }
            Family::Ds => {
                let w0 = 0xD800_0000 | op << 17;
                vec![
                    [w0, 1 | 2 << 8 | 4 << 16 | 8 << 24],
                    [w0, 1 | 2 << 8 | 8 << 24],
                    [w0, 1 | 2 << 8 | 4 << 16],
                    [w0, 1 | 2 << 8],
                    [w0, 1 | 8 << 24],
                    [w0, 1],
                    [w0, 0],
                    [w0, 8 << 24],
                    // gds: the GWS and ordered-count forms exist only with it.
                    [w0 | 1 << 16, 1 | 2 << 8 | 8 << 24],
                    [w0 | 1 << 16, 1 | 2 << 8],
                    [w0 | 1 << 16, 2 << 8],
                    [w0 | 1 << 16, 0],
                ]
            }
            Family::Flat => {
                let (op, seg) = (op / 3, op % 3);
                let w0 = 0xDC00_0000 | op << 18 | seg << 14;
                let off = 0x7F << 16;
                vec![
                    [w0, 2 | 4 << 8 | off | 8 << 24],
                    [w0, 2 | 4 << 8 | off],
                    [w0, 2 | off | 8 << 24],
                    [w0 | 1 << 16, 2 | 4 << 8 | off | 8 << 24],
                    [w0, 2 | 4 << 8 | 8 << 24],
                    [w0, 2 | 4 << 8],
                    [w0, 2 | 8 << 24],
                    [w0 | 1 << 16, 2 | 4 << 8 | 8 << 24],
                    [w0, 2 | 4 << 16 | 8 << 24],
                    [w0, 2 | 4 << 8 | 4 << 16],
                    [w0, 0x7F << 16 | 8 << 24],
                ]
            }
            Family::Mubuf => {
                let w0 = 0xE000_0000 | op << 18 | 1 << 12;
                vec![
                    [w0, 1 | 2 << 8 | 2 << 16 | 0x80 << 24],
                    [w0 | 1 << 14, 1 | 2 << 8 | 2 << 16 | 0x80 << 24],
                    [0xE000_0000 | op << 18, 0],
                    [0xE000_0000 | op << 18, 0x80 << 24],
                    // lds: the loads into LDS (`buffer_load_* ... lds`, `buffer_store_lds_dword`).
                    [w0 | 1 << 16, 1 | 2 << 8 | 2 << 16 | 0x80 << 24],
                    [0xE000_0000 | op << 18 | 1 << 16, 2 << 16 | 0x80 << 24],
                ]
            }
            Family::Mtbuf => {
                let w0 = 0xE800_0000 | op << 15 | 1 << 12 | 4 << 19 | 1 << 23;
                vec![[w0, 1 | 2 << 8 | 2 << 16 | 0x80 << 24]]
            }
        }
    }
}

/// One opcode's census outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Ours decodes a word llvm decodes to llvm's text and size.
    Equal,
    /// Ours decodes, never to llvm's text: llvm's and ours' first disagreeing texts.
    Differs(String, String),
    /// Ours rejects every word llvm decodes: our error for the first.
    Missing(String),
}

/// The census of one processor: per (family, opcode value) llvm decodes, llvm's mnemonic
/// (without an encoding suffix) and the outcome.
#[derive(Clone, Debug, Default)]
pub struct Census {
    /// `(family, opcode value) → (llvm's mnemonic, outcome)`.
    pub opcodes: BTreeMap<(Family, u32), (String, Outcome)>,
}

impl Census {
    /// Opcodes llvm decodes.
    pub fn total(&self) -> usize {
        self.opcodes.len()
    }

    /// Opcodes with outcome `Equal`.
    pub fn equal(&self) -> usize {
        self.opcodes
            .values()
            .filter(|(_, o)| *o == Outcome::Equal)
            .count()
    }

    /// `FAMILY mnemonic` of every opcode that is not `Equal`, with its outcome, sorted.
    pub fn gaps(&self) -> Vec<(String, &Outcome)> {
        let mut v: Vec<(String, &Outcome)> = self
            .opcodes
            .iter()
            .filter(|(_, (_, o))| *o != Outcome::Equal)
            .map(|((f, _), (m, o))| (format!("{} {m}", f.name()), o))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// A mnemonic without the `_e32`/`_e64`/`_sdwa`/`_dpp` suffix llvm prints.
fn base(m: &str) -> String {
    for s in ["_e32", "_e64", "_sdwa", "_dpp"] {
        if let Some(b) = m.strip_suffix(s) {
            return b.to_string();
        }
    }
    m.to_string()
}

/// Runs the census of processor `cpu` (llvm-mc's `-mcpu`), decoded by ours as `target`.
///
/// # Errors
/// llvm-mc cannot be run or its output not attributed (see [`llvm_diff::llvm_decode_cpu`]).
pub fn run(cpu: &str, target: Gfx9Target) -> io::Result<Census> {
    let mut cases: Vec<(Family, u32, [u8; 8])> = Vec::new();
    for f in Family::ALL {
        for op in 0..f.opcodes() {
            for [w0, w1] in f.words(op) {
                let mut b = [0u8; 8];
                b[..4].copy_from_slice(&w0.to_le_bytes());
                b[4..].copy_from_slice(&w1.to_le_bytes());
                cases.push((f, op, b));
            }
        }
    }
    let bytes: Vec<[u8; 8]> = cases.iter().map(|c| c.2).collect();
    let answers = llvm_diff::llvm_decode_cpu(&bytes, cpu)?;
    let mut census = Census::default();
    for ((f, op, b), llvm) in cases.iter().zip(&answers) {
        let Llvm::Text { text, size, .. } = llvm else {
            continue;
        };
        // A VOP3 word whose opcode llvm reads as another encoding's: it still counts under
        // VOP3 (the promoted forms are VOP3 opcodes).
        let m = base(text.split_whitespace().next().unwrap_or(""));
        let ours = decode(&b[..], target);
        let outcome = match &ours {
            Ok(i) => {
                let t = i
                    .to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                if t == *text && i.size == *size {
                    Outcome::Equal
                } else {
                    Outcome::Differs(format!("{text} [{size}]"), format!("{t} [{}]", i.size))
                }
            }
            Err(e) => Outcome::Missing(e.detail().to_string()),
        };
        let entry = census
            .opcodes
            .entry((*f, *op))
            .or_insert_with(|| (m.clone(), outcome.clone()));
        // Equal beats Differs beats Missing.
        let rank = |o: &Outcome| match o {
            Outcome::Equal => 2,
            Outcome::Differs(..) => 1,
            Outcome::Missing(_) => 0,
        };
        if rank(&outcome) > rank(&entry.1) {
            *entry = (m, outcome);
        }
    }
    Ok(census)
}

/// The processors the census covers with the model ours runs them as: LLVM 19's gfx9
/// processors (gfx900, gfx902, gfx904, gfx906, gfx908, gfx909, gfx90a, gfx90c, gfx940,
/// gfx941, gfx942).
pub const PROCESSORS: [(&str, Gfx9Target); 11] = [
    ("gfx900", Gfx9Target::Gfx900),
    ("gfx902", Gfx9Target::Gfx900),
    ("gfx904", Gfx9Target::Gfx904),
    ("gfx906", Gfx9Target::Gfx906),
    ("gfx908", Gfx9Target::Gfx908),
    ("gfx909", Gfx9Target::Gfx900),
    ("gfx90a", Gfx9Target::Gfx90a),
    ("gfx90c", Gfx9Target::Gfx900),
    ("gfx940", Gfx9Target::Gfx942),
    ("gfx941", Gfx9Target::Gfx942),
    ("gfx942", Gfx9Target::Gfx942),
];

/// The processors LLVM 19 does not know, censused against LLVM 22's llvm-mc
/// ([`llvm_diff::LLVM22_PROCESSORS`]): gfx950.
pub const LLVM22_PROCESSORS: [(&str, Gfx9Target); 1] = [("gfx950", Gfx9Target::Gfx950)];
