//! Differential testing of the gfx9 decoder and disassembler (`hsa_gfx9::decode` and
//! the `Display` text of its `Instruction`) against `llvm-mc-19 --disassemble`.
//!
//! Each case is 8 bytes (two little-endian dwords `w0`, `w1`): the instruction starts at
//! `w0`; a 32-bit instruction with a literal, or a 64-bit encoding, takes `w1` as well. The
//! cases come from a seeded generator ([`Generator`]): a quarter are uniform random 64-bit
//! words, the rest are biased to each encoding's fixed prefix with the other bits random (so
//! that most cases reach an opcode table instead of an unknown encoding).
//!
//! ## How llvm-mc's answers are attributed to cases
//!
//! llvm-mc reads lines of hex bytes; bytes between `[` and `]` are decoded on their own
//! (an "atomic block"): decoding starts at the block's first byte and goes on until the block
//! ends or a decode fails, which llvm-mc reports on stderr as
//! `<file>:<line>:<column>: warning: invalid instruction encoding` (the column is that of the
//! failing byte's token) and then skips the rest of the block. A soft failure is reported as
//! `potentially undefined instruction encoding` and the instruction is printed anyway. The
//! input is one block per case, `[0xNN 0xNN ... 0xNN]` (8 tokens of 5 columns, byte `k` at
//! column `2 + 5k`), each followed by a marker block `[0x00 0x00 0x80 0xbf]` (`s_nop 0`, a
//! word no case holds as `w1`). So the stdout lines between two markers are the case's:
//! the first is `w0`'s instruction (unless a warning names the case's line at byte 0); a
//! second line, or a warning at byte 4, means llvm took 4 bytes, otherwise 8.
//!
//! llvm-mc-19 crashes (SIGSEGV) on SDWA words whose operand or destination select is 7
//! (reserved): such cases are not sent ([`Verdict::NotSent`]; ours must reject them). Any
//! other crash makes the batch be split in halves until the crashing case is found
//! ([`Verdict::LlvmCrash`]).
//!
//! ## Verdicts
//!
//! Texts are compared after collapsing runs of whitespace (the only normalisation);
//! sizes must agree too. See [`Verdict`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use hsa_gfx9::{self as gfx9, Gfx9Target};

/// The program the decoder is compared with.
pub const LLVM_MC: &str = "llvm-mc-19";

