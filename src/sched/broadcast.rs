//! Broadcasts: a job for every worker of a pool, each run by that worker
//! and no other (README §5).
//!
//! A broadcast puts one job in each worker's strict inbox, the queue only
//! its worker takes from (placed strict tasks use it too), right after its
//! own deque in the order it looks for work: a worker runs its part when it
//! has nothing local left, before it steals. Each worker is then woken if
//! it sleeps. Broadcasts are pushed under one lock, so that every worker
//! receives concurrent broadcasts in the same order: two broadcasts whose
//! jobs wait for one another across workers (a barrier in each) cannot
//! deadlock by being taken in opposite orders.

use std::marker::PhantomData;
use std::sync::Arc;

use super::job::{HeapJob, JobRef, StackJob};
use super::latch::CountLatch;
use super::registry::{global_registry, Registry};
use super::route::Route;
use super::scope::{HasBase, Scope, ScopeBase};
use super::scope_fifo::ScopeFifo;
use super::worker::WorkerThread;

/// What a broadcast closure learns about the worker that runs it.
pub struct BroadcastContext<'a> {
    index: usize,
    num_threads: usize,
    /// Neither `Send` nor `Sync`, as in rayon-core.
    _marker: PhantomData<&'a mut dyn Fn()>,
}

impl BroadcastContext<'_> {
    /// Runs `f` with the context of the current worker.
    fn with<R>(f: impl FnOnce(BroadcastContext<'_>) -> R) -> R {
        let wt = WorkerThread::current().expect("a broadcast job runs on a worker");
        f(BroadcastContext {
            index: wt.index(),
            num_threads: wt.registry().num_threads(),
            _marker: PhantomData,
        })
    }

    /// The index of the worker running this part of the broadcast, in
    /// `0..num_threads()`.
    #[inline]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The number of workers the broadcast runs on (each runs it once).
    #[inline]
    pub fn num_threads(&self) -> usize {
        self.num_threads
    }
}

impl std::fmt::Debug for BroadcastContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadcastContext")
            .field("index", &self.index)
            .field("num_threads", &self.num_threads)
            .finish()
    }
}

