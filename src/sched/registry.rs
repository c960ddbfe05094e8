//! The registry: a pool's workers, queues, sleep state and steal plans, and
//! the worker threads' main loop.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;

use super::job::{HeapJob, JobRef, StackJob};
use super::latch::{CoreLatch, LockLatch};
use super::place::{self, Access, Place, PlaceError};
use super::policy::{Policy, Seat, StealPlan, Target};
use super::pool::{PanicHandler, ThreadPoolBuildError, ThreadPoolBuilder};
use super::record::{
    self, Label, Owner, PoolRecorder, RecordError, RecordOptions, Recording, Slot, WorkerRec,
};
use super::sleep::{LastLook, Sleep, Wake};
use super::stats::{bump, NodeStats, PoolStats, WorkerStats};
use crate::numa::{self, CpuSet, Topology};

/// What other threads may touch of a worker.
pub(crate) struct WorkerInfo {
    stealer: Stealer<JobRef>,
    /// Set by a thief that found nothing: "please expose a continuation".
    /// A hint only (Relaxed): the job itself is published by the deque.
    request: AtomicBool,
    /// Whether the worker runs a job (and so may hold private
    /// continuations). Written only by the worker, on transitions.
    busy: AtomicBool,
    /// How many jobs this worker has taken, when the pool times its hints
    /// (`Registry::time_hints`); written only by the worker. Thieves time
    /// how long it stays the same (`Registry::job_seen`): no clock read on
    /// the worker's side.
    job_seq: AtomicU64,
    seat: Seat,
    cpu: u32,
    /// Placed tasks for this worker: other workers of its node may take
    /// them, other nodes' workers as [`Registry::hint_for_thief`] says.
    hint_inbox: Injector<JobRef>,
    /// Placed tasks only this worker may run.
    strict_inbox: Injector<JobRef>,
    stats: WorkerStats,
    /// Its recording buffer (see `record.rs`).
    rec: Slot,
}

/// How placed tasks are spread over the workers of their node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Distribution {
    /// The node's shared queue; any worker of the node takes the next task
    /// (the default).
    #[default]
    SharedQueue,
    /// The inboxes of the node's workers in turn.
    RoundRobin,
    /// The inbox of the node's worker with the fewest queued placed tasks.
    ShortestQueue,
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

/// Where a placed task goes, once resolved against the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// An ordinary spawn.
    Local,
    Node {
        node: usize,
        strict: bool,
    },
    Worker {
        worker: usize,
        strict: bool,
    },
}

/// A placed task running on a worker, from
/// [`Registry::record_placed_run`]: when timed, its end adds its duration
/// to the mean of the node it ran on.
#[must_use = "the task is timed until the guard drops"]
pub(crate) struct PlacedRun<'a> {
    timed: Option<(&'a AtomicU64, u64)>,
}

impl Drop for PlacedRun<'_> {
    fn drop(&mut self) {
        if let Some((mean, start)) = self.timed {
            let d = record::now_ns().saturating_sub(start).max(1);
            let m = mean.load(Ordering::Relaxed);
            // An exponential mean (weight 1/8): a racing update from
            // another worker of the node may be lost, which only delays it.
            let next = if m == 0 { d } else { m - m / 8 + d / 8 };
            mean.store(next.max(1), Ordering::Relaxed);
        }
    }
}

/// One placed task in this many (per worker, starting with the first) is
/// timed for its node's mean: a clock read can cost microseconds where the
/// clock is not the TSC (the emulated guest reads an HPET).
const TIME_EVERY: u64 = 8;

/// How long a thief that left a hint waits before it looks again, from
/// `d` ns (the time until the estimate could allow taking it, or the
/// node's mean task time when a worker looked free), kept within 0.1 to
/// 10 ms.
fn look_again_after(d: u64) -> Duration {
    Duration::from_nanos(d.clamp(
        LOOK_AGAIN_FLOOR.as_nanos() as u64,
        LOOK_AGAIN_CAP.as_nanos() as u64,
    ))
}

/// The shortest nap of a thief that left a hint; nodes whose placed tasks
/// take less on average have their hints taken as before the cost rule
/// (whenever the node is all busy).
const LOOK_AGAIN_FLOOR: Duration = Duration::from_micros(100);

/// The longest a thief naps before it looks at a hint it left again.
const LOOK_AGAIN_CAP: Duration = Duration::from_millis(10);

/// What a thief may do with another node's hint (see
/// [`Registry::hint_for_thief`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HintSteal {
    /// Leave it: a worker of its node is free to take it.
    No,
    /// Leave it for now, and look again within this long.
    Later(Duration),
    /// Take it.
    Yes,
}

/// Slots of the temporal-affinity table (key hash → last worker + 1).
const RECENT_SLOTS: usize = 4096;

