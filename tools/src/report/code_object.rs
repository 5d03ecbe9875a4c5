//! `hsainfo --code-object FILE`: what a code object contains, in rocminfo's style.
//!
//! Ref: rocminfo's ISA/kernel listing (`Label: value`, booleans as `TRUE`/`FALSE`); the values
//! come from [`hsa_core::loader::CodeObject`].

use std::fmt::Write as _;
use std::path::Path;

use hsa_core::loader::{AlignedBytes, CodeObject};
use hsa_core::{bail, error, Result, Status};

/// Width of the label column, characters (labels are left-aligned and padded to it).
const LABEL_WIDTH: usize = 28;

fn line(out: &mut String, indent: usize, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "{:indent$}{:<LABEL_WIDTH$}{}",
        "",
        label,
        value,
        indent = indent
    );
}

/// Largest code-object file read, bytes (256 MiB). Real single-target code objects are far
/// smaller (the test kernels are a few KiB, large math libraries tens of MiB per target);
/// [`hsa_core::loader::code_object::MAX_IMAGE_BYTES`] (4 GiB) bounds the *loaded image's*
/// span and is far too much to read into memory for a file that turns out to be wrong.
pub const MAX_CODE_OBJECT_FILE_BYTES: u64 = 256 << 20;

/// The ELF magic, `\x7fELF` (`ELFMAG`, elf.h): the first 4 bytes of every code object.
const ELF_MAGIC: [u8; 4] = *b"\x7fELF";

/// What a file that is not a regular file is, for messages (`"a FIFO"`, `"a directory"`).
fn file_kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// Reads a code-object file for `hsainfo --code-object` and the demo. Before reading any
/// byte it checks what was opened (`fstat` of the open file, so no other file can be
/// swapped in between): a regular file of at most [`MAX_CODE_OBJECT_FILE_BYTES`]. The file
/// is opened with `O_NONBLOCK`, so a FIFO is refused at once instead of blocking `open(2)`
/// until a writer comes (the flag has no effect on reads of a regular file). Then it checks
/// the ELF magic from the first 4 bytes, and reads the rest, still at most the cap (the file
/// may grow after the check). Every error message names the file.
///
/// # Errors
/// `Status::InvalidFile` when the file cannot be opened or read, is not a regular file
/// (naming what it is: directory, FIFO, character device...), or is larger than
/// [`MAX_CODE_OBJECT_FILE_BYTES`] (naming its size and the cap); `Status::InvalidCodeObject`
/// when it is shorter than 4 bytes or does not start with the ELF magic (naming the bytes
/// found).
#[allow(clippy::result_large_err)] // hsa_core::Error is inline by design (no allocator)
pub fn read_code_object_file(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file_error = |e: std::io::Error| error!(Status::InvalidFile, "{}: {e}", path.display());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(file_error)?;
    let metadata = file.metadata().map_err(file_error)?;
    if !metadata.is_file() {
        bail!(
            Status::InvalidFile,
            "{}: not a regular file but {}; a code object is read from a regular file",
            path.display(),
            file_kind(metadata.file_type())
        );
    }
    if metadata.len() > MAX_CODE_OBJECT_FILE_BYTES {
        bail!(
            Status::InvalidFile,
            "{}: {} bytes, larger than {MAX_CODE_OBJECT_FILE_BYTES} bytes (256 MiB), the \
             largest code-object file read",
            path.display(),
            metadata.len()
        );
    }
    let mut limited = file.take(MAX_CODE_OBJECT_FILE_BYTES + 1);
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < magic.len() {
        match limited.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(file_error(e)),
        }
    }
    if got < magic.len() || magic != ELF_MAGIC {
        bail!(
            Status::InvalidCodeObject,
            "{}: not an ELF file (starts with {:02x?}, expected {:02x?})",
            path.display(),
            &magic[..got],
            ELF_MAGIC
        );
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    bytes.extend_from_slice(&magic);
    limited.read_to_end(&mut bytes).map_err(file_error)?;
    if bytes.len() as u64 > MAX_CODE_OBJECT_FILE_BYTES {
        bail!(
            Status::InvalidFile,
            "{}: grew past {MAX_CODE_OBJECT_FILE_BYTES} bytes (256 MiB) while read, the \
             largest code-object file read",
            path.display()
        );
    }
    Ok(bytes)
}

