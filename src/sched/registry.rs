//! The registry: a pool's shared state (workers, queues, sleep state,
//! steal plans), the global pool, starting and stopping the workers, and
//! entering the pool from outside.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use crossbeam_deque::{Injector, Worker};
use crossbeam_utils::CachePadded;

use super::builder::{DequeOrder, PanicHandler, Pinning, ThreadHandler, ThreadPoolBuildError};
use super::config::{Config, Settings};
use super::job::{HeapJob, JobRef, StackJob};
use super::latch::{LockLatch, WorkerLatch};
use super::place::Place;
use super::policy::{Policy, Seat, StealPlan};
use super::record::{
    self, Owner, PoolMeta, PoolRecorder, RecordError, RecordOptions, Recording, Slot,
};
use super::route::PlacedTask;
use super::route::{Distribution, RECENT_SLOTS};
use super::sleep::Sleep;
use super::stats::WorkerStats;
use super::thread_builder::{DefaultSpawn, ThreadBuilder, ThreadSpawn};
use super::unwind::{abort_with, halt_unwinding, AbortOnUnwind, PanicHandlerReturns};
use super::worker::{WorkerInfo, WorkerThread};
use crate::numa::{self, CpuSet, Topology};

/// A pool's shared state.
pub(crate) struct Registry {
    pub(super) workers: Vec<CachePadded<WorkerInfo>>,
    /// Work injected from outside the pool (and first-touch shares) for a
    /// node: its workers look first, any thief may take it.
    pub(super) node_queues: Vec<CachePadded<Injector<JobRef>>>,
    /// Placed tasks (hints) for a node: its workers look first; another
    /// node's thief takes one as [`Registry::hint_for_thief`] says.
    pub(super) hint_queues: Vec<CachePadded<Injector<JobRef>>>,
    /// Placed tasks only the node's workers may run.
    pub(super) strict_queues: Vec<CachePadded<Injector<JobRef>>>,
    /// Per node index, a running mean of how long its placed tasks ran
    /// (ns; 0 before the first), when `time_hints`.
    pub(super) hint_ns: Vec<CachePadded<AtomicU64>>,
    /// Whether other nodes may take hints (the `Locality` policy): then
    /// some placed tasks are timed and jobs counted, for
    /// [`Registry::hint_for_thief`].
    pub(super) time_hints: bool,
    /// Per worker, the `job_seq` a thief last saw and when it first saw
    /// it (`record::now_ns()`): how long the worker has been in its
    /// current job, at least. Written by thieves only.
    pub(super) job_seen: Vec<CachePadded<(AtomicU64, AtomicU64)>>,
    /// Workers of each node index.
    pub(super) node_workers: Vec<Vec<usize>>,
    /// For each node index: itself if it has workers, else the nearest
    /// node index that has.
    pub(super) redirect: Vec<usize>,
    /// The node indices that have workers (candidates of work-pushing).
    pub(super) nodes_with_workers: Vec<usize>,
    pub(super) recent: Box<[AtomicUsize]>,
    pub(super) distribution: Distribution,
    pub(super) round_robin: Vec<CachePadded<AtomicUsize>>,
    pub(super) push_threshold: u64,
    pub(crate) sleep: Sleep,
    /// Fewer workers than the CPUs the process may use: a thread outside
    /// the pool that spins while it waits takes no CPU from the workers.
    pub(super) spare_cpus: bool,
    pub(super) plans: Vec<StealPlan>,
    pub(super) topology: Topology,
    pub(super) policy: Policy,
    /// node index of each OS CPU number, for injection from outside.
    pub(super) cpu_node: Vec<Option<usize>>,
    pub(super) inject_round_robin: AtomicUsize,
    /// Placed spawns whose place this pool cannot honour (see
    /// [`Registry::check_place`]).
    pub(super) unroutable: AtomicU64,
    /// 1 for the pool handle + 1 per outstanding global spawn.
    pub(super) terminate_count: AtomicUsize,
    pub(super) terminating: AtomicBool,
    pub(super) panic_handler: Option<Box<PanicHandler>>,
    /// Called by each worker with its index when it starts and exits.
    pub(super) start_handler: Option<Box<ThreadHandler>>,
    pub(super) exit_handler: Option<Box<ThreadHandler>>,
    /// Held while a broadcast's jobs are pushed, so that every worker
    /// receives concurrent broadcasts in the same order (see
    /// `broadcast.rs`).
    pub(super) broadcast_lock: Mutex<()>,
    pub(super) pinned: bool,
    /// How each worker is pinned, when the pool pins.
    pub(super) pinning: Pinning,
    pub(super) recorder: PoolRecorder,
    /// A word the C API tags its pools with (their handles), so that it
    /// knows the pool of the calling worker without a lookup; 0: untagged.
    pub(super) tag: AtomicUsize,
}