/// Whether [`LLVM_MC`] can be run (`--version` succeeds).
pub fn llvm_mc_available() -> bool {
    Command::new(LLVM_MC)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Processors LLVM 19 does not know, which are compared with LLVM 22's llvm-mc (Debian sid's,
/// in the ROCm 7 chroot) instead: gfx950.
pub const LLVM22_PROCESSORS: [&str; 1] = ["gfx950"];

/// The llvm-mc that knows processor `cpu`: [`LLVM_MC`], or for the [`LLVM22_PROCESSORS`] the
/// ROCm 7 chroot's LLVM 22 through `scripts/chroot-llvm` (no chroot(2) needed).
pub fn llvm_mc_command(cpu: &str) -> Command {
    if LLVM22_PROCESSORS.contains(&cpu) {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/chroot-llvm");
        let mut c = Command::new(script);
        c.arg("llvm-mc");
        c
    } else {
        Command::new(LLVM_MC)
    }
}

/// Whether the llvm-mc of processor `cpu` ([`llvm_mc_command`]) can be run; for gfx950 that
/// needs the ROCm 7 chroot (`scripts/rocm7-chroot.sh build`).
pub fn llvm_mc_available_for(cpu: &str) -> bool {
    llvm_mc_command(cpu)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The marker block's word (`s_nop 0`) and its text.
const MARKER: u32 = 0xBF80_0000;
const MARKER_TEXT: &str = "s_nop 0";

/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator, so a run is reproducible
/// from its seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A random number below `n` (`n` > 0).
    pub fn below(&mut self, n: u32) -> u32 {
        ((u64::from(self.next_u32()) * u64::from(n)) >> 32) as u32
    }
}

/// The encodings the biased generator aims at: (name, fixed-bit mask, fixed bits) of `w0`.
/// From the Vega ISA §12 "Microcode Formats" (the graphics ones too: llvm decodes them).
pub const PREFIXES: &[(&str, u32, u32)] = &[
    ("SOP2", 0xC000_0000, 0x8000_0000),
    ("SOPK", 0xF000_0000, 0xB000_0000),
    ("SOP1", 0xFF80_0000, 0xBE80_0000),
    ("SOPC", 0xFF80_0000, 0xBF00_0000),
    ("SOPP", 0xFF80_0000, 0xBF80_0000),
    ("SMEM", 0xFC00_0000, 0xC000_0000),
    ("VOP1", 0xFE00_0000, 0x7E00_0000),
    ("VOPC", 0xFE00_0000, 0x7C00_0000),
    ("VOP2", 0x8000_0000, 0x0000_0000),
    ("VOP3", 0xFC00_0000, 0xD000_0000),
    ("VOP3P", 0xFF80_0000, 0xD380_0000),
    ("DS", 0xFC00_0000, 0xD800_0000),
    ("FLAT", 0xFC00_0000, 0xDC00_0000),
    ("MUBUF", 0xFC00_0000, 0xE000_0000),
    ("MTBUF", 0xFC00_0000, 0xE800_0000),
    ("MIMG", 0xFC00_0000, 0xF000_0000),
    ("EXP", 0xFC00_0000, 0xC400_0000),
    ("VINTRP", 0xFC00_0000, 0xC800_0000),
];

/// The encoding class of a first dword as the ISA's fixed bits say (`+SDWA`/`+DPP` for a
/// VOP1/VOP2/VOPC whose `src0` is 0xF9/0xFA), for grouping results.
pub fn encoding_class(w0: u32) -> &'static str {
    if w0 >> 30 == 0b10 {
        return match w0 >> 23 {
            0x17D => "SOP1",
            0x17E => "SOPC",
            0x17F => "SOPP",
            _ if w0 >> 28 == 0xB => "SOPK",
            _ => "SOP2",
        };
    }
    if w0 >> 31 == 0 {
        let sub = match w0 & 0x1FF {
            0xF9 => 1,
            0xFA => 2,
            _ => 0,
        };
        let names = match w0 >> 25 {
            0x3F => ["VOP1", "VOP1+SDWA", "VOP1+DPP"],
            0x3E => ["VOPC", "VOPC+SDWA", "VOPC+DPP"],
            _ => ["VOP2", "VOP2+SDWA", "VOP2+DPP"],
        };
        return names[sub];
    }
    match w0 >> 26 {
        0x30 => "SMEM",
        0x31 => "EXP",
        0x32 => "VINTRP",
        0x34 if w0 >> 23 == 0x1A7 => "VOP3P",
        0x34 => "VOP3",
        0x36 => "DS",
        0x37 => "FLAT",
        0x38 => "MUBUF",
        0x3A => "MTBUF",
        0x3C => "MIMG",
        _ => "unassigned",
    }
}

/// How a case was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Uniform random 64 bits.
    Uniform,
    /// An encoding's fixed prefix (index into [`PREFIXES`]) with random other bits.
    Biased(usize),
}

/// The case generator: seeded, a quarter uniform, the rest biased (prefixes chosen
/// uniformly; VOP1/VOP2/VOPC get the SDWA or DPP `src0` one time in four each, a literal one
/// time in eight).
#[derive(Clone, Debug)]
pub struct Generator {
    rng: Rng,
}

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Generator {
        Generator {
            rng: Rng::new(seed),
        }
    }

    /// The next case and how it was made. `w1` is never the marker word.
    pub fn next_case(&mut self) -> ([u8; 8], Kind) {
        let r = &mut self.rng;
        let mut w0 = r.next_u32();
        let mut w1 = r.next_u32();
        let kind = if r.below(4) == 0 {
            Kind::Uniform
        } else {
            let i = r.below(PREFIXES.len() as u32) as usize;
            let (name, mask, bits) = PREFIXES[i];
            w0 = (w0 & !mask) | bits;
            if name == "VOP2" {
                // Opcodes 0x3E/0x3F are VOPC/VOP1.
                while w0 >> 25 >= 0x3E {
                    w0 = (r.next_u32() & !mask) | bits;
                }
            }
            if name.starts_with("VOP") && w0 >> 31 == 0 {
                w0 &= !0x1FF;
                w0 |= match r.below(8) {
                    0 | 1 => 0xF9,
                    2 | 3 => 0xFA,
                    4 => 0xFF,
                    _ => r.below(512),
                };
            }
            Kind::Biased(i)
        };
        while w1 == MARKER {
            w1 = r.next_u32();
        }
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&w0.to_le_bytes());
        b[4..].copy_from_slice(&w1.to_le_bytes());
        (b, kind)
    }
}

