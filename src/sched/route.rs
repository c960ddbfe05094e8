//! Routing placed tasks: a [`Place`] resolved against a pool becomes a
//! [`Route`] (a node's queue or a worker's inbox, as a hint or strictly),
//! the task's frame is allocated on the target node, and the job is pushed
//! there; when the task starts, its declared data is counted.

use std::sync::atomic::{AtomicU64, Ordering};

use super::hint::{self, TIME_EVERY};
use super::job::{HeapJob, JobRef};
use super::place::{self, Access, Place, PlaceError};
use super::policy::Policy;
use super::record;
use super::registry::Registry;
use super::stats::bump;
use super::worker::WorkerThread;
use crate::numa;

/// How placed tasks are spread over the workers of their node.
///
/// It applies to spawned tasks (`spawn_on`, task groups). A parallel
/// loop's node shares, and the pieces they split off, always go to the
/// node's own queue, where every worker of the node looks: a share is
/// split further by whichever worker runs it, and in one worker's inbox it
/// would wait for that worker.
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

/// Where a placed task goes, once resolved against the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// No place (or one the policy ignores, or one this pool cannot
    /// honour): the task goes where an unplaced spawn would, the spawning
    /// worker's deque (or, from outside the pool, a node queue).
    Unplaced,
    /// A node's queue (node index), as a hint or strictly.
    Node { node: usize, strict: bool },
    /// A worker's inbox, as a hint or strictly.
    Worker { worker: usize, strict: bool },
}

/// How many nodes of declared data a placed task carries inline; a place
/// whose data spans more keeps its list in a box (the rare work-pushing
/// place over many nodes).
const INLINE_NODES: usize = 2;

/// A placed task's declared data, summarised for the statistics when it
/// starts: bytes in all and bytes per node, in the order of declaration.
/// Built from the place at spawn time and moved into the task's frame:
/// the common places (one region, or regions on at most
/// [`INLINE_NODES`] nodes) need no allocation.
#[derive(Debug)]
pub(crate) enum Declared {
    /// Bytes in all, and `(node, bytes)` for the first `len` entries.
    Inline {
        bytes: u64,
        len: u8,
        nodes: [(numa::NodeId, u64); INLINE_NODES],
    },
    /// More nodes than fit inline (cold).
    Many(Box<[Access]>),
}

impl Declared {
    #[inline]
    fn of(data: &[Access]) -> Declared {
        const NONE: Declared = Declared::Inline {
            bytes: 0,
            len: 0,
            nodes: [(numa::NodeId::new(0), 0); INLINE_NODES],
        };
        if data.is_empty() {
            return NONE;
        }
        let mut bytes = 0;
        let mut len = 0;
        let mut nodes = [(numa::NodeId::new(0), 0); INLINE_NODES];
        for a in data {
            bytes += a.bytes;
            let Some(node) = a.node else { continue };
            match nodes[..len].iter_mut().find(|(n, _)| *n == node) {
                Some((_, b)) => *b += a.bytes,
                None if len < INLINE_NODES => {
                    nodes[len] = (node, a.bytes);
                    len += 1;
                }
                None => return Declared::Many(data.into()),
            }
        }
        Declared::Inline {
            bytes,
            len: len as u8,
            nodes,
        }
    }

    /// Whether no data was declared.
    fn is_empty(&self) -> bool {
        matches!(
            self,
            Declared::Inline {
                bytes: 0,
                len: 0,
                ..
            }
        )
    }

    /// The node of the first declared region whose node is known.
    fn first_node(&self) -> Option<numa::NodeId> {
        match self {
            Declared::Inline { len, nodes, .. } => (*len > 0).then(|| nodes[0].0),
            Declared::Many(data) => data.iter().find_map(|a| a.node),
        }
    }

    /// Bytes in all, and bytes on `here`.
    fn bytes(&self, here: numa::NodeId) -> (u64, u64) {
        match self {
            Declared::Inline { bytes, len, nodes } => {
                let local = nodes[..usize::from(*len)]
                    .iter()
                    .filter(|(n, _)| *n == here)
                    .map(|(_, b)| b)
                    .sum();
                (*bytes, local)
            }
            Declared::Many(data) => data.iter().fold((0, 0), |(all, local), a| {
                (
                    all + a.bytes,
                    local + if a.node == Some(here) { a.bytes } else { 0 },
                )
            }),
        }
    }
}

/// What a placed task carries to the worker that runs it, for the
/// statistics and the temporal-affinity table: its declared data and, for
/// a temporal place, its key.
#[derive(Debug)]
pub(crate) struct PlacedTask {
    declared: Declared,
    key: Option<u64>,
    /// The recording's id of its push (0: sent while not recording).
    push: u64,
}