static GLOBAL: OnceLock<Arc<Registry>> = OnceLock::new();
static GLOBAL_INIT: Mutex<()> = Mutex::new(());

/// The global pool's registry, built with the default builder on first use.
///
/// # Panics
/// If the default pool cannot be built (an environment variable with a bad
/// value, a garbled sysfs file, no thread could be started); the message
/// names the cause and the way out. A machine without NUMA information is
/// not a cause: the default topology is then one node.
pub(crate) fn global_registry() -> &'static Arc<Registry> {
    if let Some(r) = GLOBAL.get() {
        return r;
    }
    let _guard = GLOBAL_INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = GLOBAL.get() {
        return r;
    }
    match Registry::new(Settings::default(), DefaultSpawn) {
        Ok(r) => {
            let r = GLOBAL.get_or_init(|| r);
            record::env::global_pool_built(r);
            r
        }
        Err(e) => panic!(
            "terroir: the global thread pool could not be built: {e}. Configure it \
             explicitly with ThreadPoolBuilder::new()...build_global() before first use"
        ),
    }
}

/// Installs the pool of `settings` and `spawn` as the global one.
pub(crate) fn init_global<S: ThreadSpawn>(
    settings: Settings,
    spawn: S,
) -> Result<(), ThreadPoolBuildError> {
    let _guard = GLOBAL_INIT.lock().unwrap_or_else(|e| e.into_inner());
    if GLOBAL.get().is_some() {
        return Err(ThreadPoolBuildError::GlobalPoolAlreadyInitialized);
    }
    let registry = Registry::new(settings, spawn)?;
    GLOBAL
        .set(registry)
        .map_err(|_| ThreadPoolBuildError::GlobalPoolAlreadyInitialized)?;
    if let Some(r) = GLOBAL.get() {
        record::env::global_pool_built(r);
    }
    Ok(())
}

/// The order in which workers take PUs: round-robin over nodes, and inside
/// a node round-robin over its L3 groups, so that `n` workers spread over
/// the machine and SMT siblings (listed last by Linux) are used last.
fn pu_order(topo: &Topology) -> Vec<usize> {
    let per_node: Vec<Vec<usize>> = topo
        .nodes()
        .iter()
        .map(|node| {
            let groups: Vec<Vec<usize>> = node
                .l3_groups()
                .iter()
                .map(|&g| {
                    (0..topo.pus().len())
                        .filter(|&p| topo.pus()[p].l3_group_index() == g)
                        .collect()
                })
                .collect();
            interleave(groups)
        })
        .collect();
    interleave(per_node)
}

fn interleave(lists: Vec<Vec<usize>>) -> Vec<usize> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    (0..longest)
        .flat_map(|i| lists.iter().filter_map(move |l| l.get(i).copied()))
        .collect()
}