/// llvm-mc's answer for one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Llvm {
    /// Decoded: the text (whitespace collapsed), the bytes it took, and whether llvm-mc
    /// warned `potentially undefined instruction encoding`.
    Text {
        /// The instruction text.
        text: String,
        /// Bytes taken: 4 or 8.
        size: u8,
        /// A soft failure (printed anyway).
        soft: bool,
    },
    /// `invalid instruction encoding` at byte 0.
    Reject,
    /// Printed with an `/*Invalid ...*/` comment: llvm-mc decoded an operand the
    /// instruction cannot have. Counts as a rejection (the text is kept).
    Invalid(String),
    /// llvm-mc crashed on this case alone.
    Crash,
    /// Not sent: a word llvm-mc-19 is known to crash on.
    NotSent,
}

/// Whether llvm-mc-19 is known to crash on the case: an SDWA VOP1/VOP2/VOPC whose
/// `dst_sel` (not VOPC), `src0_sel` or `src1_sel` (not VOP1) is 7.
pub fn llvm_crashes_on(case: &[u8; 8]) -> bool {
    let w0 = u32::from_le_bytes([case[0], case[1], case[2], case[3]]);
    let w1 = u32::from_le_bytes([case[4], case[5], case[6], case[7]]);
    if w0 >> 31 != 0 || w0 & 0x1FF != 0xF9 {
        return false;
    }
    let vopc = w0 >> 25 == 0x3E;
    (!vopc && w1 >> 8 & 7 == 7) || w1 >> 16 & 7 == 7 || w1 >> 24 & 7 == 7
}

/// Whether llvm-mc printed a comment in the text (`/*Invalid register, ...*/`,
/// `/*Invalid immediate*/`, `/* Invalid dpp_ctrl value */`, `/* ... is not supported ... */`):
/// it decoded a field value the instruction cannot have.
fn is_invalid(text: &str) -> bool {
    // llvm-mc's disassembly has comments only for such values (`/*Invalid register ...*/`,
    // `/* row_newbcast/row_share is not supported on ASICs earlier than GFX90A/GFX10 */`).
    text.contains("/*")
}

fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

static FILE_SEQ: AtomicU64 = AtomicU64::new(0);

/// Runs llvm-mc on `cases` for `target`, one answer per case, in order.
///
/// # Errors
/// llvm-mc cannot be started, or its output cannot be attributed to the cases (the error
/// names what was unexpected).
pub fn llvm_decode(cases: &[[u8; 8]], target: Gfx9Target) -> io::Result<Vec<Llvm>> {
    llvm_decode_cpu(cases, target.name())
}

/// [`llvm_decode`] for the processor named `cpu` (`-mcpu=`, e.g. `"gfx904"`), which may be
/// one our [`Gfx9Target`] models as another.
///
/// # Errors
/// As [`llvm_decode`].
pub fn llvm_decode_cpu(cases: &[[u8; 8]], cpu: &str) -> io::Result<Vec<Llvm>> {
    let mut out = vec![Llvm::NotSent; cases.len()];
    let sent: Vec<usize> = (0..cases.len())
        .filter(|&i| !llvm_crashes_on(&cases[i]))
        .collect();
    let batch: Vec<[u8; 8]> = sent.iter().map(|&i| cases[i]).collect();
    let answers = llvm_decode_sent(&batch, cpu)?;
    for (i, a) in sent.into_iter().zip(answers) {
        out[i] = a;
    }
    Ok(out)
}