/// Reports a code object's target and kernels. One block per kernel: `Kernel Name:`,
/// `Target:`, `Kernarg Segment Size:` (bytes), `Kernarg Segment Alignment:` (bytes),
/// `Group Segment Size:` (bytes), `Private Segment Size:` (bytes per work-item),
/// `Wavefront Size:` (lanes), `Dynamic Callstack:` (`TRUE`/`FALSE`), `Arguments:` (count,
/// hidden arguments included).
///
/// # Errors
/// `Status::InvalidCodeObject` (or another status from [`CodeObject::parse`]) naming what is
/// wrong when `bytes` is not a valid code object.
#[allow(clippy::result_large_err)] // hsa_core::Error is inline by design (no allocator)
pub fn code_object_report(bytes: &[u8]) -> Result<String> {
    // The reader needs 8-byte aligned input; copy once when the caller's slice is not.
    let aligned = AlignedBytes::new(bytes);
    let co = CodeObject::parse(aligned.as_bytes())?;
    let target = co.target();
    let mut out = String::new();
    line(&mut out, 0, "Code Object Version:", co.version());
    line(&mut out, 0, "Target:", target.isa_name());
    if target.generic_version != 0 {
        line(&mut out, 0, "Generic Version:", target.generic_version);
    }
    line(&mut out, 0, "Kernels:", co.kernel_count());
    for kernel in co.kernels() {
        let k = kernel?;
        let m = &k.metadata;
        out.push('\n');
        line(&mut out, 2, "Kernel Name:", m.name);
        line(&mut out, 2, "Target:", target.isa_name());
        line(&mut out, 2, "Kernarg Segment Size:", m.kernarg_segment_size);
        line(
            &mut out,
            2,
            "Kernarg Segment Alignment:",
            m.kernarg_segment_align,
        );
        line(
            &mut out,
            2,
            "Group Segment Size:",
            m.group_segment_fixed_size,
        );
        line(
            &mut out,
            2,
            "Private Segment Size:",
            m.private_segment_fixed_size,
        );
        line(&mut out, 2, "Wavefront Size:", m.wavefront_size);
        let dynamic = m.uses_dynamic_stack || k.descriptor.uses_dynamic_stack();
        line(
            &mut out,
            2,
            "Dynamic Callstack:",
            if dynamic { "TRUE" } else { "FALSE" },
        );
        line(&mut out, 2, "Arguments:", m.arg_count());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata(file: &str) -> Vec<u8> {
        std::fs::read(format!(
            "{}/../testdata/codeobjects/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// Values from `llvm-readelf-19 --notes kernels_ocl-gfx90a-v5.hsaco`.
    #[test]
    fn reports_ocl_gfx90a_v5() {
        let r = code_object_report(&testdata("kernels_ocl-gfx90a-v5.hsaco")).unwrap();
        let lines: Vec<&str> = r.lines().collect();
        assert_eq!(lines[0], "Code Object Version:        5");
        assert_eq!(
            lines[1],
            "Target:                     amdgcn-amd-amdhsa--gfx90a"
        );
        assert_eq!(lines[2], "Kernels:                    3");
        let block: Vec<&str> = r.split("\n\n").nth(1).unwrap().lines().collect();
        assert_eq!(
            block,
            [
                "  Kernel Name:                vector_copy",
                "  Target:                     amdgcn-amd-amdhsa--gfx90a",
                "  Kernarg Segment Size:       272",
                "  Kernarg Segment Alignment:  8",
                "  Group Segment Size:         0",
                "  Private Segment Size:       0",
                "  Wavefront Size:             64",
                "  Dynamic Callstack:          FALSE",
                // 2 explicit + 13 hidden (llvm-readelf-19 --notes lists 15 .args entries).
                "  Arguments:                  15",
            ]
        );
        assert!(r.contains("  Kernel Name:                local_reverse\n"));
        assert!(r.contains("  Group Segment Size:         1024\n"));
    }

    #[test]
    fn generic_and_wave32_files() {
        let r = code_object_report(&testdata("kernels-gfx9-generic-v6.hsaco")).unwrap();
        assert!(
            r.contains("Target:                     amdgcn-amd-amdhsa--gfx9-generic\n"),
            "{r}"
        );
        assert!(r.contains("Generic Version:            1\n"), "{r}");
        let r = code_object_report(&testdata("kernels-gfx1100-v4.hsaco")).unwrap();
        assert!(r.contains("  Wavefront Size:             32\n"), "{r}");
        assert!(r.contains("  Kernarg Segment Size:       24\n"), "{r}");
    }

    #[test]
    fn invalid_file_is_an_error() {
        let e = code_object_report(b"not an elf file at all, just text").unwrap_err();
        assert_eq!(e.status(), Status::InvalidCodeObject);
        assert!(e.detail().to_string().contains("not an ELF file"), "{e}");
    }

    #[test]
    fn reading_checks_the_file_then_the_magic() {
        // /dev/zero is endless and not a regular file: refused before any read.
        let e = read_code_object_file(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.status(), Status::InvalidFile);
        assert_eq!(
            e.detail(),
            "/dev/zero: not a regular file but a character device; a code object is read \
             from a regular file"
        );
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codeobjects");
        let e = read_code_object_file(&dir).unwrap_err();
        assert_eq!(e.status(), Status::InvalidFile);
        assert!(
            e.detail()
                .to_string()
                .contains("not a regular file but a directory"),
            "{e}"
        );
        let e = read_code_object_file(&dir.join("README.md")).unwrap_err();
        assert_eq!(e.status(), Status::InvalidCodeObject);
        assert!(
            e.detail()
                .to_string()
                .contains("README.md: not an ELF file"),
            "{e}"
        );
        let e = read_code_object_file(Path::new("/nonexistent/x.hsaco")).unwrap_err();
        assert_eq!(e.status(), Status::InvalidFile);
        assert_eq!(
            e.detail(),
            "/nonexistent/x.hsaco: No such file or directory (os error 2)"
        );
        let ok = dir.join("kernels-gfx90a-v5.hsaco");
        assert_eq!(
            read_code_object_file(&ok).unwrap(),
            std::fs::read(&ok).unwrap()
        );
    }

    /// Bytes this thread has read through read(2) and similar calls so far (`rchar` of
    /// `/proc/thread-self/io`, Linux's per-task I/O accounting), or `None` where the kernel
    /// does not provide it.
    fn thread_read_bytes() -> Option<u64> {
        let io = std::fs::read_to_string("/proc/thread-self/io").ok()?;
        io.lines()
            .find_map(|l| l.strip_prefix("rchar: "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// A sparse 3 GiB file that starts with the ELF magic is refused from its size alone,
    /// naming the size: the file is not read (this thread's read(2) byte count barely moves;
    /// reading up to the cap would add 256 MiB).
    #[test]
    fn a_huge_file_is_refused_by_its_size_without_reading() {
        let big = std::env::temp_dir().join(format!("hsa-rt-big-{}.hsaco", std::process::id()));
        let f = std::fs::File::create(&big).unwrap();
        std::io::Write::write_all(&mut &f, b"\x7fELF").unwrap();
        f.set_len(3 << 30).unwrap();
        drop(f);
        let before = thread_read_bytes();
        let started = std::time::Instant::now();
        let e = read_code_object_file(&big).unwrap_err();
        let elapsed = started.elapsed();
        let after = thread_read_bytes();
        // One byte past the cap is refused too; exactly the cap is not refused by its size.
        let f = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
        f.set_len(MAX_CODE_OBJECT_FILE_BYTES + 1).unwrap();
        let e2 = read_code_object_file(&big).unwrap_err();
        std::fs::remove_file(&big).unwrap();
        assert_eq!(e.status(), Status::InvalidFile);
        assert_eq!(
            e.detail(),
            format!(
                "{}: 3221225472 bytes, larger than 268435456 bytes (256 MiB), the largest \
                 code-object file read",
                big.display()
            )
        );
        assert!(
            e2.detail()
                .to_string()
                .contains(": 268435457 bytes, larger than"),
            "{e2}"
        );
        if let (Some(b), Some(a)) = (before, after) {
            assert!(a - b < 64 << 10, "read {} bytes", a - b);
        }
        assert!(elapsed.as_secs() < 2, "{elapsed:?}");
    }

    /// A FIFO is refused at once, naming it, instead of blocking in open(2) until a writer
    /// comes (forever, for `hsainfo --code-object FIFO`). Run on a thread with a deadline; if
    /// the call blocks, a writer is connected to release it and the test fails.
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let fifo = std::env::temp_dir().join(format!("hsa-rt-fifo-{}.hsaco", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        let reader = std::thread::spawn(move || {
            let _ = tx.send(read_code_object_file(&path));
        });
        let result = rx.recv_timeout(std::time::Duration::from_secs(5));
        if result.is_err() {
            // Blocked: a writer releases the open, then the test fails below.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        reader.join().unwrap();
        std::fs::remove_file(&fifo).unwrap();
        let e = result
            .expect("read_code_object_file blocked on a FIFO")
            .unwrap_err();
        assert_eq!(e.status(), Status::InvalidFile);
        assert_eq!(
            e.detail(),
            format!(
                "{}: not a regular file but a FIFO; a code object is read from a regular file",
                fifo.display()
            )
        );
    }
}
