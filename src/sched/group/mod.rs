//! Task groups: spawn `'static` tasks (each at a [`Place`]), wait for all
//! of them. The engine behind the C API's `terroir_group_*`, and a Rust API
//! of its own ([`TaskGroup`]).
//!
//! | part | file |
//! |---|---|
//! | the state of a group, its lock, open | `core.rs` |
//! | the close: wait until idle, bump the epoch, release or keep warm | `close.rs` |
//! | the owner's lock without a read-modify-write, and its revoke | `bias.rs` |
//! | spawn: where a task starts; tasks started from outside | `spawn.rs` |
//! | a group's reference to its pool: adopting it, giving it back | `pool_ref.rs` |
//! | a wait: the check, then batches or a wait for a change | `wait.rs` |
//! | a wait's batch: running queued tasks | `batch.rs` |
//! | frames: which group's task is running, and what it waits on | `frame.rs` |
//! | refusing waits that could never end: the walk over frames | `walk.rs` |
//! | a task, kept inline when small | `task.rs` |
//! | warm groups: a worker's closed groups, opened again by a few stores | `warm.rs` |

mod batch;
mod bias;
mod close;
mod core;
mod frame;
mod pool_ref;
mod spawn;
mod task;
mod wait;
mod walk;
mod warm;

use std::fmt;
use std::ptr::NonNull;

#[cfg(all(loom, test))]
pub(crate) use self::core::loom_hooks;
pub use self::core::{CoreError, GroupCore};
pub(crate) use self::frame::{install_carrying_frame, join_carrying_frame, Entered, Frame};
pub(crate) use self::pool_ref::worker_exits;
pub(crate) use self::warm::WarmGroups;
pub use self::warm::{Closed, WarmKey};
use super::place::{Place, PlaceError};
use super::thread_pool::ThreadPool;
use super::worker::WorkerThread;

/// A group of `'static` tasks on a pool, waited for together: OpenMP's
/// `task` and `taskwait`, TBB's `task_group`, with [places](Place).
///
/// Unlike a [`scope`](crate::scope), a group is an object: it can be
/// created in one function and waited for in another, shared between
/// threads (`TaskGroup` is `Send` and `Sync`), and tasks can be spawned
/// into it from anywhere: from its own tasks (each gets the group as its
/// argument), from other workers, and from threads outside the pool. In
/// exchange its tasks are `'static` (they may outlive the function that
/// spawned them).
///
/// - **Where tasks start.** A task spawned by one of the group's tasks
///   while a wait runs starts at once (stealable by idle workers). A task
///   spawned by another worker of the pool is queued, and started by the
///   next [`wait`](Self::wait), which runs the queued tasks on the waiting
///   worker (plain ones by a tree of `join`s, placed ones as placed jobs).
///   A task spawned from a thread outside the pool starts at once.
/// - **Waiting.** [`wait`](Self::wait) returns once every task spawned so
///   far (and everything they spawned into the group) is done. On a worker
///   it runs the group's tasks and other work meanwhile, never blocking
///   (so nested groups cannot starve a small pool); outside the pool it
///   blocks. Dropping a group waits too.
/// - **Waits that could never end are refused**: a wait from one of the
///   group's own tasks, or from work this worker runs on top of the
///   group's own task or batch (taken while they waited), returns
///   [`WouldDeadlock`] and changes nothing.
/// - **Panics.** A panic in a task is kept, the other tasks still run, and
///   the next wait (or the drop) propagates it once the group is idle, as
///   a scope does; the pool stays usable.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use terroir::{TaskGroup, ThreadPoolBuilder};
///
/// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let sum = Arc::new(AtomicU64::new(0));
/// let group = TaskGroup::new(&pool);
/// for i in 1..=10 {
///     let sum = Arc::clone(&sum);
///     group.spawn(move |_| {
///         sum.fetch_add(i, Ordering::Relaxed);
///     });
/// }
/// group.wait().unwrap();
/// assert_eq!(sum.load(Ordering::Relaxed), 55);
/// ```
///
/// Tasks get the group, and may spawn into it (a tree that grows while it
/// is waited for):
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use terroir::TaskGroup;
///
/// fn visit(depth: u32, count: Arc<AtomicU64>, group: &TaskGroup) {
///     count.fetch_add(1, Ordering::Relaxed);
///     if depth > 0 {
///         for _ in 0..2 {
///             let count = Arc::clone(&count);
///             group.spawn(move |g| visit(depth - 1, count, g));
///         }
///     }
/// }
///
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let count = Arc::new(AtomicU64::new(0));
/// let group = pool.task_group();
/// let c = Arc::clone(&count);
/// group.spawn(move |g| visit(9, c, g));
/// group.wait().unwrap();
/// assert_eq!(count.load(Ordering::Relaxed), 1023);
/// ```
///
/// A wait from inside one of the group's tasks is refused, not a hang:
///
/// ```
/// use std::sync::mpsc;
/// use terroir::{TaskGroup, WouldDeadlock};
///
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let group = TaskGroup::new(&pool);
/// let (tx, rx) = mpsc::channel();
/// group.spawn(move |g| tx.send(g.wait()).unwrap());
/// group.wait().unwrap();
/// assert_eq!(rx.recv().unwrap(), Err(WouldDeadlock::InsideOwnTask));
/// ```
///
/// A task's panic comes out of the wait, and the pool goes on:
///
/// ```
/// use std::panic::{catch_unwind, AssertUnwindSafe};
///
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let group = pool.task_group();
/// group.spawn(|_| panic!("task failed"));
/// group.spawn(|_| {}); // still runs
/// let err = catch_unwind(AssertUnwindSafe(|| group.wait())).unwrap_err();
/// assert_eq!(err.downcast_ref::<&str>(), Some(&"task failed"));
/// assert_eq!(pool.install(|| terroir::join(|| 1, || 2)), (1, 2));
/// ```
///
/// Rust's own [`join`](crate::join) and [`ThreadPool::install`] do not
/// tell the thread that runs their second branch (or body) which group
/// task it belongs to: a wait for the group from such a branch, while
/// the group's task waits for it on another worker, is not recognised and
/// never ends. (The C API's `terroir_join` carries that information, and
/// refuses such waits.)
pub struct TaskGroup {
    core: NonNull<GroupCore>,
}

