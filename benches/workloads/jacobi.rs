//! `jacobi-2d`: a 5-point Jacobi stencil on a grid cut into row blocks
//! placed on the NUMA nodes, after Drebes' data-flow block stencils (and
//! PolyBench's `jacobi-2d` kernel).
//!
//! Every iteration computes a new grid from the old one (double-buffered;
//! the two swap roles every iteration), the boundary held fixed:
//!
//! ```text
//! new[i][j] = 0.2 * (old[i][j] + old[i][j-1] + old[i][j+1] + old[i+1][j] + old[i-1][j])
//! ```
//!
//! The grid is cut into `blocks` row blocks (block `b` holds rows
//! `b·n/blocks .. (b+1)·n/blocks`), each a [`NodeVec`] of its own in each of
//! the two buffers. **Placement:** block `b` of both buffers is bound,
//! before first touch, to node `b · nodes / blocks` of the topology (the
//! nodes get contiguous bands of rows, in node order). Every iteration is
//! one scope that spawns one task per block, placed on the block it writes
//! (`Place::data`, a hint under `Locality`, strict under
//! `StrictLocality`); the task reads its own block of the old grid and the
//! edge rows of the neighbour blocks (label `jacobi-2d-block`). The scope
//! is the barrier between iterations. The sequential version computes the
//! same blocks in order with the same kernel.
//!
//! The parallel-iterator versions (terroir's and rayon's, the same code
//! under each prelude) use two more grids, one `NodeVec` each, blocked over
//! the topology's nodes (made on first use), and loop over the rows:
//! `next.par_chunks_mut(n).enumerate().for_each(..)`. terroir cuts the loop
//! at the node boundaries of `next` and runs each node's rows there.
//!
//! **Size parameter:** the grid side `n` (an `n × n` grid, `n ≥ 4`), in
//! `min(32, n / 2)` row blocks. Presets: small 64 (32 blocks of 2 rows, 4
//! iterations), default 2048 (32 blocks, 20 iterations, two grids of 32
//! MiB), large 8192 (32 blocks, 20 iterations, two grids of 512 MiB). A
//! numeric size gets 20 iterations. No rayon version: the point is the
//! placed data.
//!
//! **Kind:** memory-bandwidth-bound (each iteration streams both grids
//! through the cores once the grids exceed the last-level cache), with
//! coarse tasks and a barrier per iteration; on several nodes, the
//! placement decides whether the traffic is local.

use std::sync::{Mutex, OnceLock};

use super::{checksum, Size, Workload};
use terroir::numa::{NodeId, NodeSet, Topology};
use terroir::pool::{NodeVec, Placement};
use terroir::{Place, ThreadPool};

/// The two buffers, each a list of row blocks.
struct Buffers {
    /// The grid read by the next iteration.
    cur: Vec<NodeVec<f64>>,
    /// The grid written by the next iteration.
    next: Vec<NodeVec<f64>>,
}

/// The jacobi-2d workload.
struct Jacobi {
    /// Grid side.
    n: usize,
    /// Iterations per run.
    iters: usize,
    /// Block `b` holds rows `starts[b]..starts[b + 1]`.
    starts: Vec<usize>,
    /// The node each block is bound to.
    nodes: Vec<NodeId>,
    /// The grids; the lock is only taken by one run at a time.
    buffers: Mutex<Buffers>,
    /// The topology's nodes, for the flat grids.
    all_nodes: NodeSet,
    /// The grids of the loop versions, made on first use.
    flat: OnceLock<Mutex<FlatGrids>>,
}

/// The two grids as one vector each (row-major), blocked over the
/// topology's nodes, for the parallel-iterator versions.
struct FlatGrids {
    cur: NodeVec<f64>,
    next: NodeVec<f64>,
}

/// PolyBench's initial value of cell `(i, j)`.
fn initial(n: usize, i: usize, j: usize) -> f64 {
    (i as f64 * (j + 2) as f64 + 2.0) / n as f64
}