/// Runs `op` once on every worker of the current pool (the global pool
/// outside any pool) and returns the results in worker index order. Each
/// worker runs it when it has nothing local left to do, before it steals.
/// Same contract as `rayon::broadcast`.
///
/// ```
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// let ids = pool.install(|| terroir::broadcast(|ctx| (ctx.index(), ctx.num_threads())));
/// assert_eq!(ids, [(0, 3), (1, 3), (2, 3)]);
/// ```
///
/// # Panics
/// If `op` panics on any worker, the first panic (in index order) is
/// propagated once every worker has run it.
pub fn broadcast<OP, R>(op: OP) -> Vec<R>
where
    OP: Fn(BroadcastContext<'_>) -> R + Sync,
    R: Send,
{
    match WorkerThread::current() {
        Some(wt) => wt.registry().broadcast(op),
        None => global_registry().broadcast(op),
    }
}

/// Spawns `op` on every worker of the current pool (the global pool
/// outside any pool) without waiting for it: a `'static` job per worker,
/// each run by that worker. Same contract as `rayon::spawn_broadcast`.
///
/// ```
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// pool.install(|| terroir::spawn_broadcast(move |ctx| tx.send(ctx.index()).unwrap()));
/// let mut got: Vec<usize> = rx.iter().collect(); // ends when the last job drops its sender
/// got.sort();
/// assert_eq!(got, [0, 1]);
/// ```
///
/// # Panics
/// A panic on a worker goes to the pool's panic handler (once for each
/// worker that panics); without one the process aborts.
pub fn spawn_broadcast<OP>(op: OP)
where
    OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
{
    match WorkerThread::current() {
        Some(wt) => wt.registry().spawn_broadcast(op),
        None => global_registry().spawn_broadcast(op),
    }
}

impl Registry {
    /// Pushes `jobs`, one per worker in index order, each to the inbox only
    /// that worker takes from, and wakes the workers that sleep.
    fn inject_broadcast(&self, jobs: impl ExactSizeIterator<Item = JobRef>) {
        assert_eq!(jobs.len(), self.num_threads(), "one job per worker");
        {
            let _order = self
                .broadcast_lock
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for (info, job) in self.workers.iter().zip(jobs) {
                info.strict_inbox.push(job);
            }
        }
        for w in 0..self.num_threads() {
            self.sleep.new_work_for_worker(w);
        }
    }

    /// The node a broadcast job's frame should live on: its worker's.
    fn broadcast_frame_node(&self, worker: usize) -> Option<crate::numa::NodeId> {
        self.frame_node(
            Route::Worker {
                worker,
                strict: true,
            },
            None,
        )
    }

    /// [`broadcast`] in this pool.
    pub(crate) fn broadcast<OP, R>(self: &Arc<Self>, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        let n = self.num_threads();
        let owner = WorkerThread::current();
        let latch = CountLatch::with_count(n, self, owner);
        let run = |_: bool| BroadcastContext::with(&op);
        let jobs: Vec<_> = (0..n).map(|_| StackJob::new(&run, &latch)).collect();
        // The jobs stay in place (the vector is not touched) until the
        // latch says every one has run.
        self.inject_broadcast(jobs.iter().map(StackJob::as_job_ref));
        latch.wait(owner);
        jobs.into_iter().map(StackJob::into_result).collect()
    }

    /// [`spawn_broadcast`] in this pool.
    pub(crate) fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        let op = Arc::new(op);
        let jobs = (0..self.num_threads()).map(|w| {
            let op = Arc::clone(&op);
            let body = self.static_body(move || BroadcastContext::with(|ctx| op(ctx)));
            // SAFETY: the body is 'static.
            unsafe { HeapJob::new(body).into_job_ref(self.broadcast_frame_node(w)) }
        });
        self.inject_broadcast(jobs);
    }
}

/// `spawn_broadcast` of a scope of either kind: a job per worker, counted
/// by the scope. Each job owns a reference to `body`, dropped before the
/// job's count is given back.
fn scope_broadcast<'scope, S, BODY>(scope: &S, body: BODY)
where
    S: HasBase<'scope> + 'scope,
    BODY: Fn(&S, BroadcastContext<'_>) + Send + Sync + 'scope,
{
    let registry = &scope.base().registry;
    let body = Arc::new(body);
    let jobs = (0..registry.num_threads()).map(|w| {
        let body = Arc::clone(&body);
        ScopeBase::job_ref(scope, registry.broadcast_frame_node(w), move |s: &S| {
            BroadcastContext::with(|ctx| body(s, ctx))
        })
    });
    registry.inject_broadcast(jobs);
}

impl<'scope> Scope<'scope> {
    /// Spawns `body` on every worker of the scope's pool: each runs it once,
    /// when it has nothing local left to do. The scope waits for all of
    /// them. Same contract as `rayon::Scope::spawn_broadcast`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    /// let ran = AtomicUsize::new(0);
    /// pool.scope(|s| {
    ///     s.spawn_broadcast(|_, ctx| {
    ///         ran.fetch_add(1 << ctx.index(), Ordering::Relaxed);
    ///     });
    /// });
    /// assert_eq!(ran.into_inner(), 0b1111); // each worker once
    /// ```
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&Scope<'scope>, BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        scope_broadcast(self, body)
    }
}

impl<'scope> ScopeFifo<'scope> {
    /// [`Scope::spawn_broadcast`] in a FIFO scope (the broadcast jobs go
    /// to the workers' inboxes, not through the scope's FIFOs).
    pub fn spawn_broadcast<BODY>(&self, body: BODY)
    where
        BODY: Fn(&ScopeFifo<'scope>, BroadcastContext<'_>) + Send + Sync + 'scope,
    {
        scope_broadcast(self, body)
    }
}
