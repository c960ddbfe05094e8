//! Places: where a task wants to run, and the data it declares.
//!
//! A [`Place`] is a NUMA node, a worker, the node of some data, the worker
//! that last ran a task with the same key (temporal mode), or the node a
//! set of declared accesses is cheapest from (work-pushing). It is a hint
//! unless made [`strict`](Place::strict). A strict place is honoured under
//! every [`Policy`](crate::Policy); what happens to a hint depends on the
//! policy: `Flat` and `Hierarchical` ignore hints (they are the
//! locality-oblivious baselines), `Locality` (the default) honours them as
//! hints and `StrictLocality` makes every node or worker place strict.

use std::fmt;
use std::hash::{Hash, Hasher};

use crate::numa::{locate, NodeId, NumaError, Sample};
use crate::pool::{NodeBox, NodeVec};

/// Why a place could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum PlaceError {
    /// A node index outside the pool's topology.
    NodeOutOfRange {
        /// The index given.
        index: usize,
        /// How many nodes the pool's topology has (valid: `0..nodes`).
        nodes: usize,
    },
    /// A node of the topology that has no worker in this pool (fewer
    /// threads than nodes), so a task placed there could never run.
    NoWorkerOnNode {
        /// The node.
        node: NodeId,
    },
    /// A worker index outside the pool.
    WorkerOutOfRange {
        /// The index given.
        index: usize,
        /// How many workers the pool has (valid: `0..workers`).
        workers: usize,
    },
    /// A node that is not in this pool's topology: the place was made for
    /// another pool, or its data lives on a node this topology does not
    /// describe.
    NodeNotInPool {
        /// The node the place names.
        node: NodeId,
        /// How many nodes the pool's topology has.
        nodes: usize,
    },
    /// The location query behind [`Place::slice`] failed.
    Numa(NumaError),
}

impl fmt::Display for PlaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlaceError::NodeOutOfRange { index, nodes } => write!(
                f,
                "node index {index} is out of range: the pool's topology has {nodes} node(s) \
                 (valid indices 0..{nodes})"
            ),
            PlaceError::NoWorkerOnNode { node } => {
                write!(
                    f,
                    "{node} has no worker in this pool (more nodes than threads?)"
                )
            }
            PlaceError::WorkerOutOfRange { index, workers } => write!(
                f,
                "worker index {index} is out of range: the pool has {workers} worker(s) \
                 (valid indices 0..{workers})"
            ),
            PlaceError::NodeNotInPool { node, nodes } => write!(
                f,
                "{node} is not a node of this pool's topology ({nodes} node(s)): the place \
                 was made for another pool or topology"
            ),
            PlaceError::Numa(e) => write!(f, "locating the data failed: {e}"),
        }
    }
}

impl std::error::Error for PlaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PlaceError::Numa(e) => Some(e),
            _ => None,
        }
    }
}

impl From<NumaError> for PlaceError {
    fn from(e: NumaError) -> Self {
        PlaceError::Numa(e)
    }
}

/// One data region a task declares for work-pushing ([`Place::pushed`]):
/// where it lives, how large it is, whether the task writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub(crate) node: Option<NodeId>,
    pub(crate) bytes: u64,
    pub(crate) write: bool,
}

impl Access {
    /// `bytes` on `node` (`None`: unknown or spread, e.g. interleaved),
    /// read or written.
    pub fn new(node: Option<NodeId>, bytes: usize, write: bool) -> Access {
        Access {
            node,
            bytes: bytes as u64,
            write,
        }
    }

    /// The task reads this vector (its home node is known: no syscall).
    pub fn read<T>(v: &NodeVec<T>) -> Access {
        Access::new(v.home(), std::mem::size_of_val(&**v), false)
    }

    /// The task writes this vector.
    pub fn write<T>(v: &NodeVec<T>) -> Access {
        Access::new(v.home(), std::mem::size_of_val(&**v), true)
    }

    /// The task reads (`write == false`) or writes a slice whose node is
    /// found by a sampled page query (cache the [`Access`] if you reuse it).
    ///
    /// # Errors
    /// [`PlaceError::Numa`] when the query fails.
    pub fn slice<T>(data: &[T], write: bool) -> Result<Access, PlaceError> {
        let node = locate(data, Sample::default())?.majority();
        Ok(Access::new(node, std::mem::size_of_val(data), write))
    }

