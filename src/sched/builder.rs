//! [`ThreadPoolBuilder`]: a pool's configuration, its defaults and
//! environment variables, and the errors of building a pool.

use std::any::Any;
use std::fmt;
use std::io;

use super::policy::{ParsePolicyError, Policy};
use super::registry::{init_global, Registry};
use super::route::Distribution;
use super::thread_pool::ThreadPool;
use crate::numa::{NumaError, Topology};

/// A handler for panics of spawned jobs (see
/// [`ThreadPoolBuilder::panic_handler`]).
pub(crate) type PanicHandler = dyn Fn(Box<dyn Any + Send>) + Send + Sync;

/// Why a pool could not be built. Each variant names the input at fault.
#[derive(Debug)]
#[non_exhaustive]
pub enum ThreadPoolBuildError {
    /// [`ThreadPoolBuilder::build_global`] was called after the global pool
    /// had been built (explicitly or by first use).
    GlobalPoolAlreadyInitialized,
    /// The topology could not be discovered.
    Topology(NumaError),
    /// An environment variable has a value that cannot be used.
    InvalidEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A worker could not be pinned to its processing unit.
    Pin {
        /// The worker's index.
        worker: usize,
        /// The OS CPU number it was to be pinned to.
        cpu: u32,
        /// The error from `sched_setaffinity`.
        source: NumaError,
    },
    /// A worker thread could not be started.
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
            Self::GlobalPoolAlreadyInitialized => {
                f.write_str("the global thread pool has already been initialized")
            }
            Self::Topology(e) => write!(f, "topology discovery failed: {e}"),
            Self::InvalidEnv { var, value, reason } => {
                write!(f, "environment variable {var}={value:?}: {reason}")
            }
            Self::Pin {
                worker,
                cpu,
                source,
            } => write!(
                f,
                "cannot pin worker {worker} to CPU {cpu}: {source} (use .pin(false) for \
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
            Self::Topology(e) | Self::Pin { source: e, .. } => Some(e),
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

/// Configures and builds a [`ThreadPool`] (or the global pool). Same names
/// as `rayon::ThreadPoolBuilder`, plus [`topology`](Self::topology),
/// [`policy`](Self::policy) and [`pin`](Self::pin).
///
/// Defaults: the machine's topology ([`Topology::detect`]), one worker per
/// allowed processing unit (`TERROIR_NUM_THREADS` overrides), the
/// [`Policy::Hierarchical`] policy (`TERROIR_POLICY` overrides), workers
/// pinned to their PU when the topology is this machine's.
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
#[derive(Default)]
pub struct ThreadPoolBuilder {
    num_threads: usize,
    thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    stack_size: Option<usize>,
    topology: Option<Topology>,
    policy: Option<Policy>,
    pin: Option<bool>,
    panic_handler: Option<Box<PanicHandler>>,
    distribution: Distribution,
    deque_order: DequeOrder,
    push_threshold: Option<usize>,
}

/// A builder with every default resolved.
pub(crate) struct Config {
    pub(crate) num_threads: usize,
    pub(crate) thread_name: Option<Box<dyn FnMut(usize) -> String>>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) topology: Topology,
    pub(crate) policy: Policy,
    pub(crate) pin: bool,
    pub(crate) panic_handler: Option<Box<PanicHandler>>,
    pub(crate) distribution: Distribution,
    pub(crate) deque_order: DequeOrder,
    pub(crate) push_threshold: u64,
}

/// Work-pushing ignores declared regions smaller than this (Drebes §7.2).
pub const DEFAULT_PUSH_THRESHOLD: usize = 10_000;

fn env(var: &'static str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

impl ThreadPoolBuilder {
    /// A builder with the defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of workers; 0 (the default) means `TERROIR_NUM_THREADS` if set,
    /// else one per allowed processing unit. More workers than PUs share PUs.
    pub fn num_threads(mut self, n: usize) -> Self {
        self.num_threads = n;
        self
    }

    /// Names worker threads: `f(index)`.
    pub fn thread_name<F>(mut self, f: F) -> Self
    where
        F: FnMut(usize) -> String + 'static,
    {
        self.thread_name = Some(Box::new(f));
        self
    }

    /// Stack size of worker threads, in bytes.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Handler for panics of [`spawn`](crate::spawn)ed jobs. Without one, such a panic
    /// aborts the process (as in rayon), since nothing could observe it.
    pub fn panic_handler<H>(mut self, handler: H) -> Self
    where
        H: Fn(Box<dyn Any + Send>) + Send + Sync + 'static,
    {
        self.panic_handler = Some(Box::new(handler));
        self
    }

    /// The topology to schedule on: this machine's by default, or a
    /// described one (then workers are not pinned unless [`pin`](Self::pin)
    /// says so).
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// The stealing policy (default [`Policy::Hierarchical`], or
    /// `TERROIR_POLICY`).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Whether to pin each worker to its processing unit. Default: pinned
    /// when the topology is this machine's. Pinning a described topology's
    /// CPUs fails with [`ThreadPoolBuildError::Pin`] when they do not exist.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = Some(pin);
        self
    }

    /// How placed tasks are spread over their node's workers (default
    /// [`Distribution::SharedQueue`]); only the `Locality` policies place.
    pub fn distribution(mut self, distribution: Distribution) -> Self {
        self.distribution = distribution;
        self
    }

    /// The order in which each worker takes jobs from its own deque
    /// (default [`DequeOrder::Lifo`], depth-first). `Fifo` is there to
    /// compare queue disciplines in benchmarks; `join` continuations stay
    /// private either way until a thief asks for one.
    pub fn deque_order(mut self, order: DequeOrder) -> Self {
        self.deque_order = order;
        self
    }

    /// Work-pushing ([`Place::pushed`](crate::Place::pushed)) ignores declared regions smaller
    /// than `bytes` (default [`DEFAULT_PUSH_THRESHOLD`], 10 kB).
    pub fn push_threshold(mut self, bytes: usize) -> Self {
        self.push_threshold = Some(bytes);
        self
    }

    /// Builds a pool.
    ///
    /// # Errors
    /// See [`ThreadPoolBuildError`].
    pub fn build(self) -> Result<ThreadPool, ThreadPoolBuildError> {
        Ok(ThreadPool {
            registry: Registry::new(self)?,
        })
    }

    /// Builds the global pool used by [`join`](crate::join),
    /// [`scope`](crate::scope) and [`spawn`](crate::spawn) outside any pool.
    ///
    /// # Errors
    /// [`ThreadPoolBuildError::GlobalPoolAlreadyInitialized`] if it exists
    /// already; otherwise as [`build`](Self::build).
    pub fn build_global(self) -> Result<(), ThreadPoolBuildError> {
        init_global(self)
    }

    pub(crate) fn resolve(self) -> Result<Config, ThreadPoolBuildError> {
        let topology = match self.topology {
            Some(t) => t,
            None => Topology::detect()?,
        };
        let num_threads = match (self.num_threads, env("TERROIR_NUM_THREADS")) {
            (0, Some(v)) => match v.trim().parse::<usize>() {
                Ok(0) => topology.pus().len(),
                Ok(n) => n,
                Err(e) => {
                    return Err(ThreadPoolBuildError::InvalidEnv {
                        var: "TERROIR_NUM_THREADS",
                        value: v,
                        reason: format!("not a thread count ({e})"),
                    })
                }
            },
            (0, None) => topology.pus().len(),
            (n, _) => n,
        };
        let policy = match (self.policy, env("TERROIR_POLICY")) {
            (Some(p), _) => p,
            (None, Some(v)) => {
                v.parse()
                    .map_err(|e: ParsePolicyError| ThreadPoolBuildError::InvalidEnv {
                        var: "TERROIR_POLICY",
                        value: v.clone(),
                        reason: e.to_string(),
                    })?
            }
            (None, None) => Policy::default(),
        };
        let pin = self.pin.unwrap_or_else(|| topology.is_this_machine());
        Ok(Config {
            num_threads,
            thread_name: self.thread_name,
            stack_size: self.stack_size,
            topology,
            policy,
            pin,
            panic_handler: self.panic_handler,
            distribution: self.distribution,
            deque_order: self.deque_order,
            push_threshold: self.push_threshold.unwrap_or(DEFAULT_PUSH_THRESHOLD) as u64,
        })
    }
}

impl fmt::Debug for ThreadPoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBuilder")
            .field("num_threads", &self.num_threads)
            .field("stack_size", &self.stack_size)
            .field("policy", &self.policy)
            .field("pin", &self.pin)
            .field("topology", &self.topology.as_ref().map(|t| t.source()))
            .finish_non_exhaustive()
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
