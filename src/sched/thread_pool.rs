//! [`ThreadPool`] and the free functions that act on the current pool.

use std::fmt;
use std::sync::Arc;

use super::broadcast::BroadcastContext;
use super::builder::Pinning;
use super::place::{Place, PlaceError, PlaceKind};
use super::policy::Policy;
use super::record::{RecordError, RecordOptions, Recording};
use super::registry::{global_registry, Registry};
use super::scope::{in_place_scope_in, scope, Scope};
use super::scope_fifo::{in_place_scope_fifo_in, scope_fifo, ScopeFifo};
use super::stats::PoolStats;
use super::worker::WorkerThread;
use crate::numa::{CpuSet, Topology};

/// A pool of worker threads, one per processing unit, grouped by L3 cache
/// and NUMA node. Dropping the pool lets its workers finish queued work and
/// exit (without waiting for them).
///
/// ```
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// let (a, b) = pool.join(|| 1 + 1, || 2 + 2);
/// assert_eq!((a, b), (2, 4));
/// ```
pub struct ThreadPool {
    pub(super) registry: Arc<Registry>,
}

impl ThreadPool {
    /// Runs `op` on a worker of this pool and returns its result; from a
    /// thread outside the pool this blocks until `op` is done.
    ///
    /// # Panics
    /// Propagates a panic of `op`.
    pub fn install<OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.registry.in_worker(|_, _| op())
    }

    /// [`join`](crate::join) inside this pool.
    pub fn join<A, B, RA, RB>(&self, oper_a: A, oper_b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.install(|| crate::join(oper_a, oper_b))
    }

    /// [`scope`](crate::scope) inside this pool.
    pub fn scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| scope(op))
    }

    /// Runs `op` once on every worker of this pool and returns the results
    /// in worker index order (see [`broadcast`](crate::broadcast)).
    ///
    /// ```
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// assert_eq!(pool.broadcast(|ctx| ctx.index() * 10), [0, 10]);
    /// ```
    ///
    /// # Panics
    /// As [`broadcast`](crate::broadcast).
    pub fn broadcast<OP, R>(&self, op: OP) -> Vec<R>
    where
        OP: Fn(BroadcastContext<'_>) -> R + Sync,
        R: Send,
    {
        self.registry.broadcast(op)
    }

    /// Spawns `op` on every worker of this pool without waiting for it
    /// (see [`spawn_broadcast`](crate::spawn_broadcast)). The pool stays
    /// alive until every worker has run it.
    pub fn spawn_broadcast<OP>(&self, op: OP)
    where
        OP: Fn(BroadcastContext<'_>) + Send + Sync + 'static,
    {
        self.registry.spawn_broadcast(op)
    }

    /// [`scope_fifo`](crate::scope_fifo) inside this pool.
    pub fn scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R + Send,
        R: Send,
    {
        self.install(|| scope_fifo(op))
    }

    /// A scope whose spawns go to this pool, with `op` run on the calling
    /// thread (which need not be a worker: then nothing blocks a worker
    /// while `op` runs). The caller waits for the spawned tasks at the end;
    /// a worker of another pool runs its own pool's work meanwhile.
    ///
    /// ```
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// pool.in_place_scope(|s| {
    ///     s.spawn(move |_| tx.send(42).unwrap());
    ///     // The pool's only worker is free to run the task meanwhile.
    ///     assert_eq!(rx.recv().unwrap(), 42);
    /// });
    /// ```
    pub fn in_place_scope<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&Scope<'scope>) -> R,
    {
        in_place_scope_in(&self.registry, op)
    }

    /// [`in_place_scope`](Self::in_place_scope) with a [`ScopeFifo`].
    pub fn in_place_scope_fifo<'scope, OP, R>(&self, op: OP) -> R
    where
        OP: FnOnce(&ScopeFifo<'scope>) -> R,
    {
        in_place_scope_fifo_in(&self.registry, op)
    }

    /// Spawns a `'static` job into this pool without waiting for it. The
    /// pool stays alive (its workers keep running) until the job is done.
    pub fn spawn<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.registry.spawn_static(None, op)
    }

    /// [`spawn`](Self::spawn) in FIFO order among the `spawn_fifo`s of the
    /// calling worker (see [`spawn_fifo`](crate::spawn_fifo)).
    pub fn spawn_fifo<OP>(&self, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.registry.spawn_static_fifo(op)
    }

    /// Spawns a `'static` job at `place` without waiting for it (see
    /// [`Place`]). A strict place is honoured under every policy; a hint
    /// is ignored under `Flat` and `Hierarchical` (the job is then a
    /// [`spawn`](Self::spawn)).
    ///
    /// ```
    /// use terroir::{Policy, ThreadPoolBuilder};
    /// let pool = ThreadPoolBuilder::new().num_threads(2).policy(Policy::StrictLocality).build().unwrap();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let place = pool.worker(1).unwrap();
    /// pool.spawn_on(&place, move || tx.send(terroir::current_thread_index()).unwrap());
    /// assert_eq!(rx.recv().unwrap(), Some(1)); // strict: only worker 1 may run it
    /// ```
    ///
    /// The job may outlive the caller, so it cannot borrow from it:
    ///
    /// ```compile_fail
    /// let pool = terroir::ThreadPoolBuilder::new().build().unwrap();
    /// let place = pool.node(0).unwrap();
    /// let local = vec![1, 2, 3];
    /// pool.spawn_on(&place, || println!("{:?}", local)); // `local` is borrowed
    /// ```
    ///
    /// A place this pool cannot honour (made by another pool: a worker
    /// index beyond this pool's workers, a node outside its topology) is
    /// counted in [`PoolStats::unroutable`] and the job runs as an unplaced
    /// one; [`try_spawn_on`](Self::try_spawn_on) refuses it instead.
    pub fn spawn_on<OP>(&self, place: &Place, op: OP)
    where
        OP: FnOnce() + Send + 'static,
    {
        self.registry.spawn_static(Some(place), op)
    }

    /// [`spawn_on`](Self::spawn_on), or an error (and nothing spawned) when
    /// this pool cannot honour `place`.
    ///
    /// ```
    /// use terroir::{PlaceError, ThreadPoolBuilder};
    /// let big = ThreadPoolBuilder::new().num_threads(4).pin(false).build().unwrap();
    /// let small = ThreadPoolBuilder::new().num_threads(2).pin(false).build().unwrap();
    /// let place = big.worker(3).unwrap(); // a place of `big`, not of `small`
    /// let err = small.try_spawn_on(&place, || {}).unwrap_err();
    /// assert!(matches!(err, PlaceError::WorkerOutOfRange { index: 3, workers: 2 }));
    /// ```
    ///
    /// # Errors
    /// [`PlaceError::WorkerOutOfRange`] for a worker place beyond this
    /// pool's workers; [`PlaceError::NodeNotInPool`] for a node (or a data
    /// place's node) that is not in this pool's topology.
    pub fn try_spawn_on<OP>(&self, place: &Place, op: OP) -> Result<(), PlaceError>
    where
        OP: FnOnce() + Send + 'static,
    {
        self.registry.check_place(place)?;
        self.registry.spawn_static(Some(place), op);
        Ok(())
    }

    /// A place on node `index` of this pool's [topology](Self::topology)
    /// (an index into [`Topology::nodes`], not an OS node number).
    ///
    /// # Errors
    /// [`PlaceError::NodeOutOfRange`] naming the index and the valid range;
    /// [`PlaceError::NoWorkerOnNode`] when the pool has no worker there.
    pub fn node(&self, index: usize) -> Result<Place, PlaceError> {
        let topo = self.registry.topology();
        let nodes = topo.nodes().len();
        if index >= nodes {
            return Err(PlaceError::NodeOutOfRange { index, nodes });
        }
        let id = topo.nodes()[index].id();
        if self.registry.node_workers(index).is_empty() {
            return Err(PlaceError::NoWorkerOnNode { node: id });
        }
        Ok(Place::new(PlaceKind::Node(id)))
    }

    /// A place on worker `index` of this pool.
    ///
    /// # Errors
    /// [`PlaceError::WorkerOutOfRange`] naming the index and the valid
    /// range.
    pub fn worker(&self, index: usize) -> Result<Place, PlaceError> {
        let workers = self.registry.num_threads();
        if index >= workers {
            return Err(PlaceError::WorkerOutOfRange { index, workers });
        }
        Ok(Place::new(PlaceKind::Worker(index)))
    }

    /// A snapshot of the scheduling statistics since the pool was built
    /// (or since [`reset_stats`](Self::reset_stats)).
    ///
    /// ```
    /// use terroir::{numa::NodeId, pool::NodeVec, Place, Policy, ThreadPoolBuilder};
    /// let pool = ThreadPoolBuilder::new().num_threads(2).policy(Policy::Locality).build().unwrap();
    /// let node = pool.topology().nodes()[0].id();
    /// let data = NodeVec::from_elem_on(1u64, 1 << 16, node).unwrap();
    /// pool.scope(|s| {
    ///     for _ in 0..8 {
    ///         s.spawn_on(&Place::data(&data), |_| assert_eq!(data.iter().sum::<u64>(), 1 << 16));
    ///     }
    /// });
    /// let stats = pool.stats();
    /// assert_eq!(stats.nodes.iter().map(|n| n.placed).sum::<u64>(), 8);
    /// assert_eq!(stats.locality_ratio(), Some(1.0)); // one node: all local
    /// ```
    pub fn stats(&self) -> PoolStats {
        self.registry.stats()
    }

    /// Zeroes the statistics (e.g. between benchmark runs).
    pub fn reset_stats(&self) {
        self.registry.reset_stats()
    }

    /// Runs `op` in this pool (as [`install`](Self::install)) while
    /// recording every task and every worker's time, with the default
    /// [`RecordOptions`] (all counters that can be opened).
    ///
    /// The closure form of [`start_recording`](Self::start_recording) and
    /// [`stop_recording`](Self::stop_recording) (the same protocol): the
    /// recording covers every job the pool runs meanwhile, `op`'s and any
    /// other thread's.
    ///
    /// # Panics
    /// When the pool records already (a `record` nested in `op`, a `record`
    /// on another thread, a recording started and not stopped):
    /// [`try_record_with`](Self::try_record_with) returns that as an error
    /// instead. Propagates a panic of `op` (once the recording is stopped).
    ///
    /// ```
    /// use terroir::ThreadPoolBuilder;
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let (n, rec) = pool.record(|| {
    ///     pool.scope(|s| {
    ///         for _ in 0..10 {
    ///             s.spawn_labeled("leaf", |_| { std::hint::black_box((0..10_000u64).sum::<u64>()); });
    ///         }
    ///     });
    ///     42
    /// });
    /// assert_eq!(n, 42);
    /// assert_eq!(rec.tasks.iter().filter(|t| t.label.as_str() == "leaf").count(), 10);
    /// let accounted: u64 = rec.workers.iter().map(|w| w.work_ns + w.overhead_ns + w.idle_ns).sum();
    /// assert!(accounted <= 2 * rec.wall_ns + 1_000_000);
    /// for u in &rec.unavailable {
    ///     println!("not counted: {u}"); // e.g. hardware counters in a VM
    /// }
    /// ```
    pub fn record<OP, R>(&self, op: OP) -> (R, Recording)
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.record_with(&RecordOptions::default(), op)
    }

    /// [`record`](Self::record) with the given options (e.g.
    /// [`RecordOptions::timestamps_only`]).
    ///
    /// # Panics
    /// As [`record`](Self::record).
    pub fn record_with<OP, R>(&self, options: &RecordOptions, op: OP) -> (R, Recording)
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.try_record_with(options, op).unwrap_or_else(|e| {
            panic!(
                "terroir: ThreadPool::record called while this pool is already recording \
                 (from inside another record, from two threads at once, or between \
                 start_recording and stop_recording): {e}"
            )
        })
    }

    /// [`record_with`](Self::record_with), with a pool that records already
    /// reported rather than a panic.
    ///
    /// # Errors
    /// [`RecordError::AlreadyRecording`] when the pool records already;
    /// `op` has not run.
    ///
    /// ```
    /// use terroir::report::{RecordError, RecordOptions};
    /// use terroir::ThreadPoolBuilder;
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// let options = RecordOptions::timestamps_only();
    /// let (nested, _rec) = pool
    ///     .try_record_with(&options, || pool.try_record_with(&options, || ()).map(drop))
    ///     .unwrap();
    /// assert_eq!(nested, Err(RecordError::AlreadyRecording));
    /// ```
    pub fn try_record_with<OP, R>(
        &self,
        options: &RecordOptions,
        op: OP,
    ) -> Result<(R, Recording), RecordError>
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        self.registry.record(options, op)
    }

    /// Starts recording every task and every worker's time until
    /// [`stop_recording`](Self::stop_recording): the two-call form of
    /// [`record_with`](Self::record_with), for code that cannot wrap the
    /// recorded work in a closure (the C API's `terroir_record_start` and
    /// `terroir_record_stop`). Start and stop may be called from any
    /// threads, in or outside the pool. The recording covers every job the
    /// pool runs meanwhile; a pool dropped while it records discards the
    /// recording.
    ///
    /// # Errors
    /// [`RecordError::AlreadyRecording`] when the pool records already (a
    /// start not stopped yet, or a [`record`](Self::record) in progress):
    /// a pool has one recording at a time.
    ///
    /// ```
    /// use terroir::report::{RecordError, RecordOptions};
    /// use terroir::{label, ThreadPoolBuilder};
    /// let pool = ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    /// pool.start_recording(&RecordOptions::timestamps_only()).unwrap();
    /// assert_eq!(pool.start_recording(&RecordOptions::default()), Err(RecordError::AlreadyRecording));
    /// let sum = pool.install(|| {
    ///     terroir::join(
    ///         || label("left", || (0..1000u64).sum::<u64>()),
    ///         || label("right", || (1000..2000u64).sum::<u64>()),
    ///     )
    /// });
    /// let rec = pool.stop_recording().unwrap();
    /// assert_eq!(sum, (499_500, 1_499_500));
    /// assert_eq!(rec.tasks.iter().filter(|t| t.label.as_str() == "left").count(), 1);
    /// assert_eq!(pool.stop_recording().unwrap_err(), RecordError::NotRecording);
    /// ```
    pub fn start_recording(&self, options: &RecordOptions) -> Result<(), RecordError> {
        self.registry.start_recording(options)
    }

    /// Stops the recording that [`start_recording`](Self::start_recording)
    /// started, and returns it. Like the closure form, it first lets the
    /// jobs that are finishing close (briefly: a long job of another user
    /// does not hold it up), and waits for the workers writing their
    /// records.
    ///
    /// # Errors
    /// [`RecordError::NotRecording`] when the pool does not record (never
    /// started, or stopped already); [`RecordError::RecordInProgress`]
    /// when its recording belongs to a [`record`](Self::record) call in
    /// progress, which stops it itself.
    pub fn stop_recording(&self) -> Result<Recording, RecordError> {
        self.registry.stop_recording()
    }

    /// [`yield_now`](crate::yield_now) if the current thread is a worker
    /// of this pool; `None` otherwise.
    pub fn yield_now(&self) -> Option<Yield> {
        self.current_worker().map(WorkerThread::yield_now)
    }

    /// [`yield_local`](crate::yield_local) if the current thread is a
    /// worker of this pool; `None` otherwise.
    pub fn yield_local(&self) -> Option<Yield> {
        self.current_worker().map(WorkerThread::yield_local)
    }

    /// [`current_thread_has_pending_tasks`](crate::current_thread_has_pending_tasks)
    /// if the current thread is a worker of this pool; `None` otherwise.
    pub fn current_thread_has_pending_tasks(&self) -> Option<bool> {
        self.current_worker().map(WorkerThread::has_pending_tasks)
    }

    /// The calling thread's worker, if it is one of this pool's.
    fn current_worker(&self) -> Option<&'static WorkerThread> {
        WorkerThread::current().filter(|wt| Arc::ptr_eq(wt.registry(), &self.registry))
    }

    /// Number of workers of this pool.
    pub fn current_num_threads(&self) -> usize {
        self.registry.num_threads()
    }

    /// Index of the current thread among this pool's workers, or `None` when
    /// it is not one of them.
    pub fn current_thread_index(&self) -> Option<usize> {
        self.current_worker().map(WorkerThread::index)
    }

    /// The topology the pool schedules on.
    pub fn topology(&self) -> &Topology {
        self.registry.topology()
    }

    /// The stealing policy.
    pub fn policy(&self) -> Policy {
        self.registry.policy()
    }

    /// Whether the workers are pinned (see [`pinning`](Self::pinning)).
    pub fn is_pinned(&self) -> bool {
        self.registry.is_pinned()
    }

    /// How the workers are pinned, or `None` when they are not.
    pub fn pinning(&self) -> Option<Pinning> {
        self.registry.pinning()
    }

    /// The OS CPU number of worker `index`'s processing unit (its seat: the
    /// CPU it is pinned to under [`Pinning::Pu`], the one whose cache or
    /// node it is pinned to otherwise), or `None` for an index out of
    /// range.
    pub fn worker_cpu(&self, index: usize) -> Option<u32> {
        (index < self.registry.num_threads()).then(|| self.registry.worker_cpu(index))
    }

    /// The CPUs worker `index` is pinned to (those of its cache group or
    /// node that the process may use), or `None` when the pool does not
    /// pin or the index is out of range. (A calling thread adopted as
    /// worker 0 by
    /// [`use_current_thread`](crate::ThreadPoolBuilder::use_current_thread)
    /// keeps its own affinity.)
    ///
    /// ```
    /// use terroir::{Pinning, ThreadPoolBuilder};
    /// let pool = ThreadPoolBuilder::new().num_threads(1).pinning(Pinning::Node).build().unwrap();
    /// let node = &pool.topology().nodes()[pool.worker_node_index(0).unwrap()];
    /// assert_eq!(pool.worker_cpus(0).as_ref(), Some(node.cpus()));
    /// ```
    pub fn worker_cpus(&self, index: usize) -> Option<CpuSet> {
        if index >= self.registry.num_threads() {
            return None;
        }
        self.registry.worker_cpus(index).cloned()
    }

    /// The node (index into [`Topology::nodes`]) of worker `index`, or
    /// `None` for an index out of range.
    pub fn worker_node_index(&self, index: usize) -> Option<usize> {
        (index < self.registry.num_threads()).then(|| self.registry.worker_node(index))
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        // A recording started and never stopped is discarded now, not when
        // the last worker exits (which waits for queued jobs): until then
        // every job of every pool would take the recording path.
        let _ = self.registry.stop_recording();
        self.registry.terminate();
    }
}

