//! The benchmark workloads of `benches/policies.rs`, `benches/vs_rayon.rs`,
//! `examples/bots.rs` and `tests/workloads.rs` (each includes this folder
//! with `#[path = "…/benches/workloads/mod.rs"] mod workloads;`).
//!
//! Every workload is built once from a [`Size`] and the machine's
//! [`Topology`] (placed data goes on the topology's nodes), then run many
//! times: sequentially ([`Workload::sequential`], the reference result and
//! the baseline time), on a terroir pool ([`Workload::terroir`]) and, when
//! rayon can express it, on a rayon pool ([`Workload::rayon`]). Each run
//! returns a `u64` checksum of its result (floating-point results are
//! hashed bit by bit: every parallel version computes each value with the
//! same operations in the same order as the sequential one, so the bits
//! agree); a run whose checksum differs from the sequential one is a wrong
//! answer, and the harnesses treat it as a failure, never as a data point.
//!
//! Sources: BOTS (fib, nqueens, sort, sparselu, strassen, health, uts,
//! alignment; Duran et al. 2009, used by Olivier et al. and Qawasmeh et
//! al.), Cilk's heat (Olivier et al.), Drebes' block stencils (jacobi-2d,
//! seidel-2d), Klinkenberg's task-based STREAM triad, and TaskInsight's
//! order-sensitive reduction and histogram (Ceballos et al.).
#![allow(dead_code)] // each includer uses a different part

use terroir::numa::Topology;
use terroir::ThreadPool;

pub mod alignment;
pub mod fib;
pub mod health;
pub mod heat;
pub mod histogram;
pub mod jacobi;
pub mod mix;
pub mod nqueens;
pub mod reduction;
pub mod seidel;
pub mod sort;
pub mod sparselu;
pub mod strassen;
pub mod stream;
pub mod tree;
pub mod uts;

/// How big a workload is: a preset, or the workload's own parameter
/// (fib's `n`, sort's element count, a stencil's grid side…; each module
/// documents what its parameter means).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// A few milliseconds sequentially: tests and CI.
    Small,
    /// Tens to a few hundred milliseconds sequentially on a 2-core machine:
    /// the benchmarks' default.
    Default,
    /// Seconds: `TERROIR_BENCH_SIZE=large`.
    Large,
    /// The workload's own size parameter.
    Param(usize),
}

impl Size {
    /// `small`, `default`, `large` or a number (the workload's parameter).
    pub fn parse(s: &str) -> Result<Size, String> {
        match s {
            "small" => Ok(Size::Small),
            "default" => Ok(Size::Default),
            "large" => Ok(Size::Large),
            _ => s
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .map(Size::Param)
                .ok_or_else(|| {
                    format!("size must be small, default, large or a positive number, not {s:?}")
                }),
        }
    }

    /// The parameter: one of the three presets, or the given number.
    pub fn pick(self, small: usize, default: usize, large: usize) -> usize {
        match self {
            Size::Small => small,
            Size::Default => default,
            Size::Large => large,
            Size::Param(n) => n,
        }
    }

    /// `TERROIR_BENCH_SIZE` (`small`, `default`, `large` or a number), or
    /// `Default` when unset.
    pub fn from_env() -> Result<Size, String> {
        match std::env::var("TERROIR_BENCH_SIZE") {
            Ok(s) => Size::parse(&s).map_err(|e| format!("TERROIR_BENCH_SIZE: {e}")),
            Err(_) => Ok(Size::Default),
        }
    }
}

/// One workload, built for one size and topology.
pub trait Workload: Send + Sync {
    /// Its name, as on the command line (`fib`, `jacobi-2d`, …).
    fn name(&self) -> &'static str;
    /// Its size in words, e.g. `n=32` or `4096x4096, 64 blocks, 10 iters`.
    fn describe(&self) -> String;
    /// Brings mutable state back to the start (input to sort, grids to
    /// their initial values). Called before every run, outside the timing.
    fn setup(&self) {}
    /// The sequential version: the reference result.
    fn sequential(&self) -> u64;
    /// The terroir version, run on `pool` (it calls `pool.install` or
    /// `pool.scope` itself, and places tasks where its data lives).
    fn terroir(&self, pool: &ThreadPool) -> u64;
    /// The rayon version on `pool`, or `None` when rayon cannot express
    /// the workload's structure (placed data, for instance).
    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        let _ = pool;
        None
    }
    /// The terroir version written with parallel iterators
    /// (`terroir::prelude`, beside the hand-split [`terroir`](Self::terroir)
    /// one), for the loop workloads ([`LOOP_NAMES`]); `None` for the others.
    fn terroir_iter(&self, pool: &ThreadPool) -> Option<u64> {
        let _ = pool;
        None
    }
    /// The same loops with rayon's parallel iterators (`rayon::prelude`),
    /// for the loop workloads; `None` for the others.
    fn rayon_iter(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        let _ = pool;
        None
    }
}

/// Every workload's name, in the order the harnesses run them.
pub const NAMES: [&str; 14] = [
    "fib",
    "nqueens",
    "sort",
    "sparselu",
    "strassen",
    "health",
    "uts",
    "alignment",
    "heat",
    "jacobi-2d",
    "seidel-2d",
    "stream-triad",
    "reduction",
    "histogram",
];

/// The workloads that `benches/vs_rayon.rs` runs with rayon too.
pub const RAYON_NAMES: [&str; 8] = [
    "fib",
    "nqueens",
    "sort",
    "strassen",
    "heat",
    "uts",
    "reduction",
    "histogram",
];

/// The loop workloads: each has a hand-split terroir version (the
/// reference), a terroir parallel-iterator version
/// ([`Workload::terroir_iter`]) and a rayon parallel-iterator version
/// ([`Workload::rayon_iter`]).
pub const LOOP_NAMES: [&str; 5] = [
    "heat",
    "jacobi-2d",
    "stream-triad",
    "reduction",
    "histogram",
];

/// Builds the named workload.
///
/// # Errors
/// An unknown name (the message lists the known ones), or a size or
/// allocation the workload rejects.
pub fn make(name: &str, size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    match name {
        "fib" => fib::new(size, topology),
        "nqueens" => nqueens::new(size, topology),
        "sort" => sort::new(size, topology),
        "sparselu" => sparselu::new(size, topology),
        "strassen" => strassen::new(size, topology),
        "health" => health::new(size, topology),
        "uts" => uts::new(size, topology),
        "alignment" => alignment::new(size, topology),
        "heat" => heat::new(size, topology),
        "jacobi-2d" => jacobi::new(size, topology),
        "seidel-2d" => seidel::new(size, topology),
        "stream-triad" => stream::new(size, topology),
        "reduction" => reduction::new(size, topology),
        "histogram" => histogram::new(size, topology),
        _ => Err(format!(
            "unknown workload {name:?}; known: {}",
            NAMES.join(", ")
        )),
    }
}

/// FNV-1a over 64-bit words: the checksum of a result.
pub fn checksum(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        h ^= w;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A small, fast, deterministic generator (splitmix64) for inputs.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform value in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A uniform `f64` in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
