//! `hsainfo --code-object FILE`: what a code object contains, in rocminfo's style.
//!
//! Ref: rocminfo's ISA/kernel listing (`Label: value`, booleans as `TRUE`/`FALSE`); the values
//! come from [`hsa_core::loader::CodeObject`].

use std::fmt::Write as _;

use hsa_core::loader::{AlignedBytes, CodeObject};
use hsa_core::Result;

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
    line(&mut out, 0, "Kernels:", co.metadata().kernel_count());
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
    use hsa_core::Status;

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
        assert!(e.detail().contains("not an ELF file"), "{e}");
    }
}
