//! `sparselu`: BOTS SparseLU (Duran et al. 2009), the LU factorisation of a
//! sparse blocked matrix, in BOTS' `for` version (`omp-tasks/sparselu/
//! sparselu_for`).
//!
//! # The program
//!
//! The matrix is `NB × NB` blocks of [`BS`]` × `[`BS`] values; a block is
//! either null or allocated. BOTS' `genmat` decides which blocks start
//! non-null (the diagonal, its two neighbours, and a sparse pattern of
//! even rows and columns: 15 % of the blocks at NB = 50, 19 % at NB = 30)
//! and fills them from its linear congruential sequence
//! `v ← 3125 · v mod 65536`, value `(v − 32768) / 16384`, starting at 1325,
//! block by block in row-major order. For every `k` in `0..NB`:
//!
//! 1. `lu0` factorises the diagonal block `A[k][k]` in place;
//! 2. `fwd` (`A[k][j]`, `j > k`) and `bdiv` (`A[i][k]`, `i > k`) update the
//!    non-null blocks of row and column `k` with it: one task each;
//! 3. after they all finished, `bmod` updates every `A[i][j]` (`i, j > k`)
//!    whose `A[i][k]` and `A[k][j]` are non-null,
//!    `A[i][j] −= A[i][k] · A[k][j]`: one task each, which first allocates
//!    a zeroed block when `A[i][j]` is null (fill-in, exactly where BOTS
//!    allocates it).
//!
//! Step 2 and step 3 are each a [`terroir::scope`] (BOTS' `omp for`
//! barriers); `lu0` is a task of its own on the diagonal block's node. The
//! kernels are BOTS' loops in BOTS' loop orders, so each value sees the
//! same operations in the same order in every version, and the factored
//! matrix (checksummed bit by bit, null blocks included) is identical.
//! `setup` regenerates the initial matrix (fill-in blocks dropped).
//!
//! # How it differs from BOTS
//!
//! - Values are `f64`; BOTS uses `float`. The initial values are the same
//!   numbers (they are exact in both).
//! - BOTS' default block is 100 × 100 and its default matrix 50 × 50
//!   blocks (seconds to minutes); here the block is [`BS`]` = 50` and NB
//!   is the size parameter.
//! - BOTS runs `lu0` in an `omp single` on whichever thread gets there; here
//!   it is a task placed on the diagonal block's node.
//!
//! # Size
//!
//! The parameter is NB, the blocks per side (at least 1), with [`BS`] = 50
//! fixed. Presets: Small NB = 4 (12 blocks; 4 fwd, 4 bdiv, 6 bmod), Default
//! NB = 30 (168 blocks growing to 480; 225 fwd, 225 bdiv, 2,255 bmod),
//! Large NB = 64 (542 blocks growing to 2,112; 21,856 bmod).
//!
//! # Data placement
//!
//! Every block is its own [`NodeVec`], bound before first touch to the node
//! of its block row: row `i` on node `i · nodes / NB` of the topology
//! (contiguous bands of rows per node), fill-in blocks included (they are
//! allocated, by the task that creates them, on their row's node). Each
//! task is spawned with [`Place::data`] of the block it writes, or, for a
//! fill-in block not yet allocated, a place on its row's node
//! ([`ThreadPool::node`]); the blocks it only reads (the diagonal block, or
//! `A[i][k]` and `A[k][j]`) may be on other nodes.
//!
//! # Kind of program
//!
//! Compute-bound dense kernels (`bmod` is `BS³` multiply-subtracts,
//! about 70 µs here) on irregular, dynamically growing sparse structure:
//! the phases shrink as `k` grows (the last ones have a handful of tasks),
//! so the program is imbalanced towards the end, with a barrier between
//! phases. Each block is 20 KB, so a task's working set (three blocks) fits
//! in L2.

use std::sync::Mutex;

use super::{checksum, Size, Workload};
use terroir::numa::{NodeId, Topology};
use terroir::pool::NodeVec;
use terroir::{Place, ThreadPool};

/// Values per block side (BOTS' `bots_arg_size_1`; BOTS' default is 100).
pub const BS: usize = 50;

/// One block: `None` for a null block.
type Block = Option<NodeVec<f64>>;

/// BOTS' `genmat` structure: whether block `(ii, jj)` starts null.
fn starts_null(ii: usize, jj: usize) -> bool {
    let mut null = false;
    if ii < jj && ii % 3 != 0 {
        null = true;
    }
    if ii > jj && jj % 3 != 0 {
        null = true;
    }
    if ii % 2 == 1 || jj % 2 == 1 {
        null = true;
    }
    if ii == jj || ii + 1 == jj || ii == jj + 1 {
        null = false;
    }
    null
}

/// The matrix: the blocks in row-major order, and where each block row
/// lives.
struct Matrix {
    /// Blocks per side.
    nb: usize,
    /// Node of each block row.
    row_node: Vec<NodeId>,
}

