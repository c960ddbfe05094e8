//! What a recording notes besides tasks: waits for work, steals, pushes of
//! placed tasks, and samples of the placed tasks queued on each node.

use super::*;
use crate::sched::registry::Registry;
use crate::sched::route::Route;

/// One wait for work of a worker while its pool recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitRecord {
    /// The worker.
    pub worker: usize,
    /// Start, in nanoseconds from the start of the recording (a wait that
    /// began before it starts at 0).
    pub start_ns: u64,
    /// End (the recording's end for a wait still going on at the stop).
    pub end_ns: u64,
    /// Of `end_ns - start_ns`, the time spent looking for work (its own
    /// queues, steal attempts); the rest was idle. The looking is spread
    /// over the wait, between spins and sleeps.
    pub overhead_ns: u64,
}

impl WaitRecord {
    /// The idle part of the wait.
    pub fn idle_ns(&self) -> u64 {
        (self.end_ns.saturating_sub(self.start_ns)).saturating_sub(self.overhead_ns)
    }
}

/// Where a job a worker took came from, as [`PoolStats`](crate::PoolStats)
/// counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StealLevel {
    /// Its own node's queue (jobs injected from outside the pool).
    NodeQueue,
    /// A worker sharing its L3 cache.
    SameL3,
    /// Another worker of its node.
    SameNode,
    /// Another node's worker or queue.
    Remote,
}

impl StealLevel {
    /// The level's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            StealLevel::NodeQueue => "own node's queue",
            StealLevel::SameL3 => "same L3",
            StealLevel::SameNode => "same node",
            StealLevel::Remote => "remote node",
        }
    }
}

impl fmt::Display for StealLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A job a worker took from another worker or from a node's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StealRecord {
    /// Its id, unique in the recording (shared with pushes); the job's
    /// [`TaskRecord::stolen`].
    pub id: u64,
    /// When, in nanoseconds from the start of the recording.
    pub time_ns: u64,
    /// The worker that took it.
    pub thief: usize,
    /// The worker it was taken from (`None`: a node's queue).
    pub victim: Option<usize>,
    /// The node index of that worker or queue.
    pub victim_node: usize,
    /// The level.
    pub level: StealLevel,
}

/// A placed task sent to a node's queue or a worker's inbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PushRecord {
    /// Its id, unique in the recording (shared with steals); the task's
    /// [`TaskRecord::pushed`].
    pub id: u64,
    /// When, in nanoseconds from the start of the recording.
    pub time_ns: u64,
    /// The worker that spawned it (`None`: a thread outside the pool).
    pub from: Option<usize>,
    /// The node index it was sent to.
    pub to_node: usize,
    /// The worker it was sent to, for worker places.
    pub to_worker: Option<usize>,
    /// Whether it may run only there.
    pub strict: bool,
    /// Placed tasks queued on `to_node` just after (the pushed one
    /// included: at least 1, even when a worker took it before the count).
    pub queued: u64,
}

impl PushRecord {
    /// Whether it went to another node than its spawner's (what
    /// [`PoolStats::pushed`](crate::PoolStats::pushed) counts), given each
    /// worker's node index.
    pub fn is_remote(&self, worker_nodes: &[usize]) -> bool {
        self.from
            .and_then(|w| worker_nodes.get(w))
            .is_some_and(|&n| n != self.to_node)
    }
}

/// The placed tasks waiting in a node's queues and its workers' inboxes at
/// one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSample {
    /// When, in nanoseconds from the start of the recording.
    pub time_ns: u64,
    /// The node index.
    pub node: usize,
    /// Tasks queued.
    pub queued: u64,
}

impl Registry {
    /// Placed tasks queued on node index `node`: its shared queues and its
    /// workers' inboxes (a snapshot: the queues change meanwhile).
    fn placed_queued(&self, node: usize) -> u64 {
        let inboxes: usize = self.node_workers[node]
            .iter()
            .map(|&w| self.workers[w].hint_inbox.len() + self.workers[w].strict_inbox.len())
            .sum();
        (self.hint_queues[node].len() + self.strict_queues[node].len() + inboxes) as u64
    }

