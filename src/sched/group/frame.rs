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
//! group's task is refused too. A C join's branch taken by another thread
//! runs in frames made there, which lead to the joining work's frame, to
//! the joining thread's list head at the join, and to what the thief
//! holds below the branch: a branch stolen again from its thief (or
//! entering another pool) leads, through the thief's frames, to what the
//! thief holds below it, and so on down every thread on the way.
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
    /// What a thread that waits for this frame's work holds lower on its
    /// stack (the head of its entered groups, or null): for a group's task
    /// or a pool entered, what the worker that runs it held when the frame
    /// started; for the joining work's frame of a C join branch run as a
    /// job (made on the thread that took it, `run_in_frame`), what the
    /// joining thread held at the join. Work that waits for this frame's work, also where no
    /// batch's node leads there (a task in no batch, a stolen branch).
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
        // Listed as a stolen C branch is (see `run_in_frame`).
        with_frame(wt, &frame, || with_entered(wt, ptr::null(), &frame, f))
    })
}

/// `join(a, b)` on `wt`, the calling thread's worker, whose second branch,
/// when another thread takes it, runs in frames of its own there
/// ([`run_in_frame`]), which lead to the caller's innermost frame, to the
/// head of `wt`'s entered list at the join, and to what the thief holds
/// below the branch.
///
/// Why: the branch's thief may be stolen from in turn, or enter another
/// pool, and a wait in that work must reach what each thread on the way
/// holds below it, not only what the first joining thread held (the
/// branch's frame is where later joins in the branch start from).
///
/// Keep the closures' states small (a reference each): the branch's state
/// is three words (the frame, the list head and `b`'s reference).
#[inline(always)]
pub(crate) fn join_carrying_frame<A, B>(wt: &WorkerThread, a: A, b: B)
where
    A: FnOnce() + Send,
    B: FnOnce() + Send,
{
    let here = Below {
        frame: wt.group_frame.get(),
        entered: wt.group_entered.get(),
    };
    join_flagged_in(wt, a, move |stolen| {
        if stolen {
            run_in_frame(here, b);
        } else {
            b();
        }
    });
}

/// What waits for a C join's branch on the thread that made the join: the
/// joining work's innermost frame and the head of that thread's entered
/// list, read at the join.
#[derive(Clone, Copy)]
struct Below {
    frame: *const Frame,
    entered: *const Entered,
}

// SAFETY: the frame and the nodes are only read (never written) through
// these pointers, by work that the joining thread waits for (the join
// returns only once its branch is done), and everything they lead to is
// below the join on that thread's stack (see the module docs): alive and
// unchanging while any thread uses them.
unsafe impl Send for Below {}

/// Runs `f` (a join's branch taken as a job: stolen, or taken back after a
/// promotion) on the calling thread's worker in two new frames: the
/// joining work's (child of the joining work's frame, its node below the
/// joining thread's list head at the join) and, inside it, this thread's
/// (its node below this thread's list head now: what it holds below the
/// branch).
///
/// The invariant this keeps: from any frame, the walk reaches every node
/// that any thread whose stack holds work waiting (directly or not) for
/// that frame's work had on its entered list when that work started to
/// wait. A join's branch is waited for by the join, and the join's thread
/// cannot unlink the nodes it had at the join before the join returns;
/// the thief cannot unlink what it held below the branch before the
/// branch returns. The frames made here lead to both, and to the joining
/// work's frame, which leads on to what waits for that work. Work forked
/// in the branch starts from the inner frame: a branch stolen again from
/// the thief leads through it to the thief's list at that later join, and
/// on to the first joining thread's; work the branch runs in another pool
/// (`install_carrying_frame`, where the thief blocks) leads to what the
/// thief holds below the branch.
#[cold]
#[inline(never)]
fn run_in_frame(here: Below, f: impl FnOnce()) {
    match WorkerThread::current() {
        Some(wt) => {
            let joining = Frame {
                group: ptr::null(),
                batch: ptr::null(),
                parent: here.frame,
                below: here.entered,
            };
            let frame = Frame::new(wt, ptr::null(), ptr::null(), &joining);
            // Listed on the thief too (a node of no group): work the thief
            // takes while the branch waits lower on its stack (another
            // stolen branch, a batch, a pool entered) starts with this
            // node below it, and so reaches the branch's frames and what
            // waits for them.
            with_frame(wt, &frame, || with_entered(wt, ptr::null(), &frame, f))
        }
        // A branch runs on a worker; were it not, there is no frame to
        // keep (nothing could be stacked on this thread).
        None => f(),
    }
}
