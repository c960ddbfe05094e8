//! `seidel-2d`: in-place 5-point Gauss-Seidel relaxation over a 2-D grid
//! of placed blocks, run in wavefront order (after Drebes' block stencils;
//! the kernel is PolyBench's `seidel-2d` with the 5-point stencil).
//!
//! Each time step sweeps the interior in row-major order, in place (the
//! boundary is fixed):
//!
//! ```text
//! A[i][j] = (A[i-1][j] + A[i][j] + A[i][j+1] + A[i+1][j] + A[i][j-1]) * 0.2
//! ```
//!
//! so the upper and left neighbours are already this step's values and the
//! lower and right ones still the previous step's. (The terms are summed
//! with the left neighbour, the value just computed, last, so that the
//! loop-carried dependency is one addition and one multiplication.)
//!
//! **Blocks and placement.** The grid is cut into a `B × B` grid of blocks
//! (`B = clamp(n / 128, 4, 16)`; block `(bi, bj)` holds rows
//! `bi·n/B .. (bi+1)·n/B` and the same range of columns), each a
//! [`NodeVec`] bound before first touch to node `k · nodes / B²` of the
//! topology, `k = bi·B + bj` (contiguous bands of block rows per node).
//!
//! **Dependency scheme.** With the 5-point stencil a cell reads only its
//! four neighbours, so a block only interacts with its four neighbour
//! blocks, and sweeping the blocks of one step in row-major order gives
//! exactly the plain row-major sweep: for every cell, the upper and left
//! neighbours (in the same block, or in the blocks above and to the left)
//! are already updated, the lower and right ones (in the same block, or in
//! the blocks below and to the right) are not. Any order of block updates
//! `(bi, bj, t)` that keeps, for every pair of neighbour blocks, the order
//! of the sequential sweep (step `t` before step `t + 1`; within a step,
//! above before below, left before right) gives the same bits. The
//! wavefront `w = bi + bj + 2t` does: for neighbours in the same step `w`
//! differs by ±1 in the right direction, and block `(bi, bj)` at step
//! `t + 1` (wave `w + 2`) comes after its lower and right neighbours at
//! step `t` (wave `w + 1`). Two updates in the same wave are never
//! neighbours (neighbours' waves differ by an odd number), so they touch
//! disjoint data. The parallel version runs the waves `0 ..= 2(B-1) +
//! 2(T-1)` in order, one scope per wave (the barrier), with one task per
//! block update in the wave, placed on the block's data (label
//! `seidel-2d-block`); successive steps overlap in the pipeline. Each
//! block sits in an `RwLock` that its task write-locks, and the tasks
//! read-lock the neighbour blocks whose edge cells they read: by the
//! scheme above the locks are never contended, and a task finding one
//! taken panics (a broken wavefront fails the run instead of computing
//! something else). The sequential version sweeps the blocks step by step
//! in row-major order with the same kernel; a unit test checks it against
//! the plain sweep of a flat grid.
//!
//! **Size parameter:** the grid side `n` (`n ≥ 8`). Presets: small 32
//! (4 × 4 blocks, 4 steps), default 1024 (8 × 8 blocks of 128 KiB, 40
//! steps), large 4096 (16 × 16 blocks of 512 KiB, 40 steps). A numeric
//! size gets 40 steps. No rayon version: the point is the placed data.
//!
//! **Kind:** latency-bound (the sweep carries a dependency from each cell
//! to the next) and cache-friendly (a block fits in L2), with limited,
//! ramping parallelism (a pipeline of waves) and a barrier per wave.

use std::sync::{Mutex, RwLock};

use super::{checksum, Size, Workload};
use terroir::numa::{NodeId, Topology};
use terroir::pool::NodeVec;
use terroir::{Place, ThreadPool};

/// The seidel-2d workload.
struct Seidel {
    /// Grid side.
    n: usize,
    /// Blocks per side (`B`).
    b: usize,
    /// Time steps per run (`T`).
    steps: usize,
    /// Block row (and column) `k` holds rows (columns)
    /// `starts[k]..starts[k + 1]`.
    starts: Vec<usize>,
    /// The place of each block (row-major), made once.
    places: Vec<Place>,
    /// The node each block is bound to (row-major).
    nodes: Vec<NodeId>,
    /// The blocks (row-major); the outer lock is only taken by one run at
    /// a time, the inner ones as described in the module docs.
    blocks: Mutex<Vec<RwLock<NodeVec<f64>>>>,
}

/// PolyBench's initial value of cell `(i, j)`.
fn initial(n: usize, i: usize, j: usize) -> f64 {
    (i as f64 * (j + 2) as f64 + 2.0) / n as f64
}

