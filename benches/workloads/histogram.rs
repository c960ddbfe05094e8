//! `histogram`: counting `n` random keys into [`BINS`] (1024) bins with
//! one private histogram per task, merged at the end: TaskInsight's
//! histogram (Ceballos et al.), an order-sensitive task program where the
//! order in which spawned tasks run (depth-first LIFO or breadth-first
//! FIFO, `DequeOrder`) is the scheduler's choice.
//!
//! The keys are cut into chunks of `chunk` keys (the last one shorter); a
//! scope spawns one task per chunk (label `histogram-block`), which counts
//! its chunk into a fresh private histogram of `u32` counts and hands it
//! back in its own slot; after the scope the private histograms are added
//! into the final `u64` histogram. Key `k` goes to bin `(k · BINS) >> 32`
//! (multiply-shift, uniform for uniform keys). A run does [`PASSES`] (4)
//! such passes over the keys (a scope and a merge each), accumulating into
//! one final histogram. Integer counts make the result independent of the
//! order; the sequential version counts every key of every pass into the
//! final histogram directly, the rayon version is the same scope with
//! `rayon::scope`, and the two parallel-iterator versions (terroir's and
//! rayon's, the same code under each prelude) are
//! `keys.par_chunks(chunk).map(count).collect_into_vec(parts)`. The
//! checksum is over the final histogram.
//!
//! **Size parameter:** `n`, the number of keys; `chunk = clamp(n / 64,
//! 256, 65536)` keys. Presets: small 16,384 (64 chunks of 256), default
//! 33,554,432 (128 MiB of `u32` keys, 512 chunks of 65,536), large
//! 536,870,912 (2 GiB, 8,192 chunks). **Data:** an ordinary `Vec<u32>` of
//! uniform random keys, first touched by the building thread (not placed).
//!
//! **Kind:** memory-bandwidth-bound on the keys (streamed once) with a
//! cache-resident, store-heavy inner loop (a 4 KiB histogram per task),
//! many small independent tasks and a sequential merge (`chunks × BINS`
//! additions).

use super::{checksum, Rng, Size, Workload};
use terroir::numa::Topology;
use terroir::ThreadPool;

/// Bins of the histogram.
pub const BINS: usize = 1024;

/// Passes over the keys per run.
pub const PASSES: usize = 4;

/// The histogram workload.
struct Histogram {
    /// The keys.
    keys: Vec<u32>,
    /// Keys per task.
    chunk: usize,
}

/// Builds the workload (see the module docs for the size parameter).
pub fn new(size: Size, topology: &Topology) -> Result<Box<dyn Workload>, String> {
    let _ = topology;
    let n = size.pick(1 << 14, 1 << 25, 1 << 29);
    let mut rng = Rng(0x5eed_0002);
    let keys = (0..n).map(|_| rng.next_u64() as u32).collect();
    Ok(Box::new(Histogram {
        keys,
        chunk: (n / 64).clamp(256, 1 << 16),
    }))
}

/// The bin of key `k`.
fn bin(k: u32) -> usize {
    ((u64::from(k) * BINS as u64) >> 32) as usize
}

/// A private histogram of `keys`.
fn count(keys: &[u32]) -> Vec<u32> {
    let mut h = vec![0u32; BINS];
    for &k in keys {
        h[bin(k)] += 1;
    }
    h
}

/// Adds the private histograms into the final one.
fn merge(total: &mut [u64], parts: &[Vec<u32>]) {
    for part in parts {
        for (t, &c) in total.iter_mut().zip(part) {
            *t += u64::from(c);
        }
    }
}

impl Histogram {
    /// How many chunks (tasks) a pass has.
    fn chunks(&self) -> usize {
        self.keys.len().div_ceil(self.chunk)
    }

    /// Runs the passes, each filling one private histogram per chunk with
    /// `pass(parts)`, merges them and returns the final checksum.
    fn run(&self, pass: impl Fn(&mut [Vec<u32>])) -> u64 {
        let mut total = vec![0u64; BINS];
        let mut parts = vec![Vec::new(); self.chunks()];
        for _ in 0..PASSES {
            pass(&mut parts);
            merge(&mut total, &parts);
        }
        checksum(total)
    }
}

impl Workload for Histogram {
    fn name(&self) -> &'static str {
        "histogram"
    }

    fn describe(&self) -> String {
        format!(
            "{} keys into {} bins, {} tasks of {} keys per pass, {} passes",
            self.keys.len(),
            BINS,
            self.chunks(),
            self.chunk,
            PASSES
        )
    }

    fn sequential(&self) -> u64 {
        let mut total = vec![0u64; BINS];
        for _ in 0..PASSES {
            for &k in std::hint::black_box(&self.keys[..]) {
                total[bin(k)] += 1;
            }
        }
        checksum(total)
    }

    fn terroir(&self, pool: &ThreadPool) -> u64 {
        pool.install(|| {
            self.run(|parts| {
                terroir::scope(|s| {
                    for (slot, keys) in parts.iter_mut().zip(self.keys.chunks(self.chunk)) {
                        s.spawn(move |_| *slot = terroir::label("histogram-block", || count(keys)));
                    }
                });
            })
        })
    }

    fn rayon(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        Some(pool.install(|| {
            self.run(|parts| {
                rayon::scope(|s| {
                    for (slot, keys) in parts.iter_mut().zip(self.keys.chunks(self.chunk)) {
                        s.spawn(move |_| *slot = count(keys));
                    }
                });
            })
        }))
    }

    fn terroir_iter(&self, pool: &ThreadPool) -> Option<u64> {
        use terroir::prelude::*;
        Some(pool.install(|| {
            self.run(|parts| {
                let mut out = Vec::with_capacity(parts.len());
                self.keys
                    .par_chunks(self.chunk)
                    .map(count)
                    .collect_into_vec(&mut out);
                parts.swap_with_slice(&mut out);
            })
        }))
    }

    fn rayon_iter(&self, pool: &rayon::ThreadPool) -> Option<u64> {
        use rayon::prelude::*;
        Some(pool.install(|| {
            self.run(|parts| {
                let mut out = Vec::with_capacity(parts.len());
                self.keys
                    .par_chunks(self.chunk)
                    .map(count)
                    .collect_into_vec(&mut out);
                parts.swap_with_slice(&mut out);
            })
        }))
    }
}