// SAFETY: a `GroupCore` is `Send` and `Sync`; the group owns its core (or,
// for the view its tasks get, borrows one that outlives the task).
unsafe impl Send for TaskGroup {}
// SAFETY: as above; every method takes `&self` and synchronises inside.
unsafe impl Sync for TaskGroup {}

/// Why [`TaskGroup::wait`] refused to wait: the wait could never end.
/// The wait is refused before it does anything (it runs none of the
/// group's queued tasks): the group is as it was, and can still be waited
/// for from elsewhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WouldDeadlock {
    /// The wait comes from one of the group's own tasks, or from work such
    /// a task waits for (a branch of a C `terroir_join`, a task of a group
    /// that the task waits for): the group cannot be idle before the wait
    /// returns.
    InsideOwnTask,
    /// The wait comes from work that this worker took while one of the
    /// group's tasks or batches waited lower on its stack (for a stolen
    /// branch, or for other tasks): they cannot end before this wait does.
    /// Or the same on another worker: the batch the waiting work belongs
    /// to runs there on top of one of the group's own tasks or batches.
    StackedOnGroup,
}

impl fmt::Display for WouldDeadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WouldDeadlock::InsideOwnTask => f.write_str(
                "the group is waited for from inside one of its own tasks (or from work such a \
                 task waits for): the wait could never end",
            ),
            WouldDeadlock::StackedOnGroup => f.write_str(
                "the group is waited for by work that this worker runs on top of one of the \
                 group's own tasks or batches (it took the work while they waited): they cannot \
                 end before this wait does",
            ),
        }
    }
}

impl std::error::Error for WouldDeadlock {}