/// Builds the workload (see the module docs for the size parameter).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let n = size.pick(64, 2048, 8192);
    if n < 4 {
        return Err(format!(
            "jacobi-2d: the grid side must be at least 4, not {n}"
        ));
    }
    let iters = if size == Size::Small { 4 } else { 20 };
    let blocks = (n / 2).min(32);
    let starts: Vec<usize> = (0..=blocks).map(|b| b * n / blocks).collect();
    let topo_nodes: Vec<NodeId> = topology.nodes().iter().map(|node| node.id()).collect();
    if topo_nodes.is_empty() {
        return Err("jacobi-2d: the topology has no node".into());
    }
    let nodes: Vec<NodeId> = (0..blocks)
        .map(|b| topo_nodes[b * topo_nodes.len() / blocks])
        .collect();
    let make = || -> Result<Vec<NodeVec<f64>>, String> {
        (0..blocks)
            .map(|b| {
                let first = starts[b];
                NodeVec::from_fn_on((starts[b + 1] - first) * n, nodes[b], |k| {
                    initial(n, first + k / n, k % n)
                })
                .map_err(|e| format!("jacobi-2d: allocating block {b} on {}: {e}", nodes[b]))
            })
            .collect()
    };
    let buffers = Buffers {
        cur: make()?,
        next: make()?,
    };
    Ok(Box::new(Jacobi {
        n,
        iters,
        starts,
        nodes,
        buffers: Mutex::new(buffers),
        all_nodes: topo_nodes.iter().map(|n| n.os_index()).collect(),
        flat: OnceLock::new(),
    }))
}

impl Jacobi {
    /// The flat grids (made, blocked over the nodes, on first use).
    fn flat(&self) -> &Mutex<FlatGrids> {
        self.flat.get_or_init(|| {
            let n = self.n;
            let grid = || {
                NodeVec::from_fn_on(n * n, Placement::Blocked(self.all_nodes.clone()), |k| {
                    initial(n, k / n, k % n)
                })
                .unwrap_or_else(|e| panic!("jacobi-2d: allocating the flat grids: {e}"))
            };
            Mutex::new(FlatGrids {
                cur: grid(),
                next: grid(),
            })
        })
    }

    /// Computes row `r` of the new grid into `o` from the flat grid `cur`
    /// (the same expression as [`Jacobi::block`]).
    fn row_flat(&self, cur: &[f64], r: usize, o: &mut [f64]) {
        let n = self.n;
        let here = &cur[r * n..(r + 1) * n];
        if r == 0 || r == n - 1 {
            o.copy_from_slice(here);
            return;
        }
        let (up, down) = (&cur[(r - 1) * n..r * n], &cur[(r + 1) * n..(r + 2) * n]);
        o[0] = here[0];
        o[n - 1] = here[n - 1];
        for c in 1..n - 1 {
            o[c] = 0.2 * (here[c] + here[c - 1] + here[c + 1] + down[c] + up[c]);
        }
    }

    /// Runs the iterations on the flat grids, each computed by
    /// `iteration(cur, next)`, and returns the checksum of the final grid.
    fn run_flat(&self, iteration: impl Fn(&NodeVec<f64>, &mut NodeVec<f64>)) -> u64 {
        let mut guard = self.flat().lock().unwrap_or_else(|e| e.into_inner());
        let FlatGrids { cur, next } = &mut *guard;
        for _ in 0..self.iters {
            iteration(cur, next);
            std::mem::swap(cur, next);
        }
        checksum(cur.iter().map(|x| x.to_bits()))
    }

