//! Scheduler statistics: what ran where, who stole from whom, and the
//! locality ratio of declared data.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use super::registry::Registry;
use crate::numa::NodeId;

/// Counters of one worker, written (Relaxed) by that worker only, except
/// `pushed`, which the spawning thread bumps.
#[derive(Default)]
pub(crate) struct WorkerStats {
    /// Jobs taken from a queue or stolen and run (inline join halves are
    /// not separate jobs and are not counted).
    pub(crate) jobs: AtomicU64,
    /// Placed tasks (spawned with a place) run by this worker.
    pub(crate) placed: AtomicU64,
    pub(crate) from_own_queues: AtomicU64,
    pub(crate) steals_l3: AtomicU64,
    pub(crate) steals_node: AtomicU64,
    /// Per node index: jobs taken from that (remote) node's queue or
    /// workers.
    pub(crate) steals_remote: Vec<AtomicU64>,
    /// Placed tasks this worker sent to another node.
    pub(crate) pushed: AtomicU64,
    pub(crate) declared_bytes: AtomicU64,
    pub(crate) local_bytes: AtomicU64,
}

impl WorkerStats {
    pub(crate) fn new(nodes: usize) -> WorkerStats {
        WorkerStats {
            steals_remote: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            ..WorkerStats::default()
        }
    }

    pub(crate) fn reset(&self) {
        for c in [
            &self.jobs,
            &self.placed,
            &self.from_own_queues,
            &self.steals_l3,
            &self.steals_node,
            &self.pushed,
            &self.declared_bytes,
            &self.local_bytes,
        ]
        .into_iter()
        .chain(&self.steals_remote)
        {
            c.store(0, Ordering::Relaxed);
        }
    }
}

#[inline]
pub(crate) fn bump(c: &AtomicU64, by: u64) {
    // Single writer in the common case; a plain load+store would lose
    // updates from `pushed`'s other writers, so use fetch_add.
    c.fetch_add(by, Ordering::Relaxed);
}

/// Per-node totals of [`PoolStats`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeStats {
    /// The node.
    pub node: NodeId,
    /// Jobs its workers took from a queue or stole, and ran.
    pub jobs: u64,
    /// Placed tasks its workers ran.
    pub placed: u64,
}

/// A snapshot of a pool's scheduling statistics, from
/// [`ThreadPool::stats`](crate::ThreadPool::stats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Per node of the topology, in topology order.
    pub nodes: Vec<NodeStats>,
    /// Jobs a worker took from its own inboxes or its node's queues.
    pub from_own_queues: u64,
    /// Jobs stolen from a worker sharing the thief's L3 cache.
    pub steals_same_l3: u64,
    /// Jobs stolen from another worker of the thief's node.
    pub steals_same_node: u64,
    /// Jobs taken from another node, by distance (ascending).
    pub steals_remote: Vec<(u32, u64)>,
    /// Placed tasks sent to a node other than the spawner's.
    pub pushed: u64,
    /// Bytes of data declared by the placed tasks that ran.
    pub declared_bytes: u64,
    /// Of those, bytes on the node that ran the task.
    pub local_bytes: u64,
    /// Placed tasks whose place this pool cannot honour: a worker index
    /// beyond its workers, or a node outside its topology (a place made
    /// for another pool). They ran as unplaced tasks; `try_spawn_on`
    /// ([`Scope::try_spawn_on`](crate::Scope::try_spawn_on),
    /// [`ThreadPool::try_spawn_on`](crate::ThreadPool::try_spawn_on))
    /// refuses such places with an error instead.
    pub unroutable: u64,
}

impl PoolStats {
    /// Local ÷ declared bytes: Drebes' approximate locality R_loc^appr,
    /// or `None` when no task declared data.
    pub fn locality_ratio(&self) -> Option<f64> {
        (self.declared_bytes > 0).then(|| self.local_bytes as f64 / self.declared_bytes as f64)
    }

    /// Jobs run, over all nodes.
    pub fn jobs(&self) -> u64 {
        self.nodes.iter().map(|n| n.jobs).sum()
    }

    /// Jobs taken from other nodes, over all distances.
    ///
    /// ```
    /// use terroir::PoolStats;
    /// let stats = PoolStats { steals_remote: vec![(20, 3), (30, 4)], ..PoolStats::default() };
    /// assert_eq!(stats.remote_steals(), 7);
    /// ```
    pub fn remote_steals(&self) -> u64 {
        self.steals_remote.iter().map(|&(_, c)| c).sum()
    }
}

impl fmt::Display for PoolStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.nodes {
            writeln!(f, "{}: {} jobs, {} placed tasks", n.node, n.jobs, n.placed)?;
        }
        write!(
            f,
            "own queues {}, steals: same L3 {}, same node {}, remote",
            self.from_own_queues, self.steals_same_l3, self.steals_same_node
        )?;
        if self.steals_remote.is_empty() {
            write!(f, " 0")?;
        }
        for (d, c) in &self.steals_remote {
            write!(f, " {c}@{d}")?;
        }
        write!(f, "; pushed {}", self.pushed)?;
        if self.unroutable > 0 {
            write!(
                f,
                "; {} with a place this pool cannot honour",
                self.unroutable
            )?;
        }
        match self.locality_ratio() {
            Some(r) => write!(
                f,
                "; locality {:.3} ({} of {} declared bytes local)",
                r, self.local_bytes, self.declared_bytes
            ),
            None => write!(f, "; no declared data"),
        }
    }
}

impl Registry {
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
}
