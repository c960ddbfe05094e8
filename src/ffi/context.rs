//! What the C code running on a thread is part of: a chain of [`Ctx`]
//! frames, one per C function terroir called (a task of a group, the body
//! entered into a pool; both branches of a `terroir_join` run in the frame
//! of its caller, a stolen one entering it on the thief), each pointing to
//! the frame that waits for it.
//!
//! The chain answers three questions without locks: which pool a NULL pool
//! argument means (the innermost frame's), whether a non-NULL pool is the
//! one this thread already works for (then `terroir_join` is a plain
//! [`crate::join`]), and whether `terroir_group_wait(g)` is called from a
//! task of `g` or from work such a task waits for (it would deadlock).
//!
//! Frames live on the stacks of the Rust functions that call into C. A
//! frame's parent belongs to work that waits for the frame's work (a
//! `join` waits for both branches, a group wait for its tasks, `install`
//! for its body), so a parent outlives its children and every pointer in
//! a chain reachable from a running frame is valid.

use std::ffi::c_void;
use std::ptr;

use super::pool::PoolEntry;
use crate::sched::WorkerThread;
use crate::Scope;

/// One frame of C code that terroir called.
pub(crate) struct Ctx {
    /// The pool the code runs in (kept alive by the caller of the frame).
    pub(crate) pool: *const PoolEntry,
    /// The group whose task this is (its handle), or 0.
    pub(crate) group: usize,
    /// The scope of the group's wait this task runs in, or null (a task
    /// started before the wait).
    pub(crate) scope: *const Scope<'static>,
    /// The frame waiting for this one, or null.
    pub(crate) parent: *const Ctx,
}

/// A frame pointer carried to the thread that runs the child work.
#[derive(Clone, Copy)]
pub(crate) struct CtxPtr(*const Ctx);

// SAFETY: a frame is only read (never written) through this pointer, by
// work that the frame's owner waits for, so it is alive and unchanging
// while any thread uses it (see the module docs).
unsafe impl Send for CtxPtr {}
// SAFETY: as above.
unsafe impl Sync for CtxPtr {}

impl CtxPtr {
    pub(crate) const NULL: CtxPtr = CtxPtr(ptr::null());

    /// The calling thread's innermost frame (none on a thread that is not
    /// a worker: every frame is entered on a worker, see [`with_frame`]).
    #[inline]
    pub(crate) fn current() -> CtxPtr {
        WorkerThread::current().map_or(CtxPtr::NULL, CtxPtr::of)
    }

    /// The innermost frame of `wt`, the calling thread's worker.
    #[inline]
    pub(crate) fn of(wt: &WorkerThread) -> CtxPtr {
        CtxPtr(wt.foreign().cast())
    }

    /// A frame's parent pointer, to hand on.
    pub(crate) fn from_raw(p: *const Ctx) -> CtxPtr {
        CtxPtr(p)
    }

    pub(crate) fn get(self) -> *const Ctx {
        self.0
    }

    /// Whether there is no frame (the thread runs no C code of terroir's).
    #[inline]
    pub(crate) fn is_null(self) -> bool {
        self.0.is_null()
    }

    /// The frames from this one outwards.
    pub(crate) fn chain(self) -> impl Iterator<Item = &'static Ctx> {
        let mut p = self.0;
        std::iter::from_fn(move || {
            // SAFETY: every frame of a chain reachable from the running
            // code is alive (module docs); `'static` is never handed out
            // beyond the caller's use during that code.
            let ctx = unsafe { p.as_ref() }?;
            p = ctx.parent;
            Some(ctx)
        })
    }

    /// The innermost frame's pool, if any.
    #[inline]
    pub(crate) fn pool(self) -> Option<&'static PoolEntry> {
        // SAFETY: as in `chain`; the frame's pool is kept alive by the
        // frame's caller.
        unsafe { self.0.as_ref().and_then(|c| c.pool.as_ref()) }
    }
}

/// Runs `f` with `frame` as the calling thread's innermost frame, then
/// restores the previous one (also on unwind).
///
/// The frame is kept in the worker's word for the layer above
/// (`WorkerThread::foreign`), so that `terroir_join` finds the worker and
/// its frame with one thread-local read. Every caller runs on a worker (a
/// body entered with `install`, a group's task): on any other thread there
/// is nobody to read a frame, and `f` just runs.
#[inline]
pub(crate) fn with_frame<R>(frame: *const Ctx, f: impl FnOnce() -> R) -> R {
    struct Restore(&'static WorkerThread, *const ());
    impl Drop for Restore {
        #[inline]
        fn drop(&mut self) {
            self.0.replace_foreign(self.1);
        }
    }
    let Some(wt) = WorkerThread::current() else {
        // Unreachable (every caller is on a worker, above); were it not,
        // the frame's deadlock check would be lost, so stop here.
        unreachable!("terroir: a C API frame entered outside a worker thread");
    };
    let _restore = Restore(wt, wt.replace_foreign(frame.cast()));
    f()
}

/// A C task: a function and its argument.
#[derive(Clone, Copy)]
pub(crate) struct CTask {
    f: unsafe extern "C" fn(*mut c_void),
    arg: *mut c_void,
}

// SAFETY: the C caller promises that a task may run on any thread (the
// documented contract of `terroir_join` and `terroir_group_spawn`): terroir
// only calls `f(arg)` once, on a worker, and never touches `arg` itself.
unsafe impl Send for CTask {}
// SAFETY: as above; terroir shares only the two pointer values.
unsafe impl Sync for CTask {}

impl CTask {
    pub(crate) fn new(f: unsafe extern "C" fn(*mut c_void), arg: *mut c_void) -> CTask {
        CTask { f, arg }
    }

    /// Calls the C function in `frame`, the frame of the `join` whose
    /// second branch this is. Run inline (`stolen` false: by the forking
    /// thread, right after the first branch, the common case) the thread
    /// is in that frame already; run as a job (stolen, or promoted and
    /// taken back) it enters the frame first.
    #[inline]
    pub(crate) fn run_in(self, frame: CtxPtr, stolen: bool) {
        if stolen {
            with_frame(frame.0, || self.run());
        } else {
            self.run();
        }
    }

    /// Calls the C function.
    #[inline]
    pub(crate) fn run(self) {
        // SAFETY: the C caller gave a function of this signature and an
        // argument it accepts, and promised both stay valid until the task
        // is done (until `terroir_join` returns or the group is waited for).
        unsafe { (self.f)(self.arg) }
    }
}