impl PlacedTask {
    pub(crate) fn of(place: &Place) -> PlacedTask {
        PlacedTask {
            declared: Declared::of(&place.data),
            key: match place.target {
                place::PlaceKind::After(k) => Some(k),
                _ => None,
            },
            push: 0,
        }
    }

    /// Book-keeping when the task starts on the current worker (a worker
    /// of the pool it was routed in: only that pool's workers take jobs
    /// from its queues): counts it, its declared bytes (local or not) and,
    /// for temporal places, remembers the worker. Under `Locality` on
    /// several nodes it also times one placed task in [`TIME_EVERY`] (and
    /// the first) of each worker: keep the returned guard until the task
    /// ends.
    pub(crate) fn begins(&self) -> PlacedRun<'static> {
        let Some(wt) = WorkerThread::current() else {
            return PlacedRun { timed: None };
        };
        let reg = &*wt.registry;
        let timed = if reg.time_hints {
            let n = wt.placed_runs.get();
            wt.placed_runs.set(n.wrapping_add(1));
            (n % TIME_EVERY == 0).then(|| (&*reg.hint_ns[wt.node], record::now_ns()))
        } else {
            None
        };
        let stats = &wt.info().stats;
        bump(&stats.placed, 1);
        let mut declared = 0;
        if !self.declared.is_empty() {
            let (all, local) = self.declared.bytes(reg.topology.nodes()[wt.node].id());
            bump(&stats.declared_bytes, all);
            bump(&stats.local_bytes, local);
            declared = all;
        }
        if record::any_active() {
            wt.rec_placed(self.declared.first_node(), declared, self.push);
        }
        if let Some(key) = self.key {
            reg.recent[key as usize % RECENT_SLOTS].store(wt.index + 1, Ordering::Relaxed);
        }
        PlacedRun { timed }
    }
}

/// A placed task running on a worker, from [`PlacedTask::begins`]: when
/// timed, its end adds its duration to the mean of the node it ran on
/// (the input of the hint cost rule, `hint.rs`).
#[must_use = "the task is timed until the guard drops"]
pub(crate) struct PlacedRun<'a> {
    timed: Option<(&'a AtomicU64, u64)>,
}

impl Drop for PlacedRun<'_> {
    fn drop(&mut self) {
        if let Some((mean, start)) = self.timed {
            hint::add_to_mean(mean, record::now_ns().saturating_sub(start));
        }
    }
}

/// Slots of the temporal-affinity table (key hash → last worker + 1).
pub(super) const RECENT_SLOTS: usize = 4096;

