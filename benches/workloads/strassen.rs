//! strassen: the product `C = A B` of two `n x n` matrices of `f64` by
//! Strassen's algorithm, after BOTS (`strassen`, Duran et al. 2009, from
//! Cilk's `strassen`).
//!
//! As in BOTS, the recursion uses Winograd's variant (7 sub-products, 15
//! additions): each level splits both matrices into quadrants, forms the
//! eight sums `S1..S8`, computes the seven products `M1..M7` in parallel
//! (a join tree of seven tasks, where BOTS spawns seven tasks and waits
//! for them), and assembles `C`'s quadrants from them. Below [`CUTOFF`]
//! (64, BOTS' default) a product is a plain blocked multiply (`i-k-j`
//! order, [`BLOCK`]-sized blocks), run as a `strassen-leaf` labelled task
//! (about 0.5 MFLOP, tens of microseconds). Unlike BOTS, which works in
//! place with row strides, every level copies its quadrants into fresh
//! contiguous matrices: simpler, safe, and the same arithmetic.
//!
//! The sequential, terroir and rayon versions are one generic recursion
//! (only `join` differs), so every element of `C` is computed by the same
//! operations in the same order and the results agree bit for bit; the
//! checksum is over `f64::to_bits` of `C`.
//!
//! Size parameter: `n`, the matrix side, a power of two at least
//! [`CUTOFF`]. Presets: Small 128 (one level of recursion), Default 1024
//! (four levels, 2,401 leaf multiplies, about 0.2 s sequentially on the
//! reference 2-core machine), Large 2048 (five levels, 16,807 leaf
//! multiplies). Inputs are uniform in `[0, 1)` from [`Rng`].
//!
//! Kind of program: compute-bound (the leaf multiplies) with a sizeable
//! memory-bound part (the additions and quadrant copies stream matrices
//! through memory), balanced, with a fan-out of seven.

