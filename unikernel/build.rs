//! Links the unikernel (only for `x86_64-unknown-none`) with `link.ld`: loaded at 1 MiB,
//! not position-independent (QEMU's PVH loader places the ELF's segments at their physical
//! addresses and applies no relocations; the 32-bit entry uses absolute addresses).
fn main() {
    println!("cargo:rerun-if-changed=link.ld");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
        println!("cargo:rustc-link-arg-bins=-T{dir}/link.ld");
        println!("cargo:rustc-link-arg-bins=--no-pie");
    }
}