impl TaskGroup {
    /// An empty group whose tasks run on `pool`. The group keeps the pool
    /// running until it is dropped (like a spawned job).
    pub fn new(pool: &ThreadPool) -> TaskGroup {
        let core = Box::new(GroupCore::new());
        // SAFETY: a new core: closed, and this thread alone opens it.
        let opened = unsafe { core.open_counted(pool) };
        debug_assert_eq!(opened, Some(1));
        TaskGroup {
            core: NonNull::from(Box::leak(core)),
        }
    }

    fn core(&self) -> &GroupCore {
        // SAFETY: the core is owned by this group (freed only by its drop),
        // or by the group whose task holds this view.
        unsafe { self.core.as_ref() }
    }

    fn epoch(&self) -> u32 {
        self.core()
            .epoch()
            .expect("a TaskGroup's core is open until the group is dropped")
    }

    /// Spawns `task` into the group; it gets the group as its argument.
    /// See the type's docs for when it starts.
    pub fn spawn<F>(&self, task: F)
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        self.spawn_checked(None, false, task)
            .unwrap_or_else(|e| unreachable!("an unchecked spawn failed: {e}"));
    }

    /// Spawns `task` into the group at `place` (see [`Place`]; how the
    /// pool honours it is its [`Policy`](crate::Policy)). A place the
    /// group's pool cannot honour (made for another pool) is counted in
    /// [`PoolStats::unroutable`](crate::PoolStats::unroutable) and the task
    /// runs unplaced; [`try_spawn_on`](Self::try_spawn_on) refuses it.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use terroir::{Policy, TaskGroup, ThreadPoolBuilder};
    ///
    /// let pool = ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .policy(Policy::StrictLocality)
    ///     .build()
    ///     .unwrap();
    /// let ran_on = Arc::new(Mutex::new(Vec::new()));
    /// let group = TaskGroup::new(&pool);
    /// let on_1 = pool.worker(1).unwrap();
    /// for _ in 0..8 {
    ///     let ran_on = Arc::clone(&ran_on);
    ///     group.spawn_on(&on_1, move |_| {
    ///         ran_on.lock().unwrap().push(terroir::current_thread_index());
    ///     });
    /// }
    /// group.wait().unwrap();
    /// assert_eq!(*ran_on.lock().unwrap(), vec![Some(1); 8]); // strict: worker 1 only
    /// ```
    pub fn spawn_on<F>(&self, place: &Place, task: F)
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        self.spawn_checked(Some(place.clone()), false, task)
            .unwrap_or_else(|e| unreachable!("an unchecked spawn failed: {e}"));
    }

    /// [`spawn_on`](Self::spawn_on), or an error (and nothing spawned)
    /// when the group's pool cannot honour `place`.
    ///
    /// ```
    /// use terroir::{PlaceError, TaskGroup, ThreadPoolBuilder};
    /// let big = ThreadPoolBuilder::new().num_threads(4).pin(false).build().unwrap();
    /// let small = ThreadPoolBuilder::new().num_threads(2).pin(false).build().unwrap();
    /// let group = TaskGroup::new(&small);
    /// let err = group.try_spawn_on(&big.worker(3).unwrap(), |_| {}).unwrap_err();
    /// assert!(matches!(err, PlaceError::WorkerOutOfRange { index: 3, workers: 2 }));
    /// ```
    ///
    /// # Errors
    /// [`PlaceError::WorkerOutOfRange`] for a worker place beyond the
    /// pool's workers; [`PlaceError::NodeNotInPool`] for a node (or a data
    /// place's node) that is not in the pool's topology.
    pub fn try_spawn_on<F>(&self, place: &Place, task: F) -> Result<(), PlaceError>
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        match self.spawn_checked(Some(place.clone()), true, task) {
            Ok(()) => Ok(()),
            Err(CoreError::Place(e)) => Err(e),
            Err(e) => unreachable!("a spawn into a live group failed: {e}"),
        }
    }

    fn spawn_checked<F>(&self, place: Option<Place>, check: bool, task: F) -> Result<(), CoreError>
    where
        F: FnOnce(&TaskGroup) + Send + 'static,
    {
        self.core().spawn(self.epoch(), place, check, task)
    }

    /// Waits until every task spawned into the group so far, and every
    /// task they spawned into it, is done. On a worker (of any pool) it
    /// runs the group's queued tasks and other work meanwhile; on a thread
    /// outside the pools it blocks (after running the queued tasks on the
    /// pool).
    ///
    /// # Errors
    /// [`WouldDeadlock`] when the wait could never end (see the type's
    /// docs); nothing changes.
    ///
    /// # Panics
    /// Propagates the first panic of a task spawned since the last wait,
    /// once the group is idle.
    pub fn wait(&self) -> Result<(), WouldDeadlock> {
        match self.core().wait(self.epoch()) {
            Ok(()) => Ok(()),
            Err(CoreError::WouldDeadlock(w)) => Err(w),
            Err(e) => unreachable!("a wait for a live group failed: {e}"),
        }
    }
}

