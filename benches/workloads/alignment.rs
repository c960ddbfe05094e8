//! `alignment`: BOTS Alignment (Duran et al. 2009), the pairwise stage of
//! ClustalW: align every pair of `N` protein sequences and keep, per pair,
//! a similarity score.
//!
//! # The program
//!
//! For each pair `(i, j)`, `i < j`, a local alignment with affine gaps
//! (Smith–Waterman with Gotoh's three-state recurrence): BOTS'
//! `forward_pass` recurrence, tie-breaking and gap costs. Scores come from
//! BLOSUM62 scaled by 10 (BOTS scales its Gonnet 250 matrix by 10); a gap
//! of length `k` costs `g + k · gh` with `gh = 10 · 0.1` and
//! `g = ⌊2 · avg · (10 + ln min(n, m))⌋`, where `avg` is minus the
//! (truncated) mean off-diagonal score, as BOTS' `get_matrix` and
//! `pairalign` compute them. The best cell (first in row-major order, as
//! BOTS) ends the alignment; a traceback through the recorded moves finds
//! it and counts identical aligned residues, and the pair's result is, as
//! BOTS' `bench_output`, `⌊100 · identities / min(n, m)⌋`, kept together
//! with the alignment score. All arithmetic is on integers, so every
//! version computes the same matrix; the checksum covers all pairs in
//! order.
//!
//! # How it differs from BOTS
//!
//! - BOTS reads real protein sequences (`prot.100.aa`, …) and uses the
//!   Gonnet 250 matrix; here the sequences are generated: `N / 8` (at least
//!   one) random ancestors of 100–300 residues (uniform over the 20 amino
//!   acids, from [`Rng`]), and each sequence a mutated copy of one of them
//!   (20 % substitutions, 3 % deletions, 3 % insertions per residue), so
//!   pairs range from related to unrelated; the matrix is BLOSUM62.
//! - BOTS finds the alignment's start with a reverse pass and recovers the
//!   path in linear space with Myers and Miller's divide and conquer
//!   (`diff`); here the forward pass records its moves (one byte per cell,
//!   about 90 KB at most per pair) and the path is traced back from them. Same
//!   quadratic time, quadratic instead of linear space, and about half the
//!   arithmetic of BOTS' passes.
//!
//! # Parallelism and data
//!
//! As BOTS' `alignment_for` (a loop over rows, a task per pair inside): a
//! task per row `i`, which spawns a task per pair `(i, j > i)`, all in one
//! [`terroir::scope`]. Row `i` has `N − 1 − i` pairs and a pair costs
//! `n · m` cells, so the work is imbalanced across rows and pairs.
//! The sequences (at most a few hundred bytes each) are read by every task
//! and are not placed: the program is compute-bound (integer dynamic
//! programming in L1/L2), with no placed data and no task places.
//!
//! # Size
//!
//! The parameter is `N`, the number of sequences (at least 2). Presets:
//! Small `N = 4` (6 pairs), Default `N = 40` (780 pairs), Large
//! `N = 200` (19,900 pairs; BOTS' largest input has 100 sequences).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{checksum, Rng, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// The 20 amino acids, in BLOSUM62's order.
const AMINO: usize = 20;

