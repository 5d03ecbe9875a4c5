//! The platform under the C API, chosen when the library is built: feature `linux` (the
//! default) runs on `hsa_linux::LinuxPlatform` over `/dev/kfd` or the emulated device;
//! feature `baremetal` on `hsa_baremetal::BaremetalPlatform` over a host the C firmware
//! describes (`hsa_rt_baremetal_init`, `include/hsa_rt_ext.h`). Exactly one of the two.
//!
//! Each backend gives the rest of the crate the same few items: `Plat` (the platform type),
//! `open` (the first `hsa_init`'s platform, and what else it found: `Opened`), `Device` (what
//! the state keeps besides the platform: the emulated device, or the interrupt path's
//! registration), `QUEUE_ERROR_WITHOUT_CALLBACK` (what a queue made without an error
//! callback does on an error). `open` also installs the backend's `log` backend (where the library's log
//! records, failing calls' errors among them, go) unless the process has one.

#[cfg(all(feature = "linux", feature = "baremetal"))]
compile_error!(
    "hsa-capi: features `linux` and `baremetal` exclude each other; for the bare-metal build \
     use `--no-default-features --features baremetal`"
);
#[cfg(not(any(feature = "linux", feature = "baremetal")))]
compile_error!(
    "hsa-capi: pick a backend: the default feature `linux`, or `--no-default-features \
     --features baremetal`"
);

#[cfg(feature = "baremetal")]
pub mod baremetal;
#[cfg(feature = "linux")]
mod linux;

#[cfg(feature = "baremetal")]
pub(crate) use baremetal::{open, Device, Opened, Plat, QUEUE_ERROR_WITHOUT_CALLBACK};
#[cfg(feature = "linux")]
pub(crate) use linux::{open, services_config, Device, Opened, Plat, QUEUE_ERROR_WITHOUT_CALLBACK};