    /// Bytes of the region.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The node holding it, if known.
    pub fn node(&self) -> Option<NodeId> {
        self.node
    }
}

/// What a [`Place`] names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PlaceKind {
    /// No preference: an ordinary spawn.
    Anywhere,
    /// A NUMA node (by OS number).
    Node(NodeId),
    /// A worker (by index in the pool).
    Worker(usize),
    /// The worker that last ran a task with this key (hashed).
    After(u64),
    /// The node cheapest for the place's declared accesses.
    Pushed,
}

/// Where a task wants to run, and the data it declares.
///
/// A place is a NUMA node, a worker, the node of some data, the worker
/// that last ran a task with the same key (temporal mode), or the node a
/// set of declared accesses is cheapest from (work-pushing). It is a hint
/// unless made [`strict`](Place::strict). A strict place is honoured under
/// every [`Policy`](crate::Policy); what happens to a hint depends on the
/// policy: `Flat` and `Hierarchical` ignore hints (they are the
/// locality-oblivious baselines), `Locality` (the default) honours them as
/// hints and `StrictLocality` makes every node or worker place strict.
///
///
/// Make node and worker places with the pool ([`ThreadPool::node`],
/// [`ThreadPool::worker`]), which check the index against the topology;
/// data places with [`Place::data`], [`Place::boxed`] or [`Place::slice`];
/// temporal places with [`Place::after`]; work-pushing places with
/// [`Place::pushed`].
///
/// [`ThreadPool::node`]: crate::ThreadPool::node
/// [`ThreadPool::worker`]: crate::ThreadPool::worker
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub(crate) target: PlaceKind,
    pub(crate) strict: bool,
    /// Declared data, counted in the locality ratio.
    pub(crate) data: Vec<Access>,
}

impl Place {
    pub(crate) fn new(target: PlaceKind) -> Place {
        Place {
            target,
            strict: false,
            data: Vec::new(),
        }
    }

    /// No preference: [`spawn_on`](crate::Scope::spawn_on) with it is an
    /// ordinary spawn.
    pub fn anywhere() -> Place {
        Place::new(PlaceKind::Anywhere)
    }

    /// No preference and no declared data: running the task anywhere, by
    /// any means (a `join` branch, say), loses nothing a spawn would keep.
    pub(crate) fn is_plain(&self) -> bool {
        self.target == PlaceKind::Anywhere && self.data.is_empty()
    }

    /// The node of a placed vector (no system call), declaring its bytes.
    /// A [blocked](crate::pool::Placement::Blocked) vector declares each
    /// node's share of its bytes, and the place is the node holding the
    /// largest share (the first of them on a tie). An interleaved vector
    /// has no node holding more than the others: the task gets no node
    /// preference, but its bytes still count in the statistics.
    ///
    /// ```
    /// use terroir::numa::{NodeId, NodeSet};
    /// use terroir::pool::{NodeVec, Placement};
    /// use terroir::Place;
    /// let node = terroir::numa::mems_allowed().unwrap().iter().next().unwrap();
    /// let blocked = NodeVec::from_elem_on(0u64, 1 << 16, Placement::Blocked(NodeSet::from_iter([node]))).unwrap();
    /// let place = Place::data(&blocked);
    /// assert_eq!(place.node(), Some(NodeId::new(node)));
    /// assert_eq!(place.declared().iter().map(|a| a.bytes()).sum::<u64>(), 8 << 16);
    /// ```
    pub fn data<T>(v: &NodeVec<T>) -> Place {
        let shares = v.share_ranges();
        if shares.len() > 1 {
            let size = std::mem::size_of::<T>();
            let data: Vec<Access> = shares
                .iter()
                .map(|(node, r)| Access::new(Some(*node), r.len() * size, false))
                .collect();
            // The largest share; the first of the largest on a tie.
            let largest = data
                .iter()
                .rev()
                .max_by_key(|a| a.bytes)
                .and_then(|a| a.node);
            return Place {
                target: largest.map_or(PlaceKind::Anywhere, PlaceKind::Node),
                strict: false,
                data,
            };
        }
        let access = Access::read(v);
        let target = access.node.map_or(PlaceKind::Anywhere, PlaceKind::Node);
        Place {
            target,
            strict: false,
            data: vec![access],
        }
    }

