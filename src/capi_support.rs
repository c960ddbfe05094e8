//! What the C API (the `terroir-capi` crate) needs of the engine beyond
//! the public Rust API. **For terroir-capi only: not part of terroir's
//! public API, and not covered by semver** (it may change in any
//! release, together with terroir-capi).
//!
//! - [`GroupCore`]: the state of a task group with an epoch, which the C
//!   handle table keeps in its slots (a [`TaskGroup`](crate::TaskGroup)
//!   owns one);
//! - the pool the calling code runs in ([`with_current_pool`],
//!   [`current_pool_tag`], [`set_pool_tag`]): what a NULL pool argument
//!   means, and whether a pool handle is the calling worker's own, without
//!   a lookup;
//! - `join` and `install` that carry the caller's task-group frame to the
//!   thread that runs the work ([`Worker::join`],
//!   [`install_carrying_frame`]), so that a C wait from such work is
//!   refused when it could never end.
//!
//! - labelled regions opened and closed by two calls ([`open_label`],
//!   [`close_label`]), for `terroir_label_push` / `terroir_label_pop`,
//!   which cannot wrap a closure around the region as
//!   [`label`](crate::label) does.
//!
//! And what terroir-mpi needs, on the same terms (not public API, not
//! covered by semver): [`ExternalEvent`], an event its MPI thread sets and
//! a task waits for by running other work, as a task group's wait does.

pub use crate::sched::group::{Closed, CoreError, GroupCore, WarmKey};
pub use crate::sched::ExternalEvent;
use crate::sched::{CloseLabel, OpenLabel, WorkerThread};
use crate::ThreadPool;

/// Runs `f` with the pool the calling thread is a worker of; `None` on a
/// thread outside every pool.
#[inline]
pub fn with_current_pool<R>(f: impl FnOnce(&ThreadPool) -> R) -> Option<R> {
    crate::sched::group::with_current_pool(f)
}

/// Tags `pool` with `tag` (the C API: the pool's handle; 0 means none).
pub fn set_pool_tag(pool: &ThreadPool, tag: usize) {
    crate::sched::group::set_pool_tag(pool, tag);
}

/// The tag of the pool the calling thread is a worker of (0: untagged);
/// `None` on a thread outside every pool.
#[inline]
pub fn current_pool_tag() -> Option<usize> {
    WorkerThread::current().map(crate::sched::group::pool_tag)
}

/// The calling thread's worker, for [`Worker::join`]: looked up once.
#[derive(Clone, Copy)]
pub struct Worker(&'static WorkerThread);

impl Worker {
    /// The calling thread's worker, when it is one (of the pool tagged
    /// `tag`, if given: see [`set_pool_tag`]).
    #[inline(always)]
    pub fn current(tag: Option<usize>) -> Option<Worker> {
        WorkerThread::current()
            .filter(|wt| tag.is_none_or(|t| crate::sched::group::pool_tag(wt) == t))
            .map(Worker)
    }

    /// `join(a, b)` on this worker (the calling thread's), its second
    /// branch run, on whichever other thread takes it, in a task-group
    /// frame whose parent is the caller's and which leads to what this
    /// thread holds below the join.
    ///
    /// Keep the closures' states to a word or two (a reference each): they
    /// travel to `join` in registers.
    #[inline(always)]
    pub fn join<A, B>(self, a: A, b: B)
    where
        A: FnOnce() + Send,
        B: FnOnce() + Send,
    {
        crate::sched::group::join_carrying_frame(self.0, a, b);
    }
}

/// Runs `f` on a worker of `pool` (as [`ThreadPool::install`]) in a frame
/// whose parent is the caller's task-group frame.
pub fn install_carrying_frame<R: Send>(pool: &ThreadPool, f: impl FnOnce() -> R + Send) -> R {
    crate::sched::group::install_carrying_frame(pool, f)
}

/// A labelled region opened by [`open_label`], for [`close_label`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelRegion(OpenLabel);

/// [`close_label`] found regions or jobs opened after the region still
/// open on the calling worker (the close comes from work nested in the
/// region, e.g. a task run during a wait inside it): nothing was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelNested;

/// Opens a region labelled `name` on the calling worker, as
/// [`label`](crate::label) does around its closure, when the worker's
/// pool records; `None` (nothing to close) otherwise, or on a thread
/// outside every pool. Close it with [`close_label`] on the same thread.
/// A region still open when the job it was opened in returns is closed
/// then (its time ends there).
pub fn open_label(name: &'static str) -> Option<LabelRegion> {
    WorkerThread::current()?
        .rec_open_label(name)
        .map(LabelRegion)
}

/// Closes `region` (from [`open_label`] on the calling thread) and records
/// it. `Ok` too when the region is closed already (with its job, or by a
/// new recording). [`LabelNested`] when work opened after it is still
/// open: the region stays open.
pub fn close_label(region: LabelRegion) -> Result<(), LabelNested> {
    let Some(wt) = WorkerThread::current() else {
        return Ok(());
    };
    match wt.rec_close_label(region.0) {
        CloseLabel::Closed | CloseLabel::Gone => Ok(()),
        CloseLabel::Nested => Err(LabelNested),
    }
}