impl Registry {
    /// Builds the registry and starts (and, if asked, pins) its workers
    /// through `spawn`; with `use_current_thread`, the calling thread
    /// becomes worker 0. Returns once every started worker has pinned
    /// itself (or failed to). If this returns an error or unwinds (a
    /// panicking `thread_name` closure or spawn handler), the pool
    /// terminates: the workers started so far exit.
    pub(crate) fn new<S: ThreadSpawn>(
        settings: Settings,
        mut spawn: S,
    ) -> Result<Arc<Registry>, ThreadPoolBuildError> {
        let mut config = settings.resolve()?;
        if config.use_current_thread && WorkerThread::current().is_some() {
            return Err(ThreadPoolBuildError::CurrentThreadAlreadyInPool);
        }
        let mut thread_name = config.thread_name.take();
        let stack_size = config.stack_size;
        let use_current_thread = config.use_current_thread;
        let (registry, deques) = Registry::create(config);
        let terminate = TerminateOnDrop(&registry);
        let (started_tx, started) = mpsc::channel();
        let mut current = None;
        let mut spawned = Vec::new();
        for (index, deque) in deques.into_iter().enumerate() {
            if index == 0 && use_current_thread {
                current = Some(deque);
                continue;
            }
            let thread = ThreadBuilder {
                name: thread_name.as_mut().map(|name| name(index)),
                stack_size,
                index,
                registry: Arc::clone(&registry),
                deque,
                started: started_tx.clone(),
            };
            spawn
                .spawn(thread)
                .map_err(|source| ThreadPoolBuildError::Spawn {
                    worker: index,
                    source,
                })?;
            spawned.push(index);
        }
        drop(started_tx);
        let mut reported = Vec::with_capacity(spawned.len());
        while reported.len() < spawned.len() {
            match started.recv() {
                Ok(Ok(index)) => reported.push(index),
                Ok(Err(e)) => return Err(e),
                // Every sender is gone, but some worker never reported: a
                // spawn handler dropped its `ThreadBuilder` without calling
                // `run`.
                Err(_) => return Err(never_ran(&spawned, reported)),
            }
        }
        if let Some(deque) = current {
            WorkerThread::adopt_current(Arc::clone(&registry), 0, deque);
        }
        std::mem::forget(terminate);
        Ok(registry)
    }