use super::fib::{Joiner, Rayon, Seq, Terroir};
use super::{checksum, Rng, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// Products of matrices at most this side are plain blocked multiplies
/// (BOTS' default cutoff).
pub const CUTOFF: usize = 64;

/// The block side of the leaf multiply.
pub const BLOCK: usize = 32;

/// A square matrix, row-major, its side implied by the length.
type Matrix = Vec<f64>;

/// `a + b`, element by element.
fn add(a: &[f64], b: &[f64]) -> Matrix {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// `a - b`, element by element.
fn sub(a: &[f64], b: &[f64]) -> Matrix {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

/// The plain product of the `n x n` matrices `a` and `b`: blocked, `i-k-j`
/// order within each block, so each `c[i][j]` sums `a[i][k] b[k][j]` in
/// increasing `k`.
fn multiply_leaf(n: usize, a: &[f64], b: &[f64]) -> Matrix {
    let mut c = vec![0.0; n * n];
    for ii in (0..n).step_by(BLOCK) {
        for kk in (0..n).step_by(BLOCK) {
            for jj in (0..n).step_by(BLOCK) {
                for i in ii..(ii + BLOCK).min(n) {
                    let c_row = &mut c[i * n..(i + 1) * n];
                    for k in kk..(kk + BLOCK).min(n) {
                        let aik = a[i * n + k];
                        let b_row = &b[k * n..(k + 1) * n];
                        for j in jj..(jj + BLOCK).min(n) {
                            c_row[j] += aik * b_row[j];
                        }
                    }
                }
            }
        }
    }
    c
}

/// The four quadrants (`11, 12, 21, 22`) of the `n x n` matrix `m`, each
/// copied into a contiguous `n/2 x n/2` matrix.
fn quadrants(n: usize, m: &[f64]) -> [Matrix; 4] {
    let h = n / 2;
    let quad = |r0: usize, c0: usize| -> Matrix {
        (r0..r0 + h)
            .flat_map(|r| m[r * n + c0..r * n + c0 + h].iter().copied())
            .collect()
    };
    [quad(0, 0), quad(0, h), quad(h, 0), quad(h, h)]
}

/// The `n x n` matrix with quadrants `c11, c12, c21, c22`.
fn assemble(n: usize, c11: &[f64], c12: &[f64], c21: &[f64], c22: &[f64]) -> Matrix {
    let h = n / 2;
    let mut c = Vec::with_capacity(n * n);
    for r in 0..h {
        c.extend_from_slice(&c11[r * h..(r + 1) * h]);
        c.extend_from_slice(&c12[r * h..(r + 1) * h]);
    }
    for r in 0..h {
        c.extend_from_slice(&c21[r * h..(r + 1) * h]);
        c.extend_from_slice(&c22[r * h..(r + 1) * h]);
    }
    c
}

/// `a b` for `n x n` matrices (`n` a power of two), Strassen-Winograd above
/// [`CUTOFF`], the seven sub-products in parallel.
fn strassen<J: Joiner>(n: usize, a: &[f64], b: &[f64]) -> Matrix {
    if n <= CUTOFF {
        return J::leaf("strassen-leaf", || multiply_leaf(n, a, b));
    }
    let h = n / 2;
    let [a11, a12, a21, a22] = quadrants(n, a);
    let [b11, b12, b21, b22] = quadrants(n, b);
    let s1 = add(&a21, &a22);
    let s2 = sub(&s1, &a11);
    let s3 = sub(&a11, &a21);
    let s4 = sub(&a12, &s2);
    let s5 = sub(&b12, &b11);
    let s6 = sub(&b22, &s5);
    let s7 = sub(&b22, &b12);
    let s8 = sub(&s6, &b21);
    let mul = |x: &[f64], y: &[f64]| strassen::<J>(h, x, y);
    let (((m1, m2), (m3, m4)), ((m5, m6), m7)) = J::join(
        || {
            J::join(
                || J::join(|| mul(&s2, &s6), || mul(&a11, &b11)),
                || J::join(|| mul(&a12, &b21), || mul(&s3, &s7)),
            )
        },
        || {
            J::join(
                || J::join(|| mul(&s1, &s5), || mul(&s4, &b22)),
                || mul(&a22, &s8),
            )
        },
    );
    let t1 = add(&m1, &m2);
    let t2 = add(&t1, &m4);
    let c11 = add(&m2, &m3);
    let c12 = add(&add(&t1, &m5), &m6);
    let c21 = sub(&t2, &m7);
    let c22 = add(&t2, &m5);
    assemble(n, &c11, &c12, &c21, &c22)
}

/// The strassen workload: `A B` for two fixed random matrices.
struct Strassen {
    /// The matrix side.
    n: usize,
    /// The left factor, row-major.
    a: Matrix,
    /// The right factor, row-major.
    b: Matrix,
}

impl Strassen {
    /// The checksum of `A B`, with the joins of `J`.
    fn run<J: Joiner>(&self) -> u64 {
        let c = strassen::<J>(self.n, &self.a, &self.b);
        checksum(c.iter().map(|x| x.to_bits()))
    }
}

impl Workload for Strassen {
    fn name(&self) -> &'static str {
        "strassen"
    }

    fn describe(&self) -> String {
        format!("{0}x{0}, cutoff {CUTOFF}", self.n)
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

/// Builds strassen for `size` (side: 128 / 1024 / 2048; a power of two at
/// least [`CUTOFF`]).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let n = size.pick(128, 1024, 2048);
    if !n.is_power_of_two() || n < CUTOFF {
        return Err(format!(
            "strassen: n = {n} must be a power of two at least {CUTOFF}"
        ));
    }
    let mut rng = Rng(0x5742_a55e);
    let a: Matrix = (0..n * n).map(|_| rng.unit()).collect();
    let b: Matrix = (0..n * n).map(|_| rng.unit()).collect();
    Ok(Box::new(Strassen { n, a, b }))
}
