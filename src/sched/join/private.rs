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
    #[inline(always)]
    pub(crate) fn pop_private(&self, node: &PrivateJob) {
        debug_assert!(std::ptr::eq(self.private_head.get(), node));
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
                true
            }
            None => false,
        }
    }
}
