//! [`ThreadPoolBuilder`]: a pool's configuration and the errors of
//! building a pool. Its defaults and environment variables are resolved in
//! `config.rs`; the threads are started through `thread_builder.rs`.

use std::any::Any;
use std::fmt;
use std::io;

use super::config::Settings;
use super::policy::Policy;
use super::registry::{init_global, Registry};
use super::route::Distribution;
use super::thread_builder::{CustomSpawn, DefaultSpawn, ThreadBuilder, ThreadSpawn};
use super::thread_pool::ThreadPool;
use crate::numa::{NumaError, Topology};

/// A handler for panics of spawned jobs (see
/// [`ThreadPoolBuilder::panic_handler`]).
pub(crate) type PanicHandler = dyn Fn(Box<dyn Any + Send>) + Send + Sync;

/// A handler called with a worker's index when it starts or exits (see
/// [`ThreadPoolBuilder::start_handler`], [`ThreadPoolBuilder::exit_handler`]).
pub(crate) type ThreadHandler = dyn Fn(usize) + Send + Sync;

/// rayon-core's text for [`ThreadPoolBuildError::GlobalPoolAlreadyInitialized`].
const GLOBAL_POOL_ALREADY_INITIALIZED: &str =
    "The global thread pool has already been initialized.";

/// rayon-core's text for [`ThreadPoolBuildError::CurrentThreadAlreadyInPool`].
const CURRENT_THREAD_ALREADY_IN_POOL: &str =
    "The current thread is already part of another thread pool.";

/// Why a pool could not be built. Each variant names the input at fault.
/// The two errors rayon-core also has print rayon-core's texts.
#[derive(Debug)]
#[non_exhaustive]
pub enum ThreadPoolBuildError {
    /// [`ThreadPoolBuilder::build_global`] was called after the global pool
    /// had been built (explicitly or by first use).
    GlobalPoolAlreadyInitialized,
    /// [`ThreadPoolBuilder::use_current_thread`] on a thread that is a
    /// worker of a pool already.
    CurrentThreadAlreadyInPool,
    /// More workers than [`max_num_threads`](crate::max_num_threads) were
    /// asked for with [`ThreadPoolBuilder::num_threads`].
    TooManyThreads {
        /// The number asked for.
        requested: usize,
        /// [`max_num_threads`](crate::max_num_threads).
        max: usize,
    },
    /// The topology could not be discovered.
    Topology(NumaError),
    /// The process's cgroup CPU quota, which caps the default number of
    /// workers, could not be read (see [`cpu_quota`](crate::numa::cpu_quota)).
    CpuQuota(NumaError),
    /// An environment variable has a value that cannot be used.
    InvalidEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A worker could not be pinned to its CPUs (see [`Pinning`]).
    Pin {
        /// The worker's index.
        worker: usize,
        /// The OS CPU number of its processing unit (pinned to it alone, or
        /// to its cache group or node: [`Pinning`]).
        cpu: u32,
        /// The error from `sched_setaffinity`.
        source: NumaError,
    },
    /// A worker thread could not be started (by the default spawn handler,
    /// or the error a [`spawn_handler`](ThreadPoolBuilder::spawn_handler)
    /// returned).
    Spawn {
        /// The worker's index.
        worker: usize,
        /// The OS error.
        source: io::Error,
    },
}

impl fmt::Display for ThreadPoolBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::GlobalPoolAlreadyInitialized => f.write_str(GLOBAL_POOL_ALREADY_INITIALIZED),
            Self::CurrentThreadAlreadyInPool => f.write_str(CURRENT_THREAD_ALREADY_IN_POOL),
            Self::TooManyThreads { requested, max } => write!(
                f,
                "num_threads({requested}) is more than the {max} workers a pool may have \
                 (max_num_threads())"
            ),
            Self::Topology(e) => write!(f, "topology discovery failed: {e}"),
            Self::CpuQuota(e) => write!(f, "cannot read the cgroup CPU quota: {e}"),
            Self::InvalidEnv { var, value, reason } => {
                write!(f, "environment variable {var}={value:?}: {reason}")
            }
            Self::Pin {
                worker,
                cpu,
                source,
            } => write!(
                f,
                "cannot pin worker {worker} (its CPU {cpu}): {source} (use .pin(false) for \
                 described topologies)"
            ),
            Self::Spawn { worker, source } => {
                write!(f, "cannot start worker thread {worker}: {source}")
            }
        }
    }
}

