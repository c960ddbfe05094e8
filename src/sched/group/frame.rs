//! What the code running on a worker is part of: a chain of [`Frame`]s,
//! one per group task running (and one per pool entered on behalf of such
//! a task), each pointing to the frame of the work that waits for it; and,
//! per thread, the list of groups whose tasks or batches run lower on its
//! own stack ([`Entered`]).
//!
//! The two lists answer, without locks, the questions the engine asks of
//! the caller of a group operation:
//!
//! - **is this a task of the group, running in a wait's batch?** Then a
//!   spawn into the group goes straight into that batch (the innermost
//!   frame of the group that names a batch);
//! - **would this wait never end?** A wait for a group from one of its own
//!   tasks, or from work that such a task waits for (a frame of the group
//!   in the chain), or from work this worker took while a task or batch of
//!   the group waited lower on its stack (an entry of the group in the
//!   list), or from work that such a task or batch waits for on another
//!   worker (reached through the batches the caller's work belongs to), is
//!   refused with [`WouldDeadlock`](super::WouldDeadlock) (`walk.rs`).
//!
//! Rust's `join` and `install` do not carry frames to the thread that
//! runs their work (that would cost every join a word); the C API's join
//! and its entries into a pool do ([`join_carrying_frame`],
//! [`install_carrying_frame`]), so a C wait from a stolen branch of a
//! group's task is refused too.
//!
//! A frame also names the node below it on the list of the worker that
//! runs its work, so that the walk of a wait from work that the frame's
//! work waits for (on any thread) finds what that worker holds below it.
//!
//! Frames and entries live on the stacks of the functions that run the
//! work. A frame's parent belongs to work that waits for the frame's work
//! (a join waits for both branches, a batch for its tasks, `install` for
//! its body), so a parent outlives its children and every pointer in a
//! chain reachable from a running frame is valid; an entry is unlinked
//! before its function returns (also on unwind).

use std::cell::Cell;
use std::ptr;

use super::batch::Batch;
use super::core::GroupCore;
use crate::sched::join_flagged_in;
use crate::sched::worker::WorkerThread;
use crate::ThreadPool;

/// One frame of group work on a worker.
pub(crate) struct Frame {
    /// The group whose task this is, or null (a pool entered on behalf of
    /// the parent frame's work).
    pub(crate) group: *const GroupCore,
    /// The batch of the group's wait that the task runs in, or null (a
    /// task started before any wait).
    pub(crate) batch: *const Batch,
    /// The frame of the work that waits for this one, or null.
    pub(crate) parent: *const Frame,
    /// What the worker that runs this frame's work held lower on its stack
    /// when the frame started (the head of its entered groups then, or
    /// null): work that waits for this frame's work, also when the frame is
    /// carried to another thread (a stolen C join branch) or the frame's
    /// task belongs to no batch, where no batch's node leads there.
    pub(crate) below: *const Entered,
}

impl Frame {
    /// A frame starting on `wt`, the calling thread's worker.
    #[inline(always)]
    pub(crate) fn new(
        wt: &WorkerThread,
        group: *const GroupCore,
        batch: *const Batch,
        parent: *const Frame,
    ) -> Frame {
        Frame {
            group,
            batch,
            parent,
            below: wt.group_entered.get(),
        }
    }
}

/// One group on a thread's list of entered groups: a node on the stack of
/// the function that runs the group's task or batch.
pub(crate) struct Entered {
    pub(super) group: *const GroupCore,
    /// The frame of the work this node stands for: the task's own frame, or
    /// for a batch the frame of the wait that runs it (the work that waits
    /// for it); null when none.
    pub(super) frame: *const Frame,
    /// The node of the work below on the same thread's stack, or null.
    pub(super) below: *const Entered,
}

/// A frame pointer carried to the thread that runs the child work.
#[derive(Clone, Copy)]
pub(crate) struct FramePtr(pub(crate) *const Frame);

// SAFETY: a frame is only read (never written) through this pointer, by
// work that the frame's owner waits for, so it is alive and unchanging
// while any thread uses it (see the module docs).
unsafe impl Send for FramePtr {}
// SAFETY: as above.
unsafe impl Sync for FramePtr {}

impl FramePtr {
    /// The innermost frame of `wt`, the calling thread's worker.
    #[inline]
    pub(crate) fn of(wt: &WorkerThread) -> FramePtr {
        FramePtr(wt.group_frame.get())
    }

