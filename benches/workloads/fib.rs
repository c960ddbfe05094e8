//! fib: the naive doubly recursive Fibonacci number, with a `join` on every
//! call with `n >= 2` (leaves at `n < 2`), from BOTS (`fib`, Duran et al.
//! 2009) in its base version, which has no cutoff.
//!
//! Size parameter: `n`, the Fibonacci index (`fib(n + 1) - 1` joins).
//! Presets: Small `n = 20` (11 k joins), Default `n = 34` (9.2 M joins,
//! about 15 ms sequentially on the reference 2-core machine), Large
//! `n = 40` (166 M joins). The result is `fib(n)` itself (checksummed).
//!
//! Kind of program: pure task overhead. Each task does an addition, so the
//! time is what a `join` costs (push, pop, the occasional steal); there is
//! no memory traffic and the tree is balanced, so the work is perfectly
//! divisible. Leaves are nanoseconds long and carry no label.
//!
//! This module also holds [`Joiner`], the fork-join abstraction that fib,
//! nqueens, sort, strassen and uts share, so that each of their sequential,
//! terroir and rayon versions is one generic recursion and the three differ
//! only in what `join` does: their results agree by construction.

use super::{checksum, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// The `join` a recursive workload uses: sequential ([`Seq`]), terroir's
/// ([`Terroir`]) or rayon's ([`Rayon`]), as in `benches/overhead.rs`.
pub trait Joiner {
    /// Runs `a` and `b`, possibly in parallel, and returns both results.
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send;

    /// Runs a leaf (sequential-cutoff) computation; terroir labels it
    /// `name` for the inflation report, the others just run it.
    #[inline(always)]
    fn leaf<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
        let _ = name;
        f()
    }
}

/// The sequential [`Joiner`]: `a` then `b` on the calling thread.
pub struct Seq;

impl Joiner for Seq {
    #[inline(always)]
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        (a(), b())
    }
}

/// terroir's [`Joiner`]: [`terroir::join`], leaves under [`terroir::label`].
pub struct Terroir;

impl Joiner for Terroir {
    #[inline(always)]
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        terroir::join(a, b)
    }

    #[inline(always)]
    fn leaf<R>(name: &'static str, f: impl FnOnce() -> R) -> R {
        terroir::label(name, f)
    }
}

/// rayon's [`Joiner`]: [`rayon::join`].
pub struct Rayon;

impl Joiner for Rayon {
    #[inline(always)]
    fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB + Send,
        RA: Send,
        RB: Send,
    {
        rayon::join(a, b)
    }
}

/// `fib(n)` with a join on every call with `n >= 2`.
pub fn fib<J: Joiner>(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = J::join(|| fib::<J>(n - 1), || fib::<J>(n - 2));
    a + b
}

/// `fib(n)` with chili's `join` on every call with `n >= 2` (chili passes
/// its scope down the recursion, so it cannot share [`Joiner`]).
pub fn fib_chili(n: u64, s: &mut chili::Scope<'_>) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = s.join(|s| fib_chili(n - 1, s), |s| fib_chili(n - 2, s));
    a + b
}

/// The fib workload: computes `fib(n)`.
struct Fib {
    /// The Fibonacci index.
    n: u64,
}

impl Workload for Fib {
    fn name(&self) -> &'static str {
        "fib"
    }

    fn describe(&self) -> String {
        format!("n={}", self.n)
    }

    fn sequential(&self) -> u64 {
        checksum([fib::<Seq>(self.n)])
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        checksum([pool.install(|| fib::<Terroir>(self.n))])
    }

    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        Some(checksum([pool.install(|| fib::<Rayon>(self.n))]))
    }
}

/// Builds fib for `size` (`n`: 20 / 34 / 40; at most 92, the largest `n`
/// whose Fibonacci number fits in a `u64`).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let n = size.pick(20, 34, 40);
    if n > 92 {
        return Err(format!("fib: n = {n} overflows u64 (at most 92)"));
    }
    Ok(Box::new(Fib { n: n as u64 }))
}
