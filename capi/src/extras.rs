//! What the ROCR extension functions keep per runtime (one [`Extras`] in each `State`).
//!
//! `State::drop` calls [`Extras::shut_down`] before anything else, so that whatever here
//! borrows the runtime is gone before the runtime is freed.

use crate::state::State;

/// The per-runtime state of the ROCR extension functions.
#[derive(Default)]
pub(crate) struct Extras {}

impl Extras {
    /// Stops what runs on behalf of the runtime and releases what borrows it.
    pub(crate) fn shut_down(&self, _st: &State) {}
}