    /// Row `r` of the grid held in `grid`'s blocks.
    fn row<'a>(&self, grid: &'a [NodeVec<f64>], r: usize) -> &'a [f64] {
        let b = self.starts.partition_point(|&s| s <= r) - 1;
        let local = r - self.starts[b];
        &grid[b][local * self.n..(local + 1) * self.n]
    }

    /// Computes block `b` of the new grid into `out` from `cur`.
    fn block(&self, cur: &[NodeVec<f64>], b: usize, out: &mut [f64]) {
        let n = self.n;
        let first = self.starts[b];
        for (r, o) in (first..self.starts[b + 1]).zip(out.chunks_exact_mut(n)) {
            let here = self.row(cur, r);
            if r == 0 || r == n - 1 {
                o.copy_from_slice(here);
                continue;
            }
            let (up, down) = (self.row(cur, r - 1), self.row(cur, r + 1));
            o[0] = here[0];
            o[n - 1] = here[n - 1];
            for c in 1..n - 1 {
                o[c] = 0.2 * (here[c] + here[c - 1] + here[c + 1] + down[c] + up[c]);
            }
        }
    }

    /// Runs the iterations, each computed by `iteration(cur, next)`, and
    /// returns the checksum of the final grid.
    fn run(&self, iteration: impl Fn(&[NodeVec<f64>], &mut [NodeVec<f64>])) -> u64 {
        let mut guard = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        let Buffers { cur, next } = &mut *guard;
        for _ in 0..self.iters {
            iteration(cur, next);
            std::mem::swap(cur, next);
        }
        checksum(cur.iter().flat_map(|b| b.iter()).map(|x| x.to_bits()))
    }
}

impl Workload for Jacobi {
    fn name(&self) -> &'static str {
        "jacobi-2d"
    }

    fn describe(&self) -> String {
        let mut distinct = self.nodes.clone();
        distinct.dedup();
        format!(
            "{}x{} grid, {} row blocks on {} node(s), {} iterations",
            self.n,
            self.n,
            self.starts.len() - 1,
            distinct.len(),
            self.iters
        )
    }

    fn setup(&self) {
        let n = self.n;
        if let Some(flat) = self.flat.get() {
            let mut guard = flat.lock().unwrap_or_else(|e| e.into_inner());
            let FlatGrids { cur, next } = &mut *guard;
            for grid in [cur, next] {
                for (k, v) in grid.iter_mut().enumerate() {
                    *v = initial(n, k / n, k % n);
                }
            }
        }
        let mut guard = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        let Buffers { cur, next } = &mut *guard;
        for grid in [cur, next] {
            for (b, block) in grid.iter_mut().enumerate() {
                let first = self.starts[b];
                for (k, v) in block.iter_mut().enumerate() {
                    *v = initial(n, first + k / n, k % n);
                }
            }
        }
    }

    fn sequential(&self) -> u64 {
        self.run(|cur, next| {
            for (b, out) in next.iter_mut().enumerate() {
                self.block(cur, b, out);
            }
        })
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        pool.install(|| {
            self.run(|cur, next| {
                terroir::scope(|s| {
                    for (b, out) in next.iter_mut().enumerate() {
                        let place = Place::data(out);
                        let out: &mut [f64] = out;
                        s.spawn_on(&place, move |_| {
                            terroir::label("jacobi-2d-block", || self.block(cur, b, out));
                        });
                    }
                });
            })
        })
    }

    fn terroir_iter(&self, pool: &ThreadPool) -> Option<u64> {
        use terroir::prelude::*;
        let n = self.n;
        Some(pool.install(|| {
            self.run_flat(|cur, next| {
                next.par_chunks_mut(n)
                    .enumerate()
                    .for_each(|(r, o)| self.row_flat(cur, r, o))
            })
        }))
    }

    fn rayon_iter(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        use rayon::prelude::*;
        let n = self.n;
        Some(pool.install(|| {
            self.run_flat(|cur, next| {
                next[..]
                    .par_chunks_mut(n)
                    .enumerate()
                    .for_each(|(r, o)| self.row_flat(cur, r, o))
            })
        }))
    }
}