    /// The registry of `config`'s pool, and its workers' deques.
    fn create(config: Config) -> (Arc<Registry>, Vec<Worker<JobRef>>) {
        let topo = config.topology;
        let mut order = pu_order(&topo);
        if config.use_current_thread {
            // Worker 0 is the calling thread, which is not pinned: seat it
            // on the PU it runs on.
            let here = numa::sys::current_cpu()
                .and_then(|cpu| order.iter().position(|&p| topo.pus()[p].os_index() == cpu));
            if let Some(i) = here {
                let pu = order.remove(i);
                order.insert(0, pu);
            }
        }
        let n = config.num_threads;
        let pus: Vec<usize> = (0..n).map(|i| order[i % order.len()]).collect();
        let seats: Vec<Seat> = pus
            .iter()
            .map(|&p| Seat {
                node: topo.pus()[p].node_index(),
                group: topo.pus()[p].l3_group_index(),
            })
            .collect();
        let deques: Vec<Worker<JobRef>> = (0..n)
            .map(|_| match config.deque_order {
                DequeOrder::Lifo => Worker::new_lifo(),
                DequeOrder::Fifo => Worker::new_fifo(),
            })
            .collect();
        let workers = deques
            .iter()
            .zip(&pus)
            .zip(&seats)
            .map(|((d, &p), &seat)| {
                CachePadded::new(WorkerInfo {
                    pinned_to: OnceLock::new(),
                    stealer: d.stealer(),
                    request: AtomicU8::new(0),
                    busy: AtomicBool::new(false),
                    job_seq: AtomicU64::new(0),
                    seat,
                    cpu: topo.pus()[p].os_index(),
                    hint_inbox: Injector::new(),
                    strict_inbox: Injector::new(),
                    stats: WorkerStats::new(topo.nodes().len()),
                    rec: Slot::new(),
                    groups_adopted: AtomicUsize::new(0),
                })
            })
            .collect();
        let plans = (0..n)
            .map(|w| StealPlan::new(config.policy, &topo, &seats, w))
            .collect();
        let max_cpu = topo.pus().iter().map(|p| p.os_index()).max().unwrap_or(0);
        let mut cpu_node = vec![None; max_cpu as usize + 1];
        for p in topo.pus() {
            cpu_node[p.os_index() as usize] = Some(p.node_index());
        }
        let nodes = topo.nodes().len();
        let node_workers: Vec<Vec<usize>> = (0..nodes)
            .map(|n| (0..seats.len()).filter(|&w| seats[w].node == n).collect())
            .collect();
        // A node with workers is its own, whatever the distances say (a
        // described matrix may rate another node nearer than the node
        // itself); a node without is sent to the nearest that has some.
        let redirect = (0..nodes)
            .map(|n| {
                if !node_workers[n].is_empty() {
                    return n;
                }
                (0..nodes)
                    .filter(|&m| !node_workers[m].is_empty())
                    .min_by_key(|&m| (topo.distance_by_index(n, m), m))
                    .unwrap_or(n)
            })
            .collect();
        let spare_cpus = std::thread::available_parallelism().is_ok_and(|cpus| n < cpus.get());
        let registry = Arc::new(Registry {
            spare_cpus,
            workers,
            strict_queues: (0..nodes)
                .map(|_| CachePadded::new(Injector::new()))
                .collect(),
            hint_queues: (0..nodes)
                .map(|_| CachePadded::new(Injector::new()))
                .collect(),
            hint_ns: (0..nodes)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            // With one node of workers nobody could take a hint.
            time_hints: config.policy == Policy::Locality
                && node_workers.iter().filter(|w| !w.is_empty()).count() > 1,
            // No `job_seq` is u64::MAX: the first sighting records its time.
            job_seen: (0..n)
                .map(|_| CachePadded::new((AtomicU64::new(u64::MAX), AtomicU64::new(0))))
                .collect(),
            nodes_with_workers: (0..nodes)
                .filter(|&n| !node_workers[n].is_empty())
                .collect(),
            node_workers,
            redirect,
            recent: (0..RECENT_SLOTS).map(|_| AtomicUsize::new(0)).collect(),
            distribution: config.distribution,
            round_robin: (0..nodes)
                .map(|_| CachePadded::new(AtomicUsize::new(0)))
                .collect(),
            push_threshold: config.push_threshold,
            node_queues: topo
                .nodes()
                .iter()
                .map(|_| CachePadded::new(Injector::new()))
                .collect(),
            sleep: Sleep::new(seats.iter().map(|s| s.node).collect(), topo.nodes().len()),
            plans,
            policy: config.policy,
            cpu_node,
            inject_round_robin: AtomicUsize::new(0),
            unroutable: AtomicU64::new(0),
            terminate_count: AtomicUsize::new(1),
            terminating: AtomicBool::new(false),
            panic_handler: config.panic_handler,
            start_handler: config.start_handler,
            exit_handler: config.exit_handler,
            broadcast_lock: Mutex::new(()),
            pinned: config.pin,
            pinning: config.pinning,
            recorder: PoolRecorder::new(),
            tag: AtomicUsize::new(0),
            topology: topo,
        });

        (registry, deques)
    }

    /// Number of workers.
    pub(crate) fn num_threads(&self) -> usize {
        self.workers.len()
    }

    pub(crate) fn topology(&self) -> &Topology {
        &self.topology
    }

    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// OS CPU number of worker `w`'s PU.
    pub(crate) fn worker_cpu(&self, w: usize) -> u32 {
        self.workers[w].cpu
    }

    /// How the workers are pinned, when they are.
    pub(crate) fn pinning(&self) -> Option<Pinning> {
        self.pinned.then_some(self.pinning)
    }

    /// The CPUs worker `w` is to be pinned to, or `None` when the pool
    /// does not pin: its PU, or every CPU of its PU's L3 group or node
    /// (those the process may not use are left to the kernel, which binds
    /// the thread to the rest).
    pub(crate) fn pin_target(&self, w: usize) -> Option<CpuSet> {
        let info = &self.workers[w];
        Some(match self.pinning()? {
            Pinning::Pu => CpuSet::from_iter([info.cpu]),
            Pinning::Cache => self.topology.l3_groups()[info.seat.group].cpus().clone(),
            Pinning::Node => self.topology.nodes()[info.seat.node].cpus().clone(),
        })
    }

