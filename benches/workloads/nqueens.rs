//! nqueens: counts the ways to place `n` non-attacking queens on an `n x n`
//! board, after BOTS (`nqueens`, Duran et al. 2009).
//!
//! As in BOTS, the search places one queen per row; at each row it tries
//! every column, each try copying the partial board (a `[u8; 32]`, one
//! column per placed row), placing the queen and checking the whole board
//! with BOTS' `ok` (every pair of queens, not just the new one), then
//! recursing on the next row. BOTS spawns a task per column and waits for
//! all of them; here the columns `0..n` of a row are split in halves with
//! `join` down to single columns, which gives the same tasks (one per
//! column) with `n - 1` joins per row instead of a task group.
//!
//! Cutoff: rows from [`CUTOFF_DEPTH`] (3, BOTS' manual cutoff depth) down
//! are searched sequentially, as one `nqueens-leaf` labelled task per
//! partial board that survives the first three rows (536 at n = 11,
//! about 200 microseconds each). [`with_cutoff`] builds other depths
//! (`MAX_N`: none, a task per column on every row; on the reference
//! machine that made terroir 1.6-1.9x slower and rayon about 2x slower
//! than with the cutoff, the board copies and checks of the extra tasks
//! costing more than the joins).
//!
//! Size parameter: `n`, the board side (at most [`MAX_N`]). Presets: Small
//! `n = 8` (92 solutions), Default `n = 11` (2,680 solutions, about
//! 0.1 s sequentially on the reference 2-core machine), Large `n = 13`
//! (73,712 solutions). The result is the solution count.
//!
//! Kind of program: compute-bound search with irregular, data-dependent
//! subtrees (pruning makes the columns' subtrees uneven), small working set
//! (the boards live on the stack), no shared writes.

use super::fib::{Joiner, Rayon, Seq, Terroir};
use super::{checksum, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// The largest board side supported (the board is a `[u8; MAX_N]`).
pub const MAX_N: usize = 32;

/// BOTS' manual cutoff depth (`-x 3`): with [`with_cutoff`], rows from
/// this one down are searched sequentially.
pub const CUTOFF_DEPTH: usize = 3;

/// A partial board: `board[r]` is the column of the queen in row `r`, for
/// the rows placed so far.
type Board = [u8; MAX_N];

/// BOTS' `ok`: whether no two of the first `rows` queens attack each other
/// (same column or same diagonal). It checks every pair, as BOTS does.
fn ok(rows: usize, board: &Board) -> bool {
    for i in 0..rows {
        let p = i32::from(board[i]);
        for (j, &q) in board.iter().enumerate().take(rows).skip(i + 1) {
            let q = i32::from(q);
            let d = (j - i) as i32;
            if q == p || q == p - d || q == p + d {
                return false;
            }
        }
    }
    true
}

/// Sequential search: the number of completions of `board`, whose first
/// `row` rows are placed, on an `n x n` board.
fn search_seq(n: usize, row: usize, board: &Board) -> u64 {
    if row == n {
        return 1;
    }
    let mut count = 0;
    for col in 0..n {
        let mut b = *board;
        b[row] = col as u8;
        if ok(row + 1, &b) {
            count += search_seq(n, row + 1, &b);
        }
    }
    count
}

/// Parallel search: as [`search_seq`] with a task per column (a join tree
/// over the columns) above row `cutoff`, sequential from it on.
fn search<J: Joiner>(n: usize, cutoff: usize, row: usize, board: &Board) -> u64 {
    if row == n {
        return 1;
    }
    if row >= cutoff {
        return J::leaf("nqueens-leaf", || search_seq(n, row, board));
    }
    columns::<J>(n, cutoff, row, board, 0, n)
}

/// The completions of `board` with the queen of `row` in one of the
/// columns `lo..hi`: one task per column, split in halves with joins.
fn columns<J: Joiner>(
    n: usize,
    cutoff: usize,
    row: usize,
    board: &Board,
    lo: usize,
    hi: usize,
) -> u64 {
    if hi - lo == 1 {
        // The task's own copy of the partial board, as in BOTS.
        let mut b = *board;
        b[row] = lo as u8;
        return if ok(row + 1, &b) {
            search::<J>(n, cutoff, row + 1, &b)
        } else {
            0
        };
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = J::join(
        || columns::<J>(n, cutoff, row, board, lo, mid),
        || columns::<J>(n, cutoff, row, board, mid, hi),
    );
    a + b
}

/// The nqueens workload: counts the solutions on an `n x n` board.
struct NQueens {
    /// The board side.
    n: usize,
    /// Rows from this one down are searched sequentially (`n`: none).
    cutoff: usize,
}

impl NQueens {
    /// The solution count, with the joins of `J`.
    fn run<J: Joiner>(&self) -> u64 {
        checksum([search::<J>(self.n, self.cutoff, 0, &[0; MAX_N])])
    }
}

impl Workload for NQueens {
    fn name(&self) -> &'static str {
        "nqueens"
    }

    fn describe(&self) -> String {
        if self.cutoff >= self.n {
            format!("n={}, no cutoff", self.n)
        } else {
            format!("n={}, cutoff depth {}", self.n, self.cutoff)
        }
    }

    fn sequential(&self) -> u64 {
        self.run::<Seq>()
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        pool.install(|| self.run::<Terroir>())
    }

    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        Some(pool.install(|| self.run::<Rayon>()))
    }
}

/// Builds nqueens for `size` (`n`: 8 / 11 / 13, at most [`MAX_N`]) with
/// BOTS' manual cutoff ([`CUTOFF_DEPTH`]).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    with_cutoff(size, topology, CUTOFF_DEPTH)
}

/// Builds nqueens with rows from `cutoff` down searched sequentially as
/// labelled leaves ([`CUTOFF_DEPTH`] is BOTS' manual cutoff).
pub fn with_cutoff(
    size: Size,
    topology: &Topology,
    cutoff: usize,
) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let n = size.pick(8, 11, 13);
    if n > MAX_N {
        return Err(format!("nqueens: n = {n} is above the maximum {MAX_N}"));
    }
    Ok(Box::new(NQueens {
        n,
        cutoff: cutoff.min(n),
    }))
}