fn llvm_decode_sent(cases: &[[u8; 8]], cpu: &str) -> io::Result<Vec<Llvm>> {
    if cases.is_empty() {
        return Ok(Vec::new());
    }
    match run_llvm_mc(cases, cpu)? {
        Some(v) => Ok(v),
        None if cases.len() == 1 => Ok(vec![Llvm::Crash]),
        None => {
            let (a, b) = cases.split_at(cases.len() / 2);
            let mut v = llvm_decode_sent(a, cpu)?;
            v.extend(llvm_decode_sent(b, cpu)?);
            Ok(v)
        }
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::other(msg)
}

/// One llvm-mc run; `None` when it died of a signal.
fn run_llvm_mc(cases: &[[u8; 8]], cpu: &str) -> io::Result<Option<Vec<Llvm>>> {
    let mut input = String::with_capacity(cases.len() * 64);
    for c in cases {
        input.push('[');
        for (k, b) in c.iter().enumerate() {
            let sep = if k > 0 { " " } else { "" };
            let _ = write!(input, "{sep}0x{b:02x}");
        }
        input.push_str("]\n[0x00 0x00 0x80 0xbf]\n");
    }
    let path: PathBuf = std::env::temp_dir().join(format!(
        "hsa-llvm-diff-{}-{}.txt",
        std::process::id(),
        FILE_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, input)?;
    let result = llvm_mc_command(cpu)
        .arg("--disassemble")
        .arg("-triple=amdgcn-amd-amdhsa")
        .arg(format!("-mcpu={cpu}"))
        .arg(&path)
        .output();
    let _ = std::fs::remove_file(&path);
    let o = result?;
    if o.status.code().is_none() {
        return Ok(None);
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // (line, byte offset) → soft?
    let mut warnings: BTreeMap<(usize, usize), bool> = BTreeMap::new();
    let prefix = format!("{}:", path.display());
    for l in stderr.lines() {
        let Some(rest) = l.strip_prefix(&prefix) else {
            continue;
        };
        let mut parts = rest.splitn(3, ':');
        let (Some(line), Some(col), Some(msg)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(line), Ok(col)) = (line.parse::<usize>(), col.parse::<usize>()) else {
            continue;
        };
        let soft = if msg.contains("invalid instruction encoding") {
            false
        } else if msg.contains("potentially undefined instruction encoding") {
            true
        } else {
            return Err(bad(format!("unexpected llvm-mc message: {l}")));
        };
        if col < 2 || (col - 2) % 5 != 0 {
            return Err(bad(format!("unexpected column: {l}")));
        }
        warnings.insert((line, (col - 2) / 5), soft);
    }
    let mut lines = stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('.'));
    let mut next = |what: &str, i: usize| {
        lines
            .next()
            .map(normalise)
            .ok_or_else(|| bad(format!("llvm-mc output ends at case {i} ({what})")))
    };
    let mut answers = Vec::with_capacity(cases.len());
    for i in 0..cases.len() {
        let line = 2 * i + 1;
        let answer = match warnings.get(&(line, 0)) {
            Some(false) => Llvm::Reject,
            w0 => {
                let text = next("first", i)?;
                let size = match warnings.get(&(line, 4)) {
                    Some(false) => 4,
                    Some(true) => {
                        next("second", i)?;
                        4
                    }
                    None => {
                        let l = next("second or marker", i)?;
                        if l == MARKER_TEXT {
                            answers.push(if is_invalid(&text) {
                                Llvm::Invalid(text)
                            } else {
                                Llvm::Text {
                                    text,
                                    size: 8,
                                    soft: w0.is_some(),
                                }
                            });
                            continue;
                        }
                        4
                    }
                };
                if is_invalid(&text) {
                    Llvm::Invalid(text)
                } else {
                    Llvm::Text {
                        text,
                        size,
                        soft: w0.is_some(),
                    }
                }
            }
        };
        answers.push(answer);
        let m = next("marker", i)?;
        if m != MARKER_TEXT {
            return Err(bad(format!("case {i}: expected the marker, got {m:?}")));
        }
    }
    Ok(Some(answers))
}

/// The outcome of one case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Both decode, same size and text.
    AgreeText,
    /// Both reject.
    AgreeReject,
    /// llvm decodes, ours rejects (graphics encodings and instructions the interpreter does
    /// not implement; classified by encoding and llvm's mnemonic).
    LlvmOnly,
    /// llvm decodes an instruction that is in our opcode table, ours rejects the word (a
    /// field value ours refuses): a bug, or a feature the interpreter does not implement
    /// (tfe, lds, soe, ...); listed per class.
    OursRejectsKnown,
    /// Ours decodes, llvm rejects: a bug (or an explained llvm quirk).
    OursOnly,
    /// Both decode, different size or text: a bug.
    TextDiffers,
    /// llvm-mc crashed on the case (ours' answer is recorded in the class).
    LlvmCrash,
    /// Not sent to llvm-mc (known crash); the class says whether ours rejects.
    NotSent,
}

impl Verdict {
    /// Short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Verdict::AgreeText => "agree-text",
            Verdict::AgreeReject => "agree-reject",
            Verdict::LlvmOnly => "llvm-only",
            Verdict::OursRejectsKnown => "ours-rejects-known",
            Verdict::OursOnly => "ours-only",
            Verdict::TextDiffers => "text-differs",
            Verdict::LlvmCrash => "llvm-crash",
            Verdict::NotSent => "not-sent",
        }
    }

    /// Whether the verdict is a mismatch of ours to fix (or explain).
    pub const fn is_bug(self) -> bool {
        matches!(self, Verdict::OursOnly | Verdict::TextDiffers)
    }
}