    /// Records the CPUs worker `w`'s thread is bound to, once it pinned
    /// itself.
    pub(crate) fn set_worker_cpus(&self, w: usize, cpus: CpuSet) {
        let _ = self.workers[w].pinned_to.set(cpus);
    }

    /// The CPUs worker `w`'s thread is bound to, when the pool pinned it.
    pub(crate) fn worker_cpus(&self, w: usize) -> Option<&CpuSet> {
        self.workers[w].pinned_to.get()
    }

    /// Node index of worker `w`.
    pub(crate) fn worker_node(&self, w: usize) -> usize {
        self.workers[w].seat.node
    }
    /// Pushes a job from outside the pool on the node of the calling CPU
    /// (round-robin over nodes when the CPU is not in the topology).
    pub(crate) fn inject(&self, job: JobRef) {
        let node = numa::sys::current_cpu()
            .and_then(|c| self.cpu_node.get(c as usize).copied().flatten())
            .unwrap_or_else(|| {
                self.inject_round_robin.fetch_add(1, Ordering::Relaxed) % self.node_queues.len()
            });
        self.node_queues[node].push(job);
        self.sleep.new_work(node);
    }

    /// Pushes a job on the shared queue of node `node` (an index into the
    /// topology's nodes), where that node's workers look first and any
    /// other worker may take it.
    pub(crate) fn push_to_node(&self, node: usize, job: JobRef) {
        self.node_queues[node].push(job);
        self.sleep.new_work_on_node(node, true);
    }
    pub(crate) fn recorder(&self) -> &PoolRecorder {
        &self.recorder
    }

    /// The workers' recording slots, and the pool's policy and nodes for
    /// a [`Recording`].
    pub(super) fn rec_parts(&self) -> (Vec<&Slot>, PoolMeta) {
        let slots = self.workers.iter().map(|w| &w.rec).collect();
        let nodes = self.topology.nodes().iter().map(|n| n.id()).collect();
        let worker_nodes = self.workers.iter().map(|w| w.seat.node).collect();
        // A worker's CPU is known only when it is bound to it alone.
        let cpus = (0..self.workers.len())
            .map(|w| {
                self.worker_cpus(w)
                    .filter(|set| set.len() == 1)
                    .and_then(|set| set.iter().next())
            })
            .collect();
        (slots, (self.policy, nodes, worker_nodes, cpus))
    }

    /// Runs `op` in this pool while recording (see `record.rs`).
    pub(crate) fn record<OP, R>(
        self: &Arc<Self>,
        options: &RecordOptions,
        op: OP,
    ) -> Result<(R, Recording), RecordError>
    where
        OP: FnOnce() -> R + Send,
        R: Send,
    {
        let (slots, meta) = self.rec_parts();
        record::record(&self.recorder, &slots, meta, options, || {
            self.in_worker(|_, _| op())
        })
    }

    /// Starts a recording that [`stop_recording`](Self::stop_recording)
    /// stops (see `record.rs`).
    pub(crate) fn start_recording(&self, options: &RecordOptions) -> Result<(), RecordError> {
        let (slots, _) = self.rec_parts();
        record::start(&self.recorder, &slots, options, Owner::Explicit)
    }

    /// Stops the recording [`start_recording`](Self::start_recording)
    /// started.
    pub(crate) fn stop_recording(&self) -> Result<Recording, RecordError> {
        let (slots, meta) = self.rec_parts();
        record::stop(&self.recorder, &slots, meta, Owner::Explicit)
    }

