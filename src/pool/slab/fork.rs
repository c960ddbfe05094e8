//! `fork()`: the child of a multithreaded process has only the thread that
//! forked, and a lock another thread held at that moment stays locked in
//! the child forever. With [`NodeLocalAlloc`] as the global allocator, the
//! child's first allocation that needs a node's shared list would wait for
//! it. So the pool registers `pthread_atfork` handlers (when it makes its
//! first node state): before a fork the forking thread takes every lock of
//! the pool in a fixed order, and after it, in the parent and in the child,
//! releases them all. The child then starts with every lock free and every
//! list consistent (no operation was under way).
//!
//! The order is the one the allocator itself nests locks in: the install
//! lock (held alone), then node by node in node order, each class's lock in
//! class order and last the node's reservation lock (the allocator takes
//! the reservation lock under a class lock, never a class lock under
//! another). Holding the install lock keeps the set of nodes fixed while
//! the fork is under way.
//!
//! The guards taken before the fork are kept next to their mutex
//! ([`ForkLock`]) until the handlers after the fork drop them. Nothing here
//! allocates or panics.

use super::*;

/// Taken to make and publish a node state, and held by the fork handlers
/// while a fork is under way, so that no state appears in the middle.
pub(super) static INSTALL: ForkLock<()> = ForkLock::new(());

/// A mutex with room for its guard while a fork is under way.
pub(super) struct ForkLock<T: 'static> {
    lock: Mutex<T>,
    /// The guard the fork handlers hold. Only the thread holding `lock`
    /// touches it: `hold` writes it after locking, `release` takes it out
    /// before unlocking. (Unused under Miri, which has no fork.)
    #[cfg_attr(miri, allow(dead_code))]
    held: UnsafeCell<Option<MutexGuard<'static, T>>>,
}

// SAFETY: `lock` is what a `Mutex<T>` shares (`T: Send` suffices for
// `Mutex<T>: Sync`); `held` is accessed only by the thread holding `lock`
// (see the field), so accesses to it never race.
unsafe impl<T: Send> Sync for ForkLock<T> {}

impl<T> ForkLock<T> {
    pub(super) const fn new(value: T) -> ForkLock<T> {
        ForkLock {
            lock: Mutex::new(value),
            held: UnsafeCell::new(None),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, T> {
        // The allocator never panics while holding a lock; should a
        // poisoned lock appear anyway, its data is still consistent between
        // operations.
        self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the lock and keeps it until [`release`](Self::release).
    #[cfg(not(miri))]
    fn hold(&'static self) {
        let guard = self.lock();
        // SAFETY: this thread holds `lock`, so it alone may touch `held`.
        unsafe { *self.held.get() = Some(guard) };
    }

    /// Releases the lock kept by [`hold`](Self::hold).
    ///
    /// # Safety
    /// The calling thread called `hold` on this lock (in the child of a
    /// fork: the thread that forked) and has not released it since.
    #[cfg(not(miri))]
    unsafe fn release(&self) {
        // SAFETY: the caller holds `lock` (contract), so it alone may touch
        // `held`; the guard is dropped, unlocking, after it is taken out.
        drop(unsafe { (*self.held.get()).take() });
    }
}

/// Registers the fork handlers once. Called with [`INSTALL`] held.
pub(super) fn register_fork_handlers() {
    static DONE: AtomicBool = AtomicBool::new(false);
    // Miri has no pthread_atfork (and no fork).
    if cfg!(miri) || DONE.load(Ordering::Relaxed) {
        return;
    }
    #[cfg(not(miri))]
    {
        // SAFETY: the handlers are `extern "C"` functions that never unwind.
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
        // On failure (ENOMEM), try again with the next node state.
        DONE.store(rc == 0, Ordering::Relaxed);
    }
}

/// Before a fork, on the forking thread: every lock of the pool, in order.
#[cfg(not(miri))]
extern "C" fn prepare() {
    // One-time initialisations the child's first allocation could wait
    // for, had another thread been in the middle of them at the fork.
    let _ = exit_key();
    let _ = page_size();
    INSTALL.hold();
    for node in 0..MAX_NODES as u32 {
        if let Some(st) = POOL.state(node) {
            for slot in &st.classes {
                slot.0.hold();
            }
            st.reserve.hold();
        }
    }
}

/// After a fork, in the parent and in the child: releases what `prepare`
/// took, in the reverse order.
#[cfg(not(miri))]
extern "C" fn release() {
    // SAFETY: `prepare` ran on this thread (in the child: the thread that
    // forked, the only one) and took every lock below: the install lock it
    // held kept the set of node states the same since.
    unsafe {
        for node in (0..MAX_NODES as u32).rev() {
            if let Some(st) = POOL.state(node) {
                st.reserve.release();
                for slot in st.classes.iter().rev() {
                    slot.0.release();
                }
            }
        }
        INSTALL.release();
    }
}