impl Matrix {
    /// BOTS' `genmat`: the initial blocks, each on its row's node.
    fn generate(&self) -> Result<Vec<Block>, String> {
        let mut init_val: i64 = 1325;
        let mut blocks = Vec::with_capacity(self.nb * self.nb);
        for ii in 0..self.nb {
            for jj in 0..self.nb {
                if starts_null(ii, jj) {
                    blocks.push(None);
                    continue;
                }
                let node = self.row_node[ii];
                let block = NodeVec::from_fn_on(BS * BS, node, |_| {
                    init_val = (3125 * init_val) % 65536;
                    (init_val as f64 - 32768.0) / 16384.0
                })
                .map_err(|e| format!("sparselu: block ({ii}, {jj}) on {node}: {e}"))?;
                blocks.push(Some(block));
            }
        }
        Ok(blocks)
    }

    /// A zeroed block for fill-in at row `ii` (BOTS'
    /// `allocate_clean_block`), on the row's node.
    fn clean_block(&self, ii: usize) -> NodeVec<f64> {
        let node = self.row_node[ii];
        NodeVec::from_elem_on(0.0, BS * BS, node)
            .unwrap_or_else(|e| panic!("sparselu: fill-in block in row {ii} on {node}: {e}"))
    }
}

/// BOTS' `lu0`: LU factorisation of the diagonal block, in place.
fn lu0(diag: &mut [f64]) {
    for k in 0..BS {
        for i in k + 1..BS {
            diag[i * BS + k] /= diag[k * BS + k];
            for j in k + 1..BS {
                diag[i * BS + j] -= diag[i * BS + k] * diag[k * BS + j];
            }
        }
    }
}

/// BOTS' `bdiv`: `row ← row · U⁻¹` for a block `A[i][k]` below the
/// diagonal.
fn bdiv(diag: &[f64], row: &mut [f64]) {
    for i in 0..BS {
        for k in 0..BS {
            row[i * BS + k] /= diag[k * BS + k];
            for j in k + 1..BS {
                row[i * BS + j] -= row[i * BS + k] * diag[k * BS + j];
            }
        }
    }
}

/// BOTS' `bmod`: `inner ← inner − row · col`, the innermost loop over `k`
/// (BOTS' order: one running value per element of `inner`).
fn bmod(row: &[f64], col: &[f64], inner: &mut [f64]) {
    for i in 0..BS {
        for j in 0..BS {
            let mut v = inner[i * BS + j];
            for k in 0..BS {
                v -= row[i * BS + k] * col[k * BS + j];
            }
            inner[i * BS + j] = v;
        }
    }
}

/// BOTS' `fwd`: `col ← L⁻¹ · col` for a block `A[k][j]` right of the
/// diagonal.
fn fwd(diag: &[f64], col: &mut [f64]) {
    for j in 0..BS {
        for k in 0..BS {
            for i in k + 1..BS {
                col[i * BS + j] -= diag[i * BS + k] * col[k * BS + j];
            }
        }
    }
}

/// The checksum of a factored matrix: per block a presence word, then its
/// values' bits.
fn matrix_checksum(blocks: &[Block]) -> u64 {
    checksum(blocks.iter().flat_map(|b| {
        let present = std::iter::once(u64::from(b.is_some()));
        present.chain(b.iter().flat_map(|v| v.iter().map(|x| x.to_bits())))
    }))
}

/// The workload: the matrix shape and the blocks `setup` regenerates.
pub struct SparseLu {
    /// Blocks per side and where rows live.
    matrix: Matrix,
    /// The blocks, row-major.
    blocks: Mutex<Vec<Block>>,
}

impl SparseLu {
    /// The node index (into the pool's topology, which is assumed to be
    /// the one the workload was built for) of block row `ii`, as a place.
    fn row_place(&self, pool: &ThreadPool, ii: usize) -> Place {
        pool.topology()
            .node_index(self.matrix.row_node[ii])
            .and_then(|i| pool.node(i).ok())
            .unwrap_or_else(Place::anywhere)
    }
}