    /// Workers of node index `node`.
    pub(crate) fn node_workers(&self, node: usize) -> &[usize] {
        &self.node_workers[node]
    }
    /// Runs `op` on a worker of this pool and returns its value: directly
    /// when called on one, otherwise by injecting it and waiting.
    pub(crate) fn in_worker<OP, R>(self: &Arc<Self>, op: OP) -> R
    where
        OP: FnOnce(&WorkerThread, bool) -> R + Send,
        R: Send,
    {
        match WorkerThread::current() {
            None => self.in_worker_cold(op),
            Some(wt) if !Arc::ptr_eq(&wt.registry, self) => self.in_worker_cross(wt, op),
            Some(wt) => op(wt, false),
        }
    }

    #[cold]
    fn in_worker_cold<OP, R>(self: &Arc<Self>, op: OP) -> R
    where
        OP: FnOnce(&WorkerThread, bool) -> R + Send,
        R: Send,
    {
        thread_local!(static LOCK_LATCH: LockLatch = LockLatch::default());
        LOCK_LATCH.with(|latch| {
            let start = super::record::now_ns();
            let job = StackJob::new(
                |injected| {
                    let wt = WorkerThread::current().expect("injected job runs on a worker");
                    op(wt, injected)
                },
                latch,
            );
            self.inject(job.as_job_ref());
            latch.wait_and_reset_adaptive(start, self.spare_cpus);
            job.into_result()
        })
    }

    #[cold]
    fn in_worker_cross<OP, R>(self: &Arc<Self>, current: &WorkerThread, op: OP) -> R
    where
        OP: FnOnce(&WorkerThread, bool) -> R + Send,
        R: Send,
    {
        let latch = WorkerLatch::new(current, true);
        let job = StackJob::new(
            |injected| {
                let wt = WorkerThread::current().expect("injected job runs on a worker");
                op(wt, injected)
            },
            latch,
        );
        self.inject(job.as_job_ref());
        current.wait_until(&job.latch);
        job.into_result()
    }
    /// Spawns a `'static` job that the pool keeps alive for (its terminate
    /// count), at `place` when one is given.
    pub(crate) fn spawn_static<F>(&self, place: Option<&Place>, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        let body = self.static_body(f);
        match place {
            None => {
                // SAFETY: the body is 'static.
                let job = unsafe { HeapJob::new(body).into_job_ref(None) };
                self.push_or_inject(job);
            }
            // SAFETY: the body is 'static.
            Some(place) => unsafe { self.spawn_placed(place, body) },
        }
    }

    /// Spawns a `'static` job as [`spawn_static`](Self::spawn_static)
    /// does, in FIFO order among the `spawn_fifo`s of the spawning worker
    /// (through its `JobFifo`); from outside the pool, injected as any
    /// job from outside.
    pub(crate) fn spawn_static_fifo<F>(&self, f: F)
    where
        F: FnOnce() + Send + 'static,
    {
        let body = self.static_body(f);
        // SAFETY: the body is 'static.
        let job = unsafe { HeapJob::new(body).into_job_ref(None) };
        match WorkerThread::current() {
            // SAFETY: a worker's FIFO lives as long as the worker, which
            // cannot exit while this job holds the pool's terminate count.
            Some(wt) if std::ptr::eq(Arc::as_ptr(&wt.registry), self) => unsafe {
                wt.push_fifo(&wt.fifo, job)
            },
            _ => self.inject(job),
        }
    }

    /// A `'static` job at `place` whose body may find its task gone
    /// ([`spawn_placed_claim`](Self::spawn_placed_claim)): `f` gets the
    /// placed task's book-keeping, to start only if it runs the task.
    pub(crate) fn spawn_static_claim<F>(&self, place: &Place, f: F)
    where
        F: FnOnce(PlacedTask) + Send + 'static,
    {
        let body = self.static_body_with(f);
        // SAFETY: the body is 'static.
        unsafe { self.spawn_placed_claim(place, body) }
    }

    /// `f` as the body of a `'static` job: it holds one count of the
    /// pool's life (taken now, given back when it ends), and its panic
    /// goes to the panic handler.
    pub(super) fn static_body<F>(&self, f: F) -> impl FnOnce() + Send + 'static
    where
        F: FnOnce() + Send + 'static,
    {
        let body = self.static_body_with(move |()| f());
        move || body(())
    }