/// BLOSUM62 (Henikoff & Henikoff 1992), rows and columns in the order
/// `ARNDCQEGHILKMFPSTWYV`.
#[rustfmt::skip]
const BLOSUM62: [[i8; AMINO]; AMINO] = [
    [ 4, -1, -2, -2,  0, -1, -1,  0, -2, -1, -1, -1, -1, -2, -1,  1,  0, -3, -2,  0],
    [-1,  5,  0, -2, -3,  1,  0, -2,  0, -3, -2,  2, -1, -3, -2, -1, -1, -3, -2, -3],
    [-2,  0,  6,  1, -3,  0,  0,  0,  1, -3, -3,  0, -2, -3, -2,  1,  0, -4, -2, -3],
    [-2, -2,  1,  6, -3,  0,  2, -1, -1, -3, -4, -1, -3, -3, -1,  0, -1, -4, -3, -3],
    [ 0, -3, -3, -3,  9, -3, -4, -3, -3, -1, -1, -3, -1, -2, -3, -1, -1, -2, -2, -1],
    [-1,  1,  0,  0, -3,  5,  2, -2,  0, -3, -2,  1,  0, -3, -1,  0, -1, -2, -1, -2],
    [-1,  0,  0,  2, -4,  2,  5, -2,  0, -3, -3,  1, -2, -3, -1,  0, -1, -3, -2, -2],
    [ 0, -2,  0, -1, -3, -2, -2,  6, -2, -4, -4, -2, -3, -3, -2,  0, -2, -2, -3, -3],
    [-2,  0,  1, -1, -3,  0,  0, -2,  8, -3, -3, -1, -2, -1, -2, -1, -2, -2,  2, -3],
    [-1, -3, -3, -3, -1, -3, -3, -4, -3,  4,  2, -3,  1,  0, -3, -2, -1, -3, -1,  3],
    [-1, -2, -3, -4, -1, -2, -3, -4, -3,  2,  4, -2,  2,  0, -3, -2, -1, -2, -1,  1],
    [-1,  2,  0, -1, -3,  1,  1, -2, -1, -3, -2,  5, -1, -3, -1,  0, -1, -3, -2, -2],
    [-1, -1, -2, -3, -1,  0, -2, -3, -2,  1,  2, -1,  5,  0, -2, -1, -1, -1, -1,  1],
    [-2, -3, -3, -3, -2, -3, -3, -3, -1,  0,  0, -3,  0,  6, -4, -2, -2,  1,  3, -1],
    [-1, -2, -2, -1, -3, -1, -1, -2, -2, -3, -3, -1, -2, -4,  7, -1, -1, -4, -3, -2],
    [ 1, -1,  1,  0, -1,  0,  0,  0, -1, -2, -2,  0, -1, -2, -1,  4,  1, -3, -2, -2],
    [ 0, -1,  0, -1, -1, -1, -1, -2, -2, -1, -1, -1, -1, -2, -1,  1,  5, -2, -2,  0],
    [-3, -3, -4, -4, -2, -2, -3, -2, -2, -3, -2, -3, -1,  1, -4, -3, -2, 11,  2, -3],
    [-2, -2, -2, -3, -2, -1, -2, -3,  2, -1, -1, -2, -1,  3, -3, -2, -2,  2,  7, -1],
    [ 0, -3, -3, -3, -1, -2, -2, -3, -3,  3,  1, -2,  1, -1, -2, -2,  0, -3, -1,  4],
];

/// BOTS' matrix scale.
const SCALE: i32 = 10;
/// BOTS' pairwise gap-open penalty (`pw_go_penalty`).
const PW_GO_PENALTY: f64 = 10.0;
/// BOTS' pairwise gap-extension penalty (`pw_ge_penalty`).
const PW_GE_PENALTY: f64 = 0.1;
/// Shortest and longest ancestor sequence.
const LENGTHS: (u64, u64) = (100, 300);

/// The scaled substitution matrix and BOTS' `mat_avscore`.
struct Scoring {
    /// `BLOSUM62 × SCALE`.
    matrix: [[i32; AMINO]; AMINO],
    /// Minus the mean off-diagonal score, truncated as BOTS' integer
    /// arithmetic does.
    avscore: i32,
}

impl Scoring {
    /// BOTS' `get_matrix` on BLOSUM62.
    fn new() -> Scoring {
        let mut matrix = [[0i32; AMINO]; AMINO];
        let mut off = 0i32;
        for i in 0..AMINO {
            for j in 0..AMINO {
                matrix[i][j] = i32::from(BLOSUM62[i][j]) * SCALE;
                if j < i {
                    off += matrix[i][j];
                }
            }
        }
        let pairs = (AMINO * AMINO - AMINO) as f64 / 2.0;
        let av3 = (f64::from(off) / pairs) as i32;
        Scoring {
            matrix,
            avscore: -av3,
        }
    }