impl std::error::Error for ThreadPoolBuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Topology(e) | Self::CpuQuota(e) | Self::Pin { source: e, .. } => Some(e),
            Self::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<NumaError> for ThreadPoolBuildError {
    fn from(e: NumaError) -> Self {
        ThreadPoolBuildError::Topology(e)
    }
}

/// Configures and builds a [`ThreadPool`] (or the global pool). Same names,
/// bounds and defaults as `rayon_core::ThreadPoolBuilder`, plus
/// [`topology`](Self::topology), [`policy`](Self::policy),
/// [`pin`](Self::pin), [`pinning`](Self::pinning),
/// [`distribution`](Self::distribution),
/// [`deque_order`](Self::deque_order) and
/// [`push_threshold`](Self::push_threshold).
///
/// Defaults: the machine's topology ([`Topology::detect`]; on a machine
/// whose sysfs has no NUMA information, every allowed CPU as one node, see
/// [`topology`](Self::topology)), one worker per allowed processing unit
/// within the process's cgroup CPU quota (`TERROIR_NUM_THREADS`, else
/// `RAYON_NUM_THREADS`, overrides), the [`Policy::Locality`] policy
/// (`TERROIR_POLICY` overrides), workers pinned when the topology is this
/// machine's, each to the processing units that share its PU's L3 cache
/// ([`Pinning::Cache`]; `TERROIR_PIN=0|1|pu|cache|node` overrides).
///
/// The type parameter is the spawn handler: the default one starts each
/// worker on a thread of its own; [`spawn_handler`](Self::spawn_handler)
/// replaces it.
///
/// ```
/// use terroir::{Policy, ThreadPoolBuilder};
/// let pool = ThreadPoolBuilder::new()
///     .num_threads(2)
///     .policy(Policy::Flat)
///     .thread_name(|i| format!("worker-{i}"))
///     .build()
///     .unwrap();
/// assert_eq!(pool.current_num_threads(), 2);
/// assert_eq!(pool.install(|| terroir::current_num_threads()), 2);
/// ```
pub struct ThreadPoolBuilder<S = DefaultSpawn> {
    settings: Settings,
    spawn_handler: S,
}

impl Default for ThreadPoolBuilder {
    fn default() -> Self {
        ThreadPoolBuilder {
            settings: Settings::default(),
            spawn_handler: DefaultSpawn,
        }
    }
}

/// Work-pushing ignores declared regions smaller than this (Drebes §7.2).
pub const DEFAULT_PUSH_THRESHOLD: usize = 10_000;

impl ThreadPoolBuilder {
    /// A builder with the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a pool whose workers run on scoped threads
    /// ([`std::thread::scope`]), each started by calling `wrapper` with its
    /// [`ThreadBuilder`] (which must call [`ThreadBuilder::run`]), and calls
    /// `with_pool` with it. The pool is dropped when `with_pool` returns,
    /// and this returns once every worker thread has exited, so the workers
    /// may borrow from the caller (thread-locals set up around `run`, for
    /// instance).
    ///
    /// ```
    /// use std::cell::Cell;
    /// thread_local!(static SETTING: Cell<u32> = const { Cell::new(0) });
    /// let setting = 7;
    /// let seen = terroir::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .build_scoped(
    ///         |thread| {
    ///             SETTING.with(|s| s.set(setting)); // every worker sees it
    ///             thread.run()
    ///         },
    ///         |pool| pool.install(|| SETTING.with(Cell::get)),
    ///     )
    ///     .unwrap();
    /// assert_eq!(seen, 7);
    /// ```
    ///
    /// # Errors
    /// As [`build`](ThreadPoolBuilder::build); a thread that cannot be
    /// started is [`ThreadPoolBuildError::Spawn`].
    pub fn build_scoped<W, F, R>(self, wrapper: W, with_pool: F) -> Result<R, ThreadPoolBuildError>
    where
        W: Fn(ThreadBuilder) + Sync,
        F: FnOnce(&ThreadPool) -> R,
    {
        std::thread::scope(|scope| {
            let wrapper = &wrapper;
            let pool = self
                .spawn_handler(|thread: ThreadBuilder| {
                    let mut b = std::thread::Builder::new();
                    if let Some(name) = thread.name() {
                        b = b.name(name.to_owned());
                    }
                    if let Some(size) = thread.stack_size() {
                        b = b.stack_size(size);
                    }
                    b.spawn_scoped(scope, move || wrapper(thread)).map(drop)
                })
                .build()?;
            Ok(with_pool(&pool))
        })
    }
}