/// Builds the workload (see the module docs for the size parameter).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let n = size.pick(32, 1024, 4096);
    if n < 8 {
        return Err(format!(
            "seidel-2d: the grid side must be at least 8, not {n}"
        ));
    }
    let steps = if size == Size::Small { 4 } else { 40 };
    let b = (n / 128).clamp(4, 16);
    let starts: Vec<usize> = (0..=b).map(|k| k * n / b).collect();
    let topo_nodes: Vec<NodeId> = topology.nodes().iter().map(|node| node.id()).collect();
    if topo_nodes.is_empty() {
        return Err("seidel-2d: the topology has no node".into());
    }
    let count = b * b;
    let nodes: Vec<NodeId> = (0..count)
        .map(|k| topo_nodes[k * topo_nodes.len() / count])
        .collect();
    let mut blocks = Vec::with_capacity(count);
    for k in 0..count {
        let (r0, c0) = (starts[k / b], starts[k % b]);
        let w = starts[k % b + 1] - c0;
        let h = starts[k / b + 1] - r0;
        let v = NodeVec::from_fn_on(h * w, nodes[k], |x| initial(n, r0 + x / w, c0 + x % w))
            .map_err(|e| format!("seidel-2d: allocating block {k} on {}: {e}", nodes[k]))?;
        blocks.push(v);
    }
    let places = blocks.iter().map(Place::data).collect();
    Ok(Box::new(Seidel {
        n,
        b,
        steps,
        starts,
        places,
        nodes,
        blocks: Mutex::new(blocks.into_iter().map(RwLock::new).collect()),
    }))
}

/// The neighbour blocks whose edge cells a block update reads; `None` on
/// a side where the block touches the grid's (fixed) boundary.
struct Edges<'a> {
    /// The block above (same width), if any.
    up: Option<&'a [f64]>,
    /// The block below (same width), if any.
    down: Option<&'a [f64]>,
    /// The block to the left and its width, if any.
    left: Option<(&'a [f64], usize)>,
    /// The block to the right and its width, if any.
    right: Option<(&'a [f64], usize)>,
}

/// Relaxes block `me` (`h` rows of `w` cells) once, in place, in row-major
/// order, reading the neighbour blocks' edge cells from `edges`; a
/// missing neighbour means that side of the block is the grid's fixed
/// boundary.
fn relax(me: &mut [f64], h: usize, w: usize, edges: &Edges<'_>) {
    let r_lo = usize::from(edges.up.is_none());
    let r_hi = if edges.down.is_none() { h - 1 } else { h };
    let c_lo = usize::from(edges.left.is_none());
    let c_hi = if edges.right.is_none() { w - 1 } else { w };
    for li in r_lo..r_hi {
        let (before, rest) = me.split_at_mut(li * w);
        let (row, after) = rest.split_at_mut(w);
        let above: &[f64] = match (li, edges.up) {
            (0, Some(up)) => &up[up.len() - w..],
            _ => &before[(li - 1) * w..],
        };
        let below: &[f64] = if li + 1 < h {
            &after[..w]
        } else {
            // Only reached with a block below (otherwise r_hi = h - 1).
            &edges.down.expect("block below")[..w]
        };
        let left_cell = edges.left.map_or(0.0, |(l, wl)| l[li * wl + wl - 1]);
        let right_cell = edges.right.map_or(0.0, |(r, wr)| r[li * wr]);
        let mut prev = if c_lo == 0 { left_cell } else { row[0] };
        for j in c_lo..c_hi {
            let right = if j + 1 < w { row[j + 1] } else { right_cell };
            let v = (above[j] + row[j] + right + below[j] + prev) * 0.2;
            row[j] = v;
            prev = v;
        }
    }
}

impl Seidel {
    /// Updates block `k` (row-major index) once, locking it for writing
    /// and its neighbours for reading.
    fn update(&self, blocks: &[RwLock<NodeVec<f64>>], k: usize) {
        let b = self.b;
        let (bi, bj) = (k / b, k % b);
        let h = self.starts[bi + 1] - self.starts[bi];
        let w = self.starts[bj + 1] - self.starts[bj];
        let width = |j: usize| self.starts[j + 1] - self.starts[j];
        let read = |i: usize| {
            blocks[i]
                .try_read()
                .expect("seidel-2d: wavefront broken, a neighbour block is being written")
        };
        let up = (bi > 0).then(|| read(k - b));
        let down = (bi + 1 < b).then(|| read(k + b));
        let left = (bj > 0).then(|| read(k - 1));
        let right = (bj + 1 < b).then(|| read(k + 1));
        let mut me = blocks[k]
            .try_write()
            .expect("seidel-2d: wavefront broken, a block is in use by another task");
        let edges = Edges {
            up: up.as_deref().map(|v| &v[..]),
            down: down.as_deref().map(|v| &v[..]),
            left: left.as_deref().map(|v| (&v[..], width(bj - 1))),
            right: right.as_deref().map(|v| (&v[..], width(bj + 1))),
        };
        relax(&mut me, h, w, &edges);
    }

    /// The checksum of the grid, block by block.
    fn sum(&self, blocks: &[RwLock<NodeVec<f64>>]) -> u64 {
        let guards: Vec<_> = blocks
            .iter()
            .map(|l| l.read().unwrap_or_else(|e| e.into_inner()))
            .collect();
        checksum(guards.iter().flat_map(|g| g.iter()).map(|x| x.to_bits()))
    }

    /// The waves: wave `w` holds the block updates `(bi, bj, t)` with
    /// `bi + bj + 2t = w`, as row-major block indices.
    fn wave(&self, w: usize) -> Vec<usize> {
        let b = self.b;
        let mut out = Vec::new();
        for t in 0..self.steps {
            let Some(d) = w.checked_sub(2 * t) else { break };
            if d > 2 * (b - 1) {
                continue;
            }
            for bi in d.saturating_sub(b - 1)..=d.min(b - 1) {
                out.push(bi * b + (d - bi));
            }
        }
        out
    }

    /// How many waves a run has.
    fn waves(&self) -> usize {
        2 * (self.b - 1) + 2 * (self.steps - 1) + 1
    }
}

impl Workload for Seidel {
    fn name(&self) -> &'static str {
        "seidel-2d"
    }

    fn describe(&self) -> String {
        let mut distinct = self.nodes.clone();
        distinct.dedup();
        format!(
            "{}x{} grid, {}x{} blocks on {} node(s), {} steps in {} waves",
            self.n,
            self.n,
            self.b,
            self.b,
            distinct.len(),
            self.steps,
            self.waves()
        )
    }

    fn setup(&self) {
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let (n, b) = (self.n, self.b);
        for (k, block) in blocks.iter_mut().enumerate() {
            let block = block.get_mut().unwrap_or_else(|e| e.into_inner());
            let (r0, c0) = (self.starts[k / b], self.starts[k % b]);
            let w = self.starts[k % b + 1] - c0;
            for (x, v) in block.iter_mut().enumerate() {
                *v = initial(n, r0 + x / w, c0 + x % w);
            }
        }
    }

    fn sequential(&self) -> u64 {
        let blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..self.steps {
            for k in 0..blocks.len() {
                self.update(&blocks, k);
            }
        }
        self.sum(&blocks)
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        let blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        let blocks: &[RwLock<NodeVec<f64>>] = &blocks;
        pool.install(|| {
            for w in 0..self.waves() {
                let wave = self.wave(w);
                terroir::scope(|s| {
                    for k in wave {
                        s.spawn_on(&self.places[k], move |_| {
                            terroir::label("seidel-2d-block", || self.update(blocks, k));
                        });
                    }
                });
            }
        });
        self.sum(blocks)
    }
}

