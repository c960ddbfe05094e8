//! `scope_fifo` and `in_place_scope_fifo`: scopes whose spawns from one
//! worker run in the order they were spawned (README §4).

use std::sync::Arc;

use super::job::JobFifo;
use super::registry::{global_registry, Registry};
use super::scope::{HasBase, ScopeBase};
use super::worker::WorkerThread;

/// A scope whose tasks, spawned with [`spawn_fifo`](Self::spawn_fifo),
/// run in FIFO order among the spawns of one worker; created by
/// [`scope_fifo`] or [`in_place_scope_fifo`]. Same contract as
/// `rayon::ScopeFifo`.
///
/// Each worker has a FIFO of its own in the scope: a spawn queues the task
/// in the spawning worker's FIFO and pushes a stand-in on the worker's
/// deque that runs the oldest task of that FIFO. The deque (newest first)
/// decides when a FIFO task runs, the FIFO decides which, so FIFO and LIFO
/// scopes nest and mix as in rayon-core: a LIFO spawn made after a FIFO one
/// still runs first, and a nested scope's tasks run before the enclosing
/// scope's older ones.
pub struct ScopeFifo<'scope> {
    base: ScopeBase<'scope>,
    /// One FIFO per worker of the scope's pool.
    fifos: Vec<JobFifo>,
}

impl<'scope> HasBase<'scope> for ScopeFifo<'scope> {
    fn base(&self) -> &ScopeBase<'scope> {
        &self.base
    }
}

/// [`scope`](crate::scope) whose spawns from one worker run in the order
/// they were spawned (when no other worker takes them first): creates a
/// [`ScopeFifo`] on a worker of the current pool (the global pool when
/// called from outside any pool), runs `op` in it, and returns once `op`
/// and every task spawned in the scope have finished.
///
/// ```
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let order = std::sync::Mutex::new(Vec::new());
/// pool.install(|| {
///     terroir::scope_fifo(|s| {
///         for i in 0..5 {
///             let order = &order;
///             s.spawn_fifo(move |_| order.lock().unwrap().push(i));
///         }
///     })
/// });
/// assert_eq!(order.into_inner().unwrap(), [0, 1, 2, 3, 4]);
/// ```
///
/// # Panics
/// If `op` or any spawned task panics, the first panic is propagated after
/// all tasks have finished.
pub fn scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
    R: Send,
{
    let run = |wt: &WorkerThread, _: bool| {
        let scope = ScopeFifo::new(wt.registry(), Some(wt));
        scope.base.complete(Some(wt), || op(&scope))
    };
    match WorkerThread::current() {
        Some(wt) => run(wt, false),
        None => global_registry().in_worker(run),
    }
}

/// Like [`scope_fifo`], but runs `op` on the calling thread even when it is
/// not a worker; spawned tasks go to the current pool (or the global one).
///
/// ```
/// let mut squares = vec![0; 4];
/// terroir::in_place_scope_fifo(|s| {
///     for (i, sq) in squares.iter_mut().enumerate() {
///         s.spawn_fifo(move |_| *sq = i * i);
///     }
/// });
/// assert_eq!(squares, [0, 1, 4, 9]);
/// ```
pub fn in_place_scope_fifo<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    let owner = WorkerThread::current();
    let registry = owner.map_or_else(global_registry, WorkerThread::registry);
    in_place_scope_fifo_in(registry, op)
}

/// [`in_place_scope_fifo`] whose spawns go to `registry`'s pool.
pub(crate) fn in_place_scope_fifo_in<'scope, OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&ScopeFifo<'scope>) -> R,
{
    let owner = WorkerThread::current();
    let scope = ScopeFifo::new(registry, owner);
    scope.base.complete(owner, || op(&scope))
}

impl<'scope> ScopeFifo<'scope> {
    fn new(registry: &Arc<Registry>, owner: Option<&WorkerThread>) -> Self {
        ScopeFifo {
            fifos: (0..registry.num_threads())
                .map(|_| JobFifo::new())
                .collect(),
            base: ScopeBase::new(registry, owner),
        }
    }

    /// Spawns `body` into the scope's pool, after the earlier `spawn_fifo`s
    /// of this worker in this scope. It may borrow anything that outlives
    /// the scope; the scope waits for it. From a thread that is not a
    /// worker of the scope's pool, the task is sent to the pool as any
    /// task from outside.
    pub fn spawn_fifo<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&ScopeFifo<'scope>) + Send + 'scope,
    {
        let registry = &self.base.registry;
        let job = ScopeBase::job_ref(self, None, body);
        match WorkerThread::current() {
            // SAFETY: the FIFO lives in the scope, which waits for the
            // stand-in (it runs the job the scope counts).
            Some(wt) if Arc::ptr_eq(wt.registry(), registry) => unsafe {
                wt.push_fifo(&self.fifos[wt.index()], job)
            },
            _ => registry.inject(job),
        }
    }
}

impl std::fmt::Debug for ScopeFifo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopeFifo")
            .field("num_threads", &self.base.registry.num_threads())
            .finish_non_exhaustive()
    }
}