impl<S> ThreadPoolBuilder<S> {
    /// Number of workers; 0 (the default) means `TERROIR_NUM_THREADS` if
    /// set, else `RAYON_NUM_THREADS` if set, else one per allowed
    /// processing unit (at most the process's cgroup CPU quota, rounded
    /// up, as [`std::thread::available_parallelism`] counts). More workers
    /// than PUs share PUs. More than [`max_num_threads`](crate::max_num_threads)
    /// is an error when the pool is built (rayon-core lowers the count
    /// silently).
    pub fn num_threads(mut self, n: usize) -> Self {
        self.settings.num_threads = n;
        self
    }

    /// Makes the calling thread worker 0 of the pool, so that only
    /// `num_threads - 1` threads are started. The thread stays a worker of
    /// the pool for the rest of its life (it is not given back when the
    /// pool is dropped, as in rayon-core); it runs the pool's work only
    /// while it waits in the pool (a `join`, a `scope`, an `install`, ...).
    /// It is not pinned (its affinity mask stays the caller's), and it is
    /// seated on the node of the CPU it runs on when the pool is built.
    /// Work sent to worker 0 alone (a task placed strictly on it, a
    /// [`Schedule::Static`](crate::iter::Schedule::Static) loop's first
    /// share) waits while the thread is busy outside the pool.
    ///
    /// # Errors
    /// Building fails with [`ThreadPoolBuildError::CurrentThreadAlreadyInPool`]
    /// on a thread that is a worker already.
    pub fn use_current_thread(mut self) -> Self {
        self.settings.use_current_thread = true;
        self
    }

    /// Names worker threads: `f(index)`.
    pub fn thread_name<F>(mut self, f: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.settings.thread_name = Some(Box::new(f));
        self
    }