    /// A place on the node `id` (an OS node number), for the loop layer;
    /// a pool whose topology lacks the node counts it as unroutable.
    pub(crate) fn on_node(id: NodeId) -> Place {
        Place::new(PlaceKind::Node(id))
    }

    /// The node of a placed box (no system call), declaring its bytes.
    pub fn boxed<T>(b: &NodeBox<T>) -> Place {
        Place {
            target: PlaceKind::Node(b.home()),
            strict: false,
            data: vec![Access::new(Some(b.home()), std::mem::size_of::<T>(), false)],
        }
    }

    /// The node holding most of `data`'s pages, by the sampled page query
    /// (every 16th page); the caller may keep the `Place` and reuse it.
    /// Data not backed by memory yet has no node: the task gets no node
    /// preference.
    ///
    /// # Errors
    /// [`PlaceError::Numa`] when the query fails.
    pub fn slice<T>(data: &[T]) -> Result<Place, PlaceError> {
        let access = Access::slice(data, false)?;
        Ok(Place {
            target: access.node.map_or(PlaceKind::Anywhere, PlaceKind::Node),
            strict: false,
            data: vec![access],
        })
    }

    /// Temporal affinity (Klinkenberg): run where the last task spawned
    /// with the same `key` ran, for data reused through caches rather than
    /// pinned in memory. The first task with a key runs like an ordinary
    /// spawn.
    pub fn after<K: Hash>(key: K) -> Place {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        Place::new(PlaceKind::After(h.finish()))
    }

    /// Work-pushing (Drebes §7.2): the task declares the data it reads and
    /// writes, and runs on the node minimising Σ bytes × distance (writes
    /// weigh twice). Regions below the pool's threshold (default 10 kB, see
    /// [`ThreadPoolBuilder::push_threshold`](crate::ThreadPoolBuilder::push_threshold))
    /// are ignored; when nothing is left, or the spawning node is among the
    /// cheapest, the task stays local (on the spawner's deque, or, when
    /// strict, on the spawner's node); other ties are broken at random.
    pub fn pushed(accesses: impl IntoIterator<Item = Access>) -> Place {
        Place {
            target: PlaceKind::Pushed,
            strict: false,
            data: accesses.into_iter().collect(),
        }
    }

    /// Never run this task off its node (or worker): Olivier et al.'s
    /// strict mode, under every [`Policy`](crate::Policy) (`Flat` and
    /// `Hierarchical` included). Temporal and pushed places become strict
    /// once resolved.
    pub fn strict(mut self) -> Place {
        self.strict = true;
        self
    }

    /// Whether the place is strict.
    ///
    /// ```
    /// let pool = terroir::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    /// let hint = pool.node(0).unwrap();
    /// assert!(!hint.is_strict());
    /// assert!(hint.strict().is_strict());
    /// ```
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The node asked for, when the place names one directly.
    pub fn node(&self) -> Option<NodeId> {
        match self.target {
            PlaceKind::Node(n) => Some(n),
            _ => None,
        }
    }

    /// The data declared with this place.
    pub fn declared(&self) -> &[Access] {
        &self.data
    }
}