    /// The calling thread's innermost frame (none outside the pools).
    #[inline]
    pub(crate) fn current() -> FramePtr {
        WorkerThread::current().map_or(FramePtr(ptr::null()), FramePtr::of)
    }

    /// The frames from this one outwards.
    fn chain(self) -> impl Iterator<Item = &'static Frame> {
        let mut p = self.0;
        std::iter::from_fn(move || {
            // SAFETY: every frame of a chain reachable from running code is
            // alive (module docs); the `'static` references never outlive
            // the caller's use during that code.
            let frame = unsafe { p.as_ref() }?;
            p = frame.parent;
            Some(frame)
        })
    }
}

/// Runs `f` with `frame` as `wt`'s innermost frame, then restores the
/// previous one (also on unwind).
#[inline]
pub(crate) fn with_frame<R>(wt: &WorkerThread, frame: *const Frame, f: impl FnOnce() -> R) -> R {
    struct Restore<'a>(&'a Cell<*const Frame>, *const Frame);
    impl Drop for Restore<'_> {
        #[inline]
        fn drop(&mut self) {
            self.0.set(self.1);
        }
    }
    let _restore = Restore(&wt.group_frame, wt.group_frame.replace(frame));
    f()
}

/// Runs `f` with `group` listed in `wt`'s entered groups (no lock, no
/// allocation), for the work whose frame is `frame`, and unlisted after,
/// also if `f` unwinds.
#[inline]
pub(crate) fn with_entered<R>(
    wt: &WorkerThread,
    group: *const GroupCore,
    frame: *const Frame,
    f: impl FnOnce() -> R,
) -> R {
    struct Unlink<'a>(&'a Cell<*const Entered>, *const Entered);
    impl Drop for Unlink<'_> {
        #[inline]
        fn drop(&mut self) {
            self.0.set(self.1);
        }
    }
    let head = &wt.group_entered;
    let below = head.get();
    let node = Entered {
        group,
        frame,
        below,
    };
    head.set(&node);
    // Declared after `node`, so dropped (unlinking it) before `node` is.
    let _unlink = Unlink(head, below);
    f()
}

/// The batch of a wait for `group` that the calling code runs in as one
/// of the group's tasks, if any.
#[inline]
pub(crate) fn batch_of(wt: &WorkerThread, group: &GroupCore) -> Option<&'static Batch> {
    let group: *const GroupCore = group;
    FramePtr::of(wt)
        .chain()
        .find(|f| f.group == group && !f.batch.is_null())
        // SAFETY: the frame's task runs in this batch and is not done (it
        // runs this code, or waits for the work that does), so the batch,
        // which waits for it, is alive.
        .map(|f| unsafe { &*f.batch })
}

/// The innermost node of `wt`'s entered groups (for a batch starting on
/// it: see [`Batch`]).
#[inline]
pub(crate) fn entered_head(wt: &WorkerThread) -> *const Entered {
    wt.group_entered.get()
}

/// Runs `f` on a worker of `pool` (as [`ThreadPool::install`]) in a frame
/// whose parent is the caller's innermost frame, so that a wait for a
/// group from `f` is refused when the caller is one of its tasks.
pub(crate) fn install_carrying_frame<R: Send>(
    pool: &ThreadPool,
    f: impl FnOnce() -> R + Send,
) -> R {
    let parent = FramePtr::current();
    pool.registry.in_worker(move |wt, _| {
        let parent = parent;
        let frame = Frame::new(wt, ptr::null(), ptr::null(), parent.0);
        with_frame(wt, &frame, f)
    })
}

/// `join(a, b)` on `wt`, the calling thread's worker, whose second branch
/// runs in the caller's frame on whichever thread takes it.
///
/// Keep the closures' states to a word or two (a reference): the states
/// travel to `join` in registers.
#[inline(always)]
pub(crate) fn join_carrying_frame<A, B>(wt: &WorkerThread, a: A, b: B)
where
    A: FnOnce() + Send,
    B: FnOnce() + Send,
{
    let here = FramePtr::of(wt);
    join_flagged_in(wt, a, move |stolen| {
        if stolen {
            run_in_frame(here, b);
        } else {
            b();
        }
    });
}

/// Runs `f` in `frame` on the calling thread's worker (a stolen branch).
#[cold]
#[inline(never)]
fn run_in_frame(frame: FramePtr, f: impl FnOnce()) {
    match WorkerThread::current() {
        Some(wt) => with_frame(wt, frame.0, f),
        // A branch runs on a worker; were it not, there is no frame to
        // keep (nothing could be stacked on this thread).
        None => f(),
    }
}
