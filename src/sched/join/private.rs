//! The private-continuation list of `join`: continuations stay private to
//! their worker until a thief asks, then the oldest is promoted to the
//! worker's deque (see `README.md` beside this file, section 1).

use std::cell::Cell;
use std::sync::atomic::Ordering;

use crate::sched::job::JobRef;
use crate::sched::worker::WorkerThread;

/// A `join` continuation kept private to its worker: a node of an intrusive
/// list through the stack frames of the pending `join`s, newest first.
/// Only the owning worker reads or writes it.
pub(crate) struct PrivateJob {
    prev: *const PrivateJob,
    job: JobRef,
    promoted: Cell<bool>,
}

impl PrivateJob {
    /// A node for `job`; link it with [`WorkerThread::push_private`].
    #[inline(always)]
    pub(crate) fn new(job: JobRef) -> Self {
        PrivateJob {
            prev: std::ptr::null(),
            job,
            promoted: Cell::new(false),
        }
    }

    /// Whether the job was promoted to the deque (then another worker may
    /// be running it: wait for its latch).
    #[inline(always)]
    pub(crate) fn was_promoted(&self) -> bool {
        self.promoted.get()
    }
}

impl WorkerThread {
    /// Links `node` as the newest private continuation. It must stay in
    /// place until [`WorkerThread::pop_private`] unlinks it.
    #[inline(always)]
    pub(crate) fn push_private(&self, node: &mut PrivateJob) {
        node.prev = self.private_head.get();
        self.private_head.set(node);
    }

    /// Unlinks `node`, the newest private continuation.
    ///
    /// `node` is always the newest: each `join` links one node and unlinks
    /// it before its frame ends, on both of its paths (after `oper_a`
    /// returns, or in its drop guard when `oper_a` or `poll` unwinds, the
    /// guard being armed right after the link). Between the two, this
    /// thread runs only code called from that frame, so every `join` it
    /// starts meanwhile ends, unlinking its own node, first: the list is
    /// a stack that follows the call stack. Two things could break that,
    /// and both already are undefined behaviour for Rust frames: ending a
    /// frame without returning or unwinding (`longjmp` or a forced unwind
    /// such as `pthread_exit` through it), and a stackful coroutine
    /// library that suspends a `join` and lets this thread start another
    /// one before resuming it (two call stacks interleaved on one thread).
    ///
    /// So release builds do not check it: the check costs two instructions
    /// per `join` (+3 % on an empty one; `README.md` §8 has the count).
    /// Debug builds check it and *abort*: a panic here could unwind this
    /// `join`'s frame while a thief runs its promoted `b`.
    #[inline(always)]
    pub(crate) fn pop_private(&self, node: &PrivateJob) {
        if cfg!(debug_assertions) && !std::ptr::eq(self.private_head.get(), node) {
            private_list_broken();
        }
        self.private_head.set(node.prev);
    }

    /// Serves a thief's request, if any, by promoting the oldest private
    /// continuation to the deque. Also promotes when workers sleep and none
    /// searches: sleeping workers make no requests, so without this a
    /// `join`-only phase that follows an idle one would never wake them
    /// (the push wakes one, which then searches and requests as usual).
    #[inline(always)]
    pub(crate) fn poll(&self) {
        if self.info().request.load(Ordering::Relaxed) || self.registry.sleep.sleepers_unwatched() {
            let _ = self.promote();
        }
    }

    /// Clears the request flag and promotes the oldest private
    /// continuation, if one is still private; returns whether it did.
    #[cold]
    #[inline(never)]
    pub(super) fn promote(&self) -> bool {
        self.info().request.store(false, Ordering::Relaxed);
        // Promoted nodes form the oldest end of the list: walk to the
        // oldest one that is still private.
        let mut oldest: Option<&PrivateJob> = None;
        let mut p = self.private_head.get();
        // SAFETY: every node of the list lives in the frame of a `join` of
        // this thread that has not returned (it unlinks its node first).
        while let Some(node) = unsafe { p.as_ref() } {
            if node.promoted.get() {
                break;
            }
            oldest = Some(node);
            p = node.prev;
        }
        match oldest {
            Some(node) => {
                node.promoted.set(true);
                self.push(node.job);
                #[cfg(test)]
                crate::sched::unwind::hooks::fire(
                    &crate::sched::unwind::hooks::PANIC_IN_PROMOTE,
                    "promote unwinds after publishing a continuation",
                );
                true
            }
            None => false,
        }
    }
}

/// The private list was unlinked out of order (see
/// [`WorkerThread::pop_private`]): its nodes may now point into frames
/// that are gone, and `promote` would follow them.
#[cold]
#[inline(never)]
fn private_list_broken() -> ! {
    crate::sched::unwind::abort_with(
        "private join continuations unlinked out of order \
         (a `join` frame ended without unlinking its node)",
    )
}