/// Checks of the dependency scheme (run by `tests/workloads.rs`).
#[cfg(test)]
mod tests {
    // The bench targets (harness = false) compile this module without its
    // #[test] functions, which leaves the import unused there.
    #[allow(unused_imports)]
    use super::*;

    /// The blocked sequential sweep equals the plain row-major sweep of a
    /// flat grid, bit for bit, and the waves cover every update once.
    #[test]
    fn blocked_sweep_is_the_plain_sweep() {
        let topo = Topology::detect().expect("topology");
        for n in [8, 13, 32, 100] {
            let w = new(Size::Param(n), &topo).unwrap();
            w.setup();
            let got = w.sequential();
            let mut a: Vec<f64> = (0..n * n).map(|x| initial(n, x / n, x % n)).collect();
            for _ in 0..40 {
                for i in 1..n - 1 {
                    for j in 1..n - 1 {
                        a[i * n + j] = (a[(i - 1) * n + j]
                            + a[i * n + j]
                            + a[i * n + j + 1]
                            + a[(i + 1) * n + j]
                            + a[i * n + j - 1])
                            * 0.2;
                    }
                }
            }
            // Reorder the flat grid block by block, as the workload hashes it.
            let b = (n / 128).clamp(4, 16);
            let starts: Vec<usize> = (0..=b).map(|k| k * n / b).collect();
            let mut words = Vec::new();
            for bi in 0..b {
                for bj in 0..b {
                    for i in starts[bi]..starts[bi + 1] {
                        for j in starts[bj]..starts[bj + 1] {
                            words.push(a[i * n + j].to_bits());
                        }
                    }
                }
            }
            assert_eq!(got, checksum(words), "n = {n}");
        }
        let w = Seidel {
            n: 32,
            b: 4,
            steps: 5,
            starts: vec![0, 8, 16, 24, 32],
            places: Vec::new(),
            nodes: Vec::new(),
            blocks: Mutex::new(Vec::new()),
        };
        let mut seen = vec![0; 16 * 5];
        for wave in 0..w.waves() {
            for k in w.wave(wave) {
                let t = (wave - k / 4 - k % 4) / 2;
                seen[t * 16 + k] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
    }
}