impl fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPool")
            .field("num_threads", &self.registry.num_threads())
            .field("policy", &self.registry.policy())
            .field("pinned", &self.registry.is_pinned())
            .finish_non_exhaustive()
    }
}

/// Spawns a `'static` job into the current pool (the global pool outside
/// any pool) without waiting for it. Same contract as `rayon::spawn`.
///
/// # Panics
/// A panic inside `op` goes to the pool's
/// [`panic_handler`](crate::ThreadPoolBuilder::panic_handler); without one the
/// process aborts.
///
/// ```
/// let (tx, rx) = std::sync::mpsc::channel();
/// terroir::spawn(move || tx.send(6 * 7).unwrap());
/// assert_eq!(rx.recv().unwrap(), 42);
/// ```
pub fn spawn<OP>(op: OP)
where
    OP: FnOnce() + Send + 'static,
{
    match WorkerThread::current() {
        Some(wt) => wt.registry().spawn_static(None, op),
        None => global_registry().spawn_static(None, op),
    }
}

/// [`spawn`] in FIFO order: the jobs a worker spawns with `spawn_fifo` run
/// in the order they were spawned (when no other worker takes them first),
/// while its LIFO spawns and joins keep running newest first. Each worker
/// queues them in a FIFO of its own and pushes a stand-in on its deque
/// that runs the oldest one. From outside any pool, the job goes to the
/// global pool as any job from outside. Same contract as
/// `rayon::spawn_fifo`.
///
/// ```
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// let (tx, rx) = std::sync::mpsc::channel();
/// pool.install(|| {
///     for i in 0..4 {
///         let tx = tx.clone();
///         terroir::spawn_fifo(move || tx.send(i).unwrap());
///     }
/// });
/// drop(tx);
/// assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2, 3]);
/// ```
///
/// # Panics
/// As [`spawn`]: a panic goes to the pool's panic handler.
pub fn spawn_fifo<OP>(op: OP)
where
    OP: FnOnce() + Send + 'static,
{
    match WorkerThread::current() {
        Some(wt) => wt.registry().spawn_static_fifo(op),
        None => global_registry().spawn_static_fifo(op),
    }
}