impl Registry {
    /// Whether this pool can honour `place`: a worker place names one of
    /// its workers, a node place (or a data place's node) a node of its
    /// topology. A place made by another pool may not.
    pub(crate) fn check_place(&self, place: &Place) -> Result<(), PlaceError> {
        match place.target {
            place::PlaceKind::Worker(index) if index >= self.workers.len() => {
                Err(PlaceError::WorkerOutOfRange {
                    index,
                    workers: self.workers.len(),
                })
            }
            place::PlaceKind::Node(node) if self.topology.node_index(node).is_none() => {
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
        Route::Unplaced
    }

    /// The one path of every placed spawn ([`Scope::spawn_on`],
    /// [`ThreadPool::spawn_on`]): resolves `place` to a route, moves `body`
    /// into a frame on the route's node, with what the statistics need of
    /// the place, and pushes it. One thread-local read (the spawning
    /// worker), no reference count and, for the common places, no
    /// allocation besides the frame.
    ///
    /// # Safety
    /// Everything `body` borrows must outlive its execution (as for
    /// [`HeapJob::into_job_ref`]).
    ///
    /// [`Scope::spawn_on`]: crate::Scope::spawn_on
    /// [`ThreadPool::spawn_on`]: crate::ThreadPool::spawn_on
    pub(crate) unsafe fn spawn_placed<F>(&self, place: &Place, body: F)
    where
        F: FnOnce() + Send,
    {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.spawn_placed_claim(place, move |task: PlacedTask| {
                let _run = task.begins();
                body()
            })
        }
    }

    /// [`spawn_placed`](Self::spawn_placed) for a job that may find its
    /// task gone (a claim of a group's task started from outside the pool,
    /// which another job or a wait may take first): `body` gets the placed
    /// task's book-keeping and calls [`PlacedTask::begins`] only if it runs
    /// the task, so that a job that runs nothing counts nothing in the
    /// statistics and sets no temporal key.
    ///
    /// # Safety
    /// As [`spawn_placed`](Self::spawn_placed).
    pub(crate) unsafe fn spawn_placed_claim<F>(&self, place: &Place, body: F)
    where
        F: FnOnce(PlacedTask) + Send,
    {
        let here = WorkerThread::current().filter(|wt| std::ptr::eq(&*wt.registry, self));
        let route = self.route(place, here);
        let mut task = PlacedTask::of(place);
        let recorded = record::any_active() && route != Route::Unplaced;
        if recorded {
            task.push = self.rec_push_id();
        }
        let push = task.push;
        let job = HeapJob::new(move || body(task));
        // SAFETY: forwarded from the caller.
        let job = unsafe { job.into_job_ref(self.frame_node(route, here)) };
        self.push_routed(route, job, here);
        if recorded && push != 0 {
            self.rec_pushed(push, route, here);
        }
    }

    /// Resolves `place` against this pool, for a spawn from `here` (the
    /// calling thread's worker when it belongs to this pool): where a task
    /// spawned at it goes. A place that fails
    /// [`check_place`](Self::check_place) is counted in the statistics
    /// (`PoolStats::unroutable`) and the task goes where an unplaced one
    /// would (under every policy, so that policies compare alike). The
    /// placing policies find such places in the match below, without a
    /// second lookup.
    pub(crate) fn route(&self, place: &Place, here: Option<&WorkerThread>) -> Route {
        let strict = place.strict || self.policy == Policy::StrictLocality;
        if !strict && !self.policy.honours_places() {
            // `Flat` and `Hierarchical` ignore hints; a strict place is
            // honoured under every policy (below).
            return match self.check_place(place) {
                Ok(()) => Route::Unplaced,
                Err(_) => self.unroutable(),
            };
        }
        match place.target {
            place::PlaceKind::Anywhere => Route::Unplaced,
            place::PlaceKind::Node(id) => match self.topology.node_index(id) {
                Some(n) => Route::Node {
                    node: self.redirect[n],
                    strict,
                },
                None => self.unroutable(),
            },
            place::PlaceKind::Worker(w) if w < self.workers.len() => {
                Route::Worker { worker: w, strict }
            }
            place::PlaceKind::Worker(_) => self.unroutable(),
            place::PlaceKind::After(key) => {
                match self.recent[key as usize % RECENT_SLOTS].load(Ordering::Relaxed) {
                    0 => Route::Unplaced,
                    w => Route::Worker {
                        worker: w - 1,
                        strict,
                    },
                }
            }
            place::PlaceKind::Pushed => {
                let random = || match here {
                    Some(wt) => wt.next_random(),
                    None => self.inject_round_robin.fetch_add(1, Ordering::Relaxed),
                };
                match place::push_target(
                    &place.data,
                    self.push_threshold,
                    &self.nodes_with_workers,
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
                        _ => Route::Unplaced,
                    },
                }
            }
        }
    }

    /// The node a placed job's frame should live on: the node it is sent
    /// to, when the workers are pinned to the machine's real nodes (on a
    /// described topology the node numbers need not exist). `None`: the
    /// spawning thread's node, also when that is where the job goes (a
    /// spawning worker's node: its slab cache serves the frame without a
    /// lock).
    pub(crate) fn frame_node(
        &self,
        route: Route,
        here: Option<&WorkerThread>,
    ) -> Option<numa::NodeId> {
        if !self.pinned {
            return None;
        }
        let node = match route {
            Route::Unplaced => return None,
            Route::Node { node, .. } => node,
            Route::Worker { worker, .. } => self.workers[worker].seat.node,
        };
        if here.is_some_and(|wt| wt.node == node) {
            return None;
        }
        Some(self.topology.nodes()[node].id())
    }

    /// Sends a placed job where `route` says; `here` is the spawning
    /// thread's worker when it belongs to this pool.
    pub(crate) fn push_routed(&self, route: Route, job: JobRef, here: Option<&WorkerThread>) {
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
        self.deliver(route, job, here);
    }

    /// Sends a placed job to `route` as it stands: a node route goes to
    /// the node's own queue whatever the pool's distribution (where every
    /// worker of the node, the spawner among them, looks), a worker route
    /// to that worker's inbox. [`push_routed`](Self::push_routed) after
    /// the distribution's choice of worker.
    pub(crate) fn deliver(&self, route: Route, job: JobRef, here: Option<&WorkerThread>) {
        if let Some(wt) = here {
            let to_other_node = match route {
                Route::Node { node, .. } => node != wt.node,
                Route::Worker { worker, .. } => self.workers[worker].seat.node != wt.node,
                Route::Unplaced => false,
            };
            if to_other_node {
                bump(&wt.info().stats.pushed, 1);
            }
        }
        match route {
            Route::Unplaced => match here {
                Some(wt) => wt.push(job),
                None => self.inject(job),
            },
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
}
