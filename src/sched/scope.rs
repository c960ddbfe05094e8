//! `scope` and `in_place_scope`: spawn borrowed work, wait for all of it.
//! [`ScopeBase`] is what a [`Scope`] and a
//! [`ScopeFifo`](super::scope_fifo::ScopeFifo) share: the pool, the count
//! of outstanding jobs and the first panic.

use std::any::Any;
use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use super::job::{halt_unwinding, HeapJob, JobRef};
use super::latch::{CountLatch, Latch};
use super::place::{Place, PlaceError};
use super::registry::{global_registry, Registry};
use super::worker::WorkerThread;

/// A scope in which tasks borrowing from the enclosing stack frame can be
/// spawned; created by [`scope`](crate::scope) or
/// [`in_place_scope`](crate::in_place_scope). Same contract as
/// `rayon::Scope`.
pub struct Scope<'scope> {
    base: ScopeBase<'scope>,
}

/// The state every kind of scope has.
pub(super) struct ScopeBase<'scope> {
    pub(super) registry: Arc<Registry>,
    /// The first panic of a spawned task (or of the body), rethrown at the end.
    panic: AtomicPtr<Box<dyn Any + Send + 'static>>,
    latch: CountLatch,
    /// Invariant in `'scope`, and neither `Send` nor `Sync` through the
    /// spawned closures' types.
    marker: PhantomData<ScopeMarker<'scope>>,
}

/// The variance and auto-trait marker of a scope (as in rayon-core).
type ScopeMarker<'scope> = Box<dyn FnOnce(&Scope<'scope>) + Send + Sync + 'scope>;

/// A scope type, for the code its kinds share.
pub(super) trait HasBase<'scope>: Sync {
    fn base(&self) -> &ScopeBase<'scope>;
}

/// Creates a scope on a worker of the current pool (the global pool when
/// called from outside any pool), runs `op` in it, and returns once `op` and
/// every task spawned in the scope have finished.
///
/// # Panics
/// If `op` or any spawned task panics, the first panic is propagated after
/// all tasks have finished.
///
/// ```
/// let mut left = 0;
/// let mut right = 0;
/// let total = terroir::scope(|s| {
///     s.spawn(|_| left = (1..=10).sum());
///     s.spawn(|_| right = (11..=20).sum());
///     "done"
/// });
/// assert_eq!((left + right, total), (210, "done"));
/// ```
///
/// The borrow checker keeps spawned tasks from outliving what they borrow:
///
/// ```compile_fail
/// let s = String::from("short-lived");
/// terroir::scope(|scope| {
///     let local = s.clone();
///     scope.spawn(|_| println!("{}", local)); // `local` dies before the task
/// });
/// ```
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let run = |wt: &WorkerThread, _: bool| {
        let scope = Scope::new(wt.registry(), Some(wt));
        scope.base.complete(Some(wt), || op(&scope))
    };
    match WorkerThread::current() {
        Some(wt) => run(wt, false),
        None => global_registry().in_worker(run),
    }
}

/// Like [`scope`], but runs `op` on the calling thread even when it is not a
/// worker; spawned tasks go to the current pool (or the global one).
///
/// ```
/// let v = vec![1, 2, 3];
/// let mut doubled = vec![0; 3];
/// terroir::in_place_scope(|s| {
///     for (d, x) in doubled.iter_mut().zip(&v) {
///         s.spawn(move |_| *d = 2 * x);
///     }
/// });
/// assert_eq!(doubled, [2, 4, 6]);
/// ```
pub fn in_place_scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    let owner = WorkerThread::current();
    let registry = owner.map_or_else(global_registry, WorkerThread::registry);
    in_place_scope_in(registry, op)
}

/// [`in_place_scope`] whose spawns go to `registry`'s pool. The calling
/// thread, if it is a worker (of any pool), runs its pool's work while it
/// waits for the scope's jobs; otherwise it blocks.
pub(crate) fn in_place_scope_in<'scope, OP, R>(registry: &Arc<Registry>, op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R,
{
    let owner = WorkerThread::current();
    let scope = Scope::new(registry, owner);
    scope.base.complete(owner, || op(&scope))
}

