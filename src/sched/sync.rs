//! The synchronisation primitives of the protocols that loom model-checks
//! (the sleep state in `sleep/`, the latch state and the latch of threads
//! outside the pool in `latch.rs`, and a task group's owner bias in
//! `group/bias.rs`): std's, or loom's when the
//! crate is built with `--cfg loom` (see `scripts/loom.sh`). Only those
//! protocols use this module, so that a loom build swaps exactly what the
//! models exercise.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Lets other threads run: loom's (which a spinning loop under loom must
/// call) or the scheduler's.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}