    /// BOTS' gap costs for sequences of lengths `n` and `m`: `(g, gh)`.
    fn gaps(&self, n: usize, m: usize) -> (i32, i32) {
        let gh = (f64::from(SCALE) * PW_GE_PENALTY) as i32;
        let gg = PW_GO_PENALTY + (n.min(m) as f64).ln();
        let g = if self.avscore <= 0 {
            (20.0 * gg) as i32
        } else {
            (2.0 * f64::from(self.avscore) * gg) as i32
        };
        (g, gh)
    }
}

// Moves recorded per cell: bits 0-1 where H came from, bit 2 whether E
// extended, bit 3 whether F extended.
/// H is 0: the alignment starts after this cell.
const H_ZERO: u8 = 0;
/// H came from the diagonal (a residue pair).
const H_DIAG: u8 = 1;
/// H came from E (a gap in the first sequence).
const H_E: u8 = 2;
/// H came from F (a gap in the second sequence).
const H_F: u8 = 3;
/// E at this cell extended E at the cell to the left.
const E_EXT: u8 = 4;
/// F at this cell extended F at the cell above.
const F_EXT: u8 = 8;

/// One pair's result: the local alignment score and BOTS' percentage of
/// identities over the shorter sequence.
fn align(sc: &Scoring, a: &[u8], b: &[u8]) -> (i32, i32) {
    let (n, m) = (a.len(), b.len());
    let (g, gh) = sc.gaps(n, m);
    let w = m + 1;
    let mut moves = vec![0u8; (n + 1) * w];
    // BOTS' forward_pass: HH (H of the previous row), DD (F), f (E).
    let mut hh_row = vec![0i32; w];
    let mut dd = vec![-g; w];
    let (mut best, mut end) = (0i32, (0usize, 0usize));
    for i in 1..=n {
        let row = &sc.matrix[usize::from(a[i - 1])];
        let (mut hh, mut p) = (0i32, 0i32);
        let mut f = -g;
        for j in 1..=m {
            let mut mv = 0u8;
            // E: extend or open a gap along the row.
            f -= gh;
            let t = hh - g - gh;
            if f < t {
                f = t;
            } else {
                mv |= E_EXT;
            }
            // F: extend or open a gap along the column.
            dd[j] -= gh;
            let t = hh_row[j] - g - gh;
            if dd[j] < t {
                dd[j] = t;
            } else {
                mv |= F_EXT;
            }
            // H: BOTS' order, the diagonal winning ties.
            hh = p + row[usize::from(b[j - 1])];
            let mut src = H_DIAG;
            if hh < f {
                hh = f;
                src = H_E;
            }
            if hh < dd[j] {
                hh = dd[j];
                src = H_F;
            }
            if hh <= 0 {
                hh = 0;
                src = H_ZERO;
            }
            p = hh_row[j];
            hh_row[j] = hh;
            moves[i * w + j] = mv | src;
            if hh > best {
                best = hh;
                end = (i, j);
            }
        }
    }
    // Trace back from the best cell, counting identical residue pairs.
    /// Which of the three recurrences the traceback is in.
    #[derive(Clone, Copy)]
    enum State {
        /// The best-score matrix.
        H,
        /// A gap in the first sequence (moving left).
        E,
        /// A gap in the second sequence (moving up).
        F,
    }
    let (mut i, mut j) = end;
    let mut state = State::H;
    let mut identities = 0i32;
    while i > 0 && j > 0 {
        let mv = moves[i * w + j];
        match state {
            State::H => match mv & 3 {
                H_ZERO => break,
                H_DIAG => {
                    if a[i - 1] == b[j - 1] {
                        identities += 1;
                    }
                    i -= 1;
                    j -= 1;
                }
                H_E => state = State::E,
                _ => state = State::F,
            },
            State::E => {
                if mv & E_EXT == 0 {
                    state = State::H;
                }
                j -= 1;
            }
            State::F => {
                if mv & F_EXT == 0 {
                    state = State::H;
                }
                i -= 1;
            }
        }
    }
    (best, 100 * identities / n.min(m) as i32)
}