/// One example of a class: the case's words and both answers.
#[derive(Clone, Debug)]
pub struct Example {
    /// `w0`, `w1`.
    pub words: [u32; 2],
    /// Our text and size, or our error.
    pub ours: String,
    /// llvm-mc's text and size, or `reject`.
    pub llvm: String,
}

/// Compares one case: the verdict and its class (`ENCODING mnemonic`).
pub fn compare(case: &[u8; 8], target: Gfx9Target, llvm: &Llvm) -> (Verdict, String, Example) {
    let w0 = u32::from_le_bytes([case[0], case[1], case[2], case[3]]);
    let w1 = u32::from_le_bytes([case[4], case[5], case[6], case[7]]);
    let enc = encoding_class(w0);
    let ours = gfx9::decode(case, target);
    let ours_text = match &ours {
        Ok(i) => format!("{} [{}]", normalise(&i.to_string()), i.size),
        Err(e) => format!("reject: {}", e.detail()),
    };
    let llvm_text = match llvm {
        Llvm::Text { text, size, soft } => {
            format!("{text} [{size}]{}", if *soft { " (soft)" } else { "" })
        }
        Llvm::Reject => "reject".into(),
        Llvm::Invalid(t) => format!("invalid operand: {t}"),
        Llvm::Crash => "crash".into(),
        Llvm::NotSent => "not sent".into(),
    };
    let ex = Example {
        words: [w0, w1],
        ours: ours_text,
        llvm: llvm_text,
    };
    let mnemonic = |t: &str| t.split_whitespace().next().unwrap_or("").to_string();
    let (v, class) = match (llvm, &ours) {
        (Llvm::NotSent | Llvm::Crash, o) => {
            let v = if *llvm == Llvm::Crash {
                Verdict::LlvmCrash
            } else {
                Verdict::NotSent
            };
            let c = match o {
                Ok(i) => format!("{enc} ours decodes {}", i.name()),
                Err(_) => format!("{enc} ours rejects"),
            };
            (v, c)
        }
        (Llvm::Reject, Err(_)) => (Verdict::AgreeReject, enc.to_string()),
        (Llvm::Invalid(_), Err(_)) => (Verdict::AgreeReject, enc.to_string()),
        (Llvm::Reject, Ok(i)) => (Verdict::OursOnly, format!("{enc} {}", i.name())),
        (Llvm::Invalid(_), Ok(i)) => (
            Verdict::OursOnly,
            format!("{enc} {} (llvm: invalid operand)", i.name()),
        ),
        (Llvm::Text { text, .. }, Err(_)) => {
            let m = mnemonic(text);
            // An instruction of our table refused for its field values is a finding of its
            // own; an instruction we lack is llvm-only.
            if gfx9::decode::knows_mnemonic(&m, target) {
                (Verdict::OursRejectsKnown, format!("{enc} {m}"))
            } else {
                (Verdict::LlvmOnly, format!("{enc} {m}"))
            }
        }
        (Llvm::Text { text, size, .. }, Ok(i)) => {
            let t = normalise(&i.to_string());
            if t == *text && *size == i.size {
                (Verdict::AgreeText, enc.to_string())
            } else {
                (Verdict::TextDiffers, format!("{enc} {}", mnemonic(text)))
            }
        }
    };
    (v, class, ex)
}