/// Work-pushing: the index (into `costs`' nodes) of the cheapest node for
/// `accesses`, or `None` to stay local. `node_index` maps a node id to a
/// node index with workers (after redirection); `distance(a, b)` is the
/// distance between node indices; `candidates` are the node indices with
/// workers; `local` the spawning node index; `random` breaks ties.
pub(crate) fn push_target(
    accesses: &[Access],
    threshold: u64,
    candidates: &[usize],
    local: Option<usize>,
    node_index: impl Fn(NodeId) -> Option<usize>,
    distance: impl Fn(usize, usize) -> u32,
    random: impl FnOnce() -> usize,
) -> Option<usize> {
    let regions: Vec<(usize, u64)> = accesses
        .iter()
        .filter(|a| a.bytes >= threshold)
        .filter_map(|a| {
            let n = node_index(a.node?)?;
            Some((n, a.bytes * if a.write { 2 } else { 1 }))
        })
        .collect();
    if regions.is_empty() || candidates.is_empty() {
        return None;
    }
    let cost = |c: usize| -> u128 {
        regions
            .iter()
            .map(|&(n, w)| u128::from(w) * u128::from(distance(c, n)))
            .sum()
    };
    let costs: Vec<u128> = candidates.iter().map(|&c| cost(c)).collect();
    let best = *costs.iter().min()?;
    let tied: Vec<usize> = candidates
        .iter()
        .zip(&costs)
        .filter(|(_, &c)| c == best)
        .map(|(&n, _)| n)
        .collect();
    if let Some(l) = local {
        if tied.contains(&l) {
            return None;
        }
    }
    Some(tied[random() % tied.len()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn acc(node: u32, bytes: usize, write: bool) -> Access {
        Access::new(Some(NodeId::new(node)), bytes, write)
    }

    /// 4 nodes, pairs (0,1) and (2,3) at 16, across pairs at 32.
    fn dist(a: usize, b: usize) -> u32 {
        if a == b {
            10
        } else if a / 2 == b / 2 {
            16
        } else {
            32
        }
    }

    fn idx(n: NodeId) -> Option<usize> {
        Some(n.os_index() as usize)
    }

    #[test]
    fn pushing_picks_the_cheapest_node() {
        let all = [0, 1, 2, 3];
        // All data on node 2: go there.
        let r = push_target(
            &[acc(2, 1 << 20, false)],
            10_000,
            &all,
            Some(0),
            idx,
            dist,
            || 0,
        );
        assert_eq!(r, Some(2));
        // Reads on 1 (1 MiB) vs a write on 3 (600 KiB, weighs 1.2 MiB): 3.
        let a = [acc(1, 1 << 20, false), acc(3, 600 << 10, true)];
        assert_eq!(
            push_target(&a, 10_000, &all, Some(0), idx, dist, || 0),
            Some(3)
        );
        // Small regions are ignored: stay local.
        let a = [acc(3, 9_999, true)];
        assert_eq!(
            push_target(&a, 10_000, &all, Some(0), idx, dist, || 0),
            None
        );
        // A tie including the local node stays local.
        let a = [acc(0, 1 << 20, false), acc(1, 1 << 20, false)];
        assert_eq!(
            push_target(&a, 10_000, &all, Some(1), idx, dist, || 0),
            None
        );
        // A tie not including it is broken by the random draw.
        assert_eq!(
            push_target(&a, 10_000, &all, Some(3), idx, dist, || 0),
            Some(0)
        );
        assert_eq!(
            push_target(&a, 10_000, &all, Some(3), idx, dist, || 1),
            Some(1)
        );
        // Unknown nodes are ignored.
        let a = [Access::new(None, 1 << 30, true)];
        assert_eq!(
            push_target(&a, 10_000, &all, Some(0), idx, dist, || 0),
            None
        );
    }

    proptest! {
        /// The chosen node's cost is minimal over all candidates.
        #[test]
        fn pushing_minimises_weighted_distance(
            regions in prop::collection::vec((0u32..4, 0usize..1 << 22, any::<bool>()), 0..8),
            local in 0usize..4,
            draw in any::<usize>(),
        ) {
            let a: Vec<Access> = regions.iter().map(|&(n, b, w)| acc(n, b, w)).collect();
            let all = [0usize, 1, 2, 3];
            let cost = |c: usize| -> u128 {
                a.iter()
                    .filter(|x| x.bytes >= 10_000)
                    .map(|x| u128::from(x.bytes * if x.write { 2 } else { 1 }) * u128::from(dist(c, x.node.unwrap().os_index() as usize)))
                    .sum()
            };
            let best = all.iter().map(|&c| cost(c)).min().unwrap();
            match push_target(&a, 10_000, &all, Some(local), idx, dist, || draw) {
                None => prop_assert!(cost(local) == best),
                Some(n) => {
                    prop_assert_eq!(cost(n), best);
                    prop_assert!(cost(local) > best);
                }
            }
        }
    }
}
