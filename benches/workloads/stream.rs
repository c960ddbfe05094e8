//! `stream-triad`: the STREAM triad `a[i] = b[i] + s·c[i]` as tasks over
//! chunks of placed arrays, after Klinkenberg et al.'s task-based STREAM
//! (which measures how task creation and placement affect bandwidth on
//! NUMA machines).
//!
//! The three arrays of `n` doubles are cut into [`CHUNKS`] (64, or `n` if
//! smaller) chunks; chunk `k` holds elements `k·n/chunks ..
//! (k+1)·n/chunks` of `a`, `b` and `c`, as three [`NodeVec`]s bound before
//! first touch to node `k · nodes / chunks` of the topology (contiguous
//! bands of chunks per node). A run does [`REPS`] (10) repetitions, each a
//! scope (the barrier) in which every chunk's triad is one task placed on
//! its chunk's data (`Place::data`; label `stream-triad-block`). Who
//! creates the chunk tasks is the workload's [`Creation`] mode:
//!
//! - [`Creation::Single`]: one task (the scope's body) spawns all chunk
//!   tasks, so every task starts on the creator's node and placement (or
//!   stealing) has to move it;
//! - [`Creation::Parallel`]: one creator task per node, spawned on that
//!   node (`ThreadPool::node`), spawns that node's chunks, so creation is
//!   spread and local.
//!
//! [`new`] (what the harnesses build) uses parallel creators;
//! [`with_creation`] builds either, and `describe()` names the mode.
//! The checksum is over the bits of `a` after the last repetition (the
//! sequential version does the same triads in chunk order).
//!
//! The parallel-iterator versions (terroir's and rayon's, the same code
//! under each prelude) use three more arrays, one `NodeVec` each, blocked
//! over the topology's nodes, made on first use:
//! `a.par_iter_mut().zip(b).zip(c).for_each(..)` per repetition. terroir
//! cuts that loop at the node boundaries of `a` and runs each node's share
//! on its node; rayon sees three plain slices.
//!
//! **Size parameter:** `n`, the elements per array. Presets: small 16,384
//! (3 × 128 KiB), default 4,194,304 (3 × 32 MiB), large 33,554,432 (3 ×
//! 256 MiB). No rayon version: the point is the placed data.
//!
//! **Kind:** memory-bandwidth-bound (two loads and a store per element,
//! no reuse across repetitions once the arrays exceed the last-level
//! cache), with coarse, independent tasks and a barrier per repetition.

use std::sync::{Mutex, OnceLock};

use super::{checksum, Size, Workload};
use terroir::numa::{NodeId, NodeSet, Topology};
use terroir::pool::{NodeVec, Placement};
use terroir::{Place, ThreadPool};

/// Chunks per array (at most; fewer when `n` is smaller).
pub const CHUNKS: usize = 64;

/// Repetitions of the triad per run.
pub const REPS: usize = 10;

/// The triad's scalar.
const SCALAR: f64 = 3.0;

/// Who spawns the chunk tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Creation {
    /// One task spawns every chunk task.
    Single,
    /// One task per node spawns that node's chunk tasks.
    Parallel,
}

/// One chunk of the three arrays, all on one node.
struct Chunk {
    /// The output.
    a: NodeVec<f64>,
    /// The first input.
    b: NodeVec<f64>,
    /// The second input (scaled).
    c: NodeVec<f64>,
}

/// The stream-triad workload.
struct Stream {
    /// Elements per array.
    n: usize,
    /// Who spawns the chunk tasks.
    creation: Creation,
    /// The chunks of node group `g` are `groups[g].1` (a range of chunk
    /// indices), on node `groups[g].0`; groups are in node order.
    groups: Vec<(NodeId, std::ops::Range<usize>)>,
    /// The place of each chunk (of its `a`, which it writes).
    places: Vec<Place>,
    /// The arrays; the lock is only taken by one run at a time.
    chunks: Mutex<Vec<Chunk>>,
    /// The topology's nodes, for the flat arrays.
    nodes: NodeSet,
    /// The arrays of the loop versions, made on first use.
    flat: OnceLock<Mutex<Flat>>,
}

/// The three arrays as one vector each, blocked over the topology's nodes
/// (bound before first touch), for the parallel-iterator versions.
struct Flat {
    a: NodeVec<f64>,
    b: NodeVec<f64>,
    c: NodeVec<f64>,
}

/// The initial value of `b[i]`.
fn b_init(i: usize) -> f64 {
    (i % 1000) as f64 * 0.5
}

/// The initial value of `c[i]`.
fn c_init(i: usize) -> f64 {
    (i % 7) as f64 + 0.25
}

/// The triad on one chunk.
fn triad(chunk: &mut Chunk) {
    for ((a, b), c) in chunk.a.iter_mut().zip(chunk.b.iter()).zip(chunk.c.iter()) {
        *a = b + SCALAR * c;
    }
}

/// Builds the workload with parallel creators (see the module docs for
/// the size parameter).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    with_creation(size, topology, Creation::Parallel)
}