    /// Stack size of worker threads, in bytes.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.settings.stack_size = Some(bytes);
        self
    }

    /// Handler for panics of [`spawn`](crate::spawn)ed jobs (and of the
    /// start and exit handlers). Without one, such a panic aborts the
    /// process (as in rayon), since nothing could observe it; if the
    /// handler itself panics, the process aborts too.
    pub fn panic_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.settings.panic_handler = Some(Box::new(handler));
        self
    }

    /// A function each worker calls with its index when it starts, before
    /// it runs any job (after the pool's `build` has seen it pinned, so a
    /// start handler may wait for the builder's thread). A panic in it goes
    /// to the [`panic_handler`](Self::panic_handler); if that returns, the
    /// worker starts normally.
    pub fn start_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.settings.start_handler = Some(Box::new(handler));
        self
    }

    /// A function each worker calls with its index when it exits (after
    /// the pool is dropped and its work is done). A panic in it goes to the
    /// [`panic_handler`](Self::panic_handler); if that returns, the worker
    /// exits normally.
    pub fn exit_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(usize) + Send + Sync + 'static,
    {
        self.settings.exit_handler = Some(Box::new(handler));
        self
    }

    /// Replaces the way worker threads are started: `spawn` is called (on
    /// the thread that builds the pool, in index order) with each worker's
    /// [`ThreadBuilder`] and must call [`ThreadBuilder::run`] on a thread
    /// of its own, which runs the worker until the pool is dropped. An
    /// error it returns comes back from `build` as
    /// [`ThreadPoolBuildError::Spawn`] (the workers started so far exit).
    ///
    /// `build` returns once every worker has started (pinned itself), so
    /// `spawn` must not keep the builder to run it after `build` returns:
    /// `build` would wait for it forever.
    ///
    /// What a handler may change: the thread itself (its name, stack size,
    /// thread-locals and anything else set up on it before `run`), and
    /// what it does after `run` returns. What it may not: where the worker
    /// runs. `run` pins the thread to the worker's CPUs ([`Pinning`]) when
    /// the pool pins (and gives the thread its previous affinity back when
    /// it returns), and the worker's node is the node of that unit, as for
    /// any other worker: places, node queues and statistics rely on it.
    /// With `pin(false)` a handler that binds its threads elsewhere leaves
    /// the pool's idea of each worker's node wrong.
    ///
    /// ```
    /// let mut started = Vec::new();
    /// let pool = terroir::ThreadPoolBuilder::new()
    ///     .num_threads(2)
    ///     .spawn_handler(|thread| {
    ///         started.push(thread.index());
    ///         std::thread::Builder::new().spawn(|| thread.run())?;
    ///         Ok(())
    ///     })
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(started, [0, 1]);
    /// assert_eq!(pool.install(|| terroir::current_num_threads()), 2);
    /// ```
    pub fn spawn_handler<F>(self, spawn: F) -> ThreadPoolBuilder<CustomSpawn<F>>
    where
        F: FnMut(ThreadBuilder) -> io::Result<()>,
    {
        ThreadPoolBuilder {
            settings: self.settings,
            spawn_handler: CustomSpawn::new(spawn),
        }
    }

    /// The topology to schedule on: this machine's by default, or a
    /// described one (then workers are not pinned unless [`pin`](Self::pin)
    /// says so).
    ///
    /// On a machine whose sysfs has no NUMA information (some containers and
    /// VMs), the default is every CPU the process may use as one node, and
    /// the pool's [`topology`](ThreadPool::topology) says so in its
    /// [source](Topology::source)
    /// ([`TopologySource::SingleNodeFallback`](crate::numa::TopologySource::SingleNodeFallback),
    /// with the reason). [`Topology::detect`] itself returns the error.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.settings.topology = Some(topology);
        self
    }

    /// The stealing policy (default [`Policy::Locality`], or
    /// `TERROIR_POLICY`).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.settings.policy = Some(policy);
        self
    }

    /// Whether to pin the workers (to the CPUs [`pinning`](Self::pinning)
    /// says, by default [`Pinning::Cache`]). Default: pinned when the
    /// topology is this machine's (`TERROIR_PIN=0` or `1` overrides the
    /// default; `pu`, `cache` or `node` pins at that granularity).
    /// Pinning a described topology's CPUs fails with
    /// [`ThreadPoolBuildError::Pin`] when they do not exist.
    pub fn pin(mut self, pin: bool) -> Self {
        self.settings.pin = Some(pin);
        self
    }

    /// Pins the workers, each to the CPUs `pinning` names (see
    /// [`Pinning`]); `TERROIR_PIN` does not override it. Like
    /// [`pin(true)`](Self::pin), it undoes an earlier `pin(false)` (the
    /// last call wins).
    ///
    /// ```
    /// use terroir::{Pinning, ThreadPoolBuilder};
    /// let pool = ThreadPoolBuilder::new()
    ///     .num_threads(1)
    ///     .pinning(Pinning::Pu)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(pool.pinning(), Some(Pinning::Pu));
    /// let cpu = pool.worker_cpu(0).unwrap();
    /// assert_eq!(pool.worker_cpus(0).unwrap().iter().collect::<Vec<_>>(), [cpu]);
    /// ```
    pub fn pinning(mut self, pinning: Pinning) -> Self {
        self.settings.pin = Some(true);
        self.settings.pinning = Some(pinning);
        self
    }

    /// How placed tasks are spread over their node's workers (default
    /// [`Distribution::SharedQueue`]; parallel loops' node shares always
    /// use the node's queue).
    pub fn distribution(mut self, distribution: Distribution) -> Self {
        self.settings.distribution = distribution;
        self
    }

    /// The order in which each worker takes jobs from its own deque
    /// (default [`DequeOrder::Lifo`], depth-first). `Fifo` is there to
    /// compare queue disciplines in benchmarks; `join` continuations stay
    /// private either way until a thief asks for one. For FIFO order of
    /// some tasks only, use [`spawn_fifo`](crate::spawn_fifo) and
    /// [`scope_fifo`](crate::scope_fifo).
    pub fn deque_order(mut self, order: DequeOrder) -> Self {
        self.settings.deque_order = order;
        self
    }

    /// Work-pushing ([`Place::pushed`](crate::Place::pushed)) ignores declared regions smaller
    /// than `bytes` (default [`DEFAULT_PUSH_THRESHOLD`], 10 kB).
    pub fn push_threshold(mut self, bytes: usize) -> Self {
        self.settings.push_threshold = Some(bytes);
        self
    }
}