/// A `Send` raw pointer to a scope, for the spawned jobs.
struct ScopePtr<T>(*const T);
// SAFETY: the scope waits for every job it spawned before it is dropped, and
// a scope is only accessed through `&` (its fields are Sync).
unsafe impl<T> Send for ScopePtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for ScopePtr<T> {}

impl<'scope> HasBase<'scope> for Scope<'scope> {
    fn base(&self) -> &ScopeBase<'scope> {
        &self.base
    }
}

impl<'scope> Scope<'scope> {
    pub(crate) fn new(registry: &Arc<Registry>, owner: Option<&WorkerThread>) -> Self {
        Scope {
            base: ScopeBase::new(registry, owner),
        }
    }

    /// Spawns `body` into the scope's pool. It may borrow anything that
    /// outlives the scope; the scope waits for it.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let count = AtomicUsize::new(0);
    /// terroir::scope(|s| {
    ///     for _ in 0..100 {
    ///         s.spawn(|s| {
    ///             count.fetch_add(1, Ordering::Relaxed);
    ///             s.spawn(|_| { count.fetch_add(1, Ordering::Relaxed); });
    ///         });
    ///     }
    /// });
    /// assert_eq!(count.into_inner(), 200);
    /// ```
    ///
    /// A task may run on another thread, so what it captures must be `Send`:
    ///
    /// ```compile_fail
    /// let rc = std::rc::Rc::new(1);
    /// terroir::scope(|s| {
    ///     s.spawn(move |_| println!("{}", rc));
    /// });
    /// ```
    pub fn spawn<BODY>(&self, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.spawn_to(None, body)
    }

    /// [`spawn`](Self::spawn), the task reported under `name` when the
    /// pool records (see [`label`](crate::label)).
    pub fn spawn_labeled<BODY>(&self, name: &'static str, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.spawn(move |s| super::record::label(name, || body(s)))
    }

    /// [`spawn_on`](Self::spawn_on), the task reported under `name` when
    /// the pool records.
    pub fn spawn_on_labeled<BODY>(&self, place: &Place, name: &'static str, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.spawn_on(place, move |s| super::record::label(name, || body(s)))
    }