impl Workload for SparseLu {
    fn name(&self) -> &'static str {
        "sparselu"
    }

    fn describe(&self) -> String {
        let nb = self.matrix.nb;
        let start = (0..nb * nb)
            .filter(|&b| !starts_null(b / nb, b % nb))
            .count();
        format!("{nb}x{nb} blocks of {BS}x{BS} f64, {start} non-null at start")
    }

    fn setup(&self) {
        let fresh = self.matrix.generate().expect("sparselu: regenerating");
        *self.blocks.lock().unwrap() = fresh;
    }

    fn sequential(&self) -> u64 {
        let nb = self.matrix.nb;
        let mut guard = self.blocks.lock().unwrap();
        let a = &mut *guard;
        for kk in 0..nb {
            let mut diag = a[kk * nb + kk]
                .take()
                .expect("diagonal blocks are never null");
            lu0(&mut diag);
            for jj in kk + 1..nb {
                if let Some(b) = &mut a[kk * nb + jj] {
                    fwd(&diag, b);
                }
            }
            for ii in kk + 1..nb {
                if let Some(b) = &mut a[ii * nb + kk] {
                    bdiv(&diag, b);
                }
            }
            a[kk * nb + kk] = Some(diag);
            for ii in kk + 1..nb {
                if a[ii * nb + kk].is_none() {
                    continue;
                }
                for jj in kk + 1..nb {
                    if a[kk * nb + jj].is_none() {
                        continue;
                    }
                    let mut inner = a[ii * nb + jj]
                        .take()
                        .unwrap_or_else(|| self.matrix.clean_block(ii));
                    let (row, col) = (&a[ii * nb + kk], &a[kk * nb + jj]);
                    bmod(row.as_ref().unwrap(), col.as_ref().unwrap(), &mut inner);
                    a[ii * nb + jj] = Some(inner);
                }
            }
        }
        matrix_checksum(a)
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        let nb = self.matrix.nb;
        let matrix = &self.matrix;
        let mut guard = self.blocks.lock().unwrap();
        let a: &mut [Block] = &mut guard;
        let row_places: Vec<Place> = (0..nb).map(|ii| self.row_place(pool, ii)).collect();
        pool.install(|| {
            for kk in 0..nb {
                // lu0, on the diagonal block's node.
                {
                    let diag = a[kk * nb + kk]
                        .as_mut()
                        .expect("diagonal blocks are never null");
                    let place = Place::data(diag);
                    terroir::scope(|s| {
                        s.spawn_on(&place, |_| terroir::label("sparselu-lu0", || lu0(diag)));
                    });
                }
                // fwd and bdiv: row kk and column kk, reading the diagonal.
                let mut diag: Option<&NodeVec<f64>> = None;
                let mut targets: Vec<(bool, &mut NodeVec<f64>)> = Vec::new();
                for (idx, b) in a.iter_mut().enumerate() {
                    let (ii, jj) = (idx / nb, idx % nb);
                    let Some(b) = b else { continue };
                    if ii == kk && jj == kk {
                        diag = Some(b);
                    } else if ii == kk && jj > kk {
                        targets.push((true, b));
                    } else if jj == kk && ii > kk {
                        targets.push((false, b));
                    }
                }
                let diag = diag.expect("diagonal blocks are never null");
                terroir::scope(|s| {
                    for (is_fwd, b) in targets {
                        let place = Place::data(b);
                        s.spawn_on(&place, move |_| {
                            if is_fwd {
                                terroir::label("sparselu-fwd", || fwd(diag, b));
                            } else {
                                terroir::label("sparselu-bdiv", || bdiv(diag, b));
                            }
                        });
                    }
                });
                // bmod: the trailing blocks, reading column and row kk.
                let mut col_k: Vec<Option<&NodeVec<f64>>> = vec![None; nb]; // A[ii][kk]
                let mut row_k: Vec<Option<&NodeVec<f64>>> = vec![None; nb]; // A[kk][jj]
                let mut inner: Vec<(usize, usize, &mut Block)> = Vec::new();
                for (idx, b) in a.iter_mut().enumerate() {
                    let (ii, jj) = (idx / nb, idx % nb);
                    if ii > kk && jj == kk {
                        col_k[ii] = b.as_ref();
                    } else if ii == kk && jj > kk {
                        row_k[jj] = b.as_ref();
                    } else if ii > kk && jj > kk {
                        inner.push((ii, jj, b));
                    }
                }
                terroir::scope(|s| {
                    for (ii, jj, b) in inner {
                        let (Some(row), Some(col)) = (col_k[ii], row_k[jj]) else {
                            continue;
                        };
                        let place = match b {
                            Some(v) => Place::data(v),
                            None => row_places[ii].clone(),
                        };
                        s.spawn_on(&place, move |_| {
                            terroir::label("sparselu-bmod", || {
                                let block = b.get_or_insert_with(|| matrix.clean_block(ii));
                                bmod(row, col, block);
                            });
                        });
                    }
                });
            }
        });
        matrix_checksum(a)
    }
}

/// Builds the workload: the parameter is NB, the blocks per side.
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let nb = size.pick(4, 30, 64);
    if nb == 0 || nb > 1024 {
        return Err(format!("sparselu: NB must be 1..=1024, not {nb}"));
    }
    let nodes: Vec<NodeId> = topology.nodes().iter().map(|n| n.id()).collect();
    if nodes.is_empty() {
        return Err("sparselu: the topology has no node".into());
    }
    let row_node = (0..nb).map(|ii| nodes[ii * nodes.len() / nb]).collect();
    let matrix = Matrix { nb, row_node };
    let blocks = matrix.generate()?;
    Ok(Box::new(SparseLu {
        matrix,
        blocks: Mutex::new(blocks),
    }))
}