/// What [`yield_now`] or [`yield_local`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Yield {
    /// A job was found and run.
    Executed,
    /// No job was found.
    Idle,
}

/// Runs one pending job of the current pool on the calling worker, if it
/// finds one where an idle worker would look (its own deque and inboxes,
/// its node's queues, other workers in its steal order): cooperative
/// yielding for code that polls. The job may run nested work and steal.
/// Returns `None` on a thread that is not a worker. Same contract as
/// `rayon::yield_now`; `join` continuations the worker keeps private
/// (README §1) are not run.
///
/// ```
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// assert_eq!(terroir::yield_now(), None); // not a worker
/// let (tx, rx) = std::sync::mpsc::channel();
/// pool.install(|| {
///     terroir::spawn(move || tx.send("ran").unwrap());
///     // The only worker is busy here: yielding runs the spawned job.
///     assert_eq!(terroir::yield_now(), Some(terroir::Yield::Executed));
///     assert_eq!(terroir::yield_now(), Some(terroir::Yield::Idle));
/// });
/// assert_eq!(rx.recv().unwrap(), "ran");
/// ```
pub fn yield_now() -> Option<Yield> {
    WorkerThread::current().map(WorkerThread::yield_now)
}

/// [`yield_now`] limited to the calling worker's own work (its deque, and
/// its inboxes: broadcasts, tasks placed on it): no stealing. Same
/// contract as `rayon::yield_local`.
pub fn yield_local() -> Option<Yield> {
    WorkerThread::current().map(WorkerThread::yield_local)
}