    /// [`static_body`](Self::static_body) for a body that takes an
    /// argument from its job.
    fn static_body_with<A, F>(&self, f: F) -> impl FnOnce(A) + Send + 'static
    where
        F: FnOnce(A) + Send + 'static,
    {
        self.terminate_count.fetch_add(1, Ordering::Relaxed);
        let registry = RegistryPtr(self);
        move |arg| {
            let registry = registry;
            // SAFETY: the job runs on a worker of this registry (only its
            // workers take jobs from its queues), which holds an `Arc` of
            // it until it exits, and it cannot exit before this job ends:
            // the job's terminate count keeps the pool from terminating.
            let registry = unsafe { &*registry.0 };
            if let Err(p) = halt_unwinding(move || f(arg)) {
                registry.handle_panic(p);
            }
            registry.terminate();
        }
    }

    /// Pushes on the current worker's deque when it belongs to this pool,
    /// otherwise injects.
    pub(crate) fn push_or_inject(&self, job: JobRef) {
        match WorkerThread::current() {
            Some(wt) if std::ptr::eq(Arc::as_ptr(&wt.registry), self) => wt.push(job),
            _ => self.inject(job),
        }
    }

    /// Runs user code that nobody waits for (a start or exit handler): a
    /// panic goes to the panic handler, as a spawned job's does.
    pub(crate) fn call_user(&self, f: impl FnOnce()) {
        if let Err(p) = halt_unwinding(f) {
            self.handle_panic(p);
        }
    }

    fn handle_panic(&self, payload: Box<dyn std::any::Any + Send>) {
        match &self.panic_handler {
            Some(handler) => {
                let abort = AbortOnUnwind::<PanicHandlerReturns>::arm();
                handler(payload);
                abort.disarm();
            }
            None => {
                // rayon's semantics: a panic in a spawned job with no
                // handler aborts, since nobody could observe it (the
                // payload is not dropped: its `Drop` could unwind).
                abort_with("a spawned job panicked and the pool has no panic_handler");
            }
        }
    }

    /// Takes one more reference to the pool's life (as a `'static` spawn
    /// does), unless it has ended already: `false` then (the workers
    /// finish what is queued and exit; nothing new may count on them).
    pub(crate) fn try_keep_alive(&self) -> bool {
        let mut n = self.terminate_count.load(Ordering::Relaxed);
        while n > 0 {
            match self.terminate_count.compare_exchange_weak(
                n,
                n + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// Drops one reference to the pool's life; at zero the workers finish
    /// what is queued and exit.
    pub(crate) fn terminate(&self) {
        if self.terminate_count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.terminating.store(true, Ordering::SeqCst);
            self.sleep.wake_all();
        }
    }
}

/// Terminates a pool being built unless forgotten: on an error or a panic
/// while its workers start, those started so far exit.
struct TerminateOnDrop<'a>(&'a Registry);

impl Drop for TerminateOnDrop<'_> {
    fn drop(&mut self) {
        self.0.terminate();
    }
}

/// The error for a worker whose spawn handler dropped its [`ThreadBuilder`]
/// without running it: the first of `spawned` that did not report.
#[cold]
fn never_ran(spawned: &[usize], mut seen: Vec<usize>) -> ThreadPoolBuildError {
    seen.sort_unstable();
    let worker = spawned
        .iter()
        .copied()
        .find(|w| seen.binary_search(w).is_err())
        .unwrap_or(0);
    ThreadPoolBuildError::Spawn {
        worker,
        source: std::io::Error::other(
            "the spawn handler dropped the worker's ThreadBuilder without calling run()",
        ),
    }
}

/// A registry pointer that a `'static` job carries without a reference
/// count (see [`Registry::static_body`] for why it stays valid).
struct RegistryPtr(*const Registry);

// SAFETY: the registry is `Sync`; the pointer is only dereferenced while
// the registry is alive (see `Registry::static_body`).
unsafe impl Send for RegistryPtr {}
