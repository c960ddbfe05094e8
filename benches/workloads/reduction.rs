//! `reduction`: the sum of a large `f64` array, once by divide-and-conquer
//! joins and once by one spawned task per chunk: TaskInsight's
//! order-sensitive reduction (Ceballos et al.), where the order in which a
//! scheduler runs the spawned tasks (depth-first LIFO or breadth-first
//! FIFO, `DequeOrder`) changes which data is in cache when.
//!
//! Floating-point addition is not associative, so every version adds in a
//! fixed tree that does not depend on which task finishes first:
//!
//! - a *leaf* sums a run of elements in 8 interleaved lanes (lane `k`
//!   takes elements `k, k + 8, …`), then the lanes pairwise
//!   (`((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))`);
//! - the **join** sum halves the array (at `len / 2`) with `join` until a
//!   part has at most `chunk` elements (a leaf; label `reduction-leaf`),
//!   and adds the two halves' sums;
//! - the **spawn** sum cuts the array into chunks of `chunk` elements
//!   (the last one shorter), spawns one task per chunk in a scope (label
//!   `reduction-block`), each writing its leaf sum into its own slot, and
//!   after the scope adds the slots by the same halving tree.
//!
//! A run does [`PASSES`] (4) passes over the array, each computing both
//! sums; the checksum is over the bits of all of them. The sequential
//! version computes the same trees without tasks, the rayon version with
//! `rayon::join` and `rayon::scope`. The parallel-iterator versions
//! (terroir's and rayon's, the same code under each prelude) keep the join
//! sum and write the per-chunk sums with
//! `slots.par_iter_mut().zip(x.par_chunks(chunk)).for_each(..)`.
//!
//! **Size parameter:** `n`, the array's length; `chunk = clamp(n / 64,
//! 256, 16384)` elements. Presets: small 16,384 (64 chunks of 256),
//! default 16,777,216 (128 MiB, 1,024 chunks of 16,384 = 128 KiB), large
//! 134,217,728 (1 GiB, 8,192 chunks). **Data:** an ordinary `Vec<f64>` of
//! uniform values in `[0, 1)`, first touched by the building thread (not
//! placed).
//!
//! **Kind:** memory-bandwidth-bound once the array exceeds the last-level
//! cache (default and large: one load per element, vectorised adds), with
//! many small independent tasks whose execution order is the scheduler's.

use super::{checksum, Rng, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// Passes over the array per run.
pub const PASSES: usize = 4;

/// The reduction workload.
struct Reduction {
    /// The input.
    data: Vec<f64>,
    /// Elements per leaf (join) and per spawned task.
    chunk: usize,
}

/// Builds the workload (see the module docs for the size parameter).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let n = size.pick(1 << 14, 1 << 24, 1 << 27);
    let mut rng = Rng(0x5eed_0001);
    let data = (0..n).map(|_| rng.unit()).collect();
    Ok(Box::new(Reduction {
        data,
        chunk: (n / 64).clamp(256, 1 << 14),
    }))
}

/// The sum of `x` in 8 interleaved lanes, the lanes added pairwise.
fn leaf(x: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut it = x.chunks_exact(8);
    for c in &mut it {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    for (a, v) in acc.iter_mut().zip(it.remainder()) {
        *a += v;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// Adds `parts` by halving (at `len / 2`) down to single values.
fn tree(parts: &[f64]) -> f64 {
    match parts.len() {
        0 => 0.0,
        1 => parts[0],
        len => {
            let (l, r) = parts.split_at(len / 2);
            tree(l) + tree(r)
        }
    }
}

/// The join sum without tasks.
fn join_seq(x: &[f64], chunk: usize) -> f64 {
    if x.len() <= chunk {
        return leaf(x);
    }
    let (l, r) = x.split_at(x.len() / 2);
    join_seq(l, chunk) + join_seq(r, chunk)
}

/// The join sum with terroir's `join`.
fn join_terroir(x: &[f64], chunk: usize) -> f64 {
    if x.len() <= chunk {
        return terroir::label("reduction-leaf", || leaf(x));
    }
    let (l, r) = x.split_at(x.len() / 2);
    let (a, b) = terroir::join(|| join_terroir(l, chunk), || join_terroir(r, chunk));
    a + b
}

/// The join sum with `rayon::join`.
fn join_rayon(x: &[f64], chunk: usize) -> f64 {
    if x.len() <= chunk {
        return leaf(x);
    }
    let (l, r) = x.split_at(x.len() / 2);
    let (a, b) = rayon::join(|| join_rayon(l, chunk), || join_rayon(r, chunk));
    a + b
}

impl Reduction {
    /// The chunk count of the spawn sum.
    fn chunks(&self) -> usize {
        self.data.len().div_ceil(self.chunk)
    }

    /// Runs the passes with the given join sum and spawn sum (which fills
    /// one slot per chunk), and returns the checksum of all the sums.
    fn run(&self, join: impl Fn(&[f64]) -> f64, spawn: impl Fn(&[f64], &mut [f64])) -> u64 {
        let mut slots = vec![0.0; self.chunks()];
        let mut sums = Vec::with_capacity(2 * PASSES);
        for _ in 0..PASSES {
            let data = std::hint::black_box(&self.data[..]);
            sums.push(join(data).to_bits());
            spawn(data, &mut slots);
            sums.push(tree(&slots).to_bits());
        }
        checksum(sums)
    }
}

impl Workload for Reduction {
    fn name(&self) -> &'static str {
        "reduction"
    }

    fn describe(&self) -> String {
        format!(
            "{} doubles, chunks of {} ({} tasks per spawn pass), {} passes of join + spawn",
            self.data.len(),
            self.chunk,
            self.chunks(),
            PASSES
        )
    }

    fn sequential(&self) -> u64 {
        let chunk = self.chunk;
        self.run(
            |x| join_seq(x, chunk),
            |x, slots| {
                for (slot, part) in slots.iter_mut().zip(x.chunks(chunk)) {
                    *slot = leaf(part);
                }
            },
        )
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        let chunk = self.chunk;
        pool.install(|| {
            self.run(
                |x| join_terroir(x, chunk),
                |x, slots| {
                    terroir::scope(|s| {
                        for (slot, part) in slots.iter_mut().zip(x.chunks(chunk)) {
                            s.spawn(move |_| {
                                *slot = terroir::label("reduction-block", || leaf(part));
                            });
                        }
                    });
                },
            )
        })
    }

    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        let chunk = self.chunk;
        Some(pool.install(|| {
            self.run(
                |x| join_rayon(x, chunk),
                |x, slots| {
                    rayon::scope(|s| {
                        for (slot, part) in slots.iter_mut().zip(x.chunks(chunk)) {
                            s.spawn(move |_| *slot = leaf(part));
                        }
                    });
                },
            )
        }))
    }

    fn terroir_iter(&self, pool: &ThreadPool) -> Option<u64> {
        use terroir::prelude::*;
        let chunk = self.chunk;
        Some(pool.install(|| {
            self.run(
                |x| join_terroir(x, chunk),
                |x, slots| {
                    slots
                        .par_iter_mut()
                        .zip(x.par_chunks(chunk))
                        .for_each(|(slot, part)| *slot = leaf(part));
                },
            )
        }))
    }

    fn rayon_iter(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        use rayon::prelude::*;
        let chunk = self.chunk;
        Some(pool.install(|| {
            self.run(
                |x| join_rayon(x, chunk),
                |x, slots| {
                    slots
                        .par_iter_mut()
                        .zip(x.par_chunks(chunk))
                        .for_each(|(slot, part)| *slot = leaf(part));
                },
            )
        }))
    }
}