/// Counts of a run: per verdict, per (verdict, class) with a few examples, per generator
/// kind.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Cases per verdict.
    pub verdicts: BTreeMap<Verdict, u64>,
    /// Cases per (verdict, class), with up to [`Tally::EXAMPLES`] examples each.
    pub classes: BTreeMap<(Verdict, String), (u64, Vec<Example>)>,
    /// Cases per generator kind (`uniform` or the prefix name) and verdict.
    pub kinds: BTreeMap<(String, Verdict), u64>,
    /// Total cases.
    pub total: u64,
}

impl Tally {
    /// Examples kept per class.
    pub const EXAMPLES: usize = 3;

    /// Adds one case.
    pub fn add(&mut self, kind: Kind, v: Verdict, class: String, ex: Example) {
        self.total += 1;
        *self.verdicts.entry(v).or_default() += 1;
        let k = match kind {
            Kind::Uniform => "uniform".to_string(),
            Kind::Biased(i) => PREFIXES[i].0.to_string(),
        };
        *self.kinds.entry((k, v)).or_default() += 1;
        if v != Verdict::AgreeText && v != Verdict::AgreeReject {
            let e = self.classes.entry((v, class)).or_default();
            e.0 += 1;
            if e.1.len() < Self::EXAMPLES {
                e.1.push(ex);
            }
        }
    }

    /// Cases with a verdict of ours to fix.
    pub fn bugs(&self) -> u64 {
        self.verdicts
            .iter()
            .filter(|(v, _)| v.is_bug())
            .map(|(_, n)| n)
            .sum()
    }

    /// A Markdown report: verdict counts, then every non-agreeing class with its count and
    /// examples.
    pub fn report(&self, title: &str) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "### {title}\n\n{} cases\n", self.total);
        let _ = writeln!(s, "| verdict | cases |\n|---|---:|");
        for (v, n) in &self.verdicts {
            let _ = writeln!(s, "| {} | {n} |", v.name());
        }
        let _ = writeln!(s);
        let mut last = None;
        for ((v, class), (n, exs)) in &self.classes {
            if last != Some(*v) {
                let _ = writeln!(s, "\n{} classes:\n", v.name());
                last = Some(*v);
            }
            let _ = write!(s, "- `{class}`: {n}");
            if v.is_bug() || matches!(v, Verdict::LlvmCrash) {
                for e in exs {
                    let _ = write!(
                        s,
                        "\n  - `{:08x} {:08x}`: ours `{}`, llvm `{}`",
                        e.words[0], e.words[1], e.ours, e.llvm
                    );
                }
            } else if let Some(e) = exs.first() {
                let _ = write!(
                    s,
                    " (e.g. `{:08x} {:08x}`: `{}`)",
                    e.words[0], e.words[1], e.llvm
                );
            }
            let _ = writeln!(s);
        }
        s
    }
}

/// Runs `count` cases from `seed` for `target` in batches of `batch`, calling `progress`
/// after each batch.
///
/// # Errors
/// As [`llvm_decode`].
pub fn run(
    target: Gfx9Target,
    count: u64,
    seed: u64,
    batch: usize,
    mut progress: impl FnMut(&Tally),
) -> io::Result<Tally> {
    let mut gen = Generator::new(seed);
    let mut tally = Tally::default();
    let mut done = 0u64;
    while done < count {
        let n = batch.min((count - done) as usize);
        let (cases, kinds): (Vec<[u8; 8]>, Vec<Kind>) = (0..n).map(|_| gen.next_case()).unzip();
        let answers = llvm_decode(&cases, target)?;
        for ((case, kind), a) in cases.iter().zip(kinds).zip(&answers) {
            let (v, class, ex) = compare(case, target, a);
            tally.add(kind, v, class, ex);
        }
        done += n as u64;
        progress(&tally);
    }
    Ok(tally)
}
