//! Human-readable reports printed by `hsainfo`, each built as a `String` so tests can check
//! it: rocminfo's `Label: value` style, one item per line.

pub mod agents;
pub mod code_object;