impl<S: ThreadSpawn> ThreadPoolBuilder<S> {
    /// Builds a pool.
    ///
    /// # Errors
    /// See [`ThreadPoolBuildError`].
    ///
    /// # Panics
    /// Propagates a panic of the [`thread_name`](Self::thread_name)
    /// closure or of the spawn handler; the workers started so far exit.
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        Ok(ThreadPool {
            registry: Registry::new(self.settings, self.spawn_handler)?,
        })
    }

    /// Builds the global pool used by [`join`](crate::join),
    /// [`scope`](crate::scope) and [`spawn`](crate::spawn) outside any pool.
    ///
    /// # Errors
    /// [`ThreadPoolBuildError::GlobalPoolAlreadyInitialized`] if it exists
    /// already; otherwise as [`build`](Self::build).
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        init_global(self.settings, self.spawn_handler)
    }
}

impl<S> fmt::Debug for ThreadPoolBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.settings.fmt(f)
    }
}

/// The CPUs a pinned worker may run on. Each worker has a seat, one
/// processing unit (PU) of its node ([`ThreadPool::worker_cpu`]); pinning
/// binds it to that PU alone, or to the PUs around it, among which the
/// operating system moves it as it balances load. The worker's node never
/// changes: places, first touch and the locality statistics hold at every
/// granularity.
///
/// [`ThreadPool::worker_cpu`]: crate::ThreadPool::worker_cpu
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Pinning {
    /// Its PU alone (OpenMP's `OMP_PLACES=threads`). A thread outside the
    /// pool that runs on that PU (the program's main thread, calling into
    /// the pool) competes with the worker there, which cannot move away:
    /// measured on a 2-CPU machine, calls into the pool from outside took
    /// 1.5 times as long on average as with [`Cache`](Self::Cache).
    Pu,
    /// The PUs that share its PU's last-level (L3) cache, within its node
    /// (OpenMP's `ll_caches`): the default. A worker keeps its cache and
    /// its node, and the operating system can still move it off a PU that
    /// another thread needs.
    #[default]
    Cache,
    /// Every PU of its node (OpenMP's `numa_domains`).
    Node,
}

impl Pinning {
    /// The name `TERROIR_PIN` takes for it: `pu`, `cache` or `node`.
    pub fn name(self) -> &'static str {
        match self {
            Pinning::Pu => "pu",
            Pinning::Cache => "cache",
            Pinning::Node => "node",
        }
    }
}

/// The order in which a worker takes jobs from its own deque: spawned
/// tasks, promoted `join` continuations and tasks taken from a queue.
/// Thieves always take the oldest job. This is the queue-discipline
/// dimension of Qawasmeh et al.: newest first explores the task tree depth
/// first (the work-first order of Cilk and rayon, which keeps the working
/// set small), oldest first explores it breadth first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DequeOrder {
    /// Newest job first: depth-first (the default, as in rayon).
    #[default]
    Lifo,
    /// Oldest job first: breadth-first.
    Fifo,
}

impl DequeOrder {
    /// `"lifo"` or `"fifo"`.
    pub fn name(self) -> &'static str {
        match self {
            DequeOrder::Lifo => "lifo",
            DequeOrder::Fifo => "fifo",
        }
    }
}