/// Generates the sequences (residues as indices into `ARNDCQEGHILKMFPSTWYV`).
fn sequences(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    let families = (count / 8).max(1);
    let ancestors: Vec<Vec<u8>> = (0..families)
        .map(|_| {
            let len = LENGTHS.0 + rng.below(LENGTHS.1 - LENGTHS.0 + 1);
            (0..len).map(|_| rng.below(AMINO as u64) as u8).collect()
        })
        .collect();
    (0..count)
        .map(|_| {
            let anc = &ancestors[rng.below(families as u64) as usize];
            let mut s = Vec::with_capacity(anc.len() + anc.len() / 8);
            for &r in anc {
                let x = rng.unit();
                if x < 0.03 {
                    continue; // deletion
                }
                if x < 0.06 {
                    s.push(rng.below(AMINO as u64) as u8); // insertion
                }
                if rng.unit() < 0.2 {
                    s.push(rng.below(AMINO as u64) as u8); // substitution
                } else {
                    s.push(r);
                }
            }
            s
        })
        .collect()
}

/// A pair's result as one word: the score, then the percentage.
fn word(r: (i32, i32)) -> u64 {
    u64::from(r.0 as u32) << 32 | u64::from(r.1 as u32)
}

/// The workload: the sequences and the scoring (both read-only).
pub struct Alignment {
    /// The sequences.
    seqs: Vec<Vec<u8>>,
    /// Matrix and gap parameters.
    scoring: Scoring,
}

impl Workload for Alignment {
    fn name(&self) -> &'static str {
        "alignment"
    }

    fn describe(&self) -> String {
        let n = self.seqs.len();
        let total: usize = self.seqs.iter().map(Vec::len).sum();
        format!(
            "{n} sequences ({} pairs), mean length {}",
            n * (n - 1) / 2,
            total / n
        )
    }

    fn sequential(&self) -> u64 {
        let n = self.seqs.len();
        let mut out = Vec::with_capacity(n * (n - 1) / 2);
        for i in 0..n {
            for j in i + 1..n {
                out.push(word(align(&self.scoring, &self.seqs[i], &self.seqs[j])));
            }
        }
        checksum(out)
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        let n = self.seqs.len();
        let out: Vec<AtomicU64> = (0..n * n).map(|_| AtomicU64::new(0)).collect();
        let (seqs, scoring, out_ref) = (&self.seqs, &self.scoring, &out);
        pool.scope(|s| {
            for i in 0..n {
                s.spawn(move |s| {
                    for j in i + 1..n {
                        s.spawn(move |_| {
                            let r = terroir::label("alignment-pair", || {
                                align(scoring, &seqs[i], &seqs[j])
                            });
                            out_ref[i * n + j].store(word(r), Relaxed);
                        });
                    }
                });
            }
        });
        checksum(
            (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| i * n + j))
                .map(|k| out[k].load(Relaxed)),
        )
    }
}

/// Builds the workload: the parameter is the number of sequences (2 or
/// more).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology; // nothing is placed
    let n = size.pick(4, 40, 200);
    if !(2..=5000).contains(&n) {
        return Err(format!("alignment: need 2..=5000 sequences, not {n}"));
    }
    Ok(Box::new(Alignment {
        seqs: sequences(n, 0xA11C_0DE5),
        scoring: Scoring::new(),
    }))
}