impl Drop for TaskGroup {
    /// Waits for the group's tasks (as [`wait`](Self::wait)) and frees it.
    /// A task's panic is propagated unless the thread is panicking
    /// already.
    ///
    /// A drop whose wait would never end (see [`WouldDeadlock`]) returns
    /// at once and leaks: its queued tasks are never run (nothing can wait
    /// for them any more), so the group never becomes idle, and its memory
    /// and its hold on the pool (the keep-alive count that [`new`](Self::new)
    /// took) are never given back; the pool's threads then never exit,
    /// even after the pool is dropped. Its running tasks finish.
    fn drop(&mut self) {
        // Refused (`Err`): the group's tasks still run and use the core,
        // which stays.
        if let Ok(panic) = self.core().close_collect(self.epoch()) {
            // SAFETY: closed and idle: no task or waiter refers to the core
            // any more, and this group owns it.
            drop(unsafe { Box::from_raw(self.core.as_ptr()) });
            if let Some(p) = panic {
                if !std::thread::panicking() {
                    std::panic::resume_unwind(p);
                }
            }
        }
    }
}

impl fmt::Debug for TaskGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskGroup").finish_non_exhaustive()
    }
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::Dead => {
                f.write_str("the group is not open (closed already, or never opened)")
            }
            CoreError::ClosedMeanwhile => {
                f.write_str("another thread closed the group while this call waited for it")
            }
            CoreError::PoolGone => f.write_str(
                "the group's pool was destroyed (its workers exited) before any thread but the \
                 worker that created the group used it",
            ),
            CoreError::WouldDeadlock(w) => w.fmt(f),
            CoreError::Place(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CoreError {}

impl ThreadPool {
    /// An empty [`TaskGroup`] on this pool (as [`TaskGroup::new`]).
    ///
    /// ```
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let group = pool.task_group();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// group.spawn(move |_| tx.send(terroir::current_thread_index().is_some()).unwrap());
    /// group.wait().unwrap();
    /// assert!(rx.recv().unwrap()); // ran on a worker of the pool
    /// ```
    pub fn task_group(&self) -> TaskGroup {
        TaskGroup::new(self)
    }
}

/// Runs `f` with the pool the calling thread works for: the pool a NULL
/// pool argument of the C API means on a worker. `None` on a thread
/// outside every pool.
pub(crate) fn with_current_pool<R>(f: impl FnOnce(&ThreadPool) -> R) -> Option<R> {
    let wt = WorkerThread::current()?;
    // A view of the worker's own reference: never dropped.
    let view = std::mem::ManuallyDrop::new(ThreadPool {
        // SAFETY: the worker holds a count for as long as it runs, which
        // outlasts this call; the view never drops this `Arc`.
        registry: unsafe { std::sync::Arc::from_raw(std::sync::Arc::as_ptr(wt.registry())) },
    });
    Some(f(&view))
}

/// Tags `pool` with `tag` (see `terroir::__capi::set_pool_tag`).
pub(crate) fn set_pool_tag(pool: &ThreadPool, tag: usize) {
    pool.registry
        .tag
        .store(tag, std::sync::atomic::Ordering::Relaxed);
}

/// The tag of `wt`'s pool.
#[inline]
pub(crate) fn pool_tag(wt: &WorkerThread) -> usize {
    wt.registry().tag.load(std::sync::atomic::Ordering::Relaxed)
}