/// A pool's shared state.
pub(crate) struct Registry {
    workers: Vec<CachePadded<WorkerInfo>>,
    /// Work injected from outside the pool (and first-touch shares) for a
    /// node: its workers look first, any thief may take it.
    node_queues: Vec<CachePadded<Injector<JobRef>>>,
    /// Placed tasks (hints) for a node: its workers look first; another
    /// node's thief takes one as [`Registry::hint_for_thief`] says.
    hint_queues: Vec<CachePadded<Injector<JobRef>>>,
    /// Placed tasks only the node's workers may run.
    strict_queues: Vec<CachePadded<Injector<JobRef>>>,
    /// Per node index, a running mean of how long its placed tasks ran
    /// (ns; 0 before the first), when `time_hints`.
    hint_ns: Vec<CachePadded<AtomicU64>>,
    /// Whether other nodes may take hints (the `Locality` policy): then
    /// some placed tasks are timed and jobs counted, for
    /// [`Registry::hint_for_thief`].
    time_hints: bool,
    /// Per worker, the `job_seq` a thief last saw and when it first saw
    /// it (`record::now_ns()`): how long the worker has been in its
    /// current job, at least. Written by thieves only.
    job_seen: Vec<CachePadded<(AtomicU64, AtomicU64)>>,
    /// Workers of each node index.
    node_workers: Vec<Vec<usize>>,
    /// For each node index: itself if it has workers, else the nearest
    /// node index that has.
    redirect: Vec<usize>,
    recent: Box<[AtomicUsize]>,
    distribution: Distribution,
    round_robin: Vec<CachePadded<AtomicUsize>>,
    push_threshold: u64,
    pub(crate) sleep: Sleep,
    plans: Vec<StealPlan>,
    topology: Topology,
    policy: Policy,
    /// node index of each OS CPU number, for injection from outside.
    cpu_node: Vec<Option<usize>>,
    inject_round_robin: AtomicUsize,
    /// Placed spawns whose place this pool cannot honour (see
    /// [`Registry::check_place`]).
    unroutable: AtomicU64,
    /// 1 for the pool handle + 1 per outstanding global spawn.
    terminate_count: AtomicUsize,
    terminating: AtomicBool,
    panic_handler: Option<Box<PanicHandler>>,
    pinned: bool,
    recorder: PoolRecorder,
}

/// A `join` continuation kept private to its worker: a node of an intrusive
/// list through the stack frames of the pending `join`s, newest first.
/// Only the owning worker reads or writes it.
pub(crate) struct PrivateJob {
    prev: *const PrivateJob,
    job: JobRef,
    promoted: Cell<bool>,
}

impl PrivateJob {
    /// A node for `job`; link it with [`WorkerThread::push_private`].
    #[inline(always)]
    pub(crate) fn new(job: JobRef) -> Self {
        PrivateJob {
            prev: std::ptr::null(),
            job,
            promoted: Cell::new(false),
        }
    }

    /// Whether the job was promoted to the deque (then another worker may
    /// be running it: wait for its latch).
    #[inline(always)]
    pub(crate) fn was_promoted(&self) -> bool {
        self.promoted.get()
    }
}

/// The state of the worker that runs on this thread.
pub(crate) struct WorkerThread {
    deque: Worker<JobRef>,
    /// Newest private continuation (head of the `PrivateJob` list).
    private_head: Cell<*const PrivateJob>,
    searching: Cell<bool>,
    /// Set by a look that left another node's hint for later (its node
    /// looked about to take it, [`HintSteal::Later`], or had a worker
    /// that looked free, [`HintSteal::No`]): the soonest it should look
    /// again.
    look_again: Cell<Option<Duration>>,
    /// The clock as read during the current look at the queues (0: not
    /// read yet), for `may_take_hint`.
    look_now: Cell<u64>,
    /// Jobs taken (the worker's `job_seq`), when the pool times hints.
    jobs_taken: Cell<u64>,
    /// Placed tasks started, when the pool times hints (one in
    /// [`TIME_EVERY`] is timed).
    placed_runs: Cell<u64>,
    rng: Cell<u64>,
    index: usize,
    node: usize,
    /// `&registry.workers[index]`, cached for the `join` fast path.
    info: *const WorkerInfo,
    registry: Arc<Registry>,
    rec: WorkerRec,
    /// A word for the layer above the executor (the C API keeps its
    /// innermost frame here), so that it needs no thread-local of its own:
    /// the one thread-local read that finds the worker finds this too.
    foreign: Cell<*const ()>,
}

thread_local! {
    static WORKER: Cell<*const WorkerThread> = const { Cell::new(std::ptr::null()) };
}

static GLOBAL: OnceLock<Arc<Registry>> = OnceLock::new();
static GLOBAL_INIT: Mutex<()> = Mutex::new(());

/// The global pool's registry, built with the default builder on first use.
///
/// # Panics
/// If the default pool cannot be built (for instance the machine exposes no
/// NUMA information); the message names the cause and the way out.
pub(crate) fn global_registry() -> &'static Arc<Registry> {
    if let Some(r) = GLOBAL.get() {
        return r;
    }
    let _guard = GLOBAL_INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = GLOBAL.get() {
        return r;
    }
    match Registry::new(ThreadPoolBuilder::new()) {
        Ok(r) => GLOBAL.get_or_init(|| r),
        Err(e) => panic!(
            "terroir: the global thread pool could not be built: {e}. Configure it \
             explicitly with ThreadPoolBuilder::new()...build_global() before first use \
             (e.g. .topology(Topology::single_node()?) on machines without NUMA information)"
        ),
    }
}

