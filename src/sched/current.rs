//! The thread's current worker: one pointer a thread, null on a thread
//! that is not a worker of any pool, kept in a `thread_local!`; and, for
//! the C task groups' fast paths, the same pointer found from the thread
//! pointer without a thread-local read.
//!
//! **Why a second way.** A `thread_local!` is compiled with the most
//! general model the crate type allows. In an executable it is one
//! `%fs`-relative load. In a shared library, such as the C API's
//! `libterroir.so`, it is a call (to `__tls_get_addr`, or with TLS
//! descriptors to the descriptor's resolver). On an Intel Xeon (KVM guest,
//! glibc 2.36) an empty C task group (a create and a destroy, one read
//! each) took 6.1 ns; the two calls doing nothing but the read took 4.7,
//! and 1.2 without it (`docs/benchmarks/2026-12-04-thread-pointer.md`). The *initial-exec*
//! model would make a read one load, but stable Rust cannot ask for it,
//! and a library that uses it takes its whole TLS segment (9.6 KB here,
//! mostly the slab caches) from the static TLS block, of which glibc
//! keeps about 1.5 KB spare for libraries loaded later: tried, its
//! `dlopen` failed ("cannot allocate memory in static TLS block"), and
//! plugin hosts and other languages' FFIs load libraries that way
//! (`capi/tests/c/dlopen.c`, and `capi/tests/ffi.rs` checks that the
//! library uses no static TLS).
//!
//! **The thread pointer.** On x86-64 every thread's `%fs:0` holds its
//! thread pointer, the address of its thread control block (the psABI's
//! TLS variant II, which glibc and musl follow). It is one load, and no
//! two live threads have the same. A table maps it to the thread's
//! worker: 1024 *homes*, one for each value of a Fibonacci hash of the
//! pointer, and a thread's entry is one of the four from its home on. A
//! worker thread claims a free one when it becomes a worker (a
//! compare-and-swap of the entry's thread pointer from 0, then a store of
//! the worker) and frees it when it stops being one. A lookup compares the
//! four entries' thread pointers with the caller's and, at a match, reads
//! the worker; no match, or a null worker, is a miss, and the caller takes
//! a slow path that reads the `thread_local!`, which stays the one truth:
//! the table is a cache of it. A worker that finds its four entries taken
//! has none (more than a few hundred workers, or many alike hashes).
//! Only the C task groups' create and destroy use it: `terroir_join`
//! measured faster with the thread-local read, in a frame it has anyway.
//!
//! **Why a match is the caller's own entry.** An entry holds a thread
//! pointer only from its claim by that thread until its free by that
//! thread, and the reader compares it with its own:
//! - a live thread never finds another live thread's pointer equal to its
//!   own;
//! - a thread whose control block reuses that of a dead one (glibc caches
//!   thread stacks) starts after the dead one ended, which freed its entry
//!   first: [`set`] and [`clear`] are called where the worker starts and
//!   stops (`WorkerThread::run`, also when it unwinds), and a thread that
//!   never stops being one (`use_current_thread`) frees its entry in a
//!   thread-local destructor, which runs before the thread ends;
//! - `fork` leaves a child with one thread and a copy of the parent's
//!   memory, whose other threads' stacks the child's new threads may
//!   reuse: the table's pages are marked `MADV_WIPEONFORK` before the
//!   first claim, so the kernel hands the child (of any copy of the
//!   address space: `fork`, `_Fork`, a raw `clone`) zeroed pages, every
//!   entry free, before any of its code runs. A `pthread_atfork` handler
//!   could not promise that: handlers registered before it run first in
//!   the child, and a thread one of them starts could find a dead
//!   worker's entry (a review's reproducer did). Where the kernel does
//!   not know the advice (before Linux 4.14), or an emulator accepts
//!   advice it does not apply (qemu-user; checked by asking for an
//!   advice that does not exist), no worker claims an entry.
//!
//! So a matching entry was written by the reader itself, and its worker
//! is the reader's own write, read in program order. A free clears the
//! worker before it releases the thread pointer, and a claim acquires the
//! pointer before it writes the worker: in between, the holder's own
//! lookup (a signal handler that interrupted its claim or free) reads a
//! null worker, a miss, never the last holder's. Other threads read the
//! thread pointers, compare, and never read the worker.
//!
//! Tests: `current/tests.rs` (collisions on purpose, a model, the exits,
//! a fork child, a new thread on a dead worker's stack); the warm groups'
//! tests run both paths (`group/warm/tests.rs`); `capi/tests/c/dlopen.c`.
//!
//! Elsewhere (another architecture, or Miri, which runs no assembly) the
//! lookup is the `thread_local!` read.

use std::cell::Cell;
use std::ptr;

use super::worker::WorkerThread;

thread_local! {
    static WORKER: Cell<*const WorkerThread> = const { Cell::new(ptr::null()) };
}

/// The calling thread's worker, null if it is none: the `thread_local!`.
#[inline(always)]
pub(super) fn get() -> *const WorkerThread {
    WORKER.with(Cell::get)
}

/// The calling thread's worker by the thread pointer, if the table holds
/// the thread's entry (a few loads, no call): [`get`]'s value, never
/// null; `None`: ask [`get`]. For the C task groups' fast paths, where
/// `get` is a call (module docs).
#[inline(always)]
pub(super) fn find() -> Option<*const WorkerThread> {
    table::find_current()
}

/// Makes the calling thread `wt`'s, until [`clear`] (which the caller
/// calls before `wt` is gone, or never, if `wt` is never freed).
pub(super) fn set(wt: &WorkerThread) {
    WORKER.with(|c| c.set(wt));
    table::claim(wt);
}

/// Makes the calling thread no worker's.
pub(super) fn clear() {
    table::free();
    // `try_with`: never panics, also while the thread's locals are being
    // destroyed (then nobody can read `WORKER` any more).
    let _ = WORKER.try_with(|c| c.set(ptr::null()));
}

/// Without a thread pointer to read: no table.
#[cfg(not(all(
    target_arch = "x86_64",
    target_pointer_width = "64",
    target_os = "linux",
    not(miri)
)))]
mod table {
    use super::WorkerThread;

    #[inline(always)]
    pub(super) fn find_current() -> Option<*const WorkerThread> {
        None
    }

    pub(super) fn claim(_: &WorkerThread) {}

    pub(super) fn free() {}
}

#[cfg(all(
    target_arch = "x86_64",
    target_pointer_width = "64",
    target_os = "linux",
    not(miri)
))]
#[path = "current/by_thread_pointer.rs"]
mod table;

#[cfg(all(
    test,
    not(loom),
    target_arch = "x86_64",
    target_pointer_width = "64",
    target_os = "linux",
    not(miri)
))]
pub(super) mod tests;
