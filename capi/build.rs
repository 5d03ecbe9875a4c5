//! Links the cdylib as ROCR does: soname `libhsa-runtime64.so.1`, every exported symbol under
//! the `ROCR_1` version node (the version Debian's rocminfo binds to; `objdump -T`).

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let script = format!("{dir}/hsa_runtime64.map");
    println!("cargo:rerun-if-changed={script}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={script}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhsa-runtime64.so.1");
}