    /// Spawns `body` at `place`: on its node or worker, as a hint or
    /// strictly (see [`Place`]). A strict place is honoured under every
    /// policy; a hint under `Locality` and `StrictLocality` only (`Flat`
    /// and `Hierarchical` ignore hints: the task is then a
    /// [`spawn`](Self::spawn)). Declared data counts in the pool's
    /// [locality ratio](crate::PoolStats::locality_ratio) under every
    /// policy.
    ///
    /// ```
    /// use terroir::{Place, Policy, ThreadPoolBuilder};
    /// use terroir::numa::Topology;
    /// // Two described nodes (unpinned), strict places: each task runs on
    /// // a worker of the node it names.
    /// let topo = Topology::builder().nodes(2).pus_per_l3(2).build().unwrap();
    /// let pool = ThreadPoolBuilder::new()
    ///     .topology(topo)
    ///     .pin(false)
    ///     .policy(Policy::StrictLocality)
    ///     .build()
    ///     .unwrap();
    /// let ran_on = std::sync::Mutex::new(Vec::new());
    /// pool.scope(|s| {
    ///     for node in 0..2 {
    ///         let place = pool.node(node).unwrap();
    ///         let (pool, ran_on) = (&pool, &ran_on);
    ///         s.spawn_on(&place, move |_| {
    ///             let w = terroir::current_thread_index().unwrap();
    ///             ran_on.lock().unwrap().push((node, pool.worker_node_index(w).unwrap()));
    ///         });
    ///     }
    /// });
    /// for (asked, ran) in ran_on.into_inner().unwrap() {
    ///     assert_eq!(asked, ran);
    /// }
    /// ```
    ///
    /// A placed task runs on another worker (usually another node), so
    /// what it captures must be `Send`:
    ///
    /// ```compile_fail
    /// let pool = terroir::ThreadPoolBuilder::new().build().unwrap();
    /// let place = pool.node(0).unwrap();
    /// let rc = std::rc::Rc::new(1);
    /// pool.scope(|s| s.spawn_on(&place, move |_| println!("{}", rc)));
    /// ```
    ///
    /// and it may not borrow data that dies before the scope ends (here,
    /// `block` is freed at the end of each loop iteration while its task
    /// may still be queued on the block's node):
    ///
    /// ```compile_fail
    /// use terroir::pool::NodeVec;
    /// use terroir::Place;
    /// let pool = terroir::ThreadPoolBuilder::new().build().unwrap();
    /// let node = pool.topology().nodes()[0].id();
    /// pool.scope(|s| {
    ///     for _ in 0..4 {
    ///         let block = NodeVec::from_elem_on(0u64, 1024, node).unwrap();
    ///         s.spawn_on(&Place::data(&block), |_| println!("{}", block[0]));
    ///     }
    /// });
    /// ```
    ///
    /// Nor may two placed tasks write the same data:
    ///
    /// ```compile_fail
    /// let pool = terroir::ThreadPoolBuilder::new().build().unwrap();
    /// let place = pool.node(0).unwrap();
    /// let mut total = 0u64;
    /// pool.scope(|s| {
    ///     s.spawn_on(&place, |_| total += 1);
    ///     s.spawn_on(&place, |_| total += 2);
    /// });
    /// ```
    ///
    /// A place this pool cannot honour (made by another pool: a worker
    /// index beyond this pool's workers, a node outside its topology) is
    /// counted in [`PoolStats::unroutable`](crate::PoolStats::unroutable)
    /// and the task runs as an unplaced one;
    /// [`try_spawn_on`](Self::try_spawn_on) refuses it instead.
    pub fn spawn_on<BODY>(&self, place: &Place, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let body = ScopeBase::counted(self, body);
        // SAFETY: the job borrows only `'scope` data and the scope, both
        // alive until the count latch (which it decrements) reaches zero.
        unsafe { self.base.registry.spawn_placed(place, body) };
    }

    /// [`spawn_on`](Self::spawn_on), or an error (and nothing spawned) when
    /// the scope's pool cannot honour `place`.
    ///
    /// ```
    /// use terroir::numa::Topology;
    /// use terroir::{PlaceError, ThreadPoolBuilder};
    /// // A place on node 3 of a described four-node machine, used in a
    /// // pool on a two-node one.
    /// let four = Topology::builder().nodes(4).build().unwrap();
    /// let two = Topology::builder().nodes(2).build().unwrap();
    /// let big = ThreadPoolBuilder::new().topology(four).pin(false).build().unwrap();
    /// let small = ThreadPoolBuilder::new().topology(two).pin(false).build().unwrap();
    /// let place = big.node(3).unwrap();
    /// small.scope(|s| {
    ///     let err = s.try_spawn_on(&place, |_| {}).unwrap_err();
    ///     assert!(matches!(err, PlaceError::NodeNotInPool { nodes: 2, .. }));
    ///     s.spawn_on(&place, |_| {}); // runs, as an unplaced task
    /// });
    /// assert_eq!(small.stats().unroutable, 1);
    /// ```
    ///
    /// # Errors
    /// [`PlaceError::WorkerOutOfRange`] for a worker place beyond the
    /// pool's workers; [`PlaceError::NodeNotInPool`] for a node (or a data
    /// place's node) that is not in the pool's topology.
    pub fn try_spawn_on<BODY>(&self, place: &Place, body: BODY) -> Result<(), PlaceError>
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.base.registry.check_place(place)?;
        self.spawn_on(place, body);
        Ok(())
    }

    /// Spawns `body` on the shared queue of node `node` (an index into the
    /// pool topology's nodes), or like [`spawn`](Self::spawn) for `None`.
    pub(crate) fn spawn_to<BODY>(&self, node: Option<usize>, body: BODY)
    where
        BODY: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        let registry = &self.base.registry;
        let frame_node = match node {
            Some(n) if registry.is_pinned() => Some(registry.topology().nodes()[n].id()),
            _ => None,
        };
        let job = ScopeBase::job_ref(self, frame_node, body);
        match node {
            Some(n) => registry.push_to_node(n, job),
            None => registry.push_or_inject(job),
        }
    }
}