/// Whether the calling worker has work of its own waiting (jobs on its
/// deque, or a `join` continuation it keeps private), or `None` on a
/// thread that is not a worker. Racy by nature: other workers may take
/// the work meanwhile. Same contract as
/// `rayon::current_thread_has_pending_tasks`.
///
/// ```
/// assert_eq!(terroir::current_thread_has_pending_tasks(), None);
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
/// pool.scope(|s| {
///     assert_eq!(terroir::current_thread_has_pending_tasks(), Some(false));
///     s.spawn(|_| {});
///     assert_eq!(terroir::current_thread_has_pending_tasks(), Some(true));
/// });
/// ```
pub fn current_thread_has_pending_tasks() -> Option<bool> {
    WorkerThread::current().map(WorkerThread::has_pending_tasks)
}

/// Index of the current thread in its pool, or `None` outside any pool.
///
/// ```
/// assert_eq!(terroir::current_thread_index(), None);
/// let pool = terroir::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
/// assert!(pool.install(|| terroir::current_thread_index()).unwrap() < 2);
/// ```
pub fn current_thread_index() -> Option<usize> {
    WorkerThread::current().map(WorkerThread::index)
}

/// The most workers a pool may have: 65,535, as rayon-core on 64-bit
/// targets. A larger [`num_threads`](crate::ThreadPoolBuilder::num_threads)
/// (or `TERROIR_NUM_THREADS`, `RAYON_NUM_THREADS`) is an error naming it
/// when the pool is built, where rayon-core lowers it to this maximum
/// silently.
///
/// ```
/// let too_many = terroir::max_num_threads() + 1;
/// let err = terroir::ThreadPoolBuilder::new().num_threads(too_many).build().unwrap_err();
/// assert!(matches!(err, terroir::ThreadPoolBuildError::TooManyThreads { .. }));
/// ```
pub fn max_num_threads() -> usize {
    super::config::MAX_NUM_THREADS
}

/// Number of workers of the current pool (the global pool outside any
/// pool).
pub fn current_num_threads() -> usize {
    match WorkerThread::current() {
        Some(wt) => wt.registry().num_threads(),
        None => global_registry().num_threads(),
    }
}