/// Installs `builder`'s pool as the global one.
pub(crate) fn init_global(builder: ThreadPoolBuilder) -> Result<(), ThreadPoolBuildError> {
    let _guard = GLOBAL_INIT.lock().unwrap_or_else(|e| e.into_inner());
    if GLOBAL.get().is_some() {
        return Err(ThreadPoolBuildError::GlobalPoolAlreadyInitialized);
    }
    let registry = Registry::new(builder)?;
    GLOBAL
        .set(registry)
        .map_err(|_| ThreadPoolBuildError::GlobalPoolAlreadyInitialized)
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
    /// Builds the registry and starts (and, if asked, pins) its workers.
    pub(crate) fn new(builder: ThreadPoolBuilder) -> Result<Arc<Registry>, ThreadPoolBuildError> {
        let config = builder.resolve()?;
        let topo = config.topology;
        let order = pu_order(&topo);
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
                    stealer: d.stealer(),
                    request: AtomicBool::new(false),
                    busy: AtomicBool::new(false),
                    job_seq: AtomicU64::new(0),
                    seat,
                    cpu: topo.pus()[p].os_index(),
                    hint_inbox: Injector::new(),
                    strict_inbox: Injector::new(),
                    stats: WorkerStats::new(topo.nodes().len()),
                    rec: Slot::new(),
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
        let redirect = (0..nodes)
            .map(|n| {
                (0..nodes)
                    .filter(|&m| !node_workers[m].is_empty())
                    .min_by_key(|&m| (topo.distance_by_index(n, m), m != n, m))
                    .unwrap_or(n)
            })
            .collect();
        let registry = Arc::new(Registry {
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
            pinned: config.pin,
            recorder: PoolRecorder::new(),
            topology: topo,
        });

        let (started_tx, started) = mpsc::channel();
        let mut name = config.thread_name;
        for (index, deque) in deques.into_iter().enumerate() {
            let mut b = thread::Builder::new();
            if let Some(name) = name.as_mut() {
                b = b.name(name(index));
            }
            if let Some(size) = config.stack_size {
                b = b.stack_size(size);
            }
            let reg = Arc::clone(&registry);
            let tx = started_tx.clone();
            let spawned = b.spawn(move || {
                let cpu = reg.workers[index].cpu;
                let pinned = if reg.pinned {
                    numa::bind_current_thread(&CpuSet::from_iter([cpu]))
                } else {
                    Ok(())
                };
                let ok = pinned.is_ok();
                if ok && reg.pinned {
                    // Task frames and other small allocations of this
                    // worker come from its node's slabs. If the process may
                    // not allocate on that node (a cpuset with the CPU but
                    // not the memory), the slab pool keeps its documented
                    // choice: the lowest allowed node (`thread_node`).
                    let node = reg.topology.nodes()[reg.workers[index].seat.node].id();
                    let _ = crate::pool::set_thread_node(node);
                }
                let _ = tx.send(pinned.map_err(|source| ThreadPoolBuildError::Pin {
                    worker: index,
                    cpu,
                    source,
                }));
                drop(tx);
                if ok {
                    WorkerThread::run(reg, index, deque);
                }
            });
            if let Err(source) = spawned {
                registry.terminate();
                return Err(ThreadPoolBuildError::Spawn {
                    worker: index,
                    source,
                });
            }
        }
        drop(started_tx);
        for _ in 0..n {
            match started.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    registry.terminate();
                    return Err(e);
                }
                Err(_) => break,
            }
        }
        Ok(registry)
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
    fn rec_parts(&self) -> (Vec<&Slot>, (Policy, Vec<numa::NodeId>)) {
        let slots = self.workers.iter().map(|w| &w.rec).collect();
        let nodes = self.topology.nodes().iter().map(|n| n.id()).collect();
        (slots, (self.policy, nodes))
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

    /// Whether this pool can honour `place`: a worker place names one of
    /// its workers, a node place (or a data place's node) a node of its
    /// topology. A place made by another pool may not.
    pub(crate) fn check_place(&self, place: &Place) -> Result<(), PlaceError> {
        match place.target {
            place::Target::Worker(index) if index >= self.workers.len() => {
                Err(PlaceError::WorkerOutOfRange {
                    index,
                    workers: self.workers.len(),
                })
            }
            place::Target::Node(node) if self.topology.node_index(node).is_none() => {
                Err(PlaceError::NodeNotInPool {
                    node,
                    nodes: self.topology.nodes().len(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Counts a place that fails [`check_place`](Self::check_place) and
    /// routes its task as an unplaced one.
    #[cold]
    fn unroutable(&self) -> Route {
        self.unroutable.fetch_add(1, Ordering::Relaxed);
        Route::Local
    }

    /// Resolves `place` against this pool, from the current thread: where
    /// a task spawned at it goes. A place that fails
    /// [`check_place`](Self::check_place) is counted in the statistics
    /// (`PoolStats::unroutable`) and the task goes where an unplaced one
    /// would (under every policy, so that policies compare alike). The
    /// placing policies find such places in the match below, without a
    /// second lookup.
    pub(crate) fn route(&self, place: &Place) -> Route {
        if !self.policy.honours_places() {
            return match self.check_place(place) {
                Ok(()) => Route::Local,
                Err(_) => self.unroutable(),
            };
        }
        let strict = place.strict || self.policy == Policy::StrictLocality;
        let here =
            WorkerThread::current().filter(|wt| std::ptr::eq(Arc::as_ptr(&wt.registry), self));
        match place.target {
            place::Target::Anywhere => Route::Local,
            place::Target::Node(id) => match self.topology.node_index(id) {
                Some(n) => Route::Node {
                    node: self.redirect[n],
                    strict,
                },
                None => self.unroutable(),
            },
            place::Target::Worker(w) if w < self.workers.len() => {
                Route::Worker { worker: w, strict }
            }
            place::Target::Worker(_) => self.unroutable(),
            place::Target::After(key) => {
                match self.recent[key as usize % RECENT_SLOTS].load(Ordering::Relaxed) {
                    0 => Route::Local,
                    w => Route::Worker {
                        worker: w - 1,
                        strict,
                    },
                }
            }
            place::Target::Pushed => {
                let candidates: Vec<usize> = (0..self.node_workers.len())
                    .filter(|&n| !self.node_workers[n].is_empty())
                    .collect();
                let random = || match here {
                    Some(wt) => wt.next_random(),
                    None => self.inject_round_robin.fetch_add(1, Ordering::Relaxed),
                };
                match place::push_target(
                    &place.data,
                    self.push_threshold,
                    &candidates,
                    here.map(|wt| wt.node),
                    |id| self.topology.node_index(id).map(|n| self.redirect[n]),
                    |a, b| self.topology.distance_by_index(a, b),
                    random,
                ) {
                    Some(node) => Route::Node { node, strict },
                    // The local node wins (or no region counts): a strict
                    // task stays on the spawner's node, a hint on its deque.
                    None => match here {
                        Some(wt) if strict => Route::Node {
                            node: wt.node,
                            strict,
                        },
                        _ => Route::Local,
                    },
                }
            }
        }
    }

    /// The node a placed job's frame should live on: the node it is sent
    /// to, when the workers are pinned to the machine's real nodes (on a
    /// described topology the node numbers need not exist). `None`: the
    /// spawning thread's node.
    pub(crate) fn frame_node(&self, route: Route) -> Option<numa::NodeId> {
        if !self.pinned {
            return None;
        }
        let node = match route {
            Route::Local => return None,
            Route::Node { node, .. } => node,
            Route::Worker { worker, .. } => self.workers[worker].seat.node,
        };
        Some(self.topology.nodes()[node].id())
    }

    /// Sends a placed job where `route` says.
    pub(crate) fn push_routed(&self, route: Route, job: JobRef) {
        let route = match route {
            Route::Node { node, strict } if self.distribution != Distribution::SharedQueue => {
                let ws = &self.node_workers[node];
                let worker = match self.distribution {
                    Distribution::RoundRobin => {
                        ws[self.round_robin[node].fetch_add(1, Ordering::Relaxed) % ws.len()]
                    }
                    _ => *ws
                        .iter()
                        .min_by_key(|&&w| {
                            let info = &self.workers[w];
                            info.hint_inbox.len() + info.strict_inbox.len()
                        })
                        .expect("a routed node has workers"),
                };
                Route::Worker { worker, strict }
            }
            r => r,
        };
        if let Some(wt) = WorkerThread::current() {
            let to_other_node = match route {
                Route::Node { node, .. } => node != wt.node,
                Route::Worker { worker, .. } => self.workers[worker].seat.node != wt.node,
                Route::Local => false,
            };
            if to_other_node && std::ptr::eq(Arc::as_ptr(&wt.registry), self) {
                bump(&wt.info().stats.pushed, 1);
            }
        }
        match route {
            Route::Local => self.push_or_inject(job),
            Route::Node {
                node,
                strict: false,
            } => {
                self.hint_queues[node].push(job);
                // Another node may help only when this one is all busy
                // (a woken thief then applies `hint_for_thief`, and looks
                // again later if it leaves the hint for now).
                self.sleep.new_work_on_node(node, self.node_all_busy(node));
            }
            Route::Node { node, strict: true } => {
                self.strict_queues[node].push(job);
                self.sleep.new_work_on_node(node, false);
            }
            Route::Worker { worker, strict } => {
                let info = &self.workers[worker];
                if strict {
                    info.strict_inbox.push(job);
                    self.sleep.new_work_for_worker(worker);
                } else {
                    info.hint_inbox.push(job);
                    if !self.sleep.new_hint_for_worker(worker) {
                        // The worker is awake (maybe busy for long): its
                        // node's other workers may take the hint, and other
                        // nodes as for a node hint.
                        let node = info.seat.node;
                        self.sleep.new_work_on_node(node, self.node_all_busy(node));
                    }
                }
            }
        }
    }

    /// Book-keeping when a placed task starts on the current worker:
    /// counts it, its declared bytes (local or not) and, for temporal
    /// places, remembers the worker. Under `Locality` on several nodes it
    /// also times one placed task in [`TIME_EVERY`] (and the first) of each
    /// worker: keep the returned guard until the task ends.
    pub(crate) fn record_placed_run(&self, data: &[Access], key: Option<u64>) -> PlacedRun<'_> {
        let Some(wt) = WorkerThread::current() else {
            return PlacedRun { timed: None };
        };
        if !std::ptr::eq(Arc::as_ptr(&wt.registry), self) {
            return PlacedRun { timed: None };
        }
        let timed = if self.time_hints {
            let n = wt.placed_runs.get();
            wt.placed_runs.set(n.wrapping_add(1));
            (n % TIME_EVERY == 0).then(|| (&*self.hint_ns[wt.node], record::now_ns()))
        } else {
            None
        };
        let stats = &wt.info().stats;
        bump(&stats.placed, 1);
        if record::any_active() {
            if let Some(node) = data.iter().find_map(|a| a.node) {
                wt.rec_data_node(node);
            }
        }
        if !data.is_empty() {
            let here = self.topology.nodes()[wt.node].id();
            let (mut all, mut local) = (0, 0);
            for a in data {
                all += a.bytes;
                if a.node == Some(here) {
                    local += a.bytes;
                }
            }
            bump(&stats.declared_bytes, all);
            bump(&stats.local_bytes, local);
        }
        if let Some(key) = key {
            self.recent[key as usize % RECENT_SLOTS].store(wt.index + 1, Ordering::Relaxed);
        }
        PlacedRun { timed }
    }

    /// Whether a worker of node index `thief` may take a hint placed on
    /// node index `node` (another node) now, or should leave it to the
    /// node's own workers for a while.
    ///
    /// A hint is taken only while every worker of its node is busy, and
    /// only when the node's backlog would keep its workers busier than
    /// running the task away from its data costs. With `w` workers, `k`
    /// hints queued, `d` the node's mean placed-task time and `r` the
    /// expected rest of each worker's current job, the node needs about
    /// `(Σr + k·d) / w` to run them all; running one elsewhere takes `d`
    /// inflated by the distance ratio (SLIT distance between the nodes
    /// over the node's own). So the thief takes one when
    /// `(Σr + k·d) · local > w · d · distance`: a last task that the node's
    /// workers are about to reach stays home, a backlog is shared. A job's
    /// rest is `d - elapsed` while it runs for less than `d`, and
    /// `elapsed - d` after (one that overran may run long), whether it is
    /// placed or not, so hints queued behind jobs that block become
    /// stealable as they block longer. `elapsed` is counted from the first
    /// time a thief saw the worker in that job (its `job_seq` unchanged),
    /// so that busy workers read no clock; a job first seen now counts as
    /// just begun. Nodes whose placed tasks take less than a thief's
    /// shortest nap (0.1 ms) on average are exempt: waiting for them would
    /// idle longer than the task.
    ///
    /// `now` gives `record::now_ns()`; a thief reads the clock at most once
    /// per look at the queues (a read costs 2.4 µs in the emulated guest,
    /// whose clock is an HPET).
    fn hint_for_thief(&self, node: usize, thief: usize, now: impl FnOnce() -> u64) -> HintSteal {
        if !self.node_all_busy(node) {
            return HintSteal::No;
        }
        let d = self.hint_ns[node].load(Ordering::Relaxed);
        if d < LOOK_AGAIN_FLOOR.as_nanos() as u64 {
            // Nothing measured yet, or tasks shorter than a thief's nap:
            // it could not wait for the node without idling longer than
            // the task, so it takes it (as when the node is all busy).
            return HintSteal::Yes;
        }
        let workers = &self.node_workers[node];
        let now = now();
        let mut backlog = self.hint_queues[node].len() as u64 * d;
        for &w in workers {
            let info = &self.workers[w];
            backlog += info.hint_inbox.len() as u64 * d;
            let seq = info.job_seq.load(Ordering::Relaxed);
            let (seen_seq, seen_at) = &*self.job_seen[w];
            // Racing thieves may each record a first sighting, close to
            // one another; the time since is about how long the worker has
            // been in the job, or less (it may have started before anyone
            // looked).
            let elapsed = if seen_seq.load(Ordering::Relaxed) == seq {
                now.saturating_sub(seen_at.load(Ordering::Relaxed))
            } else {
                seen_at.store(now, Ordering::Relaxed);
                seen_seq.store(seq, Ordering::Relaxed);
                0
            };
            backlog += d.abs_diff(elapsed);
        }
        let local = u64::from(self.topology.distance_by_index(node, node)).max(1);
        let distance = u64::from(self.topology.distance_by_index(thief, node)).max(local);
        let w = workers.len() as u64;
        let threshold = (w * d).saturating_mul(distance);
        let have = backlog.saturating_mul(local);
        if have > threshold {
            HintSteal::Yes
        } else {
            // If nothing changes, each overrunning worker adds to the
            // backlog as time passes: look again when it could be enough.
            HintSteal::Later(look_again_after((threshold - have) / (local * w).max(1)))
        }
    }

    /// Whether every worker of node index `node` is running a job (so a
    /// hint placed there may be taken by another node).
    fn node_all_busy(&self, node: usize) -> bool {
        self.node_workers[node]
            .iter()
            .all(|&w| self.workers[w].busy.load(Ordering::Relaxed))
    }

    /// A snapshot of the statistics.
    pub(crate) fn stats(&self) -> PoolStats {
        let topo = &self.topology;
        let mut out = PoolStats {
            nodes: topo
                .nodes()
                .iter()
                .map(|n| NodeStats {
                    node: n.id(),
                    jobs: 0,
                    placed: 0,
                })
                .collect(),
            ..PoolStats::default()
        };
        let mut remote = vec![0u64; topo.nodes().len()];
        let mut remote_by_distance: std::collections::BTreeMap<u32, u64> = Default::default();
        for info in &self.workers {
            let s = &info.stats;
            let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
            let n = &mut out.nodes[info.seat.node];
            n.jobs += get(&s.jobs);
            n.placed += get(&s.placed);
            out.from_own_queues += get(&s.from_own_queues);
            out.steals_same_l3 += get(&s.steals_l3);
            out.steals_same_node += get(&s.steals_node);
            out.pushed += get(&s.pushed);
            out.declared_bytes += get(&s.declared_bytes);
            out.local_bytes += get(&s.local_bytes);
            for (v, c) in s.steals_remote.iter().enumerate() {
                let c = get(c);
                if c > 0 {
                    remote[v] += c;
                    *remote_by_distance
                        .entry(topo.distance_by_index(info.seat.node, v))
                        .or_default() += c;
                }
            }
        }
        out.steals_remote = remote_by_distance.into_iter().collect();
        out.unroutable = self.unroutable.load(Ordering::Relaxed);
        out
    }

    /// Zeroes the statistics.
    pub(crate) fn reset_stats(&self) {
        self.unroutable.store(0, Ordering::Relaxed);
        for info in &self.workers {
            info.stats.reset();
        }
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
            let job = StackJob::new(
                |injected| {
                    let wt = WorkerThread::current().expect("injected job runs on a worker");
                    op(wt, injected)
                },
                latch,
            );
            self.inject(job.as_job_ref());
            latch.wait_and_reset();
            job.into_result()
        })
    }

    #[cold]
    fn in_worker_cross<OP, R>(self: &Arc<Self>, current: &WorkerThread, op: OP) -> R
    where
        OP: FnOnce(&WorkerThread, bool) -> R + Send,
        R: Send,
    {
        let latch = CoreLatch::new(current, true);
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

    /// Spawns a `'static` job that the pool keeps alive for (terminate count).
    pub(crate) fn spawn_static<F: FnOnce() + Send + 'static>(self: &Arc<Self>, f: F) {
        self.terminate_count.fetch_add(1, Ordering::Relaxed);
        let registry = Arc::clone(self);
        let job = HeapJob::new(move || {
            if let Err(p) = super::job::halt_unwinding(f) {
                registry.handle_panic(p);
            }
            registry.terminate();
        });
        // SAFETY: the body is 'static.
        let job = unsafe { job.into_job_ref(None) };
        self.push_or_inject(job);
    }

    /// [`Registry::spawn_static`] at `place`.
    pub(crate) fn spawn_static_placed<F: FnOnce() + Send + 'static>(
        self: &Arc<Self>,
        place: &Place,
        f: F,
    ) {
        self.terminate_count.fetch_add(1, Ordering::Relaxed);
        let registry = Arc::clone(self);
        let data = place.data.clone();
        let key = match place.target {
            place::Target::After(k) => Some(k),
            _ => None,
        };
        let job = HeapJob::new(move || {
            let run = registry.record_placed_run(&data, key);
            if let Err(p) = super::job::halt_unwinding(f) {
                registry.handle_panic(p);
            }
            drop(run);
            registry.terminate();
        });
        let route = self.route(place);
        // SAFETY: the body is 'static.
        let job = unsafe { job.into_job_ref(self.frame_node(route)) };
        self.push_routed(route, job);
    }

    /// Pushes on the current worker's deque when it belongs to this pool,
    /// otherwise injects.
    pub(crate) fn push_or_inject(&self, job: JobRef) {
        match WorkerThread::current() {
            Some(wt) if std::ptr::eq(Arc::as_ptr(&wt.registry), self) => wt.push(job),
            _ => self.inject(job),
        }
    }

    fn handle_panic(&self, payload: Box<dyn std::any::Any + Send>) {
        match &self.panic_handler {
            Some(handler) => {
                let abort = super::job::AbortIfPanic;
                handler(payload);
                abort.disarm();
            }
            None => {
                // rayon's semantics: a panic in a spawned job with no
                // handler aborts, since nobody could observe it.
                eprintln!("terroir: a spawned job panicked and the pool has no panic_handler");
                let _abort = super::job::AbortIfPanic;
                drop(payload);
            }
        }
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

/// Takes one job from an injector, retrying on contention.
#[inline]
fn steal_from(q: &Injector<JobRef>) -> Option<JobRef> {
    if q.is_empty() {
        return None;
    }
    loop {
        match q.steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

/// Takes one job from a worker's deque, retrying on contention.
#[inline]
fn steal_from_stealer(s: &Stealer<JobRef>) -> Option<JobRef> {
    loop {
        match s.steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

const SPIN_ROUNDS: u32 = 64;
const YIELD_AFTER: u32 = 16;

impl WorkerThread {
    /// The word kept for the layer above (see the field): null until set.
    #[inline]
    pub(crate) fn foreign(&self) -> *const () {
        self.foreign.get()
    }

    /// Sets the word kept for the layer above; returns the previous one.
    #[inline]
    pub(crate) fn replace_foreign(&self, value: *const ()) -> *const () {
        self.foreign.replace(value)
    }

    /// The worker running on this thread, if any.
    #[inline]
    pub(crate) fn current() -> Option<&'static WorkerThread> {
        let p = WORKER.with(Cell::get);
        // SAFETY: WORKER is set to a WorkerThread that lives on this thread's
        // stack for the whole of `run` and is reset before it is dropped; a
        // `'static` borrow never escapes this thread (WorkerThread is !Sync).
        unsafe { p.as_ref() }
    }

    fn run(registry: Arc<Registry>, index: usize, deque: Worker<JobRef>) {
        let node = registry.workers[index].seat.node;
        let wt = WorkerThread {
            deque,
            private_head: Cell::new(std::ptr::null()),
            searching: Cell::new(false),
            look_again: Cell::new(None),
            look_now: Cell::new(0),
            jobs_taken: Cell::new(0),
            placed_runs: Cell::new(0),
            rng: Cell::new(0x9E37_79B9_7F4A_7C15 ^ ((index as u64 + 1) << 17)),
            index,
            node,
            info: &*registry.workers[index],
            registry,
            rec: WorkerRec::new(),
            foreign: Cell::new(std::ptr::null()),
        };
        WORKER.with(|c| c.set(&wt));
        while let Some(job) = wt.wait_for_work(None) {
            // SAFETY: a job taken from a queue is executed once, by us.
            unsafe { wt.execute(job) };
        }
        WORKER.with(|c| c.set(std::ptr::null()));
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Node index of this worker.
    pub(crate) fn node_index(&self) -> usize {
        self.node
    }

    pub(crate) fn rec_state(&self) -> &WorkerRec {
        &self.rec
    }

    pub(crate) fn rec_slot(&self) -> &Slot {
        &self.info().rec
    }

    /// Runs a job taken from a queue, as a recorded task when the pool
    /// records.
    ///
    /// # Safety
    /// As [`JobRef::execute`]: the job is executed once.
    #[inline]
    unsafe fn execute(&self, job: JobRef) {
        let framed = self.rec_push(Label::Unlabelled, true);
        // SAFETY: forwarded from the caller.
        unsafe { job.execute() };
        if framed {
            self.rec_pop();
        }
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    #[inline]
    fn info(&self) -> &WorkerInfo {
        // SAFETY: `info` points into `self.registry.workers`, which lives as
        // long as the Arc `self.registry` and is never resized.
        unsafe { &*self.info }
    }

    /// Pushes a job on this worker's deque, where thieves can take it.
    pub(crate) fn push(&self, job: JobRef) {
        self.deque.push(job);
        self.registry.sleep.new_work(self.node);
    }

    /// Links `node` as the newest private continuation. It must stay in
    /// place until [`WorkerThread::pop_private`] unlinks it.
    #[inline(always)]
    pub(crate) fn push_private(&self, node: &mut PrivateJob) {
        node.prev = self.private_head.get();
        self.private_head.set(node);
    }

    /// Unlinks `node`, the newest private continuation.
    #[inline(always)]
    pub(crate) fn pop_private(&self, node: &PrivateJob) {
        debug_assert!(std::ptr::eq(self.private_head.get(), node));
        self.private_head.set(node.prev);
    }

    /// Serves a thief's request, if any, by promoting the oldest private
    /// continuation to the deque. Also promotes when workers sleep and none
    /// searches: sleeping workers make no requests, so without this a
    /// `join`-only phase that follows an idle one would never wake them
    /// (the push wakes one, which then searches and requests as usual).
    #[inline(always)]
    pub(crate) fn poll(&self) {
        if self.info().request.load(Ordering::Relaxed) || self.registry.sleep.sleepers_unwatched() {
            self.promote();
        }
    }

    #[cold]
    #[inline(never)]
    fn promote(&self) {
        self.info().request.store(false, Ordering::Relaxed);
        // Promoted nodes form the oldest end of the list: walk to the
        // oldest one that is still private.
        let mut oldest: Option<&PrivateJob> = None;
        let mut p = self.private_head.get();
        // SAFETY: every node of the list lives in the frame of a `join` of
        // this thread that has not returned (it unlinks its node first).
        while let Some(node) = unsafe { p.as_ref() } {
            if node.promoted.get() {
                break;
            }
            oldest = Some(node);
            p = node.prev;
        }
        if let Some(node) = oldest {
            node.promoted.set(true);
            self.push(node.job);
        }
    }

    pub(crate) fn next_random(&self) -> usize {
        // xorshift64
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x as usize
    }

    /// One look at every place work could be: own deque, own inboxes,
    /// own node's strict queue, then the plan's victims in order.
    fn find_work(&self) -> Option<JobRef> {
        if let Some(job) = self.deque.pop() {
            return Some(job);
        }
        self.look_now.set(0);
        let reg = &*self.registry;
        let me = self.info();
        let stats = &me.stats;
        for q in [
            &me.strict_inbox,
            &me.hint_inbox,
            &reg.strict_queues[self.node],
            &reg.hint_queues[self.node],
        ] {
            if let Some(job) = steal_from(q) {
                bump(&stats.jobs, 1);
                bump(&stats.from_own_queues, 1);
                return Some(job);
            }
        }
        let places = reg.policy.honours_places();
        // Only `Locality` queues hints (`StrictLocality` makes every place
        // strict), so only there may another node's be taken.
        let hints = reg.policy == Policy::Locality;
        let found = reg.plans[self.index].visit(
            || self.next_random(),
            |target| match target {
                Target::Worker(v) => {
                    let victim = &reg.workers[v];
                    let job = steal_from_stealer(&victim.stealer).or_else(|| {
                        // A hint for a worker of my node, or one another
                        // node may take (`hint_for_thief`).
                        let node = victim.seat.node;
                        let ok = !places
                            || node == self.node
                            || (hints && self.may_take_hint(node, &victim.hint_inbox));
                        if ok {
                            steal_from(&victim.hint_inbox)
                        } else {
                            None
                        }
                    })?;
                    Some((job, Some(v), victim.seat.node))
                }
                Target::NodeQueue(q) => steal_from(&reg.node_queues[q])
                    .or_else(|| {
                        // Hints of my node were looked at above.
                        let ok =
                            hints && q != self.node && self.may_take_hint(q, &reg.hint_queues[q]);
                        if ok {
                            steal_from(&reg.hint_queues[q])
                        } else {
                            None
                        }
                    })
                    .map(|job| (job, None, q)),
            },
        );
        let (job, victim, node) = found?;
        bump(&stats.jobs, 1);
        let counter = if node != self.node {
            &stats.steals_remote[node]
        } else {
            match victim {
                None => &stats.from_own_queues,
                Some(v) if reg.workers[v].seat.group == me.seat.group => &stats.steals_l3,
                Some(_) => &stats.steals_node,
            }
        };
        bump(counter, 1);
        Some(job)
    }

    /// Whether this worker may take a hint from `queue`, one of node index
    /// `node`'s (another node); when it should look again later, notes
    /// when in `look_again`.
    fn may_take_hint(&self, node: usize, queue: &Injector<JobRef>) -> bool {
        let reg = &*self.registry;
        if queue.is_empty() {
            return false;
        }
        let now = || match self.look_now.get() {
            0 => {
                let t = record::now_ns().max(1);
                self.look_now.set(t);
                t
            }
            t => t,
        };
        let after = match reg.hint_for_thief(node, self.node, now) {
            HintSteal::Yes => return true,
            HintSteal::Later(after) => after,
            // A worker of the node looked free; it is about to take the
            // hint, or was between two jobs (`busy` is clear while a worker
            // looks for its next one). Look again in case it stays busy.
            HintSteal::No => look_again_after(reg.hint_ns[node].load(Ordering::Relaxed)),
        };
        let soonest = self.look_again.get().map_or(after, |a| a.min(after));
        self.look_again.set(Some(soonest));
        false
    }

    /// Asks the nearest busy worker without a pending request to expose a
    /// continuation.
    fn request_work(&self) {
        let reg = &*self.registry;
        for v in reg.plans[self.index].workers_in_order() {
            let info = &reg.workers[v];
            if info.busy.load(Ordering::Relaxed) && !info.request.load(Ordering::Relaxed) {
                info.request.store(true, Ordering::Relaxed);
                return;
            }
        }
    }

    /// This worker found a job: it is busy (and, when the pool times hints,
    /// counts the job), then stops searching, in that order, so that a sleeper the
    /// hand-over wakes sees it busy (`Registry::hint_for_thief`).
    fn took_job(&self) {
        let info = self.info();
        info.busy.store(true, Ordering::Relaxed);
        if self.registry.time_hints {
            let n = self.jobs_taken.get().wrapping_add(1);
            self.jobs_taken.set(n);
            info.job_seq.store(n, Ordering::Relaxed);
        }
        self.stop_searching();
    }

    /// Stops counting as a searcher, if this worker did (found work, its
    /// latch was set, the pool terminates), handing over as
    /// [`Sleep::stop_searching`] says.
    fn stop_searching(&self) {
        if self.searching.replace(false) {
            self.registry.sleep.stop_searching(self.node);
        }
    }

    /// Finds a job, searching (bounded) and parking when there is none.
    /// Returns `None` when `latch` is set, or, without a latch, when the
    /// pool terminates.
    fn wait_for_work(&self, latch: Option<&CoreLatch>) -> Option<JobRef> {
        let info = self.info();
        info.busy.store(false, Ordering::Relaxed);
        info.request.store(false, Ordering::Relaxed);
        let recording = record::any_active() && self.registry.recorder().is_recording();
        if !recording {
            // Waiting since before any recording of ours (0), if one
            // starts meanwhile.
            self.rec_waiting(Some(0));
            let job = self.wait_for_work_inner(latch, None);
            self.rec_waiting(None);
            if record::any_active() && self.registry.recorder().is_recording() {
                // A recording began while we waited: idle since its start.
                let idle = record::now_ns().saturating_sub(self.rec_start_ns());
                self.rec_wait(0, idle);
            }
            return job;
        }
        let start = record::now_ns();
        self.rec_waiting(Some(start));
        let search = Cell::new(0u64);
        let job = self.wait_for_work_inner(latch, Some(&search));
        self.rec_waiting(None);
        if self.registry.recorder().is_recording() {
            let total = record::now_ns().saturating_sub(start.max(self.rec_start_ns()));
            let overhead = search.get().min(total);
            self.rec_wait(overhead, total - overhead);
        }
        job
    }

    /// One `find_work`, its time added to `search` when recording.
    #[inline]
    fn find_work_timed(&self, search: Option<&Cell<u64>>) -> Option<JobRef> {
        match search {
            None => self.find_work(),
            Some(acc) => {
                let t = record::now_ns();
                let job = self.find_work();
                acc.set(acc.get() + record::now_ns().saturating_sub(t));
                job
            }
        }
    }

    fn wait_for_work_inner(
        &self,
        latch: Option<&CoreLatch>,
        search: Option<&Cell<u64>>,
    ) -> Option<JobRef> {
        let reg = &*self.registry;
        let info = self.info();
        let mut rounds = 0u32;
        loop {
            if latch.is_some_and(CoreLatch::probe) {
                // Busy first: a sleeper the hand-over wakes sees it so.
                info.busy.store(true, Ordering::Relaxed);
                self.stop_searching();
                return None;
            }
            if let Some(job) = self.find_work_timed(search) {
                self.took_job();
                return Some(job);
            }
            if latch.is_none() && reg.terminating.load(Ordering::Acquire) {
                self.stop_searching();
                return None;
            }
            self.request_work();
            if rounds == 0 && !self.searching.get() {
                self.searching.set(reg.sleep.try_start_searching());
            }
            rounds += 1;
            if (self.searching.get() || latch.is_some()) && rounds < SPIN_ROUNDS {
                if rounds < YIELD_AFTER {
                    for _ in 0..(1u32 << rounds.min(6)) {
                        std::hint::spin_loop();
                    }
                } else {
                    thread::yield_now();
                }
                continue;
            }
            let mut found = None;
            let wake = reg
                .sleep
                .park(self.index, self.searching.replace(false), || {
                    if let Some(l) = latch {
                        if !l.get_sleepy() {
                            return LastLook::StayAwake;
                        }
                    }
                    self.look_again.set(None);
                    found = self.find_work_timed(search);
                    let look = if found.is_some() {
                        LastLook::TookWork
                    } else if latch.is_none() && reg.terminating.load(Ordering::SeqCst) {
                        LastLook::StayAwake
                    } else if let Some(after) = self.look_again.take() {
                        // A hint left for its node: look again when the
                        // node's estimate could allow taking it, in case
                        // the node stays busy for longer.
                        LastLook::ParkFor(after)
                    } else {
                        LastLook::Park
                    };
                    if matches!(look, LastLook::TookWork | LastLook::StayAwake) {
                        if let Some(l) = latch {
                            l.wake_up();
                        }
                    }
                    look
                });
            if let Some(l) = latch {
                l.wake_up();
            }
            if wake == Some(Wake::AsSearcher) {
                self.searching.set(true);
            }
            if let Some(job) = found {
                self.took_job();
                return Some(job);
            }
            rounds = 0;
        }
    }

    /// Runs other work until `latch` is set.
    pub(crate) fn wait_until(&self, latch: &CoreLatch) {
        if latch.probe() {
            return;
        }
        // A wait is not the waiting task's work: a frame of its own (not
        // reported) takes its time out of the task's own time.
        let framed = self.rec_push(Label::Unlabelled, false);
        while !latch.probe() {
            if let Some(job) = self.wait_for_work(Some(latch)) {
                // SAFETY: a job taken from a queue is executed once, by us.
                unsafe { self.execute(job) };
            }
        }
        if framed {
            self.rec_pop();
        }
    }
}
