//! A group's reference to its pool: a group a worker opened for its own
//! pool holds none until another thread adopts it, and a worker that
//! exits with such groups open keeps its pool's memory (see the module
//! docs of `core.rs`).

use std::mem;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::core::{CoreError, Inner};
use crate::sched::registry::Registry;
use crate::sched::worker::WorkerThread;

/// Makes an uncounted group hold a reference to its pool, for a thread
/// other than the worker that created it; called with the lock held.
pub(super) fn adopt(inner: &mut Inner) -> Result<(), CoreError> {
    // SAFETY: the registry is alive: its owner worker is, or exited keeping
    // it (`worker_exits`).
    let registry = unsafe { &*inner.registry };
    if !registry.try_keep_alive() {
        return Err(CoreError::PoolGone);
    }
    // SAFETY: alive (above); this count is the group's from now on.
    unsafe { Arc::increment_strong_count(inner.registry) };
    inner.counted = true;
    // After the count: an owner that sees this knows the group keeps the
    // registry alive itself.
    // SAFETY: the owner's `WorkerInfo` lives in the registry (alive).
    unsafe {
        (*inner.owner)
            .groups_adopted
            .fetch_add(1, Ordering::Release)
    };
    Ok(())
}

/// Gives back a counted group's reference to its pool.
///
/// # Safety
/// `registry` came from `Arc::into_raw` (or has a count this call owns),
/// with a keep-alive count of its pool taken for it.
pub(super) unsafe fn release(registry: *const Registry) {
    // SAFETY: the caller's count keeps it alive until the decrement.
    unsafe {
        (*registry).terminate();
        Arc::decrement_strong_count(registry);
    }
}

/// Called by a worker as it exits: if groups it created for its own pool
/// without a reference may still be open and not adopted, keeps the
/// pool's memory (leaking one count), so that a thread that adopts or
/// closes one of them later reads no freed memory.
pub(crate) fn worker_exits(wt: &WorkerThread) {
    let open = wt.groups_open.get();
    if open > 0 && open > wt.info().groups_adopted.load(Ordering::Acquire) {
        mem::forget(Arc::clone(wt.registry()));
    }
}