    /// A new id for a push, when this pool records (0: not recording).
    #[inline]
    pub(crate) fn rec_push_id(&self) -> u64 {
        if !any_active() || !self.recorder().is_recording() {
            return 0;
        }
        self.recorder().next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Notes the push `id` (from [`rec_push_id`](Self::rec_push_id), not 0)
    /// of a placed task along `route`, spawned on `here`.
    #[cold]
    pub(crate) fn rec_pushed(&self, id: u64, route: Route, here: Option<&WorkerThread>) {
        let (to_node, to_worker, strict) = match route {
            Route::Unplaced => return,
            Route::Node { node, strict } => (node, None, strict),
            Route::Worker { worker, strict } => {
                (self.workers[worker].seat.node, Some(worker), strict)
            }
        };
        let rec = self.recorder();
        let time_ns = now_ns().saturating_sub(rec.start_ns.load(Ordering::Relaxed));
        // Read after the push: a worker of the node may have taken the task
        // already, but at the push it was queued (so at least 1; the test
        // that asserts it failed once in about twenty runs before this).
        let queued = self.placed_queued(to_node).max(1);
        let push = PushRecord {
            id,
            time_ns,
            from: here.map(|wt| wt.index()),
            to_node,
            to_worker,
            strict,
            queued,
        };
        let sample = QueueSample {
            time_ns,
            node: to_node,
            queued,
        };
        let write = |d: &mut SlotData| {
            d.pushes.push(push);
            d.queued.push(sample);
        };
        match here {
            Some(wt) => wt.rec_write(write),
            None => rec.write_outside(write),
        }
    }
}

impl WorkerThread {
    /// Notes a job taken from `victim` (a worker; `None`: a node's queue)
    /// of node index `node`; the next job this worker opens a frame for is
    /// that one.
    #[cold]
    pub(crate) fn rec_steal(&self, victim: Option<usize>, node: usize) {
        let reg = self.registry();
        let rec = reg.recorder();
        if !rec.is_recording() {
            return;
        }
        let level = if node != self.node_index() {
            StealLevel::Remote
        } else {
            match victim {
                None => StealLevel::NodeQueue,
                Some(v) if reg.workers[v].seat.group == self.info().seat.group => {
                    StealLevel::SameL3
                }
                Some(_) => StealLevel::SameNode,
            }
        };
        let id = rec.next_id.fetch_add(1, Ordering::Relaxed);
        let steal = StealRecord {
            id,
            time_ns: now_ns().saturating_sub(rec.start_ns.load(Ordering::Relaxed)),
            thief: self.index(),
            victim,
            victim_node: node,
            level,
        };
        self.rec_state().arrived.set(Some((rec_epoch(self), id)));
        self.rec_write(|d| d.steals.push(steal));
    }

    /// Notes, on the newest frame (the placed task's job), its declared
    /// data's node and bytes and the push that sent it, and samples the
    /// placed tasks queued on this worker's node.
    #[cold]
    pub(crate) fn rec_placed(&self, node: Option<NodeId>, bytes: u64, push: u64) {
        let reg = self.registry();
        if !reg.recorder().is_recording() {
            return;
        }
        if let Some(f) = self.rec_state().frames.borrow_mut().last_mut() {
            if let Some(node) = node {
                f.data_node.get_or_insert(node);
            }
            f.data_bytes = bytes;
            if push != 0 {
                f.pushed = Some(push);
            }
        }
        let sample = QueueSample {
            time_ns: now_ns().saturating_sub(self.rec_start_ns()),
            node: self.node_index(),
            queued: reg.placed_queued(self.node_index()),
        };
        self.rec_write(|d| d.queued.push(sample));
    }
}