/// Builds the workload with the given creation mode.
pub fn with_creation(
    size: Size,
    topology: &Topology,
    creation: Creation,
) -> Result<Box<dyn Workload>, String> {
    let n = size.pick(1 << 14, 1 << 22, 1 << 25);
    let count = CHUNKS.min(n);
    let topo_nodes: Vec<NodeId> = topology.nodes().iter().map(|node| node.id()).collect();
    if topo_nodes.is_empty() {
        return Err("stream-triad: the topology has no node".into());
    }
    let mut groups: Vec<(NodeId, std::ops::Range<usize>)> = Vec::new();
    let mut chunks = Vec::with_capacity(count);
    for k in 0..count {
        let node = topo_nodes[k * topo_nodes.len() / count];
        match groups.last_mut() {
            Some((g, range)) if *g == node => range.end = k + 1,
            _ => groups.push((node, k..k + 1)),
        }
        let (lo, hi) = (k * n / count, (k + 1) * n / count);
        let err = |e| format!("stream-triad: allocating chunk {k} on {node}: {e}");
        chunks.push(Chunk {
            a: NodeVec::from_elem_on(0.0, hi - lo, node).map_err(err)?,
            b: NodeVec::from_fn_on(hi - lo, node, |i| b_init(lo + i)).map_err(err)?,
            c: NodeVec::from_fn_on(hi - lo, node, |i| c_init(lo + i)).map_err(err)?,
        });
    }
    let places = chunks.iter().map(|c| Place::data(&c.a)).collect();
    Ok(Box::new(Stream {
        n,
        creation,
        groups,
        places,
        chunks: Mutex::new(chunks),
        nodes: topo_nodes.iter().map(|n| n.os_index()).collect(),
        flat: OnceLock::new(),
    }))
}

impl Stream {
    /// The flat arrays (made, blocked over the nodes, on first use).
    fn flat(&self) -> &Mutex<Flat> {
        self.flat.get_or_init(|| {
            let blocked = || Placement::Blocked(self.nodes.clone());
            let err = |e| panic!("stream-triad: allocating the flat arrays: {e}");
            Mutex::new(Flat {
                a: NodeVec::from_elem_on(0.0, self.n, blocked()).unwrap_or_else(err),
                b: NodeVec::from_fn_on(self.n, blocked(), b_init).unwrap_or_else(err),
                c: NodeVec::from_fn_on(self.n, blocked(), c_init).unwrap_or_else(err),
            })
        })
    }

    /// Runs `triads` on the flat arrays and returns the checksum of `a`.
    fn run_flat(
        &self,
        triads: impl FnOnce(&mut NodeVec<f64>, &NodeVec<f64>, &NodeVec<f64>),
    ) -> u64 {
        let mut flat = self.flat().lock().unwrap_or_else(|e| e.into_inner());
        let Flat { a, b, c } = &mut *flat;
        triads(a, b, c);
        checksum(a.iter().map(|x| x.to_bits()))
    }

    /// The checksum of `a`.
    fn sum(chunks: &[Chunk]) -> u64 {
        checksum(chunks.iter().flat_map(|c| c.a.iter()).map(|x| x.to_bits()))
    }

    /// Spawns one task per chunk of `chunks` (chunk indices from `first`)
    /// into `s`, each placed on its chunk.
    fn spawn_chunks<'s>(&'s self, s: &terroir::Scope<'s>, chunks: &'s mut [Chunk], first: usize) {
        for (k, chunk) in chunks.iter_mut().enumerate() {
            s.spawn_on(&self.places[first + k], move |_| {
                terroir::label("stream-triad-block", || triad(chunk));
            });
        }
    }
}

impl Workload for Stream {
    fn name(&self) -> &'static str {
        "stream-triad"
    }

    fn describe(&self) -> String {
        format!(
            "{} doubles x3 in {} chunks on {} node(s), {} reps, {}",
            self.n,
            self.places.len(),
            self.groups.len(),
            REPS,
            match self.creation {
                Creation::Single => "single creator",
                Creation::Parallel => "parallel creators (one per node)",
            }
        )
    }

    fn setup(&self) {
        let mut chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        for chunk in chunks.iter_mut() {
            chunk.a.fill(0.0);
        }
        if let Some(flat) = self.flat.get() {
            flat.lock().unwrap_or_else(|e| e.into_inner()).a.fill(0.0);
        }
    }

    fn terroir_iter(&self, pool: &ThreadPool) -> Option<u64> {
        use terroir::prelude::*;
        Some(self.run_flat(|a, b, c| {
            pool.install(|| {
                for _ in 0..REPS {
                    a.par_iter_mut()
                        .zip(b)
                        .zip(c)
                        .for_each(|((a, b), c)| *a = b + SCALAR * c);
                }
            })
        }))
    }

    fn rayon_iter(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        use rayon::prelude::*;
        Some(self.run_flat(|a, b, c| {
            pool.install(|| {
                for _ in 0..REPS {
                    a[..]
                        .par_iter_mut()
                        .zip(&b[..])
                        .zip(&c[..])
                        .for_each(|((a, b), c)| *a = b + SCALAR * c);
                }
            })
        }))
    }

    fn sequential(&self) -> u64 {
        let mut chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..REPS {
            for chunk in chunks.iter_mut() {
                triad(chunk);
            }
        }
        Self::sum(&chunks)
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        let mut guard = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        let chunks: &mut [Chunk] = &mut guard;
        // Each node group's creator runs on its node (any worker when the
        // pool has none there).
        let creators: Vec<Place> = self
            .groups
            .iter()
            .map(|(node, _)| {
                pool.topology()
                    .nodes()
                    .iter()
                    .position(|n| n.id() == *node)
                    .and_then(|i| pool.node(i).ok())
                    .unwrap_or_else(Place::anywhere)
            })
            .collect();
        pool.install(|| {
            for _ in 0..REPS {
                let chunks: &mut [Chunk] = &mut *chunks;
                terroir::scope(|s| match self.creation {
                    Creation::Single => self.spawn_chunks(s, chunks, 0),
                    Creation::Parallel => {
                        let mut rest = chunks;
                        for ((_, range), place) in self.groups.iter().zip(&creators) {
                            let (mine, tail) = rest.split_at_mut(range.len());
                            rest = tail;
                            let first = range.start;
                            s.spawn_on(place, move |s| self.spawn_chunks(s, mine, first));
                        }
                    }
                });
            }
        });
        Self::sum(chunks)
    }
}
