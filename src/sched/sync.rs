//! The synchronisation primitives of the protocols that loom model-checks
//! (the sleep state in `sleep/`, and the latch state and the latch of
//! threads outside the pool in `latch.rs`): std's, or loom's when the
//! crate is built with `--cfg loom` (see `scripts/loom.sh`). Only those
//! protocols use this module, so that a loom build swaps exactly what the
//! models exercise.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};