impl<'scope> ScopeBase<'scope> {
    pub(super) fn new(registry: &Arc<Registry>, owner: Option<&WorkerThread>) -> Self {
        ScopeBase {
            registry: Arc::clone(registry),
            panic: AtomicPtr::new(ptr::null_mut()),
            latch: CountLatch::new(registry, owner),
            marker: PhantomData,
        }
    }

    /// Counts one more job of `scope` and returns its body: `body` run on
    /// the scope, its panic kept for the scope's end, and the count taken
    /// back. `body` is dropped before the count is: whatever it owns may
    /// borrow `'scope` data until then.
    pub(super) fn counted<S, BODY>(scope: &S, body: BODY) -> impl FnOnce() + Send + 'scope
    where
        S: HasBase<'scope> + 'scope,
        BODY: FnOnce(&S) + Send + 'scope,
    {
        let ptr = ScopePtr(scope as *const S);
        scope.base().latch.increment();
        move || {
            let ptr = ptr;
            // SAFETY: the scope outlives its jobs: `complete` waits for the
            // count latch that this job decrements last.
            let scope = unsafe { &*ptr.0 };
            if let Err(p) = halt_unwinding(move || body(scope)) {
                scope.base().job_panicked(p);
            }
            // SAFETY: the latch lives in the scope, alive until it reaches 0.
            unsafe { CountLatch::set(&scope.base().latch) };
        }
    }

    /// [`counted`](Self::counted) as a job in a frame on `frame_node` (see
    /// [`HeapJob::into_job_ref`]).
    pub(super) fn job_ref<S, BODY>(
        scope: &S,
        frame_node: Option<crate::numa::NodeId>,
        body: BODY,
    ) -> JobRef
    where
        S: HasBase<'scope> + 'scope,
        BODY: FnOnce(&S) + Send + 'scope,
    {
        let job = HeapJob::new(Self::counted(scope, body));
        // SAFETY: the job borrows only `'scope` data and the scope, both
        // alive until the count latch (which it decrements) reaches zero.
        unsafe { job.into_job_ref(frame_node) }
    }

    fn job_panicked(&self, payload: Box<dyn Any + Send + 'static>) {
        let boxed = Box::into_raw(Box::new(payload));
        // AcqRel: the panic box is published to the thread that rethrows it.
        if self
            .panic
            .compare_exchange(ptr::null_mut(), boxed, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Not the first panic: drop it.
            // SAFETY: `boxed` came from Box::into_raw just above and was not
            // published.
            drop(unsafe { Box::from_raw(boxed) });
        }
    }

    /// Runs the body, waits for all spawned jobs, rethrows the first panic.
    /// `owner` is the calling thread's worker, if it is one (of any pool).
    pub(super) fn complete<R>(&self, owner: Option<&WorkerThread>, body: impl FnOnce() -> R) -> R {
        let result = match halt_unwinding(body) {
            Ok(r) => Some(r),
            Err(p) => {
                self.job_panicked(p);
                None
            }
        };
        // SAFETY: the latch is alive (we own the scope); this is the body's
        // own count.
        unsafe { CountLatch::set(&self.latch) };
        self.latch.wait(owner);
        let panic = self.panic.swap(ptr::null_mut(), Ordering::Acquire);
        if !panic.is_null() {
            // SAFETY: a non-null pointer was published by `job_panicked`
            // from Box::into_raw, and the swap gives it to us alone.
            let payload = unsafe { Box::from_raw(panic) };
            std::panic::resume_unwind(*payload);
        }
        result.expect("scope body completed without panicking")
    }
}

impl Drop for ScopeBase<'_> {
    fn drop(&mut self) {
        let panic = *self.panic.get_mut();
        if !panic.is_null() {
            // SAFETY: as in `complete`; reached only if `complete` itself
            // unwound before taking the panic.
            drop(unsafe { Box::from_raw(panic) });
        }
    }
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("num_threads", &self.base.registry.num_threads())
            .finish_non_exhaustive()
    }
}
