//! Starting worker threads: the [`ThreadBuilder`] a spawn handler gets for
//! each worker, the default handler and the custom one of
//! [`ThreadPoolBuilder::spawn_handler`](crate::ThreadPoolBuilder::spawn_handler),
//! and what a worker does before and after its main loop (pinning, the
//! start and exit handlers).

use std::fmt;
use std::io;
use std::sync::{mpsc, Arc};

use crossbeam_deque::Worker;

use super::builder::ThreadPoolBuildError;
use super::job::JobRef;
use super::registry::Registry;
use super::worker::WorkerThread;
use crate::numa::{self, CpuSet};

/// What a worker reports to the thread building its pool once it has
/// pinned itself: its index, or why it could not start.
pub(crate) type Started = Result<usize, ThreadPoolBuildError>;

/// One worker of a pool being built, handed to the spawn handler
/// ([`ThreadPoolBuilder::spawn_handler`](crate::ThreadPoolBuilder::spawn_handler)),
/// which must call [`run`](Self::run) on a thread of its own.
pub struct ThreadBuilder {
    pub(crate) name: Option<String>,
    pub(crate) stack_size: Option<usize>,
    pub(crate) index: usize,
    pub(crate) registry: Arc<Registry>,
    pub(crate) deque: Worker<JobRef>,
    pub(crate) started: mpsc::Sender<Started>,
}

impl ThreadBuilder {
    /// The worker's index in its pool, in `0..num_threads`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The name [`ThreadPoolBuilder::thread_name`](crate::ThreadPoolBuilder::thread_name)
    /// gave this worker, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The stack size [`ThreadPoolBuilder::stack_size`](crate::ThreadPoolBuilder::stack_size)
    /// asked for, if any.
    pub fn stack_size(&self) -> Option<usize> {
        self.stack_size
    }

    /// Runs the worker on the calling thread until the pool is dropped and
    /// its work is done: pins the thread to the worker's CPUs ([`Pinning`](crate::Pinning))
    /// (when the pool pins; the thread's previous affinity is restored
    /// before this returns), calls the start handler, runs jobs, calls the
    /// exit handler. Afterwards the thread is no longer a worker
    /// ([`current_thread_index`](crate::current_thread_index) is `None`).
    pub fn run(self) {
        let ThreadBuilder {
            index,
            registry,
            deque,
            started,
            ..
        } = self;
        let cpu = registry.worker_cpu(index);
        let previous = if registry.is_pinned() {
            numa::allowed_cpus().ok()
        } else {
            None
        };
        let pinned = match registry.pin_target(index) {
            // Its own PU first, so that a PU this machine lacks fails
            // naming it; then the CPUs around it (the kernel keeps those
            // that exist and the process may use).
            Some(target) => numa::bind_current_thread(&CpuSet::from_iter([cpu])).and_then(|()| {
                let around: CpuSet = target
                    .iter()
                    .filter(|&c| (c as usize) < numa::MAX_BIND_CPUS)
                    .collect();
                if around.len() > 1 {
                    numa::bind_current_thread(&around)?;
                }
                let bound = numa::allowed_cpus().unwrap_or(around);
                registry.set_worker_cpus(index, bound);
                Ok(())
            }),
            None => Ok(()),
        };
        let ok = pinned.is_ok();
        if ok && registry.is_pinned() {
            // Task frames and other small allocations of this worker come
            // from its node's slabs. If the process may not allocate on
            // that node (a cpuset with the CPU but not the memory), the slab
            // pool keeps its documented choice: the lowest allowed node
            // (`thread_node`).
            let node = registry.topology().nodes()[registry.worker_node(index)].id();
            let _ = crate::pool::set_thread_node(node);
        }
        // The builder may have given up already (another worker failed):
        // then nobody listens, and the pool is terminating.
        let _ = started.send(
            pinned
                .map(|()| index)
                .map_err(|source| ThreadPoolBuildError::Pin {
                    worker: index,
                    cpu,
                    source,
                }),
        );
        drop(started);
        if ok {
            WorkerThread::run(registry, index, deque);
        }
        if let Some(mask) = previous {
            let _ = numa::bind_current_thread(&mask);
        }
    }
}

impl fmt::Debug for ThreadBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadBuilder")
            .field("index", &self.index)
            .field("name", &self.name)
            .field("stack_size", &self.stack_size)
            .finish_non_exhaustive()
    }
}

mod sealed {
    pub trait Sealed {}
}

/// How a pool starts its worker threads: [`DefaultSpawn`] or the
/// [`CustomSpawn`] of
/// [`ThreadPoolBuilder::spawn_handler`](crate::ThreadPoolBuilder::spawn_handler).
/// Sealed: the builder's type parameter, not a trait to implement.
pub trait ThreadSpawn: sealed::Sealed {
    /// Starts a thread that calls [`ThreadBuilder::run`].
    ///
    /// # Errors
    /// The OS error of starting the thread.
    fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()>;
}

/// The default spawn handler: a `std::thread` per worker, with the name and
/// stack size of the builder.
#[derive(Debug, Default)]
pub struct DefaultSpawn;

impl sealed::Sealed for DefaultSpawn {}

impl ThreadSpawn for DefaultSpawn {
    fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()> {
        let mut b = std::thread::Builder::new();
        if let Some(name) = thread.name() {
            b = b.name(name.to_owned());
        }
        if let Some(size) = thread.stack_size() {
            b = b.stack_size(size);
        }
        b.spawn(move || thread.run()).map(drop)
    }
}

/// A spawn handler given to
/// [`ThreadPoolBuilder::spawn_handler`](crate::ThreadPoolBuilder::spawn_handler).
pub struct CustomSpawn<F>(F);

impl<F> CustomSpawn<F>
where
    F: FnMut(ThreadBuilder) -> io::Result<()>,
{
    pub(crate) fn new(spawn: F) -> Self {
        CustomSpawn(spawn)
    }
}

impl<F> sealed::Sealed for CustomSpawn<F> {}

impl<F> ThreadSpawn for CustomSpawn<F>
where
    F: FnMut(ThreadBuilder) -> io::Result<()>,
{
    fn spawn(&mut self, thread: ThreadBuilder) -> io::Result<()> {
        (self.0)(thread)
    }
}

impl<F> fmt::Debug for CustomSpawn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CustomSpawn(<closure>)")
    }
}
